/*
 * Pass 2b, widen: float16 and bfloat16 graphs on float32 kernels.
 * Contract: after infer, before rewrite. Infer marked `wide` every step
 * whose op has no kernel in the 16-bit float dtype (`half`) of its
 * inputs but accepts them as float32 (gxd_widen_views); the values keep
 * their graph dtypes. This pass then
 *
 *   - also widens a step that has a half kernel when every half input it
 *     reads is a constant or a wide step's output and at least one is the
 *     latter (it would only convert them back), so a run of steps computes
 *     in float32 from end to end;
 *   - gives each half value a wide step reads or writes a float32 twin
 *     ("<name>:f32"): a constant's twin is converted here, once per plan
 *     (a slice's plan borrows the whole batch's), never per job; any other
 *     value read by a wide step gets one Cast step to float32 ("widen:"),
 *     before its first wide reader, shared by all of them;
 *   - makes each wide step read and write the twins; a value it writes
 *     that anything else reads (a step with a half kernel, control flow, a
 *     graph output) gets one Cast step back to half ("narrow:") right
 *     after it; one nothing else reads leaves the arena (GXD_VALUE_FUSED,
 *     def the wide step).
 *
 * So conversions appear only where a half value crosses between a float32
 * step and anything else, never between two float32 steps: a chain of
 * them keeps its intermediate values in float32, which is at least as
 * accurate as the all-half computation the graph describes (each value is
 * rounded to half at most once, where the graph hands it to a half step
 * or returns it). Every later pass sees ordinary float32 steps (rewrite
 * folds a BatchNormalization into a Conv, layout and prepare pack the
 * converted weights, fuse builds epilogues). Records each wide step with
 * why, and the counts, for explain. Wide steps are static: a step whose
 * shapes are known only at run time, or that follows such a step, is
 * never widened (it runs a half kernel, or is refused as before).
 *
 * Phase 2 (s_roles; off with lim->no_round), once the wide steps above
 * are fixed: the graph's own Casts between float32 and float16 whose
 * float16 side has a twin (a Cast to float16 a float32 step reads; a
 * Cast to float32 of a value with a twin) become RoundToFloat16 steps
 * between float32 values (or, a Cast to float32 of a twin that holds
 * float16 values exactly, nothing: its output is that twin), and a step
 * with a half kernel that only moves or selects float16 values between
 * such twins runs on twins rounded to float16 ("round:" steps where a
 * wide step's twin is more precise) and writes exact twins. The fuse
 * pass then puts the rounding into its neighbours' group. Every float32
 * step reads the same numbers as without phase 2, every output has the
 * same bytes: a float16 value's float32 form is its twin rounded to
 * float16, which RoundToFloat16 computes (gx_f32_round_f16).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/cpu/cpu.h"

bool gxd_widen_half(gx_dtype dt)
{
    return dt == GX_F16 || dt == GX_BF16;
}

void gxd_widen_to_f32(const void *src, gx_dtype half, float *dst, int64_t n)
{
    const uint16_t *s = src;
    if (half == GX_F16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = gx_f16_to_f32(s[i]);
    else
        for (int64_t i = 0; i < n; i++)
            dst[i] = gx_bf16_to_f32(s[i]);
}

void gxd_widen_from_f32(const float *src, gx_dtype half, void *dst, int64_t n)
{
    uint16_t *d = dst;
    if (half == GX_F16)
        for (int64_t i = 0; i < n; i++)
            d[i] = gx_f32_to_f16(src[i]);
    else
        for (int64_t i = 0; i < n; i++)
            d[i] = gx_f32_to_bf16(src[i]);
}

bool gxd_widen_views(const gxd_step *s, gx_view *in, bool all_data, gxd_widen_try *t)
{
    const uint64_t value_inputs = gx_op_schema_get(s->op)->value_inputs;
    if (s->op == GX_OP_CAST || s->op == GX_OP_CAST_LIKE)
        return false; /* their dtypes are what they are about */
    t->half = GX_DTYPE_COUNT;
    bool real_f32 = false;
    for (int k = 0; k < s->n_formal; k++) {
        t->tmp[k] = NULL;
        if (in[k].ndim < 0)
            continue;
        real_f32 = real_f32 || in[k].dtype == GX_F32;
        if (!gxd_widen_half(in[k].dtype))
            continue;
        if (t->half != GX_DTYPE_COUNT && t->half != in[k].dtype)
            return false; /* float16 and bfloat16 together: no one twin dtype */
        t->half = in[k].dtype;
    }
    if (t->half == GX_DTYPE_COUNT)
        return false;
    /* a float32 output is the graph's half value unless the node reads
     * genuine float32 inputs too, its first among them (then the output
     * follows that one) */
    t->outs_half = !real_f32 || gxd_widen_half(in[0].dtype);
    for (int k = 0; k < s->n_formal; k++)
        t->orig[k] = in[k];
    for (int k = 0; k < s->n_formal; k++) {
        if (in[k].ndim < 0 || in[k].dtype != t->half)
            continue;
        void *data = in[k].data;
        in[k].dtype = GX_F32;
        in[k].data = NULL;
        if (data && (all_data || (k < 64 && (value_inputs >> k & 1)))) {
            float *f = gx_aligned_alloc((size_t)in[k].numel * sizeof *f + 1);
            if (!f) {
                gxd_widen_undo(s, in, t);
                return false;
            }
            gxd_widen_to_f32(data, t->half, f, in[k].numel);
            in[k].data = t->tmp[k] = f;
        }
    }
    return true;
}

