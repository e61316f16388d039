/*
 * The shared-memory submission/completion ring (docs/shm.md, "Ring";
 * daemon/ring.c, core/ring.h) against a real gexecd: results equal the
 * socket's, every job of many threads is answered once, hostile ring
 * contents get error completions or close the ring while the daemon
 * serves on, a client killed mid-run loses its ring and region, and a
 * full completion queue holds submissions back instead of overwriting.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "core/internal.h"
#include "core/proto.h"
#include "core/ring.h"
#include "core/wire.h"
#include "libclient/shm.h"
#include "tests/testutil.h"

/* y = x + x on x of dtype dt, [1, n] */
static gx_graph *s_double(gx_dtype dt, int64_t n)
{
    gx_graph *g = gx_graph_new("double");
    gx_graph_add_input(g, "x", dt, 2, (int64_t[]){1, n});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

static gx_client *s_ring_client(const gxt_daemon *d)
{
    gx_client *c = gxt_client(d);
    gx_client_set_ring(c, true);
    return c;
}

/* y of one run of graph id on x through c; the devices the reply names
 * into device (32 bytes) when not NULL. */
static gx_tensor *s_run_on(gx_client *c, const gx_graph_id *id, const gx_tensor *x, char *device)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    ck_assert_msg(gx_client_run(c, rq, &r) == GX_OK, "%s", gx_client_last_error(c));
    if (device)
        snprintf(device, 32, "%s", gx_result_info(r)->device);
    gx_tensor *y = gx_result_take_output(r, 0);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    return y;
}

static gx_tensor *s_run(gx_client *c, const gx_graph_id *id, const gx_tensor *x)
{
    return s_run_on(c, id, x, NULL);
}

START_TEST(test_ring_identical)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *sock = gxt_client(&d), *ring = s_ring_client(&d);
    gx_client_set_ring(sock, false);
    const gx_dtype dts[] = {GX_F32, GX_I64, GX_F64}; /* in place, copied, in place */
    long long jobs = 0;
    for (int k = 0; k < 3; k++) {
        gx_graph *g = s_double(dts[k], 1000);
        gx_graph_id id;
        ck_assert_int_eq(gx_client_load(sock, g, &id), GX_OK);
        gx_tensor *x = gx_tensor_new(dts[k], 2, (int64_t[]){1, 1000});
        unsigned char *p = gx_tensor_data(x);
        for (size_t i = 0; i < gx_tensor_nbytes(x); i++)
            p[i] = (unsigned char)(i * 7 + (size_t)k);
        char dev_sock[32], dev_ring[32];
        gx_tensor *a = s_run_on(sock, &id, x, dev_sock), *b = s_run_on(ring, &id, x, dev_ring);
        ck_assert_int_eq(gx_tensor_dtype(b), dts[k]);
        /* the reply names the devices the job ran on, as the socket's does */
        ck_assert_str_ne(dev_ring, "");
        ck_assert_str_eq(dev_ring, dev_sock);
        ck_assert_uint_eq(gx_tensor_nbytes(a), gx_tensor_nbytes(b));
        ck_assert_int_eq(memcmp(gx_tensor_cdata(a), gx_tensor_cdata(b), gx_tensor_nbytes(a)), 0);
        ck_assert_int_eq(gxt_stat(sock, "ring.jobs"), ++jobs); /* the ring carried it */
        gx_tensor_destroy(&a);
        gx_tensor_destroy(&b);
        gx_tensor_destroy(&x);
        gx_graph_destroy(&g);
    }
    /* a job the ring does not carry (too large) goes over the socket */
    gx_graph *g = s_double(GX_F32, 1 << 17);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(sock, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 1 << 17});
    gx_tensor *y = s_run(ring, &id, x);
    ck_assert_uint_eq(gx_tensor_nbytes(y), 4u << 17);
    ck_assert_int_eq(gxt_stat(sock, "ring.jobs"), jobs);
    /* a failed job through the ring: its error, as over the socket */
    gx_tensor *bad = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 7});
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, &id);
    gx_request_add_input(rq, "x", bad);
    gx_result *r = NULL;
    int rc = gx_client_run(ring, rq, &r);
    ck_assert_int_lt(rc, 0);
    ck_assert_int_eq(gx_result_status(r), rc);
    ck_assert_int_eq(gxt_stat(sock, "ring.jobs"), jobs + 1);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&bad);
    gx_tensor_destroy(&x);
    gx_tensor_destroy(&y);
    gx_graph_destroy(&g);
    gx_client_destroy(&ring);
    gx_client_destroy(&sock);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* x [1, 4] in; five outputs x + x (five: more than the ring carries), or
 * one, x tiled 2^17 times along axis 1 (2 MiB: more than the output
 * area) */
static gx_graph *s_wide_outputs(bool five)
{
    gx_graph *g = gx_graph_new(five ? "five" : "tiled");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    if (!five) {
        gx_tensor *reps = gx_tensor_new(GX_I64, 1, (int64_t[]){2});
        int64_t *rp = gx_tensor_data(reps);
        rp[0] = 1, rp[1] = 1 << 17;
        gx_graph_add_const(g, "reps", &reps);
        gx_graph_add_node(g, "Tile", "tile", 2, (const char *[]){"x", "reps"}, 1,
                          (const char *[]){"y0"});
        gx_graph_add_output(g, "y0");
        return g;
    }
    for (int i = 0; i < 5; i++) {
        char y[8];
        snprintf(y, sizeof y, "y%d", i);
        gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"x", "x"}, 1,
                          (const char *[]){y});
        gx_graph_add_output(g, y);
    }
    return g;
}

