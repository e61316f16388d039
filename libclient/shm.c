/* Shared-memory regions of a client. See client.h and docs/shm.md. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libclient/shm.h"

GX_EXPORT gx_shm *gx_shm_new(size_t bytes, char *err, size_t errlen)
{
    static atomic_uint seq;
    if (bytes == 0 || bytes > (size_t)INT64_MAX) {
        gx_errf(err, errlen, GX_EINVAL, "a shared-memory region of %zu bytes", bytes);
        return NULL;
    }
    gx_shm *s = calloc(1, sizeof *s);
    if (!s) {
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int fd = -1;
    /* O_EXCL: a name someone else made first is never used */
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        snprintf(s->name, sizeof s->name, "gexec-%ld-%u-%lx", (long)getpid(),
                 atomic_fetch_add(&seq, 1), (unsigned long)(ts.tv_nsec ^ (long)tries * 7919));
        char path[GX_WIRE_SHM_MAX_NAME + 2];
        snprintf(path, sizeof path, "/%s", s->name);
        fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        gx_errf(err, errlen, GX_EIO, "shm_open /dev/shm/%s: %s", s->name, strerror(errno));
        free(s);
        return NULL;
    }
    s->linked = true;
    s->bytes = bytes;
    s->base = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) != 0)
        gx_errf(err, errlen, GX_ENOMEM, "ftruncate /dev/shm/%s to %zu bytes: %s", s->name, bytes,
                strerror(errno));
    else if ((s->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        gx_errf(err, errlen, GX_ENOMEM, "mmap /dev/shm/%s: %s", s->name, strerror(errno));
    close(fd);
    if (s->base == MAP_FAILED) {
        s->base = NULL;
        gx_shm_destroy(&s);
    }
    return s;
}

void gx_shm_unlink(gx_shm *s)
{
    if (!s->linked)
        return;
    char path[GX_WIRE_SHM_MAX_NAME + 2];
    snprintf(path, sizeof path, "/%s", s->name);
    shm_unlink(path);
    s->linked = false;
}

GX_EXPORT void gx_shm_destroy(gx_shm **sp)
{
    if (!sp || !*sp)
        return;
    gx_shm *s = *sp;
    gx_shm_unlink(s);
    if (s->base)
        munmap(s->base, s->bytes);
    free(s);
    *sp = NULL;
}

GX_EXPORT void *gx_shm_data(gx_shm *s) { return s ? s->base : NULL; }
GX_EXPORT size_t gx_shm_size(const gx_shm *s) { return s ? s->bytes : 0; }
GX_EXPORT const char *gx_shm_name(const gx_shm *s) { return s ? s->name : NULL; }
