/*
 * Hostile input against a real gexecd (docs/protocol.md, "Errors and hostile
 * input"). Frames go over a raw DEALER socket, so anything can be sent: each
 * request must get exactly one reply whose header decodes, whose status names
 * the error, whose message names the problem and which echoes the
 * correlation id where the header was readable. After every case the daemon
 * must still compute a known graph correctly.
 *
 * Every test gets its own daemon (checked fixture); the teardown checks that
 * it still serves, is alive, and exits with status 0 on SIGTERM.
 *
 * Headers are written in a small text notation (s_mp) so that a case reads
 * as what is sent: {v: 1, type: 'RUN', id: 7, inputs: 'x'}.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include <gexec/gexec.h>

#include "core/wire.h"
#include "tests/testutil.h"

#define S_REPLY_MS 5000 /* every reply must come within this */

/* ---- per-test state (checked fixture) ---- */

static gxt_daemon s_d;
static void *s_zctx;          /* context of the raw sockets */
static gx_client *s_cli;      /* a well-behaved client */
static gx_graph_id s_ref_id;  /* the reference graph, s_ref_graph() */
static gx_graph_id s_relu_id; /* Relu on float32 [1, 16] */
static gx_graph_id s_add_id;  /* Add of float32 x, y [2, 2] */
static char *s_conf_dir;      /* holds the config file, if any */

#define S_MAX_SOCKS 64
static void *s_socks[S_MAX_SOCKS]; /* raw sockets open now */

/* ---- a tiny msgpack notation ---- */

/*
 * s_mp(sb, text, str, buf) encodes text into sb (initialised here):
 *   {k: v, ...}   map; keys are bare words or quoted strings
 *   [a, b, ...]   array
 *   'text'        string        12, -3, 18446744073709551615   integers
 *   1.5           float64       nil true false
 *   $             str, as a string
 *   @             the msgpack bytes in buf, spliced as they are
 *   ~N            bin of N zero bytes
 * A syntax error in the notation is a bug in the test: it aborts the test.
 */
typedef struct s_mp_args {
    const char *str;
    const msgpack_sbuffer *buf;
} s_mp_args;

static void s_mp_value(const char **p, msgpack_packer *pk, const s_mp_args *ap);

static void s_mp_skip(const char **p)
{
    while (**p == ' ' || **p == ',' || **p == ':' || **p == '\n')
        (*p)++;
}

static void s_mp_raw(msgpack_packer *pk, const void *data, size_t len)
{
    pk->callback(pk->data, data, len);
}

/* The elements of a container up to close, into their own buffer so the
 * count is known before the container header is written. */
static void s_mp_container(const char **p, msgpack_packer *pk, const s_mp_args *ap, char close,
                           bool map)
{
    msgpack_sbuffer sb;
    msgpack_packer sub;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&sub, &sb, msgpack_sbuffer_write);
    size_t n = 0;
    (*p)++;
    for (s_mp_skip(p); **p != close; s_mp_skip(p)) {
        ck_assert_msg(**p != '\0', "s_mp: unterminated container");
        if (map && (**p == '_' || (**p >= 'a' && **p <= 'z') || (**p >= 'A' && **p <= 'Z'))) {
            const char *k = *p;
            while (**p == '_' || (**p >= 'a' && **p <= 'z') || (**p >= 'A' && **p <= 'Z') ||
                   (**p >= '0' && **p <= '9'))
                (*p)++;
            msgpack_pack_str(&sub, (size_t)(*p - k));
            msgpack_pack_str_body(&sub, k, (size_t)(*p - k));
            s_mp_skip(p);
        } else if (map) {
            s_mp_value(p, &sub, ap);
            s_mp_skip(p);
        }
        s_mp_value(p, &sub, ap);
        n++;
    }
    (*p)++;
    if (map)
        msgpack_pack_map(pk, n);
    else
        msgpack_pack_array(pk, n);
    s_mp_raw(pk, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
}

static void s_mp_value(const char **p, msgpack_packer *pk, const s_mp_args *ap)
{
    const char *s = *p;
    if (*s == '{') {
        s_mp_container(p, pk, ap, '}', true);
    } else if (*s == '[') {
        s_mp_container(p, pk, ap, ']', false);
    } else if (*s == '\'') {
        const char *e = strchr(s + 1, '\'');
        ck_assert_msg(e != NULL, "s_mp: unterminated string");
        msgpack_pack_str(pk, (size_t)(e - s - 1));
        msgpack_pack_str_body(pk, s + 1, (size_t)(e - s - 1));
        *p = e + 1;
    } else if (*s == '$') {
        ck_assert_msg(ap->str != NULL, "s_mp: $ without a string");
        gx_mp_pack_str(pk, ap->str);
        *p = s + 1;
    } else if (*s == '@') {
        ck_assert_msg(ap->buf != NULL, "s_mp: @ without a buffer");
        s_mp_raw(pk, ap->buf->data, ap->buf->size);
        *p = s + 1;
    } else if (*s == '~') {
        char *end;
        unsigned long n = strtoul(s + 1, &end, 10);
        char *zero = calloc(1, n + 1);
        msgpack_pack_bin(pk, n);
        msgpack_pack_bin_body(pk, zero, n);
        free(zero);
        *p = end;
    } else if (strncmp(s, "nil", 3) == 0) {
        msgpack_pack_nil(pk);
        *p = s + 3;
    } else if (strncmp(s, "true", 4) == 0) {
        msgpack_pack_true(pk);
        *p = s + 4;
    } else if (strncmp(s, "false", 5) == 0) {
        msgpack_pack_false(pk);
        *p = s + 5;
    } else if (*s == '-' || (*s >= '0' && *s <= '9')) {
        char *end;
        size_t span = strspn(s, "-0123456789.e");
        if (memchr(s, '.', span)) {
            msgpack_pack_double(pk, strtod(s, &end));
        } else if (*s == '-') {
            msgpack_pack_int64(pk, strtoll(s, &end, 10));
        } else {
            msgpack_pack_uint64(pk, strtoull(s, &end, 10));
        }
        *p = end;
    } else {
        ck_abort_msg("s_mp: unexpected '%.20s'", s);
    }
}

static void s_mp(msgpack_sbuffer *sb, const char *text, const char *str,
                 const msgpack_sbuffer *buf)
{
    msgpack_packer pk;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    s_mp_args args = {str, buf};
    const char *p = text;
    s_mp_skip(&p);
    s_mp_value(&p, &pk, &args);
    s_mp_skip(&p);
    ck_assert_msg(*p == '\0', "s_mp: trailing text '%.20s'", p);
}

/* ---- raw sockets ---- */

/* A DEALER connected to the daemon (linger 0); close it with s_close. */
static void *s_raw(void)
{
    void *s = zmq_socket(s_zctx, ZMQ_DEALER);
    ck_assert_ptr_nonnull(s);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    ck_assert_int_eq(zmq_connect(s, s_d.endpoint), 0);
    size_t i = 0;
    while (i < S_MAX_SOCKS && s_socks[i])
        i++;
    ck_assert_uint_lt(i, S_MAX_SOCKS);
    s_socks[i] = s;
    return s;
}

static void s_close(void *s)
{
    for (size_t i = 0; i < S_MAX_SOCKS; i++)
        if (s_socks[i] == s)
            s_socks[i] = NULL;
    zmq_close(s);
}

/* Send a header frame and nframes tensor frames, each a copy of frame. */
static void s_send(void *sock, const void *hdr, size_t hdr_len, size_t nframes, const void *frame,
                   size_t frame_len)
{
    int rc = zmq_send(sock, hdr, hdr_len, nframes ? ZMQ_SNDMORE : 0);
    ck_assert_msg(rc >= 0, "zmq_send: %s", zmq_strerror(zmq_errno()));
    for (size_t i = 0; i < nframes; i++) {
        rc = zmq_send(sock, frame, frame_len, i + 1 < nframes ? ZMQ_SNDMORE : 0);
        ck_assert_msg(rc >= 0, "zmq_send: %s", zmq_strerror(zmq_errno()));
    }
}

/* What the tests look at in a reply. */
typedef struct s_reply {
    int v;
    int64_t id; /* -1: missing or not an integer */
    char type[32];
    char status[64];
    char message[1024];
    char graph_id[72];
    bool has_run;     /* RUN replies carry a `run` map */
    char run_mode[32];    /* its `mode` */
    char run_why[160];    /* "" when the map has the protocol's form */
    size_t n_outputs; /* descriptors in `outputs` */
    size_t nframes;   /* frames after the header */
    float first[4];   /* first floats of frame 1, if any */
} s_reply;

static void s_copy(const msgpack_object *o, char *dst, size_t len)
{
    dst[0] = '\0';
    if (o && o->type == MSGPACK_OBJECT_STR)
        snprintf(dst, len, "%.*s", (int)o->via.str.size, o->via.str.ptr);
}

/* A RUN reply's `run` map as docs/protocol.md has it: a mode that is not
 * auto, workers and replicas (>= 1), a reason, and estimates keyed by mode
 * names (not auto), each a float64 >= 0. What is wrong goes to r->run_why. */
static void s_check_run_map(const msgpack_object *run, s_reply *r)
{
    gx_mode m;
    int64_t v;
    char *why = r->run_why;
    size_t len = sizeof r->run_why;
    if (run->type != MSGPACK_OBJECT_MAP) {
        snprintf(why, len, "not a map");
        return;
    }
    s_copy(gx_mp_find(run, "mode"), r->run_mode, sizeof r->run_mode);
    const msgpack_object *est = gx_mp_find(run, "estimates"), *reason = gx_mp_find(run, "reason");
    if (gx_mode_parse(r->run_mode, &m) < 0 || m == GX_MODE_AUTO)
        snprintf(why, len, "mode '%s'", r->run_mode);
    else if (gx_mp_int(gx_mp_find(run, "workers"), "workers", 0, INT32_MAX, &v, NULL, 0) < 0)
        snprintf(why, len, "workers missing");
    else if (gx_mp_int(gx_mp_find(run, "replicas"), "replicas", 1, INT32_MAX, &v, NULL, 0) < 0)
        snprintf(why, len, "replicas missing or < 1");
    else if (!reason || reason->type != MSGPACK_OBJECT_STR)
        snprintf(why, len, "reason missing");
    else if (!est || est->type != MSGPACK_OBJECT_MAP)
        snprintf(why, len, "estimates missing or not a map");
    for (uint32_t i = 0; !why[0] && i < est->via.map.size; i++) {
        char name[32];
        const msgpack_object *val = &est->via.map.ptr[i].val;
        s_copy(&est->via.map.ptr[i].key, name, sizeof name);
        if (gx_mode_parse(name, &m) < 0 || m == GX_MODE_AUTO)
            snprintf(why, len, "estimate under '%s'", name);
        else if (val->type != MSGPACK_OBJECT_FLOAT64 || !(val->via.f64 >= 0))
            snprintf(why, len, "estimate of %s not a float64 >= 0", name);
    }
}

/* Wait up to timeout_ms for one reply and decode its header; false if none
 * came. A reply whose header does not decode fails the test. */
static bool s_recv(void *sock, int timeout_ms, s_reply *r)
{
    memset(r, 0, sizeof *r);
    zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, timeout_ms) <= 0)
        return false;
    zmq_msg_t hdr;
    zmq_msg_init(&hdr);
    ck_assert_int_ge(zmq_msg_recv(&hdr, sock, 0), 0);
    int more = zmq_msg_more(&hdr);
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        ck_assert_int_ge(zmq_msg_recv(&m, sock, 0), 0);
        more = zmq_msg_more(&m);
        if (r->nframes++ == 0 && zmq_msg_size(&m) >= sizeof r->first)
            memcpy(r->first, zmq_msg_data(&m), sizeof r->first);
        zmq_msg_close(&m);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    char err[256];
    int rc = gx_wire_unpack(zmq_msg_data(&hdr), zmq_msg_size(&hdr), &up, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "reply header does not decode: %s", err);
    ck_assert_msg(up.data.type == MSGPACK_OBJECT_MAP, "reply header is not a map");
    int64_t v = -1;
    gx_mp_int(gx_mp_find(&up.data, "v"), "v", 0, INT32_MAX, &v, NULL, 0);
    r->v = (int)v;
    r->id = -1;
    gx_mp_int(gx_mp_find(&up.data, "id"), "id", 0, INT64_MAX, &r->id, NULL, 0);
    s_copy(gx_mp_find(&up.data, "type"), r->type, sizeof r->type);
    s_copy(gx_mp_find(&up.data, "status"), r->status, sizeof r->status);
    s_copy(gx_mp_find(&up.data, "message"), r->message, sizeof r->message);
    s_copy(gx_mp_find(&up.data, "graph_id"), r->graph_id, sizeof r->graph_id);
    r->has_run = gx_mp_find(&up.data, "run") != NULL;
    if (r->has_run)
        s_check_run_map(gx_mp_find(&up.data, "run"), r);
    const msgpack_object *outs = gx_mp_find(&up.data, "outputs");
    if (outs && outs->type == MSGPACK_OBJECT_ARRAY)
        r->n_outputs = outs->via.array.size;
    msgpack_unpacked_destroy(&up);
    zmq_msg_close(&hdr);
    return true;
}

/* ---- the daemon still serves ---- */

/* y = Add(MatMul(Relu(x), w), b): x [2,3], w [3,2], b [2]. */
static const float s_ref_x[6] = {1, -2, 3, -4, 5, -6};
static const float s_ref_y[4] = {16.5f, 19, 15.5f, 19};

static gx_graph *s_ref_graph(void)
{
    static const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -1};
    gx_graph *g = gx_graph_new("reference");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 3});
    gx_tensor *wt = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){3, 2}, w, sizeof w);
    gx_tensor *bt = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){2}, b, sizeof b);
    gx_graph_add_const(g, "w", &wt);
    gx_graph_add_const(g, "b", &bt);
    gx_graph_add_node(g, "Relu", "relu", 1, (const char *[]){"x"}, 1, (const char *[]){"h"});
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"h", "w"}, 1, (const char *[]){"m"});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"m", "b"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static bool s_daemon_alive(void)
{
    int st;
    return s_d.pid > 0 && waitpid(s_d.pid, &st, WNOHANG) == 0;
}