/* A job whose outputs the ring cannot carry ran there, and runs again
 * over the socket: the caller gets its outputs, not the ring's refusal,
 * and the graph's later jobs go over the socket at once. */
START_TEST(test_ring_outputs_to_socket)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *sock = gxt_client(&d), *ring = s_ring_client(&d);
    gx_client_set_ring(sock, false);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    float *px = gx_tensor_data(x);
    for (int i = 0; i < 4; i++)
        px[i] = (float)i + 0.5f;
    long long jobs = gxt_stat(sock, "ring.jobs");
    for (int five = 0; five < 2; five++) {
        gx_graph *g = s_wide_outputs(five);
        gx_graph_id id;
        ck_assert_int_eq(gx_client_load(sock, g, &id), GX_OK);
        for (int run = 0; run < 2; run++) {
            gx_request *rq = gx_request_new();
            gx_request_set_graph_id(rq, &id);
            gx_request_add_input(rq, "x", x);
            gx_result *r = NULL;
            ck_assert_msg(gx_client_run(ring, rq, &r) == GX_OK, "%s", gx_client_last_error(ring));
            ck_assert_uint_eq(gx_result_output_count(r), five ? 5 : 1);
            for (size_t o = 0; o < gx_result_output_count(r); o++) {
                const gx_tensor *y = gx_result_output(r, o);
                const float *py = gx_tensor_cdata(y);
                const size_t n = gx_tensor_nbytes(y) / sizeof(float);
                ck_assert_uint_eq(n, five ? 4 : 4u << 17);
                for (size_t i = 0; i < n; i++)
                    ck_assert_float_eq(py[i], five ? 2 * px[i] : px[i % 4]);
            }
            /* the first run was taken by the ring (and refused there), the
             * second went straight to the socket */
            ck_assert_int_eq(gxt_stat(sock, "ring.jobs"), jobs + 1);
            gx_result_destroy(&r);
            gx_request_destroy(&rq);
        }
        jobs++;
        gx_graph_destroy(&g);
    }
    gx_tensor_destroy(&x);
    gx_client_destroy(&ring);
    gx_client_destroy(&sock);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

#define S_THREADS 8
#define S_RUNS 200

typedef struct s_worker {
    const gxt_daemon *d;
    const gx_graph_id *id;
    int k;
    int good;
} s_worker;

static void *s_worker_main(void *arg)
{
    s_worker *w = arg;
    gx_client *c = s_ring_client(w->d);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    for (int r = 0; r < S_RUNS; r++) {
        float *p = gx_tensor_data(x);
        for (int i = 0; i < 4; i++)
            p[i] = (float)(w->k * 100000 + r * 4 + i);
        gx_tensor *y = s_run(c, w->id, x);
        const float *q = gx_tensor_cdata(y);
        bool ok = true;
        for (int i = 0; i < 4; i++)
            ok &= q[i] == 2 * p[i];
        w->good += ok;
        gx_tensor_destroy(&y);
    }
    gx_tensor_destroy(&x);
    gx_client_destroy(&c);
    return NULL;
}

START_TEST(test_ring_many_threads)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    pthread_t t[S_THREADS];
    s_worker w[S_THREADS];
    for (int k = 0; k < S_THREADS; k++) {
        w[k] = (s_worker){.d = &d, .id = &id, .k = k};
        pthread_create(&t[k], NULL, s_worker_main, &w[k]);
    }
    for (int k = 0; k < S_THREADS; k++) {
        pthread_join(t[k], NULL);
        ck_assert_int_eq(w[k].good, S_RUNS); /* each its own answer, once */
    }
    ck_assert_int_eq(gxt_stat(c, "ring.jobs"), S_THREADS * S_RUNS);
    ck_assert_int_eq(gxt_stat(c, "ring.dropped"), 0);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The raw ring of c (set up by one run through it). */
typedef struct s_raw {
    unsigned char *base;
    size_t bytes;
    gx_ring_hdr *h;
    gx_ring_sqe *sq;
    gx_ring_cqe *cq;
    uint32_t entries;
    uint64_t data;
} s_raw;

static s_raw s_raw_of(gx_client *c)
{
    gx_shm *s = gx_client_ring_shm(c);
    ck_assert_ptr_nonnull(s);
    s_raw r = {.base = gx_shm_data(s), .bytes = gx_shm_size(s)};
    r.h = (gx_ring_hdr *)r.base;
    r.entries = r.h->entries;
    r.sq = (gx_ring_sqe *)(r.base + gx_ring_sq_offset());
    r.cq = (gx_ring_cqe *)(r.base + gx_ring_cq_offset(r.entries));
    r.data = gx_ring_data_offset(r.entries);
    gx_client_set_ring(c, false); /* the test drives the ring from here on */
    return r;
}

