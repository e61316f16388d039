/*
 * Float math that gcc vectorises: plain arithmetic and bit operations, no
 * calls and no branches, so a loop over these compiles to SIMD code (libm's
 * expf/tanhf would be one call per element). Special values are chosen
 * with bit masks rather than ?: on floats: with ?: gcc sinks the arithmetic
 * into one arm, and arithmetic that may trap cannot be if-converted back.
 * Each is checked against libm in tests/check_ops.c.
 */
#ifndef GX_OPS_CPU_VMATH_H
#define GX_OPS_CPU_VMATH_H

#include <stdint.h>

static inline uint32_t gx_v_bits(float x)
{
    uint32_t b;
    __builtin_memcpy(&b, &x, sizeof b);
    return b;
}

static inline float gx_v_float(uint32_t b)
{
    float x;
    __builtin_memcpy(&x, &b, sizeof x);
    return x;
}

/* c ? a : b, branch-free. */
static inline float gx_v_select(bool c, float a, float b)
{
    const uint32_t m = 0u - (uint32_t)c;
    return gx_v_float((gx_v_bits(a) & m) | (gx_v_bits(b) & ~m));
}

/* e^x within 2 ulp of libm for x in [-87.33, 88.72] (Cephes: Cody-Waite
 * range reduction x = n ln2 + r, degree-6 polynomial in r, times 2^n);
 * +inf above, 0 below (no subnormal results), NaN stays NaN. */
static inline float gx_v_expf(float x)
{
    const float hi = 88.7228391f, lo = -87.3365448f;
    /* n = round(x / ln2) by the 1.5 * 2^23 trick (no float->int conversion);
     * out of [lo, hi] n is garbage, computed without UB, and replaced below */
    const float magic = 12582912.0f;
    float kf = x * 1.44269504088896341f + magic;
    const int32_t n = (int32_t)(gx_v_bits(kf) - gx_v_bits(magic));
    kf -= magic;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* 2^n as two factors, so n = 128 does not overflow the exponent field */
    const int32_t h = n / 2;
    float y = p * gx_v_float((uint32_t)(h + 127) << 23) * gx_v_float((uint32_t)(n - h + 127) << 23);
    const uint32_t over = 0u - (uint32_t)(x > hi), under = 0u - (uint32_t)(x < lo);
    return gx_v_float((gx_v_bits(y) & ~(over | under)) | (0x7F800000u & over));
}

/* 1 / (1 + e^-x); 0 and 1 at the extremes. */
static inline float gx_v_sigmoidf(float x)
{
    return 1.0f / (1.0f + gx_v_expf(-x));
}

/* tanh: Cephes odd polynomial for |x| < 0.625, else 1 - 2 / (e^2|x| + 1)
 * with the sign of x; +-1 at the extremes, NaN stays NaN. */
static inline float gx_v_tanhf(float x)
{
    const uint32_t sign = gx_v_bits(x) & 0x80000000u;
    const float ax = gx_v_float(gx_v_bits(x) & 0x7FFFFFFFu);
    const float z = x * x;
    const float small =
        ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
          1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    const float big = 1.0f - 2.0f / (gx_v_expf(ax + ax) + 1.0f);
    return gx_v_select(ax < 0.625f, small, gx_v_float(gx_v_bits(big) | sign));
}

#endif
