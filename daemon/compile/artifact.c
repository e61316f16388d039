/*
 * Compiled plans to and from artifact files. See artifact.h; the format is
 * described in docs/artifact.md.
 *
 * The body is one msgpack map. Scalar fields of the plan, its values, steps,
 * partitions, prepared constants and implementation choices are rows of the
 * field tables below (key, type, offset): adding a field to one of those
 * structs is adding one row, which both the writer and the reader follow.
 * The arrays (inputs and outputs of steps, successors, shapes, attributes,
 * fused groups, constant bytes) are written by hand after the table's
 * fields.
 */
#include <limits.h>
#include <math.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon/compile/artifact.h"
#include "daemon/compile/layout.h"
#include "daemon/compile/passes.h"
#include "daemon/tune/tune.h"
#include "core/internal.h"
#include "core/wire.h"

/* msgpack depth of a body: map, steps, step, fused, ops, op, attrs, attr,
 * ints: 9, and some room. */
#define S_MAX_DEPTH 16

/* ---- field tables ---------------------------------------------------------- */

typedef enum s_ftype {
    S_INT,    /* int */
    S_I64,    /* int64_t */
    S_SIZE,   /* size_t */
    S_BOOL,   /* bool */
    S_DBL,    /* double */
    S_CHARS,  /* char[N], NUL-terminated */
    S_OP,     /* gx_op, by ONNX name */
    S_DTYPE,  /* gx_dtype, by name */
    S_LAYOUT, /* gx_layout, by name */
    S_VKIND,  /* gxd_value_kind, by name */
    S_SIZES,  /* size_t[N] (per-device sizes) */
} s_ftype;

typedef struct s_field {
    const char *key;
    s_ftype type;
    size_t off, size;
} s_field;

#define S_F(T, m, type) {#m, type, offsetof(T, m), sizeof(((T *)0)->m)}

/* The plan's scalars. Counts of arrays are the arrays' lengths. */
static const s_field s_plan_fields[] = {
    S_F(gxd_plan, n_buffers, S_SIZE),
    S_F(gxd_plan, arena_bytes, S_SIZE),
    S_F(gxd_plan, naive_bytes, S_SIZE),
    S_F(gxd_plan, flops, S_DBL),
    S_F(gxd_plan, n_dynamic, S_SIZE),
    S_F(gxd_plan, n_control, S_SIZE),
    S_F(gxd_plan, dag_ok, S_BOOL),
    S_F(gxd_plan, dag_why, S_CHARS),
    S_F(gxd_plan, dag_arena_bytes, S_SIZE),
    S_F(gxd_plan, width, S_INT),
    S_F(gxd_plan, batch, S_I64),
    S_F(gxd_plan, sync_steps, S_SIZE),
    S_F(gxd_plan, batch_why, S_CHARS),
    S_F(gxd_plan, n_copies, S_SIZE),
    S_F(gxd_plan, widen_casts, S_SIZE),
    S_F(gxd_plan, widen_consts, S_SIZE),
    S_F(gxd_plan, widen_const_bytes, S_SIZE),
    S_F(gxd_plan, fused_values, S_SIZE),
    S_F(gxd_plan, rewrite_why, S_CHARS),
    S_F(gxd_plan, fuse_why, S_CHARS),
    S_F(gxd_plan, prepared_bytes, S_SIZE),
    S_F(gxd_plan, dev_arena_bytes, S_SIZES),
    S_F(gxd_plan, dev_dag_arena_bytes, S_SIZES),
    S_F(gxd_plan, layout_open, S_BOOL),
};

/* A value's scalars; its name, shape, dag_offset and data by hand. */
static const s_field s_value_fields[] = {
    S_F(gxd_value, kind, S_VKIND),
    S_F(gxd_value, keyed, S_BOOL),
    S_F(gxd_value, view.dtype, S_DTYPE),
    S_F(gxd_value, view.ndim, S_INT),
    S_F(gxd_value, view.numel, S_I64),
    S_F(gxd_value, view.layout, S_LAYOUT),
    S_F(gxd_value, nbytes, S_SIZE),
    S_F(gxd_value, def, S_INT),
    S_F(gxd_value, last_use, S_INT),
    S_F(gxd_value, buffer, S_INT),
    S_F(gxd_value, offset, S_SIZE),
    S_F(gxd_value, is_view, S_BOOL),
    S_F(gxd_value, mem, S_INT),
};

/* A step's scalars; its node, in, out, succ, kernel, attributes and fused
 * group by hand. */
static const s_field s_step_fields[] = {
    S_F(gxd_step, op, S_OP),
    S_F(gxd_step, n_formal, S_INT),
    S_F(gxd_step, cost.flops, S_DBL),
    S_F(gxd_step, cost.bytes, S_DBL),
    S_F(gxd_step, dynamic, S_BOOL),
    S_F(gxd_step, folded, S_BOOL),
    S_F(gxd_step, scratch_bytes, S_SIZE),
    S_F(gxd_step, max_shares, S_INT),
    S_F(gxd_step, scratch, S_INT),
    S_F(gxd_step, n_preds, S_INT),
    S_F(gxd_step, est_us, S_DBL),
    S_F(gxd_step, on_batch, S_BOOL),
    S_F(gxd_step, device, S_INT),
    S_F(gxd_step, part, S_INT),
    S_F(gxd_step, copy, S_BOOL),
    S_F(gxd_step, layout, S_LAYOUT),
    S_F(gxd_step, reorder, S_BOOL),
    S_F(gxd_step, wide, S_BOOL),
    S_F(gxd_step, convert, S_BOOL),
    S_F(gxd_step, dev_half, S_BOOL),
};

static const s_field s_part_fields[] = {
    S_F(gxd_part, device, S_INT),   S_F(gxd_part, n_steps, S_INT),
    S_F(gxd_part, entry, S_INT),    S_F(gxd_part, exit, S_INT),
    S_F(gxd_part, n_entries, S_INT), S_F(gxd_part, n_exits, S_INT),
};

/* A prepared constant's record; node and from (names) by hand. */
static const s_field s_prepared_fields[] = {
    S_F(gxd_prepared, op, S_OP),       S_F(gxd_prepared, trans_b, S_BOOL),
    S_F(gxd_prepared, layout, S_LAYOUT), S_F(gxd_prepared, value, S_INT),
    S_F(gxd_prepared, source, S_INT),  S_F(gxd_prepared, bytes, S_SIZE),
    S_F(gxd_prepared, what, S_CHARS),
};

/* A constant in a device's memory: its value (data nil in the file) gets
 * the host bytes of source, copied to the device when the plan is read. */
static const s_field s_dev_const_fields[] = {
    S_F(gxd_dev_const, device, S_INT),
    S_F(gxd_dev_const, value, S_INT),
    S_F(gxd_dev_const, source, S_INT),
};

/* An implementation choice; node by hand (sig is not saved: the reader
 * computes it from the choice's step, gxd_prepare_choices_current). */
static const s_field s_impl_fields[] = {
    S_F(gxd_impl_choice, op, S_OP),         S_F(gxd_impl_choice, impl, S_CHARS),
    S_F(gxd_impl_choice, version, S_INT),   S_F(gxd_impl_choice, source, S_CHARS),
    S_F(gxd_impl_choice, ns, S_I64),
};

#define S_N(t) (sizeof t / sizeof t[0])

static const char *const s_kind_names[] = {"input", "const", "temp", "dynamic", "fused"};

/* ---- the build id ------------------------------------------------------------ */

static char s_build[GX_ARTIFACT_BUILD];
static pthread_once_t s_build_once = PTHREAD_ONCE_INIT;

static uint64_t s_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t s_fnv_str(uint64_t h, const char *s)
{
    return s_fnv(h, s, strlen(s) + 1);
}

static uint64_t s_fields_hash(uint64_t h, const s_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h = s_fnv_str(h, f[i].key);
        h = s_fnv(h, &f[i].type, sizeof f[i].type);
    }
    return h;
}

static void s_build_init(void)
{
    uint64_t h = gx_backend_cpu()->kernels_id(); /* the kernels plans name */
    const int v = GX_ARTIFACT_VERSION, ma = GX_MAX_ATTRS; /* a step's attr array */
    h = s_fnv(h, &v, sizeof v);
    h = s_fnv(h, &ma, sizeof ma);
    h = s_fields_hash(h, s_plan_fields, S_N(s_plan_fields));
    h = s_fields_hash(h, s_value_fields, S_N(s_value_fields));
    h = s_fields_hash(h, s_step_fields, S_N(s_step_fields));
    h = s_fields_hash(h, s_dev_const_fields, S_N(s_dev_const_fields));
    for (int d = 0; d < GX_DTYPE_COUNT; d++)
        h = s_fnv_str(h, gx_dtype_name((gx_dtype)d));
    for (int l = 0; l < GX_LAYOUT_COUNT; l++)
        h = s_fnv_str(h, gx_layout_name((gx_layout)l));
    snprintf(s_build, sizeof s_build, "gexec-%s k%016llx", PACKAGE_VERSION, (unsigned long long)h);
}

const char *gxd_artifact_build_id(void)
{
    pthread_once(&s_build_once, s_build_init);
    return s_build;
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct s_w {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    const gxd_plan *p;
    const gx_graph *g;
    const size_t *at; /* per value: its offset in the constants file, or SIZE_MAX */
    const char *consts; /* the constants file's name */
    char *err;
    size_t errlen;
} s_w;

static void s_pack_fields(msgpack_packer *pk, const void *obj, const s_field *f, size_t n)
{
    const char *base = obj;
    for (size_t i = 0; i < n; i++) {
        const void *at = base + f[i].off;
        gx_mp_pack_str(pk, f[i].key);
        switch (f[i].type) {
        case S_INT:
            msgpack_pack_int(pk, *(const int *)at);
            break;
        case S_I64:
            msgpack_pack_int64(pk, *(const int64_t *)at);
            break;
        case S_SIZE:
            msgpack_pack_uint64(pk, *(const size_t *)at);
            break;
        case S_BOOL:
            if (*(const bool *)at)
                msgpack_pack_true(pk);
            else
                msgpack_pack_false(pk);
            break;
        case S_DBL:
            msgpack_pack_double(pk, *(const double *)at);
            break;
        case S_CHARS:
            gx_mp_pack_str(pk, at);
            break;
        case S_OP:
            gx_mp_pack_str(pk, gx_op_name(*(const gx_op *)at));
            break;
        case S_DTYPE:
            gx_mp_pack_str(pk, gx_dtype_name(*(const gx_dtype *)at));
            break;
        case S_LAYOUT:
            gx_mp_pack_str(pk, gx_layout_name(*(const gx_layout *)at));
            break;
        case S_VKIND:
            gx_mp_pack_str(pk, s_kind_names[*(const gxd_value_kind *)at]);
            break;
        case S_SIZES:
            msgpack_pack_array(pk, (uint32_t)(f[i].size / sizeof(size_t)));
            for (size_t k = 0; k < f[i].size / sizeof(size_t); k++)
                msgpack_pack_uint64(pk, ((const size_t *)at)[k]);
            break;
        }
    }
}

static void s_pack_ints(msgpack_packer *pk, const int *v, int n)
{
    msgpack_pack_array(pk, (uint32_t)(n > 0 ? n : 0));
    for (int i = 0; i < n; i++)
        msgpack_pack_int(pk, v[i]);
}

static void s_pack_str_or_nil(msgpack_packer *pk, const char *s)
{
    if (s)
        gx_mp_pack_str(pk, s);
    else
        msgpack_pack_nil(pk);
}

/* The graph's node n's index, or -1 (a node a pass made). */
static long s_node_index(const gx_graph *g, const gx_node *n)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == n)
            return (long)i;
    return -1;
}

