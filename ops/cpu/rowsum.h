/*
 * Accurate sums of long float rows that still vectorise: each block of
 * GX_ROWSUM_BLOCK elements is summed in GX_ROWSUM_LANES independent float
 * accumulators (a loop gcc turns into SIMD adds without -ffast-math, as
 * it needs no reassociation), and the blocks' partial sums add up in
 * double; and their maximum, likewise in lanes. Used by the normalising
 * kernels of the nn family and Attention.
 */
#ifndef GX_OPS_CPU_ROWSUM_H
#define GX_OPS_CPU_ROWSUM_H

#include <stdint.h>

#define GX_ROWSUM_LANES 16
#define GX_ROWSUM_BLOCK 4096

/* Sum of x[0..n). */
static inline double gx_row_sum(int64_t n, const float *restrict x)
{
    double total = 0;
    for (int64_t b = 0; b < n; b += GX_ROWSUM_BLOCK) {
        const int64_t m = n - b < GX_ROWSUM_BLOCK ? n - b : GX_ROWSUM_BLOCK;
        const float *xb = x + b;
        float acc[GX_ROWSUM_LANES] = {0};
        int64_t i = 0;
        for (; i + GX_ROWSUM_LANES <= m; i += GX_ROWSUM_LANES)
            for (int j = 0; j < GX_ROWSUM_LANES; j++)
                acc[j] += xb[i + j];
        for (; i < m; i++)
            acc[0] += xb[i];
        for (int j = 0; j < GX_ROWSUM_LANES; j++)
            total += acc[j];
    }
    return total;
}

/* Sum of (x[i] - mean)^2 over x[0..n). */
static inline double gx_row_sumsq(int64_t n, const float *restrict x, float mean)
{
    double total = 0;
    for (int64_t b = 0; b < n; b += GX_ROWSUM_BLOCK) {
        const int64_t m = n - b < GX_ROWSUM_BLOCK ? n - b : GX_ROWSUM_BLOCK;
        const float *xb = x + b;
        float acc[GX_ROWSUM_LANES] = {0};
        int64_t i = 0;
        for (; i + GX_ROWSUM_LANES <= m; i += GX_ROWSUM_LANES) {
            for (int j = 0; j < GX_ROWSUM_LANES; j++) {
                const float d = xb[i + j] - mean;
                acc[j] += d * d;
            }
        }
        for (; i < m; i++) {
            const float d = xb[i] - mean;
            acc[0] += d * d;
        }
        for (int j = 0; j < GX_ROWSUM_LANES; j++)
            total += acc[j];
    }
    return total;
}

/* The maximum of x[0..n), n > 0, in GX_ROWSUM_LANES lanes (each lane's
 * x > m ? x : m is one MAXPS: it vectorises without -ffast-math; a NaN is
 * not picked, and reaches the results through the exps that follow). */
static inline float gx_row_max(int64_t n, const float *restrict x)
{
    float m[GX_ROWSUM_LANES];
    for (int j = 0; j < GX_ROWSUM_LANES; j++)
        m[j] = x[0];
    int64_t i = 0;
    for (; i + GX_ROWSUM_LANES <= n; i += GX_ROWSUM_LANES)
        for (int j = 0; j < GX_ROWSUM_LANES; j++)
            m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    for (; i < n; i++)
        m[0] = x[i] > m[0] ? x[i] : m[0];
    float mx = m[0];
    for (int j = 1; j < GX_ROWSUM_LANES; j++)
        mx = m[j] > mx ? m[j] : mx;
    return mx;
}

#endif
