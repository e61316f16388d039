/*
 * The best-implementation registry (seed 003, docs/tune.md): for each op
 * signature, the implementation measured fastest on this kind of machine,
 * remembered on disk and shared by every plan that meets the signature.
 *
 *   gxd_tune_opts o = {.mode = GXD_TUNE_EXPLORE, .dir = "/var/lib/gexec",
 *                      .budget_ms = 200, .log = &ctx->log};
 *   gxd_tune *t = gxd_tune_new(&o, err, sizeof err);    // opens dir/tune.db
 *   gxd_tune_set_idle(t, my_idle, ctx);                // when may it measure?
 *   gxd_tune_explore_start(t);                         // the explorer thread
 *   ...  // the compiler's prepare pass: gxd_tune_lookup_batch(t, sigs, n, recs)
 *   gxd_tune_destroy(&t);
 *
 * Key: op, dtypes, shapes, attributes, layout (gxd_tune_sig, written as a
 * canonical text) and the device model (CPU model name and the ISAs the
 * kernels have on it). A record holds, per candidate measured, its name,
 * version, build id (gexec's version, OpenBLAS's version and core,
 * oneDNN's version: gxd_tune_impl.build) and time; a lookup finds it only
 * while the winner's build id is the one this daemon has (another library
 * build, or another CPU, is never used), and a candidate the record does
 * not hold (added, or rebuilt, since) is measured later, additively, on
 * idle time, while the stored winner keeps running.
 *
 * Lookup, one batch per plan: the in-memory cache (bounded), then the local
 * SQLite database tune.db (bounded in rows; a file that is not a valid
 * database is moved aside, logged, and a new one made), which also
 * prefetches the records of the same products at other batch sizes (the
 * signature's family) into the cache, then (opts.upstream) the site's
 * central PostgreSQL registry, asked only while its thread holds a
 * connection (daemon/tune/upstream.c; its records are copied into
 * tune.db and the cache, winners are sent to it, the faster kept). A
 * miss returns
 * nothing: the caller compiles with the default at once, and (mode
 * explore) the signature goes to the collection queue; the explorer thread
 * admits queued signatures into its exploration queue by how often they
 * were met (priority), and measures one only while the daemon is idle (no
 * job queued or running: gxd_tune_set_idle), every candidate on the real
 * shapes with fixed inputs, each output checked against a float64
 * reference (a candidate that differs is rejected, the reason stored),
 * timed by the median of several runs, within tune.budget_ms per
 * signature. The fastest valid one is stored in both levels.
 *
 * Thread safety: every function may be called from any thread (the
 * compiler runs on workers and the re-planner); one mutex guards the cache
 * and the database, another the queues.
 */
#ifndef GXD_TUNE_H
#define GXD_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/log.h"
#include "ops/op.h"

typedef enum gxd_tune_mode {
    GXD_TUNE_OFF,     /* no lookups: every step runs the default */
    GXD_TUNE_CACHE,   /* lookups only: records measured earlier are used */
    GXD_TUNE_EXPLORE, /* lookups, and misses are measured on idle time */
} gxd_tune_mode;

/* "off", "cache", "explore"; GX_OK or GX_EINVAL. */
int gxd_tune_mode_parse(const char *s, gxd_tune_mode *out);
const char *gxd_tune_mode_name(gxd_tune_mode m);

/* A step the registry tunes (docs/tune.md "Tuned ops"), plain layout:
 * - a float32 MatMul or Gemm whose B is a constant 2-D matrix (ops/gemm.h's
 *   packable steps). A's leading dims are rows: y[m, n] = a[m, k] · op(b);
 * - a float32 Conv in the plain layout (NCHW and its 1-D/3-D kin) whose x
 *   and y the layout pass left plain: x [N, C, in...], W [M, C/group,
 *   k...], the geometry resolved (auto_pad applied). */