bool gxd_widen_device_half(const gxd_cstate *st, const gxd_step *s, const gx_view *in,
                           const gx_view *out)
{
    const gxd_partition_opts *o = st->lim ? st->lim->part : NULL;
    if (st->no_dev_half || !o || o->off)
        return false;
    char why[160];
    const gx_rule_ctx rc = {s->op, s->attr, s->n_formal, in, s->n_out, out};
    for (size_t d = 0; d < o->n_backends; d++) {
        const gx_backend *b = o->backends[d];
        if (b && b->half_kernels && gx_backend_runnable(b, why, sizeof why) &&
            gx_backend_accepts(b, &rc, why, sizeof why))
            return true;
    }
    return false;
}

void gxd_widen_undo(const gxd_step *s, gx_view *in, gxd_widen_try *t)
{
    for (int k = 0; k < s->n_formal; k++) {
        free(t->tmp[k]);
        t->tmp[k] = NULL;
        if (t->half != GX_DTYPE_COUNT)
            in[k] = t->orig[k];
    }
}

void gxd_widen_done(const gxd_step *s, gxd_widen_try *t)
{
    for (int k = 0; k < s->n_formal; k++) {
        free(t->tmp[k]);
        t->tmp[k] = NULL;
    }
}

/* ---- the pass ---- */

typedef struct s_wd {
    gxd_cstate *st;
    gxd_plan *p;
    int *twin;        /* per value of the original plan: its float32 twin, or -1 */
    bool *rd_wide;    /* read by a wide step */
    bool *rd_other;   /* read by any other step, or a graph output */
    gxd_step *ns;     /* the new step list */
    size_t n_ns;
    size_t cap_values;
    /* the rounding steps (phase 2): what each step of the original plan
     * becomes, why (for explain); per value: its twin holds exactly its
     * half value (twin_exact), its rounded twin where the twin does not
     * (rounded), read by a rounding step (rd_round), the value a Cast's
     * output stands for (alias, -1: itself) */
    uint8_t *role;
    const char **why;
    bool *twin_exact, *rd_round;
    int *rounded, *alias;
} s_wd;

/* Phase 2's roles: a step that stays as infer and phase 1 left it; a Cast
 * from float32 to float16 whose output a float32 step reads (it becomes
 * RoundToFloat16 into the output's twin); a Cast from float16 to float32
 * of a value with a twin (RoundToFloat16 of the twin, or the twin itself
 * where that is exact); a step with a half kernel that only moves or
 * selects values (exact: it runs in float32 on exact twins, and its
 * outputs' twins are exact). */
enum { S_KEEP, S_TO_HALF, S_FROM_HALF, S_EXACT };

