/*
 * float16 and bfloat16 models (the widen pass, daemon/compile/widen.c):
 * small models as exporters write them (an MLP, a CNN with
 * BatchNormalization, a LayerNorm + attention + Softmax block), built
 * twice from the same weights, once in float32 and once in float16. The
 * half model must give the float32 model's results within float16
 * rounding, with its constants converted once at compile time (the plan
 * has no Cast step reading a constant) and Cast steps only where a value
 * enters or leaves the float32 steps; every mode of a real gexecd gives
 * the same bytes. Mixed graphs (Cast nodes between float32 and float16
 * parts) stay correct, explain names each float32 step, and a float16
 * ONNX model (raw float16 initializers) imports and runs.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "gexec/client.h"
#include "libclient/onnx.pb-c.h"
#include "ops/cpu/cpu.h"
#include "tests/optest.h"
#include "tests/testutil.h"

/* What gexecd runs by default: every pass. */
static const gxd_compile_limits s_lim = {.max_nodes = 10000, .max_tensor_bytes = 64ll << 20,
                                         .max_arena_bytes = 256ll << 20};

static unsigned s_seed = 1616;

/* A value in [-1, 1) that float16 holds exactly (so both models start
 * from the same numbers). */
static float s_randf(void)
{
    s_seed = s_seed * 1103515245u + 12345u;
    return gx_f16_to_f32(gx_f32_to_f16((float)((s_seed >> 9) % 2001) / 1000.0f - 1.0f));
}

static int64_t s_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

/* A tensor of dtype dt (float32, float16 or bfloat16) holding v. */
static gx_tensor *s_tensor(gx_dtype dt, int ndim, const int64_t *shape, const float *v)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    ck_assert_ptr_nonnull(t);
    const int64_t n = s_numel(ndim, shape);
    if (dt == GX_F32)
        memcpy(gx_tensor_data(t), v, (size_t)n * sizeof *v);
    else
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)gx_tensor_data(t))[i] =
                dt == GX_F16 ? gx_f32_to_f16(v[i]) : gx_f32_to_bf16(v[i]);
    return t;
}

/* The elements of a float32, float16 or bfloat16 view as float32. */
static float *s_floats(gx_dtype dt, const void *data, int64_t n)
{
    float *f = malloc((size_t)n * sizeof *f + 1);
    ck_assert_ptr_nonnull(f);
    for (int64_t i = 0; i < n; i++)
        f[i] = dt == GX_F32   ? ((const float *)data)[i]
               : dt == GX_F16 ? gx_f16_to_f32(((const uint16_t *)data)[i])
                              : gx_bf16_to_f32(((const uint16_t *)data)[i]);
    return f;
}

/* ---- the models, in dtype dt ---- */

/* Builds one model from fixed seeds: same weights whatever dt. */
typedef struct s_model {
    gx_graph *g;
    gx_dtype dt;
    int n_consts; /* float constants (weights) */
} s_model;

static void s_const(s_model *m, const char *name, int ndim, const int64_t *shape, float scale,
                    float offset)
{
    const int64_t n = s_numel(ndim, shape);
    float *v = malloc((size_t)n * sizeof *v + 1);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = gx_f16_to_f32(gx_f32_to_f16(offset + scale * s_randf()));
    gx_tensor *t = s_tensor(m->dt, ndim, shape, v);
    ck_assert_int_eq(gx_graph_add_const(m->g, name, &t), GX_OK);
    free(v);
    m->n_consts++;
}

static gx_node *s_node(s_model *m, const char *op, const char *name, int n_in,
                       const char *const *in, const char *out)
{
    gx_node *n = gx_graph_add_node(m->g, op, name, (size_t)n_in, in, 1, &out);
    ck_assert_msg(n != NULL, "cannot add node %s (%s)", name, op);
    return n;
}

