/*
 * Shared-memory tensors (docs/shm.md): results through regions are the
 * bytes the socket gives; hostile descriptors and registrations get their
 * error and the daemon serves on; a killed client's regions are unmapped;
 * the limits hold; a region truncated under the daemon's mapping is caught.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "core/wire.h"
#include "daemon/shm.h"
#include "libclient/shm.h"
#include "tests/testutil.h"

/* y = x * 2 + 1, x float32 [1, n] */
static gx_graph *s_affine(int64_t n)
{
    gx_graph *g = gx_graph_new("affine");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, n});
    gx_tensor *two = gx_tensor_new(GX_F32, 0, NULL), *one = gx_tensor_new(GX_F32, 0, NULL);
    *(float *)gx_tensor_data(two) = 2.0f;
    *(float *)gx_tensor_data(one) = 1.0f;
    gx_graph_add_const(g, "two", &two);
    gx_graph_add_const(g, "one", &one);
    gx_graph_add_node(g, "Mul", "mul", 2, (const char *[]){"x", "two"}, 1, (const char *[]){"t"});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"t", "one"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    return g;
}

/* y = a @ b (float32 [n, n]), s = i + i (int64 [n]): one output the steps
 * write in place, one copied after the run */
static gx_graph *s_matmul(int64_t n)
{
    gx_graph *g = gx_graph_new("mm");
    gx_graph_add_input(g, "a", GX_F32, 2, (int64_t[]){n, n});
    gx_graph_add_input(g, "b", GX_F32, 2, (int64_t[]){n, n});
    gx_graph_add_input(g, "i", GX_I64, 1, (int64_t[]){n});
    gx_graph_add_node(g, "MatMul", "mm", 2, (const char *[]){"a", "b"}, 1, (const char *[]){"y"});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"i", "i"}, 1, (const char *[]){"s"});
    gx_graph_add_output(g, "y");
    gx_graph_add_output(g, "s");
    return g;
}

static gx_tensor *s_random(gx_dtype dt, int ndim, const int64_t *shape, unsigned seed)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    unsigned char *p = gx_tensor_data(t);
    if (dt == GX_F32) {
        float *f = (float *)p;
        for (int64_t i = 0; i < gx_tensor_numel(t); i++)
            f[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16) / 65536.0f - 0.5f;
    } else {
        int64_t *q = (int64_t *)p;
        for (int64_t i = 0; i < gx_tensor_numel(t); i++)
            q[i] = (int64_t)(seed = seed * 1103515245u + 12345u) - (1 << 30);
    }
    return t;
}

/* The outputs of one run of g with inputs (names[i], ins[i]), as the
 * daemon's bytes: concatenated into one buffer (caller frees). */
static unsigned char *s_run(gx_client *c, const gx_graph *g, int n, const char *const *names,
                            gx_tensor *const *ins, size_t *len)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, g);
    for (int i = 0; i < n; i++)
        gx_request_add_input(rq, names[i], ins[i]);
    gx_result *r = NULL;
    int rc = gx_client_run(c, rq, &r);
    ck_assert_msg(rc == GX_OK, "%s", gx_client_last_error(c));
    *len = 0;
    for (size_t i = 0; i < gx_result_output_count(r); i++)
        *len += gx_tensor_nbytes(gx_result_output(r, i));
    unsigned char *buf = malloc(*len), *at = buf;
    for (size_t i = 0; i < gx_result_output_count(r); i++) {
        const gx_tensor *t = gx_result_output(r, i);
        memcpy(at, gx_tensor_cdata(t), gx_tensor_nbytes(t));
        at += gx_tensor_nbytes(t);
    }
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    return buf;
}

/* The same graphs over the socket, through the client's own region
 * (automatic) and through a region of the caller's (explicit): the same
 * bytes. */
