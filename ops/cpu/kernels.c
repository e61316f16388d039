/* The CPU kernel table, one row per op generated from GX_KERNEL_OP_LIST: an
 * op without a gx_cpu_<OP> kernel is a link error. Control-flow ops have
 * none (NULL): the executor runs their subgraphs. */
#include "ops/cpu/cpu.h"

static const gx_kernel_fn s_kernels[GX_OP_COUNT] = {
#define GX_CPU_KERNEL_ROW(e, name) [GX_OP_##e] = gx_cpu_##e,
    GX_KERNEL_OP_LIST(GX_CPU_KERNEL_ROW)
#undef GX_CPU_KERNEL_ROW
};

gx_kernel_fn gx_cpu_kernel(gx_op op)
{
    return (unsigned)op < GX_OP_COUNT ? s_kernels[op] : NULL;
}
