/* Calibration of the policy's machine overheads. See calibrate.h. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/calibrate.h"
#include "daemon/exec/exec.h"

static double s_median(double *t, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
            double v = t[k];
            t[k] = t[k - 1], t[k - 1] = v;
        }
    return t[n / 2];
}

/* Median time in us of `reps` runs of plan with cfg (the caller leads). */
static double s_time_plan(gxd_ctx *ctx, gxd_team *team, const gxd_plan *plan, void *arena,
                          const gxd_par_cfg *cfg, const gx_view *in, int reps)
{
    double t[31];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    char err[256];
    if (reps > 31)
        reps = 31;
    for (int i = 0; i < reps; i++) {
        gxd_frame f;
        t[i] = 1e9;
        if (gxd_frame_init_ex(&f, plan, arena, cfg->dag, in, &ctx->limits, &stop, err,
                              sizeof err) < 0)
            continue;
        int64_t t0 = gxd_now_ns();
        gxd_exec_par(team, cfg, &f, 1, &(int){0}, err, sizeof err);
        t[i] = (double)(gxd_now_ns() - t0) / 1000.0;
        gxd_frame_fini(&f);
    }
    return s_median(t, reps);
}

/* Calibration of the team's wake-up: the leader waits for one helper. */
static void s_join_probe(void *arg, int member)
{
    atomic_int *joined = arg;
    if (member > 0) {
        atomic_fetch_add(joined, 1);
        return;
    }
    /* yield while waiting: this thread is not pinned, and the helper that
     * joins may be pinned to the core it runs on */
    int64_t until = gxd_now_ns() + 20 * 1000 * 1000;
    while (!atomic_load(joined) && gxd_now_ns() < until)
        sched_yield();
}

void gxd_calibrate(gxd_ctx *ctx, gxd_team *team, int team_max, gxd_calibration *c)
{
    enum { K = 32, N = 64 };
    memset(c, 0, sizeof *c);
    c->dispatch_us = 1.0;
    c->join_us = 20.0;
    c->copy_gbps = 5.0;
    for (int w = 2; w <= team_max; w++)
        c->sync_us[w] = 2.0 * w;
    gx_graph *g = gx_graph_new("calibrate");
    const int64_t shape[2] = {1, N};
    char names[K + 1][16];
    gxd_plan *plan = NULL;
    char err[256];
    bool ok = g && gx_graph_add_input(g, "v0", GX_F32, 2, shape) == GX_OK;
    for (int i = 0; i <= K; i++)
        snprintf(names[i], sizeof names[i], "v%d", i);
    for (int i = 0; i < K && ok; i++) {
        const char *in = names[i], *out = names[i + 1];
        ok = gx_graph_add_node(g, "Relu", NULL, 1, &in, 1, &out) != NULL;
    }
    ok = ok && gx_graph_add_output(g, names[K]) == GX_OK;
    float x[N] = {0};
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {1, N}, .numel = N, .data = x};
    void *arena = NULL;
    if (ok && gxd_compile(g, &in, &ctx->limits, &plan, err, sizeof err) == GX_OK &&
        (arena = gx_aligned_alloc(plan->arena_bytes + plan->dag_arena_bytes + GX_ALIGN))) {
        gxd_par_cfg one = {.workers = 1};
        double t1 = s_time_plan(ctx, team, plan, arena, &one, &in, 31);
        for (int w = 2; w <= team_max; w++) {
            gxd_par_cfg split = {.workers = w, .split = true, .split_min_us = 0};
            double tw = s_time_plan(ctx, team, plan, arena, &split, &in, 15);
            c->sync_us[w] = tw > t1 ? (tw - t1) / K : 0.01;
        }
        if (team_max > 1 && plan->dag_ok) {
            gxd_par_cfg dag = {.workers = team_max, .dag = true};
            double td = s_time_plan(ctx, team, plan, arena, &dag, &in, 15);
            c->dispatch_us = td > t1 ? (td - t1) / K : 0.01;
        }
    }
    free(arena);
    gxd_plan_destroy(&plan);
    gx_graph_destroy(&g);

    c->join_spin_us = c->join_us;
    if (team_max > 1) {
        double t[5], ts[5];
        for (int i = 0; i < 5; i++) {
            atomic_int joined = 0;
            /* let the workers fall asleep (past scheduler.spin_us) */
            const int64_t nap_ns = 2 * 1000 * 1000 + ctx->cfg.sched_spin_us * 1000;
            struct timespec nap = {nap_ns / 1000000000, nap_ns % 1000000000};
            nanosleep(&nap, NULL);
            int64_t t0 = gxd_now_ns();
            gxd_team_run(team, 1, s_join_probe, &joined);
            t[i] = (double)(gxd_now_ns() - t0) / 1000.0;
            /* at once again: the helper still spins, if it does */
            atomic_store(&joined, 0);
            t0 = gxd_now_ns();
            gxd_team_run(team, 1, s_join_probe, &joined);
            ts[i] = (double)(gxd_now_ns() - t0) / 1000.0;
        }
        c->join_us = s_median(t, 5);
        c->join_spin_us = s_median(ts, 5);
        if (c->join_us >= 20000)
            GXD_LOG(&ctx->log, GXD_LOG_WARN,
                    "no idle worker joined a team within 20 ms at start: teams look expensive "
                    "(%.0f us), so jobs will mostly run on one worker each", c->join_us);
    }

    size_t bytes = 8u << 20;
    char *a = malloc(bytes), *b = malloc(bytes);
    if (a && b) {
        memset(a, 1, bytes);
        memset(b, 2, bytes);
        double best = 1e9;
        for (int i = 0; i < 4; i++) {
            int64_t t0 = gxd_now_ns();
            memcpy(b, a, bytes);
            double us = (double)(gxd_now_ns() - t0) / 1000.0;
            best = us < best ? us : best;
        }
        c->copy_gbps = (double)bytes / (best * 1000.0);
    }
    free(a), free(b);
    char line[512];
    int at = snprintf(line, sizeof line, "team sync (us):");
    for (int w = 2; w <= team_max && w <= 16 && at < (int)sizeof line; w++)
        at += snprintf(line + at, sizeof line - (size_t)at, " %d:%.2f", w, c->sync_us[w]);
    GXD_LOG(&ctx->log, GXD_LOG_INFO,
            "%s; step hand-over %.2f us; waking a team %.1f us (%.1f us spinning); memory copy "
            "%.1f GB/s",
            line, c->dispatch_us, c->join_us, c->join_spin_us, c->copy_gbps);
}