typedef struct gxd_tune_sig {
    gx_op op; /* GX_OP_MATMUL, GX_OP_GEMM or GX_OP_CONV */
    int a_ndim;
    int64_t a_shape[GX_MAX_DIMS];
    int64_t m, k, n;
    /* Gemm only */
    bool trans_b;
    float alpha, beta;
    int c_ndim; /* -1: no C */
    int64_t c_shape[2];
    /* Conv only: x's shape in a_shape (a_ndim = 2 + nsp), W's in w_shape */
    struct {
        int nsp;
        int64_t w_shape[GX_MAX_DIMS];
        int64_t group;
        int64_t stride[GX_MAX_DIMS - 2], dil[GX_MAX_DIMS - 2];
        int64_t pad_lo[GX_MAX_DIMS - 2], pad_hi[GX_MAX_DIMS - 2], out[GX_MAX_DIMS - 2];
        bool bias;
    } conv;
} gxd_tune_sig;

/* The sig of step (op, attr, inputs in[0..n_in), output y) or false when
 * the registry does not tune it (why says why). */
bool gxd_tune_sig_of(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                     const gx_view *y, gxd_tune_sig *sig, char *why, size_t whylen);

/* The canonical text of sig's part of the key ("MatMul f32 a[8,64] b[64,32]
 * y[8,32] plain"). */
void gxd_tune_sig_str(const gxd_tune_sig *sig, char *buf, size_t len);

/* The family of sig: its text without A's and Y's shapes (the rows), so
 * the same product at other batch sizes shares it ("MatMul f32 b[64,32]
 * plain"); the registry prefetches a family's records together. */
void gxd_tune_sig_family_str(const gxd_tune_sig *sig, char *buf, size_t len);

/* ---- implementations (candidates) ------------------------------------- */

/* One implementation (candidate): a row of the one candidate table,
 * keyed by op through its kernels (gxd_tune_impl_kernel; NULL: not for
 * that op). A stable name and version, where it comes from, and what the
 * plan must give it besides the step's own inputs:
 * - packed: (MatMul, Gemm) its kernel reads B packed by the prepare pass
 *   (ops/gemm.h); else B as it is;
 * - scratch: (Conv) the scratch bytes its kernel needs on sig's shapes
 *   (the plan's scratch value for the step, in place of what the Conv
 *   schema's path asks), or -1 when it cannot run sig (then it is no
 *   candidate there). NULL: the Conv schema's own (gexec's kernel).
 *   Called by the prepare pass and the explorer, never by a job: an
 *   implementation that builds something per shape (a oneDNN primitive)
 *   builds it here. */
typedef struct gxd_tune_impl {
    char name[32];    /* "packed.avx512", "blas", "plain", "conv.plain" */
    int version;
    /* Its build id: the builds of the code it runs ("gexec-0.9",
     * "openblas-0.3.21.SkylakeX", "onednn-2.6.3"; no spaces). Built-in
     * ones get theirs from gxd_tune_build_id; "" in a row given to
     * gxd_tune_add_impl: the same rule by name ("none" for a name it does
     * not know). */
    char build[64];
    char source[16];  /* "gexec", "openblas", "onednn", "test" */
    bool packed;
    gx_kernel_fn matmul, gemm, conv;
    int64_t (*scratch)(const struct gxd_tune_sig *sig);
    /* (Conv) it runs each image on one worker: no candidate for a batch
     * of one (gxd_tune_impl_takes) */
    bool per_image;
    /* Tests: > 0, the time this implementation is measured at (its speed
     * is decided, not measured; its output is still checked). */
    int64_t fixed_ns;
} gxd_tune_impl;

/* im's kernel for op (NULL: none). */
gx_kernel_fn gxd_tune_impl_kernel(const gxd_tune_impl *im, gx_op op);
/* The scratch bytes im needs for sig (the schema's for gexec's own Conv
 * kernel); -1: im cannot run sig. */
int64_t gxd_tune_impl_scratch(const gxd_tune_impl *im, const gxd_tune_sig *sig);
/* Is im a candidate for sig (the explorer measures it, a record naming it
 * is run)? It can run sig, and, when it runs each image on one worker
 * (per_image), sig has more than one: a batch of one would leave the
 * job's other workers idle, which the registry, timing one thread, does
 * not see. A slice of a batch (replicas) runs the whole batch's choice,
 * which needs only gxd_tune_impl_scratch, so the bits stay the same. */
