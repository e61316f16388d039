/*
 * Stable names of the CPU kernels (seed 004): a compiled plan saved to disk
 * (daemon/compile/artifact.c) names each step's kernel instead of holding
 * its address, which changes with every build and run.
 *
 *   const char *name = gx_cpu_kernel_name(step->kernel);  // "cpu.Conv.nhwc@1"
 *   gx_kernel_fn fn = gx_cpu_kernel_by_name(name);         // back, or NULL
 *
 * Every kernel a plan may hold has a row: the per-op kernels
 * ("cpu.<Op>@1", GX_KERNEL_OP_LIST), the kernels per memory layout
 * (ops/layout.h: "cpu.Conv.nhwc@1", "cpu.MaxPool.layout@1",
 * "cpu.reorder@1"...) and the packed GEMM kernels, on the ISA in use
 * ("cpu.MatMul.packed@1") and per ISA ("cpu.MatMul.packed.avx2@1"; only
 * those this CPU runs resolve). The "@N" is the kernel's version: it is
 * bumped when what the kernel reads changes (a packing format), so a saved
 * plan that named the old one no longer loads.
 */
#ifndef GX_OPS_CPU_NAMES_H
#define GX_OPS_CPU_NAMES_H

#include <stdint.h>

#include "ops/op.h"

/* The stable name of fn, static storage; NULL if fn is no CPU kernel. */
const char *gx_cpu_kernel_name(gx_kernel_fn fn);

/* The kernel called name, or NULL (unknown, or a packed kernel for an ISA
 * this CPU lacks). */
gx_kernel_fn gx_cpu_kernel_by_name(const char *name);

/* A hash (FNV-1a 64) of every kernel name and op name, in table order: part
 * of a saved plan's build id, so a build whose tables differ rejects it. */
uint64_t gx_cpu_kernel_table_hash(void);

#endif