/* A RUN of the reference graph by id returns the right numbers. */
static void s_check_serving(const char *after)
{
    ck_assert_msg(s_daemon_alive(), "gexecd died after %s", after);
    gx_request *rq = gx_request_new();
    gx_tensor *x = gx_tensor_new_copy(GX_F32, 2, (int64_t[]){2, 3}, s_ref_x, sizeof s_ref_x);
    gx_request_set_graph_id(rq, &s_ref_id);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    int rc = gx_client_run(s_cli, rq, &r);
    ck_assert_msg(rc == GX_OK, "after %s: the reference RUN failed: %s: %s", after,
                  gx_status_name(rc), gx_client_last_error(s_cli));
    ck_assert_uint_eq(gx_result_output_count(r), 1);
    const gx_tensor *y = gx_result_output(r, 0);
    ck_assert_int_eq(gx_tensor_numel(y), 4);
    ck_assert_msg(gxt_allclose(gx_tensor_cdata(y), s_ref_y, 4, 1e-6f, 1e-6f),
                  "after %s: the reference RUN computed wrong numbers", after);
    gx_result_destroy(&r);
    gx_tensor_destroy(&x);
    gx_request_destroy(&rq);
}

/* ---- one hostile request ---- */

/*
 * Send hdr (+ nframes copies of frame) on a fresh socket; expect exactly one
 * reply of the given type (NULL: any), status, id, with a message containing
 * keyword; then check the daemon still serves.
 */
static void s_expect(const char *what, const void *hdr, size_t hdr_len, size_t nframes,
                     const void *frame, size_t frame_len, const char *type, int64_t id,
                     int status, const char *keyword)
{
    void *sock = s_raw();
    s_send(sock, hdr, hdr_len, nframes, frame, frame_len);
    s_reply r;
    ck_assert_msg(s_recv(sock, S_REPLY_MS, &r), "%s: no reply within %d ms", what, S_REPLY_MS);
    ck_assert_msg(r.v == GX_PROTOCOL_VERSION, "%s: reply v = %d", what, r.v);
    ck_assert_msg(strcmp(r.status, gx_status_name(status)) == 0, "%s: status %s, want %s (%s)",
                  what, r.status, gx_status_name(status), r.message);
    ck_assert_msg(r.id == id, "%s: reply id %" PRId64 ", want %" PRId64, what, r.id, id);
    ck_assert_msg(!type || strcmp(r.type, type) == 0, "%s: reply type '%s', want '%s'", what,
                  r.type, type);
    ck_assert_msg(!r.has_run || !r.run_why[0], "%s: reply's run map: %s", what, r.run_why);
    if (status != GX_OK) {
        ck_assert_msg(r.message[0] != '\0', "%s: error reply without a message", what);
        ck_assert_msg(strstr(r.message, keyword) != NULL, "%s: message '%s' does not mention '%s'",
                      what, r.message, keyword);
        ck_assert_msg(r.nframes == 0, "%s: error reply with %zu data frames", what, r.nframes);
    }
    ck_assert_msg(!s_recv(sock, 0, &r), "%s: a second reply (%s)", what, r.status);
    s_close(sock);
    s_check_serving(what);
}

/* s_expect for a header written in the s_mp notation; `$` is the Relu
 * graph's id, `@` the graph buffer (may be NULL when unused). */
static void s_expect_mp(const char *what, const char *text, const msgpack_sbuffer *graph,
                        size_t nframes, size_t frame_len, const char *type, int64_t id,
                        int status, const char *keyword)
{
    msgpack_sbuffer sb;
    s_mp(&sb, text, s_relu_id.hex, graph);
    void *frame = calloc(1, frame_len + 1);
    s_expect(what, sb.data, sb.size, nframes, frame, frame_len, type, id, status, keyword);
    free(frame);
    msgpack_sbuffer_destroy(&sb);
}

/* ---- fixture ---- */

static void s_load(gx_graph *g, gx_graph_id *id)
{
    int rc = gx_client_load(s_cli, g, id);
    ck_assert_msg(rc == GX_OK, "LOAD: %s", gx_client_last_error(s_cli));
    gx_graph_destroy(&g);
}

/* Start a daemon (with a config file holding yaml, unless NULL). It leaves
 * this process with no thread of its own (gxt_daemon_start's client is
 * gone). */
static void s_start_daemon(const char *yaml)
{
    if (yaml) {
        s_conf_dir = gxt_tmpdir();
        char path[512];
        snprintf(path, sizeof path, "%s/gexecd.yaml", s_conf_dir);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(yaml, f);
        fclose(f);
        gxt_daemon_start(&s_d, (const char *const[]){"--config", path, NULL});
    } else {
        gxt_daemon_start(&s_d, NULL);
    }
}

/* y = Relu(x), x float32 [1, 16] */
static gx_graph *s_relu_graph(void)
{
    gx_graph *g = gx_graph_new("relu");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 16});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* z = x + y, float32 [2, 2] */
static gx_graph *s_add_graph(void)
{
    gx_graph *g = gx_graph_new("add");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 2});
    gx_graph_add_input(g, "y", GX_F32, 2, (int64_t[]){2, 2});
    gx_graph_add_node(g, "Add", "a", 2, (const char *[]){"x", "y"}, 1, (const char *[]){"z"});
    gx_graph_add_output(g, "z");
    return g;
}

/* Connect the well-behaved client and load the graphs the cases use. */
static void s_start_clients(void)
{
    s_zctx = zmq_ctx_new();
    ck_assert_ptr_nonnull(s_zctx);
    char err[256];
    s_cli = gx_client_new(s_d.endpoint, err, sizeof err);
    ck_assert_msg(s_cli != NULL, "%s", err);
    gx_client_set_timeout(s_cli, 10000);
    s_load(s_ref_graph(), &s_ref_id);

    s_load(s_relu_graph(), &s_relu_id);
    s_load(s_add_graph(), &s_add_id);
}

static void s_start(const char *yaml)
{
    s_start_daemon(yaml);
    s_start_clients();
}

/* Default configuration: the "frames" cases. */
static void s_setup(void)
{
    s_start(NULL);
}

/* Default configuration, no client yet: the cases that fork. */
static void s_setup_daemon(void)
{
    s_start_daemon(NULL);
}

/* The "limits" cases: every limit small enough to reach with small
 * messages. */
static void s_setup_limits(void)
{
    s_start("limits:\n"
            "  max_message_bytes: 64K\n"
            "  max_tensor_bytes: 16K\n"
            "  max_nodes: 10\n"
            "  max_arena_bytes: 64K\n"
            "  max_nesting: 2\n");
}

/* The "queue" cases: two jobs may wait. */
static void s_setup_queue(void)
{
    s_start("queue:\n"
            "  max_jobs: 2\n");
}

/* The "priority" cases: priorities above 10 are for a user this test's
 * process is not. */
static void s_setup_priority(void)
{
    char yaml[256];
    snprintf(yaml, sizeof yaml,
             "limits:\n"
             "  max_client_priority: 10\n"
             "  priority_users: ['%d']\n",
             geteuid() == 0 ? 65534 : 0);
    s_start(yaml);
}

/* The daemon still serves, is alive, and exits with 0 on SIGTERM. */
static void s_teardown(void)
{
    s_check_serving("the test");
    gx_client_destroy(&s_cli);
    for (size_t i = 0; i < S_MAX_SOCKS; i++)
        if (s_socks[i])
            s_close(s_socks[i]); /* left open by a failed case (no-fork mode) */
    zmq_ctx_term(s_zctx);
    s_zctx = NULL;
    int rc = gxt_daemon_stop(&s_d);
    gxt_rmtree(s_conf_dir);
    free(s_conf_dir);
    s_conf_dir = NULL;
    ck_assert_msg(rc == 0, "gexecd did not exit cleanly on SIGTERM (status %d)", rc);
}

/* ---- frames that are not a readable header ---- */

static const struct {
    const char *what;
    const char *bytes;
    size_t len;
    const char *keyword;
} s_bad_frames[] = {
    {"empty frame", "", 0, "empty"},
    {"garbage bytes", "\xc1\xc1\xc1\xc1garbage", 11, "0xc1"},
    {"text", "hello, gexecd", 13, "trailing"},
    {"truncated map", "\x83\xa1v\x01\xa4type\xa4PI", 12, "truncated"},
    {"truncated string", "\x81\xa4type\xdb\xff\xff\xff\xff", 11, "truncated"},
    {"array, not a map", "\x93\x01\x02\x03", 4, "map"},
    {"integer, not a map", "\x2a", 1, "map"},
    {"nil, not a map", "\xc0", 1, "map"},
    {"array32 claiming 2^32-1 elements in 10 bytes", "\xdd\xff\xff\xff\xff\x00\x00\x00\x00\x00",
     10, "announces"},
    {"map32 claiming 2^32-1 pairs in 10 bytes", "\xdf\xff\xff\xff\xff\x00\x00\x00\x00\x00", 10,
     "announces"},
    {"array16 claiming 65535 elements", "\xdc\xff\xff\xc0\xc0", 5, "announces"},
    {"bin32 claiming 4 GiB", "\xc6\xff\xff\xff\xff\x00", 6, "truncated"},
    {"ext type", "\xd4\x01\x02", 3, "unsupported"},
    {"two objects", "\x80\x80", 2, "trailing"},
};

START_TEST(test_bad_frames)
{
    for (size_t i = 0; i < sizeof s_bad_frames / sizeof s_bad_frames[0]; i++)
        s_expect(s_bad_frames[i].what, s_bad_frames[i].bytes, s_bad_frames[i].len, 0, NULL, 0,
                 "ERROR", 0, GX_EPROTO, s_bad_frames[i].keyword);
}
END_TEST

START_TEST(test_nesting)
{
    /* 100 nested arrays around nil; 100 nested maps {"a": ...}; and one
     * level past the limit inside an otherwise valid PING */
    char deep[512];
    memset(deep, 0x91, 100);
    deep[100] = (char)0xc0;
    s_expect("arrays nested 100 deep", deep, 101, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "nested");
    for (int i = 0; i < 100; i++)
        memcpy(deep + 3 * i, "\x81\xa1" "a", 3);
    deep[300] = (char)0xc0;
    s_expect("maps nested 100 deep", deep, 301, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "nested");

    /* the header map and arrays inside it to the depth limit, which follows
     * from limits.max_nesting (wire.h), is fine */
    char text[1024] = "{v: 1, type: 'PING', id: 3, x: ";
    size_t n = strlen(text);
    int limit = gx_wire_depth_for_nesting(GX_WIRE_NESTING_DEFAULT);
    for (int i = 0; i < limit - 1; i++)
        text[n++] = '[';
    for (int i = 0; i < limit - 1; i++)
        text[n++] = ']';
    strcpy(text + n, "}");
    s_expect_mp("PING nested to the limit", text, NULL, 0, 0, "PING", 3, GX_OK, "");
}
END_TEST

/* ---- header fields ---- */

typedef struct s_mp_case {
    const char *what;
    const char *hdr; /* s_mp notation; $ = the Relu graph's id */
    size_t nframes, frame_len;
    const char *type; /* reply type */
    int64_t id;       /* reply id */
    int status;
    const char *keyword;
} s_mp_case;

static void s_run_cases(const s_mp_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s_expect_mp(c[i].what, c[i].hdr, NULL, c[i].nframes, c[i].frame_len, c[i].type, c[i].id,
                    c[i].status, c[i].keyword);
}

static const s_mp_case s_header_cases[] = {
    {"a valid PING", "{v: 1, type: 'PING', id: 1}", 0, 0, "PING", 1, GX_OK, ""},
    {"missing id", "{v: 1, type: 'PING'}", 0, 0, NULL, 0, GX_EPROTO, "id"},
    {"missing v", "{type: 'PING', id: 2}", 0, 0, NULL, 2, GX_EPROTO, "version"},
    {"v is a string", "{v: '1', type: 'PING', id: 3}", 0, 0, NULL, 3, GX_EPROTO, "version"},
    {"wrong version", "{v: 2, type: 'PING', id: 4}", 0, 0, NULL, 4, GX_EVERSION, "version 2"},
    {"negative version", "{v: -1, type: 'PING', id: 5}", 0, 0, NULL, 5, GX_EPROTO, "version"},
    {"unknown type", "{v: 1, type: 'FROBNICATE', id: 6}", 0, 0, NULL, 6, GX_EREQUEST,
     "FROBNICATE"},
    {"type not a string", "{v: 1, type: 7, id: 7}", 0, 0, NULL, 7, GX_EREQUEST, "unknown request"},
    {"missing type", "{v: 1, id: 8}", 0, 0, NULL, 8, GX_EREQUEST, "unknown request"},
    {"lower-case type", "{v: 1, type: 'ping', id: 9}", 0, 0, NULL, 9, GX_EREQUEST, "ping"},
    {"PING with a tensor frame", "{v: 1, type: 'PING', id: 10}", 1, 8, "PING", 10, GX_EPROTO,
     "too many frames"},
    {"STATS with two frames", "{v: 1, type: 'STATS', id: 11}", 2, 0, "STATS", 11, GX_EPROTO,
     "too many frames"},
    {"LOAD without a graph", "{v: 1, type: 'LOAD', id: 12}", 0, 0, "LOAD", 12, GX_EPROTO, "graph"},
    {"LOAD with a graph that is a number", "{v: 1, type: 'LOAD', id: 13, graph: 5}", 0, 0, "LOAD",
     13, GX_EPROTO, "graph"},
    {"LOAD with nodes not an array",
     "{v: 1, type: 'LOAD', id: 14, graph: {inputs: [], outputs: [], nodes: 'x'}}", 0, 0, "LOAD",
     14, GX_EPROTO, "nodes"},
    {"CANCEL without target", "{v: 1, type: 'CANCEL', id: 15}", 0, 0, "CANCEL", 15, GX_EPROTO,
     "target"},
    {"CANCEL of nothing", "{v: 1, type: 'CANCEL', id: 16, target: 999}", 0, 0, "CANCEL", 16,
     GX_ENOTFOUND, "999"},
    {"duplicate keys (the first wins)", "{v: 1, type: 'PING', id: 17, id: 18}", 0, 0, "PING", 17,
     GX_OK, ""},
    {"a huge valid id", "{v: 1, type: 'PING', id: 9223372036854775807}", 0, 0, "PING",
     INT64_MAX, GX_OK, ""},
};

START_TEST(test_header_fields)
{
    s_run_cases(s_header_cases, sizeof s_header_cases / sizeof s_header_cases[0]);
}
END_TEST

/*
 * An id that is present but not a readable uint (string, negative, over
 * INT64_MAX, nil) is a field of the wrong type: GX_EPROTO naming `id`, reply
 * id 0 (the request is not served).
 */
