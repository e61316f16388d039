/*
 * SIGHUP reload (see reload.h). The keys a reload applies are the rows of
 * s_live; each applies the new value where the daemon reads it. Every other
 * key is fixed at start (endpoints, CPUs, directories, the compiler's
 * switches, which workers read without a lock).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <gexec/status.h>

#include "daemon/auth.h"
#include "daemon/metrics.h"
#include "daemon/reload.h"

typedef void (*s_apply_fn)(gxd_ctx *ctx, gxd_config *next);

static void s_log_level(gxd_ctx *ctx, gxd_config *next)
{
    ctx->cfg.log_level = next->log_level;
    ctx->log.level = next->log_level;
}

static void s_queue(gxd_ctx *ctx, gxd_config *next)
{
    ctx->cfg.queue_max_jobs = next->queue_max_jobs;
    ctx->cfg.queue_max_bytes = next->queue_max_bytes;
    gxd_queue_set_bounds(&ctx->queue, (size_t)next->queue_max_jobs, (size_t)next->queue_max_bytes);
}

/* read by the I/O thread only */
static void s_priority(gxd_ctx *ctx, gxd_config *next)
{
    ctx->cfg.limits_max_client_priority = next->limits_max_client_priority;
    atomic_store(&ctx->rings.max_priority, next->limits_max_client_priority);
}

static void s_client_limits(gxd_ctx *ctx, gxd_config *next)
{
    ctx->cfg.limits_client_graphs = next->limits_client_graphs;
    ctx->cfg.limits_client_memory_bytes = next->limits_client_memory_bytes;
    ctx->cfg.limits_client_jobs = next->limits_client_jobs;
    ctx->cfg.limits_uid_jobs = next->limits_uid_jobs;
    gxd_clients_set_limits(&ctx->clients, (size_t)next->limits_client_graphs,
                           gxd_config_client_memory(&ctx->cfg));
    gxd_queue_set_client_max(&ctx->queue, (size_t)next->limits_client_jobs);
    gxd_queue_set_uid_max(&ctx->queue, (size_t)next->limits_uid_jobs);
}

static void s_grace(gxd_ctx *ctx, gxd_config *next)
{
    ctx->cfg.shutdown_grace_ms = next->shutdown_grace_ms;
}

static void s_metrics(gxd_ctx *ctx, gxd_config *next)
{
    char err[512];
    free(ctx->cfg.metrics_listen);
    ctx->cfg.metrics_listen = next->metrics_listen;
    next->metrics_listen = NULL;
    gxd_metrics_http_stop(ctx->metrics);
    const char *listen = ctx->cfg.metrics_listen;
    if (!listen || !*listen) {
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "reload: metrics endpoint off");
        return;
    }
    if (gxd_metrics_http_start(ctx, listen, err, sizeof err) < 0)
        GXD_LOG(&ctx->log, GXD_LOG_ERROR, "reload: %s; the metrics endpoint is off", err);
    else
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "reload: metrics on %s", gxd_metrics_url(ctx->metrics));
}

/* the new path only: s_client_keys_read reads the keys on every reload */
static void s_client_keys(gxd_ctx *ctx, gxd_config *next)
{
    free(ctx->cfg.security_client_keys);
    ctx->cfg.security_client_keys = next->security_client_keys;
    next->security_client_keys = NULL;
}

/* The CURVE client keys are read again on every SIGHUP, whether the path
 * changed or not: the files are what an administrator edits to admit or
 * revoke a client. A bad list leaves the old one. */
static void s_client_keys_read(gxd_ctx *ctx)
{
    char err[1024];
    size_t n;
    uint64_t admitted, refused;
    if (!ctx->auth) {
        if (ctx->cfg.security_client_keys && *ctx->cfg.security_client_keys)
            GXD_LOG(&ctx->log, GXD_LOG_WARN,
                    "reload: CURVE is turned on only at start; restart gexecd for it");
        return;
    }
    if (gxd_auth_reload(ctx->auth, ctx->cfg.security_client_keys, err, sizeof err) < 0) {
        GXD_LOG(&ctx->log, GXD_LOG_ERROR, "reload: %s; the client keys stay as they were", err);
        return;
    }
    gxd_auth_stats(ctx->auth, &n, &admitted, &refused);
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "reload: %zu CURVE client keys", n);
}