/* The kernel's stable name: its device's table (names carry the device,
 * "cpu.Conv@1"), then the tune registry's implementations
 * ("tune:<impl>@<version>:<MatMul|Gemm|Conv>"). */
static const char *s_kernel_name(const gxd_plan *p, gx_kernel_fn fn, char *buf, size_t len)
{
    const char *name = NULL;
    for (size_t d = 0; d < p->n_devices && !name && fn; d++)
        if (p->devices[d]->kernel_name)
            name = p->devices[d]->kernel_name(fn);
    if (name || !fn || !p->tune)
        return name;
    size_t n = 0;
    const gxd_tune_impl *im = gxd_tune_impls(p->tune, &n);
    for (size_t i = 0; i < n; i++)
        for (int op = 0; op < GX_OP_COUNT; op++)
            if (gxd_tune_impl_kernel(&im[i], (gx_op)op) == fn) {
                snprintf(buf, len, "tune:%s@%d:%s", im[i].name, im[i].version,
                         gx_op_name((gx_op)op));
                return buf;
            }
    return NULL;
}

/* A resolved attribute: [set, i, f, s, ints, floats, tensor, graph]; the
 * graph by the name of node n's attribute that holds it. */
static void s_pack_attr(msgpack_packer *pk, const gx_attrval *a, const gx_node *n)
{
    msgpack_pack_array(pk, 8);
    if (a->set)
        msgpack_pack_true(pk);
    else
        msgpack_pack_false(pk);
    msgpack_pack_int64(pk, a->i);
    msgpack_pack_double(pk, a->f);
    s_pack_str_or_nil(pk, a->s);
    if (a->ints) {
        msgpack_pack_array(pk, (uint32_t)a->n);
        for (size_t k = 0; k < a->n; k++)
            msgpack_pack_int64(pk, a->ints[k]);
    } else {
        msgpack_pack_nil(pk);
    }
    if (a->floats) {
        msgpack_pack_array(pk, (uint32_t)a->n);
        for (size_t k = 0; k < a->n; k++)
            msgpack_pack_double(pk, a->floats[k]);
    } else {
        msgpack_pack_nil(pk);
    }
    if (a->t) {
        msgpack_pack_array(pk, 3);
        gx_mp_pack_str(pk, gx_dtype_name(a->t->dtype));
        msgpack_pack_array(pk, (uint32_t)(a->t->ndim > 0 ? a->t->ndim : 0));
        for (int d = 0; d < a->t->ndim; d++)
            msgpack_pack_int64(pk, a->t->shape[d]);
        msgpack_pack_bin(pk, a->t->nbytes);
        msgpack_pack_bin_body(pk, a->t->data, a->t->nbytes);
    } else {
        msgpack_pack_nil(pk);
    }
    const char *gname = NULL;
    for (size_t k = 0; a->g && n && k < n->n_attr; k++)
        if (n->attr[k].type == GX_ATTR_GRAPH && n->attr[k].g == a->g)
            gname = n->attr[k].name;
    s_pack_str_or_nil(pk, gname);
}

static void s_pack_attrs(msgpack_packer *pk, const gx_attrval *attr, const gx_node *n)
{
    msgpack_pack_array(pk, GX_MAX_ATTRS);
    for (int k = 0; k < GX_MAX_ATTRS; k++)
        s_pack_attr(pk, &attr[k], n);
}

static int s_pack_fused_op(s_w *w, const gx_fused_op *op)
{
    msgpack_packer *pk = &w->pk;
    char buf[96];
    const char *kn = s_kernel_name(w->p, op->kernel, buf, sizeof buf);
    if (!kn)
        return gx_errf(w->err, w->errlen, GX_EUNSUPPORTED,
                       "a fused %s's kernel has no stable name", gx_op_name(op->op));
    msgpack_pack_map(pk, 6);
    gx_mp_pack_str(pk, "op");
    gx_mp_pack_str(pk, gx_op_name(op->op));
    gx_mp_pack_str(pk, "kernel");
    gx_mp_pack_str(pk, kn);
    gx_mp_pack_str(pk, "in");
    s_pack_ints(pk, op->in, op->n_in);
    gx_mp_pack_str(pk, "out");
    msgpack_pack_int(pk, op->out);
    gx_mp_pack_str(pk, "n_in");
    msgpack_pack_int(pk, op->n_in);
    gx_mp_pack_str(pk, "attr");
    s_pack_attrs(pk, op->attr, NULL);
    return GX_OK;
}

static int s_pack_fused(s_w *w, const gx_fused *f)
{
    msgpack_packer *pk = &w->pk;
    int rc = GX_OK;
    msgpack_pack_map(pk, 8);
    gx_mp_pack_str(pk, "n_in");
    msgpack_pack_int(pk, f->n_in);
    gx_mp_pack_str(pk, "n_tmp");
    msgpack_pack_int(pk, f->n_tmp);
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, gx_dtype_name(f->dtype));
    gx_mp_pack_str(pk, "has_head");
    msgpack_pack_int(pk, f->has_head);
    gx_mp_pack_str(pk, "head_layout");
    gx_mp_pack_str(pk, gx_layout_name(f->head_layout));
    gx_mp_pack_str(pk, "head");
    if (f->has_head)
        rc = s_pack_fused_op(w, &f->head);
    else
        msgpack_pack_nil(pk);
    gx_mp_pack_str(pk, "n_ops");
    msgpack_pack_int(pk, f->n_ops);
    gx_mp_pack_str(pk, "ops");
    msgpack_pack_array(pk, (uint32_t)f->n_ops);
    for (int i = 0; i < f->n_ops; i++)
        if (rc == GX_OK)
            rc = s_pack_fused_op(w, &f->op[i]);
        else
            msgpack_pack_nil(pk);
    return rc;
}

static int s_pack_step(s_w *w, size_t i)
{
    const gxd_step *s = &w->p->steps[i];
    msgpack_packer *pk = &w->pk;
    char buf[96];
    const char *kn = s_kernel_name(w->p, s->kernel, buf, sizeof buf);
    if (s->kernel && !kn)
        return gx_errf(w->err, w->errlen, GX_EUNSUPPORTED,
                       "step %zu ('%s', %s): its kernel has no stable name", i, s->node->name,
                       gx_op_name(s->op));
    const long ni = s_node_index(w->g, s->node);
    msgpack_pack_map(pk, (uint32_t)S_N(s_step_fields) + 9);
    s_pack_fields(pk, s, s_step_fields, S_N(s_step_fields));
    gx_mp_pack_str(pk, "node");
    msgpack_pack_int64(pk, ni);
    gx_mp_pack_str(pk, "node_name");
    gx_mp_pack_str(pk, s->node->name);
    gx_mp_pack_str(pk, "node_op");
    gx_mp_pack_str(pk, s->node->op);
    gx_mp_pack_str(pk, "in");
    s_pack_ints(pk, s->in, s->n_in);
    gx_mp_pack_str(pk, "out");
    s_pack_ints(pk, s->out, s->n_out);
    gx_mp_pack_str(pk, "succ");
    s_pack_ints(pk, s->succ, s->n_succ);
    gx_mp_pack_str(pk, "kernel");
    s_pack_str_or_nil(pk, kn);
    gx_mp_pack_str(pk, "attr");
    s_pack_attrs(pk, s->attr, s->node);
    gx_mp_pack_str(pk, "fused");
    if (s->fused)
        return s_pack_fused(w, s->fused);
    msgpack_pack_nil(pk);
    return GX_OK;
}

/* The graph's constant whose data v reads in place, or NULL. */
static const gx_const *s_graph_const(const gx_graph *g, const gxd_value *v)
{
    for (size_t i = 0; v->view.data && i < g->n_consts; i++)
        if (g->consts[i].t->data == v->view.data && g->consts[i].t->nbytes == v->nbytes &&
            !strcmp(g->consts[i].name, v->name))
            return &g->consts[i];
    return NULL;
}

static void s_pack_value(s_w *w, size_t i)
{
    const gxd_value *v = &w->p->values[i];
    msgpack_packer *pk = &w->pk;
    msgpack_pack_map(pk, (uint32_t)S_N(s_value_fields) + 4);
    s_pack_fields(pk, v, s_value_fields, S_N(s_value_fields));
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, v->name);
    gx_mp_pack_str(pk, "shape");
    msgpack_pack_array(pk, (uint32_t)(v->view.ndim > 0 ? v->view.ndim : 0));
    for (int d = 0; d < v->view.ndim; d++)
        msgpack_pack_int64(pk, v->view.shape[d]);
    gx_mp_pack_str(pk, "dag_offset");
    msgpack_pack_uint64(pk, w->p->dag_offset ? w->p->dag_offset[i] : 0);
    /* data: none; the graph's constant of that name, read in place (a
     * string); or the bytes the kernels read (folded, packed, keyed). A
     * constant in a device's memory has none: its source's bytes are
     * copied there when the plan is read (dev_consts). */
    gx_mp_pack_str(pk, "data");
    const bool has = v->view.data && v->mem == 0 && (v->kind == GXD_VALUE_CONST || v->keyed);
    const gx_const *c = has ? s_graph_const(w->g, v) : NULL;
    if (!has) {
        msgpack_pack_nil(pk);
    } else if (c) {
        gx_mp_pack_str(pk, c->name);
    } else if (w->at && w->at[i] != SIZE_MAX) { /* in the constants file */
        msgpack_pack_map(pk, 3);
        gx_mp_pack_str(pk, "consts");
        gx_mp_pack_str(pk, w->consts);
        gx_mp_pack_str(pk, "at");
        msgpack_pack_uint64(pk, w->at[i]);
        gx_mp_pack_str(pk, "bytes");
        msgpack_pack_uint64(pk, v->nbytes);
    } else {
        msgpack_pack_bin(pk, v->nbytes);
        msgpack_pack_bin_body(pk, v->view.data, v->nbytes);
    }
}

/* The plan's file; with at (per value, SIZE_MAX: held in the file), its
 * prepared constants are in the constants file named consts. */