#define ADD_NODE(m, op, name, out, ...)                                                          \
    s_node(m, op, name, (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
           (const char *[]){__VA_ARGS__}, out)

static s_model s_begin(const char *name, gx_dtype dt, int ndim, const int64_t *x)
{
    s_seed = 1616;
    s_model m = {.g = gx_graph_new(name), .dt = dt};
    ck_assert_ptr_nonnull(m.g);
    ck_assert_int_eq(gx_graph_add_input(m.g, "x", dt, ndim, x), GX_OK);
    return m;
}

/* x [4,16] -> MatMul W1 [16,32] -> Add b1 -> Relu -> Gemm (W2 [8,32],
 * transB, b2) -> Softmax -> y [4,8] */
static const int64_t s_mlp_x[2] = {4, 16};
static s_model s_mlp(gx_dtype dt)
{
    s_model m = s_begin("mlp", dt, 2, s_mlp_x);
    s_const(&m, "W1", 2, (const int64_t[]){16, 32}, 0.4f, 0);
    s_const(&m, "b1", 1, (const int64_t[]){32}, 0.2f, 0);
    s_const(&m, "W2", 2, (const int64_t[]){8, 32}, 0.4f, 0);
    s_const(&m, "b2", 1, (const int64_t[]){8}, 0.2f, 0);
    ADD_NODE(&m, "MatMul", "fc1", "h1", "x", "W1");
    ADD_NODE(&m, "Add", "fc1.bias", "h2", "h1", "b1");
    ADD_NODE(&m, "Relu", "relu", "h3", "h2");
    gx_node *n = ADD_NODE(&m, "Gemm", "fc2", "h4", "h3", "W2", "b2");
    ck_assert_int_eq(gx_node_set_int(n, "transB", 1), GX_OK);
    ADD_NODE(&m, "Softmax", "softmax", "y", "h4");
    ck_assert_int_eq(gx_graph_add_output(m.g, "y"), GX_OK);
    return m;
}

/* x [2,3,8,8] -> Conv 3->8 3x3 pad 1 (+B) -> BatchNormalization -> Relu
 * -> MaxPool 2 -> Conv 8->8 3x3 -> Relu -> GlobalAveragePool -> Flatten
 * -> Gemm 8->4 -> y [2,4] */
static const int64_t s_cnn_x[4] = {2, 3, 8, 8};
static s_model s_cnn(gx_dtype dt)
{
    s_model m = s_begin("cnn", dt, 4, s_cnn_x);
    static const int64_t k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    const int64_t c8 = 8;
    s_const(&m, "w1", 4, (const int64_t[]){8, 3, 3, 3}, 0.3f, 0);
    s_const(&m, "b1", 1, &c8, 0.1f, 0);
    s_const(&m, "bn.scale", 1, &c8, 0.25f, 1.0f);
    s_const(&m, "bn.bias", 1, &c8, 0.1f, 0);
    s_const(&m, "bn.mean", 1, &c8, 0.1f, 0);
    s_const(&m, "bn.var", 1, &c8, 0.25f, 1.0f);
    s_const(&m, "w2", 4, (const int64_t[]){8, 8, 3, 3}, 0.2f, 0);
    s_const(&m, "fc.w", 2, (const int64_t[]){8, 4}, 0.5f, 0);
    s_const(&m, "fc.b", 1, (const int64_t[]){4}, 0.1f, 0);
    gx_node *n = ADD_NODE(&m, "Conv", "conv1", "c1", "x", "w1", "b1");
    gx_node_set_ints(n, "kernel_shape", k3, 2);
    gx_node_set_ints(n, "pads", p1, 4);
    ADD_NODE(&m, "BatchNormalization", "bn1", "n1", "c1", "bn.scale", "bn.bias", "bn.mean",
         "bn.var");
    ADD_NODE(&m, "Relu", "relu1", "r1", "n1");
    n = ADD_NODE(&m, "MaxPool", "pool1", "p1", "r1");
    gx_node_set_ints(n, "kernel_shape", k2, 2);
    gx_node_set_ints(n, "strides", k2, 2);
    n = ADD_NODE(&m, "Conv", "conv2", "c2", "p1", "w2");
    gx_node_set_ints(n, "kernel_shape", k3, 2);
    ADD_NODE(&m, "Relu", "relu2", "r2", "c2");
    ADD_NODE(&m, "GlobalAveragePool", "gap", "g", "r2");
    ADD_NODE(&m, "Flatten", "flat", "f", "g");
    ADD_NODE(&m, "Gemm", "fc", "y", "f", "fc.w", "fc.b");
    ck_assert_int_eq(gx_graph_add_output(m.g, "y"), GX_OK);
    return m;
}

/* x [2,6,16] -> LayerNormalization -> h; q = h Wq, k = h Wk; scores =
 * q kᵀ * 0.25 -> Softmax -> a; o = a h; y = Gelu(x + o) [2,6,16] */
static const int64_t s_blk_x[3] = {2, 6, 16};
static s_model s_block(gx_dtype dt)
{
    s_model m = s_begin("block", dt, 3, s_blk_x);
    const int64_t d = 16;
    s_const(&m, "ln.scale", 1, &d, 0.25f, 1.0f);
    s_const(&m, "ln.bias", 1, &d, 0.1f, 0);
    s_const(&m, "Wq", 2, (const int64_t[]){16, 16}, 0.3f, 0);
    s_const(&m, "Wk", 2, (const int64_t[]){16, 16}, 0.3f, 0);
    s_const(&m, "scale", 0, NULL, 0, 0.25f);
    gx_node *n = ADD_NODE(&m, "LayerNormalization", "ln", "h", "x", "ln.scale", "ln.bias");
    gx_node_set_int(n, "axis", -1);
    ADD_NODE(&m, "MatMul", "q", "q", "h", "Wq");
    ADD_NODE(&m, "MatMul", "k", "k", "h", "Wk");
    n = ADD_NODE(&m, "Transpose", "kT", "kT", "k");
    gx_node_set_ints(n, "perm", (const int64_t[]){0, 2, 1}, 3);
    ADD_NODE(&m, "MatMul", "qk", "s0", "q", "kT");
    ADD_NODE(&m, "Mul", "scaled", "s1", "s0", "scale");
    n = ADD_NODE(&m, "Softmax", "softmax", "a", "s1");
    gx_node_set_int(n, "axis", -1);
    ADD_NODE(&m, "MatMul", "av", "o", "a", "h");
    ADD_NODE(&m, "Add", "residual", "r", "x", "o");
    ADD_NODE(&m, "Gelu", "gelu", "y", "r");
    ck_assert_int_eq(gx_graph_add_output(m.g, "y"), GX_OK);
    return m;
}

/* The input of a model: fixed values, as float32 (float16-exact). */
static float *s_input(int ndim, const int64_t *shape)
{
    const int64_t n = s_numel(ndim, shape);
    float *v = malloc((size_t)n * sizeof *v + 1);
    ck_assert_ptr_nonnull(v);
    unsigned keep = s_seed;
    s_seed = 77;
    for (int64_t i = 0; i < n; i++)
        v[i] = 2.0f * s_randf();
    s_seed = keep;
    return v;
}

/* ---- compiling and running in this process ---- */

static gxd_plan *s_compile(const gx_graph *g, gx_dtype dt, int ndim, const int64_t *shape,
                           const void *data)
{
    gx_view in = {.dtype = dt, .ndim = ndim, .numel = s_numel(ndim, shape), .data = (void *)data};
    memcpy(in.shape, shape, (size_t)ndim * sizeof *shape);
    gxd_plan *p = NULL;
    char err[1024];
    int rc = gxd_compile(g, &in, &s_lim, &p, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "compile %s: %s", g->name, err);
    return p;
}

/* Output 0 of p run on x (nth shares per step), as float32; its dtype in
 * *dt. */
static float *s_run(const gxd_plan *p, const gx_tensor *x, int nth, int64_t *n, gx_dtype *dt,
                    void **bytes)
{
    gx_view in = {.dtype = gx_tensor_dtype(x), .ndim = gx_tensor_ndim(x),
                  .numel = gx_tensor_numel(x), .data = (void *)gx_tensor_cdata(x)};
    memcpy(in.shape, gx_tensor_shape(x), (size_t)in.ndim * sizeof *in.shape);
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    ck_assert_ptr_nonnull(arena);
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, &in, &s_lim, &stop, err, sizeof err), GX_OK);
    for (size_t s = 0; s < p->n_steps; s++) {
        gx_coop co = {0}; /* the shares run one after another */
        for (int ith = 0; ith < nth; ith++) {
            int rc = p->steps[s].kernel ? gxd_exec_step_share(&f, s, ith, nth, &co)
                                        : ith ? GX_OK : gxd_exec_step(&f, s);
            ck_assert_msg(rc == GX_OK, "step %zu: %s", s, err);
        }
    }
    const gx_view *v = gxd_frame_output(&f, 0);
    *n = v->numel;
    *dt = v->dtype;
    float *y = s_floats(v->dtype, v->data, v->numel);
    if (bytes) {
        size_t nb = (size_t)v->numel * gx_dtype_size(v->dtype);
        ck_assert_ptr_nonnull(*bytes = malloc(nb + 1));
        memcpy(*bytes, v->data, nb);
    }
    gxd_frame_fini(&f);
    free(arena);
    return y;
}

static size_t s_count(const gxd_plan *p, bool (*pred)(const gxd_plan *, const gxd_step *))
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n += !p->steps[i].folded && pred(p, &p->steps[i]);
    return n;
}

static bool s_is_convert(const gxd_plan *p, const gxd_step *s)
{
    (void)p;
    return s->convert;
}

/* A step that reads a float16 value: one that runs a half kernel. */
static bool s_reads_half(const gxd_plan *p, const gxd_step *s)
{
    if (s->convert)
        return false;
    for (int k = 0; k < s->n_in; k++)
        if (s->in[k] >= 0 && p->values[s->in[k]].view.dtype == GX_F16)
            return true;
    return false;
}

