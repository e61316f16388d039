/*
 * YAML graph files (libclient/yaml_graph.c, docs/graph-format.md): the
 * examples, inline data of every dtype, .npy constants, attribute typing,
 * symbolic dims, and errors that must carry the exact line:column.
 */
#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tests/testutil.h"

#define SRC "t.yaml"

static int s_parse(const char *text, const char *base, gx_graph **g, char *err, size_t errlen)
{
    return gx_graph_parse_yaml(text, strlen(text), base, SRC, g, err, errlen);
}

static gx_graph *s_parse_ok(const char *text)
{
    char err[512] = "";
    gx_graph *g = NULL;
    int rc = s_parse(text, NULL, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "parse failed: %s\n%s", err, text);
    ck_assert_ptr_nonnull(g);
    return g;
}

/* text must fail with status; the message must start with "t.yaml:L:C: "
 * and contain needle. */
static void s_expect_err(const char *text, int status, int line, int col, const char *needle)
{
    char err[512] = "", prefix[64];
    gx_graph *g = (gx_graph *)&g;
    int rc = s_parse(text, NULL, &g, err, sizeof err);
    ck_assert_msg(rc == status, "got %s (%s), want %s, for:\n%s", gx_status_name(rc), err,
                  gx_status_name(status), text);
    ck_assert_ptr_null(g);
    snprintf(prefix, sizeof prefix, SRC ":%d:%d: ", line, col);
    ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "message '%s' does not start '%s'",
                  err, prefix);
    ck_assert_msg(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
}

static const gx_const *s_const(const gx_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_consts; i++)
        if (strcmp(g->consts[i].name, name) == 0)
            return &g->consts[i];
    ck_abort_msg("no constant '%s'", name);
    return NULL;
}

static const gx_attr *s_attr(const gx_node *n, const char *name)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) == 0)
            return &n->attr[i];
    ck_abort_msg("no attribute '%s' on %s", name, n->name);
    return NULL;
}

static void s_check_shape(int ndim, const int64_t *shape, int want_ndim, const int64_t *want)
{
    ck_assert_int_eq(ndim, want_ndim);
    for (int i = 0; i < want_ndim; i++)
        ck_assert_int_eq(shape[i], want[i]);
}

