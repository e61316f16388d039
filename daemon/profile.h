/*
 * The profile store: what earlier runs of a graph measured, kept per graph
 * id across restarts, so the scheduling policy's estimates are measured
 * from the first job after a restart instead of the schemas' guesses.
 *
 * A profile holds, per node, how often it ran (runs) and how long one run
 * took (ns: the mean of the plans' measured times on one worker, weighted
 * by runs), and how many jobs ran the graph (jobs). Nodes inside control
 * flow are keyed by a path: the control node's name, the subgraph
 * attribute, the inner node's name, joined by '/' ("loop/body/add",
 * "cond/then_branch/mul", nested as deep as the graph goes). So
 *
 *   branch probability  = runs("if/then_branch/x") / runs("if")
 *   mean trip count     = runs("loop/body/x")      / runs("loop")
 *
 * for any node x of the subgraph. A layout-sensitive node (Conv, pools,
 * BatchNormalization) that ran as a step of its own also has an entry
 * "<node>@<layout>" with its time in that layout, for the layout pass.
 * A node that the fuse pass merged into a
 * step is counted (runs) with its step, whose time is recorded under the
 * step's last node (the others have ns 0). Runs of replica slices (a job
 * cut along its batch) and of plans the model does not keep (its plan
 * cache full) are not counted.
 *
 * Counters are never taken on the executor path: a model's profile is its
 * base (the file read when the graph was loaded) plus the live counters of
 * its plans (gxd_step_stats), folded in by gxd_profile_fold_plan when the
 * model goes away, at shutdown, and from the I/O thread now and then.
 *
 * The file (docs/profile.md) is <dir>/<graph id>.json, written atomically
 * (a temporary file fsync'ed and renamed over it):
 *
 *   {"format": "gexec-profile", "version": 1, "graph": "<hex id>",
 *    "jobs": 12, "nodes": [{"name": "mm", "runs": 12, "ns": 35000}, ...]}
 *
 * A file that is unreadable, malformed, too large or for another graph is
 * ignored (the caller logs the reason).
 */
#ifndef GXD_PROFILE_H
#define GXD_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/compile/compile.h"
#include "daemon/log.h"

#define GXD_PROFILE_MAX_FILE (16 << 20)  /* bytes of one file */
#define GXD_PROFILE_MAX_NODES (1 << 20)  /* entries of one profile */
#define GXD_PROFILE_MAX_NAME 4096        /* bytes of one path */
/* the I/O thread saves the profiles of graphs that ran this often */
#define GXD_PROFILE_SAVE_EVERY_US (INT64_C(60) * 1000000)

typedef struct gxd_profile_node {
    char *name; /* owned */
    int64_t runs;
    int64_t ns; /* 0: never timed */
} gxd_profile_node;

typedef struct gxd_profile {
    char graph[65]; /* hex id */
    int64_t jobs;
    size_t n, cap;
    gxd_profile_node *nodes; /* sorted by name, unique, after gxd_profile_finish */
} gxd_profile;

/* An empty profile of graph hex; NULL on ENOMEM. Destroy accepts NULL. */
gxd_profile *gxd_profile_new(const char *hex);
void gxd_profile_destroy(gxd_profile **p);
/* Record runs of node name taking ns each (0: not timed). Entries may
 * repeat until gxd_profile_finish merges them. GX_ENOMEM or GX_ELIMIT. */
int gxd_profile_add(gxd_profile *p, const char *name, int64_t runs, int64_t ns);
/* Sort and merge repeated names (runs add up, ns is weighted by runs). */
void gxd_profile_finish(gxd_profile *p);
/* Add src's jobs and nodes to dst (then finished). */
int gxd_profile_merge(gxd_profile *dst, const gxd_profile *src);
/* The entry of name in a finished profile, or NULL. */
const gxd_profile_node *gxd_profile_find(const gxd_profile *p, const char *name);

/* Add the counters of plan (top: a graph's plan, whose runs are jobs) and
 * of its cached subgraph plans, node names under prefix ("" at the top).
 * Reads atomics and takes the subplan caches' locks (try: GX_EBUSY rather
 * than wait for one a worker holds); call gxd_profile_finish after the
 * last fold. */
int gxd_profile_fold_plan(gxd_profile *p, const gxd_plan *plan, const char *prefix, bool top,
                          bool try);

/* Seed the measured time of each step of a fresh plan (no job has run it)
 * from the profile, by node name. Returns the steps seeded. */
size_t gxd_profile_seed(const gxd_profile *p, gxd_plan *plan);

