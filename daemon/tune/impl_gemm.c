/*
 * The MatMul and Gemm side of the registry: which steps are tuned (their
 * signature), the built-in implementations (the packed kernels on each ISA
 * this CPU has, the plain-B kernel, OpenBLAS), and one measurement of one
 * implementation on a signature: fixed pseudo-random inputs of the real
 * shapes, the output checked against a float64 reference, the median of
 * several timed runs on this thread.
 */
#include <config.h>

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/tune/tune_internal.h"
#include "core/internal.h"
#include "ops/backend.h"
#include "ops/cpu/cpu.h" /* gx_bcast_strides */
#include "ops/schema.h"

/* ---- signatures ---- */

/* ---- the table of tuned ops ---- */

const gxd_tune_op *gxd_tune_op_of(gx_op op)
{
    static const gxd_tune_op *const ops[] = {&gxd_tune_op_matmul, &gxd_tune_op_gemm,
                                             &gxd_tune_op_conv};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i]->op == op)
            return ops[i];
    return NULL;
}

bool gxd_tune_sig_of(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                     const gx_view *y, gxd_tune_sig *sig, char *why, size_t whylen)
{
    const gxd_tune_op *o = gxd_tune_op_of(op);
    if (!o) {
        snprintf(why, whylen, "%s is not tuned", gx_op_name(op));
        return false;
    }
    return o->sig_of(op, attr, n_in, in, y, sig, why, whylen);
}

void gxd_tune_sig_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    gxd_tune_op_of(s->op)->sig_str(s, buf, len);
}

void gxd_tune_sig_family_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    gxd_tune_op_of(s->op)->family_str(s, buf, len);
}

gx_kernel_fn gxd_tune_impl_kernel(const gxd_tune_impl *im, gx_op op)
{
    return op == GX_OP_MATMUL ? im->matmul
           : op == GX_OP_GEMM ? im->gemm
           : op == GX_OP_CONV ? im->conv
                              : NULL;
}

int64_t gxd_tune_impl_scratch(const gxd_tune_impl *im, const gxd_tune_sig *sig)
{
    if (im->scratch)
        return im->scratch(sig);
    return 0;
}

bool gxd_tune_impl_takes(const gxd_tune_impl *im, const gxd_tune_sig *sig)
{
    return !(im->per_image && sig->op == GX_OP_CONV && sig->a_shape[0] < 2) &&
           gxd_tune_impl_scratch(im, sig) >= 0;
}

/* ---- MatMul and Gemm signatures ---- */

static bool s_sig_of(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                     const gx_view *y, gxd_tune_sig *sig, char *why, size_t whylen)
{
    if (n_in < 2 || !gx_backend_cpu()->gemm_pack->packable(op, attr, &in[0], &in[1], y, true, why, whylen))
        return false;
    const gx_view *a = &in[0];
    memset(sig, 0, sizeof *sig);
    sig->op = op;
    sig->a_ndim = a->ndim;
    memcpy(sig->a_shape, a->shape, sizeof a->shape[0] * (size_t)a->ndim);
    sig->k = a->shape[a->ndim - 1];
    sig->m = sig->k > 0 ? a->numel / sig->k : 0;
    sig->n = y->ndim > 0 ? y->shape[y->ndim - 1] : 1;
    sig->c_ndim = -1;
    if (op == GX_OP_GEMM) {
        sig->trans_b = attr[GX_GEMM_TRANSB].i != 0;
        sig->alpha = (float)attr[GX_GEMM_ALPHA].f;
        sig->beta = (float)attr[GX_GEMM_BETA].f;
        if (n_in > 2 && in[2].ndim >= 0) {
            if (in[2].ndim > 2 || in[2].dtype != GX_F32) {
                snprintf(why, whylen, "C is not a float32 of at most 2 dims");
                return false;
            }
            sig->c_ndim = in[2].ndim;
            memcpy(sig->c_shape, in[2].shape, sizeof in[2].shape[0] * (size_t)in[2].ndim);
        }
    }
    if (sig->m <= 0 || sig->n <= 0 || sig->k <= 0) {
        snprintf(why, whylen, "an empty product");
        return false;
    }
    return true;
}

