/*
 * Dynamic batching (seed 002's replica split turned around): a worker that
 * took a RUN job also takes the queued jobs like it (same model, input
 * names, dtypes and shapes, wanted outputs, priority; mode auto; each
 * one's deadline still met by the estimate), concatenates their inputs
 * along axis 0 into one job of the plan for the merged size, and splits
 * that job's outputs back, rows in the same order, into each job's reply.
 * The batch pass of the merged plan (daemon/compile/batch.c) must find
 * that every step keeps the samples apart (batch == the merged rows, no
 * sync steps), and the policy (gxd_policy_merge) must estimate the merged
 * run faster than the jobs one by one, else the jobs go back to the queue.
 *
 * These are the pieces; the job runner (daemon/runner.c) puts them
 * together, and holds the taken jobs through the queue (gxd_queue_take_like)
 * so that a cancel still reaches them.
 *
 *   if (gxd_batch_plan_ok(lead, plan, &rows)) {
 *       gxd_batch_like_arg la = {.plan = plan, .inputs = views, ...};
 *       n = gxd_queue_take_like(q, lead, gxd_batch_like, &la, jobs, max, until);
 *       gxd_batch_concat(plan, views, jobs, n, merged, bufs, ...);   // merged inputs
 *       ... run the merged plan into a carrier job ...
 *       gxd_batch_split(carrier, members, n + 1, ...);              // each job's outputs
 *   }
 */
#ifndef GXD_BATCHER_H
#define GXD_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/compile/compile.h"
#include "daemon/job.h"

/* Most jobs one merged run takes (scheduler.batch_max's maximum). */
#define GXD_BATCH_MAX 256

/* May RUN job j (its inputs bound to plan, its own plan) lead a batch?
 * Its mode is auto, every graph input declares a symbolic axis 0 (a
 * graph that fixes its batch size cannot take a merged one), the plan has
 * fixed shapes (no dynamic or control-flow steps), no keyed input, and
 * every input has an axis 0 of one size, *rows. False with why (len
 * bytes) otherwise. */
bool gxd_batch_plan_ok(const gxd_job *j, const gxd_plan *plan, int64_t *rows, char *why,
                       size_t len);

/* What gxd_batch_like compares a queued job with: the leader's plan and
 * bound input views (graph input order), its deadline bound. */
typedef struct gxd_batch_like_arg {
    const gxd_plan *plan;
    const gx_graph *graph;
    const gx_view *inputs;
    /* a job with a deadline is taken only when it is at least this far
     * off (µs): the estimate of the whole batch run */
    int64_t run_us;
} gxd_batch_like_arg;

/* gxd_queue_like_fn: queued job j goes with lead's batch (arg: a
 * gxd_batch_like_arg). Reads only j's own fields and arg; no allocation. */
bool gxd_batch_like(const gxd_job *lead, const gxd_job *j, size_t n, void *arg);

/* Job j's input views in graph input order; j was taken by gxd_batch_like
 * for a batch of a graph of n_inputs inputs (each found once by name). */
void gxd_batch_views(const gxd_job *j, const gx_graph *g, gx_view *views);

/* The merged inputs: for each graph input k, one buffer of the n jobs'
 * views[i][k] concatenated along axis 0 (job order), into merged[k] and
 * bufs[k] (gx_aligned_alloc'ed; the caller frees bufs[0..n_inputs) with
 * free, also on failure). GX_OK or GX_ENOMEM. */
int gxd_batch_concat(size_t n_inputs, const gx_view *const *views, size_t n, gx_view *merged,
                     void **bufs);

/* Job m, member i of n of the merged run that carrier ran (carrier's
 * outputs: n equal parts along axis 0), gets its part of each output (a
 * buffer of its own) and carrier's run description (mode, workers,
 * device, estimates, timings, batched = n) with reason. GX_OK, or m
 * failed (ENOMEM). */
int gxd_batch_split(const gxd_job *carrier, gxd_job *m, size_t i, size_t n, const char *reason);

#endif
