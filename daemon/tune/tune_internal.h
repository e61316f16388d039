/*
 * Inside the registry (daemon/tune): what its files share. Nothing here is
 * for other parts of the daemon (daemon/tune/tune.h is).
 */
#ifndef GXD_TUNE_INTERNAL_H
#define GXD_TUNE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/tune/tune.h"

/* Rows of the output checked against the float64 reference. */
#define GXD_TUNE_CHECK_ROWS 32
/* A candidate within this fraction of the fastest does not displace the
 * default: noise is not a reason to change a plan. */
#define GXD_TUNE_MARGIN 0.03
/* A candidate whose checked run took longer than this many times the
 * fastest so far is not timed again (that run is its time): clearly
 * slower, and each run is time a job may wait for. */
#define GXD_TUNE_SLOW 4
/* Runs longer than this (ns) are timed 3 times only. */
#define GXD_TUNE_LONG_RUN_NS (50 * 1000 * 1000)
/* Most timed runs of one candidate (the median is kept). */
#define GXD_TUNE_MAX_RUNS 31

/* The built-in implementations this build and CPU have, into out (at most
 * max); returns their count. */
size_t gxd_tune_builtin_impls(gxd_tune_impl *out, size_t max);
/* oneDNN's candidates (daemon/tune/impl_dnnl.c; none without oneDNN at
 * build time) into out (at most max); returns their count. */
size_t gxd_tune_dnnl_impls(gxd_tune_impl *out, size_t max);
/* oneDNN's version ("2.6.3"; "" without it). */
void gxd_tune_dnnl_build(char *buf, size_t len);

/* ---- build ids (daemon/tune/builds.c) ---- */

/* The library builds a candidate's build id is made of. */
typedef struct gxd_tune_buildinfo {
    char gexec[32];    /* PACKAGE_VERSION */
    char isa[16];      /* the packed kernels' ISA in use (the default's and plain's) */
    char openblas[32]; /* OpenBLAS's version ("0.3.21") */
    char core[32];     /* its core in use ("SkylakeX") */
    char onednn[16];   /* oneDNN's version, "" without it */
} gxd_tune_buildinfo;

/* This process's builds. */
void gxd_tune_buildinfo_now(gxd_tune_buildinfo *b);
/* The builds of a key of tune.db schema 2 (its third part, "gexec-0.9
 * gemm=avx512 [ OpenBLAS 0.3.21 ] core=SkylakeX onednn=2.6.3 name@v...");
 * false when it is not one. */
bool gxd_tune_buildinfo_parse_legacy(const char *builds, gxd_tune_buildinfo *b);
/* The build id of the implementation called name on builds b: gexec's
 * kernels "gexec-<v>" (plain, and conv.plain, with the ISA in use; conv.plain
 * with OpenBLAS's too: its 1x1 convs call it), OpenBLAS's "openblas-<v>.<core>",
 * oneDNN's "onednn-<v>", another name "none". */
void gxd_tune_build_id(const char *name, const gxd_tune_buildinfo *b, char *buf, size_t len);
/* rec->cands as text ("name@v build ns at; ..."), what tune.db and the
 * central registry keep; and back (false on a text that is not one: then
 * rec->n_cands is what parsed before it). */
void gxd_tune_cands_str(const gxd_tune_rec *rec, char *buf, size_t len);
bool gxd_tune_cands_parse(const char *s, gxd_tune_rec *rec);
/* rec->cands from a schema-2 record's others ("name@v:ns, name@v:rejected
 * (why), ..."), each candidate's build id by gxd_tune_build_id on b, measured
 * at rec->measured_at; false when others is not of that form. */
bool gxd_tune_cands_from_others(const char *others, const gxd_tune_buildinfo *b,
                                gxd_tune_rec *rec);

/* One signature's fixed inputs (B also packed, for the packed product
 * kernels), its output, the scratch of the candidate being run, and the
 * reference of n_check rows of the output (a row: row_len contiguous
 * elements; float64, and the sums of magnitudes for the tolerance, each
 * element a sum of `terms` products). Owned buffers: gxd_tune_bench_fini
 * frees them. */
typedef struct gxd_tune_bench {
    gxd_tune_sig sig;
    float *a, *b, *bp, *c, *y; /* Conv: x, W, the bias */
    gx_attrval attr[GX_MAX_ATTRS];
    int64_t ints[4][GX_MAX_DIMS]; /* Conv's int-list attributes */
    int n_in;
    gx_view in[3], vy;
    void *scratch;
    int64_t scratch_bytes;
    int n_check;
    int64_t row_len, terms;
    int64_t rows[GXD_TUNE_CHECK_ROWS];
    double *ref, *mag;
} gxd_tune_bench;

/* One tuned op: what differs between ops in signatures and measurement.
 * The registry's one table of tuned ops (impl_gemm.c: MatMul, Gemm;
 * impl_conv.c: Conv), keyed by op; everything else (keys, lookups, the
 * queues, checking, timing, storing) is the same code for all. */
