/* The artifact cache: a bounded directory of plan and constants files,
 * and the writer thread that fills it. See artifacts.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/artifact_fmt.h"
#include "daemon/artifacts.h"
#include "daemon/profile.h"
#include "gexec/status.h"

#define S_EXT ".gxa"
#define S_CEXT ".gxc"
/* a file bigger than this is not read (limits.max_arena_bytes bounds plans
 * anyway; this bounds what a stray file costs) */
#define S_MAX_FILE (INT64_C(4) << 30)
/* writes waiting for the writer: each holds its plan (not its bytes) */
#define S_QUEUE 64

#define S_LOG(a, lvl, ...)                                                    \
    do {                                                                      \
        if ((a)->log)                                                         \
            GXD_LOG((a)->log, lvl, __VA_ARGS__);                              \
    } while (0)

typedef struct s_item {
    int (*write)(void *arg, gxd_artifacts *a);
    void (*drop)(void *arg);
    void *arg;
} s_item;

struct gxd_artifacts {
    char dir[PATH_MAX];
    int64_t max_files, max_bytes;
    gxd_log *log;
    pthread_mutex_t mu; /* saves and evictions */
    _Atomic int64_t hits, misses, rejected, writes, consts_writes, consts_reused, evicted,
        dropped, write_errors, files, bytes, consts_files, consts_bytes;
    /* the writer: a ring of S_QUEUE items under wmu */
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    s_item q[S_QUEUE];
    size_t head, n;
    bool started, stopped, busy;
    pthread_t thread;
};

gxd_artifacts *gxd_artifacts_new(const char *dir, int64_t max_files, int64_t max_bytes,
                                 gxd_log *log)
{
    gxd_artifacts *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    snprintf(a->dir, sizeof a->dir, "%s", dir);
    a->max_files = max_files;
    a->max_bytes = max_bytes;
    a->log = log;
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->wmu, NULL);
    pthread_cond_init(&a->wcv, NULL);
    return a;
}

void gxd_artifacts_destroy(gxd_artifacts **ap)
{
    if (!ap || !*ap)
        return;
    gxd_artifacts_stop(*ap, true);
    pthread_cond_destroy(&(*ap)->wcv);
    pthread_mutex_destroy(&(*ap)->wmu);
    pthread_mutex_destroy(&(*ap)->mu);
    free(*ap);
    *ap = NULL;
}

const char *gxd_artifacts_dir(const gxd_artifacts *a)
{
    return a->dir;
}

static bool s_name_ok(const char *s, bool dash)
{
    for (const char *c = s; *c; c++) /* keys are hex and '-' */
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (dash && *c == '-')))
            return false;
    return *s;
}

static bool s_path(const gxd_artifacts *a, const char *key, char *path, size_t len)
{
    return s_name_ok(key, true) &&
           (size_t)snprintf(path, len, "%s/%s" S_EXT, a->dir, key) < len;
}

/* <dir>/<graph id>-<name>.gxc */
static bool s_cpath(const gxd_artifacts *a, const char *graph_id, const char *name, char *path,
                    size_t len)
{
    return s_name_ok(graph_id, false) && s_name_ok(name, false) &&
           (size_t)snprintf(path, len, "%s/%s-%s" S_CEXT, a->dir, graph_id, name) < len;
}

/* The regular file at path (no link, FIFO or directory: a stray entry
 * never blocks nor misleads the reader). */
static int s_load_path(gxd_artifacts *a, const char *path, void **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (e == ENOENT) {
            atomic_fetch_add(&a->misses, 1);
            return GX_ENOTFOUND;
        }
        S_LOG(a, GXD_LOG_WARN, "artifact %s: %s", path, strerror(e));
        return GX_EIO;
    }
    int rc = GX_OK;
    char *b = NULL;
    if (!S_ISREG(st.st_mode) || st.st_size > S_MAX_FILE ||
        !(b = malloc((size_t)st.st_size + 1))) {
        rc = GX_EIO;
    } else {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        *len = got; /* short: the reader says truncated */
    }
    close(fd);
    if (rc < 0) {
        free(b);
        S_LOG(a, GXD_LOG_WARN, "artifact %s: %s, not read", path,
              S_ISREG(st.st_mode) ? "too large" : "not a regular file");
        return rc;
    }
    (void)utimensat(AT_FDCWD, path, NULL, 0); /* used now: evicted last */
    *buf = b;
    return GX_OK;
}

