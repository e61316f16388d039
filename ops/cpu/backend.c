/*
 * The CPU backend's table (ops/backend.h): every op the schemas accept, the
 * kernels of ops/cpu/ in every layout, fused groups, packed GEMM operands;
 * its memory is host memory, so it needs no copies and no queues. The
 * only place outside ops/cpu/ that names a CPU kernel is this table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/backend.h"
#include "ops/cpu/cpu.h"
#include "ops/cpu/names.h"
#include "ops/fused.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "ops/qgemm.h"

static const gx_backend_layouts s_layouts = {
    .kernel = gx_cpu_layout_kernel,
    .factor = gx_cpu_layout_factor,
    .input = gx_cpu_layout_input,
    .conv_scratch = gx_cpu_conv_layout_scratch,
    .conv_pack_shape = gx_cpu_conv_pack_shape,
    .conv_pack = gx_cpu_conv_pack,
    .reorder = gx_cpu_reorder,
};

static const char *s_gemm_impl(void)
{
    static _Thread_local char name[32];
    snprintf(name, sizeof name, "packed.%s", gx_cpu_gemm_isa());
    return name;
}

static const gx_backend_qgemm_pack s_qgemm_pack = {
    .b_input = gx_cpu_qgemm_b_input,
    .packable = gx_cpu_qgemm_packable,
    .packed_bytes = gx_cpu_qgemm_packed_bytes,
    .pack = gx_cpu_qgemm_pack,
    .kernel = gx_cpu_qgemm_kernel,
    .impl = gx_cpu_qgemm_impl,
};

static const gx_backend_gemm_pack s_gemm_pack = {
    .packable = gx_cpu_gemm_packable,
    .packed_floats = gx_cpu_gemm_packed_floats,
    .pack = gx_cpu_gemm_pack,
    .kernel = gx_cpu_gemm_packed_kernel,
    .impl = s_gemm_impl,
};

static const gx_backend_gemm_tune s_gemm_tune = {
    .isa = gx_cpu_gemm_isa,
    .isa_name = gx_cpu_gemm_isa_name,
    .packed_kernel_isa = gx_cpu_gemm_packed_kernel_isa,
    .plain_matmul = gx_cpu_matmul_plain_b,
    .blas_matmul = gx_cpu_matmul_blas,
    .share = gx_cpu_share,
    .verify = gx_cpu_gemm_verify,
};

/* gexec's own MatMul kernels, checked on real products before any job
 * runs: a CPU on which the widest ones compute wrong gets the baseline ones. */
static int s_open(const gx_backend *b, char *note, size_t len)
{
    (void)b;
    char why[256];
    if (gx_cpu_gemm_selfcheck(why, sizeof why)) {
        snprintf(note, len, "MatMul kernels: %s, checked", gx_cpu_gemm_isa());
        return GX_OK;
    }
    gx_cpu_gemm_isa_set("baseline");
    char again[256];
    if (!gx_cpu_gemm_selfcheck(again, sizeof again))
        return gx_errf(note, len, GX_EINTERNAL, "MatMul kernels: %s; baseline: %s", why, again);
    snprintf(note, len, "MatMul kernels: %s; using the baseline ones", why);
    return GX_OK;
}

static void s_fused(const gx_backend *b, const gx_fused *f, const gx_kargs *k)
{
    (void)b;
    gx_cpu_fused(f, k->in, &k->out[0], k->scratch, k->ith, k->nth);
}

static void *s_alloc(const gx_backend *b, size_t bytes)
{
    (void)b;
    return gx_aligned_alloc(bytes ? bytes : 1);
}

static void s_free(const gx_backend *b, void *p)
{
    (void)b;
    free(p);
}

static int s_copy(const gx_backend *b, gx_copy_kind kind, void *dst, const void *src, size_t n,
                  void *queue)
{
    (void)b, (void)kind, (void)queue;
    if (n)
        memcpy(dst, src, n);
    return GX_OK;
}

static const gx_backend s_cpu = {
    .name = "cpu",
    .rules = NULL,
    .open = s_open,
    .kernel = gx_cpu_kernel,
    .kernel_name = gx_cpu_kernel_name,
    .kernel_by_name = gx_cpu_kernel_by_name,
    .kernels_id = gx_cpu_kernel_table_hash,
    .layouts = &s_layouts,
    .fused = s_fused,
    .fused_casts = true,
    .gemm_pack = &s_gemm_pack,
    .qgemm_pack = &s_qgemm_pack,
    .gemm_tune = &s_gemm_tune,
    .shares = true,
    .exact_slices = true,
    .host_memory = true,
    .alloc = s_alloc,
    .free = s_free,
    .copy = s_copy,
};

const gx_backend *gx_backend_cpu(void)
{
    return &s_cpu;
}