START_TEST(test_shm_results_identical)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *sock = gxt_client(&d), *shm = gxt_client(&d);
    gx_client_set_shm_threshold(sock, SIZE_MAX);
    gx_client_set_shm_threshold(shm, 0);
    const int64_t n = 1 << 20, m = 96;
    gx_graph *ga = s_affine(n), *gm = s_matmul(m);
    gx_tensor *x = s_random(GX_F32, 2, (int64_t[]){1, n}, 1);
    gx_tensor *ab[3] = {s_random(GX_F32, 2, (int64_t[]){m, m}, 2),
                        s_random(GX_F32, 2, (int64_t[]){m, m}, 3),
                        s_random(GX_I64, 1, (int64_t[]){m}, 4)};
    const char *mm_names[] = {"a", "b", "i"};
    size_t la, lb, lm, ln;
    unsigned char *ya = s_run(sock, ga, 1, (const char *[]){"x"}, &x, &la);
    unsigned char *yb = s_run(shm, ga, 1, (const char *[]){"x"}, &x, &lb);
    ck_assert_uint_eq(la, (size_t)n * 4);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ya, yb, la), 0);
    ck_assert_int_eq(gxt_stat(shm, "shm.regions"), 1); /* the automatic path took it */
    unsigned char *ym = s_run(sock, gm, 3, mm_names, ab, &lm);
    unsigned char *yn = s_run(shm, gm, 3, mm_names, ab, &ln);
    ck_assert_uint_eq(lm, ln);
    ck_assert_int_eq(memcmp(ym, yn, lm), 0);

    /* explicit: inputs and outputs in the caller's region, read there */
    char err[256];
    gx_shm *s = gx_shm_new(8 << 20, err, sizeof err);
    ck_assert_msg(s != NULL, "%s", err);
    ck_assert_int_eq(gx_client_shm_register(shm, s), GX_OK);
    unsigned char *base = gx_shm_data(s);
    size_t off = 0, offs[3];
    for (int i = 0; i < 3; i++) {
        offs[i] = off;
        memcpy(base + off, gx_tensor_cdata(ab[i]), gx_tensor_nbytes(ab[i]));
        off += (gx_tensor_nbytes(ab[i]) + 63) & ~(size_t)63;
    }
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, gm);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gx_request_add_input_shm(rq, mm_names[i], gx_tensor_dtype(ab[i]),
                                                  gx_tensor_ndim(ab[i]), gx_tensor_shape(ab[i]),
                                                  s, offs[i]),
                         GX_OK);
    ck_assert_int_eq(gx_request_set_output_shm(rq, s, 4 << 20, 4 << 20), GX_OK);
    gx_result *r = NULL;
    ck_assert_msg(gx_client_run(shm, rq, &r) == GX_OK, "%s", gx_client_last_error(shm));
    ck_assert_uint_eq(gx_result_output_count(r), 2);
    size_t at_y, ny, at_s, ns;
    ck_assert(gx_result_output_shm(r, 0, &at_y, &ny));
    ck_assert(gx_result_output_shm(r, 1, &at_s, &ns));
    ck_assert_ptr_null(gx_result_output(r, 0));
    gx_dtype dt_y = GX_DTYPE_COUNT, dt_s = GX_DTYPE_COUNT;
    int nd_y = -1, nd_s = -1;
    const int64_t *sh_y = gx_result_output_shm_shape(r, 0, &dt_y, &nd_y);
    const int64_t *sh_s = gx_result_output_shm_shape(r, 1, &dt_s, &nd_s);
    ck_assert(sh_y && sh_s);
    ck_assert_int_eq(dt_y, GX_F32);
    ck_assert_int_eq(nd_y, 2);
    ck_assert(sh_y[0] == m && sh_y[1] == m);
    ck_assert_int_eq(dt_s, GX_I64);
    ck_assert_int_eq(nd_s, 1);
    ck_assert(sh_s[0] == m);
    ck_assert_uint_eq(ny + ns, lm);
    ck_assert_uint_ge(at_y, 4 << 20);
    ck_assert_int_eq(memcmp(base + at_y, ym, ny), 0);
    ck_assert_int_eq(memcmp(base + at_s, ym + ny, ns), 0);
    gx_result_destroy(&r);
    /* an area too small for y: y comes back in a frame, s still fits */
    ck_assert_int_eq(gx_request_set_output_shm(rq, s, 4 << 20, ns), GX_OK);
    ck_assert_int_eq(gx_client_run(shm, rq, &r), GX_OK);
    ck_assert(!gx_result_output_shm(r, 0, NULL, NULL));
    ck_assert_ptr_null(gx_result_output_shm_shape(r, 0, NULL, NULL));
    ck_assert(gx_result_output_shm(r, 1, NULL, NULL));
    ck_assert_int_eq(memcmp(gx_tensor_cdata(gx_result_output(r, 0)), ym, ny), 0);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    ck_assert_int_eq(gxt_stat(shm, "shm.regions"), 2);
    ck_assert_int_eq(gx_client_shm_unregister(shm, s), GX_OK);
    ck_assert_int_eq(gxt_stat(shm, "shm.regions"), 1);
    gx_shm_destroy(&s);

    free(ya), free(yb), free(ym), free(yn);
    gx_tensor_destroy(&x);
    for (int i = 0; i < 3; i++)
        gx_tensor_destroy(&ab[i]);
    gx_graph_destroy(&ga);
    gx_graph_destroy(&gm);
    gx_client_destroy(&sock);
    gx_client_destroy(&shm);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* ---- raw requests, for what libgexec never sends ---- */

