/*
 * oneDNN (Debian's libdnnl-dev) as candidates of the registry.
 *
 * MatMul: `dnnl.sgemm`, dnnl_sgemm over B as it is, each worker's share of A's
 * rows (blocks of S_ROWS) on its own, so the job's intra-op share count is
 * respected: oneDNN's OpenMP runtime is held to one thread on the calling
 * worker (omp_set_num_threads(1) sets that thread's own ICV), so no
 * OpenMP team is started beside gexec's workers. dnnl_sgemm needs no
 * primitive (nothing is created per call or per signature). Measured
 * against gexec's kernels in docs/tune.md "Candidates" (bench/bench_dnnl.c).
 *
 * Conv: `dnnl.conv`, oneDNN's convolution primitive with x, W, the bias
 * and y in gexec's plain layout (NCHW, OIHW / GOIHW and their 1-D and 3-D
 * kin: the drop-in for a plain Conv step, nothing reordered or prepared).
 * The work is cut into fixed blocks, S_CONV_BLOCKS runs of output
 * channels (whole groups) per image (one: the whole image), which depend
 * on the shapes alone, not on the share count: every block is one batch-1
 * primitive of the same shape whatever the split, so seq, intra and
 * replicas give the same bits (a batch of one runs on one worker).
 * A share runs a contiguous range of blocks, held to one OpenMP thread like
 * dnnl.sgemm. The primitives (one per block shape: the full block and the
 * last) are made by the candidate's scratch hook (the prepare pass, the
 * explorer; a plan read from an artifact makes it on its first job, as
 * does every job when the cache is full), and kept in a
 * bounded process-wide cache; their scratchpad is the user's
 * (dnnl_scratchpad_mode_user): the step's scratch, one slot per share for
 * at most S_CONV_SLOTS shares at once (more shares: those beyond run
 * nothing), declared through the candidate's scratch hook.
 *
 * Without oneDNN at build time (configure --without-dnnl, or no
 * libdnnl-dev) the candidates do not exist.
 */
#include <config.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "daemon/tune/tune_internal.h"
#include "ops/backend.h"
#include "ops/conv.h"
#include "ops/schema.h"

#ifdef HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

/* Rows of A per dnnl_sgemm call. The blocks depend on the rows alone,
 * not on the share count, so every element is computed by the same call
 * shape whatever the split (oneDNN may sum a product of another M in
 * another order): seq, intra and replicas give the same bits. */
#define S_ROWS 64

/* This worker's blocks of rows of y = alpha · a · op(b) + beta · C
 * (dnnl_sgemm is row-major; C broadcast into the block's rows first, at
 * strides cs_r, cs_c: 0 where it broadcasts; beta 0: no C). A call oneDNN
 * refuses leaves its rows NaN: the registry's check rejects it. */
static void s_sgemm_blocks(const gx_kargs *k, bool tb, float alpha, float beta, const gx_view *c,
                           int64_t cs_r, int64_t cs_c)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const int64_t kk = a->shape[a->ndim - 1], n = y->shape[y->ndim - 1];
    const int64_t rows = kk > 0 ? a->numel / kk : y->numel / (n ? n : 1);
    int64_t lo, hi;
    omp_set_num_threads(1); /* this share, on this worker: no OpenMP team */
    gx_backend_cpu()->gemm_tune->share(k, (rows + S_ROWS - 1) / S_ROWS, 1, &lo, &hi);
    if (lo >= hi || n == 0)
        return;
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t r0 = blk * S_ROWS, nr = rows - r0 < S_ROWS ? rows - r0 : S_ROWS;
        float *yr = (float *)y->data + r0 * n;
        if (beta != 0.0f)
            for (int64_t i = 0; i < nr; i++)
                for (int64_t j = 0; j < n; j++)
                    yr[i * n + j] = ((const float *)c->data)[(r0 + i) * cs_r + j * cs_c];
        if (kk == 0) { /* an empty sum: beta · C alone */
            for (int64_t i = 0; i < nr * n; i++)
                yr[i] = beta != 0.0f ? beta * yr[i] : 0.0f;
            continue;
        }
        if (dnnl_sgemm('N', tb ? 'T' : 'N', nr, n, kk, alpha, (const float *)a->data + r0 * kk, kk,
                       b->data, tb ? kk : n, beta, yr, n) != dnnl_success)
            for (int64_t i = 0; i < nr * n; i++)
                yr[i] = NAN;
    }
}