static const struct {
    const char *key;
    s_apply_fn apply;
} s_live[] = {
    {"log_level", s_log_level},
    {"queue.max_jobs", s_queue},
    {"queue.max_bytes", s_queue},
    {"limits.max_client_priority", s_priority},
    {"limits.client_graphs", s_client_limits},
    {"limits.client_memory_bytes", s_client_limits},
    {"limits.client_jobs", s_client_limits},
    {"limits.uid_jobs", s_client_limits},
    {"shutdown_grace_ms", s_grace},
    {"metrics.listen", s_metrics},
    {"security.client_keys", s_client_keys},
};
#define S_NLIVE (sizeof s_live / sizeof s_live[0])

bool gxd_reload_key_live(const char *key)
{
    for (size_t i = 0; i < S_NLIVE; i++)
        if (strcmp(s_live[i].key, key) == 0)
            return true;
    return false;
}

static void s_notify_reloading(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=reloading the configuration",
               (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
}

/* The new configuration: the file, then the command line's keys. */
static int s_read(gxd_ctx *ctx, gxd_config *next, char *err, size_t errlen)
{
    char why[1024];
    gxd_config_init(next);
    if (ctx->config_path && gxd_config_load(next, ctx->config_path, why, sizeof why) < 0)
        return gx_errf(err, errlen, GX_ECONFIG, "%s", why);
    for (int i = 0; i < ctx->n_flags; i++)
        if (gxd_config_set(next, ctx->flag_keys[i], ctx->flag_vals[i], why, sizeof why) < 0)
            return gx_errf(err, errlen, GX_ECONFIG, "--%s: %s", ctx->flag_keys[i], why);
    return GX_OK;
}

void gxd_reload(gxd_ctx *ctx)
{
    s_notify_reloading();
    /* logrotate moved log_file away: this reload's lines go to a new one */
    char why[1100];
    if (gxd_log_reopen(&ctx->log, ctx->cfg.log_file, why, sizeof why) < 0)
        GXD_LOG(&ctx->log, GXD_LOG_ERROR, "%s; the log stays where it was", why);
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "SIGHUP: reading %s again",
            ctx->config_path ? ctx->config_path : "the built-in defaults");
    gxd_config next;
    char err[1024];
    if (s_read(ctx, &next, err, sizeof err) < 0) {
        gxd_config_fini(&next);
        ctx->stats.reload_failures++;
        GXD_LOG(&ctx->log, GXD_LOG_ERROR, "reload refused, the configuration stays as it was: %s", err);
        sd_notifyf(0, "READY=1\nSTATUS=serving; the last reload was refused: %.200s", err);
        return;
    }
    int applied = 0, kept = 0;
    for (size_t k = 0; k < gxd_config_nkeys(); k++) {
        char was[512], now[512];
        const char *name = gxd_config_key_name(k);
        if (gxd_config_value_text(&ctx->cfg, k, was, sizeof was) < 0 ||
            gxd_config_value_text(&next, k, now, sizeof now) < 0 || strcmp(was, now) == 0)
            continue;
        size_t i = 0;
        while (i < S_NLIVE && strcmp(s_live[i].key, name) != 0)
            i++;
        if (i == S_NLIVE) {
            GXD_LOG(&ctx->log, GXD_LOG_WARN,
                    "reload: %s changed (%s -> %s) but applies only at start; restart gexecd for it",
                    name, was, now);
            kept++;
            continue;
        }
        /* an apply may set the keys that go with it (the queue's bounds):
         * they compare equal afterwards */
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "reload: %s = %s (was %s)", name, now, was);
        s_live[i].apply(ctx, &next);
        applied++;
    }
    gxd_config_fini(&next);
    s_client_keys_read(ctx);
    ctx->stats.reloads++;
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "reload done: %d key%s applied, %d kept until a restart", applied,
            applied == 1 ? "" : "s", kept);
    sd_notifyf(0, "READY=1\nSTATUS=serving; configuration reloaded (%d applied, %d need a restart)",
               applied, kept);
}
