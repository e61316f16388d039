/*
 * bench_shm: end-to-end time of one job through gexecd with its tensors
 * over the socket, through the client's own shared-memory region (the
 * automatic path) and through a region of the caller's with the outputs
 * read in place (explicit), against a plain memcpy of the same bytes
 * (docs/shm.md). Two models: a 1024x1024 float32 MatMul (8 MiB in, 4 MiB
 * out) and a 4 MiB elementwise y = x * 2 + 1. Median of N runs after a
 * warm-up.
 *
 *     bench_shm [runs]        (default 50)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"

static const char *s_prog = "bench_shm";

typedef struct s_model {
    const char *what;
    gx_graph *g;
    int n_in;
    const char *names[2];
    gx_tensor *in[2];
    size_t out_bytes;
} s_model;

static gx_tensor *s_fill(int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    float *p = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        p[i] = (float)(i % 97) / 97.0f;
    return t;
}

static void s_models(s_model m[2])
{
    const int64_t n = 1024, sq[2] = {n, n}, flat[2] = {1, 1 << 20};
    m[0] = (s_model){.what = "matmul 1024x1024", .g = gx_graph_new("mm"), .n_in = 2,
                     .names = {"a", "b"}, .out_bytes = (size_t)n * n * 4};
    gx_graph_add_input(m[0].g, "a", GX_F32, 2, sq);
    gx_graph_add_input(m[0].g, "b", GX_F32, 2, sq);
    gx_graph_add_node(m[0].g, "MatMul", "mm", 2, (const char *[]){"a", "b"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(m[0].g, "y");
    m[0].in[0] = s_fill(2, sq);
    m[0].in[1] = s_fill(2, sq);
    m[1] = (s_model){.what = "elementwise 4 MiB", .g = gx_graph_new("affine"), .n_in = 1,
                     .names = {"x"}, .out_bytes = 4u << 20};
    gx_graph_add_input(m[1].g, "x", GX_F32, 2, flat);
    gx_tensor *two = gx_tensor_new(GX_F32, 0, NULL), *one = gx_tensor_new(GX_F32, 0, NULL);
    *(float *)gx_tensor_data(two) = 2.0f;
    *(float *)gx_tensor_data(one) = 1.0f;
    gx_graph_add_const(m[1].g, "two", &two);
    gx_graph_add_const(m[1].g, "one", &one);
    gx_graph_add_node(m[1].g, "Mul", "mul", 2, (const char *[]){"x", "two"}, 1,
                      (const char *[]){"t"});
    gx_graph_add_node(m[1].g, "Add", "add", 2, (const char *[]){"t", "one"}, 1,
                      (const char *[]){"y"});
    gx_graph_add_output(m[1].g, "y");
    m[1].in[0] = s_fill(2, flat);
}

/* Median µs of runs jobs of m on c: by value (socket or the automatic
 * region, as c's threshold says), or with shm: inputs and outputs in it. */
static double s_time(gx_client *c, const s_model *m, const gx_graph_id *id, gx_shm *shm,
                     int runs)
{
    gx_request *rq = gx_request_new();
    gx_request_set_graph_id(rq, id);
    size_t off = 0;
    for (int i = 0; i < m->n_in; i++) {
        const gx_tensor *t = m->in[i];
        if (!shm) {
            gx_request_add_input(rq, m->names[i], t);
            continue;
        }
        memcpy((char *)gx_shm_data(shm) + off, gx_tensor_cdata(t), gx_tensor_nbytes(t));
        gx_request_add_input_shm(rq, m->names[i], GX_F32, gx_tensor_ndim(t), gx_tensor_shape(t),
                                 shm, off);
        off += gx_tensor_nbytes(t);
    }
    if (shm)
        gx_request_set_output_shm(rq, shm, off, m->out_bytes);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = -3; r < runs; r++) {
        gx_result *res = NULL;
        double t0 = gxb_now_us();
        if (gx_client_run(c, rq, &res) != GX_OK)
            gxb_die(s_prog, m->what, gx_client_last_error(c));
        if (shm && !gx_result_output_shm(res, 0, NULL, NULL))
            gxb_die(s_prog, m->what, "the output did not land in the region");
        if (r >= 0)
            t[r] = gxb_now_us() - t0;
        gx_result_destroy(&res);
    }
    double med = gxb_median(t, (size_t)runs);
    free(t);
    gx_request_destroy(&rq);
    return med;
}

/* Median µs of copying bytes once with memcpy (what sending them costs at
 * the least: a copy in and one out). */
static double s_memcpy(size_t bytes, int runs)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = -3; r < runs; r++) {
        double t0 = gxb_now_us();
        memcpy(b, a, bytes);
        __asm__ volatile("" : : "r"(b) : "memory");
        if (r >= 0)
            t[r] = gxb_now_us() - t0;
    }
    double med = gxb_median(t, (size_t)runs);
    free(t);
    free(a);
    free(b);
    return med;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 50;
    if (runs < 1)
        runs = 50;
    gxb_daemon d;
    gxb_daemon_start(&d, s_prog, NULL);
    char err[256];
    gx_client *sock = gx_client_new(d.endpoint, err, sizeof err),
              *aut = gx_client_new(d.endpoint, err, sizeof err),
              *exp = gx_client_new(d.endpoint, err, sizeof err);
    if (!sock || !aut || !exp)
        gxb_die(s_prog, "client", err);
    gx_client_set_shm_threshold(sock, SIZE_MAX);
    gx_client_set_shm_threshold(aut, 0);
    gx_client_set_shm_threshold(exp, SIZE_MAX);
    gxb_stats st;
    gxb_stats_read(sock, &st);
    printf("bench_shm: gexecd %s, %s workers, %s; median of %d runs\n", st.version, st.workers,
           st.topology, runs);
    gx_shm *shm = gx_shm_new(16 << 20, err, sizeof err);
    if (!shm || gx_client_shm_register(exp, shm) != GX_OK)
        gxb_die(s_prog, "region", shm ? gx_client_last_error(exp) : err);
    s_model m[2];
    s_models(m);
    printf("%-20s %10s %10s %10s %10s %12s\n", "model", "bytes", "socket", "shm auto",
           "shm expl", "memcpy in+out");
    for (int i = 0; i < 2; i++) {
        gx_graph_id id;
        if (gx_client_load(sock, m[i].g, &id) != GX_OK)
            gxb_die(s_prog, "load", gx_client_last_error(sock));
        size_t bytes = m[i].out_bytes;
        for (int k = 0; k < m[i].n_in; k++)
            bytes += gx_tensor_nbytes(m[i].in[k]);
        double ts = s_time(sock, &m[i], &id, NULL, runs);
        double ta = s_time(aut, &m[i], &id, NULL, runs);
        double te = s_time(exp, &m[i], &id, shm, runs);
        double tm = s_memcpy(bytes, runs);
        printf("%-20s %9.1fM %8.0fus %8.0fus %8.0fus %10.0fus\n", m[i].what,
               (double)bytes / (1 << 20), ts, ta, te, tm);
        gx_graph_destroy(&m[i].g);
        for (int k = 0; k < m[i].n_in; k++)
            gx_tensor_destroy(&m[i].in[k]);
    }
    gx_client_shm_unregister(exp, shm);
    gx_shm_destroy(&shm);
    gx_client_destroy(&sock);
    gx_client_destroy(&aut);
    gx_client_destroy(&exp);
    gxb_daemon_stop(&d);
    return 0;
}
