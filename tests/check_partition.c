/*
 * The partition pass (seed 000): device rules, the two passes, the seed's
 * pruning of subgraphs with several inputs or outputs, the minimum size,
 * preference order, copies on crossing edges, the reasons recorded, and
 * that the default (the CPU alone) leaves plans exactly as they were.
 *
 * Test devices run on the host (their kernels are the CPU's), so every
 * partitioned plan also runs, and must give the CPU plan's results.
 */
#include <config.h>

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/arenas.h"
#include "daemon/compile/compile.h"
#include "daemon/config.h"
#include "daemon/exec/exec.h"
#include "ops/cpu/cpu.h"
#include "ops/schema.h"
#ifdef HAVE_CUDA
#include "ops/cuda/cuda.h"
#endif
#include "tests/testdev.h"
#include "tests/testutil.h"

/* ---- test backends ------------------------------------------------------ */

static bool s_last_axis(const gx_rule_ctx *rc, char *why, size_t len)
{
    const gx_attrval *a = gx_rule_attr(rc, "axis");
    if (a && a->i != -1 && a->i != rc->in[0].ndim - 1) {
        snprintf(why, len, "axis %lld is not the last axis", (long long)a->i);
        return false;
    }
    return true;
}

static const gx_op_rule s_t1_rules[] = {
    {GX_OP_RELU, GX_DT(F32), 0, NULL, "t1lib"},  {GX_OP_EXP, GX_DT(F32), 0, NULL, "t1lib"},
    {GX_OP_SIGMOID, GX_DT(F32), 0, NULL, "t1lib"}, {GX_OP_TANH, GX_DT(F32), 0, NULL, "t1lib"},
    {GX_OP_ADD, GX_DT(F32), 0, NULL, "t1lib"},   {GX_OP_MUL, GX_DT(F32), 0, NULL, "t1lib"},
    {GX_OP_SOFTMAX, GX_DT(F32), 0, s_last_axis, "t1lib"},
};
/* Devices sharing the host's memory (no copies between them and the CPU):
 * arenas from the heap. */
static void *s_alloc(const gx_backend *b, size_t bytes)
{
    (void)b;
    return gx_aligned_alloc(bytes ? bytes : 1);
}

static void s_free(const gx_backend *b, void *p)
{
    (void)b;
    free(p);
}

static void s_fused(const gx_backend *b, const gx_fused *f, const gx_kargs *k)
{
    (void)b;
    gx_cpu_fused(f, k->in, &k->out[0], k->scratch, k->ith, k->nth);
}

#define S_HOST_DEVICE(nm, table)                                                               \
    {                                                                                          \
        .name = nm, .rules = table, .n_rules = sizeof table / sizeof table[0],                 \
        .kernel = gx_cpu_kernel, .fused = s_fused, .shares = true, .exact_slices = true,       \
        .host_memory = true, .alloc = s_alloc, .free = s_free                                  \
    }

static const gx_backend s_t1 = S_HOST_DEVICE("t1", s_t1_rules);

static const gx_op_rule s_t2_rules[] = {
    {GX_OP_EXP, GX_DT(F32), 0, NULL, "t2lib"},
    {GX_OP_NEG, GX_DT(F32), 0, NULL, "t2lib"},
    {GX_OP_RELU, GX_DT(F32), 0, NULL, "t2lib"},
};
static const gx_backend s_t2 = S_HOST_DEVICE("t2", s_t2_rules);

static gxd_partition_opts s_opts(const gx_backend *a, const gx_backend *b, int min_nodes)
{
    gxd_partition_opts o = {.min_nodes = min_nodes};
    if (a)
        o.backends[o.n_backends++] = a;
    if (b)
        o.backends[o.n_backends++] = b;
    return o;
}

/* ---- graphs ------------------------------------------------------------- */

#define S_R 4
#define S_C 8
#define S_N (S_R * S_C)

static gx_node *s_op(gx_graph *g, const char *op, const char *out, const char *a, const char *b)
{
    const char *in[2] = {a, b};
    return gx_graph_add_node(g, op, out, b ? 2 : 1, in, 1, (const char *[]){out});
}

static gx_graph *s_graph(const char *name, int n_in)
{
    gx_graph *g = gx_graph_new(name);
    int64_t s[2] = {S_R, S_C};
    gx_graph_add_input(g, "x", GX_F32, 2, s);
    if (n_in > 1)
        gx_graph_add_input(g, "y", GX_F32, 2, s);
    return g;
}

/* x -> a Relu -> b MatMul(a, w) -> c Neg -> d Sigmoid -> e Tanh -> (out e):
 * w a constant [S_C, S_C] whose values repeat every `period`. */
static gx_graph *s_matmul_chain(const char *name, int period)
{
    gx_graph *g = s_graph(name, 1);
    int64_t ws[2] = {S_C, S_C};
    gx_tensor *w = gx_tensor_new(GX_F32, 2, ws);
    float *wd = gx_tensor_data(w);
    for (int i = 0; i < S_C * S_C; i++)
        wd[i] = (float)(i % period) * 0.125f - 0.25f;
    gx_graph_add_const(g, "w", &w);
    s_op(g, "Relu", "a", "x", NULL);
    s_op(g, "MatMul", "b", "a", "w");
    s_op(g, "Neg", "c", "b", NULL);
    s_op(g, "Sigmoid", "d", "c", NULL);
    s_op(g, "Tanh", "e", "d", NULL);
    gx_graph_add_output(g, "e");
    return g;
}

typedef struct s_case {
    gx_graph *g;
    gx_view in[2];
    float data[2][S_N];
    gxd_plan *p;
    char err[512];
} s_case;

static void s_inputs(s_case *c, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        for (int i = 0; i < S_N; i++)
            c->data[k][i] = (float)((i * 7 + (int)k * 3) % 11) / 5.0f - 1.0f;
        c->in[k] = (gx_view){.dtype = GX_F32, .ndim = 2, .shape = {S_R, S_C}, .numel = S_N,
                             .data = c->data[k]};
    }
}

static int s_compile(s_case *c, const gxd_partition_opts *o)
{
    /* fusion off: the tests find each node's own step (test_fusion_stays_on_one_device
     * has it on) */
    gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                              .max_arena_bytes = 256ll << 20, .part = o, .no_fuse = true};
    return gxd_compile(c->g, c->in, &lim, &c->p, c->err, sizeof c->err);
}

/* The step that runs node `name`, -1 if none. */
static int s_step(const gxd_plan *p, const char *name)
{
    for (size_t i = 0; i < p->n_steps; i++)
        if (!p->steps[i].copy && strcmp(p->steps[i].node->name, name) == 0)
            return (int)i;
    return -1;
}

static const char *s_dev(const gxd_plan *p, const char *name)
{
    int s = s_step(p, name);
    ck_assert_msg(s >= 0, "no step for node %s", name);
    return p->devices[p->steps[s].device]->name;
}

static int s_part(const gxd_plan *p, const char *name)
{
    int s = s_step(p, name);
    ck_assert_msg(s >= 0, "no step for node %s", name);
    return p->steps[s].part;
}

/* The reason recorded for node `name` on device `dev`, NULL if none. */
static const char *s_why(const gxd_plan *p, const char *name, const char *dev)
{
    for (size_t i = 0; i < p->n_fell; i++) {
        const gxd_step *s = &p->steps[p->fell[i].step];
        if (strcmp(s->node->name, name) == 0 &&
            strcmp(p->devices[p->fell[i].device]->name, dev) == 0)
            return p->fell[i].why;
    }
    return NULL;
}

static void s_assert_why(const gxd_plan *p, const char *name, const char *dev, const char *has)
{
    const char *why = s_why(p, name, dev);
    ck_assert_msg(why, "no reason recorded for %s on %s", name, dev);
    ck_assert_msg(strstr(why, has), "%s on %s: reason '%s' lacks '%s'", name, dev, why, has);
}

/* Partition `part` has exactly the nodes listed (NULL-terminated), on dev,
 * with the given entry and exit nodes. */
static void s_assert_part(const gxd_plan *p, const char *dev, const char *entry,
                          const char *exit, const char *const *nodes)
{
    int part = s_part(p, nodes[0]), n = 0;
    ck_assert_int_ge(part, 0);
    for (; nodes[n]; n++) {
        ck_assert_msg(s_part(p, nodes[n]) == part, "%s is not in the partition of %s", nodes[n],
                      nodes[0]);
        ck_assert_str_eq(s_dev(p, nodes[n]), dev);
    }
    const gxd_part *pt = &p->parts[part];
    ck_assert_int_eq(pt->n_steps, n);
    ck_assert_str_eq(p->devices[pt->device]->name, dev);
    ck_assert_int_eq(pt->n_entries, entry ? 1 : 0);
    ck_assert_int_eq(pt->n_exits, 1);
    if (entry)
        ck_assert_str_eq(p->steps[pt->entry].node->name, entry);
    ck_assert_str_eq(p->steps[pt->exit].node->name, exit);
}

