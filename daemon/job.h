/*
 * A job: one LOAD, RUN or EXPLAIN request from a client, from the moment the I/O
 * thread decoded it until its single final reply is sent. The I/O thread
 * creates it; a worker fills in the result; the I/O thread sends the reply
 * and destroys it. Exactly one reply per job.
 */
#ifndef GXD_JOB_H
#define GXD_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <zmq.h>

#include "ops/op.h"

struct gxd_model;

typedef enum gxd_job_kind {
    GXD_JOB_LOAD,
    GXD_JOB_RUN,
    GXD_JOB_EXPLAIN, /* compile (or find) the plan for the inputs, describe it */
    GXD_JOB_COMPILE, /* compile (or find) the plan for the inputs, answer its artifact */
} gxd_job_kind;

#define GXD_MAX_IDENTITY 256

struct gxd_shm_region;
struct gxd_ring;

typedef struct gxd_job_input {
    char *name;
    gx_view view;      /* data points into frame, or into shm */
    zmq_msg_t frame;   /* the received tensor bytes, not copied */
    struct gxd_shm_region *shm; /* a reference: the region view.data lies in (NULL: none) */
    gx_tensor *value;  /* a sequence, none or string tensor input (gx_wire_is_value),
                        * decoded from frame: view.data points at it (a string tensor: at
                        * its handles); owned */
} gxd_job_input;

typedef struct gxd_job_output {
    char *name;
    gx_view view;      /* data: malloc'ed, handed to ZeroMQ with the reply */
    size_t nbytes;
    bool in_shm;       /* data lies in the job's output area at shm_offset (not owned) */
    uint64_t shm_offset; /* in the region */
    gx_tensor *value;  /* a sequence, none or string tensor output (gx_wire_is_value):
                        * what its descriptor lists; owned; view.data holds its frame's
                        * bytes */
} gxd_job_output;

typedef struct gxd_job {
    gxd_job_kind kind;
    bool tune; /* EXPLAIN for TUNE: the plan's signatures are explored now (daemon/tune) */
    uint8_t identity[GXD_MAX_IDENTITY]; /* ROUTER routing id of the client */
    size_t identity_len;
    bool has_uid; /* uid is the client's, from its ipc connection (limits.uid_jobs) */
    uid_t uid;
    uint64_t id;                        /* client's correlation id */
    struct gxd_model *model;            /* a reference */

    size_t n_in, n_want;
    gxd_job_input *in;
    char **want; /* requested output names (none: graph outputs) */
    /* RUN's output_shm: the outputs that fit are written there (daemon/shm.h) */
    struct gxd_shm_region *out_shm; /* a reference, or NULL */
    uint64_t out_shm_offset, out_shm_bytes, out_shm_used;

    int priority;
    gx_mode mode;
    int64_t deadline_us; /* CLOCK_MONOTONIC; 0 = none */
    size_t bytes;        /* input bytes, counted against queue.max_bytes */
    uint64_t seq;        /* arrival order */
    uint64_t tag;        /* fair-queuing virtual time (queue.h) */
    atomic_bool cancel;
    /* workers its graph's jobs want up (gxd_model.team, when queued):
     * gxd_queue_push wakes as many, so that helpers are up when it starts */
    int team;

    /* timing (CLOCK_MONOTONIC us) */
    int64_t t_enqueue, t_start, t_exec, t_end, compile_us;
    int64_t device_us; /* its kernels' time on a GPU (gxd_frame.device_ns), 0: none timed */

    /* result, written by the worker */
    int status;
    char message[1024];
    gx_mode ran_mode;
    char device[32];                /* the devices its plan ran on ("cuda+cpu") */
    int workers;
    int replicas;                   /* copies of the graph it ran as (1: none) */
    int batched;                    /* jobs merged into the run it was part of, itself
                                     * included (daemon/batcher.h); 1: it ran alone */
    bool batch_lead;                /* it led that merged run (STATS counts batches) */
    double est_us[GX_MODE_COUNT];   /* the policy's estimate per mode; < 0: n/a */
    char reason[160];
    size_t n_out;
    gxd_job_output *out;
    size_t *out_k; /* graph output index of out[i] */
    char *explain; /* EXPLAIN: the plan as JSON (malloc'ed, freed with the job) */
    char key[96];  /* COMPILE: the artifact's name in the artifact cache (out[0]: its bytes) */

    /* the jobs merged into this one's run (the leader's list, linked
     * through batch_next; the worker hands each to the done callback) */
    struct gxd_job *batch_next;
    struct gxd_job *next; /* done list link */
    /* a job submitted through a shared-memory ring (daemon/ring.h): its one
     * completion goes there, tagged ring_user, instead of a reply */
    struct gxd_ring *ring; /* a reference, or NULL */
    uint64_t ring_user;
    bool ring_posted;      /* its completion was posted (by the worker that finished it) */
} gxd_job;

/* A new empty job; caller owns it. NULL on ENOMEM. */
gxd_job *gxd_job_new(gxd_job_kind kind, const void *identity, size_t identity_len, uint64_t id);
/* Frees inputs, outputs, the model reference. Accepts NULL; sets *j = NULL. */
void gxd_job_destroy(gxd_job **j);
/* Record a failure (first one wins). Returns status. */
int gxd_job_fail(gxd_job *j, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Monotonic clock in microseconds. */
int64_t gxd_now_us(void);

/* What a finished job's reply says of it, whichever way it goes (socket
 * RUN, daemon/server.c; ring completion, daemon/ring.c): its time in the
 * queue, its time executing (0 when it never started), and the devices
 * its plan ran on ("cpu" when none was recorded). */
int64_t gxd_job_queue_us(const gxd_job *j);
int64_t gxd_job_compute_us(const gxd_job *j);
const char *gxd_job_device(const gxd_job *j);

/* The one rule for a RUN's priority and deadline (core/proto.h), for every
 * way a job comes in (socket RUN, daemon/server.c; ring submission,
 * daemon/ring.c): sets j->priority and j->deadline_us (from now), or
 * answers GX_EINVAL naming the field and its range, or GX_EPERM when
 * priority is above ceiling (limits.max_client_priority) and the client is
 * not elevated (one of limits.priority_users); why_not says why not, for
 * the message (", and uid 1000 is not one of them"; may be ""). via
 * starts the message ("RUN", "ring"). */
int gxd_job_set_urgency(gxd_job *j, const char *via, int64_t priority, int64_t deadline_ms,
                        int ceiling, bool elevated, const char *why_not, char *err,
                        size_t errlen);

#endif