START_TEST(test_example_mlp)
{
    char err[512] = "";
    gx_graph *g = NULL;
    int rc = gx_graph_load_yaml(gxt_srcpath("examples/mlp.yaml"), &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);

    ck_assert_str_eq(g->name, "mlp");
    ck_assert_uint_eq(gx_graph_input_count(g), 1);
    ck_assert_str_eq(gx_graph_input_name(g, 0), "x");
    ck_assert_int_eq(g->inputs[0].dtype, GX_F32);
    s_check_shape(g->inputs[0].ndim, g->inputs[0].shape, 2, (int64_t[]){1, 4});
    ck_assert_uint_eq(gx_graph_output_count(g), 1);
    ck_assert_str_eq(gx_graph_output_name(g, 0), "y");
    ck_assert_int_eq(g->outputs[0].dtype, GX_F32);
    s_check_shape(g->outputs[0].ndim, g->outputs[0].shape, 2, (int64_t[]){1, 3});

    ck_assert_uint_eq(g->n_consts, 4);
    const gx_const *w1 = s_const(g, "w1"), *b2 = s_const(g, "b2");
    ck_assert_int_eq(w1->t->dtype, GX_F32);
    s_check_shape(w1->t->ndim, w1->t->shape, 2, (int64_t[]){4, 5});
    const float *w = w1->t->data;
    ck_assert_float_eq(w[0], 0.25f);
    ck_assert_float_eq(w[4], -0.40f);
    ck_assert_float_eq(w[19], 0.98f);
    s_check_shape(b2->t->ndim, b2->t->shape, 1, (int64_t[]){3});
    ck_assert_float_eq(((const float *)b2->t->data)[1], 0.38f);
    s_check_shape(s_const(g, "w2")->t->ndim, s_const(g, "w2")->t->shape, 2, (int64_t[]){5, 3});

    static const char *const ops[] = {"MatMul", "Add", "Relu", "MatMul", "Add", "Softmax"};
    ck_assert_uint_eq(gx_graph_node_count(g), 6);
    for (size_t i = 0; i < 6; i++)
        ck_assert_str_eq(g->nodes[i]->op, ops[i]);
    const gx_node *fc1 = g->nodes[0], *sm = g->nodes[5];
    ck_assert_str_eq(fc1->name, "fc1");
    ck_assert_uint_eq(fc1->n_in, 2);
    ck_assert_str_eq(fc1->in[0], "x");
    ck_assert_str_eq(fc1->in[1], "w1");
    ck_assert_uint_eq(fc1->n_out, 1);
    ck_assert_str_eq(fc1->out[0], "h1");
    ck_assert_uint_eq(fc1->n_attr, 0);
    ck_assert_str_eq(sm->name, "softmax");
    ck_assert_uint_eq(sm->n_attr, 1);
    ck_assert_int_eq(s_attr(sm, "axis")->type, GX_ATTR_INT);
    ck_assert_int_eq(s_attr(sm, "axis")->i, -1);
    ck_assert_str_eq(sm->out[0], "y");
    gx_graph_destroy(&g);
    ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_example_broadcast)
{
    char err[512] = "";
    gx_graph *g = NULL;
    int rc = gx_graph_load_yaml(gxt_srcpath("examples/broadcast.yaml"), &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_uint_eq(gx_graph_node_count(g), 2);
    ck_assert_str_eq(g->nodes[0]->op, "Add");
    ck_assert_str_eq(g->nodes[1]->op, "Mul");
    ck_assert_int_eq(g->outputs[0].ndim, -1); /* declared by name only */
    s_check_shape(s_const(g, "c")->t->ndim, s_const(g, "c")->t->shape, 1, (int64_t[]){3});
    s_check_shape(s_const(g, "k")->t->ndim, s_const(g, "k")->t->shape, 2, (int64_t[]){2, 1});
    gx_graph_destroy(&g);

    /* the example inputs are valid .npy files of the declared shapes */
    gx_tensor *t = NULL;
    ck_assert_int_eq(gx_npy_load(gxt_srcpath("examples/mlp_input.npy"), &t, err, sizeof err),
                     GX_OK);
    ck_assert_int_eq(t->dtype, GX_F32);
    s_check_shape(t->ndim, t->shape, 2, (int64_t[]){1, 4});
    gx_tensor_destroy(&t);
    ck_assert_int_eq(
        gx_npy_load(gxt_srcpath("examples/broadcast_input.npy"), &t, err, sizeof err), GX_OK);
    s_check_shape(t->ndim, t->shape, 2, (int64_t[]){2, 3});
    gx_tensor_destroy(&t);
}
END_TEST

static const char s_all_dtypes[] =
    "nodes: []\n"
    "outputs: []\n"
    "constants:\n"
    "  - {name: f32, dtype: float32, shape: [6], data: [1.5, -2, 1e-3, inf, -.inf, .nan]}\n"
    "  - {name: f32max, dtype: f32, shape: [2], data: [3.4028235e38, -3.4028234e38]}\n"
    "  - {name: f64, dtype: float64, shape: [3], data: [0.1, -1e300, 5]}\n"
    "  - {name: f16, dtype: float16, shape: [8],\n"
    "     data: [1, 0.1, 65504, -0.0, 5.960464477539063e-08, 1e-9, -inf, 0.333251953125]}\n"
    "  - {name: bf16, dtype: bfloat16, shape: [5],\n"
    "     data: [1, 1.00390625, 1.01171875, -3.0e38, .nan]}\n"
    "  - {name: i64, dtype: int64, shape: [3],\n"
    "     data: [-9223372036854775808, 9223372036854775807, +7]}\n"
    "  - {name: i32, dtype: int32, shape: [2], data: [-2147483648, 2147483647]}\n"
    "  - {name: i8, dtype: int8, shape: [3], data: [-128, 127, 0]}\n"
    "  - {name: u8, dtype: uint8, shape: [2], data: [0, 255]}\n"
    "  - {name: b, dtype: bool, shape: [2, 3], data: [true, false, 1, 0, True, FALSE]}\n"
    "  - {name: scalar, dtype: float32, shape: [], data: 2.5}\n"
    "  - {name: scalar1, dtype: int64, shape: [], data: [42]}\n"
    "  - {name: empty, dtype: float32, shape: [0, 3], data: []}\n";

/* A subgraph attribute is a graph map, parsed like the file itself. */
START_TEST(test_example_loop)
{
    gx_graph *g = NULL;
    char err[512];
    ck_assert_msg(gx_graph_load_yaml(gxt_srcpath("examples/loop.yaml"), &g, err, sizeof err) == GX_OK,
                  "%s", err);
    ck_assert_int_eq(g->n_nodes, 1);
    const gx_node *loop = g->nodes[0];
    ck_assert_str_eq(loop->op, "Loop");
    ck_assert_int_eq(loop->n_attr, 1);
    ck_assert_int_eq(loop->attr[0].type, GX_ATTR_GRAPH);
    const gx_graph *body = loop->attr[0].g;
    ck_assert_int_eq(body->n_inputs, 3);
    ck_assert_int_eq(body->n_nodes, 3);
    ck_assert_int_eq(body->n_outputs, 3);
    ck_assert_str_eq(body->outputs[2].name, "partial");
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_inline_dtypes)
{
    gx_graph *g = s_parse_ok(s_all_dtypes);
    const gx_tensor *t = s_const(g, "f32")->t;
    const float *f = t->data;
    ck_assert_int_eq(t->dtype, GX_F32);
    ck_assert_float_eq(f[0], 1.5f);
    ck_assert_float_eq(f[1], -2.0f);
    ck_assert_float_eq(f[2], 1e-3f);
    ck_assert(isinf(f[3]) && f[3] > 0);
    ck_assert(isinf(f[4]) && f[4] < 0);
    ck_assert(isnan(f[5]));
    f = s_const(g, "f32max")->t->data;
    ck_assert_float_eq(f[0], 3.4028234663852886e38f);
    ck_assert_float_eq(f[1], -3.4028234663852886e38f);

    const double *d = s_const(g, "f64")->t->data;
    ck_assert_double_eq(d[0], 0.1);
    ck_assert_double_eq(d[1], -1e300);
    ck_assert_double_eq(d[2], 5.0);

    t = s_const(g, "f16")->t;
    ck_assert_int_eq(t->dtype, GX_F16);
    static const uint16_t want16[8] = {0x3c00, 0x2e66, 0x7bff, 0x8000,
                                       0x0001, 0x0000, 0xfc00, 0x3555};
    ck_assert_mem_eq(t->data, want16, sizeof want16);

    t = s_const(g, "bf16")->t;
    const uint16_t *h = t->data;
    ck_assert_int_eq(t->dtype, GX_BF16);
    ck_assert_uint_eq(h[0], 0x3f80);
    ck_assert_uint_eq(h[1], 0x3f80); /* tie: to even */
    ck_assert_uint_eq(h[2], 0x3f82); /* tie: to even, upwards */
    ck_assert_uint_eq(h[3], 0xff62);
    ck_assert_uint_eq(h[4] & 0x7f80, 0x7f80);
    ck_assert_uint_ne(h[4] & 0x7f, 0);

    const int64_t *i64 = s_const(g, "i64")->t->data;
    ck_assert_int_eq(i64[0], INT64_MIN);
    ck_assert_int_eq(i64[1], INT64_MAX);
    ck_assert_int_eq(i64[2], 7);
    const int32_t *i32 = s_const(g, "i32")->t->data;
    ck_assert_int_eq(i32[0], INT32_MIN);
    ck_assert_int_eq(i32[1], INT32_MAX);
    ck_assert_mem_eq(s_const(g, "i8")->t->data, "\x80\x7f\x00", 3);
    ck_assert_mem_eq(s_const(g, "u8")->t->data, "\x00\xff", 2);
    t = s_const(g, "b")->t;
    ck_assert_int_eq(t->dtype, GX_BOOL);
    ck_assert_mem_eq(t->data, "\1\0\1\0\1\0", 6);

    t = s_const(g, "scalar")->t;
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_int_eq(t->numel, 1);
    ck_assert_float_eq(*(const float *)t->data, 2.5f);
    ck_assert_int_eq(*(const int64_t *)s_const(g, "scalar1")->t->data, 42);
    t = s_const(g, "empty")->t;
    ck_assert_int_eq(t->numel, 0);
    s_check_shape(t->ndim, t->shape, 2, (int64_t[]){0, 3});
    gx_graph_destroy(&g);
}
END_TEST

/* Values that do not fit their dtype; the column points at the value. */
START_TEST(test_inline_range)
{
    static const struct {
        const char *dtype, *data;
        int col; /* of the second value */
        const char *needle;
    } cases[] = {
        {"int8", "[1, 128]", 50, "data[1]: 128 is out of range for int8"},
        {"int8", "[1, -129]", 50, "out of range for int8"},
        {"uint8", "[1, -1]", 51, "out of range for uint8"},
        {"int32", "[1, 2147483648]", 51, "out of range for int32"},
        {"int64", "[1, 9223372036854775808]", 51, "out of range for int64"},
        {"int32", "[1, 1.5]", 51, "1.5 is not an integer"},
        {"int64", "[1, 1e3]", 51, "not an integer"},
        {"float32", "[1, 1e39]", 53, "out of range for float32"},
        {"float64", "[1, 1e999]", 53, "out of range for float64"},
        {"float16", "[1, 65520]", 53, "out of range for float16"},
        {"bfloat16", "[1, 3.4e38]", 54, "out of range for bfloat16"},
        {"bool", "[1, 2]", 50, "'2' is not a bool"},
        {"float32", "[1, abc]", 53, "'abc' is not a number"},
        {"float32", "[1, '2']", 53, "quoted string"},
        {"float32", "[1, 0x10]", 53, "not a number"},
        {"float32", "[1, [2]]", 53, "expected a scalar"},
    };
    char text[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text,
                 "nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: c, dtype: %s, shape: [2], data: %s}\n",
                 cases[i].dtype, cases[i].data);
        s_expect_err(text, GX_EFORMAT, 4, cases[i].col, cases[i].needle);
    }
}
END_TEST

