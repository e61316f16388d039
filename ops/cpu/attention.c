/*
 * Attention on the CPU (float32): Y = softmax(Q Kᵀ · scale + mask) V per
 * head, without the scores ever in memory as a whole (flash attention's
 * online softmax). A thread's share is a range of query rows, taken in
 * segments of one head. For each chunk of keys, transposed once for the
 * segment, blocks of S_ROWS rows get their scores from the GEMM kernels
 * (ops/gemm.h) into a stack buffer, which are scaled, capped and masked,
 * and their exps are multiplied into the block's rows of Y at once, while
 * in cache. Each row keeps its running maximum m and sum l; when a later
 * chunk raises m, the row's Y and l are first scaled by exp(m_old -
 * m_new). At the end Y is divided by l. With one chunk (kv_seq up to
 * S_KEYS at head sizes up to 64) this is the plain softmax.
 *
 * Every row's arithmetic (its chunks, the products' order) is the same
 * whatever the split, so the modes give the same bits. As in the ONNX
 * reference, a mask whose last dim is shorter than the keys masks those
 * past it, masked scores are -inf (the softcap comes before the bias),
 * and a row with every key masked has no weights (0 / 0: NaN).
 */
#include <math.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/rowsum.h"
#include "ops/cpu/vmath.h"
#include "ops/gemm.h"
#include "ops/nn.h"

#define S_ROWS 32          /* query rows whose scores are computed together */
#define S_SEG 512          /* query rows one transposed chunk of K serves */
#define S_KEYS 256         /* keys of a chunk at most */
#define S_KT_FLOATS 16384  /* the chunk of K transposed: head × keys */

typedef struct s_attn {
    const gx_attention *a;
    const float *q, *k, *v;
    const float *past_k, *past_v; /* [B, kv_heads, past, head]: keys 0..past */
    const int64_t *nonpad;        /* [B], or NULL */
    float *y;
    const float *mask_add; /* float mask, or NULL */
    const bool *mask_bool; /* bool mask, or NULL */
    int64_t ms[3];         /* the mask's element strides over [B, q_heads, q_seq] */
    int64_t mask_keys;     /* the mask's last dim: keys past it are masked */
    int64_t keys;          /* keys of a chunk */
} s_attn;

/* One row of n scores of query i against keys j0.. (already Q·Kᵀ), in
 * the reference's order: scale, softcap, then the bias: the mask's first
 * nm entries (madd added, or mbool false: -inf) and -inf past key `last`
 * (the causal cut, keys past nonpad_kv_seqlen or a mask shorter than
 * the keys). Returns the
 * row's maximum (-inf when every key is masked; n > 0). */
GX_CPU_CLONES static float s_score_row(int64_t n, float *restrict x, float scale, float softcap,
                                       const float *madd, const bool *mbool, int64_t nm,
                                       int64_t last)
{
    for (int64_t j = 0; j < n; j++)
        x[j] *= scale;
    if (softcap > 0) {
        const float inv = 1.0f / softcap;
        for (int64_t j = 0; j < n; j++)
            x[j] = softcap * gx_v_tanhf(x[j] * inv);
    }
    if (madd)
        for (int64_t j = 0; j < nm; j++)
            x[j] += madd[j];
    if (mbool)
        for (int64_t j = 0; j < nm; j++)
            x[j] = gx_v_select(mbool[j], x[j], -INFINITY);
    for (int64_t j = last + 1 < 0 ? 0 : last + 1; j < n; j++)
        x[j] = -INFINITY;
    return gx_row_max(n, x);
}

/* x[j] = exp(x[j] - m), returning their sum. */
GX_CPU_CLONES static float s_exp_row(int64_t n, float *restrict x, float m)
{
    for (int64_t j = 0; j < n; j++)
        x[j] = gx_v_expf(x[j] - m);
    return (float)gx_row_sum(n, x);
}

GX_CPU_CLONES static void s_scale_row(int64_t n, float *restrict y, float s)
{
    for (int64_t j = 0; j < n; j++)
        y[j] *= s;
}

/* Key j (past ones first) of K/V head hk of sample b: row of size `size`
 * (head or v_head) of past (cache) or of x (K or V, strides st). */
static const float *s_row(const s_attn *t, const float *past, const float *x,
                          const gx_attn_strides *st, int64_t size, int64_t b, int64_t hk,
                          int64_t j)
{
    const gx_attention *a = t->a;
    if (j < a->past)
        return past + ((b * a->kv_heads + hk) * a->past + j) * size;
    return x + b * st->sample + hk * st->head + (j - a->past) * st->row;
}