/* The checks every half model passes against its float32 twin: the
 * output is half, within float16 rounding of float32's (rtol, atol), the
 * same bytes with one and three shares per step; the constants are
 * converted once (no Cast step reads a constant; every float16 constant
 * a step reads has one float32 twin); Cast steps only at the input and
 * the output when the whole model computes in float32. */
static gxd_plan *s_check(s_model (*build)(gx_dtype), int ndim, const int64_t *shape, float rtol,
                         float atol, size_t want_casts)
{
    s_model m32 = build(GX_F32), m16 = build(GX_F16);
    float *xv = s_input(ndim, shape);
    gx_tensor *x32 = s_tensor(GX_F32, ndim, shape, xv), *x16 = s_tensor(GX_F16, ndim, shape, xv);
    gxd_plan *p32 = s_compile(m32.g, GX_F32, ndim, shape, NULL);
    gxd_plan *p16 = s_compile(m16.g, GX_F16, ndim, shape, NULL);
    int64_t n32, n16, n3;
    gx_dtype dt32, dt16, dt3;
    void *b1 = NULL, *b3 = NULL;
    float *ref = s_run(p32, x32, 1, &n32, &dt32, NULL);
    float *y = s_run(p16, x16, 1, &n16, &dt16, &b1);
    float *y3 = s_run(p16, x16, 3, &n3, &dt3, &b3);
    ck_assert_int_eq(dt32, GX_F32);
    ck_assert_int_eq(dt16, GX_F16);
    ck_assert_int_eq(n16, n32);
    ck_assert_msg(gxt_allclose(y, ref, (size_t)n32, rtol, atol),
                  "%s: float16 differs from float32 beyond float16 rounding", m16.g->name);
    ck_assert_msg(!memcmp(b1, b3, (size_t)n16 * 2), "%s: 1 and 3 shares differ", m16.g->name);

    /* constants converted once, at compile time */
    size_t consts16 = 0;
    for (size_t v = 0; v < p16->n_values; v++) {
        const gxd_value *c = &p16->values[v];
        if (c->kind != GXD_VALUE_CONST || c->view.dtype != GX_F16)
            continue;
        consts16++;
        char twin[256];
        snprintf(twin, sizeof twin, "%s:f32", c->name);
        size_t twins = 0;
        for (size_t u = 0; u < p16->n_values; u++)
            twins += !strcmp(p16->values[u].name, twin) &&
                     p16->values[u].kind == GXD_VALUE_CONST; /* (its data freed if packed) */
        ck_assert_msg(twins == 1, "%s: constant '%s' has %zu float32 twins", m16.g->name,
                      c->name, twins);
    }
    ck_assert_uint_eq(consts16, (size_t)m16.n_consts);
    ck_assert_uint_eq(p16->widen_consts, (size_t)m16.n_consts);
    for (size_t i = 0; i < p16->n_steps; i++)
        if (p16->steps[i].convert)
            ck_assert_msg(p16->values[p16->steps[i].in[0]].kind != GXD_VALUE_CONST,
                          "%s: step %zu converts a constant per job", m16.g->name, i);
    ck_assert_uint_eq(s_count(p16, s_is_convert), want_casts);
    ck_assert_uint_gt(p16->n_widened, 0);

    free(ref), free(y), free(y3), free(xv), free(b1), free(b3);
    gx_tensor_destroy(&x32);
    gx_tensor_destroy(&x16);
    gxd_plan_destroy(&p32);
    gx_graph_destroy(&m32.g);
    gx_graph_destroy(&m16.g); /* p16 keeps no pointer into the graph the caller reads */
    return p16;
}

START_TEST(test_f16_mlp)
{
    gxd_plan *p = s_check(s_mlp, 2, s_mlp_x, 2e-3f, 1e-3f, 2);
    /* every step computes in float32: widen:x in, narrow:y out */
    ck_assert_uint_eq(s_count(p, s_reads_half), 0);
    gxd_plan_destroy(&p);
}
END_TEST

START_TEST(test_f16_cnn)
{
    gxd_plan *p = s_check(s_cnn, 4, s_cnn_x, 2e-3f, 1e-3f, 2);
    ck_assert_uint_eq(s_count(p, s_reads_half), 0);
    /* the BatchNormalization still folds into the Conv (float32 weights) */
    bool folded = false;
    for (size_t i = 0; i < p->n_rewrites; i++)
        folded = folded || (p->rewrites[i].applied && strstr(p->rewrites[i].what, "bn1"));
    ck_assert_msg(folded, "bn1 was not folded into conv1");
    gxd_plan_destroy(&p);
}
END_TEST

/* A slice of the batch (replicas, seed 002) borrows the whole batch's
 * converted constants: nothing is converted again. */