bool gxd_tune_impl_takes(const gxd_tune_impl *im, const gxd_tune_sig *sig);

/* ---- records ----------------------------------------------------------- */

#define GXD_TUNE_MAX_IMPLS 12

/* Where a record came from. */
typedef enum gxd_tune_level {
    GXD_TUNE_MEMORY,
    GXD_TUNE_LOCAL,
    GXD_TUNE_CENTRAL, /* tune.upstream, the site's PostgreSQL registry */
    GXD_TUNE_LEVEL_COUNT
} gxd_tune_level;

/* One candidate measured for a record: name, version and build id as
 * they were, its median time (-1: rejected, or it cannot run the
 * signature) and when (seconds since the epoch). */
typedef struct gxd_tune_cand {
    char name[32];
    int version;
    char build[64];
    int64_t ns;
    int64_t at;
} gxd_tune_cand;

/* A winner: the implementation (name, version, build id), its median
 * time, every candidate measured (cands: what decides which candidates
 * are still to measure; others: the same as text for people,
 * "name@v:ns,..." with rejected ones as "name@v:rejected (why)"), how it
 * was validated and where and when it was measured. */
typedef struct gxd_tune_rec {
    char impl[32];
    int version;
    char build[64]; /* the winner's build id; "" in gxd_tune_store: this daemon's */
    int64_t ns;
    gxd_tune_cand cands[GXD_TUNE_MAX_IMPLS];
    int n_cands;
    char others[512];
    char validation[256];
    char host[64];
    int64_t measured_at; /* seconds since the epoch */
    gxd_tune_level level; /* where the lookup found it */
} gxd_tune_rec;

/* The candidate of rec called name at version, or NULL. */
const gxd_tune_cand *gxd_tune_rec_cand(const gxd_tune_rec *rec, const char *name, int version);
/* Does rec hold im, measured with its current version and build id? */
bool gxd_tune_rec_has(const gxd_tune_rec *rec, const gxd_tune_impl *im);

/* ---- the registry ------------------------------------------------------ */

typedef struct gxd_tune gxd_tune;
struct gxd_plan;
struct gxd_profile;

typedef struct gxd_tune_opts {
    gxd_tune_mode mode;
    const char *dir;     /* tune.db lives here (made if missing); NULL or "": memory only */
    int64_t budget_ms;   /* exploration time per signature */
    int64_t max_records; /* rows kept in tune.db (oldest beyond are removed); 0: 100000 */
    int64_t max_cached;  /* records kept in memory; 0: 4096 */
    gxd_log *log;        /* where warnings go (may be NULL) */
    /* The central registry shared by a site's daemons: a postgresql:// URL
     * (libpq's), NULL or "": none. Looked up after tune.db; winners are
     * written to it too (the faster record kept). */
    const char *upstream;
    /* Rows kept in the central registry (0: 1000000): beyond it, the
     * least recently used (written or found) are removed, fewest reuses
     * first among equals; checked every 64 writes of this daemon. */
    int64_t upstream_max_records;
} gxd_tune_opts;

/* A new registry with the built-in implementations this build and CPU
 * have. On a database that cannot be opened or made, the registry works
 * from memory alone (logged). NULL on ENOMEM, with err. The caller
 * destroys it. */
gxd_tune *gxd_tune_new(const gxd_tune_opts *o, char *err, size_t errlen);
/* Stops the explorer (a measurement in progress finishes), closes the
 * database, frees everything. Accepts NULL. */
void gxd_tune_destroy(gxd_tune **t);
gxd_tune_mode gxd_tune_get_mode(const gxd_tune *t);

/* The implementations, in the order candidates are tried; *n their count.
 * Borrowed: valid while t lives. */
const gxd_tune_impl *gxd_tune_impls(const gxd_tune *t, size_t *n);
/* Tests: add an implementation (the planted candidates); false when full. */
bool gxd_tune_add_impl(gxd_tune *t, const gxd_tune_impl *im);
/* The implementation called name at version (any version: -1), or NULL. */
const gxd_tune_impl *gxd_tune_impl_find(const gxd_tune *t, const char *name, int version);
/* The default for op (what runs without a record): MatMul and Gemm the
 * packed kernel on the ISA the CPU table's gemm_tune->isa() names, Conv
 * gexec's plain-layout kernel ("conv.plain"). */