static const s_mp_case s_bad_id_cases[] = {
    {"id is a string", "{v: 1, type: 'PING', id: 'seven'}", 0, 0, NULL, 0, GX_EPROTO, "id"},
    {"id is negative", "{v: 1, type: 'PING', id: -7}", 0, 0, NULL, 0, GX_EPROTO, "id"},
    {"id above INT64_MAX", "{v: 1, type: 'PING', id: 18446744073709551615}", 0, 0, NULL, 0,
     GX_EPROTO, "id"},
    {"id is nil", "{v: 1, type: 'PING', id: nil}", 0, 0, NULL, 0, GX_EPROTO, "id"},
};

START_TEST(test_bad_id)
{
    s_run_cases(s_bad_id_cases, sizeof s_bad_id_cases / sizeof s_bad_id_cases[0]);
}
END_TEST

/* ---- RUN fields ---- */

#define S_RUN "v: 1, type: 'RUN', graph_id: $, "
#define S_X "{name: 'x', dtype: 'float32', shape: [1, 16]}"

static const s_mp_case s_run_cases_tab[] = {
    {"a valid RUN", "{" S_RUN "id: 20, inputs: [" S_X "]}", 1, 64, "RUN", 20, GX_OK, ""},
    {"inputs not an array", "{" S_RUN "id: 21, inputs: 'x'}", 1, 64, "RUN", 21, GX_EPROTO,
     "inputs"},
    {"inputs missing", "{" S_RUN "id: 22}", 0, 0, "RUN", 22, GX_EPROTO, "inputs"},
    {"descriptor not a map", "{" S_RUN "id: 23, inputs: ['x']}", 1, 64, "RUN", 23, GX_EPROTO,
     "inputs[0]"},
    {"descriptor without name", "{" S_RUN "id: 24, inputs: [{dtype: 'float32', shape: [1, 16]}]}",
     1, 64, "RUN", 24, GX_EPROTO, "inputs[0].name"},
    {"name not a string", "{" S_RUN "id: 25, inputs: [{name: 5, dtype: 'float32', shape: [1, 16]}]}",
     1, 64, "RUN", 25, GX_EPROTO, "inputs[0].name"},
    {"shape with a string",
     "{" S_RUN "id: 26, inputs: [{name: 'x', dtype: 'float32', shape: [1, '16']}]}", 1, 64, "RUN",
     26, GX_EPROTO, "inputs[0].shape[1]"},
    {"shape not an array", "{" S_RUN "id: 27, inputs: [{name: 'x', dtype: 'float32', shape: 16}]}",
     1, 64, "RUN", 27, GX_EPROTO, "inputs[0].shape"},
    {"shape with a float",
     "{" S_RUN "id: 28, inputs: [{name: 'x', dtype: 'float32', shape: [1, 16.0]}]}", 1, 64, "RUN",
     28, GX_EPROTO, "inputs[0].shape[1]"},
    {"dtype float99", "{" S_RUN "id: 29, inputs: [{name: 'x', dtype: 'float99', shape: [1, 16]}]}",
     1, 64, "RUN", 29, GX_EDTYPE, "float99"},
    {"dtype not a string", "{" S_RUN "id: 30, inputs: [{name: 'x', dtype: 4, shape: [1, 16]}]}", 1,
     64, "RUN", 30, GX_EPROTO, "dtype"},
    {"nine dims",
     "{" S_RUN "id: 31, inputs: [{name: 'x', dtype: 'float32', shape: [1,1,1,1,1,1,1,1,16]}]}", 1,
     64, "RUN", 31, GX_ELIMIT, "dims"},
    {"one descriptor, no frame", "{" S_RUN "id: 32, inputs: [" S_X "]}", 0, 0, "RUN", 32,
     GX_EPROTO, "frames"},
    {"one descriptor, two frames", "{" S_RUN "id: 33, inputs: [" S_X "]}", 2, 64, "RUN", 33,
     GX_EPROTO, "frames"},
    {"no descriptor, one frame", "{" S_RUN "id: 34, inputs: []}", 1, 64, "RUN", 34, GX_EPROTO,
     "frames"},
    {"frame too short", "{" S_RUN "id: 35, inputs: [" S_X "]}", 1, 60, "RUN", 35, GX_EPROTO,
     "60 bytes"},
    {"frame too long", "{" S_RUN "id: 36, inputs: [" S_X "]}", 1, 68, "RUN", 36, GX_EPROTO,
     "68 bytes"},
    {"shape [2^40, 2^40]",
     "{" S_RUN "id: 37, inputs: [{name: 'x', dtype: 'float32', shape: [1099511627776, "
     "1099511627776]}]}",
     1, 64, "RUN", 37, GX_ELIMIT, "limit"},
    {"shape [2^62, 4] (bytes overflow)",
     "{" S_RUN "id: 38, inputs: [{name: 'x', dtype: 'float32', shape: [4611686018427387904, 4]}]}",
     1, 64, "RUN", 38, GX_ELIMIT, "limit"},
    {"negative dim", "{" S_RUN "id: 39, inputs: [{name: 'x', dtype: 'float32', shape: [1, -16]}]}",
     1, 64, "RUN", 39, GX_EPROTO, "inputs[0].shape[1]"},
    {"symbolic dim in a RUN",
     "{" S_RUN "id: 40, inputs: [{name: 'x', dtype: 'float32', shape: [-1, 16]}]}", 1, 64, "RUN",
     40, GX_EPROTO, "inputs[0].shape[0]"},
    {"graph_id and graph", "{" S_RUN "id: 41, graph: {}, inputs: [" S_X "]}", 1, 64, "RUN", 41,
     GX_EPROTO, "exactly one"},
    {"neither graph_id nor graph", "{v: 1, type: 'RUN', id: 42, inputs: [" S_X "]}", 1, 64, "RUN",
     42, GX_EPROTO, "exactly one"},
    {"graph_id not loaded",
     "{v: 1, type: 'RUN', id: 43, graph_id: "
     "'0000000000000000000000000000000000000000000000000000000000000000', inputs: [" S_X "]}",
     1, 64, "RUN", 43, GX_ENOTFOUND, "not loaded"},
    {"graph_id not a string", "{v: 1, type: 'RUN', id: 44, graph_id: 12, inputs: [" S_X "]}", 1, 64,
     "RUN", 44, GX_EPROTO, "graph_id"},
    {"priority out of range", "{" S_RUN "id: 45, priority: 1000, inputs: [" S_X "]}", 1, 64, "RUN",
     45, GX_EINVAL, "priority"},
    {"priority a string", "{" S_RUN "id: 46, priority: 'high', inputs: [" S_X "]}", 1, 64, "RUN",
     46, GX_EPROTO, "priority"},
    {"negative deadline", "{" S_RUN "id: 47, deadline_ms: -1, inputs: [" S_X "]}", 1, 64, "RUN", 47,
     GX_EINVAL, "deadline_ms"},
    {"huge deadline", "{" S_RUN "id: 48, deadline_ms: 9223372036854775807, inputs: [" S_X "]}", 1,
     64, "RUN", 48, GX_EINVAL, "deadline_ms"},
    {"unknown mode", "{" S_RUN "id: 49, mode: 'warp', inputs: [" S_X "]}", 1, 64, "RUN", 49,
     GX_EINVAL, "warp"},
    {"outputs not an array", "{" S_RUN "id: 51, outputs: 'y', inputs: [" S_X "]}", 1, 64, "RUN",
     51, GX_EPROTO, "outputs"},
    {"outputs with a number", "{" S_RUN "id: 52, outputs: [3], inputs: [" S_X "]}", 1, 64, "RUN",
     52, GX_EPROTO, "outputs"},
    {"output not in the graph", "{" S_RUN "id: 53, outputs: ['nope'], inputs: [" S_X "]}", 1, 64,
     "RUN", 53, GX_EGRAPH, "nope"},
    {"input not in the graph",
     "{" S_RUN "id: 54, inputs: [{name: 'z', dtype: 'float32', shape: [1, 16]}]}", 1, 64, "RUN",
     54, GX_EGRAPH, "'z'"},
    {"input of the wrong dtype",
     "{" S_RUN "id: 55, inputs: [{name: 'x', dtype: 'int32', shape: [1, 16]}]}", 1, 64, "RUN", 55,
     GX_ESHAPE, "input 'x'"},
    {"input of the wrong shape",
     "{" S_RUN "id: 56, inputs: [{name: 'x', dtype: 'float32', shape: [2, 8]}]}", 1, 64, "RUN", 56,
     GX_ESHAPE, "input 'x'"},
    {"input given twice", "{" S_RUN "id: 57, inputs: [" S_X ", " S_X "]}", 2, 64, "RUN", 57,
     GX_EGRAPH, "twice"},
};

START_TEST(test_run_fields)
{
    s_run_cases(s_run_cases_tab, sizeof s_run_cases_tab / sizeof s_run_cases_tab[0]);
}
END_TEST

/* The `mode` field: a name not in GX_MODE_LIST is GX_EINVAL naming it
 * (case matters, no trimming, no prefixes), a value that is not a string is
 * GX_EPROTO naming the field. */
static const s_mp_case s_mode_cases[] = {
    {"unknown mode", "{" S_RUN "id: 200, mode: 'warp', inputs: [" S_X "]}", 1, 64, "RUN", 200,
     GX_EINVAL, "unknown mode 'warp'"},
    {"mode in upper case", "{" S_RUN "id: 201, mode: 'SEQ', inputs: [" S_X "]}", 1, 64, "RUN", 201,
     GX_EINVAL, "'SEQ'"},
    {"empty mode", "{" S_RUN "id: 202, mode: '', inputs: [" S_X "]}", 1, 64, "RUN", 202, GX_EINVAL,
     "''"},
    {"mode with a trailing space", "{" S_RUN "id: 203, mode: 'seq ', inputs: [" S_X "]}", 1, 64,
     "RUN", 203, GX_EINVAL, "'seq '"},
    {"a prefix of a mode", "{" S_RUN "id: 204, mode: 'inter+', inputs: [" S_X "]}", 1, 64, "RUN",
     204, GX_EINVAL, "'inter+'"},
    {"two modes", "{" S_RUN "id: 205, mode: 'intra+inter', inputs: [" S_X "]}", 1, 64, "RUN", 205,
     GX_EINVAL, "'intra+inter'"},
    {"mode an integer", "{" S_RUN "id: 206, mode: 2, inputs: [" S_X "]}", 1, 64, "RUN", 206,
     GX_EPROTO, "mode"},
    {"mode nil", "{" S_RUN "id: 207, mode: nil, inputs: [" S_X "]}", 1, 64, "RUN", 207, GX_EPROTO,
     "mode"},
    {"mode an array", "{" S_RUN "id: 208, mode: ['seq'], inputs: [" S_X "]}", 1, 64, "RUN", 208,
     GX_EPROTO, "mode"},
    {"mode as bin", "{" S_RUN "id: 209, mode: ~3, inputs: [" S_X "]}", 1, 64, "RUN", 209,
     GX_EPROTO, "mode"},
};

START_TEST(test_run_mode_field)
{
    s_run_cases(s_mode_cases, sizeof s_mode_cases / sizeof s_mode_cases[0]);

    /* the unknown-mode message lists every mode, so a person can fix it */
    msgpack_sbuffer sb;
    char frame[64] = {0};
    s_mp(&sb, "{" S_RUN "id: 210, mode: 'warp', inputs: [" S_X "]}", s_relu_id.hex, NULL);
    void *sock = s_raw();
    s_send(sock, sb.data, sb.size, 1, frame, sizeof frame);
    msgpack_sbuffer_destroy(&sb);
    s_reply r;
    ck_assert(s_recv(sock, S_REPLY_MS, &r));
    ck_assert_str_eq(r.status, "GX_EINVAL");
    for (int m = 0; m < GX_MODE_COUNT; m++)
        ck_assert_msg(strstr(r.message, gx_mode_name((gx_mode)m)) != NULL, "'%s' lacks %s",
                      r.message, gx_mode_name((gx_mode)m));

    /* every mode name is accepted: the job runs in that mode (auto: in
     * some fixed mode; inter+replica on one copy: inter) with a well-formed
     * run map (s_recv) */
    for (int m = 0; m < GX_MODE_COUNT; m++) {
        char text[256];
        snprintf(text, sizeof text, "{" S_RUN "id: %d, mode: '%s', inputs: [" S_X "]}", 220 + m,
                 gx_mode_name((gx_mode)m));
        s_mp(&sb, text, s_relu_id.hex, NULL);
        s_send(sock, sb.data, sb.size, 1, frame, sizeof frame);
        msgpack_sbuffer_destroy(&sb);
        ck_assert_msg(s_recv(sock, S_REPLY_MS, &r), "mode %s: no reply", gx_mode_name((gx_mode)m));
        ck_assert_int_eq(r.id, 220 + m);
        ck_assert_msg(!r.run_why[0], "mode %s: run map: %s", gx_mode_name((gx_mode)m), r.run_why);
        ck_assert_msg(strcmp(r.status, "GX_OK") == 0, "mode %s: %s %s", gx_mode_name((gx_mode)m),
                      r.status, r.message);
        ck_assert(r.has_run);
        ck_assert_int_eq(r.nframes, 1);
        if (m == GX_MODE_INTER_REPLICA)
            ck_assert_msg(strcmp(r.run_mode, "inter+replica") == 0 || strcmp(r.run_mode, "inter") == 0,
                          "%s", r.run_mode);
        else if (m != GX_MODE_AUTO)
            ck_assert_str_eq(r.run_mode, gx_mode_name((gx_mode)m));
    }
    s_close(sock);
}
END_TEST

/* ---- EXPLAIN fields ---- */

#define S_EXPLAIN "v: 1, type: 'EXPLAIN', graph_id: $, "

/* EXPLAIN decodes its graph and inputs as RUN does; whatever is wrong
 * with them gets one error reply naming it. */