/* Numbers read the same whatever LC_NUMERIC the host program set. */
START_TEST(test_locale)
{
    static const char *const locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "C.UTF-8"};
    const char *set = NULL;
    for (size_t i = 0; i < sizeof locales / sizeof locales[0] && !set; i++)
        set = setlocale(LC_NUMERIC, locales[i]);
    gx_graph *g = s_parse_ok("nodes: [{op: A, inputs: [], outputs: [y], attrs: {f: 0.5}}]\n"
                             "outputs: [y]\n"
                             "constants: [{name: c, dtype: f64, shape: [1], data: [2.25]}]\n");
    setlocale(LC_NUMERIC, "C");
    ck_assert_double_eq(s_attr(g->nodes[0], "f")->f, 0.5);
    ck_assert_double_eq(*(const double *)s_const(g, "c")->t->data, 2.25);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_npy_constants)
{
    char *dir = gxt_tmpdir(), path[1024], err[512] = "";
    int64_t shape[2] = {2, 3};
    gx_tensor *t = gx_tensor_new(GX_I32, 2, shape);
    for (int i = 0; i < 6; i++)
        ((int32_t *)t->data)[i] = i * 10 - 7;
    snprintf(path, sizeof path, "%s/b.npy", dir);
    ck_assert_int_eq(gx_npy_save(path, t, err, sizeof err), GX_OK);

    static const char yaml[] =
        "nodes: [{op: Identity, inputs: [b], outputs: [y]}]\n"
        "outputs: [y]\n"
        "constants:\n"
        "  - {name: b, file: b.npy}\n"
        "  - {name: b2, file: b.npy, dtype: int32, shape: [2, 3]}\n";
    /* from a file: paths are relative to the YAML file's directory */
    snprintf(path, sizeof path, "%s/g.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(yaml, f);
    fclose(f);
    gx_graph *g = NULL;
    int rc = gx_graph_load_yaml(path, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_mem_eq(s_const(g, "b")->t->data, t->data, 24);
    ck_assert_int_eq(s_const(g, "b2")->t->dtype, GX_I32);
    gx_graph_destroy(&g);

    /* from memory with base_dir */
    rc = gx_graph_parse_yaml(yaml, strlen(yaml), dir, SRC, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_mem_eq(s_const(g, "b")->t->data, t->data, 24);
    gx_graph_destroy(&g);

    /* an absolute path ignores base_dir */
    char text[2048];
    snprintf(text, sizeof text, "nodes: []\noutputs: []\nconstants: [{name: b, file: '%s/b.npy'}]\n",
             dir);
    rc = gx_graph_parse_yaml(text, strlen(text), "/nonexistent", SRC, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    gx_graph_destroy(&g);

    /* errors: a missing file, a mismatched declaration, a bad file */
    const char *missing = "nodes: []\noutputs: []\nconstants:\n  - {name: b, file: nope.npy}\n";
    rc = gx_graph_parse_yaml(missing, strlen(missing), dir, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EIO);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err, SRC ":4:21: constants[0].file: ") == err, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "nope.npy"));

    const char *bad_dt = "nodes: []\noutputs: []\nconstants:\n"
                         "  - {name: b, file: b.npy, dtype: float32}\n";
    rc = gx_graph_parse_yaml(bad_dt, strlen(bad_dt), dir, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EDTYPE);
    ck_assert_msg(strstr(err, SRC ":4:35: constants[0]: dtype float32, but the file holds int32"),
                  "%s", err);
    const char *bad_shape = "nodes: []\noutputs: []\nconstants:\n"
                            "  - {name: b, file: b.npy, shape: [3, 2]}\n";
    rc = gx_graph_parse_yaml(bad_shape, strlen(bad_shape), dir, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_ESHAPE);
    ck_assert_msg(strstr(err, SRC ":4:35: constants[0]: shape [3,2], but the file holds [2,3]"),
                  "%s", err);

    snprintf(path, sizeof path, "%s/junk.npy", dir);
    f = fopen(path, "w");
    fputs("not an npy file", f);
    fclose(f);
    const char *junk = "nodes: []\noutputs: []\nconstants:\n  - {name: j, file: junk.npy}\n";
    rc = gx_graph_parse_yaml(junk, strlen(junk), dir, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EFORMAT);
    ck_assert_msg(strstr(err, SRC ":4:21: ") && strstr(err, "junk.npy: not a .npy file"), "%s",
                  err);

    const char *both = "nodes: []\noutputs: []\nconstants:\n"
                       "  - {name: b, file: b.npy, dtype: int32, shape: [1], data: [1]}\n";
    rc = gx_graph_parse_yaml(both, strlen(both), dir, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EFORMAT);
    ck_assert_msg(strstr(err, SRC ":4:21: constants[0]: 'data' and 'file' are exclusive"), "%s",
                  err);
    gx_tensor_destroy(&t);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_attr_typing)
{
    static const char yaml[] =
        "outputs: [y]\n"
        "nodes:\n"
        "  - op: Custom\n"
        "    inputs: [a, \"\", b]\n"
        "    outputs: [y, z]\n"
        "    attrs:\n"
        "      i: 3\n"
        "      neg: -12\n"
        "      f: 0.5\n"
        "      e: 1e-3\n"
        "      pinf: inf\n"
        "      ninf: -.inf\n"
        "      nan: .nan\n"
        "      s: hello world\n"
        "      q: \"3\"\n"
        "      sq: '0.5'\n"
        "      tf: true\n"
        "      ints: [1, 2, -3]\n"
        "      floats: [1, 2.5, -1e2]\n"
        "      empty: []\n"
        "      t: {dtype: int64, shape: [2], data: [1, -1]}\n"
        "      big: 9223372036854775807\n";
    gx_graph *g = s_parse_ok(yaml);
    ck_assert_uint_eq(g->n_nodes, 1);
    const gx_node *n = g->nodes[0];
    ck_assert_str_eq(n->op, "Custom");
    ck_assert_ptr_nonnull(n->name); /* generated */
    ck_assert_uint_eq(n->n_in, 3);
    ck_assert_str_eq(n->in[1], "");
    ck_assert_uint_eq(n->n_out, 2);
    ck_assert_uint_eq(n->n_attr, 16);

    ck_assert_int_eq(s_attr(n, "i")->type, GX_ATTR_INT);
    ck_assert_int_eq(s_attr(n, "i")->i, 3);
    ck_assert_int_eq(s_attr(n, "neg")->i, -12);
    ck_assert_int_eq(s_attr(n, "big")->i, INT64_MAX);
    ck_assert_int_eq(s_attr(n, "f")->type, GX_ATTR_FLOAT);
    ck_assert_double_eq(s_attr(n, "f")->f, 0.5);
    ck_assert_double_eq(s_attr(n, "e")->f, 1e-3);
    ck_assert(isinf(s_attr(n, "pinf")->f) && s_attr(n, "pinf")->f > 0);
    ck_assert(isinf(s_attr(n, "ninf")->f) && s_attr(n, "ninf")->f < 0);
    ck_assert(isnan(s_attr(n, "nan")->f));
    ck_assert_int_eq(s_attr(n, "s")->type, GX_ATTR_STRING);
    ck_assert_str_eq(s_attr(n, "s")->s, "hello world");
    ck_assert_int_eq(s_attr(n, "q")->type, GX_ATTR_STRING);
    ck_assert_str_eq(s_attr(n, "q")->s, "3");
    ck_assert_str_eq(s_attr(n, "sq")->s, "0.5");
    ck_assert_int_eq(s_attr(n, "tf")->type, GX_ATTR_STRING);

    const gx_attr *a = s_attr(n, "ints");
    ck_assert_int_eq(a->type, GX_ATTR_INTS);
    ck_assert_uint_eq(a->n, 3);
    ck_assert_int_eq(a->ints[2], -3);
    a = s_attr(n, "floats");
    ck_assert_int_eq(a->type, GX_ATTR_FLOATS);
    ck_assert_uint_eq(a->n, 3);
    ck_assert_double_eq(a->floats[0], 1.0);
    ck_assert_double_eq(a->floats[1], 2.5);
    ck_assert_double_eq(a->floats[2], -100.0);
    a = s_attr(n, "empty");
    ck_assert_int_eq(a->type, GX_ATTR_INTS);
    ck_assert_uint_eq(a->n, 0);
    a = s_attr(n, "t");
    ck_assert_int_eq(a->type, GX_ATTR_TENSOR);
    ck_assert_int_eq(a->t->dtype, GX_I64);
    ck_assert_int_eq(((const int64_t *)a->t->data)[1], -1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_attr_errors)
{
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], "
                 "attrs: {perm: [1, x]}}\n",
                 GX_EATTR, 3, 57, "nodes[0].attrs.perm[1]: 'x' is not a number");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], "
                 "attrs: {n: 99999999999999999999}}\n",
                 GX_EATTR, 3, 50, "nodes[0].attrs.n: 99999999999999999999 is out of range");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], "
                 "attrs: {a: 1, a: 2}}\n",
                 GX_EATTR, 3, 53, "duplicate attribute 'a'");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], "
                 "attrs: {t: {dtype: int64, shape: [2], data: [1]}}}\n",
                 GX_ESHAPE, 3, 83, "nodes[0].attrs.t.data: shape [2] needs 2 values, got 1");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], "
                 "attrs: {t: {dtype: int64, shape: [1], dat: [1]}}}\n",
                 GX_EFORMAT, 3, 77, "nodes[0].attrs.t: unknown key 'dat'");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: A, inputs: [], outputs: [y], attrs: [1]}\n",
                 GX_EFORMAT, 3, 46, "nodes[0].attrs: expected a map, got a list");
}
END_TEST