static int s_write(const gxd_plan *p, const gx_graph *g, const char *graph_id, const size_t *at,
                   const char *consts, void **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    if (p->needs_keys)
        return gx_errf(err, errlen, GX_EUNSUPPORTED,
                       "the plan was compiled without the values of its keyed inputs");
    for (size_t i = 0; i < p->n_values; i++) {
        const gxd_value *v = &p->values[i];
        /* a string's handles are addresses: only the graph's own constants
         * (named, read in place) may be strings with data (docs/strings.md) */
        if (v->view.dtype == GX_STRING && v->view.data &&
            (v->kind == GXD_VALUE_CONST || v->keyed) && !s_graph_const(g, v))
            return gx_errf(err, errlen, GX_EUNSUPPORTED,
                           "value '%s' is a string tensor the plan made (not stored)", v->name);
    }
    s_w w = {.p = p, .g = g, .at = at, .consts = consts, .err = err, .errlen = errlen};
    msgpack_sbuffer_init(&w.sb);
    msgpack_packer_init(&w.pk, &w.sb, msgpack_sbuffer_write);
    msgpack_packer *pk = &w.pk;
    int rc = GX_OK;
    msgpack_pack_map(pk, 11);
    gx_mp_pack_str(pk, "graph");
    gx_mp_pack_str(pk, graph_id);
    gx_mp_pack_str(pk, "devices");
    msgpack_pack_array(pk, (uint32_t)p->n_devices);
    for (size_t i = 0; i < p->n_devices; i++)
        gx_mp_pack_str(pk, p->devices[i]->name);
    gx_mp_pack_str(pk, "plan");
    msgpack_pack_map(pk, (uint32_t)S_N(s_plan_fields));
    s_pack_fields(pk, p, s_plan_fields, S_N(s_plan_fields));
    gx_mp_pack_str(pk, "inputs");
    s_pack_ints(pk, p->inputs, (int)p->n_inputs);
    gx_mp_pack_str(pk, "outputs");
    s_pack_ints(pk, p->outputs, (int)p->n_outputs);
    gx_mp_pack_str(pk, "values");
    msgpack_pack_array(pk, (uint32_t)p->n_values);
    for (size_t i = 0; i < p->n_values; i++)
        s_pack_value(&w, i);
    gx_mp_pack_str(pk, "steps");
    msgpack_pack_array(pk, (uint32_t)p->n_steps);
    for (size_t i = 0; i < p->n_steps; i++)
        if (rc == GX_OK)
            rc = s_pack_step(&w, i);
        else
            msgpack_pack_nil(pk);
    gx_mp_pack_str(pk, "parts");
    msgpack_pack_array(pk, (uint32_t)p->n_parts);
    for (size_t i = 0; i < p->n_parts; i++) {
        msgpack_pack_map(pk, (uint32_t)S_N(s_part_fields));
        s_pack_fields(pk, &p->parts[i], s_part_fields, S_N(s_part_fields));
    }
    gx_mp_pack_str(pk, "prepared");
    msgpack_pack_array(pk, (uint32_t)p->n_prepared);
    for (size_t i = 0; i < p->n_prepared; i++) {
        msgpack_pack_map(pk, (uint32_t)S_N(s_prepared_fields) + 2);
        s_pack_fields(pk, &p->prepared[i], s_prepared_fields, S_N(s_prepared_fields));
        gx_mp_pack_str(pk, "node");
        s_pack_str_or_nil(pk, p->prepared[i].node);
        gx_mp_pack_str(pk, "from");
        s_pack_str_or_nil(pk, p->prepared[i].from);
    }
    gx_mp_pack_str(pk, "impls");
    msgpack_pack_array(pk, (uint32_t)p->n_impls);
    for (size_t i = 0; i < p->n_impls; i++) {
        msgpack_pack_map(pk, (uint32_t)S_N(s_impl_fields) + 1);
        s_pack_fields(pk, &p->impls[i], s_impl_fields, S_N(s_impl_fields));
        gx_mp_pack_str(pk, "node");
        s_pack_str_or_nil(pk, p->impls[i].node);
    }
    gx_mp_pack_str(pk, "dev_consts");
    msgpack_pack_array(pk, (uint32_t)p->n_dev_consts);
    for (size_t i = 0; i < p->n_dev_consts; i++) {
        msgpack_pack_map(pk, (uint32_t)S_N(s_dev_const_fields));
        s_pack_fields(pk, &p->dev_consts[i], s_dev_const_fields, S_N(s_dev_const_fields));
    }
    unsigned char *out = NULL;
    if (rc == GX_OK && !(out = malloc(GX_ARTIFACT_HEADER + w.sb.size)))
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory for an artifact of %zu bytes",
                     w.sb.size);
    if (rc == GX_OK) {
        gx_artifact_header_put(out, GX_ARTIFACT_MAGIC, w.sb.size,
                               gx_artifact_checksum(w.sb.data, w.sb.size),
                               gxd_artifact_build_id(), at ? consts : "");
        memcpy(out + GX_ARTIFACT_HEADER, w.sb.data, w.sb.size);
        *buf = out;
        *len = GX_ARTIFACT_HEADER + w.sb.size;
    }
    msgpack_sbuffer_destroy(&w.sb);
    return rc;
}

int gxd_artifact_write(const gxd_plan *p, const gx_graph *g, const char *graph_id, void **buf,
                       size_t *len, char *err, size_t errlen)
{
    return s_write(p, g, graph_id, NULL, "", buf, len, err, errlen);
}

/* Does value i's data go to the constants file: a prepared constant
 * (packed weights) the host holds, of the plan's own bytes (not the
 * graph's constant read in place)? */
static bool s_to_consts(const gxd_plan *p, const gx_graph *g, size_t i)
{
    const gxd_value *v = &p->values[i];
    if (!v->view.data || v->mem != 0 || v->kind != GXD_VALUE_CONST || v->keyed ||
        v->view.dtype == GX_STRING || !v->nbytes || s_graph_const(g, v))
        return false;
    for (size_t k = 0; k < p->n_prepared; k++)
        if (p->prepared[k].value == (int)i)
            return true;
    return false;
}

void gxd_artifact_consts_name(uint64_t sum, uint64_t len, char *name, size_t n)
{
    uint64_t h = s_fnv_str(1469598103934665603ull, gxd_artifact_build_id());
    h = s_fnv(h, &sum, sizeof sum);
    h = s_fnv(h, &len, sizeof len);
    snprintf(name, n, "%016llx", (unsigned long long)h);
}

int gxd_artifact_write_split(const gxd_plan *p, const gx_graph *g, const char *graph_id,
                             void **buf, size_t *len, void **cbuf, size_t *clen, char *cname,
                             char *err, size_t errlen)
{
    *cbuf = NULL;
    *clen = 0;
    cname[0] = '\0';
    size_t *at = malloc((p->n_values + 1) * sizeof *at), total = 0;
    if (!at)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->n_values; i++) {
        at[i] = SIZE_MAX;
        if (s_to_consts(p, g, i)) {
            at[i] = total;
            total += (p->values[i].nbytes + GX_ARTIFACT_ALIGN - 1) & ~(size_t)(GX_ARTIFACT_ALIGN - 1);
        }
    }
    if (!total) { /* nothing prepared: one file */
        free(at);
        return gxd_artifact_write(p, g, graph_id, buf, len, err, errlen);
    }
    unsigned char *c = calloc(1, GX_ARTIFACT_HEADER + total);
    if (!c) {
        free(at);
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory for constants of %zu bytes", total);
    }
    for (size_t i = 0; i < p->n_values; i++)
        if (at[i] != SIZE_MAX)
            memcpy(c + GX_ARTIFACT_HEADER + at[i], p->values[i].view.data, p->values[i].nbytes);
    const uint64_t sum = gx_artifact_checksum(c + GX_ARTIFACT_HEADER, total);
    gxd_artifact_consts_name(sum, total, cname, GX_ARTIFACT_CONSTS + 1);
    gx_artifact_header_put(c, GX_ARTIFACT_CONSTS_MAGIC, total, sum, gxd_artifact_build_id(), cname);
    int rc = s_write(p, g, graph_id, at, cname, buf, len, err, errlen);
    free(at);
    if (rc < 0) {
        free(c);
        cname[0] = '\0';
        return rc;
    }
    *cbuf = c;
    *clen = GX_ARTIFACT_HEADER + total;
    return GX_OK;
}

/* ---- reading ------------------------------------------------------------------ */

typedef struct s_r {
    gxd_plan *p;
    const gxd_plan *whole; /* a slice's plan: whole's constants are shared */
    const gx_graph *g;
    const gxd_compile_limits *lim;
    /* the constants file (version 2): its name in the header, where it
     * comes from, its body once read, and per value the offset of its
     * bytes there (SIZE_MAX: none) */
    const char *cname;
    const gxd_artifact_consts *cs;
    const unsigned char *cbody;
    size_t cbody_len;
    size_t *cat;
    char where[96]; /* "steps[3]" */
    char *err;
    size_t errlen;
} s_r;

#define S_BAD(r, ...) s_bad(r, GX_EFORMAT, __VA_ARGS__)

static int s_bad(s_r *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int s_bad(s_r *r, int rc, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gx_errf(r->err, r->errlen, rc, "artifact: %s%s%s", r->where, r->where[0] ? ": " : "",
                   msg);
}

static const msgpack_object *s_key(s_r *r, const msgpack_object *map, const char *key,
                                   msgpack_object_type type)
{
    const msgpack_object *o = gx_mp_find(map, key);
    if (!o || (o->type != type && !(type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
                                     o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER))) {
        S_BAD(r, "field '%s' %s", key, o ? "has the wrong type" : "is missing");
        return NULL;
    }
    return o;
}

static int s_int_in(s_r *r, const msgpack_object *o, const char *key, int64_t lo, int64_t hi,
                    int64_t *v)
{
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (uint64_t)INT64_MAX)
        *v = (int64_t)o->via.u64;
    else if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *v = o->via.i64;
    else
        return S_BAD(r, "field '%s' %s", key, o ? "is not an integer" : "is missing");
    if (*v < lo || *v > hi)
        return S_BAD(r, "field '%s' is %lld, out of [%lld, %lld]", key, (long long)*v,
                     (long long)lo, (long long)hi);
    return GX_OK;
}

/* A string object as a NUL-terminated copy into buf (len bytes). */
static int s_str(s_r *r, const msgpack_object *o, const char *key, char *buf, size_t len)
{
    if (!o || o->type != MSGPACK_OBJECT_STR)
        return S_BAD(r, "field '%s' %s", key, o ? "is not a string" : "is missing");
    if (o->via.str.size >= len || memchr(o->via.str.ptr, 0, o->via.str.size))
        return S_BAD(r, "field '%s': a string of %u bytes (at most %zu, no NUL)", key,
                     o->via.str.size, len - 1);
    memcpy(buf, o->via.str.ptr, o->via.str.size);
    buf[o->via.str.size] = '\0';
    return GX_OK;
}

/* A string object as a copy the plan owns. */
static int s_own_str(s_r *r, const msgpack_object *o, const char *key, char **out)
{
    if (!o || o->type != MSGPACK_OBJECT_STR)
        return S_BAD(r, "field '%s' %s", key, o ? "is not a string" : "is missing");
    char *s = gxd_plan_own(r->p, o->via.str.size + 1);
    if (!s)
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    if (memchr(o->via.str.ptr, 0, o->via.str.size))
        return S_BAD(r, "field '%s' holds a NUL", key);
    memcpy(s, o->via.str.ptr, o->via.str.size);
    *out = s;
    return GX_OK;
}