/* MatMul: y = a · b. */
static void s_dnnl_matmul(const gx_kargs *k)
{
    s_sgemm_blocks(k, false, 1.0f, 0.0f, NULL, 0, 0);
}

/* Gemm: transA is never tuned (ops/gemm.h's packable steps); C of any
 * form ONNX broadcasts (scalar, [N], [1,N], [M,1], [M,N]). */
static void s_dnnl_gemm(const gx_kargs *k)
{
    const gx_view *c = k->n_in > 2 && k->in[2].ndim >= 0 && k->in[2].data ? &k->in[2] : NULL;
    int64_t cs_r = 0, cs_c = 0;
    if (c && c->ndim == 1)
        cs_c = c->shape[0] == 1 ? 0 : 1;
    else if (c && c->ndim == 2) {
        cs_c = c->shape[1] == 1 ? 0 : 1;
        cs_r = c->shape[0] == 1 ? 0 : c->shape[1];
    }
    s_sgemm_blocks(k, k->attr[GX_GEMM_TRANSB].i != 0, (float)k->attr[GX_GEMM_ALPHA].f,
                   c ? (float)k->attr[GX_GEMM_BETA].f : 0.0f, c, cs_r, cs_c);
}

/* ---- Conv ---- */

/* Blocks of output channels per image: 1, a whole image per block.
 * Measured (bench/bench_tune, 3x3 64@56): 4 blocks of 16 channels took
 * 13 times as long as one, oneDNN's gemm-based convolution building its
 * im2col columns again for each; so intra-op shares split images only. */
#define S_CONV_BLOCKS 1
#define S_CONV_SLOTS 16   /* shares that run blocks (one scratchpad each) */
#define S_CONV_CACHE 512  /* primitives kept */

/* A whole Conv: x [n, c, in...], W [m, c/g, k...], the geometry. */
typedef struct s_conv {
    int nsp;
    int64_t n, c, m, g;
    int64_t in[3], k[3], out[3], st[3], dil[3], pl[3], ph[3];
    bool bias;
} s_conv;

/* One block's primitive: the Conv of one image over oc output channels
 * (groups of them when grouped) and the ic input channels they read. */
typedef struct s_geo {
    int64_t nsp, ic, oc, g, bias;
    int64_t in[3], k[3], out[3], st[3], dil[3], pl[3], ph[3];
} s_geo;

typedef struct s_prim {
    s_geo geo;
    dnnl_primitive_t prim;
    int64_t pad; /* scratchpad bytes */
} s_prim;

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t s_eng;
static s_prim s_cache[S_CONV_CACHE];
static size_t s_n_cache;

/* Output channels per block and blocks per image. */
static void s_blocks(const s_conv *cv, int64_t *per, int64_t *nb)
{
    int64_t p;
    if (cv->g == 1) {
        p = (cv->m + S_CONV_BLOCKS - 1) / S_CONV_BLOCKS;
        p = (p + 15) / 16 * 16;
        p = p > cv->m ? cv->m : p;
    } else {
        p = (cv->g + S_CONV_BLOCKS - 1) / S_CONV_BLOCKS * (cv->m / cv->g);
    }
    *per = p > 0 ? p : 1;
    *nb = (cv->m + *per - 1) / *per;
}