static const s_mp_case s_explain_cases[] = {
    {"a valid EXPLAIN, declared shapes", "{" S_EXPLAIN "id: 300}", 0, 0, "EXPLAIN", 300, GX_OK,
     ""},
    {"a valid EXPLAIN with an input", "{" S_EXPLAIN "id: 301, inputs: [" S_X "]}", 1, 64,
     "EXPLAIN", 301, GX_OK, ""},
    {"neither graph_id nor graph", "{v: 1, type: 'EXPLAIN', id: 302}", 0, 0, "EXPLAIN", 302,
     GX_EPROTO, "exactly one"},
    {"graph_id and graph", "{" S_EXPLAIN "id: 303, graph: {}}", 0, 0, "EXPLAIN", 303, GX_EPROTO,
     "exactly one"},
    {"graph_id not loaded",
     "{v: 1, type: 'EXPLAIN', id: 304, graph_id: "
     "'0000000000000000000000000000000000000000000000000000000000000000'}",
     0, 0, "EXPLAIN", 304, GX_ENOTFOUND, "not loaded"},
    {"graph_id of 3 digits", "{v: 1, type: 'EXPLAIN', id: 305, graph_id: 'abc'}", 0, 0,
     "EXPLAIN", 305, GX_EPROTO, "graph_id"},
    {"graph a number", "{v: 1, type: 'EXPLAIN', id: 306, graph: 5}", 0, 0, "EXPLAIN", 306,
     GX_EPROTO, "graph"},
    {"inputs not an array", "{" S_EXPLAIN "id: 307, inputs: 'x'}", 0, 0, "EXPLAIN", 307,
     GX_EPROTO, "inputs"},
    {"descriptor with a string dim",
     "{" S_EXPLAIN "id: 308, inputs: [{name: 'x', dtype: 'float32', shape: [1, '16']}]}", 1, 64,
     "EXPLAIN", 308, GX_EPROTO, "inputs[0].shape[1]"},
    {"dtype float99",
     "{" S_EXPLAIN "id: 309, inputs: [{name: 'x', dtype: 'float99', shape: [1, 16]}]}", 1, 64,
     "EXPLAIN", 309, GX_EDTYPE, "float99"},
    {"a descriptor without its frame", "{" S_EXPLAIN "id: 310, inputs: [" S_X "]}", 0, 0,
     "EXPLAIN", 310, GX_EPROTO, "frames"},
    {"a frame without a descriptor", "{" S_EXPLAIN "id: 311}", 1, 64, "EXPLAIN", 311, GX_EPROTO,
     "frames"},
    {"frame too short", "{" S_EXPLAIN "id: 312, inputs: [" S_X "]}", 1, 60, "EXPLAIN", 312,
     GX_EPROTO, "60 bytes"},
    {"input of the wrong shape",
     "{" S_EXPLAIN "id: 313, inputs: [{name: 'x', dtype: 'float32', shape: [2, 8]}]}", 1, 64,
     "EXPLAIN", 313, GX_ESHAPE, "input 'x'"},
    {"input not in the graph",
     "{" S_EXPLAIN "id: 314, inputs: [{name: 'z', dtype: 'float32', shape: [1, 16]}]}", 1, 64,
     "EXPLAIN", 314, GX_EGRAPH, "'z'"},
    {"input given twice", "{" S_EXPLAIN "id: 315, inputs: [" S_X ", " S_X "]}", 2, 64, "EXPLAIN",
     315, GX_EGRAPH, "twice"},
    {"an inline graph with an unknown op",
     "{v: 1, type: 'EXPLAIN', id: 316, graph: {name: 'g', inputs: [{name: 'x', dtype: "
     "'float32', shape: [4]}], outputs: [{name: 'y'}], nodes: [{op: 'Frobnicate', name: 'n', "
     "inputs: ['x'], outputs: ['y']}]}}",
     0, 0, "EXPLAIN", 316, GX_EOP, "Frobnicate"},
    {"an inline graph whose input has no shape, explained without it",
     "{v: 1, type: 'EXPLAIN', id: 317, graph: {name: 'g', inputs: [{name: 'x', dtype: "
     "'float32'}], outputs: [{name: 'x'}], nodes: []}}",
     0, 0, "EXPLAIN", 317, GX_ESHAPE, "input 'x' is declared without a shape"},
    {"an inline graph whose input has no dtype",
     "{v: 1, type: 'EXPLAIN', id: 318, graph: {name: 'g', inputs: [{name: 'x', shape: [4]}], "
     "outputs: [{name: 'x'}], nodes: []}}",
     0, 0, "EXPLAIN", 318, GX_EGRAPH, "graph input 'x' needs a dtype"},
};

START_TEST(test_explain_fields)
{
    s_run_cases(s_explain_cases, sizeof s_explain_cases / sizeof s_explain_cases[0]);
}
END_TEST

#define S_COMPILE "v: 1, type: 'COMPILE', graph_id: $, "

/* COMPILE decodes as EXPLAIN does, and inputs given by shape alone
 * (`shapes`, no frames) are checked as descriptors; a RUN refuses them. */
static const s_mp_case s_compile_cases[] = {
    {"a valid COMPILE, declared shapes", "{" S_COMPILE "id: 330}", 0, 0, "COMPILE", 330, GX_OK,
     ""},
    {"a valid COMPILE, a shape", "{" S_COMPILE "id: 331, shapes: [" S_X "]}", 0, 0, "COMPILE",
     331, GX_OK, ""},
    {"a valid COMPILE with an input", "{" S_COMPILE "id: 332, inputs: [" S_X "]}", 1, 64,
     "COMPILE", 332, GX_OK, ""},
    {"shapes not an array", "{" S_COMPILE "id: 333, shapes: 'x'}", 0, 0, "COMPILE", 333,
     GX_EPROTO, "shapes"},
    {"a shape of dtype float99",
     "{" S_COMPILE "id: 334, shapes: [{name: 'x', dtype: 'float99', shape: [1, 16]}]}", 0, 0,
     "COMPILE", 334, GX_EDTYPE, "float99"},
    {"a shape with a negative dim",
     "{" S_COMPILE "id: 335, shapes: [{name: 'x', dtype: 'float32', shape: [1, -16]}]}", 0, 0,
     "COMPILE", 335, GX_EPROTO, "shapes[0]"},
    {"an input and a shape of the same name",
     "{" S_COMPILE "id: 336, inputs: [" S_X "], shapes: [" S_X "]}", 1, 64, "COMPILE", 336,
     GX_EGRAPH, "twice"},
    {"a shape that is not the graph's",
     "{" S_COMPILE "id: 337, shapes: [{name: 'x', dtype: 'float32', shape: [3, 16]}]}", 0, 0,
     "COMPILE", 337, GX_ESHAPE, "input 'x'"},
    {"a frame for a shape", "{" S_COMPILE "id: 338, shapes: [" S_X "]}", 1, 64, "COMPILE", 338,
     GX_EPROTO, "frames"},
    {"a RUN with shapes",
     "{v: 1, type: 'RUN', graph_id: $, id: 339, inputs: [" S_X "], shapes: [" S_X "]}", 1, 64,
     "RUN", 339, GX_EPROTO, "shapes"},
    {"an EXPLAIN with a shape", "{" S_EXPLAIN "id: 340, shapes: [" S_X "]}", 0, 0, "EXPLAIN",
     340, GX_OK, ""},
};

START_TEST(test_compile_fields)
{
    s_run_cases(s_compile_cases, sizeof s_compile_cases / sizeof s_compile_cases[0]);
}
END_TEST

/* Inputs are matched by name: missing and extra ones are named. */
START_TEST(test_run_inputs)
{
    msgpack_sbuffer sb;
    float xy[4] = {1, 2, 3, 4};
    const char *d2 = "{name: 'x', dtype: 'float32', shape: [2, 2]}";
    char text[512];
    snprintf(text, sizeof text, "{v: 1, type: 'RUN', id: 60, graph_id: $, inputs: [%s]}", d2);
    s_mp(&sb, text, s_add_id.hex, NULL);
    s_expect("missing input", sb.data, sb.size, 1, xy, sizeof xy, "RUN", 60, GX_EGRAPH,
             "missing input 'y'");
    msgpack_sbuffer_destroy(&sb);

    s_mp(&sb,
         "{v: 1, type: 'RUN', id: 61, graph_id: $, inputs: ["
         "{name: 'x', dtype: 'float32', shape: [2, 2]}, {name: 'y', dtype: 'float32', shape: [2, "
         "2]}, {name: 'extra', dtype: 'float32', shape: [2, 2]}]}",
         s_add_id.hex, NULL);
    s_expect("extra unknown input", sb.data, sb.size, 3, xy, sizeof xy, "RUN", 61, GX_EGRAPH,
             "'extra'");
    msgpack_sbuffer_destroy(&sb);

    /* and the right ones work: x + y with x == y */
    s_mp(&sb,
         "{v: 1, type: 'RUN', id: 62, graph_id: $, inputs: ["
         "{name: 'y', dtype: 'float32', shape: [2, 2]}, {name: 'x', dtype: 'float32', shape: [2, "
         "2]}]}",
         s_add_id.hex, NULL);
    void *sock = s_raw();
    s_send(sock, sb.data, sb.size, 2, xy, sizeof xy);
    s_reply r;
    ck_assert(s_recv(sock, S_REPLY_MS, &r));
    ck_assert_str_eq(r.status, "GX_OK");
    ck_assert_int_eq(r.id, 62);
    ck_assert_uint_eq(r.nframes, 1);
    ck_assert_uint_eq(r.n_outputs, 1);
    ck_assert(r.has_run);
    const float want[4] = {2, 4, 6, 8};
    ck_assert(gxt_allclose(r.first, want, 4, 0, 0));
    s_close(sock);
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- odd but valid shapes ---- */

/* A RUN of g (loaded here) with the given inputs, all frames a copy of frame;
 * returns the reply. */
static s_reply s_run_graph(gx_graph *g, const char *inputs, const void *frame, size_t flen,
                           size_t nframes)
{
    gx_graph_id id;
    s_load(g, &id);
    size_t len = strlen(inputs) + 128;
    char *text = malloc(len);
    snprintf(text, len, "{v: 1, type: 'RUN', id: 77, graph_id: $, inputs: [%s]}", inputs);
    msgpack_sbuffer sb;
    s_mp(&sb, text, id.hex, NULL);
    free(text);
    void *sock = s_raw();
    s_send(sock, sb.data, sb.size, nframes, frame, flen);
    s_reply r;
    ck_assert_msg(s_recv(sock, S_REPLY_MS, &r), "no reply to %s", inputs);
    ck_assert_int_eq(r.id, 77);
    s_reply extra;
    ck_assert_msg(!s_recv(sock, 0, &extra), "two replies");
    s_close(sock);
    msgpack_sbuffer_destroy(&sb);
    return r;
}

START_TEST(test_edge_shapes)
{
    /* a scalar */
    gx_graph *g = gx_graph_new("scalar");
    gx_graph_add_input(g, "x", GX_F32, 0, NULL);
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    float minus = -3, three = 3;
    s_reply r = s_run_graph(g, "{name: 'x', dtype: 'float32', shape: []}", &minus, sizeof minus, 1);
    ck_assert_msg(strcmp(r.status, "GX_OK") == 0, "scalar: %s %s", r.status, r.message);
    ck_assert_uint_eq(r.nframes, 1);
    s_check_serving("a scalar");

    /* a graph output that is a graph input, no nodes */
    g = gx_graph_new("passthrough");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_output(g, "x");
    const float four[4] = {1, -2, 3, -4};
    r = s_run_graph(g, "{name: 'x', dtype: 'float32', shape: [4]}", four, sizeof four, 1);
    ck_assert_msg(strcmp(r.status, "GX_OK") == 0, "passthrough: %s %s", r.status, r.message);
    ck_assert(gxt_allclose(r.first, four, 4, 0, 0));

    /* an inner dimension of 0: each output element is an empty sum, 0 */
    g = gx_graph_new("k0");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){2, -1});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){-1, 2});
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"a", "b"}, 1, (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    r = s_run_graph(g, "{name: 'a', dtype: 'float32', shape: [2, 0]}, "
                       "{name: 'b', dtype: 'float32', shape: [0, 2]}",
                    "", 0, 2);
    ck_assert_msg(strcmp(r.status, "GX_OK") == 0, "MatMul K=0: %s %s", r.status, r.message);
    const float zeros[4] = {0};
    ck_assert_msg(gxt_allclose(r.first, zeros, 4, 0, 0), "MatMul K=0: not zeros");
    s_check_serving("MatMul with K = 0");

    /* 65 graph inputs where kernels take 64 */
    g = gx_graph_new("many-inputs");
    char inputs[65 * 64] = "";
    for (int i = 0; i < 65; i++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", i);
        gx_graph_add_input(g, name, GX_F32, 1, (int64_t[]){1});
        snprintf(inputs + strlen(inputs), sizeof inputs - strlen(inputs),
                 "%s{name: '%s', dtype: 'float32', shape: [1]}", i ? ", " : "", name);
    }
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"i0"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    r = s_run_graph(g, inputs, &three, sizeof three, 65);
    ck_assert_msg(strcmp(r.status, "GX_ELIMIT") == 0 && strstr(r.message, "64"), "65 inputs: %s %s",
                  r.status, r.message);
}
END_TEST

/*
 * A RUN of a [0, 16] tensor through a graph with a symbolic dim: outputs of
 * 0 bytes from an arena of 0 bytes (once a memcpy(dst, NULL, 0) that UBSan
 * aborted the daemon on).
 */
START_TEST(test_zero_size)
{
    /* zero elements through a symbolic dim */
    gx_graph *g = gx_graph_new("empty");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){-1, 16});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    s_reply r = s_run_graph(g, "{name: 'x', dtype: 'float32', shape: [0, 16]}", "", 0, 1);
    ck_assert_msg(strcmp(r.status, "GX_OK") == 0, "[0,16]: %s %s", r.status, r.message);
    ck_assert_uint_eq(r.nframes, 1);
    s_check_serving("a tensor of shape [0, 16]");
}
END_TEST

/* ---- graphs the verifier and compiler must refuse ---- */

static gx_graph *s_g_unknown_op(void)
{
    gx_graph *g = gx_graph_new("unknown-op");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Frobnicate", "f", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_cycle(void)
{
    gx_graph *g = gx_graph_new("cycle");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Add", "A", 2, (const char *[]){"x", "b"}, 1, (const char *[]){"a"});
    gx_graph_add_node(g, "Relu", "B", 1, (const char *[]){"a"}, 1, (const char *[]){"b"});
    gx_graph_add_output(g, "b");
    return g;
}

static gx_graph *s_g_self_loop(void)
{
    gx_graph *g = gx_graph_new("self-loop");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Add", "A", 2, (const char *[]){"x", "a"}, 1, (const char *[]){"a"});
    gx_graph_add_output(g, "a");
    return g;
}

static gx_graph *s_g_matmul_mismatch(void)
{
    gx_graph *g = gx_graph_new("matmul-mismatch");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){2, 3});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){4, 5});
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"a", "b"}, 1, (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    return g;
}

static gx_graph *s_g_output_missing(void)
{
    gx_graph *g = gx_graph_new("output-missing");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "nowhere");
    return g;
}

