/*
 * Throughput of the CPU MatMul kernel (gx_cpu_kernel(GX_OP_MATMUL), which
 * calls OpenBLAS sgemm) on square float32 matrices: one line per size with
 * the best GFLOP/s of a few runs. Asserts nothing.
 *
 *     bench/bench_matmul
 *     OPENBLAS_CORETYPE=SkylakeX bench/bench_matmul   # pick OpenBLAS kernels
 *
 * OPENBLAS_CORETYPE must be set before the library loads (it is read once,
 * at load time); the header line shows which kernels OpenBLAS chose.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/benchutil.h"
#include "ops/op.h"

#define RUNS 5

static float *s_matrix(int64_t n)
{
    float *p = gx_aligned_alloc((size_t)(n * n) * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench_matmul: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n * n; i++)
        p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* Best GFLOP/s of RUNS runs of A[n,n] x B[n,n], each run long enough to
 * time (at least one call and about 1 GFLOP). */
static double s_bench(int64_t n, int *calls)
{
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 2, .shape = {n, n}, .numel = n * n},
                     {.dtype = GX_F32, .ndim = 2, .shape = {n, n}, .numel = n * n}};
    gx_view out = {0};
    gx_attrval attr[GX_MAX_ATTRS];
    char err[256];
    gx_infer ic = {.attr = attr, .n_in = 2, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    if (gx_op_resolve_attrs(GX_OP_MATMUL, NULL, attr, err, sizeof err) < 0 ||
        gx_op_schema_get(GX_OP_MATMUL)->infer(&ic) < 0) {
        fprintf(stderr, "bench_matmul: %s\n", err);
        exit(1);
    }
    in[0].data = s_matrix(n);
    in[1].data = s_matrix(n);
    out.data = s_matrix(n);
    gx_kargs k = {.attr = attr, .n_in = 2, .in = in, .n_out = 1, .out = &out, .ith = 0, .nth = 1};
    gx_kernel_fn fn = gx_cpu_kernel(GX_OP_MATMUL);
    const double flop = 2.0 * (double)n * (double)n * (double)n;
    *calls = flop >= 1e9 ? 1 : (int)(1e9 / flop);
    fn(&k); /* warm up: page faults, OpenBLAS buffers and threads */
    double best = 0;
    for (int r = 0; r < RUNS; r++) {
        double t0 = gxb_now_s();
        for (int c = 0; c < *calls; c++)
            fn(&k);
        double gflops = flop * *calls / (gxb_now_s() - t0) * 1e-9;
        best = gflops > best ? gflops : best;
    }
    free(in[0].data);
    free(in[1].data);
    free(out.data);
    return best;
}

int main(void)
{
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    printf("# OpenBLAS core %s, %d threads (%s); OPENBLAS_CORETYPE=%s\n",
           openblas_get_corename(), openblas_get_num_threads(), openblas_get_config(),
           coretype ? coretype : "(unset)");
    const int64_t sizes[] = {256, 512, 1024, 2048};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int calls;
        double gflops = s_bench(sizes[i], &calls);
        printf("matmul %4lld x %-4lld  %8.1f GFLOP/s  (best of %d runs of %d call%s)\n",
               (long long)sizes[i], (long long)sizes[i], gflops, RUNS, calls,
               calls == 1 ? "" : "s");
        fflush(stdout);
    }
    return 0;
}
