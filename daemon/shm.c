/* Shared-memory regions of local clients. See shm.h and docs/shm.md. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/shm.h"

/*
 * The SIGBUS handler's table: where each region is mapped. Process-wide,
 * as signal dispositions are, like the signal pipe in server.c; the I/O
 * thread fills and empties slots, the handler (on whichever worker
 * touched a lost page) only reads them and sets faulted.
 */
static struct {
    atomic_uintptr_t base;
    atomic_size_t len;
    atomic_int faulted;
} s_maps[GXD_SHM_MAX_MAPS];
static atomic_int s_faults; /* every fault caught, for the stats */
static struct sigaction s_prev_bus;
static atomic_bool s_installed;

/* A page of a region's file went away under the mapping (the client
 * truncated it): anonymous zero pages replace the whole mapping, so the
 * access that faulted and every later one succeed, and the region is
 * marked. A fault anywhere else goes to the handler that was there before
 * (the default: the process dies as it would have). mmap is not on POSIX's
 * list of async-signal-safe functions, but on Linux it is one system call
 * with no user-space state, which is what that list guards. */
static void s_on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < GXD_SHM_MAX_MAPS; i++) {
        uintptr_t base = atomic_load(&s_maps[i].base);
        size_t len = atomic_load(&s_maps[i].len);
        if (!base || a - base >= len)
            continue;
        if (mmap((void *)base, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0) == MAP_FAILED)
            break;
        atomic_store(&s_maps[i].faulted, 1);
        atomic_fetch_add(&s_faults, 1);
        return;
    }
    if (s_prev_bus.sa_flags & SA_SIGINFO) {
        s_prev_bus.sa_sigaction(sig, si, uctx);
    } else if (s_prev_bus.sa_handler != SIG_DFL && s_prev_bus.sa_handler != SIG_IGN) {
        s_prev_bus.sa_handler(sig);
    } else {
        signal(SIGBUS, SIG_DFL); /* the access faults again and ends the process */
    }
}

bool gxd_shm_in_place(int dt)
{
    return dt == GX_F32 || dt == GX_F16 || dt == GX_BF16 || dt == GX_F64;
}

int gxd_shm_init(gxd_shm *s, size_t max_per_client, size_t max_bytes)
{
    memset(s, 0, sizeof *s);
    s->max_per_client = max_per_client;
    s->max_bytes = max_bytes;
    atomic_init(&s->mapped, 0);
    atomic_init(&s->mapped_bytes, 0);
    if (atomic_exchange(&s_installed, true))
        return GX_OK;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = s_on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &s_prev_bus) != 0) {
        atomic_store(&s_installed, false);
        return GX_EINTERNAL;
    }
    return GX_OK;
}

void gxd_shm_set_uid_limits(gxd_shm *s, size_t max_per_uid, size_t max_bytes_per_uid)
{
    s->max_per_uid = max_per_uid;
    s->max_bytes_per_uid = max_bytes_per_uid;
}

static bool s_mine(const gxd_shm_region *r, const void *identity, size_t identity_len)
{
    return r->identity_len == identity_len && memcmp(r->identity, identity, identity_len) == 0;
}

/* Unlinks *pp from the table and drops the table's reference. */
static void s_unlink(gxd_shm_region **pp)
{
    gxd_shm_region *r = *pp;
    *pp = r->next;
    r->next = NULL;
    gxd_shm_region_release(&r);
}

void gxd_shm_fini(gxd_shm *s)
{
    while (s->head)
        s_unlink(&s->head);
}

