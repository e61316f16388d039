/* The scheduling policy (seed 002). See policy.h for the estimates and the
 * rules; this file keeps the formulas there and here in step. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/policy.h"

/* Estimates within this fraction of the best count as equal when the
 * other configuration needs fewer workers: it wins, leaving workers free. */
#define S_TOL 0.03

/* The job and machine with every field made usable: costs finite and >= 0,
 * critical <= total, team sizes within the sync table. */
typedef struct s_job {
    double total, crit, split, split_crit;
    size_t n_steps, n_split, n_split_crit;
    int width;
    long long batch;
    bool can_split; /* batch >= 1 and no sync step: a replica split is allowed */
    double io_bytes;
    double unbatched;
    double stream_bytes;
    int W;  /* workers for this job (1..GXD_MAX_TEAM) */
    int WT; /* workers of the daemon (>= W) */
    size_t queued;
    const double *seen; /* gxd_policy_job.seen */
    const gxd_policy_machine *m;
} s_job;

/* One way to run a mode: r copies (slices) of wi workers each. */
typedef struct s_cfg {
    bool ok; /* the mode applies */
    double us;
    double model; /* the model's time of the job as it runs, before seen
                   * (a queued replica: on its one worker, not amortised) */
    int replicas, per; /* r, wi */
    bool queued;       /* replica: this job on one worker, the queue on the others */
} s_cfg;

static double s_pos(double x)
{
    return x > 0 && isfinite(x) ? x : 0; /* NaN and negatives count as 0 */
}

static int s_min(long long a, long long b)
{
    return (int)(a < b ? a : b);
}

static double s_sync(const s_job *j, int w)
{
    if (w <= 1 || !j->m->sync_us)
        return 0;
    return s_pos(j->m->sync_us[w]);
}

/* Microseconds to copy bytes at gbps (1 GB/s = 1000 bytes per µs); 0 when
 * the rate is unknown. */
static double s_copy_us(double bytes, double gbps)
{
    return gbps > 0 && isfinite(gbps) ? bytes / (gbps * 1e3) : 0;
}

static void s_normalise(const gxd_policy_job *job, const gxd_policy_machine *m, s_job *j)
{
    memset(j, 0, sizeof *j);
    j->m = m;
    j->total = s_pos(job->total_us);
    j->crit = fmin(s_pos(job->critical_us), j->total);
    j->split = fmin(s_pos(job->split_us), j->total);
    j->split_crit = fmin(s_pos(job->split_crit_us), fmin(j->split, j->crit));
    j->n_steps = job->n_steps;
    j->n_split = job->n_split <= job->n_steps ? job->n_split : job->n_steps;
    /* Split steps on the critical path, in proportion of their cost. */
    if (j->n_split > 0 && j->split > 0) {
        double n = ceil((double)j->n_split * j->split_crit / j->split);
        j->n_split_crit = n < (double)j->n_split ? (size_t)n : j->n_split;
    }
    j->width = job->width >= 1 ? job->width : 1;
    j->batch = job->batch > 0 ? job->batch : 0;
    j->can_split = j->batch > 0 && job->sync_steps == 0;
    j->io_bytes = s_pos(job->io_bytes);
    j->unbatched = fmin(s_pos(job->unbatched_us), j->total);
    j->stream_bytes = s_pos(job->stream_bytes);
    j->W = m->workers >= 1 ? s_min(m->workers, GXD_MAX_TEAM) : 1;
    if (m->workers_total >= 1 && m->workers_total < j->W)
        j->W = m->workers_total;
    j->WT = m->workers_total > j->W ? s_min(m->workers_total, GXD_MAX_TEAM) : j->W;
    j->queued = m->queued;
    j->seen = job->seen;
}

/* The seen ratio of mode on w workers: seq's for one worker; 1 if none. */
static double s_seen(const s_job *j, gx_mode mode, int w)
{
    double r = j->seen[w <= 1 ? GX_MODE_SEQ : mode];
    return r > 0 && isfinite(r) ? r : 1;
}

