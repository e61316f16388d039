/*
 * The scheduling policy (seed 002): for one job, estimate how long each
 * parallel mode would take and pick the cheapest. Pure functions over a
 * description of the job (gxd_policy_job) and of the machine's state
 * (gxd_policy_machine), so they can be tested on synthetic cost tables.
 *
 * The estimates, in microseconds per job (w workers, W = the workers the
 * job can have now, WT = the daemon's; sync(w) = sync_us[w], 0 for w = 1;
 * every mode on one worker is total):
 *
 *   seq              total
 *   intra(w)         total - split + split / w * 1.1 + n_split * sync(w)
 *                    (each split step costs cost / w plus one sync, and its
 *                    shares repeat about 10% of the work: a product's row
 *                    blocks each pack the right operand again)
 *   inter(w)         max(critical, total / w) + n_steps * dispatch + sync(w)
 *                    (w <= width; one sync for the team's start and join)
 *   inter+intra(w)   max(crit', total / w) + n_steps * dispatch + sync(w),
 *                    crit' = critical - split_crit + split_crit / k * 1.1
 *                            + n_split_crit * sync(k):
 *                    the heavy steps on the critical path run intra-op on
 *                    the k = w / min(width, w) workers the graph's width
 *                    leaves idle (k = 1: plain inter); n_split_crit =
 *                    ceil(n_split * split_crit / split)
 *   replica          with jobs queued behind this one: each worker runs its
 *                    own job, this one on one worker; the estimate is the
 *                    amortised time per job, total / min(WT, queued + 1).
 *                    A batch split into r slices (2 <= r <= batch):
 *                    body(s) + copy(io_bytes / r) + sync(r), where
 *                    s = ceil(batch / r) / batch is the largest slice's
 *                    share, body(s) = unbatched + stream * r + (total -
 *                    unbatched - stream) * s (every slice runs the steps that
 *                    read no batched value whole; stream = copy(stream_bytes),
 *                    at most their steps' time, is the reading of large
 *                    weights, which every slice repeats over the one memory
 *                    bus) and copy(b) = b / (copy_gbps * 1000) µs.
 *                    The smaller of the two (the queue's within 3%).
 *   inter+replica    r slices each run inter-op on wi workers (w = r * wi):
 *                    max(critical * s + unbatched * (1 - s), body(s) / wi)
 *                    + n_steps * dispatch + copy(io_bytes / r) + sync(r * wi)
 *
 * Every mode on w > 1 workers also pays join_us once, for waking the idle
 * workers that form its team.
 *
 * Every estimate is in one unit, µs per job: the modes other than a queued
 * replica hold their workers for this job, so their time per job is their
 * estimate. For each mode the team (w, or r and wi) minimising its estimate
 * is taken, the fewest workers within 3% of that minimum; a team mode takes
 * at least 2 workers where the job gives it something to spread (intra:
 * n_split > 0; inter: width > 1; inter+intra: either; a split: batch >= 2;
 * inter+replica: slices with inter inside, failing that a plain split, then
 * inter on one copy), else it runs on one worker at total (so with W = 1
 * every mode is seq; intra with n_split = 0 is applicable at total).
 * Applicable: replica only with jobs queued or a batch that may be split;
 * inter+replica only with a batch that may be split (batch > 0 and no sync
 * steps); the others always. `dynamic` does not enter the estimates (the
 * caller's costs for dynamic steps are whatever it measured or guessed).
 *
 * Seed 002's rules are the filter on the candidates, the estimates choose
 * among those that remain:
 *   1. independent jobs (others queued) -> replicas: a queued replica (one
 *      worker per job) becomes a candidate;
 *   2. a graph with synchronous (batch-coupling) nodes -> no replica split:
 *      the candidates are the inter+intra family (seq, intra, inter,
 *      inter+intra), plus rule 1's queued replica;
 *   3. otherwise, with a batch -> inter + replicas: the splits (replica,
 *      inter+replica) join the candidates.
 * Auto takes the smallest estimate among the candidates; one within 3% of
 * it with fewer workers wins instead, and the reason says so. A requested mode is honoured with
 * the team above (the estimates are reported either way, and the reason
 * names auto's choice); a split the job does not allow (no batch, or sync
 * steps) runs as one copy: replica on one worker, inter+replica as inter.
 *
 * What earlier jobs measured (profile-guided choice): the model above
 * misses what a start-up calibration cannot see (team wake-ups and
 * barriers slower under load or in a virtual machine, shares that do not
 * scale with the cores' shared cache and memory bus). Each job of a plan
 * records the compute time it took over the model's estimate for the
 * configuration it ran in (gxd_policy_seen_put: per mode, kept with the
 * plan, following the median of jobs that scatter); the next jobs'
 * estimates of that mode are the model's times that ratio
 * (gxd_policy_job.seen). A job on one worker (seq, a queued replica, a
 * team mode left with one worker) counts for seq, whose ratio every
 * one-worker configuration takes. A team's ratio is kept twice, for jobs
 * that found their helpers spinning (hot) and for jobs that had to wake
 * them (cold): the model's join costs are start-up measurements, and on a
 * loaded or virtual machine a team often runs faster cold and slower hot
 * than they say; one entry for both swung between the two and kept auto
 * off a team that beat one worker either way. An entry not
 * renewed for GXD_SEEN_STALE runs of the plan is forgotten, so a mode that
 * ran slowly once is tried again now and then.
 */
