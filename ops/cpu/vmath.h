/*
 * Float math that gcc vectorises: plain arithmetic and bit operations, no
 * calls and no branches, so a loop over these compiles to SIMD code (libm's
 * expf/tanhf would be one call per element). Special values are chosen
 * with bit masks rather than ?: on floats: with ?: gcc sinks the arithmetic
 * into one arm, and arithmetic that may trap cannot be if-converted back.
 * Each is checked against libm in tests/check_ops.c (exp, sigmoid, tanh)
 * or tests/check_ops_math.c (the others).
 */
#ifndef GX_OPS_CPU_VMATH_H
#define GX_OPS_CPU_VMATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Inlined always, also where gcc would keep a call to a big one used by
 * many loops (the call would stop their vectorisation). */
#define GX_V_INLINE static inline __attribute__((always_inline))

GX_V_INLINE uint32_t gx_v_bits(float x)
{
    uint32_t b;
    __builtin_memcpy(&b, &x, sizeof b);
    return b;
}

GX_V_INLINE float gx_v_float(uint32_t b)
{
    float x;
    __builtin_memcpy(&x, &b, sizeof x);
    return x;
}

/* c ? a : b, branch-free. NaN operands pass through unchanged. */
GX_V_INLINE float gx_v_select(bool c, float a, float b)
{
    const uint32_t m = 0u - (uint32_t)c;
    return gx_v_float((gx_v_bits(a) & m) | (gx_v_bits(b) & ~m));
}

/* The shared range reduction of exp and expm1 (Cephes): x = n ln2 + r by
 * Cody-Waite, e^x = 2^n (1 + q) with q = e^r - 1 from a degree-6
 * polynomial. Out of [-87.34, 88.73] (or NaN) n and q are garbage, but
 * computed without UB; callers replace those results. */
GX_V_INLINE float gx_v_exp_parts(float x, int32_t *n)
{
    /* n = round(x / ln2) by the 1.5 * 2^23 trick (no float->int conversion) */
    const float magic = 12582912.0f;
    float kf = x * 1.44269504088896341f + magic;
    *n = (int32_t)(gx_v_bits(kf) - gx_v_bits(magic));
    kf -= magic;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r;
}

/* e^x within 2 ulp of libm for x in [-87.33, 88.72]; +inf above, 0 below
 * (no subnormal results), NaN stays NaN. */
GX_V_INLINE float gx_v_expf(float x)
{
    const float hi = 88.7228391f, lo = -87.3365448f;
    int32_t n;
    const float p = gx_v_exp_parts(x, &n) + 1.0f;
    /* 2^n as two factors, so n = 128 does not overflow the exponent field */
    const int32_t h = n / 2;
    float y = p * gx_v_float((uint32_t)(h + 127) << 23) * gx_v_float((uint32_t)(n - h + 127) << 23);
    const uint32_t over = 0u - (uint32_t)(x > hi), under = 0u - (uint32_t)(x < lo);
    return gx_v_float((gx_v_bits(y) & ~(over | under)) | (0x7F800000u & over));
}

/* e^x - 1 without the cancellation near 0: 2^n q + (2^n - 1), which is q
 * itself for |x| < ln2 / 2. Within 2 ulp of libm; -1 below -17.4 (e^x is
 * below half an ulp of 1 there), e^x above 80 (the -1 is lost), NaN stays
 * NaN. */
GX_V_INLINE float gx_v_expm1f(float x)
{
    int32_t n;
    const float q = gx_v_exp_parts(x, &n);
    const float s = gx_v_float((uint32_t)(n + 127) << 23); /* n in [-26, 116] where used */
    const float y = s * q + (s - 1.0f);
    return gx_v_select(x > 80.0f, gx_v_expf(x), gx_v_select(x < -17.4f, -1.0f, y));
}

/* 1 / (1 + e^-x); 0 and 1 at the extremes. */
GX_V_INLINE float gx_v_sigmoidf(float x)
{
    return 1.0f / (1.0f + gx_v_expf(-x));
}

/* tanh as the rational function of Eigen and ONNX Runtime's MLAS: x times
 * a degree-6 polynomial in x^2 over a degree-3 one, x clamped to
 * [-7.905, 7.905] (where the fit ends). One division and 11 FMAs, no
 * exp: about half the time of 1 - 2 / (e^2|x| + 1) per vector. Within
 * 2.9e-7 relative of libm (4.8 ulp at most, near |x| = 5.9; measured over
 * every float); x itself below |x| = 4e-4, +-1 from |x| = 9.01 (where
 * tanh rounds to 1), NaN stays NaN. */