/* Work split into w shares: each share repeats part of the set-up (a
 * product's row blocks each pack the whole right operand again, smaller
 * blocks run less efficiently), so a split step costs S_SPLIT_LOSS more
 * than cost / w. */
#define S_SPLIT_LOSS 0.10
#define S_SPLIT(cost, w) ((w) > 1 ? (cost) / (w) * (1 + S_SPLIT_LOSS) : (cost))

/* The estimate of mode on r slices of wi workers each (policy.h's
 * formulas), without forming the team; r * wi == 1 is the sequential time
 * for every mode. */
static double s_estimate_run(const s_job *j, gx_mode mode, int r, int wi)
{
    const gxd_policy_machine *m = j->m;
    int w = r * wi;
    if (w <= 1)
        return j->total;
    double disp = (double)j->n_steps * s_pos(m->dispatch_us);
    switch (mode) {
    case GX_MODE_INTRA:
        return j->total - j->split + S_SPLIT(j->split, w) + (double)j->n_split * s_sync(j, w);
    case GX_MODE_INTER:
        return fmax(j->crit, j->total / w) + disp + s_sync(j, w);
    case GX_MODE_INTER_INTRA: {
        /* The idle workers of a narrow graph help the heavy steps on the
         * critical path: k per step. */
        int k = w / (j->width < w ? j->width : w);
        double crit = j->crit - j->split_crit + S_SPLIT(j->split_crit, k) +
                      (double)j->n_split_crit * s_sync(j, k);
        return fmax(crit, j->total / w) + disp + s_sync(j, w);
    }
    case GX_MODE_REPLICA:
    case GX_MODE_INTER_REPLICA: {
        /* The largest slice sets the time: ceil(batch / r) samples. */
        double share = 1, copy = 0;
        if (r > 1) {
            share = ceil((double)j->batch / r) / (double)j->batch;
            copy = s_copy_us(j->io_bytes / r, m->copy_gbps);
        }
        /* every slice reads the large weights again, over the one bus */
        const double stream = r > 1 ? fmin(s_copy_us(j->stream_bytes, m->copy_gbps),
                                           j->total - j->unbatched)
                                    : 0;
        double body = j->unbatched + stream * r + (j->total - j->unbatched - stream) * share;
        if (wi > 1)
            body = fmax(j->crit * share + j->unbatched * (1 - share), body / wi) + disp;
        return body + copy + s_sync(j, w);
    }
    case GX_MODE_AUTO:
    case GX_MODE_SEQ:
    case GX_MODE_COUNT:
        break;
    }
    return j->total;
}

/* The model's estimate with the team formed: waking r * wi - 1 idle
 * workers. */
static double s_model(const s_job *j, gx_mode mode, int r, int wi)
{
    double join = r * wi > 1 ? s_pos(j->m->join_us) : 0;
    return s_estimate_run(j, mode, r, wi) + join;
}

/* The estimate: the model's, corrected by what earlier jobs measured. */
static double s_estimate(const s_job *j, gx_mode mode, int r, int wi)
{
    return s_model(j, mode, r, wi) * s_seen(j, mode, r * wi);
}

/* Two configurations' order when their estimates are within S_TOL: fewer
 * workers first. */
static bool s_fewer(const s_cfg *a, const s_cfg *b)
{
    return a->replicas * a->per < b->replicas * b->per;
}

/* The best configuration of mode with r in [r_lo, r_hi] and wi in
 * [wi_lo, min(wi_hi, W / r)]: the fewest workers whose estimate is within
 * S_TOL of the smallest. False if the ranges are empty. */
static bool s_best(const s_job *j, gx_mode mode, int r_lo, int r_hi, int wi_lo, int wi_hi,
                   s_cfg *out)
{
    double best = INFINITY;
    for (int r = r_lo; r <= r_hi; r++)
        for (int wi = wi_lo; wi <= wi_hi && r * wi <= j->W; wi++)
            best = fmin(best, s_estimate(j, mode, r, wi));
    if (best == INFINITY)
        return false;
    s_cfg pick = {.ok = false};
    for (int r = r_lo; r <= r_hi; r++)
        for (int wi = wi_lo; wi <= wi_hi && r * wi <= j->W; wi++) {
            s_cfg c = {.ok = true,
                       .us = s_estimate(j, mode, r, wi),
                       .model = s_model(j, mode, r, wi),
                       .replicas = r,
                       .per = wi};
            if (c.us > best * (1 + S_TOL))
                continue;
            if (!pick.ok || s_fewer(&c, &pick) || (!s_fewer(&pick, &c) && c.us < pick.us))
                pick = c;
        }
    *out = pick;
    return true;
}

