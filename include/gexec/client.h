/*
 * Talking to gexecd. A gx_client is one DEALER connection; use it from one
 * thread at a time (open one client per thread for parallel submitters).
 *
 *     char err[256];
 *     gx_client *c = gx_client_new(NULL, err, sizeof err);  // $GEXEC_SOCKET or default
 *     gx_request *rq = gx_request_new();
 *     gx_request_set_graph(rq, g);                 // or gx_request_set_graph_id
 *     gx_request_add_input(rq, "x", x);            // copied when sent
 *     gx_result *r = NULL;
 *     if (gx_client_run(c, rq, &r) == GX_OK) {
 *         gx_tensor *y = gx_result_take_output(r, 0);   // now yours
 *         ...
 *     } else if (r)
 *         fprintf(stderr, "%s\n", gx_result_message(r));
 *     gx_result_destroy(&r);
 *     gx_request_destroy(&rq);
 *     gx_client_destroy(&c);
 *
 * No function here aborts or exits; errors come back as negative statuses,
 * and gx_client_last_error() holds the message of the latest one.
 */
#ifndef GEXEC_CLIENT_H
#define GEXEC_CLIENT_H

#include <stdbool.h>
#include <gexec/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GX_PROTOCOL_VERSION 1

/* Parallel execution modes a job may request; AUTO lets the daemon choose
 * (docs/modes.md): seq runs the plan's steps in order on one worker; intra
 * splits each heavy step across workers; inter runs independent steps on
 * different workers; replica runs copies of the graph, each with its own
 * arena (one per queued job, or one per slice of a large batch);
 * inter+intra and inter+replica combine them. */
#define GX_MODE_LIST(X)                                                       \
    X(AUTO, "auto")                                                           \
    X(SEQ, "seq")                                                             \
    X(INTRA, "intra")                                                         \
    X(INTER, "inter")                                                         \
    X(REPLICA, "replica")                                                     \
    X(INTER_INTRA, "inter+intra")                                             \
    X(INTER_REPLICA, "inter+replica")

typedef enum gx_mode {
#define GX_MODE_ENUM(e, name) GX_MODE_##e,
    GX_MODE_LIST(GX_MODE_ENUM)
#undef GX_MODE_ENUM
    GX_MODE_COUNT
} gx_mode;

/* "auto", "seq", ...; static storage ("?" if m is out of range). */
GX_EXPORT const char *gx_mode_name(gx_mode m);
/* GX_OK and *m set, or GX_EINVAL for an unknown name. */
GX_EXPORT int gx_mode_parse(const char *name, gx_mode *m);

/* Graph ids are the hex SHA-256 of the graph's canonical encoding. */
typedef struct gx_graph_id {
    char hex[65];
} gx_graph_id;

/* The endpoint clients and daemon use when none is given: $GEXEC_SOCKET,
 * else ipc:///run/gexec/gexecd.sock as root, else under $XDG_RUNTIME_DIR
 * (or /tmp). Writes at most len bytes (NUL included) to buf. */
GX_EXPORT int gx_default_endpoint(char *buf, size_t len);

typedef struct gx_client gx_client;
typedef struct gx_request gx_request;
typedef struct gx_result gx_result;
typedef struct gx_job gx_job;

/* Connect (lazily, as ZeroMQ does) to endpoint, or the default if NULL.
 * Caller owns the client. NULL on failure with a message in err.
 * A tcp:// endpoint uses CURVE (docs/security.md) when $GEXEC_SERVER_KEY
 * and $GEXEC_CLIENT_SECRET are set, each a key (40 Z85 characters) or the
 * path of a key file (gexec-submit keygen); $GEXEC_CLIENT_KEY, if set,
 * must be the secret's public key. A daemon that refuses the handshake
 * (a key it does not list) fails the waiting call with GX_EPERM; a
 * connection lost while a call waits fails it with GX_ECONNECT. */
GX_EXPORT gx_client *gx_client_new(const char *endpoint, char *err, size_t errlen);
/* gx_client_new with the CURVE keys given (a key or a key file each; NULL
 * takes the environment variable). */
GX_EXPORT gx_client *gx_client_new_curve(const char *endpoint, const char *server_key,
                                         const char *client_secret, char *err, size_t errlen);