/* A new value: v's float32 twin "<v's name>:f32", of v's shape. */
static int s_twin_new(s_wd *w, int v, gxd_value_kind kind, int *out)
{
    gxd_plan *p = w->p;
    if (p->n_values + 1 > w->cap_values) {
        size_t cap = 2 * w->cap_values + 8;
        gxd_value *vals = realloc(p->values, (cap + 1) * sizeof *vals);
        if (!vals)
            return GX_ENOMEM;
        p->values = vals;
        w->cap_values = cap;
    }
    const gxd_value *x = &p->values[v];
    size_t len = strlen(x->name) + 5;
    char *name = gxd_plan_own(p, len);
    if (!name)
        return GX_ENOMEM;
    snprintf(name, len, "%s:f32", x->name);
    gxd_value *c = &p->values[p->n_values];
    *c = *x;
    c->name = name;
    c->kind = kind;
    c->keyed = false;
    c->view.dtype = GX_F32;
    c->view.data = NULL;
    c->nbytes = x->view.ndim >= 0 ? (size_t)x->view.numel * sizeof(float) : 0;
    c->def = -1;
    c->last_use = -1;
    c->buffer = -1;
    c->offset = 0;
    *out = (int)p->n_values++;
    return GX_OK;
}

/* A constant's twin, its data converted (or the whole batch's, for a
 * slice's plan: that plan outlives this one). */
static int s_twin_const(s_wd *w, int v, int *out)
{
    gxd_plan *p = w->p;
    int rc = s_twin_new(w, v, GXD_VALUE_CONST, out);
    if (rc < 0)
        return rc;
    gxd_value *c = &p->values[*out];
    const gxd_plan *whole = w->st->whole;
    for (size_t i = 0; whole && i < whole->n_values; i++) {
        const gxd_value *x = &whole->values[i];
        if (x->kind == GXD_VALUE_CONST && x->view.dtype == GX_F32 && x->nbytes == c->nbytes &&
            x->view.data && !strcmp(x->name, c->name)) {
            c->view.data = x->view.data;
            return GX_OK;
        }
    }
    if (!(c->view.data = gxd_plan_own(p, c->nbytes)))
        return GX_ENOMEM;
    gxd_widen_to_f32(p->values[v].view.data, p->values[v].view.dtype, c->view.data,
                     c->view.numel);
    p->widen_consts++;
    p->widen_const_bytes += c->nbytes;
    return GX_OK;
}

/* Appends a converting step of op from value `from` into value `to`: one
 * input, one output, no scratch, cost `cost`, its node (owned by the plan)
 * named "<what>:<of>" with n_attr attributes attr (owned by the plan).
 * The step, its attributes for the caller to resolve; NULL: GX_ENOMEM. */
static gxd_step *s_unary_step(s_wd *w, gx_op op, const char *what, const char *of,
                              gx_attr *attr, size_t n_attr, int from, int to, gx_cost cost)
{
    gxd_plan *p = w->p;
    gx_node *node = gxd_plan_own(p, sizeof *node);
    size_t len = strlen(of) + strlen(what) + 2;
    char *name = gxd_plan_own(p, len);
    gxd_step *s = &w->ns[w->n_ns];
    memset(s, 0, sizeof *s);
    if (!node || !name || !(s->in = malloc(sizeof *s->in)) ||
        !(s->out = malloc(sizeof *s->out))) {
        free(s->in);
        s->in = NULL;
        return NULL;
    }
    snprintf(name, len, "%s:%s", what, of);
    node->name = name;
    node->op = (char *)gx_op_name(op);
    node->n_attr = n_attr;
    node->attr = attr;
    s->op = op;
    s->node = node;
    s->n_in = s->n_out = s->n_formal = 1;
    s->in[0] = from;
    s->out[0] = to;
    s->scratch = -1;
    s->part = -1;
    s->convert = true;
    s->cost = cost;
    p->values[to].def = (int)w->n_ns++;
    p->widen_casts++;
    return s;
}

/* Appends a Cast step from value `from` into value `to` (to's dtype), its
 * node named "<what>:<the half value's name>" (owned by the plan). */
