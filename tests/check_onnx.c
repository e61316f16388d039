/*
 * ONNX import (libclient/onnx.c): models are built here with protobuf-c's
 * generated structs and packed to bytes, so each test shows the model it
 * reads. Also: hostile bytes, the ONNX node tests' models, and
 * gexec-submit running an .onnx model against a real gexecd.
 */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libclient/onnx.pb-c.h"
#include "core/wire.h"
#include "tests/testutil.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#define CAP 16 /* room in every repeated field of the models built here */

/* ---- building models ---------------------------------------------------- */

/* Everything allocated for a test's models; freed by the teardown. */
static void **s_arena;
static size_t s_n_arena, s_cap_arena;

static void *s_new(size_t size)
{
    void *p = calloc(1, size);
    ck_assert_ptr_nonnull(p);
    ck_assert(gx_grow(&s_arena, &s_cap_arena, s_n_arena + 1, sizeof *s_arena));
    s_arena[s_n_arena++] = p;
    return p;
}

static void s_arena_free(void)
{
    for (size_t i = 0; i < s_n_arena; i++)
        free(s_arena[i]);
    free(s_arena);
    s_arena = NULL;
    s_n_arena = s_cap_arena = 0;
}

static char *s_str(const char *s)
{
    char *p = s_new(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static void *s_copy(const void *p, size_t n)
{
    void *q = s_new(n ? n : 1);
    if (n)
        memcpy(q, p, n);
    return q;
}

/* A tensor type; dims of -1 become dim_param "N", -2 a dim with no value;
 * ndim -1 leaves the shape out. */
static Onnx__TypeProto *s_type(int elem, int ndim, const int64_t *dims)
{
    Onnx__TypeProto *tp = s_new(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = s_new(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (elem) {
        tt->has_elem_type = 1;
        tt->elem_type = elem;
    }
    if (ndim >= 0) {
        Onnx__TensorShapeProto *sp = s_new(sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)ndim;
        sp->dim = s_new((size_t)(ndim + 1) * sizeof *sp->dim);
        for (int i = 0; i < ndim; i++) {
            Onnx__TensorShapeProto__Dimension *d = s_new(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] == -1) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = s_str("N");
            } else if (dims[i] != -2) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            sp->dim[i] = d;
        }
        tt->shape = sp;
    }
    return tp;
}

static Onnx__ValueInfoProto *s_vi(const char *name, Onnx__TypeProto *type)
{
    Onnx__ValueInfoProto *vi = s_new(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = s_str(name);
    vi->type = type;
    return vi;
}

/* A tensor with raw data (nbytes of data; NULL: no data field at all). */
static Onnx__TensorProto *s_tensor(const char *name, int elem, int ndim, const int64_t *dims,
                                   const void *data, size_t nbytes)
{
    Onnx__TensorProto *t = s_new(sizeof *t);
    onnx__tensor_proto__init(t);
    if (name)
        t->name = s_str(name);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)ndim;
    t->dims = s_copy(dims, (size_t)ndim * sizeof *dims);
    if (data) {
        t->has_raw_data = 1;
        t->raw_data.len = nbytes;
        t->raw_data.data = s_copy(data, nbytes);
    }
    return t;
}

static Onnx__TensorProto *s_f32(const char *name, int ndim, const int64_t *dims, const float *v,
                                size_t n)
{
    return s_tensor(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims, v, n * sizeof *v);
}

/* A node; ins and outs are comma-separated ("a,,b": b is input 2). */
static char **s_names(const char *list, size_t *n)
{
    char **v = s_new(CAP * sizeof *v);
    *n = 0;
    if (!*list)
        return v;
    for (const char *p = list;; p++) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        v[*n] = s_new(len + 1);
        memcpy(v[(*n)++], p, len);
        if (!q)
            break;
        p = q;
    }
    return v;
}

static Onnx__NodeProto *s_node(const char *op, const char *name, const char *ins, const char *outs)
{
    Onnx__NodeProto *n = s_new(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = s_str(op);
    if (name)
        n->name = s_str(name);
    n->input = s_names(ins, &n->n_input);
    n->output = s_names(outs, &n->n_output);
    n->attribute = s_new(CAP * sizeof *n->attribute);
    return n;
}

static Onnx__AttributeProto *s_attr(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = s_new(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = s_str(name);
    a->has_type = 1;
    a->type = (Onnx__AttributeProto__AttributeType)type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void s_attr_i(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = s_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void s_attr_f(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = s_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static Onnx__GraphProto *s_graph(const char *name)
{
    Onnx__GraphProto *g = s_new(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = s_str(name);
    g->node = s_new(CAP * sizeof *g->node);
    g->input = s_new(CAP * sizeof *g->input);
    g->output = s_new(CAP * sizeof *g->output);
    g->initializer = s_new(CAP * sizeof *g->initializer);
    return g;
}

#define ADD(g, field, v) ((g)->field[(g)->n_##field++] = (v))

static Onnx__ModelProto *s_model(Onnx__GraphProto *g, const char *domain, int64_t opset)
{
    Onnx__ModelProto *m = s_new(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->graph = g;
    m->opset_import = s_new(CAP * sizeof *m->opset_import);
    if (domain) {
        Onnx__OperatorSetIdProto *o = s_new(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = s_str(domain);
        o->has_version = 1;
        o->version = opset;
        m->opset_import[m->n_opset_import++] = o;
    }
    return m;
}

/* The message's bytes (arena-owned). */
static uint8_t *s_pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = s_new(*len + 1);
    ck_assert_uint_eq(protobuf_c_message_pack(m, buf), *len);
    return buf;
}

/* Parse the model; the status, the graph in *g (may be NULL to discard). */
static int s_parse(const Onnx__ModelProto *m, gx_graph **g, char *err, size_t errlen)
{
    size_t len;
    uint8_t *buf = s_pack(&m->base, &len);
    gx_graph *tmp = NULL;
    int rc = gx_graph_parse_onnx(buf, len, NULL, g ? g : &tmp, err, errlen);
    gx_graph_destroy(&tmp);
    if (rc < 0) {
        ck_assert_msg(*err, "an error without a message");
        if (g)
            ck_assert_ptr_null(*g);
    }
    return rc;
}

/* x [N,3] -> MatMul(x, W) -> Relu -> y [N,2] */
static Onnx__GraphProto *s_mlp(void)
{
    static const float w[6] = {1, 2, 3, 4, 5, 6};
    Onnx__GraphProto *g = s_graph("mlp");
    ADD(g, input, s_vi("x", s_type(1, 2, (int64_t[]){-1, 3})));
    ADD(g, input, s_vi("W", s_type(1, 2, (int64_t[]){3, 2}))); /* also an initializer */
    ADD(g, initializer, s_f32("W", 2, (int64_t[]){3, 2}, w, 6));
    ADD(g, node, s_node("MatMul", "mm", "x,W", "h"));
    ADD(g, node, s_node("Relu", NULL, "h", "y"));
    ADD(g, output, s_vi("y", s_type(1, 2, (int64_t[]){-1, 2})));
    return g;
}

static const gx_attr *s_find_attr(const gx_node *n, const char *name)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) == 0)
            return &n->attr[i];
    ck_abort_msg("node '%s' has no attribute '%s'", n->name, name);
    return NULL;
}

/* Assert rc == status and that err contains every string of needles. */
#define ASSERT_ERR(rc, status, err, ...)                                                 \
    do {                                                                                 \
        ck_assert_msg((rc) == (status), "got %s, want %s: %s", gx_status_name(rc),      \
                      gx_status_name(status), err);                                      \
        const char *const needles_[] = {__VA_ARGS__, NULL};                              \
        for (int i_ = 0; needles_[i_]; i_++)                                             \
            ck_assert_msg(strstr(err, needles_[i_]), "'%s' not in: %s", needles_[i_], err); \
    } while (0)

/* ---- the mapping -------------------------------------------------------- */

START_TEST(test_onnx_graph)
{
    Onnx__GraphProto *g = s_mlp();
    ADD(g, output, s_vi("h", NULL)); /* an output with no type */
    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    ck_assert_str_eq(out->name, "mlp");
    ck_assert_uint_eq(out->n_inputs, 1); /* W is an initializer */
    ck_assert_str_eq(out->inputs[0].name, "x");
    ck_assert_int_eq(out->inputs[0].dtype, GX_F32);
    ck_assert_int_eq(out->inputs[0].ndim, 2);
    ck_assert_int_eq(out->inputs[0].shape[0], -1);
    ck_assert_int_eq(out->inputs[0].shape[1], 3);
    ck_assert_uint_eq(out->n_consts, 1);
    ck_assert_str_eq(out->consts[0].name, "W");
    ck_assert_int_eq(out->consts[0].t->dtype, GX_F32);
    ck_assert_float_eq(((float *)out->consts[0].t->data)[5], 6.0f);
    ck_assert_uint_eq(out->n_nodes, 2);
    ck_assert_str_eq(out->nodes[0]->name, "mm");
    ck_assert_str_eq(out->nodes[0]->op, "MatMul");
    ck_assert_str_eq(out->nodes[0]->in[1], "W");
    ck_assert_str_eq(out->nodes[1]->name, "Relu_1"); /* made up: <op>_<index> */
    ck_assert_uint_eq(out->n_outputs, 2);
    ck_assert_int_eq(out->outputs[0].dtype, GX_F32);
    ck_assert_int_eq(out->outputs[0].ndim, 2);
    ck_assert_int_eq(out->outputs[0].shape[0], -1);
    ck_assert_int_eq(out->outputs[1].ndim, -1);
    ck_assert_int_eq(out->outputs[1].dtype, GX_DTYPE_COUNT);
    gx_graph_destroy(&out);

    /* "ai.onnx" is the default domain too; opsets 1 and 25 are the bounds */
    ck_assert_int_eq(s_parse(s_model(s_mlp(), "ai.onnx", 1), NULL, err, sizeof err), GX_OK);
    ck_assert_int_eq(s_parse(s_model(s_mlp(), "", 25), NULL, err, sizeof err), GX_OK);
}
END_TEST

START_TEST(test_onnx_node_names)
{
    Onnx__GraphProto *g = s_graph("names");
    ADD(g, input, s_vi("x", s_type(1, 1, (int64_t[]){2})));
    ADD(g, node, s_node("Relu", "Relu_1", "x", "a"));  /* takes the name node 1 would get */
    ADD(g, node, s_node("Relu", "", "a", "b"));
    ADD(g, node, s_node("Relu", NULL, "b", "c"));
    ADD(g, output, s_vi("c", NULL));
    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    ck_assert_str_eq(out->nodes[0]->name, "Relu_1");
    ck_assert_str_eq(out->nodes[1]->name, "Relu_1_1");
    ck_assert_str_eq(out->nodes[2]->name, "Relu_2");
    gx_graph_destroy(&out);
}
END_TEST

START_TEST(test_onnx_attributes)
{
    Onnx__GraphProto *g = s_graph("attrs");
    ADD(g, input, s_vi("x", s_type(1, 1, (int64_t[]){2})));
    Onnx__NodeProto *n = s_node("Custom", "c", "x", "y");
    s_attr_i(n, "i", -7);
    s_attr_f(n, "f", 0.25f);
    Onnx__AttributeProto *a = s_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)s_str("constant");
    a->s.len = 8;
    a = s_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 3;
    a->ints = s_copy((int64_t[]){1, -2, INT64_MAX}, 3 * sizeof(int64_t));
    a = s_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 2;
    a->floats = s_copy((float[]){1.5f, -0.5f}, 2 * sizeof(float));
    s_attr(n, "empty", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS); /* [] */
    a = s_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = s_tensor(NULL, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){2},
                    (int64_t[]){3, 4}, 16);
    a = s_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_graph("body");
    ADD(a->g, node, s_node("Identity", NULL, "x", "z"));
    ADD(a->g, output, s_vi("z", s_type(1, -1, NULL)));
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));

    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    const gx_node *gn = out->nodes[0];
    ck_assert_uint_eq(gn->n_attr, 8);
    const gx_attr *at = s_find_attr(gn, "i");
    ck_assert_int_eq(at->type, GX_ATTR_INT);
    ck_assert_int_eq(at->i, -7);
    at = s_find_attr(gn, "f");
    ck_assert_int_eq(at->type, GX_ATTR_FLOAT);
    ck_assert_double_eq(at->f, 0.25);
    at = s_find_attr(gn, "s");
    ck_assert_int_eq(at->type, GX_ATTR_STRING);
    ck_assert_str_eq(at->s, "constant");
    at = s_find_attr(gn, "is");
    ck_assert_int_eq(at->type, GX_ATTR_INTS);
    ck_assert_uint_eq(at->n, 3);
    ck_assert_int_eq(at->ints[2], INT64_MAX);
    at = s_find_attr(gn, "fs");
    ck_assert_int_eq(at->type, GX_ATTR_FLOATS);
    ck_assert_double_eq(at->floats[0], 1.5);
    ck_assert_double_eq(at->floats[1], -0.5);
    at = s_find_attr(gn, "empty");
    ck_assert_int_eq(at->type, GX_ATTR_INTS);
    ck_assert_uint_eq(at->n, 0);
    at = s_find_attr(gn, "t");
    ck_assert_int_eq(at->type, GX_ATTR_TENSOR);
    ck_assert_int_eq(at->t->dtype, GX_I64);
    ck_assert_int_eq(((int64_t *)at->t->data)[1], 4);
    at = s_find_attr(gn, "g");
    ck_assert_int_eq(at->type, GX_ATTR_GRAPH);
    ck_assert_str_eq(at->g->name, "body");
    ck_assert_uint_eq(at->g->n_nodes, 1);
    ck_assert_str_eq(at->g->nodes[0]->in[0], "x"); /* from the enclosing graph */
    ck_assert_int_eq(at->g->outputs[0].ndim, -1);
    gx_graph_destroy(&out);
}
END_TEST

START_TEST(test_onnx_constant_nodes)
{
    Onnx__GraphProto *g = s_graph("consts");
    Onnx__NodeProto *n = s_node("Constant", NULL, "", "t");
    s_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        s_tensor(NULL, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 2, (int64_t[]){1, 2},
                 (int32_t[]){5, -6}, 8);
    ADD(g, node, n);
    ADD(g, node, n = s_node("Constant", NULL, "", "f"));
    s_attr_f(n, "value_float", 2.5f);
    ADD(g, node, n = s_node("Constant", NULL, "", "fs"));
    Onnx__AttributeProto *a = s_attr(n, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 3;
    a->floats = s_copy((float[]){1, 2, 3}, 3 * sizeof(float));
    ADD(g, node, n = s_node("Constant", NULL, "", "i"));
    s_attr_i(n, "value_int", -9);
    ADD(g, node, n = s_node("Constant", NULL, "", "is"));
    a = s_attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 2;
    a->ints = s_copy((int64_t[]){7, 8}, 2 * sizeof(int64_t));
    ADD(g, node, s_node("Add", NULL, "f,fs", "y"));
    ADD(g, output, s_vi("y", NULL));

    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    ck_assert_uint_eq(out->n_nodes, 1); /* only the Add */
    ck_assert_uint_eq(out->n_consts, 5);
    const gx_tensor *t = out->consts[0].t;
    ck_assert_str_eq(out->consts[0].name, "t");
    ck_assert_int_eq(t->dtype, GX_I32);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(((int32_t *)t->data)[1], -6);
    t = out->consts[1].t;
    ck_assert_int_eq(t->dtype, GX_F32);
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_float_eq(*(float *)t->data, 2.5f);
    t = out->consts[2].t;
    ck_assert_int_eq(t->ndim, 1);
    ck_assert_int_eq(t->shape[0], 3);
    ck_assert_float_eq(((float *)t->data)[2], 3.0f);
    t = out->consts[3].t;
    ck_assert_int_eq(t->dtype, GX_I64);
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_int_eq(*(int64_t *)t->data, -9);
    t = out->consts[4].t;
    ck_assert_int_eq(t->dtype, GX_I64);
    ck_assert_int_eq(t->shape[0], 2);
    ck_assert_int_eq(((int64_t *)t->data)[1], 8);
    gx_graph_destroy(&out);

    /* value_string and value_strings: string constants */
    g = s_graph("strs");
    ADD(g, node, n = s_node("Constant", "k", "", "c"));
    Onnx__AttributeProto *sa = s_attr(n, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    sa->n_strings = 2;
    sa->strings = s_new(2 * sizeof *sa->strings);
    sa->strings[0] = (ProtobufCBinaryData){2, s_copy("hi", 2)};
    sa->strings[1] = (ProtobufCBinaryData){0, NULL};
    ADD(g, node, n = s_node("Constant", "k2", "", "d"));
    sa = s_attr(n, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    sa->has_s = 1;
    sa->s = (ProtobufCBinaryData){3, s_copy("abc", 3)};
    ADD(g, output, s_vi("c", NULL));
    ADD(g, output, s_vi("d", NULL));
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    ck_assert_int_eq(out->consts[0].t->dtype, GX_STRING);
    ck_assert_int_eq(out->consts[0].t->shape[0], 2);
    ck_assert_str_eq(gx_tensor_string(out->consts[0].t, 0, NULL), "hi");
    ck_assert_str_eq(gx_tensor_string(out->consts[0].t, 1, NULL), "");
    ck_assert_int_eq(out->consts[1].t->ndim, 0);
    ck_assert_str_eq(gx_tensor_string(out->consts[1].t, 0, NULL), "abc");
    gx_graph_destroy(&out);

    /* sparse_value: unsupported; anything else malformed */
    static const struct {
        const char *attr;
        int type, status;
        const char *msg;
    } bad[] = {
        {"sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR, GX_EUNSUPPORTED, "sparse"},
        {"frob", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, GX_EFORMAT, "not an attribute of Constant"},
        {"value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, GX_EFORMAT, "expected TENSOR"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g = s_graph("bad");
        ADD(g, node, n = s_node("Constant", "k", "", "c"));
        s_attr(n, bad[i].attr, bad[i].type);
        ADD(g, output, s_vi("c", NULL));
        ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), bad[i].status, err,
                   "graph.node[0] (Constant 'k')", bad[i].msg);
    }
    g = s_graph("bad");
    ADD(g, node, n = s_node("Constant", "k", "", "c,d"));
    s_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    ADD(g, output, s_vi("c", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err, "one output");
    g = s_graph("bad");
    ADD(g, node, s_node("Constant", "k", "", "c"));
    ADD(g, output, s_vi("c", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err,
               "exactly one attribute");
}
END_TEST

/* Each dtype stored in its typed field reads back the same as raw data. */
START_TEST(test_onnx_typed_fields)
{
    Onnx__GraphProto *g = s_graph("typed");
    Onnx__TensorProto *t;
#define TYPED(name, elem, field, ctype, ...)                                        \
    do {                                                                            \
        const ctype v_[] = {__VA_ARGS__};                                          \
        t = s_tensor(name, elem, 1, (int64_t[]){sizeof v_ / sizeof v_[0]}, NULL, 0); \
        t->n_##field = sizeof v_ / sizeof v_[0];                                    \
        t->field = s_copy(v_, sizeof v_);                                           \
        ADD(g, initializer, t);                                                     \
    } while (0)
    TYPED("f32", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, float_data, float, 1.5f, -2);
    TYPED("f64", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, double_data, double, 0.125, 1e300);
    TYPED("i64", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, int64_data, int64_t, INT64_MIN, 3);
    TYPED("i32", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, int32_data, int32_t, INT32_MIN, 4);
    TYPED("i16", ONNX__TENSOR_PROTO__DATA_TYPE__INT16, int32_data, int32_t, -32768, 32767);
    TYPED("u16", ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, int32_data, int32_t, 0, 65535);
    TYPED("i8", ONNX__TENSOR_PROTO__DATA_TYPE__INT8, int32_data, int32_t, -128, 127);
    TYPED("u8", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, int32_data, int32_t, 0, 255);
    TYPED("bool", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, int32_data, int32_t, 1, 0);
    TYPED("f16", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, int32_data, int32_t, 0x3c00, 0xc000);
    TYPED("bf16", ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, int32_data, int32_t, 0x3f80, 0xff80);
    TYPED("u32", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, uint64_data, uint64_t, 0, UINT32_MAX);
    TYPED("u64", ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, uint64_data, uint64_t, UINT64_MAX, 1);
    /* an empty tensor needs no data */
    ADD(g, initializer, s_tensor("empty", 1, 2, (int64_t[]){0, 5}, NULL, 0));
    ADD(g, output, s_vi("f32", NULL));

    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_OK);
    ck_assert_uint_eq(out->n_consts, 14);
    const gx_tensor *const *c = (const gx_tensor *[14]){
        out->consts[0].t, out->consts[1].t, out->consts[2].t,  out->consts[3].t,
        out->consts[4].t, out->consts[5].t, out->consts[6].t,  out->consts[7].t,
        out->consts[8].t, out->consts[9].t, out->consts[10].t, out->consts[11].t,
        out->consts[12].t, out->consts[13].t};
    ck_assert_int_eq(c[0]->dtype, GX_F32);
    ck_assert_float_eq(((float *)c[0]->data)[1], -2.0f);
    ck_assert_int_eq(c[1]->dtype, GX_F64);
    ck_assert_double_eq(((double *)c[1]->data)[1], 1e300);
    ck_assert_int_eq(c[2]->dtype, GX_I64);
    ck_assert_int_eq(((int64_t *)c[2]->data)[0], INT64_MIN);
    ck_assert_int_eq(c[3]->dtype, GX_I32);
    ck_assert_int_eq(((int32_t *)c[3]->data)[0], INT32_MIN);
    ck_assert_int_eq(c[4]->dtype, GX_I16);
    ck_assert_int_eq(((int16_t *)c[4]->data)[0], -32768);
    ck_assert_int_eq(c[5]->dtype, GX_U16);
    ck_assert_uint_eq(((uint16_t *)c[5]->data)[1], 65535);
    ck_assert_int_eq(c[6]->dtype, GX_I8);
    ck_assert_int_eq(((int8_t *)c[6]->data)[0], -128);
    ck_assert_int_eq(c[7]->dtype, GX_U8);
    ck_assert_uint_eq(((uint8_t *)c[7]->data)[1], 255);
    ck_assert_int_eq(c[8]->dtype, GX_BOOL);
    ck_assert_uint_eq(((uint8_t *)c[8]->data)[0], 1);
    ck_assert_int_eq(c[9]->dtype, GX_F16);
    ck_assert_uint_eq(((uint16_t *)c[9]->data)[1], 0xc000);
    ck_assert_int_eq(c[10]->dtype, GX_BF16);
    ck_assert_uint_eq(((uint16_t *)c[10]->data)[0], 0x3f80);
    ck_assert_int_eq(c[11]->dtype, GX_U32);
    ck_assert_uint_eq(((uint32_t *)c[11]->data)[1], UINT32_MAX);
    ck_assert_int_eq(c[12]->dtype, GX_U64);
    ck_assert_uint_eq(((uint64_t *)c[12]->data)[0], UINT64_MAX);
    ck_assert_int_eq(c[13]->numel, 0);
    gx_graph_destroy(&out);

    /* values out of the type's range, and counts that do not match */
    g = s_graph("bad");
    TYPED("i8", ONNX__TENSOR_PROTO__DATA_TYPE__INT8, int32_data, int32_t, 0, 128);
    ADD(g, output, s_vi("i8", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err,
               "initializer[0] 'i8'", "int32_data[1] = 128 is out of range for int8");
    g = s_graph("bad");
    TYPED("u32", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, uint64_data, uint64_t, 1ull << 32);
    ADD(g, output, s_vi("u32", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err, "uint32");
    g = s_graph("bad");
    TYPED("f", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, float_data, float, 1, 2);
    t->dims[0] = 3;
    ADD(g, output, s_vi("f", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err,
               "float_data has 2 values, but shape [3] needs 3");
#undef TYPED
}
END_TEST

START_TEST(test_onnx_tensor_errors)
{
    static const struct {
        int elem, ndim;
        int64_t dims[10];
        size_t nbytes; /* raw_data length */
        int status;
        const char *msg;
    } cases[] = {
        {ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, {1}, 1, GX_EFORMAT, "no raw_data"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, 1, {1}, 8, GX_EDTYPE, "COMPLEX64"},
        {17, 1, {1}, 1, GX_EDTYPE, "FLOAT8E4M3FN"},
        {99, 1, {1}, 1, GX_EDTYPE, "unknown (99)"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {2}, 4, GX_EFORMAT, "raw_data has 4 bytes"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {-1}, 4, GX_EFORMAT, "dims[0] is negative"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, 4,
         GX_EUNSUPPORTED, "9 dims"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, {INT64_MAX, 4}, 4, GX_ELIMIT, "too large"},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, {1u << 30}, 0, GX_EFORMAT, "raw_data has 0 bytes"},
    };
    static const uint8_t zeros[16];
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Onnx__GraphProto *g = s_graph("bad");
        ADD(g, initializer, s_tensor("w", cases[i].elem, cases[i].ndim, cases[i].dims, zeros,
                                     cases[i].nbytes));
        ADD(g, output, s_vi("w", NULL));
        gx_graph *out = NULL;
        ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), cases[i].status, err,
                   "<onnx>: graph.initializer[0] 'w'", cases[i].msg);

        /* the same tensor on its own */
        Onnx__TensorProto *tp = g->initializer[0];
        size_t len;
        uint8_t *buf = s_pack(&tp->base, &len);
        gx_tensor *t = NULL;
        ASSERT_ERR(gx_tensor_parse_onnx(buf, len, &t, err, sizeof err), cases[i].status, err,
                   "tensor 'w'", cases[i].msg);
        ck_assert_ptr_null(t);
    }
    /* a segment, and data with no data field */
    Onnx__TensorProto *tp = s_tensor("s", 1, 1, (int64_t[]){1}, zeros, 4);
    tp->segment = s_new(sizeof *tp->segment);
    onnx__tensor_proto__segment__init(tp->segment);
    size_t len;
    uint8_t *buf = s_pack(&tp->base, &len);
    gx_tensor *t = NULL;
    ASSERT_ERR(gx_tensor_parse_onnx(buf, len, &t, err, sizeof err), GX_EUNSUPPORTED, err,
               "segmented");
    tp = s_tensor("n", 1, 1, (int64_t[]){1}, NULL, 0);
    buf = s_pack(&tp->base, &len);
    ASSERT_ERR(gx_tensor_parse_onnx(buf, len, &t, err, sizeof err), GX_EFORMAT, err,
               "float_data has 0 values");

    /* and a good one */
    tp = s_tensor("ok", ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, 2, (int64_t[]){1, 2},
                  (uint16_t[]){7, 65535}, 4);
    buf = s_pack(&tp->base, &len);
    ck_assert_int_eq(gx_tensor_parse_onnx(buf, len, &t, err, sizeof err), GX_OK);
    ck_assert_int_eq(gx_tensor_dtype(t), GX_U16);
    ck_assert_int_eq(gx_tensor_shape(t)[1], 2);
    ck_assert_uint_eq(((const uint16_t *)gx_tensor_cdata(t))[1], 65535);
    gx_tensor_destroy(&t);
    ck_assert_int_eq(gx_tensor_parse_onnx(NULL, 0, NULL, err, sizeof err), GX_EINVAL);
    ck_assert_int_eq(gx_tensor_parse_onnx(NULL, 3, &t, err, sizeof err), GX_EINVAL);
}
END_TEST

START_TEST(test_onnx_subgraphs)
{
    Onnx__GraphProto *g = s_graph("control");
    ADD(g, input, s_vi("c", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL)));
    ADD(g, input, s_vi("x", s_type(1, 1, (int64_t[]){-1})));
    Onnx__NodeProto *n = s_node("If", "if", "c", "y");
    Onnx__AttributeProto *a = s_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_graph("then");
    ADD(a->g, initializer, s_f32("two", 0, NULL, (float[]){2}, 1));
    ADD(a->g, node, s_node("Mul", NULL, "x,two", "t"));
    ADD(a->g, output, s_vi("t", s_type(1, 1, (int64_t[]){-1})));
    a = s_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_graph("else");
    ADD(a->g, node, s_node("Identity", NULL, "x", "e"));
    ADD(a->g, output, s_vi("e", s_type(1, 1, (int64_t[]){-1})));
    ADD(g, node, n);
    /* a Loop body: inputs without a type, or with a type but no shape */
    ADD(g, node, n = s_node("Loop", "loop", ",c,y", "z"));
    a = s_attr(n, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_graph("body");
    ADD(a->g, input, s_vi("i", NULL));
    ADD(a->g, input, s_vi("cond", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, -1, NULL)));
    ADD(a->g, input, s_vi("v", s_type(0, 1, (int64_t[]){-2})));
    ADD(a->g, node, s_node("Identity", NULL, "cond", "cond_out"));
    ADD(a->g, node, s_node("Relu", NULL, "v", "v_out"));
    ADD(a->g, output, s_vi("cond_out", NULL));
    ADD(a->g, output, s_vi("v_out", NULL));
    ADD(g, output, s_vi("z", s_type(1, 1, (int64_t[]){-1})));

    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 16), &out, err, sizeof err), GX_OK);
    ck_assert_uint_eq(out->n_nodes, 2);
    const gx_graph *then = s_find_attr(out->nodes[0], "then_branch")->g;
    ck_assert_uint_eq(then->n_inputs, 0);
    ck_assert_uint_eq(then->n_consts, 1);
    ck_assert_str_eq(then->consts[0].name, "two");
    ck_assert_str_eq(then->nodes[0]->name, "Mul_0");
    ck_assert_str_eq(then->outputs[0].name, "t");
    ck_assert_str_eq(out->nodes[1]->in[0], ""); /* omitted trip count */
    const gx_graph *body = s_find_attr(out->nodes[1], "body")->g;
    ck_assert_uint_eq(body->n_inputs, 3);
    ck_assert_int_eq(body->inputs[0].dtype, GX_DTYPE_COUNT);
    ck_assert_int_eq(body->inputs[0].ndim, -1);
    ck_assert_int_eq(body->inputs[1].dtype, GX_BOOL);
    ck_assert_int_eq(body->inputs[1].ndim, -1);
    ck_assert_int_eq(body->inputs[2].dtype, GX_DTYPE_COUNT);
    ck_assert_int_eq(body->inputs[2].ndim, 1);
    ck_assert_int_eq(body->inputs[2].shape[0], -1);

    /* the wire keeps what is known, and the encoding stays canonical */
    msgpack_sbuffer a1, a2;
    msgpack_packer pk;
    msgpack_sbuffer_init(&a1);
    msgpack_packer_init(&pk, &a1, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, out);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(gx_wire_unpack(a1.data, a1.size, &up, err, sizeof err), GX_OK);
    gx_graph *back = NULL;
    gx_wire_limits lim = {1000, 1 << 20};
    ck_assert_msg(gx_wire_unpack_graph(&up.data, &lim, &back, err, sizeof err) == GX_OK, "%s", err);
    msgpack_unpacked_destroy(&up);
    body = s_find_attr(back->nodes[1], "body")->g;
    ck_assert_int_eq(body->inputs[0].dtype, GX_DTYPE_COUNT);
    ck_assert_int_eq(body->inputs[0].ndim, -1);
    ck_assert_int_eq(body->inputs[1].dtype, GX_BOOL);
    ck_assert_int_eq(body->inputs[1].ndim, -1);
    ck_assert_int_eq(body->inputs[2].dtype, GX_DTYPE_COUNT);
    ck_assert_int_eq(body->inputs[2].ndim, 1);
    msgpack_sbuffer_init(&a2);
    msgpack_packer_init(&pk, &a2, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, back);
    ck_assert_uint_eq(a1.size, a2.size);
    ck_assert_mem_eq(a1.data, a2.data, a1.size);
    gx_graph_id id1, id2;
    gx_wire_graph_id(out, &id1);
    gx_wire_graph_id(back, &id2);
    ck_assert_str_eq(id1.hex, id2.hex);
    msgpack_sbuffer_destroy(&a1);
    msgpack_sbuffer_destroy(&a2);
    gx_graph_destroy(&back);
    gx_graph_destroy(&out);

    /* problems inside a subgraph are named by their path */
    g = s_graph("control");
    ADD(g, node, n = s_node("If", "if", "c", "y"));
    a = s_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_graph("then");
    ADD(a->g, node, n = s_node("Foo", "f", "x", "t"));
    n->domain = s_str("com.example");
    ADD(g, output, s_vi("y", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 16), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "graph.node[0] (If 'if').then_branch.node[0] (Foo 'f'): operator domain 'com.example'");
}
END_TEST