static gx_graph *s_g_duplicate(void)
{
    gx_graph *g = gx_graph_new("duplicate");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r1", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_node(g, "Relu", "r2", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_shadow_input(void)
{
    gx_graph *g = gx_graph_new("shadow-input");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"x"});
    gx_graph_add_output(g, "x");
    return g;
}

static gx_graph *s_g_undefined_input(void)
{
    gx_graph *g = gx_graph_new("undefined");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Add", "a", 2, (const char *[]){"x", "ghost"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_attr_type(void)
{
    gx_graph *g = gx_graph_new("attr-type");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_node *n = gx_graph_add_node(g, "Softmax", "sm", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_string(n, "axis", "last");
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_attr_unknown(void)
{
    gx_graph *g = gx_graph_new("attr-unknown");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_node *n = gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_int(n, "turbo", 1);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_attr_range(void)
{
    gx_graph *g = gx_graph_new("attr-range");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_node *n = gx_graph_add_node(g, "Softmax", "sm", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_int(n, "axis", 99);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_perm(void)
{
    gx_graph *g = gx_graph_new("perm");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_node *n = gx_graph_add_node(g, "Transpose", "t", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_ints(n, "perm", (int64_t[]){0, 0}, 2);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_perm_range(void)
{
    gx_graph *g = gx_graph_new("perm-range");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_node *n = gx_graph_add_node(g, "Transpose", "t", 1, (const char *[]){"x"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_ints(n, "perm", (int64_t[]){INT64_MIN, 7}, 2);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_reshape(void)
{
    gx_graph *g = gx_graph_new("reshape");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_tensor *s = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){2}, (int64_t[]){-1, -1}, 16);
    gx_graph_add_const(g, "s", &s);
    gx_graph_add_node(g, "Reshape", "r", 2, (const char *[]){"x", "s"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_reshape_huge(void)
{
    gx_graph *g = gx_graph_new("reshape-huge");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){2, 4});
    gx_tensor *s = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){3}, (int64_t[]){1LL << 40, 1LL << 40, 8},
                                      24);
    gx_graph_add_const(g, "s", &s);
    gx_graph_add_node(g, "Reshape", "r", 2, (const char *[]){"x", "s"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_arity(void)
{
    gx_graph *g = gx_graph_new("arity");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_no_outputs(void)
{
    gx_graph *g = gx_graph_new("no-outputs");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    return g;
}

/* A tiny request whose intermediate would be 40000 x 40000 floats. */
static gx_graph *s_g_blowup(void)
{
    gx_graph *g = gx_graph_new("blowup");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){40000, 1});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){1, 40000});
    gx_graph_add_node(g, "MatMul", "outer", 2, (const char *[]){"a", "b"}, 1,
                      (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    return g;
}

static gx_graph *s_g_dtype(void)
{
    gx_graph *g = gx_graph_new("dtype");
    gx_graph_add_input(g, "a", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_input(g, "b", GX_I64, 1, (int64_t[]){4});
    gx_node *n = gx_graph_add_node(g, "Concat", "c", 2, (const char *[]){"a", "b"}, 1,
                                   (const char *[]){"y"});
    gx_node_set_int(n, "axis", 0);
    gx_graph_add_output(g, "y");
    return g;
}

static gx_graph *s_g_declared_output(void)
{
    gx_graph *g = gx_graph_new("declared-output");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4});
    gx_graph_add_node(g, "Relu", "r", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    g->outputs[0].dtype = GX_F32; /* declare it [5]: it computes to [4] */
    g->outputs[0].ndim = 1;
    g->outputs[0].shape[0] = 5;
    return g;
}

static const struct {
    const char *what;
    gx_graph *(*build)(void);
    int status;
    const char *keyword;
} s_graph_cases[] = {
    {"unknown op", s_g_unknown_op, GX_EOP, "Frobnicate"},
    {"cyclic graph A -> B -> A", s_g_cycle, GX_EGRAPH, "cycle"},
    {"node consuming its own output", s_g_self_loop, GX_EGRAPH, "cycle"},
    {"MatMul [2,3] x [4,5]", s_g_matmul_mismatch, GX_ESHAPE, "MatMul"},
    {"graph output not produced", s_g_output_missing, GX_EGRAPH, "nowhere"},
    {"duplicate value names", s_g_duplicate, GX_EGRAPH, "already defined"},
    {"node output named like a graph input", s_g_shadow_input, GX_EGRAPH, "already defined"},
    {"undefined node input", s_g_undefined_input, GX_EGRAPH, "ghost"},
    {"wrong attribute type", s_g_attr_type, GX_EATTR, "axis"},
    {"unknown attribute", s_g_attr_unknown, GX_EATTR, "turbo"},
    {"attribute out of range", s_g_attr_range, GX_EATTR, "axis"},
    {"perm [0, 0]", s_g_perm, GX_EATTR, "perm"},
    {"perm [INT64_MIN, 7]", s_g_perm_range, GX_EATTR, "perm"},
    {"Reshape to [-1, -1]", s_g_reshape, GX_ESHAPE, "-1"},
    {"Reshape to [2^40, 2^40, 8]", s_g_reshape_huge, GX_ESHAPE, "Reshape"},
    {"Relu with two inputs", s_g_arity, GX_EGRAPH, "inputs"},
    {"no outputs", s_g_no_outputs, GX_EGRAPH, "no outputs"},
    {"intermediate of 6.4 GB", s_g_blowup, GX_ELIMIT, "limit"},
    {"Concat of float32 and int64", s_g_dtype, GX_EDTYPE, "int64"},
    {"declared output shape wrong", s_g_declared_output, GX_ESHAPE, "'y'"},
};

/* Each bad graph is refused by LOAD and by an inline RUN, and a RUN of the
 * refused graph by id is refused again (verification errors are cached). */
START_TEST(test_bad_graphs)
{
    for (size_t i = 0; i < sizeof s_graph_cases / sizeof s_graph_cases[0]; i++) {
        gx_graph *g = s_graph_cases[i].build();
        msgpack_sbuffer gb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&gb);
        msgpack_packer_init(&pk, &gb, msgpack_sbuffer_write);
        gx_wire_pack_graph(&pk, g);
        char what[160];
        snprintf(what, sizeof what, "LOAD: %s", s_graph_cases[i].what);
        s_expect_mp(what, "{v: 1, type: 'LOAD', id: 70, graph: @}", &gb, 0, 0, "LOAD", 70,
                    s_graph_cases[i].status, s_graph_cases[i].keyword);
        /* inputs: all zeros of each declared input's shape */
        const char *x = g->n_inputs ? g->inputs[0].name : "x";
        snprintf(what, sizeof what, "RUN inline: %s", s_graph_cases[i].what);
        if (g->n_inputs == 1 && g->inputs[0].ndim == 1 && g->inputs[0].shape[0] == 4) {
            msgpack_sbuffer sb;
            s_mp(&sb,
                 "{v: 1, type: 'RUN', id: 71, graph: @, inputs: [{name: $, dtype: 'float32', "
                 "shape: [4]}]}",
                 x, &gb);
            float zero[4] = {0};
            s_expect(what, sb.data, sb.size, 1, zero, sizeof zero, "RUN", 71,
                     s_graph_cases[i].status, s_graph_cases[i].keyword);
            msgpack_sbuffer_destroy(&sb);
        }
        msgpack_sbuffer_destroy(&gb);
        gx_graph_destroy(&g);
    }
}
END_TEST

/* Graphs written by hand, for what the builder cannot express. */
static const s_mp_case s_raw_graph_cases[] = {
    {"constant whose data is too short",
     "{v: 1, type: 'LOAD', id: 80, graph: {name: 'c', inputs: [], outputs: [{name: 'w'}], "
     "constants: [['w', {dtype: 'float32', shape: [4], data: ~3}]], nodes: []}}",
     0, 0, "LOAD", 80, GX_ESHAPE, "data"},
    {"constant of 2^40 x 2^40",
     "{v: 1, type: 'LOAD', id: 81, graph: {name: 'c', inputs: [], outputs: [{name: 'w'}], "
     "constants: [['w', {dtype: 'float32', shape: [1099511627776, 1099511627776], data: ~0}]], "
     "nodes: []}}",
     0, 0, "LOAD", 81, GX_ELIMIT, "limit"},
    {"constant data not binary",
     "{v: 1, type: 'LOAD', id: 82, graph: {name: 'c', inputs: [], outputs: [{name: 'w'}], "
     "constants: [['w', {dtype: 'float32', shape: [1], data: 'abcd'}]], nodes: []}}",
     0, 0, "LOAD", 82, GX_EPROTO, "data"},
    {"graph input with a -2 dim",
     "{v: 1, type: 'LOAD', id: 83, graph: {name: 'c', inputs: [{name: 'x', dtype: 'float32', "
     "shape: [-2]}], outputs: [{name: 'x'}], nodes: []}}",
     0, 0, "LOAD", 83, GX_EPROTO, "shape[0]"},
    {"node without op",
     "{v: 1, type: 'LOAD', id: 84, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{name: 'n', inputs: ['x'], outputs: ['y']}]}}",
     0, 0, "LOAD", 84, GX_EPROTO, "nodes[0].op"},
    {"node output named ''",
     "{v: 1, type: 'LOAD', id: 85, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{op: 'Relu', name: 'n', inputs: ['x'], outputs: ['']}]}}",
     0, 0, "LOAD", 85, GX_EGRAPH, "empty name"},
    {"attribute not [type, value]",
     "{v: 1, type: 'LOAD', id: 86, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{op: 'Softmax', name: 'n', inputs: ['x'], outputs: ['y'], "
     "attrs: {axis: 1}}]}}",
     0, 0, "LOAD", 86, GX_EPROTO, "axis"},
    {"attribute of unknown type",
     "{v: 1, type: 'LOAD', id: 87, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{op: 'Softmax', name: 'n', inputs: ['x'], outputs: ['y'], "
     "attrs: {axis: ['complex', 1]}}]}}",
     0, 0, "LOAD", 87, GX_EPROTO, "unknown attribute type"},
    {"int attribute holding a string",
     "{v: 1, type: 'LOAD', id: 88, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{op: 'Softmax', name: 'n', inputs: ['x'], outputs: ['y'], "
     "attrs: {axis: ['int', 'last']}}]}}",
     0, 0, "LOAD", 88, GX_EPROTO, "axis"},
    {"attribute given twice",
     "{v: 1, type: 'LOAD', id: 89, graph: {inputs: [{name: 'x', dtype: 'float32', shape: [4]}], "
     "outputs: [{name: 'y'}], nodes: [{op: 'Softmax', name: 'n', inputs: ['x'], outputs: ['y'], "
     "attrs: {axis: ['int', 0], axis: ['int', 0]}}]}}",
     0, 0, "LOAD", 89, GX_EATTR, "twice"},
    {"op name of 2000 bytes",
     "{v: 1, type: 'LOAD', id: 90, graph: {inputs: [], outputs: [{name: 'y'}], nodes: [{op: "
     "'" "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "ReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluReluRelu"
     "', name: 'n', inputs: [], outputs: ['y']}]}}",
     0, 0, "LOAD", 90, GX_ELIMIT, "longer than"},
};

START_TEST(test_raw_graphs)
{
    s_run_cases(s_raw_graph_cases, sizeof s_raw_graph_cases / sizeof s_raw_graph_cases[0]);
}
END_TEST

/* A nodes array announcing more nodes than limits.max_nodes (100000 by
 * default), each a 1-byte nil: refused before any node is decoded. */
START_TEST(test_too_many_nodes)
{
    const uint32_t n = 100001;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    gx_mp_pack_str(&pk, "v");
    msgpack_pack_int(&pk, 1);
    gx_mp_pack_str(&pk, "type");
    gx_mp_pack_str(&pk, "LOAD");
    gx_mp_pack_str(&pk, "id");
    msgpack_pack_int(&pk, 91);
    gx_mp_pack_str(&pk, "graph");
    msgpack_pack_map(&pk, 3);
    gx_mp_pack_str(&pk, "inputs");
    msgpack_pack_array(&pk, 0);
    gx_mp_pack_str(&pk, "outputs");
    msgpack_pack_array(&pk, 0);
    gx_mp_pack_str(&pk, "nodes");
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_nil(&pk);
    s_expect("100001 nodes", sb.data, sb.size, 0, NULL, 0, "LOAD", 91, GX_ELIMIT, "100001");
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- size ---- */

/* A RUN header listing 2000 valid descriptors, followed by 2000 frames. */
START_TEST(test_2000_frames)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5);
    gx_mp_pack_str(&pk, "v");
    msgpack_pack_int(&pk, 1);
    gx_mp_pack_str(&pk, "type");
    gx_mp_pack_str(&pk, "RUN");
    gx_mp_pack_str(&pk, "id");
    msgpack_pack_int(&pk, 100);
    gx_mp_pack_str(&pk, "graph_id");
    gx_mp_pack_str(&pk, s_relu_id.hex);
    gx_mp_pack_str(&pk, "inputs");
    msgpack_pack_array(&pk, 2000);
    for (int i = 0; i < 2000; i++)
        gx_wire_pack_tensor_desc(&pk, "x", GX_F32, 2, (int64_t[]){1, 16});
    float frame[16] = {0};
    s_expect("2000 tensor frames", sb.data, sb.size, 2000, frame, sizeof frame, "RUN", 100,
             GX_EPROTO, "too many frames");
    /* 1025 is one too many as well; the header's count does not matter */
    s_expect("1025 tensor frames", sb.data, sb.size, 1025, frame, sizeof frame, "RUN", 100,
             GX_EPROTO, "too many frames");
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

static uint64_t s_rand(uint64_t *s)
{
    /* splitmix64: fixed seeds make every failure reproducible */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

START_TEST(test_big_garbage)
{
    const size_t n = 6u << 20;
    uint8_t *junk = malloc(n);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = s_rand(&seed);
        memcpy(junk + i, &v, 8);
    }
    s_expect("6 MiB garbage header", junk, n, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "msgpack");
    junk[0] = (char)0xc1;
    s_expect("6 MiB garbage, 0xc1 first", junk, n, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "0xc1");
    /* a string header of 6 MiB: valid msgpack, not a map */
    junk[0] = (char)0xdb;
    junk[1] = (char)((n - 5) >> 24), junk[2] = (char)((n - 5) >> 16);
    junk[3] = (char)((n - 5) >> 8), junk[4] = (char)(n - 5);
    s_expect("6 MiB string header", junk, n, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "map");

    /* a valid header followed by a 6 MiB frame where 64 bytes are due */
    msgpack_sbuffer sb;
    s_mp(&sb, "{" S_RUN "id: 101, inputs: [" S_X "]}", s_relu_id.hex, NULL);
    s_expect("6 MiB tensor frame", sb.data, sb.size, 1, junk, n, "RUN", 101, GX_EPROTO,
             "6291456 bytes");
    msgpack_sbuffer_destroy(&sb);
    free(junk);
}
END_TEST

/* ---- clients that go away ---- */

static gx_graph *s_slow_graph(void)
{
    gx_graph *g = gx_graph_new("slow");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){256, 256});
    gx_tensor *w = gx_tensor_new(GX_F32, 2, (int64_t[]){256, 256});
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_node(g, "MatMul", "m1", 2, (const char *[]){"a", "w"}, 1, (const char *[]){"b"});
    gx_graph_add_node(g, "MatMul", "m2", 2, (const char *[]){"b", "w"}, 1, (const char *[]){"c"});
    gx_graph_add_node(g, "MatMul", "m3", 2, (const char *[]){"c", "w"}, 1, (const char *[]){"d"});
    gx_graph_add_output(g, "d");
    return g;
}

/* The daemon's queue and workers are idle (STATS). */
static void s_wait_idle(void)
{
    for (int i = 0; i < 500; i++) {
        char *json = NULL;
        ck_assert_int_eq(gx_client_stats(s_cli, &json), GX_OK);
        bool idle = strstr(json, "\"workers_busy\":0") && strstr(json, "\"queue_length\":0");
        free(json);
        if (idle)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("gexecd did not become idle within 5 s");
}

/* A forked client process: wait for the slow graph's id on fd, send it
 * four RUNs of it and vanish (no close, no term) with them in flight. */
static void s_vanishing_client(int fd)
{
    char hex[65] = "";
    if (read(fd, hex, 64) != 64)
        _exit(1);
    msgpack_sbuffer sb;
    s_mp(&sb, "{v: 1, type: 'RUN', id: 1, graph_id: $, inputs: [{name: 'a', dtype: 'float32', "
              "shape: [256, 256]}]}",
         hex, NULL);
    size_t flen = 256 * 256 * 4;
    void *frame = calloc(1, flen);
    void *ctx = zmq_ctx_new();
    void *ks = zmq_socket(ctx, ZMQ_DEALER);
    zmq_connect(ks, s_d.endpoint);
    for (int k = 0; k < 4; k++) {
        zmq_send(ks, sb.data, sb.size, ZMQ_SNDMORE);
        zmq_send(ks, frame, flen, 0);
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    _exit(0);
}

START_TEST(test_disconnect)
{
    /* Whole processes that exit with requests in flight. Forked first,
     * while this process has no other thread (the fixture started only
     * the daemon): a child of a threaded parent inherits the locks the
     * other threads held at the fork, and under ASan one is the
     * allocator's, so the child could block for good. They wait on a pipe
     * for the graph's id. ThreadSanitizer runs a thread of its own. */
#if defined(__SANITIZE_THREAD__)
    ck_assert_int_le(gxt_threads(), 2);
#else
    ck_assert_int_eq(gxt_threads(), 1);
#endif
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t kids[4];
    for (int c = 0; c < 4; c++) {
        kids[c] = fork();
        ck_assert_int_ge(kids[c], 0);
        if (kids[c] == 0) {
            close(go[1]);
            s_vanishing_client(go[0]);
        }
    }
    close(go[0]);
    s_start_clients();
    gx_graph_id slow;
    s_load(s_slow_graph(), &slow);
    for (int c = 0; c < 4; c++)
        ck_assert_int_eq(write(go[1], slow.hex, 64), 64);
    close(go[1]);
    for (int c = 0; c < 4; c++) {
        int st;
        ck_assert_int_eq(waitpid(kids[c], &st, 0), kids[c]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d: status %d", c, st);
    }
    msgpack_sbuffer sb;
    s_mp(&sb, "{v: 1, type: 'RUN', id: 1, graph_id: $, inputs: [{name: 'a', dtype: 'float32', "
              "shape: [256, 256]}]}",
         slow.hex, NULL);
    size_t flen = 256 * 256 * 4;
    void *frame = calloc(1, flen);
    /* sockets closed right after sending; linger lets the requests out */
    for (int c = 0; c < 8; c++) {
        void *s = zmq_socket(s_zctx, ZMQ_DEALER);
        int linger = 2000;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        ck_assert_int_eq(zmq_connect(s, s_d.endpoint), 0);
        for (int k = 0; k < 4; k++)
            s_send(s, sb.data, sb.size, 1, frame, flen);
        zmq_close(s);
    }
    /* a half-sent multipart message, then gone */
    void *s = zmq_socket(s_zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    ck_assert_int_eq(zmq_connect(s, s_d.endpoint), 0);
    zmq_send(s, sb.data, sb.size, ZMQ_SNDMORE);
    zmq_close(s);

    s_check_serving("clients that vanished with jobs in flight");
    s_wait_idle();
    s_check_serving("the orphaned jobs finished");
    free(frame);
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- load ---- */

/* 3000 RUNs pipelined on one socket: each gets exactly one reply (GX_OK,
 * or when the workers fall behind GX_EQUEUEFULL or, this socket's bound
 * being the lower, GX_ELIMIT naming limits.client_jobs), and another
 * client's PING is answered meanwhile. */
START_TEST(test_flood)
{
    enum { N = 3000 };
    void *sock = s_raw();
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i - 8);
    static bool seen[N];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++) {
        char text[256];
        snprintf(text, sizeof text, "{" S_RUN "id: %d, inputs: [" S_X "]}", 1000 + i);
        msgpack_sbuffer sb;
        s_mp(&sb, text, s_relu_id.hex, NULL);
        s_send(sock, sb.data, sb.size, 1, x, sizeof x);
        msgpack_sbuffer_destroy(&sb);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(gx_client_ping(s_cli), GX_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_msg(ms < 2000, "PING took %.0f ms during a flood", ms);
    int ok = 0, full = 0;
    for (int i = 0; i < N; i++) {
        s_reply r;
        ck_assert_msg(s_recv(sock, S_REPLY_MS, &r), "flood: %d of %d replies came", i, N);
        ck_assert_msg(r.id >= 1000 && r.id < 1000 + N, "flood: reply id %" PRId64, r.id);
        ck_assert_msg(!seen[r.id - 1000], "flood: two replies to %" PRId64, r.id);
        seen[r.id - 1000] = true;
        if (strcmp(r.status, "GX_OK") == 0) {
            ok++;
            ck_assert_uint_eq(r.nframes, 1);
            ck_assert_float_eq(r.first[0], 0.0f);
        } else {
            ck_assert_msg(strcmp(r.status, "GX_EQUEUEFULL") == 0 ||
                              (strcmp(r.status, "GX_ELIMIT") == 0 &&
                               strstr(r.message, "limits.client_jobs")),
                          "flood: %s: %s", r.status, r.message);
            full++;
        }
    }
    s_reply r;
    ck_assert_msg(!s_recv(sock, 200, &r), "flood: a reply too many");
    ck_assert_int_eq(ok + full, N);
    ck_assert_int_gt(ok, 0);
    s_close(sock);
}
END_TEST

/* ---- fuzz ---- */

/* Mutate buf in place: flip bytes, write interesting bytes, truncate. */
static void s_mutate(uint64_t *rng, uint8_t *buf, size_t *len)
{
    static const uint8_t interesting[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                          0xc0, 0xc1, 0xc4, 0xc6, 0xcc, 0xcf, 0xd3, 0xd9,
                                          0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff, 0x01};
    int n = s_rand(rng) % 4 ? 1 : 2 + (int)(s_rand(rng) % 3); /* mostly one */
    for (int k = 0; k < n && *len > 0; k++) {
        size_t pos = (size_t)(s_rand(rng) % *len);
        switch (s_rand(rng) % 8) {
        case 0:
        case 1:
            buf[pos] = (uint8_t)s_rand(rng);
            break;
        case 2:
            buf[pos] ^= (uint8_t)(1u << (s_rand(rng) % 8));
            break;
        case 3:
        case 4:
            buf[pos] = interesting[s_rand(rng) % sizeof interesting];
            break;
        case 5:
            for (size_t i = pos; i < pos + 4 && i < *len; i++)
                buf[i] = 0xff;
            break;
        case 6:
            buf[pos] = (uint8_t)(buf[pos] + (s_rand(rng) & 1 ? 1 : -1));
            break;
        default:
            *len = pos; /* truncate */
            break;
        }
    }
}

/* The id the daemon must echo for this header: as it reads it, or 0. */
static int64_t s_expected_id(const void *buf, size_t len)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int64_t id = 0;
    if (gx_wire_unpack(buf, len, &up, NULL, 0) == GX_OK &&
        gx_mp_int(gx_mp_find(&up.data, "id"), "id", 0, INT64_MAX, &id, NULL, 0) < 0)
        id = 0;
    msgpack_unpacked_destroy(&up);
    return id;
}

/*
 * Send iters mutated copies of the header text (with `id: %d` in it, which
 * gets 100000 + i), sequentially or in bursts of `burst`; every one must get
 * exactly one reply, with the id the daemon could read from it.
 */
static void s_fuzz(const char *what, const char *fmt, const msgpack_sbuffer *graph,
                   size_t nframes, const void *frame, size_t flen, int iters, int burst,
                   uint64_t seed)
{
    void *sock = s_raw();
    uint64_t rng = seed;
    int64_t *want = calloc((size_t)burst, sizeof *want);
    int *count = calloc((size_t)burst, sizeof *count);
    int ok = 0, errors = 0;
    for (int it = 0; it < iters; it += burst) {
        int nb = it + burst <= iters ? burst : iters - it;
        for (int b = 0; b < nb; b++) {
            char text[1024];
            msgpack_sbuffer sb;
            snprintf(text, sizeof text, fmt, 100000 + it + b);
            s_mp(&sb, text, s_relu_id.hex, graph);
            size_t len = sb.size;
            s_mutate(&rng, (uint8_t *)sb.data, &len);
            size_t nf = nframes;
            if (s_rand(&rng) % 16 == 0)
                nf = (size_t)(s_rand(&rng) % 3);
            want[b] = s_expected_id(sb.data, len);
            count[b] = 0;
            s_send(sock, sb.data, len, nf, frame, flen);
            msgpack_sbuffer_destroy(&sb);
        }
        for (int b = 0; b < nb; b++) {
            s_reply r;
            ck_assert_msg(s_recv(sock, S_REPLY_MS, &r),
                          "%s: no reply to mutation %d (seed %" PRIu64 ")", what, it + b, seed);
            ck_assert_msg(strncmp(r.status, "GX_", 3) == 0, "%s: status '%s'", what, r.status);
            if (strcmp(r.status, "GX_OK") == 0)
                ok++;
            else
                errors++, ck_assert_msg(r.message[0], "%s: %s without a message", what, r.status);
            /* match the reply to a request of this burst that expects its id */
            int match = -1;
            for (int k = 0; k < nb && match < 0; k++)
                if (want[k] == r.id && count[k] == 0)
                    match = k;
            ck_assert_msg(match >= 0,
                          "%s: reply id %" PRId64 " (%s: %s) matches no request of mutations "
                          "%d..%d (seed %" PRIu64 ")",
                          what, r.id, r.status, r.message, it, it + nb - 1, seed);
            count[match]++;
        }
    }
    s_reply r;
    ck_assert_msg(!s_recv(sock, 200, &r), "%s: a reply too many (id %" PRId64 ")", what, r.id);
    ck_assert_msg(ok > 0 && errors > 0, "%s: %d ok, %d errors: the mutations miss", what, ok,
                  errors);
    free(want);
    free(count);
    s_close(sock);
    ck_assert_int_eq(gx_client_ping(s_cli), GX_OK);
}

START_TEST(test_fuzz_run)
{
    float x[16] = {0};
    s_fuzz("RUN by id, one at a time",
           "{v: 1, type: 'RUN', id: %d, graph_id: $, inputs: [" S_X "], outputs: ['y'], "
           "priority: 0, deadline_ms: 0, mode: 'auto'}",
           NULL, 1, x, sizeof x, 2000, 1, 1);
    s_fuzz("RUN by id, bursts of 100",
           "{v: 1, type: 'RUN', id: %d, graph_id: $, inputs: [" S_X "], outputs: ['y'], "
           "priority: 0, deadline_ms: 0, mode: 'auto'}",
           NULL, 1, x, sizeof x, 1000, 100, 2);
}
END_TEST

START_TEST(test_fuzz_inline_graph)
{
    gx_graph *g = s_ref_graph();
    msgpack_sbuffer gb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&gb);
    msgpack_packer_init(&pk, &gb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
    gx_graph_destroy(&g);
    s_fuzz("RUN with an inline graph",
           "{v: 1, type: 'RUN', id: %d, graph: @, inputs: [{name: 'x', dtype: 'float32', "
           "shape: [2, 3]}]}",
           &gb, 1, s_ref_x, sizeof s_ref_x, 1000, 1, 3);
    s_fuzz("LOAD", "{v: 1, type: 'LOAD', id: %d, graph: @}", &gb, 0, NULL, 0, 600, 50, 4);
    msgpack_sbuffer_destroy(&gb);
}
END_TEST

/* ---- the end ---- */

START_TEST(test_stats_after_abuse)
{
    s_expect("garbage", "\xc1", 1, 0, NULL, 0, "ERROR", 0, GX_EPROTO, "0xc1");
    s_expect_mp("wrong version", "{v: 9, type: 'PING', id: 5}", NULL, 0, 0, NULL, 5, GX_EVERSION,
                "9");
    char *json = NULL;
    ck_assert_int_eq(gx_client_stats(s_cli, &json), GX_OK);
    const char *p = strstr(json, "\"protocol_errors\":");
    ck_assert_msg(p != NULL, "no protocol_errors in %s", json);
    long long n = strtoll(p + strlen("\"protocol_errors\":"), NULL, 10);
    ck_assert_msg(n >= 2, "protocol_errors = %lld after two protocol errors", n);
    free(json);
    ck_assert(s_daemon_alive());
    ck_assert_int_eq(kill(s_d.pid, 0), 0);
}
END_TEST

/*
 * Arrays nested to the depth limit around an empty one (one level past it):
 * the empty container counts as a level, so this is GX_EPROTO "nested
 * deeper than <limit>". 33 levels, past msgpack-c's own stack of 32, are
 * fine: gexec decodes messages itself.
 */
START_TEST(test_depth_past_limit_with_empty_leaf)
{
    int limit = gx_wire_depth_for_nesting(GX_WIRE_NESTING_DEFAULT);
    char deep[512], want[64];
    ck_assert_int_lt(limit, (int)sizeof deep);
    memset(deep, 0x91, (size_t)limit);
    deep[limit] = (char)0x90;
    snprintf(want, sizeof want, "nested deeper than %d", limit);
    s_expect("arrays around an empty one past the limit", deep, (size_t)limit + 1, 0, NULL, 0,
             "ERROR", 0, GX_EPROTO, want);
    char text[1024] = "{v: 1, type: 'PING', id: 3, x: ";
    size_t n = strlen(text);
    for (int i = 0; i < limit; i++)
        text[n++] = '[';
    for (int i = 0; i < limit; i++)
        text[n++] = ']';
    strcpy(text + n, "}");
    s_expect_mp("PING nested one level too deep", text, NULL, 0, 0, "ERROR", 0, GX_EPROTO, want);
    n = strlen("{v: 1, type: 'PING', id: 4, x: ");
    memcpy(text, "{v: 1, type: 'PING', id: 4, x: ", n);
    for (int i = 0; i < 32; i++)
        text[n++] = '[';
    for (int i = 0; i < 32; i++)
        text[n++] = ']';
    strcpy(text + n, "}");
    s_expect_mp("PING nested 33 deep", text, NULL, 0, 0, "PING", 4, GX_OK, "");
}
END_TEST

static void s_expect_load(const char *what, gx_graph *g, int64_t id, int status,
                          const char *keyword);

/*
 * Graph nesting (limits.max_nesting, 16 by default): If nodes nested 16
 * deep load and run; 17 deep are refused with GX_ELIMIT naming the limit
 * and the node, not with a msgpack depth error.
 */
START_TEST(test_graph_nesting)
{
    gx_graph *g = gxt_nested_if(GX_WIRE_NESTING_DEFAULT);
    gx_graph_id id;
    ck_assert_msg(gx_client_load(s_cli, g, &id) == GX_OK, "%s", gx_client_last_error(s_cli));
    for (int c = 0; c < 2; c++) {
        gx_tensor *x = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){2}, (float[]){1, 2}, 8);
        gx_tensor *ct = gx_tensor_new_copy(GX_BOOL, 0, NULL, &(uint8_t){(uint8_t)c}, 1);
        gx_request *rq = gx_request_new();
        gx_request_set_graph_id(rq, &id);
        gx_request_add_input(rq, "x", x);
        gx_request_add_input(rq, "c", ct);
        gx_result *r = NULL;
        ck_assert_msg(gx_client_run(s_cli, rq, &r) == GX_OK, "%s", gx_client_last_error(s_cli));
        const float *y = gx_tensor_cdata(gx_result_output(r, 0));
        ck_assert(gxt_allclose(y, c ? (float[]){2, 3} : (float[]){1, 2}, 2, 0, 0));
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
        gx_tensor_destroy(&x);
        gx_tensor_destroy(&ct);
    }
    gx_graph_destroy(&g);
    s_expect_load("If nested 17 deep", gxt_nested_if(GX_WIRE_NESTING_DEFAULT + 1), 130,
                  GX_ELIMIT, "node 'if17' (If)");
    s_expect_load("If nested 17 deep", gxt_nested_if(GX_WIRE_NESTING_DEFAULT + 1), 131,
                  GX_ELIMIT, "nesting limit of 16 (limits.max_nesting)");
    /* deeper still, the message's depth is refused first (before its id is
     * read), naming the limit */
    g = gxt_nested_if(20);
    msgpack_sbuffer gb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&gb);
    msgpack_packer_init(&pk, &gb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
    s_expect_mp("If nested 20 deep", "{v: 1, type: 'LOAD', id: 132, graph: @}", &gb, 0, 0,
                "ERROR", 0, GX_EPROTO, "follows from limits.max_nesting (16)");
    msgpack_sbuffer_destroy(&gb);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- priorities above the ceiling ---- */

/* Up to limits.max_client_priority anyone; above it only
 * limits.priority_users, by the uid the kernel gives for the ipc peer. */
START_TEST(test_priority_ceiling)
{
    static const char run[] = "{v: 1, type: 'RUN', id: %d, graph_id: $, inputs: [{name: 'x', "
                              "dtype: 'float32', shape: [1, 16]}], priority: %d}";
    char text[256], want[128];
    snprintf(text, sizeof text, run, 140, 10);
    s_expect_mp("priority at the ceiling", text, NULL, 1, 64, "RUN", 140, GX_OK, "");
    snprintf(text, sizeof text, run, 141, -100);
    s_expect_mp("lowest priority", text, NULL, 1, 64, "RUN", 141, GX_OK, "");
    snprintf(text, sizeof text, run, 142, 11);
    snprintf(want, sizeof want, "uid %lu is not one of them", (unsigned long)geteuid());
    s_expect_mp("priority over the ceiling", text, NULL, 1, 64, "RUN", 142, GX_EPERM, want);
    snprintf(text, sizeof text, run, 143, 100);
    s_expect_mp("top priority", text, NULL, 1, 64, "RUN", 143, GX_EPERM,
                "above limits.max_client_priority (10)");
}
END_TEST

/* The default: the ceiling is 0, and root and the daemon's own user may
 * go above it (this test runs as one of them). */
START_TEST(test_priority_default)
{
    static const char run[] = "{v: 1, type: 'RUN', id: 150, graph_id: $, inputs: [{name: 'x', "
                              "dtype: 'float32', shape: [1, 16]}], priority: 100}";
    s_expect_mp("top priority, daemon's own user", run, NULL, 1, 64, "RUN", 150, GX_OK, "");
}
END_TEST

/* ---- a daemon with small limits ---- */

/* LOAD the graph over a raw socket and expect status naming keyword. */
static void s_expect_load(const char *what, gx_graph *g, int64_t id, int status,
                          const char *keyword)
{
    msgpack_sbuffer gb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&gb);
    msgpack_packer_init(&pk, &gb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
    char text[64];
    snprintf(text, sizeof text, "{v: 1, type: 'LOAD', id: %lld, graph: @}", (long long)id);
    s_expect_mp(what, text, &gb, 0, 0, "LOAD", id, status, keyword);
    msgpack_sbuffer_destroy(&gb);
    gx_graph_destroy(&g);
}

/* n Relus in a chain: v0 (float32 [4]) -> v1 -> ... -> vn, the output. */
static gx_graph *s_relu_chain(int n)
{
    gx_graph *g = gx_graph_new("long");
    gx_graph_add_input(g, "v0", GX_F32, 1, (int64_t[]){4});
    char in[16], out[16] = "v0";
    for (int i = 0; i < n; i++) {
        snprintf(in, sizeof in, "v%d", i);
        snprintf(out, sizeof out, "v%d", i + 1);
        gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){in}, 1, (const char *[]){out});
    }
    gx_graph_add_output(g, out);
    return g;
}

START_TEST(test_limits)
{
    /* an input of 32 KiB where tensors may have 16 KiB */
    s_expect_mp("input over max_tensor_bytes",
                "{v: 1, type: 'RUN', id: 120, graph_id: $, inputs: [{name: 'x', dtype: "
                "'float32', shape: [1, 8192]}]}",
                NULL, 1, 32768, "RUN", 120, GX_ELIMIT, "16384");

    /* a constant of 20000 bytes */
    gx_graph *g = gx_graph_new("big-const");
    gx_tensor *w = gx_tensor_new(GX_F32, 1, (int64_t[]){5000});
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_output(g, "w");
    s_expect_load("constant over max_tensor_bytes", g, 121, GX_ELIMIT, "limit");

    /* a tiny request whose intermediate has 32 KiB */
    g = gx_graph_new("outer");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){64, 1});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){1, 128});
    gx_graph_add_node(g, "MatMul", "outer", 2, (const char *[]){"a", "b"}, 1,
                      (const char *[]){"c"});
    gx_graph_add_output(g, "c");
    s_expect_load("intermediate over max_tensor_bytes", g, 122, GX_ELIMIT, "'c'");

    /* 11 nodes where 10 are allowed */
    s_expect_load("11 nodes over max_nodes", s_relu_chain(11), 123, GX_ELIMIT, "limit 10");

    /* x, five Softmax values (not fused) and their sum (the Adds fused), of
     * 16000 bytes each: 112000 bytes of arena where 64 KiB are allowed */
    g = gx_graph_new("wide");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){4000});
    const char *r[5] = {"r1", "r2", "r3", "r4", "r5"}, *acc[5] = {"r1", "s2", "s3", "s4", "s5"};
    for (int i = 0; i < 5; i++)
        gx_graph_add_node(g, "Softmax", NULL, 1, (const char *[]){"x"}, 1, &r[i]);
    for (int i = 1; i < 5; i++)
        gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){acc[i - 1], r[i]}, 1, &acc[i]);
    gx_graph_add_output(g, "s5");
    s_expect_load("arena over max_arena_bytes", g, 124, GX_ELIMIT, "arena");

    /* subgraphs 2 deep where 2 are allowed; 3 deep: the node is named */
    s_expect_load("If nested 2 deep", gxt_nested_if(2), 125, GX_OK, "");
    s_expect_load("If nested 3 deep", gxt_nested_if(3), 126, GX_ELIMIT,
                  "node 'if3' (If), attribute 'else_branch': graphs nest 3 levels deep, beyond "
                  "the nesting limit of 2 (limits.max_nesting)");
}
END_TEST

