/*
 * RNN, GRU and LSTM on the CPU (float32), ONNX semantics with the default
 * activations (f = Sigmoid, g = h = Tanh; RNN: Tanh). The input products
 * X_t W^T of all gates are computed for several steps at once (one BLAS
 * product per gx_rnn_chunk steps); each time step then takes H_{t-1} R^T
 * (a matrix-vector product at batch 1) and the gate arithmetic, in
 * vectorised float math (vmath.h). The steps are sequential and the batch
 * is small in practice: a share is a direction (a bidirectional layer
 * runs both recurrences at once), each with its own state in the scratch.
 * Gate order in W, R and B: RNN [i], GRU [z, r, h], LSTM [i, o, f, c].
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define S_X86 1
#define S_T512 __attribute__((target("avx512f")))
#endif

#include "ops/cpu/cpu.h"
#include "ops/cpu/vmath.h"
#include "ops/gemm.h"

enum { S_X, S_W, S_R, S_B, S_SEQ_LENS, S_INITIAL_H, S_INITIAL_C, S_P };

/* What one direction's step needs. */
typedef struct s_rnn {
    int gates;
    int64_t seq, batch, in, hid, nd;
    bool layout1;
    float clip; /* +inf without the clip attribute */
    bool lbr;   /* GRU linear_before_reset */
} s_rnn;

#define S_INLINE static inline __attribute__((always_inline))

/* v clipped to [-clip, clip]; NaN stays NaN. */
S_INLINE float s_clip(float clip, float v)
{
    return gx_v_select(v > clip, clip, gx_v_select(v < -clip, -clip, v));
}

typedef float s_v16 __attribute__((vector_size(64), aligned(4)));

typedef int32_t s_i16 __attribute__((vector_size(64)));

/* s = the lane sums of a0..a3 in lanes 0, 4, 8 and 12, by halving: lanes
 * folded onto each other, not a chain of 16 scalar adds per vector (a
 * macro: s_v16 values cross no call, whose ABI depends on the target). */
#define S_SUM4(s, a0, a1, a2, a3)                                                                  \
    do {                                                                                           \
        const s_i16 lo_ = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};                \
        const s_i16 hi_ = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};          \
        const s_i16 lo4_ = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};             \
        const s_i16 hi4_ = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};           \
        const s_i16 p2_ = {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13};                  \
        const s_i16 p1_ = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};                  \
        /* [a0, a1 folded to 8 lanes each], then [a0..a3 folded to 4] */                          \
        const s_v16 b01_ = __builtin_shuffle(a0, a1, lo_) + __builtin_shuffle(a0, a1, hi_);       \
        const s_v16 b23_ = __builtin_shuffle(a2, a3, lo_) + __builtin_shuffle(a2, a3, hi_);       \
        const s_v16 c_ = __builtin_shuffle(b01_, b23_, lo4_) + __builtin_shuffle(b01_, b23_, hi4_); \
        const s_v16 d_ = c_ + __builtin_shuffle(c_, p2_);                                          \
        s = d_ + __builtin_shuffle(d_, p1_);                                                       \
    } while (0)

/* y[j] = m[j, :] . v for the n rows of m (k floats each), four rows at a
 * time in 16-lane sums added up at the end: one pass over m, which is
 * what a recurrent step's time is at batch 1 (R is read from L2 or L3). */
#define S_DOTS(name, attr)                                                                         \
    attr static void name(int64_t n, int64_t k, const float *m, const float *v, float *y)         \
    {                                                                                              \
        const int64_t k16 = k / 16 * 16;                                                           \
        int64_t j = 0;                                                                             \
        for (; j + 4 <= n; j += 4) {                                                               \
            const float *r0 = m + j * k, *r1 = r0 + k, *r2 = r1 + k, *r3 = r2 + k;                 \
            s_v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                          \
            for (int64_t i = 0; i < k16; i += 16) {                                                \
                const s_v16 x = *(const s_v16 *)(v + i);                                           \
                a0 += *(const s_v16 *)(r0 + i) * x;                                                \
                a1 += *(const s_v16 *)(r1 + i) * x;                                                \
                a2 += *(const s_v16 *)(r2 + i) * x;                                                \
                a3 += *(const s_v16 *)(r3 + i) * x;                                                \
            }                                                                                      \
            s_v16 s;                                                                               \
            S_SUM4(s, a0, a1, a2, a3);                                                             \
            float s0 = s[0], s1 = s[4], s2 = s[8], s3 = s[12];                                     \
            for (int64_t i = k16; i < k; i++)                                                      \
                s0 += r0[i] * v[i], s1 += r1[i] * v[i], s2 += r2[i] * v[i], s3 += r3[i] * v[i];    \
            y[j] = s0, y[j + 1] = s1, y[j + 2] = s2, y[j + 3] = s3;                                \
        }                                                                                          \
        for (; j < n; j++) {                                                                       \
            float s0 = 0;                                                                          \
            for (int64_t i = 0; i < k; i++)                                                        \
                s0 += m[j * k + i] * v[i];                                                         \
            y[j] = s0;                                                                             \
        }                                                                                          \
    }