gxd_shm_region *gxd_shm_region_ref(gxd_shm_region *r)
{
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void gxd_shm_region_release(gxd_shm_region **rp)
{
    if (!rp || !*rp)
        return;
    gxd_shm_region *r = *rp;
    *rp = NULL;
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    if (r->slot >= 0) {
        atomic_store(&s_maps[r->slot].base, 0);
        atomic_store(&s_maps[r->slot].len, 0);
        atomic_store(&s_maps[r->slot].faulted, 0);
    }
    if (r->base)
        munmap(r->base, r->bytes);
    if (r->fd >= 0)
        close(r->fd);
    atomic_fetch_sub(&r->owner->mapped, 1);
    atomic_fetch_sub(&r->owner->mapped_bytes, r->bytes);
    free(r);
}

size_t gxd_shm_count(gxd_shm *s, const void *identity, size_t identity_len)
{
    size_t n = 0;
    for (gxd_shm_region *r = s->head; r; r = r->next)
        n += s_mine(r, identity, identity_len);
    return n;
}

/* Why a registration is refused: counted, and the status with err. */
#define S_REFUSE(s, err, errlen, status, ...)                                                  \
    ((s)->stats.refused++, gx_errf(err, errlen, status, __VA_ARGS__))

int gxd_shm_register(gxd_shm *s, const void *identity, size_t identity_len, uid_t uid,
                     const char *name, size_t bytes, char *err, size_t errlen)
{
    if (!gx_wire_shm_name_ok(name))
        return S_REFUSE(s, err, errlen, GX_EINVAL,
                        "SHM_REGISTER: '%s' is not a region name (1 to %d of letters, digits, "
                        "'.', '_', '-', not starting with '.')", name, GX_WIRE_SHM_MAX_NAME - 1);
    if (identity_len > GXD_MAX_IDENTITY)
        return S_REFUSE(s, err, errlen, GX_EINVAL, "SHM_REGISTER: routing id too long");
    if (bytes == 0)
        return S_REFUSE(s, err, errlen, GX_EINVAL, "SHM_REGISTER: a region of 0 bytes");
    for (gxd_shm_region *r = s->head; r; r = r->next)
        if (s_mine(r, identity, identity_len) && strcmp(r->name, name) == 0)
            return S_REFUSE(s, err, errlen, GX_EBUSY,
                            "SHM_REGISTER: region '%s' is registered already (SHM_UNREGISTER "
                            "it first)", name);
    size_t mine = gxd_shm_count(s, identity, identity_len);
    if (mine >= s->max_per_client)
        return S_REFUSE(s, err, errlen, GX_ELIMIT,
                        "SHM_REGISTER: this client has %zu regions, "
                        "limits.shm_regions_per_client is %zu", mine, s->max_per_client);
    size_t mapped = atomic_load(&s->mapped_bytes);
    if (bytes > s->max_bytes || mapped > s->max_bytes - bytes)
        return S_REFUSE(s, err, errlen, GX_ELIMIT,
                        "SHM_REGISTER: %zu more bytes would map %zu in all, limits.shm_bytes "
                        "is %zu", bytes, mapped + bytes, s->max_bytes);
    /* every connection of the uid together: more connections are no way
     * around the limits (registered regions count, not those unregistered
     * that a job still holds) */
    size_t uid_regions = 0, uid_bytes = 0;
    for (gxd_shm_region *r = s->head; r; r = r->next)
        if (r->uid == uid) {
            uid_regions++;
            uid_bytes += r->bytes;
        }
    if (s->max_per_uid && uid_regions >= s->max_per_uid)
        return S_REFUSE(s, err, errlen, GX_ELIMIT,
                        "SHM_REGISTER: uid %lu has %zu regions over all its connections, "
                        "limits.shm_regions_per_uid is %zu", (unsigned long)uid, uid_regions,
                        s->max_per_uid);
    if (s->max_bytes_per_uid &&
        (bytes > s->max_bytes_per_uid || uid_bytes > s->max_bytes_per_uid - bytes))
        return S_REFUSE(s, err, errlen, GX_ELIMIT,
                        "SHM_REGISTER: %zu more bytes would give uid %lu %zu registered over all "
                        "its connections, limits.shm_bytes_per_uid is %zu", bytes,
                        (unsigned long)uid, uid_bytes + bytes, s->max_bytes_per_uid);
    int slot = 0;
    while (slot < GXD_SHM_MAX_MAPS && atomic_load(&s_maps[slot].base))
        slot++;
    if (slot == GXD_SHM_MAX_MAPS)
        return S_REFUSE(s, err, errlen, GX_ELIMIT,
                        "SHM_REGISTER: the daemon maps %d regions already, its most",
                        GXD_SHM_MAX_MAPS);
    char path[GX_WIRE_SHM_MAX_NAME + 2];
    snprintf(path, sizeof path, "/%s", name);
    /* shm_open opens with O_NOFOLLOW: a symbolic link in /dev/shm is refused */
    int fd = shm_open(path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return S_REFUSE(s, err, errlen, errno == ENOENT ? GX_ENOTFOUND : GX_EPERM,
                        "SHM_REGISTER: cannot open /dev/shm/%s: %s", name, strerror(errno));
    struct stat st;
    int rc = GX_OK;
    /* the open file's owner, not the path's: nothing can swap it between */
    if (fstat(fd, &st) != 0)
        rc = S_REFUSE(s, err, errlen, GX_EIO, "SHM_REGISTER: fstat /dev/shm/%s: %s", name,
                      strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = S_REFUSE(s, err, errlen, GX_EINVAL, "SHM_REGISTER: /dev/shm/%s is not a regular file",
                      name);
    else if (st.st_uid != uid)
        rc = S_REFUSE(s, err, errlen, GX_EPERM,
                      "SHM_REGISTER: /dev/shm/%s belongs to uid %lu, not to this client's "
                      "uid %lu", name, (unsigned long)st.st_uid, (unsigned long)uid);
    else if (st.st_mode & 0007)
        rc = S_REFUSE(s, err, errlen, GX_EPERM,
                      "SHM_REGISTER: /dev/shm/%s has mode %04o: others may use it (create it "
                      "0600, or 0660 for the daemon's group)", name, (unsigned)(st.st_mode & 07777));
    else if ((uint64_t)st.st_size < bytes)
        rc = S_REFUSE(s, err, errlen, GX_EINVAL,
                      "SHM_REGISTER: /dev/shm/%s has %lld bytes, fewer than the %zu to register",
                      name, (long long)st.st_size, bytes);
    void *base = MAP_FAILED;
    if (rc == GX_OK &&
        (base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        rc = S_REFUSE(s, err, errlen, errno == ENOMEM ? GX_ENOMEM : GX_EIO,
                      "SHM_REGISTER: mmap of %zu bytes of /dev/shm/%s: %s", bytes, name,
                      strerror(errno));
    gxd_shm_region *r = NULL;
    if (rc == GX_OK && !(r = calloc(1, sizeof *r)))
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    if (rc < 0 || !r) {
        if (base != MAP_FAILED)
            munmap(base, bytes);
        close(fd);
        return rc;
    }
    snprintf(r->name, sizeof r->name, "%s", name);
    memcpy(r->identity, identity, identity_len);
    r->identity_len = identity_len;
    r->uid = uid;
    r->fd = fd;
    r->base = base;
    r->bytes = bytes;
    r->slot = slot;
    r->owner = s;
    atomic_init(&r->refs, 1); /* the table's */
    atomic_store(&s_maps[slot].faulted, 0);
    atomic_store(&s_maps[slot].len, bytes);
    atomic_store(&s_maps[slot].base, (uintptr_t)base);
    atomic_fetch_add(&s->mapped, 1);
    atomic_fetch_add(&s->mapped_bytes, bytes);
    r->next = s->head;
    s->head = r;
    s->stats.registered++;
    return GX_OK;
}

int gxd_shm_unregister(gxd_shm *s, const void *identity, size_t identity_len, const char *name,
                       size_t *n)
{
    *n = 0;
    for (gxd_shm_region **pp = &s->head; *pp;) {
        if (s_mine(*pp, identity, identity_len) && (!name || strcmp((*pp)->name, name) == 0)) {
            s_unlink(pp);
            ++*n;
        } else {
            pp = &(*pp)->next;
        }
    }
    s->stats.unregistered += *n;
    return name && !*n ? GX_ENOTFOUND : GX_OK;
}

size_t gxd_shm_drop_client(gxd_shm *s, const void *identity, size_t identity_len)
{
    size_t n = 0;
    for (gxd_shm_region **pp = &s->head; *pp;) {
        if (s_mine(*pp, identity, identity_len)) {
            s_unlink(pp);
            n++;
        } else {
            pp = &(*pp)->next;
        }
    }
    s->stats.dropped += n;
    return n;
}

gxd_shm_region *gxd_shm_find(gxd_shm *s, const void *identity, size_t identity_len,
                             const char *name)
{
    for (gxd_shm_region *r = s->head; r; r = r->next)
        if (s_mine(r, identity, identity_len) && strcmp(r->name, name) == 0)
            return gxd_shm_region_ref(r);
    return NULL;
}

void gxd_shm_each(gxd_shm *s, const void *identity, size_t identity_len,
                  void (*fn)(void *arg, const gxd_shm_region *r), void *arg)
{
    for (gxd_shm_region *r = s->head; r; r = r->next)
        if (s_mine(r, identity, identity_len))
            fn(arg, r);
}

bool gxd_shm_faulted(const gxd_shm_region *r)
{
    return r->slot >= 0 && atomic_load(&s_maps[r->slot].faulted);
}

uint64_t gxd_shm_faults(void)
{
    return (uint64_t)atomic_load(&s_faults);
}

int gxd_shm_slice(const gxd_shm_region *r, uint64_t offset, uint64_t bytes, void **p, char *err,
                  size_t errlen)
{
    *p = NULL;
    if (offset > r->bytes || bytes > r->bytes - offset)
        return gx_errf(err, errlen, GX_EINVAL,
                       "region '%s': offset %llu + %llu bytes lies past its end (%zu bytes "
                       "registered)", r->name, (unsigned long long)offset,
                       (unsigned long long)bytes, r->bytes);
    if (gxd_shm_faulted(r))
        return gx_errf(err, errlen, GX_EIO,
                       "region '%s' was truncated while the daemon had it mapped, so its "
                       "contents were lost: unregister it and register it again", r->name);
    struct stat st = {0};
    if (fstat(r->fd, &st) != 0 || (uint64_t)st.st_size < r->bytes)
        return gx_errf(err, errlen, GX_EIO,
                       "region '%s': its file has %lld bytes now, fewer than the %zu registered "
                       "(truncated after SHM_REGISTER)", r->name, (long long)st.st_size,
                       r->bytes);
    *p = (char *)r->base + offset;
    return GX_OK;
}
