/*
 * gexec's own CPU kernels against the libraries made for the job, on the
 * same shapes and threads: the record behind docs/kernels.md (which kernel
 * serves which op, and why no library replaced it). Asserts nothing.
 *
 *  - SGEMM with a constant B (a MatMul by weights): gexec's packed kernel
 *    (B packed beforehand, ops/gemm.h) against OpenBLAS cblas_sgemm,
 *    oneDNN's dnnl_sgemm and its matmul primitive with the weights in the
 *    layout it prefers (format_tag any, reordered once: the fair match for
 *    constant weights), and libxsmm (libxsmm_sgemm, which JITs small
 *    products and hands the rest to the BLAS, and a kernel dispatched for
 *    the whole product).
 *  - Conv, float32, NCHW logically, batch 1 and 32: gexec's plain NCHW
 *    kernel (im2col + OpenBLAS) and its NHWC and NCHW16c kernels (weights
 *    packed once; ops/cpu/conv_layout.c) against oneDNN's convolution
 *    primitive (src, weights and dst in the formats it picks, algorithm
 *    auto). Reorders of x and W happen before the timed loop on both
 *    sides: gexec's layout pass keeps activations in the blocked layout
 *    between ops, as an oneDNN user would.
 *
 * Every figure is the best of 7 runs, each repeating the call for at
 * least 20 ms; every result is checked against a reference (the largest
 * |a - b| / (1 + |b|), "maxdiff"). With --threads 2, gexec's kernels run
 * their shares ith 0 and 1 on two threads (the caller and a spinning
 * helper), OpenBLAS and oneDNN (OpenMP) get 2 threads, libxsmm's columns
 * stay single-threaded (marked "-").
 *
 * Not part of the build: it needs libdnnl-dev (oneDNN 2.x, C API) and
 * libxsmm-dev (1.17), which gexec does not depend on. Where they are
 * installed, `make -C build bench/bench_libs` builds it (bench/Makefile.inc;
 * elsewhere that target is a script saying what is missing); by hand, after
 * `make -C build`, from the source tree:
 *
 *   cc -std=gnu11 -O2 -ffp-contract=off -pthread -Wall -Wextra -Wstrict-prototypes \
 *      -Wswitch-enum -Wmissing-prototypes -Wshadow -Wno-unused-parameter \
 *      -D_GNU_SOURCE -Iinclude -I. $(pkg-config --cflags openblas) \
 *      -o build/bench/bench_libs bench/bench_libs.c bench/benchutil.c \
 *      build/ops/.libs/libgxops.a build/libclient/.libs/libgxclient.a \
 *      -ldnnl $(pkg-config --libs libxsmm openblas) -lgomp -lm
 *
 *   OPENBLAS_CORETYPE=SkylakeX build/bench/bench_libs        # OpenBLAS as gexecd runs it
 *   OPENBLAS_CORETYPE=SkylakeX build/bench/bench_libs --threads 2
 *
 * Tables: one line per shape; µs per call and GFLOP/s per implementation,
 * then each library's time over gexec's (above 1: gexec is faster).
 */
#include <math.h>
#include <stdbool.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <libxsmm.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "bench/benchutil.h"
#include "ops/gemm.h"
#include "ops/layout.h"

#define S_PROG "bench_libs"

#define RUNS 7
#define MIN_SECONDS 0.02 /* each run repeats the call for at least this long */

/* ---- small helpers ---- */

static void s_die(const char *what, const char *why)
{
    gxb_die(S_PROG, what, why);
}

