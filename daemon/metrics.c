/*
 * Metrics (see metrics.h): histograms, STATS' "latency", the Prometheus
 * text exposition and its HTTP endpoint.
 */
#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include <gexec/status.h>

#include "daemon/ctx.h"
#include "daemon/server.h"
#include "daemon/job.h"
#include "daemon/metrics.h"
#include "daemon/pool.h"
#include "daemon/tune/tune.h"
#include "core/internal.h"
#include "core/wire.h"

/* Per-graph latencies; the least recently run is replaced when full. */
typedef struct s_graph {
    char id[sizeof(gx_graph_id)];
    uint64_t last; /* m->tick when it last ran */
    gxd_latency lat;
} s_graph;

struct gxd_metrics {
    gxd_latency modes[GX_MODE_COUNT];
    s_graph *graphs;
    size_t n_graphs, max_graphs;
    uint64_t tick;
    struct MHD_Daemon *http;
    int http_fd;
    char url[160];
};

int gxd_metrics_new(size_t max_graphs, gxd_metrics **out)
{
    gxd_metrics *m = calloc(1, sizeof *m);
    if (!m || !(m->graphs = calloc(max_graphs ? max_graphs : 1, sizeof *m->graphs))) {
        free(m);
        *out = NULL;
        return GX_ENOMEM;
    }
    m->max_graphs = max_graphs ? max_graphs : 1;
    m->http_fd = -1;
    *out = m;
    return GX_OK;
}

void gxd_metrics_destroy(gxd_metrics **mp)
{
    gxd_metrics *m = mp ? *mp : NULL;
    if (!m)
        return;
    if (m->http)
        MHD_stop_daemon(m->http);
    free(m->graphs);
    free(m);
    *mp = NULL;
}

void gxd_hist_add(gxd_hist *h, int64_t us)
{
    if (us < 0)
        us = 0;
    h->count++;
    h->sum_us += us;
    h->buckets[gx_hist_bucket(us)]++;
}

static void s_latency_add(gxd_latency *l, int64_t queue_us, int64_t compute_us, int64_t e2e_us)
{
    gxd_hist_add(&l->queue, queue_us);
    gxd_hist_add(&l->compute, compute_us);
    gxd_hist_add(&l->e2e, e2e_us);
}

static s_graph *s_graph_find(const gxd_metrics *m, const char *hex)
{
    for (size_t i = 0; i < m->n_graphs; i++)
        if (strcmp(m->graphs[i].id, hex) == 0)
            return &m->graphs[i];
    return NULL;
}

void gxd_metrics_job(gxd_metrics *m, const char *graph_hex, gx_mode mode, int64_t queue_us,
                     int64_t compute_us, int64_t e2e_us)
{
    if ((unsigned)mode < GX_MODE_COUNT)
        s_latency_add(&m->modes[mode], queue_us, compute_us, e2e_us);
    if (!graph_hex || !*graph_hex)
        return;
    s_graph *g = s_graph_find(m, graph_hex);
    if (!g) {
        if (m->n_graphs < m->max_graphs) {
            g = &m->graphs[m->n_graphs++];
        } else { /* replace the least recently run */
            g = &m->graphs[0];
            for (size_t i = 1; i < m->n_graphs; i++)
                if (m->graphs[i].last < g->last)
                    g = &m->graphs[i];
        }
        memset(g, 0, sizeof *g);
        snprintf(g->id, sizeof g->id, "%s", graph_hex);
    }
    g->last = ++m->tick;
    s_latency_add(&g->lat, queue_us, compute_us, e2e_us);
}

const gxd_latency *gxd_metrics_mode(const gxd_metrics *m, gx_mode mode)
{
    return (unsigned)mode < GX_MODE_COUNT ? &m->modes[mode] : NULL;
}

const gxd_latency *gxd_metrics_graph(const gxd_metrics *m, const char *graph_hex)
{
    const s_graph *g = s_graph_find(m, graph_hex);
    return g ? &g->lat : NULL;
}

/* ---- STATS ---------------------------------------------------------------- */

static void s_pack_hist(msgpack_packer *pk, const char *name, const gxd_hist *h)
{
    gx_mp_pack_str(pk, name);
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "count");
    msgpack_pack_uint64(pk, h->count);
    gx_mp_pack_str(pk, "sum_us");
    msgpack_pack_int64(pk, h->sum_us);
    gx_mp_pack_str(pk, "buckets");
    msgpack_pack_array(pk, GX_HIST_NBUCKETS);
    for (size_t i = 0; i < GX_HIST_NBUCKETS; i++)
        msgpack_pack_uint64(pk, h->buckets[i]);
}