static void s_sig_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    char a[128], c[64] = "";
    gx_shape_str(s->a_ndim, s->a_shape, a, sizeof a);
    if (s->op == GX_OP_GEMM) {
        char cs[48] = "none";
        if (s->c_ndim >= 0)
            gx_shape_str(s->c_ndim, s->c_shape, cs, sizeof cs);
        snprintf(c, sizeof c, " transB=%d alpha=%.9g beta=%.9g c=%s", s->trans_b, (double)s->alpha,
                 (double)s->beta, cs);
    }
    snprintf(buf, len, "%s f32 a%s b[%lld,%lld]%s y[%lld,%lld] plain", gx_op_name(s->op), a,
             (long long)(s->trans_b ? s->n : s->k), (long long)(s->trans_b ? s->k : s->n), c,
             (long long)s->m, (long long)s->n);
}

static void s_family_str(const gxd_tune_sig *s, char *buf, size_t len)
{
    char c[96] = "";
    if (s->op == GX_OP_GEMM) {
        char cs[48] = "none";
        if (s->c_ndim >= 0) /* C's rows follow A's: only its columns count */
            snprintf(cs, sizeof cs, "%s%lld", s->c_ndim == 0 ? "scalar" : "cols=",
                     s->c_ndim == 0 ? 0LL : (long long)s->c_shape[s->c_ndim - 1]);
        snprintf(c, sizeof c, " transB=%d alpha=%.9g beta=%.9g c=%s", s->trans_b, (double)s->alpha,
                 (double)s->beta, cs);
    }
    snprintf(buf, len, "%s f32 b[%lld,%lld]%s plain", gx_op_name(s->op),
             (long long)(s->trans_b ? s->n : s->k), (long long)(s->trans_b ? s->k : s->n), c);
}

/* ---- the built-in implementations ---- */

/* The CPU table's candidates: its packed kernels on every ISA, its plain-B
 * loops and OpenBLAS. */
size_t gxd_tune_builtin_impls(gxd_tune_impl *out, size_t max)
{
    const gx_backend *cpu = gx_backend_cpu();
    const gx_backend_gemm_tune *gt = cpu->gemm_tune;
    size_t n = 0;
    for (int i = 0; gt->isa_name(i) && n < max; i++) {
        const char *isa = gt->isa_name(i);
        gxd_tune_impl *im = &out[n++];
        memset(im, 0, sizeof *im);
        snprintf(im->name, sizeof im->name, "packed.%s", isa);
        im->version = 1;
        snprintf(im->source, sizeof im->source, "gexec");
        im->packed = true;
        im->matmul = gt->packed_kernel_isa(GX_OP_MATMUL, isa);
        im->gemm = gt->packed_kernel_isa(GX_OP_GEMM, isa);
    }
    if (n < max)
        out[n++] = (gxd_tune_impl){.name = "plain", .version = 1, .source = "gexec",
                                   .matmul = gt->plain_matmul};
    if (n < max)
        out[n++] = (gxd_tune_impl){.name = "blas", .version = 1, .source = "openblas",
                                   .matmul = gt->blas_matmul, .gemm = cpu->kernel(GX_OP_GEMM)};
    if (n < max)
        out[n++] = gxd_tune_conv_builtin();
    n += gxd_tune_dnnl_impls(out + n, max - n);
    return n;
}

/* ---- measuring ---- */

void gxd_tune_fill(float *p, int64_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (float)((double)(x >> 40) / (double)(1ull << 23)) - 1.0f;
    }
}

static int64_t s_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A run is timed by this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not
 * the wall clock: every candidate runs on this thread alone, so while another
 * process takes the core (a benchmark, a build) the time the explorer waits
 * for it is not counted against the candidate that happened to be running.
 * Timed by the wall clock, a 1024^3 product measured beside a 2-thread
 * process on 2 cores took 73 ms for the incumbent and 40 ms for the one
 * measured after the load ended, a record that then held the slower kernel. */