START_TEST(test_onnx_omitted_values)
{
    Onnx__GraphProto *g = s_graph("rnn");
    ADD(g, input, s_vi("x", s_type(1, 3, (int64_t[]){1, 1, 1})));
    ADD(g, input, s_vi("gx_unused_0", s_type(1, 1, (int64_t[]){1}))); /* a name taken */
    ADD(g, node, s_node("LSTM", NULL, "x,w,r,,,", ",Y_h,"));
    ADD(g, node, s_node("Dropout", NULL, "x", "d,"));
    ADD(g, output, s_vi("Y_h", NULL));
    char err[512] = "";
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 14), &out, err, sizeof err), GX_OK);
    const gx_node *n = out->nodes[0];
    ck_assert_uint_eq(n->n_in, 6);
    ck_assert_str_eq(n->in[3], "");
    ck_assert_str_eq(n->in[5], "");
    ck_assert_uint_eq(n->n_out, 2); /* the trailing "" dropped */
    ck_assert_str_eq(n->out[0], "gx_unused_1");
    ck_assert_str_eq(n->out[1], "Y_h");
    ck_assert_uint_eq(out->nodes[1]->n_out, 1);
    gx_graph_destroy(&out);
}
END_TEST

/* Every feature gexec lacks is named, and all of them in one message. */
START_TEST(test_onnx_unsupported)
{
    static const struct {
        int type;
        const char *msg;
    } attrs[] = {
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS, "type TENSORS"},
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS, "type GRAPHS"},
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR, "type SPARSE_TENSOR"},
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS, "type SPARSE_TENSORS"},
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO, "type TYPE_PROTO"},
        {ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS, "type TYPE_PROTOS"},
        {77, "type unknown (77)"},
    };
    char err[2048];
    gx_graph *out = NULL;
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        Onnx__GraphProto *g = s_graph("g");
        Onnx__NodeProto *n = s_node("Op", "n", "", "y");
        s_attr(n, "a", attrs[i].type);
        ADD(g, node, n);
        ADD(g, output, s_vi("y", NULL));
        ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EUNSUPPORTED, err,
                   "graph.node[0] (Op 'n'): attribute 'a'", attrs[i].msg);
    }

    /* RegexFullMatch: refused by name (no RE2-compatible engine) */
    Onnx__GraphProto *rg = s_graph("g");
    ADD(rg, node, s_node("RegexFullMatch", "re", "x", "y"));
    ADD(rg, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, (int64_t[]){2})));
    ADD(rg, output, s_vi("y", NULL));
    ASSERT_ERR(s_parse(s_model(rg, "", 20), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "(RegexFullMatch 're')", "RE2");

    /* several problems: every one named, the first one's status */
    Onnx__GraphProto *g = s_graph("g");
    ADD(g, input, s_vi("s", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, 1, (int64_t[]){1})));
    Onnx__TypeProto *seq = s_new(sizeof *seq);
    onnx__type_proto__init(seq);
    seq->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq->sequence_type = s_new(sizeof *seq->sequence_type);
    onnx__type_proto__sequence__init(seq->sequence_type);
    ADD(g, input, s_vi("q", seq));
    Onnx__NodeProto *n = s_node("A", "a", "", "y");
    s_attr(n, "strs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    ADD(g, node, n);
    ADD(g, node, n = s_node("B", "b", "", "z"));
    s_attr(n, "r", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->ref_attr_name = s_str("outer");
    ADD(g, node, n = s_node("C", NULL, "", "w"));
    n->domain = s_str("com.example");
    ADD(g, node, s_node("Relu", "fine", "y", "v"));
    ADD(g, output, s_vi("v", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EDTYPE, err,
               "5 unsupported features", "input 's': element type COMPLEX64",
               "input 'q': sequence values are not supported", "(A 'a'): attribute 'strs'",
               "(B 'b'): attribute 'r': references attribute 'outer'",
               "graph.node[2] (C): operator domain 'com.example'");
    ck_assert_ptr_null(strstr(err, "fine"));

    /* many: the message is capped and says how many it left out */
    g = s_graph("g");
    for (int i = 0; i < CAP; i++) {
        char name[64];
        snprintf(name, sizeof name, "a_node_with_a_rather_long_name_to_fill_the_message_%d", i);
        ADD(g, node, n = s_node("Op", name, "", "y"));
        n->domain = s_str("com.example.some.long.domain.name");
    }
    ADD(g, output, s_vi("y", NULL));
    char big[8192];
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, big, sizeof big), GX_EUNSUPPORTED, big,
               "16 unsupported features", "more");
    ck_assert_uint_lt(strlen(big), 2300);

    /* an op whose older opset meant something else, with no conversion, is
     * refused in it */
    g = s_graph("g");
    ADD(g, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){2, 3})));
    ADD(g, node, s_node("Scan", "s", "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 7), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "(Scan 's'): Scan of opset 7 is not supported", "first appeared in opset 8");

    /* opsets: every import is accepted; nodes are judged by their domain
     * and its version */
    Onnx__OperatorSetIdProto *o = s_new(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = s_str("ai.onnx.preview.training");
    o->has_version = 1;
    o->version = 1;
    Onnx__ModelProto *m = s_model(s_mlp(), "", 25);
    m->opset_import[m->n_opset_import++] = o; /* imported, unused: costs nothing */
    ck_assert_int_eq(s_parse(m, NULL, err, sizeof err), GX_OK);
    g = s_mlp();
    ADD(g, node, n = s_node("Gradient", "grad", "y", "z"));
    n->domain = s_str("ai.onnx.preview.training");
    ADD(g, node, n = s_node("FusedMatMul", NULL, "y", "w"));
    n->domain = s_str("com.microsoft");
    m = s_model(g, "", 13);
    m->opset_import[m->n_opset_import++] = o;
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_EUNSUPPORTED, err, "2 unsupported features",
               "graph.node[2] (Gradient 'grad'): op 'Gradient' of domain "
               "'ai.onnx.preview.training' is not supported (opset 1 imported; docs/onnx.md "
               "lists the ops",
               "graph.node[3] (FusedMatMul): op 'FusedMatMul' of domain 'com.microsoft' is not "
               "supported (the model does not import it");
    /* the training domain's optimizer steps are read in its opset 1 only */
    g = s_mlp();
    ADD(g, node, n = s_node("Adam", "opt", "y", "z"));
    n->domain = s_str("ai.onnx.preview.training");
    m = s_model(g, "", 13);
    m->opset_import[m->n_opset_import++] = o;
    ck_assert_int_eq(s_parse(m, NULL, err, sizeof err), GX_OK);
    g = s_mlp();
    ADD(g, node, n = s_node("Adam", "opt", "y", "z"));
    n->domain = s_str("ai.onnx.preview.training");
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "(Adam 'opt'): op 'Adam' of domain 'ai.onnx.preview.training' is not supported "
               "(the model does not import it");
    ck_assert_ptr_null(strstr(err, "MatMul 'mm'"));
    /* no ai.onnx import: its nodes are refused, each by name */
    ASSERT_ERR(s_parse(s_model(s_mlp(), "com.example", 3), &out, err, sizeof err),
               GX_EUNSUPPORTED, err, "2 unsupported features",
               "(MatMul 'mm'): op 'MatMul' of ai.onnx, but the model imports no ai.onnx opset",
               "(Relu): op 'Relu'");
    ASSERT_ERR(s_parse(s_model(s_mlp(), NULL, 0), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "imports no ai.onnx opset");
    /* ... unless the model predates opset imports (IR version 2: opset 1) */
    m = s_model(s_mlp(), NULL, 0);
    m->ir_version = 2;
    ck_assert_int_eq(s_parse(m, NULL, err, sizeof err), GX_OK);
    /* versions gexec does not know */
    ASSERT_ERR(s_parse(s_model(s_mlp(), "", 26), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "(MatMul 'mm'): ai.onnx opset 26 is not supported (gexec reads opsets 1 to 25)");
    ASSERT_ERR(s_parse(s_model(s_mlp(), "", 0), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "ai.onnx opset 0 is not supported");
    /* a model of only other domains' nodes: refused by node too */
    g = s_graph("ex");
    ADD(g, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){2})));
    ADD(g, node, n = s_node("Frob", "fr", "x", "y"));
    n->domain = s_str("com.example");
    ADD(g, output, s_vi("y", NULL));
    ASSERT_ERR(s_parse(s_model(g, "com.example", 3), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "graph.node[0] (Frob 'fr'): operator domain 'com.example' is not supported (op "
               "'Frob', opset 3 imported; gexec runs the ai.onnx ops)");
    /* ai.onnx.ml: its ops of the table are read, every other one is
     * refused by node with its op, domain and opset (TreeEnsemble is of
     * opset 5); ZipMap and DictVectorizer say what to do instead */
    g = s_graph("ml");
    ADD(g, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){2})));
    ADD(g, node, n = s_node("Scaler", "sc", "x", "y"));
    n->domain = s_str("ai.onnx.ml");
    ADD(g, output, s_vi("y", NULL));
    ck_assert_int_eq(s_parse(s_model(g, "ai.onnx.ml", 3), NULL, err, sizeof err), GX_OK);
    ASSERT_ERR(s_parse(s_model(g, "ai.onnx.ml", 6), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "graph.node[0] (Scaler 'sc'): op 'Scaler' of domain 'ai.onnx.ml' is not "
               "supported (opset 6 imported; docs/onnx.md lists the ops");
    g = s_graph("ml");
    ADD(g, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){2})));
    ADD(g, node, n = s_node("TreeEnsemble", "te", "x", "y"));
    n->domain = s_str("ai.onnx.ml");
    ADD(g, node, n = s_node("DictVectorizer", "dv", "y", "v"));
    n->domain = s_str("ai.onnx.ml");
    ADD(g, node, n = s_node("ZipMap", "zm", "v", "z"));
    n->domain = s_str("ai.onnx.ml");
    ADD(g, output, s_vi("z", NULL));
    ASSERT_ERR(s_parse(s_model(g, "ai.onnx.ml", 3), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "3 unsupported features",
               "graph.node[0] (TreeEnsemble 'te'): op 'TreeEnsemble' of domain 'ai.onnx.ml' is "
               "not supported (opset 3 imported;",
               "graph.node[1] (DictVectorizer 'dv'): DictVectorizer is not supported: it takes a "
               "map",
               "graph.node[2] (ZipMap 'zm'): ZipMap is not supported: it outputs a sequence of "
               "maps", "export the model without ZipMap");
    /* an ai.onnx node naming another domain's op is refused, not run as
     * that op */
    g = s_graph("foreign");
    ADD(g, input, s_vi("x", s_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){2})));
    ADD(g, node, s_node("Scaler", "sc", "x", "y"));
    ADD(g, node, n = s_node("Adam", "ad", "y", "z"));
    n->domain = s_str("ai.onnx");
    ADD(g, node, s_node("Relu", "ok", "z", "w"));
    ADD(g, output, s_vi("w", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "2 unsupported features",
               "graph.node[0] (Scaler 'sc'): op 'Scaler' is not an ai.onnx op (the node's domain "
               "is empty, ai.onnx): it is an op of domain 'ai.onnx.ml'; set the node's domain",
               "graph.node[1] (Adam 'ad'): op 'Adam' is not an ai.onnx op (the node's domain is "
               "'ai.onnx'): it is an op of domain 'ai.onnx.preview.training'");
    ck_assert_ptr_null(strstr(err, "'ok'"));
}
END_TEST