/* A client of several daemons (docs/cluster.md): endpoints[0..n-1], each
 * as gx_client_new's (CURVE keys from the environment). gx_client_new
 * makes one too when its endpoint (or $GEXEC_SOCKET) is a comma-separated
 * list ($GEXEC_SERVER_KEY, or gx_client_new_curve's server_key, may then
 * list one key per endpoint, comma-separated). RUN jobs go to the daemon
 * with the least load per worker (the load each reported in its latest
 * PING reply plus this client's jobs sent to it since; before a report,
 * this client's jobs in flight), ties in turn; a graph loaded
 * through the client is kept and LOADed again on a daemon whose RUN
 * answers GX_ENOTFOUND; a job whose daemon goes away (GX_ECONNECT,
 * GX_EPERM, no reply within the timeout in the synchronous calls, or no
 * answer to a PING within the liveness interval, gx_client_set_liveness)
 * is sent to another daemon, never twice to one, and fails with the last
 * error once every daemon was tried (gx_run_info.endpoint says which one
 * ran it). A request's inputs are copied at submit for that; shared-memory
 * inputs and output areas (gx_request_add_input_shm,
 * gx_request_set_output_shm, gx_client_shm_register) are GX_EUNSUPPORTED.
 * STATS, LIST, METRICS, EXPLAIN, TUNE and COMPILE go to the first daemon
 * that answers; PING and UNLOAD to all (PING: GX_OK when one answers). Caller owns the client; NULL with a
 * message in err on failure (n == 0, or any endpoint refused). */
GX_EXPORT gx_client *gx_client_new_multi(const char *const *endpoints, size_t n, char *err,
                                         size_t errlen);
/* Closes the connection; outstanding gx_job handles become unusable
 * (they must still be destroyed). Accepts NULL; sets *c = NULL. */
GX_EXPORT void gx_client_destroy(gx_client **c);
/* Reply timeout of the synchronous calls in ms (-1: wait forever).
 * Default 60000. */
GX_EXPORT void gx_client_set_timeout(gx_client *c, int timeout_ms);
/* A client of several daemons: a daemon that answers neither the job a
 * caller waits for nor a PING sent after liveness_ms without its reply
 * within another liveness_ms is taken as gone: the job goes to another
 * daemon (gx_job_wait included), and new jobs avoid it until it answers
 * again. 0: never (only a lost connection, or the synchronous calls'
 * timeout). Default $GEXEC_LIVENESS_MS, else 5000. No effect on a client
 * of one daemon. */
GX_EXPORT void gx_client_set_liveness(gx_client *c, int liveness_ms);
/* Message of the latest failure on this client; owned by the client. */
GX_EXPORT const char *gx_client_last_error(const gx_client *c);
/* Replies received that answered no job still waiting for one (a second
 * reply to a job, or one to a job already destroyed): 0 from a daemon
 * that answers every job once, while its jobs are kept. */
GX_EXPORT uint64_t gx_client_stray_replies(const gx_client *c);

/* Round trip to the daemon. GX_ECONNECT if no reply within the timeout. */
GX_EXPORT int gx_client_ping(gx_client *c);
/* Send the graph; the daemon verifies and compiles it and answers its id. */
GX_EXPORT int gx_client_load(gx_client *c, const gx_graph *g, gx_graph_id *id);
/* Daemon statistics as a JSON object; *json is malloc'ed, caller frees. */
GX_EXPORT int gx_client_stats(gx_client *c, char **json);
/* The daemon's metrics in Prometheus' text exposition format, the text its
 * metrics.listen endpoint serves (docs/metrics.md); *text is malloc'ed,
 * caller frees. */
GX_EXPORT int gx_client_metrics(gx_client *c, char **text);
/* LOAD under a name (1 to 63 of letters, digits, '.', '_', '-'): requests
 * may then name the graph (gx_request_set_graph_name) and UNLOAD it by
 * name; the name moves to this graph from any other that had it. */
GX_EXPORT int gx_client_load_named(gx_client *c, const gx_graph *g, const char *name,
                                   gx_graph_id *id);
/* The loaded graphs as a JSON array (docs/protocol.md, LIST): each with
 * graph_id, name, inputs, outputs, plans, arena_bytes, jobs, idle_ms, ready,
 * preloaded.
 * *json is malloc'ed, caller frees. */
GX_EXPORT int gx_client_list(gx_client *c, char **json);
/* UNLOAD a graph by id (64 hex digits) or name: it leaves the daemon's
 * registry at once and its plans and memory go once the jobs already
 * holding it have finished (they are not failed). GX_ENOTFOUND when no
 * such graph is loaded. */
GX_EXPORT int gx_client_unload(gx_client *c, const char *graph);
/* The version of this libgexec ("0.2.0"); static storage. */
GX_EXPORT const char *gx_version(void);

