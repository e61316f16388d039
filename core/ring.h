/*
 * The submission/completion ring of a shared-memory region (docs/shm.md,
 * "Ring"): the layout both sides agree on. A local client lays it at the
 * start of a region it registered (SHM_REGISTER), asks the daemon to serve
 * it (RING_OPEN), binds the graphs it will run to slots (RING_BIND) and
 * then submits jobs by writing a descriptor and moving sq_tail; the daemon
 * answers each with exactly one completion in the completion queue.
 * Control (open, bind, close) stays on the ZeroMQ socket.
 *
 *   region: [gx_ring_hdr][entries x gx_ring_sqe][entries x gx_ring_cqe][data...]
 *
 * Single producer, single consumer each way: the client produces
 * submissions and consumes completions, the daemon the other way round.
 * Indices run freely (uint32, wrapping); slot = index & (entries - 1).
 * A producer writes the entry, then stores its tail with release; the
 * consumer loads the tail with acquire, reads the entry, then stores its
 * head with release. Wake-ups: a side about to sleep sets its *_sleep word,
 * checks the tail again and FUTEX_WAITs on its *_futex word; the producer
 * stores its tail, then (sequentially consistent) reads *_sleep and, when
 * set, bumps *_futex and FUTEX_WAKEs it.
 *
 * The daemon treats every byte here as hostile: it reads the header's
 * indices and copies a descriptor out before it looks at it, and never
 * reads it again.
 */
#ifndef GX_CORE_RING_H
#define GX_CORE_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gexec/client.h"
#include "gexec/tensor.h"

#define GX_RING_MAGIC 0x32676e72u /* "rng2" (completions say how the job ran, and
                                   * GX_RING_CQE_SOCKET), written by the client */
#define GX_RING_MAX_ENTRIES 1024  /* a power of two, at most this */
#define GX_RING_MAX_IO 4          /* inputs, and outputs, of one job through the ring */
#define GX_RING_MAX_SLOTS 16      /* graphs bound to one ring */
#define GX_RING_NAME 32           /* an input's or output's name, NUL included */
/* gx_ring_cqe.flags: the job ran, but the ring cannot carry its outputs
 * (more than GX_RING_MAX_IO, strings or sequences, or more bytes than the
 * output area): its status says why, and the client runs the job again
 * over the socket, which carries any output */
#define GX_RING_CQE_SOCKET 1u

typedef struct gx_ring_tensor {
    char name[GX_RING_NAME];
    uint64_t offset; /* in the region, at or after the data area */
    uint64_t bytes;
    int64_t shape[GX_MAX_DIMS];
    int32_t dtype;
    int32_t ndim;
} gx_ring_tensor;

/* What a submission asks for (gx_ring_sqe.op). */
#define GX_RING_RUN 0    /* run the graph bound to slot */
#define GX_RING_CANCEL 1 /* cancel the job submitted at index target */

/* A submission. GX_RING_RUN: run the graph bound to slot on n_in inputs;
 * the outputs go to the output area, one after the other, each 64-byte
 * aligned. GX_RING_CANCEL: cancel the run this client submitted at
 * submission index target (the sq_tail it published it at, less one), as
 * a socket CANCEL does: a queued job is taken out and completes with
 * GX_ECANCELLED, a running one stops at its next step; the cancel's own
 * completion says GX_OK, or GX_ENOTFOUND when that job was already
 * answered (or never was). Either way the run gets exactly one
 * completion. The other fields of a cancel are not read. */
typedef struct gx_ring_sqe {
    uint64_t user; /* the client's tag, given back in the completion */
    uint32_t op;   /* GX_RING_RUN, GX_RING_CANCEL */
    uint32_t slot; /* RING_BIND's answer */
    uint32_t target; /* GX_RING_CANCEL: the run's submission index */
    uint32_t n_in;
    int32_t priority;
    int32_t pad;
    int64_t deadline_ms; /* 0: none */
    uint64_t out_offset, out_bytes;
    gx_ring_tensor in[GX_RING_MAX_IO];
} gx_ring_sqe;

/* A completion: status (a gx_status), how the job ran (what a socket
 * RUN's reply says of it: docs/protocol.md "run"), and on success the
 * outputs where they lie in the output area; on failure a message. */
typedef struct gx_ring_cqe {
    uint64_t user;
    int32_t status;
    uint32_t n_out;
    uint32_t flags; /* GX_RING_CQE_* */
    int32_t workers, replicas, batched;
    int64_t queue_us, compute_us, compile_us, device_us;
    double est_us[GX_MODE_COUNT]; /* the policy's estimate per mode; < 0: none */
    char mode[16];
    char device[32];
    char reason[160];
    gx_ring_tensor out[GX_RING_MAX_IO];
    char message[160];
} gx_ring_cqe;

typedef struct gx_ring_hdr {
    uint32_t magic;   /* GX_RING_MAGIC */
    uint32_t entries; /* a power of two in [1, GX_RING_MAX_ENTRIES] */
    alignas(64) _Atomic uint32_t sq_tail; /* client: submissions written */
    _Atomic uint32_t sq_sleep;            /* daemon: 1 while it sleeps (or is about to) */
    _Atomic uint32_t sq_futex;            /* client bumps it to wake the daemon */
    alignas(64) _Atomic uint32_t sq_head; /* daemon: submissions copied out (slots free) */
    _Atomic uint32_t cq_tail;             /* daemon: completions written */
    alignas(64) _Atomic uint32_t cq_head; /* client: completions read */
    _Atomic uint32_t cq_sleep;            /* client: 1 while it sleeps (or is about to) */
    _Atomic uint32_t cq_futex;            /* daemon bumps it to wake the client */
} gx_ring_hdr;

/* Where the parts of a ring of entries lie in its region. */
static inline uint64_t gx_ring_sq_offset(void) { return (sizeof(gx_ring_hdr) + 63) & ~(uint64_t)63; }
static inline uint64_t gx_ring_cq_offset(uint32_t entries)
{
    return gx_ring_sq_offset() + (uint64_t)entries * sizeof(gx_ring_sqe);
}
static inline uint64_t gx_ring_data_offset(uint32_t entries)
{
    return (gx_ring_cq_offset(entries) + (uint64_t)entries * sizeof(gx_ring_cqe) + 4095) &
           ~(uint64_t)4095;
}

/* FUTEX_WAIT on a word shared between processes while it holds val, at
 * most timeout_us (< 0: no bound); FUTEX_WAKE of every waiter. */
void gx_ring_futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t timeout_us);
void gx_ring_futex_wake(_Atomic uint32_t *word);
/* A producer's (or consumer's) move: stores index to *word with release,
 * then (sequentially consistent) wakes the other side when its sleep
 * word is set: bumps futex and FUTEX_WAKEs it. */
void gx_ring_store_wake(_Atomic uint32_t *word, uint32_t index, _Atomic uint32_t *sleep,
                        _Atomic uint32_t *futex);

#endif
