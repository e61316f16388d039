/*
 * W's wide form (ops/qgemm.h: a panel's quads as [2 pairs of k][16
 * columns][2 k] int16) times rows of A widened to int16: the AVX2
 * register tile that qgemm's dots (ops/cpu/qgemm.c, which store the sums)
 * and the NHWC 1x1 QLinearConv (ops/cpu/qconv_layout.c, which requantizes
 * them from the registers) share. vpmaddwd of a row's pair broadcast by
 * the pair's two vectors of 8 columns: exact int32 sums, wrapping as the
 * other dots'.
 */
#ifndef GX_OPS_CPU_QWIDE_H
#define GX_OPS_CPU_QWIDE_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define GX_QWIDE_R 4 /* rows of the tile */

/* The sums of R rows (a constant once inlined, at most GX_QWIDE_R; row r
 * at aw + r * lda, k4 quads of int16) by the panel's 16 columns (w: its
 * wide form's first quad): columns 0-7 of row r in lo[r], 8-15 in hi[r]. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
gx_qwide_tile(const int16_t *aw, int64_t lda, int64_t k4, const int R, const int16_t *w,
              __m256i *lo, __m256i *hi)
{
    /* named accumulators: an array of them would live on the stack */
    __m256i l0 = _mm256_setzero_si256(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0,
            h3 = l0;
#define GX_QWIDE_ROW(r, l, h)                                                                      \
    do {                                                                                           \
        if (R > (r)) {                                                                             \
            int32_t a2;                                                                            \
            memcpy(&a2, aw + (r) * lda + q * 2, sizeof a2);                                        \
            const __m256i av = _mm256_set1_epi32(a2);                                              \
            l = _mm256_add_epi32(l, _mm256_madd_epi16(av, bl));                                    \
            h = _mm256_add_epi32(h, _mm256_madd_epi16(av, bh));                                    \
        }                                                                                          \
    } while (0)
    for (int64_t q = 0; q < k4 * 2; q++) { /* pairs of k */
        const __m256i bl = _mm256_loadu_si256((const __m256i *)(w + q * 32));
        const __m256i bh = _mm256_loadu_si256((const __m256i *)(w + q * 32 + 16));
        GX_QWIDE_ROW(0, l0, h0);
        GX_QWIDE_ROW(1, l1, h1);
        GX_QWIDE_ROW(2, l2, h2);
        GX_QWIDE_ROW(3, l3, h3);
    }
#undef GX_QWIDE_ROW
    lo[0] = l0, lo[1] = l1, lo[2] = l2, lo[3] = l3;
    hi[0] = h0, hi[1] = h1, hi[2] = h2, hi[3] = h3;
}
#endif

#endif