typedef struct s_msg {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} s_msg;

static void s_begin(s_msg *m, const char *type, size_t extra)
{
    static uint64_t id = 1;
    msgpack_sbuffer_init(&m->sb);
    msgpack_packer_init(&m->pk, &m->sb, msgpack_sbuffer_write);
    msgpack_pack_map(&m->pk, 3 + extra);
    gx_mp_pack_str(&m->pk, "v");
    msgpack_pack_int(&m->pk, GX_PROTOCOL_VERSION);
    gx_mp_pack_str(&m->pk, "type");
    gx_mp_pack_str(&m->pk, type);
    gx_mp_pack_str(&m->pk, "id");
    msgpack_pack_uint64(&m->pk, id++);
}

/* Send m (and one tensor frame when frame is not NULL); the reply's status
 * name into status, its message (or "") into msg. */
static void s_call(void *sock, s_msg *m, const void *frame, size_t flen, char *status, char *msg)
{
    ck_assert_int_ge(zmq_send(sock, m->sb.data, m->sb.size, frame ? ZMQ_SNDMORE : 0), 0);
    if (frame)
        ck_assert_int_ge(zmq_send(sock, frame, flen, 0), 0);
    msgpack_sbuffer_destroy(&m->sb);
    zmq_msg_t rep;
    zmq_msg_init(&rep);
    ck_assert_int_ge(zmq_msg_recv(&rep, sock, 0), 0);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    char err[256];
    ck_assert_int_eq(gx_wire_unpack(zmq_msg_data(&rep), zmq_msg_size(&rep), &up, err, sizeof err),
                     GX_OK);
    const msgpack_object *s = gx_mp_find(&up.data, "status"), *t = gx_mp_find(&up.data, "message");
    snprintf(status, 64, "%.*s", (int)s->via.str.size, s->via.str.ptr);
    snprintf(msg, 1024, "%.*s", t ? (int)t->via.str.size : 0, t ? t->via.str.ptr : "");
    while (zmq_msg_more(&rep)) { /* tensor frames of a RUN reply */
        zmq_msg_close(&rep);
        zmq_msg_init(&rep);
        zmq_msg_recv(&rep, sock, 0);
    }
    zmq_msg_close(&rep);
    msgpack_unpacked_destroy(&up);
}

static void s_expect(const char *status, const char *msg, const char *want, const char *has)
{
    ck_assert_msg(strcmp(status, want) == 0, "wanted %s, got %s: %s", want, status, msg);
    ck_assert_msg(strstr(msg, has) != NULL, "'%s' does not say '%s'", msg, has);
}

static void s_register(void *sock, const char *name, int64_t bytes, char *st, char *msg)
{
    s_msg m;
    s_begin(&m, "SHM_REGISTER", 2);
    gx_mp_pack_str(&m.pk, "region");
    gx_mp_pack_str(&m.pk, name);
    gx_mp_pack_str(&m.pk, "bytes");
    msgpack_pack_int64(&m.pk, bytes);
    s_call(sock, &m, NULL, 0, st, msg);
}

/* RUN of the affine graph (x of n floats) by id: x at (region, off, bytes)
 * or, region NULL, in a frame; an output area when out_region is set;
 * frame_too: a frame as well as the descriptor's region. */