static int s_enum(s_r *r, const msgpack_object *o, const char *key, s_ftype t, int *out)
{
    char name[64];
    int rc = s_str(r, o, key, name, sizeof name);
    if (rc < 0)
        return rc;
    gx_op op;
    gx_dtype dt;
    switch (t) {
    case S_OP:
        if (gx_op_lookup(name, &op) < 0)
            return s_bad(r, GX_ENOTFOUND, "field '%s': no op '%s' in this build", key, name);
        *out = (int)op;
        return GX_OK;
    case S_DTYPE:
        if (gx_dtype_parse(name, &dt) < 0)
            return S_BAD(r, "field '%s': no dtype '%s'", key, name);
        *out = (int)dt;
        return GX_OK;
    case S_LAYOUT:
        for (int l = 0; l < GX_LAYOUT_COUNT; l++)
            if (!strcmp(name, gx_layout_name((gx_layout)l))) {
                *out = l;
                return GX_OK;
            }
        return S_BAD(r, "field '%s': no layout '%s'", key, name);
    case S_VKIND:
        for (int k = 0; k < (int)S_N(s_kind_names); k++)
            if (!strcmp(name, s_kind_names[k])) {
                *out = k;
                return GX_OK;
            }
        return S_BAD(r, "field '%s': no value kind '%s'", key, name);
    case S_INT:
    case S_I64:
    case S_SIZE:
    case S_BOOL:
    case S_DBL:
    case S_CHARS:
    case S_SIZES:
        break;
    }
    return S_BAD(r, "field '%s': not an enum", key);
}

static int s_unpack_fields(s_r *r, const msgpack_object *map, void *obj, const s_field *f,
                           size_t n)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP)
        return S_BAD(r, "expected a map");
    char *base = obj;
    int rc = GX_OK;
    for (size_t i = 0; i < n && rc == GX_OK; i++) {
        void *at = base + f[i].off;
        const msgpack_object *o = gx_mp_find(map, f[i].key);
        int64_t v = 0;
        int e = 0;
        switch (f[i].type) {
        case S_INT:
            if ((rc = s_int_in(r, o, f[i].key, INT_MIN, INT_MAX, &v)) == GX_OK)
                *(int *)at = (int)v;
            break;
        case S_I64:
            if ((rc = s_int_in(r, o, f[i].key, INT64_MIN, INT64_MAX, &v)) == GX_OK)
                *(int64_t *)at = v;
            break;
        case S_SIZE:
            if ((rc = s_int_in(r, o, f[i].key, 0, INT64_MAX, &v)) == GX_OK)
                *(size_t *)at = (size_t)v;
            break;
        case S_BOOL:
            if (!o || o->type != MSGPACK_OBJECT_BOOLEAN)
                rc = S_BAD(r, "field '%s' is not a boolean", f[i].key);
            else
                *(bool *)at = o->via.boolean;
            break;
        case S_DBL:
            if (!o || (o->type != MSGPACK_OBJECT_FLOAT64 && o->type != MSGPACK_OBJECT_FLOAT32))
                rc = S_BAD(r, "field '%s' is not a float", f[i].key);
            else if (!isfinite(o->via.f64))
                rc = S_BAD(r, "field '%s' is not finite", f[i].key);
            else
                *(double *)at = o->via.f64;
            break;
        case S_CHARS:
            rc = s_str(r, o, f[i].key, at, f[i].size);
            break;
        case S_OP:
        case S_DTYPE:
        case S_LAYOUT:
        case S_VKIND:
            if ((rc = s_enum(r, o, f[i].key, f[i].type, &e)) == GX_OK)
                *(int *)at = e; /* enums are int-sized */
            break;
        case S_SIZES:
            if (!o || o->type != MSGPACK_OBJECT_ARRAY ||
                o->via.array.size != f[i].size / sizeof(size_t)) {
                rc = S_BAD(r, "field '%s' is not an array of %zu sizes", f[i].key,
                           f[i].size / sizeof(size_t));
                break;
            }
            for (uint32_t k = 0; k < o->via.array.size && rc == GX_OK; k++)
                if ((rc = s_int_in(r, &o->via.array.ptr[k], f[i].key, 0, INT64_MAX, &v)) == GX_OK)
                    ((size_t *)at)[k] = (size_t)v;
            break;
        }
    }
    return rc;
}

/* An array of ints in [lo, hi) into a new malloc'ed array (at least one
 * element); *n its length, at most max. */
static int s_ints(s_r *r, const msgpack_object *o, const char *key, int64_t lo, int64_t hi,
                  uint32_t max, int **out, int *n)
{
    *out = NULL;
    if (!o || o->type != MSGPACK_OBJECT_ARRAY)
        return S_BAD(r, "field '%s' is not an array", key);
    if (o->via.array.size > max)
        return S_BAD(r, "field '%s' has %u entries (at most %u)", key, o->via.array.size, max);
    if (!(*out = malloc(((size_t)o->via.array.size + 1) * sizeof **out)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    *n = (int)o->via.array.size;
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        int64_t v = 0;
        int rc = s_int_in(r, &o->via.array.ptr[i], key, lo, hi - 1, &v);
        if (rc < 0)
            return rc;
        (*out)[i] = (int)v;
    }
    return GX_OK;
}

/* The kernel named by o: the plan's devices' tables or the tune registry's. */
static int s_kernel(s_r *r, const msgpack_object *o, gx_kernel_fn *fn)
{
    char name[96];
    int rc = s_str(r, o, "kernel", name, sizeof name);
    if (rc < 0)
        return rc;
    *fn = NULL;
    for (size_t d = 0; d < r->p->n_devices && !*fn; d++)
        if (r->p->devices[d]->kernel_by_name)
            *fn = r->p->devices[d]->kernel_by_name(name);
    if (*fn)
        return GX_OK;
    char impl[40], opn[16];
    int version;
    if (sscanf(name, "tune:%39[^@]@%d:%15s", impl, &version, opn) == 3 && r->lim && r->lim->tune) {
        const gxd_tune_impl *im = gxd_tune_impl_find(r->lim->tune, impl, version);
        gx_op op;
        if (im && gx_op_lookup(opn, &op) == GX_OK && (*fn = gxd_tune_impl_kernel(im, op)))
            return GX_OK;
    }
    return s_bad(r, GX_ENOTFOUND, "no kernel '%s' in this build on this CPU", name);
}

/* A tensor attribute [dtype, shape, bytes] as a tensor the plan owns. */
static int s_tensor(s_r *r, const msgpack_object *o, const gx_tensor **out)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3 ||
        o->via.array.ptr[1].type != MSGPACK_OBJECT_ARRAY ||
        o->via.array.ptr[2].type != MSGPACK_OBJECT_BIN)
        return S_BAD(r, "a tensor attribute is not [dtype, shape, bytes]");
    gx_tensor *t = gxd_plan_own(r->p, sizeof *t);
    if (!t)
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    int dt;
    int rc = s_enum(r, &o->via.array.ptr[0], "tensor dtype", S_DTYPE, &dt);
    if (rc < 0)
        return rc;
    const msgpack_object *sh = &o->via.array.ptr[1], *b = &o->via.array.ptr[2];
    if (sh->via.array.size > GX_MAX_DIMS)
        return S_BAD(r, "a tensor attribute of rank %u", sh->via.array.size);
    t->dtype = (gx_dtype)dt;
    t->ndim = (int)sh->via.array.size;
    for (int d = 0; d < t->ndim; d++)
        if ((rc = s_int_in(r, &sh->via.array.ptr[d], "tensor shape", 0, INT64_MAX,
                           &t->shape[d])) < 0)
            return rc;
    if (!gx_shape_nbytes(t->dtype, t->ndim, t->shape, &t->nbytes) || t->nbytes != b->via.bin.size)
        return S_BAD(r, "a tensor attribute of %u bytes for its shape", b->via.bin.size);
    t->numel = gx_shape_numel(t->ndim, t->shape, INT64_MAX);
    if (!(t->data = gxd_plan_own(r->p, t->nbytes)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    memcpy(t->data, b->via.bin.ptr, t->nbytes);
    *out = t;
    return GX_OK;
}

static int s_attr(s_r *r, const msgpack_object *o, gx_attrval *a, const gx_node *n)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 8)
        return S_BAD(r, "an attribute is not an array of 8");
    const msgpack_object *f = o->via.array.ptr;
    int64_t i;
    int rc;
    if (f[0].type != MSGPACK_OBJECT_BOOLEAN ||
        (f[2].type != MSGPACK_OBJECT_FLOAT64 && f[2].type != MSGPACK_OBJECT_FLOAT32))
        return S_BAD(r, "an attribute's set or f has the wrong type");
    if ((rc = s_int_in(r, &f[1], "attribute i", INT64_MIN, INT64_MAX, &i)) < 0)
        return rc;
    a->set = f[0].via.boolean;
    a->i = i;
    a->f = f[2].via.f64;
    if (f[3].type != MSGPACK_OBJECT_NIL && (rc = s_own_str(r, &f[3], "attribute s", (char **)&a->s)) < 0)
        return rc;
    for (int k = 4; k <= 5; k++) {
        if (f[k].type == MSGPACK_OBJECT_NIL)
            continue;
        if (f[k].type != MSGPACK_OBJECT_ARRAY || (a->n && f[k].via.array.size != a->n))
            return S_BAD(r, "an attribute's ints or floats are malformed");
        a->n = f[k].via.array.size;
        void *m = gxd_plan_own(r->p, (a->n + 1) * 8);
        if (!m)
            return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
        for (size_t j = 0; j < a->n; j++) {
            const msgpack_object *e = &f[k].via.array.ptr[j];
            if (k == 4 && (rc = s_int_in(r, e, "attribute ints", INT64_MIN, INT64_MAX,
                                         &((int64_t *)m)[j])) < 0)
                return rc;
            if (k == 5) {
                if (e->type != MSGPACK_OBJECT_FLOAT64 && e->type != MSGPACK_OBJECT_FLOAT32)
                    return S_BAD(r, "an attribute's floats are not floats");
                ((double *)m)[j] = e->via.f64;
            }
        }
        if (k == 4)
            a->ints = m;
        else
            a->floats = m;
    }
    if (f[6].type != MSGPACK_OBJECT_NIL && (rc = s_tensor(r, &f[6], &a->t)) < 0)
        return rc;
    if (f[7].type != MSGPACK_OBJECT_NIL) {
        char name[128];
        if ((rc = s_str(r, &f[7], "attribute graph", name, sizeof name)) < 0)
            return rc;
        for (size_t k = 0; n && k < n->n_attr && !a->g; k++)
            if (n->attr[k].type == GX_ATTR_GRAPH && !strcmp(n->attr[k].name, name))
                a->g = n->attr[k].g;
        if (!a->g)
            return s_bad(r, GX_ENOTFOUND, "the node has no subgraph '%s'", name);
    }
    return GX_OK;
}