START_TEST(test_onnx_malformed_models)
{
    char err[1024];
    gx_graph *out = NULL;
    struct {
        Onnx__GraphProto *g;
        int status;
        const char *msg;
    } cases[12];
    size_t nc = 0;
    Onnx__GraphProto *g;
    Onnx__NodeProto *n;

    cases[nc++] = (typeof(cases[0])){s_graph("g"), GX_EFORMAT, "graph.input[0]: input without a name"};
    ADD(cases[nc - 1].g, input, s_vi("", s_type(1, 0, NULL)));
    cases[nc++] = (typeof(cases[0])){s_graph("g"), GX_EFORMAT, "graph input 'x' has no tensor element type"};
    ADD(cases[nc - 1].g, input, s_vi("x", NULL));
    cases[nc++] = (typeof(cases[0])){s_graph("g"), GX_EFORMAT, "input 'x': dim 1 is negative"};
    ADD(cases[nc - 1].g, input, s_vi("x", s_type(1, 2, (int64_t[]){2, -5})));
    cases[nc++] = (typeof(cases[0])){s_graph("g"), GX_EUNSUPPORTED, "input 'x' has 9 dims"};
    ADD(cases[nc - 1].g, input, s_vi("x", s_type(1, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1})));
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EFORMAT, "node without an op_type"};
    ADD(g, node, n = s_node("", "n", "", "y"));
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EATTR, "attribute 'a': given twice"};
    ADD(g, node, n = s_node("Op", "n", "", "y"));
    s_attr(n, "a", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    s_attr(n, "a", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EFORMAT, "attribute 'a': type UNDEFINED"};
    ADD(g, node, n = s_node("Op", "n", "", "y"));
    s_attr(n, "a", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED);
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EATTR, "attribute 's': string contains a NUL"};
    ADD(g, node, n = s_node("Op", "n", "", "y"));
    Onnx__AttributeProto *a = s_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = s_copy("a\0b", 3);
    a->s.len = 3;
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EFORMAT, "GRAPH attribute without a graph"};
    ADD(g, node, n = s_node("Op", "n", "", "y"));
    s_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    cases[nc++] = (typeof(cases[0])){g = s_graph("g"), GX_EFORMAT, "initializer without a name"};
    ADD(g, initializer, s_f32(NULL, 0, NULL, (float[]){1}, 1));
    for (size_t i = 0; i < nc; i++) {
        ADD(cases[i].g, output, s_vi("y", NULL));
        ASSERT_ERR(s_parse(s_model(cases[i].g, "", 13), &out, err, sizeof err), cases[i].status,
                   err, cases[i].msg);
    }
    /* no graph; a graph with an unnamed output */
    Onnx__ModelProto *m = s_model(s_mlp(), "", 13);
    m->graph = NULL;
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_EFORMAT, err, "the model has no graph");
    g = s_mlp();
    ADD(g, output, s_vi("", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EFORMAT, err,
               "output without a name");
    /* not protobuf at all */
    ASSERT_ERR(gx_graph_parse_onnx("\xff\xff\xff", 3, NULL, &out, err, sizeof err), GX_EFORMAT,
               err, "<onnx>: malformed protobuf");
    ASSERT_ERR(gx_graph_parse_onnx("", 0, NULL, &out, err, sizeof err), GX_EFORMAT, err,
               "no graph");
    ASSERT_ERR(gx_graph_parse_onnx(NULL, 4, NULL, &out, err, sizeof err), GX_EINVAL, err, "NULL");
    ck_assert_int_eq(gx_graph_parse_onnx("", 0, NULL, NULL, err, sizeof err), GX_EINVAL);
    ASSERT_ERR(gx_graph_load_onnx("/nonexistent/model.onnx", &out, err, sizeof err), GX_EIO, err,
               "/nonexistent/model.onnx");
    ASSERT_ERR(gx_graph_load_onnx("/tmp", &out, err, sizeof err), GX_EIO, err, "not a regular file");
}
END_TEST

/* A model with a bit of everything, for the hostile-bytes tests. */
/* ---- model-local functions ---------------------------------------------- */

/* A function of domain local.fn in m (ins and outs as s_node's). */
static Onnx__FunctionProto *s_function(Onnx__ModelProto *m, const char *name, const char *ins,
                                       const char *outs)
{
    Onnx__FunctionProto *f = s_new(sizeof *f);
    onnx__function_proto__init(f);
    f->name = s_str(name);
    f->domain = s_str("local.fn");
    f->input = s_names(ins, &f->n_input);
    f->output = s_names(outs, &f->n_output);
    f->node = s_new(CAP * sizeof *f->node);
    f->attribute = s_new(CAP * sizeof *f->attribute);
    f->opset_import = s_new(CAP * sizeof *f->opset_import);
    if (!m->functions)
        m->functions = s_new(CAP * sizeof *m->functions);
    m->functions[m->n_functions++] = f;
    return f;
}

/* A node calling function op of local.fn. */
static Onnx__NodeProto *s_call(const char *op, const char *name, const char *ins,
                               const char *outs)
{
    Onnx__NodeProto *n = s_node(op, name, ins, outs);
    n->domain = s_str("local.fn");
    return n;
}

/* Attribute name of n referring to the function's attribute ref. */
static void s_attr_ref(Onnx__NodeProto *n, const char *name, const char *ref, int type)
{
    s_attr(n, name, type)->ref_attr_name = s_str(ref);
}

static void s_opset(Onnx__OperatorSetIdProto ***list, size_t *n, const char *domain, int64_t v);

/* Function f's default of attribute name: the float v (attribute_proto,
 * field 11, which Debian's onnx.proto lacks: an unknown field, its length
 * prefix in data as protobuf-c keeps it). */
static void s_fn_default(Onnx__FunctionProto *f, const char *name, float v)
{
    Onnx__AttributeProto *def = s_new(sizeof *def);
    onnx__attribute_proto__init(def);
    def->name = s_str(name);
    def->has_type = 1;
    def->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    def->has_f = 1;
    def->f = v;
    ProtobufCMessageUnknownField *uf = s_new(sizeof *uf);
    uf->tag = 11;
    uf->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    size_t len;
    uint8_t *bytes = s_pack(&def->base, &len);
    ck_assert_uint_lt(len, 128); /* a one-byte length prefix */
    uf->data = s_new(len + 1);
    uf->data[0] = (uint8_t)len;
    memcpy(uf->data + 1, bytes, len);
    uf->len = len + 1;
    f->base.n_unknown_fields = 1;
    f->base.unknown_fields = uf;
}

static void s_opset(Onnx__OperatorSetIdProto ***list, size_t *n, const char *domain, int64_t v)
{
    Onnx__OperatorSetIdProto *o = s_new(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = s_str(domain);
    o->has_version = 1;
    o->version = v;
    (*list)[(*n)++] = o;
}

static Onnx__ModelProto *s_rich_model(void)
{
    Onnx__GraphProto *g = s_mlp();
    Onnx__NodeProto *n = s_node("If", "if", "c", "z");
    Onnx__AttributeProto *a = s_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = s_mlp();
    a = s_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 2;
    a->floats = s_copy((float[]){1, 2}, 8);
    a = s_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = s_tensor(NULL, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){2}, (int64_t[]){3, 4}, 16);
    ADD(g, node, n);
    /* a call of a model-local function with an attribute default */
    Onnx__ModelProto *m = s_model(g, "", 13);
    Onnx__FunctionProto *f = s_function(m, "Leaky", "X", "Y");
    f->attribute[f->n_attribute++] = s_str("slope");
    ADD(f, node, n = s_node("LeakyRelu", NULL, "X", "Y"));
    s_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->ref_attr_name = s_str("slope");
    s_fn_default(f, "slope", 0.5f);
    ADD(g, node, s_call("Leaky", "leaky", "y", "w"));
    return m;
}

START_TEST(test_onnx_truncated_and_mutated)
{
    size_t len;
    uint8_t *good = s_pack(&s_rich_model()->base, &len);
    char err[1024];
    gx_graph *out = NULL;
    ck_assert_int_eq(gx_graph_parse_onnx(good, len, NULL, &out, err, sizeof err), GX_OK);
    gx_graph_destroy(&out);
    /* Every prefix either cuts a field or drops the graph or the opsets
     * (written last): always an error. Each on the heap, so ASan sees reads
     * past its end. */
    for (size_t k = 0; k < len; k++) {
        uint8_t *p = malloc(k ? k : 1);
        memcpy(p, good, k);
        int rc = gx_graph_parse_onnx(p, k, NULL, &out, err, sizeof err);
        free(p);
        ck_assert_msg(rc < 0, "prefix of %zu bytes parsed", k);
        ck_assert_ptr_null(out);
        ck_assert(*err);
    }
    /* Every bit flipped, and every byte set to a few values: an error or a
     * graph, never a crash. */
    uint8_t *p = malloc(len);
    for (size_t k = 0; k < len; k++) {
        static const uint8_t vals[] = {0x00, 0x7f, 0x80, 0xff};
        for (int b = 0; b < 8 + 4; b++) {
            memcpy(p, good, len);
            p[k] = b < 8 ? (uint8_t)(p[k] ^ (1u << b)) : vals[b - 8];
            int rc = gx_graph_parse_onnx(p, len, NULL, &out, err, sizeof err);
            ck_assert(rc < 0 ? out == NULL && *err : out != NULL);
            gx_graph_destroy(&out);
        }
    }
    free(p);
    /* random bytes */
    srand(7);
    uint8_t buf[512];
    for (int i = 0; i < 2000; i++) {
        size_t n = (size_t)rand() % sizeof buf;
        for (size_t k = 0; k < n; k++)
            buf[k] = (uint8_t)rand();
        int rc = gx_graph_parse_onnx(buf, n, NULL, &out, err, sizeof err);
        ck_assert(rc < 0 ? out == NULL && *err : out != NULL);
        gx_graph_destroy(&out);
        gx_tensor *t = NULL;
        rc = gx_tensor_parse_onnx(buf, n, &t, err, sizeof err);
        ck_assert(rc < 0 ? t == NULL && *err : t != NULL);
        gx_tensor_destroy(&t);
    }
}
END_TEST