/* A CURVE key pair for tcp endpoints (docs/security.md): writes the secret
 * key to PREFIX.key (mode 0600) and the public key to PREFIX.pub, and the
 * public key (40 Z85 characters and a NUL) to public_key (may be NULL).
 * An existing file is not replaced (GX_EIO). */
GX_EXPORT int gx_curve_keygen(const char *prefix, char public_key[41], char *err, size_t errlen);

/* ---- requests ---- */

/* A new RUN request (mode auto, priority 0, no deadline). Caller owns it. */
GX_EXPORT gx_request *gx_request_new(void);
GX_EXPORT void gx_request_destroy(gx_request **rq);
/* Run a loaded graph by id. */
GX_EXPORT int gx_request_set_graph_id(gx_request *rq, const gx_graph_id *id);
/* Run the graph loaded under this name (gx_client_load_named). */
GX_EXPORT int gx_request_set_graph_name(gx_request *rq, const char *name);
/* Carry the graph inline. The graph is borrowed: it must outlive every
 * submit of this request. */
GX_EXPORT int gx_request_set_graph(gx_request *rq, const gx_graph *g);
/* Add a named input; the tensor is borrowed and copied when submitted. */
GX_EXPORT int gx_request_add_input(gx_request *rq, const char *name, const gx_tensor *t);
/* Add a named input from the caller's own buffer: nbytes of dense
 * row-major data of dtype dt and shape (ndim dims, none negative), borrowed
 * until the request is destroyed and copied into the message by each submit,
 * as gx_request_add_input's tensor is. Saves building a gx_tensor (a copy)
 * for data that is already in memory, such as a numpy array. GX_EINVAL if
 * nbytes is not the size of that dtype and shape, or for GX_STRING (string
 * tensors are added as gx_tensors: gx_tensor_new_strings). */
GX_EXPORT int gx_request_add_input_data(gx_request *rq, const char *name, gx_dtype dt,
                                        int ndim, const int64_t *shape, const void *data,
                                        size_t nbytes);
/* An input by dtype and shape alone, without values, for gx_client_explain,
 * gx_client_tune and gx_client_compile: the plan is made for that shape
 * (a keyed input, one whose values shape the plan, needs its values:
 * gx_request_add_input). gx_client_run and gx_client_submit refuse a
 * request that has one (GX_EINVAL). */
GX_EXPORT int gx_request_add_input_shape(gx_request *rq, const char *name, gx_dtype dt,
                                         int ndim, const int64_t *shape);
/* Ask for a value by name; with none added, the graph's outputs come back. */
GX_EXPORT int gx_request_add_output(gx_request *rq, const char *name);
/* Higher runs first; range [-100, 100]. */
GX_EXPORT int gx_request_set_priority(gx_request *rq, int priority);
/* Relative deadline: a job not finished in ms milliseconds gets GX_ETIMEDOUT;
 * range [0, 86400000] (0: none; at most a day); GX_EINVAL beyond. */
GX_EXPORT int gx_request_set_deadline_ms(gx_request *rq, int64_t ms);
GX_EXPORT int gx_request_set_mode(gx_request *rq, gx_mode mode);

/* The plan the daemon compiles (or has cached) for rq's graph and inputs,
 * as a JSON object (docs/protocol.md, EXPLAIN): steps and their kernels,
 * buffers and arena sizes, batch analysis. Only the graph (or graph id)
 * and the inputs of rq count; an input it leaves out takes its declared
 * dtype and shape, which must then be concrete, and its values are unknown.
 * Nothing runs. *json is malloc'ed, the caller frees it; NULL on error
 * (the daemon's message is in gx_client_last_error). */
GX_EXPORT int gx_client_explain(gx_client *c, const gx_request *rq, char **json);

/* TUNE: like gx_client_explain (*json is the same plan description), and
 * the daemon queues the plan's MatMul/Gemm signatures for exploration now,
 * ahead of others (docs/tune.md); measuring happens after the reply, on
 * the daemon's idle time: STATS' "tune" map shows the progress.
 * GX_EUNSUPPORTED when the daemon's tune.mode is off. */
GX_EXPORT int gx_client_tune(gx_client *c, const gx_request *rq, char **json);