static int s_attrs(s_r *r, const msgpack_object *o, gx_attrval *attr, const gx_node *n)
{
    if (!o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != GX_MAX_ATTRS)
        return S_BAD(r, "field 'attr' is not an array of %d", GX_MAX_ATTRS);
    for (int k = 0; k < GX_MAX_ATTRS; k++) {
        int rc = s_attr(r, &o->via.array.ptr[k], &attr[k], n);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

/* An operand code of a fused op: an input of the group (or the head's
 * product, n_in), a temporary, or none. */
static bool s_fused_code_ok(const gx_fused *f, int c, bool head)
{
    if (c == GX_FUSED_NONE)
        return true;
    if (c >= 0)
        return c < f->n_in + (f->has_head && !head);
    return -1 - c < f->n_tmp && !head;
}

static int s_fused_op(s_r *r, const msgpack_object *o, const gx_fused *f, gx_fused_op *op,
                      bool head)
{
    int rc, e, *in = NULL, n;
    int64_t v;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return S_BAD(r, "a fused op is not a map");
    if ((rc = s_enum(r, gx_mp_find(o, "op"), "op", S_OP, &e)) < 0 ||
        (rc = s_kernel(r, gx_mp_find(o, "kernel"), &op->kernel)) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "out"), "out", -1, GX_FUSED_MAX_TMP - 1, &v)) < 0 ||
        (rc = s_ints(r, gx_mp_find(o, "in"), "in", INT32_MIN, INT32_MAX, GX_FUSED_MAX_OP_IN, &in,
                     &n)) < 0 ||
        (rc = s_attrs(r, gx_mp_find(o, "attr"), op->attr, NULL)) < 0)
        goto out;
    op->op = (gx_op)e;
    op->out = (int)v;
    op->n_in = n;
    if (!head && op->out >= f->n_tmp) { /* a head's out is unused */
        rc = S_BAD(r, "a fused op writes temporary %d of %d", op->out, f->n_tmp);
        goto out;
    }
    for (int k = 0; k < n; k++) {
        if (!s_fused_code_ok(f, in[k], head)) {
            rc = S_BAD(r, "a fused op reads operand %d", in[k]);
            goto out;
        }
        op->in[k] = in[k];
    }
out:
    free(in);
    return rc;
}

static int s_fused(s_r *r, const msgpack_object *o, gxd_step *s)
{
    int64_t v[4];
    int rc, dt, hl;
    gx_fused *f = calloc(1, sizeof *f);
    if (!f)
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    s->fused = f;
    if ((rc = s_int_in(r, gx_mp_find(o, "n_in"), "n_in", 0, GX_FUSED_MAX_IN, &v[0])) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "n_tmp"), "n_tmp", 0, GX_FUSED_MAX_TMP, &v[1])) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "has_head"), "has_head", 0, 1, &v[2])) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "n_ops"), "n_ops", 1, GX_FUSED_MAX_OPS, &v[3])) < 0 ||
        (rc = s_enum(r, gx_mp_find(o, "dtype"), "dtype", S_DTYPE, &dt)) < 0 ||
        (rc = s_enum(r, gx_mp_find(o, "head_layout"), "head_layout", S_LAYOUT, &hl)) < 0)
        return rc;
    f->n_in = (int)v[0];
    f->n_tmp = (int)v[1];
    f->has_head = v[2] != 0;
    f->n_ops = (int)v[3];
    f->dtype = (gx_dtype)dt;
    f->head_layout = (gx_layout)hl;
    if (f->n_in > s->n_formal)
        return S_BAD(r, "a fused group of %d inputs on a step of %d", f->n_in, s->n_formal);
    if (f->has_head && (rc = s_fused_op(r, gx_mp_find(o, "head"), f, &f->head, true)) < 0)
        return rc;
    const msgpack_object *ops = gx_mp_find(o, "ops");
    if (!ops || ops->type != MSGPACK_OBJECT_ARRAY || ops->via.array.size != (uint32_t)f->n_ops)
        return S_BAD(r, "field 'ops' is not an array of %d", f->n_ops);
    for (int i = 0; i < f->n_ops; i++)
        if ((rc = s_fused_op(r, &ops->via.array.ptr[i], f, &f->op[i], false)) < 0)
            return rc;
    if (f->op[f->n_ops - 1].out != -1)
        return S_BAD(r, "the fused group's last op does not write its output");
    return GX_OK;
}

/* The node of a step: the graph's node at index i named name, or (i -1)
 * one the plan owns, as the pass that made it did. */
static int s_node(s_r *r, const msgpack_object *o, gxd_step *s)
{
    int64_t i;
    char *name, *op;
    int rc;
    if ((rc = s_int_in(r, gx_mp_find(o, "node"), "node", -1, (int64_t)r->g->n_nodes - 1, &i)) < 0)
        return rc == GX_EFORMAT ? s_bad(r, GX_ENOTFOUND, "a node the graph does not have") : rc;
    if ((rc = s_own_str(r, gx_mp_find(o, "node_name"), "node_name", &name)) < 0 ||
        (rc = s_own_str(r, gx_mp_find(o, "node_op"), "node_op", &op)) < 0)
        return rc;
    if (i >= 0) {
        const gx_node *n = r->g->nodes[i];
        if (strcmp(n->name, name) || strcmp(n->op, op))
            return s_bad(r, GX_ENOTFOUND, "node %lld is '%s' (%s) in the graph, not '%s' (%s)",
                         (long long)i, n->name, n->op, name, op);
        s->node = n;
        return GX_OK;
    }
    gx_node *n = gxd_plan_own(r->p, sizeof *n);
    if (!n)
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    n->name = name;
    n->op = op;
    s->node = n;
    return GX_OK;
}

static int s_step(s_r *r, const msgpack_object *o, size_t i)
{
    gxd_plan *p = r->p;
    gxd_step *s = &p->steps[i];
    const int nv = (int)p->n_values;
    int rc;
    snprintf(r->where, sizeof r->where, "steps[%zu]", i);
    s->scratch = -1;
    s->part = -1;
    if ((rc = s_unpack_fields(r, o, s, s_step_fields, S_N(s_step_fields))) < 0 ||
        (rc = s_node(r, o, s)) < 0 ||
        (rc = s_ints(r, gx_mp_find(o, "in"), "in", -1, nv, GX_MAX_OP_INPUTS, &s->in, &s->n_in)) < 0 ||
        (rc = s_ints(r, gx_mp_find(o, "out"), "out", 0, nv, GX_MAX_OP_INPUTS, &s->out, &s->n_out)) < 0 ||
        (rc = s_ints(r, gx_mp_find(o, "succ"), "succ", (int64_t)i + 1, (int64_t)p->n_steps,
                     (uint32_t)p->n_steps, &s->succ, &s->n_succ)) < 0 ||
        (rc = s_attrs(r, gx_mp_find(o, "attr"), s->attr, s->node)) < 0)
        return rc;
    const msgpack_object *k = gx_mp_find(o, "kernel"), *f = gx_mp_find(o, "fused");
    if (k && k->type != MSGPACK_OBJECT_NIL && (rc = s_kernel(r, k, &s->kernel)) < 0)
        return rc;
    const bool control = gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL;
    if (s->n_formal < 0 || s->n_formal > s->n_in || s->n_out < 1)
        return S_BAD(r, "%d formal inputs of %d, %d outputs", s->n_formal, s->n_in, s->n_out);
    if (control ? s->kernel || s->fused || !s->node || s_node_index(r->g, s->node) < 0
                : !s->kernel == !s->copy && !s->folded)
        return S_BAD(r, "%s step %s a kernel", gx_op_name(s->op),
                     control || s->copy ? "with" : "without");
    /* a copy step moves its output's bytes out of its input (exec.c) */
    if (s->copy && (s->n_in != 1 || s->n_out != 1 || s->in[0] < 0 ||
                    p->values[s->in[0]].nbytes < p->values[s->out[0]].nbytes))
        return S_BAD(r, "a copy step of %d inputs and %d outputs", s->n_in, s->n_out);
    if (s->scratch < -1 || s->scratch >= nv ||
        (s->scratch >= 0 && (p->values[s->scratch].kind != GXD_VALUE_TEMP ||
                             p->values[s->scratch].nbytes < s->scratch_bytes)))
        return S_BAD(r, "scratch value %d", s->scratch);
    if (s->device < 0 || (size_t)s->device >= p->n_devices || s->part < -1 ||
        s->part >= (int)p->n_parts)
        return S_BAD(r, "device %d, partition %d", s->device, s->part);
    if (s->n_preds < 0 || s->est_us < 0)
        return S_BAD(r, "%d predecessors, estimate %g us", s->n_preds, s->est_us);
    if (f && f->type != MSGPACK_OBJECT_NIL && (rc = s_fused(r, f, s)) < 0)
        return rc;
    if (control && !(s->sub = gxd_subplans_new(p, s, r->lim ? r->lim->budget : NULL)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    return GX_OK;
}

/* A reference to the constants file, {consts, at, bytes}: kept in
 * r->cat until the steps are read (s_consts_resolve). */
static int s_value_cref(s_r *r, const msgpack_object *o, gxd_value *v)
{
    char name[GX_ARTIFACT_CONSTS + 1];
    int64_t at, bytes;
    int rc;
    if ((rc = s_str(r, gx_mp_find(o, "consts"), "consts", name, sizeof name)) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "at"), "at", 0, INT64_MAX, &at)) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "bytes"), "bytes", 0, INT64_MAX, &bytes)) < 0)
        return rc;
    if (!r->cname[0] || strcmp(name, r->cname))
        return S_BAD(r, "data in constants file '%s', the header names '%s'", name, r->cname);
    if ((size_t)bytes != v->nbytes || at % GX_ARTIFACT_ALIGN || v->kind != GXD_VALUE_CONST ||
        v->keyed)
        return S_BAD(r, "constants file data of %lld bytes at %lld for a %s value of %zu",
                     (long long)bytes, (long long)at, s_kind_names[v->kind], v->nbytes);
    r->cat[v - r->p->values] = (size_t)at;
    return GX_OK;
}

/* Value v's data: none, the graph's constant, in the constants file, or
 * bytes the plan owns. */
