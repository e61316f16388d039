/* The artifact cache: a bounded directory of plan files. See artifacts.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/artifacts.h"
#include "daemon/profile.h"
#include "gexec/status.h"

#define S_EXT ".gxa"
/* a file bigger than this is not read (limits.max_arena_bytes bounds plans
 * anyway; this bounds what a stray file costs) */
#define S_MAX_FILE (INT64_C(4) << 30)

#define S_LOG(a, lvl, ...)                                                    \
    do {                                                                      \
        if ((a)->log)                                                         \
            GXD_LOG((a)->log, lvl, __VA_ARGS__);                              \
    } while (0)

struct gxd_artifacts {
    char dir[PATH_MAX];
    int64_t max_files, max_bytes;
    gxd_log *log;
    pthread_mutex_t mu; /* saves and evictions */
    _Atomic int64_t hits, misses, rejected, writes, evicted, files, bytes;
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
    return a;
}

void gxd_artifacts_destroy(gxd_artifacts **ap)
{
    if (!ap || !*ap)
        return;
    pthread_mutex_destroy(&(*ap)->mu);
    free(*ap);
    *ap = NULL;
}

const char *gxd_artifacts_dir(const gxd_artifacts *a)
{
    return a->dir;
}

static bool s_path(const gxd_artifacts *a, const char *key, char *path, size_t len)
{
    for (const char *c = key; *c; c++) /* keys are hex and '-' */
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
            return false;
    return *key && (size_t)snprintf(path, len, "%s/%s" S_EXT, a->dir, key) < len;
}

int gxd_artifacts_load(gxd_artifacts *a, const char *key, void **buf, size_t *len)
{
    char path[PATH_MAX];
    *buf = NULL;
    *len = 0;
    if (!s_path(a, key, path, sizeof path))
        return GX_ENOTFOUND;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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
    if (st.st_size > S_MAX_FILE || !(b = malloc((size_t)st.st_size + 1))) {
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
        S_LOG(a, GXD_LOG_WARN, "artifact %s: %lld bytes, not read", path,
                (long long)st.st_size);
        return rc;
    }
    (void)utimensat(AT_FDCWD, path, NULL, 0); /* used now: evicted last */
    *buf = b;
    return GX_OK;
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

typedef struct s_file {
    char name[NAME_MAX + 1];
    int64_t bytes;
    struct timespec used;
} s_file;

static int s_older(const void *x, const void *y)
{
    const s_file *a = x, *b = y;
    if (a->used.tv_sec != b->used.tv_sec)
        return a->used.tv_sec < b->used.tv_sec ? -1 : 1;
    return (a->used.tv_nsec > b->used.tv_nsec) - (a->used.tv_nsec < b->used.tv_nsec);
}

/* Remove the least recently used files beyond the bounds; counts what
 * stays. Under a->mu. */
static void s_evict_locked(gxd_artifacts *a)
{
    DIR *d = opendir(a->dir);
    if (!d)
        return;
    s_file *f = NULL;
    size_t n = 0, cap = 0;
    int64_t bytes = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t l = strlen(e->d_name);
        struct stat st;
        if (l <= strlen(S_EXT) || e->d_name[0] == '.' ||
            strcmp(e->d_name + l - strlen(S_EXT), S_EXT) ||
            fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
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
        bytes += st.st_size;
        n++;
    }
    qsort(f, n, sizeof *f, s_older);
    size_t k = 0;
    for (; k < n && ((int64_t)(n - k) > a->max_files || bytes > a->max_bytes); k++) {
        if (unlinkat(dirfd(d), f[k].name, 0) != 0)
            continue;
        bytes -= f[k].bytes;
        atomic_fetch_add(&a->evicted, 1);
    }
    atomic_store(&a->files, (int64_t)(n - k));
    atomic_store(&a->bytes, bytes);
    closedir(d);
    free(f);
}

int gxd_artifacts_save(gxd_artifacts *a, const char *key, const void *buf, size_t len)
{
    char path[PATH_MAX];
    if (!s_path(a, key, path, sizeof path))
        return GX_EINVAL;
    if ((int64_t)len > a->max_bytes) {
        S_LOG(a, GXD_LOG_INFO, "artifact %s: %zu bytes, more than artifacts.max_bytes",
                key, len);
        return GX_ELIMIT;
    }
    const char *op = "";
    pthread_mutex_lock(&a->mu);
    int e = gxd_write_atomic(a->dir, path + strlen(a->dir) + 1, buf, len, &op);
    if (e == 0)
        atomic_fetch_add(&a->writes, 1);
    s_evict_locked(a);
    pthread_mutex_unlock(&a->mu);
    if (e != 0) {
        S_LOG(a, GXD_LOG_WARN, "artifact %s: %s: %s", path, op, strerror(e));
        return GX_EIO;
    }
    return GX_OK;
}

void gxd_artifacts_get_stats(gxd_artifacts *a, gxd_artifacts_stats *st)
{
    st->hits = atomic_load(&a->hits);
    st->misses = atomic_load(&a->misses);
    st->rejected = atomic_load(&a->rejected);
    st->writes = atomic_load(&a->writes);
    st->evicted = atomic_load(&a->evicted);
    st->files = atomic_load(&a->files);
    st->bytes = atomic_load(&a->bytes);
}