static int s_cast(s_wd *w, const char *what, int from, int to)
{
    gxd_plan *p = w->p;
    const gxd_value *x = &p->values[from], *y = &p->values[to];
    const gxd_value *h = gxd_widen_half(x->view.dtype) ? x : y;
    gx_attr *attr = gxd_plan_own(p, sizeof *attr);
    if (!attr)
        return GX_ENOMEM;
    /* ONNX's codes for Cast's `to` */
    attr->name = (char *)"to";
    attr->type = GX_ATTR_INT;
    attr->i = y->view.dtype == GX_F32 ? 1 : y->view.dtype == GX_F16 ? 10 : 16;
    gxd_step *s = s_unary_step(w, GX_OP_CAST, what, h->name, attr, 1, from, to,
                               (gx_cost){(double)x->view.numel, (double)(x->nbytes + y->nbytes)});
    if (!s)
        return GX_ENOMEM;
    char err[160];
    if (gx_op_resolve_attrs(GX_OP_CAST, s->node, s->attr, err, sizeof err) < 0)
        abort(); /* "to" is an INT attribute with a valid code */
    return GX_OK;
}

/* Would step s (not wide) compute in float32 without converting anything
 * to float32 for it alone? Its half inputs are constants, wide steps'
 * outputs (one at least: else nothing is saved) or values a wide step
 * reads (converted anyway), and its schema takes them as float32 with the
 * same outputs. Then it is widened, cost and scratch for float32. */
static bool s_f32_ok(s_wd *w, gxd_step *s);

static bool s_follows(s_wd *w, gxd_step *s)
{
    const gxd_plan *p = w->p;
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    if (s->wide || s->folded || s->dynamic ||
        (sc->flags & (GX_OPF_CONTROL | GX_OPF_READS_SHAPES)) ||
        s->n_formal > GX_MAX_OP_INPUTS || s->n_out > GX_MAX_OP_INPUTS)
        return false;
    bool from_wide = false;
    for (int k = 0; k < s->n_formal; k++) {
        if (s->in[k] < 0)
            continue;
        const gxd_value *v = &p->values[s->in[k]];
        if (!gxd_widen_half(v->view.dtype))
            continue;
        bool wide_def = v->def >= 0 && p->steps[v->def].wide;
        if (!wide_def && v->kind != GXD_VALUE_CONST && !w->rd_wide[s->in[k]])
            return false;
        if (k < 64 && (sc->value_inputs >> k & 1))
            return false;
        from_wide = from_wide || wide_def;
    }
    if (!from_wide)
        return false;
    return s_f32_ok(w, s);
}

/* Does step s (half inputs, no half value input) take its inputs as
 * float32 with the same outputs (half ones as float32)? Then it is
 * widened: cost and scratch for float32. */
static bool s_f32_ok(s_wd *w, gxd_step *s)
{
    const gxd_plan *p = w->p;
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    for (int k = 0; k < s->n_formal; k++) {
        if (s->in[k] < 0) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].ndim = -1;
        } else {
            in[k] = p->values[s->in[k]].view;
        }
    }
    gxd_widen_try t;
    if (!gxd_widen_views(s, in, false, &t))
        return false;
    memset(out, 0, sizeof out[0] * (size_t)s->n_out);
    char msg[256];
    gx_infer ic = {s->attr, s->n_formal, in, s->n_out, out, msg, sizeof msg};
    bool ok = sc->infer(&ic) == GX_OK;
    for (int k = 0; ok && k < s->n_out; k++) {
        const gx_view *v = &p->values[s->out[k]].view;
        gx_dtype dt = out[k].dtype == GX_F32 && t.outs_half ? t.half : out[k].dtype;
        ok = dt == v->dtype && out[k].ndim == v->ndim &&
             !memcmp(out[k].shape, v->shape, (size_t)v->ndim * sizeof *v->shape);
        out[k].numel = v->numel;
    }
    if (ok) {
        s->cost = sc->cost(&ic);
        s->scratch_bytes = sc->scratch ? sc->scratch(&ic) : 0;
        s->wide = true;
    }
    gxd_widen_done(s, &t);
    return ok;
}