int gxd_artifacts_load(gxd_artifacts *a, const char *key, void **buf, size_t *len)
{
    char path[PATH_MAX];
    *buf = NULL;
    *len = 0;
    if (!s_path(a, key, path, sizeof path))
        return GX_ENOTFOUND;
    return s_load_path(a, path, buf, len);
}

int gxd_artifacts_load_consts(gxd_artifacts *a, const char *graph_id, const char *name,
                              void **buf, size_t *len)
{
    char path[PATH_MAX];
    *buf = NULL;
    *len = 0;
    if (!s_cpath(a, graph_id, name, path, sizeof path))
        return GX_ENOTFOUND;
    return s_load_path(a, path, buf, len);
}

void gxd_artifacts_hit(gxd_artifacts *a)
{
    atomic_fetch_add(&a->hits, 1);
}

void gxd_artifacts_reject(gxd_artifacts *a, const char *key)
{
    char path[PATH_MAX];
    atomic_fetch_add(&a->rejected, 1);
    if (s_path(a, key, path, sizeof path))
        (void)unlink(path);
}

/* ---- eviction ---- */

typedef struct s_file {
    char name[NAME_MAX + 1];
    int64_t bytes;
    struct timespec used;
    bool consts;   /* a constants file */
    int refs;      /* constants: plan files naming it */
    long uses;     /* plan: the constants file it names (index), or -1 */
    bool gone;
} s_file;

static int s_older(const void *x, const void *y)
{
    const s_file *a = x, *b = y;
    if (a->consts != b->consts) /* constants files after the plans */
        return a->consts ? 1 : -1;
    if (a->used.tv_sec != b->used.tv_sec)
        return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
    return (a->used.tv_nsec > b->used.tv_nsec) - (a->used.tv_nsec < b->used.tv_nsec);
}

/* The constants file a plan file names: "<graph id>-<name>.gxc" into
 * out, from its header (read, not trusted: anything else than hex digits
 * names none); "" for none. */
static void s_names(int dfd, const char *file, char *out, size_t len)
{
    unsigned char h[GX_ARTIFACT_HEADER];
    out[0] = '\0';
    int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    const ssize_t n = read(fd, h, sizeof h);
    close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h, GX_ARTIFACT_MAGIC, 8) != 0 ||
        gx_artifact_le(h + 8, 4) != GX_ARTIFACT_VERSION)
        return;
    char c[GX_ARTIFACT_CONSTS + 1], g[NAME_MAX + 1];
    memcpy(c, h + 32 + GX_ARTIFACT_BUILD, GX_ARTIFACT_CONSTS);
    c[GX_ARTIFACT_CONSTS] = '\0';
    snprintf(g, sizeof g, "%s", file);
    char *dash = strchr(g, '-');
    if (!dash || !s_name_ok(c, false))
        return;
    *dash = '\0';
    snprintf(out, len, "%.200s-%.32s" S_CEXT, g, c);
}

static bool s_ends(const char *s, const char *ext)
{
    const size_t l = strlen(s), e = strlen(ext);
    return l > e && s[0] != '.' && !strcmp(s + l - e, ext);
}

static int s_by_name(const void *x, const void *y)
{
    return strcmp(((const s_file *)x)->name, ((const s_file *)y)->name);
}

/* Remove the least recently used plan files beyond the bounds, and the
 * constants files no plan file names; counts what stays. Under a->mu
 * (which every save holds: a constants file is written before the plan
 * file naming it, and both before this runs). */