/* kt[d * n + j] = K's key j0 + j, element d: a chunk of n keys transposed,
 * in columns of 16 keys (each of their cache lines read for 16 d's in a
 * row, each row of kt written 16 floats at a time). */
static void s_transpose(const s_attn *t, int64_t b, int64_t hk, int64_t j0, int64_t n,
                        float *restrict kt)
{
    const int64_t D = t->a->head;
    for (int64_t jb = 0; jb < n; jb += 16) {
        const int64_t w = n - jb < 16 ? n - jb : 16;
        const float *row[16];
        for (int64_t j = 0; j < w; j++)
            row[j] = s_row(t, t->past_k, t->k, &t->a->k, D, b, hk, j0 + jb + j);
        for (int64_t d = 0; d < D; d++)
            for (int64_t j = 0; j < w; j++)
                kt[d * n + jb + j] = row[j][d];
    }
}

/* y[nr rows] += p[nr, n] · V's keys j0.. (in two products where they
 * straddle the cache's end). */
static void s_times_v(const s_attn *t, int64_t b, int64_t hk, int64_t j0, int64_t n, int64_t nr,
                      const float *p, float *y)
{
    const gx_attention *a = t->a;
    int64_t j = j0;
    while (j < j0 + n) {
        const int64_t end = j < a->past && a->past < j0 + n ? a->past : j0 + n;
        const bool cached = j < a->past;
        gx_cpu_gemm_rows(nr, a->v_head, end - j, p + (j - j0), n,
                         s_row(t, t->past_v, t->v, &a->v, a->v_head, b, hk, j),
                         cached ? a->v_head : a->v.row, y, a->y.row, true);
        j = end;
    }
}

/* Rows [i0, i0 + rows) of query head h of sample b, rows <= S_SEG: for
 * each chunk of keys (transposed once for all the rows), blocks of S_ROWS
 * rows get their scores, update their m and l, and add their weights
 * times V to Y. */
static void s_segment(const s_attn *t, int64_t b, int64_t h, int64_t i0, int64_t rows)
{
    const gx_attention *a = t->a;
    const int64_t hk = h / (a->q_heads / a->kv_heads), D = a->head, Dv = a->v_head;
    const float *q = t->q + b * a->q.sample + h * a->q.head + i0 * a->q.row;
    float *y = t->y + b * a->y.sample + h * a->y.head + i0 * a->y.row;
    float kt[S_KT_FLOATS], s[S_ROWS * S_KEYS], m[S_SEG], l[S_SEG];
    for (int64_t r = 0; r < rows; r++) {
        m[r] = -INFINITY, l[r] = 0.0f;
        for (int64_t d = 0; d < Dv; d++)
            y[r * a->y.row + d] = 0.0f;
    }
    /* keys attended: those before nonpad_kv_seqlen[b]; the causal cut at
     * query i is key i + offset */
    int64_t keys = a->total, offset = a->past;
    if (t->nonpad) {
        keys = t->nonpad[b] < 0 ? 0 : t->nonpad[b] > a->total ? a->total : t->nonpad[b];
        offset = a->has_past ? a->past : keys - a->q_seq;
    }
    const float scale = (float)a->scale, softcap = (float)a->softcap;
    for (int64_t j0 = 0; j0 < keys; j0 += t->keys) {
        if (a->causal && j0 > i0 + rows - 1 + offset)
            break; /* every key from here on is past every row's query */
        const int64_t n = keys - j0 < t->keys ? keys - j0 : t->keys;
        s_transpose(t, b, hk, j0, n, kt);
        for (int64_t r0 = 0; r0 < rows; r0 += S_ROWS) {
            const int64_t nr = rows - r0 < S_ROWS ? rows - r0 : S_ROWS;
            if (a->causal && j0 > i0 + r0 + nr - 1 + offset)
                break;
            gx_cpu_gemm_rows(nr, n, D, q + r0 * a->q.row, a->q.row, kt, n, s, n, false);
            bool any = false;
            for (int64_t rr = 0; rr < nr; rr++) {
                const int64_t r = r0 + rr, i = i0 + r;
                float *x = s + rr * n;
                const int64_t mo = b * t->ms[0] + h * t->ms[1] + i * t->ms[2] + j0;
                int64_t last = keys - 1 - j0, nm = t->mask_keys - j0;
                if (a->causal && i + offset - j0 < last)
                    last = i + offset - j0;
                nm = nm < 0 ? 0 : nm > n ? n : nm;
                if ((t->mask_add || t->mask_bool) && nm - 1 < last)
                    last = nm - 1;
                const float mx = s_score_row(n, x, scale, softcap,
                                             t->mask_add ? t->mask_add + mo : NULL,
                                             t->mask_bool ? t->mask_bool + mo : NULL, nm, last);
                if (mx == -INFINITY) { /* nothing in this chunk for this row */
                    for (int64_t j = 0; j < n; j++)
                        x[j] = 0.0f;
                    continue;
                }
                const float mn = mx > m[r] ? mx : m[r];
                const float corr = m[r] == -INFINITY ? 0.0f : expf(m[r] - mn);
                if (corr != 1.0f && l[r] > 0.0f)
                    s_scale_row(Dv, y + r * a->y.row, corr);
                l[r] = l[r] * corr + s_exp_row(n, x, mn);
                m[r] = mn;
                any = true;
            }
            if (any)
                s_times_v(t, b, hk, j0, n, nr, s, y + r0 * a->y.row);
        }
    }
    for (int64_t r = 0; r < rows; r++)
        s_scale_row(Dv, y + r * a->y.row, l[r] > 0.0f ? 1.0f / l[r] : NAN);
}