static void s_geo_of(const s_conv *cv, int64_t oc, s_geo *g)
{
    memset(g, 0, sizeof *g);
    g->nsp = cv->nsp;
    g->oc = oc;
    g->g = cv->g == 1 ? 1 : oc / (cv->m / cv->g);
    g->ic = cv->g == 1 ? cv->c : g->g * (cv->c / cv->g);
    g->bias = cv->bias;
    for (int d = 0; d < cv->nsp; d++) {
        g->in[d] = cv->in[d];
        g->k[d] = cv->k[d];
        g->out[d] = cv->out[d];
        g->st[d] = cv->st[d];
        g->dil[d] = cv->dil[d];
        g->pl[d] = cv->pl[d];
        g->ph[d] = cv->ph[d];
    }
}

/* A new primitive for g, or NULL when oneDNN refuses it. Under s_mu. */
static dnnl_primitive_t s_make(const s_geo *g, int64_t *pad)
{
    if (!s_eng && dnnl_engine_create(&s_eng, dnnl_cpu, 0) != dnnl_success)
        return NULL;
    const int nsp = (int)g->nsp, nd = nsp + 2;
    static const dnnl_format_tag_t act[] = {dnnl_ncw, dnnl_nchw, dnnl_ncdhw};
    static const dnnl_format_tag_t wt[] = {dnnl_oiw, dnnl_oihw, dnnl_oidhw};
    static const dnnl_format_tag_t gwt[] = {dnnl_goiw, dnnl_goihw, dnnl_goidhw};
    dnnl_dims_t xd = {1, g->ic}, yd = {1, g->oc}, wd, bd = {g->oc}, sd, dd, pl, pr;
    int wn = nd;
    if (g->g > 1) {
        wd[0] = g->g;
        wd[1] = g->oc / g->g;
        wd[2] = g->ic / g->g;
        wn = nd + 1;
    } else {
        wd[0] = g->oc;
        wd[1] = g->ic;
    }
    for (int d = 0; d < nsp; d++) {
        xd[2 + d] = g->in[d];
        yd[2 + d] = g->out[d];
        wd[wn - nsp + d] = g->k[d];
        sd[d] = g->st[d];
        dd[d] = g->dil[d] - 1; /* oneDNN counts the gaps */
        pl[d] = g->pl[d];
        pr[d] = g->ph[d];
    }
    dnnl_memory_desc_t xm, wm, bm, ym;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    if (dnnl_memory_desc_init_by_tag(&xm, nd, xd, dnnl_f32, act[nsp - 1]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&ym, nd, yd, dnnl_f32, act[nsp - 1]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wm, wn, wd, dnnl_f32,
                                     g->g > 1 ? gwt[nsp - 1] : wt[nsp - 1]) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_x) != dnnl_success ||
        dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &xm, &wm,
                                                   g->bias ? &bm : NULL, &ym, sd, dd, pl,
                                                   pr) != dnnl_success ||
        dnnl_primitive_attr_create(&attr) != dnnl_success ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) !=
            dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, attr, s_eng, NULL) != dnnl_success ||
        dnnl_primitive_create(&prim, pd) != dnnl_success)
        prim = NULL;
    if (prim)
        *pad = (int64_t)dnnl_memory_desc_get_size(
            dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return prim;
}

/* The primitive for g and its scratchpad bytes; *owned: not cached (the
 * cache is full), the caller destroys it. NULL when oneDNN refuses g. */
static dnnl_primitive_t s_prim_get(const s_geo *g, int64_t *pad, bool *owned)
{
    omp_set_num_threads(1); /* made for, and run on, one thread */
    *owned = false;
    pthread_mutex_lock(&s_mu);
    for (size_t i = 0; i < s_n_cache; i++)
        if (!memcmp(&s_cache[i].geo, g, sizeof *g)) {
            *pad = s_cache[i].pad;
            dnnl_primitive_t p = s_cache[i].prim;
            pthread_mutex_unlock(&s_mu);
            return p;
        }
    dnnl_primitive_t p = s_make(g, pad);
    if (p && s_n_cache < S_CONV_CACHE)
        s_cache[s_n_cache++] = (s_prim){.geo = *g, .prim = p, .pad = *pad};
    else if (p)
        *owned = true;
    pthread_mutex_unlock(&s_mu);
    return p;
}