/* Jobs of ~2.7 GFLOP from 4 KiB of input: an outer product [512,1] x [1,512],
 * then ten MatMuls [512,512] x [512,512]. */
static gx_graph *s_heavy_graph(void)
{
    gx_graph *g = gx_graph_new("heavy");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){512, 1});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){1, 512});
    gx_graph_add_node(g, "MatMul", "outer", 2, (const char *[]){"a", "b"}, 1,
                      (const char *[]){"c0"});
    for (int i = 0; i < 10; i++) {
        char in[8], out[8];
        snprintf(in, sizeof in, "c%d", i);
        snprintf(out, sizeof out, "c%d", i + 1);
        gx_graph_add_node(g, "MatMul", NULL, 2, (const char *[]){in, in}, 1,
                          (const char *[]){out});
    }
    gx_graph_add_output(g, "c10");
    return g;
}

/* 20 heavy RUNs at once where 2 may wait: the ones that do not fit are
 * refused at once with GX_EQUEUEFULL, every one gets one reply, and the
 * queue drains. */
START_TEST(test_queue_full)
{
    enum { N = 20 };
    gx_graph_id heavy;
    s_load(s_heavy_graph(), &heavy);
    void *sock = s_raw();
    float zero[512] = {0};
    bool seen[N] = {false};
    for (int i = 0; i < N; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{v: 1, type: 'RUN', graph_id: $, id: %d, inputs: [{name: 'a', dtype: "
                 "'float32', shape: [512, 1]}, {name: 'b', dtype: 'float32', shape: [1, 512]}]}",
                 500 + i);
        msgpack_sbuffer sb;
        s_mp(&sb, text, heavy.hex, NULL);
        s_send(sock, sb.data, sb.size, 2, zero, sizeof zero);
        msgpack_sbuffer_destroy(&sb);
    }
    int ok = 0, full = 0;
    for (int i = 0; i < N; i++) {
        s_reply rep;
        ck_assert_msg(s_recv(sock, 4 * S_REPLY_MS, &rep), "queue full: %d of %d replies came", i,
                      N);
        ck_assert_msg(rep.id >= 500 && rep.id < 500 + N && !seen[rep.id - 500],
                      "queue full: unexpected reply id %" PRId64, rep.id);
        seen[rep.id - 500] = true;
        if (strcmp(rep.status, "GX_OK") == 0) {
            ok++;
        } else {
            ck_assert_msg(strcmp(rep.status, "GX_EQUEUEFULL") == 0, "queue full: %s %s",
                          rep.status, rep.message);
            ck_assert_msg(strstr(rep.message, "queue.max_jobs"), "message: %s", rep.message);
            full++;
        }
    }
    s_reply rep;
    ck_assert(!s_recv(sock, 200, &rep));
    ck_assert_int_ge(ok, 2);
    ck_assert_int_gt(full, 0);
    s_close(sock);
    s_wait_idle();
}
END_TEST

/*
 * A frame over limits.max_message_bytes is answered GX_ELIMIT naming the
 * key (and counted as a protocol error), like every other bad message.
 */
START_TEST(test_oversized_frame)
{
    size_t n = 100 * 1024;
    char *junk = calloc(1, n);
    junk[0] = (char)0xc1;
    s_expect("100 KiB frame over max_message_bytes = 64K", junk, n, 0, NULL, 0, NULL, 0,
             GX_ELIMIT, "max_message_bytes");
    free(junk);
}
END_TEST

/* ---- per-client limits ---- */

/* Four graphs, 1 MiB and two queued jobs per client, one worker. */
static void s_setup_client_limits(void)
{
    s_start("cpus: \"0\"\n"
            "limits:\n"
            "  client_graphs: 4\n"
            "  client_memory_bytes: 1M\n"
            "  client_jobs: 2\n");
}

/* A graph whose output is its constant of n float32 (seed: its values). */
static gx_graph *s_const_graph(const char *name, int64_t n, float seed)
{
    gx_graph *g = gx_graph_new(name);
    gx_tensor *w = gx_tensor_new(GX_F32, 1, (int64_t[]){n});
    for (int64_t i = 0; i < n; i++)
        ((float *)gx_tensor_data(w))[i] = seed;
    gx_graph_add_const(g, "w", &w);
    gx_graph_add_output(g, "w");
    return g;
}

/* The client's own graphs (limits.client_graphs) and bytes
 * (limits.client_memory_bytes): its idle graphs no other client holds make
 * room, least recently used first; beyond that a new graph is refused at
 * once with GX_ELIMIT naming the limit and its value. Its queued jobs
 * (limits.client_jobs) likewise. Other clients go on, and every job gets
 * its one reply. */
START_TEST(test_client_limits)
{
    gx_client *other = gxt_client(&s_d), *third = gxt_client(&s_d), *holder = gxt_client(&s_d);
    gx_client *p = gxt_client(&s_d), *q = gxt_client(&s_d);
    gx_graph_id id4, id5, big1, big2, big3;
    /* s_cli holds the three graphs s_start loaded and a fourth, each one
     * other holds too: a fifth is refused (nothing of s_cli's alone to drop) */
    gx_graph *g4 = s_const_graph("c4", 4, 4.0f), *g5 = s_const_graph("c5", 4, 5.0f);
    ck_assert_int_eq(gx_client_load(s_cli, g4, &id4), GX_OK);
    gx_graph *shared[] = {s_ref_graph(), s_relu_graph(), s_add_graph(), g4};
    const gx_graph_id *want[] = {&s_ref_id, &s_relu_id, &s_add_id, &id4};
    for (int i = 0; i < 4; i++) {
        gx_graph_id id;
        ck_assert_int_eq(gx_client_load(other, shared[i], &id), GX_OK);
        ck_assert_str_eq(id.hex, want[i]->hex);
    }
    ck_assert_int_eq(gx_client_load(s_cli, g5, &id5), GX_ELIMIT);
    ck_assert_msg(strstr(gx_client_last_error(s_cli), "limits.client_graphs is 4"), "%s",
                  gx_client_last_error(s_cli));
    /* one it holds loads again; the fifth is another client's to load */
    ck_assert_int_eq(gx_client_load(s_cli, g4, &id4), GX_OK);
    ck_assert_int_eq(gx_client_load(third, g5, &id5), GX_OK);
    /* after an UNLOAD it may hold the fifth too */
    ck_assert_int_eq(gx_client_unload(s_cli, id4.hex), GX_OK);
    ck_assert_int_eq(gx_client_load(s_cli, g5, &id5), GX_OK);

    /* 600 KB of constant each: two are beyond 1 MiB for one client. p's
     * first is q's too: shared, it is charged to neither, so p's second
     * fits; a third alone with the second (held by a job) is refused */
    gx_graph *b1 = s_const_graph("big1", 150000, 1.0f), *b2 = s_const_graph("big2", 150000, 2.0f);
    gx_graph *b3 = s_const_graph("big3", 150000, 3.0f);
    ck_assert_int_eq(gx_client_load(p, b1, &big1), GX_OK);
    ck_assert_int_eq(gx_client_load(q, b1, &big1), GX_OK);
    ck_assert_msg(gx_client_load(p, b2, &big2) == GX_OK, "%s", gx_client_last_error(p));
    {
        gxt_hold h2;
        gxt_hold_start(&h2, holder, s_cli);
        gx_request *rq2 = gx_request_new();
        gx_request_set_graph_id(rq2, &big2);
        gx_job *j2 = NULL;
        ck_assert_int_eq(gx_client_submit(p, rq2, &j2), GX_OK);
        gxt_wait_stats(s_cli, "\"queue_length\":1");
        ck_assert_int_eq(gx_client_load(p, b3, &big3), GX_ELIMIT);
        ck_assert_msg(strstr(gx_client_last_error(p), "limits.client_memory_bytes is 1048576"),
                      "%s", gx_client_last_error(p));
        gxt_hold_release(&h2);
        ck_assert_int_eq(gx_job_wait(j2, 60000, NULL), GX_OK);
        gx_job_destroy(&j2);
        gx_request_destroy(&rq2);
        ck_assert_int_eq(gx_client_unload(p, big2.hex), GX_OK);
    }
    /* holder's idle second graph makes room for its third */
    ck_assert_int_eq(gx_client_load(holder, b2, &big2), GX_OK);
    ck_assert_int_eq(gx_client_load(holder, b3, &big3), GX_OK);
    char *list = NULL;
    ck_assert_int_eq(gx_client_list(holder, &list), GX_OK);
    ck_assert_msg(!strstr(list, big2.hex) && strstr(list, big3.hex) && strstr(list, big1.hex),
                  "%s", list);
    free(list);

    /* the one worker held: two of third's jobs wait, a third is refused,
     * and other's job is queued beside them */
    gxt_hold h;
    gxt_hold_start(&h, holder, s_cli);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 16});
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &s_relu_id);
    gx_request_add_input(rq, "x", x);
    gx_job *j[4] = {NULL};
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_submit(third, rq, &j[0]), GX_OK);
    ck_assert_int_eq(gx_client_submit(third, rq, &j[1]), GX_OK);
    gxt_wait_stats(s_cli, "\"queue_length\":2");
    ck_assert_int_eq(gx_client_submit(third, rq, &j[2]), GX_OK);
    ck_assert_int_eq(gx_job_wait(j[2], 60000, &r), GX_ELIMIT);
    ck_assert_msg(strstr(gx_result_message(r), "limits.client_jobs is 2"), "%s",
                  gx_result_message(r));
    gx_result_destroy(&r);
    ck_assert_int_eq(gx_client_submit(s_cli, rq, &j[3]), GX_OK);
    gxt_wait_stats(s_cli, "\"queue_length\":3");
    gxt_hold_release(&h);
    for (int i = 0; i < 4; i++) {
        if (i != 2)
            ck_assert_int_eq(gx_job_wait(j[i], 60000, NULL), GX_OK);
        gx_job_destroy(&j[i]);
    }
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g4);
    gx_graph_destroy(&g5);
    gx_graph_destroy(&b1);
    gx_graph_destroy(&b2);
    gx_graph_destroy(&b3);
    for (int i = 0; i < 3; i++)
        gx_graph_destroy(&shared[i]);
    gx_client_destroy(&p);
    gx_client_destroy(&q);
    gx_client_destroy(&other);
    gx_client_destroy(&third);
    gx_client_destroy(&holder);
}
END_TEST

