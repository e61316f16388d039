/*
 * The random family on the CPU: RandomUniform(Like), RandomNormal(Like),
 * Bernoulli and Multinomial.
 *
 * Numbers are counter-based: draw i of a run is splitmix64's finaliser of
 * key + (i + 1) * the golden-ratio increment (SplitMix64's stream), so any
 * element can be computed alone and shares, modes and replicas need no
 * state between them. The key:
 *   - with a seed attribute, made from the seed (its float32 bits) alone:
 *     every run of the step gives the same output, whatever mode, workers
 *     or devices run it (ONNX: "to generate deterministic results"; as the
 *     daemon runs many clients' jobs in any order, a sequence of outputs
 *     advancing from run to run could not be reproduced anyway);
 *   - without, fresh per kernel call: a process-wide counter over a base
 *     drawn from the system's entropy at first use. A step split into
 *     shares draws each share's elements under its own key.
 * Uniform floats take the draw's top 53 bits; normal ones pair two draws
 * (Box-Muller, draws 2i and 2i + 1).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ops/cpu/cpu.h"
#include "ops/schema.h"

#define S_GOLDEN 0x9e3779b97f4a7c15ull

static uint64_t s_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t s_draw(uint64_t key, uint64_t i)
{
    return s_mix(key + (i + 1) * S_GOLDEN);
}

/* In [0, 1), 53 bits. */
static double s_unit(uint64_t key, uint64_t i)
{
    return (double)(s_draw(key, i) >> 11) * 0x1p-53;
}

/* The process's base for unseeded keys, drawn once. */
static uint64_t s_base(void)
{
    static _Atomic uint64_t base;
    uint64_t b = atomic_load_explicit(&base, memory_order_relaxed);
    if (b)
        return b;
    if (getrandom(&b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        b = s_mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)getpid());
    }
    b |= 1; /* never 0: 0 is "not drawn yet" */
    uint64_t expected = 0;
    /* a racing first caller may have stored its own: use that one */
    if (!atomic_compare_exchange_strong(&base, &expected, b))
        b = expected;
    return b;
}

/* The key of this call (see the top of the file): from the seed when
 * seeded. */
static uint64_t s_key(bool seeded, double seed)
{
    if (seeded) {
        const float f = (float)seed;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        return s_mix(0x5eedull << 32 | bits);
    }
    static _Atomic uint64_t calls;
    return s_mix(s_base() + atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) * S_GOLDEN);
}

/* The key of a float seed attribute's op. */
static uint64_t s_key_attr(const gx_attrval *seed)
{
    return s_key(seed->set, seed->f);
}

/* Element i of v as a double. */
static double s_get(const gx_view *v, int64_t i)
{
    return gx_cpu_load_f64(v->data, v->dtype, i);
}

/* Stores x (a float dtype: rounded to nearest) as element i of v. */
static void s_put_float(const gx_view *v, int64_t i, double x)
{
    if (v->dtype == GX_F16)
        ((uint16_t *)v->data)[i] = gx_f32_to_f16((float)x);
    else if (v->dtype == GX_BF16)
        ((uint16_t *)v->data)[i] = gx_f32_to_bf16((float)x);
    else if (v->dtype == GX_F32)
        ((float *)v->data)[i] = (float)x;
    else
        ((double *)v->data)[i] = x;
}

/* Stores b (0 or 1) as element i of v, of any number or bool dtype. */
static void s_put_bit(const gx_view *v, int64_t i, bool b)
{
    char *p = (char *)v->data + (size_t)i * gx_dtype_size(v->dtype);
    if (v->dtype == GX_F16 || v->dtype == GX_BF16)
        *(uint16_t *)p = !b ? 0 : v->dtype == GX_F16 ? 0x3c00 : 0x3f80;
    else if (v->dtype == GX_F32)
        *(float *)p = b;
    else if (v->dtype == GX_F64)
        *(double *)p = b;
    else { /* integers and bool: 1 in the lowest byte (little-endian) */
        memset(p, 0, gx_dtype_size(v->dtype));
        *(uint8_t *)p = b;
    }
}

/* The largest value of v's dtype below x (x a value of that dtype). */
static double s_below(const gx_view *v, double x)
{
    if (v->dtype == GX_F32)
        return nextafterf((float)x, -INFINITY);
    if (v->dtype == GX_F64)
        return nextafter(x, -INFINITY);
    /* float16/bfloat16: one step of the 16-bit pattern (from ±0: the
     * smallest negative) */
    const bool h = v->dtype == GX_F16;
    const uint16_t b = h ? gx_f32_to_f16((float)x) : gx_f32_to_bf16((float)x);
    const uint16_t d = (b & 0x7fff) == 0 ? (uint16_t)0x8001
                       : (b & 0x8000)    ? (uint16_t)(b + 1)
                                         : (uint16_t)(b - 1);
    return h ? gx_f16_to_f32(d) : gx_bf16_to_f32(d);
}