static int s_value_data(s_r *r, const msgpack_object *o, gxd_value *v)
{
    if (!o || o->type == MSGPACK_OBJECT_NIL)
        return GX_OK;
    if (o->type == MSGPACK_OBJECT_MAP)
        return s_value_cref(r, o, v);
    if (o->type == MSGPACK_OBJECT_STR) {
        char name[256];
        int rc = s_str(r, o, "data", name, sizeof name);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < r->g->n_consts; i++) {
            const gx_tensor *t = r->g->consts[i].t;
            if (!strcmp(r->g->consts[i].name, name)) {
                if (t->nbytes != v->nbytes || t->dtype != v->view.dtype)
                    return s_bad(r, GX_ENOTFOUND, "the graph's constant '%s' has another size",
                                 name);
                v->view.data = t->data;
                return GX_OK;
            }
        }
        return s_bad(r, GX_ENOTFOUND, "the graph has no constant '%s'", name);
    }
    if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != v->nbytes)
        return S_BAD(r, "data of %u bytes for a value of %zu",
                     o->type == MSGPACK_OBJECT_BIN ? o->via.bin.size : 0, v->nbytes);
    for (size_t i = 0; r->whole && i < r->whole->n_values; i++) {
        const gxd_value *w = &r->whole->values[i];
        if (w->view.data && w->nbytes == v->nbytes && w->view.dtype == v->view.dtype &&
            w->kind == GXD_VALUE_CONST && !strcmp(w->name, v->name) &&
            !memcmp(w->view.data, o->via.bin.ptr, v->nbytes)) {
            v->view.data = w->view.data; /* whole's: the slice lives in its cache */
            return GX_OK;
        }
    }
    if (!(v->view.data = gxd_plan_own(r->p, v->nbytes)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    memcpy(v->view.data, o->via.bin.ptr, v->nbytes);
    return GX_OK;
}

static int s_value(s_r *r, const msgpack_object *o, size_t i)
{
    gxd_plan *p = r->p;
    gxd_value *v = &p->values[i];
    int rc;
    int64_t x;
    snprintf(r->where, sizeof r->where, "values[%zu]", i);
    if ((rc = s_unpack_fields(r, o, v, s_value_fields, S_N(s_value_fields))) < 0 ||
        (rc = s_own_str(r, gx_mp_find(o, "name"), "name", (char **)&v->name)) < 0 ||
        (rc = s_int_in(r, gx_mp_find(o, "dag_offset"), "dag_offset", 0, INT64_MAX, &x)) < 0)
        return rc;
    p->dag_offset[i] = (size_t)x;
    const msgpack_object *sh = gx_mp_find(o, "shape");
    if (v->view.ndim < -1 || v->view.ndim > GX_MAX_DIMS || !sh ||
        sh->type != MSGPACK_OBJECT_ARRAY ||
        sh->via.array.size != (uint32_t)(v->view.ndim > 0 ? v->view.ndim : 0))
        return S_BAD(r, "rank %d and its shape disagree", v->view.ndim);
    for (int d = 0; d < v->view.ndim; d++)
        if ((rc = s_int_in(r, &sh->via.array.ptr[d], "shape", 0, INT64_MAX, &v->view.shape[d])) < 0)
            return rc;
    const size_t es = gx_dtype_size(v->view.dtype);
    if (v->view.ndim >= 0) {
        const int64_t numel = gx_shape_numel(v->view.ndim, v->view.shape, INT64_MAX);
        if (numel < 0 || numel != v->view.numel || !es || (uint64_t)numel > SIZE_MAX / es ||
            (size_t)numel * es > v->nbytes)
            return S_BAD(r, "%zu bytes for %lld elements of %s", v->nbytes,
                         (long long)v->view.numel, gx_dtype_name(v->view.dtype));
        if (v->kind == GXD_VALUE_INPUT && (size_t)numel * es != v->nbytes)
            return S_BAD(r, "an input of %zu bytes for %lld elements", v->nbytes, (long long)numel);
    } else if (v->kind != GXD_VALUE_DYNAMIC && v->kind != GXD_VALUE_FUSED) {
        return S_BAD(r, "a %s value of unknown rank", s_kind_names[v->kind]);
    }
    if (v->def < -1 || v->def >= (int)p->n_steps || v->last_use < -1 ||
        v->last_use > (int)p->n_steps || v->buffer < -1 || v->buffer >= (int)p->n_buffers + 1)
        return S_BAD(r, "def %d, last use %d, buffer %d", v->def, v->last_use, v->buffer);
    /* the memory that holds it: the host's, or a device's of its own
     * (inputs are on the host; constants there come from dev_consts) */
    if (v->mem < 0 || (size_t)v->mem >= p->n_devices ||
        (v->mem > 0 && (p->devices[v->mem]->host_memory || v->kind == GXD_VALUE_INPUT ||
                        v->keyed)))
        return S_BAD(r, "a %s value in the memory of device %d", s_kind_names[v->kind], v->mem);
    if (v->kind == GXD_VALUE_INPUT || v->kind == GXD_VALUE_TEMP) {
        const size_t ab = v->mem ? p->dev_arena_bytes[v->mem] : p->arena_bytes,
                     db = v->mem ? p->dev_dag_arena_bytes[v->mem] : p->dag_arena_bytes;
        if (v->offset > ab || v->nbytes > ab - v->offset ||
            (p->dag_ok && (p->dag_offset[i] > db || v->nbytes > db - p->dag_offset[i])))
            return S_BAD(r, "%zu bytes at %zu (DAG: %zu) outside the arena of %zu (DAG: %zu)",
                         v->nbytes, v->offset, p->dag_offset[i], ab, db);
        if (v->offset % GX_ALIGN || (p->dag_ok && p->dag_offset[i] % GX_ALIGN))
            return S_BAD(r, "offset %zu is not aligned", v->offset);
    }
    if (v->mem > 0) {
        const msgpack_object *d = gx_mp_find(o, "data");
        if (d && d->type != MSGPACK_OBJECT_NIL)
            return S_BAD(r, "data for a value in a device's memory");
        return GX_OK; /* a constant's: dev_consts */
    }
    if ((rc = s_value_data(r, gx_mp_find(o, "data"), v)) < 0)
        return rc;
    /* a constant without data: one the plan freed (prepare's s_free_dead),
     * which no step may read (s_check_plan) */
    if (v->keyed && (!v->view.data || v->kind != GXD_VALUE_INPUT))
        return S_BAD(r, "a keyed value without data");
    return GX_OK;
}

/* Checks across the tables once all are read: the plan's inputs and
 * outputs are the graph's, successors and predecessor counts agree (the
 * DAG executors count predecessors down), values' definitions. */
/* A view (memplan) shares the memory of its step's first input, made by
 * an earlier step (so chains end), at the same offsets. */
static int s_check_view(s_r *r, size_t i)
{
    const gxd_plan *p = r->p;
    const gxd_value *v = &p->values[i];
    if (!v->is_view)
        return GX_OK;
    const gxd_step *s = v->kind == GXD_VALUE_TEMP && v->def >= 0 ? &p->steps[v->def] : NULL;
    const int x = s && s->n_in > 0 && s->n_out == 1 && s->out[0] == (int)i ? s->in[0] : -1;
    const gxd_value *src = x >= 0 ? &p->values[x] : NULL;
    if (!src || src->kind != GXD_VALUE_TEMP || src->def < 0 || src->def >= v->def ||
        src->offset != v->offset || src->nbytes < v->nbytes ||
        (p->dag_ok && p->dag_offset[x] != p->dag_offset[i]))
        return S_BAD(r, "value %zu is a view, but not of its step's input at its offsets", i);
    return GX_OK;
}

/* A kernel step reads and writes only the memory of its device (the
 * host's for a device with host memory): a device kernel never gets a
 * host pointer, nor a host kernel a device's. Copy steps cross. */
static int s_check_step_mem(s_r *r, size_t i)
{
    const gxd_plan *p = r->p;
    const gxd_step *s = &p->steps[i];
    if (s->copy || s->folded)
        return GX_OK;
    const int mem = p->devices[s->device]->host_memory ? 0 : s->device;
    for (int k = 0; k < s->n_in + s->n_out; k++) {
        const int v = k < s->n_in ? s->in[k] : s->out[k - s->n_in];
        if (v >= 0 && p->values[v].mem != mem)
            return S_BAD(r, "step %zu on device %d reads or writes value %d of memory %d", i,
                         s->device, v, p->values[v].mem);
    }
    if (s->scratch >= 0 && p->values[s->scratch].mem != mem)
        return S_BAD(r, "step %zu on device %d has scratch in memory %d", i, s->device,
                     p->values[s->scratch].mem);
    return GX_OK;
}

/* Is a plan value called vname graph output gname: that name, or its
 * copy to the host from a device ("y@cpu": partition.c)? */
static bool s_is_output(const gxd_plan *p, const char *vname, const char *gname)
{
    const size_t n = strlen(gname);
    if (strncmp(vname, gname, n))
        return false;
    if (!vname[n])
        return true;
    for (size_t d = 0; vname[n] == '@' && d < p->n_devices; d++)
        if (!strcmp(vname + n + 1, p->devices[d]->name))
            return true;
    return false;
}

/* Value v (-1: none) is a constant of the host without its bytes. */
static bool s_no_data(const gxd_plan *p, int v)
{
    return v >= 0 && p->values[v].kind == GXD_VALUE_CONST && p->values[v].mem == 0 &&
           !p->values[v].view.data && p->values[v].view.numel > 0;
}

/* The first step that reads value i, or NULL. */
static const gxd_step *s_reader(const gxd_plan *p, int i)
{
    for (size_t k = 0; k < p->n_steps; k++)
        for (int j = 0; j < p->steps[k].n_in; j++)
            if (p->steps[k].in[j] == i)
                return &p->steps[k];
    return NULL;
}

/* The device whose kernel reads value i (that of its first reader), or NULL. */
static const gx_backend *s_reader_device(const gxd_plan *p, int i)
{
    const gxd_step *s = s_reader(p, i);
    return s ? p->devices[s->device] : NULL;
}

/* Does prepared constant i hold the bytes this build's prepare pass
 * writes for its reader's kernel? A build that packs a form differently
 * without a new kernels id (ops/cpu/names.c, S_KERNELS_REV) would
 * otherwise hand its kernels a constant of the old form. */
static int s_check_prepared(s_r *r, size_t i)
{
    const gxd_plan *p = r->p;
    const gxd_prepared *pr = &p->prepared[i];
    const gxd_step *s = s_reader(p, pr->value);
    if (!s)
        return GX_OK; /* read by no step: never handed to a kernel */
    const size_t want = gxd_prepare_bytes(p->devices[s->device], pr->op, pr->trans_b, pr->layout,
                                          s->attr, &p->values[pr->source].view);
    if (want != p->values[pr->value].nbytes)
        return S_BAD(r, "prepared[%zu] holds %zu bytes where this build prepares %zu", i,
                     p->values[pr->value].nbytes, want);
    return GX_OK;
}

static int s_check_plan(s_r *r)
{
    gxd_plan *p = r->p;
    r->where[0] = '\0';
    if (p->n_inputs != r->g->n_inputs || p->n_outputs != r->g->n_outputs)
        return s_bad(r, GX_ENOTFOUND, "%zu inputs and %zu outputs for a graph of %zu and %zu",
                     p->n_inputs, p->n_outputs, r->g->n_inputs, r->g->n_outputs);
    for (size_t i = 0; i < p->n_inputs; i++)
        if (p->values[p->inputs[i]].kind != GXD_VALUE_INPUT ||
            strcmp(p->values[p->inputs[i]].name, r->g->inputs[i].name))
            return s_bad(r, GX_ENOTFOUND, "input %zu is not the graph's '%s'", i,
                         r->g->inputs[i].name);
    for (size_t i = 0; i < p->n_outputs; i++)
        if (!s_is_output(p, p->values[p->outputs[i]].name, r->g->outputs[i].name))
            return s_bad(r, GX_ENOTFOUND, "output %zu is not the graph's '%s'", i,
                         r->g->outputs[i].name);
    for (size_t i = 0; i < p->n_outputs; i++) /* the caller reads them */
        if (p->values[p->outputs[i]].mem != 0)
            return S_BAD(r, "output %zu is in the memory of device %d", i,
                         p->values[p->outputs[i]].mem);
    int *preds = calloc(p->n_steps + 1, sizeof *preds);
    if (!preds)
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    for (size_t i = 0; i < p->n_steps; i++)
        for (int k = 0; k < p->steps[i].n_succ; k++)
            preds[p->steps[i].succ[k]]++;
    int rc = GX_OK;
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++)
        if (preds[i] != p->steps[i].n_preds)
            rc = S_BAD(r, "step %zu counts %d predecessors, its predecessors name it %d times", i,
                       p->steps[i].n_preds, preds[i]);
    free(preds);
    if (p->width < 0 || (size_t)p->width > p->n_steps + 1)
        return S_BAD(r, "width %d for %zu steps", p->width, p->n_steps);
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++)
        for (int k = 0; k < p->steps[i].n_in && rc == GX_OK; k++)
            if (s_no_data(p, p->steps[i].in[k]))
                rc = S_BAD(r, "step %zu reads constant %d, which has no data", i,
                           p->steps[i].in[k]);
    for (size_t i = 0; i < p->n_outputs && rc == GX_OK; i++)
        if (s_no_data(p, p->outputs[i]))
            rc = S_BAD(r, "output %zu is a constant without data", i);
    for (size_t i = 0; i < p->n_values && rc == GX_OK; i++)
        rc = s_check_view(r, i);
    for (size_t i = 0; i < p->n_steps && rc == GX_OK; i++)
        rc = s_check_step_mem(r, i);
    for (size_t i = 0; i < p->n_prepared && rc == GX_OK; i++)
        if (p->prepared[i].value < 0 || (size_t)p->prepared[i].value >= p->n_values ||
            p->prepared[i].source < 0 || (size_t)p->prepared[i].source >= p->n_values)
            rc = S_BAD(r, "prepared[%zu] names values %d and %d", i, p->prepared[i].value,
                       p->prepared[i].source);
        else
            rc = s_check_prepared(r, i);
    for (size_t i = 0; i < p->n_parts && rc == GX_OK; i++)
        if (p->parts[i].device < 0 || (size_t)p->parts[i].device >= p->n_devices)
            rc = S_BAD(r, "parts[%zu] on device %d", i, p->parts[i].device);
    return rc;
}