static void s_evict_locked(gxd_artifacts *a)
{
    DIR *d = opendir(a->dir);
    if (!d)
        return;
    s_file *f = NULL;
    size_t n = 0, cap = 0;
    int64_t bytes = 0, files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        const bool c = s_ends(e->d_name, S_CEXT);
        if ((!c && !s_ends(e->d_name, S_EXT)) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            s_file *g = realloc(f, (cap = cap ? 2 * cap : 64) * sizeof *f);
            if (!g)
                break;
            f = g;
        }
        snprintf(f[n].name, sizeof f[n].name, "%s", e->d_name);
        f[n].bytes = st.st_size;
        f[n].used = st.st_mtim;
        f[n].consts = c;
        f[n].refs = 0;
        f[n].uses = -1;
        f[n].gone = false;
        bytes += st.st_size;
        n++;
    }
    /* constants files first, by name; then each plan's reference */
    qsort(f, n, sizeof *f, s_older);
    size_t np = 0;
    while (np < n && !f[np].consts)
        np++;
    qsort(f + np, n - np, sizeof *f, s_by_name);
    for (size_t i = 0; i < np; i++) {
        s_file key;
        s_names(dirfd(d), f[i].name, key.name, sizeof key.name);
        const s_file *c = key.name[0] ? bsearch(&key, f + np, n - np, sizeof *f, s_by_name) : NULL;
        if (c) {
            f[i].uses = c - f;
            f[c - f].refs++;
        }
    }
    files = (int64_t)n;
    /* a constants file no plan names (its plans evicted or refused, a crash
     * between the two writes): nothing reads it any more */
    for (size_t i = np; i < n; i++)
        if (!f[i].refs && unlinkat(dirfd(d), f[i].name, 0) == 0) {
            f[i].gone = true;
            bytes -= f[i].bytes;
            files--;
            atomic_fetch_add(&a->evicted, 1);
        }
    for (size_t k = 0; k < np && (files > a->max_files || bytes > a->max_bytes); k++) {
        if (unlinkat(dirfd(d), f[k].name, 0) != 0)
            continue;
        f[k].gone = true;
        bytes -= f[k].bytes;
        files--;
        atomic_fetch_add(&a->evicted, 1);
        s_file *c = f[k].uses >= 0 ? &f[f[k].uses] : NULL;
        if (c && --c->refs == 0 && unlinkat(dirfd(d), c->name, 0) == 0) {
            c->gone = true;
            bytes -= c->bytes;
            files--;
            atomic_fetch_add(&a->evicted, 1);
        }
    }
    int64_t cf = 0, cb = 0;
    for (size_t i = np; i < n; i++)
        if (!f[i].gone)
            cf++, cb += f[i].bytes;
    atomic_store(&a->files, files);
    atomic_store(&a->bytes, bytes);
    atomic_store(&a->consts_files, cf);
    atomic_store(&a->consts_bytes, cb);
    closedir(d);
    free(f);
}

/* ---- saving ---- */

/* Does the file at path hold buf[0..len)? (A constants file of the same
 * name is meant to; one a disk corrupted is written again rather than
 * named by every new plan. Read on the writer thread, off the jobs.) */