typedef struct gxd_tune_op {
    gx_op op;
    bool (*sig_of)(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                   const gx_view *y, gxd_tune_sig *sig, char *why, size_t whylen);
    void (*sig_str)(const gxd_tune_sig *sig, char *buf, size_t len);
    void (*family_str)(const gxd_tune_sig *sig, char *buf, size_t len);
    double (*madds)(const gxd_tune_sig *sig); /* multiply-adds of one run */
    /* inputs, attributes, views, reference (bn->sig set, the rest 0) */
    int (*bench_init)(gxd_tune_bench *bn);
    /* Its kernels' speed depends on the share count (a Conv kernel's
     * blocking follows its share, e.g. its im2col columns per share), so
     * runs cut into pieces would time something else: a candidate runs
     * whole, and a job arriving waits for one run. */
    bool whole;
} gxd_tune_op;

/* The tuned op op, or NULL. */
const gxd_tune_op *gxd_tune_op_of(gx_op op);
extern const gxd_tune_op gxd_tune_op_matmul, gxd_tune_op_gemm, gxd_tune_op_conv;

/* gexec's own Conv candidate ("conv.plain"; impl_conv.c). */
gxd_tune_impl gxd_tune_conv_builtin(void);
/* Fixed pseudo-random floats in [-1, 1): the same for every candidate
 * and every run. */
void gxd_tune_fill(float *p, int64_t n, uint64_t seed);

/* GX_OK or GX_ENOMEM (then nothing is held). */
int gxd_tune_bench_init(gxd_tune_bench *bn, const gxd_tune_sig *s);
void gxd_tune_bench_fini(gxd_tune_bench *bn);
/* A run is cut into pieces of about this long (ns), between which the
 * explorer yields to a job that arrived: a job waits for one piece at most. */
#define GXD_TUNE_PIECE_NS (2 * 1000 * 1000)
#define GXD_TUNE_MAX_PIECES 256
/* The speed (flop/s) a first run is assumed to have when it is cut. */
#define GXD_TUNE_SLOW_FLOPS 1e9

/* Pieces for a run of about run_ns on bn's shapes (at least 1). */
int gxd_tune_bench_pieces(const gxd_tune_bench *bn, int64_t run_ns);
/* Run im once, in *pieces pieces (from the product's size), waiting for
 * idle time between them, and compare its output with the reference;
 * false with why (the first element that differs; "stopped"), true with
 * how it was checked. *run_ns: the CPU time of this thread that run took
 * (waits and the time other threads had the core not counted). */
bool gxd_tune_bench_check(gxd_tune_bench *bn, const gxd_tune_impl *im, char *why, size_t whylen,
                          int64_t *run_ns, int *pieces, gxd_tune_idle_fn idle, void *idle_arg,
                          atomic_bool *stop);
/* The median of up to runs timed runs of im (ns of this thread's CPU time;
 * fixed_ns when set), each
 * in nth pieces, taken only while idle() says so; a run during which a job
 * arrived is given up at the next piece; stopping after budget_ns once 3
 * runs are in; -1 when *stop was set before any run. */
int64_t gxd_tune_bench_time(gxd_tune_bench *bn, const gxd_tune_impl *im, int runs, int nth,
                            int64_t budget_ns, gxd_tune_idle_fn idle, void *idle_arg,
                            atomic_bool *stop);

/* ---- tune.db (daemon/tune/db.c) ---- */

typedef struct gxd_tune_db gxd_tune_db;

/* Open (or make) dir/tune.db. A file that is not a valid database is
 * renamed to tune.db.corrupt-<time> (logged) and a new one made. NULL
 * with err when it cannot be opened or made. */
gxd_tune_db *gxd_tune_db_open(const char *dir, int64_t max_records, gxd_log *log, char *err,
                              size_t errlen);
void gxd_tune_db_close(gxd_tune_db **db);
/* Look keys[0..n) up in one transaction: found[i] and recs[i] on a hit
 * (reuse counted). GX_OK or GX_EIO. */
int gxd_tune_db_get(gxd_tune_db *db, const char *const *keys, size_t n, gxd_tune_rec *recs,
                    bool *found);
/* Insert or replace key's record (family: gxd_tune_family's; op: its op's
 * name, for listings); the oldest rows beyond max_records go. GX_OK or
 * GX_EIO. */
int gxd_tune_db_put(gxd_tune_db *db, const char *key, const char *family, const char *op,
                    const gxd_tune_rec *rec);
/* fn for each of the (at most max) newest records of family. GX_OK or
 * GX_EIO. */
int gxd_tune_db_family(gxd_tune_db *db, const char *family, int max,
                       void (*fn)(void *arg, const char *key, const gxd_tune_rec *rec), void *arg);

/* ---- the central registry (daemon/tune/upstream.c) ---- */

typedef struct gxd_tune_up gxd_tune_up;

