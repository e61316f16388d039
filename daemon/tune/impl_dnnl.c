/*
 * oneDNN (Debian's libdnnl-dev) as a MatMul candidate of the registry:
 * `dnnl.sgemm`, dnnl_sgemm over B as it is, each worker's share of A's
 * rows (blocks of S_ROWS) on its own, so the job's intra-op share count is
 * respected: oneDNN's OpenMP runtime is held to one thread on the calling
 * worker (omp_set_num_threads(1) sets that thread's own ICV), so no
 * OpenMP team is started beside gexec's workers. dnnl_sgemm needs no
 * primitive (nothing is created per call or per signature). Measured
 * against gexec's kernels in docs/tune.md "Candidates" (bench/bench_dnnl.c).
 * Without oneDNN at build time (configure --without-dnnl, or no
 * libdnnl-dev) the candidate does not exist.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/tune/tune_internal.h"
#include "ops/backend.h"

#ifdef HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

/* Rows of A per dnnl_sgemm call. The blocks depend on the rows alone,
 * not on the share count, so every element is computed by the same call
 * shape whatever the split (oneDNN may sum a product of another M in
 * another order): seq, intra and replicas give the same bits. */
#define S_ROWS 64

/* This worker's blocks of rows of y = a · b (dnnl_sgemm is row-major). A
 * call oneDNN refuses leaves its rows NaN: the registry's check rejects
 * it. */
static void s_dnnl_matmul(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    const int64_t rows = kk > 0 ? a->numel / kk : 0;
    int64_t lo, hi;
    omp_set_num_threads(1); /* this share, on this worker: no OpenMP team */
    gx_backend_cpu()->gemm_tune->share(k, (rows + S_ROWS - 1) / S_ROWS, 1, &lo, &hi);
    if (lo >= hi || n == 0)
        return;
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t r0 = blk * S_ROWS, nr = rows - r0 < S_ROWS ? rows - r0 : S_ROWS;
        float *yr = (float *)y->data + r0 * n;
        if (dnnl_sgemm('N', 'N', nr, n, kk, 1.0f, (const float *)a->data + r0 * kk, kk, b->data,
                       n, 0.0f, yr, n) != dnnl_success)
            for (int64_t i = 0; i < nr * n; i++)
                yr[i] = NAN;
    }
}

size_t gxd_tune_dnnl_impls(gxd_tune_impl *out, size_t max)
{
    if (max < 1)
        return 0;
    out[0] = (gxd_tune_impl){.name = "dnnl.sgemm", .version = 1, .source = "onednn",
                             .matmul = s_dnnl_matmul};
    return 1;
}

void gxd_tune_dnnl_build(char *buf, size_t len)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, len, " onednn=%d.%d.%d", v->major, v->minor, v->patch);
}

#else

size_t gxd_tune_dnnl_impls(gxd_tune_impl *out, size_t max)
{
    (void)out;
    (void)max;
    return 0;
}

void gxd_tune_dnnl_build(char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
}

#endif