/* Copies sit on exactly the edges between devices: a copy step moves a
 * value to another device than its producer's, every other step reads
 * values of its own device (graph inputs: the fallback's; constants: any),
 * graph outputs are on the fallback; and there are no two copies of one
 * value to one device. Returns the number of copies. */
static size_t s_assert_copies(const gxd_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in; k++) {
            int v = s->in[k];
            if (v < 0)
                continue;
            int d = p->values[v].def;
            int from = d >= 0 && !p->steps[d].folded ? p->steps[d].device
                       : p->values[v].kind == GXD_VALUE_INPUT ? 0 : -1;
            if (from < 0)
                continue;
            if (s->copy)
                ck_assert_msg(from != s->device, "copy step %zu does not cross devices", i);
            else
                ck_assert_msg(from == s->device, "step %zu (%s) reads '%s' from device %d on %d",
                              i, s->node->name, p->values[v].name, from, s->device);
        }
        if (s->copy) {
            n++;
            ck_assert_int_eq(s->part, -1);
            for (size_t j = i + 1; j < p->n_steps; j++)
                ck_assert(!(p->steps[j].copy && p->steps[j].in[0] == s->in[0] &&
                            p->steps[j].device == s->device));
        }
    }
    for (size_t o = 0; o < p->n_outputs; o++) {
        int d = p->values[p->outputs[o]].def;
        ck_assert(d < 0 || p->steps[d].device == 0);
    }
    ck_assert_uint_eq(n, p->n_copies);
    return n;
}

/* Runs p on inputs in over arenas in its step-order layout, then (when it
 * has one) in its DAG layout, which must give the same outputs; out: the
 * first's, S_N floats each (a float16 output converted). */
static void s_exec(const gxd_plan *p, const gx_view *in, float out[][S_N])
{
    gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                              .max_arena_bytes = 256ll << 20};
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    for (int dag = 0; dag <= (int)p->dag_ok; dag++) {
        void *arena = gx_aligned_alloc((dag ? p->dag_arena_bytes : p->arena_bytes) + 1);
        gxd_frame f;
        char err[256];
        ck_assert_int_eq(gxd_frame_init_ex(&f, p, arena, dag, in, &lim, &stop, err, sizeof err),
                         GX_OK);
        ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
        for (size_t o = 0; o < p->n_outputs; o++) {
            const gx_view *v = gxd_frame_output(&f, o);
            ck_assert_int_eq(v->numel, S_N);
            float y[S_N];
            for (int i = 0; i < S_N; i++)
                y[i] = (float)gx_cpu_load_f64(v->data, v->dtype, i);
            if (dag)
                ck_assert(memcmp(out[o], y, sizeof y) == 0);
            else
                memcpy(out[o], y, sizeof y);
        }
        gxd_frame_fini(&f);
        free(arena);
    }
}

/* The partitioned plan computes what the CPU's does, bit for bit (the
 * test devices run the CPU's kernels), or within tol of it where the
 * CPU's own steps run other kernels (a MatMul's packed one). */
static void s_assert_close_results(s_case *c, float tol)
{
    s_case cpu = *c;
    cpu.p = NULL;
    ck_assert_msg(s_compile(&cpu, NULL) == GX_OK, "%s", cpu.err);
    ck_assert_uint_eq(cpu.p->n_outputs, c->p->n_outputs);
    float a[20][S_N], b[20][S_N];
    ck_assert_uint_le(c->p->n_outputs, 20);
    s_exec(c->p, c->in, a);
    s_exec(cpu.p, c->in, b);
    for (size_t o = 0; o < c->p->n_outputs; o++)
        for (int i = 0; i < S_N; i++)
            ck_assert_msg(tol ? fabsf(a[o][i] - b[o][i]) <= tol : a[o][i] == b[o][i] ||
                                                                      (a[o][i] != a[o][i] &&
                                                                       b[o][i] != b[o][i]),
                          "output %zu [%d]: %g vs %g", o, i, a[o][i], b[o][i]);
    gxd_plan_destroy(&cpu.p);
}

static void s_assert_same_results(s_case *c)
{
    s_assert_close_results(c, 0);
}

static void s_done(s_case *c)
{
    gxd_plan_destroy(&c->p);
    gx_graph_destroy(&c->g);
}

/* ---- backend rules ------------------------------------------------------ */

/* The CUDA backend claims what its kernels run (ops/cuda/rules.c), and
 * here (no GPU opened in a test process; a build without CUDA declares
 * the rules only) it cannot run plans. */
START_TEST(test_cuda_rules)
{
    const gx_backend *cuda = gx_backend_cuda();
    char why[400];
    ck_assert_ptr_eq(gx_backend_find("cuda"), cuda);
    ck_assert_ptr_eq(gx_backend_find("cpu"), gx_backend_cpu());
    ck_assert_ptr_null(gx_backend_find("tpu"));
    ck_assert(!gx_backend_runnable(cuda, why, sizeof why));
    ck_assert_msg(strstr(why, "declared only") || strstr(why, "no CUDA device"), "%s", why);
    ck_assert(gx_backend_runnable(gx_backend_cpu(), why, sizeof why));
    ck_assert(gx_backend_lists(cuda, GX_OP_MATMUL));
    ck_assert(gx_backend_lists(cuda, GX_OP_RELU));
    /* Conv only with cuDNN (HAVE_CUDNN), which pads symmetrically */
    ck_assert(gx_backend_lists(cuda, GX_OP_CONV) == gx_backend_lists(cuda, GX_OP_BATCHNORM));
    if (gx_backend_lists(cuda, GX_OP_CONV)) {
        gx_attrval ca[GX_MAX_ATTRS] = {0};
        const int64_t pads[4] = {0, 0, 1, 1};
        ca[GX_CONV_GROUP].i = 1;
        ca[GX_WIN_PADS] = (gx_attrval){.set = true, .ints = pads, .n = 4};
        gx_view cv[3] = {{.dtype = GX_F32, .ndim = 4, .shape = {1, 2, 5, 5}},
                         {.dtype = GX_F32, .ndim = 4, .shape = {3, 2, 3, 3}},
                         {.dtype = GX_F32, .ndim = 4, .shape = {1, 3, 4, 4}}};
        gx_rule_ctx crc = {GX_OP_CONV, ca, 2, cv, 1, &cv[2]};
        ck_assert(!gx_backend_accepts(cuda, &crc, why, sizeof why));
        ck_assert_msg(strstr(why, "cuDNN") && strstr(why, "symmetric"), "%s", why);
    }
    ck_assert(!gx_backend_lists(cuda, GX_OP_NON_MAX_SUPPRESSION));
    ck_assert(gx_backend_lists(gx_backend_cpu(), GX_OP_NON_MAX_SUPPRESSION));

    /* MatMul: rank 1 operands are not cuBLAS's; batch dimensions must match
     * unless one operand is a matrix; float32 only */
    gx_attrval attr[GX_MAX_ATTRS] = {0};
    gx_view mm[3] = {{.dtype = GX_F32, .ndim = 1, .shape = {4}},
                     {.dtype = GX_F32, .ndim = 2, .shape = {4, 3}},
                     {.dtype = GX_F32, .ndim = 1, .shape = {3}}};
    gx_rule_ctx mrc = {GX_OP_MATMUL, attr, 2, mm, 1, &mm[2]};
    ck_assert(!gx_backend_accepts(cuda, &mrc, why, sizeof why));
    ck_assert_msg(strstr(why, "cuBLAS") && strstr(why, "rank"), "%s", why);
    mm[0].ndim = 2;
    ck_assert(gx_backend_accepts(cuda, &mrc, why, sizeof why));
    mm[0] = (gx_view){.dtype = GX_F32, .ndim = 3, .shape = {2, 5, 4}};
    mm[1] = (gx_view){.dtype = GX_F32, .ndim = 3, .shape = {3, 4, 3}};
    ck_assert(!gx_backend_accepts(cuda, &mrc, why, sizeof why));
    ck_assert_msg(strstr(why, "batch"), "%s", why);
    mm[1].shape[0] = 2;
    ck_assert(gx_backend_accepts(cuda, &mrc, why, sizeof why));
    mm[0].dtype = mm[1].dtype = mm[2].dtype = GX_F64;
    ck_assert(!gx_backend_accepts(cuda, &mrc, why, sizeof why));
    ck_assert_msg(strstr(why, "float64"), "%s", why);
    ck_assert(gx_backend_accepts(gx_backend_cpu(), &mrc, why, sizeof why));

    /* Softmax: the last axis only */
    gx_view sm[2] = {{.dtype = GX_F32, .ndim = 2, .shape = {4, 3}},
                     {.dtype = GX_F32, .ndim = 2, .shape = {4, 3}}};
    gx_rule_ctx src = {GX_OP_SOFTMAX, attr, 1, sm, 1, &sm[1]};
    attr[GX_SOFTMAX_AXIS].i = -1;
    ck_assert(gx_backend_accepts(cuda, &src, why, sizeof why));
    attr[GX_SOFTMAX_AXIS].i = 0;
    ck_assert(!gx_backend_accepts(cuda, &src, why, sizeof why));
    ck_assert_msg(strstr(why, "last axis"), "%s", why);
}
END_TEST