/* ---- phase 2: the graph's own Casts and value-moving steps ---- */

/* Does op only move, select or copy its input values (so on float16
 * values it gives float16 values, whether it runs on them as float16 or
 * as float32)? */
static bool s_exact_op(gx_op op)
{
    return (gx_op_schema_get(op)->flags & GX_OPF_SHAPE_ONLY) || op == GX_OP_RELU ||
           op == GX_OP_MAXPOOL || op == GX_OP_GLOBALMAXPOOL || op == GX_OP_NEG ||
           op == GX_OP_ABS;
}

/* A Cast step between float32 and float16 (either way): to_half says
 * which. */
static bool s_half_cast(const gxd_plan *p, const gxd_step *s, bool to_half)
{
    if (s->op != GX_OP_CAST || s->wide || s->folded || s->dynamic || s->n_in != 1 ||
        s->n_out != 1 || s->in[0] < 0)
        return false;
    const gx_dtype a = p->values[s->in[0]].view.dtype, b = p->values[s->out[0]].view.dtype;
    return to_half ? a == GX_F32 && b == GX_F16 : a == GX_F16 && b == GX_F32;
}

/* Will half value v have a float32 twin without converting it for the
 * reader alone: a constant, the output of a wide step, of a Cast to half
 * or an exact step of phase 2? */
static bool s_has_twin(const s_wd *w, int v)
{
    const gxd_value *x = &w->p->values[v];
    return x->kind == GXD_VALUE_CONST ||
           (x->def >= 0 && (w->p->steps[x->def].wide || w->role[x->def] != S_KEEP));
}

/* Phase 2, after the wide steps are fixed (it changes none of them, so
 * they compute what they did): which Casts between float32 and float16
 * and which exact steps (s_exact_op) with a half kernel run in float32
 * too, in step order (a value's producer comes before its readers). A
 * Cast to half counts as one only where a float32 step reads its output
 * (else it stays a Cast): those that do are kept at the end. Nothing
 * computed changes: rounding a float32 value to float16 precision in
 * float32 (RoundToFloat16) gives the float16 value's float32 form, which
 * is what every float32 reader of it saw before (through a widen: Cast);
 * an exact step gives the same values in either dtype. */
static void s_roles(s_wd *w)
{
    gxd_plan *p = w->p;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        const gx_op_schema *sc = gx_op_schema_get(s->op);
        if (s_half_cast(p, s, true)) {
            w->role[i] = S_TO_HALF;
            w->why[i] = "a Cast to float16 a float32 step reads: rounds to float16 in float32";
        } else if (s_half_cast(p, s, false)) {
            const int v = s->in[0];
            if (s_has_twin(w, v) || w->rd_wide[v]) {
                w->role[i] = S_FROM_HALF;
                w->why[i] = "a Cast of a float16 value to float32: its twin, rounded to float16";
            }
        } else if (!s->wide && !s->folded && !s->dynamic && s_exact_op(s->op) &&
                   !(sc->flags & (GX_OPF_CONTROL | GX_OPF_READS_SHAPES)) &&
                   s->n_formal <= GX_MAX_OP_INPUTS && s->n_out <= GX_MAX_OP_INPUTS) {
            bool ok = true, any = false;
            for (int k = 0; k < s->n_formal && ok; k++) {
                const int v = s->in[k];
                if (v < 0 || !gxd_widen_half(p->values[v].view.dtype))
                    continue;
                ok = p->values[v].view.dtype == GX_F16 && s_has_twin(w, v) &&
                     !(k < 64 && (sc->value_inputs >> k & 1));
                any = any || p->values[v].kind != GXD_VALUE_CONST;
            }
            if (ok && any && s_f32_ok(w, s)) {
                w->role[i] = S_EXACT;
                w->why[i] = "moves float16 values: runs on their exact float32 twins";
            }
        }
    }
    /* a Cast to half nothing in float32 reads stays a Cast */
    bool *read = calloc(p->n_values + 1, sizeof *read);
    if (!read) { /* then none becomes one: still correct */
        for (size_t i = 0; i < p->n_steps; i++)
            w->role[i] = S_KEEP;
        return;
    }
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (s->wide || w->role[i] == S_FROM_HALF || w->role[i] == S_EXACT)
            for (int k = 0; k < s->n_formal; k++)
                if (s->in[k] >= 0)
                    read[s->in[k]] = true;
    }
    for (size_t i = 0; i < p->n_steps; i++)
        if (w->role[i] == S_TO_HALF && !read[p->steps[i].out[0]])
            w->role[i] = S_KEEP;
    free(read);
    for (size_t i = 0; i < p->n_steps; i++)
        if (w->role[i] != S_KEEP)
            p->steps[i].wide = true;
}