static float *s_values(int64_t n, int64_t salt)
{
    float *p = gxb_alloc(S_PROG, (size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(((i + salt) * 7919) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* The largest |a - b| / (1 + |b|) over n floats. */
static double s_diff(const float *a, const float *b, int64_t n)
{
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        worst = d > worst || isnan(d) ? d : worst;
    }
    return worst;
}

#define S_DNNL(call)                                                                               \
    do {                                                                                           \
        const dnnl_status_t st_ = (call);                                                          \
        if (st_ != dnnl_success)                                                                   \
            s_die(#call, dnnl_status2str(st_));                                                    \
    } while (0)

/* ---- two threads for gexec's shares ----
 * The caller runs share 0, a helper spinning on `go` share 1; the helper
 * lives only while gexec's kernels are timed, so it never competes with
 * the libraries' own threads. */

typedef void (*s_share_fn)(void *arg, int ith, int nth);

typedef struct s_pool {
    int nth;
    pthread_t tid;
    atomic_uint go, done;
    atomic_bool quit;
    s_share_fn fn;
    void *arg;
} s_pool;

static void *s_helper(void *arg)
{
    s_pool *p = arg;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        while ((g = atomic_load_explicit(&p->go, memory_order_acquire)) == seen)
            __builtin_ia32_pause();
        seen = g;
        if (atomic_load(&p->quit))
            return NULL;
        p->fn(p->arg, 1, 2);
        atomic_store_explicit(&p->done, g, memory_order_release);
    }
}

static void s_pool_start(s_pool *p)
{
    if (p->nth < 2)
        return;
    atomic_store(&p->go, 0);
    atomic_store(&p->done, 0);
    atomic_store(&p->quit, false);
    if (pthread_create(&p->tid, NULL, s_helper, p) != 0)
        s_die("pthread_create", "failed");
}

static void s_pool_stop(s_pool *p)
{
    if (p->nth < 2)
        return;
    atomic_store(&p->quit, true);
    atomic_fetch_add_explicit(&p->go, 1, memory_order_release);
    pthread_join(p->tid, NULL);
}

/* fn's shares of p->nth, all done on return. */
static void s_pool_run(s_pool *p, s_share_fn fn, void *arg)
{
    if (p->nth < 2) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    const unsigned g = atomic_fetch_add_explicit(&p->go, 1, memory_order_release) + 1;
    fn(arg, 0, 2);
    while (atomic_load_explicit(&p->done, memory_order_acquire) != g)
        __builtin_ia32_pause();
}

/* A gexec kernel over its kargs, on the pool. */
typedef struct s_gx {
    s_pool *pool;
    gx_kernel_fn f;
    gx_kargs k;
} s_gx;

static void s_gx_share(void *arg, int ith, int nth)
{
    const s_gx *g = arg;
    gx_kargs k = g->k;
    k.ith = ith;
    k.nth = nth;
    g->f(&k);
}

static void s_gx_call(void *arg)
{
    s_gx *g = arg;
    s_pool_run(g->pool, s_gx_share, g);
}

/* Best microseconds per call of fn(arg) over RUNS runs. */
static double s_time(void (*fn)(void *), void *arg)
{
    double best = 1e30;
    fn(arg); /* warm up: caches, lazy JIT, page faults */
    for (int r = 0; r < RUNS; r++) {
        int calls = 0;
        const double t0 = gxb_now_s();
        double t;
        do {
            fn(arg);
            calls++;
        } while ((t = gxb_now_s() - t0) < MIN_SECONDS);
        if (t / calls < best)
            best = t / calls;
    }
    return best * 1e6;
}

/* gexec's kernel timed on the pool (the helper only lives meanwhile). */
static double s_time_gx(s_gx *g)
{
    s_pool_start(g->pool);
    const double us = s_time(s_gx_call, g);
    s_pool_stop(g->pool);
    return us;
}

/* ---- oneDNN plumbing ---- */

typedef struct s_dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
} s_dnnl;

/* A memory of md holding user's data (user_md) reordered; the library
 * allocates it. */
static dnnl_memory_t s_dnnl_from(const s_dnnl *d, const dnnl_memory_desc_t *md,
                                 const dnnl_memory_desc_t *user_md, void *user)
{
    dnnl_memory_t um, m;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    S_DNNL(dnnl_memory_create(&um, user_md, d->eng, user));
    S_DNNL(dnnl_memory_create(&m, md, d->eng, DNNL_MEMORY_ALLOCATE));
    S_DNNL(dnnl_reorder_primitive_desc_create(&rpd, user_md, d->eng, md, d->eng, NULL));
    S_DNNL(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, um}, {DNNL_ARG_TO, m}};
    S_DNNL(dnnl_primitive_execute(r, d->strm, 2, args));
    S_DNNL(dnnl_stream_wait(d->strm));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(um);
    return m;
}

/* m (of md) reordered into user (user_md). */
static void s_dnnl_to(const s_dnnl *d, dnnl_memory_t m, const dnnl_memory_desc_t *md,
                      const dnnl_memory_desc_t *user_md, void *user)
{
    dnnl_memory_t um;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    S_DNNL(dnnl_memory_create(&um, user_md, d->eng, user));
    S_DNNL(dnnl_reorder_primitive_desc_create(&rpd, md, d->eng, user_md, d->eng, NULL));
    S_DNNL(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, um}};
    S_DNNL(dnnl_primitive_execute(r, d->strm, 2, args));
    S_DNNL(dnnl_stream_wait(d->strm));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(um);
}

