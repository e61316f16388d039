/* The graph builder: the in-memory graph both sides share (see internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

const char *gx_attr_type_name(gx_attr_type t)
{
    static const char *const names[] = {
#define GX_ATTR_NAME(e, name) name,
        GX_ATTR_TYPE_LIST(GX_ATTR_NAME)
#undef GX_ATTR_NAME
    };
    _Static_assert(sizeof names / sizeof names[0] == GX_ATTR_TYPE_COUNT, "attr types");
    return (unsigned)t < GX_ATTR_TYPE_COUNT ? names[t] : "?";
}

GX_EXPORT gx_graph *gx_graph_new(const char *name)
{
    gx_graph *g = calloc(1, sizeof *g);
    if (g && name && !(g->name = strdup(name))) {
        free(g);
        return NULL;
    }
    return g;
}

static void s_attr_fini(gx_attr *a)
{
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    gx_tensor_destroy(&a->t);
    gx_graph_destroy(&a->g);
}

static void s_node_free(gx_node *n)
{
    if (!n)
        return;
    free(n->op);
    free(n->name);
    for (size_t i = 0; i < n->n_in; i++)
        free(n->in[i]);
    for (size_t i = 0; i < n->n_out; i++)
        free(n->out[i]);
    for (size_t i = 0; i < n->n_attr; i++)
        s_attr_fini(&n->attr[i]);
    free(n->in);
    free(n->out);
    free(n->attr);
    free(n);
}

GX_EXPORT void gx_graph_destroy(gx_graph **gp)
{
    if (!gp || !*gp)
        return;
    gx_graph *g = *gp;
    for (size_t i = 0; i < g->n_inputs; i++)
        free(g->inputs[i].name);
    for (size_t i = 0; i < g->n_outputs; i++)
        free(g->outputs[i].name);
    for (size_t i = 0; i < g->n_consts; i++) {
        free(g->consts[i].name);
        gx_tensor_destroy(&g->consts[i].t);
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        s_node_free(g->nodes[i]);
    free(g->inputs);
    free(g->outputs);
    free(g->consts);
    free(g->nodes);
    free(g->name);
    free(g);
    *gp = NULL;
}

/* A declaration; dt may be GX_DTYPE_COUNT (unknown) with a shape only if
 * untyped_shape (input declarations of subgraphs). */
static int s_add_decl(gx_value_decl **arr, size_t *n, size_t *cap, const char *name,
                      gx_dtype dt, int ndim, const int64_t *shape, bool untyped_shape)
{
    if (!name || !*name || ndim < -1 || ndim > GX_MAX_DIMS || (ndim > 0 && !shape))
        return GX_EINVAL;
    if ((unsigned)dt > GX_DTYPE_COUNT ||
        (ndim >= 0 && dt == GX_DTYPE_COUNT && !untyped_shape))
        return GX_EDTYPE;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < -1)
            return GX_ESHAPE;
    if (!gx_grow(arr, cap, *n + 1, sizeof **arr))
        return GX_ENOMEM;
    gx_value_decl *d = &(*arr)[*n];
    memset(d, 0, sizeof *d);
    if (!(d->name = strdup(name)))
        return GX_ENOMEM;
    d->dtype = dt;
    d->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        d->shape[i] = shape[i];
    (*n)++;
    return GX_OK;
}

GX_EXPORT int gx_graph_add_input(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                                 const int64_t *shape)
{
    if (!g || ndim < -1)
        return GX_EINVAL;
    return s_add_decl(&g->inputs, &g->n_inputs, &g->cap_inputs, name, dt, ndim, shape, false);
}

int gx_graph_add_input_decl(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                            const int64_t *shape)
{
    if (!g)
        return GX_EINVAL;
    return s_add_decl(&g->inputs, &g->n_inputs, &g->cap_inputs, name, dt, ndim, shape, true);
}

int gx_graph_add_output_decl(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                             const int64_t *shape)
{
    if (!g)
        return GX_EINVAL;
    return s_add_decl(&g->outputs, &g->n_outputs, &g->cap_outputs, name,
                      ndim < 0 ? GX_DTYPE_COUNT : dt, ndim, shape, false);
}