/* Uniform over [low, high): a value that rounds up to high in the output's
 * dtype takes the one below it. */
static void s_uniform(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const double lo_v = k->attr[GX_RANDOM_A].f, hi_v = k->attr[GX_RANDOM_B].f;
    const uint64_t key = s_key_attr(&k->attr[GX_RANDOM_SEED]);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        s_put_float(y, i, lo_v + (hi_v - lo_v) * s_unit(key, (uint64_t)i));
        if (hi_v > lo_v && s_get(y, i) >= hi_v)
            s_put_float(y, i, fmax(s_below(y, s_get(y, i)), lo_v));
    }
}

/* Normal with mean and scale (Box-Muller; u1 in (0, 1]). */
static void s_normal(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const double mean = k->attr[GX_RANDOM_A].f, scale = k->attr[GX_RANDOM_B].f;
    const uint64_t key = s_key_attr(&k->attr[GX_RANDOM_SEED]);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        const double u1 = 1.0 - s_unit(key, 2 * (uint64_t)i);
        const double u2 = s_unit(key, 2 * (uint64_t)i + 1);
        s_put_float(y, i, mean + scale * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    }
}

void gx_cpu_RANDOM_UNIFORM(const gx_kargs *k)
{
    s_uniform(k);
}

void gx_cpu_RANDOM_UNIFORM_LIKE(const gx_kargs *k)
{
    s_uniform(k);
}

void gx_cpu_RANDOM_NORMAL(const gx_kargs *k)
{
    s_normal(k);
}

void gx_cpu_RANDOM_NORMAL_LIKE(const gx_kargs *k)
{
    s_normal(k);
}

/* 1 where a uniform draw falls below the probability (p <= 0: never;
 * p >= 1: always; NaN: never). */
void gx_cpu_BERNOULLI(const gx_kargs *k)
{
    const gx_view *p = &k->in[0], *y = &k->out[0];
    const uint64_t key = s_key_attr(&k->attr[GX_BERNOULLI_SEED]);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        s_put_bit(y, i, s_unit(key, (uint64_t)i) < s_get(p, i));
}

/* Per row: the softmax of the row by inverse CDF, a walk over the classes
 * per sample. A row without a finite positive total (every logit -inf, a
 * NaN, +inf) samples class 0. Shares are rows. */
void gx_cpu_MULTINOMIAL(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t classes = x->shape[1], n = y->shape[1];
    const uint64_t key = s_key_attr(&k->attr[GX_MULTINOMIAL_SEED]);
    int64_t lo, hi;
    gx_cpu_share(k, x->shape[0], 1, &lo, &hi);
    for (int64_t b = lo; b < hi; b++) {
        const int64_t row = b * classes;
        double max = -INFINITY, total = 0;
        for (int64_t c = 0; c < classes; c++)
            max = fmax(max, s_get(x, row + c));
        for (int64_t c = 0; c < classes && isfinite(max); c++)
            total += exp(s_get(x, row + c) - max);
        const bool ok = isfinite(max) && total > 0 && isfinite(total);
        for (int64_t s = 0; s < n; s++) {
            int64_t pick = 0;
            if (ok) {
                const double target = s_unit(key, (uint64_t)(b * n + s)) * total;
                double cum = 0;
                int64_t last = 0;
                for (pick = 0; pick < classes; pick++) {
                    const double w = exp(s_get(x, row + pick) - max);
                    if (w > 0)
                        last = pick;
                    if ((cum += w) > target && w > 0)
                        break;
                }
                if (pick == classes) /* rounding left the target past the sum */
                    pick = last;
            }
            if (y->dtype == GX_I32)
                ((int32_t *)y->data)[b * n + s] = (int32_t)pick;
            else
                ((int64_t *)y->data)[b * n + s] = pick;
        }
    }
}

/* Dropout in training (ops/cpu/dropout.c): element i is kept, scaled by
 * 1 / (1 - ratio), where draw i is at least the ratio; the mask (output 1,
 * when asked for) says which. Dropout's seed is an int. */
void gx_cpu_dropout_draw(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const double ratio = gx_dropout_ratio(k->in, k->n_in, k->attr), scale = 1.0 / (1.0 - ratio);
    const gx_attrval *seed = &k->attr[GX_DROPOUT_SEED];
    const uint64_t key = s_key(seed->set, (double)seed->i);
    bool *mask = k->n_out > 1 ? k->out[1].data : NULL;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        const bool keep = s_unit(key, (uint64_t)i) >= ratio;
        s_put_float(y, i, keep ? s_get(x, i) * scale : 0.0);
        if (mask)
            mask[i] = keep;
    }
}
