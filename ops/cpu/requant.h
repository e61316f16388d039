/*
 * Requantization in AVX-512, as the quantized kernels' byte outputs take
 * it (ops/cpu/conv.c, ops/cpu/qgemm.c): an exact sum e, then rint(e *
 * scale) + y_zp saturated, the product in double as the ONNX reference's
 * numpy takes it. 16 sums at a time, given as two halves of 8 doubles.
 * Callers check the CPU (gx_requant_avx512) and have plain loops
 * elsewhere.
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

/* The halves of 16 int32 as doubles, exactly. */
__attribute__((target("avx512f"))) static inline void gx_requant_halves(__m512i v, __m512d *e0,
                                                                        __m512d *e1)
{
    *e0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(v));
    *e1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1));
}
#endif

#endif