START_TEST(test_symbolic_dims)
{
    static const char yaml[] = "inputs:\n"
                               "  - {name: s, dtype: float32, shape: [N, 4]}\n"
                               "  - {name: t, dtype: int64, shape: [-1, batch_2, 3, 0]}\n"
                               "  - {name: u, dtype: bool, shape: []}\n"
                               "outputs:\n"
                               "  - {name: y, dtype: float32, shape: [N, 4]}\n"
                               "  - {name: z, dtype: f16}\n"
                               "nodes: []\n";
    gx_graph *g = s_parse_ok(yaml);
    ck_assert_uint_eq(g->n_inputs, 3);
    s_check_shape(g->inputs[0].ndim, g->inputs[0].shape, 2, (int64_t[]){-1, 4});
    s_check_shape(g->inputs[1].ndim, g->inputs[1].shape, 4, (int64_t[]){-1, -1, 3, 0});
    ck_assert_int_eq(g->inputs[1].dtype, GX_I64);
    ck_assert_int_eq(g->inputs[2].ndim, 0);
    ck_assert_int_eq(g->inputs[2].dtype, GX_BOOL);
    s_check_shape(g->outputs[0].ndim, g->outputs[0].shape, 2, (int64_t[]){-1, 4});
    ck_assert_int_eq(g->outputs[1].ndim, -1);
    gx_graph_destroy(&g);
}
END_TEST