/* Publishes n submissions already written from sq_tail on. */
static void s_publish(s_raw *r, uint32_t n)
{
    atomic_fetch_add(&r->h->sq_tail, n);
    atomic_fetch_add(&r->h->sq_futex, 1);
    gx_ring_futex_wake(&r->h->sq_futex);
}

/* Waits until cq_tail reaches want (the Check timeout is the bound). */
static void s_wait_cq(s_raw *r, uint32_t want)
{
    for (;;) {
        uint32_t f = atomic_load(&r->h->cq_futex);
        atomic_store(&r->h->cq_sleep, 1);
        if ((int32_t)(atomic_load(&r->h->cq_tail) - want) >= 0)
            break;
        gx_ring_futex_wait(&r->h->cq_futex, f, 100000);
    }
    atomic_store(&r->h->cq_sleep, 0);
}

/* The completion of user among the n from index at on (completions come
 * in the order jobs finish, not the order they were submitted). */
static const gx_ring_cqe *s_cqe(const s_raw *r, uint32_t at, uint32_t n, uint64_t user)
{
    const gx_ring_cqe *found = NULL;
    for (uint32_t b = 0; b < n; b++) {
        const gx_ring_cqe *q = &r->cq[(at + b) & (r->entries - 1)];
        if (q->user == user) {
            ck_assert_msg(!found, "two completions for %llu", (unsigned long long)user);
            found = q;
        }
    }
    ck_assert_msg(found != NULL, "no completion for %llu", (unsigned long long)user);
    return found;
}

/* A valid submission of the double graph (bound at slot 0) on 4 floats. */
static void s_valid(s_raw *r, gx_ring_sqe *e, uint64_t user)
{
    memset(e, 0, sizeof *e);
    e->user = user;
    e->n_in = 1;
    snprintf(e->in[0].name, sizeof e->in[0].name, "x");
    e->in[0].offset = r->data;
    e->in[0].bytes = 16;
    e->in[0].dtype = GX_F32;
    e->in[0].ndim = 2;
    e->in[0].shape[0] = 1;
    e->in[0].shape[1] = 4;
    /* an output area of its own (jobs run at once on several workers) */
    e->out_offset = r->data + 4096 * (1 + user % 64);
    e->out_bytes = 4096;
    ck_assert_uint_le(e->out_offset + e->out_bytes, r->bytes);
}

