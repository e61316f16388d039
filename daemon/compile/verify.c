/*
 * Pass 1, verify. Contract: on GX_OK every value name is defined exactly
 * once (graph input, constant or node output), every node's op is known,
 * its arity and attributes match the schema, every consumed value and graph
 * output is defined, the graph is acyclic, and plan->steps lists the nodes in
 * dependency order with value indices resolved. A node with subgraphs gets
 * the outer values they capture as extra inputs (after its own), each
 * defined in this scope. Graph inputs whose values some node's shape depends
 * on are marked keyed. Shapes are not looked at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

static int s_define(gxd_cstate *st, const char *name, gxd_value_kind kind, int def,
                    const char *what)
{
    gxd_plan *p = st->plan;
    bool dup;
    int idx = (int)p->n_values;
    if (!gxd_names_put(&st->names, name, idx, &dup)) {
        if (!dup)
            return gx_errf(st->err, st->errlen, GX_ENOMEM, "out of memory");
        const gxd_value *prev = &p->values[gxd_names_get(&st->names, name)];
        return gx_errf(st->err, st->errlen, GX_EGRAPH, "value '%s' (%s) is already defined%s",
                       name, what,
                       prev->kind == GXD_VALUE_INPUT   ? " as a graph input"
                       : prev->kind == GXD_VALUE_CONST ? " as a constant"
                                                       : " by another node");
    }
    gxd_value *v = &p->values[p->n_values++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->def = def;
    v->last_use = -1;
    v->buffer = -1;
    return GX_OK;
}

static bool s_strv_has(const gxd_strv *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], name) == 0)
            return true;
    return false;
}

static int s_strv_add(gxd_strv *l, const char *name)
{
    if (s_strv_has(l, name))
        return GX_OK;
    if (!gx_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return GX_ENOMEM;
    l->v[l->n++] = name;
    return GX_OK;
}

/* Names g defines: inputs, constants, node outputs. */
static int s_defined_names(const gx_graph *g, gxd_strv *out)
{
    for (size_t i = 0; i < g->n_inputs; i++)
        if (s_strv_add(out, g->inputs[i].name) < 0)
            return GX_ENOMEM;
    for (size_t i = 0; i < g->n_consts; i++)
        if (s_strv_add(out, g->consts[i].name) < 0)
            return GX_ENOMEM;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i]->n_out; k++)
            if (s_strv_add(out, g->nodes[i]->out[k]) < 0)
                return GX_ENOMEM;
    return GX_OK;
}

int gxd_free_names(const gx_graph *g, gxd_strv *out)
{
    gxd_strv def = {0}, inner = {0};
    int rc = s_defined_names(g, &def);
    for (size_t i = 0; i < g->n_nodes && rc == GX_OK; i++) {
        const gx_node *n = g->nodes[i];
        for (size_t k = 0; k < n->n_in && rc == GX_OK; k++)
            if (n->in[k][0] && !s_strv_has(&def, n->in[k]))
                rc = s_strv_add(out, n->in[k]);
        for (size_t a = 0; a < n->n_attr && rc == GX_OK; a++) {
            if (n->attr[a].type != GX_ATTR_GRAPH)
                continue;
            inner.n = 0;
            rc = gxd_free_names(n->attr[a].g, &inner);
            for (size_t k = 0; k < inner.n && rc == GX_OK; k++)
                if (!s_strv_has(&def, inner.v[k]))
                    rc = s_strv_add(out, inner.v[k]);
        }
    }
    for (size_t i = 0; i < g->n_outputs && rc == GX_OK; i++)
        if (!s_strv_has(&def, g->outputs[i].name))
            rc = s_strv_add(out, g->outputs[i].name);
    free(def.v);
    free(inner.v);
    return rc;
}

/* Keyed inputs: walking the steps backwards, a value is needed when a
 * schema reads it (value_inputs) or a step that produces a needed value
 * reads it (to fold that step). Needed graph inputs but strings become
 * keyed. Steps that read only shapes, and control flow, stop the walk. */