static void s_pack_latency(msgpack_packer *pk, const gxd_latency *l)
{
    msgpack_pack_map(pk, 4);
    gx_mp_pack_str(pk, "jobs");
    msgpack_pack_uint64(pk, l->e2e.count);
    s_pack_hist(pk, "queue", &l->queue);
    s_pack_hist(pk, "compute", &l->compute);
    s_pack_hist(pk, "e2e", &l->e2e);
}

void gxd_metrics_pack(const gxd_metrics *m, msgpack_packer *pk)
{
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "bounds_us");
    msgpack_pack_array(pk, GX_HIST_NBOUNDS);
    for (size_t i = 0; i < GX_HIST_NBOUNDS; i++)
        msgpack_pack_int64(pk, gx_hist_bounds_us[i]);
    int n = 0;
    for (int k = 0; k < GX_MODE_COUNT; k++)
        n += m->modes[k].e2e.count > 0;
    gx_mp_pack_str(pk, "modes");
    msgpack_pack_map(pk, (size_t)n);
    for (int k = 0; k < GX_MODE_COUNT; k++)
        if (m->modes[k].e2e.count) {
            gx_mp_pack_str(pk, gx_mode_name((gx_mode)k));
            s_pack_latency(pk, &m->modes[k]);
        }
    gx_mp_pack_str(pk, "graphs");
    msgpack_pack_map(pk, m->n_graphs);
    for (size_t i = 0; i < m->n_graphs; i++) {
        gx_mp_pack_str(pk, m->graphs[i].id);
        s_pack_latency(pk, &m->graphs[i].lat);
    }
}

/* ---- Prometheus text exposition ------------------------------------------ */

static void s_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void s_sample(FILE *f, const char *name, const char *type, const char *help, double v)
{
    s_family(f, name, type, help);
    fprintf(f, "%s %.17g\n", name, v);
}

/* One histogram's series: cumulative buckets with le in seconds, +Inf, sum
 * (seconds) and count; label is `key="value"`. */
static void s_hist(FILE *f, const char *name, const char *key, const char *value, const gxd_hist *h)
{
    uint64_t cum = 0;
    for (size_t i = 0; i < GX_HIST_NBOUNDS; i++) {
        cum += h->buckets[i];
        fprintf(f, "%s_bucket{%s=\"%s\",le=\"%.6g\"} %" PRIu64 "\n", name, key, value,
                (double)gx_hist_bounds_us[i] / 1e6, cum);
    }
    cum += h->buckets[GX_HIST_NBOUNDS];
    fprintf(f, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, key, value, cum);
    fprintf(f, "%s_sum{%s=\"%s\"} %.6f\n", name, key, value, (double)h->sum_us / 1e6);
    fprintf(f, "%s_count{%s=\"%s\"} %" PRIu64 "\n", name, key, value, h->count);
}

/* The three latency families, over the modes (graphs false) or the graphs. */
static void s_latencies(FILE *f, const gxd_metrics *m, bool graphs)
{
    static const struct {
        const char *suffix, *help;
        size_t off;
    } kinds[] = {
        {"queue_wait_seconds", "time from a job's arrival to a worker taking it",
         offsetof(gxd_latency, queue)},
        {"compute_seconds", "time a job's executor ran (compile excluded)",
         offsetof(gxd_latency, compute)},
        {"latency_seconds", "time from a job's arrival to its result (end to end in the daemon)",
         offsetof(gxd_latency, e2e)},
    };
    const char *prefix = graphs ? "gexec_graph_job_" : "gexec_job_";
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char name[96], help[160];
        snprintf(name, sizeof name, "%s%s", prefix, kinds[k].suffix);
        snprintf(help, sizeof help, "%s, per %s", kinds[k].help, graphs ? "graph" : "mode");
        s_family(f, name, "histogram", help);
        size_t n = graphs ? m->n_graphs : GX_MODE_COUNT;
        for (size_t i = 0; i < n; i++) {
            const gxd_latency *l = graphs ? &m->graphs[i].lat : &m->modes[i];
            if (!graphs && !l->e2e.count)
                continue;
            s_hist(f, name, graphs ? "graph" : "mode",
                   graphs ? m->graphs[i].id : gx_mode_name((gx_mode)i),
                   (const gxd_hist *)(const void *)((const char *)l + kinds[k].off));
        }
    }
}

