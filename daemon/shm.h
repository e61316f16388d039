/*
 * Shared-memory regions (docs/shm.md): POSIX shared memory a local client
 * creates (/dev/shm/<name>) and registers once (SHM_REGISTER), so that its
 * RUN requests name {region, offset, bytes} for inputs and for an output
 * area instead of sending the bytes over the socket.
 *
 * The daemon opens the file by name, checks its owner against the uid the
 * kernel gives for the ipc connection (SO_PEERCRED), and maps it shared.
 * A region belongs to the connection that registered it (its routing id)
 * and goes when that client unregisters it or disconnects; jobs still
 * using it hold references, so it is unmapped after the last of them.
 *
 * A client may truncate the file while the daemon has it mapped; touching
 * the lost pages would raise SIGBUS in a worker. Each use checks the size
 * again (gxd_shm_slice), and for a truncation during a run a SIGBUS handler
 * puts anonymous zero pages over the whole mapping and marks the region
 * faulted: the kernel carries on, the jobs that used it fail, and the
 * region is refused from then on (libwayland's wl_shm does the same).
 *
 *     gxd_shm s;
 *     gxd_shm_init(&s, 64, 8 << 30);
 *     gxd_shm_register(&s, id, idlen, uid, "gexec-1234-0", 1 << 20, err, errlen);
 *     gxd_shm_region *r = gxd_shm_find(&s, id, idlen, "gexec-1234-0");  // a reference
 *     void *p;
 *     gxd_shm_slice(r, 0, 4096, &p, err, errlen);
 *     ...
 *     gxd_shm_region_release(&r);
 *     gxd_shm_drop_client(&s, id, idlen);   // the client went away
 *     gxd_shm_fini(&s);
 *
 * The table (gxd_shm) is the I/O thread's; workers only read through the
 * pointers gxd_shm_slice gave while their job holds the region.
 */
#ifndef GXD_SHM_H
#define GXD_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/job.h"
#include "core/wire.h"

/* Regions mapped at once by one daemon process, whatever the limits say
 * (the SIGBUS handler's table is this long). */
#define GXD_SHM_MAX_MAPS 1024

typedef struct gxd_shm gxd_shm;

typedef struct gxd_shm_region {
    char name[GX_WIRE_SHM_MAX_NAME];
    uint8_t identity[GXD_MAX_IDENTITY]; /* the client's routing id */
    size_t identity_len;
    uid_t uid;    /* the client's, as the kernel gave it (limits per uid) */
    int fd;
    void *base;   /* mapped shared, bytes long */
    size_t bytes;
    int slot;     /* in the SIGBUS handler's table */
    atomic_int refs;
    gxd_shm *owner;
    struct gxd_shm_region *next; /* the table's list (while registered) */
} gxd_shm_region;

/* Counters (STATS "shm"). */
typedef struct gxd_shm_stats {
    uint64_t registered, unregistered;
    uint64_t dropped;  /* regions of clients that disconnected */
    uint64_t refused;  /* registrations and descriptors refused */
} gxd_shm_stats;

struct gxd_shm {
    gxd_shm_region *head; /* registered regions */
    size_t max_per_client;
    size_t max_bytes;
    size_t max_per_uid;       /* limits.shm_regions_per_uid; 0: no bound per uid */
    size_t max_bytes_per_uid; /* limits.shm_bytes_per_uid; 0: no bound per uid */
    atomic_size_t mapped;       /* regions mapped, registered or not */
    atomic_size_t mapped_bytes; /* their bytes */
    gxd_shm_stats stats;
};

/* An empty table with the limits (limits.shm_regions_per_client, 0: no
 * client may register; limits.shm_bytes, every client's regions together);
 * installs the SIGBUS handler once per process. GX_OK or GX_EINTERNAL. */
int gxd_shm_init(gxd_shm *s, size_t max_per_client, size_t max_bytes);
/* The bounds over all the connections of one uid together
 * (limits.shm_regions_per_uid, limits.shm_bytes_per_uid; 0: none beyond
 * the per-client and the daemon's). Registered regions stay; later
 * registrations see them. */
void gxd_shm_set_uid_limits(gxd_shm *s, size_t max_per_uid, size_t max_bytes_per_uid);
/* Drops every registered region (those jobs still hold go with them). */
void gxd_shm_fini(gxd_shm *s);

/* SHM_REGISTER: open /dev/shm/<name> (name checked by
 * gx_wire_shm_name_ok), check that uid owns it, that it is a regular file
 * with no permission for others and at least bytes long, and map its
 * first bytes. The limits count the client's regions, and every region
 * of its uid (any connection), and the bytes mapped in all and for its
 * uid. GX_OK, or GX_EPERM / GX_ENOTFOUND / GX_ELIMIT / GX_EINVAL /
 * GX_EBUSY (the name is registered by this client already) with err. */
int gxd_shm_register(gxd_shm *s, const void *identity, size_t identity_len, uid_t uid,
                     const char *name, size_t bytes, char *err, size_t errlen);
/* SHM_UNREGISTER: the client's region name, or all its regions when name
 * is NULL; *n: how many went. GX_OK, or GX_ENOTFOUND for a name it did not
 * register. */
int gxd_shm_unregister(gxd_shm *s, const void *identity, size_t identity_len, const char *name,
                       size_t *n);
/* The client went away: its regions go; returns how many. */
size_t gxd_shm_drop_client(gxd_shm *s, const void *identity, size_t identity_len);
/* The client's region name: a new reference (release it), or NULL. */
gxd_shm_region *gxd_shm_find(gxd_shm *s, const void *identity, size_t identity_len,
                             const char *name);
/* The client's regions in registration order (most recent first), for
 * SHM_LIST: calls fn for each. */
void gxd_shm_each(gxd_shm *s, const void *identity, size_t identity_len,
                  void (*fn)(void *arg, const gxd_shm_region *r), void *arg);
/* Number of the client's regions. */
size_t gxd_shm_count(gxd_shm *s, const void *identity, size_t identity_len);

/* bytes at offset of r, in *p: GX_OK, or GX_EINVAL when they do not lie in
 * the region, GX_EIO when the file is shorter now than at registration
 * or a truncation was caught while it was mapped (err says which). */
int gxd_shm_slice(const gxd_shm_region *r, uint64_t offset, uint64_t bytes, void **p, char *err,
                  size_t errlen);
/* Whether a truncation of r's file was caught (SIGBUS) while mapped: its
 * pages are the daemon's zeros since, not the client's. */
bool gxd_shm_faulted(const gxd_shm_region *r);

/* SIGBUS faults caught in truncated regions since the process started
 * (every daemon of the process). */
uint64_t gxd_shm_faults(void);

/* A new reference to r. */
gxd_shm_region *gxd_shm_region_ref(gxd_shm_region *r);
/* Drops a reference; the last one unmaps. Accepts NULL; sets *r = NULL. */
void gxd_shm_region_release(gxd_shm_region **r);

/* Whether inputs of dtype dt may be read where the client's region has
 * them: floating-point values only. Integers and booleans can be indices,
 * shapes or loop counts that a kernel checks and then reads again, so they
 * are copied before the run and a client writing them meanwhile cannot
 * change them between the check and the use. */
bool gxd_shm_in_place(int dt);

#endif