START_TEST(test_ring_hostile)
{
    gxt_daemon d; /* no one may exceed priority 0 */
    gxt_daemon_start_yaml(&d, "limits:\n  max_client_priority: 0\n  priority_users: []\n", NULL);
    gx_client *c = s_ring_client(&d);
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *y = s_run(c, &id, x); /* sets the ring up, binds the graph to slot 0 */
    gx_tensor_destroy(&y);
    s_raw r = s_raw_of(c);
    float *in = (float *)(r.base + r.data);
    for (int i = 0; i < 4; i++)
        in[i] = (float)i + 0.5f;
    enum { N = 14 };
    uint32_t t0 = atomic_load(&r.h->sq_tail);
    ck_assert_uint_eq(atomic_load(&r.h->cq_head), t0);
    int want[N];
    for (uint32_t k = 0; k < N; k += r.entries) { /* a batch at a time: the ring has entries */
        for (uint32_t b = 0; b < r.entries && k + b < N; b++) {
            uint32_t i = k + b;
            gx_ring_sqe *e = &r.sq[(t0 + i) & (r.entries - 1)];
            s_valid(&r, e, 100 + i);
            want[i] = GX_EINVAL;
            switch (i) {
            case 0: e->slot = 99; want[i] = GX_ENOTFOUND; break;
            case 1: e->n_in = 1000; break;
            case 2: e->in[0].offset = r.bytes - 8; break;            /* past the end */
            case 3: e->in[0].offset = 0; break;                      /* the ring itself */
            case 4: e->in[0].dtype = 9999; break;
            case 5: e->in[0].ndim = 9; break;
            case 6: e->in[0].bytes = 12; break;                      /* not what the shape needs */
            case 7: memset(e->in[0].name, 'x', sizeof e->in[0].name); break; /* no NUL */
            case 8: e->out_offset = UINT64_MAX - 8; break;
            case 9: e->in[0].shape[1] = INT64_MAX / 2; e->in[0].bytes = 0; break;
            case 10: snprintf(e->in[0].name, sizeof e->in[0].name, "nope"); want[i] = 1; break;
            case 11: e->priority = 1000; break;
            case 12: e->priority = 50; want[i] = GX_EPERM; break; /* limits.max_client_priority 0 */
            case 13: want[i] = GX_OK; break;
            }
        }
        uint32_t n = N - k < r.entries ? N - k : r.entries;
        s_publish(&r, n);
        s_wait_cq(&r, t0 + k + n);
        for (uint32_t b = 0; b < n; b++) {
            uint32_t i = k + b;
            const gx_ring_cqe *q = s_cqe(&r, t0 + k, n, 100 + i);
            if (want[i] == 1)
                ck_assert_msg(q->status < 0, "submission %u: status %d", i, q->status);
            else
                ck_assert_msg(q->status == want[i], "submission %u: status %d (%s), want %d", i,
                              q->status, q->message, want[i]);
            if (q->status < 0)
                ck_assert_msg(q->message[0], "submission %u: no message", i);
            if (i == 13) {
                ck_assert_uint_eq(q->n_out, 1);
                const float *o = (const float *)(r.base + q->out[0].offset);
                for (int j = 0; j < 4; j++)
                    ck_assert(o[j] == 2 * in[j]);
            }
        }
        atomic_store(&r.h->cq_head, t0 + k + n);
    }
    ck_assert_int_eq(gxt_stat(c, "ring.refused"), 12);
    ck_assert_int_eq(gxt_stat(c, "ring.hostile"), 0);
    /* indices that break the rules: more submissions than slots */
    atomic_store(&r.h->sq_tail, atomic_load(&r.h->sq_tail) + 1000);
    atomic_fetch_add(&r.h->sq_futex, 1);
    gx_ring_futex_wake(&r.h->sq_futex);
    gxt_wait_stats(c, "\"hostile\":1");
    ck_assert_int_eq(gx_client_ping(c), GX_OK); /* the daemon serves on, over the socket too */
    y = s_run(c, &id, x);
    gx_tensor_destroy(&y);
    /* another client has a ring of its own beside the closed one */
    gx_client *other = s_ring_client(&d);
    y = s_run(other, &id, x);
    gx_tensor_destroy(&y);
    ck_assert_int_eq(gxt_stat(c, "ring.open"), 2);
    gx_client_destroy(&other);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* Priorities and deadlines one rule (gxd_job_set_urgency, daemon/job.c)
 * decides for both ways a job comes in, under limits.max_client_priority 0
 * with no priority_users: each row's status, through a ring submission
 * and through a socket RUN (raw: libgexec refuses the bad ones first). */
static const struct {
    int priority;
    int64_t deadline_ms;
    int want;
} s_urgency[] = {
    {GX_PRIORITY_MAX + 1, 0, GX_EINVAL},
    {GX_PRIORITY_MIN - 1, 0, GX_EINVAL},
    {1000, 0, GX_EINVAL},
    {0, -1, GX_EINVAL},
    {0, GX_DEADLINE_MAX_MS + 1, GX_EINVAL},
    {0, INT64_MAX, GX_EINVAL},
    {0, INT64_MIN, GX_EINVAL},
    {50, 0, GX_EPERM},
    {1, GX_DEADLINE_MAX_MS, GX_EPERM},
    {0, GX_DEADLINE_MAX_MS, GX_OK},
    {GX_PRIORITY_MIN, 1, GX_OK}, /* 1 ms may expire on a busy machine: either */
};
#define S_N_URGENCY (sizeof s_urgency / sizeof s_urgency[0])

/* The status of a raw socket RUN of graph id on 4 floats with priority
 * and deadline_ms; its message to msg. */
static int s_socket_urgency(void *sock, const gx_graph_id *id, uint64_t rid, int priority,
                            int64_t deadline_ms, char *msg, size_t len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 7);
    gx_mp_pack_str(&pk, "v");
    msgpack_pack_int(&pk, 1);
    gx_mp_pack_str(&pk, "type");
    gx_mp_pack_str(&pk, "RUN");
    gx_mp_pack_str(&pk, "id");
    msgpack_pack_uint64(&pk, rid);
    gx_mp_pack_str(&pk, GX_F(GRAPH_ID));
    gx_mp_pack_str(&pk, id->hex);
    gx_mp_pack_str(&pk, GX_F(PRIORITY));
    msgpack_pack_int(&pk, priority);
    gx_mp_pack_str(&pk, GX_F(DEADLINE_MS));
    msgpack_pack_int64(&pk, deadline_ms);
    gx_mp_pack_str(&pk, GX_F(INPUTS));
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 3);
    gx_mp_pack_str(&pk, "name");
    gx_mp_pack_str(&pk, "x");
    gx_mp_pack_str(&pk, "dtype");
    gx_mp_pack_str(&pk, "float32");
    gx_mp_pack_str(&pk, "shape");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_int(&pk, 4);
    const float x[4] = {1, 2, 3, 4};
    ck_assert_int_ge(zmq_send(sock, sb.data, sb.size, ZMQ_SNDMORE), 0);
    ck_assert_int_ge(zmq_send(sock, x, sizeof x, 0), 0);
    msgpack_sbuffer_destroy(&sb);
    zmq_msg_t hdr;
    zmq_msg_init(&hdr);
    ck_assert_int_ge(zmq_msg_recv(&hdr, sock, 0), 0); /* the Check timeout bounds it */
    for (int more = zmq_msg_more(&hdr); more;) { /* output frames */
        zmq_msg_t m;
        zmq_msg_init(&m);
        ck_assert_int_ge(zmq_msg_recv(&m, sock, 0), 0);
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    char err[256], status[64] = "";
    ck_assert_msg(gx_wire_unpack(zmq_msg_data(&hdr), zmq_msg_size(&hdr), &up, err, sizeof err) ==
                      GX_OK, "%s", err);
    const msgpack_object *st = gx_mp_find(&up.data, "status"), *m = gx_mp_find(&up.data, "message");
    ck_assert(st && st->type == MSGPACK_OBJECT_STR);
    snprintf(status, sizeof status, "%.*s", (int)st->via.str.size, st->via.str.ptr);
    snprintf(msg, len, "%.*s", m && m->type == MSGPACK_OBJECT_STR ? (int)m->via.str.size : 0,
             m && m->type == MSGPACK_OBJECT_STR ? m->via.str.ptr : "");
    msgpack_unpacked_destroy(&up);
    zmq_msg_close(&hdr);
    for (int s = GX_OK; s > -100; s--)
        if (strcmp(gx_status_name(s), status) == 0)
            return s;
    ck_abort_msg("unknown status '%s'", status);
    return 1;
}

