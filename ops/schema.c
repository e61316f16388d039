/* The op table: names, lookup, schemas, attribute resolution, broadcasting
 * and the helpers shared by the infer functions in ops/schema_*.c. */
#include <stdio.h>
#include <string.h>

#include "ops/schema.h"

static const char *const s_names[] = {
#define GX_OP_NAME_ROW(e, name) [GX_OP_##e] = name,
    GX_OP_LIST(GX_OP_NAME_ROW)
#undef GX_OP_NAME_ROW
};
_Static_assert(sizeof s_names / sizeof s_names[0] == GX_OP_COUNT, "op name table");

static const gx_op_schema *const s_schemas[] = {
#define GX_OP_SCHEMA_ROW(e, name) [GX_OP_##e] = &gx_schema_##e,
    GX_OP_LIST(GX_OP_SCHEMA_ROW)
#undef GX_OP_SCHEMA_ROW
};
_Static_assert(sizeof s_schemas / sizeof s_schemas[0] == GX_OP_COUNT, "op schema table");

const char *gx_op_name(gx_op op)
{
    return (unsigned)op < GX_OP_COUNT ? s_names[op] : "?";
}

int gx_op_lookup(const char *name, gx_op *op)
{
    for (int i = 0; name && i < GX_OP_COUNT; i++) {
        if (strcmp(name, s_names[i]) == 0) {
            *op = (gx_op)i;
            return GX_OK;
        }
    }
    return GX_EOP;
}

const gx_op_schema *gx_op_schema_get(gx_op op)
{
    return (unsigned)op < GX_OP_COUNT ? s_schemas[op] : NULL;
}

/* Resolution: every node attribute must name a spec of the right type (INT
 * is promoted to FLOAT), each at most once; unset specs take their default;
 * required specs must be set. */
int gx_op_check_strings(gx_op op, gx_infer *ic)
{
    const gx_op_schema *sc = gx_op_schema_get(op);
    if (sc->flags & (GX_OPF_STRINGS | GX_OPF_CONTROL))
        return GX_OK;
    for (int i = 0; i < ic->n_in + ic->n_out; i++) {
        const gx_view *v = i < ic->n_in ? &ic->in[i] : &ic->out[i - ic->n_in];
        if (v->ndim >= 0 && v->kind == GX_KIND_TENSOR && v->dtype == GX_STRING)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: %s %d is a string tensor; %s takes none",
                                 gx_op_name(op), i < ic->n_in ? "input" : "output",
                                 i < ic->n_in ? i : i - ic->n_in, gx_op_name(op));
    }
    return GX_OK;
}

int gx_op_resolve_attrs(gx_op op, const gx_node *node, gx_attrval *out, char *err,
                        size_t errlen)
{
    const gx_op_schema *s = gx_op_schema_get(op);
    const char *opname = gx_op_name(op);
    if (!s)
        return gx_errf(err, errlen, GX_EOP, "unknown op %d", (int)op);
    for (int j = 0; j < s->n_attrs; j++) {
        const gx_attr_spec *sp = &s->attrs[j];
        out[j] = (gx_attrval){.i = sp->def_i, .f = sp->def_f, .s = sp->def_s};
    }
    for (size_t a = 0; node && a < node->n_attr; a++) {
        const gx_attr *at = &node->attr[a];
        int j = 0;
        while (j < s->n_attrs && strcmp(s->attrs[j].name, at->name) != 0)
            j++;
        if (j == s->n_attrs)
            return gx_errf(err, errlen, GX_EATTR, "%s: unknown attribute '%s'", opname,
                           at->name);
        const gx_attr_spec *sp = &s->attrs[j];
        gx_attrval *v = &out[j];
        if (v->set)
            return gx_errf(err, errlen, GX_EATTR, "%s: attribute '%s' given twice", opname,
                           at->name);
        bool int_as_float = sp->type == GX_ATTR_FLOAT && at->type == GX_ATTR_INT;
        if (at->type != sp->type && !int_as_float)
            return gx_errf(err, errlen, GX_EATTR, "%s: attribute '%s' is %s, expected %s",
                           opname, at->name, gx_attr_type_name(at->type),
                           gx_attr_type_name(sp->type));
        v->set = true;
        switch (sp->type) {
        case GX_ATTR_INT:
            v->i = at->i;
            break;
        case GX_ATTR_FLOAT:
            v->f = int_as_float ? (double)at->i : at->f;
            break;
        case GX_ATTR_STRING:
            v->s = at->s;
            break;
        case GX_ATTR_INTS:
            v->ints = at->ints;
            v->n = at->n;
            break;
        case GX_ATTR_FLOATS:
            v->floats = at->floats;
            v->n = at->n;
            break;
        case GX_ATTR_TENSOR:
            v->t = at->t;
            break;
        case GX_ATTR_GRAPH:
            v->g = at->g;
            break;
        case GX_ATTR_TYPE_COUNT:
            return gx_errf(err, errlen, GX_EATTR, "%s: attribute '%s' has no type", opname,
                           at->name);
        }
    }
    for (int j = 0; j < s->n_attrs; j++) {
        if (s->attrs[j].required && !out[j].set)
            return gx_errf(err, errlen, GX_EATTR, "%s: attribute '%s' is required", opname,
                           s->attrs[j].name);
    }
    return GX_OK;
}