static void s_mark_keyed(gxd_plan *p, const gx_graph *g, bool *needed)
{
    for (size_t i = p->n_steps; i-- > 0;) {
        const gxd_step *s = &p->steps[i];
        const gx_op_schema *sc = gx_op_schema_get(s->op);
        bool produces_needed = false;
        for (int k = 0; k < s->n_out; k++)
            produces_needed = produces_needed || needed[s->out[k]];
        if (sc->flags & (GX_OPF_READS_SHAPES | GX_OPF_CONTROL | GX_OPF_NO_FOLD))
            produces_needed = false;
        for (int k = 0; k < s->n_formal; k++)
            if (s->in[k] >= 0 && (produces_needed || (k < 64 && (sc->value_inputs >> k) & 1)))
                needed[s->in[k]] = true;
    }
    /* never a string input: a handle is an address, not a value to key a
     * plan on (docs/strings.md); what it feeds waits for run time */
    for (size_t i = 0; i < p->n_inputs; i++)
        p->values[p->inputs[i]].keyed =
            needed[p->inputs[i]] && !(i < g->n_inputs && g->inputs[i].dtype == GX_STRING);
}

/* Append "sep item" to a growing message. */
static void s_append(char *buf, size_t len, const char *item)
{
    size_t n = strlen(buf);
    if (n + 1 < len)
        snprintf(buf + n, len - n, "%s%s", n ? "; " : "", item);
}