/* Scratch bytes of one share's slot: the larger scratchpad of the full
 * block and the last; -1 when oneDNN refuses either. */
static int64_t s_slot(const s_conv *cv)
{
    int64_t per, nb, worst = 0;
    s_blocks(cv, &per, &nb);
    const int64_t sizes[2] = {per, cv->m - (nb - 1) * per};
    for (int i = 0; i < 2; i++) {
        s_geo g;
        int64_t pad = 0;
        bool owned;
        s_geo_of(cv, sizes[i], &g);
        dnnl_primitive_t p = s_prim_get(&g, &pad, &owned);
        if (!p)
            return -1;
        if (owned)
            dnnl_primitive_destroy(p);
        worst = pad > worst ? pad : worst;
    }
    return (worst + 63) / 64 * 64;
}

static int64_t s_conv_scratch(const gxd_tune_sig *s)
{
    if (s->conv.nsp < 1 || s->conv.nsp > 3)
        return -1;
    s_conv cv = {.nsp = s->conv.nsp, .n = s->a_shape[0], .c = s->a_shape[1],
                 .m = s->conv.w_shape[0], .g = s->conv.group, .bias = s->conv.bias};
    for (int d = 0; d < cv.nsp; d++) {
        cv.in[d] = s->a_shape[2 + d];
        cv.k[d] = s->conv.w_shape[2 + d];
        cv.out[d] = s->conv.out[d];
        cv.st[d] = s->conv.stride[d];
        cv.dil[d] = s->conv.dil[d];
        cv.pl[d] = s->conv.pad_lo[d];
        cv.ph[d] = s->conv.pad_hi[d];
    }
    const int64_t slot = s_slot(&cv);
    return slot < 0 ? -1 : slot * S_CONV_SLOTS;
}

/* Run g's primitive on one block; false when oneDNN failed. */
static bool s_exec(const s_geo *g, const float *x, const float *w, const float *b, float *y,
                   void *pad_mem)
{
    int64_t pad = 0;
    bool owned;
    dnnl_primitive_t p = s_prim_get(g, &pad, &owned);
    if (!p)
        return false;
    const_dnnl_primitive_desc_t pd;
    dnnl_stream_t st = NULL;
    dnnl_memory_t m[5] = {NULL, NULL, NULL, NULL, NULL};
    dnnl_exec_arg_t args[5];
    int na = 0;
    bool ok = dnnl_primitive_get_primitive_desc(p, &pd) == dnnl_success &&
              dnnl_stream_create(&st, s_eng, dnnl_stream_default_flags) == dnnl_success;
    const struct {
        int arg;
        dnnl_query_t q;
        const void *data;
    } io[] = {{DNNL_ARG_SRC, dnnl_query_src_md, x},
              {DNNL_ARG_WEIGHTS, dnnl_query_weights_md, w},
              {DNNL_ARG_BIAS, dnnl_query_weights_md, b},
              {DNNL_ARG_DST, dnnl_query_dst_md, y},
              {DNNL_ARG_SCRATCHPAD, dnnl_query_scratchpad_md, pad_mem}};
    for (int i = 0; i < 5 && ok; i++) {
        if ((i == 2 && !g->bias) || (i == 4 && pad == 0))
            continue;
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, io[i].q, i == 2);
        ok = md && dnnl_memory_create(&m[na], md, s_eng, (void *)io[i].data) == dnnl_success;
        if (ok)
            args[na] = (dnnl_exec_arg_t){io[i].arg, m[na]}, na++;
    }
    ok = ok && dnnl_primitive_execute(p, st, na, args) == dnnl_success &&
         dnnl_stream_wait(st) == dnnl_success;
    for (int i = 0; i < na; i++)
        dnnl_memory_destroy(m[i]);
    if (st)
        dnnl_stream_destroy(st);
    if (owned)
        dnnl_primitive_destroy(p);
    return ok;
}