START_TEST(test_f16_slice)
{
    s_model m = s_cnn(GX_F16);
    gxd_plan *p = s_compile(m.g, GX_F16, 4, s_cnn_x, NULL);
    ck_assert_int_eq(p->batch, 2);
    ck_assert_uint_eq(p->widen_consts, (size_t)m.n_consts);
    gx_view in = {.dtype = GX_F16, .ndim = 4, .shape = {1, 3, 8, 8}, .numel = 192};
    gxd_plan *sl = NULL;
    bool owned = false;
    char err[512];
    ck_assert_msg(gxd_plan_slice(p, m.g, &in, &s_lim, &sl, &owned, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert(!owned);
    /* the twins p still holds are borrowed; those it freed after packing
     * (or folding) them are converted again and freed again after the
     * slice's prepare pass (which borrows p's packed copies) */
    size_t borrowed = 0, again = 0;
    for (size_t v = 0; v < sl->n_values; v++) {
        const gxd_value *c = &sl->values[v];
        const size_t len = strlen(c->name);
        if (c->kind != GXD_VALUE_CONST || len < 4 || strcmp(c->name + len - 4, ":f32"))
            continue; /* a twin (not the rewrite's weights folded from one) */
        for (size_t u = 0; u < p->n_values; u++)
            if (!strcmp(p->values[u].name, c->name)) {
                ck_assert_ptr_eq(p->values[u].view.data, c->view.data);
                if (c->view.data)
                    borrowed++;
                else
                    again++;
            }
    }
    ck_assert_uint_eq(borrowed + again, (size_t)m.n_consts);
    ck_assert_uint_gt(again, 0); /* (the Gemm's weights, packed, and the folded Conv's) */
    ck_assert_uint_eq(sl->widen_consts, again);
    ck_assert_uint_gt(sl->n_prepared, 0);
    for (size_t i = 0; i < sl->n_prepared; i++)
        ck_assert(sl->prepared[i].borrowed);
    gxd_plan_destroy(&p); /* the slice's plan is p's (its cache) */
    gx_graph_destroy(&m.g);
}
END_TEST

START_TEST(test_f16_block)
{
    gxd_plan *p = s_check(s_block, 3, s_blk_x, 3e-3f, 2e-3f, 2);
    ck_assert_uint_eq(s_count(p, s_reads_half), 0);
    gxd_plan_destroy(&p);
}
END_TEST

/* bfloat16 the same way: within bfloat16's rounding (8 bits). */
START_TEST(test_bf16_mlp)
{
    s_model m32 = s_mlp(GX_F32), m16 = s_mlp(GX_BF16);
    float *xv = s_input(2, s_mlp_x);
    for (int i = 0; i < 64; i++) /* bfloat16-exact inputs for both */
        xv[i] = gx_bf16_to_f32(gx_f32_to_bf16(xv[i]));
    gx_tensor *x32 = s_tensor(GX_F32, 2, s_mlp_x, xv), *x16 = s_tensor(GX_BF16, 2, s_mlp_x, xv);
    gxd_plan *p32 = s_compile(m32.g, GX_F32, 2, s_mlp_x, NULL);
    gxd_plan *p16 = s_compile(m16.g, GX_BF16, 2, s_mlp_x, NULL);
    int64_t n32, n16;
    gx_dtype dt32, dt16;
    float *ref = s_run(p32, x32, 1, &n32, &dt32, NULL), *y = s_run(p16, x16, 2, &n16, &dt16, NULL);
    ck_assert_int_eq(dt16, GX_BF16);
    /* the weights differ too: float16-exact values rounded to bfloat16 */
    ck_assert(gxt_allclose(y, ref, (size_t)n32, 3e-2f, 2e-2f));
    ck_assert_uint_eq(p16->widen_casts, 2);
    free(ref), free(y), free(xv);
    gx_tensor_destroy(&x32);
    gx_tensor_destroy(&x16);
    gxd_plan_destroy(&p32);
    gxd_plan_destroy(&p16);
    gx_graph_destroy(&m32.g);
    gx_graph_destroy(&m16.g);
}
END_TEST

/* Mixed precision as exporters write it: a float32 input, Cast to
 * float16, a float16 part in which a step with a half kernel (Relu) sits
 * between two MatMuls and is a graph output of its own, Cast back to
 * float32 for the Softmax. The half values the graph hands to its Cast
 * nodes and outputs are rounded to float16 there, as it says. */
START_TEST(test_f16_mixed)
{
    const int64_t xs[2] = {3, 8};
    float w1[8 * 8], w2[8 * 4], xv[3 * 8];
    s_seed = 5;
    for (int i = 0; i < 64; i++)
        w1[i] = s_randf();
    for (int i = 0; i < 32; i++)
        w2[i] = s_randf();
    for (int i = 0; i < 24; i++)
        xv[i] = s_randf();
    gx_graph *g = gx_graph_new("mixed");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 2, xs), GX_OK);
    gx_tensor *t = s_tensor(GX_F16, 2, (const int64_t[]){8, 8}, w1);
    ck_assert_int_eq(gx_graph_add_const(g, "W1", &t), GX_OK);
    t = s_tensor(GX_F16, 2, (const int64_t[]){8, 4}, w2);
    ck_assert_int_eq(gx_graph_add_const(g, "W2", &t), GX_OK);
    s_model m = {.g = g, .dt = GX_F16};
    ck_assert_int_eq(gx_node_set_int(ADD_NODE(&m, "Cast", "to16", "x16", "x"), "to", 10), GX_OK);
    ADD_NODE(&m, "MatMul", "mm1", "h", "x16", "W1");
    ADD_NODE(&m, "Relu", "relu", "r", "h");
    ADD_NODE(&m, "MatMul", "mm2", "z16", "r", "W2");
    ck_assert_int_eq(gx_node_set_int(ADD_NODE(&m, "Cast", "to32", "z", "z16"), "to", 1), GX_OK);
    ADD_NODE(&m, "Softmax", "softmax", "y", "z");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(g, "r"), GX_OK);

    /* the reference, worked here in double: x rounded to float16, then
     * the products and the Relu exactly, r and z rounded to float16 */
    double want_r[3 * 8], want_y[3 * 4];
    for (int i = 0; i < 3; i++) {
        double z[4], mx = -1e30, sum = 0;
        for (int j = 0; j < 8; j++) {
            double h = 0;
            for (int k = 0; k < 8; k++)
                h += (double)gx_f16_to_f32(gx_f32_to_f16(xv[i * 8 + k])) * w1[k * 8 + j];
            want_r[i * 8 + j] = h > 0 ? h : 0;
        }
        for (int j = 0; j < 4; j++) {
            z[j] = 0;
            for (int k = 0; k < 8; k++)
                z[j] += want_r[i * 8 + k] * w2[k * 4 + j];
            z[j] = gx_f16_to_f32(gx_f32_to_f16((float)z[j]));
            mx = z[j] > mx ? z[j] : mx;
        }
        for (int j = 0; j < 4; j++)
            sum += exp(z[j] - mx);
        for (int j = 0; j < 4; j++)
            want_y[i * 4 + j] = exp(z[j] - mx) / sum;
    }
    gx_tensor *x = s_tensor(GX_F32, 2, xs, xv);
    gxd_plan *p = s_compile(g, GX_F32, 2, xs, NULL);
    int64_t n_y;
    gx_dtype dt;
    float *y = s_run(p, x, 2, &n_y, &dt, NULL);
    ck_assert_int_eq(dt, GX_F32);
    ck_assert_int_eq(n_y, 12);
    for (int i = 0; i < 12; i++)
        ck_assert_msg(fabs(y[i] - want_y[i]) <= 2e-3, "y[%d] = %g, want %g", i, y[i], want_y[i]);
    /* output 1, r: float16, what the graph's Relu gives, rounded once */
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {3, 8}, .numel = 24,
                  .data = (void *)gx_tensor_cdata(x)};
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, &in, &s_lim, &stop, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_OK);
    const gx_view *r = gxd_frame_output(&f, 1);
    ck_assert_int_eq(r->dtype, GX_F16);
    for (int i = 0; i < 24; i++)
        ck_assert_msg(fabs(gx_f16_to_f32(((const uint16_t *)r->data)[i]) - want_r[i]) <=
                          1e-3 * fabs(want_r[i]) + 1e-4,
                      "r[%d] = %g, want %g", i, gx_f16_to_f32(((const uint16_t *)r->data)[i]),
                      want_r[i]);
    gxd_frame_fini(&f);
    free(arena);
    /* mm1, relu (its input is float32 already) and mm2 compute in float32,
     * the graph's Casts round in float32 (to16 into x16's twin, to32 from
     * z16's twin): one Cast out for r (a graph output) */
    ck_assert_uint_eq(p->n_widened, 5);
    ck_assert_str_eq(p->widened[0].node, "to16");
    ck_assert_str_eq(p->widened[2].node, "relu");
    ck_assert_str_eq(p->widened[2].why, "its inputs are float32 already");
    ck_assert_str_eq(p->widened[4].node, "to32");
    ck_assert_uint_eq(p->widen_casts, 1);
    ck_assert_uint_eq(p->widen_consts, 2);
    free(y);
    gx_tensor_destroy(&x);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* explain names every float32 step, why, and the counts. */