START_TEST(test_errors_syntax)
{
    /* libyaml's own position of the problem */
    s_expect_err("nodes: [a, b\noutputs: []\n", GX_EFORMAT, 2, 8,
                 "YAML syntax error: did not find expected ',' or ']' (while parsing a flow "
                 "sequence at 1:8)");
    s_expect_err("nodes:\n  - op: Add\n   inputs: [a]\n", GX_EFORMAT, 3, 4,
                 "YAML syntax error: did not find expected '-' indicator");
    s_expect_err("nodes: []\noutputs: [y]\n\tname: x\n", GX_EFORMAT, 3, 1, "YAML syntax error");
    s_expect_err("nodes: []\noutputs: ['y]\n", GX_EFORMAT, 3, 1, "YAML syntax error");
    s_expect_err("nodes: []\noutputs: [*nope]\n", GX_EFORMAT, 2, 11, "undefined alias");
    /* invalid UTF-8 */
    s_expect_err("nodes: []\noutputs: [y\xff]\n", GX_EFORMAT, 2, 12, "UTF-8");
    /* structure */
    s_expect_err("", GX_EFORMAT, 1, 1, "empty graph file");
    s_expect_err("# just a comment\n", GX_EFORMAT, 1, 1, "empty graph file");
    s_expect_err("- a\n- b\n", GX_EFORMAT, 1, 1, "top level: expected a map, got a list");
    s_expect_err("nodes: []\noutputs: []\n---\nnodes: []\n", GX_EFORMAT, 3, 1,
                 "more than one YAML document");
    s_expect_err("nodes: []\noutputs: []\n...\n--- {nodes: []}\n", GX_EFORMAT, 4, 1,
                 "more than one YAML document");
    s_expect_err("nodes: []\noutputs: []\nnodes: []\n", GX_EFORMAT, 3, 1,
                 "top level: duplicate key 'nodes'");
    s_expect_err("nodes: []\n", GX_EFORMAT, 1, 1, "top level: missing required key 'outputs'");
    s_expect_err("outputs: []\n", GX_EFORMAT, 1, 1, "top level: missing required key 'nodes'");
    s_expect_err("nodes: {}\noutputs: []\n", GX_EFORMAT, 1, 8, "nodes: expected a list, got a map");
    s_expect_err("nodes: []\noutputs: [!!int 3]\n", GX_EFORMAT, 2, 11, "explicit YAML tags");
    s_expect_err("nodes: []\noutputs: [\"\"]\n", GX_EFORMAT, 2, 11, "outputs[0]: empty name");
    s_expect_err("nodes: []\noutputs: [[y]]\n", GX_EFORMAT, 2, 11,
                 "outputs[0]: expected a map, got a list");
    s_expect_err("nodes: []\noutputs: [\"a\\0b\"]\n", GX_EFORMAT, 2, 11, "NUL");
}
END_TEST