/* The configuration each mode runs in, and its estimate (ok false: the mode
 * does not apply). Team modes use at least 2 workers where the job has
 * something for them and the machine has them; else they run on one worker
 * at the sequential time. */
static s_cfg s_mode(const s_job *j, gx_mode mode)
{
    const s_cfg one = {.ok = true,
                       .us = j->total * s_seen(j, GX_MODE_SEQ, 1),
                       .model = j->total,
                       .replicas = 1,
                       .per = 1};
    s_cfg c = one;
    int W = j->W;
    int rmax = j->can_split ? s_min(W, j->batch) : 1;
    switch (mode) {
    case GX_MODE_SEQ:
        return c;
    case GX_MODE_INTRA:
        if (j->n_split > 0)
            s_best(j, mode, 1, 1, 2, W, &c);
        return c;
    case GX_MODE_INTER:
        s_best(j, mode, 1, 1, 2, s_min(W, j->width), &c);
        return c;
    case GX_MODE_INTER_INTRA:
        if (j->width > 1 || j->n_split > 0)
            s_best(j, mode, 1, 1, 2, W, &c);
        return c;
    case GX_MODE_REPLICA: {
        if (!j->can_split && j->queued == 0)
            return (s_cfg){.ok = false, .us = -1, .replicas = 1, .per = 1};
        if (j->can_split)
            s_best(j, mode, 2, rmax, 1, 1, &c);
        if (j->queued > 0) {
            /* Each job on its own worker: time per job, amortised. */
            size_t n = j->queued < (size_t)j->WT ? j->queued + 1 : (size_t)j->WT;
            s_cfg q = one;
            q.us /= (double)n;
            q.queued = true;
            if (c.replicas == 1 || q.us <= c.us * (1 + S_TOL))
                c = q;
        }
        return c;
    }
    case GX_MODE_INTER_REPLICA:
        if (!j->can_split)
            return (s_cfg){.ok = false, .us = -1, .replicas = 1, .per = 1};
        /* Slices with inter inside; failing that a plain split, then inter
         * on one copy, then one worker. */
        if (!s_best(j, mode, 2, rmax, 2, j->width, &c) && !s_best(j, mode, 2, rmax, 1, 1, &c))
            s_best(j, mode, 1, 1, 2, s_min(W, j->width), &c);
        return c;
    case GX_MODE_AUTO:
    case GX_MODE_COUNT:
        break;
    }
    return c;
}

/* ---- the reason line ----
 * Written on every RUN (and again for a team hint or a batch), so with
 * appends rather than printf, whose float conversion alone took most of
 * a choice's 2.7 us. A line too long is cut at len - 1 bytes. */

typedef struct s_line {
    char *buf;
    size_t len, n;
} s_line;

static s_line s_line_in(char *buf, size_t len)
{
    buf[0] = '\0';
    return (s_line){.buf = buf, .len = len};
}

static void s_put(s_line *l, const char *s)
{
    size_t k = strlen(s);
    if (l->n + k >= l->len)
        k = l->len - 1 - l->n;
    memcpy(l->buf + l->n, s, k);
    l->n += k;
    l->buf[l->n] = '\0';
}

/* v with d decimals (0 to 2), as printf's "%.*f" but rounded half away
 * from zero (the line is read by people, not parsed back). */