START_TEST(test_f16_explain)
{
    s_model m = s_mlp(GX_F16);
    gxd_plan *p = s_compile(m.g, GX_F16, 2, s_mlp_x, NULL);
    char *json = gxd_plan_explain_json(p, m.g);
    ck_assert_ptr_nonnull(json);
    ck_assert_msg(
        strstr(json, "\"widen\":{\"casts\":2,\"constants\":4,\"constant_bytes\":") != NULL,
        "%s", json);
    ck_assert_msg(strstr(json, "{\"node\":\"fc1\",\"op\":\"MatMul\",\"from\":\"float16\","
                               "\"why\":\"no kernel in that dtype\"}") != NULL,
                  "%s", json);
    ck_assert_msg(strstr(json, "{\"node\":\"relu\",\"op\":\"Relu\",\"from\":\"float16\","
                               "\"why\":\"its inputs are float32 already\"}") != NULL,
                  "%s", json);
    free(json);
    gxd_plan_destroy(&p);
    /* a float32 plan: an empty section */
    gx_graph_destroy(&m.g);
    m = s_mlp(GX_F32);
    p = s_compile(m.g, GX_F32, 2, s_mlp_x, NULL);
    json = gxd_plan_explain_json(p, m.g);
    ck_assert_ptr_nonnull(strstr(json, "\"widen\":{\"casts\":0,\"constants\":0,"
                                       "\"constant_bytes\":0,\"steps\":[],"
                                       "\"device_half\":[]}"));
    free(json);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&m.g);
}
END_TEST

/* What stays refused, and how: a node whose inputs mix float16 and
 * bfloat16 (no one float32 twin dtype) keeps the dtype refusal; a node
 * refused for float16 whose float32 form is wrong for another reason says
 * that reason, not the dtype. */
START_TEST(test_f16_refusals)
{
    const int64_t xs[2] = {2, 4}, ws[2] = {4, 3};
    const float w[12] = {0};
    gx_graph *g = gx_graph_new("mixed_halves");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F16, 2, xs), GX_OK);
    gx_tensor *t = s_tensor(GX_BF16, 2, ws, w);
    ck_assert_int_eq(gx_graph_add_const(g, "W", &t), GX_OK);
    s_model m = {.g = g};
    ADD_NODE(&m, "MatMul", "mm", "y", "x", "W");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    gx_view in = {.dtype = GX_F16, .ndim = 2, .shape = {2, 4}, .numel = 8};
    gxd_plan *p = NULL;
    char err[512];
    int rc = gxd_compile(g, &in, &s_lim, &p, err, sizeof err);
    ck_assert_msg(rc == GX_EDTYPE && strstr(err, "node 'mm' (MatMul)"), "%s: %s",
                  gx_status_name(rc), err);
    gx_graph_destroy(&g);

    /* MatMul of [2,4] by [3,3]: the shapes are what is wrong */
    g = gx_graph_new("bad_shapes");
    ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F16, 2, xs), GX_OK);
    t = s_tensor(GX_F16, 2, (const int64_t[]){3, 3}, w);
    ck_assert_int_eq(gx_graph_add_const(g, "W", &t), GX_OK);
    m.g = g;
    ADD_NODE(&m, "MatMul", "mm", "y", "x", "W");
    ck_assert_int_eq(gx_graph_add_output(g, "y"), GX_OK);
    rc = gxd_compile(g, &in, &s_lim, &p, err, sizeof err);
    ck_assert_msg(rc == GX_ESHAPE && !strstr(err, "float16"), "%s: %s", gx_status_name(rc), err);
    ck_assert_ptr_null(p);
    gx_graph_destroy(&g);
}
END_TEST

/* RoundToFloat16 (ops/cpu/cast.c, and in a fused group's register run,
 * ops/cpu/fused.c) gives what a Cast to float16 and back gives, bit for
 * bit: a stride through every float32 bit pattern and the edges (the
 * whole range was checked once, bench note in docs/onnx.md). */
START_TEST(test_f16_round_op)
{
    enum { N = 1 << 13 };
    static const uint32_t edges[] = {
        0, 0x80000000u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x33800000u, 0x387fffffu,
        0x38800000u, 0x38800fffu, 0x38801000u, 0x38803000u, 0x477fefffu, 0x477ff000u,
        0x477fffffu, 0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00123u,
        0x7fffffffu, 0x00000001u, 0x807fffffu, 0x3f801000u, 0x3f803000u, 0xc77fefffu};
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    ck_assert(x && y && z);
    for (uint64_t base = 0; base < (1ull << 32); base += (1ull << 32) / 16) {
        for (int i = 0; i < N; i++) {
            uint32_t b = (uint32_t)(base + (uint64_t)i * 7919u);
            if (i < (int)(sizeof edges / sizeof *edges))
                b = edges[i];
            memcpy(&x[i], &b, sizeof b);
        }
        gx_view in = {.dtype = GX_F32, .ndim = 1, .shape = {N}, .numel = N, .data = x};
        gx_view out = in;
        out.data = y;
        const gx_kargs k = {.n_in = 1, .in = &in, .n_out = 1, .out = &out, .ith = 0, .nth = 1};
        gx_cpu_ROUND_F16(&k);
        /* a fused group Neg -> RoundToFloat16 -> Neg: one register run */
        gx_fused f = {.n_in = 1, .n_ops = 3, .n_tmp = 2, .dtype = GX_F32};
        f.op[0] = (gx_fused_op){GX_OP_NEG, gx_cpu_NEG, .n_in = 1, .in = {0}, .out = 0};
        f.op[1] = (gx_fused_op){GX_OP_ROUND_F16, gx_cpu_ROUND_F16, .n_in = 1,
                                .in = {GX_FUSED_TMP(0)}, .out = 1};
        f.op[2] = (gx_fused_op){GX_OP_NEG, gx_cpu_NEG, .n_in = 1, .in = {GX_FUSED_TMP(1)},
                                .out = -1};
        out.data = z;
        gx_cpu_fused(&f, &in, &out, NULL, 0, 1);
        for (int i = 0; i < N; i++) {
            const float want = gx_f16_to_f32(gx_f32_to_f16(x[i]));
            const float nwant = -gx_f16_to_f32(gx_f32_to_f16(-x[i]));
            uint32_t bx;
            memcpy(&bx, &x[i], sizeof bx);
            ck_assert_msg(!memcmp(&want, &y[i], 4), "kernel: %08x", bx);
            ck_assert_msg(!memcmp(&nwant, &z[i], 4), "fused: %08x", bx);
        }
    }
    free(x), free(y), free(z);
}
END_TEST

/* ISNet's decoder as converters write a float16 model with float32
 * Resize: x (float32) -> Cast to float16 -> Conv -> Relu (r1) -> Cast to
 * float32 -> Resize x2 -> Cast to float16 -> Concat with a skip (r0) ->
 * Conv -> Relu -> Cast to float32 (y), and a float32 Sigmoid side output
 * (s) of the second Conv through Casts to float32, float16, float32. */
