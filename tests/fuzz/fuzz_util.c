/* Helpers every fuzz target shares. See fuzz.h. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

uint32_t gx_fuzz_hash(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h;
}

int gx_fuzz_memfd(const char *name, const void *data, size_t size, char *path, size_t pathlen)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, (const char *)data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    if (access(path, R_OK | W_OK) != 0) { /* no /proc: skip the file checks */
        close(fd);
        return -1;
    }
    return fd;
}