static void s_put_num(s_line *l, double v, int d)
{
    char t[48];
    if (!(fabs(v) < 1e15)) { /* inf, nan, or past what the digits below take */
        snprintf(t, sizeof t, "%.*f", d, v);
        s_put(l, t);
        return;
    }
    long long q = llround(fabs(v) * (d == 2 ? 100 : d == 1 ? 10 : 1));
    char *p = t + sizeof t;
    *--p = '\0';
    for (int i = 0; i < d; i++, q /= 10)
        *--p = (char)('0' + q % 10);
    if (d > 0)
        *--p = '.';
    do
        *--p = (char)('0' + q % 10);
    while ((q /= 10) > 0);
    if (v < 0)
        *--p = '-';
    s_put(l, p);
}

/* "1.52", "42.3", "1200": an estimate. */
static void s_put_us(s_line *l, double us)
{
    s_put_num(l, us, us < 10 ? 2 : us < 100 ? 1 : 0);
}

/* "intra(4)", "replica 4 slices", "inter+replica 2x4": mode and team. */
static void s_put_label(s_line *l, gx_mode mode, const s_cfg *c)
{
    switch (mode) {
    case GX_MODE_INTRA:
    case GX_MODE_INTER:
    case GX_MODE_INTER_INTRA:
        s_put(l, gx_mode_name(mode));
        s_put(l, "(");
        s_put_num(l, c->per, 0);
        s_put(l, ")");
        break;
    case GX_MODE_REPLICA:
        if (c->queued) {
            s_put(l, "replica 1 worker/job");
            break;
        }
        s_put(l, "replica ");
        s_put_num(l, c->replicas, 0);
        s_put(l, c->replicas > 1 ? " slices" : " slice");
        break;
    case GX_MODE_INTER_REPLICA:
        s_put(l, "inter+replica ");
        s_put_num(l, c->replicas, 0);
        s_put(l, "x");
        s_put_num(l, c->per, 0);
        break;
    case GX_MODE_AUTO:
    case GX_MODE_SEQ:
    case GX_MODE_COUNT:
        s_put(l, gx_mode_name(mode));
        break;
    }
}

/* " intra(2) 1.52us": a mode and its estimate, after a space. */
static void s_put_est(s_line *l, gx_mode mode, const s_cfg *c, const char *unit)
{
    s_put(l, " ");
    s_put_label(l, mode, c);
    s_put(l, " ");
    s_put_us(l, c->us);
    s_put(l, unit);
}

/* "rule 1 (12 queued), rule 3 (batch 32)": the seed 002 rules that apply. */
static void s_put_rules(s_line *l, const gxd_policy_job *job, const s_job *j)
{
    const size_t n0 = l->n;
    if (j->queued > 0) {
        s_put(l, "rule 1 (");
        s_put_num(l, (double)j->queued, 0);
        s_put(l, " queued)");
    }
    if (job->sync_steps > 0 || j->batch > 0) {
        if (l->n > n0)
            s_put(l, ", ");
        if (job->sync_steps > 0) {
            s_put(l, "rule 2 (");
            s_put_num(l, (double)job->sync_steps, 0);
            s_put(l, " sync steps, no split)");
        } else {
            s_put(l, "rule 3 (batch ");
            s_put_num(l, (double)j->batch, 0);
            s_put(l, ")");
        }
    }
    if (l->n == n0)
        s_put(l, "no queue, no batch");
}

/* "; measured/model seq 1.02 intra 1.74": the seen ratios in use, and
 * " (helpers spinning)" when they are the hot set. */
static void s_put_seen(s_line *l, const s_job *j)
{
    bool any = false;
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
        if (!(j->seen[k] > 0) || !isfinite(j->seen[k]))
            continue;
        s_put(l, any ? " " : "; measured/model ");
        s_put(l, gx_mode_name((gx_mode)k));
        s_put(l, " ");
        s_put_num(l, j->seen[k], 2);
        any = true;
    }
    if (any && j->m->hot)
        s_put(l, " (helpers spinning)");
}

/* The mode auto picks among the applicable ones (the rules' filter): the
 * smallest estimate, or within S_TOL of it one on fewer workers (on as
 * many workers, the smaller estimate; the earlier mode on a tie). */
