/*
 * Conv in the NHWC and NCHW16c layouts (ops/layout.h). Not written yet:
 * no layout is offered, so the layout pass keeps every Conv plain.
 */
#include <stdio.h>

#include "ops/layout.h"

gx_kernel_fn gx_cpu_conv_layout(gx_layout l, const gx_infer *ic, char *why, size_t len)
{
    (void)ic;
    snprintf(why, len, "%s: no Conv kernel", gx_layout_name(l));
    return NULL;
}

void gx_cpu_conv_pack_shape(gx_layout l, const gx_attrval *attr, const gx_view *w,
                            gx_view *packed)
{
    (void)l, (void)attr;
    *packed = *w;
}

void gx_cpu_conv_pack(gx_layout l, const gx_attrval *attr, const gx_view *w,
                      const gx_view *packed)
{
    (void)l, (void)attr, (void)w, (void)packed;
}

size_t gx_cpu_conv_layout_scratch(gx_layout l, const gx_infer *ic)
{
    (void)l, (void)ic;
    return 0;
}