/* The constants file's body, read and checked once (its header: magic,
 * sizes, checksum, version, build, and its name, which is its contents'
 * hash). */
static int s_consts_body(s_r *r)
{
    if (r->cbody)
        return GX_OK;
    const void *buf = NULL;
    size_t len = 0;
    char why[256], want[GX_ARTIFACT_CONSTS + 1];
    gx_artifact_header h;
    int rc = r->cs ? r->cs->load(r->cs->arg, r->cname, &buf, &len)
                   : gx_errf(why, sizeof why, GX_ENOTFOUND, "none given");
    if (rc < 0)
        return s_bad(r, GX_ENOTFOUND, "its constants file '%s' cannot be read", r->cname);
    if ((rc = gx_artifact_header_read_magic(buf, len, GX_ARTIFACT_CONSTS_MAGIC, &h, why,
                                            sizeof why)) < 0)
        return s_bad(r, rc, "constants file '%s': %s", r->cname, why);
    if (h.version != GX_ARTIFACT_VERSION || strcmp(h.build, gxd_artifact_build_id()))
        return s_bad(r, GX_EVERSION, "constants file '%s' of version %u, build '%s'", r->cname,
                     h.version, h.build);
    gxd_artifact_consts_name(h.checksum, h.body_bytes, want, sizeof want);
    if (strcmp(h.consts, r->cname) || strcmp(want, r->cname))
        return s_bad(r, GX_ENOTFOUND, "constants file '%s' holds '%s' (contents '%s')", r->cname,
                     h.consts, want);
    r->cbody = (const unsigned char *)buf + GX_ARTIFACT_HEADER;
    r->cbody_len = (size_t)h.body_bytes;
    return GX_OK;
}

typedef struct s_fill {
    s_r *r;
    size_t i;
} s_fill;

/* Copies value i's bytes out of the constants file to dst. */
static int s_consts_fill(void *arg, void *dst)
{
    s_fill *f = arg;
    s_r *r = f->r;
    const gxd_value *v = &r->p->values[f->i];
    int rc = s_consts_body(r);
    if (rc < 0)
        return rc;
    if (r->cat[f->i] > r->cbody_len || v->nbytes > r->cbody_len - r->cat[f->i])
        return S_BAD(r, "value %zu: %zu bytes at %zu beyond its constants file of %zu", f->i,
                     v->nbytes, r->cat[f->i], r->cbody_len);
    memcpy(dst, r->cbody + r->cat[f->i], v->nbytes);
    return GX_OK;
}

/* Data for the values in the constants file, after the steps: a prepared
 * copy of a graph constant is the graph's table's (lim->shared: one copy
 * for all the graph's plans, compiled or read; the file is not even read
 * when the table has them all); a slice's is the whole batch's where the
 * bytes are equal; else the plan's own. */
static int s_consts_resolve(s_r *r)
{
    gxd_plan *p = r->p;
    for (size_t i = 0; i < p->n_values; i++) {
        if (r->cat[i] == SIZE_MAX)
            continue;
        gxd_value *v = &p->values[i];
        s_fill f = {r, i};
        snprintf(r->where, sizeof r->where, "values[%zu]", i);
        gxd_prepared *pr = NULL;
        for (size_t k = 0; k < p->n_prepared && !pr; k++)
            if (p->prepared[k].value == (int)i)
                pr = &p->prepared[k];
        const gxd_value *src = pr ? &p->values[pr->source] : NULL;
        const gx_backend *dev = s_reader_device(p, (int)i);
        int rc = GX_OK;
        if (pr && dev && r->lim && r->lim->shared && src->view.data && s_graph_const(r->g, src)) {
            v->view.data = gxd_shared_get(r->lim->shared, p, src->view.data, src->nbytes, dev,
                                          pr->op, pr->trans_b, pr->layout, v->nbytes,
                                          s_consts_fill, &f, r->lim->budget, &rc, r->err,
                                          r->errlen);
            if (rc < 0)
                return rc;
            if (v->view.data) {
                pr->shared = true;
                continue;
            }
        }
        if ((rc = s_consts_body(r)) < 0)
            return rc;
        if (r->cat[i] > r->cbody_len || v->nbytes > r->cbody_len - r->cat[i])
            return S_BAD(r, "%zu bytes at %zu beyond its constants file of %zu", v->nbytes,
                         r->cat[i], r->cbody_len);
        for (size_t k = 0; r->whole && k < r->whole->n_values && !v->view.data; k++) {
            const gxd_value *w = &r->whole->values[k];
            if (w->view.data && w->nbytes == v->nbytes && w->view.dtype == v->view.dtype &&
                w->kind == GXD_VALUE_CONST && !strcmp(w->name, v->name) &&
                !memcmp(w->view.data, r->cbody + r->cat[i], v->nbytes)) {
                v->view.data = w->view.data; /* whole's: the slice lives in its cache */
                if (pr)
                    pr->borrowed = true;
            }
        }
        if (v->view.data)
            continue;
        if (!(v->view.data = gxd_plan_own(p, v->nbytes)))
            return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
        if ((rc = s_consts_fill(&f, v->view.data)) < 0)
            return rc;
    }
    r->where[0] = '\0';
    return GX_OK;
}

/* The constants in devices' memory: each a constant value of that device
 * (every such value exactly once) and the host constant of the same size
 * and dtype whose bytes it holds, copied to the device through its table.
 * After the values; p->n_dev_consts counts those the device gave memory
 * (gxd_plan_destroy frees them). */