const gxd_tune_impl *gxd_tune_default(const gxd_tune *t, gx_op op);

/* The device model part of every key (borrowed). */
const char *gxd_tune_device(const gxd_tune *t);
/* The candidates and their build ids, "name@v=build ..." (borrowed; for
 * listings: the key does not hold it). */
const char *gxd_tune_builds(const gxd_tune *t);

/* Look n signatures up at once: memory, then tune.db in one transaction.
 * found[i] true and recs[i] filled on a hit (recs[i].level says where): a
 * record whose winner this daemon has with the same version and build id
 * (one whose winner was rebuilt or removed is stale: no hit, counted
 * `stale`, and the next level is asked). A miss is queued for
 * exploration (mode explore); so is a hit whose record lacks a candidate
 * this daemon has (its name, version and build id), for the additive
 * exploration of the missing ones. Counts each lookup.
 * Mode off: every found[i] is false and nothing is counted or queued. */
void gxd_tune_lookup_batch(gxd_tune *t, const gxd_tune_sig *sigs, size_t n, gxd_tune_rec *recs,
                           bool *found);
/* The same, with each signature's worth for the exploration queue's
 * priority: weight[i], the time its step took in the graph's profile (runs
 * × ns), or <= 0 (and weight NULL) where unknown: then its size in
 * multiply-adds stands in. The explorer takes the waiting signature with
 * the highest hits × weight first. */
void gxd_tune_lookup_batch_prio(gxd_tune *t, const gxd_tune_sig *sigs, const double *weight,
                                size_t n, gxd_tune_rec *recs, bool *found);

/* Store a winner for sig in memory and tune.db (the explorer does this;
 * tests too). GX_OK, or GX_EIO when the database refused it (memory keeps
 * it). */
int gxd_tune_store(gxd_tune *t, const gxd_tune_sig *sig, const gxd_tune_rec *rec);

/* The central registry (opts.upstream) now, on this thread: connect if
 * down (ignoring the retry backoff) and send every queued winner. GX_OK
 * when connected with nothing left to send; GX_EIO when unreachable (or
 * none configured). Tests, and `gexec-submit tune`'s wait; the daemon's
 * own thread does this in the background. */
int gxd_tune_upstream_sync(gxd_tune *t);

/* Is url a postgresql:// URL libpq accepts? GX_OK or GX_EINVAL with err
 * (the config check of tune.upstream). */
int gxd_tune_upstream_check(const char *url, char *err, size_t errlen);

/* Forget the in-memory cache (tests: the next lookup reads tune.db). */
void gxd_tune_cache_clear(gxd_tune *t);

/* ---- exploration ------------------------------------------------------- */

/* Is the daemon idle now (no job queued or running)? *epoch: a counter
 * that changes whenever a job arrives (a measurement across a change is
 * discarded). Without one the registry is always idle (tests). */
typedef bool (*gxd_tune_idle_fn)(void *arg, uint64_t *epoch);
void gxd_tune_set_idle(gxd_tune *t, gxd_tune_idle_fn fn, void *arg);

/* Called (on the explorer's thread) after a winner is stored: the daemon
 * has its models checked for a re-plan at the next tick. */
typedef void (*gxd_tune_changed_fn)(void *arg);
void gxd_tune_set_changed(gxd_tune *t, gxd_tune_changed_fn fn, void *arg);

/* Measure every candidate for sig now, on this thread, and store the
 * fastest valid one (also in *rec when not NULL). Waits for idle time
 * between runs. GX_OK; GX_ENOTFOUND when no candidate passed (each
 * rejection in rec->others); GX_ENOMEM. */
int gxd_tune_explore_sig(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *rec);
/* The additive exploration: with a valid record of sig in memory, measure
 * its winner and the candidates the record lacks (not yet measured with
 * their current version and build id), and store the record with them
 * added (the winner replaced only when another is over
 * GXD_TUNE_MARGIN faster than it in this run); without one, as
 * gxd_tune_explore_sig. *n_run: candidates measured (may be NULL). Same
 * returns. What the explorer thread does for a hit that lacks some. */