int gxd_pass_verify(gxd_cstate *st)
{
    const gx_graph *g = st->g;
    gxd_plan *p = st->plan;
    char *err = st->err;
    size_t errlen = st->errlen, n_nodes = g->n_nodes;
    int rc;

    if ((int64_t)n_nodes > st->lim->max_nodes)
        return gx_errf(err, errlen, GX_ELIMIT, "graph has %zu nodes (limit %lld)", n_nodes,
                       (long long)st->lim->max_nodes);
    if (g->n_outputs == 0)
        return gx_errf(err, errlen, GX_EGRAPH, "graph declares no outputs");

    size_t n_vals = g->n_inputs + st->n_captured + g->n_consts;
    for (size_t i = 0; i < n_nodes; i++)
        n_vals += g->nodes[i]->n_out;
    size_t cap = 16;
    while (cap < 2 * n_vals)
        cap *= 2;
    st->names.cap = cap;
    st->names.key = calloc(cap, sizeof *st->names.key);
    st->names.val = calloc(cap, sizeof *st->names.val);
    p->values = calloc(n_vals + 1, sizeof *p->values);
    p->steps = calloc(n_nodes + 1, sizeof *p->steps);
    int *order = calloc(n_nodes + 1, sizeof *order);
    int *pending = calloc(n_nodes + 1, sizeof *pending); /* unproduced inputs per node */
    int *producer = calloc(n_vals + 1, sizeof *producer); /* value -> node, -1 */
    const char ***capnames = calloc(n_nodes + 1, sizeof *capnames); /* captured, per node */
    if (!st->names.key || !st->names.val || !p->values || !p->steps || !order || !pending ||
        !producer || !capnames) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }

    for (size_t i = 0; i < g->n_inputs; i++)
        if ((rc = s_define(st, g->inputs[i].name, GXD_VALUE_INPUT, -1, "graph input")) < 0)
            goto out;
    for (size_t i = 0; i < st->n_captured; i++)
        if ((rc = s_define(st, st->captured[i], GXD_VALUE_INPUT, -1, "captured value")) < 0)
            goto out;
    for (size_t i = 0; i < g->n_consts; i++)
        if ((rc = s_define(st, g->consts[i].name, GXD_VALUE_CONST, -1, "constant")) < 0)
            goto out;

    /* Ops: name every unknown one in a single error. */
    char unknown[512] = "";
    size_t n_unknown = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        gx_op op;
        if (gx_op_lookup(g->nodes[i]->op, &op) == GX_OK)
            continue;
        char item[160];
        snprintf(item, sizeof item, "node '%.60s': unknown op '%.60s'", g->nodes[i]->name,
                 g->nodes[i]->op);
        s_append(unknown, sizeof unknown, item);
        n_unknown++;
    }
    if (n_unknown) {
        rc = gx_errf(err, errlen, GX_EOP, "%zu unsupported node%s: %s", n_unknown,
                     n_unknown > 1 ? "s" : "", unknown);
        goto out;
    }

    char bad_attrs[1024] = "";
    size_t n_bad_attrs = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        const gx_node *n = g->nodes[i];
        gxd_step *s = &p->steps[i]; /* in node order for now; sorted below */
        gx_op_lookup(n->op, &s->op);
        const gx_op_schema *sc = gx_op_schema_get(s->op);
        s->node = n;
        if ((int)n->n_in < sc->min_in || (int)n->n_in > sc->max_in ||
            (int)n->n_out < sc->min_out || (int)n->n_out > sc->max_out) {
            rc = gx_errf(err, errlen, GX_EGRAPH,
                         "node '%s' (%s): has %zu inputs and %zu outputs; the op takes %d..%d inputs and %d..%d outputs",
                         n->name, n->op, n->n_in, n->n_out, sc->min_in, sc->max_in, sc->min_out,
                         sc->max_out);
            goto out;
        }
        char aerr[256], item[400];
        if (gx_op_resolve_attrs(s->op, n, s->attr, aerr, sizeof aerr) < 0) {
            /* collected: one error names every node with a bad attribute */
            snprintf(item, sizeof item, "node '%.60s' (%.60s): %s", n->name, n->op, aerr);
            s_append(bad_attrs, sizeof bad_attrs, item);
            n_bad_attrs++;
        }
        s->scratch = -1;
        gxd_strv captured = {0};
        for (size_t a = 0; a < n->n_attr; a++)
            if (n->attr[a].type == GX_ATTR_GRAPH && gxd_free_names(n->attr[a].g, &captured) < 0) {
                free(captured.v);
                rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
                goto out;
            }
        s->n_formal = (int)n->n_in;
        s->n_in = (int)(n->n_in + captured.n);
        s->n_out = (int)n->n_out;
        s->in = calloc((size_t)s->n_in + 1, sizeof *s->in);
        capnames[i] = captured.v;
        s->out = calloc(n->n_out + 1, sizeof *s->out);
        if (!s->in || !s->out) {
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t k = 0; k < n->n_out; k++) {
            s->out[k] = (int)p->n_values;
            producer[p->n_values] = (int)i;
            if ((rc = s_define(st, n->out[k], GXD_VALUE_TEMP, (int)i, n->name)) < 0)
                goto out;
        }
    }
    p->n_steps = n_nodes;
    if (n_bad_attrs) {
        rc = gx_errf(err, errlen, GX_EATTR, "%s%s",
                     n_bad_attrs > 1 ? "nodes with bad attributes: " : "", bad_attrs);
        goto out;
    }
    for (size_t v = 0; v < g->n_inputs + st->n_captured + g->n_consts; v++)
        producer[v] = -1;

    /* Resolve inputs (and captured values); count the ones another node
     * produces. */
    for (size_t i = 0; i < n_nodes; i++) {
        const gx_node *n = g->nodes[i];
        gxd_step *s = &p->steps[i];
        for (int k = (int)n->n_in; k < s->n_in; k++) {
            const char *name = capnames[i][k - (int)n->n_in];
            int v = gxd_names_get(&st->names, name);
            if (v < 0) {
                rc = gx_errf(err, errlen, GX_EGRAPH,
                             "node '%s' (%s): a subgraph uses '%s', which is not defined",
                             n->name, n->op, name);
                goto out;
            }
            s->in[k] = v;
            if (producer[v] >= 0)
                pending[i]++;
        }
        /* Each subgraph is verified now, in its scope, so that a bad one is
         * refused at LOAD rather than when it first runs. */
        for (size_t a = 0; a < n->n_attr; a++) {
            if (n->attr[a].type != GX_ATTR_GRAPH)
                continue;
            gxd_strv fv = {0};
            char why[768];
            rc = gxd_free_names(n->attr[a].g, &fv) < 0
                     ? gx_errf(why, sizeof why, GX_ENOMEM, "out of memory")
                     : gxd_verify_sub(n->attr[a].g, fv.v, fv.n, st->lim, why, sizeof why);
            free(fv.v);
            if (rc < 0) {
                rc = gx_errf(err, errlen, rc, "node '%s' (%s), subgraph '%s': %s", n->name, n->op,
                             n->attr[a].name, why);
                goto out;
            }
        }
        for (size_t k = 0; k < n->n_in; k++) {
            if (!n->in[k][0]) {
                if ((int)k < gx_op_schema_get(s->op)->min_in) {
                    rc = gx_errf(err, errlen, GX_EGRAPH, "node '%s' (%s): input %zu is required",
                                 n->name, n->op, k);
                    goto out;
                }
                s->in[k] = -1;
                continue;
            }
            int v = gxd_names_get(&st->names, n->in[k]);
            if (v < 0) {
                rc = gx_errf(err, errlen, GX_EGRAPH, "node '%s' (%s): input '%s' is not defined",
                             n->name, n->op, n->in[k]);
                goto out;
            }
            s->in[k] = v;
            if (producer[v] >= 0)
                pending[i]++;
        }
    }

    /* Kahn's algorithm over nodes, stable in node order. */
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n_nodes; i++)
        if (pending[i] == 0)
            order[tail++] = (int)i;
    {
        /* value -> consuming nodes, in CSR form */
        size_t n_edges = 0;
        for (size_t i = 0; i < n_nodes; i++)
            n_edges += p->steps[i].n_in;
        int *deg = calloc(n_vals + 1, sizeof *deg);
        int *start = calloc(n_vals + 2, sizeof *start);
        int *adj = calloc(n_edges + 1, sizeof *adj);
        if (!deg || !start || !adj) {
            free(deg), free(start), free(adj);
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n_nodes; i++)
            for (int k = 0; k < p->steps[i].n_in; k++)
                if (p->steps[i].in[k] >= 0)
                    deg[p->steps[i].in[k]]++;
        for (size_t v = 0; v < n_vals; v++)
            start[v + 1] = start[v] + deg[v];
        memset(deg, 0, (n_vals + 1) * sizeof *deg);
        for (size_t i = 0; i < n_nodes; i++)
            for (int k = 0; k < p->steps[i].n_in; k++) {
                int v = p->steps[i].in[k];
                if (v >= 0)
                    adj[start[v] + deg[v]++] = (int)i;
            }
        while (head < tail) {
            int i = order[head++];
            for (int k = 0; k < p->steps[i].n_out; k++) {
                int v = p->steps[i].out[k];
                for (int e = start[v]; e < start[v + 1]; e++)
                    if (--pending[adj[e]] == 0)
                        order[tail++] = adj[e];
            }
        }
        free(deg), free(start), free(adj);
    }
    if (tail != n_nodes) {
        const char *culprit = "?";
        for (size_t i = 0; i < n_nodes; i++)
            if (pending[i] > 0) {
                culprit = g->nodes[i]->name;
                break;
            }
        rc = gx_errf(err, errlen, GX_EGRAPH, "graph has a cycle (through node '%s')", culprit);
        goto out;
    }

    /* Reorder steps topologically and fix up def indices. */
    gxd_step *sorted = calloc(n_nodes + 1, sizeof *sorted);
    if (!sorted) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_nodes; i++) {
        sorted[i] = p->steps[order[i]];
        for (int k = 0; k < sorted[i].n_out; k++)
            p->values[sorted[i].out[k]].def = (int)i;
    }
    free(p->steps);
    p->steps = sorted;

    p->n_inputs = g->n_inputs + st->n_captured;
    p->n_outputs = g->n_outputs;
    p->inputs = calloc(p->n_inputs + 1, sizeof *p->inputs);
    p->outputs = calloc(g->n_outputs + 1, sizeof *p->outputs);
    if (!p->inputs || !p->outputs) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->n_inputs; i++)
        p->inputs[i] = (int)i;
    for (size_t i = 0; i < g->n_outputs; i++) {
        int v = gxd_names_get(&st->names, g->outputs[i].name);
        if (v < 0) {
            rc = gx_errf(err, errlen, GX_EGRAPH,
                         "graph output '%s' is not produced by any node, input or constant",
                         g->outputs[i].name);
            goto out;
        }
        p->outputs[i] = v;
    }
    bool *needed = calloc(n_vals + 1, sizeof *needed);
    if (!needed) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    s_mark_keyed(p, g, needed);
    free(needed);
    for (size_t i = 0; i < n_nodes; i++)
        if (gx_op_schema_get(p->steps[i].op)->flags & GX_OPF_CONTROL &&
            !(p->steps[i].sub = gxd_subplans_new(p, &p->steps[i], st->lim->budget))) {
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto out;
        }
    rc = GX_OK;
out:
    if (rc < 0 && p->steps)
        p->n_steps = n_nodes; /* so gxd_plan_destroy frees every step filled so far */
    for (size_t i = 0; capnames && i < n_nodes; i++)
        free(capnames[i]);
    free(capnames);
    free(order);
    free(pending);
    free(producer);
    return rc;
}