/* This share's blocks of y = conv(x, W) + bias (the step's plain layouts).
 * A block oneDNN fails on is left NaN: the registry's check rejects it. */
static void s_dnnl_conv(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const gx_view *b = k->n_in > 2 && k->in[2].ndim >= 0 ? &k->in[2] : NULL;
    gx_win win;
    if (x->ndim < 3 || x->ndim > 5 ||
        gx_win_init(&win, k->attr, "Conv", x, w->shape + 2, false, false, NULL, 0) != GX_OK)
        return;
    s_conv cv = {.nsp = win.nsp, .n = x->shape[0], .c = x->shape[1], .m = w->shape[0],
                 .g = k->attr[GX_CONV_GROUP].i, .bias = b != NULL};
    for (int d = 0; d < cv.nsp; d++) {
        cv.in[d] = win.in[d];
        cv.k[d] = win.k[d];
        cv.out[d] = win.out[d];
        cv.st[d] = win.stride[d];
        cv.dil[d] = win.dil[d];
        cv.pl[d] = win.pad_lo[d];
        cv.ph[d] = win.pad_hi[d];
    }
    const int nth = k->nth < S_CONV_SLOTS ? k->nth : S_CONV_SLOTS;
    if (k->ith >= nth)
        return; /* beyond the slots: the others take its blocks */
    int64_t per, nb, lo, hi;
    s_blocks(&cv, &per, &nb);
    const int64_t slot = s_slot(&cv);
    gx_kargs ks = *k;
    ks.nth = nth;
    gx_backend_cpu()->gemm_tune->share(&ks, cv.n * nb, 1, &lo, &hi);
    const int64_t cg = cv.c / cv.g, mg = cv.m / cv.g;
    for (int64_t blk = lo; blk < hi; blk++) {
        const int64_t n = blk / nb, c0 = blk % nb * per;
        const int64_t oc = cv.m - c0 < per ? cv.m - c0 : per;
        s_geo g;
        s_geo_of(&cv, oc, &g);
        float *yb = (float *)y->data + (n * cv.m + c0) * win.out_size;
        const float *xb = (const float *)x->data +
                          (n * cv.c + (cv.g == 1 ? 0 : c0 / mg * cg)) * win.in_size;
        if (slot < 0 ||
            !s_exec(&g, xb, (const float *)w->data + c0 * cg * win.k_size,
                    b ? (const float *)b->data + c0 : NULL, yb,
                    (char *)k->scratch + (size_t)k->ith * (size_t)slot))
            for (int64_t i = 0; i < oc * win.out_size; i++)
                yb[i] = NAN;
    }
}

size_t gxd_tune_dnnl_impls(gxd_tune_impl *out, size_t max)
{
    size_t n = 0;
    if (n < max)
        out[n++] = (gxd_tune_impl){.name = "dnnl.sgemm", .version = 1, .source = "onednn",
                                   .matmul = s_dnnl_matmul, .gemm = s_dnnl_gemm};
    if (n < max)
        /* per_image: a batch of one is one block, run by one worker while
         * the others wait; the registry times one thread, where oneDNN's
         * conv can win (bench_ort conv1d's 64-channel layers: 9-13 ms
         * against gexec's 11-18), and conv1d's intra-op run then took 66
         * ms against 53 with gexec's kernel on every layer */
        out[n++] = (gxd_tune_impl){.name = "dnnl.conv", .version = 1, .source = "onednn",
                                   .conv = s_dnnl_conv, .scratch = s_conv_scratch,
                                   .per_image = true};
    return n;
}

void gxd_tune_dnnl_build(char *buf, size_t len)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, len, "%d.%d.%d", v->major, v->minor, v->patch);
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