/* The records for explain: each wide step, in step order. */
static int s_record(s_wd *w, const bool *follows)
{
    gxd_plan *p = w->p;
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n += p->steps[i].wide;
    if (!n)
        return GX_OK;
    if (!(p->widened = gxd_plan_own(p, n * sizeof *p->widened)))
        return GX_ENOMEM;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!s->wide)
            continue;
        gx_dtype half = GX_DTYPE_COUNT;
        for (int k = 0; k < s->n_formal && half == GX_DTYPE_COUNT; k++)
            if (s->in[k] >= 0 && gxd_widen_half(p->values[s->in[k]].view.dtype))
                half = p->values[s->in[k]].view.dtype;
        for (int k = 0; k < s->n_out && half == GX_DTYPE_COUNT; k++)
            if (gxd_widen_half(p->values[s->out[k]].view.dtype))
                half = p->values[s->out[k]].view.dtype;
        p->widened[p->n_widened++] = (gxd_widened){
            .node = s->node->name, .op = s->op, .half = half,
            .why = w->role[i] != S_KEEP ? w->why[i]
                   : follows[i]         ? "its inputs are float32 already"
                                        : "no kernel in that dtype"};
    }
    return GX_OK;
}

/* The twin of half value v for a wide step: made here at its first
 * reader (a constant's converted, else one widen: Cast, both exact). */
static int s_twin_of(s_wd *w, int v, int *out)
{
    int rc = GX_OK;
    if (w->twin[v] < 0) {
        if (w->p->values[v].kind == GXD_VALUE_CONST)
            rc = s_twin_const(w, v, &w->twin[v]);
        else if ((rc = s_twin_new(w, v, GXD_VALUE_TEMP, &w->twin[v])) == GX_OK)
            rc = s_cast(w, "widen", v, w->twin[v]);
        w->twin_exact[v] = true;
    }
    *out = w->twin[v];
    return rc;
}

/* Appends a RoundToFloat16 step from value `from` into value `to`, its
 * node named "round:<to's name>" (owned by the plan). */
static int s_round(s_wd *w, int from, int to)
{
    const gxd_value *y = &w->p->values[to];
    gxd_step *s = s_unary_step(w, GX_OP_ROUND_F16, "round", y->name, NULL, 0, from, to,
                               (gx_cost){(double)y->view.numel, 2.0 * (double)y->nbytes});
    if (!s)
        return GX_ENOMEM;
    s->wide = true;
    return GX_OK;
}

/* Half value v's twin holding exactly its float16 values, for an exact
 * step: its twin if that is exact, else (a wide step's output, more
 * precise than float16) one RoundToFloat16 of it, shared by all such
 * readers. */
static int s_exact_twin(s_wd *w, int v, int *out)
{
    int rc = s_twin_of(w, v, out);
    if (rc < 0 || w->twin_exact[v])
        return rc;
    if (w->rounded[v] < 0) {
        int c;
        if ((rc = s_twin_new(w, v, GXD_VALUE_TEMP, &c)) < 0)
            return rc;
        /* "<v>:f32" again: the name of the value it rounds, for explain */
        if ((rc = s_round(w, w->twin[v], c)) < 0)
            return rc;
        w->rounded[v] = c;
    }
    *out = w->rounded[v];
    return GX_OK;
}

/* A step of the original plan whose output a Cast from half stands for
 * is read by control flow (which finds captured values by name): the
 * Cast's output stays a value of its own. */