static int64_t s_run_ns(void)
{
    return s_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int s_cmp64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A product's inputs, B packed, and the reference rows. */
static int s_bench_init(gxd_tune_bench *bn)
{
    const gxd_tune_sig *s = &bn->sig;
    const int64_t m = s->m, k = s->k, n = s->n;
    const int64_t cn = s->c_ndim < 0 ? 0 : gx_shape_numel(s->c_ndim, s->c_shape, INT64_MAX);
    bn->a = gx_aligned_alloc(sizeof(float) * (size_t)(m * k + 1));
    bn->b = gx_aligned_alloc(sizeof(float) * (size_t)(k * n + 1));
    bn->bp = gx_aligned_alloc(sizeof(float) * (size_t)(((n + 15) / 16) * 16 * k + 16));
    bn->c = gx_aligned_alloc(sizeof(float) * (size_t)(cn + 1));
    bn->y = gx_aligned_alloc(sizeof(float) * (size_t)(m * n + 1));
    if (!bn->a || !bn->b || !bn->bp || !bn->c || !bn->y)
        return GX_ENOMEM;
    gxd_tune_fill(bn->a, m * k, 1);
    gxd_tune_fill(bn->b, k * n, 2);
    gxd_tune_fill(bn->c, cn, 3);
    for (int i = 0; i < GX_MAX_ATTRS; i++)
        bn->attr[i] = (gx_attrval){0};
    if (s->op == GX_OP_GEMM) {
        bn->attr[GX_GEMM_ALPHA].f = s->alpha;
        bn->attr[GX_GEMM_BETA].f = s->beta;
        bn->attr[GX_GEMM_TRANSB].i = s->trans_b;
    }
    bn->in[0] = (gx_view){.dtype = GX_F32, .ndim = s->a_ndim, .numel = m * k, .data = bn->a};
    memcpy(bn->in[0].shape, s->a_shape, sizeof s->a_shape);
    bn->in[1] = (gx_view){.dtype = GX_F32, .ndim = 2, .numel = k * n, .data = bn->b};
    bn->in[1].shape[0] = s->trans_b ? n : k;
    bn->in[1].shape[1] = s->trans_b ? k : n;
    bn->in[2] = (gx_view){.dtype = GX_F32, .ndim = s->c_ndim, .numel = cn, .data = bn->c};
    memcpy(bn->in[2].shape, s->c_shape, sizeof s->c_shape);
    bn->vy = (gx_view){.dtype = GX_F32, .ndim = s->a_ndim, .numel = m * n, .data = bn->y};
    memcpy(bn->vy.shape, s->a_shape, sizeof s->a_shape);
    bn->vy.shape[s->a_ndim - 1] = n;
    if (s->op == GX_OP_GEMM) {
        bn->vy.ndim = 2;
        bn->vy.shape[0] = m;
        bn->vy.shape[1] = n;
    }
    gx_backend_cpu()->gemm_pack->pack(s->op, bn->attr, &bn->in[1], bn->bp);
    /* the reference on up to GXD_TUNE_CHECK_ROWS rows spread over A */
    bn->n_in = s->op == GX_OP_GEMM ? 3 : 2;
    bn->row_len = n;
    bn->terms = k;
    bn->n_check = m < GXD_TUNE_CHECK_ROWS ? (int)m : GXD_TUNE_CHECK_ROWS;
    bn->ref = malloc(sizeof *bn->ref * (size_t)(bn->n_check * n + 1));
    bn->mag = malloc(sizeof *bn->mag * (size_t)(bn->n_check * n + 1));
    if (!bn->ref || !bn->mag)
        return GX_ENOMEM;
    int64_t cs[2] = {0, 0};
    if (s->c_ndim >= 0)
        gx_bcast_strides(2, s->c_ndim, s->c_shape, cs);
    for (int r = 0; r < bn->n_check; r++) {
        const int64_t i = bn->n_check > 1 ? (int64_t)r * (m - 1) / (bn->n_check - 1) : 0;
        bn->rows[r] = i;
        for (int64_t j = 0; j < n; j++) {
            double sum = 0.0, mag = 0.0;
            for (int64_t l = 0; l < k; l++) {
                const double bv = s->trans_b ? bn->b[j * k + l] : bn->b[l * n + j];
                sum += (double)bn->a[i * k + l] * bv;
                mag += fabs((double)bn->a[i * k + l] * bv);
            }
            if (s->op == GX_OP_GEMM) {
                sum *= s->alpha;
                mag *= fabs((double)s->alpha);
                if (s->c_ndim >= 0 && s->beta != 0.0f) {
                    const double cv = bn->c[i * cs[0] + j * cs[1]];
                    sum += s->beta * cv;
                    mag += fabs(s->beta * cv);
                }
            }
            bn->ref[r * n + j] = sum;
            bn->mag[r * n + j] = mag;
        }
    }
    return GX_OK;
}

static double s_madds(const gxd_tune_sig *s)
{
    return (double)s->m * (double)s->n * (double)s->k;
}

const gxd_tune_op gxd_tune_op_matmul = {.op = GX_OP_MATMUL,
                                        .sig_of = s_sig_of,
                                        .sig_str = s_sig_str,
                                        .family_str = s_family_str,
                                        .madds = s_madds,
                                        .bench_init = s_bench_init};
const gxd_tune_op gxd_tune_op_gemm = {.op = GX_OP_GEMM,
                                      .sig_of = s_sig_of,
                                      .sig_str = s_sig_str,
                                      .family_str = s_family_str,
                                      .madds = s_madds,
                                      .bench_init = s_bench_init};

int gxd_tune_bench_init(gxd_tune_bench *bn, const gxd_tune_sig *s)
{
    memset(bn, 0, sizeof *bn);
    bn->sig = *s;
    const gxd_tune_op *o = gxd_tune_op_of(s->op);
    int rc = o ? o->bench_init(bn) : GX_EUNSUPPORTED;
    if (rc != GX_OK)
        gxd_tune_bench_fini(bn);
    return rc;
}

void gxd_tune_bench_fini(gxd_tune_bench *bn)
{
    free(bn->a);
    free(bn->b);
    free(bn->bp);
    free(bn->c);
    free(bn->y);
    free(bn->ref);
    free(bn->mag);
    free(bn->scratch);
    memset(bn, 0, sizeof *bn);
}

/* Share ith of nth of one run of im's kernel on the bench's inputs, on
 * this thread. */
static void s_piece(gxd_tune_bench *bn, const gxd_tune_impl *im, int ith, int nth)
{
    gx_view in[3] = {bn->in[0], bn->in[1], bn->in[2]};
    if (im->packed)
        in[1].data = bn->bp;
    const gx_kargs k = {.attr = bn->attr,
                        .n_in = bn->n_in,
                        .in = in,
                        .n_out = 1,
                        .out = &bn->vy,
                        .scratch = bn->scratch,
                        .ith = ith,
                        .nth = nth};
    gxd_tune_impl_kernel(im, bn->sig.op)(&k);
}

/* Pieces a run of about run_ns is cut into (GXD_TUNE_PIECE_NS each), at
 * most one per 16 output elements and GXD_TUNE_MAX_PIECES; 1 for an op
 * whose candidates run whole (gxd_tune_op.whole). */
int gxd_tune_bench_pieces(const gxd_tune_bench *bn, int64_t run_ns)
{
    if (gxd_tune_op_of(bn->sig.op)->whole)
        return 1;
    int64_t n = (run_ns + GXD_TUNE_PIECE_NS - 1) / GXD_TUNE_PIECE_NS;
    const int64_t cap = bn->vy.numel / 16;
    if (n > cap)
        n = cap;
    if (n > GXD_TUNE_MAX_PIECES)
        n = GXD_TUNE_MAX_PIECES;
    return n < 1 ? 1 : (int)n;
}

/* One whole run of im in nth pieces, one after the other on this thread
 * (kernels split their work by (ith, nth) and compute every element the
 * same way whatever the split). Between pieces, when a job arrived (idle()
 * false, or its epoch moved): with wait, wait for idle time and go on;
 * else give the run up (false). False when stopping. */
static bool s_run(gxd_tune_bench *bn, const gxd_tune_impl *im, int nth, gxd_tune_idle_fn idle,
                  void *arg, bool wait, atomic_bool *stop)
{
    uint64_t e0 = 0, e1 = 0;
    if (idle)
        (void)idle(arg, &e0);
    for (int i = 0; i < nth; i++) {
        while (i > 0 && idle && (!idle(arg, &e1) || e1 != e0)) {
            if (!wait || atomic_load(stop))
                return false;
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
            (void)idle(arg, &e0);
        }
        s_piece(bn, im, i, nth);
    }
    return !atomic_load(stop);
}

/* The scratch im needs on bn's shapes, in bn->scratch; false with why
 * when im cannot run them. */
static bool s_scratch(gxd_tune_bench *bn, const gxd_tune_impl *im, char *why, size_t whylen)
{
    const int64_t bytes = gxd_tune_impl_scratch(im, &bn->sig);
    if (!gxd_tune_impl_takes(im, &bn->sig)) {
        snprintf(why, whylen, bytes < 0 ? "does not take this shape"
                                        : "runs an image on one worker: no candidate for one image");
        return false;
    }
    if (bytes > bn->scratch_bytes) {
        free(bn->scratch);
        bn->scratch_bytes = 0;
        if (!(bn->scratch = gx_aligned_alloc((size_t)bytes + 1))) {
            snprintf(why, whylen, "out of memory for its scratch (%lld bytes)", (long long)bytes);
            return false;
        }
        bn->scratch_bytes = bytes;
    }
    return true;
}

bool gxd_tune_bench_check(gxd_tune_bench *bn, const gxd_tune_impl *im, char *why, size_t whylen,
                          int64_t *run_ns, int *pieces, gxd_tune_idle_fn idle, void *idle_arg,
                          atomic_bool *stop)
{
    const gxd_tune_sig *s = &bn->sig;
    const int64_t n = bn->row_len;
    *run_ns = 0;
    if (!s_scratch(bn, im, why, whylen))
        return false;
    for (int64_t i = 0; i < bn->vy.numel; i++) /* poison: a kernel that skips an element fails */
        bn->y[i] = NAN;
    /* a first run of unknown length: pieces as if at GXD_TUNE_SLOW_FLOPS */
    *pieces = gxd_tune_bench_pieces(
        bn, (int64_t)(2.0 * gxd_tune_op_of(s->op)->madds(s) / GXD_TUNE_SLOW_FLOPS * 1e9));
    const int64_t t0 = s_run_ns();
    if (!s_run(bn, im, *pieces, idle, idle_arg, true, stop)) {
        snprintf(why, whylen, "stopped");
        *run_ns = -1;
        return false;
    }
    *run_ns = s_run_ns() - t0; /* idle waits sleep: not counted */
    for (int r = 0; r < bn->n_check; r++)
        for (int64_t j = 0; j < n; j++) {
            const double got = bn->y[bn->rows[r] * n + j], want = bn->ref[r * n + j];
            /* float32 sums of `terms` products: relative to the sum of magnitudes */
            const double tol = 1e-5 * (double)(bn->terms + 8) * bn->mag[r * n + j] + 1e-6;
            if (!(fabs(got - want) <= tol)) {
                snprintf(why, whylen, "y[%lld,%lld] = %.9g, reference %.9g (tolerance %.3g)",
                         (long long)bn->rows[r], (long long)j, got, want, tol);
                return false;
            }
        }
    snprintf(why, whylen, "%d rows of %lld against a float64 reference, tol 1e-5*(%s+8)*%s",
             bn->n_check, (long long)(bn->vy.numel / (n ? n : 1)),
             s->op == GX_OP_CONV ? "C/group*taps" : "k", s->op == GX_OP_CONV ? "|x||w|" : "|a||b|");
    return true;
}

int64_t gxd_tune_bench_time(gxd_tune_bench *bn, const gxd_tune_impl *im, int runs, int nth,
                            int64_t budget_ns, gxd_tune_idle_fn idle, void *idle_arg,
                            atomic_bool *stop)
{
    if (im->fixed_ns > 0)
        return im->fixed_ns;
    int64_t t[GXD_TUNE_MAX_RUNS];
    int got = 0;
    if (runs > GXD_TUNE_MAX_RUNS)
        runs = GXD_TUNE_MAX_RUNS;
    const int64_t start = s_ns(CLOCK_MONOTONIC);
    if (!s_run(bn, im, nth, idle, idle_arg, true, stop)) /* warm the caches */
        return -1;
    while (got < runs && !atomic_load(stop)) {
        uint64_t e0 = 0, e1 = 0;
        if (idle && !idle(idle_arg, &e0)) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL); /* a job runs: wait for idle time */
            continue;
        }
        const int64_t t0 = s_run_ns();
        if (!s_run(bn, im, nth, idle, idle_arg, false, stop))
            continue; /* a job came meanwhile: this sample is given up */
        const int64_t dt = s_run_ns() - t0;
        if (idle && (!idle(idle_arg, &e1) || e1 != e0))
            continue; /* a job came during the last piece: not clean */
        t[got++] = dt;
        if (got >= 3 && s_ns(CLOCK_MONOTONIC) - start > budget_ns)
            break;
    }
    if (!got)
        return -1;
    qsort(t, (size_t)got, sizeof t[0], s_cmp64);
    return t[got / 2];
}
