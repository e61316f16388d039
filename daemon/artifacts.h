/*
 * The artifact cache (seed 004; docs/artifact.md): compiled plans kept on
 * disk across restarts, one file per (graph id, input signature, device
 * set, build id) key (gxd_artifact_key), <dir>/<key>.gxa. Files are written
 * atomically, not synced (gxd_write_atomic: a file a crash tears fails the
 * reader's checksum and is compiled again; no job waits for a disk) and
 * the directory is bounded: beyond
 * max_files files or max_bytes bytes the least recently used go (a load
 * counts as a use). Thread-safe: workers load and save, the re-planner
 * saves.
 *
 *   gxd_artifacts *a = gxd_artifacts_new(dir, 1024, 1 << 30, log);
 *   if (gxd_artifacts_load(a, key, &buf, &len) == GX_OK) ...
 *   gxd_artifacts_save(a, key, buf, len);
 */
#ifndef GXD_ARTIFACTS_H
#define GXD_ARTIFACTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/log.h"

typedef struct gxd_artifacts gxd_artifacts;

/* Counts for STATS (since start). */
typedef struct gxd_artifacts_stats {
    int64_t hits;     /* plans served from a file instead of compiling */
    int64_t misses;   /* no file for the key */
    int64_t rejected; /* a file refused (stale, foreign, corrupt) and recompiled */
    int64_t writes;   /* files written */
    int64_t evicted;  /* files removed for the bounds */
    int64_t files, bytes; /* in the directory now */
} gxd_artifacts_stats;

/* A cache in dir (created on the first save), logging to log. NULL on
 * ENOMEM. */
gxd_artifacts *gxd_artifacts_new(const char *dir, int64_t max_files, int64_t max_bytes,
                                 gxd_log *log);
void gxd_artifacts_destroy(gxd_artifacts **a);
/* The directory (borrowed). */
const char *gxd_artifacts_dir(const gxd_artifacts *a);

/* The file of key: GX_OK and *buf (malloc'ed, *len bytes; the caller
 * frees); GX_ENOTFOUND (counted as a miss); GX_EIO (logged). */
int gxd_artifacts_load(gxd_artifacts *a, const char *key, void **buf, size_t *len);
/* Writes the file of key, then evicts beyond the bounds. GX_OK or GX_EIO
 * (logged). */
int gxd_artifacts_save(gxd_artifacts *a, const char *key, const void *buf, size_t len);
/* Count a hit, or a refused file (then it is removed: the recompile
 * writes the key again). */
void gxd_artifacts_hit(gxd_artifacts *a);
void gxd_artifacts_reject(gxd_artifacts *a, const char *key);
void gxd_artifacts_get_stats(gxd_artifacts *a, gxd_artifacts_stats *st);

#endif