static bool s_alias_ok(const s_wd *w, int a)
{
    const gxd_plan *p = w->p;
    for (size_t i = 0; i < p->n_outputs; i++)
        if (p->outputs[i] == a)
            return false;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!(gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL) && s->n_in == s->n_formal)
            continue;
        for (int k = 0; k < s->n_in; k++)
            if (s->in[k] == a)
                return false;
    }
    return true;
}

/* Step s (role S_TO_HALF or S_FROM_HALF) becomes RoundToFloat16 from
 * value `from` (float32) into `to`: its node stays the graph's Cast. */
static void s_as_round(s_wd *w, gxd_step *s, int from, int to)
{
    const gxd_value *y = &w->p->values[to];
    s->op = GX_OP_ROUND_F16;
    memset(s->attr, 0, sizeof s->attr);
    s->in[0] = from;
    s->out[0] = to;
    s->scratch_bytes = 0;
    s->cost = (gx_cost){(double)y->view.numel, 2.0 * (double)y->nbytes};
}

/* Rebuilds the step list with the twins and Cast steps. */
static int s_rewire(s_wd *w)
{
    gxd_plan *p = w->p;
    const size_t n_values = p->n_values, n_steps = p->n_steps;
    for (size_t i = 0; i < n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        const bool rounds = w->role[i] == S_FROM_HALF || w->role[i] == S_EXACT;
        if (s->folded && !(gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL))
            continue; /* evaluated already (a Shape of a half value): never reads it */
        for (int k = 0; k < s->n_in; k++)
            if (s->in[k] >= 0) {
                if (s->wide && k < s->n_formal && w->role[i] != S_TO_HALF)
                    (rounds ? w->rd_round : w->rd_wide)[s->in[k]] = true;
                else
                    w->rd_other[s->in[k]] = true;
            }
    }
    for (size_t i = 0; i < p->n_outputs; i++)
        w->rd_other[p->outputs[i]] = true;
    for (size_t v = 0; v < n_values; v++)
        w->twin[v] = w->rounded[v] = w->alias[v] = -1;

    int rc;
    for (size_t i = 0; i < n_steps; i++) {
        gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in; k++)
            if (s->in[k] >= 0 && w->alias[s->in[k]] >= 0)
                s->in[k] = w->alias[s->in[k]];
        if (!s->wide) {
            for (int k = 0; k < s->n_out; k++)
                p->values[s->out[k]].def = (int)w->n_ns;
            w->ns[w->n_ns++] = *s;
            continue;
        }
        const int role = w->role[i];
        if (role == S_FROM_HALF) {
            const int v = s->in[0], a = s->out[0];
            int t;
            if ((rc = s_twin_of(w, v, &t)) < 0)
                return rc;
            if (w->twin_exact[v] && p->values[t].kind != GXD_VALUE_CONST &&
                s_alias_ok(w, a)) { /* a is the twin */
                w->alias[a] = t;
                p->values[a].kind = GXD_VALUE_FUSED;
                p->values[a].def = p->values[t].def;
                free(s->in), free(s->out), free(s->succ);
                s->in = s->out = s->succ = NULL;
                continue;
            }
            s_as_round(w, s, t, a);
            p->values[a].def = (int)w->n_ns;
            w->ns[w->n_ns++] = *s;
            continue;
        }
        for (int k = 0; role != S_TO_HALF && k < s->n_formal; k++) {
            int v = s->in[k];
            if (v < 0 || !gxd_widen_half(p->values[v].view.dtype))
                continue;
            if ((rc = role == S_EXACT ? s_exact_twin(w, v, &s->in[k])
                                      : s_twin_of(w, v, &s->in[k])) < 0)
                return rc;
        }
        const int at = (int)w->n_ns++;
        w->ns[at] = *s;
        s = &w->ns[at];
        for (int k = 0; k < s->n_out; k++) {
            int v = s->out[k];
            p->values[v].def = at;
            if (!gxd_widen_half(p->values[v].view.dtype))
                continue;
            int c;
            if ((rc = s_twin_new(w, v, GXD_VALUE_TEMP, &c)) < 0)
                return rc;
            w->twin[v] = c;
            w->twin_exact[v] = role != S_KEEP;
            p->values[c].def = at;
            if (role == S_TO_HALF)
                s_as_round(w, s, s->in[0], c);
            else
                s->out[k] = c;
            if (w->rd_other[v]) {
                if ((rc = s_cast(w, "narrow", c, v)) < 0)
                    return rc;
            } else {
                p->values[v].kind = GXD_VALUE_FUSED; /* its work is done by the wide step */
            }
        }
    }
    free(p->steps);
    p->steps = w->ns;
    p->n_steps = w->n_ns;
    w->ns = NULL;
    return GX_OK;
}