START_TEST(test_errors_keys)
{
    s_expect_err("nodes: []\noutputs: []\nversion: 2\n", GX_EFORMAT, 3, 1,
                 "top level: unknown key 'version'");
    s_expect_err("outputs: [y]\n"
                 "nodes:\n"
                 "  - {op: Relu, inputs: [x], outputs: [h]}\n"
                 "  - {op: Relu, inputs: [h], outputs: [i]}\n"
                 "  - op: Gemm\n"
                 "    inputs: [a, b, \"\"]\n"
                 "    outputs: [y]\n"
                 "    atrs: {alpha: 0.5}\n",
                 GX_EFORMAT, 8, 5, "nodes[2]: unknown key 'atrs'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: [1], dims: 1}\n"
                 "nodes: []\noutputs: []\n",
                 GX_EFORMAT, 2, 43, "inputs[0]: unknown key 'dims'");
    s_expect_err("nodes: []\noutputs: [{name: y, type: float32}]\n", GX_EFORMAT, 2, 21,
                 "outputs[0]: unknown key 'type'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {name: c, value: 1}\n", GX_EFORMAT, 4,
                 15, "constants[0]: unknown key 'value'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {name: c, {a: 1}: 1}\n", GX_EFORMAT, 4,
                 15, "keys must be scalars");
    s_expect_err("nodes:\n  - {op: Add, inputs: [a], outputs: [b], op: Sub}\noutputs: []\n",
                 GX_EFORMAT, 2, 42, "nodes[0]: duplicate key 'op'");
}
END_TEST

START_TEST(test_errors_missing)
{
    s_expect_err("outputs: [y]\n"
                 "nodes:\n"
                 "  - {op: Relu, inputs: [x], outputs: [h]}\n"
                 "  - inputs: [h]\n"
                 "    outputs: [y]\n",
                 GX_EFORMAT, 4, 5, "nodes[1]: missing required key 'op'");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: '', inputs: [x], outputs: [y]}\n", GX_EFORMAT,
                 3, 10, "nodes[0].op: empty name");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: Relu, outputs: [y]}\n", GX_EFORMAT, 3, 5,
                 "nodes[0]: missing required key 'inputs'");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: Relu, inputs: [x]}\n", GX_EFORMAT, 3, 5,
                 "nodes[0]: missing required key 'outputs'");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: Relu, inputs: [x], outputs: [y, \"\"]}\n",
                 GX_EFORMAT, 3, 42, "nodes[0].outputs[1]: empty name");
    s_expect_err("outputs: [y]\nnodes:\n  - {op: Relu, inputs: x, outputs: [y]}\n", GX_EFORMAT, 3,
                 24, "nodes[0].inputs: expected a list, got a scalar");
    s_expect_err("inputs:\n  - {dtype: float32, shape: [1]}\nnodes: []\noutputs: []\n",
                 GX_EFORMAT, 2, 5, "inputs[0]: missing required key 'name'");
    s_expect_err("inputs:\n  - {name: x, shape: [1]}\nnodes: []\noutputs: []\n", GX_EFORMAT, 2,
                 5, "inputs[0]: missing required key 'dtype'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32}\nnodes: []\noutputs: []\n", GX_EFORMAT,
                 2, 5, "inputs[0]: missing required key 'shape'");
    s_expect_err("nodes: []\noutputs: [{dtype: float32}]\n", GX_EFORMAT, 2, 11,
                 "outputs[0]: missing required key 'name'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {dtype: float32, shape: [], data: 1}\n",
                 GX_EFORMAT, 4, 5, "constants[0]: missing required key 'name'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {name: c, shape: [1], data: [1]}\n",
                 GX_EFORMAT, 4, 5, "constants[0]: missing required key 'dtype'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {name: c, dtype: int8, data: [1]}\n",
                 GX_EFORMAT, 4, 5, "constants[0]: missing required key 'shape'");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n  - {name: c, dtype: int8, shape: [1]}\n",
                 GX_EFORMAT, 4, 5, "constants[0]: needs 'data' (with dtype and shape) or 'file'");
}
END_TEST

