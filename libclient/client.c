/*
 * libgexec's connection: one DEALER socket, requests tagged with correlation
 * ids, replies matched to the request (or job) waiting for them.
 * See include/gexec/client.h and docs/protocol.md.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "core/sockpath.h"
#include "core/proto.h"
#include "core/wire.h"
#include "core/curvekey.h"
#include "core/ring.h"
#include "libclient/shm.h"

#define GX_DEFAULT_TIMEOUT_MS 60000
/* The client's own region (docs/shm.md): inputs of at least the threshold
 * go there, with room for the outputs after them. */
#define GX_SHM_THRESHOLD_DEFAULT 65536
#define GX_SHM_POOL_MIN (16u << 20)
#define GX_SHM_POOL_MAX ((size_t)1 << 30)

struct gx_result {
    int status;
    char *message;
    gx_run_info info;
    size_t n_out;
    char **names;
    gx_tensor **tensors;
    gx_graph_id graph_id; /* LOAD */
    char *stats_json;     /* STATS */
    char *plan_json;      /* EXPLAIN */
    char *text;           /* STATS in Prometheus' text format */
    char *list_json;      /* LIST */
    char key[128];        /* COMPILE: the artifact's name in the daemon's cache */
    struct gx_shm_out *shm; /* per output: where it lies in the request's output area */
    uint32_t ring_slot;     /* RING_BIND */
};

/* An output the daemon wrote to the request's output area. */
struct gx_shm_out {
    uint64_t at; /* offset + 1 in the region, 0: the output is not there */
    size_t bytes;
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
};

struct gx_job {
    gx_client *client; /* NULL once the client is gone */
    uint64_t id;
    gx_result *result; /* set when the reply arrived */
    struct s_mjob *multi; /* a job of a client of several daemons: its own state */
    bool pool_extent;  /* it holds room in the client's region until its reply */
    uint64_t conn_gen; /* the client's conn_gen when it was sent */
    uint64_t seq;      /* a member's job: its sent_seq when sent */
    gx_job *next;      /* client's list of pending jobs */
};

struct gx_client {
    void *zctx;
    void *sock;
    /* PAIR on the socket's monitor: a lost connection (its jobs' replies
     * will not come) and a refused CURVE handshake end a wait at once */
    void *mon;
    uint64_t conn_gen;   /* connections lost so far */
    int refused_event;   /* the latest ZMQ_EVENT_HANDSHAKE_FAILED_*, or DISCONNECTED
                            before any handshake succeeded; 0: none */
    bool handshaken;     /* a handshake succeeded once */
    bool up;             /* connected: a handshake succeeded since the last disconnect */
    int refused_value;   /* its value: a ZAP status (400) or a protocol error */
    int timeout_ms;
    uint64_t next_id;
    gx_job *pending;
    uint64_t strays; /* replies no waiting job took (gx_client_stray_replies) */
    /* shared memory (docs/shm.md): the client's own region, registered,
     * filled from the start and emptied when no job holds room in it */
    gx_shm *pool;
    size_t pool_used;
    int pool_live;       /* jobs holding room in it */
    bool pool_retired;   /* a job left without its reply: the daemon may still write */
    bool shm_off;        /* not local, or the daemon refused the region */
    size_t shm_threshold;
    size_t last_out_bytes; /* the outputs of the latest RUN reply, for the next output area */
    gx_shm **regions;    /* registered by the caller */
    size_t n_regions, cap_regions;
    /* the submission/completion ring (docs/shm.md, "Ring"): small jobs of
     * gx_client_run go through it when ring_on and it could be set up */
    bool ring_on;        /* gx_client_set_ring, $GEXEC_RING */
    bool ring_failed;    /* setting it up failed, or it broke: the socket from now on */
    struct s_ring *ring;
    char endpoint[512];
    char last_error[1024];
    struct s_multi *multi; /* several daemons (gx_client_new_multi): members talk */
    /* as a member of a client of several daemons: what its daemon said */
    bool has_load;        /* a load figure came (a PING reply's "load") */
    int64_t load_jobs;    /* its jobs queued and running then */
    int64_t load_workers; /* its workers */
    int64_t load_ms;      /* when it came */
    uint64_t sent_seq;    /* jobs sent to it */
    uint64_t ping_seq;    /* sent_seq when the latest PING was sent */
    uint64_t load_base;   /* sent_seq when the PING of the figure was sent */
    int64_t load_done;    /* jobs it counted (sent before that PING) answered since */
    uint64_t probe_id;    /* a PING sent to learn its load and that it lives; 0: none */
    int64_t probe_ms;     /* when it was sent */
    bool silent;          /* that PING went unanswered for the liveness interval */
};

struct gx_request {
    gx_graph_id graph_id;
    bool has_id;
    char graph_name[64]; /* "" or the name of a loaded graph */
    const gx_graph *graph;
    size_t n_in, cap_in;
    struct {
        char *name;
        const gx_tensor *t;
        gx_tensor *view; /* gx_request_add_input_data's: owned, its data borrowed */
        bool shape_only; /* gx_request_add_input_shape's: dtype and shape, no values */
        const gx_shm *shm; /* gx_request_add_input_shm's: the values lie at shm_off */
        size_t shm_off;
    } *in;
    size_t n_out, cap_out;
    char **out;
    int priority;
    int64_t deadline_ms;
    gx_mode mode;
    const gx_shm *out_shm; /* gx_request_set_output_shm's area */
    size_t out_shm_off, out_shm_bytes;
};

/* A client of several daemons (docs/cluster.md): member clients, one per
 * endpoint, do the talking; see "several daemons" below. */
static gx_client *s_multi_new(const char *const *endpoints, size_t n, const char *server_key,
                              const char *client_secret, char *err, size_t errlen);
static gx_client *s_multi_new_list(const char *list, const char *server_key,
                                   const char *client_secret, char *err, size_t errlen);
static void s_multi_destroy(gx_client *c);
static int s_multi_load(gx_client *c, const gx_graph *g, const char *name, gx_graph_id *id);
static int s_multi_unload(gx_client *c, const char *graph);
static int s_multi_submit(gx_client *c, const gx_request *rq, gx_job **job);
static int s_mjob_wait(gx_job *job, int timeout_ms, bool gone_on_timeout, gx_result **out);
static void s_mjob_destroy(gx_job *job);
static int s_mjob_cancel(gx_job *job);
static void s_multi_error(gx_client *c, const gx_client *m);
static void s_ring_destroy(gx_client *c);
/* A status that says the daemon went away (or never answered). */
static bool s_gone(int rc) { return rc == GX_ECONNECT || rc == GX_EPERM || rc == GX_ETIMEDOUT; }

/* In a public call on client c: with several daemons, the call (an
 * expression over the member m) on each in turn until one answers. */
#define S_MULTI_FIRST(c, call)                                                  \
    do {                                                                        \
        if ((c)->multi) {                                                       \
            int rc_ = GX_ECONNECT;                                              \
            for (size_t k_ = 0; k_ < s_multi_count(c); k_++) {                  \
                gx_client *m = s_multi_member(c, k_);                           \
                rc_ = (call);                                                   \
                s_multi_error((c), m);                                          \
                if (!s_gone(rc_))                                               \
                    break;                                                      \
            }                                                                   \
            return rc_;                                                         \
        }                                                                       \
    } while (0)
static size_t s_multi_count(const gx_client *c);
static gx_client *s_multi_member(const gx_client *c, size_t k);

/* ---- client ---- */

static int s_fail(gx_client *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int s_fail(gx_client *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    return status;
}

/* Why no reply came from c's endpoint, as far as the client can tell: for
 * an ipc:// socket, a missing file or one this user may not use (ZeroMQ
 * only ever says nothing); else "is gexecd running?". */
static const char *s_no_reply_why(const gx_client *c, char *buf, size_t len)
{
    struct stat sb;
    const char *path = strncmp(c->endpoint, "ipc://", 6) == 0 ? c->endpoint + 6 : NULL;
    if (!path || path[0] == '@')
        return "is gexecd running?";
    if (stat(path, &sb) != 0) {
        snprintf(buf, len, "%s: %s%s", path, strerror(errno),
                 errno == ENOENT ? "; is gexecd running?" : "");
        return buf;
    }
    if (access(path, R_OK | W_OK) != 0) {
        snprintf(buf, len, "%s: %s (owner uid %u, mode %04o); the daemon's socket is not open to this user",
                 path, strerror(errno), (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777));
        return buf;
    }
    return "is gexecd running?";
}

/* A key argument, else the environment variable var (both: the key or
 * the path of its file). GX_OK with key[0] == '\0' when neither is set. */
static int s_key_arg(const char *given, const char *var, bool secret, char key[GX_CURVE_KEY_BUF],
                     char *err, size_t errlen)
{
    const char *v = given && *given ? given : getenv(var);
    key[0] = '\0';
    if (!v || !*v)
        return GX_OK;
    char why[768];
    int rc = gx_curve_key_get(v, secret, key, why, sizeof why);
    if (rc < 0)
        return gx_errf(err, errlen, rc, "%s: %s", given && *given ? "CURVE key" : var, why);
    return GX_OK;
}

/* CURVE client options on sock for a tcp endpoint (docs/security.md): the
 * server's public key and this client's secret key from the arguments or
 * GEXEC_SERVER_KEY and GEXEC_CLIENT_SECRET (GEXEC_CLIENT_KEY, when set,
 * must be that secret's public key). Neither: no CURVE. */
static int s_curve_setup(void *sock, const char *server_key, const char *client_secret,
                         char *err, size_t errlen)
{
    char sk[GX_CURVE_KEY_BUF], cs[GX_CURVE_KEY_BUF], cp[GX_CURVE_KEY_BUF], given[GX_CURVE_KEY_BUF];
    int rc;
    if ((rc = s_key_arg(server_key, "GEXEC_SERVER_KEY", false, sk, err, errlen)) < 0 ||
        (rc = s_key_arg(client_secret, "GEXEC_CLIENT_SECRET", true, cs, err, errlen)) < 0 ||
        (rc = s_key_arg(NULL, "GEXEC_CLIENT_KEY", false, given, err, errlen)) < 0)
        return rc;
    if (!sk[0] && !cs[0])
        return GX_OK;
    if (!sk[0] || !cs[0])
        return gx_errf(err, errlen, GX_EINVAL,
                       "CURVE needs both the server's public key (GEXEC_SERVER_KEY) and this "
                       "client's secret key (GEXEC_CLIENT_SECRET); only the %s is set",
                       sk[0] ? "server's key" : "client's secret");
    if (!zmq_has("curve"))
        return gx_errf(err, errlen, GX_EUNSUPPORTED, "this libzmq was built without CURVE");
    if (zmq_curve_public(cp, cs) != 0)
        return gx_errf(err, errlen, GX_EINVAL, "GEXEC_CLIENT_SECRET: not a CURVE secret key");
    if (given[0] && strcmp(given, cp) != 0)
        return gx_errf(err, errlen, GX_EINVAL,
                       "GEXEC_CLIENT_KEY is not the public key of GEXEC_CLIENT_SECRET (%s)", cp);
    rc = zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, sk, GX_CURVE_KEY_LEN) |
         zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, cp, GX_CURVE_KEY_LEN) |
         zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, cs, GX_CURVE_KEY_LEN);
    explicit_bzero(cs, sizeof cs);
    if (rc != 0)
        return gx_errf(err, errlen, GX_EINVAL, "CURVE keys: %s", zmq_strerror(zmq_errno()));
    return GX_OK;
}

GX_EXPORT gx_client *gx_client_new(const char *endpoint, char *err, size_t errlen)
{
    return gx_client_new_curve(endpoint, NULL, NULL, err, errlen);
}