/* The JSON text; malloc'ed, NULL on ENOMEM. */
char *gxd_profile_to_json(const gxd_profile *p);
/* Parse a file's text for graph hex. GX_OK and a new profile in *out, or
 * GX_EFORMAT / GX_ELIMIT with the reason in err. */
int gxd_profile_from_json(const char *text, const char *hex, gxd_profile **out, char *err,
                          size_t errlen);

/* The profile directory: cfg as given, or for "default"
 * $STATE_DIRECTORY/profiles under systemd (StateDirectory=), else
 * /var/lib/gexec/profiles as root, else $XDG_STATE_HOME/gexec/profiles,
 * else ~/.local/state/gexec/profiles. "" (off) when cfg is "" or NULL, or no
 * default can be found. */
void gxd_profile_dir(const char *cfg, char *out, size_t len);
/* Read <dir>/<hex>.json. GX_OK with *out NULL when there is no file; an
 * error status and reason when there is one that cannot be used. */
int gxd_profile_load(const char *dir, const char *hex, gxd_profile **out, char *err,
                     size_t errlen);
/* Write <dir>/<graph>.json atomically and durably, creating dir (and its
 * parents): a temporary file in dir, fsync'ed, renamed over the old file,
 * then dir fsync'ed; SIGKILL or a full disk leaves the old file or the new
 * one, never part of one. GX_EIO with "path: step: reason" on failure. */
int gxd_profile_save(const gxd_profile *p, const char *dir, char *err, size_t errlen);
/* The same for any file: <dir>/<name> holds buf[0..len) afterwards, written
 * through <dir>/.<name>.XXXXXX. 0, or an errno with *op naming the step
 * that failed ("write", "rename"...). */
int gxd_write_durable(const char *dir, const char *name, const void *buf, size_t len,
                      const char **op);
/* gxd_write_durable without the fsyncs, for files whose reader checks
 * their contents (the artifact cache: a file a crash leaves torn fails its
 * checksum and is compiled again): a process killed at any point still
 * leaves the old file or the new one, and the writer waits for no disk. */
int gxd_write_atomic(const char *dir, const char *name, const void *buf, size_t len,
                     const char **op);

/*
 * The store: the directory, bounded (docs/profile.md). It holds at most
 * max_entries files (profile.max_entries) of at most max_bytes in all
 * (profile.max_bytes); a save beyond either removes the files of the least
 * recently used graphs (used: saved, or read when the graph was loaded;
 * across restarts, the files' modification times say which). The file
 * just saved always stays. Temporary files a crash left behind are removed
 * when the directory is first read. A save that fails is logged the first
 * time for its cause (the step and the reason: "write: No space left on
 * device"), then counted; the count is logged when the cause changes, when
 * saves work again, and when the store is destroyed. Thread-safe: the I/O
 * thread, the re-planner and workers that drop a graph's last reference
 * all save through it. One daemon per directory.
 *
 *     gxd_profile_store *s = gxd_profile_store_new(dir, 4096, 1 << 30, &log);
 *     gxd_profile_store_save(s, p);
 *     gxd_profile_store_destroy(&s);
 */
typedef struct gxd_profile_store gxd_profile_store;

typedef struct gxd_profile_store_stats {
    int64_t entries, bytes; /* files and their bytes now */
    int64_t saved, failed, evicted;
} gxd_profile_store_stats;

/* A store over dir (not read yet: gxd_profile_store_open, or the first
 * load or save, reads it); log (borrowed, may be NULL) gets the warnings.
 * NULL for an empty dir or on ENOMEM. */
gxd_profile_store *gxd_profile_store_new(const char *dir, int64_t max_entries, int64_t max_bytes,
                                         gxd_log *log);
/* Accepts NULL; logs a failure count not logged yet. */
void gxd_profile_store_destroy(gxd_profile_store **s);
const char *gxd_profile_store_dir(const gxd_profile_store *s);
/* Read the directory now (at start): index its files, remove temporary
 * files left by a crash, and enforce the bounds. */
void gxd_profile_store_open(gxd_profile_store *s);
/* gxd_profile_load, and the graph's file counts as used now. */
int gxd_profile_store_load(gxd_profile_store *s, const char *hex, gxd_profile **out, char *err,
                           size_t errlen);
/* Save p's file (failures logged as above), then enforce the bounds.
 * GX_OK, GX_EIO or the status of a failure that was not the file system's. */
int gxd_profile_store_save(gxd_profile_store *s, const gxd_profile *p);
void gxd_profile_store_stats_get(gxd_profile_store *s, gxd_profile_store_stats *out);

#endif