#ifndef GXD_POLICY_H
#define GXD_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gexec/client.h"

/* Most workers one job may use (and entries in the sync table). */
#define GXD_MAX_TEAM 256

/* A constant this large is read from memory, not a core's cache: each
 * slice of a batch split reads it again (stream_bytes). */
#define GXD_STREAM_MIN_BYTES ((size_t)4 << 20)

/* What the policy knows of one job's plan. Costs in microseconds: measured
 * per-step times from earlier runs where present, else the schema's FLOP
 * and byte estimates converted with the machine's rates. */
typedef struct gxd_policy_job {
    double total_us;      /* Σ step costs: the sequential time */
    double critical_us;   /* longest dependency path through the steps */
    double split_us;      /* part of total_us in steps intra-op may split */
    double split_crit_us; /* part of critical_us in such steps */
    size_t n_steps;       /* steps that run (folded ones excluded) */
    size_t n_split;       /* steps intra-op would split */
    int width;            /* most steps that can run at once */
    long long batch;      /* > 0: axis-0 size the job may be cut along */
    size_t sync_steps;    /* steps that mix samples (seed 002 sync nodes) */
    double io_bytes;      /* bytes of the job's inputs and outputs (a split copies them) */
    double unbatched_us;  /* part of total_us in steps that read no batched value:
                           * every slice of a split runs them whole */
    double stream_bytes;  /* constants above GXD_STREAM_MIN_BYTES read by steps on
                           * the batch: every slice of a split reads them again,
                           * all slices at once from the same memory */
    bool dynamic;         /* has dynamic or control-flow steps */
    /* measured over modelled time of earlier jobs, per mode (see above;
     * <= 0: none): every estimate of the mode is multiplied by it */
    double seen[GX_MODE_COUNT];
} gxd_policy_job;

/* The machine right now, and its measured overheads. */
typedef struct gxd_policy_machine {
    int workers;       /* workers this job can use now, the caller included (>= 1) */
    int workers_total; /* workers the daemon owns */
    size_t queued;     /* jobs waiting in the queue */
    /* sync_us[w]: one synchronisation of a team of w workers (post work,
     * every member finishes, the leader sees it), measured at start;
     * sync_us[1] = 0. At least min(workers_total, GXD_MAX_TEAM) + 1 entries;
     * entries beyond workers_total are unused. NULL: syncs cost nothing. */
    const double *sync_us;
    double dispatch_us; /* handing one ready step to another worker */
    double join_us;     /* forming a team: waking idle workers, once per job */
    double copy_gbps;   /* memory copy rate, for the slices of a split (<= 0: not charged) */
    bool hot;           /* the helpers are spinning (join_us is the spinning join): the
                         * job's seen ratios are those of hot teams (explain says so) */
} gxd_policy_machine;

