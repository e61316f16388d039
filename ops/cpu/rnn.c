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
#include <stdatomic.h>
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
        const s_v16 c_ =                                                                           \
            __builtin_shuffle(b01_, b23_, lo4_) + __builtin_shuffle(b01_, b23_, hi4_);             \
        const s_v16 d_ = c_ + __builtin_shuffle(c_, p2_);                                          \
        s = d_ + __builtin_shuffle(d_, p1_);                                                       \
    } while (0)

/* s0..s3 = the lane sums of the 16-lane a0..a3 (S_SUM4), and of the
 * 8-lane ones (in lane order). */
#define S_SUMS16(a0, a1, a2, a3, s0, s1, s2, s3)                                                   \
    do {                                                                                           \
        s_v16 s_;                                                                                  \
        S_SUM4(s_, a0, a1, a2, a3);                                                                \
        s0 = s_[0], s1 = s_[4], s2 = s_[8], s3 = s_[12];                                           \
    } while (0)
#define S_SUMS8(a0, a1, a2, a3, s0, s1, s2, s3)                                                    \
    do {                                                                                           \
        s0 = s1 = s2 = s3 = 0;                                                                     \
        for (int l_ = 0; l_ < 8; l_++)                                                             \
            s0 += a0[l_], s1 += a1[l_], s2 += a2[l_], s3 += a3[l_];                                \
    } while (0)

/* y[j] = m[j, :] . v for the n rows of m (k floats each), four rows at a
 * time in sums of L-lane vectors V (SUMS adds up their lanes) added up at
 * the end: one pass over m, which is what a recurrent step's time is at
 * batch 1 (R is read from L2 or L3). */
#define S_DOTS(name, attr, V, L, SUMS)                                                             \
    attr static void name(int64_t n, int64_t k, const float *m, const float *v, float *y)         \
    {                                                                                              \
        const int64_t kl = k / (L) * (L);                                                          \
        int64_t j = 0;                                                                             \
        for (; j + 4 <= n; j += 4) {                                                               \
            const float *r0 = m + j * k, *r1 = r0 + k, *r2 = r1 + k, *r3 = r2 + k;                 \
            V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                              \
            for (int64_t i = 0; i < kl; i += (L)) {                                                \
                const V x = *(const V *)(v + i);                                                   \
                a0 += *(const V *)(r0 + i) * x;                                                    \
                a1 += *(const V *)(r1 + i) * x;                                                    \
                a2 += *(const V *)(r2 + i) * x;                                                    \
                a3 += *(const V *)(r3 + i) * x;                                                    \
            }                                                                                      \
            float s0, s1, s2, s3;                                                                  \
            SUMS(a0, a1, a2, a3, s0, s1, s2, s3);                                                  \
            for (int64_t i = kl; i < k; i++)                                                       \
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

typedef float s_v8 __attribute__((vector_size(32), aligned(4)));

S_DOTS(s_dots, , s_v16, 16, S_SUMS16)
#ifdef S_X86
S_DOTS(s_dots_512, S_T512, s_v16, 16, S_SUMS16)
/* 8 lanes for AVX2: there gcc keeps 16-lane vectors on the stack, each add
 * a load and a store (LSTM at batch 1 spent 80% of its time in s_dots and
 * took twice as long as with 8) */
S_DOTS(s_dots_256, __attribute__((target("avx2"))), s_v8, 8, S_SUMS8)
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
        if (!strcmp(gx_cpu_gemm_isa(), "avx2")) {
            s_dots_256(n, k, b, a, y);
            return;
        }
#endif
        s_dots(n, k, b, a, y);
    } else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)batch, (int)n, (int)k, 1.0f, a,
                    (int)lda, b, (int)k, 0.0f, y, (int)ldy);
}

/* The gate arithmetic of one batch row for n hidden units, vectorised
 * (vmath.h): x and hh point at the units' gate sums X_t W^T + Wb and
 * H_{t-1} R^T + Rb, gate g's H elements further on. */

/* RNN: h = tanh(x + hh). */
GX_CPU_CLONES static void s_rnn_row(float clip, int64_t n, const float *restrict x,
                                    const float *restrict hh, float *restrict h)
{
    for (int64_t j = 0; j < n; j++)
        h[j] = gx_v_tanhf(s_clip(clip, x[j] + hh[j]));
}

/* GRU's reset gate r, times what it gates (hr: H_{t-1} R_h^T + Rb_h with
 * linear_before_reset, else H_{t-1}), into t. */
GX_CPU_CLONES static void s_gru_reset(float clip, int64_t H, int64_t n, const float *restrict x,
                                      const float *restrict hh, const float *restrict hr,
                                      float *restrict t)
{
    for (int64_t j = 0; j < n; j++)
        t[j] = gx_v_sigmoidf(s_clip(clip, x[H + j] + hh[H + j])) * hr[j];
}