/* A primitive and its arguments, executed by s_dnnl_call. */
typedef struct s_dprim {
    const s_dnnl *d;
    dnnl_primitive_t prim;
    int nargs;
    dnnl_exec_arg_t args[4];
} s_dprim;

static void s_dnnl_call(void *arg)
{
    const s_dprim *p = arg;
    S_DNNL(dnnl_primitive_execute(p->prim, p->d->strm, p->nargs, p->args));
    S_DNNL(dnnl_stream_wait(p->d->strm));
}

/* The implementation's name ("brg:avx512_core"), shortened into out. */
static void s_impl(const_dnnl_primitive_desc_t pd, char *out, size_t len)
{
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(out, len, "%s", impl);
}

/* md's format in oneDNN's notation ("aBcd16b": dims outermost first,
 * upper case where blocked, then the inner blocks); the kind's name when
 * it is not a blocked format (Winograd's). */
static void s_fmt(const dnnl_memory_desc_t *md, char *out, size_t len)
{
    if (md->format_kind != dnnl_blocked) {
        snprintf(out, len, "%s", dnnl_fmt_kind2str(md->format_kind));
        return;
    }
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    int order[DNNL_MAX_NDIMS];
    bool blocked[DNNL_MAX_NDIMS] = {false};
    for (int i = 0; i < md->ndims; i++)
        order[i] = i;
    for (int i = 1; i < md->ndims; i++) /* by stride, descending; stable */
        for (int j = i; j > 0 && bd->strides[order[j]] > bd->strides[order[j - 1]]; j--) {
            const int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < bd->inner_nblks; i++)
        blocked[bd->inner_idxs[i]] = true;
    size_t o = 0;
    for (int i = 0; i < md->ndims && o + 1 < len; i++)
        out[o++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    out[o] = 0;
    for (int i = 0; i < bd->inner_nblks && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%lld%c", (long long)bd->inner_blks[i],
                              'a' + (int)bd->inner_idxs[i]);
}

/* ---- GEMM ---- */

enum { G_GX, G_BLAS, G_DSGEMM, G_DMM, G_XSMM, G_XJIT, G_COUNT };
static const char *const s_gnames[G_COUNT] = {"gexec", "openblas", "dnnl_sgemm", "dnnl_mm",
                                              "xsmm_sgemm", "xsmm_jit"};

typedef struct s_gemm {
    int64_t m, k, n;
    const float *a, *b;
    float *y;
    libxsmm_smmfunction jit;
} s_gemm;

static void s_blas(void *arg)
{
    const s_gemm *c = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->m, (int)c->n, (int)c->k, 1.0f,
                c->a, (int)c->k, c->b, (int)c->n, 0.0f, c->y, (int)c->n);
}

static void s_dsgemm(void *arg)
{
    const s_gemm *c = arg;
    S_DNNL(dnnl_sgemm('N', 'N', c->m, c->n, c->k, 1.0f, c->a, c->k, c->b, c->n, 0.0f, c->y, c->n));
}

/* libxsmm is column-major: row-major Y = A B is column-major Yᵀ = Bᵀ Aᵀ,
 * the same bytes, so m = N, n = M, a = B, b = A. */