START_TEST(test_ring_urgency_one_rule)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "limits:\n  max_client_priority: 0\n  priority_users: []\n", NULL);
    gx_client *c = s_ring_client(&d);
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *y = s_run(c, &id, x); /* sets the ring up, binds the graph to slot 0 */
    gx_tensor_destroy(&y);
    s_raw r = s_raw_of(c);
    void *zctx = zmq_ctx_new();
    void *sock = zmq_socket(zctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    ck_assert_int_eq(zmq_connect(sock, d.endpoint), 0);
    for (size_t i = 0; i < S_N_URGENCY; i++) {
        uint32_t t0 = atomic_load(&r.h->sq_tail);
        gx_ring_sqe *e = &r.sq[t0 & (r.entries - 1)];
        s_valid(&r, e, 500 + i);
        e->priority = s_urgency[i].priority;
        e->deadline_ms = s_urgency[i].deadline_ms;
        s_publish(&r, 1);
        s_wait_cq(&r, t0 + 1);
        const gx_ring_cqe *q = s_cqe(&r, t0, 1, 500 + i);
        const int ring = q->status;
        char ring_msg[256], sock_msg[512];
        snprintf(ring_msg, sizeof ring_msg, "%s", q->message);
        atomic_store(&r.h->cq_head, t0 + 1);
        const int socket = s_socket_urgency(sock, &id, 600 + i, s_urgency[i].priority,
                                            s_urgency[i].deadline_ms, sock_msg, sizeof sock_msg);
        const int want = s_urgency[i].want;
        const bool either = want == GX_OK && s_urgency[i].deadline_ms == 1;
        ck_assert_msg(ring == want || (either && ring == GX_ETIMEDOUT),
                      "case %zu (priority %d, deadline_ms %lld): ring %s (%s), want %s", i,
                      s_urgency[i].priority, (long long)s_urgency[i].deadline_ms,
                      gx_status_name(ring), ring_msg, gx_status_name(want));
        ck_assert_msg(socket == want || (either && socket == GX_ETIMEDOUT),
                      "case %zu (priority %d, deadline_ms %lld): socket %s (%s), want %s", i,
                      s_urgency[i].priority, (long long)s_urgency[i].deadline_ms,
                      gx_status_name(socket), sock_msg, gx_status_name(want));
        if (want < 0) /* the same words, after "ring:" / "RUN:" */
            ck_assert_msg(strstr(sock_msg, strchr(ring_msg, ':')) != NULL ||
                              want == GX_EPERM, "ring '%s', socket '%s'", ring_msg, sock_msg);
    }
    zmq_close(sock);
    zmq_ctx_term(zctx);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The status of one run of graph id on x through c (the ring when it
 * takes the job). */
static int s_run_status(gx_client *c, const gx_graph_id *id, const gx_tensor *x)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    int rc = gx_client_run(c, rq, &r);
    if (rc == GX_OK)
        rc = gx_result_status(r);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    return rc;
}

/* graphs.max holds for graphs bound to a ring: the least recently used
 * one goes (its slot lets it go), a ring job of it is answered
 * GX_ENOTFOUND as a socket one would be, and once it is loaded again the
 * client binds it anew (the daemon reuses the slot) and the ring runs it. */
START_TEST(test_ring_bound_evicted)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "graphs:\n  max: 2\n", NULL);
    gx_client *c = s_ring_client(&d);
    gx_graph *g[3];
    gx_graph_id id[3];
    gx_tensor *x[3];
    for (int i = 0; i < 3; i++) { /* three graphs (sizes), three ids */
        g[i] = s_double(GX_F32, 4 + 4 * i);
        x[i] = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4 + 4 * i});
        memset(gx_tensor_data(x[i]), 0, gx_tensor_nbytes(x[i]));
        ck_assert_int_eq(gx_client_load(c, g[i], &id[i]), GX_OK);
        if (i < 2) /* bound to the ring by their first run */
            ck_assert_int_eq(s_run_status(c, &id[i], x[i]), GX_OK);
    }
    ck_assert_int_eq(gxt_stat(c, "ring.jobs"), 2);
    ck_assert_int_eq(gxt_stat(c, "graphs_loaded"), 2); /* the third pushed one out */
    ck_assert_int_eq(s_run_status(c, &id[0], x[0]), GX_ENOTFOUND);
    ck_assert_int_eq(gxt_stat(c, "ring.jobs"), 3); /* through the ring */
    ck_assert_int_eq(s_run_status(c, &id[1], x[1]), GX_OK); /* the other stays bound */
    ck_assert_int_eq(gx_client_load(c, g[0], &id[0]), GX_OK);
    ck_assert_int_eq(s_run_status(c, &id[0], x[0]), GX_OK);
    ck_assert_int_eq(gxt_stat(c, "ring.jobs"), 5);
    ck_assert_int_eq(gxt_stat(c, "graphs_loaded"), 2);
    for (int i = 0; i < 3; i++) {
        gx_graph_destroy(&g[i]);
        gx_tensor_destroy(&x[i]);
    }
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A job through the ring is a use of its graph for the registry's LRU
 * order (graphs.max 2), as a socket RUN is: g0 and g1 bound in that order,
 * then g0 run through its slot (no request on the socket), so loading g2
 * evicts g1, not g0. */