static int s_dev_consts(s_r *r, const msgpack_object *arr)
{
    gxd_plan *p = r->p;
    const uint32_t n = arr->via.array.size;
    if (!(p->dev_consts = calloc(n + 1, sizeof *p->dev_consts)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    int rc = GX_OK;
    for (uint32_t i = 0; i < n && rc == GX_OK; i++) {
        gxd_dev_const c;
        snprintf(r->where, sizeof r->where, "dev_consts[%u]", i);
        if ((rc = s_unpack_fields(r, &arr->via.array.ptr[i], &c, s_dev_const_fields,
                                  S_N(s_dev_const_fields))) < 0)
            break;
        if (c.value < 0 || (size_t)c.value >= p->n_values || c.source < 0 ||
            (size_t)c.source >= p->n_values) {
            rc = S_BAD(r, "values %d and %d", c.value, c.source);
            break;
        }
        gxd_value *v = &p->values[c.value];
        const gxd_value *src = &p->values[c.source];
        if (v->kind != GXD_VALUE_CONST || v->mem <= 0 || v->mem != c.device || v->view.data ||
            src->kind != GXD_VALUE_CONST || src->mem != 0 || !src->view.data ||
            src->nbytes != v->nbytes || src->view.dtype != v->view.dtype) {
            rc = S_BAD(r, "value %d is not a new constant of device %d holding host constant %d",
                       c.value, c.device, c.source);
            break;
        }
        const gx_backend *b = p->devices[c.device];
        if (!(v->view.data = b->alloc(b, v->nbytes))) {
            rc = gx_errf(r->err, r->errlen, GX_ENOMEM, "%s has no room for constant '%s' (%zu bytes)",
                         b->name, v->name, v->nbytes);
            break;
        }
        p->dev_consts[p->n_dev_consts++] = c;
        if ((rc = b->copy(b, GX_COPY_TO_DEVICE, v->view.data, src->view.data, v->nbytes, NULL)) < 0)
            rc = gx_errf(r->err, r->errlen, rc, "%s: cannot copy constant '%s' to it", b->name,
                         v->name);
    }
    for (size_t i = 0; i < p->n_values && rc == GX_OK; i++)
        if (p->values[i].mem > 0 && p->values[i].kind == GXD_VALUE_CONST &&
            !p->values[i].view.data && p->values[i].view.numel > 0)
            rc = S_BAD(r, "value %zu is a constant of device %d without its source", i,
                       p->values[i].mem);
    return rc;
}

/* The array field key of the body with at most max entries. */
static const msgpack_object *s_array(s_r *r, const msgpack_object *body, const char *key,
                                     uint32_t max)
{
    const msgpack_object *o = s_key(r, body, key, MSGPACK_OBJECT_ARRAY);
    if (o && o->via.array.size > max) {
        S_BAD(r, "'%s' has %u entries (at most %u)", key, o->via.array.size, max);
        return NULL;
    }
    return o;
}

static int s_records(s_r *r, const msgpack_object *body)
{
    gxd_plan *p = r->p;
    const msgpack_object *parts = s_array(r, body, "parts", 1u << 20),
                         *prep = s_array(r, body, "prepared", 1u << 20),
                         *impls = s_array(r, body, "impls", 1u << 20);
    if (!parts || !prep || !impls)
        return GX_EFORMAT;
    int rc = GX_ENOMEM;
    if (!(p->parts = calloc(parts->via.array.size + 1, sizeof *p->parts)) ||
        !(p->prepared = calloc(prep->via.array.size + 1, sizeof *p->prepared)) ||
        !(p->impls = gxd_plan_own(p, (impls->via.array.size + 1) * sizeof *p->impls)))
        return gx_errf(r->err, r->errlen, rc, "artifact: out of memory");
    rc = GX_OK;
    for (uint32_t i = 0; i < parts->via.array.size && rc == GX_OK; i++, p->n_parts++)
        rc = s_unpack_fields(r, &parts->via.array.ptr[i], &p->parts[i], s_part_fields,
                             S_N(s_part_fields));
    for (uint32_t i = 0; i < prep->via.array.size && rc == GX_OK; i++, p->n_prepared++) {
        const msgpack_object *o = &prep->via.array.ptr[i];
        gxd_prepared *pr = &p->prepared[i];
        if ((rc = s_unpack_fields(r, o, pr, s_prepared_fields, S_N(s_prepared_fields))) == GX_OK &&
            (rc = s_own_str(r, gx_mp_find(o, "node"), "node", (char **)&pr->node)) == GX_OK)
            rc = s_own_str(r, gx_mp_find(o, "from"), "from", (char **)&pr->from);
    }
    for (uint32_t i = 0; i < impls->via.array.size && rc == GX_OK; i++, p->n_impls++) {
        const msgpack_object *o = &impls->via.array.ptr[i];
        if ((rc = s_unpack_fields(r, o, &p->impls[i], s_impl_fields, S_N(s_impl_fields))) == GX_OK)
            rc = s_own_str(r, gx_mp_find(o, "node"), "node", (char **)&p->impls[i].node);
    }
    return rc;
}

static int s_body(s_r *r, const msgpack_object *body, const char *graph_id)
{
    gxd_plan *p = r->p;
    char id[80];
    int rc = s_str(r, gx_mp_find(body, "graph"), "graph", id, sizeof id);
    if (rc < 0)
        return rc;
    if (strcmp(id, graph_id))
        return s_bad(r, GX_ENOTFOUND, "for graph %.12s, not %.12s", id, graph_id);
    const msgpack_object *dev = s_array(r, body, "devices", GXD_MAX_DEVICES),
                         *values = s_array(r, body, "values", INT_MAX / 2),
                         *steps = s_array(r, body, "steps", INT_MAX / 2),
                         *dconsts = s_array(r, body, "dev_consts", INT_MAX / 2);
    if (!dev || !values || !steps || !dconsts)
        return GX_EFORMAT;
    if (!dev->via.array.size)
        return S_BAD(r, "a plan on no device");
    for (uint32_t i = 0; i < dev->via.array.size; i++) {
        char name[32];
        if ((rc = s_str(r, &dev->via.array.ptr[i], "devices", name, sizeof name)) < 0)
            return rc;
        char why[160];
        if (!(p->devices[p->n_devices++] = gx_backend_find(name)))
            return s_bad(r, GX_ENOTFOUND, "no device '%s' in this build", name);
        if (!gx_backend_runnable(p->devices[p->n_devices - 1], why, sizeof why))
            return s_bad(r, GX_ENOTFOUND, "device '%s' cannot run plans: %s", name, why);
    }
    if ((rc = s_unpack_fields(r, s_key(r, body, "plan", MSGPACK_OBJECT_MAP), p, s_plan_fields,
                              S_N(s_plan_fields))) < 0)
        return rc;
    p->n_values = values->via.array.size;
    p->n_steps = steps->via.array.size;
    /* the budget, from the sizes the plan record declares, before anything
     * they size is allocated: its owned bytes (names, constants) only add */
    const int64_t need = gxd_plan_mem_bytes(p), room = r->lim ? r->lim->max_plan_bytes : 0;
    if (room > 0 && need > room) {
        p->n_values = p->n_steps = 0; /* none allocated */
        return gx_errf(r->err, r->errlen, GX_ELIMIT,
                       "artifact: its plan needs at least %lld bytes (one arena of %zu among "
                       "them), more than the %lld left to it under %s; not read",
                       (long long)need, p->arena_bytes, (long long)room,
                       r->lim->max_plan_what ? r->lim->max_plan_what : "its budget");
    }
    if (!(p->values = calloc(p->n_values + 1, sizeof *p->values)) ||
        !(r->cat = malloc((p->n_values + 1) * sizeof *r->cat)) ||
        !(p->dag_offset = calloc(p->n_values + 1, sizeof *p->dag_offset)) ||
        !(p->steps = calloc(p->n_steps + 1, sizeof *p->steps)) ||
        !(p->stats = calloc(p->n_steps + 1, sizeof *p->stats)))
        return gx_errf(r->err, r->errlen, GX_ENOMEM, "artifact: out of memory");
    for (size_t i = 0; i < p->n_values; i++)
        r->cat[i] = SIZE_MAX;
    int n;
    if ((rc = s_ints(r, gx_mp_find(body, "inputs"), "inputs", 0, (int64_t)p->n_values,
                     GX_MAX_OP_INPUTS, &p->inputs, &n)) < 0)
        return rc;
    p->n_inputs = (size_t)n;
    if ((rc = s_ints(r, gx_mp_find(body, "outputs"), "outputs", 0, (int64_t)p->n_values,
                     INT_MAX / 2, &p->outputs, &n)) < 0)
        return rc;
    p->n_outputs = (size_t)n;
    if ((rc = s_records(r, body)) < 0)
        return rc;
    for (size_t i = 0; i < p->n_values; i++)
        if ((rc = s_value(r, &values->via.array.ptr[i], i)) < 0)
            return rc;
    for (size_t i = 0; i < p->n_steps; i++)
        if ((rc = s_step(r, &steps->via.array.ptr[i], i)) < 0)
            return rc;
    if ((rc = s_consts_resolve(r)) < 0 || (rc = s_dev_consts(r, dconsts)) < 0)
        return rc;
    return s_check_plan(r);
}

int gxd_artifact_read(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                      const gxd_compile_limits *lim, gxd_plan **out, char *err, size_t errlen)
{
    return gxd_artifact_read_ex(buf, len, g, graph_id, lim, NULL, NULL, out, err, errlen);
}

int gxd_artifact_read_slice(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                            const gxd_compile_limits *lim, const gxd_plan *whole, gxd_plan **out,
                            char *err, size_t errlen)
{
    return gxd_artifact_read_ex(buf, len, g, graph_id, lim, whole, NULL, out, err, errlen);
}

int gxd_artifact_read_ex(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                         const gxd_compile_limits *lim, const gxd_plan *whole,
                         const gxd_artifact_consts *consts, gxd_plan **out, char *err,
                         size_t errlen)
{
    *out = NULL;
    gx_artifact_header h;
    char why[256];
    int rc = gx_artifact_header_read(buf, len, &h, why, sizeof why);
    if (rc < 0)
        return gx_errf(err, errlen, rc, "artifact: %s", why);
    if (h.version != GX_ARTIFACT_VERSION)
        return gx_errf(err, errlen, GX_EVERSION, "artifact: format version %u (this build reads %d)",
                       h.version, GX_ARTIFACT_VERSION);
    if (strcmp(h.build, gxd_artifact_build_id()))
        return gx_errf(err, errlen, GX_EVERSION, "artifact: from another build ('%s', this is '%s')",
                       h.build, gxd_artifact_build_id());
    msgpack_unpacked mp;
    msgpack_unpacked_init(&mp);
    if ((rc = gx_wire_unpack_depth((const char *)buf + GX_ARTIFACT_HEADER, (size_t)h.body_bytes,
                                   S_MAX_DEPTH, &mp, why, sizeof why)) < 0) {
        msgpack_unpacked_destroy(&mp);
        return gx_errf(err, errlen, GX_EFORMAT, "artifact: %s", why);
    }
    s_r r = {.g = g, .whole = whole, .lim = lim, .cname = h.consts, .cs = consts, .err = err,
             .errlen = errlen};
    if (!(r.p = calloc(1, sizeof *r.p)) || !(r.p->slices = gxd_slices_new())) {
        free(r.p);
        msgpack_unpacked_destroy(&mp);
        return gx_errf(err, errlen, GX_ENOMEM, "artifact: out of memory");
    }
    rc = mp.data.type == MSGPACK_OBJECT_MAP ? s_body(&r, &mp.data, graph_id)
                                            : S_BAD(&r, "the body is not a map");
    msgpack_unpacked_destroy(&mp);
    free(r.cat);
    r.p->tune = lim ? lim->tune : NULL;
    if (rc == GX_OK && r.p->tune && r.p->n_impls &&
        !gxd_prepare_choices_current(r.p, r.p->tune, why, sizeof why))
        rc = gx_errf(err, errlen, GX_ENOTFOUND, "artifact: stale: %s", why);
    if (rc < 0) {
        gxd_plan_destroy(&r.p);
        return rc;
    }
    r.p->from_artifact = true;
    *out = r.p;
    return GX_OK;
}

/* ---- the cache key ------------------------------------------------------------ */

void gxd_artifact_key(const char *graph_id, const gx_view *inputs, const bool *keyed,
                      size_t n_inputs, const gxd_compile_limits *lim, char *buf, size_t len)
{
    uint64_t h = s_fnv_str(1469598103934665603ull, gxd_artifact_build_id());
    for (size_t i = 0; i < n_inputs; i++) {
        const gx_view *v = &inputs[i];
        const int head[3] = {(int)v->dtype, v->ndim, (int)v->layout};
        size_t nb = 0;
        h = s_fnv(h, head, sizeof head);
        h = s_fnv(h, v->shape, (size_t)(v->ndim > 0 ? v->ndim : 0) * sizeof *v->shape);
        /* a keyed input's value, as the compiler keeps it (infer.c) */
        if (keyed && keyed[i] && v->data && gx_shape_nbytes(v->dtype, v->ndim, v->shape, &nb) &&
            nb <= GXD_MAX_KEY_BYTES) {
            h = s_fnv(h, "=", 1);
            h = s_fnv(h, v->data, nb);
        }
    }
    const gxd_partition_opts *po = lim ? lim->part : NULL;
    if (po)
        for (size_t i = 0; i < po->n_backends; i++)
            h = s_fnv_str(h, po->backends[i]->name);
    else
        h = s_fnv_str(h, "cpu");
    if (lim) { /* the compiler's switches change the plan */
        const bool sw[6] = {lim->no_fuse, lim->no_rewrite, lim->no_layout, lim->no_layout_times,
                            po && po->off, lim->tune != NULL};
        h = s_fnv(h, sw, sizeof sw);
    }
    snprintf(buf, len, "%.64s-%016llx", graph_id, (unsigned long long)h);
}