static void s_xsmm(void *arg)
{
    const s_gemm *c = arg;
    const libxsmm_blasint m = (libxsmm_blasint)c->n, n = (libxsmm_blasint)c->m,
                          k = (libxsmm_blasint)c->k;
    const float one = 1.0f, zero = 0.0f;
    libxsmm_sgemm("N", "N", &m, &n, &k, &one, c->b, &m, c->a, &k, &zero, c->y, &m);
}

static void s_xjit(void *arg)
{
    const s_gemm *c = arg;
    c->jit(c->b, c->a, c->y);
}

static void s_gemm_shape(const s_dnnl *d, s_pool *pool, int64_t m, int64_t k, int64_t n)
{
    const int nth = pool->nth;
    s_gemm c = {.m = m, .k = k, .n = n};
    float *a = s_values(m * k, 1), *b = s_values(k * n, 2), *y = s_values(m * n, 3);
    float *ref = gxb_alloc(S_PROG, (size_t)(m * n) * sizeof *ref);
    c.a = a, c.b = b, c.y = ref;
    openblas_set_num_threads(1);
    s_blas(&c); /* the reference */
    c.y = y;
    double us[G_COUNT], diff[G_COUNT];
    for (int i = 0; i < G_COUNT; i++)
        us[i] = NAN, diff[i] = NAN;

    /* gexec: B packed once, the packed MatMul kernel */
    const gx_view bv = {.dtype = GX_F32, .ndim = 2, .shape = {k, n}, .numel = k * n, .data = b};
    float *bp = gxb_alloc(S_PROG, gx_cpu_gemm_packed_floats(GX_OP_MATMUL, NULL, &bv) * sizeof(float));
    gx_cpu_gemm_pack(GX_OP_MATMUL, NULL, &bv, bp);
    const gx_view in[2] = {
        {.dtype = GX_F32, .ndim = 2, .shape = {m, k}, .numel = m * k, .data = a},
        {.dtype = GX_F32, .ndim = 2, .shape = {k, n}, .numel = k * n, .data = bp}};
    const gx_view yv = {.dtype = GX_F32, .ndim = 2, .shape = {m, n}, .numel = m * n, .data = y};
    s_gx g = {.pool = pool, .f = gx_cpu_gemm_packed_kernel(GX_OP_MATMUL),
              .k = {.n_in = 2, .in = in, .n_out = 1, .out = &yv}};
    memset(y, 0, (size_t)(m * n) * sizeof *y);
    us[G_GX] = s_time_gx(&g);
    diff[G_GX] = s_diff(y, ref, m * n);

    /* OpenBLAS on nth threads */
    openblas_set_num_threads(nth);
    memset(y, 0, (size_t)(m * n) * sizeof *y);
    us[G_BLAS] = s_time(s_blas, &c);
    diff[G_BLAS] = s_diff(y, ref, m * n);
    openblas_set_num_threads(1);

    /* oneDNN: its GEMM (packs both operands per call) */
    memset(y, 0, (size_t)(m * n) * sizeof *y);
    us[G_DSGEMM] = s_time(s_dsgemm, &c);
    diff[G_DSGEMM] = s_diff(y, ref, m * n);

    /* oneDNN: the matmul primitive, weights in its layout (any) */
    dnnl_memory_desc_t amd, bmd, bany, ymd;
    S_DNNL(dnnl_memory_desc_init_by_tag(&amd, 2, (dnnl_dims_t){m, k}, dnnl_f32, dnnl_ab));
    S_DNNL(dnnl_memory_desc_init_by_tag(&bmd, 2, (dnnl_dims_t){k, n}, dnnl_f32, dnnl_ab));
    S_DNNL(dnnl_memory_desc_init_by_tag(&bany, 2, (dnnl_dims_t){k, n}, dnnl_f32,
                                        dnnl_format_tag_any));
    S_DNNL(dnnl_memory_desc_init_by_tag(&ymd, 2, (dnnl_dims_t){m, n}, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    S_DNNL(dnnl_matmul_desc_init(&md, &amd, &bany, NULL, &ymd));
    const double c0 = gxb_now_s();
    S_DNNL(dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL));
    s_dprim p = {.d = d, .nargs = 3};
    S_DNNL(dnnl_primitive_create(&p.prim, pd));
    const double create_us = (gxb_now_s() - c0) * 1e6;
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t am, ym, wm = s_dnnl_from(d, wmd, &bmd, b);
    S_DNNL(dnnl_memory_create(&am, &amd, d->eng, a));
    S_DNNL(dnnl_memory_create(&ym, &ymd, d->eng, y));
    p.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, am};
    p.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wm};
    p.args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, ym};
    char impl[64], wfmt[64];
    s_impl(pd, impl, sizeof impl);
    s_fmt(wmd, wfmt, sizeof wfmt);
    memset(y, 0, (size_t)(m * n) * sizeof *y);
    us[G_DMM] = s_time(s_dnnl_call, &p);
    diff[G_DMM] = s_diff(y, ref, m * n);
    dnnl_primitive_destroy(p.prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(wm);
    dnnl_memory_destroy(ym);

    /* libxsmm: one thread only */
    double jit_us = NAN;
    if (nth == 1) {
        memset(y, 0, (size_t)(m * n) * sizeof *y);
        us[G_XSMM] = s_time(s_xsmm, &c);
        diff[G_XSMM] = s_diff(y, ref, m * n);
        const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
        const float one = 1.0f, zero = 0.0f;
        const libxsmm_blasint lda = (libxsmm_blasint)n, ldb = (libxsmm_blasint)k,
                              ldc = (libxsmm_blasint)n;
        const double j0 = gxb_now_s();
        c.jit = libxsmm_smmdispatch((libxsmm_blasint)n, (libxsmm_blasint)m, (libxsmm_blasint)k,
                                    &lda, &ldb, &ldc, &one, &zero, &flags, &prefetch);
        jit_us = (gxb_now_s() - j0) * 1e6;
        if (c.jit) {
            memset(y, 0, (size_t)(m * n) * sizeof *y);
            us[G_XJIT] = s_time(s_xjit, &c);
            diff[G_XJIT] = s_diff(y, ref, m * n);
        }
    }

    const double flop = 2.0 * (double)m * (double)k * (double)n;
    char name[48], cell[G_COUNT][2][16];
    snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)m, (long long)k, (long long)n);
    double worst = 0.0;
    for (int i = 0; i < G_COUNT; i++) {
        if (isnan(us[i])) {
            snprintf(cell[i][0], sizeof cell[i][0], "-");
            snprintf(cell[i][1], sizeof cell[i][1], "-");
            continue;
        }
        snprintf(cell[i][0], sizeof cell[i][0], "%.1f", us[i]);
        snprintf(cell[i][1], sizeof cell[i][1], "%.1f", flop / us[i] / 1e3);
        worst = diff[i] > worst || isnan(diff[i]) ? diff[i] : worst;
    }
    printf("%-15s", name);
    for (int i = 0; i < G_COUNT; i++)
        printf(" %10s", cell[i][0]);
    printf(" |");
    for (int i = 0; i < G_COUNT; i++)
        printf(" %6s", cell[i][1]);
    printf(" |");
    for (int i = 1; i < G_COUNT; i++) {
        if (isnan(us[i]))
            printf(" %6s", "-");
        else
            printf(" %6.2f", us[i] / us[G_GX]);
    }
    printf(" | %.0e %s %s create %.0f us", worst, impl, wfmt, create_us);
    if (!isnan(jit_us))
        printf(", xsmm jit %.0f us%s", jit_us, c.jit ? "" : " (none)");
    printf("\n");
    fflush(stdout);
    free(a), free(b), free(y), free(ref), free(bp);
}