S_DOTS(s_dots, )
#ifdef S_X86
S_DOTS(s_dots_512, S_T512)
#endif

/* y[batch, n] (row stride ldy) = a[batch, k] (row stride lda) b[n, k]^T;
 * zeros when k == 0. At batch 1 a matrix-vector product (s_dots). */
static void s_gemm_nt(int64_t batch, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, float *y, int64_t ldy)
{
    if (batch == 0 || n == 0)
        return;
    if (k == 0) {
        for (int64_t i = 0; i < batch; i++)
            memset(y + i * ldy, 0, (size_t)n * sizeof *y);
        return;
    }
    if (batch == 1) {
#ifdef S_X86
        if (!strcmp(gx_cpu_gemm_isa(), "avx512")) {
            s_dots_512(n, k, b, a, y);
            return;
        }
#endif
        s_dots(n, k, b, a, y);
    } else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)batch, (int)n, (int)k, 1.0f, a,
                    (int)lda, b, (int)k, 0.0f, y, (int)ldy);
}

/* The gate arithmetic of one batch row, vectorised (vmath.h): x and hh
 * are its gate sums X_t W^T + Wb and H_{t-1} R^T + Rb. */

/* RNN: h = tanh(x + hh). */
GX_CPU_CLONES static void s_rnn_row(float clip, int64_t H, const float *restrict x,
                                    const float *restrict hh, float *restrict h)
{
    for (int64_t j = 0; j < H; j++)
        h[j] = gx_v_tanhf(s_clip(clip, x[j] + hh[j]));
}

/* GRU's reset gate r, times what it gates (hr: H_{t-1} R_h^T + Rb_h with
 * linear_before_reset, else H_{t-1}), into t. */
GX_CPU_CLONES static void s_gru_reset(float clip, int64_t H, const float *restrict x,
                                      const float *restrict hh, const float *restrict hr,
                                      float *restrict t)
{
    for (int64_t j = 0; j < H; j++)
        t[j] = gx_v_sigmoidf(s_clip(clip, x[H + j] + hh[H + j])) * hr[j];
}

/* GRU: z, the candidate from x's h part and t (the reset part: its product
 * with R_h, biased), and the new h. */
GX_CPU_CLONES static void s_gru_row(float clip, int64_t H, const float *restrict x,
                                    const float *restrict hh, const float *restrict t,
                                    float *restrict h)
{
    for (int64_t j = 0; j < H; j++) {
        const float z = gx_v_sigmoidf(s_clip(clip, x[j] + hh[j]));
        const float hn = gx_v_tanhf(s_clip(clip, x[2 * H + j] + t[j]));
        h[j] = (1.0f - z) * hn + z * h[j];
    }
}

/* LSTM, peepholes p when peep; c and h updated in place. */
S_INLINE void s_lstm_body(float clip, int64_t H, const float *restrict x,
                          const float *restrict hh, const float *restrict p, bool peep,
                          float *restrict h, float *restrict c)
{
    for (int64_t j = 0; j < H; j++) {
        const float cp = c[j];
        float ig = x[j] + hh[j] + (peep ? p[j] * cp : 0.0f);
        float fg = x[2 * H + j] + hh[2 * H + j] + (peep ? p[2 * H + j] * cp : 0.0f);
        float cg = x[3 * H + j] + hh[3 * H + j];
        ig = gx_v_sigmoidf(s_clip(clip, ig));
        fg = gx_v_sigmoidf(s_clip(clip, fg));
        cg = gx_v_tanhf(s_clip(clip, cg));
        const float cn = fg * cp + ig * cg;
        float og = x[H + j] + hh[H + j] + (peep ? p[H + j] * cn : 0.0f);
        og = gx_v_sigmoidf(s_clip(clip, og));
        c[j] = cn;
        h[j] = og * gx_v_tanhf(cn);
    }
}