static void s_run_raw(void *sock, const char *gid, int64_t n, const char *region, int64_t off,
                      int64_t bytes, const char *out_region, int64_t out_off, int64_t out_bytes,
                      bool frame_too, char *st, char *msg)
{
    s_msg m;
    s_begin(&m, "RUN", 2 + (out_region != NULL));
    gx_mp_pack_str(&m.pk, "graph_id");
    gx_mp_pack_str(&m.pk, gid);
    gx_mp_pack_str(&m.pk, "inputs");
    msgpack_pack_array(&m.pk, 1);
    gx_wire_shm_ref ref = {.offset = (uint64_t)off, .bytes = (uint64_t)bytes};
    if (region)
        snprintf(ref.region, sizeof ref.region, "%s", region);
    gx_wire_pack_tensor_desc_shm(&m.pk, "x", GX_F32, 2, (int64_t[]){1, n}, region ? &ref : NULL);
    if (out_region) {
        gx_wire_shm_ref o = {.offset = (uint64_t)out_off, .bytes = (uint64_t)out_bytes};
        snprintf(o.region, sizeof o.region, "%s", out_region);
        gx_mp_pack_str(&m.pk, "output_shm");
        gx_wire_pack_shm_ref(&m.pk, &o);
    }
    static float zeros[1024];
    s_call(sock, &m, !region || frame_too ? zeros : NULL, (size_t)n * 4, st, msg);
}

/* A file in /dev/shm of bytes and mode; its name in name. */
static int s_shm_file(char *name, size_t len, const char *tag, size_t bytes, mode_t mode)
{
    snprintf(name, len, "gexec-test-%ld-%s", (long)getpid(), tag);
    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    shm_unlink(path);
    int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, mode), 0); /* past the umask */
    ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
    return fd;
}

static void s_shm_gone(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    shm_unlink(path);
}

/* Hostile registrations and descriptors: each gets its error naming what
 * is wrong, and the daemon serves on. */
