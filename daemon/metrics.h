/*
 * Metrics: latency histograms (queue wait, compute, end to end) per mode
 * and per graph, STATS' "latency" map, the Prometheus text exposition
 * (docs/metrics.md) and its HTTP endpoint (metrics.listen, libmicrohttpd
 * driven from the I/O thread's poll loop, so every counter is read on the
 * thread that writes it and nothing here takes a lock).
 *
 *     gxd_metrics *m = NULL;
 *     gxd_metrics_new(256, &m);
 *     gxd_metrics_job(m, id.hex, GX_MODE_SEQ, queue_us, compute_us, e2e_us);
 *     char *text = gxd_metrics_prometheus(ctx);    // caller frees
 *     gxd_metrics_destroy(&m);
 *
 * Every function is for the I/O thread only.
 */
#ifndef GXD_METRICS_H
#define GXD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <gexec/client.h>

#include "core/hist.h"

struct gxd_ctx;

/* One histogram of microseconds (core/hist.h's buckets). */
typedef struct gxd_hist {
    uint64_t count;
    int64_t sum_us;
    uint64_t buckets[GX_HIST_NBUCKETS];
} gxd_hist;

/* The three latencies of the jobs that ran in one mode or of one graph. */
typedef struct gxd_latency {
    gxd_hist queue;   /* arrival to a worker taking the job */
    gxd_hist compute; /* the executor's run (compile excluded) */
    gxd_hist e2e;     /* arrival to the result (queue + compile + compute) */
} gxd_latency;

typedef struct gxd_metrics gxd_metrics;

/* Keeps per-graph histograms for at most max_graphs graphs (the least
 * recently run beyond). GX_OK, or GX_ENOMEM. Caller destroys *out. */
int gxd_metrics_new(size_t max_graphs, gxd_metrics **out);
/* Stops the HTTP endpoint too. Accepts NULL; sets *m = NULL. */
void gxd_metrics_destroy(gxd_metrics **m);

/* Count one job that ran to a result in mode (never GX_MODE_AUTO) for the
 * graph graph_hex (NULL: per mode only). */
void gxd_metrics_job(gxd_metrics *m, const char *graph_hex, gx_mode mode, int64_t queue_us,
                     int64_t compute_us, int64_t e2e_us);
void gxd_hist_add(gxd_hist *h, int64_t us);
/* The latencies of one mode, or of one graph (NULL if it has none). */
const gxd_latency *gxd_metrics_mode(const gxd_metrics *m, gx_mode mode);
const gxd_latency *gxd_metrics_graph(const gxd_metrics *m, const char *graph_hex);

/* STATS' "latency" value: {"bounds_us": [...], "modes": {name: L},
 * "graphs": {id: L}} where L = {"jobs", "queue", "compute", "e2e"} and each
 * histogram is {"count", "sum_us", "buckets": [nbounds + 1 counts]};
 * modes and graphs without jobs are left out. */
void gxd_metrics_pack(const gxd_metrics *m, msgpack_packer *pk);

/* The Prometheus text exposition (version 0.0.4) of the daemon's counters
 * and histograms; malloc'ed, NUL-terminated, caller frees; NULL when out
 * of memory. */
char *gxd_metrics_prometheus(struct gxd_ctx *ctx);

/* Serve GET /metrics over HTTP on listen ("PORT" on 127.0.0.1, or
 * "HOST:PORT", "[V6]:PORT"; port 0 picks a free one). Error: a status
 * and why in err. The endpoint runs in gxd_metrics_http_run, called by the
 * poll loop when gxd_metrics_http_fd is readable. */
int gxd_metrics_http_start(struct gxd_ctx *ctx, const char *listen, char *err, size_t errlen);
/* Stop serving (SIGHUP with a new metrics.listen); no-op without an endpoint. */
void gxd_metrics_http_stop(gxd_metrics *m);
/* The descriptor to poll for input, or -1 when there is no endpoint. */
int gxd_metrics_http_fd(const gxd_metrics *m);
void gxd_metrics_http_run(gxd_metrics *m);
/* "http://127.0.0.1:9464/metrics", or NULL when there is no endpoint. */
const char *gxd_metrics_url(const gxd_metrics *m);

#endif