GX_CPU_CLONES static void s_lstm_row(float clip, int64_t H, const float *restrict x,
                                     const float *restrict hh, float *restrict h,
                                     float *restrict c)
{
    s_lstm_body(clip, H, x, hh, NULL, false, h, c);
}

GX_CPU_CLONES static void s_lstm_peep_row(float clip, int64_t H, const float *restrict x,
                                          const float *restrict hh, const float *restrict p,
                                          float *restrict h, float *restrict c)
{
    s_lstm_body(clip, H, x, hh, p, true, h, c);
}

/* Element offset of row (d, b) of a [D, batch, H] / [batch, D, H] state. */
static int64_t s_state_off(const s_rnn *r, int64_t d, int64_t b)
{
    return (r->layout1 ? b * r->nd + d : d * r->batch + b) * r->hid;
}

/* One step of the gate arithmetic for every batch row: xg and hg are the
 * gate sums X_t W^T and H_{t-1} R^T ([batch, gates * hid]); wb, rb the
 * direction's biases (or NULL), p its peepholes (or NULL); h and c are
 * updated in place. tmp is [batch, hid] (GRU without linear_before_reset:
 * r (.) H_{t-1}, whose product with R_h is taken here). */
static void s_step(const s_rnn *r, float *xg, float *hg, const float *wb, const float *rb,
                   const float *p, const float *rmat, float *h, float *c, float *tmp)
{
    const int64_t H = r->hid, gh = r->gates * H;
    const int64_t nh = r->gates == 3 && !r->lbr ? 2 * H : gh; /* the sums hg has */
    for (int64_t b = 0; b < r->batch; b++) {
        float *x = xg + b * gh, *hh = hg + b * gh;
        for (int64_t j = 0; j < gh && wb; j++)
            x[j] += wb[j];
        for (int64_t j = 0; j < nh && rb; j++)
            hh[j] += rb[j];
    }
    for (int64_t b = 0; b < r->batch; b++) {
        const float *x = xg + b * gh, *hh = hg + b * gh;
        float *hb = h + b * H, *cb = c + b * H;
        if (r->gates == 1)
            s_rnn_row(r->clip, H, x, hh, hb);
        else if (r->gates == 3) /* GRU: r now; the rest after the reset product */
            s_gru_reset(r->clip, H, x, hh, r->lbr ? hh + 2 * H : hb, tmp + b * H);
        else if (p)
            s_lstm_peep_row(r->clip, H, x, hh, p, hb, cb);
        else
            s_lstm_row(r->clip, H, x, hh, hb, cb);
    }
    if (r->gates != 3)
        return;
    /* GRU without linear_before_reset: (r (.) H_{t-1}) R_h^T + Rb_h, into
     * the h part of hg (its H_{t-1} R_h^T is not used then) */
    if (!r->lbr && r->batch > 0) {
        s_gemm_nt(r->batch, H, H, tmp, H, rmat + 2 * H * H, hg + 2 * H, gh);
        for (int64_t b = 0; b < r->batch; b++) {
            for (int64_t j = 0; j < H; j++)
                tmp[b * H + j] = hg[b * gh + 2 * H + j] + (rb ? rb[2 * H + j] : 0.0f);
        }
    }
    for (int64_t b = 0; b < r->batch; b++)
        s_gru_row(r->clip, H, xg + b * gh, hg + b * gh, tmp + b * H, h + b * H);
}