START_TEST(test_shm_hostile)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    gx_client *c = gxt_client(&d);
    gx_graph *g = s_affine(256);
    gx_graph_id gid;
    ck_assert_int_eq(gx_client_load(c, g, &gid), GX_OK);
    void *zctx = zmq_ctx_new(), *sock = zmq_socket(zctx, ZMQ_DEALER);
    int linger = 0, tmo = 60000;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    ck_assert_int_eq(zmq_connect(sock, d.endpoint), 0);
    char st[64], msg[1024], good[128], open_[128], trunc[128], other[128];
    int fd = s_shm_file(good, sizeof good, "good", 4096, 0600);
    int fo = s_shm_file(open_, sizeof open_, "open", 4096, 0644);
    int ft = s_shm_file(trunc, sizeof trunc, "trunc", 4096, 0600);

    s_register(sock, "gexec-test-nosuch", 4096, st, msg);
    s_expect(st, msg, "GX_ENOTFOUND", "cannot open");
    s_register(sock, "../etc/passwd", 4096, st, msg);
    s_expect(st, msg, "GX_EINVAL", "not a region name");
    s_register(sock, open_, 4096, st, msg);
    s_expect(st, msg, "GX_EPERM", "others may use it");
    s_register(sock, good, 8192, st, msg);
    s_expect(st, msg, "GX_EINVAL", "fewer than the 8192");
    s_register(sock, good, 0, st, msg);
    ck_assert_str_ne(st, "GX_OK");
    if (geteuid() == 0) { /* another user's region (root may give it away) */
        int fx = s_shm_file(other, sizeof other, "other", 4096, 0600);
        ck_assert_int_eq(fchown(fx, 65534, 65534), 0);
        s_register(sock, other, 4096, st, msg);
        s_expect(st, msg, "GX_EPERM", "belongs to uid 65534");
        close(fx);
        s_shm_gone(other);
    }
    s_register(sock, good, 4096, st, msg);
    s_expect(st, msg, "GX_OK", "");
    s_register(sock, good, 4096, st, msg);
    s_expect(st, msg, "GX_EBUSY", "registered already");
    s_register(sock, trunc, 4096, st, msg);
    s_expect(st, msg, "GX_OK", "");

    s_run_raw(sock, gid.hex, 256, good, 0, 1024, NULL, 0, 0, false, st, msg);
    s_expect(st, msg, "GX_OK", "");
    s_run_raw(sock, gid.hex, 256, good, 3584, 1024, NULL, 0, 0, false, st, msg);
    s_expect(st, msg, "GX_EINVAL", "past its end");
    s_run_raw(sock, gid.hex, 256, good, INT64_MAX - 8, 1024, NULL, 0, 0, false, st, msg);
    ck_assert_str_ne(st, "GX_OK");
    s_run_raw(sock, gid.hex, 256, good, 0, 1000, NULL, 0, 0, false, st, msg);
    s_expect(st, msg, "GX_EINVAL", "dtype and shape need 1024");
    s_run_raw(sock, gid.hex, 256, "gexec-test-unknown", 0, 1024, NULL, 0, 0, false, st, msg);
    s_expect(st, msg, "GX_ENOTFOUND", "not registered by this client");
    s_run_raw(sock, gid.hex, 256, good, 0, 1024, NULL, 0, 0, true, st, msg);
    s_expect(st, msg, "GX_EPROTO", "tensor frames");
    s_run_raw(sock, gid.hex, 256, NULL, 0, 0, good, 4000, 1024, false, st, msg);
    s_expect(st, msg, "GX_EINVAL", "past its end");
    s_run_raw(sock, gid.hex, 256, NULL, 0, 0, good, 0, 4096, false, st, msg);
    s_expect(st, msg, "GX_OK", "");
    /* the library's client is another connection: its regions are not these */
    gx_request *rq = gx_request_new();
    gx_shm fake = {.bytes = 4096};
    snprintf(fake.name, sizeof fake.name, "%s", good);
    gx_request_set_graph_id(rq, &gid);
    gx_request_add_input_shm(rq, "x", GX_F32, 2, (int64_t[]){1, 256}, &fake, 0);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_ENOTFOUND);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    /* truncated after registration: refused at use */
    ck_assert_int_eq(ftruncate(ft, 100), 0);
    s_run_raw(sock, gid.hex, 256, trunc, 0, 1024, NULL, 0, 0, false, st, msg);
    s_expect(st, msg, "GX_EIO", "truncated after SHM_REGISTER");

    s_msg m;
    s_begin(&m, "SHM_UNREGISTER", 1);
    gx_mp_pack_str(&m.pk, "region");
    gx_mp_pack_str(&m.pk, "gexec-test-unknown");
    s_call(sock, &m, NULL, 0, st, msg);
    s_expect(st, msg, "GX_ENOTFOUND", "no region");
    s_begin(&m, "SHM_LIST", 0);
    s_call(sock, &m, NULL, 0, st, msg);
    s_expect(st, msg, "GX_OK", "");
    s_begin(&m, "SHM_UNREGISTER", 0); /* all of this connection's */
    s_call(sock, &m, NULL, 0, st, msg);
    s_expect(st, msg, "GX_OK", "");
    ck_assert_int_eq(gx_client_ping(c), GX_OK);
    ck_assert_int_eq(gxt_stat(c, "shm.regions"), 0);
    ck_assert_int_ge(gxt_stat(c, "shm.refused"), 10);

    zmq_close(sock);
    zmq_ctx_term(zctx);
    close(fd), close(fo), close(ft);
    s_shm_gone(good), s_shm_gone(open_), s_shm_gone(trunc);
    gx_graph_destroy(&g);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* The daemon's mappings of regions named with prefix (/proc/pid/maps). */
static int s_maps_count(pid_t pid, const char *prefix)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, prefix) != NULL;
    fclose(f);
    return n;
}