GX_EXPORT gx_client *gx_client_new_curve(const char *endpoint, const char *server_key,
                                         const char *client_secret, char *err, size_t errlen)
{
    char list[4096];
    if (!endpoint && gx_default_endpoint(list, sizeof list) == GX_OK && strchr(list, ','))
        return s_multi_new_list(list, server_key, client_secret, err, errlen);
    if (endpoint && strchr(endpoint, ','))
        return s_multi_new_list(endpoint, server_key, client_secret, err, errlen);
    gx_client *c = calloc(1, sizeof *c);
    if (!c) {
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return NULL;
    }
    c->timeout_ms = GX_DEFAULT_TIMEOUT_MS;
    c->next_id = 1;
    const char *th = getenv("GEXEC_SHM_THRESHOLD");
    char *end = NULL;
    unsigned long long thv = th && *th ? strtoull(th, &end, 10) : GX_SHM_THRESHOLD_DEFAULT;
    c->shm_threshold = end && *end ? SIZE_MAX : (size_t)thv; /* "off" and the like: never */
    if (endpoint)
        snprintf(c->endpoint, sizeof c->endpoint, "%s", endpoint);
    else
        gx_default_endpoint(c->endpoint, sizeof c->endpoint);
    /* the ring: on for a daemon on this machine (ipc), unless $GEXEC_RING
     * says 0; $GEXEC_RING=1 asks for it anywhere (a tcp daemon refuses it) */
    const char *ring = getenv("GEXEC_RING");
    c->ring_on = ring && *ring ? strcmp(ring, "0") != 0 : strncmp(c->endpoint, "ipc://", 6) == 0;
    /* an ipc socket (or its directory) another user could own is refused
     * before connecting: whoever listens there gets the graphs and tensors */
    char why[768];
    int rc = strncmp(c->endpoint, "ipc://", 6) == 0 && c->endpoint[6] != '@'
                 ? gx_sock_check_connect(c->endpoint + 6, why, sizeof why)
                 : GX_OK;
    if (rc < 0) {
        gx_errf(err, errlen, rc, "%s", why);
        gx_client_destroy(&c);
        return NULL;
    }
    c->shm_off = strncmp(c->endpoint, "ipc://", 6) != 0; /* a daemon elsewhere cannot map it */
    int linger = 0;
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://gexec-client-%p", (void *)c);
    if (!(c->zctx = zmq_ctx_new()) || !(c->sock = zmq_socket(c->zctx, ZMQ_DEALER))) {
        gx_errf(err, errlen, GX_ENOMEM, "zmq: %s", zmq_strerror(zmq_errno()));
        gx_client_destroy(&c);
        return NULL;
    }
    if (strncmp(c->endpoint, "tcp://", 6) == 0 &&
        (rc = s_curve_setup(c->sock, server_key, client_secret, err, errlen)) < 0) {
        gx_client_destroy(&c);
        return NULL;
    }
    if (zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_socket_monitor(c->sock, mon,
                           ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0 ||
        !(c->mon = zmq_socket(c->zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(c->mon, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_connect(c->mon, mon) != 0 || zmq_connect(c->sock, c->endpoint) != 0) {
        gx_errf(err, errlen, GX_ECONNECT, "cannot connect to %s: %s", c->endpoint,
                zmq_strerror(zmq_errno()));
        gx_client_destroy(&c);
        return NULL;
    }
    return c;
}

GX_EXPORT void gx_client_destroy(gx_client **cp)
{
    if (!cp || !*cp)
        return;
    gx_client *c = *cp;
    for (gx_job *j = c->pending; j; j = j->next)
        j->client = NULL;
    s_multi_destroy(c);
    gx_shm_destroy(&c->pool); /* the daemon drops its regions when the client goes */
    s_ring_destroy(c);
    free(c->regions);
    if (c->sock)
        zmq_socket_monitor(c->sock, NULL, 0);
    if (c->mon)
        zmq_close(c->mon);
    if (c->sock)
        zmq_close(c->sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    free(c);
    *cp = NULL;
}

GX_EXPORT void gx_client_set_timeout(gx_client *c, int timeout_ms)
{
    if (c)
        c->timeout_ms = timeout_ms < 0 ? -1 : timeout_ms;
    for (size_t k = 0; c && k < s_multi_count(c); k++)
        gx_client_set_timeout(s_multi_member(c, k), timeout_ms);
}

GX_EXPORT uint64_t gx_client_stray_replies(const gx_client *c)
{
    uint64_t n = c ? c->strays : 0;
    for (size_t k = 0; c && k < s_multi_count(c); k++)
        n += gx_client_stray_replies(s_multi_member(c, k));
    return n;
}

GX_EXPORT const char *gx_client_last_error(const gx_client *c)
{
    return c ? c->last_error : "no client";
}

/* ---- results ---- */

GX_EXPORT void gx_result_destroy(gx_result **rp)
{
    if (!rp || !*rp)
        return;
    gx_result *r = *rp;
    for (size_t i = 0; i < r->n_out; i++) {
        free(r->names[i]);
        gx_tensor_destroy(&r->tensors[i]);
    }
    free(r->names);
    free(r->tensors);
    free(r->shm);
    free(r->message);
    free(r->stats_json);
    free(r->plan_json);
    free(r->text);
    free(r->list_json);
    free(r);
    *rp = NULL;
}

GX_EXPORT int gx_result_status(const gx_result *r) { return r ? r->status : GX_EINVAL; }
GX_EXPORT const char *gx_result_message(const gx_result *r)
{
    return r && r->message ? r->message : "";
}
GX_EXPORT const gx_run_info *gx_result_info(const gx_result *r) { return r ? &r->info : NULL; }
GX_EXPORT size_t gx_result_output_count(const gx_result *r) { return r ? r->n_out : 0; }

GX_EXPORT const char *gx_result_output_name(const gx_result *r, size_t i)
{
    return r && i < r->n_out ? r->names[i] : NULL;
}

GX_EXPORT const gx_tensor *gx_result_output(const gx_result *r, size_t i)
{
    return r && i < r->n_out ? r->tensors[i] : NULL;
}

GX_EXPORT gx_tensor *gx_result_take_output(gx_result *r, size_t i)
{
    if (!r || i >= r->n_out)
        return NULL;
    gx_tensor *t = r->tensors[i];
    r->tensors[i] = NULL;
    return t;
}

/* ---- msgpack -> JSON (for STATS) ---- */

static void s_json(gx_strbuf *b, const msgpack_object *o)
{
    char tmp[64];
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        gx_strbuf_put(b, "null", 4);
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        gx_strbuf_put(b, o->via.boolean ? "true" : "false", o->via.boolean ? 4 : 5);
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        gx_strbuf_put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%" PRIu64, o->via.u64));
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        gx_strbuf_put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%" PRId64, o->via.i64));
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        gx_strbuf_put(b, tmp, (size_t)snprintf(tmp, sizeof tmp, "%.6g", o->via.f64));
        break;
    case MSGPACK_OBJECT_STR:
        gx_strbuf_json_str(b, o->via.str.ptr, o->via.str.size);
        break;
    case MSGPACK_OBJECT_ARRAY:
        gx_strbuf_put(b, "[", 1);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i)
                gx_strbuf_put(b, ",", 1);
            s_json(b, &o->via.array.ptr[i]);
        }
        gx_strbuf_put(b, "]", 1);
        break;
    case MSGPACK_OBJECT_MAP:
        gx_strbuf_put(b, "{", 1);
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            if (i)
                gx_strbuf_put(b, ",", 1);
            s_json(b, &o->via.map.ptr[i].key);
            gx_strbuf_put(b, ":", 1);
            s_json(b, &o->via.map.ptr[i].val);
        }
        gx_strbuf_put(b, "}", 1);
        break;
    case MSGPACK_OBJECT_BIN:
    case MSGPACK_OBJECT_EXT:
        gx_strbuf_put(b, "null", 4);
        break;
    }
}

/* ---- replies ---- */

static void s_copy_str(const msgpack_object *o, char *dst, size_t len)
{
    dst[0] = '\0';
    if (o && o->type == MSGPACK_OBJECT_STR)
        snprintf(dst, len, "%.*s", (int)o->via.str.size, o->via.str.ptr);
}

static int64_t s_get_i64(const msgpack_object *o)
{
    int64_t v = 0;
    gx_mp_int(o, "", INT64_MIN, INT64_MAX, &v, NULL, 0);
    return v;
}

/* A run info's defaults, where a reply says nothing: replicas and batched
 * 1, no estimates (-1). */
static void s_run_info_init(gx_run_info *info)
{
    info->replicas = 1;
    info->batched = 1;
    for (int m = 0; m < GX_MODE_COUNT; m++)
        info->est_us[m] = -1;
}

/* The estimate us for mode m, unless m is auto or us is negative or not
 * finite (then the default stays). */
static void s_run_info_est(gx_run_info *info, int m, double us)
{
    if (m > GX_MODE_AUTO && m < GX_MODE_COUNT && us >= 0 && isfinite(us))
        info->est_us[m] = us;
}

/* The "run" map of a RUN reply into info. A field that is missing or of the
 * wrong type keeps its default (s_run_info_init); estimates under names
 * that are not modes (or that are auto) are ignored, as are negative or
 * non-finite ones (s_run_info_est). */
static void s_parse_run_info(const msgpack_object *run, gx_run_info *info)
{
    s_run_info_init(info);
    if (!run || run->type != MSGPACK_OBJECT_MAP)
        return;
    s_copy_str(gx_mp_find(run, GX_F(MODE)), info->mode, sizeof info->mode);
    s_copy_str(gx_mp_find(run, GX_F(DEVICE)), info->device, sizeof info->device);
    s_copy_str(gx_mp_find(run, GX_F(REASON)), info->reason, sizeof info->reason);
    int64_t v = 0;
    if (gx_mp_int(gx_mp_find(run, GX_F(WORKERS)), "", 0, INT32_MAX, &v, NULL, 0) == GX_OK)
        info->workers = (int)v;
    info->queue_us = s_get_i64(gx_mp_find(run, GX_F(QUEUE_US)));
    info->compute_us = s_get_i64(gx_mp_find(run, GX_F(COMPUTE_US)));
    info->compile_us = s_get_i64(gx_mp_find(run, GX_F(COMPILE_US)));
    info->device_us = s_get_i64(gx_mp_find(run, GX_F(DEVICE_US)));
    if (gx_mp_int(gx_mp_find(run, GX_F(REPLICAS)), "", 1, INT32_MAX, &v, NULL, 0) == GX_OK)
        info->replicas = (int)v;
    if (gx_mp_int(gx_mp_find(run, GX_F(BATCHED)), "", 1, INT32_MAX, &v, NULL, 0) == GX_OK)
        info->batched = (int)v;
    const msgpack_object *est = gx_mp_find(run, GX_F(ESTIMATES));
    if (!est || est->type != MSGPACK_OBJECT_MAP)
        return;
    for (uint32_t i = 0; i < est->via.map.size; i++) {
        const msgpack_object *val = &est->via.map.ptr[i].val;
        double us;
        if (val->type == MSGPACK_OBJECT_FLOAT32 || val->type == MSGPACK_OBJECT_FLOAT64)
            us = val->via.f64;
        else if (val->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            us = (double)val->via.u64;
        else
            continue;
        for (int m = GX_MODE_AUTO + 1; m < GX_MODE_COUNT; m++)
            if (gx_mp_streq(&est->via.map.ptr[i].key, gx_mode_name((gx_mode)m)))
                s_run_info_est(info, m, us);
    }
}

/* Output i of a reply that the daemon wrote to shared memory at ref: from
 * the client's own region, copied into a tensor (its room is reused);
 * from a region of the caller's, left there (gx_result_output_shm). */
static int s_shm_output(gx_client *c, gx_result *r, size_t i, const gx_wire_shm_ref *ref,
                        gx_dtype dt, int ndim, const int64_t *shape, size_t nbytes, char *err,
                        size_t errlen)
{
    const gx_shm *s = c->pool && strcmp(c->pool->name, ref->region) == 0 ? c->pool : NULL;
    for (size_t k = 0; !s && k < c->n_regions; k++)
        if (strcmp(c->regions[k]->name, ref->region) == 0)
            s = c->regions[k];
    if (!s || ref->bytes != nbytes || ref->offset > s->bytes || nbytes > s->bytes - ref->offset)
        return gx_errf(err, errlen, GX_EPROTO,
                       "output '%s': the reply places it at %llu (+%llu bytes) in region '%s', "
                       "which is not a registered region of this client or is too small",
                       r->names[i], (unsigned long long)ref->offset,
                       (unsigned long long)ref->bytes, ref->region);
    if (s != c->pool) {
        struct gx_shm_out *o = &r->shm[i];
        *o = (struct gx_shm_out){.at = ref->offset + 1, .bytes = nbytes, .dtype = dt,
                                 .ndim = ndim};
        memcpy(o->shape, shape, (size_t)ndim * sizeof *shape);
        return GX_OK;
    }
    r->tensors[i] = gx_tensor_new_copy(dt, ndim, shape, (const char *)s->base + ref->offset,
                                       nbytes);
    return r->tensors[i] ? GX_OK : gx_errf(err, errlen, GX_ENOMEM, "out of memory");
}

/* o as a new JSON string (caller frees), or NULL when out of memory. */
static char *s_to_json(const msgpack_object *o)
{
    gx_strbuf b = {0};
    s_json(&b, o);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* Build a result from a reply header and its tensor frames (and, for
 * outputs in shared memory, c's regions). */
static int s_parse_reply(gx_client *c, const msgpack_object *h, zmq_msg_t *frames,
                         size_t nframes, gx_result **out, char *err, size_t errlen)
{
    gx_result *r = calloc(1, sizeof *r);
    if (!r)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    *out = r;
    char status[64], msg[1024];
    s_copy_str(gx_mp_find(h, GX_F(STATUS)), status, sizeof status);
    s_copy_str(gx_mp_find(h, GX_F(MESSAGE)), msg, sizeof msg);
    r->status = strcmp(status, "GX_OK") == 0 ? GX_OK : gx_status_from_name(status);
    r->message = strdup(msg);
    s_copy_str(gx_mp_find(h, GX_F(GRAPH_ID)), r->graph_id.hex, sizeof r->graph_id.hex);
    gx_req req;
    if (!gx_req_parse(gx_mp_find(h, GX_F(TYPE)), &req))
        return GX_OK; /* "ERROR": a request the daemon could not read; the status says why */
    /* What each kind's reply carries besides the status (docs/protocol.md). */
    const msgpack_object *o;
    switch (req) {
    case GX_REQ_PING:
    case GX_REQ_CANCEL:
    case GX_REQ_UNLOAD:
    case GX_REQ_SHM_REGISTER:
    case GX_REQ_SHM_UNREGISTER:
    case GX_REQ_SHM_LIST:
    case GX_REQ_RING_OPEN:
    case GX_REQ_RING_CLOSE:
        return GX_OK;
    case GX_REQ_RING_BIND:
        if ((o = gx_mp_find(h, GX_F(SLOT))) && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
            o->via.u64 < GX_RING_MAX_SLOTS)
            r->ring_slot = (uint32_t)o->via.u64;
        else if (r->status == GX_OK)
            return gx_errf(err, errlen, GX_EPROTO, "RING_BIND reply without a slot");
        return GX_OK;
    case GX_REQ_LOAD:
    case GX_REQ_RUN:
        s_parse_run_info(gx_mp_find(h, GX_F(RUN)), &r->info);
        break;
    case GX_REQ_EXPLAIN:
    case GX_REQ_TUNE:
    case GX_REQ_COMPILE:
        s_copy_str(gx_mp_find(h, GX_F(KEY)), r->key, sizeof r->key);
        if ((o = gx_mp_find(h, GX_F(PLAN))) && o->type == MSGPACK_OBJECT_STR) {
            if (!(r->plan_json = malloc(o->via.str.size + 1)))
                return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            memcpy(r->plan_json, o->via.str.ptr, o->via.str.size);
            r->plan_json[o->via.str.size] = '\0';
        }
        break;
    case GX_REQ_STATS:
        if ((o = gx_mp_find(h, GX_F(STATS))) && !(r->stats_json = s_to_json(o)))
            return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        if ((o = gx_mp_find(h, GX_F(TEXT))) && o->type == MSGPACK_OBJECT_STR &&
            !(r->text = strndup(o->via.str.ptr, o->via.str.size)))
            return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return GX_OK;
    case GX_REQ_LIST:
        if ((o = gx_mp_find(h, GX_F(GRAPHS))) && o->type == MSGPACK_OBJECT_ARRAY &&
            !(r->list_json = s_to_json(o)))
            return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return GX_OK;
    case GX_REQ_COUNT:
        return GX_OK;
    }
    const msgpack_object *outs = gx_mp_find(h, GX_F(OUTPUTS));
    if (!outs)
        return GX_OK;
    size_t n = outs->type == MSGPACK_OBJECT_ARRAY ? outs->via.array.size : 0, in_shm = 0;
    for (size_t i = 0; i < n; i++)
        in_shm += gx_mp_find(&outs->via.array.ptr[i], GX_F(SHM)) != NULL;
    if (outs->type != MSGPACK_OBJECT_ARRAY || n - in_shm != nframes)
        return gx_errf(err, errlen, GX_EPROTO,
                       "reply lists %zu outputs (%zu in shared memory) but carries %zu frames", n,
                       in_shm, nframes);
    r->names = calloc(n + 1, sizeof *r->names);
    r->tensors = calloc(n + 1, sizeof *r->tensors);
    r->shm = calloc(n + 1, sizeof *r->shm);
    if (!r->names || !r->tensors || !r->shm)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    size_t total = 0;
    for (size_t i = 0, f = 0; i < n; i++) {
        gx_dtype dt;
        int ndim;
        int64_t shape[GX_MAX_DIMS];
        size_t nbytes;
        const msgpack_object *so = gx_mp_find(&outs->via.array.ptr[i], GX_F(SHM));
        int rc = gx_wire_unpack_tensor_desc(&outs->via.array.ptr[i], "outputs", INT64_MAX,
                                            &r->names[i], &dt, &ndim, shape, &nbytes, err, errlen);
        if (rc < 0)
            return rc;
        r->n_out = i + 1;
        total += nbytes;
        gx_kind kind;
        if ((rc = gx_wire_desc_kind(&outs->via.array.ptr[i], "outputs", &kind, err, errlen)) < 0)
            return rc;
        if (gx_wire_is_value(kind, dt)) { /* a sequence, none or strings, from its frame */
            char *name = NULL;
            if (so || f >= nframes)
                return gx_errf(err, errlen, GX_EPROTO, "output '%s': a %s without its frame",
                               r->names[i], gx_kind_name(kind));
            rc = gx_wire_unpack_value(&outs->via.array.ptr[i], "outputs", INT64_MAX,
                                      zmq_msg_data(&frames[f]), zmq_msg_size(&frames[f]), &name,
                                      &r->tensors[i], err, errlen);
            free(name);
            if (rc < 0)
                return rc;
            total += zmq_msg_size(&frames[f++]);
            continue;
        }
        if (so) {
            gx_wire_shm_ref ref;
            if ((rc = gx_wire_unpack_shm_ref(so, "outputs[].shm", &ref, err, errlen)) < 0 ||
                (rc = s_shm_output(c, r, i, &ref, dt, ndim, shape, nbytes, err, errlen)) < 0)
                return rc;
            continue;
        }
        if (zmq_msg_size(&frames[f]) != nbytes)
            return gx_errf(err, errlen, GX_EPROTO, "output '%s': frame has %zu bytes, expected %zu",
                           r->names[i], zmq_msg_size(&frames[f]), nbytes);
        r->tensors[i] = gx_tensor_new_copy(dt, ndim, shape, zmq_msg_data(&frames[f++]), nbytes);
        if (!r->tensors[i])
            return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    c->last_out_bytes = total;
    return GX_OK;
}

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define GX_MAX_REPLY_FRAMES 1025

/* A PING reply's "load" ([queued, busy, workers], docs/protocol.md), kept
 * as the daemon's latest load figure; it counts the jobs sent before that
 * PING (the daemon reads a connection's requests in order). */
static void s_take_load(gx_client *c, const msgpack_object *h)
{
    gx_req kind;
    if (!gx_req_parse(gx_mp_find(h, GX_F(TYPE)), &kind) || kind != GX_REQ_PING)
        return;
    const msgpack_object *o = gx_mp_find(h, GX_F(LOAD));
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
        return;
    int64_t v[3];
    for (uint32_t i = 0; i < 3; i++)
        if (gx_mp_int(&o->via.array.ptr[i], "", 0, INT32_MAX, &v[i], NULL, 0) != GX_OK)
            return;
    c->has_load = true;
    c->load_jobs = v[0] + v[1];
    c->load_workers = v[2] > 0 ? v[2] : 1;
    c->load_ms = s_now_ms();
    c->load_base = c->ping_seq;
    c->load_done = 0;
}

/* The socket monitor's events so far: a lost connection counts in
 * conn_gen, a failed handshake is kept until one succeeds. */
static void s_monitor_drain(gx_client *c)
{
    for (;;) {
        zmq_msg_t ev;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + 2, 4);
        }
        bool more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) { /* the endpoint frame */
            zmq_msg_init(&ev);
            zmq_msg_recv(&ev, c->mon, 0);
            zmq_msg_close(&ev);
        }
        if (event == ZMQ_EVENT_DISCONNECTED) {
            c->conn_gen++;
            c->up = false;
            c->probe_id = 0; /* a PING the daemon gone will not answer */
            c->silent = false;
            c->has_load = false;
            if (!c->handshaken && !c->refused_event) /* closed during the handshake */
                c->refused_event = event;
        } else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            c->refused_event = 0;
            c->handshaken = true;
            c->up = true;
        } else if (event) {
            c->refused_event = event;
            c->refused_value = (int)value;
        }
    }
}

/* Why the daemon refused the handshake, for a wait that ends with it. */
static int s_refused(gx_client *c)
{
    if (c->refused_event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return s_fail(c, GX_EPERM,
                      "%s refused this client's CURVE key (ZAP %d): its public key is not in "
                      "the daemon's security.client_keys",
                      c->endpoint, c->refused_value);
    if (c->refused_event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        c->refused_value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        return s_fail(c, GX_EPERM,
                      "%s and this client disagree on CURVE: the daemon takes only clients with "
                      "keys (set GEXEC_SERVER_KEY and GEXEC_CLIENT_SECRET), or it has none",
                      c->endpoint);
    if (c->refused_event == ZMQ_EVENT_DISCONNECTED)
        return s_fail(c, GX_EPERM,
                      "%s closed the connection during the handshake: a daemon with CURVE "
                      "takes only clients with keys (GEXEC_SERVER_KEY, GEXEC_CLIENT_SECRET), "
                      "and the server's public key must be its own",
                      c->endpoint);
    return s_fail(c, GX_EPERM,
                  "the handshake with %s failed (ZeroMQ event %#x, %#x): a wrong "
                  "GEXEC_SERVER_KEY, or not a gexecd",
                  c->endpoint, (unsigned)c->refused_event, (unsigned)c->refused_value);
}

/* Receive one reply within timeout_ms and hand it to its pending job.
 * GX_OK (a reply, or monitor events: the caller looks at its job again),
 * GX_ETIMEDOUT (nothing came) or GX_EPROTO/GX_ENOMEM. */
static int s_recv_one(gx_client *c, int timeout_ms)
{
    zmq_pollitem_t it[] = {{c->sock, 0, ZMQ_POLLIN, 0}, {c->mon, 0, ZMQ_POLLIN, 0}};
    int n = zmq_poll(it, 2, timeout_ms);
    if (n < 0)
        return s_fail(c, GX_EIO, "poll: %s", zmq_strerror(zmq_errno()));
    if (n == 0)
        return GX_ETIMEDOUT;
    if (it[1].revents & ZMQ_POLLIN)
        s_monitor_drain(c);
    if (!(it[0].revents & ZMQ_POLLIN))
        return GX_OK;
    zmq_msg_t *frames = calloc(GX_MAX_REPLY_FRAMES, sizeof *frames);
    if (!frames)
        return s_fail(c, GX_ENOMEM, "out of memory");
    size_t nf = 0;
    int more = 1, rc = GX_OK;
    while (more) {
        zmq_msg_t tmp;
        zmq_msg_init(&tmp);
        if (zmq_msg_recv(&tmp, c->sock, 0) < 0) {
            zmq_msg_close(&tmp);
            rc = s_fail(c, GX_EIO, "recv: %s", zmq_strerror(zmq_errno()));
            break;
        }
        more = zmq_msg_more(&tmp);
        if (nf < GX_MAX_REPLY_FRAMES)
            frames[nf++] = tmp;
        else
            zmq_msg_close(&tmp);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    if (rc == GX_OK && nf > 0) {
        char err[512];
        rc = gx_wire_unpack(zmq_msg_data(&frames[0]), zmq_msg_size(&frames[0]), &up, err, sizeof err);
        if (rc < 0)
            s_fail(c, rc, "bad reply from daemon: %s", err);
        int64_t id = 0;
        if (rc == GX_OK) {
            c->silent = false;
            s_take_load(c, &up.data);
        }
        bool has_id = rc == GX_OK && gx_mp_int(gx_mp_find(&up.data, GX_F(ID)), "id", 0,
                                                INT64_MAX, &id, NULL, 0) == GX_OK;
        if (has_id && c->probe_id && (uint64_t)id == c->probe_id) {
            c->probe_id = 0; /* the client's own PING (s_probe) */
        } else if (has_id) {
            c->strays++; /* taken back below when a waiting job takes it */
            for (gx_job *j = c->pending; j; j = j->next) {
                if (j->id != (uint64_t)id || j->result)
                    continue;
                gx_result *r = NULL;
                int prc = s_parse_reply(c, &up.data, frames + 1, nf - 1, &r, err, sizeof err);
                if (prc < 0 && r) {
                    r->status = prc;
                    free(r->message);
                    r->message = strdup(err);
                }
                if (r)
                    snprintf(r->info.endpoint, sizeof r->info.endpoint, "%.*s",
                             (int)sizeof r->info.endpoint - 1, c->endpoint);
                j->result = r;
                /* a reply after the figure's: the daemon counted that job */
                c->load_done += j->seq && j->seq <= c->load_base;
                if (j->pool_extent) /* its outputs are copied out of the region */
                    c->pool_live--;
                j->pool_extent = false;
                c->strays--;
                break;
            }
        }
    }
    msgpack_unpacked_destroy(&up);
    for (size_t i = 0; i < nf; i++)
        zmq_msg_close(&frames[i]);
    free(frames);
    return rc;
}

static void s_job_unlink(gx_job *job)
{
    gx_client *c = job->client;
    if (!c)
        return;
    for (gx_job **pp = &c->pending; *pp; pp = &(*pp)->next)
        if (*pp == job) {
            *pp = job->next;
            break;
        }
    job->client = NULL;
}

GX_EXPORT void gx_job_destroy(gx_job **jp)
{
    if (!jp || !*jp)
        return;
    if ((*jp)->multi)
        s_mjob_destroy(*jp);
    gx_client *c = (*jp)->client;
    if (c && (*jp)->pool_extent) { /* the daemon may still write its outputs there */
        c->pool_live--;
        c->pool_retired = true;
    }
    s_job_unlink(*jp);
    gx_result_destroy(&(*jp)->result);
    free(*jp);
    *jp = NULL;
}

GX_EXPORT uint64_t gx_job_id(const gx_job *job) { return job ? job->id : 0; }

/* Take what c's socket holds until job has its reply or nothing is left;
 * true when it has it. A reply sent before the daemon closed the
 * connection may still be queued on the socket when the connection's loss
 * is seen (zmq_poll looks at the socket, then at the monitor). */
static bool s_reply_queued(gx_client *c, const gx_job *job)
{
    int rc = GX_OK;
    while (!job->result && rc == GX_OK)
        rc = s_recv_one(c, 0);
    return job->result != NULL;
}

GX_EXPORT int gx_job_wait(gx_job *job, int timeout_ms, gx_result **out)
{
    if (out)
        *out = NULL;
    if (!job)
        return GX_EINVAL;
    if (job->multi)
        return s_mjob_wait(job, timeout_ms, false, out);
    gx_client *c = job->client;
    if (!c && !job->result)
        return GX_EINVAL;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : s_now_ms() + timeout_ms;
    while (!job->result) {
        if (c->refused_event)
            return s_refused(c);
        if (job->conn_gen != c->conn_gen) {
            if (s_reply_queued(c, job))
                break;
            return s_fail(c, GX_ECONNECT,
                          "the connection to %s was lost before the job's reply came (the "
                          "daemon stopped or was killed): it may or may not have run there",
                          c->endpoint);
        }
        int64_t left = timeout_ms < 0 ? -1 : deadline - s_now_ms();
        if (timeout_ms >= 0 && left < 0)
            left = 0;
        int rc = s_recv_one(c, (int)(left > INT32_MAX ? INT32_MAX : left));
        if (rc == GX_ETIMEDOUT) {
            char why[640];
            return s_fail(c, GX_ETIMEDOUT, "no reply from %s within %d ms (%s)", c->endpoint,
                          timeout_ms, s_no_reply_why(c, why, sizeof why));
        }
        if (rc < 0)
            return rc;
    }
    gx_result *r = job->result;
    job->result = NULL;
    if (c)
        s_job_unlink(job);
    int status = r->status;
    if (status < 0 && c)
        s_fail(c, status, "%s: %s", gx_status_name(status), gx_result_message(r));
    if (out)
        *out = r;
    else
        gx_result_destroy(&r);
    return status;
}

/* Sends the frame of a sequence or none (its items' bytes back to back,
 * docs/protocol.md); zmq_send's return, -1 with errno ENOMEM. */
static int s_send_value(void *sock, const gx_tensor *t, int flags)
{
    size_t n = gx_wire_value_bytes(t);
    void *buf = malloc(n ? n : 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    gx_wire_value_write(t, buf);
    int rc = zmq_send(sock, buf, n, flags);
    free(buf);
    return rc;
}

/* Where input i of a request lies in shared memory (docs/shm.md): a
 * region's name, NULL when its bytes travel in a frame. */
typedef struct s_place {
    const char *region;
    uint64_t offset;
} s_place;

/* Input i's place: pl's (the client's own region), else the request's own
 * (gx_request_add_input_shm); region NULL: neither. */
static s_place s_place_of(const gx_request *rq, const s_place *pl, size_t i)
{
    if (pl && pl[i].region)
        return pl[i];
    if (rq->in[i].shm)
        return (s_place){rq->in[i].shm->name, rq->in[i].shm_off};
    return (s_place){NULL, 0};
}

/* Whether input i of rq travels in a frame. */
static bool s_framed(const gx_request *rq, const s_place *pl, size_t i)
{
    return !rq->in[i].shape_only && !s_place_of(rq, pl, i).region;
}

/* Send header (sbuffer) plus the frames of rq's inputs not in shared
 * memory (pl: where the client's own region has some, or NULL);
 * registers a pending job. */
static int s_send_placed(gx_client *c, const msgpack_sbuffer *hdr, const gx_request *rq,
                         const s_place *pl, uint64_t id, gx_job **jobp)
{
    gx_job *job = calloc(1, sizeof *job);
    if (!job)
        return s_fail(c, GX_ENOMEM, "out of memory");
    size_t nframes = 0;
    for (size_t i = 0; rq && i < rq->n_in; i++)
        nframes += s_framed(rq, pl, i);
    int rc = zmq_send(c->sock, hdr->data, hdr->size, nframes ? ZMQ_SNDMORE : 0);
    for (size_t i = 0, sent = 0; rc >= 0 && sent < nframes; i++) /* rq: frames to send */
        if (s_framed(rq, pl, i) && gx_wire_is_value(rq->in[i].t->kind, rq->in[i].t->dtype))
            rc = s_send_value(c->sock, rq->in[i].t, ++sent < nframes ? ZMQ_SNDMORE : 0);
        else if (s_framed(rq, pl, i))
            rc = zmq_send(c->sock, rq->in[i].t->data, rq->in[i].t->nbytes,
                          ++sent < nframes ? ZMQ_SNDMORE : 0);
    if (rc < 0) {
        free(job);
        return s_fail(c, GX_ECONNECT, "send to %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    }
    job->client = c;
    job->id = id;
    job->conn_gen = c->conn_gen;
    job->next = c->pending;
    c->pending = job;
    *jobp = job;
    return GX_OK;
}

static int s_send(gx_client *c, const msgpack_sbuffer *hdr, const gx_request *rq, uint64_t id,
                  gx_job **jobp)
{
    return s_send_placed(c, hdr, rq, NULL, id, jobp);
}

static void s_pack_head(msgpack_packer *pk, gx_req type, uint64_t id, size_t extra)
{
    msgpack_pack_map(pk, 3 + extra);
    gx_mp_pack_str(pk, GX_F(V));
    msgpack_pack_int(pk, GX_PROTOCOL_VERSION);
    gx_mp_pack_str(pk, GX_F(TYPE));
    gx_mp_pack_str(pk, gx_req_name(type));
    gx_mp_pack_str(pk, GX_F(ID));
    msgpack_pack_uint64(pk, id);
}

/* The synchronous end of every request: wait for job's reply within the
 * client's timeout (no reply at all is GX_ECONNECT), then forget the job.
 * *out (caller owns) is the reply when one came; out may be NULL. */
static int s_await(gx_client *c, gx_job **job, gx_result **out)
{
    gx_result *r = NULL;
    const bool multi = (*job)->multi != NULL; /* its members said why already */
    int rc = multi ? s_mjob_wait(*job, c->timeout_ms, true, &r)
                   : gx_job_wait(*job, c->timeout_ms, &r);
    if (!multi && rc == GX_ETIMEDOUT && !r && c->refused_event) {
        rc = s_refused(c);
    } else if (!multi && rc == GX_ETIMEDOUT && !r) {
        char why[640];
        rc = s_fail(c, GX_ECONNECT, "no reply from %s within %d ms (%s)", c->endpoint,
                    c->timeout_ms, s_no_reply_why(c, why, sizeof why));
    }
    gx_job_destroy(job);
    if (out)
        *out = r;
    else
        gx_result_destroy(&r);
    return rc;
}

/* A request whose header carries at most a graph or a target id; waits for
 * the reply (*out, caller owns). */
static int s_simple(gx_client *c, gx_req type, const gx_graph *graph, uint64_t target,
                    gx_result **out)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = c->next_id++;
    s_pack_head(&pk, type, id, graph || target ? 1 : 0);
    if (graph) {
        gx_mp_pack_str(&pk, GX_F(GRAPH));
        gx_wire_pack_graph(&pk, graph);
    } else if (target) {
        gx_mp_pack_str(&pk, GX_F(TARGET));
        msgpack_pack_uint64(&pk, target);
    }
    gx_job *job = NULL;
    int rc = s_send(c, &sb, NULL, id, &job);
    msgpack_sbuffer_destroy(&sb);
    return rc < 0 ? rc : s_await(c, &job, out);
}

GX_EXPORT int gx_client_ping(gx_client *c)
{
    if (!c)
        return GX_EINVAL;
    if (c->multi) { /* each: GX_OK when one answers */
        int rc = GX_ECONNECT;
        for (size_t k = 0; k < s_multi_count(c); k++) {
            gx_client *m = s_multi_member(c, k);
            int rk = gx_client_ping(m);
            if (rk == GX_OK) {
                rc = GX_OK;
            } else if (rc != GX_OK) {
                s_multi_error(c, m);
                rc = rk;
            }
        }
        return rc;
    }
    gx_result *r = NULL;
    c->ping_seq = c->sent_seq;
    int rc = s_simple(c, GX_REQ_PING, NULL, 0, &r);
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_client_load(gx_client *c, const gx_graph *g, gx_graph_id *id)
{
    if (!c || !g)
        return GX_EINVAL;
    if (c->multi)
        return s_multi_load(c, g, NULL, id);
    gx_result *r = NULL;
    int rc = s_simple(c, GX_REQ_LOAD, g, 0, &r);
    if (rc == GX_OK && id)
        *id = r->graph_id;
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_client_load_named(gx_client *c, const gx_graph *g, const char *name,
                                   gx_graph_id *id)
{
    if (!c || !g || !name || !*name)
        return GX_EINVAL;
    if (c->multi)
        return s_multi_load(c, g, name, id);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t rid = c->next_id++;
    s_pack_head(&pk, GX_REQ_LOAD, rid, 2);
    gx_mp_pack_str(&pk, GX_F(GRAPH));
    gx_wire_pack_graph(&pk, g);
    gx_mp_pack_str(&pk, GX_F(NAME));
    gx_mp_pack_str(&pk, name);
    gx_job *job = NULL;
    gx_result *r = NULL;
    int rc = s_send(c, &sb, NULL, rid, &job);
    msgpack_sbuffer_destroy(&sb);
    if (rc == GX_OK)
        rc = s_await(c, &job, &r);
    if (rc == GX_OK && id)
        *id = r->graph_id;
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_client_list(gx_client *c, char **json)
{
    if (!c || !json)
        return GX_EINVAL;
    *json = NULL;
    S_MULTI_FIRST(c, gx_client_list(m, json));
    gx_result *r = NULL;
    int rc = s_simple(c, GX_REQ_LIST, NULL, 0, &r);
    if (rc == GX_OK) {
        *json = r->list_json;
        r->list_json = NULL;
        if (!*json)
            rc = s_fail(c, GX_EPROTO, "LIST reply without graphs");
    }
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_client_unload(gx_client *c, const char *graph)
{
    if (!c || !graph || !*graph)
        return GX_EINVAL;
    if (c->multi)
        return s_multi_unload(c, graph);
    bool hex = strlen(graph) == 64 && strspn(graph, "0123456789abcdef") == 64;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t rid = c->next_id++;
    s_pack_head(&pk, GX_REQ_UNLOAD, rid, 1);
    gx_mp_pack_str(&pk, hex ? "graph_id" : "graph_name");
    gx_mp_pack_str(&pk, graph);
    gx_job *job = NULL;
    int rc = s_send(c, &sb, NULL, rid, &job);
    msgpack_sbuffer_destroy(&sb);
    return rc < 0 ? rc : s_await(c, &job, NULL);
}

GX_EXPORT const char *gx_version(void)
{
    return PACKAGE_VERSION;
}

GX_EXPORT int gx_client_metrics(gx_client *c, char **text)
{
    if (!c || !text)
        return GX_EINVAL;
    *text = NULL;
    S_MULTI_FIRST(c, gx_client_metrics(m, text));
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = c->next_id++;
    s_pack_head(&pk, GX_REQ_STATS, id, 1);
    gx_mp_pack_str(&pk, GX_F(FORMAT));
    gx_mp_pack_str(&pk, "prometheus");
    gx_job *job = NULL;
    gx_result *r = NULL;
    int rc = s_send(c, &sb, NULL, id, &job);
    msgpack_sbuffer_destroy(&sb);
    if (rc == GX_OK)
        rc = s_await(c, &job, &r);
    if (rc == GX_OK) {
        *text = r->text;
        r->text = NULL;
        if (!*text)
            rc = s_fail(c, GX_EPROTO, "STATS reply without the Prometheus text");
    }
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_client_stats(gx_client *c, char **json)
{
    if (!c || !json)
        return GX_EINVAL;
    *json = NULL;
    S_MULTI_FIRST(c, gx_client_stats(m, json));
    gx_result *r = NULL;
    int rc = s_simple(c, GX_REQ_STATS, NULL, 0, &r);
    if (rc == GX_OK) {
        *json = r->stats_json;
        r->stats_json = NULL;
        if (!*json)
            rc = s_fail(c, GX_EPROTO, "STATS reply without stats");
    }
    gx_result_destroy(&r);
    return rc;
}

GX_EXPORT int gx_job_cancel(gx_job *job)
{
    if (!job || !job->client)
        return GX_EINVAL;
    if (job->multi)
        return s_mjob_cancel(job);
    gx_client *c = job->client;
    gx_result *r = NULL;
    int rc = s_simple(c, GX_REQ_CANCEL, NULL, job->id, &r);
    gx_result_destroy(&r);
    return rc;
}

/* ---- requests ---- */

GX_EXPORT gx_request *gx_request_new(void)
{
    return calloc(1, sizeof(gx_request));
}

GX_EXPORT void gx_request_destroy(gx_request **rqp)
{
    if (!rqp || !*rqp)
        return;
    gx_request *rq = *rqp;
    for (size_t i = 0; i < rq->n_in; i++) {
        free(rq->in[i].name);
        free(rq->in[i].view); /* the struct only: the data is the caller's */
    }
    for (size_t i = 0; i < rq->n_out; i++)
        free(rq->out[i]);
    free(rq->in);
    free(rq->out);
    free(rq);
    *rqp = NULL;
}

GX_EXPORT int gx_request_set_graph_id(gx_request *rq, const gx_graph_id *id)
{
    if (!rq || !id || strlen(id->hex) != 64)
        return GX_EINVAL;
    rq->graph_id = *id;
    rq->has_id = true;
    rq->graph = NULL;
    rq->graph_name[0] = '\0';
    return GX_OK;
}

GX_EXPORT int gx_request_set_graph_name(gx_request *rq, const char *name)
{
    if (!rq || !name || !*name || strlen(name) >= sizeof rq->graph_name)
        return GX_EINVAL;
    snprintf(rq->graph_name, sizeof rq->graph_name, "%s", name);
    rq->has_id = false;
    rq->graph = NULL;
    return GX_OK;
}

GX_EXPORT int gx_request_set_graph(gx_request *rq, const gx_graph *g)
{
    if (!rq || !g)
        return GX_EINVAL;
    rq->graph = g;
    rq->has_id = false;
    rq->graph_name[0] = '\0';
    return GX_OK;
}

GX_EXPORT int gx_request_add_input(gx_request *rq, const char *name, const gx_tensor *t)
{
    if (!rq || !name || !*name || !t)
        return GX_EINVAL;
    if (!gx_grow(&rq->in, &rq->cap_in, rq->n_in + 1, sizeof *rq->in))
        return GX_ENOMEM;
    if (!(rq->in[rq->n_in].name = strdup(name)))
        return GX_ENOMEM;
    rq->in[rq->n_in].view = NULL;
    rq->in[rq->n_in].shape_only = false;
    rq->in[rq->n_in].shm = NULL;
    rq->in[rq->n_in].shm_off = 0;
    rq->in[rq->n_in++].t = t;
    return GX_OK;
}

/* An input whose tensor (a view: data borrowed, or none for a shape
 * alone) the request owns. */
static int s_add_view(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                      const int64_t *shape, const void *data, size_t nbytes, bool shape_only);

GX_EXPORT int gx_request_add_input_shape(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                                         const int64_t *shape)
{
    size_t nbytes;
    if (!rq || ndim < 0 || ndim > GX_MAX_DIMS || (ndim > 0 && !shape) ||
        !gx_shape_nbytes(dt, ndim, shape, &nbytes))
        return GX_EINVAL;
    return s_add_view(rq, name, dt, ndim, shape, NULL, 0, true);
}

GX_EXPORT int gx_request_add_input_data(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                                        const int64_t *shape, const void *data, size_t nbytes)
{
    size_t want;
    if (!rq || (ndim > 0 && !shape) || !gx_shape_nbytes(dt, ndim, shape, &want) ||
        want != nbytes || (nbytes && !data) || dt == GX_STRING) /* strings: a gx_tensor */
        return GX_EINVAL;
    return s_add_view(rq, name, dt, ndim, shape, data, nbytes, false);
}

static int s_add_view(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                      const int64_t *shape, const void *data, size_t nbytes, bool shape_only)
{
    gx_tensor *v = calloc(1, sizeof *v);
    if (!v)
        return GX_ENOMEM;
    v->dtype = dt;
    v->ndim = ndim;
    if (ndim > 0)
        memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
    v->numel = gx_shape_numel(ndim, shape, INT64_MAX);
    v->nbytes = nbytes;
    v->data = (void *)data; /* only ever read: sent by gx_client_submit */
    int rc = gx_request_add_input(rq, name, v);
    if (rc < 0) {
        free(v);
        return rc;
    }
    rq->in[rq->n_in - 1].view = v;
    rq->in[rq->n_in - 1].shape_only = shape_only;
    return GX_OK;
}

GX_EXPORT int gx_request_add_output(gx_request *rq, const char *name)
{
    if (!rq || !name || !*name)
        return GX_EINVAL;
    if (!gx_grow(&rq->out, &rq->cap_out, rq->n_out + 1, sizeof *rq->out))
        return GX_ENOMEM;
    if (!(rq->out[rq->n_out] = strdup(name)))
        return GX_ENOMEM;
    rq->n_out++;
    return GX_OK;
}

GX_EXPORT int gx_request_set_priority(gx_request *rq, int priority)
{
    if (!rq || priority < GX_PRIORITY_MIN || priority > GX_PRIORITY_MAX)
        return GX_EINVAL;
    rq->priority = priority;
    return GX_OK;
}

GX_EXPORT int gx_request_set_deadline_ms(gx_request *rq, int64_t ms)
{
    if (!rq || ms < 0 || ms > GX_DEADLINE_MAX_MS)
        return GX_EINVAL;
    rq->deadline_ms = ms;
    return GX_OK;
}

GX_EXPORT int gx_request_set_mode(gx_request *rq, gx_mode mode)
{
    if (!rq || (unsigned)mode >= GX_MODE_COUNT)
        return GX_EINVAL;
    rq->mode = mode;
    return GX_OK;
}

/* Inputs of rq given by shape alone (gx_request_add_input_shape). */
static size_t s_n_shapes(const gx_request *rq)
{
    size_t n = 0;
    for (size_t i = 0; i < rq->n_in; i++)
        n += rq->in[i].shape_only;
    return n;
}

/* The `graph_id` or `graph`, the `inputs` of rq (those in shared memory
 * with their place, pl as for s_send_placed) and, when it has inputs given
 * by shape alone, their `shapes` (two header fields, or three). */
static void s_pack_graph_inputs(msgpack_packer *pk, const gx_request *rq, const s_place *pl)
{
    if (rq->has_id) {
        gx_mp_pack_str(pk, GX_F(GRAPH_ID));
        gx_mp_pack_str(pk, rq->graph_id.hex);
    } else if (rq->graph_name[0]) {
        gx_mp_pack_str(pk, GX_F(GRAPH_NAME));
        gx_mp_pack_str(pk, rq->graph_name);
    } else {
        gx_mp_pack_str(pk, GX_F(GRAPH));
        gx_wire_pack_graph(pk, rq->graph);
    }
    const size_t n_shapes = s_n_shapes(rq);
    for (int shapes = 0; shapes <= (n_shapes > 0); shapes++) {
        gx_mp_pack_str(pk, shapes ? "shapes" : "inputs");
        msgpack_pack_array(pk, (uint32_t)(shapes ? n_shapes : rq->n_in - n_shapes));
        for (size_t i = 0; i < rq->n_in; i++) {
            const s_place at = s_place_of(rq, pl, i);
            gx_wire_shm_ref ref = {.offset = at.offset, .bytes = rq->in[i].t->nbytes};
            if (rq->in[i].shape_only != (shapes == 1))
                continue;
            if (!at.region) {
                gx_wire_pack_value_desc(pk, rq->in[i].name, rq->in[i].t);
                continue;
            }
            snprintf(ref.region, sizeof ref.region, "%s", at.region);
            gx_wire_pack_tensor_desc_shm(pk, rq->in[i].name, rq->in[i].t->dtype,
                                         rq->in[i].t->ndim, rq->in[i].t->shape, &ref);
        }
    }
}

/* ---- shared memory (docs/shm.md) ---- */

static size_t s_align(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* SHM_REGISTER s (or SHM_UNREGISTER it). */
static int s_shm_request(gx_client *c, const gx_shm *s, bool reg)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = c->next_id++;
    s_pack_head(&pk, reg ? GX_REQ_SHM_REGISTER : GX_REQ_SHM_UNREGISTER, id, reg ? 2 : 1);
    gx_mp_pack_str(&pk, GX_F(REGION));
    gx_mp_pack_str(&pk, s->name);
    if (reg) {
        gx_mp_pack_str(&pk, GX_F(BYTES));
        msgpack_pack_uint64(&pk, s->bytes);
    }
    gx_job *job = NULL;
    int rc = s_send(c, &sb, NULL, id, &job);
    msgpack_sbuffer_destroy(&sb);
    return rc < 0 ? rc : s_await(c, &job, NULL);
}

/* Whether input i of rq goes through the client's own region. */
static bool s_pooled(const gx_client *c, const gx_request *rq, size_t i)
{
    const gx_tensor *t = rq->in[i].t;
    return s_framed(rq, NULL, i) && !gx_wire_is_value(t->kind, t->dtype) && t->nbytes &&
           t->nbytes >= c->shm_threshold;
}

/* Room for need bytes in the client's own region at *off, made and
 * registered on first use and made again, larger, when no job holds room
 * in it; false when shared memory is off for this client or the region is
 * full (the job's tensors then go over the socket). */
static bool s_pool_reserve(gx_client *c, size_t need, size_t *off)
{
    if (c->shm_off || need > GX_SHM_POOL_MAX)
        return false;
    if (c->pool && c->pool_live == 0) {
        c->pool_used = 0;
        if (c->pool_retired || need > c->pool->bytes) {
            s_shm_request(c, c->pool, false); /* the daemon keeps it while jobs use it */
            gx_shm_destroy(&c->pool);
        }
    }
    if (!c->pool) {
        size_t cap = GX_SHM_POOL_MIN;
        while (cap < need)
            cap *= 2;
        char err[256];
        gx_shm *s = gx_shm_new(cap, err, sizeof err);
        if (!s || s_shm_request(c, s, true) < 0) {
            gx_shm_destroy(&s);
            c->shm_off = true; /* sockets from now on */
            return false;
        }
        gx_shm_unlink(s); /* the daemon has it open: no name outlives this process */
        c->pool = s;
        c->pool_used = 0;
        c->pool_retired = false;
    }
    if (c->pool_retired || need > c->pool->bytes - c->pool_used)
        return false;
    *off = c->pool_used;
    c->pool_used += need;
    c->pool_live++;
    return true;
}

/* The inputs of rq that go through the client's own region: copied there,
 * their places in pl; an output area after them (*out_off, *out_bytes; 0
 * bytes: none) unless the request has its own. true when the job holds
 * room in the region. */
static bool s_pool_place(gx_client *c, const gx_request *rq, s_place *pl, size_t *out_off,
                         size_t *out_bytes)
{
    size_t need = 0, at;
    *out_bytes = 0;
    if (c->shm_off || c->shm_threshold == SIZE_MAX)
        return false;
    for (size_t i = 0; i < rq->n_in; i++)
        if (s_pooled(c, rq, i))
            need += s_align(rq->in[i].t->nbytes);
    if (!need)
        return false;
    size_t area = rq->out_shm ? 0 : s_align(need > c->last_out_bytes ? need : c->last_out_bytes);
    if (!s_pool_reserve(c, need + area, &at))
        return false;
    for (size_t i = 0; i < rq->n_in; i++)
        if (s_pooled(c, rq, i)) {
            memcpy((char *)c->pool->base + at, rq->in[i].t->data, rq->in[i].t->nbytes);
            pl[i] = (s_place){c->pool->name, at};
            at += s_align(rq->in[i].t->nbytes);
        }
    *out_off = at;
    *out_bytes = area;
    return true;
}

GX_EXPORT int gx_client_shm_register(gx_client *c, gx_shm *s)
{
    if (!c || !s)
        return GX_EINVAL;
    if (c->multi)
        return s_fail(c, GX_EUNSUPPORTED, "a client of several daemons has no shared memory");
    if (!gx_grow(&c->regions, &c->cap_regions, c->n_regions + 1, sizeof *c->regions))
        return s_fail(c, GX_ENOMEM, "out of memory");
    int rc = s_shm_request(c, s, true);
    if (rc == GX_OK)
        c->regions[c->n_regions++] = s;
    return rc;
}

GX_EXPORT int gx_client_shm_unregister(gx_client *c, gx_shm *s)
{
    if (!c || !s)
        return GX_EINVAL;
    if (c->multi)
        return s_fail(c, GX_EUNSUPPORTED, "a client of several daemons has no shared memory");
    for (size_t k = 0; k < c->n_regions; k++)
        if (c->regions[k] == s)
            c->regions[k--] = c->regions[--c->n_regions];
    return s_shm_request(c, s, false);
}

GX_EXPORT void gx_client_set_shm_threshold(gx_client *c, size_t bytes)
{
    if (c)
        c->shm_threshold = bytes;
}

GX_EXPORT int gx_request_add_input_shm(gx_request *rq, const char *name, gx_dtype dt, int ndim,
                                       const int64_t *shape, const gx_shm *s, size_t offset)
{
    size_t nbytes;
    if (!rq || !s || (ndim > 0 && !shape) || !gx_shape_nbytes(dt, ndim, shape, &nbytes) ||
        offset > s->bytes || nbytes > s->bytes - offset || dt == GX_STRING)
        return GX_EINVAL; /* strings travel in frames (docs/strings.md) */
    int rc = s_add_view(rq, name, dt, ndim, shape, NULL, nbytes, false);
    if (rc == GX_OK) {
        rq->in[rq->n_in - 1].shm = s;
        rq->in[rq->n_in - 1].shm_off = offset;
    }
    return rc;
}

GX_EXPORT int gx_request_set_output_shm(gx_request *rq, const gx_shm *s, size_t offset,
                                        size_t bytes)
{
    if (!rq || (s && (offset > s->bytes || bytes > s->bytes - offset)))
        return GX_EINVAL;
    rq->out_shm = s;
    rq->out_shm_off = offset;
    rq->out_shm_bytes = bytes;
    return GX_OK;
}

GX_EXPORT bool gx_result_output_shm(const gx_result *r, size_t i, size_t *offset, size_t *nbytes)
{
    if (!r || i >= r->n_out || !r->shm || !r->shm[i].at)
        return false;
    if (offset)
        *offset = r->shm[i].at - 1;
    if (nbytes)
        *nbytes = r->shm[i].bytes;
    return true;
}

GX_EXPORT const int64_t *gx_result_output_shm_shape(const gx_result *r, size_t i, gx_dtype *dt,
                                                    int *ndim)
{
    if (!r || i >= r->n_out || !r->shm || !r->shm[i].at)
        return NULL;
    if (dt)
        *dt = r->shm[i].dtype;
    if (ndim)
        *ndim = r->shm[i].ndim;
    return r->shm[i].shape;
}


/* The header of a RUN of rq (pl, area: as gx_client_submit places it). */
static void s_pack_run(msgpack_packer *pk, const gx_request *rq, const s_place *pl,
                       const gx_wire_shm_ref *area, uint64_t id)
{
    s_pack_head(pk, GX_REQ_RUN, id, 6 + (area->region[0] != '\0'));
    s_pack_graph_inputs(pk, rq, pl);
    if (area->region[0]) {
        gx_mp_pack_str(pk, GX_F(OUTPUT_SHM));
        gx_wire_pack_shm_ref(pk, area);
    }
    gx_mp_pack_str(pk, GX_F(OUTPUTS));
    msgpack_pack_array(pk, rq->n_out);
    for (size_t i = 0; i < rq->n_out; i++)
        gx_mp_pack_str(pk, rq->out[i]);
    gx_mp_pack_str(pk, GX_F(PRIORITY));
    msgpack_pack_int(pk, rq->priority);
    gx_mp_pack_str(pk, GX_F(DEADLINE_MS));
    msgpack_pack_int64(pk, rq->deadline_ms);
    gx_mp_pack_str(pk, GX_F(MODE));
    gx_mp_pack_str(pk, gx_mode_name(rq->mode));
}

GX_EXPORT int gx_client_submit(gx_client *c, const gx_request *rq, gx_job **job)
{
    if (job)
        *job = NULL;
    if (!c || !rq || !job)
        return GX_EINVAL;
    if (!rq->has_id && !rq->graph && !rq->graph_name[0])
        return s_fail(c, GX_EINVAL, "request names no graph (set a graph, a graph id or a name)");
    if (s_n_shapes(rq))
        return s_fail(c, GX_EINVAL, "a RUN needs every input's values (an input given by its "
                                    "shape alone is for explain and compile)");
    if (c->multi)
        return s_multi_submit(c, rq, job);
    s_place *pl = calloc(rq->n_in + 1, sizeof *pl);
    if (!pl)
        return s_fail(c, GX_ENOMEM, "out of memory");
    size_t area_off = 0, area_bytes = 0;
    const bool extent = s_pool_place(c, rq, pl, &area_off, &area_bytes);
    gx_wire_shm_ref area = {.offset = rq->out_shm ? rq->out_shm_off : area_off,
                            .bytes = rq->out_shm ? rq->out_shm_bytes : area_bytes};
    if (rq->out_shm || area_bytes)
        snprintf(area.region, sizeof area.region, "%s", rq->out_shm ? rq->out_shm->name
                                                                    : c->pool->name);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = c->next_id++;
    s_pack_run(&pk, rq, pl, &area, id);
    int rc = s_send_placed(c, &sb, rq, pl, id, job);
    msgpack_sbuffer_destroy(&sb);
    free(pl);
    if (extent && rc == GX_OK)
        (*job)->pool_extent = true;
    else if (extent)
        c->pool_live--;
    return rc;
}

/* ---- the ring (docs/shm.md, "Ring") ---- */

#define S_RING_ENTRIES 4          /* gx_client_run waits for each job: a few suffice */
#define S_RING_DATA (1u << 20)    /* inputs, then the output area */
#define S_RING_IN_MAX (256u << 10) /* inputs of a job through the ring, at most */
#define S_RING_SPIN_US 50         /* polled this long before sleeping on the futex */
#define S_RING_NOT_TAKEN 1        /* s_ring_run: the job goes over the socket */

struct s_ring {
    gx_shm *shm; /* registered; its name unlinked */
    gx_ring_hdr *hdr;
    gx_ring_sqe *sq;
    gx_ring_cqe *cq;
    uint32_t sq_tail, cq_head; /* this side's indices */
    uint64_t next_user;
    struct {
        gx_graph_id id;
        uint32_t slot;
        bool socket; /* its outputs do not fit the ring (GX_RING_CQE_SOCKET) */
    } slots[GX_RING_MAX_SLOTS];
    size_t n_slots;
};

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void s_ring_destroy(gx_client *c)
{
    if (!c->ring)
        return;
    gx_shm_destroy(&c->ring->shm); /* the daemon unmaps it when the client disconnects */
    free(c->ring);
    c->ring = NULL;
}

gx_shm *gx_client_ring_shm(gx_client *c)
{
    return c && c->ring ? c->ring->shm : NULL;
}

GX_EXPORT void gx_client_set_ring(gx_client *c, bool on)
{
    if (c)
        c->ring_on = on;
}

/* A RING_OPEN, RING_BIND (id) or RING_CLOSE about the ring's region; its
 * status, the reply in *out when out. */
static int s_ring_request(gx_client *c, gx_req kind, const gx_graph_id *id, gx_result **out)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t rid = c->next_id++;
    s_pack_head(&pk, kind, rid, id ? 2 : 1);
    gx_mp_pack_str(&pk, GX_F(REGION));
    gx_mp_pack_str(&pk, c->ring->shm->name);
    if (id) {
        gx_mp_pack_str(&pk, GX_F(GRAPH_ID));
        gx_mp_pack_str(&pk, id->hex);
    }
    gx_job *job = NULL;
    int rc = s_send(c, &sb, NULL, rid, &job);
    msgpack_sbuffer_destroy(&sb);
    return rc < 0 ? rc : s_await(c, &job, out);
}

/* The ring, made, registered and opened on first use; NULL when the
 * daemon is not local or refuses it (the socket from then on). */
static struct s_ring *s_ring_get(gx_client *c)
{
    if (c->ring || c->ring_failed)
        return c->ring;
    c->ring_failed = true;
    if (c->multi || strncmp(c->endpoint, "ipc://", 6) != 0)
        return NULL;
    char err[256];
    uint64_t data = gx_ring_data_offset(S_RING_ENTRIES);
    struct s_ring *r = calloc(1, sizeof *r);
    if (!r || !(r->shm = gx_shm_new(data + S_RING_DATA, err, sizeof err))) {
        free(r);
        return NULL;
    }
    r->hdr = r->shm->base;
    r->hdr->magic = GX_RING_MAGIC;
    r->hdr->entries = S_RING_ENTRIES;
    r->sq = (gx_ring_sqe *)((char *)r->shm->base + gx_ring_sq_offset());
    r->cq = (gx_ring_cqe *)((char *)r->shm->base + gx_ring_cq_offset(S_RING_ENTRIES));
    c->ring = r;
    if (s_shm_request(c, r->shm, true) < 0) {
        s_ring_destroy(c);
        return NULL;
    }
    gx_shm_unlink(r->shm); /* the daemon has it open */
    if (s_ring_request(c, GX_REQ_RING_OPEN, NULL, NULL) < 0) {
        s_shm_request(c, r->shm, false);
        s_ring_destroy(c);
        return NULL;
    }
    c->ring_failed = false;
    return r;
}

/* The ring's slot of graph id, bound on first use; false when the daemon
 * refuses (the job then goes over the socket, which says why). */
static bool s_ring_slot(gx_client *c, struct s_ring *r, const gx_graph_id *id, uint32_t *slot)
{
    for (size_t k = 0; k < r->n_slots; k++)
        if (strcmp(r->slots[k].id.hex, id->hex) == 0) {
            *slot = r->slots[k].slot;
            return !r->slots[k].socket;
        }
    if (r->n_slots == GX_RING_MAX_SLOTS)
        return false;
    gx_result *res = NULL;
    if (s_ring_request(c, GX_REQ_RING_BIND, id, &res) < 0 || !res) {
        gx_result_destroy(&res);
        return false;
    }
    r->slots[r->n_slots].id = *id;
    r->slots[r->n_slots].socket = false;
    *slot = r->slots[r->n_slots++].slot = res->ring_slot;
    gx_result_destroy(&res);
    return true;
}

/* Whether rq is a small job the ring carries: a graph by id, at most
 * GX_RING_MAX_IO plain tensors in memory of at most S_RING_IN_MAX bytes,
 * every output, the daemon's choice of mode, no output area of its own. */
static bool s_ring_fits(const gx_request *rq)
{
    if (!rq->has_id || rq->graph_name[0] || rq->graph || rq->n_out || rq->mode != GX_MODE_AUTO ||
        rq->out_shm || rq->n_in > GX_RING_MAX_IO)
        return false;
    size_t bytes = 0;
    for (size_t i = 0; i < rq->n_in; i++) {
        const gx_tensor *t = rq->in[i].t;
        if (rq->in[i].shape_only || rq->in[i].shm || !t || gx_wire_is_value(t->kind, t->dtype) ||
            strlen(rq->in[i].name) >= GX_RING_NAME)
            return false;
        bytes += s_align(t->nbytes);
    }
    return bytes <= S_RING_IN_MAX;
}

/* Publishes the submission written at r->sq_tail and wakes the daemon's
 * ring thread if it sleeps. */
static void s_ring_publish(struct s_ring *r)
{
    r->sq_tail++;
    gx_ring_store_wake(&r->hdr->sq_tail, r->sq_tail, &r->hdr->sq_sleep, &r->hdr->sq_futex);
}

/* Asks the daemon to cancel the job submitted at index, when a submission
 * slot is free (the client gives up on it: nobody reads its completion). */
static void s_ring_cancel(struct s_ring *r, uint32_t index)
{
    if (r->sq_tail - atomic_load_explicit(&r->hdr->sq_head, memory_order_acquire) >=
        S_RING_ENTRIES)
        return;
    gx_ring_sqe *e = &r->sq[r->sq_tail & (S_RING_ENTRIES - 1)];
    memset(e, 0, sizeof *e);
    e->op = GX_RING_CANCEL;
    e->user = ++r->next_user;
    e->target = index;
    s_ring_publish(r);
}

/* Waits for the completion of the job just submitted; GX_OK with it in
 * *cqe, or GX_ECONNECT after the client's timeout. */
static int s_ring_wait(gx_client *c, struct s_ring *r, gx_ring_cqe *cqe)
{
    gx_ring_hdr *h = r->hdr;
    const int64_t t0 = s_now_us();
    for (;;) {
        uint32_t tail = atomic_load_explicit(&h->cq_tail, memory_order_acquire);
        if (tail != r->cq_head) {
            memcpy(cqe, &r->cq[r->cq_head & (S_RING_ENTRIES - 1)], sizeof *cqe);
            r->cq_head++;
            /* the daemon may wait for room in the completions */
            gx_ring_store_wake(&h->cq_head, r->cq_head, &h->sq_sleep, &h->sq_futex);
            return GX_OK;
        }
        int64_t waited = s_now_us() - t0;
        if (c->timeout_ms >= 0 && waited >= (int64_t)c->timeout_ms * 1000)
            return s_fail(c, GX_ECONNECT, "no completion on the ring from %s within %d ms",
                          c->endpoint, c->timeout_ms);
        if (waited < S_RING_SPIN_US) { /* yielding: the daemon's threads may want this core */
            sched_yield();
            continue;
        }
        uint32_t f = atomic_load(&h->cq_futex);
        atomic_store(&h->cq_sleep, 1);
        if (atomic_load(&h->cq_tail) == r->cq_head) {
            int64_t left = c->timeout_ms < 0 ? 100000 : (int64_t)c->timeout_ms * 1000 - waited;
            gx_ring_futex_wait(&h->cq_futex, f, left < 100000 ? left : 100000);
        }
        atomic_store(&h->cq_sleep, 0);
    }
}

/* gx_client_run through the ring when it is on and rq fits: its status
 * (the result in *out), else S_RING_NOT_TAKEN: also when the job ran but
 * the ring could not carry its outputs (GX_RING_CQE_SOCKET), and then the
 * graph's jobs go over the socket from now on. */
static int s_ring_run(gx_client *c, const gx_request *rq, gx_result **out)
{
    struct s_ring *r;
    uint32_t slot;
    if (!c || !rq || !c->ring_on || !s_ring_fits(rq) || !(r = s_ring_get(c)) ||
        !s_ring_slot(c, r, &rq->graph_id, &slot))
        return S_RING_NOT_TAKEN;
    const uint64_t data = gx_ring_data_offset(S_RING_ENTRIES);
    const uint32_t index = r->sq_tail;
    gx_ring_sqe *e = &r->sq[index & (S_RING_ENTRIES - 1)];
    memset(e, 0, sizeof *e);
    e->op = GX_RING_RUN;
    e->user = ++r->next_user;
    e->slot = slot;
    e->n_in = (uint32_t)rq->n_in;
    e->priority = rq->priority;
    e->deadline_ms = rq->deadline_ms;
    uint64_t at = data;
    for (size_t i = 0; i < rq->n_in; i++) {
        const gx_tensor *t = rq->in[i].t;
        gx_ring_tensor *d = &e->in[i];
        snprintf(d->name, sizeof d->name, "%s", rq->in[i].name);
        d->offset = at;
        d->bytes = t->nbytes;
        d->dtype = t->dtype;
        d->ndim = t->ndim;
        memcpy(d->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
        if (t->nbytes)
            memcpy((char *)r->shm->base + at, t->data, t->nbytes);
        at += s_align(t->nbytes);
    }
    e->out_offset = at;
    e->out_bytes = data + S_RING_DATA - at;
    s_ring_publish(r);
    gx_ring_cqe cqe;
    int rc = s_ring_wait(c, r, &cqe);
    if (rc == GX_OK && cqe.user != e->user)
        rc = s_fail(c, GX_EPROTO, "the ring's completion is for job %llu, not %llu",
                    (unsigned long long)cqe.user, (unsigned long long)r->next_user);
    if (rc < 0) { /* the ring is out of step: the socket from now on */
        if (rc == GX_ECONNECT) /* no answer in time: the daemon need not finish it */
            s_ring_cancel(r, index);
        c->ring_failed = true;
        c->ring_on = false;
        return rc;
    }
    if (cqe.flags & GX_RING_CQE_SOCKET) { /* the graph's outputs need the socket, from now on */
        for (size_t k = 0; k < r->n_slots; k++)
            r->slots[k].socket |= r->slots[k].slot == slot;
        return S_RING_NOT_TAKEN;
    }
    gx_result *res = calloc(1, sizeof *res);
    if (!res)
        return s_fail(c, GX_ENOMEM, "out of memory");
    res->status = cqe.status <= 0 && cqe.status > -1000 ? cqe.status : GX_EPROTO;
    if (res->status == GX_ENOTFOUND) /* the graph left the slot (evicted): bind anew next time */
        for (size_t k = 0; k < r->n_slots; k++)
            if (r->slots[k].slot == slot) {
                r->slots[k] = r->slots[--r->n_slots];
                break;
            }
    cqe.message[sizeof cqe.message - 1] = '\0';
    res->message = strdup(res->status == GX_OK ? "" : cqe.message);
    /* how it ran, read as a socket reply's "run" is (s_parse_run_info) */
    gx_run_info *ri = &res->info;
    s_run_info_init(ri);
    memcpy(ri->mode, cqe.mode, sizeof ri->mode - 1);
    cqe.device[sizeof cqe.device - 1] = '\0';
    cqe.reason[sizeof cqe.reason - 1] = '\0';
    snprintf(ri->device, sizeof ri->device, "%s", cqe.device);
    snprintf(ri->reason, sizeof ri->reason, "%s", cqe.reason);
    ri->workers = cqe.workers > 0 ? cqe.workers : 0;
    ri->queue_us = cqe.queue_us;
    ri->compute_us = cqe.compute_us;
    ri->compile_us = cqe.compile_us;
    ri->device_us = cqe.device_us;
    if (cqe.replicas > 0)
        ri->replicas = cqe.replicas;
    if (cqe.batched > 0)
        ri->batched = cqe.batched;
    for (int m = 0; m < GX_MODE_COUNT; m++)
        s_run_info_est(ri, m, cqe.est_us[m]);
    snprintf(ri->endpoint, sizeof ri->endpoint, "%.255s", c->endpoint);
    size_t n = res->status == GX_OK ? cqe.n_out : 0;
    if (n > GX_RING_MAX_IO)
        n = 0, res->status = GX_EPROTO;
    res->names = calloc(n + 1, sizeof *res->names);
    res->tensors = calloc(n + 1, sizeof *res->tensors);
    rc = res->names && res->tensors && res->message ? GX_OK : GX_ENOMEM;
    for (size_t i = 0; rc == GX_OK && i < n; i++) {
        const gx_ring_tensor *t = &cqe.out[i];
        size_t nb;
        res->n_out = i + 1;
        if (t->dtype < 0 || t->dtype >= GX_DTYPE_COUNT || t->ndim < 0 || t->ndim > GX_MAX_DIMS ||
            !gx_shape_nbytes((gx_dtype)t->dtype, t->ndim, t->shape, &nb) || nb != t->bytes ||
            t->offset < data || t->offset > r->shm->bytes || nb > r->shm->bytes - t->offset ||
            !memchr(t->name, 0, sizeof t->name)) {
            rc = GX_EPROTO;
            break;
        }
        res->names[i] = strdup(t->name);
        res->tensors[i] = gx_tensor_new_copy((gx_dtype)t->dtype, t->ndim, t->shape,
                                             (const char *)r->shm->base + t->offset, nb);
        if (!res->names[i] || !res->tensors[i])
            rc = GX_ENOMEM;
    }
    if (rc < 0) {
        gx_result_destroy(&res);
        return s_fail(c, rc, rc == GX_ENOMEM ? "out of memory"
                                              : "the ring's completion describes no output");
    }
    rc = res->status;
    if (rc < 0)
        s_fail(c, rc, "%s: %s", gx_status_name(rc), res->message);
    if (out)
        *out = res;
    else
        gx_result_destroy(&res);
    return rc;
}

GX_EXPORT int gx_client_run(gx_client *c, const gx_request *rq, gx_result **out)
{
    if (out)
        *out = NULL;
    int rc = s_ring_run(c, rq, out);
    if (rc != S_RING_NOT_TAKEN)
        return rc;
    gx_job *job = NULL;
    rc = gx_client_submit(c, rq, &job);
    return rc < 0 ? rc : s_await(c, &job, out);
}

static int s_explain(gx_client *c, const gx_request *rq, char **json, gx_req type);

GX_EXPORT int gx_client_explain(gx_client *c, const gx_request *rq, char **json)
{
    return s_explain(c, rq, json, GX_REQ_EXPLAIN);
}

GX_EXPORT int gx_client_tune(gx_client *c, const gx_request *rq, char **json)
{
    return s_explain(c, rq, json, GX_REQ_TUNE);
}

/* EXPLAIN, TUNE or COMPILE of rq (the graph and inputs alone): the reply
 * in *r (caller owns; also on error when the daemon answered). */
static int s_plan_request(gx_client *c, const gx_request *rq, gx_req type, gx_result **r)
{
    if (!rq->has_id && !rq->graph && !rq->graph_name[0])
        return s_fail(c, GX_EINVAL, "request names no graph (set a graph, a graph id or a name)");
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = c->next_id++;
    s_pack_head(&pk, type, id, 2 + (s_n_shapes(rq) > 0));
    s_pack_graph_inputs(&pk, rq, NULL);
    gx_job *job = NULL;
    int rc = s_send(c, &sb, rq, id, &job);
    msgpack_sbuffer_destroy(&sb);
    return rc < 0 ? rc : s_await(c, &job, r);
}

GX_EXPORT int gx_client_compile(gx_client *c, const gx_request *rq, void **artifact, size_t *len,
                                char *key, size_t keylen)
{
    if (artifact)
        *artifact = NULL;
    if (len)
        *len = 0;
    if (!c || !rq || !artifact || !len)
        return GX_EINVAL;
    S_MULTI_FIRST(c, gx_client_compile(m, rq, artifact, len, key, keylen));
    gx_result *r = NULL;
    int rc = s_plan_request(c, rq, GX_REQ_COMPILE, &r);
    if (rc == GX_OK && (r->n_out != 1 || strcmp(r->names[0], "artifact") != 0 ||
                        r->tensors[0]->dtype != GX_U8))
        rc = s_fail(c, GX_EPROTO, "COMPILE reply without an artifact");
    if (rc == GX_OK) {
        *len = r->tensors[0]->nbytes;
        *artifact = r->tensors[0]->data; /* the tensor's buffer moves to the caller */
        r->tensors[0]->data = NULL;
        r->tensors[0]->nbytes = 0;
        if (key && keylen)
            snprintf(key, keylen, "%s", r->key);
    }
    gx_result_destroy(&r);
    return rc;
}

/* EXPLAIN or TUNE: the same request and reply. */
static int s_explain(gx_client *c, const gx_request *rq, char **json, gx_req type)
{
    if (json)
        *json = NULL;
    if (!c || !rq || !json)
        return GX_EINVAL;
    S_MULTI_FIRST(c, s_explain(m, rq, json, type));
    gx_result *r = NULL;
    int rc = s_plan_request(c, rq, type, &r);
    if (rc == GX_OK) {
        *json = r->plan_json;
        r->plan_json = NULL;
        if (!*json)
            rc = s_fail(c, GX_EPROTO, "%s reply without a plan", gx_req_name(type));
    }
    gx_result_destroy(&r);
    return rc;
}

/* ---- several daemons (docs/cluster.md) ----
 *
 * A client of several daemons has no socket of its own: one member client
 * per endpoint talks to its daemon. A RUN is packed once into frames the
 * job keeps (its id from the client's own counter, so the same header
 * serves every member), sent to the member chosen by s_pick, and sent
 * again to another member when that one goes away; a graph the client
 * LOADed is kept as its packed bytes and LOADed again on a member whose
 * RUN answers GX_ENOTFOUND. */

#define GX_MULTI_MAX 64                   /* members: the bits of s_mjob.tried */
#define GX_LOAD_REFRESH_MS 1000           /* a member's load figure older: PING it */
#define GX_DEFAULT_LIVENESS_MS 5000
#define GX_MULTI_MEMBER_IDS ((uint64_t)1 << 48) /* members' own ids start here */

typedef struct s_kept {
    gx_graph_id id;
    char name[64]; /* "" or the name it was loaded under */
    char *bytes;   /* the packed graph */
    size_t len;
} s_kept;

struct s_multi {
    size_t n;
    gx_client **m;
    int *inflight; /* this client's jobs waiting for a reply from each member */
    size_t rr;     /* where the next tie is broken */
    int liveness_ms; /* gx_client_set_liveness; 0: off */
    s_kept *kept;
    size_t n_kept, cap_kept;
};

struct s_mjob {
    size_t at;       /* the member it was last sent to */
    gx_job *inner;   /* its job there; NULL once answered or dropped */
    uint64_t tried;  /* members it was sent to and that went away */
    bool reloaded;   /* its graph was LOADed again on member at */
    int last_rc;     /* the latest member's failure */
    uint64_t id_;    /* the id in its header */
    char key_id[65], key_name[64]; /* the kept graph it names, if any */
    size_t n;        /* frames: header, then the inputs' bytes */
    void **buf;
    size_t *len;
};

static size_t s_multi_count(const gx_client *c) { return c->multi ? c->multi->n : 0; }
static gx_client *s_multi_member(const gx_client *c, size_t k) { return c->multi->m[k]; }

static void s_multi_error(gx_client *c, const gx_client *m)
{
    if (c != m)
        snprintf(c->last_error, sizeof c->last_error, "%s", m->last_error);
}

GX_EXPORT gx_client *gx_client_new_multi(const char *const *endpoints, size_t n, char *err,
                                         size_t errlen)
{
    return s_multi_new(endpoints, n, NULL, NULL, err, errlen);
}

static gx_client *s_multi_new(const char *const *endpoints, size_t n, const char *server_key,
                              const char *client_secret, char *err, size_t errlen)
{
    if (!endpoints || n == 0 || n > GX_MULTI_MAX) {
        gx_errf(err, errlen, GX_EINVAL, "several daemons: 1 to %d endpoints, not %zu",
                GX_MULTI_MAX, n);
        return NULL;
    }
    gx_client *c = calloc(1, sizeof *c);
    struct s_multi *mu = calloc(1, sizeof *mu);
    if (c)
        c->multi = mu;
    if (!c || !mu || !(mu->m = calloc(n, sizeof *mu->m)) ||
        !(mu->inflight = calloc(n, sizeof *mu->inflight))) {
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        if (!c)
            free(mu);
        gx_client_destroy(&c);
        return NULL;
    }
    c->timeout_ms = GX_DEFAULT_TIMEOUT_MS;
    c->next_id = 1;
    c->shm_off = true;
    c->shm_threshold = SIZE_MAX;
    const char *live = getenv("GEXEC_LIVENESS_MS");
    char *end = NULL;
    long lv = live && *live ? strtol(live, &end, 10) : -1;
    mu->liveness_ms = end && *end == '\0' && lv >= 0 && lv <= INT32_MAX ? (int)lv
                                                                         : GX_DEFAULT_LIVENESS_MS;
    /* daemons with key pairs of their own: a comma-separated server key
     * (or key file) per endpoint, in their order */
    const char *sk = server_key ? server_key : getenv("GEXEC_SERVER_KEY");
    char *keys = sk && strchr(sk, ',') ? strdup(sk) : NULL, *save = NULL;
    const char *key_of[GX_MULTI_MAX];
    size_t n_keys = 0;
    if (sk && strchr(sk, ',') && !keys) {
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        gx_client_destroy(&c);
        return NULL;
    }
    for (char *tok = keys ? strtok_r(keys, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save))
        if (n_keys < GX_MULTI_MAX)
            key_of[n_keys++] = tok + strspn(tok, " \t");
    if (keys && n_keys != n) {
        gx_errf(err, errlen, GX_EINVAL,
                "several daemons: %zu server keys (GEXEC_SERVER_KEY) for %zu endpoints", n_keys,
                n);
        free(keys);
        gx_client_destroy(&c);
        return NULL;
    }
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        if (!endpoints[k] ||
            !(mu->m[k] = gx_client_new_curve(endpoints[k], keys ? key_of[k] : server_key,
                                             client_secret, err, errlen))) {
            if (!endpoints[k])
                gx_errf(err, errlen, GX_EINVAL, "several daemons: endpoint %zu is NULL", k);
            free(keys);
            gx_client_destroy(&c);
            return NULL;
        }
        mu->n = k + 1;
        mu->m[k]->next_id = GX_MULTI_MEMBER_IDS;
        mu->m[k]->shm_off = true; /* a job's frames carry its bytes, for any member */
        mu->m[k]->shm_threshold = SIZE_MAX;
        int w = snprintf(c->endpoint + at, sizeof c->endpoint - at, "%s%s", k ? "," : "",
                         endpoints[k]);
        at = w < 0 || (size_t)w >= sizeof c->endpoint - at ? sizeof c->endpoint - 1 : at + (size_t)w;
    }
    free(keys);
    return c;
}

/* A comma-separated list of endpoints (empty items skipped). */
static gx_client *s_multi_new_list(const char *list, const char *server_key,
                                   const char *client_secret, char *err, size_t errlen)
{
    char *copy = strdup(list);
    const char *eps[GX_MULTI_MAX + 1];
    size_t n = 0;
    if (!copy) {
        gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        return NULL;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok += strspn(tok, " \t");
        if (*tok && n <= GX_MULTI_MAX)
            eps[n++] = tok;
    }
    gx_client *c = s_multi_new(eps, n, server_key, client_secret, err, errlen);
    free(copy);
    return c;
}

static void s_multi_destroy(gx_client *c)
{
    struct s_multi *mu = c->multi;
    if (!mu)
        return;
    for (size_t k = 0; k < mu->n; k++)
        gx_client_destroy(&mu->m[k]);
    for (size_t i = 0; i < mu->n_kept; i++)
        free(mu->kept[i].bytes);
    free(mu->kept);
    free(mu->m);
    free(mu->inflight);
    free(mu);
    c->multi = NULL;
}

/* A member whose connection is lost, or whose daemon left a PING
 * unanswered for the liveness interval. */
static bool s_member_down(gx_client *m)
{
    s_monitor_drain(m);
    return (m->handshaken && !m->up) || m->silent;
}

GX_EXPORT void gx_client_set_liveness(gx_client *c, int liveness_ms)
{
    if (c && c->multi)
        c->multi->liveness_ms = liveness_ms > 0 ? liveness_ms : 0;
}

/* Send member m a PING without waiting: its reply (taken by whichever
 * call reads m next) renews m's load figure and says it lives. */
static void s_probe(gx_client *m)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t id = m->next_id++;
    s_pack_head(&pk, GX_REQ_PING, id, 0);
    if (sb.data && zmq_send(m->sock, sb.data, sb.size, ZMQ_DONTWAIT) >= 0) {
        m->probe_id = id;
        m->probe_ms = s_now_ms();
        m->ping_seq = m->sent_seq;
    }
    msgpack_sbuffer_destroy(&sb);
}

/* Member k's replies that came (their jobs keep them), then its PING: one
 * when its load figure is missing or old, and silent when one went
 * unanswered for the liveness interval. */
static void s_member_poll(struct s_multi *mu, size_t k)
{
    gx_client *m = mu->m[k];
    for (int i = 0; i < 64 && s_recv_one(m, 0) == GX_OK; i++)
        ;
    int64_t now = s_now_ms();
    if (m->probe_id && mu->liveness_ms > 0 && now - m->probe_ms >= mu->liveness_ms)
        m->silent = true;
    if (!m->probe_id && (!m->has_load || now - m->load_ms >= GX_LOAD_REFRESH_MS))
        s_probe(m);
}

/* Member k's load as this client sees it, jobs per worker: the daemon's
 * latest figure, less this client's jobs it counted that were answered
 * since (replies come in order: a job answered before the PING was read
 * was answered before the figure came), plus this client's jobs sent
 * after that PING still unanswered; before a figure came, this client's
 * jobs in flight there. */
static void s_member_load(const struct s_multi *mu, size_t k, int64_t *jobs, int64_t *workers)
{
    const gx_client *m = mu->m[k];
    *jobs = m->has_load ? m->load_jobs - m->load_done : mu->inflight[k];
    if (*jobs < 0)
        *jobs = 0;
    *workers = m->has_load ? m->load_workers : 1;
    for (const gx_job *j = m->pending; m->has_load && j; j = j->next)
        *jobs += j->seq > m->load_base && !j->result;
}

/* The member for the next job: of those not in tried, one that is not
 * down, with the least load per worker (s_member_load); ties in turn.
 * -1 when every member was tried. */
static int s_pick(gx_client *c, uint64_t tried)
{
    struct s_multi *mu = c->multi;
    int best = -1;
    bool best_down = true;
    int64_t best_jobs = 0, best_workers = 1;
    for (size_t i = 0; i < mu->n; i++) {
        size_t k = (mu->rr + i) % mu->n;
        if (tried & ((uint64_t)1 << k))
            continue;
        s_member_poll(mu, k);
        bool down = s_member_down(mu->m[k]);
        int64_t jobs, workers;
        s_member_load(mu, k, &jobs, &workers);
        if (best < 0 || (best_down && !down) ||
            (best_down == down && jobs * best_workers < best_jobs * workers)) {
            best = (int)k;
            best_down = down;
            best_jobs = jobs;
            best_workers = workers;
        }
    }
    if (best >= 0)
        mu->rr = (size_t)best + 1;
    return best;
}

/* LOAD the packed graph (and name, may be NULL) on member m. */
static int s_load_bytes(gx_client *m, const s_kept *g, const char *name, gx_graph_id *id)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t rid = m->next_id++;
    s_pack_head(&pk, GX_REQ_LOAD, rid, name && *name ? 2 : 1);
    gx_mp_pack_str(&pk, GX_F(GRAPH));
    msgpack_sbuffer_write(&sb, g->bytes, g->len);
    if (name && *name) {
        gx_mp_pack_str(&pk, GX_F(NAME));
        gx_mp_pack_str(&pk, name);
    }
    gx_job *job = NULL;
    gx_result *r = NULL;
    int rc = s_send(m, &sb, NULL, rid, &job);
    msgpack_sbuffer_destroy(&sb);
    if (rc == GX_OK)
        rc = s_await(m, &job, &r);
    if (rc == GX_OK && id)
        *id = r->graph_id;
    gx_result_destroy(&r);
    return rc;
}

static s_kept *s_kept_find(struct s_multi *mu, const char *id, const char *name)
{
    for (size_t i = 0; i < mu->n_kept; i++)
        if ((id && *id && strcmp(mu->kept[i].id.hex, id) == 0) ||
            (name && *name && strcmp(mu->kept[i].name, name) == 0))
            return &mu->kept[i];
    return NULL;
}

/* LOAD on one member that answers, and keep the graph for the others. */
static int s_multi_load(gx_client *c, const gx_graph *g, const char *name, gx_graph_id *id)
{
    struct s_multi *mu = c->multi;
    if (!gx_grow(&mu->kept, &mu->cap_kept, mu->n_kept + 1, sizeof *mu->kept))
        return s_fail(c, GX_ENOMEM, "out of memory");
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
    s_kept k = {.bytes = sb.data, .len = sb.size};
    if (name)
        snprintf(k.name, sizeof k.name, "%s", name);
    int rc = GX_ECONNECT, at;
    uint64_t tried = 0;
    while ((at = s_pick(c, tried)) >= 0) {
        rc = s_load_bytes(mu->m[at], &k, name, &k.id);
        s_multi_error(c, mu->m[at]);
        if (!s_gone(rc))
            break;
        tried |= (uint64_t)1 << at;
    }
    if (rc != GX_OK) {
        msgpack_sbuffer_destroy(&sb);
        return rc;
    }
    for (size_t i = 0; name && i < mu->n_kept; i++) /* the name moves to this graph */
        if (strcmp(mu->kept[i].name, name) == 0)
            mu->kept[i].name[0] = '\0';
    s_kept *old = s_kept_find(mu, k.id.hex, NULL);
    if (old) {
        if (name)
            snprintf(old->name, sizeof old->name, "%s", name);
        msgpack_sbuffer_destroy(&sb);
    } else {
        mu->kept[mu->n_kept++] = k;
    }
    if (id)
        *id = k.id;
    return GX_OK;
}

/* UNLOAD on every member; the graph is no longer kept. GX_OK when one
 * had it. */
static int s_multi_unload(gx_client *c, const char *graph)
{
    struct s_multi *mu = c->multi;
    bool hex = strlen(graph) == 64 && strspn(graph, "0123456789abcdef") == 64;
    s_kept *k = s_kept_find(mu, hex ? graph : NULL, hex ? NULL : graph);
    if (k) {
        free(k->bytes);
        *k = mu->kept[--mu->n_kept];
    }
    int rc = GX_ENOTFOUND;
    for (size_t i = 0; i < mu->n; i++) {
        int one = gx_client_unload(mu->m[i], graph);
        if (one == GX_OK || rc != GX_OK) {
            rc = one;
            s_multi_error(c, mu->m[i]);
        }
    }
    return rc;
}

/* Send the job's frames to member k as a job of k's; GX_ECONNECT when its
 * queue is full (a daemon that is gone and not yet noticed) rather than
 * block. */
static int s_send_frames(gx_client *c, struct s_mjob *mj, size_t k)
{
    gx_client *m = c->multi->m[k];
    gx_job *job = calloc(1, sizeof *job);
    if (!job)
        return s_fail(m, GX_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc >= 0 && i < mj->n; i++)
        rc = zmq_send(m->sock, mj->buf[i], mj->len[i],
                      ZMQ_DONTWAIT | (i + 1 < mj->n ? ZMQ_SNDMORE : 0)); /* full: another */
    if (rc < 0) {
        free(job);
        return s_fail(m, GX_ECONNECT, "send to %s: %s", m->endpoint, zmq_strerror(zmq_errno()));
    }
    job->client = m;
    job->id = mj->id_;
    job->conn_gen = m->conn_gen;
    job->next = m->pending;
    m->pending = job;
    mj->inner = job;
    mj->at = k;
    c->multi->inflight[k]++;
    job->seq = ++m->sent_seq;
    return GX_OK;
}

/* Forget the job's job on its member (answered, or the member went away). */
static void s_mjob_drop(gx_client *c, struct s_mjob *mj)
{
    if (!mj->inner)
        return;
    if (c)
        c->multi->inflight[mj->at]--;
    gx_job_destroy(&mj->inner);
}

/* Send the job to a member not tried yet; its last failure when none is
 * left. */
static int s_mjob_send(gx_client *c, struct s_mjob *mj)
{
    int k;
    while ((k = s_pick(c, mj->tried)) >= 0) {
        int rc = s_send_frames(c, mj, (size_t)k);
        if (rc == GX_OK) {
            mj->reloaded = false;
            return GX_OK;
        }
        s_multi_error(c, c->multi->m[k]);
        mj->last_rc = rc;
        mj->tried |= (uint64_t)1 << k;
    }
    return mj->last_rc;
}

static void s_mjob_free(struct s_mjob *mj)
{
    for (size_t i = 0; i < mj->n; i++)
        free(mj->buf[i]);
    free(mj->buf);
    free(mj->len);
    free(mj);
}

static int s_multi_submit(gx_client *c, const gx_request *rq, gx_job **jobp)
{
    bool shm = rq->out_shm != NULL;
    for (size_t i = 0; i < rq->n_in; i++)
        shm |= rq->in[i].shm != NULL;
    if (shm)
        return s_fail(c, GX_EUNSUPPORTED,
                      "a client of several daemons sends no tensors in shared memory");
    gx_job *job = calloc(1, sizeof *job);
    struct s_mjob *mj = calloc(1, sizeof *mj);
    if (job)
        job->multi = mj;
    if (!job || !mj || !(mj->buf = calloc(rq->n_in + 1, sizeof *mj->buf)) ||
        !(mj->len = calloc(rq->n_in + 1, sizeof *mj->len))) {
        free(job);
        if (mj)
            s_mjob_free(mj);
        return s_fail(c, GX_ENOMEM, "out of memory");
    }
    job->client = c;
    job->id = c->next_id++;
    mj->id_ = job->id;
    mj->last_rc = GX_ECONNECT;
    if (rq->has_id)
        snprintf(mj->key_id, sizeof mj->key_id, "%s", rq->graph_id.hex);
    snprintf(mj->key_name, sizeof mj->key_name, "%s", rq->graph_name);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    gx_wire_shm_ref none = {0};
    s_pack_run(&pk, rq, NULL, &none, job->id);
    mj->buf[0] = sb.data; /* the sbuffer's memory moves to the job */
    mj->len[0] = sb.size;
    mj->n = 1;
    int rc = sb.data ? GX_OK : s_fail(c, GX_ENOMEM, "out of memory");
    for (size_t i = 0; rc == GX_OK && i < rq->n_in; i++) {
        const gx_tensor *t = rq->in[i].t;
        const bool value = gx_wire_is_value(t->kind, t->dtype);
        size_t n = value ? gx_wire_value_bytes(t) : t->nbytes;
        if (!(mj->buf[mj->n] = malloc(n ? n : 1))) {
            rc = s_fail(c, GX_ENOMEM, "out of memory");
            break;
        }
        if (!value)
            memcpy(mj->buf[mj->n], t->data, n);
        else
            gx_wire_value_write(t, mj->buf[mj->n]);
        mj->len[mj->n++] = n;
    }
    if (rc == GX_OK)
        rc = s_mjob_send(c, mj);
    if (rc < 0) {
        gx_job_destroy(&job);
        return rc;
    }
    job->next = c->pending;
    c->pending = job;
    *jobp = job;
    return GX_OK;
}

/* Wait for a job of a client of several daemons: its member's reply, or,
 * when the member goes away (and, with gone_on_timeout, when no reply
 * comes within timeout_ms), the job again on another member; a GX_ENOTFOUND
 * for a kept graph LOADs it there and sends the job once more. */
static int s_mjob_wait(gx_job *job, int timeout_ms, bool gone_on_timeout, gx_result **out)
{
    if (out)
        *out = NULL;
    struct s_mjob *mj = job->multi;
    gx_client *c = job->client;
    if (!c || !mj->inner)
        return GX_EINVAL;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : s_now_ms() + timeout_ms;
    const int live = c->multi->liveness_ms;
    for (;;) {
        gx_client *m = c->multi->m[mj->at];
        int64_t now = s_now_ms(), left = timeout_ms < 0 ? -1 : deadline - now;
        if (timeout_ms >= 0 && left < 0)
            left = 0;
        /* with a liveness interval: wait until the member's PING is due
         * (none outstanding) or overdue (one is) */
        int64_t wait = left, due = live > 0 ? (m->probe_id ? m->probe_ms : now) + live : -1;
        if (due >= 0 && (left < 0 || due - now < left))
            wait = due > now ? due - now : 0;
        gx_result *r = NULL;
        int rc;
        if (m->silent)
            rc = s_fail(m, GX_ECONNECT, "%s answered no PING within %d ms: taken as gone",
                        m->endpoint, live);
        else if (s_member_down(m) && !s_reply_queued(m, mj->inner))
            rc = s_fail(m, GX_ECONNECT, "the connection to %s was lost before the job's reply "
                                        "came", m->endpoint);
        else
            rc = gx_job_wait(mj->inner, (int)(wait > INT32_MAX ? INT32_MAX : wait), &r);
        if (rc == GX_ETIMEDOUT && !r && wait != left) { /* a liveness step, not the caller's */
            if (!m->probe_id)
                s_probe(m);
            else if (s_now_ms() - m->probe_ms >= live)
                m->silent = true;
            continue;
        }
        if (rc == GX_ETIMEDOUT && !r && !gone_on_timeout) {
            if (live > 0) /* the latest step's wait was shorter */
                s_fail(m, GX_ETIMEDOUT, "no reply from %s within %d ms (it answers PINGs: "
                                        "the job waits or runs there)", m->endpoint, timeout_ms);
            s_multi_error(c, m);
            return rc; /* the job stays valid */
        }
        if (!r && s_gone(rc)) {
            s_multi_error(c, m);
            mj->last_rc = rc == GX_ETIMEDOUT ? GX_ECONNECT : rc;
            mj->tried |= (uint64_t)1 << mj->at;
            s_mjob_drop(c, mj);
            if ((rc = s_mjob_send(c, mj)) < 0)
                return rc;
            if (gone_on_timeout && timeout_ms >= 0) /* each daemon gets the whole timeout */
                deadline = s_now_ms() + timeout_ms;
            continue;
        }
        s_kept *k = r && r->status == GX_ENOTFOUND && !mj->reloaded
                        ? s_kept_find(c->multi, mj->key_id, mj->key_name)
                        : NULL;
        if (k) {
            gx_result_destroy(&r);
            s_mjob_drop(c, mj);
            mj->reloaded = true;
            size_t at = mj->at;
            rc = s_load_bytes(m, k, k->name[0] && strcmp(k->name, mj->key_name) == 0
                                        ? k->name : NULL, NULL);
            if (rc == GX_OK)
                rc = s_send_frames(c, mj, at);
            if (rc == GX_OK)
                continue;
            s_multi_error(c, m);
            if (!s_gone(rc))
                return rc;
            mj->last_rc = rc;
            mj->tried |= (uint64_t)1 << at;
            if ((rc = s_mjob_send(c, mj)) < 0)
                return rc;
            continue;
        }
        if (rc < 0)
            s_multi_error(c, m);
        s_mjob_drop(c, mj);
        s_job_unlink(job);
        if (out)
            *out = r;
        else
            gx_result_destroy(&r);
        return rc;
    }
}

static int s_mjob_cancel(gx_job *job)
{
    struct s_mjob *mj = job->multi;
    if (!mj->inner)
        return GX_EINVAL;
    int rc = gx_job_cancel(mj->inner);
    s_multi_error(job->client, job->client->multi->m[mj->at]);
    return rc;
}

static void s_mjob_destroy(gx_job *job)
{
    struct s_mjob *mj = job->multi;
    s_mjob_drop(job->client, mj);
    s_mjob_free(mj);
    job->multi = NULL;
}
