/*
 * gexec-submit perf: a load generator in the manner of Triton's
 * perf_analyzer. Closed loop (--concurrency N: N clients, each sending its
 * next request when the last is answered) or open loop (--rate R: requests
 * sent on a fixed schedule of R per second by up to --concurrency clients),
 * for a duration; a live progress line on stderr, then throughput,
 * p50/p90/p99/p99.9 latency and the split of the mean latency into client
 * (encode, send, network, receive, decode), queue, compile and compute
 * time. Latencies go into a log histogram of 1 % buckets, so memory does
 * not grow with the number of requests. Part of gexec-submit; links the
 * public libgexec only.
 *
 *     gxs_perf_opts o = {.endpoint = NULL, .graph = g, .concurrency = 4,
 *                        .duration_s = 5, .mode = GX_MODE_AUTO};
 *     int rc = gxs_perf_run(&o);   // prints the report; 0 when every request succeeded
 */
#ifndef GXS_PERF_H
#define GXS_PERF_H

#include <stdbool.h>

#include <gexec/gexec.h>

typedef struct gxs_perf_opts {
    const char *endpoint; /* NULL: the default endpoint */
    int timeout_ms;       /* per request */
    const char *graph_path; /* for the report */
    const gx_graph *graph;  /* borrowed */
    int n_in;
    const char *const *in_names;    /* n_in names */
    const gx_tensor *const *inputs; /* n_in tensors, borrowed */
    gx_mode mode;
    int concurrency; /* clients (closed loop), or the most in flight (--rate) */
    double rate;     /* requests per second; 0: closed loop */
    double duration_s;
    bool json;
} gxs_perf_opts;

/* Load the graph, warm it up with one request, then measure and print the
 * report to stdout (JSON with o->json). Returns 0 when every request
 * succeeded, 1 otherwise (the reason on stderr). */
int gxs_perf_run(const gxs_perf_opts *o);

#endif