/* COMPILE: the plan the daemon compiles (or has cached) for rq's graph and
 * inputs, as gx_client_explain's, answered as its artifact file
 * (docs/artifact.md): the bytes gexecd keeps in its artifacts.dir under
 * the name key + ".gxa", which a daemon of the same build serves without
 * compiling. Nothing runs. *artifact is malloc'ed (*len bytes), the caller
 * frees it; key (may be NULL) receives the name, at most keylen bytes with
 * the NUL (96 hold it). A plan that is not stored is GX_EUNSUPPORTED with
 * the reason in gx_client_last_error: one that needs its keyed inputs'
 * values, or that runs on a device with memory of its own. */
GX_EXPORT int gx_client_compile(gx_client *c, const gx_request *rq, void **artifact,
                                size_t *len, char *key, size_t keylen);

/* ---- running ---- */

/* Submit and wait. Returns the job's status; *out (caller owns) is set
 * whenever the daemon answered, also on error, so the message can be read. */
GX_EXPORT int gx_client_run(gx_client *c, const gx_request *rq, gx_result **out);
/* Submit without waiting. *job is owned by the caller. */
GX_EXPORT int gx_client_submit(gx_client *c, const gx_request *rq, gx_job **job);
/* Wait up to timeout_ms (-1: forever) for the job's reply. GX_ETIMEDOUT if
 * it has not come yet (the job stays valid); otherwise as gx_client_run. */
GX_EXPORT int gx_job_wait(gx_job *job, int timeout_ms, gx_result **out);
/* Ask the daemon to cancel the job; its reply then carries GX_ECANCELLED
 * unless it had already finished (then the CANCEL is answered GX_ENOTFOUND).
 * GX_EINVAL once the job's reply has been received. Still wait for (or
 * destroy) the job. */
GX_EXPORT int gx_job_cancel(gx_job *job);
/* The job's correlation id (unique per client). */
GX_EXPORT uint64_t gx_job_id(const gx_job *job);
/* Forget the job (a late reply is discarded). Accepts NULL; sets *job = NULL. */
GX_EXPORT void gx_job_destroy(gx_job **job);

/* ---- results ---- */

/* How the job ran, as the daemon reported it. */
typedef struct gx_run_info {
    char mode[16];     /* "seq", ... */
    char device[32];   /* the devices its plan ran on: "cpu", "cuda+cpu" */
    int workers;       /* threads that ran the job */
    int64_t queue_us;  /* time in the queue */
    int64_t compute_us;/* time executing (compile excluded) */
    int64_t compile_us;/* time compiling a plan for this job (0 if cached) */
    char reason[160];  /* why this mode */
    int replicas;      /* copies of the graph the job was split into (1: none,
                          also when the reply did not say) */
    /* The policy's estimated completion time of the job in each mode, in
     * microseconds; < 0 where the mode did not apply or the reply carried
     * no estimate for it (always for GX_MODE_AUTO). Reported whether the
     * mode was chosen by the daemon or requested. */
    double est_us[GX_MODE_COUNT];
    int batched;       /* jobs merged into the one run this job was part of,
                          itself included (dynamic batching); 1: it ran alone,
                          also when the reply did not say */
    char endpoint[256];/* the endpoint of the daemon that ran it (the client's
                          own, or one of several: gx_client_new_multi) */
    int64_t device_us; /* of compute_us, the time its kernels took on a GPU,
                          measured there (copies and host steps excluded);
                          0: none measured (a plan on the CPU) */
} gx_run_info;

GX_EXPORT int gx_result_status(const gx_result *r);
/* Error message ("" on success); owned by the result. */
GX_EXPORT const char *gx_result_message(const gx_result *r);
GX_EXPORT const gx_run_info *gx_result_info(const gx_result *r);
GX_EXPORT size_t gx_result_output_count(const gx_result *r);
/* Name of output i; owned by the result. */
GX_EXPORT const char *gx_result_output_name(const gx_result *r, size_t i);
/* Output i, owned by the result (NULL if taken or out of range). */
GX_EXPORT const gx_tensor *gx_result_output(const gx_result *r, size_t i);
/* Output i, ownership moves to the caller. */
GX_EXPORT gx_tensor *gx_result_take_output(gx_result *r, size_t i);
GX_EXPORT void gx_result_destroy(gx_result **r);