int gxd_pass_widen(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    size_t n_wide = 0, n_casts = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        n_wide += p->steps[i].wide;
        n_casts += s_half_cast(p, &p->steps[i], true) || s_half_cast(p, &p->steps[i], false);
    }
    if (!n_wide && !n_casts)
        return GX_OK;
    s_wd w = {.st = st, .p = p, .cap_values = p->n_values};
    bool *follows = calloc(p->n_steps + 1, sizeof *follows);
    w.role = calloc(p->n_steps + 1, sizeof *w.role);
    w.why = calloc(p->n_steps + 1, sizeof *w.why);
    w.twin = malloc((p->n_values + 1) * sizeof *w.twin);
    w.rounded = malloc((p->n_values + 1) * sizeof *w.rounded);
    w.alias = malloc((p->n_values + 1) * sizeof *w.alias);
    w.twin_exact = calloc(p->n_values + 1, sizeof *w.twin_exact);
    w.rd_round = calloc(p->n_values + 1, sizeof *w.rd_round);
    w.rd_wide = calloc(p->n_values + 1, sizeof *w.rd_wide);
    w.rd_other = calloc(p->n_values + 1, sizeof *w.rd_other);
    /* at most three new steps per value besides the steps (widen:,
     * narrow:, round:) */
    w.ns = calloc(p->n_steps + 3 * p->n_values + 1, sizeof *w.ns);
    int rc = GX_ENOMEM;
    if (!follows || !w.role || !w.why || !w.twin || !w.rounded || !w.alias || !w.twin_exact ||
        !w.rd_round || !w.rd_wide || !w.rd_other || !w.ns)
        goto out;
    /* to a fixed point: each widened step may let others follow */
    for (bool changed = true; changed;) {
        changed = false;
        memset(w.rd_wide, 0, (p->n_values + 1) * sizeof *w.rd_wide);
        for (size_t i = 0; i < p->n_steps; i++)
            for (int k = 0; p->steps[i].wide && k < p->steps[i].n_formal; k++)
                if (p->steps[i].in[k] >= 0)
                    w.rd_wide[p->steps[i].in[k]] = true;
        for (size_t i = 0; i < p->n_steps; i++)
            if (s_follows(&w, &p->steps[i]))
                follows[i] = changed = true;
    }
    if (!st->lim || !st->lim->no_round)
        s_roles(&w);
    n_wide = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        n_wide += p->steps[i].wide;
    rc = GX_OK;
    if (!n_wide)
        goto out;
    memset(w.rd_wide, 0, (p->n_values + 1) * sizeof *w.rd_wide);
    if ((rc = s_record(&w, follows)) < 0 || (rc = s_rewire(&w)) < 0)
        goto out;
out:
    if (w.ns) {
        /* a failure halfway: the steps appended so far are the plan's
         * (with their arrays), the rest are still in the old list */
        for (size_t i = 0; i < w.n_ns; i++)
            if (w.ns[i].convert) {
                free(w.ns[i].in);
                free(w.ns[i].out);
            }
        free(w.ns);
    }
    free(follows), free(w.twin), free(w.rd_wide), free(w.rd_other), free(w.role), free(w.why);
    free(w.rounded), free(w.alias), free(w.twin_exact), free(w.rd_round);
    if (rc < 0)
        return gx_errf(st->err, st->errlen, rc, "out of memory while widening half steps");
    return GX_OK;
}