START_TEST(test_ring_use_counts_for_lru)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "graphs:\n  max: 2\n", NULL);
    gx_client *c = s_ring_client(&d), *watch = gxt_client(&d);
    gx_graph *g[3];
    gx_graph_id id[3];
    gx_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        g[i] = s_double(GX_F32, 4 + 4 * i);
        x[i] = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4 + 4 * i});
        memset(gx_tensor_data(x[i]), 0, gx_tensor_nbytes(x[i]));
    }
    for (int i = 0; i < 2; i++) { /* loaded and bound, g0 first */
        ck_assert_int_eq(gx_client_load(c, g[i], &id[i]), GX_OK);
        ck_assert_int_eq(s_run_status(c, &id[i], x[i]), GX_OK);
    }
    ck_assert_int_eq(s_run_status(c, &id[0], x[0]), GX_OK);
    ck_assert_int_eq(gxt_stat(watch, "ring.jobs"), 3);
    gxt_wait_stats(watch, "\"runs_ok\":3"); /* every job gone: both graphs idle */
    ck_assert_int_eq(gx_client_load(c, g[2], &id[2]), GX_OK);
    ck_assert_int_eq(gxt_stat(watch, "graphs_loaded"), 2);
    ck_assert_int_eq(s_run_status(c, &id[0], x[0]), GX_OK);
    ck_assert_int_eq(s_run_status(c, &id[1], x[1]), GX_ENOTFOUND); /* the one evicted */
    ck_assert_int_eq(gxt_stat(watch, "ring.jobs"), 5);
    for (int i = 0; i < 3; i++) {
        gx_graph_destroy(&g[i]);
        gx_tensor_destroy(&x[i]);
    }
    gx_client_destroy(&watch);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A submission of the endless graph (bound at slot 1): x [1] at the data
 * area's start, c (true) 64 bytes on. */
static void s_endless(s_raw *r, gx_ring_sqe *e, uint64_t user)
{
    memset(e, 0, sizeof *e);
    e->user = user;
    e->slot = 1;
    e->n_in = 2;
    snprintf(e->in[0].name, sizeof e->in[0].name, "x");
    e->in[0].offset = r->data;
    e->in[0].bytes = 4;
    e->in[0].dtype = GX_F32;
    e->in[0].ndim = 1;
    e->in[0].shape[0] = 1;
    snprintf(e->in[1].name, sizeof e->in[1].name, "c");
    e->in[1].offset = r->data + 64;
    e->in[1].bytes = 1;
    e->in[1].dtype = GX_BOOL;
    r->base[r->data + 64] = 1;
    e->out_offset = r->data + 4096;
    e->out_bytes = 4096;
}

/* A cancel of the submission at index target. */
static void s_cancel_sqe(gx_ring_sqe *e, uint64_t user, uint32_t target)
{
    memset(e, 0, sizeof *e);
    e->op = GX_RING_CANCEL;
    e->user = user;
    e->target = target;
}

/* c (a ring client of a daemon) with the double graph on 4 floats bound
 * at slot 0 and, when endless, the endless graph at slot 1 (bound by a
 * run that expires: it never ends by itself); its raw ring. */
static s_raw s_ring_setup(gx_client *c, bool endless)
{
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    ck_assert_int_eq(s_run_status(c, &id, x), GX_OK);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    if (endless) {
        gxt_endless e;
        gxt_endless_init(&e);
        ck_assert_int_eq(gx_client_load(c, e.g, &id), GX_OK);
        gx_request *rq = gx_request_new();
        gx_request_set_graph_id(rq, &id);
        gx_request_add_input(rq, "x", e.x);
        gx_request_add_input(rq, "c", e.c);
        gx_request_set_deadline_ms(rq, 1);
        gx_result *r = NULL;
        ck_assert_int_eq(gx_client_run(c, rq, &r), GX_ETIMEDOUT);
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
        gxt_endless_fini(&e);
        ck_assert_int_eq(gxt_stat(c, "ring.jobs"), 2); /* both through the ring */
    }
    return s_raw_of(c);
}

/* A ring job may be cancelled as a socket one may: queued, it is taken out
 * and completes GX_ECANCELLED; running, it stops at its next step; each
 * gets exactly one completion, and each cancel one of its own. One worker
 * (--cpus 0) held by the endless job keeps the second job queued. */