/* ---- shared memory (docs/shm.md) ----
 *
 * A client of a local daemon (an ipc:// endpoint) may hand it tensors in
 * shared memory instead of sending their bytes over the socket: a region
 * is a POSIX shared-memory file (/dev/shm/<name>, mode 0600) this process
 * makes and maps, and the daemon maps once it is registered. Inputs are
 * then read, and outputs written, where they lie.
 *
 * The library does this by itself for inputs of at least the client's
 * threshold (gx_client_set_shm_threshold): one region per client, made
 * and registered on first use, with room for the outputs after the
 * inputs; results come back as usual. Where the daemon is not local or
 * refuses the region, everything goes over the socket.
 *
 * Explicitly:
 *
 *     gx_shm *s = gx_shm_new(16 << 20, err, sizeof err);
 *     gx_client_shm_register(c, s);
 *     memcpy(gx_shm_data(s), x, 4 << 20);                       // the input
 *     gx_request_add_input_shm(rq, "x", GX_F32, 2, shape, s, 0);
 *     gx_request_set_output_shm(rq, s, 4 << 20, 12 << 20);     // outputs go here
 *     gx_client_run(c, rq, &r);
 *     size_t at, n;
 *     if (gx_result_output_shm(r, 0, &at, &n))  // y is at gx_shm_data(s) + at
 *         ...
 *     gx_client_shm_unregister(c, s);
 *     gx_shm_destroy(&s);
 */
typedef struct gx_shm gx_shm;

/* A new region of bytes (zero-filled), mapped in this process; caller owns
 * it. NULL with a message in err on failure. */
GX_EXPORT gx_shm *gx_shm_new(size_t bytes, char *err, size_t errlen);
/* Unmaps the region and removes its file; the daemon's mapping (while
 * registered, or while a job uses it) keeps the memory alive. Accepts
 * NULL; sets *s = NULL. */
GX_EXPORT void gx_shm_destroy(gx_shm **s);
/* Its memory (page aligned), its size, its name in /dev/shm. */
GX_EXPORT void *gx_shm_data(gx_shm *s);
GX_EXPORT size_t gx_shm_size(const gx_shm *s);
GX_EXPORT const char *gx_shm_name(const gx_shm *s);

/* SHM_REGISTER: the daemon maps s for this client (until it is
 * unregistered or the client disconnects). GX_EPERM over tcp or for a
 * daemon of another user that cannot open it; GX_ELIMIT beyond the
 * daemon's limits.shm_* keys. s must outlive its registration. */
GX_EXPORT int gx_client_shm_register(gx_client *c, gx_shm *s);
/* SHM_UNREGISTER: the daemon unmaps s (once the jobs using it are done). */
GX_EXPORT int gx_client_shm_unregister(gx_client *c, gx_shm *s);
/* Small jobs of gx_client_run through a submission/completion ring in
 * shared memory (docs/shm.md, "Ring") when the daemon is local: a graph
 * by id, at most 4 tensors of numbers (256 KiB in all) in, no mode or
 * output area of its own; others, and everything when the daemon refuses
 * the ring, go over the socket. A job whose outputs the ring cannot carry
 * (more than 4, not numbers, more than 1 MiB with the inputs) runs again
 * over the socket, and so do its graph's later jobs. Default: on for an
 * ipc:// endpoint, unless $GEXEC_RING is "0" (any other value: on for
 * every endpoint). */
GX_EXPORT void gx_client_set_ring(gx_client *c, bool on);
/* Inputs of at least bytes go through the client's own region when the
 * daemon is local; SIZE_MAX: never. Default: $GEXEC_SHM_THRESHOLD, else
 * 65536. */
GX_EXPORT void gx_client_set_shm_threshold(gx_client *c, size_t bytes);

/* An input whose nbytes of dtype dt and shape lie at offset in s (a
 * region registered with the client that submits the request). GX_EINVAL
 * for GX_STRING: string tensors always travel in frames. */
GX_EXPORT int gx_request_add_input_shm(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                                       const int64_t *shape, const gx_shm *s, size_t offset);
/* Outputs go to s from offset on, as many as fit in bytes, one after the
 * other (each 64-byte aligned); the rest come back as usual. */
GX_EXPORT int gx_request_set_output_shm(gx_request *rq, const gx_shm *s, size_t offset,
                                        size_t bytes);
/* Whether output i was written to the request's output area: then
 * gx_result_output(r, i) is NULL, and the bytes are at *offset (*nbytes
 * of them) in that region. */
GX_EXPORT bool gx_result_output_shm(const gx_result *r, size_t i, size_t *offset,
                                    size_t *nbytes);
/* The dtype (*dt) and shape (*ndim dimensions, the array returned, owned
 * by the result) of output i when it was written to the output area;
 * NULL when it was not (gx_result_output then has it). */
GX_EXPORT const int64_t *gx_result_output_shm_shape(const gx_result *r, size_t i, gx_dtype *dt,
                                                    int *ndim);

#ifdef __cplusplus
}
#endif
#endif