/* GRU: z, the candidate from x's h part and t (the reset part: its product
 * with R_h, biased), and the new h from the previous hp. */
GX_CPU_CLONES static void s_gru_row(float clip, int64_t H, int64_t n, const float *restrict x,
                                    const float *restrict hh, const float *restrict t,
                                    const float *restrict hp, float *restrict h)
{
    for (int64_t j = 0; j < n; j++) {
        const float z = gx_v_sigmoidf(s_clip(clip, x[j] + hh[j]));
        const float hn = gx_v_tanhf(s_clip(clip, x[2 * H + j] + t[j]));
        h[j] = (1.0f - z) * hn + z * hp[j];
    }
}

/* LSTM, peepholes p when peep; c updated in place, the new h into h. */
S_INLINE void s_lstm_body(float clip, int64_t H, int64_t n, const float *restrict x,
                          const float *restrict hh, const float *restrict p, bool peep,
                          float *restrict h, float *restrict c)
{
    for (int64_t j = 0; j < n; j++) {
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

GX_CPU_CLONES static void s_lstm_row(float clip, int64_t H, int64_t n, const float *restrict x,
                                     const float *restrict hh, float *restrict h,
                                     float *restrict c)
{
    s_lstm_body(clip, H, n, x, hh, NULL, false, h, c);
}

GX_CPU_CLONES static void s_lstm_peep_row(float clip, int64_t H, int64_t n,
                                          const float *restrict x, const float *restrict hh,
                                          const float *restrict p, float *restrict h,
                                          float *restrict c)
{
    s_lstm_body(clip, H, n, x, hh, p, true, h, c);
}

/* Element offset of row (d, b) of a [D, batch, H] / [batch, D, H] state. */
static int64_t s_state_off(const s_rnn *r, int64_t d, int64_t b)
{
    return (r->layout1 ? b * r->nd + d : d * r->batch + b) * r->hid;
}

/* One direction's recurrence, cut into phases of `units` units each:
 * per chunk of steps, the input products X_t W^T + Wb of its steps (a
 * unit: a range of gate columns); then per step one phase (GRU without
 * linear_before_reset: two, the second needing all of r (.) H_{t-1})
 * whose unit is a range of hidden units: their rows of H_{t-1} R^T, gate
 * arithmetic, new H and C. A phase reads only what earlier phases wrote,
 * so units of one phase run on any thread in any order; H alternates
 * between two buffers (a step reads one, writes the other). */
typedef struct s_dir {
    const s_rnn *r;
    int64_t d, chunk, units, per; /* per: phases per step */
    bool back;
    const float *x, *wd, *rd, *wb, *rb, *pd, *h0, *c0;
    float *y, *yh, *yc;
    float *xs, *hg, *h[2], *c, *tmp; /* the direction's scratch */
} s_dir;

static int64_t s_phases(const s_dir *dr)
{
    return (dr->r->seq + dr->chunk - 1) / dr->chunk + dr->r->seq * dr->per;
}

/* [*a, *b): part u of `units` of n, rounded to 16 (a vector of floats). */
static void s_part(int64_t n, int64_t u, int64_t units, int64_t *a, int64_t *b)
{
    *a = u == 0 ? 0 : (n * u / units + 15) / 16 * 16;
    *b = u == units - 1 ? n : (n * (u + 1) / units + 15) / 16 * 16;
    *a = *a < n ? *a : n;
    *b = *b < n ? *b : n;
}

/* Step s's chunk: its first step sc, its nc steps at times [t0, t0 + nc). */
static void s_chunk_of(const s_dir *dr, int64_t s, int64_t *sc, int64_t *nc, int64_t *t0)
{
    const int64_t seq = dr->r->seq;
    *sc = s / dr->chunk * dr->chunk;
    *nc = seq - *sc < dr->chunk ? seq - *sc : dr->chunk;
    *t0 = dr->back ? seq - *sc - *nc : *sc;
}

/* Unit u of the input-product phase of the chunk starting at step sc;
 * before the first chunk, also its hidden units' initial H and C. */
static void s_unit_inputs(const s_dir *dr, int64_t sc, int64_t u)
{
    const s_rnn *r = dr->r;
    const int64_t H = r->hid, gh = r->gates * H, B = r->batch;
    int64_t sc_, nc, t0, g0, g1;
    s_chunk_of(dr, sc, &sc_, &nc, &t0);
    s_part(gh, u, dr->units, &g0, &g1);
    const float *w = dr->wd + g0 * r->in;
    if (r->layout1) /* X [batch, seq, in]: a product per batch row */
        for (int64_t b = 0; b < B; b++)
            s_gemm_nt(nc, g1 - g0, r->in, dr->x + (b * r->seq + t0) * r->in, r->in, w,
                      dr->xs + b * gh + g0, B * gh);
    else /* X [seq, batch, in]: the chunk's rows are consecutive */
        s_gemm_nt(nc * B, g1 - g0, r->in, dr->x + t0 * B * r->in, r->in, w, dr->xs + g0, gh);
    for (int64_t row = 0; row < nc * B && dr->wb; row++)
        for (int64_t j = g0; j < g1; j++)
            dr->xs[row * gh + j] += dr->wb[j];
    if (sc > 0)
        return;
    int64_t j0, j1;
    s_part(H, u, dr->units, &j0, &j1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = j0; j < j1; j++) {
            const int64_t o = s_state_off(r, dr->d, b) + j;
            dr->h[0][b * H + j] = dr->h0 ? dr->h0[o] : 0.0f;
            dr->c[b * H + j] = dr->c0 ? dr->c0[o] : 0.0f;
        }
}

/* hg[b][g * H + j] = H_{t-1} R^T + Rb for gates [g0, g1), units [j0, j1). */
static void s_hsums(const s_dir *dr, const float *hp, int g0, int g1, int64_t j0, int64_t j1)
{
    const s_rnn *r = dr->r;
    const int64_t H = r->hid, gh = r->gates * H;
    for (int g = g0; g < g1; g++) {
        s_gemm_nt(r->batch, j1 - j0, H, hp, H, dr->rd + (g * H + j0) * H, dr->hg + g * H + j0,
                  gh);
        for (int64_t b = 0; b < r->batch && dr->rb; b++)
            for (int64_t j = j0; j < j1; j++)
                dr->hg[b * gh + g * H + j] += dr->rb[g * H + j];
    }
}

/* Unit u of phase ph of step s. */
static void s_unit_step(const s_dir *dr, int64_t s, int64_t ph, int64_t u)
{
    const s_rnn *r = dr->r;
    const int64_t H = r->hid, gh = r->gates * H, B = r->batch;
    int64_t sc, nc, t0, j0, j1;
    s_chunk_of(dr, s, &sc, &nc, &t0);
    s_part(H, u, dr->units, &j0, &j1);
    if (j0 >= j1)
        return;
    const int64_t t = dr->back ? r->seq - 1 - s : s, n = j1 - j0;
    const float *xg = dr->xs + (t - t0) * B * gh, *hp = dr->h[s % 2];
    float *hn = dr->h[(s + 1) % 2];
    if (r->gates == 3 && !r->lbr && ph == 0) {
        /* GRU: z and r sums, then r (.) H_{t-1} for the next phase */
        s_hsums(dr, hp, 0, 2, j0, j1);
        for (int64_t b = 0; b < B; b++)
            s_gru_reset(r->clip, H, n, xg + b * gh + j0, dr->hg + b * gh + j0, hp + b * H + j0,
                        dr->tmp + b * H + j0);
        return;
    }
    if (r->gates == 3 && !r->lbr) /* (r (.) H_{t-1}) R_h^T + Rb_h */
        s_hsums(dr, dr->tmp, 2, 3, j0, j1);
    else
        s_hsums(dr, hp, 0, r->gates, j0, j1);
    for (int64_t b = 0; b < B; b++) {
        const float *x = xg + b * gh + j0, *hh = dr->hg + b * gh + j0;
        float *hb = hn + b * H + j0, *cb = dr->c + b * H + j0;
        if (r->gates == 1)
            s_rnn_row(r->clip, n, x, hh, hb);
        else if (r->gates == 3 && r->lbr) {
            s_gru_reset(r->clip, H, n, x, hh, hh + 2 * H, dr->tmp + b * H + j0);
            s_gru_row(r->clip, H, n, x, hh, dr->tmp + b * H + j0, hp + b * H + j0, hb);
        } else if (r->gates == 3)
            s_gru_row(r->clip, H, n, x, hh, hh + 2 * H, hp + b * H + j0, hb);
        else if (dr->pd)
            s_lstm_peep_row(r->clip, H, n, x, hh, dr->pd + j0, hb, cb);
        else
            s_lstm_row(r->clip, H, n, x, hh, hb, cb);
        if (dr->y) { /* Y [seq, D, batch, H] or [batch, seq, D, H] */
            const int64_t o = r->layout1 ? ((b * r->seq + t) * r->nd + dr->d) * H
                                         : ((t * r->nd + dr->d) * B + b) * H;
            memcpy(dr->y + o + j0, hb, (size_t)n * sizeof *dr->y);
        }
        if (s < r->seq - 1)
            continue;
        const int64_t o = s_state_off(r, dr->d, b) + j0;
        if (dr->yh)
            memcpy(dr->yh + o, hb, (size_t)n * sizeof *dr->yh);
        if (dr->yc)
            memcpy(dr->yc + o, cb, (size_t)n * sizeof *dr->yc);
    }
}

/* Y_h and Y_c of a sequence without steps: H_0 and C_0 (or zeros). */
static void s_initial_out(const s_dir *dr)
{
    const s_rnn *r = dr->r;
    for (int64_t b = 0; b < r->batch; b++)
        for (int64_t j = 0; j < r->hid; j++) {
            const int64_t o = s_state_off(r, dr->d, b) + j;
            if (dr->yh)
                dr->yh[o] = dr->h0 ? dr->h0[o] : 0.0f;
            if (dr->yc)
                dr->yc[o] = dr->c0 ? dr->c0[o] : 0.0f;
        }
}

/* Phase ph's unit u: phases go, per chunk, its inputs then its steps. */
static void s_unit(const s_dir *dr, int64_t ph, int64_t u)
{
    const int64_t per_chunk = 1 + dr->chunk * dr->per, ci = ph / per_chunk, in = ph % per_chunk;
    if (in == 0)
        s_unit_inputs(dr, ci * dr->chunk, u);
    else
        s_unit_step(dr, ci * dr->chunk + (in - 1) / dr->per, (in - 1) % dr->per, u);
}

/* Claims and runs units until every unit of every phase is claimed. */
static void s_dir_run(const s_dir *dr, gx_coop *co)
{
    const int64_t total = s_phases(dr) * dr->units;
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&co->next, 1, memory_order_relaxed);
        if (u >= total)
            return;
        gx_cpu_coop_wait(&co->done, u / dr->units * dr->units); /* every unit of earlier phases */
        s_unit(dr, u / dr->units, u % dr->units);
        atomic_fetch_add_explicit(&co->done, 1, memory_order_release);
    }
}