static gx_mode s_auto(const s_cfg cfg[GX_MODE_COUNT], gx_mode *best_out)
{
    gx_mode best = GX_MODE_SEQ;
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++)
        if (cfg[k].ok && cfg[k].us < cfg[best].us)
            best = (gx_mode)k;
    gx_mode pick = best;
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
        if (!cfg[k].ok || cfg[k].us > cfg[best].us * (1 + S_TOL))
            continue;
        if (s_fewer(&cfg[k], &cfg[pick]) ||
            (!s_fewer(&cfg[pick], &cfg[k]) && cfg[k].us < cfg[pick].us))
            pick = (gx_mode)k;
    }
    *best_out = best;
    return pick;
}

void gxd_policy_choose(const gxd_policy_job *job, const gxd_policy_machine *m, gx_mode requested,
                       gxd_policy_choice *out)
{
    s_job j;
    s_normalise(job, m, &j);
    s_cfg cfg[GX_MODE_COUNT];
    memset(out, 0, sizeof *out);
    cfg[GX_MODE_AUTO] = (s_cfg){.ok = false, .us = -1, .replicas = 1, .per = 1};
    out->est_us[GX_MODE_AUTO] = -1;
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
        cfg[k] = s_mode(&j, (gx_mode)k);
        out->est_us[k] = cfg[k].ok ? cfg[k].us : -1;
    }

    gx_mode best;
    gx_mode pick = s_auto(cfg, &best);
    const char *unit = j.queued > 0 ? "us/job" : "us";
    s_line l = s_line_in(out->reason, sizeof out->reason);

    if (requested <= GX_MODE_AUTO || requested >= GX_MODE_COUNT) {
        out->mode = pick;
        const s_cfg *c = &cfg[pick];
        s_put_rules(&l, job, &j);
        s_put(&l, ":");
        s_put_est(&l, pick, c, unit);
        if (pick != best) {
            s_put(&l, ", within 3% of");
            s_put_est(&l, best, &cfg[best], unit);
            s_put(&l, ": fewer workers");
        } else {
            /* The runner-up: the next smallest estimate among the others,
             * skipping those that run as the pick does (a team mode on one
             * worker is seq). */
            int next = -1;
            for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
                if (k == (int)pick || !cfg[k].ok || (cfg[k].us == c->us && !s_fewer(c, &cfg[k]) &&
                                                     !s_fewer(&cfg[k], c)))
                    continue;
                if (next < 0 || cfg[k].us < cfg[next].us)
                    next = k;
            }
            if (next >= 0) {
                s_put(&l, " vs");
                s_put_est(&l, (gx_mode)next, &cfg[next], unit);
            }
        }
    } else {
        out->mode = requested;
        s_cfg c = cfg[requested];
        s_put(&l, "requested ");
        s_put(&l, gx_mode_name(requested));
        s_put(&l, ":");
        if (!c.ok) {
            /* A split the job does not allow: one copy (inter inside for
             * inter+replica, as inter would run). */
            if (job->sync_steps > 0 && j.batch > 0) {
                s_put(&l, " ");
                s_put_num(&l, (double)job->sync_steps, 0);
                s_put(&l, " sync steps couple the batch, no split");
            } else {
                s_put(&l, j.queued > 0 ? " no batch to split" : " no batch to split, no queue");
            }
            c = requested == GX_MODE_INTER_REPLICA ? cfg[GX_MODE_INTER] : cfg[GX_MODE_SEQ];
            s_put(&l, "; 1 copy on ");
            s_put_num(&l, c.per, 0);
            s_put(&l, c.per > 1 ? " workers: " : " worker: ");
            s_put_us(&l, c.us);
            s_put(&l, unit);
            s_put(&l, " (auto: ");
            s_put_label(&l, pick, &cfg[pick]);
            s_put(&l, ")");
        } else {
            s_put_est(&l, requested, &c, unit);
            s_put(&l, " (auto:");
            s_put_est(&l, pick, &cfg[pick], unit);
            s_put(&l, ")");
        }
        out->workers = c.replicas * c.per;
        out->replicas = c.replicas;
        out->model_us = c.model;
        s_put_seen(&l, &j);
        return;
    }
    out->workers = cfg[pick].replicas * cfg[pick].per;
    out->replicas = cfg[pick].replicas;
    out->model_us = cfg[pick].model;
    s_put_seen(&l, &j);
}