START_TEST(test_ring_cancel)
{
    gxt_daemon d;
    gxt_daemon_start(&d, (const char *[]){"--cpus", "0", NULL});
    gx_client *c = s_ring_client(&d), *watch = gxt_client(&d);
    s_raw r = s_ring_setup(c, true);
    const uint32_t t0 = atomic_load(&r.h->sq_tail), m = r.entries - 1;
    ck_assert_uint_ge(r.entries, 4);
    s_endless(&r, &r.sq[t0 & m], 1);
    s_publish(&r, 1);
    gxt_wait_stats(watch, "\"workers_busy\":1");
    /* a job behind it stays queued; cancelled there */
    s_valid(&r, &r.sq[(t0 + 1) & m], 2);
    s_cancel_sqe(&r.sq[(t0 + 2) & m], 3, t0 + 1);
    s_publish(&r, 2);
    s_wait_cq(&r, t0 + 2);
    ck_assert_int_eq(s_cqe(&r, t0, 2, 2)->status, GX_ECANCELLED);
    ck_assert_int_eq(s_cqe(&r, t0, 2, 3)->status, GX_OK);
    ck_assert_str_eq(s_cqe(&r, t0, 2, 3)->message, "cancelled while queued");
    /* the running one */
    s_cancel_sqe(&r.sq[(t0 + 3) & m], 4, t0);
    s_publish(&r, 1);
    s_wait_cq(&r, t0 + 4);
    ck_assert_int_eq(s_cqe(&r, t0, 4, 1)->status, GX_ECANCELLED);
    ck_assert_int_eq(s_cqe(&r, t0, 4, 4)->status, GX_OK);
    atomic_store(&r.h->cq_head, t0 + 4);
    /* answered already, a cancel (not a run), never submitted, an unknown op */
    s_cancel_sqe(&r.sq[(t0 + 4) & m], 5, t0);
    s_cancel_sqe(&r.sq[(t0 + 5) & m], 6, t0 + 2);
    s_cancel_sqe(&r.sq[(t0 + 6) & m], 7, t0 + 1000);
    s_valid(&r, &r.sq[(t0 + 7) & m], 8);
    r.sq[(t0 + 7) & m].op = 99;
    s_publish(&r, 4);
    s_wait_cq(&r, t0 + 8);
    for (uint64_t u = 5; u <= 7; u++)
        ck_assert_int_eq(s_cqe(&r, t0 + 4, 4, u)->status, GX_ENOTFOUND);
    ck_assert_int_eq(s_cqe(&r, t0 + 4, 4, 8)->status, GX_EINVAL);
    atomic_store(&r.h->cq_head, t0 + 8);
    /* both answered (the I/O thread counted them after their one post) */
    gxt_wait_stats(watch, "\"cancelled\":2");
    ck_assert_uint_eq(atomic_load(&r.h->cq_tail), t0 + 8); /* no second completion */
    ck_assert_int_eq(gxt_stat(watch, "ring.cancels"), 5);
    /* the worker is free again */
    s_valid(&r, &r.sq[(t0 + 8) & m], 9);
    const float in[4] = {1, 2, 3, 4};
    memcpy(r.base + r.data, in, sizeof in);
    s_publish(&r, 1);
    s_wait_cq(&r, t0 + 9);
    const gx_ring_cqe *q = s_cqe(&r, t0 + 8, 1, 9);
    ck_assert_int_eq(q->status, GX_OK);
    ck_assert(((const float *)(r.base + q->out[0].offset))[3] == 8);
    ck_assert_int_eq(gxt_stat(watch, "workers_busy"), 0);
    gx_client_destroy(&watch);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* Cancels racing their jobs (each right behind its job, on every worker):
 * whichever wins, the job gets exactly one completion (finished or
 * cancelled) and the cancel one (done or not found). */
START_TEST(test_ring_cancel_race)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_ring_client(&d), *watch = gxt_client(&d);
    s_raw r = s_ring_setup(c, false);
    const uint32_t m = r.entries - 1, pairs = r.entries / 2;
    uint32_t t = atomic_load(&r.h->sq_tail);
    gxt_wait_stats(watch, "\"runs_ok\":1"); /* the set-up's job counted (after its post) */
    const long long runs0 = gxt_stat(watch, "runs_ok") + gxt_stat(watch, "runs_failed");
    int outcome[2][2] = {{0}};
    enum { ROUNDS = 100 };
    for (uint64_t k = 0; k < ROUNDS; k++) {
        for (uint32_t p = 0; p < pairs; p++) {
            uint64_t u = 1000 * (k + 1) + 2 * p;
            s_valid(&r, &r.sq[(t + 2 * p) & m], u);
            s_cancel_sqe(&r.sq[(t + 2 * p + 1) & m], u + 1, t + 2 * p);
        }
        s_publish(&r, 2 * pairs);
        s_wait_cq(&r, t + 2 * pairs);
        for (uint32_t p = 0; p < pairs; p++) {
            uint64_t u = 1000 * (k + 1) + 2 * p;
            int job = s_cqe(&r, t, 2 * pairs, u)->status;
            int cancel = s_cqe(&r, t, 2 * pairs, u + 1)->status;
            ck_assert_msg(job == GX_OK || job == GX_ECANCELLED, "job: %s", gx_status_name(job));
            ck_assert_msg(cancel == GX_OK || cancel == GX_ENOTFOUND, "cancel: %s",
                          gx_status_name(cancel));
            if (job == GX_ECANCELLED) /* only a cancel that found it */
                ck_assert_int_eq(cancel, GX_OK);
            outcome[job == GX_OK][cancel == GX_OK]++;
        }
        t += 2 * pairs;
        atomic_store(&r.h->cq_head, t);
    }
    const long long runs = ROUNDS * pairs;
    while (gxt_stat(watch, "runs_ok") + gxt_stat(watch, "runs_failed") - runs0 < runs)
        usleep(1000); /* the I/O thread counts them after their post; Check bounds it */
    ck_assert_int_eq(gxt_stat(watch, "runs_ok") + gxt_stat(watch, "runs_failed") - runs0, runs);
    ck_assert_uint_eq(atomic_load(&r.h->cq_tail), t); /* nothing posted twice */
    fprintf(stderr, "ring cancel race: finished/not found %d, finished/found %d, cancelled %d\n",
            outcome[1][0], outcome[1][1], outcome[0][1]);
    gx_client_destroy(&watch);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_ring_full)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = s_ring_client(&d);
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *y = s_run(c, &id, x);
    gx_tensor_destroy(&y);
    s_raw r = s_raw_of(c);
    const uint32_t n = r.entries, t0 = atomic_load(&r.h->sq_tail);
    for (uint32_t i = 0; i < n; i++)
        s_valid(&r, &r.sq[(t0 + i) & (n - 1)], 1 + i);
    s_publish(&r, n);
    s_wait_cq(&r, t0 + n); /* the completion queue is full now: nothing is read */
    while (atomic_load(&r.h->sq_head) != t0 + n)
        gx_ring_futex_wait(&r.h->cq_futex, atomic_load(&r.h->cq_futex), 1000);
    for (uint32_t i = 0; i < n; i++) /* the submission slots are free again: fill them */
        s_valid(&r, &r.sq[(t0 + n + i) & (n - 1)], 1 + n + i);
    s_publish(&r, n);
    /* none of the second lot is taken while no completion has room */
    ck_assert_uint_eq(atomic_load(&r.h->sq_head), t0 + n);
    for (uint32_t i = 0; i < n; i++) /* not overwritten: each of the first lot, once */
        ck_assert_int_eq(s_cqe(&r, t0, n, 1 + i)->status, GX_OK);
    ck_assert_uint_eq(atomic_load(&r.h->cq_tail), t0 + n);
    atomic_store(&r.h->cq_head, t0 + n); /* read: room for the rest */
    atomic_fetch_add(&r.h->sq_futex, 1);
    gx_ring_futex_wake(&r.h->sq_futex);
    s_wait_cq(&r, t0 + 2 * n);
    for (uint32_t i = 0; i < n; i++)
        ck_assert_int_eq(s_cqe(&r, t0 + n, n, 1 + n + i)->status, GX_OK);
    ck_assert_int_eq(gxt_stat(c, "ring.hostile"), 0);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