/* Share ith of present_key or present_value (out: [B, kv_heads, total,
 * size]): the cache's rows, then the new ones. */
static void s_present(const gx_kargs *k, const s_attn *t, const float *past, const float *x,
                      const gx_attn_strides *st, int64_t size, float *out)
{
    const gx_attention *a = t->a;
    int64_t lo, hi;
    gx_cpu_share(k, a->batch * a->kv_heads * a->total, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const int64_t j = r % a->total, bh = r / a->total;
        memcpy(out + r * size, s_row(t, past, x, st, size, bh / a->kv_heads, bh % a->kv_heads, j),
               (size_t)size * sizeof *out);
    }
}

void gx_cpu_ATTENTION(const gx_kargs *k)
{
    gx_attention a;
    char err[160];
    gx_infer ic = {.attr = k->attr, .n_in = k->n_in, .in = k->in, .n_out = k->n_out,
                   .out = (gx_view *)k->out, .err = err, .errlen = sizeof err};
    gx_attention_setup(&ic, &a);
    s_attn t = {.a = &a, .q = k->in[0].data, .k = k->in[1].data, .v = k->in[2].data,
                .y = k->out[0].data};
    if (a.has_past)
        t.past_k = k->in[4].data, t.past_v = k->in[5].data;
    if (a.has_nonpad)
        t.nonpad = k->in[6].data;
    if (a.has_mask) {
        const gx_view *mv = &k->in[3];
        int64_t st[4];
        gx_bcast_strides(4, mv->ndim, mv->shape, st);
        memcpy(t.ms, st, sizeof t.ms);
        t.mask_keys = mv->shape[mv->ndim - 1]; /* rank >= 1 (the schema's check) */
        if (mv->dtype == GX_BOOL)
            t.mask_bool = mv->data;
        else
            t.mask_add = mv->data;
    }
    /* a chunk's Kᵀ fits kt; whole panels of 16 keys where it can */
    int64_t keys = S_KT_FLOATS / (a.head > 0 ? a.head : 1);
    keys = keys > S_KEYS ? S_KEYS : keys >= 16 ? keys / 16 * 16 : keys;
    t.keys = keys;
    /* a share: rows of every head, one after the other, in segments that
     * stop at a head's end and at S_SEG rows */
    int64_t lo, hi;
    gx_cpu_share(k, a.batch * a.q_heads * a.q_seq, 1, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t bh = u / a.q_seq, i0 = u % a.q_seq;
        int64_t rows = a.q_seq - i0 < hi - u ? a.q_seq - i0 : hi - u;
        rows = rows < S_SEG ? rows : S_SEG;
        s_segment(&t, bh / a.q_heads, bh % a.q_heads, i0, rows);
        u += rows;
    }
    if (k->n_out > 1)
        s_present(k, &t, t.past_k, t.k, &a.k, a.head, k->out[1].data);
    if (k->n_out > 2)
        s_present(k, &t, t.past_v, t.v, &a.v, a.v_head, k->out[2].data);
}