START_TEST(test_errors_data_count)
{
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - name: w\n"
                 "    dtype: float32\n"
                 "    shape: [4, 3]\n"
                 "    data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n",
                 GX_ESHAPE, 7, 11, "constants[0].data: shape [4,3] needs 12 values, got 11");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: w, dtype: float32, shape: [2], data: 1}\n",
                 GX_ESHAPE, 4, 49, "needs 2 values, got 1");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: w, dtype: float32, shape: [], data: [1, 2]}\n",
                 GX_ESHAPE, 4, 48, "shape [] needs 1 values, got 2");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: w, dtype: float32, shape: [2], data: {a: 1}}\n",
                 GX_EFORMAT, 4, 49, "expected a flat list of values, got a map");
    /* a huge shape with little data fails on the count, before allocating */
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: w, dtype: float32, shape: [100000000000], data: [1]}\n",
                 GX_ESHAPE, 4, 60, "needs 100000000000 values, got 1");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: w, dtype: float64, shape: [4611686018427387904, 4], data: [1]}\n",
                 GX_ELIMIT, 4, 70, "is too large");
}
END_TEST

START_TEST(test_errors_dtype_shape)
{
    s_expect_err("inputs:\n  - {name: x, dtype: float33, shape: [1]}\nnodes: []\noutputs: []\n",
                 GX_EDTYPE, 2, 22, "inputs[0].dtype: unknown dtype 'float33' (expected one of");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: c, dtype: [float32], shape: [1], data: [1]}\n",
                 GX_EFORMAT, 4, 22, "constants[0].dtype: expected a scalar, got a list");
    s_expect_err("nodes: []\noutputs: [{name: y, dtype: complex64}]\n", GX_EDTYPE, 2, 28,
                 "unknown dtype 'complex64'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: [1, -2]}\nnodes: []\noutputs: []\n",
                 GX_ESHAPE, 2, 42,
                 "inputs[0].shape[1]: invalid dimension -2 (use -1 or a name for a symbolic");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: [1.5]}\nnodes: []\noutputs: []\n",
                 GX_ESHAPE, 2, 39, "inputs[0].shape[0]: invalid dimension '1.5'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: ['3']}\nnodes: []\noutputs: []\n",
                 GX_ESHAPE, 2, 39, "invalid dimension '3'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: [N-1]}\nnodes: []\noutputs: []\n",
                 GX_ESHAPE, 2, 39, "invalid dimension 'N-1'");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: 4}\nnodes: []\noutputs: []\n",
                 GX_EFORMAT, 2, 38, "inputs[0].shape: expected a list, got a scalar");
    s_expect_err("inputs:\n  - {name: x, dtype: float32, shape: [1, 1, 1, 1, 1, 1, 1, 1, 1]}\n"
                 "nodes: []\noutputs: []\n",
                 GX_ELIMIT, 2, 38, "inputs[0].shape: 9 dimensions, at most 8");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: c, dtype: float32, shape: [N], data: [1]}\n",
                 GX_ESHAPE, 4, 39, "constants[0].shape[0]: invalid dimension 'N' (expected an "
                                   "integer >= 0)");
    s_expect_err("nodes: []\noutputs: []\nconstants:\n"
                 "  - {name: c, dtype: float32, shape: [-1], data: [1]}\n",
                 GX_ESHAPE, 4, 39, "constants need concrete dimensions");
}
END_TEST

/* Aliases work, but cannot make the walk blow up. */
START_TEST(test_aliases)
{
    gx_graph *g = s_parse_ok("inputs:\n"
                             "  - {name: a, dtype: float32, shape: &s [2, 3]}\n"
                             "  - {name: b, dtype: float32, shape: *s}\n"
                             "  - {name: &n c, dtype: &d int8, shape: [*d]}\n"
                             "  - {name: d, dtype: *d, shape: &s [4]}\n"
                             "  - {name: e, dtype: float32, shape: *s}\n"
                             "nodes: []\noutputs: [*n]\n");
    s_check_shape(g->inputs[1].ndim, g->inputs[1].shape, 2, (int64_t[]){2, 3});
    s_check_shape(g->inputs[2].ndim, g->inputs[2].shape, 1, (int64_t[]){-1}); /* "int8" is a name */
    ck_assert_int_eq(g->inputs[3].dtype, GX_I8);
    s_check_shape(g->inputs[4].ndim, g->inputs[4].shape, 1, (int64_t[]){4}); /* redefined */
    ck_assert_str_eq(gx_graph_output_name(g, 0), "c");
    gx_graph_destroy(&g);

    /* many anchors (the table grows and rehashes) */
    size_t cap = 1 << 16, n = 0;
    char *many = malloc(cap);
    n += (size_t)snprintf(many + n, cap - n, "nodes: []\ninputs:\n");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(many + n, cap - n, "  - {name: &n%d x%d, dtype: f32, shape: [1]}\n",
                              i, i);
    n += (size_t)snprintf(many + n, cap - n, "outputs: [");
    for (int i = 299; i >= 0; i--)
        n += (size_t)snprintf(many + n, cap - n, "*n%d%s", i, i ? ", " : "]\n");
    ck_assert_uint_lt(n, cap);
    g = s_parse_ok(many);
    ck_assert_uint_eq(gx_graph_output_count(g), 300);
    ck_assert_str_eq(gx_graph_output_name(g, 0), "x299");
    ck_assert_str_eq(gx_graph_output_name(g, 299), "x0");
    gx_graph_destroy(&g);
    free(many);

    /* an alias inside its own anchor is undefined: no cycles */
    s_expect_err("nodes: &a [*a]\noutputs: []\n", GX_EFORMAT, 1, 12, "undefined alias '*a'");

    cap = 1 << 20;
    n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "outputs: []\nnodes:\n  - {op: A, inputs: &a [");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(text + n, cap - n, "%sv%d", i ? ", " : "", i);
    n += (size_t)snprintf(text + n, cap - n, "], outputs: [o]}\n");
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(text + n, cap - n, "  - {op: A, inputs: *a, outputs: [o]}\n");
    char err[512];
    int rc = gx_graph_parse_yaml(text, n, NULL, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(err, "too many alias expansions"));
    free(text);
}
END_TEST