static bool s_same(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return false;
    char chunk[1 << 16];
    size_t at = 0;
    bool same = true;
    while (same && at < len) {
        const size_t want = len - at < sizeof chunk ? len - at : sizeof chunk;
        const ssize_t n = read(fd, chunk, want);
        if (n < 0 && errno == EINTR)
            continue;
        same = n > 0 && memcmp(chunk, (const char *)buf + at, (size_t)n) == 0;
        at += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    return same;
}

/* Under a->mu: the file name (in a->dir) from buf; 0 or an errno, logged. */
static int s_write_locked(gxd_artifacts *a, const char *name, const void *buf, size_t len)
{
    const char *op = "";
    int e = gxd_write_atomic(a->dir, name, buf, len, &op);
    if (e != 0)
        S_LOG(a, GXD_LOG_WARN, "artifact %s/%s: %s: %s", a->dir, name, op,
              e > 0 ? strerror(e) : "failed");
    return e;
}

int gxd_artifacts_save_split(gxd_artifacts *a, const char *key, const void *buf, size_t len,
                             const char *cname, const void *cbuf, size_t clen)
{
    char path[PATH_MAX], cpath[PATH_MAX], gid[128];
    snprintf(gid, sizeof gid, "%s", key);
    char *dash = strchr(gid, '-');
    if (dash)
        *dash = '\0';
    if (!s_path(a, key, path, sizeof path) ||
        (cbuf && (!dash || !s_cpath(a, gid, cname, cpath, sizeof cpath))))
        return GX_EINVAL;
    if ((int64_t)(len + clen) > a->max_bytes) {
        S_LOG(a, GXD_LOG_INFO, "artifact %s: %zu bytes, more than artifacts.max_bytes", key,
              len + clen);
        return GX_ELIMIT;
    }
    pthread_mutex_lock(&a->mu);
    int e = 0;
    struct stat st;
    if (cbuf) {
        if (lstat(cpath, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == clen &&
            s_same(cpath, cbuf, clen)) {
            atomic_fetch_add(&a->consts_reused, 1);
        } else if ((e = s_write_locked(a, cpath + strlen(a->dir) + 1, cbuf, clen)) == 0) {
            atomic_fetch_add(&a->consts_writes, 1);
        }
    }
    if (e == 0 && (e = s_write_locked(a, path + strlen(a->dir) + 1, buf, len)) == 0)
        atomic_fetch_add(&a->writes, 1);
    s_evict_locked(a);
    pthread_mutex_unlock(&a->mu);
    return e ? GX_EIO : GX_OK;
}

int gxd_artifacts_save(gxd_artifacts *a, const char *key, const void *buf, size_t len)
{
    return gxd_artifacts_save_split(a, key, buf, len, "", NULL, 0);
}

void gxd_artifacts_get_stats(gxd_artifacts *a, gxd_artifacts_stats *st)
{
    st->hits = atomic_load(&a->hits);
    st->misses = atomic_load(&a->misses);
    st->rejected = atomic_load(&a->rejected);
    st->writes = atomic_load(&a->writes);
    st->consts_writes = atomic_load(&a->consts_writes);
    st->consts_reused = atomic_load(&a->consts_reused);
    st->evicted = atomic_load(&a->evicted);
    st->dropped = atomic_load(&a->dropped);
    st->write_errors = atomic_load(&a->write_errors);
    st->files = atomic_load(&a->files);
    st->bytes = atomic_load(&a->bytes);
    st->consts_files = atomic_load(&a->consts_files);
    st->consts_bytes = atomic_load(&a->consts_bytes);
    pthread_mutex_lock(&a->wmu);
    st->queued = (int64_t)a->n + a->busy;
    pthread_mutex_unlock(&a->wmu);
}

/* ---- the writer ---- */

static void *s_writer_main(void *arg)
{
    gxd_artifacts *a = arg;
    pthread_mutex_lock(&a->wmu);
    for (;;) {
        while (!a->n && !a->stopped)
            pthread_cond_wait(&a->wcv, &a->wmu);
        if (!a->n)
            break; /* stopped, nothing left */
        s_item it = a->q[a->head];
        a->head = (a->head + 1) % S_QUEUE;
        a->n--;
        a->busy = true;
        pthread_mutex_unlock(&a->wmu);
        if (it.write(it.arg, a) < 0)
            atomic_fetch_add(&a->write_errors, 1);
        if (it.drop)
            it.drop(it.arg);
        pthread_mutex_lock(&a->wmu);
        a->busy = false;
        pthread_cond_broadcast(&a->wcv);
    }
    pthread_mutex_unlock(&a->wmu);
    return NULL;
}

int gxd_artifacts_post(gxd_artifacts *a, int (*write)(void *arg, gxd_artifacts *a),
                       void (*drop)(void *arg), void *arg)
{
    pthread_mutex_lock(&a->wmu);
    int rc = GX_OK;
    if (a->stopped)
        rc = GX_EBUSY;
    else if (a->n == S_QUEUE)
        rc = GX_ELIMIT;
    else if (!a->started && pthread_create(&a->thread, NULL, s_writer_main, a) != 0)
        rc = GX_ENOMEM;
    if (rc == GX_OK) {
        a->started = true;
        a->q[(a->head + a->n++) % S_QUEUE] = (s_item){write, drop, arg};
        pthread_cond_broadcast(&a->wcv);
    }
    pthread_mutex_unlock(&a->wmu);
    if (rc < 0) {
        atomic_fetch_add(&a->dropped, 1);
        S_LOG(a, GXD_LOG_INFO, "artifact write dropped: %s",
              rc == GX_ELIMIT ? "the writer's queue is full" : "the writer is stopped");
        if (drop)
            drop(arg);
    }
    return rc;
}

void gxd_artifacts_flush(gxd_artifacts *a)
{
    pthread_mutex_lock(&a->wmu);
    while (a->started && (a->n || a->busy))
        pthread_cond_wait(&a->wcv, &a->wmu);
    pthread_mutex_unlock(&a->wmu);
}

void gxd_artifacts_stop(gxd_artifacts *a, bool flush)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->wmu);
    const bool join = a->started && !a->stopped;
    a->stopped = true;
    while (!flush && a->n) { /* dropped, their holds given back */
        s_item it = a->q[a->head];
        a->head = (a->head + 1) % S_QUEUE;
        a->n--;
        atomic_fetch_add(&a->dropped, 1);
        pthread_mutex_unlock(&a->wmu);
        if (it.drop)
            it.drop(it.arg);
        pthread_mutex_lock(&a->wmu);
    }
    pthread_cond_broadcast(&a->wcv);
    pthread_mutex_unlock(&a->wmu);
    if (join)
        pthread_join(a->thread, NULL);
}