int gxd_tune_explore_more(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *rec, int *n_run);

/* Start the explorer thread (mode explore only; no-op otherwise). GX_OK or
 * GX_EINTERNAL. */
int gxd_tune_explore_start(gxd_tune *t);
/* Stop the explorer thread (a run in progress finishes first). Accepts
 * NULL and a registry whose explorer is not running. */
void gxd_tune_explore_stop(gxd_tune *t);
/* TUNE (gexec-submit tune): queue every signature of plan p now, ahead
 * of the waiting ones, even one explored before in this run or with a
 * record (it is measured again and the record replaced), and start the
 * explorer (in mode cache too). Returns how many were queued, or
 * GX_EUNSUPPORTED when t is NULL or off, GX_EINTERNAL when the thread
 * cannot start. */
int gxd_tune_request_plan(gxd_tune *t, const struct gxd_plan *p);
/* Wait until both queues are empty and nothing is being measured (tests,
 * `gexec-submit tune`); false after timeout_ms. */
bool gxd_tune_explore_wait(gxd_tune *t, int64_t timeout_ms);

/* The record in memory for sig, without counting a lookup or queueing a
 * miss (the re-planner's question); false when none, or when its winner
 * is not this daemon's (another version or build id). */
bool gxd_tune_peek(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *rec);

/* ---- plans ------------------------------------------------------------- */

/* The re-planner's question (daemon/models.h: gxd_models.replan.stale):
 * would the layout pass decide differently (gxd_plan_layout_stale), or
 * does the registry now hold a winner other than the implementation a step
 * of p runs (a signature explored since p was compiled)? why says which.
 * A plan read from an artifact is asked the same: its reader gave each
 * choice its signature and refused the file if the registry then named
 * another (gxd_prepare_choices_current). */
bool gxd_tune_plan_stale(const struct gxd_plan *p, const struct gxd_profile *prof, char *why,
                         size_t len);

/* ---- statistics -------------------------------------------------------- */

#define GXD_TUNE_TOP 8

typedef struct gxd_tune_stats {
    int64_t lookups;
    int64_t hits[GXD_TUNE_LEVEL_COUNT];
    int64_t misses;
    int64_t queued;       /* signatures put in the collection queue */
    int64_t explored;     /* signatures measured */
    int64_t rejected;     /* candidates whose output differed */
    int64_t explore_us;   /* time spent measuring */
    int64_t stored;       /* winners stored */
    int64_t db_errors;
    int64_t pending;      /* signatures waiting now (both queues) */
    int64_t cached;       /* records in memory now */
    int64_t prefetched;   /* records read into memory with another signature of their family */
    int64_t stale;        /* lookups that found only records whose winner was rebuilt or is gone */
    int64_t additive;     /* hits queued to measure candidates their record lacks */
    /* the central registry (all 0 without one) */
    bool upstream_up;         /* connected now */
    int64_t upstream_errors;  /* failed connections, reads and writes */
    int64_t upstream_written; /* winners sent (kept there only when faster) */
    int64_t upstream_queued;  /* winners waiting to be sent */
    int64_t upstream_dropped; /* winners not sent (queue full in an outage, refused) */
    int64_t upstream_trimmed; /* rows this daemon removed there (tune.upstream_max_records) */
    /* winners stored by this daemon, per source of the winning
     * implementation ("gexec", "openblas", ...) */
    struct {
        char source[16];
        int64_t n;
    } wins[GXD_TUNE_MAX_IMPLS];
    int n_wins;
    /* the records in memory found most often (reuse: lookups that found
     * it since it was cached, at any level), most reused first */
    struct {
        char sig[160]; /* the signature part of its key */
        char impl[32];
        int version;
        int64_t reuse;
    } top[GXD_TUNE_TOP];
    int n_top;
} gxd_tune_stats;

void gxd_tune_get_stats(gxd_tune *t, gxd_tune_stats *s);

#endif