/* Deep nesting is refused early: libyaml's cost per token grows with the
 * flow level, so reading all of it would take minutes. */
START_TEST(test_deep_nesting)
{
    size_t depth = 200000, n = 0;
    char *text = malloc(2 * depth + 64);
    n += (size_t)sprintf(text, "nodes: ");
    memset(text + n, '[', depth);
    n += depth;
    memset(text + n, ']', depth);
    n += depth;
    n += (size_t)sprintf(text + n, "\noutputs: []\n");
    char err[512];
    gx_graph *g = NULL;
    int rc = gx_graph_parse_yaml(text, n, NULL, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_ELIMIT);
    ck_assert_str_eq(err, SRC ":1:39: nesting deeper than 32 levels");
    free(text);
}
END_TEST

START_TEST(test_limits_and_args)
{
    char err[512] = "";
    gx_graph *g = NULL;
    /* the size check comes before the text is read */
    int rc = gx_graph_parse_yaml("x", ((size_t)1 << 30) + 1, NULL, SRC, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_ELIMIT);
    ck_assert_ptr_nonnull(strstr(err, SRC ":1:1: "));
    ck_assert_int_eq(gx_graph_parse_yaml("x", 1, NULL, SRC, NULL, err, sizeof err), GX_EINVAL);
    ck_assert_int_eq(gx_graph_parse_yaml(NULL, 3, NULL, SRC, &g, err, sizeof err), GX_EINVAL);
    /* no source name */
    rc = gx_graph_parse_yaml("- x", 3, NULL, NULL, &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, ":1:1: "));
    /* err may be NULL */
    ck_assert_int_eq(gx_graph_parse_yaml("- x", 3, NULL, SRC, &g, NULL, 0), GX_EFORMAT);

    rc = gx_graph_load_yaml("/nonexistent/g.yaml", &g, err, sizeof err);
    ck_assert_int_eq(rc, GX_EIO);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/g.yaml:1:1: "));
    char *dir = gxt_tmpdir();
    ck_assert_int_eq(gx_graph_load_yaml(dir, &g, err, sizeof err), GX_EIO);
    gxt_rmtree(dir);
    free(dir);
    ck_assert_ptr_null(g);
}
END_TEST

/* Every prefix of the example either parses or fails with a positioned
 * message; none crashes or leaks (run under ASan). */
START_TEST(test_truncations)
{
    FILE *f = fopen(gxt_srcpath("examples/mlp.yaml"), "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 16);
    size_t len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    for (size_t cut = 0; cut <= len; cut += 3) {
        char err[512] = "";
        gx_graph *g = NULL;
        int rc = gx_graph_parse_yaml(buf, cut, NULL, SRC, &g, err, sizeof err);
        if (rc == GX_OK) {
            gx_graph_destroy(&g);
        } else {
            ck_assert_ptr_null(g);
            ck_assert_msg(strncmp(err, SRC ":", strlen(SRC ":")) == 0, "%s", err);
        }
    }
    free(buf);
}
END_TEST

Suite *yaml_suite(void)
{
    Suite *s = suite_create("yaml");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_example_mlp);
    tcase_add_test(tc, test_example_broadcast);
    tcase_add_test(tc, test_example_loop);
    tcase_add_test(tc, test_inline_dtypes);
    tcase_add_test(tc, test_inline_range);
    tcase_add_test(tc, test_locale);
    tcase_add_test(tc, test_npy_constants);
    tcase_add_test(tc, test_attr_typing);
    tcase_add_test(tc, test_symbolic_dims);
    tcase_add_test(tc, test_aliases);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_attr_errors);
    tcase_add_test(tc, test_errors_syntax);
    tcase_add_test(tc, test_errors_keys);
    tcase_add_test(tc, test_errors_missing);
    tcase_add_test(tc, test_errors_data_count);
    tcase_add_test(tc, test_errors_dtype_shape);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_limits_and_args);
    tcase_add_test(tc, test_truncations);
    suite_add_tcase(s, tc);
    return s;
}