static gx_graph *s_decoder(void)
{
    s_seed = 33;
    s_model m = s_begin("decoder", GX_F32, 4, (const int64_t[]){1, 3, 8, 8});
    m.dt = GX_F16;
    static const int64_t k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    s_const(&m, "w0", 4, (const int64_t[]){4, 3, 3, 3}, 0.4f, 0);
    s_const(&m, "w1", 4, (const int64_t[]){4, 4, 3, 3}, 0.4f, 0);
    s_const(&m, "w2", 4, (const int64_t[]){4, 8, 3, 3}, 0.3f, 0);
    s_const(&m, "b2", 1, (const int64_t[]){4}, 0.1f, 0);
    gx_tensor *sc = gx_tensor_new(GX_F32, 1, (const int64_t[]){4});
    memcpy(gx_tensor_data(sc), (const float[]){1, 1, 2, 2}, 16);
    ck_assert_int_eq(gx_graph_add_const(m.g, "scales", &sc), GX_OK);
    gx_node_set_int(ADD_NODE(&m, "Cast", "in16", "x16", "x"), "to", 10);
    gx_node *n = ADD_NODE(&m, "Conv", "conv0", "c0", "x16", "w0");
    gx_node_set_ints(n, "kernel_shape", k3, 2);
    gx_node_set_ints(n, "pads", p1, 4);
    ADD_NODE(&m, "Relu", "relu0", "r0", "c0");
    n = ADD_NODE(&m, "MaxPool", "pool", "q0", "r0");
    gx_node_set_ints(n, "kernel_shape", k2, 2);
    gx_node_set_ints(n, "strides", k2, 2);
    n = ADD_NODE(&m, "Conv", "conv1", "c1", "q0", "w1");
    gx_node_set_ints(n, "kernel_shape", k3, 2);
    gx_node_set_ints(n, "pads", p1, 4);
    ADD_NODE(&m, "Relu", "relu1", "r1", "c1");
    gx_node_set_int(ADD_NODE(&m, "Cast", "up.in", "r1f", "r1"), "to", 1);
    n = ADD_NODE(&m, "Resize", "up", "u", "r1f", "", "scales");
    gx_node_set_string(n, "mode", "linear");
    gx_node_set_int(ADD_NODE(&m, "Cast", "up.out", "u16", "u"), "to", 10);
    gx_node_set_int(ADD_NODE(&m, "Concat", "cat", "k", "u16", "r0"), "axis", 1);
    n = ADD_NODE(&m, "Conv", "conv2", "c2", "k", "w2", "b2");
    gx_node_set_ints(n, "kernel_shape", k3, 2);
    gx_node_set_ints(n, "pads", p1, 4);
    ADD_NODE(&m, "Relu", "relu2", "r2", "c2");
    gx_node_set_int(ADD_NODE(&m, "Cast", "out", "y", "r2"), "to", 1);
    gx_node_set_int(ADD_NODE(&m, "Cast", "side.in", "c2f", "c2"), "to", 1);
    gx_node_set_int(ADD_NODE(&m, "Cast", "side.h", "c2h", "c2f"), "to", 10);
    gx_node_set_int(ADD_NODE(&m, "Cast", "side.f", "c2g", "c2h"), "to", 1);
    ADD_NODE(&m, "Sigmoid", "side", "s", "c2g");
    ck_assert_int_eq(gx_graph_add_output(m.g, "y"), GX_OK);
    ck_assert_int_eq(gx_graph_add_output(m.g, "s"), GX_OK);
    return m.g;
}

/* Runs p on x to the end; the bytes of every output into out[] (malloc'd). */
static void s_run_all(const gxd_plan *p, const gxd_compile_limits *lim, const float *x,
                      void **out, size_t *bytes)
{
    char err[256];
    atomic_bool cancel = false;
    gxd_exec_stop stop = {&cancel, 0};
    void *arena = gx_aligned_alloc(p->arena_bytes + 1);
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 3, 8, 8}, .numel = 192,
                  .data = (void *)x};
    gxd_frame f;
    ck_assert_int_eq(gxd_frame_init(&f, p, arena, &in, lim, &stop, err, sizeof err), GX_OK);
    ck_assert_int_eq(gxd_exec_seq(&f), GX_OK);
    for (size_t o = 0; o < p->n_outputs; o++) {
        const gx_view *v = gxd_frame_output(&f, o);
        bytes[o] = (size_t)v->numel * gx_dtype_size(v->dtype);
        ck_assert_ptr_nonnull(out[o] = malloc(bytes[o] + 1));
        memcpy(out[o], v->data, bytes[o]);
    }
    gxd_frame_fini(&f);
    free(arena);
}

static size_t s_count_op(const gxd_plan *p, gx_op op)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->folded)
            continue;
        if (s->fused) {
            for (int o = 0; o < s->fused->n_ops; o++)
                n += s->fused->op[o].op == op;
        } else {
            n += s->op == op;
        }
    }
    return n;
}

/* The graph's Casts between float16 and float32 round in float32
 * (RoundToFloat16, fused with their neighbours where they can be), the
 * Concat between them runs on exact float32 twins, a Cast pair is one
 * rounding: the same bytes as the plan that keeps them as Casts
 * (no_round), with fewer steps over memory. */
START_TEST(test_f16_casts)
{
    gx_graph *g = s_decoder();
    float x[192];
    s_seed = 9;
    for (int i = 0; i < 192; i++)
        x[i] = 3.0f * s_randf() + 0.001f * (float)i; /* not float16-exact */
    gxd_compile_limits off = s_lim;
    off.no_round = true;
    for (int fuse = 0; fuse < 2; fuse++) {
        gxd_compile_limits on = s_lim;
        on.no_fuse = off.no_fuse = fuse == 0;
        gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 3, 8, 8}, .numel = 192};
        gxd_plan *p = NULL, *q = NULL;
        char err[512];
        ck_assert_msg(gxd_compile(g, &in, &on, &p, err, sizeof err) == GX_OK, "%s", err);
        ck_assert_msg(gxd_compile(g, &in, &off, &q, err, sizeof err) == GX_OK, "%s", err);
        void *a[2], *b[2];
        size_t na[2], nb[2];
        s_run_all(p, &on, x, a, na);
        s_run_all(q, &off, x, b, nb);
        for (int o = 0; o < 2; o++) {
            ck_assert_uint_eq(na[o], nb[o]);
            ck_assert_msg(!memcmp(a[o], b[o], na[o]), "fuse %d: output %d differs", fuse, o);
            free(a[o]), free(b[o]);
        }
        /* the old plan: the graph's 6 Casts, widen: and narrow: Casts */
        ck_assert_uint_ge(s_count_op(q, GX_OP_CAST), 8);
        ck_assert_uint_eq(s_count_op(q, GX_OP_ROUND_F16), 0);
        /* the new: every Cast rounds in float32 (in16, up.in, up.out, out,
         * side.in, side.h; and r0's exact twin for the Concat); side.f is
         * side.h's output's twin itself: no step */
        ck_assert_uint_eq(s_count_op(p, GX_OP_CAST), 0);
        ck_assert_uint_eq(s_count_op(p, GX_OP_ROUND_F16), 7);
        bool cat = false;
        for (size_t i = 0; i < p->n_widened; i++)
            cat = cat || (!strcmp(p->widened[i].node, "cat") && strstr(p->widened[i].why, "exact"));
        ck_assert_msg(cat, "the Concat does not run in float32");
        if (fuse) { /* up.in rounds in relu1's Conv epilogue, out in relu2's */
            size_t in_groups = 0;
            for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].fused && p->steps[i].fused->has_head)
                    for (int o = 0; o < p->steps[i].fused->n_ops; o++)
                        in_groups += p->steps[i].fused->op[o].op == GX_OP_ROUND_F16;
            ck_assert_uint_ge(in_groups, 1);
        }
        gxd_plan_destroy(&p);
        gxd_plan_destroy(&q);
    }
    gx_graph_destroy(&g);
}
END_TEST

