/*
 * The artifact cache (seed 004; docs/artifact.md): compiled plans kept on
 * disk across restarts, one file per (graph id, input signature, device
 * set, build id) key (gxd_artifact_key), <dir>/<key>.gxa, and the prepared
 * constants (packed weights) they read in constants files of their own,
 * <dir>/<graph id>-<16 hex>.gxc, named by a hash of their contents: the
 * plans of a graph whose constants are the same (every input width of a
 * model with a dynamic dimension, say) share one file, and a new
 * signature adds its plan's file alone (kilobytes, not the weights again).
 *
 * Files are written atomically, not synced (gxd_write_atomic: a file a
 * crash tears fails the reader's checksum and is compiled again), and off
 * the jobs' path: gxd_artifacts_post queues a write for the cache's
 * writer thread (bounded: a write that finds the queue full is dropped and
 * counted; a failed one is logged and counted; a job never waits for a
 * disk nor fails because of one). The directory is bounded: beyond
 * max_files files or max_bytes bytes (constants files counted) the least
 * recently used plan files go (a load counts as a use), and a constants
 * file goes when no plan file names it any more. Thread-safe: workers
 * load, the writer saves.
 *
 *   gxd_artifacts *a = gxd_artifacts_new(dir, 1024, 1 << 30, log);
 *   if (gxd_artifacts_load(a, key, &buf, &len) == GX_OK) ...
 *   gxd_artifacts_post(a, write, drop, arg);  // write(arg, a) on the writer
 *   gxd_artifacts_flush(a);                   // tests: what was posted is on disk
 */
#ifndef GXD_ARTIFACTS_H
#define GXD_ARTIFACTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/log.h"

typedef struct gxd_artifacts gxd_artifacts;

/* Counts for STATS (since start). */
typedef struct gxd_artifacts_stats {
    int64_t hits;     /* plans served from a file instead of compiling */
    int64_t misses;   /* no file for the key */
    int64_t rejected; /* a file refused (stale, foreign, corrupt) and recompiled */
    int64_t writes;   /* plan files written */
    int64_t consts_writes; /* constants files written */
    int64_t consts_reused; /* plan files written whose constants file was on disk */
    int64_t evicted;  /* files removed for the bounds (or no plan naming them) */
    int64_t queued;   /* writes waiting for the writer or under way now */
    int64_t dropped;  /* writes not done: the queue was full, or shutdown */
    int64_t write_errors; /* writes that failed (logged) */
    int64_t files, bytes; /* in the directory now, constants files included */
    int64_t consts_files, consts_bytes; /* of which constants files */
} gxd_artifacts_stats;

/* A cache in dir (created on the first save), logging to log. NULL on
 * ENOMEM. */
gxd_artifacts *gxd_artifacts_new(const char *dir, int64_t max_files, int64_t max_bytes,
                                 gxd_log *log);
/* Stops the writer (gxd_artifacts_stop with flush), then frees. Accepts
 * NULL. */
void gxd_artifacts_destroy(gxd_artifacts **a);
/* The directory (borrowed). */
const char *gxd_artifacts_dir(const gxd_artifacts *a);

/* The file of key: GX_OK and *buf (malloc'ed, *len bytes; the caller
 * frees); GX_ENOTFOUND (counted as a miss); GX_EIO (logged: not a regular
 * file, unreadable, too large). */
int gxd_artifacts_load(gxd_artifacts *a, const char *key, void **buf, size_t *len);
/* The constants file name (16 hex digits) of graph graph_id, as
 * gxd_artifacts_load. */
int gxd_artifacts_load_consts(gxd_artifacts *a, const char *graph_id, const char *name,
                              void **buf, size_t *len);
/* Writes the file of key, then evicts beyond the bounds. GX_OK or GX_EIO
 * (logged). */
int gxd_artifacts_save(gxd_artifacts *a, const char *key, const void *buf, size_t len);
/* gxd_artifacts_save of a plan's file that names the constants file
 * cname (cbuf, clen: its bytes), written first unless a file of that name
 * and size is there already (the same contents: the name is their hash). */
int gxd_artifacts_save_split(gxd_artifacts *a, const char *key, const void *buf, size_t len,
                             const char *cname, const void *cbuf, size_t clen);
/* Count a hit, or a refused file (then it is removed: the recompile
 * writes the key again). */
void gxd_artifacts_hit(gxd_artifacts *a);
void gxd_artifacts_reject(gxd_artifacts *a, const char *key);
void gxd_artifacts_get_stats(gxd_artifacts *a, gxd_artifacts_stats *st);

/* ---- the writer ---- */

/* Queue write(arg, a) for the writer thread (started on the first post):
 * GX_OK. It returns GX_OK or an error it logged (counted in
 * write_errors). drop(arg) follows it, on the writer thread; or at once,
 * with the write not done (counted in dropped), when the queue is full
 * (GX_ELIMIT), after gxd_artifacts_stop (GX_EBUSY), or without a thread
 * (GX_ENOMEM). Never blocks on a disk. */
int gxd_artifacts_post(gxd_artifacts *a, int (*write)(void *arg, gxd_artifacts *a),
                       void (*drop)(void *arg), void *arg);
/* Waits until every write posted before the call is done. */
void gxd_artifacts_flush(gxd_artifacts *a);
/* Stops the writer: the queued writes are done (flush) or dropped, the
 * thread is joined; later posts are dropped. Accepts NULL. */
void gxd_artifacts_stop(gxd_artifacts *a, bool flush);

#endif
