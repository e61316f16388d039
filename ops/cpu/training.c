/*
 * The optimizer steps of ai.onnx.preview.training on the CPU (Adagrad,
 * Adam, Momentum), as the ONNX reference computes them: per element, in
 * double, rounded once to the tensor's dtype. Inputs are R, T and the
 * groups of n tensors (ops/schema_training.c); output group j holds the
 * new values of input group j. Each thread takes its share of every one of
 * the n optimised tensors.
 */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"

/* Element e of v (float32 or float64) as a double. */
static double s_get(const gx_view *v, int64_t e)
{
    return v->dtype == GX_F64 ? ((const double *)v->data)[e] : ((const float *)v->data)[e];
}

static void s_put(const gx_view *v, int64_t e, double x)
{
    if (v->dtype == GX_F64)
        ((double *)v->data)[e] = x;
    else
        ((float *)v->data)[e] = (float)x;
}

typedef enum s_algo { S_ADAGRAD, S_ADAM, S_MOMENTUM, S_NESTEROV } s_algo;

static void s_step(const gx_kargs *k, s_algo a, int per)
{
    const double r = s_get(&k->in[0], 0);
    const int64_t t = *(const int64_t *)k->in[1].data;
    const int n = (k->n_in - 2) / per;
    const gx_attrval *at = k->attr;
    double nc = 0, rr = r, c1 = 0, c2 = 0, eps = 0, post = 0;
    switch (a) {
    case S_ADAGRAD:
        nc = at[GX_ADAGRAD_NORM_COEFFICIENT].f;
        eps = at[GX_ADAGRAD_EPSILON].f;
        rr = r / (1.0 + (double)t * at[GX_ADAGRAD_DECAY_FACTOR].f);
        break;
    case S_ADAM:
        nc = at[GX_ADAM_NORM_COEFFICIENT].f;
        eps = at[GX_ADAM_EPSILON].f;
        post = at[GX_ADAM_NORM_COEFFICIENT_POST].f;
        c1 = at[GX_ADAM_ALPHA].f;
        c2 = at[GX_ADAM_BETA].f;
        /* bias correction of the momentums after the first update */
        if (t > 0)
            rr = r * sqrt(1.0 - pow(c2, (double)t)) / (1.0 - pow(c1, (double)t));
        break;
    case S_MOMENTUM:
    case S_NESTEROV:
        nc = at[GX_MOMENTUM_NORM_COEFFICIENT].f;
        c1 = at[GX_MOMENTUM_ALPHA].f;
        c2 = t > 0 ? at[GX_MOMENTUM_BETA].f : 1.0;
        break;
    }
    for (int i = 0; i < n; i++) {
        const gx_view *x = &k->in[2 + i], *g = &k->in[2 + n + i], *s1 = &k->in[2 + 2 * n + i];
        const gx_view *s2 = a == S_ADAM ? &k->in[2 + 3 * n + i] : NULL;
        const gx_view *xo = &k->out[i], *s1o = &k->out[n + i];
        const gx_view *s2o = a == S_ADAM ? &k->out[2 * n + i] : NULL;
        int64_t lo, hi;
        gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
        for (int64_t e = lo; e < hi; e++) {
            const double xv = s_get(x, e), gr = nc * xv + s_get(g, e);
            double xn = xv;
            switch (a) {
            case S_ADAGRAD: {
                const double h = s_get(s1, e) + gr * gr;
                xn = xv - rr * gr / (sqrt(h) + eps);
                s_put(s1o, e, h);
                break;
            }
            case S_ADAM: {
                const double v = c1 * s_get(s1, e) + (1.0 - c1) * gr;
                const double h = c2 * s_get(s2, e) + (1.0 - c2) * gr * gr;
                xn = (1.0 - post) * (xv - rr * (v / (sqrt(h) + eps)));
                s_put(s1o, e, v);
                s_put(s2o, e, h);
                break;
            }
            case S_MOMENTUM:
            case S_NESTEROV: {
                const double v = c1 * s_get(s1, e) + c2 * gr;
                xn = a == S_MOMENTUM ? xv - r * v : xv - r * (gr + c1 * v);
                s_put(s1o, e, v);
                break;
            }
            }
            s_put(xo, e, xn);
        }
    }
}

void gx_cpu_ADAGRAD(const gx_kargs *k)
{
    s_step(k, S_ADAGRAD, 3);
}

void gx_cpu_ADAM(const gx_kargs *k)
{
    s_step(k, S_ADAM, 4);
}

void gx_cpu_MOMENTUM(const gx_kargs *k)
{
    s_step(k, strcmp(k->attr[GX_MOMENTUM_MODE].s, "nesterov") == 0 ? S_NESTEROV : S_MOMENTUM,
           3);
}