/* A float16 model's float32 twins of its weights are dead once the
 * prepare pass packed them: freed, counted, out of the plan's memory. */
START_TEST(test_f16_freed)
{
    gx_graph *g = s_decoder();
    gx_view in = {.dtype = GX_F32, .ndim = 4, .shape = {1, 3, 8, 8}, .numel = 192};
    gxd_plan *p = NULL;
    char err[512];
    ck_assert_msg(gxd_compile(g, &in, &s_lim, &p, err, sizeof err) == GX_OK, "%s", err);
    bool *read = calloc(p->n_values + 1, sizeof *read);
    for (size_t i = 0; i < p->n_steps; i++)
        for (int k = 0; k < p->steps[i].n_in; k++)
            if (p->steps[i].in[k] >= 0)
                read[p->steps[i].in[k]] = true;
    size_t dead = 0, dead_bytes = 0;
    for (size_t v = 0; v < p->n_values; v++) {
        const gxd_value *c = &p->values[v];
        const size_t len = strlen(c->name);
        if (c->kind != GXD_VALUE_CONST || len < 4 || strcmp(c->name + len - 4, ":f32"))
            continue;
        if (!c->view.data) { /* freed: no step reads it */
            ck_assert_msg(!read[v], "'%s' is read but freed", c->name);
            dead++, dead_bytes += c->nbytes;
        } else {
            ck_assert_msg(read[v], "'%s' is kept but nothing reads it", c->name);
        }
    }
    free(read);
    ck_assert_uint_eq(p->freed_consts, dead);
    ck_assert_uint_eq(p->freed_const_bytes, dead_bytes);
    if (p->n_prepared) /* the Convs' weights packed for their layout */
        ck_assert_uint_gt(dead, 0);
    char *json = gxd_plan_explain_json(p, g);
    char want[96];
    snprintf(want, sizeof want, "\"freed\":%zu,\"freed_bytes\":%zu,", dead, dead_bytes);
    ck_assert_msg(strstr(json, want), "%s", json);
    free(json);
    /* the plan's memory: what it still owns */
    int64_t owned = 0;
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind == GXD_VALUE_CONST && p->values[v].view.data &&
            strstr(p->values[v].name, ":f32"))
            owned += (int64_t)p->values[v].nbytes;
    ck_assert_int_ge(gxd_plan_mem_bytes(p), owned);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
}
END_TEST

/* ---- every mode of a real gexecd ---- */

static gx_result *s_daemon_run(gx_client *c, const gx_graph_id *id, const gx_tensor *x,
                               gx_mode mode)
{
    gx_request *rq = gx_request_new();
    ck_assert_ptr_nonnull(rq);
    ck_assert_int_eq(gx_request_set_graph_id(rq, id), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "x", x), GX_OK);
    ck_assert_int_eq(gx_request_set_mode(rq, mode), GX_OK);
    gx_result *r = NULL;
    ck_assert_int_eq(gx_client_run(c, rq, &r), GX_OK);
    ck_assert_msg(gx_result_status(r) == GX_OK, "mode %s: %s", gx_mode_name(mode),
                  gx_result_message(r));
    gx_request_destroy(&rq);
    return r;
}