/* The daemon cannot offer CUDA here: a compile asked to use it says why. */
START_TEST(test_cuda_not_offered)
{
    s_case c = {.g = s_graph("cuda", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    gx_graph_add_output(c.g, "a");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(gx_backend_cuda(), NULL, 2);
    ck_assert_int_eq(s_compile(&c, &o), GX_EINVAL);
    ck_assert_msg(strstr(c.err, "declared only") || strstr(c.err, "no CUDA device"), "%s",
                  c.err);
    ck_assert_ptr_null(c.p);
    s_done(&c);
}
END_TEST

#ifdef HAVE_CUDA
/* cuBLAS is loaded when a GPU is opened, never linked (its initialisers
 * would cost every process about a second): loading needs no GPU, finds
 * every entry point the kernels call, and happens once. */
START_TEST(test_cuda_blas_load)
{
    char why[256] = "";
    ck_assert_msg(gx_cuda_blas_load(why, sizeof why) == GX_OK, "%s", why);
    ck_assert_msg(gx_cuda_blas_load(why, sizeof why) == GX_OK, "%s", why);
}
END_TEST
#endif

/* ---- the passes --------------------------------------------------------- */

/* x -> a Relu -> b Exp -> c Neg -> d Sigmoid -> e Tanh -> (out): t1 has no
 * Neg, so the chain splits into {a,b} on t1, {c} on the cpu, {d,e} on t1,
 * with copies on the four crossing edges (x in, b out, c in, e out). */
START_TEST(test_chain_split)
{
    s_case c = {.g = s_graph("chain", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Neg", "c", "b", NULL);
    s_op(c.g, "Sigmoid", "d", "c", NULL);
    s_op(c.g, "Tanh", "e", "d", NULL);
    gx_graph_add_output(c.g, "e");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    gxd_plan *p = c.p;
    ck_assert_uint_eq(p->n_devices, 2);
    ck_assert_str_eq(p->devices[0]->name, "cpu");
    ck_assert_str_eq(p->devices[1]->name, "t1");
    s_assert_part(p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    s_assert_part(p, "cpu", "c", "c", (const char *[]){"c", NULL});
    s_assert_part(p, "t1", "d", "e", (const char *[]){"d", "e", NULL});
    ck_assert_uint_eq(p->n_parts, 3);
    ck_assert_uint_eq(s_assert_copies(p), 4);
    ck_assert_uint_eq(p->n_steps, 9);
    /* in step order: copy x, a, b, copy b, c, copy c, d, e, copy e */
    static const bool copy[9] = {1, 0, 0, 1, 0, 1, 0, 0, 1};
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(p->steps[i].copy, copy[i]);
    ck_assert_str_eq(p->values[p->steps[0].out[0]].name, "x@t1");
    ck_assert_str_eq(p->values[p->outputs[0]].name, "e@cpu");
    ck_assert_uint_eq(p->n_fell, 0); /* c was never t1's: Neg is not in its table */
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* A device with memory of its own (testdev): the same chain, with a
 * constant and a MatMul, runs with its values in testdev's arena (each
 * testdev kernel checks that what it reads and writes is testdev memory),
 * the constant copied there once per plan, values crossing by the copy
 * steps; same results as the CPU; everything testdev gave out comes back
 * when the plan is destroyed. */
START_TEST(test_own_memory)
{
    s_case c = {.g = s_matmul_chain("chain", 7)};
    gx_graph_add_output(c.g, "b");
    s_inputs(&c, 1);
    const gx_testdev_stats before = gx_testdev_stats_get();
    gxd_partition_opts o = s_opts(gx_testdev(), NULL, 1);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    gxd_plan *p = c.p;
    ck_assert_str_eq(s_dev(p, "b"), "testdev");
    ck_assert_str_eq(s_dev(p, "e"), "testdev");
    ck_assert_uint_gt(p->dev_arena_bytes[1], 0);
    ck_assert_uint_eq(p->n_dev_consts, 1); /* w, once */
    ck_assert_int_eq(p->values[p->dev_consts[0].value].mem, 1);
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *st = &p->steps[i];
        for (int k = 0; k < st->n_out && !st->folded; k++)
            ck_assert_int_eq(p->values[st->out[k]].mem,
                             p->devices[st->device] == gx_testdev() ? 1 : 0);
    }
    for (size_t i = 0; i < p->n_outputs; i++)
        ck_assert_int_eq(p->values[p->outputs[i]].mem, 0);
    s_assert_copies(p);
    s_assert_close_results(&c, 1e-5f);
    const gx_testdev_stats ran = gx_testdev_stats_get();
    ck_assert_uint_gt(ran.kernels, before.kernels);
    ck_assert_uint_gt(ran.to_device, before.to_device);
    ck_assert_uint_gt(ran.to_host, before.to_host);
    ck_assert_uint_gt(ran.queues, before.queues);
    s_done(&c);
    ck_assert_uint_eq(gx_testdev_stats_get().live, before.live);
}
END_TEST

/* Runs of testdev's steps as recorded graphs (daemon/exec/exec_seq.c):
 * over one arena and queue, a run goes step by step the first time, is
 * recorded the second and replayed after that, and every run gives the
 * CPU plan's outputs; with graphs off nothing is recorded; a recording
 * that fails leaves the run step by step for good; a stale graph is
 * dropped and recorded again. */
/* Returns the run's device time (gxd_frame.device_ns); out may be NULL. */
static int64_t s_exec_dm(const gxd_plan *p, const gx_view *in, const gxd_devmem *dm,
                         bool no_graphs, float out[][S_N])
{
    gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                              .max_arena_bytes = 256ll << 20, .no_graphs = no_graphs};
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    gxd_frame f;
    char err[256];
    ck_assert_int_eq(gxd_frame_init_dev(&f, p, arena, dm, false, in, &lim, &stop, err, sizeof err),
                     GX_OK);
    f.device_ns = -7; /* the run sets it */
    ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
    for (size_t o = 0; out && o < p->n_outputs; o++)
        memcpy(out[o], gxd_frame_output(&f, o)->data, sizeof out[o]);
    const int64_t ns = f.device_ns;
    gxd_frame_fini(&f);
    free(arena);
    return ns;
}

START_TEST(test_device_graphs)
{
    s_case c = {.g = s_matmul_chain("graphs", 5)};
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(gx_testdev(), NULL, 1);
    s_case cpu = c;
    cpu.p = NULL;
    ck_assert_msg(s_compile(&cpu, NULL) == GX_OK, "%s", cpu.err);
    float want[1][S_N], got[1][S_N];
    s_exec(cpu.p, c.in, want);
    const gx_backend *b = gx_testdev();
    for (int mode = GX_TESTDEV_GRAPH_NORMAL; mode <= GX_TESTDEV_GRAPH_STALE; mode++) {
        ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
        gxd_plan *p = c.p;
        ck_assert_uint_eq(p->n_devices, 2);
        gxd_devmem dm = {0};
        ck_assert_ptr_nonnull(dm.arena[1] = b->alloc(b, p->dev_arena_bytes[1]));
        ck_assert_ptr_nonnull(dm.queue[1] = b->queue_new(b));
        gx_testdev_graph_mode(mode);
        /* off: step by step, nothing recorded */
        for (int run = 0; run < 3; run++) {
            s_exec_dm(p, c.in, &dm, true, got);
            ck_assert(memcmp(got, want, sizeof got) == 0);
        }
        gxd_graph_stats st = gxd_plan_graph_stats(p);
        ck_assert_int_eq(st.captures + st.replays + st.failed, 0);
        const gx_testdev_stats t0 = gx_testdev_stats_get();
        for (int run = 1; run <= 5; run++) {
            s_exec_dm(p, c.in, &dm, false, got);
            ck_assert_msg(memcmp(got, want, sizeof got) == 0, "mode %d run %d", mode, run);
            st = gxd_plan_graph_stats(p);
            if (run == 1)
                ck_assert_int_eq(st.captures + st.replays + st.failed, 0);
            if (mode == GX_TESTDEV_GRAPH_NORMAL) {
                /* one run (Relu to Tanh: 5 kernels), recorded at run 2 */
                ck_assert_int_eq(st.captures, run >= 2);
                ck_assert_int_eq(st.replays, run - 1);
                ck_assert_int_eq(st.entries, run >= 2);
            } else if (mode == GX_TESTDEV_GRAPH_FAIL) {
                ck_assert_int_eq(st.failed, run >= 2); /* once: then step by step */
                ck_assert_int_eq(st.captures + st.replays + st.entries, 0);
            } else {
                /* recorded at 2 (its first replay is the recording's),
                 * stale at 3, recorded again at 4, stale at 5 */
                ck_assert_int_eq(st.captures, run >= 4 ? 2 : run >= 2);
                ck_assert_int_eq(st.stale, run >= 5 ? 2 : run >= 3);
                ck_assert_int_eq(st.failed, 0);
            }
        }
        const gx_testdev_stats t1 = gx_testdev_stats_get();
        if (mode == GX_TESTDEV_GRAPH_NORMAL) {
            ck_assert_uint_eq(t1.captures - t0.captures, 1);
            ck_assert_uint_eq(t1.replays - t0.replays, 4);
        }
        ck_assert_uint_eq(t1.kernels - t0.kernels, 5 * 5); /* every run ran every kernel once */
        gx_testdev_graph_mode(GX_TESTDEV_GRAPH_NORMAL);
        gxd_plan_destroy(&c.p); /* frees its graphs through testdev's table */
        b->queue_free(b, dm.queue[1]);
        b->free(b, dm.arena[1]);
    }
    gxd_plan_destroy(&cpu.p);
    gx_graph_destroy(&c.g);
}
END_TEST

/* Device time (daemon/exec/exec_seq.c): each stretch of testdev's kernel
 * steps between copies gets two marks, every mark is freed, the run's
 * device_ns is their spans' sum (> 0), graphs on or off; a plan on the
 * CPU alone makes no mark and reports 0. */
START_TEST(test_device_time)
{
    s_case c = {.g = s_matmul_chain("timed", 7)};
    gx_graph_add_output(c.g, "b"); /* a copy to the host between MatMul and Neg */
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(gx_testdev(), NULL, 1);
    const uint64_t readied = gx_testdev_stats_get().readied;
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    const gxd_plan *p = c.p;
    const gx_backend *b = gx_testdev();
    /* the stretches: kernel steps on testdev, no copy between; each
     * kernel step was readied once by the plan pass */
    uint64_t stretches = 0, kernels = 0;
    bool open = false;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *st = &p->steps[i];
        if (st->folded)
            continue;
        bool k = p->devices[st->device] == b && !st->copy;
        stretches += k && !open;
        kernels += k;
        open = k;
    }
    ck_assert_uint_eq(stretches, 2);
    ck_assert_uint_eq(gx_testdev_stats_get().readied - readied, kernels);
    gxd_devmem dm = {0};
    ck_assert_ptr_nonnull(dm.arena[1] = b->alloc(b, p->dev_arena_bytes[1]));
    ck_assert_ptr_nonnull(dm.queue[1] = b->queue_new(b));
    for (int run = 0; run < 6; run++) {
        const gx_testdev_stats t0 = gx_testdev_stats_get();
        int64_t ns = s_exec_dm(p, c.in, &dm, run < 3, NULL);
        const gx_testdev_stats t1 = gx_testdev_stats_get();
        ck_assert_int_gt(ns, 0);
        ck_assert_uint_eq(t1.marks - t0.marks, 2 * stretches);
        ck_assert_uint_eq(t1.marks_live, t0.marks_live);
    }
    ck_assert_int_gt(gxd_plan_graph_stats(p).replays, 0); /* the graphs ran too */
    b->queue_free(b, dm.queue[1]);
    b->free(b, dm.arena[1]);
    gxd_plan_destroy(&c.p);
    const gx_testdev_stats t0 = gx_testdev_stats_get();
    ck_assert_msg(s_compile(&c, NULL) == GX_OK, "%s", c.err);
    ck_assert_int_eq(s_exec_dm(c.p, c.in, NULL, false, NULL), 0);
    ck_assert_uint_eq(gx_testdev_stats_get().marks, t0.marks);
    s_done(&c);
}
END_TEST

/* A worker's arena cache (daemon/arenas.c) pins a host arena once for a
 * plan on a device that pins (whole pages: testdev aborts otherwise),
 * unpins it before it grows and at the end, and never pins for a plan on
 * the CPU alone; a run over the pinned arena gives the CPU's results. */
START_TEST(test_pinned_arenas)
{
    s_case c = {.g = s_matmul_chain("pinned", 5)};
    s_inputs(&c, 1);
    s_case cpu = c;
    cpu.p = NULL;
    ck_assert_msg(s_compile(&cpu, NULL) == GX_OK, "%s", cpu.err);
    float want[1][S_N], got[1][S_N];
    s_exec(cpu.p, c.in, want);
    gxd_partition_opts o = s_opts(gx_testdev(), NULL, 1);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    const gx_testdev_stats t0 = gx_testdev_stats_get();
    gxd_arenas a;
    gxd_arenas_init(&a);
    char err[256];
    gxd_devmem dm;
    gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                              .max_arena_bytes = 256ll << 20};
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    for (int job = 0; job < 3; job++) {
        void *arena = gxd_arenas_get(&a, 0, c.p->arena_bytes);
        ck_assert_ptr_nonnull(arena);
        ck_assert_int_eq(gxd_arenas_devmem(&a, 0, c.p, false, &dm, err, sizeof err), GX_OK);
        ck_assert_ptr_nonnull(gxd_arenas_get(&a, 1, cpu.p->arena_bytes)); /* no devmem: CPU */
        gxd_frame f;
        ck_assert_int_eq(gxd_frame_init_dev(&f, c.p, arena, &dm, false, c.in, &lim, &stop, err,
                                            sizeof err), GX_OK);
        ck_assert_msg(gxd_exec_seq(&f) == GX_OK, "%s", err);
        memcpy(got[0], gxd_frame_output(&f, 0)->data, sizeof got[0]);
        gxd_frame_fini(&f);
        ck_assert(memcmp(got, want, sizeof got) == 0);
    }
    gx_testdev_stats t1 = gx_testdev_stats_get();
    ck_assert_uint_eq(t1.pins - t0.pins, 1);
    ck_assert_uint_eq(t1.pins_live - t0.pins_live, 1);
    ck_assert_ptr_eq(a.pinned[0], gx_testdev());
    ck_assert_ptr_null(a.pinned[1]);
    /* a larger arena: the old one unpinned before it is freed, the new one pinned */
    ck_assert_ptr_nonnull(gxd_arenas_get(&a, 0, a.cap[0] + 1));
    ck_assert_uint_eq(gx_testdev_stats_get().pins_live, t0.pins_live);
    ck_assert_int_eq(gxd_arenas_devmem(&a, 0, c.p, false, &dm, err, sizeof err), GX_OK);
    t1 = gx_testdev_stats_get();
    ck_assert_uint_eq(t1.pins - t0.pins, 2);
    ck_assert_uint_eq(t1.pins_live - t0.pins_live, 1);
    gxd_arenas_fini(&a);
    ck_assert_uint_eq(gx_testdev_stats_get().pins_live, t0.pins_live);
    gxd_plan_destroy(&cpu.p);
    s_done(&c);
}
END_TEST

/* The cost check: a device whose launches and copies cost more than the
 * chain's work on the CPU does not get it (explain says by how much),
 * unless the check is off; a device fast enough at both does. */
START_TEST(test_cost_check)
{
    static gx_backend slow = S_HOST_DEVICE("slow", s_t1_rules);
    static gx_backend fast = S_HOST_DEVICE("fast", s_t1_rules);
    slow.cost.launch_us = 5, slow.cost.copy_us = 10, slow.cost.copy_bytes_per_us = 1e4;
    slow.cost.flops_per_us = 2e7, slow.cost.bytes_per_us = 1e6;
    fast.cost.copy_bytes_per_us = fast.cost.flops_per_us = fast.cost.bytes_per_us = 1e12;
    for (int round = 0; round < 3; round++) {
        s_case c = {.g = s_graph("chain", 1)};
        s_op(c.g, "Relu", "a", "x", NULL);
        s_op(c.g, "Exp", "b", "a", NULL);
        s_op(c.g, "Tanh", "e", "b", NULL);
        gx_graph_add_output(c.g, "e");
        s_inputs(&c, 1);
        gxd_partition_opts o = s_opts(round == 2 ? &fast : &slow, NULL, 2);
        o.no_cost_check = round == 1;
        ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
        const char *dev = round == 0 ? "cpu" : round == 1 ? "slow" : "fast";
        ck_assert_str_eq(s_dev(c.p, "a"), dev);
        ck_assert_str_eq(s_dev(c.p, "e"), dev);
        if (round == 0)
            s_assert_why(c.p, "b", "slow", "not worth moving: about");
        s_assert_same_results(&c);
        s_done(&c);
    }
}
END_TEST

/* With fusion on, the same chain: a group never spans two devices (a, b
 * fuse on t1, d, e on t1, c stays alone on the cpu) and the copies stay
 * between the devices. */
START_TEST(test_fusion_stays_on_one_device)
{
    s_case c = {.g = s_graph("chain", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Neg", "c", "b", NULL);
    s_op(c.g, "Sigmoid", "d", "c", NULL);
    s_op(c.g, "Tanh", "e", "d", NULL);
    gx_graph_add_output(c.g, "e");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    gxd_compile_limits lim = {.max_nodes = 1000, .max_tensor_bytes = 64ll << 20,
                              .max_arena_bytes = 256ll << 20, .part = &o};
    ck_assert_msg(gxd_compile(c.g, c.in, &lim, &c.p, c.err, sizeof c.err) == GX_OK, "%s", c.err);
    gxd_plan *p = c.p;
    /* the groups (and c alone, with why its neighbours stayed out) */
    ck_assert_uint_eq(p->n_fuse_groups, 3);
    const gxd_fuse_group *ab = &p->fuse_groups[0], *lone = &p->fuse_groups[1],
                         *de = &p->fuse_groups[2];
    ck_assert_uint_eq(ab->n_nodes, 2);
    ck_assert_str_eq(ab->nodes[0], "a");
    ck_assert_uint_eq(de->n_nodes, 2);
    ck_assert_str_eq(de->nodes[1], "e");
    ck_assert_str_eq(p->devices[p->steps[ab->step].device]->name, "t1");
    ck_assert_str_eq(p->devices[p->steps[de->step].device]->name, "t1");
    ck_assert_uint_eq(lone->n_nodes, 1);
    ck_assert_str_eq(lone->nodes[0], "c");
    ck_assert_msg(strstr(lone->why, "copies a value between devices"), "%s", lone->why);
    ck_assert_uint_eq(s_assert_copies(p), 4);
    ck_assert_uint_eq(p->n_steps, 7); /* copy x, a+b, copy b, c, copy c, d+e, copy e */
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].copy)
            ck_assert_ptr_null(p->steps[i].fused);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* A value folded at compile time is a constant: every device has it, no
 * copy. w const, f = Exp(w) (folded), a = Relu(x), b = Add(a, f) on t1. */
START_TEST(test_folded_not_copied)
{
    s_case c = {.g = s_graph("fold", 1)};
    int64_t ws[2] = {S_R, S_C};
    gx_tensor *w = gx_tensor_new(GX_F32, 2, ws);
    float *wd = gx_tensor_data(w);
    for (int i = 0; i < S_N; i++)
        wd[i] = (float)(i % 3) * 0.5f;
    gx_graph_add_const(c.g, "w", &w);
    s_op(c.g, "Exp", "f", "w", NULL);
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Add", "b", "a", "f");
    s_op(c.g, "Mul", "m", "b", "w");
    gx_graph_add_output(c.g, "m");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    int f = s_step(c.p, "f");
    ck_assert(c.p->steps[f].folded);
    ck_assert_int_eq(c.p->steps[f].part, -1);
    s_assert_part(c.p, "t1", "a", "m", (const char *[]){"a", "b", "m", NULL});
    ck_assert_uint_eq(s_assert_copies(c.p), 2); /* x in, m out: not f, not w */
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* Seed 000, one input and several outputs: x -> a Relu -> b Exp -> c
 * Sigmoid -> d Tanh -> (out1), and b -> e Neg (cpu) -> (out2). Pass one
 * makes {a,b,c,d}: entry a, exits b (read by e) and d. Walking back from
 * the last exit d stops at b: {c,d}; the rest is {a,b}. Both have one
 * entry and one exit: nothing falls out. */
START_TEST(test_prune_outputs)
{
    s_case c = {.g = s_graph("outs", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Sigmoid", "c", "b", NULL);
    s_op(c.g, "Tanh", "d", "c", NULL);
    s_op(c.g, "Neg", "e", "b", NULL);
    gx_graph_add_output(c.g, "d");
    gx_graph_add_output(c.g, "e");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    s_assert_part(c.p, "t1", "c", "d", (const char *[]){"c", "d", NULL});
    ck_assert_int_ne(s_part(c.p, "a"), s_part(c.p, "c"));
    ck_assert_str_eq(s_dev(c.p, "e"), "cpu");
    ck_assert_uint_eq(c.p->n_fell, 0);
    /* b -> c stays on t1: no copy there; x in, b to e, d out */
    ck_assert_uint_eq(s_assert_copies(c.p), 3);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* Seed 000, several inputs and one output: x -> a Relu -> b Exp; y -> c
 * Sigmoid; d Add(b, c) -> e Tanh -> (out). Pass one: {a..e}, entries a and
 * c. Forward from a, stopping at c: {a,b,d,e}, rest {c}; that has entries
 * a and d (d reads c): forward from a, stopping at d: {a,b}, rest {d,e}.
 * {c} alone is below the minimum and stays on the cpu. */
START_TEST(test_prune_inputs)
{
    s_case c = {.g = s_graph("ins", 2)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Sigmoid", "c", "y", NULL);
    s_op(c.g, "Add", "d", "b", "c");
    s_op(c.g, "Tanh", "e", "d", NULL);
    gx_graph_add_output(c.g, "e");
    s_inputs(&c, 2);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    s_assert_part(c.p, "t1", "d", "e", (const char *[]){"d", "e", NULL});
    ck_assert_str_eq(s_dev(c.p, "c"), "cpu");
    ck_assert_uint_eq(c.p->n_fell, 1);
    s_assert_why(c.p, "c", "t1", "pruned: 'c' is a second input of the subgraph of 'a'");
    s_assert_why(c.p, "c", "t1", "below the minimum of 2 nodes");
    /* x in, c to d, e out (b -> d stays on t1) */
    ck_assert_uint_eq(s_assert_copies(c.p), 3);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* Seed 000, several inputs and several outputs, pruned over four rounds:
 * a Relu(x), b Exp(a), c Tanh(b) -> (out1), d Sigmoid(b), e Relu(d) ->
 * (out2), f Tanh(y), g Add(f, e) -> (out3).
 *   {a..g}: entries a, f  -> forward from a stopping at f: {a,b,c,d,e,g} + {f}
 *   {a,b,c,d,e,g}: entries a, g -> forward from a stopping at g: {a..e} + {g}
 *   {a,b,c,d,e}: entry a, exits c, e -> back from e stopping at c: {a,b,d,e} + {c}
 *   {a,b,d,e}: entry a, exits b, e -> back from e stopping at b: {d,e} + {a,b}
 * Targets {a,b} and {d,e}; c, f and g are alone and stay on the cpu. */
START_TEST(test_prune_both)
{
    s_case c = {.g = s_graph("both", 2)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Tanh", "c", "b", NULL);
    s_op(c.g, "Sigmoid", "d", "b", NULL);
    s_op(c.g, "Relu", "e", "d", NULL);
    s_op(c.g, "Tanh", "f", "y", NULL);
    s_op(c.g, "Add", "g", "f", "e");
    gx_graph_add_output(c.g, "c");
    gx_graph_add_output(c.g, "e");
    gx_graph_add_output(c.g, "g");
    s_inputs(&c, 2);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    gxd_plan *p = c.p;
    s_assert_part(p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    s_assert_part(p, "t1", "d", "e", (const char *[]){"d", "e", NULL});
    ck_assert_int_ne(s_part(p, "a"), s_part(p, "d"));
    ck_assert_str_eq(s_dev(p, "c"), "cpu");
    ck_assert_str_eq(s_dev(p, "f"), "cpu");
    ck_assert_str_eq(s_dev(p, "g"), "cpu");
    ck_assert_uint_eq(p->n_fell, 3);
    s_assert_why(p, "f", "t1", "'f' is a second input of the subgraph of 'a'");
    s_assert_why(p, "g", "t1", "'g' is a second input of the subgraph of 'a'");
    s_assert_why(p, "c", "t1", "'c' is a second output of the subgraph of 'e'");
    s_assert_why(p, "c", "t1", "then subgraph below the minimum of 2 nodes");
    /* every partition on t1 has one entry and one exit */
    for (size_t i = 0; i < p->n_parts; i++)
        if (p->parts[i].device != 0)
            ck_assert(p->parts[i].n_entries == 1 && p->parts[i].n_exits == 1);
    /* x in; b to c; e to g and out */
    ck_assert_uint_eq(s_assert_copies(p), 3);
    s_assert_same_results(&c);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gxd_plan_partition_explain(p, f);
    fclose(f);
    static const char *const lines[] = {
        "devices: cpu (fallback) t1\n",
        "partition 0 on t1: 2 steps, entry 'a', exit 'b'\n",
        "on cpu: 2 steps, 2 entries, exit 'g'\n",
        "on cpu: 1 step, entry 'c', exit 'c'\n",
        "on t1: 2 steps, entry 'd', exit 'e'\n",
        "copy 'x' -> 'x@t1' (to t1)\ncopy 'b' -> 'b@cpu' (to cpu)\ncopy 'e' -> 'e@cpu' (to cpu)\n",
        "'c' (Tanh) fell out of t1: pruned: 'c' is a second output of the subgraph of 'e', "
        "then subgraph below the minimum of 2 nodes\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text, lines[i]), "explain lacks '%s':\n%s", lines[i], text);
    free(text);
    s_done(&c);
}
END_TEST

/* Pass two removes the steps that fail a rule; what remains of their
 * subgraph is split, and a piece below the minimum goes back to the cpu:
 * x -> a Relu -> b Softmax(axis 0) -> c Exp -> d Sigmoid -> (out). */
START_TEST(test_rule_fails)
{
    s_case c = {.g = s_graph("rule", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    gx_node_set_int(s_op(c.g, "Softmax", "b", "a", NULL), "axis", 0);
    s_op(c.g, "Exp", "c", "b", NULL);
    s_op(c.g, "Sigmoid", "d", "c", NULL);
    gx_graph_add_output(c.g, "d");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t1", "c", "d", (const char *[]){"c", "d", NULL});
    ck_assert_str_eq(s_dev(c.p, "a"), "cpu");
    ck_assert_str_eq(s_dev(c.p, "b"), "cpu");
    ck_assert_uint_eq(c.p->n_fell, 2);
    s_assert_why(c.p, "b", "t1", "t1lib: Softmax axis 0 is not the last axis");
    ck_assert_str_eq(s_why(c.p, "a", "t1"), "subgraph below the minimum of 2 nodes");
    /* a and b now form one cpu partition */
    ck_assert_int_eq(s_part(c.p, "a"), s_part(c.p, "b"));
    ck_assert_uint_eq(s_assert_copies(c.p), 2);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* A dtype the device lacks is a rule failure too. */
START_TEST(test_rule_dtype)
{
    s_case c = {.g = gx_graph_new("dtype")};
    int64_t s[2] = {S_R, S_C};
    gx_graph_add_input(c.g, "x", GX_F64, 2, s);
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    gx_graph_add_output(c.g, "b");
    double data[S_N] = {0};
    c.in[0] = (gx_view){.dtype = GX_F64, .ndim = 2, .shape = {S_R, S_C}, .numel = S_N,
                        .data = data};
    gxd_partition_opts o = s_opts(&s_t1, NULL, 1);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    ck_assert_str_eq(s_dev(c.p, "a"), "cpu");
    s_assert_why(c.p, "a", "t1", "t1lib: Relu float64 input 0 is not supported");
    s_assert_why(c.p, "b", "t1", "float64");
    ck_assert_uint_eq(c.p->n_copies, 0);
    s_done(&c);
}
END_TEST

/* x -> a Neg -> b Relu -> c Neg: b alone is below a minimum of 2, and
 * moves to t1 with a minimum of 1. */
START_TEST(test_min_nodes)
{
    s_case c = {.g = s_graph("min", 1)};
    s_op(c.g, "Neg", "a", "x", NULL);
    s_op(c.g, "Relu", "b", "a", NULL);
    s_op(c.g, "Neg", "c", "b", NULL);
    gx_graph_add_output(c.g, "c");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    ck_assert_str_eq(s_dev(c.p, "b"), "cpu");
    ck_assert_str_eq(s_why(c.p, "b", "t1"), "subgraph below the minimum of 2 nodes");
    ck_assert_uint_eq(c.p->n_copies, 0);
    ck_assert_uint_eq(c.p->n_steps, 3);
    ck_assert_uint_eq(c.p->n_parts, 1); /* a, b, c: one cpu run */
    gxd_plan_destroy(&c.p);

    o.min_nodes = 1;
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t1", "b", "b", (const char *[]){"b", NULL});
    ck_assert_uint_eq(c.p->n_fell, 0);
    ck_assert_uint_eq(s_assert_copies(c.p), 2);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* A device whose kernels run MatMul over float16 (half_kernels), which
 * the CPU's kernels do not: in float, each output rounded to float16. */
static void s_half_matmul(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    ck_assert_int_eq(a->dtype, GX_F16);
    const int64_t m = a->shape[0], kk = a->shape[1], n = b->shape[1];
    const uint16_t *pa = a->data, *pb = b->data;
    uint16_t *py = y->data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0;
            for (int64_t t = 0; t < kk; t++)
                acc += gx_f16_to_f32(pa[i * kk + t]) * gx_f16_to_f32(pb[t * n + j]);
            py[i * n + j] = gx_f32_to_f16(acc);
        }
}

static gx_kernel_fn s_half_kernel(gx_op op)
{
    return op == GX_OP_MATMUL ? s_half_matmul : gx_cpu_kernel(op);
}

static const gx_op_rule s_h16_rules[] = {{GX_OP_MATMUL, GX_DT_FLOAT, 0, NULL, "h16lib"}};
static const gx_backend s_h16 = {
    .name = "h16", .rules = s_h16_rules, .n_rules = 1, .kernel = s_half_kernel,
    .fused = s_fused, .host_memory = true, .alloc = s_alloc, .free = s_free,
    .half_kernels = true};

/* A float16 MatMul, which the CPU computes in float32 (the widen pass),
 * stays float16 on a device whose kernels run it (gxd_step.dev_half: no
 * Casts); where partition leaves it to the CPU (below the minimum of
 * nodes), the compile starts again with it widened. */
START_TEST(test_device_half)
{
    s_case c = {.g = gx_graph_new("half")};
    int64_t s[2] = {S_R, S_C}, ws[2] = {S_C, S_C};
    gx_graph_add_input(c.g, "x", GX_F16, 2, s);
    gx_tensor *w = gx_tensor_new(GX_F16, 2, ws);
    uint16_t *wd = gx_tensor_data(w);
    for (int i = 0; i < S_C * S_C; i++)
        wd[i] = gx_f32_to_f16((float)(i % 7) * 0.375f - 1.0f);
    gx_graph_add_const(c.g, "w", &w);
    s_op(c.g, "MatMul", "b", "x", "w");
    gx_graph_add_output(c.g, "b");
    uint16_t xd[S_N];
    for (int i = 0; i < S_N; i++)
        xd[i] = gx_f32_to_f16((float)((i * 5) % 9) * 0.25f - 1.0f);
    c.in[0] = (gx_view){.dtype = GX_F16, .ndim = 2, .shape = {S_R, S_C}, .numel = S_N,
                        .data = xd};
    float dev[1][S_N], cpu[1][S_N], want[S_N];
    for (int i = 0; i < S_R; i++)
        for (int j = 0; j < S_C; j++) {
            float acc = 0;
            for (int t = 0; t < S_C; t++)
                acc += gx_f16_to_f32(xd[i * S_C + t]) * gx_f16_to_f32(wd[t * S_C + j]);
            want[i * S_C + j] = gx_f16_to_f32(gx_f32_to_f16(acc));
        }

    gxd_partition_opts o = s_opts(&s_h16, NULL, 1);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    int b = s_step(c.p, "b");
    ck_assert_str_eq(s_dev(c.p, "b"), "h16");
    ck_assert(c.p->steps[b].dev_half && !c.p->steps[b].wide);
    ck_assert_int_eq(c.p->values[c.p->steps[b].out[0]].view.dtype, GX_F16);
    for (size_t i = 0; i < c.p->n_steps; i++)
        ck_assert_msg(!c.p->steps[i].convert, "a Cast step '%s'", c.p->steps[i].node->name);
    ck_assert_int_eq(c.p->values[c.p->outputs[0]].view.dtype, GX_F16);
    s_exec(c.p, c.in, dev);
    gxd_plan_destroy(&c.p);

    /* a subgraph of one step is below a minimum of 2: widened on the CPU */
    o.min_nodes = 2;
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    b = s_step(c.p, "b");
    ck_assert_str_eq(s_dev(c.p, "b"), "cpu");
    ck_assert(c.p->steps[b].wide && !c.p->steps[b].dev_half);
    ck_assert_int_eq(c.p->values[c.p->outputs[0]].view.dtype, GX_F16);
    s_exec(c.p, c.in, cpu);
    for (int i = 0; i < S_N; i++) {
        ck_assert_msg(dev[0][i] == want[i], "[%d]: %g on h16, %g expected", i, dev[0][i],
                      want[i]);
        ck_assert_msg(fabsf(cpu[0][i] - want[i]) <= 1e-3f * fmaxf(1.f, fabsf(want[i])),
                      "[%d]: %g on the CPU, %g expected", i, cpu[0][i], want[i]);
    }
    s_done(&c);
}
END_TEST

/* Preference order: a Relu, b Exp, c Neg, d Neg. t1 has Relu and Exp, t2
 * Exp, Neg and Relu. [t1, t2]: t1 takes {a,b}, t2 the rest {c,d}.
 * [t2, t1]: t2 takes all four. [cpu, t1]: the cpu comes first and takes
 * everything; t1 is not even offered. */
START_TEST(test_preference)
{
    s_case c = {.g = s_graph("pref", 1)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Neg", "c", "b", NULL);
    s_op(c.g, "Neg", "d", "c", NULL);
    gx_graph_add_output(c.g, "d");
    s_inputs(&c, 1);

    gxd_partition_opts o = s_opts(&s_t1, &s_t2, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    ck_assert_uint_eq(c.p->n_devices, 3);
    s_assert_part(c.p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    s_assert_part(c.p, "t2", "c", "d", (const char *[]){"c", "d", NULL});
    ck_assert_uint_eq(s_assert_copies(c.p), 3); /* x in, b to t2, d out */
    s_assert_same_results(&c);
    gxd_plan_destroy(&c.p);

    o = s_opts(&s_t2, &s_t1, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t2", "a", "d", (const char *[]){"a", "b", "c", "d", NULL});
    ck_assert_uint_eq(s_assert_copies(c.p), 2);
    s_assert_same_results(&c);
    gxd_plan_destroy(&c.p);

    o = s_opts(gx_backend_cpu(), &s_t1, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    ck_assert_uint_eq(c.p->n_devices, 1);
    s_assert_part(c.p, "cpu", "a", "d", (const char *[]){"a", "b", "c", "d", NULL});
    ck_assert_uint_eq(c.p->n_copies, 0);
    s_done(&c);
}
END_TEST

/* Steps that fall out of the first device are offered to the next one:
 * x -> a Exp -> b Softmax(axis 0) -> c Exp. t1's Softmax rule fails, which
 * leaves a and c alone, below the minimum of 2; t2 (no Softmax) sees them
 * alone as well: each has a reason per device. With a minimum of 1, t1,
 * preferred, takes a and c. */
START_TEST(test_second_device_after_fallout)
{
    s_case c = {.g = s_graph("fall2", 1)};
    s_op(c.g, "Exp", "a", "x", NULL);
    gx_node_set_int(s_op(c.g, "Softmax", "b", "a", NULL), "axis", 0);
    s_op(c.g, "Exp", "c", "b", NULL);
    gx_graph_add_output(c.g, "c");
    s_inputs(&c, 1);
    gxd_partition_opts o = s_opts(&s_t1, &s_t2, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_why(c.p, "b", "t1", "not the last axis");
    s_assert_why(c.p, "a", "t1", "below the minimum");
    s_assert_why(c.p, "a", "t2", "below the minimum");
    ck_assert_str_eq(s_dev(c.p, "a"), "cpu");
    gxd_plan_destroy(&c.p);

    o.min_nodes = 1;
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    /* t1 takes a and c first (its rules accept them), b stays on the cpu */
    ck_assert_str_eq(s_dev(c.p, "a"), "t1");
    ck_assert_str_eq(s_dev(c.p, "b"), "cpu");
    ck_assert_str_eq(s_dev(c.p, "c"), "t1");
    ck_assert_uint_eq(s_assert_copies(c.p), 4);
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* A value an If's branch captures is read on the cpu (the executor runs
 * control flow): a = Relu(x), b = Exp(a) on t1; y = If(c) then Tanh(b)
 * else Sigmoid(b). b is copied back for the If; the branches' plans are
 * partitioned too (one node each: below the minimum). */
START_TEST(test_control_capture)
{
    gx_graph *then = gx_graph_new("then"), *els = gx_graph_new("else");
    s_op(then, "Tanh", "t", "b", NULL);
    gx_graph_add_output(then, "t");
    s_op(els, "Sigmoid", "e", "b", NULL);
    gx_graph_add_output(els, "e");
    s_case c = {.g = s_graph("if", 1)};
    gx_graph_add_input(c.g, "c", GX_BOOL, 0, NULL);
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    gx_node *n = s_op(c.g, "If", "y", "c", NULL);
    ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
    ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    gx_graph_add_output(c.g, "y");
    s_inputs(&c, 1);
    uint8_t cond = 1;
    c.in[1] = (gx_view){.dtype = GX_BOOL, .ndim = 0, .numel = 1, .data = &cond};
    gxd_partition_opts o = s_opts(&s_t1, NULL, 2);
    ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
    s_assert_part(c.p, "t1", "a", "b", (const char *[]){"a", "b", NULL});
    ck_assert_str_eq(s_dev(c.p, "y"), "cpu");
    ck_assert_uint_eq(s_assert_copies(c.p), 2); /* x in, b to the If */
    int y = s_step(c.p, "y");
    ck_assert_int_gt(c.p->steps[y].n_in, c.p->steps[y].n_formal);
    ck_assert_str_eq(c.p->values[c.p->steps[y].in[c.p->steps[y].n_formal]].name, "b@cpu");
    s_assert_same_results(&c);
    cond = 0;
    s_assert_same_results(&c);
    s_done(&c);
}
END_TEST

/* Random DAGs of elementwise ops under t1 (and t2): whatever the shape of
 * the graph, parts off the cpu have one entry, one exit and at least the
 * minimum of steps, copies sit on exactly the crossing edges, every step
 * a device lists but did not get has its reason, and the results are the
 * cpu's. */
START_TEST(test_random_graphs)
{
    static const char *const ops[] = {"Relu", "Tanh", "Sigmoid", "Neg", "Add", "Mul", "Exp"};
    unsigned seed = 4242;
    for (int round = 0; round < 150; round++) {
        s_case c = {.g = s_graph("rand", 2)};
        int64_t ws[2] = {S_R, S_C};
        gx_tensor *w = gx_tensor_new(GX_F32, 2, ws);
        float *wd = gx_tensor_data(w);
        for (int i = 0; i < S_N; i++)
            wd[i] = (float)(i % 5) * 0.25f;
        gx_graph_add_const(c.g, "w", &w); /* nodes reading only w are folded */
        int n = 2 + (int)(rand_r(&seed) % 14);
        char names[20][8];
        bool used[20] = {0};
        snprintf(names[0], sizeof names[0], "x");
        snprintf(names[1], sizeof names[1], "y");
        snprintf(names[2], sizeof names[2], "w");
        for (int i = 0; i < n; i++) {
            int k = 3 + i;
            snprintf(names[k], sizeof names[k], "n%d", i);
            const char *op = ops[rand_r(&seed) % (sizeof ops / sizeof ops[0])];
            int a = (int)(rand_r(&seed) % (unsigned)k), b = (int)(rand_r(&seed) % (unsigned)k);
            bool two = strcmp(op, "Add") == 0 || strcmp(op, "Mul") == 0;
            s_op(c.g, op, names[k], names[a], two ? names[b] : NULL);
            used[a] = true;
            used[b] = used[b] || two;
        }
        for (int k = 3; k < n + 3; k++)
            if (!used[k] || rand_r(&seed) % 4 == 0)
                gx_graph_add_output(c.g, names[k]);
        s_inputs(&c, 2);
        int min = 1 + (int)(rand_r(&seed) % 3);
        /* t2 or testdev second: devices on the host's memory and one with its own */
        gxd_partition_opts o = round % 2 ? s_opts(&s_t1, round % 4 == 1 ? &s_t2 : gx_testdev(), min)
                                         : s_opts(&s_t1, NULL, min);
        ck_assert_msg(s_compile(&c, &o) == GX_OK, "%s", c.err);
        const gxd_plan *p = c.p;
        s_assert_copies(p);
        for (size_t i = 0; i < p->n_parts; i++)
            if (p->parts[i].device != 0) {
                ck_assert_int_le(p->parts[i].n_entries, 1);
                ck_assert_int_eq(p->parts[i].n_exits, 1);
                ck_assert_int_ge(p->parts[i].n_steps, min);
            }
        for (size_t i = 0; i < p->n_steps; i++) {
            const gxd_step *st = &p->steps[i];
            if (st->copy || st->folded)
                continue;
            ck_assert_int_ge(st->part, 0);
            for (size_t d = 1; d < p->n_devices && st->device == 0; d++)
                if (gx_backend_lists(p->devices[d], st->op))
                    ck_assert_msg(s_why(p, st->node->name, p->devices[d]->name),
                                  "round %d: %s (%s) on the cpu without a reason from %s", round,
                                  st->node->name, st->node->op, p->devices[d]->name);
        }
        s_assert_same_results(&c);
        s_done(&c);
    }
}
END_TEST

/* ---- the default leaves plans as they were ------------------------------- */

static void s_assert_same_plan(const gxd_plan *a, const gxd_plan *b)
{
    ck_assert_uint_eq(a->n_steps, b->n_steps);
    ck_assert_uint_eq(a->n_values, b->n_values);
    ck_assert_uint_eq(a->arena_bytes, b->arena_bytes);
    ck_assert_uint_eq(a->dag_arena_bytes, b->dag_arena_bytes);
    ck_assert_uint_eq(a->n_buffers, b->n_buffers);
    ck_assert_uint_eq(a->n_outputs, b->n_outputs);
    ck_assert(memcmp(a->outputs, b->outputs, a->n_outputs * sizeof *a->outputs) == 0);
    for (size_t i = 0; i < a->n_steps; i++) {
        const gxd_step *s = &a->steps[i], *t = &b->steps[i];
        ck_assert(s->op == t->op && s->node == t->node && s->kernel == t->kernel);
        ck_assert(s->n_in == t->n_in && s->n_out == t->n_out && s->n_formal == t->n_formal);
        ck_assert(memcmp(s->in, t->in, (size_t)s->n_in * sizeof *s->in) == 0);
        ck_assert(memcmp(s->out, t->out, (size_t)s->n_out * sizeof *s->out) == 0);
        ck_assert(memcmp(s->attr, t->attr, sizeof s->attr) == 0);
        ck_assert(s->folded == t->folded && s->dynamic == t->dynamic);
        ck_assert(s->scratch == t->scratch && s->scratch_bytes == t->scratch_bytes);
        ck_assert(s->device == 0 && t->device == 0 && !s->copy && !t->copy);
    }
    for (size_t i = 0; i < a->n_values; i++) {
        const gxd_value *v = &a->values[i], *w = &b->values[i];
        ck_assert(!strcmp(v->name, w->name) && v->kind == w->kind && v->def == w->def);
        ck_assert(v->last_use == w->last_use && v->buffer == w->buffer);
        ck_assert(v->offset == w->offset && v->nbytes == w->nbytes);
        ck_assert(a->dag_offset == NULL || a->dag_offset[i] == b->dag_offset[i]);
    }
}

/* The prune_both graph and a small CNN with constants, compiled with the
 * default options and with the pass off: the same steps and the same
 * memory plan. */
START_TEST(test_cpu_default_unchanged)
{
    s_case c = {.g = s_graph("both", 2)};
    s_op(c.g, "Relu", "a", "x", NULL);
    s_op(c.g, "Exp", "b", "a", NULL);
    s_op(c.g, "Tanh", "c", "b", NULL);
    s_op(c.g, "Sigmoid", "d", "b", NULL);
    s_op(c.g, "Relu", "e", "d", NULL);
    s_op(c.g, "Tanh", "f", "y", NULL);
    s_op(c.g, "Add", "g", "f", "e");
    s_op(c.g, "MatMul", "h", "g", "w");
    gx_graph_add_output(c.g, "c");
    gx_graph_add_output(c.g, "h");
    int64_t ws[2] = {S_C, S_C};
    gx_tensor *w = gx_tensor_new(GX_F32, 2, ws);
    float *wd = gx_tensor_data(w);
    for (int i = 0; i < S_C * S_C; i++)
        wd[i] = (float)(i % 5) - 2.0f;
    gx_graph_add_const(c.g, "w", &w);
    s_inputs(&c, 2);

    gxd_partition_opts off = {.off = true};
    s_case d = c;
    ck_assert_msg(s_compile(&c, NULL) == GX_OK, "%s", c.err);
    ck_assert_msg(s_compile(&d, &off) == GX_OK, "%s", d.err);
    s_assert_same_plan(c.p, d.p);
    ck_assert_uint_eq(c.p->n_devices, 1);
    ck_assert_uint_eq(c.p->n_copies, 0);
    ck_assert_uint_eq(c.p->n_fell, 0);
    ck_assert_uint_eq(c.p->n_parts, 1); /* every step is connected to the others */
    gxd_plan_destroy(&c.p);
    gxd_plan_destroy(&d.p);
    gx_graph_destroy(&c.g);
}
END_TEST

/* partition.prefer takes backend names only; min_nodes a positive count. */
START_TEST(test_config_keys)
{
    gxd_config c;
    gxd_config_init(&c);
    char err[256];
    ck_assert_int_eq(c.n_partition_prefer, 2);
    ck_assert_str_eq(c.partition_prefer[0], "cuda");
    ck_assert_str_eq(c.partition_prefer[1], "cpu");
    ck_assert_int_eq(c.partition_min_nodes, 2);
    ck_assert_int_eq(gxd_config_set(&c, "partition.prefer", "cpu, tpu", err, sizeof err),
                     GX_ECONFIG);
    ck_assert_msg(strstr(err, "'tpu' is not a backend (cpu, cuda"), "%s", err);
    ck_assert_int_eq(gxd_config_set(&c, "partition.min_nodes", "0", err, sizeof err),
                     GX_ECONFIG);
    ck_assert_int_eq(gxd_config_set(&c, "partition.prefer", "cpu", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.n_partition_prefer, 1);
    gxd_config_fini(&c);
}
END_TEST

Suite *partition_suite(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cuda_rules);
    tcase_add_test(tc, test_cuda_not_offered);
#ifdef HAVE_CUDA
    tcase_add_test(tc, test_cuda_blas_load);
#endif
    tcase_add_test(tc, test_chain_split);
    tcase_add_test(tc, test_fusion_stays_on_one_device);
    tcase_add_test(tc, test_own_memory);
    tcase_add_test(tc, test_device_graphs);
    tcase_add_test(tc, test_device_time);
    tcase_add_test(tc, test_pinned_arenas);
    tcase_add_test(tc, test_cost_check);
    tcase_add_test(tc, test_folded_not_copied);
    tcase_add_test(tc, test_prune_outputs);
    tcase_add_test(tc, test_prune_inputs);
    tcase_add_test(tc, test_prune_both);
    tcase_add_test(tc, test_rule_fails);
    tcase_add_test(tc, test_rule_dtype);
    tcase_add_test(tc, test_min_nodes);
    tcase_add_test(tc, test_device_half);
    tcase_add_test(tc, test_preference);
    tcase_add_test(tc, test_second_device_after_fallout);
    tcase_add_test(tc, test_control_capture);
    tcase_add_test(tc, test_random_graphs);
    tcase_add_test(tc, test_cpu_default_unchanged);
    tcase_add_test(tc, test_config_keys);
    suite_add_tcase(s, tc);
    return s;
}