GX_V_INLINE float gx_v_tanhf(float x)
{
    const float c = 7.90531110763549805f;
    const float ax = gx_v_float(gx_v_bits(x) & 0x7FFFFFFFu);
    const float t = gx_v_select(x < -c, -c, gx_v_select(x > c, c, x));
    const float z = t * t;
    float p = -2.76076847742355e-16f;
    p = p * z + 2.00018790482477e-13f;
    p = p * z - 8.60467152213735e-11f;
    p = p * z + 5.12229709037114e-08f;
    p = p * z + 1.48572235717979e-05f;
    p = p * z + 6.37261928875436e-04f;
    p = p * z + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * z + 1.18534705686654e-04f;
    q = q * z + 2.26843463243900e-03f;
    q = q * z + 4.89352518554385e-03f;
    const float one = gx_v_float((gx_v_bits(x) & 0x80000000u) | 0x3F800000u); /* +-1 */
    return gx_v_select(ax < 4e-4f, x, gx_v_select(ax >= 9.01f, one, t * p / q));
}

/* ln x within 2 ulp of libm (Cephes: x = m 2^e with m in [sqrt(1/2),
 * sqrt(2)), ln m from a degree-9 polynomial in m - 1); subnormal x are
 * scaled into the normal range first. -inf at +-0, NaN below 0 and for
 * NaN, +inf at +inf. */
GX_V_INLINE float gx_v_logf(float x)
{
    const bool sub = x < 1.17549435e-38f;
    const float xs = gx_v_select(sub, x * 8388608.0f, x);
    const uint32_t b = gx_v_bits(xs);
    int32_t e = (int32_t)((b >> 23) & 0xFF) - 126 - (sub ? 23 : 0);
    float m = gx_v_float((b & 0x007FFFFFu) | 0x3F000000u); /* [0.5, 1) */
    const bool low = m < 0.707106781186547524f;
    e -= low ? 1 : 0;
    m = gx_v_select(low, m + m, m) - 1.0f;
    const float z = m * m, fe = (float)e;
    float p = 7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f;
    p = p * m + 1.1676998740e-1f;
    p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f;
    p = p * m - 1.6668057665e-1f;
    p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f;
    p = p * m + 3.3333331174e-1f;
    float y = p * m * z + fe * -2.12194440e-4f - 0.5f * z;
    y = m + y + fe * 0.693359375f;
    y = gx_v_select(x == 0.0f, -INFINITY, y);
    y = gx_v_select(x == INFINITY, INFINITY, y);
    return gx_v_select(x >= 0.0f, y, NAN);
}

/* ln(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|), log1p(u) as
 * ln w - ((w - 1) - u) / w with w = 1 + u (the quotient restores what the
 * rounding of w lost). */
GX_V_INLINE float gx_v_softplusf(float x)
{
    const float u = gx_v_expf(-__builtin_fabsf(x)), w = 1.0f + u;
    return (x > 0.0f ? x : 0.0f) + (gx_v_logf(w) - ((w - 1.0f) - u) / w);
}

/* erfc(x) e^(x^2) / t for x >= 0.5, t = 1 / (1 + 0.47047 x): a degree-7
 * polynomial in t fitted for relative error (4e-8 in exact arithmetic). */
GX_V_INLINE float gx_v_erfc_tail(float ax)
{
    const float t = 1.0f / (1.0f + 0.47047f * ax);
    float p = 8.045770973e-02f;
    p = p * t - 2.467572391e-01f;
    p = p * t + 1.685819775e-01f;
    p = p * t + 4.316087440e-02f;
    p = p * t + 1.887986511e-01f;
    p = p * t + 2.349485308e-01f;
    p = p * t + 2.654470503e-01f;
    p = p * t + 2.654379010e-01f;
    return t * p * gx_v_expf(-ax * ax);
}

/* erf(x) / x for |x| < 0.5: a degree-4 polynomial in x^2 (Taylor-like,
 * fitted; relative error 3e-9 in exact arithmetic). */
GX_V_INLINE float gx_v_erf_small(float x)
{
    const float z = x * x;
    return x * ((((4.717317410e-03f * z - 2.675518207e-02f) * z + 1.128275469e-01f) * z -
                 3.761260211e-01f) * z + 1.128379107e+00f);
}

