/*
 * The wire protocol's vocabulary, declared once (docs/protocol.md): the
 * request kinds and the field names of headers and replies. gexecd's
 * dispatcher (daemon/server.c) and libgexec (libclient/client.c) both use
 * these tables, so a name cannot be spelled two ways, and each switches
 * over gx_req without a default: a kind added here without a handler or a
 * reply decoder is a compile error (-Wswitch-enum, made an error below).
 *
 *     s_pack_head(&pk, GX_REQ_RUN, id, 6);          // "type": "RUN"
 *     gx_mp_pack_str(&pk, GX_F(GRAPH_ID));          // "graph_id"
 *     const msgpack_object *o = gx_mp_find(h, GX_F(OUTPUTS));
 *
 * Adding a request: a row in GX_REQ_LIST, a case in the daemon's handler
 * switch and in the client's reply decoder, a section in docs/protocol.md.
 * The bytes on the wire are the strings below: renaming one is a protocol
 * change (GX_PROTOCOL_VERSION).
 */
#ifndef GX_PROTO_H
#define GX_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <msgpack.h>

/* A missed case in a switch over gx_req (or any enum) stops the build. */
#pragma GCC diagnostic error "-Wswitch-enum"

/* A RUN's priority and relative deadline, however it comes (socket RUN,
 * shared-memory ring): one rule, checked by gexecd in one place
 * (daemon/job.c, gxd_job_set_urgency) and by libgexec before sending.
 * Priority: higher first. deadline_ms: 0 = none; at most one day (a job
 * still queued after that has no client left waiting for it, and
 * now + deadline cannot overflow). */
#define GX_PRIORITY_MIN (-100)
#define GX_PRIORITY_MAX 100
#define GX_DEADLINE_MAX_MS 86400000LL

/* X(ENUM suffix, wire name, whether tensor frames may follow the header) */
#define GX_REQ_LIST(X)                                                        \
    X(PING, "PING", false)                                                    \
    X(LOAD, "LOAD", false)                                                    \
    X(RUN, "RUN", true)                                                       \
    X(CANCEL, "CANCEL", false)                                                \
    X(STATS, "STATS", false)                                                  \
    X(EXPLAIN, "EXPLAIN", true)                                               \
    X(TUNE, "TUNE", true)                                                     \
    X(LIST, "LIST", false)                                                    \
    X(UNLOAD, "UNLOAD", false)                                                \
    X(COMPILE, "COMPILE", true)                                               \
    X(SHM_REGISTER, "SHM_REGISTER", false)                                    \
    X(SHM_UNREGISTER, "SHM_UNREGISTER", false)                                \
    X(SHM_LIST, "SHM_LIST", false)                                            \
    X(RING_OPEN, "RING_OPEN", false)                                          \
    X(RING_BIND, "RING_BIND", false)                                          \
    X(RING_CLOSE, "RING_CLOSE", false)

typedef enum gx_req {
#define GX_REQ_ENUM(e, name, frames) GX_REQ_##e,
    GX_REQ_LIST(GX_REQ_ENUM)
#undef GX_REQ_ENUM
    GX_REQ_COUNT
} gx_req;

/* The reply type of a request that could not be read far enough to know
 * its kind. */
#define GX_REQ_ERROR_NAME "ERROR"

/*
 * X(ENUM suffix, wire name): every key of a request header, of a reply
 * header, of a RUN reply's "run" map and of a LIST entry.
 */
#define GX_FIELD_LIST(X)                                                      \
    /* every message */                                                       \
    X(V, "v")                                                                 \
    X(TYPE, "type")                                                           \
    X(ID, "id")                                                               \
    /* every reply */                                                         \
    X(STATUS, "status")                                                       \
    X(MESSAGE, "message")                                                     \
    /* requests */                                                            \
    X(GRAPH, "graph")                                                         \
    X(GRAPH_ID, "graph_id")                                                   \
    X(GRAPH_NAME, "graph_name")                                               \
    X(NAME, "name")                                                           \
    X(INPUTS, "inputs")                                                       \
    X(SHAPES, "shapes")                                                       \
    X(OUTPUTS, "outputs")                                                     \
    X(OUTPUT_SHM, "output_shm")                                               \
    X(PRIORITY, "priority")                                                   \
    X(DEADLINE_MS, "deadline_ms")                                             \
    X(MODE, "mode")                                                           \
    X(TARGET, "target")                                                       \
    X(FORMAT, "format")                                                       \
    X(REGION, "region")                                                       \
    X(BYTES, "bytes")                                                         \
    X(SHM, "shm")                                                             \
    X(SLOT, "slot")                                                           \
    X(ENTRIES, "entries")                                                     \
    /* replies */                                                             \
    X(RUN, "run")                                                             \
    X(KEY, "key")                                                             \
    X(PLAN, "plan")                                                           \
    X(STATS, "stats")                                                         \
    X(TEXT, "text")                                                           \
    X(GRAPHS, "graphs")                                                       \
    X(REGIONS, "regions")                                                     \
    X(UNREGISTERED, "unregistered")                                           \
    X(JOBS, "jobs")                                                           \
    X(COMPILE_US, "compile_us")                                               \
    X(LOAD, "load")                                                           \
    /* a RUN reply's "run" map */                                             \
    X(DEVICE, "device")                                                       \
    X(WORKERS, "workers")                                                     \
    X(QUEUE_US, "queue_us")                                                   \
    X(COMPUTE_US, "compute_us")                                               \
    X(DEVICE_US, "device_us")                                                 \
    X(REASON, "reason")                                                       \
    X(REPLICAS, "replicas")                                                   \
    X(BATCHED, "batched")                                                     \
    X(ESTIMATES, "estimates")                                                 \
    /* a LIST entry (besides graph_id, name, inputs, outputs, jobs) */        \
    X(PLANS, "plans")                                                         \
    X(ARENA_BYTES, "arena_bytes")                                             \
    X(IDLE_MS, "idle_ms")                                                     \
    X(READY, "ready")                                                         \
    X(PRELOADED, "preloaded")

typedef enum gx_field {
#define GX_FIELD_ENUM(e, name) GX_FIELD_##e,
    GX_FIELD_LIST(GX_FIELD_ENUM)
#undef GX_FIELD_ENUM
    GX_FIELD_COUNT
} gx_field;

/* The wire names, indexed by gx_field. */
extern const char *const gx_proto_fields[GX_FIELD_COUNT];
/* The wire name of field e: GX_F(GRAPH_ID) is "graph_id"; a misspelt
 * field does not compile. */
#define GX_F(e) (gx_proto_fields[GX_FIELD_##e])

/* The wire name of k ("RUN"); static storage. */
const char *gx_req_name(gx_req k);
/* Whether tensor frames may follow a k request's header. */
bool gx_req_takes_frames(gx_req k);
/* The kind a msgpack string names (a request's or a reply's "type"): true
 * and *k, or false (not a string, or no kind has that name; "ERROR" is
 * none). */
bool gx_req_parse(const msgpack_object *o, gx_req *k);
/* "PING, LOAD, ..." into buf (cut to len), for an error that lists them. */
void gx_req_names_list(char *buf, size_t len);

#endif
