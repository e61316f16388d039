/*
 * Schemas of the control-flow ops (GX_OPS_CONTROL in ops/op.h). Their
 * outputs' shapes come from the subgraph that runs, so infer checks what it
 * can and answers GX_INFER_DYNAMIC; the executor (daemon/exec/control.c)
 * runs them.
 */
#include "ops/schema.h"

static int s_need_scalar(gx_infer *ic, const char *op, int i, gx_dtype dt, const char *what)
{
    const gx_view *v = &ic->in[i];
    if (v->ndim < 0)
        return GX_OK;
    if (v->dtype != dt)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: %s must be %s, got %s", op, what,
                             gx_dtype_name(dt), gx_dtype_name(v->dtype));
    if (gx_view_numel(v) != 1)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s must have one element, got %lld", op, what,
                             (long long)gx_view_numel(v));
    return GX_OK;
}

static gx_cost s_cost_none(const gx_infer *ic)
{
    return (gx_cost){0, 0};
}

static const gx_attr_spec s_if_attrs[] = {
    [GX_IF_THEN] = {.name = "then_branch", .type = GX_ATTR_GRAPH, .required = true},
    [GX_IF_ELSE] = {.name = "else_branch", .type = GX_ATTR_GRAPH, .required = true},
};
_Static_assert(sizeof s_if_attrs / sizeof s_if_attrs[0] == GX_IF_NATTRS, "If attrs");

/* If(cond) -> outputs of the branch taken; both branches must produce as
 * many outputs as the node has and take no inputs of their own. */
static int s_infer_if(gx_infer *ic)
{
    int rc = s_need_scalar(ic, "If", 0, GX_BOOL, "cond");
    if (rc < 0)
        return rc;
    for (int b = GX_IF_THEN; b <= GX_IF_ELSE; b++) {
        const gx_graph *g = ic->attr[b].g;
        if ((int)g->n_outputs != ic->n_out || g->n_inputs)
            return gx_infer_errf(ic, GX_EGRAPH,
                                 "If: %s has %zu inputs and %zu outputs; it must have none and %d",
                                 b == GX_IF_THEN ? "then_branch" : "else_branch", g->n_inputs,
                                 g->n_outputs, ic->n_out);
    }
    return GX_INFER_DYNAMIC;
}

const gx_op_schema gx_schema_IF = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = GX_MAX_OP_INPUTS,
    .attrs = s_if_attrs, .n_attrs = GX_IF_NATTRS,
    .flags = GX_OPF_CONTROL | GX_OPF_NO_FOLD, .infer = s_infer_if, .cost = s_cost_none,
};

static const gx_attr_spec s_loop_attrs[] = {
    [GX_LOOP_BODY] = {.name = "body", .type = GX_ATTR_GRAPH, .required = true},
};
_Static_assert(sizeof s_loop_attrs / sizeof s_loop_attrs[0] == GX_LOOP_NATTRS, "Loop attrs");

/* Loop(M, cond, v_initial...) -> (v_final..., scan_outputs...). The body
 * takes (iteration_num, cond, v...) and returns (cond, v..., scans...). */
static int s_infer_loop(gx_infer *ic)
{
    int rc;
    if (ic->n_in < 2)
        return gx_infer_errf(ic, GX_EGRAPH, "Loop: needs the inputs M and cond (either may be \"\")");
    if ((rc = s_need_scalar(ic, "Loop", 0, GX_I64, "M (trip count)")) < 0 ||
        (rc = s_need_scalar(ic, "Loop", 1, GX_BOOL, "cond")) < 0)
        return rc;
    const gx_graph *body = ic->attr[GX_LOOP_BODY].g;
    int n_carried = ic->n_in - 2;
    if ((int)body->n_inputs != 2 + n_carried || (int)body->n_outputs < 1 + n_carried ||
        ic->n_out != (int)body->n_outputs - 1)
        return gx_infer_errf(ic, GX_EGRAPH,
                             "Loop: with %d loop-carried values the body must take %d inputs and return 1 + %d + scan outputs, and the node has one output per body output after cond; body takes %zu, returns %zu, node has %d outputs",
                             n_carried, 2 + n_carried, n_carried, body->n_inputs,
                             body->n_outputs, ic->n_out);
    return GX_INFER_DYNAMIC;
}

