/* The CPU kernel table, one row per op generated from GX_OP_LIST: an op
 * without a gx_cpu_<OP> kernel is a link error. */
#include "ops/cpu/cpu.h"

static const gx_kernel_fn s_kernels[] = {
#define GX_CPU_KERNEL_ROW(e, name) [GX_OP_##e] = gx_cpu_##e,
    GX_OP_LIST(GX_CPU_KERNEL_ROW)
#undef GX_CPU_KERNEL_ROW
};
_Static_assert(sizeof s_kernels / sizeof s_kernels[0] == GX_OP_COUNT, "CPU kernel table");

gx_kernel_fn gx_cpu_kernel(gx_op op)
{
    return (unsigned)op < GX_OP_COUNT ? s_kernels[op] : NULL;
}
