/*
 * Requantization in AVX-512 and AVX2, as the quantized kernels' byte
 * outputs take it (ops/cpu/conv.c, ops/cpu/qgemm.c,
 * ops/cpu/qconv_layout.c): an exact sum e, then rint(e * scale) + y_zp
 * saturated, the product in double as the ONNX reference's numpy takes
 * it (scale a float widened). Two forms, the same bytes:
 *
 *   - gx_requant16: 16 sums as two halves of 8 doubles, any int32 e;
 *   - gx_requant16f: 16 sums in float, for |e| < 2^24 (callers check a
 *     bound of their sums once per node). Why it is exact: e and scale
 *     have 24-bit significands, so e * scale has at most 48 bits and the
 *     double product is the exact one, x; the reference is rne(x). The
 *     float product p = fl(x) is rounded monotonically, so it can cross
 *     a half-integer h only onto h itself: rne(p) = rne(x) unless p is a
 *     half-integer (|p - rne(p)| = 0.5, exact below 2^23; above, p is an
 *     integer, x within half an ulp of it, and the result saturates far
 *     before). There the exact residual x - p (one FMA: the error of a
 *     rounded product is a float) says which way x lies: same sign as p
 *     - rne(p) moves the result one step that way, 0 keeps the tie's even
 *     result. Rare, so behind a test of the tie mask.
 *
 * AVX2 + FMA has the float form over 8 sums (gx_requant8f) and the
 * int32 one (gx_requant8d: 8 sums whose products stay below 2^30 as two
 * halves of 4 doubles). gx_requant8f needs no tie test: one FMA adds
 * 1.5 x 2^23 to the exact product and rounds once, where floats are the
 * integers, so the result is that constant plus rne(x) (the constant is
 * even: a tie keeps its parity), and the clamp and the conversion are
 * then a compare of floats and a subtraction of their bits.
 *
 * Callers check the CPU (gx_requant_avx512, gx_requant_avx2) and have
 * plain loops elsewhere.
 */
#ifndef GX_OPS_CPU_REQUANT_H
#define GX_OPS_CPU_REQUANT_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define GX_REQUANT_AVX512 1

static inline bool gx_requant_avx512(void)
{
    return __builtin_cpu_supports("avx512f");
}

/* rint(e * scale) + yz, e*scale clamped to [lo, hi] (the bounds less yz;
 * NaN: lo) first, as 16 int32 (rounded half to even by the conversion). */
__attribute__((target("avx512f"))) static inline __m512i
gx_requant16(__m512d e0, __m512d e1, double scale, double lo, double hi, int32_t yz)
{
    const __m512d sv = _mm512_set1_pd(scale), lv = _mm512_set1_pd(lo), hv = _mm512_set1_pd(hi);
    /* max first: a NaN product gives lo */
    const __m512d v0 = _mm512_min_pd(_mm512_max_pd(_mm512_mul_pd(e0, sv), lv), hv);
    const __m512d v1 = _mm512_min_pd(_mm512_max_pd(_mm512_mul_pd(e1, sv), lv), hv);
    const __m256i r0 = _mm512_cvt_roundpd_epi32(v0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i r1 = _mm512_cvt_roundpd_epi32(v1, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_add_epi32(_mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1),
                            _mm512_set1_epi32(yz));
}

/* rint(e * scale) clamped to [lo, hi] (integers of magnitude at most
 * 2^22; NaN: lo), as 16 int32, for sums e given as floats that are
 * integers below 2^24 in magnitude (exact: see above). */
__attribute__((target("avx512f"))) static inline __m512i gx_requant16f(__m512 e, __m512 scale,
                                                                       __m512 lo, __m512 hi)
{
    const __m512 p = _mm512_mul_ps(e, scale);
    __m512 r = _mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 d = _mm512_sub_ps(p, r); /* exact; +-0.5 at a tie of p */
    const __mmask16 tie = _mm512_cmp_ps_mask(_mm512_abs_ps(d), _mm512_set1_ps(0.5f), _CMP_EQ_OQ);
    if (__builtin_expect(tie != 0, 0)) {
        const __m512 err = _mm512_fmsub_ps(e, scale, p); /* x - p, exactly */
        const __mmask16 step = _mm512_mask_cmp_ps_mask(tie, _mm512_mul_ps(d, err),
                                                       _mm512_setzero_ps(), _CMP_GT_OQ);
        r = _mm512_mask_add_ps(r, step, r, _mm512_add_ps(d, d)); /* +-1 */
    }
    /* max first: a NaN product gives lo */
    return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, lo), hi));
}

/* The halves of 16 int32 as doubles, exactly. */
__attribute__((target("avx512f"))) static inline void gx_requant_halves(__m512i v, __m512d *e0,
                                                                        __m512d *e1)
{
    *e0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(v));
    *e1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1));
}

#define GX_REQUANT_AVX2 1

static inline bool gx_requant_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* gx_requant16f over 8 sums (AVX2 + FMA), the same results: t = x + M
 * rounded once (M = 1.5 x 2^23), exact to the integer for |x| < 2^22,
 * clamped to [M + lo, M + hi] (max first: a NaN product gives lo; |lo|,
 * |hi| at most 2^22, so t stays in [2^23, 2^24], whose floats' bits are
 * 0x4B000000 plus their distance from 2^23); products beyond 2^22 round
 * coarser but stay beyond the bounds. */
__attribute__((target("avx2,fma"))) static inline __m256i gx_requant8f(__m256 e, __m256 scale,
                                                                     __m256 lo, __m256 hi)
{
    const __m256 m = _mm256_set1_ps(0x1.8p23f);
    const __m256 t = _mm256_fmadd_ps(e, scale, m);
    const __m256 c = _mm256_min_ps(_mm256_max_ps(t, _mm256_add_ps(lo, m)), _mm256_add_ps(hi, m));
    return _mm256_sub_epi32(_mm256_castps_si256(c), _mm256_set1_epi32(0x4B400000));
}

/* rint(e * scale) as 8 int32, unclamped, for int32 sums e whose products
 * with the scales s0 (lanes 0-3) and s1 (4-7) stay below 2^30 in
 * magnitude: the double product rounded half to even, as rint. */
__attribute__((target("avx2,fma"))) static inline __m256i gx_requant8d(__m256i e, __m256d s0,
                                                                     __m256d s1)
{
    const int rm = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256d v0 =
        _mm256_round_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(e)), s0), rm);
    const __m256d v1 =
        _mm256_round_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(e, 1)), s1), rm);
    /* integers: the conversion is exact whatever its rounding mode */
    return _mm256_set_m128i(_mm256_cvtpd_epi32(v1), _mm256_cvtpd_epi32(v0));
}
#endif

#endif