/* ---- the compile-time bound ---- */

/* limits.max_compile_ms: a graph whose compile runs past it fails its LOAD
 * with GX_ELIMIT naming the limit, and the daemon goes on serving. 20000
 * nodes where 1 ms is allowed: no pass walks them faster (a slow machine
 * only makes it surer). */
START_TEST(test_compile_bound)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "limits:\n  max_compile_ms: 1\n", NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_relu_chain(20000);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_ELIMIT);
    ck_assert_msg(strstr(gx_client_last_error(c), "more than limits.max_compile_ms (1)"), "%s",
                  gx_client_last_error(c));
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* ---- hostile replies: libgexec against a fake daemon ---- */

/*
 * A fake gexecd (a ROUTER on a temporary socket) answers one RUN from
 * libgexec with the header text (s_mp notation; %d is replaced by the
 * request's id) and no frames; returns the client's view of the run info.
 * Fields of the wrong type must keep their defaults, never crash the client
 * or be misread.
 */
static void s_fake_reply(const char *fmt, int *status, gx_run_info *info)
{
    char *dir = gxt_tmpdir(), ep[600], err[256], text[1024];
    snprintf(ep, sizeof ep, "ipc://%s/fake.sock", dir);
    void *zctx = zmq_ctx_new(), *router = zmq_socket(zctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    ck_assert_int_eq(zmq_bind(router, ep), 0);
    gx_client *c = gx_client_new(ep, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_graph_id id;
    memset(id.hex, 'a', 64);
    id.hex[64] = '\0';
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_job *job = NULL;
    ck_assert_int_eq(gx_client_submit(c, rq, &job), GX_OK);

    /* the request: routing id, header */
    zmq_msg_t who, hdr;
    zmq_msg_init(&who);
    zmq_msg_init(&hdr);
    zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
    ck_assert_int_eq(zmq_poll(&it, 1, S_REPLY_MS), 1);
    ck_assert_int_ge(zmq_msg_recv(&who, router, 0), 0);
    ck_assert_int_ge(zmq_msg_recv(&hdr, router, 0), 0);
    ck_assert(!zmq_msg_more(&hdr));
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(gx_wire_unpack(zmq_msg_data(&hdr), zmq_msg_size(&hdr), &up, err, sizeof err),
                     GX_OK);
    int64_t rid = -1;
    ck_assert_int_eq(gx_mp_int(gx_mp_find(&up.data, "id"), "id", 0, INT32_MAX, &rid, NULL, 0),
                     GX_OK);
    msgpack_unpacked_destroy(&up);
    snprintf(text, sizeof text, fmt, (int)rid);
    msgpack_sbuffer sb;
    s_mp(&sb, text, NULL, NULL);
    ck_assert_int_ge(zmq_msg_send(&who, router, ZMQ_SNDMORE), 0);
    ck_assert_int_ge(zmq_send(router, sb.data, sb.size, 0), 0);
    msgpack_sbuffer_destroy(&sb);
    zmq_msg_close(&hdr);

    gx_result *r = NULL;
    *status = gx_job_wait(job, S_REPLY_MS, &r);
    ck_assert_ptr_nonnull(r);
    *info = *gx_result_info(r);
    gx_result_destroy(&r);
    gx_job_destroy(&job);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    zmq_close(router);
    zmq_ctx_term(zctx);
    gxt_rmtree(dir);
    free(dir);
}

#define S_FAKE_HEAD "v: 1, type: 'RUN', id: %d, status: 'GX_OK', outputs: [], "

START_TEST(test_reply_run_info)
{
    int st;
    gx_run_info info;

    /* well-formed: every field read */
    s_fake_reply("{" S_FAKE_HEAD "run: {mode: 'inter+replica', device: 'cpu', workers: 4, "
                 "replicas: 2, reason: 'why not', queue_us: 1, compute_us: 2, compile_us: 3, "
                 "estimates: {seq: 100.0, inter: 60.5, 'inter+replica': 30.25}}}",
                 &st, &info);
    ck_assert_int_eq(st, GX_OK);
    ck_assert_str_eq(info.mode, "inter+replica");
    ck_assert_int_eq(info.workers, 4);
    ck_assert_int_eq(info.replicas, 2);
    ck_assert_str_eq(info.reason, "why not");
    ck_assert(info.est_us[GX_MODE_SEQ] == 100.0 && info.est_us[GX_MODE_INTER] == 60.5 &&
              info.est_us[GX_MODE_INTER_REPLICA] == 30.25);
    ck_assert(info.est_us[GX_MODE_AUTO] < 0 && info.est_us[GX_MODE_INTRA] < 0 &&
              info.est_us[GX_MODE_REPLICA] < 0 && info.est_us[GX_MODE_INTER_INTRA] < 0);

    /* wrong types keep the defaults: replicas 1, no estimate */
    s_fake_reply("{" S_FAKE_HEAD "run: {mode: 'seq', replicas: 'three', estimates: 5}}", &st, &info);
    ck_assert_int_eq(st, GX_OK);
    ck_assert_str_eq(info.mode, "seq");
    ck_assert_int_eq(info.replicas, 1);
    for (int m = 0; m < GX_MODE_COUNT; m++)
        ck_assert(info.est_us[m] < 0);

    /* out of range replicas; estimates under unknown names, auto, with
     * wrong types or negative: ignored, the others read (an integer too) */
    s_fake_reply("{" S_FAKE_HEAD "run: {replicas: -4, estimates: {seq: 'fast', warp: 3.0, "
                 "auto: 7.0, intra: -2.0, inter: 12.5, replica: 40, 'inter+intra': nil, "
                 "7: 1.0, 'SEQ': 2.0, 'seq ': 3.0}}}",
                 &st, &info);
    ck_assert_int_eq(info.replicas, 1);
    ck_assert(info.est_us[GX_MODE_SEQ] < 0 && info.est_us[GX_MODE_AUTO] < 0 &&
              info.est_us[GX_MODE_INTRA] < 0 && info.est_us[GX_MODE_INTER_INTRA] < 0 &&
              info.est_us[GX_MODE_INTER_REPLICA] < 0);
    ck_assert(info.est_us[GX_MODE_INTER] == 12.5 && info.est_us[GX_MODE_REPLICA] == 40);
    s_fake_reply("{" S_FAKE_HEAD "run: {workers: 1099511627776, replicas: 1099511627776, "
                 "estimates: []}}", &st, &info);
    ck_assert_int_eq(info.workers, 0);
    ck_assert_int_eq(info.replicas, 1);

    /* run not a map; no run at all (a refused RUN) */
    s_fake_reply("{" S_FAKE_HEAD "run: 'fast'}", &st, &info);
    ck_assert_int_eq(st, GX_OK);
    ck_assert_int_eq(info.replicas, 1);
    ck_assert(info.est_us[GX_MODE_SEQ] < 0);
    s_fake_reply("{v: 1, type: 'RUN', id: %d, status: 'GX_EINVAL', message: 'no'}", &st, &info);
    ck_assert_int_eq(st, GX_EINVAL);
    ck_assert_int_eq(info.replicas, 1);
    ck_assert(info.est_us[GX_MODE_SEQ] < 0);
}
END_TEST

Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("frames");
    tcase_add_checked_fixture(tc, s_setup, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bad_frames);
    tcase_add_test(tc, test_nesting);
    tcase_add_test(tc, test_header_fields);
    tcase_add_test(tc, test_run_fields);
    tcase_add_test(tc, test_run_mode_field);
    tcase_add_test(tc, test_explain_fields);
    tcase_add_test(tc, test_compile_fields);
    tcase_add_test(tc, test_run_inputs);
    tcase_add_test(tc, test_edge_shapes);
    tcase_add_test(tc, test_zero_size);
    tcase_add_test(tc, test_bad_graphs);
    tcase_add_test(tc, test_raw_graphs);
    tcase_add_test(tc, test_too_many_nodes);
    tcase_add_test(tc, test_2000_frames);
    tcase_add_test(tc, test_big_garbage);
    tcase_add_test(tc, test_flood);
    tcase_add_test(tc, test_fuzz_run);
    tcase_add_test(tc, test_fuzz_inline_graph);
    tcase_add_test(tc, test_stats_after_abuse);
    tcase_add_test(tc, test_bad_id);
    tcase_add_test(tc, test_depth_past_limit_with_empty_leaf);
    tcase_add_test(tc, test_graph_nesting);
    tcase_add_test(tc, test_priority_default);
    suite_add_tcase(s, tc);

    tc = tcase_create("disconnect");
    tcase_add_checked_fixture(tc, s_setup_daemon, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_disconnect);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, s_setup_limits, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_oversized_frame);
    suite_add_tcase(s, tc);

    tc = tcase_create("priority");
    tcase_add_checked_fixture(tc, s_setup_priority, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_priority_ceiling);
    suite_add_tcase(s, tc);

    tc = tcase_create("queue");
    tcase_add_checked_fixture(tc, s_setup_queue, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_queue_full);
    suite_add_tcase(s, tc);

    tc = tcase_create("client_limits");
    tcase_add_checked_fixture(tc, s_setup_client_limits, s_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_client_limits);
    suite_add_tcase(s, tc);

    tc = tcase_create("compile_bound");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_compile_bound);
    suite_add_tcase(s, tc);

    tc = tcase_create("replies");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reply_run_info);
    suite_add_tcase(s, tc);
    return s;
}