START_TEST(test_ring_killed_client)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    ck_assert_int_eq(gxt_threads(), 1);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* runs the endless graph through the ring until killed */
        char err[256];
        gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
        if (!c)
            _exit(2);
        gx_client_set_ring(c, true);
        gxt_endless e;
        gxt_endless_init(&e);
        gx_graph_id id;
        if (gx_client_load(c, e.g, &id) != GX_OK)
            _exit(3);
        gx_request *rq = gx_request_new();
        gx_request_set_graph_id(rq, &id);
        gx_request_add_input(rq, "x", e.x);
        gx_request_add_input(rq, "c", e.c);
        gx_result *r = NULL;
        gx_client_run(c, rq, &r);
        _exit(4);
    }
    gx_client *watch = gxt_client(&d);
    gx_client_set_ring(watch, false);
    while (gxt_stat(watch, "ring.jobs") < 1) /* (its LOAD came first, on a worker too) */
        usleep(10000);
    gxt_wait_stats(watch, "\"workers_busy\":1"); /* the endless job runs */
    ck_assert_int_eq(gxt_stat(watch, "ring.jobs"), 1);
    ck_assert_int_eq(gxt_stat(watch, "ring.open"), 1);
    kill(pid, SIGKILL);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFSIGNALED(st));
    gxt_wait_stats(watch, "\"workers_busy\":0");
    while (gxt_stat(watch, "ring.open") != 0 || gxt_stat(watch, "shm.regions") != 0)
        usleep(10000); /* the disconnect reaches the daemon; the Check timeout bounds it */
    ck_assert_int_eq(gxt_stat(watch, "ring.closed"), 1);
    /* serves on, through a new ring too */
    gx_client *c = s_ring_client(&d);
    gx_graph *g = s_double(GX_F32, 4);
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, g, &id), GX_OK);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    gx_tensor *y = s_run(c, &id, x);
    ck_assert_int_eq(gxt_stat(watch, "ring.jobs"), 2);
    gx_tensor_destroy(&y);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_ring_identical);
    tcase_add_test(tc, test_ring_outputs_to_socket);
    tcase_add_test(tc, test_ring_many_threads);
    tcase_add_test(tc, test_ring_hostile);
    tcase_add_test(tc, test_ring_urgency_one_rule);
    tcase_add_test(tc, test_ring_bound_evicted);
    tcase_add_test(tc, test_ring_full);
    tcase_add_test(tc, test_ring_use_counts_for_lru);
    tcase_add_test(tc, test_ring_cancel);
    tcase_add_test(tc, test_ring_cancel_race);
    tcase_add_test(tc, test_ring_killed_client);
    suite_add_tcase(s, tc);
    return s;
}