/* A client killed with two regions registered: the daemon unmaps both. */
START_TEST(test_shm_killed_client)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    /* forked while this process has no client (no ZeroMQ thread) yet */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[256];
        gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
        gx_shm *a = gx_shm_new(1 << 20, err, sizeof err), *b = gx_shm_new(2 << 20, err, sizeof err);
        if (!c || !a || !b || gx_client_shm_register(c, a) != GX_OK ||
            gx_client_shm_register(c, b) != GX_OK)
            _exit(1);
        char ok = 1;
        if (write(pfd[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(pfd[1]);
    char ok = 0;
    ck_assert_int_eq(read(pfd[0], &ok, 1), 1);
    close(pfd[0]);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "/dev/shm/gexec-%ld-", (long)pid);
    ck_assert_int_eq(s_maps_count(d.pid, prefix), 2);
    gx_client *watch = gxt_client(&d);
    ck_assert_int_eq(gxt_stat(watch, "shm.regions"), 2);
    ck_assert_int_eq(gxt_stat(watch, "shm.bytes"), 3 << 20);
    kill(pid, SIGKILL);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    gxt_wait_stats(watch, "\"dropped_disconnected\":2");
    ck_assert_int_eq(gxt_stat(watch, "shm.regions"), 0);
    ck_assert_int_eq(gxt_stat(watch, "shm.bytes"), 0);
    ck_assert_int_eq(s_maps_count(d.pid, prefix), 0);
    /* its files are the client's to remove; the daemon keeps nothing */
    gx_client_destroy(&watch);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    char out[4096];
    gxt_sh(out, sizeof out, "rm -f /dev/shm/gexec-%ld-*", (long)pid);
}
END_TEST

/* limits.shm_regions_per_client and limits.shm_bytes; a client whose own
 * region is refused runs over the socket. */
START_TEST(test_shm_limits)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d, "limits:\n  shm_regions_per_client: 2\n  shm_bytes: 3M\n", NULL);
    gx_client *c = gxt_client(&d);
    char err[256];
    gx_shm *s[4];
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(s[i] = gx_shm_new(i == 3 ? 2 << 20 : 1 << 20, err, sizeof err));
    ck_assert_int_eq(gx_client_shm_register(c, s[0]), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c, s[1]), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c, s[2]), GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(gx_client_last_error(c), "limits.shm_regions_per_client"));
    ck_assert_int_eq(gx_client_shm_unregister(c, s[1]), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c, s[3]), GX_OK); /* 3 MiB in all */
    gx_client *c2 = gxt_client(&d);
    ck_assert_int_eq(gx_client_shm_register(c2, s[2]), GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(gx_client_last_error(c2), "limits.shm_bytes"));
    /* c2's own region (16 MiB) is refused too: its 4 MiB input goes over the socket */
    gx_client_set_shm_threshold(c2, 0);
    gx_graph *g = s_affine(1 << 20);
    gx_tensor *x = s_random(GX_F32, 2, (int64_t[]){1, 1 << 20}, 9);
    size_t len;
    unsigned char *y = s_run(c2, g, 1, (const char *[]){"x"}, &x, &len);
    const float *xp = gx_tensor_cdata(x), *yp = (const float *)y;
    ck_assert_uint_eq(len, 4u << 20);
    for (int i = 0; i < 1 << 20; i += 4099)
        ck_assert_float_eq(yp[i], xp[i] * 2.0f + 1.0f);
    ck_assert_int_eq(gxt_stat(c, "shm.regions"), 2);
    free(y);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    for (int i = 0; i < 4; i++)
        gx_shm_destroy(&s[i]);
    gx_client_destroy(&c);
    gx_client_destroy(&c2);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* limits.shm_regions_per_uid and limits.shm_bytes_per_uid: two
 * connections of one user (this test's) together hit them, each below its
 * own limits.shm_regions_per_client; the refusal names the limit, and the
 * daemon goes on serving both (a region unregistered makes room). */
START_TEST(test_shm_uid_limits)
{
    gxt_daemon d;
    gxt_daemon_start_yaml(&d,
                          "limits:\n  shm_regions_per_client: 2\n  shm_regions_per_uid: 3\n"
                          "  shm_bytes_per_uid: 3M\n  shm_bytes: 16M\n",
                          NULL);
    gx_client *c1 = gxt_client(&d), *c2 = gxt_client(&d);
    char err[256];
    gx_shm *s[5];
    for (int i = 0; i < 5; i++)
        ck_assert_ptr_nonnull(s[i] = gx_shm_new(i == 4 ? 2 << 20 : 1 << 20, err, sizeof err));
    ck_assert_int_eq(gx_client_shm_register(c1, s[0]), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c1, s[1]), GX_OK);
    ck_assert_int_eq(gx_client_shm_register(c2, s[2]), GX_OK);
    /* c2 has 1 of its 2, but the uid has 3 of 3 */
    ck_assert_int_eq(gx_client_shm_register(c2, s[3]), GX_ELIMIT);
    ck_assert_msg(strstr(gx_client_last_error(c2), "limits.shm_regions_per_uid"), "%s",
                  gx_client_last_error(c2));
    ck_assert_int_eq(gx_client_shm_unregister(c1, s[1]), GX_OK);
    /* 2 regions now, 2 MiB: 2 MiB more is past the uid's 3 MiB */
    ck_assert_int_eq(gx_client_shm_register(c2, s[4]), GX_ELIMIT);
    ck_assert_msg(strstr(gx_client_last_error(c2), "limits.shm_bytes_per_uid"), "%s",
                  gx_client_last_error(c2));
    ck_assert_int_eq(gx_client_shm_register(c2, s[3]), GX_OK); /* 1 MiB fits */
    ck_assert_int_eq(gxt_stat(c1, "shm.regions"), 3);
    /* both connections still served: c2's own region for its 1 MiB input
     * is refused too (the uid's 3 regions), so the input goes over the socket */
    gx_graph *g = s_affine(1 << 18);
    gx_tensor *x = s_random(GX_F32, 2, (int64_t[]){1, 1 << 18}, 5);
    size_t len;
    unsigned char *y = s_run(c2, g, 1, (const char *[]){"x"}, &x, &len);
    const float *xp = gx_tensor_cdata(x), *yp = (const float *)y;
    ck_assert_uint_eq(len, 1u << 20);
    for (int i = 0; i < 1 << 18; i += 4099)
        ck_assert_float_eq(yp[i], xp[i] * 2.0f + 1.0f);
    free(y);
    ck_assert_int_eq(gx_client_ping(c1), GX_OK);
    gx_tensor_destroy(&x);
    gx_graph_destroy(&g);
    /* c1 gone: its region goes, and the uid may register again */
    gx_client_destroy(&c1);
    gx_client *c3 = gxt_client(&d);
    gxt_wait_stats(c3, "\"regions\":2");
    ck_assert_int_eq(gx_client_shm_register(c3, s[1]), GX_OK);
    for (int i = 0; i < 5; i++)
        gx_shm_destroy(&s[i]);
    gx_client_destroy(&c2);
    gx_client_destroy(&c3);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* A region truncated while mapped: touching it raises SIGBUS, which the
 * daemon's handler turns into zero pages and a fault mark; the region is
 * refused from then on. In process, so the access is not left to chance. */
START_TEST(test_shm_truncated_while_mapped)
{
    gxd_shm s;
    ck_assert_int_eq(gxd_shm_init(&s, 4, 1 << 20), GX_OK);
    char name[128], err[256];
    int fd = s_shm_file(name, sizeof name, "sigbus", 8192, 0600);
    memset(err, 0, sizeof err);
    ck_assert_msg(gxd_shm_register(&s, "me", 2, getuid(), name, 8192, err, sizeof err) == GX_OK,
                  "%s", err);
    gxd_shm_region *r = gxd_shm_find(&s, "me", 2, name);
    ck_assert_ptr_nonnull(r);
    void *p;
    ck_assert_int_eq(gxd_shm_slice(r, 4096, 4096, &p, err, sizeof err), GX_OK);
    ((volatile char *)p)[0] = 7;
    ck_assert(!gxd_shm_faulted(r));
    uint64_t before = gxd_shm_faults();
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    ck_assert_int_eq(((volatile char *)p)[0], 0); /* SIGBUS, caught */
    ((volatile char *)p)[100] = 1;                 /* and writes land too */
    ck_assert(gxd_shm_faulted(r));
    ck_assert_uint_eq(gxd_shm_faults(), before + 1);
    ck_assert_int_eq(gxd_shm_slice(r, 0, 16, &p, err, sizeof err), GX_EIO);
    ck_assert_ptr_nonnull(strstr(err, "truncated while the daemon had it mapped"));
    size_t n;
    ck_assert_int_eq(gxd_shm_unregister(&s, "me", 2, NULL, &n), GX_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(atomic_load(&s.mapped), 1); /* r's reference */
    gxd_shm_region_release(&r);
    ck_assert_uint_eq(atomic_load(&s.mapped), 0);
    gxd_shm_fini(&s);
    close(fd);
    s_shm_gone(name);
}
END_TEST

Suite *shm_suite(void)
{
    Suite *s = suite_create("shm");
    TCase *tc = tcase_create("shm");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_shm_results_identical);
    tcase_add_test(tc, test_shm_hostile);
    tcase_add_test(tc, test_shm_killed_client);
    tcase_add_test(tc, test_shm_limits);
    tcase_add_test(tc, test_shm_uid_limits);
    tcase_add_test(tc, test_shm_truncated_while_mapped);
    suite_add_tcase(s, tc);
    return s;
}
