/*
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the CPU, as the
 * ONNX reference computes them. Scores are viewed as [N, C, D] and labels as
 * [N, D] (D the product of d1..dk). A label equal to ignore_index has loss 0
 * and weight 0; "mean" divides the summed loss by the summed weights of the
 * labels (each 1 without a weight input), so ignored labels do not count.
 * SoftmaxCrossEntropyLoss is the same on log(softmax(scores)) over C.
 *
 * Reduction "none" splits the N * D positions among threads; "sum" and
 * "mean" make one scalar, which thread 0 computes alone. Labels are not
 * known to infer, so a label outside [0, C) that is not ignored cannot be
 * refused: its loss is NaN (and so is any reduction over it).
 */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"

static int64_t s_label(const gx_view *t, int64_t i)
{
    return t->dtype == GX_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/* For one dtype T: the loss at positions [lo, hi) of the N * D, into y[p]
 * (none) or summed with the weights; log_softmax (SoftmaxCrossEntropyLoss)
 * takes the log-softmax of each column of C scores first, in double, also
 * writing it to logp when that output is asked for. */
#define S_LOSS(sfx, T)                                                        \
    static void s_loss_##sfx(const gx_kargs *k, bool log_softmax)             \
    {                                                                         \
        const gx_view *x = &k->in[0], *t = &k->in[1];                         \
        const T *px = x->data;                                                \
        const T *w = k->n_in > 2 && k->in[2].ndim >= 0 ? k->in[2].data : NULL; \
        T *y = k->out[0].data;                                                \
        T *logp = log_softmax && k->n_out > 1 ? k->out[1].data : NULL;        \
        const gx_attrval *ii = &k->attr[GX_LOSS_IGNORE_INDEX];                \
        const char *red = k->attr[GX_LOSS_REDUCTION].s;                       \
        const bool none = strcmp(red, "none") == 0;                           \
        const int64_t c = x->shape[1];                                        \
        const int64_t nd = t->numel, d = x->shape[0] ? nd / x->shape[0] : 0;  \
        int64_t lo = 0, hi = nd;                                              \
        if (none)                                                             \
            gx_cpu_share(k, nd, 1, &lo, &hi);                                 \
        else if (k->ith != 0)                                                 \
            return;                                                           \
        double sum = 0, wsum = 0;                                             \
        for (int64_t p = lo; p < hi; p++) {                                   \
            const int64_t off = (p / d) * c * d + p % d;                      \
            const T *xp = px + off;                                           \
            double mx = 0, ls = 0;                                            \
            if (log_softmax && c > 0) {                                       \
                mx = xp[0];                                                   \
                for (int64_t j = 1; j < c; j++)                               \
                    mx = xp[j * d] > mx ? xp[j * d] : mx;                     \
                double s = 0;                                                 \
                for (int64_t j = 0; j < c; j++)                               \
                    s += exp(xp[j * d] - mx);                                 \
                ls = log(s);                                                  \
                for (int64_t j = 0; logp && j < c; j++)                       \
                    logp[off + j * d] = (T)((xp[j * d] - mx) - ls);           \
            }                                                                 \
            const int64_t lab = s_label(t, p);                                \
            double l = 0, wt = 0;                                             \
            const bool ignored = ii->set && lab == ii->i;                     \
            if (!ignored && (lab < 0 || lab >= c)) {                          \
                l = wt = NAN;                                                 \
            } else if (!ignored) {                                            \
                wt = w ? (double)w[lab] : 1.0;                                \
                l = -(((double)xp[lab * d] - mx) - ls) * wt;                  \
            }                                                                 \
            if (none)                                                         \
                y[p] = (T)l;                                                  \
            sum += l;                                                         \
            wsum += wt;                                                       \
        }                                                                     \
        if (!none)                                                            \
            y[0] = (T)(strcmp(red, "mean") == 0 ? sum / wsum : sum);          \
    }

S_LOSS(f32, float)
S_LOSS(f64, double)

static void s_loss(const gx_kargs *k, bool log_softmax)
{
    if (k->in[0].dtype == GX_F64)
        s_loss_f64(k, log_softmax);
    else
        s_loss_f32(k, log_softmax);
}

void gx_cpu_NLLLOSS(const gx_kargs *k)
{
    s_loss(k, false);
}

void gx_cpu_SCELOSS(const gx_kargs *k)
{
    s_loss(k, true);
}