/* A single direction with several shares and their gx_coop: the shares
 * split each phase (hidden units, gate columns). Otherwise a share is a
 * direction (a bidirectional layer runs both recurrences at once), its
 * phases one unit each. */
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
    const float *bias = k->n_in > S_B && k->in[S_B].ndim >= 0 ? k->in[S_B].data : NULL;
    const float *pp = gates == 4 && k->n_in > S_P && k->in[S_P].ndim >= 0 ? k->in[S_P].data
                                                                           : NULL;
    const int64_t chunk = gx_rnn_chunk(r.seq, B, gh);
    const bool coop = r.nd == 1 && k->coop && k->nth > 1;
    int64_t lo, hi;
    if (coop)
        lo = 0, hi = 1;
    else
        gx_cpu_share(k, r.nd, 1, &lo, &hi);
    for (int64_t d = lo; d < hi; d++) {
        /* the direction's state in its part of the scratch */
        float *xs = (float *)k->scratch + d * B * ((chunk + 1) * gh + 4 * H);
        s_dir dr = {
            .r = &r, .d = d, .chunk = chunk, .units = coop ? k->nth : 1,
            .per = gates == 3 && !r.lbr ? 2 : 1, .back = reverse || d == 1,
            .x = xv->data, .wd = (const float *)k->in[S_W].data + d * gh * r.in,
            .rd = (const float *)rv->data + d * gh * H,
            .wb = bias ? bias + d * 2 * gh : NULL, .rb = bias ? bias + d * 2 * gh + gh : NULL,
            .pd = pp ? pp + d * 3 * H : NULL,
            .h0 = k->n_in > S_INITIAL_H && k->in[S_INITIAL_H].ndim >= 0
                      ? k->in[S_INITIAL_H].data : NULL,
            .c0 = gates == 4 && k->n_in > S_INITIAL_C && k->in[S_INITIAL_C].ndim >= 0
                      ? k->in[S_INITIAL_C].data : NULL,
            .y = k->n_out > 0 ? k->out[0].data : NULL,
            .yh = k->n_out > 1 ? k->out[1].data : NULL,
            .yc = k->n_out > 2 ? k->out[2].data : NULL,
            .xs = xs, .hg = xs + chunk * B * gh};
        dr.h[0] = dr.hg + B * gh, dr.h[1] = dr.h[0] + B * H;
        dr.c = dr.h[1] + B * H, dr.tmp = dr.c + B * H;
        gx_coop own = {0};
        if (r.seq > 0)
            s_dir_run(&dr, coop ? k->coop : &own);
        else if (!coop || k->ith == 0) /* no step: Y_h and Y_c are the initial state */
            s_initial_out(&dr);
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