/* GX_OK or GX_EINVAL with err. */
int gxd_tune_up_check_url(const char *url, char *err, size_t errlen);
/* A central registry at url and its thread, which connects (now, and
 * after a failure with a backoff of 1 s doubling to 60 s) and sends the
 * queued writes, keeping at most max_records rows there (0: 1000000; the
 * least recently used beyond go, checked every 64 writes). NULL with err
 * on a bad URL or ENOMEM. */
gxd_tune_up *gxd_tune_up_new(const char *url, int64_t max_records, gxd_log *log, char *err,
                             size_t errlen);
/* Stops the thread, closes, frees (queued writes are lost). Accepts NULL. */
void gxd_tune_up_destroy(gxd_tune_up **u);
/* Queue key's winner for the thread (copied). */
void gxd_tune_up_put(gxd_tune_up *u, const char *key, const char *family, const char *op,
                     const gxd_tune_rec *rec);
/* One query: fn for each record of keys[0..n_keys) and each of the newest
 * max_per_family of families[0..n_fam) (rec->level GXD_TUNE_CENTRAL).
 * Only while connected (GX_EIO at once when not: never connects); a
 * failure drops the connection for the thread to retry. GX_OK, GX_EIO,
 * GX_ENOMEM. */
int gxd_tune_up_get(gxd_tune_up *u, const char *const *keys, size_t n_keys,
                    const char *const *families, size_t n_fam, int max_per_family,
                    void (*fn)(void *arg, const char *key, const gxd_tune_rec *rec), void *arg);
/* gxd_tune_upstream_sync's work. */
int gxd_tune_up_sync(gxd_tune_up *u);
/* The upstream_* fields of s. */
void gxd_tune_up_stats(gxd_tune_up *u, gxd_tune_stats *s);

/* ---- the registry (daemon/tune/registry.c, explore.c) ---- */

/* One cached record (a slot of the cache table; key NULL: free). */
typedef struct gxd_tune_slot {
    char *key;
    gxd_tune_rec rec;
    uint64_t used; /* t->clock when last found */
    int64_t reuse; /* lookups that found it since it was cached */
} gxd_tune_slot;

/* A signature waiting for exploration; hits: lookups that missed it;
 * weight: the most time its step took in a profile (or its size). */
typedef struct gxd_tune_pending {
    char *key;
    gxd_tune_sig sig;
    int64_t hits;
    double weight;
    bool additive; /* a hit lacking candidates: gxd_tune_explore_more */
} gxd_tune_pending;

#define GXD_TUNE_MAX_PENDING 1024

struct gxd_tune {
    gxd_tune_opts o;
    gxd_log *log;
    char device[256], builds[1024], host[64];
    gxd_tune_buildinfo bi;
    gxd_tune_impl impls[GXD_TUNE_MAX_IMPLS];
    size_t n_impls;

    pthread_mutex_t mu; /* cache, db, stats */
    gxd_tune_slot *slots;
    size_t n_slots, n_cached; /* table size (twice max_cached), records */
    uint64_t clock;
    gxd_tune_db *db;
    bool db_warned;
    gxd_tune_up *up; /* tune.upstream, or NULL (its own lock) */
    gxd_tune_stats st;

    pthread_mutex_t qmu; /* the queues, the explorer */
    pthread_cond_t qcv;
    gxd_tune_pending pending[GXD_TUNE_MAX_PENDING];
    size_t n_pending;
    char *tried[GXD_TUNE_MAX_PENDING]; /* explored this run with no winner (ring) */
    size_t n_tried;
    bool busy, started;
    atomic_bool stop;
    pthread_t thread;
    gxd_tune_idle_fn idle;
    void *idle_arg;
    gxd_tune_changed_fn changed;
    void *changed_arg;
};

/* The full key of sig: signature | device (malloc'ed). */
char *gxd_tune_key(const gxd_tune *t, const gxd_tune_sig *sig);
/* Its family: the same with gxd_tune_sig_family_str (malloc'ed). */
char *gxd_tune_family(const gxd_tune *t, const gxd_tune_sig *sig);
/* Records of one family read into the cache per lookup, at most. */
#define GXD_TUNE_PREFETCH 64
/* Queue sig (key owned by the caller) for exploration, unless queued,
 * tried already, or the queue is full; additive: only the candidates its
 * record lacks (a queued full exploration stays full). Under qmu. */
void gxd_tune_queue_sig(gxd_tune *t, const char *key, const gxd_tune_sig *sig, double weight,
                        bool additive);
/* Is rec's winner one of t's implementations, same version and build id? */
bool gxd_tune_rec_valid(const gxd_tune *t, const gxd_tune_rec *rec);
/* Does rec lack one of t's candidates for op (gxd_tune_rec_has)? */
bool gxd_tune_rec_lacks(const gxd_tune *t, gx_op op, const gxd_tune_rec *rec);
/* t->builds from t->impls, each given its build id when it has none. */
void gxd_tune_builds_update(gxd_tune *t);

#endif