bool gx_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                        int64_t *out)
{
    int n = na > nb ? na : nb;
    int64_t tmp[GX_MAX_DIMS];
    if (n > GX_MAX_DIMS)
        return false;
    for (int i = 0; i < n; i++) {
        /* i counts dims from the right */
        int64_t da = i < na ? a[na - 1 - i] : 1;
        int64_t db = i < nb ? b[nb - 1 - i] : 1;
        if (da == db || db == 1)
            tmp[n - 1 - i] = da;
        else if (da == 1)
            tmp[n - 1 - i] = db;
        else
            return false;
    }
    /* out may alias a or b: write it only now */
    memcpy(out, tmp, (size_t)n * sizeof tmp[0]);
    *nout = n;
    return true;
}

/* ---- helpers of the infer functions (ops/schema.h) ---- */

int gx_infer_errf(gx_infer *ic, int status, const char *fmt, ...)
{
    if (ic->err && ic->errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ic->err, ic->errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}

int gx_infer_need(gx_infer *ic, const char *op, int i)
{
    if (i >= ic->n_in || ic->in[i].ndim < 0)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: input %d is required", op, i);
    return GX_OK;
}

int gx_infer_need_f32(gx_infer *ic, const char *op, int i)
{
    int rc = gx_infer_need(ic, op, i);
    if (rc < 0)
        return rc;
    if (ic->in[i].dtype != GX_F32) {
        const char *dn = gx_dtype_name(ic->in[i].dtype);
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s not supported (float32 only)", op,
                             dn ? dn : "unknown dtype");
    }
    return GX_OK;
}

void gx_view_set(gx_view *v, gx_dtype dt, int ndim, const int64_t *shape)
{
    v->dtype = dt;
    v->ndim = ndim;
    if (ndim > 0 && v->shape != shape)
        memmove(v->shape, shape, (size_t)ndim * sizeof shape[0]);
    v->numel = gx_view_numel(v);
}

int64_t gx_view_numel(const gx_view *v)
{
    int64_t n = v->ndim < 0 ? 0 : gx_shape_numel(v->ndim, v->shape, INT64_MAX);
    return n < 0 ? 0 : n;
}

double gx_view_bytes(const gx_view *v)
{
    return (double)gx_view_numel(v) * (double)gx_dtype_size(v->dtype);
}

double gx_infer_io_bytes(const gx_infer *ic)
{
    double b = 0;
    for (int i = 0; i < ic->n_in; i++)
        b += gx_view_bytes(&ic->in[i]);
    for (int i = 0; i < ic->n_out; i++)
        b += gx_view_bytes(&ic->out[i]);
    return b;
}

bool gx_axis_norm(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= (int64_t)rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}