typedef struct gxd_policy_choice {
    gx_mode mode;
    /* Workers the job runs on, all replicas together (1 for seq and queued
     * replicas); never more than machine->workers. Each replica gets
     * workers / replicas (an exact division). */
    int workers;
    int replicas; /* copies of the graph (slices of the batch, <= batch); 1: no split */
    /* Estimated time per mode in µs per job (see above; GX_MODE_AUTO: -1);
     * < 0 where the mode does not apply to this job. */
    double est_us[GX_MODE_COUNT];
    /* the model's estimate of the configuration chosen, before the seen
     * ratio: what gxd_policy_seen_put compares the job's time with */
    double model_us;
    char reason[160];
} gxd_policy_choice;

/* Estimate every mode for the job on the machine and choose. requested:
 * GX_MODE_AUTO (or anything out of range), or a mode the client asked for
 * (then it is used, with its best team as above, even if another would be
 * cheaper; a replica split needs job->batch > 0 and no sync steps, else
 * requested replicas run as one copy). reason: one line, the rules that
 * applied and the numbers that decided. Never fails. */
void gxd_policy_choose(const gxd_policy_job *job, const gxd_policy_machine *m, gx_mode requested,
                       gxd_policy_choice *out);

/* Runs of a plan after which a seen entry not renewed is forgotten. */
#define GXD_SEEN_STALE 256

/* Words of a plan's seen record (gxd_plan.seen): per mode, cold teams'
 * (and seq's) entries, then hot teams'. */
#define GXD_SEEN_WORDS (2 * GX_MODE_COUNT)

/* The seen ratios of a plan (its GXD_SEEN_WORDS words) at its run count
 * `runs`, for a job whose helpers are spinning or not (hot), into
 * job->seen. Without locks: each word holds one entry whole. */
void gxd_policy_seen_get(const _Atomic uint64_t *words, uint64_t runs, bool hot,
                         gxd_policy_job *job);

/* A job of the plan ran as choice said (on `workers` workers; its helpers
 * were spinning when it started: hot) and took took_us of compute: update
 * the entry of its mode (seq for one worker, hot or not). A lost update
 * between two jobs finishing at once is harmless. */
void gxd_policy_seen_put(_Atomic uint64_t *words, uint64_t runs, bool hot,
                         const gxd_policy_choice *choice, int workers, double took_us);

/* Dynamic batching (daemon/batcher.h): n jobs of one plan (one), or one
 * job of the plan for their inputs concatenated along axis 0 (merged)?
 * With w = min(n, workers) workers free for them now:
 *
 *   apart    ceil(n / w) * total(one)    (each job on a worker of its own,
 *                                          as queued replicas run them)
 *   merged   the estimate of the mode gxd_policy_choose picks for merged
 *            on the same machine (queued = 0: the others are in the batch)
 *
 * Merge when merged < apart. Both descriptions must use the same kind of
 * costs (measured or estimated) to be compared. Fills apart_us,
 * merged_us, the merged job's choice and reason; never fails. */
typedef struct gxd_policy_merge_choice {
    bool merge;
    double apart_us, merged_us; /* the time of all n jobs, either way */
    gxd_policy_choice run;      /* how the merged job would run */
    char reason[160];
} gxd_policy_merge_choice;

void gxd_policy_merge(const gxd_policy_job *one, const gxd_policy_job *merged, int n,
                      const gxd_policy_machine *m, gxd_policy_merge_choice *out);

#endif