/* erf within 5e-6 relative of libm (the rounding of x^2 in e^(-x^2)
 * dominates); +-1 at the extremes, NaN stays NaN. */
GX_V_INLINE float gx_v_erff(float x)
{
    const float ax = __builtin_fabsf(x);
    const float big = gx_v_float(gx_v_bits(1.0f - gx_v_erfc_tail(ax)) | (gx_v_bits(x) & 0x80000000u));
    return gx_v_select(ax < 0.5f, gx_v_erf_small(x), big);
}

/* erfc = 1 - erf, computed without cancellation for x >= 0.5, so the tail
 * keeps its relative accuracy (5e-6) down to the float range. */
GX_V_INLINE float gx_v_erfcf(float x)
{
    const float ax = __builtin_fabsf(x), tail = gx_v_erfc_tail(ax);
    return gx_v_select(ax < 0.5f, 1.0f - gx_v_erf_small(x), gx_v_select(x < 0.0f, 2.0f - tail, tail));
}

/* Round half to even (the default rounding mode) by adding and removing
 * 2^23, which leaves no fraction bits; |x| >= 2^23, inf and NaN are
 * already integral. The sign is put back so -0.3 gives -0. */
GX_V_INLINE float gx_v_rintf(float x)
{
    const float ax = __builtin_fabsf(x);
    const float r = gx_v_float(gx_v_bits((ax + 8388608.0f) - 8388608.0f) | (gx_v_bits(x) & 0x80000000u));
    return gx_v_select(ax < 8388608.0f, r, x);
}

/* floor and ceil from the nearest integer (which is off by at most one);
 * selects rather than adding 0 keep the sign of zero (ceil(-0.5) = -0). */
GX_V_INLINE float gx_v_floorf(float x)
{
    const float r = gx_v_rintf(x);
    return gx_v_select(r > x, r - 1.0f, r);
}

GX_V_INLINE float gx_v_ceilf(float x)
{
    const float r = gx_v_rintf(x);
    return gx_v_select(r < x, r + 1.0f, r);
}

/* sin, cos and tan are computed for |x| <= GX_V_TRIG_MAX, where the
 * three-part Cody-Waite reduction by pi/4 is exact enough; beyond it (and
 * for inf and NaN) their results are garbage and callers use libm. */
#define GX_V_TRIG_MAX 8192.0f

/* Cephes sinf/cosf: |x| = j pi/4 + r with j even, |r| <= pi/4; *ps and *pc
 * are the sin and cos polynomials of r; returns j. */
GX_V_INLINE int32_t gx_v_trig_parts(float x, float *ps, float *pc)
{
    const float ax = __builtin_fabsf(x);
    const float a = gx_v_select(ax <= GX_V_TRIG_MAX, ax, 0.0f); /* keeps the conversion defined */
    const int32_t j = ((int32_t)(a * 1.27323954473516f) + 1) & ~1;
    const float y = (float)j;
    const float r = ((a - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
    const float z = r * r;
    *ps = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    *pc = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z *
              z - 0.5f * z + 1.0f;
    return j;
}

/* Octant j mod 8 of |x| picks the polynomial (j & 2) and the sign (j & 4);
 * sin is odd and takes x's sign as well. */
GX_V_INLINE float gx_v_sinf(float x)
{
    float ps, pc;
    const int32_t j = gx_v_trig_parts(x, &ps, &pc);
    const float v = gx_v_select(j & 2, pc, ps);
    return gx_v_float(gx_v_bits(v) ^ (((uint32_t)j & 4u) << 29) ^ (gx_v_bits(x) & 0x80000000u));
}

GX_V_INLINE float gx_v_cosf(float x)
{
    float ps, pc;
    const int32_t j = gx_v_trig_parts(x, &ps, &pc);
    const float v = gx_v_select(j & 2, ps, pc);
    return gx_v_float(gx_v_bits(v) ^ (((uint32_t)(j + 2) & 4u) << 29));
}

/* sin / cos of the same reduction: -pc/ps or ps/pc, with x's sign. */
GX_V_INLINE float gx_v_tanf(float x)
{
    float ps, pc;
    const int32_t j = gx_v_trig_parts(x, &ps, &pc);
    const float v = gx_v_select(j & 2, -pc / ps, ps / pc);
    return gx_v_float(gx_v_bits(v) ^ (gx_v_bits(x) & 0x80000000u));
}

#endif