static void s_run(const gx_kargs *k, int gates)
{
    if (k->scratch == NULL) /* no scratch: an empty batch */
        return;
    const gx_view *xv = &k->in[S_X], *rv = &k->in[S_R];
    const gx_attrval *a = k->attr;
    s_rnn r = {
        .gates = gates,
        .layout1 = a[GX_RNN_LAYOUT].i != 0,
        .hid = rv->shape[2],
        .nd = rv->shape[0],
        .in = xv->shape[2],
        .clip = a[GX_RNN_CLIP].set ? (float)a[GX_RNN_CLIP].f : INFINITY,
        .lbr = gates == 3 && a[GX_GRU_LINEAR_BEFORE_RESET].i != 0,
    };
    r.seq = xv->shape[r.layout1 ? 1 : 0];
    r.batch = xv->shape[r.layout1 ? 0 : 1];
    const bool reverse = a[GX_RNN_DIRECTION].s && strcmp(a[GX_RNN_DIRECTION].s, "reverse") == 0;
    const int64_t H = r.hid, gh = gates * H, B = r.batch;
    const float *x = xv->data, *w = k->in[S_W].data, *rm = rv->data;
    const float *bias = k->n_in > S_B && k->in[S_B].ndim >= 0 ? k->in[S_B].data : NULL;
    const float *h0 = k->n_in > S_INITIAL_H && k->in[S_INITIAL_H].ndim >= 0
                          ? k->in[S_INITIAL_H].data
                          : NULL;
    const float *c0 = gates == 4 && k->n_in > S_INITIAL_C && k->in[S_INITIAL_C].ndim >= 0
                          ? k->in[S_INITIAL_C].data
                          : NULL;
    const float *pp = gates == 4 && k->n_in > S_P && k->in[S_P].ndim >= 0 ? k->in[S_P].data
                                                                           : NULL;
    float *y = k->n_out > 0 ? k->out[0].data : NULL;
    float *yh = k->n_out > 1 ? k->out[1].data : NULL;
    float *yc = k->n_out > 2 ? k->out[2].data : NULL;
    const int64_t chunk = gx_rnn_chunk(r.seq, B, gh);
    int64_t lo, hi;
    gx_cpu_share(k, r.nd, 1, &lo, &hi);
    for (int64_t d = lo; d < hi; d++) {
        /* the direction's state in its part of the scratch */
        float *xs = (float *)k->scratch + d * B * ((chunk + 1) * gh + 3 * H);
        float *hg = xs + chunk * B * gh, *h = hg + B * gh, *c = h + B * H, *tmp = c + B * H;
        const bool back = reverse || d == 1;
        const float *wd = w + d * gh * r.in, *rd = rm + d * gh * H;
        const float *wb = bias ? bias + d * 2 * gh : NULL, *rb = bias ? wb + gh : NULL;
        const float *pd = pp ? pp + d * 3 * H : NULL;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < H; j++) {
                const int64_t o = s_state_off(&r, d, b) + j;
                h[b * H + j] = h0 ? h0[o] : 0.0f;
                c[b * H + j] = c0 ? c0[o] : 0.0f;
            }
        }
        for (int64_t s = 0; s < r.seq; s++) {
            const int64_t t = back ? r.seq - 1 - s : s;
            /* step s is in the chunk of nc steps from sc, times [t0, t0 +
             * nc); its first step takes their input products, xs[t - t0][b] */
            const int64_t sc = s / chunk * chunk;
            const int64_t nc = r.seq - sc < chunk ? r.seq - sc : chunk;
            const int64_t t0 = back ? r.seq - sc - nc : sc;
            if (s == sc && r.layout1) /* X [batch, seq, in]: a product per batch row */
                for (int64_t b = 0; b < B; b++)
                    s_gemm_nt(nc, gh, r.in, x + (b * r.seq + t0) * r.in, r.in, wd, xs + b * gh,
                              B * gh);
            else if (s == sc) /* X [seq, batch, in]: the chunk's rows are consecutive */
                s_gemm_nt(nc * B, gh, r.in, x + t0 * B * r.in, r.in, wd, xs, gh);
            /* (GRU without linear_before_reset: R_h's product comes in
             * s_step, with r (.) H_{t-1}) */
            s_gemm_nt(B, r.gates == 3 && !r.lbr ? 2 * H : gh, H, h, H, rd, hg, gh);
            s_step(&r, xs + (t - t0) * B * gh, hg, wb, rb, pd, rd, h, c, tmp);
            if (!y)
                continue;
            for (int64_t b = 0; b < B; b++) {
                /* Y [seq, D, batch, H] or [batch, seq, D, H] */
                const int64_t o = r.layout1 ? ((b * r.seq + t) * r.nd + d) * H
                                            : ((t * r.nd + d) * B + b) * H;
                memcpy(y + o, h + b * H, (size_t)H * sizeof *y);
            }
        }
        for (int64_t b = 0; b < B; b++) {
            const int64_t o = s_state_off(&r, d, b);
            if (yh)
                memcpy(yh + o, h + b * H, (size_t)H * sizeof *yh);
            if (yc)
                memcpy(yc + o, c + b * H, (size_t)H * sizeof *yc);
        }
    }
}

void gx_cpu_RNN(const gx_kargs *k)
{
    s_run(k, 1);
}

void gx_cpu_GRU(const gx_kargs *k)
{
    s_run(k, 3);
}

void gx_cpu_LSTM(const gx_kargs *k)
{
    s_run(k, 4);
}