GX_EXPORT int gx_graph_add_output(gx_graph *g, const char *name)
{
    return gx_graph_add_output_decl(g, name, GX_DTYPE_COUNT, -1, NULL);
}

GX_EXPORT int gx_graph_add_const(gx_graph *g, const char *name, gx_tensor **t)
{
    int rc = GX_OK;
    if (!g || !name || !*name || !t || !*t)
        rc = GX_EINVAL;
    else if (!gx_grow(&g->consts, &g->cap_consts, g->n_consts + 1, sizeof *g->consts))
        rc = GX_ENOMEM;
    else {
        gx_const *c = &g->consts[g->n_consts];
        if (!(c->name = strdup(name)))
            rc = GX_ENOMEM;
        else {
            c->t = *t;
            *t = NULL;
            g->n_consts++;
        }
    }
    if (t)
        gx_tensor_destroy(t);
    return rc;
}

static char **s_strv_dup(size_t n, const char *const *v, bool allow_empty)
{
    char **out = calloc(n ? n : 1, sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || (!allow_empty && !*v[i]) || !(out[i] = strdup(v[i]))) {
            for (size_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

GX_EXPORT gx_node *gx_graph_add_node(gx_graph *g, const char *op, const char *name,
                                     size_t n_in, const char *const *inputs, size_t n_out,
                                     const char *const *outputs)
{
    if (!g || !op || !*op || (n_in && !inputs) || (n_out && !outputs))
        return NULL;
    if (!gx_grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes))
        return NULL;
    gx_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    char auto_name[48];
    if (!name || !*name) {
        snprintf(auto_name, sizeof auto_name, "node%zu", g->n_nodes);
        name = auto_name;
    }
    n->n_in = n_in;
    n->n_out = n_out;
    if (!(n->op = strdup(op)) || !(n->name = strdup(name)) ||
        !(n->in = s_strv_dup(n_in, inputs, true)) ||
        !(n->out = s_strv_dup(n_out, outputs, false))) {
        if (!n->in)
            n->n_in = 0;
        if (!n->out)
            n->n_out = 0;
        s_node_free(n);
        return NULL;
    }
    g->nodes[g->n_nodes++] = n;
    return n;
}

/* Appends a new attribute slot named name; NULL if it exists or on ENOMEM. */
static gx_attr *s_attr_new(gx_node *n, const char *name, gx_attr_type type, int *rc)
{
    *rc = GX_EINVAL;
    if (!n || !name || !*name)
        return NULL;
    *rc = GX_EATTR;
    for (size_t i = 0; i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) == 0)
            return NULL;
    *rc = GX_ENOMEM;
    gx_attr *arr = realloc(n->attr, (n->n_attr + 1) * sizeof *arr);
    if (!arr)
        return NULL;
    n->attr = arr;
    gx_attr *a = &arr[n->n_attr];
    memset(a, 0, sizeof *a);
    if (!(a->name = strdup(name)))
        return NULL;
    a->type = type;
    n->n_attr++;
    *rc = GX_OK;
    return a;
}

GX_EXPORT int gx_node_set_int(gx_node *n, const char *name, int64_t v)
{
    int rc;
    gx_attr *a = s_attr_new(n, name, GX_ATTR_INT, &rc);
    if (a)
        a->i = v;
    return rc;
}

GX_EXPORT int gx_node_set_float(gx_node *n, const char *name, double v)
{
    int rc;
    gx_attr *a = s_attr_new(n, name, GX_ATTR_FLOAT, &rc);
    if (a)
        a->f = v;
    return rc;
}

GX_EXPORT int gx_node_set_string(gx_node *n, const char *name, const char *v)
{
    int rc;
    if (!v)
        return GX_EINVAL;
    char *copy = strdup(v);
    if (!copy)
        return GX_ENOMEM;
    gx_attr *a = s_attr_new(n, name, GX_ATTR_STRING, &rc);
    if (a)
        a->s = copy;
    else
        free(copy);
    return rc;
}

/* Copies count elements of size elem; a zero-length list is valid. */
static void *s_memdup(const void *v, size_t count, size_t elem)
{
    void *p = malloc(count ? count * elem : 1);
    if (p && count)
        memcpy(p, v, count * elem);
    return p;
}

GX_EXPORT int gx_node_set_ints(gx_node *n, const char *name, const int64_t *v, size_t count)
{
    int rc;
    if ((count && !v) || count > SIZE_MAX / sizeof *v)
        return GX_EINVAL;
    int64_t *copy = s_memdup(v, count, sizeof *v);
    if (!copy)
        return GX_ENOMEM;
    gx_attr *a = s_attr_new(n, name, GX_ATTR_INTS, &rc);
    if (!a) {
        free(copy);
        return rc;
    }
    a->ints = copy;
    a->n = count;
    return GX_OK;
}

GX_EXPORT int gx_node_set_floats(gx_node *n, const char *name, const double *v, size_t count)
{
    int rc;
    if ((count && !v) || count > SIZE_MAX / sizeof *v)
        return GX_EINVAL;
    double *copy = s_memdup(v, count, sizeof *v);
    if (!copy)
        return GX_ENOMEM;
    gx_attr *a = s_attr_new(n, name, GX_ATTR_FLOATS, &rc);
    if (!a) {
        free(copy);
        return rc;
    }
    a->floats = copy;
    a->n = count;
    return GX_OK;
}

GX_EXPORT int gx_node_set_tensor(gx_node *n, const char *name, gx_tensor **t)
{
    int rc;
    if (!t || !*t) {
        gx_tensor_destroy(t);
        return GX_EINVAL;
    }
    gx_attr *a = s_attr_new(n, name, GX_ATTR_TENSOR, &rc);
    if (a) {
        a->t = *t;
        *t = NULL;
    }
    gx_tensor_destroy(t);
    return rc;
}

GX_EXPORT int gx_node_set_graph(gx_node *n, const char *name, gx_graph **g)
{
    int rc;
    if (!g || !*g) {
        gx_graph_destroy(g);
        return GX_EINVAL;
    }
    gx_attr *a = s_attr_new(n, name, GX_ATTR_GRAPH, &rc);
    if (a) {
        a->g = *g;
        *g = NULL;
    }
    gx_graph_destroy(g);
    return rc;
}

GX_EXPORT size_t gx_graph_node_count(const gx_graph *g) { return g ? g->n_nodes : 0; }
GX_EXPORT size_t gx_graph_input_count(const gx_graph *g) { return g ? g->n_inputs : 0; }
GX_EXPORT size_t gx_graph_output_count(const gx_graph *g) { return g ? g->n_outputs : 0; }

GX_EXPORT const char *gx_graph_input_name(const gx_graph *g, size_t i)
{
    return g && i < g->n_inputs ? g->inputs[i].name : NULL;
}

GX_EXPORT gx_dtype gx_graph_input_dtype(const gx_graph *g, size_t i)
{
    return g && i < g->n_inputs ? g->inputs[i].dtype : GX_DTYPE_COUNT;
}

GX_EXPORT gx_kind gx_graph_input_kind(const gx_graph *g, size_t i, bool *optional)
{
    if (optional)
        *optional = g && i < g->n_inputs && g->inputs[i].optional;
    return g && i < g->n_inputs ? g->inputs[i].kind : GX_KIND_COUNT;
}

GX_EXPORT gx_kind gx_graph_output_kind(const gx_graph *g, size_t i, bool *optional)
{
    if (optional)
        *optional = g && i < g->n_outputs && g->outputs[i].optional;
    return g && i < g->n_outputs ? g->outputs[i].kind : GX_KIND_COUNT;
}

int gx_graph_set_decl_kind(gx_graph *g, bool input, const char *name, gx_kind kind,
                           bool optional)
{
    gx_value_decl *d = input ? g->inputs : g->outputs;
    size_t n = input ? g->n_inputs : g->n_outputs;
    if (kind != GX_KIND_TENSOR && kind != GX_KIND_SEQUENCE)
        return GX_EINVAL;
    while (n > 0 && strcmp(d[n - 1].name, name) != 0)
        n--;
    if (!n)
        return GX_EINVAL;
    d[n - 1].kind = kind;
    d[n - 1].optional = optional;
    return GX_OK;
}

GX_EXPORT const char *gx_graph_output_name(const gx_graph *g, size_t i)
{
    return g && i < g->n_outputs ? g->outputs[i].name : NULL;
}
