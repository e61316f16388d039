/*
 * RNN, GRU and LSTM on the CPU (float32), ONNX semantics with the default
 * activations (f = Sigmoid, g = h = Tanh; RNN: Tanh). Each time step is two
 * BLAS products, X_t W^T and H_{t-1} R^T for all gates at once, then the
 * gate arithmetic row by row. The steps are sequential and the batch is
 * small in practice, so thread 0 does all of it (correctness first).
 * Gate order in W, R and B: RNN [i], GRU [z, r, h], LSTM [i, o, f, c].
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"

enum { S_X, S_W, S_R, S_B, S_SEQ_LENS, S_INITIAL_H, S_INITIAL_C, S_P };

/* What one direction's step needs. */
typedef struct s_rnn {
    int gates;
    int64_t seq, batch, in, hid, nd;
    bool layout1;
    bool has_clip;
    float clip;
    bool lbr; /* GRU linear_before_reset */
} s_rnn;

static float s_sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

static float s_clip(const s_rnn *r, float v)
{
    return !r->has_clip ? v : v > r->clip ? r->clip : v < -r->clip ? -r->clip : v;
}

/* y[batch, n] = a[batch, k] (row stride lda) b[n, k]^T; zeros when k == 0. */
static void s_gemm_nt(int64_t batch, int64_t n, int64_t k, const float *a, int64_t lda,
                      const float *b, float *y)
{
    if (batch == 0 || n == 0)
        return;
    if (k == 0) {
        memset(y, 0, (size_t)(batch * n) * sizeof *y);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)batch, (int)n, (int)k, 1.0f, a,
                (int)lda, b, (int)k, 0.0f, y, (int)n);
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
    for (int64_t b = 0; b < r->batch; b++) {
        float *x = xg + b * gh, *hh = hg + b * gh;
        for (int64_t j = 0; j < gh; j++) {
            x[j] += wb ? wb[j] : 0.0f;
            hh[j] += rb ? rb[j] : 0.0f;
        }
    }
    for (int64_t b = 0; b < r->batch; b++) {
        const float *x = xg + b * gh, *hh = hg + b * gh;
        float *hb = h + b * H, *cb = c + b * H;
        switch (r->gates) {
        case 1:
            for (int64_t j = 0; j < H; j++)
                hb[j] = tanhf(s_clip(r, x[j] + hh[j]));
            break;
        case 3: /* GRU: z and r now; h below, after the reset product */
            for (int64_t j = 0; j < H; j++) {
                float rg = s_sigmoid(s_clip(r, x[H + j] + hh[H + j]));
                if (r->lbr)
                    tmp[b * H + j] = rg * hh[2 * H + j];
                else
                    tmp[b * H + j] = rg * hb[j];
            }
            break;
        default: { /* LSTM */
            for (int64_t j = 0; j < H; j++) {
                const float cp = cb[j];
                float ig = x[j] + hh[j] + (p ? p[j] * cp : 0.0f);
                float fg = x[2 * H + j] + hh[2 * H + j] + (p ? p[2 * H + j] * cp : 0.0f);
                float cg = x[3 * H + j] + hh[3 * H + j];
                ig = s_sigmoid(s_clip(r, ig));
                fg = s_sigmoid(s_clip(r, fg));
                cg = tanhf(s_clip(r, cg));
                const float cn = fg * cp + ig * cg;
                float og = x[H + j] + hh[H + j] + (p ? p[H + j] * cn : 0.0f);
                og = s_sigmoid(s_clip(r, og));
                cb[j] = cn;
                hb[j] = og * tanhf(cn);
            }
            break;
        }
        }
    }
    if (r->gates != 3)
        return;
    /* GRU without linear_before_reset: (r (.) H_{t-1}) R_h^T + Rb_h, into
     * the h part of hg (its H_{t-1} R_h^T is not used then) */
    if (!r->lbr && r->batch > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)r->batch, (int)H, (int)H, 1.0f,
                    tmp, (int)H, rmat + 2 * H * H, (int)H, 0.0f, hg + 2 * H, (int)gh);
        for (int64_t b = 0; b < r->batch; b++) {
            for (int64_t j = 0; j < H; j++)
                tmp[b * H + j] = hg[b * gh + 2 * H + j] + (rb ? rb[2 * H + j] : 0.0f);
        }
    }
    for (int64_t b = 0; b < r->batch; b++) {
        const float *x = xg + b * gh, *hh = hg + b * gh;
        float *hb = h + b * H;
        for (int64_t j = 0; j < H; j++) {
            float z = s_sigmoid(s_clip(r, x[j] + hh[j]));
            float hn = tanhf(s_clip(r, x[2 * H + j] + tmp[b * H + j]));
            hb[j] = (1.0f - z) * hn + z * hb[j];
        }
    }
}

static void s_run(const gx_kargs *k, int gates)
{
    if (k->ith != 0 || k->scratch == NULL) /* no scratch: an empty batch */
        return;
    const gx_view *xv = &k->in[S_X], *rv = &k->in[S_R];
    const gx_attrval *a = k->attr;
    s_rnn r = {
        .gates = gates,
        .layout1 = a[GX_RNN_LAYOUT].i != 0,
        .hid = rv->shape[2],
        .nd = rv->shape[0],
        .in = xv->shape[2],
        .has_clip = a[GX_RNN_CLIP].set,
        .clip = (float)a[GX_RNN_CLIP].f,
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
    float *xg = k->scratch, *hg = xg + B * gh, *h = hg + B * gh, *c = h + B * H, *tmp = c + B * H;
    /* X_t's rows: [seq, batch, in] or [batch, seq, in] */
    const int64_t ldx = r.layout1 ? r.seq * r.in : r.in;
    for (int64_t d = 0; d < r.nd; d++) {
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
            const float *xt = x + (r.layout1 ? t * r.in : t * B * r.in);
            s_gemm_nt(B, gh, r.in, xt, ldx, wd, xg);
            s_gemm_nt(B, gh, H, h, H, rd, hg);
            s_step(&r, xg, hg, wb, rb, pd, rd, h, c, tmp);
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
