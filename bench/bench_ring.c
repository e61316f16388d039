/*
 * bench_ring: round trip of a tiny job (y = x + x on 4 float32) through
 * gexecd's shared-memory submission/completion ring, through the ZeroMQ
 * socket, and the floor of the socket: a bare ZeroMQ ipc REQ/REP between
 * two processes with a 16-byte message, no gexec at all. All in one run,
 * on one daemon; p50 and p90 of N round trips after a warm-up
 * (docs/shm.md, "Ring"; issue 16's goal: ring p50 under 20 us).
 *
 *     bench_ring [runs [ring|socket|floor]]   (default 5000, all three)
 *
 * One of the three alone (with perf stat, say: context switches per job).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench/benchutil.h"

static const char *s_prog = "bench_ring";

static void s_print(const char *what, double *t, int n)
{
    gxb_sort(t, (size_t)n);
    printf("  %-34s p50 %7.1f us   p90 %7.1f us\n", what, gxb_pct(t, (size_t)n, 50),
           gxb_pct(t, (size_t)n, 90));
}

/* The tiny job through c (ring or socket, as c is set), timed. */
static void s_jobs(gx_client *c, const gx_graph_id *id, const char *what, int runs)
{
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){1, 4});
    for (int i = 0; i < 4; i++)
        ((float *)gx_tensor_data(x))[i] = (float)i;
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    gx_request_add_input(rq, "x", x);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = -200; r < runs; r++) {
        gx_result *res = NULL;
        double t0 = gxb_now_us();
        if (gx_client_run(c, rq, &res) != GX_OK)
            gxb_die(s_prog, what, gx_client_last_error(c));
        if (r >= 0)
            t[r] = gxb_now_us() - t0;
        const float *y = gx_tensor_cdata(gx_result_output(res, 0));
        if (y[3] != 6.0f)
            gxb_die(s_prog, what, "wrong result");
        gx_result_destroy(&res);
    }
    s_print(what, t, runs);
    free(t);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&x);
}

/* A bare ZeroMQ ipc REQ/REP round trip between this process and a child. */
static void s_zmq_floor(const char *dir, int runs)
{
    char ep[160];
    snprintf(ep, sizeof ep, "ipc://%s/floor.sock", dir);
    pid_t pid = fork();
    if (pid == 0) {
        void *ctx = zmq_ctx_new(), *rep = zmq_socket(ctx, ZMQ_REP);
        char buf[64];
        if (zmq_bind(rep, ep) != 0)
            _exit(1);
        for (;;) {
            int n = zmq_recv(rep, buf, sizeof buf, 0);
            if (n < 0 || zmq_send(rep, buf, (size_t)n, 0) < 0)
                _exit(0);
        }
    }
    void *ctx = zmq_ctx_new(), *req = zmq_socket(ctx, ZMQ_REQ);
    zmq_connect(req, ep);
    char msg[16] = "ping", buf[64];
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = -200; r < runs; r++) {
        double t0 = gxb_now_us();
        if (zmq_send(req, msg, sizeof msg, 0) < 0 || zmq_recv(req, buf, sizeof buf, 0) < 0)
            gxb_die(s_prog, "zmq floor", zmq_strerror(zmq_errno()));
        if (r >= 0)
            t[r] = gxb_now_us() - t0;
    }
    s_print("bare ZeroMQ ipc REQ/REP (floor)", t, runs);
    free(t);
    zmq_close(req);
    zmq_ctx_term(ctx);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5000;
    if (runs < 10)
        runs = 10;
    const char *only = argc > 2 ? argv[2] : "";
    if (*only && strcmp(only, "ring") != 0 && strcmp(only, "socket") != 0 &&
        strcmp(only, "floor") != 0)
        gxb_die(s_prog, only, "not one of ring, socket, floor");
    gxb_daemon d;
    gxb_daemon_start(&d, s_prog, NULL);
    char err[256];
    gx_client *sock = gx_client_new(d.endpoint, err, sizeof err),
              *ring = gx_client_new(d.endpoint, err, sizeof err);
    if (!sock || !ring)
        gxb_die(s_prog, "client", err);
    gx_client_set_ring(sock, false);
    gx_client_set_ring(ring, true);
    gxb_stats st;
    gxb_stats_read(sock, &st);
    printf("bench_ring: gexecd %s, %s workers, %s; %d round trips each\n", st.version,
           st.workers, st.topology, runs);
    gx_graph *g = gx_graph_new("tiny");
    gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1, 4});
    gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(g, "y");
    gx_graph_id id;
    if (gx_client_load(sock, g, &id) != GX_OK)
        gxb_die(s_prog, "load", gx_client_last_error(sock));
    if (!*only || strcmp(only, "ring") == 0)
        s_jobs(ring, &id, "tiny graph, shared-memory ring", runs);
    if (!*only || strcmp(only, "socket") == 0)
        s_jobs(sock, &id, "tiny graph, ZeroMQ socket", runs);
    if (!*only || strcmp(only, "floor") == 0)
        s_zmq_floor(d.dir, runs);
    gx_graph_destroy(&g);
    gx_client_destroy(&ring);
    gx_client_destroy(&sock);
    gxb_daemon_stop(&d);
    return 0;
}