char *gxd_metrics_prometheus(gxd_ctx *ctx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const gxd_stats *st = &ctx->stats;
    const gxd_metrics *m = ctx->metrics;
    s_family(f, "gexec_build_info", "gauge", "the gexecd version (the value is always 1)");
    fprintf(f, "gexec_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
    s_sample(f, "gexec_uptime_seconds", "gauge", "seconds since gexecd started",
             (double)(gxd_now_us() - ctx->started_us) / 1e6);
    s_sample(f, "gexec_workers", "gauge", "worker threads (one per owned core)",
             gxd_pool_size(ctx->pool));
    s_sample(f, "gexec_workers_busy", "gauge", "workers running a job now",
             gxd_pool_busy(ctx->pool));
    s_sample(f, "gexec_queue_length", "gauge", "jobs waiting in the queue",
             (double)gxd_queue_len(&ctx->queue));
    s_sample(f, "gexec_graphs_loaded", "gauge", "compiled graphs kept", (double)ctx->models.n);
    s_sample(f, "gexec_requests_total", "counter", "messages received", (double)st->requests);
    s_sample(f, "gexec_protocol_errors_total", "counter",
             "malformed messages answered with an error", (double)st->protocol_errors);
    s_sample(f, "gexec_loads_total", "counter", "LOAD requests", (double)st->loads);
    s_family(f, "gexec_runs_total", "counter", "RUN jobs answered, by outcome");
    fprintf(f, "gexec_runs_total{status=\"ok\"} %" PRIu64 "\n", st->runs_ok);
    fprintf(f, "gexec_runs_total{status=\"failed\"} %" PRIu64 "\n", st->runs_failed);
    s_sample(f, "gexec_jobs_cancelled_total", "counter", "jobs cancelled", (double)st->cancelled);
    s_sample(f, "gexec_jobs_expired_total", "counter", "jobs past their deadline",
             (double)st->expired);
    s_sample(f, "gexec_jobs_rejected_queue_full_total", "counter",
             "jobs refused because the queue was full", (double)st->rejected_full);
    s_sample(f, "gexec_disconnected_dropped_total", "counter",
             "queued jobs dropped because their client went away", (double)st->gone_dropped);
    s_sample(f, "gexec_disconnected_cancelled_total", "counter",
             "running jobs cancelled because their client went away", (double)st->gone_cancelled);
    s_sample(f, "gexec_plans_compiled_total", "counter", "jobs that compiled a plan",
             (double)st->compile_count);
    s_family(f, "gexec_config_reloads_total", "counter", "SIGHUP reloads, by outcome");
    fprintf(f, "gexec_config_reloads_total{status=\"ok\"} %" PRIu64 "\n", st->reloads);
    fprintf(f, "gexec_config_reloads_total{status=\"refused\"} %" PRIu64 "\n", st->reload_failures);
    if (ctx->tune) {
        gxd_tune_stats ts;
        gxd_tune_get_stats(ctx->tune, &ts);
        s_sample(f, "gexec_tune_lookups_total", "counter", "best-implementation lookups",
                 (double)ts.lookups);
        s_sample(f, "gexec_tune_misses_total", "counter", "lookups with no record",
                 (double)ts.misses);
        s_sample(f, "gexec_tune_explored_total", "counter", "signatures measured",
                 (double)ts.explored);
        s_family(f, "gexec_tune_hits_total", "counter", "lookups that found a record, by level");
        static const char *const level[GXD_TUNE_LEVEL_COUNT] = {"memory", "local", "central"};
        for (int l = 0; l < GXD_TUNE_LEVEL_COUNT; l++)
            fprintf(f, "gexec_tune_hits_total{level=\"%s\"} %" PRId64 "\n", level[l], ts.hits[l]);
        s_sample(f, "gexec_tune_upstream_errors_total", "counter",
                 "central registry failures (connections, reads, writes)",
                 (double)ts.upstream_errors);
    }
    gxd_device_stat ds[GXD_MAX_DEVICES + 1];
    size_t nd = gxd_device_stats(ctx, ds, sizeof ds / sizeof ds[0]);
    s_family(f, "gexec_device_jobs_total", "counter", "jobs that ran steps on the device");
    for (size_t i = 0; i < nd; i++)
        fprintf(f, "gexec_device_jobs_total{device=\"%s\"} %" PRIu64 "\n", ds[i].name, ds[i].jobs);
    /* the devices that say (a family without samples is left out) */
    for (int k = 0; k < 2; k++) {
        const char *fam = k ? "gexec_device_free_bytes" : "gexec_device_memory_bytes";
        bool any = false;
        for (size_t i = 0; i < nd; i++) {
            int64_t v = k ? ds[i].free : ds[i].in_use;
            if (v < 0)
                continue;
            if (!any)
                s_family(f, fam, "gauge",
                         k ? "bytes the device can still give"
                           : "bytes the device holds for plans and jobs (arenas, constants, "
                             "prepared weights)");
            any = true;
            fprintf(f, "%s{device=\"%s\"} %" PRId64 "\n", fam, ds[i].name, v);
        }
    }
    if (m) {
        s_family(f, "gexec_jobs_total", "counter", "jobs run to a result, per mode");
        for (int k = 0; k < GX_MODE_COUNT; k++)
            if (m->modes[k].e2e.count)
                fprintf(f, "gexec_jobs_total{mode=\"%s\"} %" PRIu64 "\n", gx_mode_name((gx_mode)k),
                        m->modes[k].e2e.count);
        s_latencies(f, m, false);
        s_latencies(f, m, true);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- HTTP ------------------------------------------------------------------ */

static enum MHD_Result s_reply_text(struct MHD_Connection *conn, unsigned code, const char *text,
                                    bool must_free)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(text), (void *)text, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free)
            free((void *)text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
                                                : "text/plain; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /metrics: the exposition; anything else a short error. Runs on the
 * I/O thread (inside gxd_metrics_http_run). */
static enum MHD_Result s_http_request(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    gxd_ctx *ctx = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return s_reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", false);
    if (strcmp(url, "/metrics") != 0)
        return s_reply_text(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", false);
    char *text = gxd_metrics_prometheus(ctx);
    if (!text)
        return s_reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n", false);
    return s_reply_text(conn, MHD_HTTP_OK, text, true);
}

static void s_http_log(void *cls, const char *fmt, va_list ap)
{
    gxd_ctx *ctx = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    GXD_LOG(&ctx->log, GXD_LOG_WARN, "metrics http: %s", msg);
}

int gxd_metrics_http_start(gxd_ctx *ctx, const char *listen, char *err, size_t errlen)
{
    gxd_metrics *m = ctx->metrics;
    if (m->http)
        return gx_errf(err, errlen, GX_EINTERNAL, "metrics: the endpoint is already serving");
    char host[128] = "127.0.0.1", port[16];
    const char *colon = strrchr(listen, ':');
    if (!colon) {
        snprintf(port, sizeof port, "%s", listen);
    } else {
        size_t hl = (size_t)(colon - listen);
        const char *h = listen;
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [::1]:9464 */
            h++;
            hl -= 2;
        }
        if (hl == 0 || hl >= sizeof host)
            return gx_errf(err, errlen, GX_ECONFIG, "metrics.listen: bad host in '%s'", listen);
        memcpy(host, h, hl);
        host[hl] = '\0';
        snprintf(port, sizeof port, "%s", colon + 1);
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE},
                    *ai = NULL;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0)
        return gx_errf(err, errlen, GX_ECONFIG, "metrics.listen '%s': %s", listen,
                       gai_strerror(gai));
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    /* the logger first, so that libmicrohttpd prints nothing itself */
    m->http = MHD_start_daemon(flags, 0, NULL, NULL, s_http_request, ctx,
                               MHD_OPTION_EXTERNAL_LOGGER, s_http_log, ctx,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    int family = ai->ai_family;
    freeaddrinfo(ai);
    if (!m->http)
        return gx_errf(err, errlen, GX_ECONFIG,
                       "metrics.listen '%s': cannot serve HTTP there (address in use or not local?)",
                       listen);
    const union MHD_DaemonInfo *fd = MHD_get_daemon_info(m->http, MHD_DAEMON_INFO_EPOLL_FD);
    const union MHD_DaemonInfo *bp = MHD_get_daemon_info(m->http, MHD_DAEMON_INFO_BIND_PORT);
    if (!fd || !bp) {
        MHD_stop_daemon(m->http);
        m->http = NULL;
        return gx_errf(err, errlen, GX_EINTERNAL, "metrics.listen: libmicrohttpd without epoll");
    }
    m->http_fd = fd->epoll_fd;
    snprintf(m->url, sizeof m->url, family == AF_INET6 ? "http://[%s]:%u/metrics" : "http://%s:%u/metrics",
             host, (unsigned)bp->port);
    return GX_OK;
}

void gxd_metrics_http_stop(gxd_metrics *m)
{
    if (!m || !m->http)
        return;
    MHD_stop_daemon(m->http);
    m->http = NULL;
    m->http_fd = -1;
    m->url[0] = '\0';
}

int gxd_metrics_http_fd(const gxd_metrics *m)
{
    return m && m->http ? m->http_fd : -1;
}

void gxd_metrics_http_run(gxd_metrics *m)
{
    if (m && m->http)
        MHD_run(m->http);
}

const char *gxd_metrics_url(const gxd_metrics *m)
{
    return m && m->http ? m->url : NULL;
}