/* Nesting and allocation limits hold before protobuf-c sees the bytes. */
START_TEST(test_onnx_hostile_limits)
{
    char err[1024];
    gx_graph *out = NULL;
    /* 1000 levels of graph { node { attribute { g { node ... */
    size_t levels = 1000, cap = levels * 3 * 6 + 16, len = 0;
    uint8_t *buf = malloc(cap);
    /* built inside out: each level wraps the previous bytes */
    static const uint8_t tags[3] = {0x32 /* Attribute.g = 6 */, 0x2a /* Node.attribute = 5 */,
                                    0x0a /* Graph.node = 1 */};
    uint8_t *tmp = malloc(cap);
    for (size_t l = 0; l < levels * 3 && len + 8 < cap; l++) {
        size_t hdr = 0;
        tmp[hdr++] = tags[l % 3];
        for (size_t v = len; ; v >>= 7) {
            tmp[hdr++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        memcpy(tmp + hdr, buf, len);
        memcpy(buf, tmp, hdr + len);
        len += hdr;
    }
    /* ModelProto.graph = 7 */
    tmp[0] = 0x3a;
    size_t hdr = 1;
    for (size_t v = len; ; v >>= 7) {
        tmp[hdr++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    memcpy(tmp + hdr, buf, len);
    ASSERT_ERR(gx_graph_parse_onnx(tmp, hdr + len, NULL, &out, err, sizeof err), GX_ELIMIT, err,
               "nest deeper");
    free(buf);
    free(tmp);

    /* 8 MB of empty nodes: small bytes, large structs */
    size_t n = 4u << 20;
    buf = malloc(2 * n + 16);
    len = 0;
    buf[len++] = 0x3a;
    size_t body = 2 * n;
    for (size_t v = body; ; v >>= 7) {
        buf[len++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    for (size_t i = 0; i < n; i++) {
        buf[len++] = 0x0a;
        buf[len++] = 0x00;
    }
    ASSERT_ERR(gx_graph_parse_onnx(buf, len, NULL, &out, err, sizeof err), GX_ELIMIT, err,
               "decoding would allocate");
    free(buf);

    /* a node with more attributes than any op has */
    Onnx__GraphProto *ga = s_graph("attrs");
    Onnx__NodeProto *na = s_node("Op", "n", "", "y");
    na->attribute = s_new(300 * sizeof *na->attribute);
    for (int i = 0; i < 300; i++) {
        char name[16];
        snprintf(name, sizeof name, "a%d", i);
        s_attr_i(na, name, i);
    }
    ADD(ga, node, na);
    ADD(ga, output, s_vi("y", NULL));
    ASSERT_ERR(s_parse(s_model(ga, "", 13), &out, err, sizeof err), GX_ELIMIT, err,
               "300 attributes (at most 256)");

    /* subgraphs deeper than the importer's limit (but within protobuf's) */
    Onnx__GraphProto *g = s_graph("g0"), *cur = g;
    for (int i = 0; i < 18; i++) {
        Onnx__NodeProto *nd = s_node("If", NULL, "c", "y");
        Onnx__AttributeProto *a = s_attr(nd, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        a->g = s_graph("sub");
        ADD(cur, node, nd);
        ADD(cur, output, s_vi("y", NULL));
        cur = a->g;
    }
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_ELIMIT, err,
               "subgraphs nest deeper than 16 levels");
}
END_TEST

/* ---- external data ------------------------------------------------------ */

static void s_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static Onnx__TensorProto *s_external(const char *name, int64_t n, const char *loc,
                                     const char *off, const char *length)
{
    Onnx__TensorProto *t = s_tensor(name, 1, 1, (int64_t[]){n}, NULL, 0);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->external_data = s_new(4 * sizeof *t->external_data);
    const char *kv[3][2] = {{"location", loc}, {"offset", off}, {"length", length}};
    for (int i = 0; i < 3; i++) {
        if (!kv[i][1])
            continue;
        Onnx__StringStringEntryProto *e = s_new(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = s_str(kv[i][0]);
        e->value = s_str(kv[i][1]);
        t->external_data[t->n_external_data++] = e;
    }
    return t;
}

/* Write a model whose only initializer is t to dir/model.onnx; load it. */
static int s_load_external(const char *dir, Onnx__TensorProto *t, gx_graph **out, char *err,
                           size_t errlen)
{
    Onnx__GraphProto *g = s_graph("ext");
    ADD(g, initializer, t);
    ADD(g, output, s_vi(t->name, NULL));
    size_t len;
    uint8_t *buf = s_pack(&s_model(g, "", 13)->base, &len);
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    s_write(path, buf, len);
    return gx_graph_load_onnx(path, out, err, errlen);
}

START_TEST(test_onnx_external_data)
{
    char *dir = gxt_tmpdir(), path[512], err[1024];
    float w[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    snprintf(path, sizeof path, "%s/sub", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/sub/w.bin", dir);
    s_write(path, w, sizeof w);
    gx_graph *out = NULL;

    ck_assert_msg(s_load_external(dir, s_external("w", 3, "sub/w.bin", "8", "12"), &out, err,
                                  sizeof err) == GX_OK, "%s", err);
    ck_assert_uint_eq(out->n_consts, 1);
    ck_assert_float_eq(((float *)out->consts[0].t->data)[0], 2.0f);
    ck_assert_float_eq(((float *)out->consts[0].t->data)[2], 4.0f);
    gx_graph_destroy(&out);
    /* no length: the rest of the file */
    ck_assert_msg(s_load_external(dir, s_external("w", 6, "sub/w.bin", "8", NULL), &out, err,
                                  sizeof err) == GX_OK, "%s", err);
    ck_assert_float_eq(((float *)out->consts[0].t->data)[5], 7.0f);
    gx_graph_destroy(&out);
    /* a tensor file with external data, relative to its own directory */
    Onnx__TensorProto *tp = s_external("w", 2, "w.bin", NULL, "8");
    size_t len;
    uint8_t *buf = s_pack(&tp->base, &len);
    snprintf(path, sizeof path, "%s/sub/t.pb", dir);
    s_write(path, buf, len);
    gx_tensor *t = NULL;
    ck_assert_msg(gx_tensor_load_onnx(path, &t, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_float_eq(((const float *)gx_tensor_cdata(t))[1], 1.0f);
    gx_tensor_destroy(&t);
    /* ... but not from memory */
    ASSERT_ERR(gx_tensor_parse_onnx(buf, len, &t, err, sizeof err), GX_EUNSUPPORTED, err,
               "tensor 'w'", "needs the model's directory");

    static const struct {
        const char *loc, *off, *length;
        int64_t n;
        int status;
        const char *msg;
    } bad[] = {
        {"/etc/passwd", NULL, NULL, 1, GX_EFORMAT, "must be a relative path"},
        {"../w.bin", NULL, NULL, 1, GX_EFORMAT, "must be a relative path"},
        {"sub/../../x", NULL, NULL, 1, GX_EFORMAT, "no '..'"},
        {"", NULL, NULL, 1, GX_EFORMAT, "must be a relative path"},
        {NULL, NULL, NULL, 1, GX_EFORMAT, "without a location"},
        {"sub/missing.bin", NULL, NULL, 1, GX_EIO, "missing.bin"},
        {"sub", NULL, NULL, 1, GX_EIO, "not a regular file"},
        {"sub/w.bin", "33", NULL, 1, GX_EFORMAT, "run past the end"},
        {"sub/w.bin", "16", "20", 5, GX_EFORMAT, "run past the end"},
        {"sub/w.bin", "0", "8", 3, GX_EFORMAT, "8 bytes, but dtype and shape need 12"},
        {"sub/w.bin", NULL, NULL, 3, GX_EFORMAT, "32 bytes, but dtype and shape need 12"},
        {"sub/w.bin", "-4", NULL, 1, GX_EFORMAT, "offset '-4' is not a size"},
        {"sub/w.bin", "0", "4x", 1, GX_EFORMAT, "length '4x' is not a size"},
        {"sub/w.bin", "99999999999999999999", NULL, 1, GX_EFORMAT, "is not a size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tp = s_external("w", bad[i].n, bad[i].loc, bad[i].off, bad[i].length);
        ASSERT_ERR(s_load_external(dir, tp, &out, err, sizeof err), bad[i].status, err,
                   "graph.initializer[0] 'w'", bad[i].msg);
        ck_assert_ptr_null(out);
    }
    /* gx_graph_parse_onnx without base_dir refuses external data */
    Onnx__GraphProto *g = s_graph("ext");
    ADD(g, initializer, s_external("w", 2, "sub/w.bin", NULL, "8"));
    ADD(g, output, s_vi("w", NULL));
    ASSERT_ERR(s_parse(s_model(g, "", 13), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "needs the model's directory");
    /* with base_dir it reads */
    buf = s_pack(&s_model(g, "", 13)->base, &len);
    ck_assert_msg(gx_graph_parse_onnx(buf, len, dir, &out, err, sizeof err) == GX_OK, "%s", err);
    gx_graph_destroy(&out);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- the ONNX node tests ------------------------------------------------ */

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every model.onnx of the ONNX node tests loads, or is refused for a
 * feature gexec lacks with a message; their tensors load likewise. */
START_TEST(test_onnx_node_tests_load)
{
    DIR *d = opendir(NODE_TESTS);
    if (!d) {
        fprintf(stderr, "onnx: %s not found; node test models not checked\n", NODE_TESTS);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        ck_assert(gx_grow(&names, &cap, n + 1, sizeof *names));
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, s_cmp_str);
    size_t loaded = 0, refused = 0, tensors = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1024], err[4096] = "";
        gx_graph *g = NULL;
        snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_TESTS, names[i]);
        int rc = gx_graph_load_onnx(path, &g, err, sizeof err);
        if (rc == GX_OK) {
            ck_assert_ptr_nonnull(g);
            loaded++;
        } else {
            ck_assert_msg(rc == GX_EUNSUPPORTED || rc == GX_EDTYPE || rc == GX_EATTR,
                          "%s: %s: %s", names[i], gx_status_name(rc), err);
            ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && strlen(err) > strlen(path) + 10,
                          "%s: unclear message: %s", names[i], err);
            refused++;
        }
        for (int k = 0; rc == GX_OK; k++) {
            gx_tensor *t = NULL;
            bool opt;
            gx_kind kind = gx_graph_input_kind(g, (size_t)k, &opt);
            snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", NODE_TESTS, names[i], k);
            if (access(path, R_OK) != 0 || kind == GX_KIND_COUNT)
                break;
            int trc = gx_value_load_onnx(path, kind, opt, &t, err, sizeof err);
            ck_assert_msg(trc == GX_OK || trc == GX_EDTYPE, "%s: %s", path, err);
            tensors += trc == GX_OK;
            gx_tensor_destroy(&t);
        }
        gx_graph_destroy(&g);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    fprintf(stderr, "onnx: node tests: %zu models loaded, %zu refused, %zu inputs read\n", loaded,
            refused, tensors);
    ck_assert_uint_gt(loaded, 800);
}
END_TEST

/* ---- end to end --------------------------------------------------------- */

/* gexec-submit runs an .onnx model as it runs a YAML graph; the library
 * runs the imported graph inline too. */
START_TEST(test_onnx_submit_e2e)
{
    /* y = Relu(x W + b), with a Constant node and a symbolic batch */
    Onnx__GraphProto *g = s_mlp();
    g->node[0]->output[0] = s_str("m");
    Onnx__NodeProto *n = s_node("Constant", NULL, "", "b");
    Onnx__AttributeProto *a = s_attr(n, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 2;
    a->floats = s_copy((float[]){-10, 0.5f}, 8);
    g->node[2] = g->node[1]; /* the Relu */
    g->node[1] = s_node("Add", "add", "m,b", "h");
    g->node[3] = n;
    g->n_node = 4;
    size_t len;
    uint8_t *buf = s_pack(&s_model(g, "", 13)->base, &len);
    char *dir = gxt_tmpdir(), path[512], xpath[512], out[8192], err[512];
    snprintf(path, sizeof path, "%s/mlp.onnx", dir);
    s_write(path, buf, len);
    gx_tensor *x = gx_tensor_new(GX_F32, 2, (int64_t[]){2, 3});
    float *xp = gx_tensor_data(x);
    for (int i = 0; i < 6; i++)
        xp[i] = (float)i;
    snprintf(xpath, sizeof xpath, "%s/x.npy", dir);
    ck_assert_int_eq(gx_npy_save(xpath, x, err, sizeof err), GX_OK);
    /* x W = [[13,16],[40,52]]; + b = [[3,16.5],[30,52.5]] */
    static const float want[4] = {3, 16.5f, 30, 52.5f};

    gxt_daemon d;
    gxt_daemon_start(&d, NULL);
    const char *bin = GX_TEST_BUILDDIR "/libclient/gexec-submit";
    int rc = gxt_sh(out, sizeof out, "%s --socket %s run %s -i x=%s -o %s/out 2>&1", bin,
                  d.endpoint, path, xpath, dir);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    char ypath[600];
    snprintf(ypath, sizeof ypath, "%s/out/y.npy", dir);
    gx_tensor *y = NULL;
    ck_assert_msg(gx_npy_load(ypath, &y, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(gx_tensor_ndim(y), 2);
    ck_assert(gxt_allclose(gx_tensor_cdata(y), want, 4, 1e-6f, 0));
    gx_tensor_destroy(&y);
    rc = gxt_sh(out, sizeof out, "%s --socket %s load %s 2>&1", bin, d.endpoint, path);
    ck_assert_msg(rc == 0 && strlen(out) == 65, "exit %d: %s", rc, out);
    /* an import error is one line naming the file */
    snprintf(ypath, sizeof ypath, "%s/bad.onnx", dir);
    s_write(ypath, "\x0a\xff", 2);
    rc = gxt_sh(out, sizeof out, "%s --socket %s run %s 2>&1", bin, d.endpoint, ypath);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strstr(out, "bad.onnx: malformed protobuf") && !strchr(out, '\n')[1], "%s", out);

    /* through the library, the graph inline */
    gx_graph *gg = NULL;
    ck_assert_msg(gx_graph_load_onnx(path, &gg, err, sizeof err) == GX_OK, "%s", err);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    gx_request *rq = gx_request_new();
    gx_request_set_graph(rq, gg);
    gx_request_add_input(rq, "x", x);
    gx_result *r = NULL;
    rc = gx_client_run(c, rq, &r);
    ck_assert_msg(rc == GX_OK, "%s", r ? gx_result_message(r) : gx_client_last_error(c));
    ck_assert(gxt_allclose(gx_tensor_cdata(gx_result_output(r, 0)), want, 4, 1e-6f, 0));
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    /* the daemon wants a dtype for the inputs of the graph it runs */
    gx_graph *un = gx_graph_new("untyped");
    ck_assert_int_eq(gx_graph_add_input_decl(un, "x", GX_DTYPE_COUNT, -1, NULL), GX_OK);
    gx_graph_add_node(un, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    gx_graph_add_output(un, "y");
    gx_graph_id id;
    ck_assert_int_eq(gx_client_load(c, un, &id), GX_EGRAPH);
    ck_assert_ptr_nonnull(strstr(gx_client_last_error(c), "graph input 'x' needs a dtype"));
    gx_graph_destroy(&un);
    gx_client_destroy(&c);
    gx_graph_destroy(&gg);
    gx_tensor_destroy(&x);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* ---- version conversion, run by a real gexecd --------------------------- */

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define ATTR_INTS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
#define ATTR_STRING ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING

static gxt_daemon s_cv_daemon;
static gx_client *s_cv_client;

static void s_cv_setup(void)
{
    char err[512];
    gxt_daemon_start(&s_cv_daemon, NULL);
    s_cv_client = gx_client_new(s_cv_daemon.endpoint, err, sizeof err);
    ck_assert_msg(s_cv_client, "%s", err);
}

static void s_cv_teardown(void)
{
    gx_client_destroy(&s_cv_client);
    ck_assert_int_eq(gxt_daemon_stop(&s_cv_daemon), 0);
    s_arena_free();
}

static void s_attr_is(Onnx__NodeProto *n, const char *name, size_t count, const int64_t *v)
{
    Onnx__AttributeProto *a = s_attr(n, name, ATTR_INTS);
    a->n_ints = count;
    a->ints = s_copy(v, count * sizeof *v);
}

static void s_attr_s(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = s_attr(n, name, ATTR_STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)s_str(v);
    a->s.len = strlen(v);
}

/* A graph input x<i> of dtype elem and shape. */
static void s_cv_input(Onnx__GraphProto *g, const char *name, int elem, int ndim,
                       const int64_t *dims)
{
    ADD(g, input, s_vi(name, s_type(elem, ndim, dims)));
}

/* The value of element i of t as a double. */
static double s_elem(const gx_tensor *t, size_t i)
{
    const void *p = gx_tensor_cdata(t);
    gx_dtype dt = gx_tensor_dtype(t);
    if (dt == GX_F32)
        return ((const float *)p)[i];
    if (dt == GX_I64)
        return (double)((const int64_t *)p)[i];
    ck_assert_msg(dt == GX_BOOL || dt == GX_U8, "dtype %s", gx_dtype_name(dt));
    return ((const uint8_t *)p)[i];
}

/* Import m (opset of the model), run it with inputs x0, x1, ... (the
 * graph's inputs in order) and check output out: dtype, shape, values. */
static void s_cv_check(const char *what, Onnx__ModelProto *m, size_t n_in, gx_tensor **ins,
                       size_t out, gx_dtype dt, int ndim, const int64_t *shape, const double *want)
{
    char err[2048] = "";
    gx_graph *g = NULL;
    int rc = s_parse(m, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s: import: %s", what, err);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
    for (size_t i = 0; i < n_in; i++)
        ck_assert_int_eq(gx_request_add_input(rq, m->graph->input[i]->name, ins[i]), GX_OK);
    gx_result *r = NULL;
    rc = gx_client_run(s_cv_client, rq, &r);
    ck_assert_msg(rc == GX_OK, "%s: run: %s", what,
                  r ? gx_result_message(r) : gx_client_last_error(s_cv_client));
    ck_assert_uint_gt(gx_result_output_count(r), out);
    const gx_tensor *y = gx_result_output(r, out);
    ck_assert_msg(gx_tensor_dtype(y) == dt, "%s: dtype %s, want %s", what,
                  gx_dtype_name(gx_tensor_dtype(y)), gx_dtype_name(dt));
    ck_assert_msg(gx_tensor_ndim(y) == ndim, "%s: rank %d, want %d", what, gx_tensor_ndim(y),
                  ndim);
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        ck_assert_msg(gx_tensor_shape(y)[d] == shape[d], "%s: dim %d is %lld, want %lld", what,
                      d, (long long)gx_tensor_shape(y)[d], (long long)shape[d]);
        n *= (size_t)shape[d];
    }
    for (size_t i = 0; i < n; i++) {
        double v = s_elem(y, i);
        ck_assert_msg(fabs(v - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]),
                      "%s: element %zu is %.7g, want %.7g", what, i, v, want[i]);
    }
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_graph_destroy(&g);
    for (size_t i = 0; i < n_in; i++)
        gx_tensor_destroy(&ins[i]);
}

static gx_tensor *s_cv_f32(int ndim, const int64_t *shape, const float *v)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)shape[i];
    gx_tensor *t = gx_tensor_new_copy(GX_F32, ndim, shape, v, n * sizeof *v);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Functions are inlined where called: inputs, outputs and attributes
 * (the caller's, else the default of IR 9's attribute_proto, a field
 * Debian's onnx.proto lacks) passed, the body's names made unique beside
 * the graph's, functions calling functions, and each body read with its
 * own opsets; recursion, subgraphs in bodies and wrong arities refused. */
START_TEST(test_onnx_functions)
{
    const int64_t d23[2] = {2, 3}, d1[1] = {1}, d2[1] = {2};
    static const float xv[6] = {-1, 2, -3, 4, -5, 6};
    Onnx__GraphProto *g = s_graph("fn");
    Onnx__ModelProto *m = s_model(g, "", 18);
    s_opset(&m->opset_import, &m->n_opset_import, "local.fn", 1);
    s_cv_input(g, "x", F32, 2, d23);
    ADD(g, initializer, s_f32("s", 1, d1, (float[]){2}, 1));
    /* ScaledRelu(X, S) = LeakyRelu(X * S, alpha = slope), slope 0.5 by default */
    Onnx__FunctionProto *f = s_function(m, "ScaledRelu", "X,S", "Y");
    f->attribute[f->n_attribute++] = s_str("slope");
    Onnx__NodeProto *n;
    ADD(f, node, s_node("Mul", NULL, "X,S", "t"));
    ADD(f, node, n = s_node("LeakyRelu", "act", "t", "Y"));
    s_attr_ref(n, "alpha", "slope", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    s_fn_default(f, "slope", 0.5f);
    /* Outer(X, S) = -ReduceSum(Softmax(ScaledRelu(X, S, slope = slope2),
     * axis 0), axis 1), read with opset 12: Softmax over X as [1, 6] (from
     * opset 13 on, over axis 0 alone) */
    f = s_function(m, "Outer", "X,S", "Y");
    f->attribute[f->n_attribute++] = s_str("slope2");
    s_opset(&f->opset_import, &f->n_opset_import, "", 12);
    ADD(f, node, n = s_call("ScaledRelu", "inner", "X,S", "u"));
    s_attr_ref(n, "slope", "slope2", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    ADD(f, node, n = s_node("Softmax", NULL, "u", "sm"));
    s_attr_i(n, "axis", 0);
    ADD(f, node, n = s_node("ReduceSum", NULL, "sm", "r"));
    s_attr_is(n, "axes", 1, (int64_t[]){1});
    s_attr_i(n, "keepdims", 0);
    ADD(f, node, s_node("Neg", NULL, "r", "Y"));
    /* the graph: a value named as n1's t would be once inlined */
    ADD(g, node, s_node("Sub", NULL, "x,x", "n1/t"));
    ADD(g, node, n = s_call("ScaledRelu", "n1", "x,s", "a"));
    s_attr_f(n, "slope", 0.1f);
    ADD(g, node, s_node("Add", NULL, "a,n1/t", "a2"));
    ADD(g, node, s_call("ScaledRelu", "n2", "a2,s", "y"));
    ADD(g, node, n = s_call("Outer", NULL, "y,s", "z"));
    s_attr_f(n, "slope2", 0.25f);
    ADD(g, output, s_vi("z", NULL));
    /* a = leaky_0.1(2x); y = leaky_0.5(2a); u = leaky_0.25(2y);
     * z = -(row sums of the softmax of all six u) */
    double u[6], total = 0, want[2] = {0, 0};
    for (int i = 0; i < 6; i++) {
        double v = 2.0 * xv[i];
        v = v < 0 ? 0.1 * v : v;
        v *= 2;
        v = v < 0 ? 0.5 * v : v;
        v *= 2;
        u[i] = exp(v < 0 ? 0.25 * v : v);
        total += u[i];
    }
    for (int i = 0; i < 6; i++)
        want[i / 3] -= u[i] / total;
    s_cv_check("functions", m, 1, (gx_tensor *[]){s_cv_f32(2, d23, xv)}, 0, GX_F32, 1, d2, want);

    /* an If in a function: Gate(X, C) = C ? Relu(X * K) : -X, K the
     * function's Constant, called twice (its branches' names the same in
     * both: each call's copy reads its own X and K) */
    g = s_graph("gate");
    m = s_model(g, "", 18);
    s_opset(&m->opset_import, &m->n_opset_import, "local.fn", 1);
    s_cv_input(g, "x", F32, 2, d23);
    ADD(g, initializer, s_tensor("on", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL,
                                 (uint8_t[]){1}, 1));
    ADD(g, initializer, s_tensor("off", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL,
                                 (uint8_t[]){0}, 1));
    f = s_function(m, "Gate", "X,C", "Y");
    Onnx__NodeProto *kn = s_node("Constant", NULL, "", "K");
    s_attr(kn, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 3;
    kn->attribute[0]->has_f = 1;
    ADD(f, node, kn);
    ADD(f, node, n = s_node("If", NULL, "C", "Y"));
    Onnx__GraphProto *br = s_graph("then");
    ADD(br, node, s_node("Mul", NULL, "X,K", "t"));
    ADD(br, node, s_node("Relu", NULL, "t", "r"));
    ADD(br, output, s_vi("r", NULL));
    s_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
    br = s_graph("else");
    ADD(br, node, s_node("Neg", NULL, "X", "t"));
    ADD(br, output, s_vi("t", NULL));
    s_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
    ADD(g, node, s_call("Gate", "g1", "x,on", "a"));
    ADD(g, node, s_call("Gate", "g2", "x,off", "b"));
    ADD(g, node, s_node("Add", NULL, "a,b", "y"));
    ADD(g, output, s_vi("y", NULL));
    double gate[6];
    for (int i = 0; i < 6; i++)
        gate[i] = (xv[i] > 0 ? 3.0 * xv[i] : 0.0) - xv[i];
    s_cv_check("an If in a function", m, 1, (gx_tensor *[]){s_cv_f32(2, d23, xv)}, 0, GX_F32, 2,
               d23, gate);

    /* the refusals */
    char err[2048];
    gx_graph *out = NULL;
    g = s_graph("fn");
    m = s_model(g, "", 18);
    s_cv_input(g, "x", F32, 2, d23);
    ADD(g, node, s_call("Self", "me", "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    f = s_function(m, "Self", "X", "Y");
    ADD(f, node, s_call("Self", "again", "X", "Y"));
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_ELIMIT, err, "function 'Self'",
               "more than 16 deep");
    f->node[0] = s_node("Frob", NULL, "X", "Y");
    f->node[0]->domain = s_str("com.example");
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "graph.node[0] (Self 'me'): function 'Self'.node[0] (Frob 'me/Frob_0')",
               "operator domain 'com.example' is not supported");
    f->node[0] = s_node("Relu", NULL, "X", "Y");
    g->node[0] = s_call("Self", "me", "x,x", "y");
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_EFORMAT, err,
               "2 inputs and 1 outputs for a function of 1 and 1");
    g->node[0] = s_call("Self", "me", "x", "y");
    ck_assert_int_eq(s_parse(m, &out, err, sizeof err), GX_OK);
    ck_assert_uint_eq(gx_graph_node_count(out), 1);
    gx_graph_destroy(&out);
    /* a small file of five functions, each calling the next 16 times,
     * would be a million nodes: refused at 2^18 */
    g = s_graph("fan");
    m = s_model(g, "", 18);
    s_cv_input(g, "x", F32, 2, d23);
    ADD(g, node, s_call("F0", "top", "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    for (int lv = 0; lv < 5; lv++) {
        char fname[8], next[8];
        snprintf(fname, sizeof fname, "F%d", lv);
        snprintf(next, sizeof next, "F%d", lv + 1);
        f = s_function(m, fname, "X", "Y");
        f->node = s_new(17 * sizeof *f->node);
        for (int i = 0; i < 16; i++)
            f->node[f->n_node++] = lv < 4 ? s_call(next, NULL, "X", i < 15 ? "" : "Y")
                                          : s_node("Relu", NULL, "X", i < 15 ? "" : "Y");
    }
    ASSERT_ERR(s_parse(m, &out, err, sizeof err), GX_ELIMIT, err,
               "the model's function calls add more than 262144 nodes");
}
END_TEST

/* A graph input without a shape (unknown rank, as converters write some)
 * takes a tensor of any shape at RUN, of its declared dtype; a plan
 * without the input (EXPLAIN) asks for its shape. */
START_TEST(test_onnx_unknown_rank)
{
    Onnx__GraphProto *g = s_graph("any");
    ADD(g, input, s_vi("x", s_type(F32, -1, NULL)));
    ADD(g, node, s_node("Mul", NULL, "x,x", "y"));
    ADD(g, output, s_vi("y", NULL));
    Onnx__ModelProto *m = s_model(g, "", 13);
    const int64_t d23[2] = {2, 3}, d4[1] = {4};
    s_cv_check("rank 2", m, 1, (gx_tensor *[]){s_cv_f32(2, d23, (float[]){1, 2, 3, 4, 5, 6})}, 0,
               GX_F32, 2, d23, (double[]){1, 4, 9, 16, 25, 36});
    s_cv_check("rank 1", m, 1, (gx_tensor *[]){s_cv_f32(1, d4, (float[]){-1, 0.5f, 2, 3})}, 0,
               GX_F32, 1, d4, (double[]){1, 0.25, 4, 9});
    char err[2048] = "";
    gx_graph *gr = NULL;
    ck_assert_msg(s_parse(m, &gr, err, sizeof err) == GX_OK, "%s", err);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, gr), GX_OK);
    char *json = NULL;
    ck_assert_int_eq(gx_client_explain(s_cv_client, rq, &json), GX_ESHAPE);
    ck_assert_msg(strstr(gx_client_last_error(s_cv_client),
                         "input 'x' is declared without a shape"),
                  "%s", gx_client_last_error(s_cv_client));
    free(json);
    /* its dtype still holds */
    gx_tensor *xi = gx_tensor_new(GX_I64, 1, d4);
    ck_assert_int_eq(gx_request_add_input(rq, "x", xi), GX_OK);
    gx_result *r = NULL;
    ck_assert_int_ne(gx_client_run(s_cv_client, rq, &r), GX_OK);
    const char *msg = r ? gx_result_message(r) : gx_client_last_error(s_cv_client);
    ck_assert_msg(strstr(msg, "input 'x': expected float32 of any shape, got int64 [4]"), "%s",
                  msg);
    gx_result_destroy(&r);
    gx_tensor_destroy(&xi);
    gx_request_destroy(&rq);
    gx_graph_destroy(&gr);
}
END_TEST

/* Softmax, LogSoftmax and Hardmax before 13 work on the input coerced to
 * 2-D at axis; from 13 on one axis. */
START_TEST(test_onnx_convert_softmax)
{
    static const float xv[12] = {0, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0};
    const int64_t dims[3] = {2, 2, 3};
    double want[12];
    /* Softmax-11, axis 1 of [2,2,3]: over the 6 values of each sample */
    for (int s = 0; s < 2; s++) {
        double sum = 0;
        for (int i = 0; i < 6; i++)
            sum += exp(xv[s * 6 + i]);
        for (int i = 0; i < 6; i++)
            want[s * 6 + i] = exp(xv[s * 6 + i]) / sum;
    }
    Onnx__GraphProto *g = s_graph("sm");
    s_cv_input(g, "x", F32, 3, dims);
    ADD(g, node, s_node("Softmax", "sm", "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Softmax-11", s_model(g, "", 11), 1, (gx_tensor *[]){s_cv_f32(3, dims, xv)}, 0,
               GX_F32, 3, dims, want);

    /* Softmax-13 on the same node: over the last axis only */
    for (int r = 0; r < 4; r++) {
        double sum = 0;
        for (int i = 0; i < 3; i++)
            sum += exp(xv[r * 3 + i]);
        for (int i = 0; i < 3; i++)
            want[r * 3 + i] = exp(xv[r * 3 + i]) / sum;
    }
    s_cv_check("Softmax-13", s_model(g, "", 13), 1, (gx_tensor *[]){s_cv_f32(3, dims, xv)}, 0,
               GX_F32, 3, dims, want);

    /* LogSoftmax-9 with axis 2 (the last) agrees with 13; a negative axis */
    for (int i = 0; i < 12; i++)
        want[i] = log(want[i]);
    g = s_graph("lsm");
    s_cv_input(g, "x", F32, 3, dims);
    Onnx__NodeProto *n = s_node("LogSoftmax", NULL, "x", "y");
    s_attr_i(n, "axis", -1);
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("LogSoftmax-9", s_model(g, "", 9), 1, (gx_tensor *[]){s_cv_f32(3, dims, xv)}, 0,
               GX_F32, 3, dims, want);

    /* at the last axis of a declared rank the coercion is nothing: the op
     * alone; on a value of unknown rank: Flatten, Shape, op, Reshape */
    const int64_t d2[2] = {2, 6};
    g = s_graph("sm2");
    s_cv_input(g, "x", F32, 2, d2);
    ADD(g, node, s_node("Relu", NULL, "x", "r"));
    ADD(g, node, s_node("Softmax", "a", "x", "y"));
    ADD(g, node, s_node("Softmax", "b", "r", "z"));
    ADD(g, output, s_vi("y", NULL));
    ADD(g, output, s_vi("z", NULL));
    char err[1024];
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_model(g, "", 11), &out, err, sizeof err), GX_OK);
    ck_assert_uint_eq(out->n_nodes, 6);
    ck_assert_str_eq(out->nodes[1]->op, "Softmax");
    ck_assert_str_eq(out->nodes[1]->name, "a");
    ck_assert_str_eq(out->nodes[2]->op, "Flatten");
    ck_assert_str_eq(out->nodes[2]->name, "b/Flatten");
    ck_assert_str_eq(out->nodes[4]->op, "Softmax");
    ck_assert_str_eq(out->nodes[4]->name, "b");
    ck_assert_str_eq(out->nodes[5]->op, "Reshape");
    ck_assert_str_eq(out->nodes[5]->out[0], "z");
    gx_graph_destroy(&out);

    /* Hardmax-1, axis 0: the whole tensor is one row; its first maximum */
    static const double hard[12] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    g = s_graph("hm");
    s_cv_input(g, "x", F32, 3, dims);
    ADD(g, node, n = s_node("Hardmax", NULL, "x", "y"));
    s_attr_i(n, "axis", 0);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Hardmax-1", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(3, dims, xv)}, 0,
               GX_F32, 3, dims, hard);
}
END_TEST

/* Opset 1-6 broadcasting (broadcast/axis), PRelu per channel, Gemm's
 * broadcast attribute and consumed_inputs. */
START_TEST(test_onnx_convert_broadcast)
{
    const int64_t da[3] = {2, 3, 2}, db[1] = {3};
    float av[12];
    for (int i = 0; i < 12; i++)
        av[i] = (float)(i - 6);
    static const float bv[3] = {10, 20, 30};
    double want[12];

    /* Add-6, broadcast=1 axis=1: B [3] lines up with A's dim 1 */
    for (int i = 0; i < 12; i++)
        want[i] = av[i] + bv[(i / 2) % 3];
    Onnx__GraphProto *g = s_graph("add");
    s_cv_input(g, "a", F32, 3, da);
    s_cv_input(g, "b", F32, 1, db);
    Onnx__NodeProto *n = s_node("Add", NULL, "a,b", "y");
    s_attr_i(n, "broadcast", 1);
    s_attr_i(n, "axis", 1);
    s_attr_is(n, "consumed_inputs", 2, (int64_t[]){0, 0});
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Add-6 axis 1", s_model(g, "", 6), 2,
               (gx_tensor *[]){s_cv_f32(3, da, av), s_cv_f32(1, db, bv)}, 0, GX_F32, 3, da, want);

    /* Mul-1 with axis -2 (from the back); the same B given as [3,1] needs
     * nothing */
    for (int i = 0; i < 12; i++)
        want[i] = av[i] * bv[(i / 2) % 3];
    g = s_graph("mul");
    s_cv_input(g, "a", F32, 3, da);
    s_cv_input(g, "b", F32, 1, db);
    ADD(g, node, n = s_node("Mul", NULL, "a,b", "y"));
    s_attr_i(n, "broadcast", 1);
    s_attr_i(n, "axis", -2);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Mul-1 axis -2", s_model(g, "", 1), 2,
               (gx_tensor *[]){s_cv_f32(3, da, av), s_cv_f32(1, db, bv)}, 0, GX_F32, 3, da, want);

    /* Sub-6, broadcast=1 without an axis: trailing alignment, as numpy */
    const int64_t db2[1] = {2};
    for (int i = 0; i < 12; i++)
        want[i] = av[i] - bv[i % 2];
    g = s_graph("sub");
    s_cv_input(g, "a", F32, 3, da);
    s_cv_input(g, "b", F32, 1, db2);
    ADD(g, node, n = s_node("Sub", NULL, "a,b", "y"));
    s_attr_i(n, "broadcast", 1);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Sub-6", s_model(g, "", 6), 2,
               (gx_tensor *[]){s_cv_f32(3, da, av), s_cv_f32(1, db2, bv)}, 0, GX_F32, 3, da, want);

    /* Greater-6, axis 1, bool out */
    static const float bg[3] = {-3, 0, 3};
    for (int i = 0; i < 12; i++)
        want[i] = av[i] > bg[(i / 2) % 3];
    g = s_graph("gt");
    s_cv_input(g, "a", F32, 3, da);
    s_cv_input(g, "b", F32, 1, db);
    ADD(g, node, n = s_node("Greater", NULL, "a,b", "y"));
    s_attr_i(n, "broadcast", 1);
    s_attr_i(n, "axis", 1);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Greater-6 axis 1", s_model(g, "", 6), 2,
               (gx_tensor *[]){s_cv_f32(3, da, av), s_cv_f32(1, db, bg)}, 0, GX_BOOL, 3, da,
               want);

    /* PRelu-6: one slope per channel (dim 1) */
    static const float slope[3] = {0.5f, 2, -1};
    for (int i = 0; i < 12; i++)
        want[i] = av[i] >= 0 ? av[i] : av[i] * slope[(i / 2) % 3];
    g = s_graph("prelu");
    s_cv_input(g, "a", F32, 3, da);
    ADD(g, initializer, s_f32("s", 1, db, slope, 3));
    ADD(g, node, s_node("PRelu", NULL, "a,s", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("PRelu-6", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(3, da, av)}, 0, GX_F32,
               3, da, want);

    /* Gemm-6 with broadcast=1: C [2] added to every row */
    const int64_t dA[2] = {2, 3}, dB[2] = {3, 2}, dC[1] = {2}, dY[2] = {2, 2};
    static const float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[2] = {100, 200};
    static const double gemm[4] = {104, 205, 110, 211};
    g = s_graph("gemm");
    s_cv_input(g, "a", F32, 2, dA);
    ADD(g, initializer, s_f32("b", 2, dB, B, 6));
    ADD(g, initializer, s_f32("c", 1, dC, C, 2));
    ADD(g, node, n = s_node("Gemm", NULL, "a,b,c", "y"));
    s_attr_i(n, "broadcast", 1);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Gemm-6", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(2, dA, A)}, 0, GX_F32, 2,
               dY, gemm);
}
END_TEST

/* BatchNormalization-6 (is_test, consumed_inputs), Dropout-6/9 (is_test,
 * a mask of the input's type), Concat-3 without axis, Reshape-4 with a
 * shape attribute, Cast-5 with a type name. */
START_TEST(test_onnx_convert_attrs)
{
    const int64_t dx[3] = {1, 2, 2}, dc[1] = {2};
    static const float xv[4] = {1, 2, 3, 4};
    static const float scale[2] = {2, 3}, bias[2] = {1, -1}, mean[2] = {1, 2}, var[2] = {4, 9};
    double want[8];
    for (int i = 0; i < 4; i++) {
        int ch = i / 2;
        want[i] = (xv[i] - mean[ch]) / sqrt(var[ch] + 1e-5) * scale[ch] + bias[ch];
    }
    Onnx__GraphProto *g = s_graph("bn");
    s_cv_input(g, "x", F32, 3, dx);
    ADD(g, initializer, s_f32("s", 1, dc, scale, 2));
    ADD(g, initializer, s_f32("b", 1, dc, bias, 2));
    ADD(g, initializer, s_f32("m", 1, dc, mean, 2));
    ADD(g, initializer, s_f32("v", 1, dc, var, 2));
    Onnx__NodeProto *n = s_node("BatchNormalization", NULL, "x,s,b,m,v", "y");
    s_attr_i(n, "is_test", 1);
    s_attr_is(n, "consumed_inputs", 5, (int64_t[]){0, 0, 0, 1, 1});
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("BatchNormalization-5", s_model(g, "", 5), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)},
               0, GX_F32, 3, dx, want);

    /* BatchNormalization-6 without is_test (0): training mode, statistics
     * of the batch (per channel: mean 1.5 and 3.5, variance 0.25) */
    n->n_attribute = 0;
    for (int i = 0; i < 4; i++)
        want[i] = (i % 2 ? 0.5 : -0.5) / sqrt(0.25 + 1e-5) * scale[i / 2] + bias[i / 2];
    s_cv_check("BatchNormalization-6 is_test=0", s_model(g, "", 6), 1,
               (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 0, GX_F32, 3, dx, want);

    /* Dropout-6 in test mode is the identity; its mask is float ones */
    const double ones[4] = {1, 1, 1, 1}, xd[4] = {1, 2, 3, 4};
    g = s_graph("drop");
    s_cv_input(g, "x", F32, 3, dx);
    ADD(g, node, n = s_node("Dropout", NULL, "x", "y,mask"));
    s_attr_i(n, "is_test", 1);
    s_attr_f(n, "ratio", 0.25f);
    ADD(g, output, s_vi("y", NULL));
    ADD(g, output, s_vi("mask", NULL));
    s_cv_check("Dropout-6 y", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 0,
               GX_F32, 3, dx, xd);
    s_cv_check("Dropout-6 mask", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 1,
               GX_F32, 3, dx, ones);
    /* ... Dropout-9's too; Dropout-10's is bool */
    n->n_attribute = 0;
    s_cv_check("Dropout-9 mask", s_model(g, "", 9), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 1,
               GX_F32, 3, dx, ones);
    s_cv_check("Dropout-10 mask", s_model(g, "", 10), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 1,
               GX_BOOL, 3, dx, ones);
    /* training mode before 7 (is_test=0) is 12's training_mode input,
     * true, with the ratio attribute */
    s_attr_i(n, "is_test", 0);
    gx_graph *out = NULL;
    char err[1024];
    ck_assert_msg(s_parse(s_model(g, "", 6), &out, err, sizeof err) == GX_OK, "%s", err);
    const gx_node *dn = NULL;
    for (size_t i = 0; i < out->n_nodes; i++)
        if (strcmp(out->nodes[i]->op, "Dropout") == 0)
            dn = out->nodes[i];
    ck_assert_ptr_nonnull(dn);
    ck_assert_int_eq(dn->n_in, 3);
    ck_assert_str_eq(dn->in[1], "");
    const gx_tensor *train = NULL;
    for (size_t i = 0; i < out->n_consts; i++)
        if (strcmp(out->consts[i].name, dn->in[2]) == 0)
            train = out->consts[i].t;
    ck_assert_ptr_nonnull(train);
    ck_assert_int_eq(train->dtype, GX_BOOL);
    ck_assert(*(const bool *)train->data);
    gx_graph_destroy(&out);

    /* Concat-3 without axis joins along 1 */
    const int64_t d21[2] = {2, 1}, d22[2] = {2, 2};
    static const double cat[4] = {1, 3, 2, 4};
    g = s_graph("cat");
    s_cv_input(g, "a", F32, 2, d21);
    s_cv_input(g, "b", F32, 2, d21);
    ADD(g, node, s_node("Concat", NULL, "a,b", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Concat-3", s_model(g, "", 3), 2,
               (gx_tensor *[]){s_cv_f32(2, d21, (float[]){1, 2}), s_cv_f32(2, d21, (float[]){3, 4})},
               0, GX_F32, 2, d22, cat);

    /* Reshape-4: shape as an attribute */
    const int64_t d4[1] = {4};
    g = s_graph("reshape");
    s_cv_input(g, "x", F32, 3, dx);
    ADD(g, node, n = s_node("Reshape", NULL, "x", "y"));
    s_attr_is(n, "shape", 1, (int64_t[]){-1});
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Reshape-4", s_model(g, "", 4), 1, (gx_tensor *[]){s_cv_f32(3, dx, xv)}, 0, GX_F32,
               1, d4, xd);

    /* Cast-5: `to` names the type */
    g = s_graph("cast");
    s_cv_input(g, "x", F32, 3, dx);
    ADD(g, node, n = s_node("Cast", NULL, "x", "y"));
    s_attr_s(n, "to", "INT64");
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Cast-5", s_model(g, "", 5), 1,
               (gx_tensor *[]){s_cv_f32(3, dx, (float[]){1.5f, -2.5f, 3, 4})}, 0, GX_I64, 3, dx,
               (double[]){1, -2, 3, 4});
    s_attr_s(n, "to", "FLOATY");
    n->attribute[0] = n->attribute[1];
    n->n_attribute = 1;
    ASSERT_ERR(s_parse(s_model(g, "", 5), &out, err, sizeof err), GX_EATTR, err,
               "to='FLOATY' is not an ONNX element type");
}
END_TEST

/* GlobalLpPool-1 (p a float), Pad-1 (paddings), Upsample-6 (height_scale
 * and width_scale), RNN-6 (output_sequence), DFT-20 (axis input 2, by
 * default -2). */
START_TEST(test_onnx_convert_more)
{
    const int64_t d4[4] = {1, 1, 2, 2}, d11[4] = {1, 1, 1, 1};
    static const float xv[4] = {3, 4, 0, 0};
    Onnx__GraphProto *g = s_graph("lp");
    s_cv_input(g, "x", F32, 4, d4);
    Onnx__NodeProto *n = s_node("GlobalLpPool", NULL, "x", "y");
    s_attr_f(n, "p", 2.0f);
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("GlobalLpPool-1", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(4, d4, xv)}, 0,
               GX_F32, 4, d11, (double[]){5});

    const int64_t d12[2] = {1, 2}, d14[2] = {1, 4};
    g = s_graph("pad");
    s_cv_input(g, "x", F32, 2, d12);
    ADD(g, node, n = s_node("Pad", NULL, "x", "y"));
    s_attr_is(n, "paddings", 4, (int64_t[]){0, 1, 0, 1});
    s_attr_f(n, "value", 9);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Pad-1", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(2, d12, (float[]){1, 2})},
               0, GX_F32, 2, d14, (double[]){9, 1, 2, 9});

    const int64_t d44[4] = {1, 1, 2, 4};
    g = s_graph("up");
    s_cv_input(g, "x", F32, 4, d4);
    ADD(g, node, n = s_node("Upsample", NULL, "x", "y"));
    s_attr_f(n, "height_scale", 1);
    s_attr_f(n, "width_scale", 2);
    s_attr_s(n, "mode", "nearest");
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Upsample-6", s_model(g, "", 6), 1,
               (gx_tensor *[]){s_cv_f32(4, d4, (float[]){1, 2, 3, 4})}, 0, GX_F32, 4, d44,
               (double[]){1, 1, 2, 2, 3, 3, 4, 4});

    /* RNN-6, one step: Y_h = tanh(W x) */
    const int64_t d111[3] = {1, 1, 1};
    g = s_graph("rnn");
    s_cv_input(g, "x", F32, 3, d111);
    ADD(g, initializer, s_f32("w", 3, d111, (float[]){2}, 1));
    ADD(g, initializer, s_f32("r", 3, d111, (float[]){0}, 1));
    ADD(g, node, n = s_node("RNN", NULL, "x,w,r", ",yh"));
    s_attr_i(n, "hidden_size", 1);
    s_attr_i(n, "output_sequence", 0);
    ADD(g, output, s_vi("yh", NULL));
    s_cv_check("RNN-6", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(3, d111, (float[]){0.25f})},
               0, GX_F32, 3, d111, (double[]){tanh(0.5)});

    /* DFT-20 of [4,1]: by default along axis -2 (17's default, 1, is the
     * last dim here); and along axis 1 of [1,4,1] given as input 2 */
    const int64_t d41[2] = {4, 1}, d42[2] = {4, 2};
    static const float sig[4] = {1, 2, 3, 4};
    static const double spec[8] = {10, 0, -2, 2, -2, 0, -2, -2};
    g = s_graph("dft");
    s_cv_input(g, "x", F32, 2, d41);
    ADD(g, node, s_node("DFT", NULL, "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("DFT-20 default axis", s_model(g, "", 20), 1, (gx_tensor *[]){s_cv_f32(2, d41, sig)},
               0, GX_F32, 2, d42, spec);
    const int64_t d141[3] = {1, 4, 1}, d142[3] = {1, 4, 2};
    g = s_graph("dft");
    s_cv_input(g, "x", F32, 3, d141);
    ADD(g, initializer, s_tensor("ax", I64, 0, NULL, (int64_t[]){1}, 8));
    ADD(g, node, s_node("DFT", NULL, "x,,ax", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("DFT-20 axis input", s_model(g, "", 20), 1,
               (gx_tensor *[]){s_cv_f32(3, d141, sig)}, 0, GX_F32, 3, d142, spec);
    g->n_initializer = 0; /* ax: a graph input now, not known at import */
    s_cv_input(g, "ax", I64, 0, NULL);
    char err[1024];
    gx_graph *out = NULL;
    ASSERT_ERR(s_parse(s_model(g, "", 20), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "(DFT): axis (input 2 from opset 20) must be a constant");
}
END_TEST

/* Scan 8 (a batch axis, sequence_lens, directions) becomes a Loop over the
 * batch around Scan 9. */
START_TEST(test_onnx_convert_scan8)
{
    const int64_t ds[2] = {2, 2}, dx[3] = {2, 3, 2};
    static const float init[4] = {0, 0, 10, 10};
    static const float xv[12] = {1, 2, 3, 4, 5, 6, 1, 1, 2, 2, 3, 3};
    static const double y[4] = {9, 12, 16, 16};
    static const double fwd[12] = {1, 2, 4, 6, 9, 12, 11, 11, 13, 13, 16, 16};
    static const double rev[12] = {5, 6, 8, 10, 9, 12, 13, 13, 15, 15, 16, 16};
    for (int reverse = 0; reverse < 2; reverse++) {
        Onnx__GraphProto *g = s_graph("scan");
        s_cv_input(g, "init", F32, 2, ds);
        s_cv_input(g, "x", F32, 3, dx);
        Onnx__NodeProto *n = s_node("Scan", "sc", ",init,x", "y,z");
        Onnx__AttributeProto *a = s_attr(n, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        a->g = s_graph("body");
        ADD(a->g, input, s_vi("sum_in", NULL));
        ADD(a->g, input, s_vi("next", NULL));
        ADD(a->g, node, s_node("Add", NULL, "sum_in,next", "sum_out"));
        ADD(a->g, node, s_node("Identity", NULL, "sum_out", "scan_out"));
        ADD(a->g, output, s_vi("sum_out", NULL));
        ADD(a->g, output, s_vi("scan_out", NULL));
        s_attr_i(n, "num_scan_inputs", 1);
        if (reverse)
            s_attr_is(n, "directions", 1, (int64_t[]){1});
        ADD(g, node, n);
        ADD(g, output, s_vi("y", NULL));
        ADD(g, output, s_vi("z", NULL));
        s_cv_check("Scan-8 y", s_model(g, "", 8), 2,
                   (gx_tensor *[]){s_cv_f32(2, ds, init), s_cv_f32(3, dx, xv)}, 0, GX_F32, 2, ds,
                   y);
        s_cv_check(reverse ? "Scan-8 z reverse" : "Scan-8 z", s_model(g, "", 8), 2,
                   (gx_tensor *[]){s_cv_f32(2, ds, init), s_cv_f32(3, dx, xv)}, 1, GX_F32, 3, dx,
                   reverse ? rev : fwd);
        if (reverse) {
            char err[1024];
            gx_graph *out = NULL;
            n->input[0] = s_str("init"); /* sequence_lens given */
            ASSERT_ERR(s_parse(s_model(g, "", 8), &out, err, sizeof err), GX_EUNSUPPORTED, err,
                       "(Scan 'sc'): sequence_lens (input 0 of Scan before opset 9)");
        }
    }
}
END_TEST

/* Resize 11 as torch exported it: empty roi and scales, then sizes. */
START_TEST(test_onnx_convert_resize11)
{
    const int64_t d4[4] = {1, 1, 2, 2}, d44[4] = {1, 1, 4, 4}, d0[1] = {0}, d1[1] = {4};
    Onnx__GraphProto *g = s_graph("resize");
    s_cv_input(g, "x", F32, 4, d4);
    ADD(g, initializer, s_f32("roi", 1, d0, NULL, 0));
    ADD(g, initializer, s_f32("scales", 1, d0, NULL, 0));
    ADD(g, initializer, s_tensor("sizes", I64, 1, d1, (int64_t[]){1, 1, 4, 4}, 32));
    g->initializer[0]->has_raw_data = g->initializer[1]->has_raw_data = 1;
    Onnx__NodeProto *n = s_node("Resize", NULL, "x,roi,scales,sizes", "y");
    s_attr_s(n, "mode", "nearest");
    s_attr_s(n, "coordinate_transformation_mode", "asymmetric");
    s_attr_s(n, "nearest_mode", "floor");
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Resize-11", s_model(g, "", 11), 1,
               (gx_tensor *[]){s_cv_f32(4, d4, (float[]){1, 2, 3, 4})}, 0, GX_F32, 4, d44,
               (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    /* Resize 10: X and scales, read as such by the daemon */
    g = s_graph("resize10");
    s_cv_input(g, "x", F32, 4, d4);
    ADD(g, initializer, s_f32("scales", 1, d1, (float[]){1, 1, 2, 2}, 4));
    ADD(g, node, n = s_node("Resize", NULL, "x,scales", "y"));
    s_attr_s(n, "mode", "nearest");
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Resize-10", s_model(g, "", 10), 1,
               (gx_tensor *[]){s_cv_f32(4, d4, (float[]){1, 2, 3, 4})}, 0, GX_F32, 4, d44,
               (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}
END_TEST

/* The experimental ops of opsets 1-9 (ImageScaler, Affine, Scale,
 * ScaledTanh, ParametricSoftplus, Crop, DynamicSlice, ConstantFill) and Tile
 * before 6. */
START_TEST(test_onnx_convert_experimental)
{
    const int64_t dx[4] = {1, 2, 1, 2};
    static const float xv[4] = {1, 2, 3, 4};
    struct {
        const char *op;
        float alpha, beta;
        double want[4];
    } unary[] = {
        {"Affine", 2, 1, {3, 5, 7, 9}},
        {"ScaledTanh", 2, 0.5f, {2 * tanh(0.5), 2 * tanh(1), 2 * tanh(1.5), 2 * tanh(2)}},
        {"ParametricSoftplus", 2, 1, {2 * log1p(exp(1)), 2 * log1p(exp(2)), 2 * log1p(exp(3)),
                                      2 * log1p(exp(4))}},
    };
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        Onnx__GraphProto *g = s_graph("x");
        s_cv_input(g, "x", F32, 4, dx);
        Onnx__NodeProto *n = s_node(unary[i].op, NULL, "x", "y");
        s_attr_f(n, "alpha", unary[i].alpha);
        s_attr_f(n, "beta", unary[i].beta);
        ADD(g, node, n);
        ADD(g, output, s_vi("y", NULL));
        s_cv_check(unary[i].op, s_model(g, "", 9), 1, (gx_tensor *[]){s_cv_f32(4, dx, xv)}, 0,
                   GX_F32, 4, dx, unary[i].want);
        if (i == 1) { /* ScaledTanh has no defaults */
            char err[1024];
            gx_graph *out = NULL;
            n->n_attribute = 1;
            ASSERT_ERR(s_parse(s_model(g, "", 9), &out, err, sizeof err), GX_EATTR, err,
                       "ScaledTanh of opset 9 needs the FLOAT attribute 'beta'");
        }
    }
    /* ImageScaler: x * scale + bias per channel */
    Onnx__GraphProto *g = s_graph("is");
    s_cv_input(g, "x", F32, 4, dx);
    Onnx__NodeProto *n = s_node("ImageScaler", NULL, "x", "y");
    s_attr_f(n, "scale", 2);
    Onnx__AttributeProto *a = s_attr(n, "bias", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 2;
    a->floats = s_copy((float[]){10, -10}, 2 * sizeof(float));
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("ImageScaler", s_model(g, "", 8), 1, (gx_tensor *[]){s_cv_f32(4, dx, xv)}, 0,
               GX_F32, 4, dx, (double[]){12, 14, -4, -2});
    /* Scale */
    g = s_graph("sc");
    s_cv_input(g, "x", F32, 4, dx);
    ADD(g, node, n = s_node("Scale", NULL, "x", "y"));
    s_attr_f(n, "scale", 3);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Scale", s_model(g, "", 7), 1, (gx_tensor *[]){s_cv_f32(4, dx, xv)}, 0, GX_F32, 4,
               dx, (double[]){3, 6, 9, 12});
    /* Crop of [1,1,2,3]: border [left 1, top 0, right 0, bottom 0]; then
     * with scale [1, 1] */
    const int64_t dc[4] = {1, 1, 2, 3}, dc2[4] = {1, 1, 2, 2}, dc1[4] = {1, 1, 1, 1};
    static const float cv[6] = {1, 2, 3, 4, 5, 6};
    g = s_graph("crop");
    s_cv_input(g, "x", F32, 4, dc);
    ADD(g, node, n = s_node("Crop", NULL, "x", "y"));
    s_attr_is(n, "border", 4, (int64_t[]){1, 0, 0, 0});
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Crop", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(4, dc, cv)}, 0, GX_F32, 4,
               dc2, (double[]){2, 3, 5, 6});
    s_attr_is(n, "scale", 2, (int64_t[]){1, 1});
    s_cv_check("Crop with scale", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(4, dc, cv)}, 0,
               GX_F32, 4, dc1, (double[]){2});
    /* DynamicSlice: Slice 10 by another name */
    g = s_graph("ds");
    s_cv_input(g, "x", F32, 4, dc);
    ADD(g, initializer, s_tensor("st", I64, 1, (int64_t[]){1}, (int64_t[]){1}, 8));
    ADD(g, initializer, s_tensor("en", I64, 1, (int64_t[]){1}, (int64_t[]){3}, 8));
    ADD(g, initializer, s_tensor("ax", I64, 1, (int64_t[]){1}, (int64_t[]){3}, 8));
    ADD(g, node, s_node("DynamicSlice", NULL, "x,st,en,ax", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("DynamicSlice", s_model(g, "", 9), 1, (gx_tensor *[]){s_cv_f32(4, dc, cv)}, 0,
               GX_F32, 4, dc2, (double[]){2, 3, 5, 6});

    /* ConstantFill: from the shape attribute, the input's shape, or the
     * input's values; extra_shape after */
    const int64_t d2[1] = {2}, d21[2] = {2, 1};
    g = s_graph("cf");
    s_cv_input(g, "x", F32, 1, d2);
    ADD(g, node, n = s_node("ConstantFill", NULL, "", "y"));
    s_attr_is(n, "shape", 2, (int64_t[]){2, 1});
    s_attr_f(n, "value", 1.5f);
    ADD(g, node, n = s_node("ConstantFill", NULL, "x", "z"));
    s_attr_is(n, "extra_shape", 1, (int64_t[]){1});
    s_attr_i(n, "dtype", I64);
    s_attr_f(n, "value", 7);
    ADD(g, node, n = s_node("ConstantFill", NULL, "x", "w"));
    s_attr_i(n, "input_as_shape", 1);
    ADD(g, output, s_vi("y", NULL));
    ADD(g, output, s_vi("z", NULL));
    ADD(g, output, s_vi("w", NULL));
    s_cv_check("ConstantFill shape", s_model(g, "", 1), 1,
               (gx_tensor *[]){s_cv_f32(1, d2, (float[]){1, 2})}, 0, GX_F32, 2, d21,
               (double[]){1.5, 1.5});
    s_cv_check("ConstantFill like", s_model(g, "", 1), 1,
               (gx_tensor *[]){s_cv_f32(1, d2, (float[]){1, 2})}, 1, GX_I64, 2, d21,
               (double[]){7, 7});
    s_cv_check("ConstantFill input_as_shape", s_model(g, "", 1), 1,
               (gx_tensor *[]){s_cv_f32(1, d2, (float[]){1, 2})}, 2, GX_F32, 2,
               (int64_t[]){1, 2}, (double[]){0, 0});

    /* Tile-1: tiles and axis inputs */
    const int64_t d22[2] = {2, 2}, d24[2] = {2, 4};
    g = s_graph("tile");
    s_cv_input(g, "x", F32, 2, d22);
    ADD(g, initializer, s_tensor("tiles", I64, 0, NULL, (int64_t[]){2}, 8));
    ADD(g, initializer, s_tensor("axis", I64, 0, NULL, (int64_t[]){1}, 8));
    ADD(g, node, s_node("Tile", NULL, "x,tiles,axis", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Tile-1", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(2, d22, xv)}, 0, GX_F32, 2,
               d24, (double[]){1, 2, 1, 2, 3, 4, 3, 4});
}
END_TEST

/* RoiAlign before 16 (no half-pixel shift), MeanVarianceNormalization
 * before 9 (across_channels, normalize_variance), BatchNormalization
 * before 9 with spatial=0. */
START_TEST(test_onnx_convert_norms)
{
    /* X[h][w] = w: one bin over the whole 4x4 image, sampled at its centre:
     * x = 2 without the shift, 1.5 with it */
    const int64_t dx[4] = {1, 1, 4, 4}, dr[2] = {1, 4}, db[1] = {1}, d1[4] = {1, 1, 1, 1};
    float xv[16];
    for (int i = 0; i < 16; i++)
        xv[i] = (float)(i % 4);
    Onnx__GraphProto *g = s_graph("roi");
    s_cv_input(g, "x", F32, 4, dx);
    ADD(g, initializer, s_f32("rois", 2, dr, (float[]){0, 0, 4, 4}, 4));
    ADD(g, initializer, s_tensor("bi", I64, 1, db, (int64_t[]){0}, 8));
    Onnx__NodeProto *n = s_node("RoiAlign", NULL, "x,rois,bi", "y");
    s_attr_i(n, "output_height", 1);
    s_attr_i(n, "output_width", 1);
    s_attr_i(n, "sampling_ratio", 1);
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("RoiAlign-10", s_model(g, "", 10), 1, (gx_tensor *[]){s_cv_f32(4, dx, xv)}, 0,
               GX_F32, 4, d1, (double[]){2});
    s_cv_check("RoiAlign-16", s_model(g, "", 16), 1, (gx_tensor *[]){s_cv_f32(4, dx, xv)}, 0,
               GX_F32, 4, d1, (double[]){1.5});

    const int64_t dm[4] = {1, 2, 1, 2};
    static const float mv[4] = {1, 3, 2, 6};
    g = s_graph("mvn");
    s_cv_input(g, "x", F32, 4, dm);
    ADD(g, node, n = s_node("MeanVarianceNormalization", NULL, "x", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("MVN-1", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(4, dm, mv)}, 0, GX_F32, 4,
               dm, (double[]){-1, 1, -1, 1});
    s_attr_i(n, "normalize_variance", 0);
    s_cv_check("MVN-1 mean only", s_model(g, "", 1), 1, (gx_tensor *[]){s_cv_f32(4, dm, mv)}, 0,
               GX_F32, 4, dm, (double[]){-1, 1, -2, 2});
    n->n_attribute = 0;
    s_attr_i(n, "across_channels", 1);
    double sd = sqrt(3.5);
    s_cv_check("MVN-1 across channels", s_model(g, "", 1), 1,
               (gx_tensor *[]){s_cv_f32(4, dm, mv)}, 0, GX_F32, 4, dm,
               (double[]){-2 / sd, 0, -1 / sd, 3 / sd});

    /* BatchNormalization-7, spatial=0: statistics per (channel, element) */
    const int64_t dbx[3] = {2, 2, 1}, dst[2] = {2, 1};
    static const float bx[4] = {1, 2, 3, 4};
    static const float sc[2] = {2, 3}, bb[2] = {1, -1}, me[2] = {1, 2}, va[2] = {4, 9};
    double want[4];
    for (int i = 0; i < 4; i++) {
        int c = i % 2;
        want[i] = (bx[i] - me[c]) / sqrt(va[c] + 1e-3) * sc[c] + bb[c];
    }
    g = s_graph("bn");
    s_cv_input(g, "x", F32, 3, dbx);
    ADD(g, initializer, s_f32("s", 2, dst, sc, 2));
    ADD(g, initializer, s_f32("b", 2, dst, bb, 2));
    ADD(g, initializer, s_f32("m", 2, dst, me, 2));
    ADD(g, initializer, s_f32("v", 2, dst, va, 2));
    ADD(g, node, n = s_node("BatchNormalization", NULL, "x,s,b,m,v", "y"));
    s_attr_i(n, "spatial", 0);
    s_attr_f(n, "epsilon", 1e-3f);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("BatchNormalization-7 spatial=0", s_model(g, "", 7), 1,
               (gx_tensor *[]){s_cv_f32(3, dbx, bx)}, 0, GX_F32, 3, dbx, want);
}
END_TEST

/* Older forms the daemon's schemas read as they are (attributes that
 * later became inputs): imported unchanged, they run with the meaning of
 * their version. */
START_TEST(test_onnx_convert_daemon_forms)
{
    const int64_t d23[2] = {2, 3}, d13[2] = {1, 3}, d3[1] = {3}, d6[1] = {6};
    static const float v6[6] = {1, 2, 3, 4, 5, 6};
    struct {
        const char *op;
        int64_t opset;
        const int64_t *in_shape;
        int in_ndim;
        const char *ints_name;
        size_t n_ints;
        int64_t ints[4];
        const char *ints2_name;
        size_t n_ints2;
        int64_t ints2[4];
        int out_ndim;
        int64_t out_shape[2];
        double want[6];
    } cases[] = {
        {"Slice", 1, d23, 2, "starts", 2, {0, 1}, "ends", 2, {2, 3}, 2, {2, 2}, {2, 3, 5, 6}},
        {"Squeeze", 1, d13, 2, "axes", 1, {0}, NULL, 0, {0}, 1, {3}, {1, 2, 3}},
        {"Unsqueeze", 1, d3, 1, "axes", 1, {0}, NULL, 0, {0}, 2, {1, 3}, {1, 2, 3}},
        {"ReduceSum", 1, d23, 2, "axes", 1, {1}, "keepdims", 0, {0}, 1, {2}, {6, 15}},
        {"ReduceMean", 13, d23, 2, "axes", 1, {0}, "keepdims", 0, {0}, 1, {3}, {2.5, 3.5, 4.5}},
        {"Pad", 2, d3, 1, "pads", 2, {1, 0}, NULL, 0, {0}, 1, {4}, {0, 1, 2, 3}},
        {"Split", 2, d6, 1, "split", 2, {2, 4}, NULL, 0, {0}, 1, {2}, {1, 2}},
        {"TopK", 1, d3, 1, "k", 0, {2}, NULL, 0, {0}, 1, {2}, {3, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Onnx__GraphProto *g = s_graph("old");
        s_cv_input(g, "x", F32, cases[i].in_ndim, cases[i].in_shape);
        bool two = strcmp(cases[i].op, "Split") == 0 || strcmp(cases[i].op, "TopK") == 0;
        Onnx__NodeProto *n = s_node(cases[i].op, NULL, "x", two ? "y,w" : "y");
        if (cases[i].n_ints)
            s_attr_is(n, cases[i].ints_name, cases[i].n_ints, cases[i].ints);
        else
            s_attr_i(n, cases[i].ints_name, cases[i].ints[0]);
        if (cases[i].ints2_name && cases[i].n_ints2)
            s_attr_is(n, cases[i].ints2_name, cases[i].n_ints2, cases[i].ints2);
        else if (cases[i].ints2_name)
            s_attr_i(n, cases[i].ints2_name, cases[i].ints2[0]);
        ADD(g, node, n);
        ADD(g, output, s_vi("y", NULL));
        char what[64];
        snprintf(what, sizeof what, "%s-%lld", cases[i].op, (long long)cases[i].opset);
        s_cv_check(what, s_model(g, "", cases[i].opset), 1,
                   (gx_tensor *[]){s_cv_f32(cases[i].in_ndim, cases[i].in_shape, v6)}, 0, GX_F32,
                   cases[i].out_ndim, cases[i].out_shape, cases[i].want);
    }
    /* Clip-6: min and max attributes */
    Onnx__GraphProto *g = s_graph("clip");
    s_cv_input(g, "x", F32, 1, d6);
    Onnx__NodeProto *n = s_node("Clip", NULL, "x", "y");
    s_attr_f(n, "min", 2);
    s_attr_f(n, "max", 4);
    ADD(g, node, n);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Clip-6", s_model(g, "", 6), 1, (gx_tensor *[]){s_cv_f32(1, d6, v6)}, 0, GX_F32, 1,
               d6, (double[]){2, 2, 3, 4, 4, 4});
    /* QuantizeLinear-21 with output_dtype 0 (the zero point's type) */
    const int64_t dq[1] = {4};
    g = s_graph("q");
    s_cv_input(g, "x", F32, 1, dq);
    ADD(g, initializer, s_f32("s", 0, NULL, (float[]){0.5f}, 1));
    ADD(g, initializer, s_tensor("z", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL,
                                 (uint8_t[]){1}, 1));
    ADD(g, node, n = s_node("QuantizeLinear", NULL, "x,s,z", "y"));
    s_attr_i(n, "output_dtype", 0);
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("QuantizeLinear-21", s_model(g, "", 21), 1, (gx_tensor *[]){s_cv_f32(1, dq, v6)},
               0, GX_U8, 1, dq, (double[]){3, 5, 7, 9});

    /* Upsample-7: scales attribute; Upsample-9: scales input */
    const int64_t d12[4] = {1, 1, 1, 2}, d14[4] = {1, 1, 1, 4}, d4[1] = {4};
    g = s_graph("up7");
    s_cv_input(g, "x", F32, 4, d12);
    ADD(g, node, n = s_node("Upsample", NULL, "x", "y"));
    Onnx__AttributeProto *a = s_attr(n, "scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 4;
    a->floats = s_copy((float[]){1, 1, 1, 2}, 4 * sizeof(float));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Upsample-7", s_model(g, "", 7), 1, (gx_tensor *[]){s_cv_f32(4, d12, v6)}, 0,
               GX_F32, 4, d14, (double[]){1, 1, 2, 2});
    g = s_graph("up9");
    s_cv_input(g, "x", F32, 4, d12);
    ADD(g, initializer, s_f32("sc", 1, d4, (float[]){1, 1, 1, 2}, 4));
    ADD(g, node, s_node("Upsample", NULL, "x,sc", "y"));
    ADD(g, output, s_vi("y", NULL));
    s_cv_check("Upsample-9", s_model(g, "", 9), 1, (gx_tensor *[]){s_cv_f32(4, d12, v6)}, 0,
               GX_F32, 4, d14, (double[]){1, 1, 2, 2});
}
END_TEST

/* ---- com.microsoft contrib ops (the lowerings of libclient/onnx.c) ---- */

/* A model importing ai.onnx 17 and com.microsoft 1 (version v). */
/* A model of g importing ai.onnx 17, com.microsoft v and
 * com.microsoft.nchwc 1. */
static Onnx__ModelProto *s_ms_model(Onnx__GraphProto *g, int64_t v)
{
    Onnx__ModelProto *m = s_model(g, "", 17);
    for (int i = 0; i < 2; i++) {
        Onnx__OperatorSetIdProto *o = s_new(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = s_str(i ? "com.microsoft.nchwc" : "com.microsoft");
        o->has_version = 1;
        o->version = i ? 1 : v;
        m->opset_import[m->n_opset_import++] = o;
    }
    return m;
}

static Onnx__NodeProto *s_ms_node(Onnx__GraphProto *g, const char *op, const char *ins,
                                  const char *outs)
{
    Onnx__NodeProto *n = s_node(op, NULL, ins, outs);
    n->domain = s_str("com.microsoft");
    ADD(g, node, n);
    return n;
}

static void s_attr_fs(Onnx__NodeProto *n, const char *name, size_t count, const float *v)
{
    Onnx__AttributeProto *a = s_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = count;
    a->floats = s_copy(v, count * sizeof *v);
}

static double s_gelu(double x)
{
    return 0.5 * x * (1 + erf(x / sqrt(2)));
}

/* FusedConv (Z, LeakyRelu and Clip), FusedGemm, FusedMatMul (transA with
 * the rank known: Transpose; transB on a value of unknown rank: Einsum). */
START_TEST(test_onnx_convert_ms_fused)
{
    const int64_t d33[4] = {1, 1, 3, 3}, d1111[4] = {1, 1, 1, 1}, d1[1] = {1};
    float xv[9], zv[9];
    double want[9];
    for (int i = 0; i < 9; i++)
        xv[i] = (float)i - 4, zv[i] = 1;
    Onnx__GraphProto *g = s_graph("fc");
    s_cv_input(g, "x", F32, 4, d33);
    s_cv_input(g, "z", F32, 4, d33);
    ADD(g, initializer, s_f32("w", 4, d1111, (float[]){2}, 1));
    ADD(g, initializer, s_f32("b", 1, d1, (float[]){0.5f}, 1));
    Onnx__NodeProto *n = s_ms_node(g, "FusedConv", "x,w,b,z", "y");
    s_attr_s(n, "activation", "LeakyRelu");
    s_attr_fs(n, "activation_params", 1, (float[]){0.1f});
    s_attr_is(n, "kernel_shape", 2, (int64_t[]){1, 1});
    n = s_ms_node(g, "FusedConv", "x,w,b", "c");
    s_attr_s(n, "activation", "Clip");
    s_attr_fs(n, "activation_params", 2, (float[]){-1, 2});
    ADD(g, output, s_vi("y", NULL));
    ADD(g, output, s_vi("c", NULL));
    for (int i = 0; i < 9; i++) {
        double t = 2.0 * xv[i] + 0.5 + 1;
        want[i] = t > 0 ? t : 0.1 * t;
    }
    s_cv_check("FusedConv LeakyRelu + Z", s_ms_model(g, 1), 2,
               (gx_tensor *[]){s_cv_f32(4, d33, xv), s_cv_f32(4, d33, zv)}, 0, GX_F32, 4, d33,
               want);
    for (int i = 0; i < 9; i++)
        want[i] = fmin(2, fmax(-1, 2.0 * xv[i] + 0.5));
    s_cv_check("FusedConv Clip", s_ms_model(g, 1), 2,
               (gx_tensor *[]){s_cv_f32(4, d33, xv), s_cv_f32(4, d33, zv)}, 1, GX_F32, 4, d33,
               want);

    /* FusedGemm: LeakyRelu(alpha * A B) */
    const int64_t d23[2] = {2, 3}, d32[2] = {3, 2}, d22[2] = {2, 2};
    static const float av[6] = {1, -2, 3, -4, 5, -6}, bv[6] = {0.5f, 1, -1, 2, 0.25f, -0.5f};
    double ab[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            ab[i * 2 + j] = 0;
            for (int k = 0; k < 3; k++)
                ab[i * 2 + j] += (double)av[i * 3 + k] * bv[k * 2 + j];
        }
    g = s_graph("fg");
    s_cv_input(g, "a", F32, 2, d23);
    s_cv_input(g, "b", F32, 2, d32);
    n = s_ms_node(g, "FusedGemm", "a,b", "y");
    s_attr_f(n, "alpha", 2);
    s_attr_s(n, "activation", "LeakyRelu");
    s_attr_f(n, "activation_alpha", 0.5f);
    ADD(g, output, s_vi("y", NULL));
    for (int i = 0; i < 4; i++)
        want[i] = 2 * ab[i] > 0 ? 2 * ab[i] : ab[i];
    s_cv_check("FusedGemm", s_ms_model(g, 1), 2,
               (gx_tensor *[]){s_cv_f32(2, d23, av), s_cv_f32(2, d32, bv)}, 0, GX_F32, 2, d22,
               want);

    /* FusedMatMul: 0.5 * A^T B^T, A stored [3, 2] (declared), B [2, 3]
     * behind a Neg (rank unknown to the importer) */
    float at[6], bneg[6];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            at[k * 2 + i] = av[i * 3 + k];
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 3; k++)
            bneg[j * 3 + k] = -bv[k * 2 + j];
    g = s_graph("fm");
    s_cv_input(g, "a", F32, 2, d32);
    s_cv_input(g, "b", F32, 2, d23);
    ADD(g, node, s_node("Neg", NULL, "b", "nb"));
    n = s_ms_node(g, "FusedMatMul", "a,nb", "y");
    s_attr_f(n, "alpha", 0.5f);
    s_attr_i(n, "transA", 1);
    s_attr_i(n, "transB", 1);
    ADD(g, output, s_vi("y", NULL));
    for (int i = 0; i < 4; i++)
        want[i] = 0.5 * ab[i];
    s_cv_check("FusedMatMul", s_ms_model(g, 1), 2,
               (gx_tensor *[]){s_cv_f32(2, d32, at), s_cv_f32(2, d23, bneg)}, 0, GX_F32, 2,
               d22, want);
    char err[1024];
    gx_graph *out = NULL;
    ck_assert_int_eq(s_parse(s_ms_model(g, 1), &out, err, sizeof err), GX_OK);
    ck_assert_str_eq(out->nodes[1]->op, "Transpose");
    ck_assert_str_eq(out->nodes[2]->op, "Einsum");
    ck_assert_str_eq(out->nodes[3]->op, "MatMul");
    ck_assert_str_eq(out->nodes[out->n_nodes - 1]->op, "Mul");
    gx_graph_destroy(&out);
}
END_TEST

/* Gelu, FastGelu (with bias), BiasGelu, QuickGelu, BiasAdd */
START_TEST(test_onnx_convert_ms_gelu)
{
    const int64_t d23[2] = {2, 3}, d3[1] = {3};
    static const float xv[6] = {-2, -0.5f, 0, 0.5f, 1, 3}, bv[3] = {0.25f, -1, 0.5f};
    double want[5][6];
    for (int i = 0; i < 6; i++) {
        double x = xv[i], xb = x + bv[i % 3];
        want[0][i] = s_gelu(x);
        want[1][i] = 0.5 * xb * (1 + tanh(0.7978845608028654 * (xb + 0.044715 * xb * xb * xb)));
        want[2][i] = s_gelu(xb);
        want[3][i] = x / (1 + exp(-1.702 * x));
        want[4][i] = xb + x;
    }
    Onnx__GraphProto *g = s_graph("gelu");
    s_cv_input(g, "x", F32, 2, d23);
    s_cv_input(g, "b", F32, 1, d3);
    s_ms_node(g, "Gelu", "x", "y0");
    s_ms_node(g, "FastGelu", "x,b", "y1");
    s_ms_node(g, "BiasGelu", "x,b", "y2");
    s_ms_node(g, "QuickGelu", "x", "y3");
    s_ms_node(g, "BiasAdd", "x,b,x", "y4");
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "y%d", i);
        ADD(g, output, s_vi(name, NULL));
    }
    static const char *const what[5] = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd"};
    for (size_t i = 0; i < 5; i++)
        s_cv_check(what[i], s_ms_model(g, 1), 2,
                   (gx_tensor *[]){s_cv_f32(2, d23, xv), s_cv_f32(1, d3, bv)}, i, GX_F32, 2, d23,
                   want[i]);
}
END_TEST

/* SkipLayerNormalization (bias, the sum output), the simplified forms and
 * com.microsoft's LayerNormalization, over the last axis. */
START_TEST(test_onnx_convert_ms_norms)
{
    const int64_t d24[2] = {2, 4}, d4[1] = {4};
    static const float xv[8] = {1, 2, 3, 4, -1, 0, 2, 7}, sv[8] = {0.5f, 0, -1, 2, 1, 1, 1, 1},
                       gv[4] = {1, 2, 0.5f, -1}, bv[4] = {0, 0.5f, 1, -2},
                       biv[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    double want[5][8];
    const double eps = 1e-5;
    for (int r = 0; r < 2; r++) {
        double s[4], t[4], mean = 0, var = 0, tms = 0, xm = 0, xvar = 0, xms = 0;
        const float *x = xv + r * 4;
        for (int i = 0; i < 4; i++) {
            t[i] = (double)x[i] + sv[r * 4 + i];
            s[i] = t[i] + biv[i];
            mean += s[i] / 4;
            tms += t[i] * t[i] / 4;
            xm += x[i] / 4.0;
            xms += (double)x[i] * x[i] / 4;
        }
        for (int i = 0; i < 4; i++) {
            var += (s[i] - mean) * (s[i] - mean) / 4;
            xvar += (x[i] - xm) * (x[i] - xm) / 4;
        }
        for (int i = 0; i < 4; i++) {
            want[0][r * 4 + i] = (s[i] - mean) / sqrt(var + eps) * gv[i] + bv[i];
            want[1][r * 4 + i] = s[i];
            want[2][r * 4 + i] = t[i] / sqrt(tms + eps) * gv[i];
            want[3][r * 4 + i] = x[i] / sqrt(xms + eps) * gv[i];
            want[4][r * 4 + i] = (x[i] - xm) / sqrt(xvar + eps) * gv[i] + bv[i];
        }
    }
    Onnx__GraphProto *g = s_graph("norms");
    s_cv_input(g, "x", F32, 2, d24);
    s_cv_input(g, "s", F32, 2, d24);
    ADD(g, initializer, s_f32("gamma", 1, d4, gv, 4));
    ADD(g, initializer, s_f32("beta", 1, d4, bv, 4));
    ADD(g, initializer, s_f32("bias", 1, d4, biv, 4));
    Onnx__NodeProto *n = s_ms_node(g, "SkipLayerNormalization", "x,s,gamma,beta,bias", "y0,,,y1");
    s_attr_f(n, "epsilon", 1e-5f);
    n = s_ms_node(g, "SkipSimplifiedLayerNormalization", "x,s,gamma", "y2");
    s_attr_f(n, "epsilon", 1e-5f);
    n = s_ms_node(g, "SimplifiedLayerNormalization", "x,gamma", "y3");
    s_attr_f(n, "epsilon", 1e-5f);
    s_attr_i(n, "axis", -1);
    n = s_ms_node(g, "LayerNormalization", "x,gamma,beta", "y4");
    s_attr_f(n, "epsilon", 1e-5f);
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "y%d", i);
        ADD(g, output, s_vi(name, NULL));
    }
    static const char *const what[5] = {"SkipLayerNormalization", "its input_skip_bias_sum",
                                         "SkipSimplifiedLayerNormalization",
                                         "SimplifiedLayerNormalization", "LayerNormalization"};
    for (size_t i = 0; i < 5; i++)
        s_cv_check(what[i], s_ms_model(g, 1), 2,
                   (gx_tensor *[]){s_cv_f32(2, d24, xv), s_cv_f32(2, d24, sv)}, i, GX_F32, 2,
                   d24, want[i]);
}
END_TEST

/* NhwcMaxPool: MaxPool on NHWC uint8 data */
START_TEST(test_onnx_convert_ms_nhwc)
{
    const int64_t dx[4] = {1, 3, 3, 2}, dy[4] = {1, 2, 2, 2};
    uint8_t xv[18];
    for (int i = 0; i < 18; i++)
        xv[i] = (uint8_t)((i * 7) % 19);
    double want[8];
    for (int h = 0; h < 2; h++)
        for (int w = 0; w < 2; w++)
            for (int ch = 0; ch < 2; ch++) {
                int m = 0;
                for (int dh = 0; dh < 2; dh++)
                    for (int dw = 0; dw < 2; dw++)
                        m = m > xv[((h + dh) * 3 + w + dw) * 2 + ch]
                                ? m
                                : xv[((h + dh) * 3 + w + dw) * 2 + ch];
                want[(h * 2 + w) * 2 + ch] = m;
            }
    Onnx__GraphProto *g = s_graph("mp");
    s_cv_input(g, "x", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 4, dx);
    Onnx__NodeProto *n = s_ms_node(g, "NhwcMaxPool", "x", "y");
    s_attr_is(n, "kernel_shape", 2, (int64_t[]){2, 2});
    ADD(g, output, s_vi("y", NULL));
    gx_tensor *x = gx_tensor_new_copy(GX_U8, 4, dx, xv, sizeof xv);
    s_cv_check("NhwcMaxPool", s_ms_model(g, 1), 1, &x, 0, GX_U8, 4, dy, want);
}
END_TEST

/* com.microsoft.nchwc without ONNX Runtime: a Conv on NCHW input of 10
 * channels (so blocks of 16: weights OIHWBo [O/16, I, KH, KW, 16]) with
 * Relu, cut to 12 channels; then ReorderInput padding 5 channels to 8, a
 * Conv of 8 outputs (blocks of 8: OIHWBiBo [O/8, I/8, KH, KW, 8, 8]) and
 * ReorderOutput to 6 channels, NHWC. */
START_TEST(test_onnx_convert_nchwc)
{
    for (int m = 0; m < 2; m++) {
        const int64_t c = m ? 5 : 10, o = m ? 8 : 16, keep = m ? 6 : 12, ci = m ? 8 : 10;
        const int64_t dx[4] = {1, c, 2, 2}, dw[4] = {o, ci, 1, 1}, db[1] = {o};
        float xv[40], wv[160], bv[16];
        for (int i = 0; i < c * 4; i++)
            xv[i] = (float)((i * 5) % 11 - 5) * 0.25f;
        for (int i = 0; i < o * ci; i++)
            wv[i] = (float)((i * 7) % 13 - 6) * 0.125f;
        for (int i = 0; i < o; i++)
            bv[i] = m ? 0.0f : (float)(i % 3) * 0.5f - 0.5f;
        Onnx__GraphProto *g = s_graph("nchwc");
        s_cv_input(g, "x", F32, 4, dx);
        ADD(g, initializer, s_f32("w", 4, dw, wv, (size_t)(o * ci)));
        ADD(g, initializer, s_f32("b", 1, db, bv, (size_t)o));
        Onnx__NodeProto *n;
        if (m) {
            ADD(g, node, n = s_node("ReorderInput", "ri", "x", "xb"));
            n->domain = s_str("com.microsoft.nchwc");
        }
        ADD(g, node, n = s_node("Conv", "conv", m ? "xb,w,b" : "x,w,b", "yb"));
        n->domain = s_str("com.microsoft.nchwc");
        s_attr_is(n, "kernel_shape", 2, (int64_t[]){1, 1});
        if (!m)
            s_attr_s(n, "activation", "Relu");
        ADD(g, node, n = s_node("ReorderOutput", "ro", "yb", "y"));
        n->domain = s_str("com.microsoft.nchwc");
        s_attr_i(n, "channels", keep);
        s_attr_i(n, "channels_last", m);
        ADD(g, output, s_vi("y", NULL));
        double want[48];
        for (int k = 0; k < keep; k++)
            for (int p = 0; p < 4; p++) {
                double v = bv[k];
                for (int i = 0; i < c; i++) /* W[k][i] at i * block + k */
                    v += (double)wv[i * o + k] * xv[i * 4 + p];
                want[m ? p * keep + k : k * 4 + p] = m ? v : fmax(v, 0.0);
            }
        const int64_t dy[4] = {1, m ? 2 : keep, 2, m ? keep : 2};
        gx_tensor *x = s_cv_f32(4, dx, xv);
        s_cv_check(m ? "nchwc OIHWBiBo, 8" : "nchwc OIHWBo, 16", s_ms_model(g, 1), 1, &x, 0,
                   GX_F32, 4, dy, want);
    }
}
END_TEST

/* What the importer refuses of com.microsoft, node by node. */
START_TEST(test_onnx_ms_refused)
{
    char err[4096];
    gx_graph *out = NULL;
    const int64_t d23[2] = {2, 3};
    Onnx__GraphProto *g = s_graph("r");
    s_cv_input(g, "x", F32, 2, d23);
    s_cv_input(g, "w", F32, 2, d23);
    Onnx__NodeProto *n = s_ms_node(g, "Attention", "x,w", "a");
    s_attr_i(n, "num_heads", 1);
    s_attr_i(n, "do_rotary", 1);
    ADD(g, node, s_node("Relu", "r", "x", "xr"));
    n = s_ms_node(g, "Attention", "x,w,,xr", "a2");
    s_attr_i(n, "num_heads", 1);
    s_ms_node(g, "MultiHeadAttention", "x", "a3");
    n = s_ms_node(g, "FusedMatMul", "xr,x", "b");
    s_attr_i(n, "transBatchA", 1);
    n = s_ms_node(g, "FusedConv", "x,x", "c");
    s_attr_s(n, "activation", "Elu");
    n = s_ms_node(g, "Conv", "x,xr", "d");
    n->domain = s_str("com.microsoft.nchwc");
    n = s_ms_node(g, "Frob", "x", "d2");
    n->domain = s_str("com.microsoft.nchwc");
    ADD(g, node, s_node("Relu", "ok", "x", "e"));
    ADD(g, output, s_vi("e", NULL));
    ASSERT_ERR(s_parse(s_ms_model(g, 1), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "7 unsupported features",
               "graph.node[0] (Attention): Attention: attribute 'do_rotary' is not supported",
               "(Attention): mask_index of Attention must have a rank gexec can read in the model",
               "(MultiHeadAttention): MultiHeadAttention with packed QKV or KV",
               "(FusedMatMul): FusedMatMul with transBatchA needs the rank of A declared",
               "(FusedConv): activation 'Elu' is not supported",
               "(Conv): nchwc Conv needs its weights as a 4-D initializer",
               "(Frob): op 'Frob' of domain 'com.microsoft.nchwc' is not supported (opset 1");
    ck_assert_ptr_null(strstr(err, "'ok'"));
    /* the contrib ops are read in com.microsoft's version 1 only */
    g = s_graph("v");
    s_cv_input(g, "x", F32, 2, d23);
    s_ms_node(g, "Gelu", "x", "y");
    ADD(g, output, s_vi("y", NULL));
    ck_assert_int_eq(s_parse(s_ms_model(g, 1), NULL, err, sizeof err), GX_OK);
    ASSERT_ERR(s_parse(s_ms_model(g, 2), &out, err, sizeof err), GX_EUNSUPPORTED, err,
               "op 'Gelu' of domain 'com.microsoft' is not supported (opset 2 imported");
}
END_TEST

Suite *onnx_suite(void)
{
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("import");
    tcase_add_checked_fixture(tc, NULL, s_arena_free);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_onnx_graph);
    tcase_add_test(tc, test_onnx_node_names);
    tcase_add_test(tc, test_onnx_attributes);
    tcase_add_test(tc, test_onnx_constant_nodes);
    tcase_add_test(tc, test_onnx_typed_fields);
    tcase_add_test(tc, test_onnx_tensor_errors);
    tcase_add_test(tc, test_onnx_subgraphs);
    tcase_add_test(tc, test_onnx_omitted_values);
    tcase_add_test(tc, test_onnx_unsupported);
    tcase_add_test(tc, test_onnx_malformed_models);
    tcase_add_test(tc, test_onnx_truncated_and_mutated);
    tcase_add_test(tc, test_onnx_hostile_limits);
    tcase_add_test(tc, test_onnx_external_data);
    tcase_add_test(tc, test_onnx_node_tests_load);
    tcase_add_test(tc, test_onnx_submit_e2e);
    tcase_add_test(tc, test_onnx_ms_refused);
    suite_add_tcase(s, tc);
    /* version conversion: each case runs on one gexecd */
    tc = tcase_create("convert");
    tcase_add_checked_fixture(tc, s_cv_setup, s_cv_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_onnx_convert_softmax);
    tcase_add_test(tc, test_onnx_convert_broadcast);
    tcase_add_test(tc, test_onnx_convert_attrs);
    tcase_add_test(tc, test_onnx_convert_more);
    tcase_add_test(tc, test_onnx_convert_scan8);
    tcase_add_test(tc, test_onnx_convert_resize11);
    tcase_add_test(tc, test_onnx_convert_experimental);
    tcase_add_test(tc, test_onnx_convert_norms);
    tcase_add_test(tc, test_onnx_convert_daemon_forms);
    tcase_add_test(tc, test_onnx_convert_ms_fused);
    tcase_add_test(tc, test_onnx_convert_ms_gelu);
    tcase_add_test(tc, test_onnx_convert_ms_norms);
    tcase_add_test(tc, test_onnx_convert_ms_nhwc);
    tcase_add_test(tc, test_onnx_convert_nchwc);
    tcase_add_test(tc, test_onnx_functions);
    tcase_add_test(tc, test_onnx_unknown_rank);
    suite_add_tcase(s, tc);
    return s;
}