START_TEST(test_f16_modes)
{
    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    char err[256];
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    s_model (*const builds[3])(gx_dtype) = {s_mlp, s_cnn, s_block};
    const int nd[3] = {2, 4, 3};
    const int64_t *shapes[3] = {s_mlp_x, s_cnn_x, s_blk_x};
    for (int gi = 0; gi < 3; gi++) {
        s_model m16 = builds[gi](GX_F16), m32 = builds[gi](GX_F32);
        float *xv = s_input(nd[gi], shapes[gi]);
        gx_tensor *x16 = s_tensor(GX_F16, nd[gi], shapes[gi], xv);
        gx_tensor *x32 = s_tensor(GX_F32, nd[gi], shapes[gi], xv);
        gx_graph_id id16, id32;
        ck_assert_int_eq(gx_client_load(c, m16.g, &id16), GX_OK);
        ck_assert_int_eq(gx_client_load(c, m32.g, &id32), GX_OK);
        gx_result *ref = s_daemon_run(c, &id16, x16, GX_MODE_SEQ);
        gx_result *r32 = s_daemon_run(c, &id32, x32, GX_MODE_SEQ);
        const gx_tensor *y = gx_result_output(ref, 0), *y32 = gx_result_output(r32, 0);
        ck_assert_int_eq(gx_tensor_dtype(y), GX_F16);
        float *yf = s_floats(GX_F16, gx_tensor_cdata(y), gx_tensor_numel(y));
        ck_assert_msg(gxt_allclose(yf, gx_tensor_cdata(y32), (size_t)gx_tensor_numel(y32),
                                   3e-3f, 2e-3f),
                      "%s: float16 differs from float32 through gexecd", m16.g->name);
        free(yf);
        for (int rep = 0; rep < 2; rep++)
            for (int mo = 0; mo < GX_MODE_COUNT; mo++) {
                gx_result *r = s_daemon_run(c, &id16, x16, (gx_mode)mo);
                const gx_tensor *o = gx_result_output(r, 0);
                ck_assert_msg(gx_tensor_nbytes(o) == gx_tensor_nbytes(y) &&
                                  !memcmp(gx_tensor_cdata(o), gx_tensor_cdata(y),
                                          gx_tensor_nbytes(y)),
                              "%s, mode %s (ran %s): bytes differ from seq", m16.g->name,
                              gx_mode_name((gx_mode)mo), gx_result_info(r)->mode);
                gx_result_destroy(&r);
            }
        gx_result_destroy(&ref);
        gx_result_destroy(&r32);
        gx_tensor_destroy(&x16);
        gx_tensor_destroy(&x32);
        free(xv);
        gx_graph_destroy(&m16.g);
        gx_graph_destroy(&m32.g);
    }
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* ---- a float16 ONNX model ---- */

/* Everything a model built here allocates is ot_alloc'd (zeroed), freed
 * at the end of the test (ot_free_all). */

static Onnx__ValueInfoProto *s_vi(const char *name, int64_t d0, int64_t d1)
{
    Onnx__ValueInfoProto *vi = ot_alloc(sizeof *vi);
    Onnx__TypeProto *tp = ot_alloc(sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ot_alloc(sizeof *tt);
    Onnx__TensorShapeProto *sp = ot_alloc(sizeof *sp);
    Onnx__TensorShapeProto__Dimension *d = ot_alloc(2 * sizeof *d), **dp = ot_alloc(2 * sizeof *dp);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d[i].dim_value = i ? d1 : d0;
        dp[i] = &d[i];
    }
    sp->n_dim = 2;
    sp->dim = dp;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* A float16 initializer with raw data (the bit patterns, little endian). */
static Onnx__TensorProto *s_init(const char *name, int64_t d0, int64_t d1, const float *v)
{
    Onnx__TensorProto *t = ot_alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    int64_t *dims = ot_alloc(2 * sizeof *dims);
    uint16_t *raw = ot_alloc((size_t)(d0 * d1) * sizeof *raw);
    dims[0] = d0, dims[1] = d1;
    for (int64_t i = 0; i < d0 * d1; i++)
        raw[i] = gx_f32_to_f16(v[i]);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16;
    t->n_dims = 2;
    t->dims = dims;
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)raw;
    t->raw_data.len = (size_t)(d0 * d1) * sizeof *raw;
    return t;
}

static Onnx__NodeProto *s_onode(const char *op, char **in, size_t n_in, char **out)
{
    Onnx__NodeProto *n = ot_alloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->input = in;
    n->n_input = n_in;
    n->output = out;
    n->n_output = 1;
    return n;
}

/* x [2,4] float16 -> MatMul W [4,3] -> Add b [1,3] -> Softmax -> y, as a
 * converter writes it (opset 13, float16 weights in raw_data). */
START_TEST(test_f16_onnx)
{
    static const float w[12] = {0.5f, -1, 0.25f, 1, 0.75f, -0.5f, -0.25f, 0.125f, 2, 0, 1, -1};
    static const float b[3] = {0.1f, -0.2f, 0.3f};
    static const float xv[8] = {1, 2, -1, 0.5f, 0, -2, 1.5f, 1};
    static char *mm_in[2] = {"x", "W"}, *mm_out[1] = {"h"}, *add_in[2] = {"h", "b"},
                *add_out[1] = {"z"}, *sm_in[1] = {"z"}, *sm_out[1] = {"y"};
    Onnx__GraphProto *gp = ot_alloc(sizeof *gp);
    onnx__graph_proto__init(gp);
    gp->name = "f16mlp";
    Onnx__NodeProto **nodes = ot_alloc(3 * sizeof *nodes);
    nodes[0] = s_onode("MatMul", mm_in, 2, mm_out);
    nodes[1] = s_onode("Add", add_in, 2, add_out);
    nodes[2] = s_onode("Softmax", sm_in, 1, sm_out);
    gp->node = nodes;
    gp->n_node = 3;
    Onnx__TensorProto **inits = ot_alloc(2 * sizeof *inits);
    inits[0] = s_init("W", 4, 3, w);
    inits[1] = s_init("b", 1, 3, b);
    gp->initializer = inits;
    gp->n_initializer = 2;
    Onnx__ValueInfoProto **ins = ot_alloc(sizeof *ins), **outs = ot_alloc(sizeof *outs);
    ins[0] = s_vi("x", 2, 4);
    outs[0] = s_vi("y", 2, 3);
    gp->input = ins;
    gp->n_input = 1;
    gp->output = outs;
    gp->n_output = 1;
    Onnx__ModelProto mp;
    onnx__model_proto__init(&mp);
    mp.has_ir_version = 1;
    mp.ir_version = 8;
    Onnx__OperatorSetIdProto op;
    onnx__operator_set_id_proto__init(&op);
    op.domain = "";
    op.has_version = 1;
    op.version = 13;
    Onnx__OperatorSetIdProto *ops[1] = {&op};
    mp.opset_import = ops;
    mp.n_opset_import = 1;
    mp.graph = gp;
    size_t len = protobuf_c_message_get_packed_size(&mp.base);
    uint8_t *buf = ot_alloc(len + 1);
    ck_assert_uint_eq(protobuf_c_message_pack(&mp.base, buf), len);
    gx_graph *g = NULL;
    char err[512];
    ck_assert_msg(gx_graph_parse_onnx(buf, len, NULL, &g, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(g->inputs[0].dtype, GX_F16);
    ck_assert_int_eq(g->consts[0].t->dtype, GX_F16);

    gx_tensor *x = s_tensor(GX_F16, 2, (const int64_t[]){2, 4}, xv);
    gxd_plan *p = s_compile(g, GX_F16, 2, (const int64_t[]){2, 4}, NULL);
    int64_t n;
    gx_dtype dt;
    float *y = s_run(p, x, 1, &n, &dt, NULL);
    ck_assert_int_eq(dt, GX_F16);
    for (int i = 0; i < 2; i++) {
        double z[3], sum = 0;
        for (int j = 0; j < 3; j++) {
            z[j] = b[j];
            for (int k = 0; k < 4; k++)
                z[j] += (double)xv[i * 4 + k] * w[k * 3 + j];
            sum += exp(z[j]);
        }
        for (int j = 0; j < 3; j++)
            ck_assert_msg(fabs(y[i * 3 + j] - exp(z[j]) / sum) <= 1e-3,
                          "y[%d][%d] = %g, want %g", i, j, y[i * 3 + j], exp(z[j]) / sum);
    }
    free(y);
    gx_tensor_destroy(&x);
    gxd_plan_destroy(&p);
    gx_graph_destroy(&g);
    ot_free_all();
}
END_TEST

Suite *f16_suite(void)
{
    Suite *s = suite_create("f16");
    TCase *tc = tcase_create("widen");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_f16_mlp);
    tcase_add_test(tc, test_f16_cnn);
    tcase_add_test(tc, test_f16_slice);
    tcase_add_test(tc, test_f16_block);
    tcase_add_test(tc, test_bf16_mlp);
    tcase_add_test(tc, test_f16_mixed);
    tcase_add_test(tc, test_f16_explain);
    tcase_add_test(tc, test_f16_refusals);
    tcase_add_test(tc, test_f16_onnx);
    tcase_add_test(tc, test_f16_round_op);
    tcase_add_test(tc, test_f16_casts);
    tcase_add_test(tc, test_f16_freed);
    suite_add_tcase(s, tc);
    tc = tcase_create("modes");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_f16_modes);
    suite_add_tcase(s, tc);
    return s;
}