/* ---- Conv ---- */

enum { C_PLAIN, C_NHWC, C_16C, C_DNNL, C_COUNT };

/* One Conv [n, c, hw, hw] * [m, c / g, kk, kk] + bias, pad kk / 2, stride
 * 1: gexec per layout and oneDNN. */
static void s_conv_shape(const s_dnnl *d, s_pool *pool, int64_t n, int64_t c, int64_t m,
                         int64_t hw, int64_t kk, int64_t g)
{
    const int64_t p = kk / 2;
    gx_attr at[] = {{.name = (char *)"pads", .type = GX_ATTR_INTS,
                     .ints = (int64_t[]){p, p, p, p}, .n = 4},
                    {.name = (char *)"group", .type = GX_ATTR_INT, .i = g}};
    const gx_node node = {.n_attr = 2, .attr = at};
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 4, .shape = {n, c, hw, hw}},
                     {.dtype = GX_F32, .ndim = 4, .shape = {m, c / g, kk, kk}},
                     {.dtype = GX_F32, .ndim = 1, .shape = {m}}};
    for (int i = 0; i < 3; i++) {
        in[i].numel = gx_shape_numel(in[i].ndim, in[i].shape, INT64_MAX);
        in[i].data = s_values(in[i].numel, i);
    }
    gx_view out = {0};
    gx_attrval attr[GX_MAX_ATTRS];
    char err[256];
    gx_infer ic = {.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    const gx_op_schema *s = gx_op_schema_get(GX_OP_CONV);
    if (gx_op_resolve_attrs(GX_OP_CONV, &node, attr, err, sizeof err) < 0 || s->infer(&ic) < 0)
        s_die("Conv", err);
    const int64_t oh = out.shape[2], ow = out.shape[3];
    const size_t ybytes = (size_t)out.numel * sizeof(float);
    float *ref = gxb_alloc(S_PROG, ybytes), *back = gxb_alloc(S_PROG, ybytes);
    out.data = gxb_alloc(S_PROG, ybytes);
    double us[C_COUNT], diff[C_COUNT];
    for (int i = 0; i < C_COUNT; i++)
        us[i] = NAN, diff[i] = 0.0;

    /* gexec: plain (the reference), NHWC, NCHW16c; OpenBLAS on 1 thread
     * inside the plain kernel's shares, as in gexecd's workers */
    openblas_set_num_threads(1);
    for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
        const int col = l == GX_LAYOUT_PLAIN ? C_PLAIN : l == GX_LAYOUT_NHWC ? C_NHWC : C_16C;
        gx_view kin[3] = {in[0], in[1], in[2]}, y = out;
        void *scratch;
        gx_kernel_fn f;
        if (l == GX_LAYOUT_PLAIN) {
            f = gx_cpu_kernel(GX_OP_CONV);
            scratch = gxb_alloc(S_PROG, s->scratch(&ic));
        } else {
            char why[256];
            if (!(f = gx_cpu_conv_layout((gx_layout)l, &ic, why, sizeof why)))
                continue; /* no kernel in this layout */
            kin[0] = gx_layout_physical(gx_cpu_layout_input(GX_OP_CONV, (gx_layout)l, &ic, 0),
                                        &in[0]);
            kin[0].data = gxb_alloc(S_PROG, (size_t)in[0].numel * sizeof(float));
            gx_layout_reorder(&in[0], &kin[0], 0, 1);
            gx_cpu_conv_pack_shape((gx_layout)l, attr, &in[1], &kin[1]);
            kin[1].data = gxb_alloc(S_PROG, (size_t)kin[1].numel * sizeof(float));
            gx_cpu_conv_pack((gx_layout)l, attr, &in[1], &kin[1]);
            y = gx_layout_physical((gx_layout)l, &out);
            scratch = gxb_alloc(S_PROG, gx_cpu_conv_layout_scratch((gx_layout)l, &ic));
        }
        s_gx gk = {.pool = pool, .f = f,
                   .k = {.attr = attr, .n_in = 3, .in = kin, .n_out = 1, .out = &y,
                         .scratch = scratch}};
        us[col] = s_time_gx(&gk);
        if (l == GX_LAYOUT_PLAIN) {
            memcpy(ref, out.data, ybytes);
        } else {
            gx_view bv = out;
            bv.data = back;
            gx_layout_reorder(&y, &bv, 0, 1);
            diff[col] = s_diff(back, ref, out.numel);
        }
        free(scratch);
        if (l != GX_LAYOUT_PLAIN) {
            free(kin[0].data);
            free(kin[1].data);
        }
    }

    /* oneDNN: src, weights and dst "any", algorithm auto, bias */
    dnnl_memory_desc_t xu, wu, bmd, yu, xany, wany, yany;
    const dnnl_dims_t xd = {n, c, hw, hw}, yd = {n, m, oh, ow};
    dnnl_dims_t wd = {m, c / g, kk, kk};
    int wnd = 4;
    dnnl_format_tag_t wtag = dnnl_oihw;
    if (g > 1) {
        memcpy(wd, (dnnl_dims_t){g, m / g, c / g, kk, kk}, 5 * sizeof wd[0]);
        wnd = 5;
        wtag = dnnl_goihw;
    }
    S_DNNL(dnnl_memory_desc_init_by_tag(&xu, 4, xd, dnnl_f32, dnnl_nchw));
    S_DNNL(dnnl_memory_desc_init_by_tag(&yu, 4, yd, dnnl_f32, dnnl_nchw));
    S_DNNL(dnnl_memory_desc_init_by_tag(&wu, wnd, wd, dnnl_f32, wtag));
    S_DNNL(dnnl_memory_desc_init_by_tag(&bmd, 1, (dnnl_dims_t){m}, dnnl_f32, dnnl_a));
    S_DNNL(dnnl_memory_desc_init_by_tag(&xany, 4, xd, dnnl_f32, dnnl_format_tag_any));
    S_DNNL(dnnl_memory_desc_init_by_tag(&yany, 4, yd, dnnl_f32, dnnl_format_tag_any));
    S_DNNL(dnnl_memory_desc_init_by_tag(&wany, wnd, wd, dnnl_f32, dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    S_DNNL(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_auto,
                                              &xany, &wany, &bmd, &yany, (dnnl_dims_t){1, 1},
                                              (dnnl_dims_t){p, p}, (dnnl_dims_t){p, p}));
    dnnl_primitive_desc_t pd;
    const double c0 = gxb_now_s();
    S_DNNL(dnnl_primitive_desc_create(&pd, &cd, NULL, d->eng, NULL));
    s_dprim dp = {.d = d, .nargs = 4};
    S_DNNL(dnnl_primitive_create(&dp.prim, pd));
    const double create_us = (gxb_now_s() - c0) * 1e6;
    const dnnl_memory_desc_t *xmd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *ymd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    dnnl_memory_t xm = s_dnnl_from(d, xmd, &xu, in[0].data);
    dnnl_memory_t wm = s_dnnl_from(d, wmd, &wu, in[1].data);
    dnnl_memory_t bm, ym;
    S_DNNL(dnnl_memory_create(&bm, &bmd, d->eng, in[2].data));
    S_DNNL(dnnl_memory_create(&ym, ymd, d->eng, DNNL_MEMORY_ALLOCATE));
    dp.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, xm};
    dp.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wm};
    dp.args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bm};
    dp.args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, ym};
    char impl[64], xfmt[32], yfmt[32];
    s_impl(pd, impl, sizeof impl);
    s_fmt(xmd, xfmt, sizeof xfmt);
    s_fmt(ymd, yfmt, sizeof yfmt);
    us[C_DNNL] = s_time(s_dnnl_call, &dp);
    s_dnnl_to(d, ym, ymd, &yu, back);
    diff[C_DNNL] = s_diff(back, ref, out.numel);
    dnnl_primitive_destroy(dp.prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(xm);
    dnnl_memory_destroy(wm);
    dnnl_memory_destroy(bm);
    dnnl_memory_destroy(ym);

    /* gexec's best layout */
    static const char *const lname[C_DNNL] = {"nchw", "nhwc", "nchw16c"};
    int best = C_PLAIN;
    for (int i = C_NHWC; i < C_DNNL; i++)
        if (!isnan(us[i]) && us[i] < us[best])
            best = i;
    const double flop = 2.0 * (double)(n * m * oh * ow) * (double)(c / g * kk * kk);
    char name[64];
    snprintf(name, sizeof name, "%lld %lld>%lld %lldx%lld k%lld%s", (long long)n, (long long)c,
             (long long)m, (long long)hw, (long long)hw, (long long)kk, g > 1 ? "dw" : "");
    printf("%-22s", name);
    for (int i = 0; i < C_COUNT; i++) {
        if (isnan(us[i]))
            printf(" %9s", "-");
        else
            printf(" %9.1f", us[i]);
    }
    printf(" | %7.1f %7.1f | %-7s %6.2f | %.0e %s %s>%s create %.0f us\n",
           flop / us[best] / 1e3, flop / us[C_DNNL] / 1e3, lname[best], us[C_DNNL] / us[best],
           fmax(fmax(diff[C_NHWC], diff[C_16C]), diff[C_DNNL]), impl, xfmt, yfmt, create_us);
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        free(in[i].data);
    free(out.data), free(ref), free(back);
}

