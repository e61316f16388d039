/*
 * Latency histograms as gexecd keeps them (STATS "latency", the Prometheus
 * exposition) and the quantile estimate gexec-submit prints from them. Both
 * sides include this header, so the bucket bounds are written once. Depends
 * on libc only; not installed.
 *
 *     uint64_t counts[GX_HIST_NBUCKETS] = {0};
 *     counts[gx_hist_bucket(730)]++;               // one job of 730 us
 *     double p99 = gx_hist_quantile(gx_hist_bounds_us, GX_HIST_NBOUNDS, counts, 0.99);
 *
 * Buckets are not cumulative: counts[i] holds the samples in
 * (bounds[i-1], bounds[i]] (the first from 0), counts[GX_HIST_NBOUNDS] those
 * above the last bound.
 */
#ifndef GX_HIST_H
#define GX_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Upper bounds in microseconds: 1, 1.5, 2, 3, 5, 7 per decade from 10 us
 * to 100 s (about 25 % to 50 % apart, enough for a p99 to the bucket). */
#define GX_HIST_DECADE(d) 10 * (d), 15 * (d), 20 * (d), 30 * (d), 50 * (d), 70 * (d)
static const int64_t gx_hist_bounds_us[] = {
    5,
    GX_HIST_DECADE(INT64_C(1)),
    GX_HIST_DECADE(INT64_C(10)),
    GX_HIST_DECADE(INT64_C(100)),
    GX_HIST_DECADE(INT64_C(1000)),
    GX_HIST_DECADE(INT64_C(10000)),
    GX_HIST_DECADE(INT64_C(100000)),
    GX_HIST_DECADE(INT64_C(1000000)),
    INT64_C(100000000),
};
#undef GX_HIST_DECADE
#define GX_HIST_NBOUNDS (sizeof gx_hist_bounds_us / sizeof gx_hist_bounds_us[0])
#define GX_HIST_NBUCKETS (GX_HIST_NBOUNDS + 1)

/* The bucket a sample of us microseconds falls in (negative counts as 0). */
static inline size_t gx_hist_bucket(int64_t us)
{
    size_t lo = 0, hi = GX_HIST_NBOUNDS; /* first bound >= us, by bisection */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gx_hist_bounds_us[mid] >= us)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The q-quantile (0 < q <= 1) of nb+1 bucket counts over the bounds (in
 * any unit), interpolated linearly inside its bucket as Prometheus'
 * histogram_quantile does; a quantile in the overflow bucket is the last
 * bound. -1 when the counts are all zero. */
static inline double gx_hist_quantile(const int64_t *bounds, size_t nb, const uint64_t *counts,
                                      double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i <= nb; i++)
        total += counts[i];
    if (!total)
        return -1;
    double rank = q * (double)total, seen = 0;
    for (size_t i = 0; i < nb; i++) {
        if (counts[i] && seen + (double)counts[i] >= rank) {
            double lo = i ? (double)bounds[i - 1] : 0, hi = (double)bounds[i];
            return lo + (hi - lo) * (rank - seen) / (double)counts[i];
        }
        seen += (double)counts[i];
    }
    return (double)bounds[nb - 1];
}

#endif