const gx_op_schema gx_schema_LOOP = {
    /* M and cond are optional but hold their places: min_in 0 lets either
     * be omitted (""), infer checks that both places exist */
    .min_in = 0, .max_in = GX_MAX_OP_INPUTS, .min_out = 0, .max_out = GX_MAX_OP_INPUTS,
    .attrs = s_loop_attrs, .n_attrs = GX_LOOP_NATTRS,
    .flags = GX_OPF_CONTROL | GX_OPF_NO_FOLD, .infer = s_infer_loop, .cost = s_cost_none,
};

static const gx_attr_spec s_scan_attrs[] = {
    [GX_SCAN_BODY] = {.name = "body", .type = GX_ATTR_GRAPH, .required = true},
    [GX_SCAN_NUM_SCAN_INPUTS] = {.name = "num_scan_inputs", .type = GX_ATTR_INT, .required = true},
    [GX_SCAN_INPUT_AXES] = {.name = "scan_input_axes", .type = GX_ATTR_INTS},
    [GX_SCAN_INPUT_DIRECTIONS] = {.name = "scan_input_directions", .type = GX_ATTR_INTS},
    [GX_SCAN_OUTPUT_AXES] = {.name = "scan_output_axes", .type = GX_ATTR_INTS},
    [GX_SCAN_OUTPUT_DIRECTIONS] = {.name = "scan_output_directions", .type = GX_ATTR_INTS},
};
_Static_assert(sizeof s_scan_attrs / sizeof s_scan_attrs[0] == GX_SCAN_NATTRS, "Scan attrs");

/* Scan(state..., scan_inputs...) -> (final state..., scan_outputs...), opset
 * 9+: the body runs once per slice along axis 0 of the scan inputs, taking
 * (state..., slices...) and returning (state..., output slices...). Only the
 * default axes and directions (0, forward) are supported. */
static int s_infer_scan(gx_infer *ic)
{
    const gx_graph *body = ic->attr[GX_SCAN_BODY].g;
    int64_t m = ic->attr[GX_SCAN_NUM_SCAN_INPUTS].i;
    if (m < 1 || m > ic->n_in)
        return gx_infer_errf(ic, GX_EATTR, "Scan: num_scan_inputs %lld is not in [1, %d]",
                             (long long)m, ic->n_in);
    int n_state = ic->n_in - (int)m;
    if ((int)body->n_inputs != ic->n_in || (int)body->n_outputs != ic->n_out ||
        ic->n_out < n_state)
        return gx_infer_errf(ic, GX_EGRAPH,
                             "Scan: the body must take one input per node input (%d) and return one output per node output (%d, at least the %d state values); it takes %zu and returns %zu",
                             ic->n_in, ic->n_out, n_state, body->n_inputs, body->n_outputs);
    for (int a = GX_SCAN_INPUT_AXES; a <= GX_SCAN_OUTPUT_DIRECTIONS; a++)
        for (size_t i = 0; i < ic->attr[a].n; i++)
            if (ic->attr[a].ints[i] != 0)
                return gx_infer_errf(ic, GX_EUNSUPPORTED,
                                     "Scan: only axis 0 and forward direction are supported (%s)",
                                     s_scan_attrs[a].name);
    int64_t len = -1;
    for (int i = n_state; i < ic->n_in; i++) {
        const gx_view *v = &ic->in[i];
        if (v->ndim < 1)
            return gx_infer_errf(ic, GX_ESHAPE, "Scan: scan input %d is missing or a scalar",
                                 i - n_state);
        if (len >= 0 && v->shape[0] != len)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "Scan: scan inputs differ in length along axis 0 (%lld and %lld)",
                                 (long long)len, (long long)v->shape[0]);
        len = v->shape[0];
    }
    return GX_INFER_DYNAMIC;
}

const gx_op_schema gx_schema_SCAN = {
    .min_in = 1, .max_in = GX_MAX_OP_INPUTS, .min_out = 0, .max_out = GX_MAX_OP_INPUTS,
    .attrs = s_scan_attrs, .n_attrs = GX_SCAN_NATTRS,
    .flags = GX_OPF_CONTROL | GX_OPF_NO_FOLD, .infer = s_infer_scan, .cost = s_cost_none,
};
