/*
 * Pools and BatchNormalization in the NHWC and NCHW16c layouts
 * (ops/layout.h). Not written yet: no layout is offered, so the layout
 * pass keeps these ops plain.
 */
#include <stdio.h>

#include "ops/layout.h"

gx_kernel_fn gx_cpu_pool_layout(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                size_t len)
{
    (void)ic;
    snprintf(why, len, "%s: no %s kernel", gx_layout_name(l), gx_op_name(op));
    return NULL;
}
