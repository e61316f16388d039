/*
 * The packed MatMul kernel (ops/gemm.h) against OpenBLAS's sgemm on the
 * product shapes models have, one thread each: the figures behind the
 * kernels' choice (a constant B is always packed; a B of two values runs
 * the same kernels in place up to GX_GEMM_PLAIN_MAX_B). Asserts nothing.
 *
 *     bench/bench_gemm
 *     OPENBLAS_CORETYPE=SkylakeX bench/bench_gemm     # the kernels gexecd picks on AVX-512
 *     GEXEC_GEMM_ISA=avx2 bench/bench_gemm            # the packed kernels of another ISA
 *
 * One line per shape M×K×N: the best time of each over a few hundred
 * milliseconds of runs (blas; packed: B packed beforehand; plain: the same
 * kernels reading a row-major B in place, gx_cpu_gemm_rows), GFLOP/s, and
 * blas/packed, blas/plain (above 1: ours wins). "packable" says whether
 * the prepare pass would pack it (a constant B).
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/benchutil.h"
#include "ops/gemm.h"

static float *s_fill(int64_t n)
{
    float *p = gx_aligned_alloc((size_t)n * sizeof *p + 64);
    if (!p)
        gxb_die("bench_gemm", "memory", "out of memory");
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* Best microseconds of fn over about 0.3 s of runs. */
static double s_best(void (*fn)(void *), void *arg)
{
    double best = 1e30, start = gxb_now_us();
    for (int r = 0; r < 3 || gxb_now_us() - start < 300000.0; r++) {
        double t0 = gxb_now_us();
        fn(arg);
        double t = gxb_now_us() - t0;
        best = t < best ? t : best;
    }
    return best;
}

typedef struct s_case {
    int64_t m, k, n;
    float *a, *b, *bp, *y;
    gx_kernel_fn packed;
} s_case;

static void s_blas(void *arg)
{
    s_case *c = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->m, (int)c->n, (int)c->k, 1.0f,
                c->a, (int)c->k, c->b, (int)c->n, 0.0f, c->y, (int)c->n);
}

static void s_plain(void *arg)
{
    s_case *c = arg;
    gx_cpu_gemm_rows(c->m, c->n, c->k, c->a, c->k, c->b, c->n, c->y, c->n, false);
}

static void s_packed(void *arg)
{
    s_case *c = arg;
    gx_view in[2] = {{.dtype = GX_F32, .ndim = 2, .shape = {c->m, c->k}, .numel = c->m * c->k,
                      .data = c->a},
                     {.dtype = GX_F32, .ndim = 2, .shape = {c->k, c->n}, .numel = c->k * c->n,
                      .data = c->bp}};
    gx_view y = {.dtype = GX_F32, .ndim = 2, .shape = {c->m, c->n}, .numel = c->m * c->n,
                 .data = c->y};
    const gx_kargs ka = {.n_in = 2, .in = in, .n_out = 1, .out = &y, .ith = 0, .nth = 1};
    c->packed(&ka);
}

int main(void)
{
    static const int64_t shapes[][3] = {
        {128, 64, 128},   {128, 128, 64},   {1, 512, 512},    {4, 512, 512},    {16, 512, 512},   {64, 512, 512},
        {64, 256, 256},   {128, 256, 256},  {128, 256, 1024}, {128, 1024, 256},
        {256, 512, 512},  {256, 1024, 1024}, {1024, 1024, 1024}, {2048, 1024, 1024},
        {4096, 512, 2048},
    };
    openblas_set_num_threads(1); /* as gexecd's workers run it (daemon/pool.c) */
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("# packed kernels: %s; OpenBLAS %s (OPENBLAS_CORETYPE=%s); 1 thread\n",
           gx_cpu_gemm_isa(), openblas_get_corename(), ct ? ct : "unset");
    printf("%-16s %10s %10s %10s %10s %10s %12s %9s %11s\n", "M x K x N", "blas_us", "packed_us",
           "plain_us", "blas_GF/s", "packed_GF/s", "blas/packed", "packable", "blas/plain");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        s_case c = {.m = shapes[i][0], .k = shapes[i][1], .n = shapes[i][2],
                    .packed = gx_cpu_gemm_packed_kernel(GX_OP_MATMUL)};
        c.a = s_fill(c.m * c.k);
        c.b = s_fill(c.k * c.n);
        c.y = s_fill(c.m * c.n);
        const gx_view a = {.dtype = GX_F32, .ndim = 2, .shape = {c.m, c.k}, .numel = c.m * c.k};
        const gx_view b = {.dtype = GX_F32, .ndim = 2, .shape = {c.k, c.n}, .numel = c.k * c.n,
                           .data = c.b};
        const gx_view y = {.dtype = GX_F32, .ndim = 2, .shape = {c.m, c.n}, .numel = c.m * c.n};
        char why[128];
        const bool ok = gx_cpu_gemm_packable(GX_OP_MATMUL, NULL, &a, &b, &y, true, why, sizeof why);
        c.bp = s_fill((int64_t)gx_cpu_gemm_packed_floats(GX_OP_MATMUL, NULL, &b));
        gx_cpu_gemm_pack(GX_OP_MATMUL, NULL, &b, c.bp);
        const double tb = s_best(s_blas, &c), tp = s_best(s_packed, &c),
                     tq = s_best(s_plain, &c);
        const double flop = 2.0 * (double)c.m * (double)c.k * (double)c.n;
        char name[48];
        snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)c.m, (long long)c.k,
                 (long long)c.n);
        printf("%-16s %10.1f %10.1f %10.1f %10.1f %10.1f %12.2f %9s %11.2f\n", name, tb, tp, tq,
               flop / tb / 1e3, flop / tp / 1e3, tb / tp, ok ? "yes" : "no", tb / tq);
        free(c.a), free(c.b), free(c.bp), free(c.y);
    }
    return 0;
}