int main(int argc, char **argv)
{
    s_pool pool = {.nth = 1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            pool.nth = atoi(argv[++i]);
        else
            s_die(argv[i], "usage: bench_libs [--threads 1|2]");
    }
    if (pool.nth != 1 && pool.nth != 2)
        s_die("--threads", "1 or 2");
    omp_set_num_threads(pool.nth); /* oneDNN's threads (Debian builds it with OpenMP) */
    libxsmm_init();
    s_dnnl d;
    S_DNNL(dnnl_engine_create(&d.eng, dnnl_cpu, 0));
    S_DNNL(dnnl_stream_create(&d.strm, d.eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("# %d thread(s); gexec packed kernels %s; OpenBLAS %s (OPENBLAS_CORETYPE=%s)\n",
           pool.nth, gx_cpu_gemm_isa(), openblas_get_corename(), ct ? ct : "unset");
    printf("# oneDNN %d.%d.%d (%s runtime, ISA %s); libxsmm %s (target %s)\n", v->major,
           v->minor, v->patch, dnnl_runtime2str(v->cpu_runtime),
           dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()), LIBXSMM_CONFIG_VERSION,
           libxsmm_get_target_arch());
    printf("# best of %d runs of >= %.0f ms; ratios: library time / gexec time (> 1: gexec "
           "faster)\n\n",
           RUNS, MIN_SECONDS * 1e3);

    printf("## SGEMM, constant B [K, N]; µs per call | GFLOP/s | time / gexec's\n");
    printf("%-15s", "M x K x N");
    for (int i = 0; i < G_COUNT; i++)
        printf(" %10s", s_gnames[i]);
    printf(" |");
    for (int i = 0; i < G_COUNT; i++)
        printf(" %6.6s", s_gnames[i]);
    printf(" |");
    for (int i = 1; i < G_COUNT; i++)
        printf(" %6.6s", s_gnames[i]);
    printf(" | maxdiff, dnnl_mm impl, weights format, creation\n");
    static const int64_t shapes[][3] = {
        {1, 512, 512},    {4, 512, 512},     {64, 256, 256},     {64, 512, 512},
        {128, 256, 1024}, {128, 1024, 256},  {256, 1024, 1024},  {1024, 1024, 1024},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        s_gemm_shape(&d, &pool, shapes[i][0], shapes[i][1], shapes[i][2]);

    printf("\n## Conv, pad k/2, stride 1, bias; µs per call | GFLOP/s | gexec's best layout, "
           "dnnl time / gexec's best\n");
    printf("%-22s %9s %9s %9s %9s | %7s %7s | %-7s %6s | maxdiff, dnnl impl, src>dst formats, "
           "creation\n",
           "N C>M HWxHW kernel", "gx_nchw", "gx_nhwc", "gx_16c", "dnnl", "gx_GF", "dnnl_GF",
           "gx_best", "dnnl/gx");
    static const int64_t convs[][5] = {
        {3, 16, 32, 3, 1}, {16, 32, 16, 3, 1}, {32, 32, 56, 3, 32}, {64, 128, 28, 1, 1},
    };
    static const int64_t batches[] = {1, 32};
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
            s_conv_shape(&d, &pool, batches[b], convs[i][0], convs[i][1], convs[i][2],
                         convs[i][3], convs[i][4]);

    dnnl_stream_destroy(d.strm);
    dnnl_engine_destroy(d.eng);
    libxsmm_finalize();
    return 0;
}