/* A seen entry: the ratio's float bits, then the plan's run count when it
 * was last renewed. */
static uint64_t s_seen_pack(double ratio, uint64_t runs)
{
    float f = (float)ratio;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (uint64_t)bits << 32 | (uint32_t)runs;
}

static double s_seen_unpack(uint64_t w, uint64_t runs)
{
    if (!w || (uint32_t)((uint32_t)runs - (uint32_t)w) > GXD_SEEN_STALE)
        return 0;
    uint32_t bits = (uint32_t)(w >> 32);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The word of mode k's entry: seq's is one for hot and cold (one worker
 * has no helpers). */
static int s_seen_word(gx_mode k, bool hot)
{
    return hot && k != GX_MODE_SEQ ? GX_MODE_COUNT + (int)k : (int)k;
}

void gxd_policy_seen_get(const _Atomic uint64_t *words, uint64_t runs, bool hot,
                         gxd_policy_job *job)
{
    for (int k = 0; k < GX_MODE_COUNT; k++)
        job->seen[k] = s_seen_unpack(
            atomic_load_explicit(&words[s_seen_word((gx_mode)k, hot)], memory_order_relaxed),
            runs);
}

/* A job's ratio counts within these bounds (a job stopped early, a
 * preempted worker). */
#define S_SEEN_MIN (1.0 / 16)
#define S_SEEN_MAX 16.0
/* The most one job moves an entry, as a factor either way. */
#define S_SEEN_STEP 1.125

void gxd_policy_seen_put(_Atomic uint64_t *words, uint64_t runs, bool hot,
                         const gxd_policy_choice *choice, int workers, double took_us)
{
    if (!(choice->model_us > 0) || !(took_us > 0) || !isfinite(took_us))
        return;
    gx_mode k = workers <= 1 ? GX_MODE_SEQ : choice->mode;
    if (k <= GX_MODE_AUTO || k >= GX_MODE_COUNT)
        return;
    double r = fmin(fmax(took_us / choice->model_us, S_SEEN_MIN), S_SEEN_MAX);
    _Atomic uint64_t *w = &words[s_seen_word(k, hot)];
    double old = s_seen_unpack(atomic_load_explicit(w, memory_order_relaxed), runs);
    /* halfway to r (the geometric mean), by S_SEEN_STEP at most: where
     * jobs scatter more widely than that (a preempted worker; a team that
     * is fast only when its helpers happen to be up), the entry follows
     * their median, not their best or their worst, and auto compares the
     * modes' typical times */
    if (old > 0)
        r = old * fmin(fmax(sqrt(r / old), 1 / S_SEEN_STEP), S_SEEN_STEP);
    atomic_store_explicit(w, s_seen_pack(r, runs), memory_order_relaxed);
}

void gxd_policy_merge(const gxd_policy_job *one, const gxd_policy_job *merged, int n,
                      const gxd_policy_machine *m, gxd_policy_merge_choice *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        n = 1;
    int w = m->workers >= 1 ? m->workers : 1;
    if (w > n)
        w = n;
    out->apart_us = ceil((double)n / w) * s_pos(one->total_us);
    gxd_policy_machine mm = *m;
    mm.queued = 0;
    gxd_policy_choose(merged, &mm, GX_MODE_AUTO, &out->run);
    out->merged_us = s_pos(out->run.est_us[out->run.mode]);
    out->merge = n > 1 && out->merged_us < out->apart_us;
    s_line l = s_line_in(out->reason, sizeof out->reason);
    s_put(&l, out->merge ? "batched " : "not batched ");
    s_put_num(&l, n, 0);
    s_put(&l, " jobs: ");
    s_put(&l, gx_mode_name(out->run.mode));
    s_put(&l, " ");
    s_put_us(&l, out->merged_us);
    s_put(&l, "us vs ");
    s_put_num(&l, n, 0);
    s_put(&l, " apart on ");
    s_put_num(&l, w, 0);
    s_put(&l, w > 1 ? " workers " : " worker ");
    s_put_us(&l, out->apart_us);
    s_put(&l, "us");
}
