/*
 * Pass 3, rewrite. Contract: after infer, before partition. Rewrites the
 * static steps of the plan into fewer, cheaper ones that compute every
 * graph output's value to within float rounding (qdq: one quantization
 * step), as exporters spell
 * things out op by op:
 *
 *   fold       BatchNormalization (inference form) and Mul, Add, Sub, Div
 *              by constants that vary along the output channel only (a
 *              scalar, [M,1,1], [1,M,1,1]...), in a chain after a Conv,
 *              Gemm or MatMul with constant weights, become new weights and
 *              a bias of that step (a MatMul that needs a bias becomes a
 *              Gemm: 2-D operands only; a bias alone is left to the fuse
 *              pass, which runs it as the MatMul's epilogue anyway);
 *   transpose  a 2-D Transpose feeding a Gemm or a 2-D MatMul becomes the
 *              Gemm's transA or transB (a MatMul becomes a Gemm);
 *   reduce     a Reduce* reading a Transpose reduces the Transpose's input
 *              (the axes mapped back), and what is left is transposed
 *              after it, unless no kept dim moves (then the Transpose
 *              just leaves);
 *   permute    a Transpose of a Transpose becomes one (an Identity when
 *              they cancel out), and a Transpose that moves only dims of 1
 *              a Reshape (both then fall to the reshape rule);
 *   reshape    a chain of Reshape, Flatten, Squeeze, Unsqueeze and Identity
 *              becomes one Reshape to the final shape; one whose output
 *              has its input's shape leaves the plan, its readers reading
 *              its input (a graph output keeps one copy);
 *   layernorm  ReduceMean, Sub, Pow 2 (or Mul by itself), ReduceMean, Add
 *              eps, Sqrt, Div, and optionally Mul gamma and Add beta, over
 *              trailing axes, become one LayerNormalization;
 *   rmsnorm    Pow 2 (or Mul by itself), ReduceMean, Add eps, Sqrt, then
 *              Div, or Reciprocal (or Div of 1) and Mul, optionally Mul
 *              gamma, over trailing axes, become one RMSNormalization;
 *   gelu       x * 0.5 * (1 + Erf(x / sqrt 2)) (the three factors grouped
 *              in any order; x * (1 / sqrt 2) too) becomes Gelu, and the
 *              tanh form 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *              Gelu with approximate "tanh";
 *   hardswish  x * HardSigmoid(x) with alpha 1/6 and beta 0.5, and
 *              x * Clip(x + 3, 0, 6) / 6 (or * 1/6), become HardSwish;
 *   attention  MatMul(Q, Kᵀ), a scale (Mul or Div by a scalar), an
 *              optional Add of a float32 mask over every key (or a Where
 *              of a bool constant and a fill of at most -1e9), Softmax
 *              along the last axis and MatMul by V, all of rank 4 with Kᵀ
 *              made by a Transpose, become one Attention of Q, K, V (the
 *              Transpose writes K instead, or leaves);
 *   heads      a 4-D Attention whose Q, K and V are 3-D values reshaped
 *              to [B, S, H, D] and transposed to heads, and whose output
 *              is transposed back and reshaped to [B, S, H * Dv], becomes
 *              the Attention's 3-D form, which reads them in place;
 *   qdq        QuantizeLinear of a float32 Conv whose input is a
 *              DequantizeLinear of 8-bit values and whose weights (and
 *              int32 bias, of the input's scale times the weights') are
 *              dequantized constants (ORT's QDQ form) becomes one
 *              QLinearConv of the 8-bit values, and QuantizeLinear of a
 *              MatMul of two DequantizeLinear (per tensor) one
 *              QLinearMatMul (a Relu or Clip before the QuantizeLinear
 *              that changes no byte leaves too): within one
 *              quantization step of the float path (exact int32 sums).
 *              Not where a device other than the CPU is offered: its
 *              float ops may beat the CPU's 8-bit ones.
 *
 * A rewrite happens only when the values it removes are read by nothing
 * but the steps it replaces and are no graph outputs, every constant it
 * checks has the value the pattern needs (exactly, or to float precision
 * for irrational ones), and the new step infers to the very dtype and
 * shape of the value it writes. Folded weights are new constants the plan
 * owns; the graph's are never written. The new step takes the place of
 * the last step it replaces (so the order stays a dependency order); the
 * others leave, and the values between them become GXD_VALUE_FUSED with
 * def the new step (memplan gives them no memory). The pass repeats until
 * nothing changes (a fold may make a Gemm a Transpose then folds into).
 * Each rewrite, and each near miss (the pattern's core was there but a
 * check failed), is recorded in plan->rewrites for explain. Does nothing
 * when limits->no_rewrite is set (compiler.rewrite: false).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"
#include "ops/schema.h"

/* Rounds over the steps at most (each but the last changes something). */
#define S_ROUNDS 8
/* Steps of one chain or pattern at most. */
#define S_MAX_PAT 24

typedef struct s_rec {
    const char *rule, *node;
    char *what;
    bool applied;
    const char **nodes; /* applied: the nodes it replaced, in step order */
    int n_nodes;
} s_rec;

/* Working state of one run of the pass. */
typedef struct s_rw {
    gxd_cstate *st;
    gxd_plan *p;
    size_t n;          /* steps (the list keeps its length until the end) */
    size_t cap_values; /* room in p->values, reads and is_out */
    int *reads;        /* per value: inputs of live steps naming it */
    bool *is_out;      /* per value: a graph output */
    bool *dead;        /* per step: left the plan */
    int *into;         /* per dead step: the step doing its work, or -1 */
    bool *missed;      /* per step: a near miss around it (its pattern's core) was
                        * recorded this round, from a longer anchor */
    s_rec *done;       /* rewrites, in the order made */
    size_t n_done, cap_done;
    s_rec *miss;       /* near misses of the current round */
    size_t n_miss, cap_miss;
    const char *pend[S_MAX_PAT + 2]; /* the nodes of the rewrite being made */
    int n_pend;
    bool changed, oom;
} s_rw;

/* ---- the plan as the pass sees it ---- */

static const char *s_name(const gxd_step *s)
{
    return s->node && s->node->name ? s->node->name : "?";
}

/* Is step i live and a plain static step: one output in the arena, no
 * subgraphs, not folded? Only those take part in a rewrite. */
static bool s_plain(const s_rw *w, int i)
{
    const gxd_plan *p = w->p;
    const gxd_step *s = &p->steps[i];
    return !w->dead[i] && !s->folded && !s->dynamic && !s->sub && !s->fused && s->n_out == 1 &&
           s->n_in == s->n_formal && !(gx_op_schema_get(s->op)->flags & GX_OPF_CONTROL) &&
           p->values[s->out[0]].kind == GXD_VALUE_TEMP;
}

/* The plain step of op op that produces value v, else -1. */
static int s_prod(const s_rw *w, int v, gx_op op)
{
    if (v < 0)
        return -1;
    const int d = w->p->values[v].def;
    if (d < 0 || (size_t)d >= w->n || w->p->steps[d].op != op || !s_plain(w, d))
        return -1;
    return d;
}

/* How many of step s's inputs name value v. */
static int s_count(const gxd_step *s, int v)
{
    int c = 0;
    for (int k = 0; k < s->n_in; k++)
        c += s->in[k] == v;
    return c;
}

/* Is v read exactly `expect` times, all of them by the steps being
 * replaced, and no graph output? */
static bool s_internal(const s_rw *w, int v, int expect)
{
    return v >= 0 && !w->is_out[v] && w->reads[v] == expect;
}

/* Data of v if it is a float32 constant (of the graph, or folded). */
static const float *s_cf32(const gxd_plan *p, int v)
{
    if (v < 0)
        return NULL;
    const gxd_value *x = &p->values[v];
    return x->kind == GXD_VALUE_CONST && x->view.dtype == GX_F32 && x->view.ndim >= 0
               ? x->view.data
               : NULL;
}

/* Is v a constant of one element (any rank)? Its value in *c. */
static bool s_scalar(const gxd_plan *p, int v, double *c)
{
    if (v < 0)
        return false;
    const gxd_value *x = &p->values[v];
    if (x->kind != GXD_VALUE_CONST || !x->view.data || x->view.ndim < 0 || x->view.numel != 1)
        return false;
    switch (x->view.dtype) {
    case GX_F32: *c = *(const float *)x->view.data; return true;
    case GX_F64: *c = *(const double *)x->view.data; return true;
    case GX_I32: *c = *(const int32_t *)x->view.data; return true;
    case GX_I64: *c = (double)*(const int64_t *)x->view.data; return true;
    case GX_I8: *c = *(const int8_t *)x->view.data; return true;
    case GX_U8: *c = *(const uint8_t *)x->view.data; return true;
    case GX_F16:
    case GX_BF16:
    case GX_I16:
    case GX_U64:
    case GX_U32:
    case GX_U16:
    case GX_BOOL:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    return false;
}

/* c equals want to float precision (irrational constants as exporters
 * write them: a few units in the last place of a float32). */
static bool s_near(double c, double want)
{
    return fabs(c - want) <= 1e-6 * fabs(want);
}

static bool s_same_shape(const gx_view *a, const gx_view *b)
{
    return a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, (size_t)(a->ndim > 0 ? a->ndim : 0) * sizeof *a->shape);
}

/* ---- records ---- */

static void s_vnote(s_rw *w, bool applied, const char *rule, const char *node, const char *fmt,
                    va_list ap)
{
    char buf[320];
    vsnprintf(buf, sizeof buf, fmt, ap);
    s_rec **arr = applied ? &w->done : &w->miss;
    size_t *n = applied ? &w->n_done : &w->n_miss, *cap = applied ? &w->cap_done : &w->cap_miss;
    for (size_t i = 0; !applied && i < *n; i++) /* said already this round */
        if (!strcmp((*arr)[i].what, buf) && !strcmp((*arr)[i].node, node))
            return;
    char *what = strdup(buf);
    const char **nodes = applied ? malloc((size_t)(w->n_pend + 1) * sizeof *nodes) : NULL;
    if (!what || (applied && !nodes) || !gx_grow(arr, cap, *n + 1, sizeof **arr)) {
        free(what);
        free(nodes);
        w->oom = true;
        return;
    }
    if (applied)
        memcpy(nodes, w->pend, (size_t)w->n_pend * sizeof *nodes);
    (*arr)[(*n)++] = (s_rec){.rule = rule, .node = node, .what = what, .applied = applied,
                             .nodes = nodes, .n_nodes = applied ? w->n_pend : 0};
}

static void s_done(s_rw *w, const char *rule, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_done(s_rw *w, const char *rule, const char *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vnote(w, true, rule, node, fmt, ap);
    va_end(ap);
}

static void s_miss(s_rw *w, const char *rule, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_miss(s_rw *w, const char *rule, const char *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_vnote(w, false, rule, node, fmt, ap);
    va_end(ap);
}

static void s_clear_misses(s_rw *w)
{
    for (size_t i = 0; i < w->n_miss; i++)
        free(w->miss[i].what);
    w->n_miss = 0;
}

/* steps[0..n) in step order into order[] (room for S_MAX_PAT + 1);
 * returns how many. */
static int s_order(const int *steps, int n, int *order)
{
    int m = 0;
    for (int i = 0; i < n && m <= S_MAX_PAT; i++) {
        int j = m++;
        for (; j > 0 && order[j - 1] > steps[i]; j--)
            order[j] = order[j - 1];
        order[j] = steps[i];
    }
    return m;
}

/* The nodes of the rewrite about to be made: steps[0..n), and extra (a
 * step, or -1). Called before the steps change. */
static void s_pend(s_rw *w, const int *steps, int n, int extra)
{
    int all[S_MAX_PAT + 2], order[S_MAX_PAT + 1];
    int k = 0;
    for (int i = 0; i < n && k <= S_MAX_PAT; i++)
        all[k++] = steps[i];
    if (extra >= 0 && k <= S_MAX_PAT)
        all[k++] = extra;
    w->n_pend = s_order(all, k, order);
    for (int i = 0; i < w->n_pend; i++)
        w->pend[i] = s_name(&w->p->steps[order[i]]);
}

/* The node names of steps[0..n) in step order, ", "-separated, into buf. */
static const char *s_names(const s_rw *w, const int *steps, int n, char *buf, size_t len)
{
    int order[S_MAX_PAT + 1];
    const int m = s_order(steps, n, order);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m && used + 1 < len; i++) {
        int k = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                         s_name(&w->p->steps[order[i]]));
        used += k > 0 ? (size_t)k : 0;
    }
    return buf;
}

/* ---- changing the plan ---- */

static void s_read(s_rw *w, const gxd_step *s, int d)
{
    for (int k = 0; k < s->n_in; k++)
        if (s->in[k] >= 0)
            w->reads[s->in[k]] += d;
}

/* A new constant "<base>+<tag>" of dtype dt and shape (zeroed memory the
 * plan owns, for the caller to fill); its index in *out. */
static int s_new_const(s_rw *w, const char *base, const char *tag, gx_dtype dt, int ndim,
                       const int64_t *shape, int *out)
{
    gxd_plan *p = w->p;
    if (p->n_values + 1 > w->cap_values) {
        size_t cap = 2 * w->cap_values + 8;
        gxd_value *vals = realloc(p->values, (cap + 1) * sizeof *vals);
        if (vals)
            p->values = vals;
        int *reads = realloc(w->reads, (cap + 1) * sizeof *reads);
        if (reads)
            w->reads = reads;
        bool *is_out = realloc(w->is_out, (cap + 1) * sizeof *is_out);
        if (is_out)
            w->is_out = is_out;
        if (!vals || !reads || !is_out)
            return GX_ENOMEM;
        w->cap_values = cap;
    }
    size_t len = strlen(base) + strlen(tag) + 2;
    char *name = gxd_plan_own(p, len);
    if (!name)
        return GX_ENOMEM;
    snprintf(name, len, "%s+%s", base, tag);
    gxd_value *c = &p->values[p->n_values];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->kind = GXD_VALUE_CONST;
    c->def = -1;
    c->last_use = -1;
    c->buffer = -1;
    c->view.dtype = dt;
    c->view.ndim = ndim;
    c->view.numel = 1;
    for (int d = 0; d < ndim; d++)
        c->view.numel *= c->view.shape[d] = shape[d];
    c->nbytes = (size_t)c->view.numel * gx_dtype_size(dt);
    if (!(c->view.data = gxd_plan_own(p, c->nbytes)))
        return GX_ENOMEM;
    w->reads[p->n_values] = 0;
    w->is_out[p->n_values] = false;
    *out = (int)p->n_values++;
    return GX_OK;
}

/* *s = a new step of op, its node (owned by the plan) named `name`, its
 * attributes at their defaults, inputs in[0..n_in), output out. */
static int s_step_new(s_rw *w, gx_op op, const char *name, int n_in, const int *in, int out,
                      gxd_step *s)
{
    memset(s, 0, sizeof *s);
    gx_node *node = gxd_plan_own(w->p, sizeof *node);
    if (!node || !(s->in = malloc((size_t)(n_in + 1) * sizeof *s->in)) ||
        !(s->out = malloc(2 * sizeof *s->out)))
        return GX_ENOMEM;
    node->name = (char *)name;
    node->op = (char *)gx_op_name(op);
    s->op = op;
    s->node = node;
    char err[160];
    if (gx_op_resolve_attrs(op, node, s->attr, err, sizeof err) < 0)
        abort(); /* a node without attributes has its defaults */
    s->n_in = s->n_formal = n_in;
    memcpy(s->in, in, (size_t)n_in * sizeof *in);
    s->n_out = 1;
    s->out[0] = out;
    s->scratch = -1;
    s->part = -1;
    return GX_OK;
}

/* *s = step src (op, node, attributes) with inputs in[0..n_in) and
 * output out, in arrays of its own. */
static int s_step_like(const gxd_step *src, int n_in, const int *in, int out, gxd_step *s)
{
    *s = *src;
    s->in = malloc((size_t)(n_in + 1) * sizeof *s->in);
    s->out = malloc(2 * sizeof *s->out);
    if (!s->in || !s->out)
        return GX_ENOMEM;
    s->n_in = s->n_formal = n_in;
    memcpy(s->in, in, (size_t)n_in * sizeof *in);
    s->n_out = 1;
    s->out[0] = out;
    s->kernel = NULL;
    return GX_OK;
}

static void s_step_free(gxd_step *s)
{
    free(s->in);
    free(s->out);
    s->in = s->out = NULL;
}

/* Runs the schema's infer on step s as the infer pass would: true when
 * it accepts the inputs and its output has the dtype and shape of the
 * value s writes (nothing the rest of the plan sees changes); then sets
 * its cost and scratch. */
static bool s_reinfer(const gxd_plan *p, gxd_step *s)
{
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    if (s->n_in > GX_MAX_OP_INPUTS || s->n_out > GX_MAX_OP_INPUTS)
        return false;
    for (int k = 0; k < s->n_in; k++) {
        if (s->in[k] < 0) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].ndim = -1;
        } else {
            in[k] = p->values[s->in[k]].view;
        }
    }
    memset(out, 0, sizeof out[0] * (size_t)s->n_out);
    char msg[256] = "";
    gx_infer ic = {s->attr, s->n_formal, in, s->n_out, out, msg, sizeof msg};
    if (sc->infer(&ic) != GX_OK)
        return false;
    for (int k = 0; k < s->n_out; k++) {
        const gx_view *v = &p->values[s->out[k]].view;
        if (out[k].dtype != v->dtype || !s_same_shape(&out[k], v))
            return false;
        out[k].numel = v->numel;
    }
    s->cost = sc->cost(&ic);
    s->scratch_bytes = sc->scratch ? sc->scratch(&ic) : 0;
    s->max_shares = sc->shares ? sc->shares(&ic) : 0;
    return true;
}

/* Value v is no longer made by a step of its own: it lives inside step
 * `by` (or nowhere, -1). */
static void s_gone(s_rw *w, int v, int by)
{
    w->p->values[v].kind = GXD_VALUE_FUSED;
    w->p->values[v].def = by;
}

/* Step `at` becomes *ns (which it takes over); steps gone[0..n_gone)
 * leave the plan, their work done by `at`. The values they made (and at's
 * old output, when ns writes another) now live inside `at`. */
static void s_commit(s_rw *w, int at, gxd_step *ns, const int *gone, int n_gone)
{
    gxd_plan *p = w->p;
    gxd_step *s = &p->steps[at];
    s_read(w, s, -1);
    p->flops -= s->cost.flops;
    if (s->out[0] != ns->out[0])
        s_gone(w, s->out[0], at);
    s_step_free(s);
    for (int i = 0; i < n_gone; i++) {
        gxd_step *g = &p->steps[gone[i]];
        s_read(w, g, -1);
        p->flops -= g->cost.flops;
        s_gone(w, g->out[0], at);
        s_step_free(g);
        w->dead[gone[i]] = true;
        w->into[gone[i]] = at;
    }
    *s = *ns;
    memset(ns, 0, sizeof *ns);
    s_read(w, s, +1);
    p->flops += s->cost.flops;
    p->values[s->out[0]].def = at;
    w->changed = true;
}

/* ---- fold: per-channel affine steps into the product before them ---- */

typedef enum s_aff { S_AFF_BN, S_AFF_MUL, S_AFF_ADD, S_AFF_SUB, S_AFF_RSUB, S_AFF_DIV } s_aff;

/* Is step i a per-element affine map of one data input by constants:
 * BatchNormalization in inference form with constant statistics, or
 * Mul/Add/Sub/Div of a float32 value by a float32 constant? Its data
 * input in *kd, the kind in *kind. The output has the data's shape. */
static bool s_affine_op(const s_rw *w, int i, int *kd, s_aff *kind)
{
    const gxd_plan *p = w->p;
    const gxd_step *s = &p->steps[i];
    if (!s_plain(w, i))
        return false;
    if (s->op == GX_OP_BATCHNORM) {
        if (s->n_in != 5 || s->attr[GX_BATCHNORM_TRAINING_MODE].i != 0)
            return false;
        for (int k = 1; k < 5; k++)
            if (!s_cf32(p, s->in[k]) || p->values[s->in[k]].view.ndim != 1)
                return false;
        *kd = 0;
        *kind = S_AFF_BN;
    } else if (s->op == GX_OP_MUL || s->op == GX_OP_ADD || s->op == GX_OP_SUB ||
               s->op == GX_OP_DIV) {
        if (s->n_in != 2 || s->in[0] < 0 || s->in[1] < 0)
            return false;
        const bool c0 = s_cf32(p, s->in[0]) != NULL, c1 = s_cf32(p, s->in[1]) != NULL;
        if (c0 == c1 || (s->op == GX_OP_DIV && c0))
            return false;
        *kd = c0 ? 1 : 0;
        *kind = s->op == GX_OP_MUL   ? S_AFF_MUL
                : s->op == GX_OP_ADD ? S_AFF_ADD
                : s->op == GX_OP_DIV ? S_AFF_DIV
                : c0                 ? S_AFF_RSUB
                                     : S_AFF_SUB;
    } else {
        return false;
    }
    const gx_view *x = &p->values[s->in[*kd]].view, *y = &p->values[s->out[0]].view;
    return x->dtype == GX_F32 && y->dtype == GX_F32 && s_same_shape(x, y);
}

/* Constant c as one number per channel of y (channel axis ch): c
 * broadcasts to y without growing it and varies along ch at most. */
static bool s_per_channel(const gxd_plan *p, int c, const gx_view *y, int ch, double *out)
{
    const float *d = s_cf32(p, c);
    const gx_view *cv = &p->values[c].view;
    if (!d || cv->ndim > y->ndim)
        return false;
    bool varies = false;
    for (int i = 0; i < cv->ndim; i++) {
        const int yd = y->ndim - cv->ndim + i;
        if (cv->shape[i] == 1)
            continue;
        if (yd != ch || cv->shape[i] != y->shape[ch])
            return false;
        varies = true;
    }
    for (int64_t m = 0; m < y->shape[ch]; m++)
        out[m] = d[varies ? m : 0];
    return true;
}

/* The chain's steps in order, composed into y -> y * sc[m] + sh[m] per
 * channel m of the product y (channel axis ch). NULL, or why not. */
static const char *s_compose(const s_rw *w, const int *chain, const int *kd, const s_aff *kind,
                             int n, const gx_view *y, int ch, double *sc, double *sh, double *tmp)
{
    const gxd_plan *p = w->p;
    const int64_t M = y->shape[ch];
    for (int64_t m = 0; m < M; m++)
        sc[m] = 1.0, sh[m] = 0.0;
    for (int i = 0; i < n; i++) {
        const gxd_step *s = &p->steps[chain[i]];
        if (kind[i] == S_AFF_BN) {
            if (ch != 1)
                return "BatchNormalization normalises axis 1, not the product's channels";
            const float *scale = s_cf32(p, s->in[1]), *b = s_cf32(p, s->in[2]);
            const float *mean = s_cf32(p, s->in[3]), *var = s_cf32(p, s->in[4]);
            const double eps = s->attr[GX_BATCHNORM_EPSILON].f;
            for (int64_t m = 0; m < M; m++) {
                const double k = (double)scale[m] / sqrt((double)var[m] + eps);
                sc[m] *= k;
                sh[m] = (sh[m] - (double)mean[m]) * k + (double)b[m];
            }
            continue;
        }
        if (!s_per_channel(p, s->in[1 - kd[i]], y, ch, tmp))
            return "its constant varies along other axes than the product's channels";
        for (int64_t m = 0; m < M; m++) {
            const double c = tmp[m];
            switch (kind[i]) {
            case S_AFF_MUL: sc[m] *= c, sh[m] *= c; break;
            case S_AFF_ADD: sh[m] += c; break;
            case S_AFF_SUB: sh[m] -= c; break;
            case S_AFF_RSUB: sc[m] = -sc[m], sh[m] = c - sh[m]; break;
            case S_AFF_DIV:
                if (c == 0.0)
                    return "it divides by zero";
                sc[m] /= c, sh[m] /= c;
                break;
            case S_AFF_BN: break;
            }
        }
    }
    for (int64_t m = 0; m < M; m++)
        if (!isfinite(sc[m]) || !isfinite(sh[m]))
            return "the folded weights would not be finite";
    return NULL;
}

/* New weights: constant W (float32, shape of W) with every element along
 * axis `axis` at index m multiplied by sc[m]. */
static int s_scaled(s_rw *w, int wv, int axis, const double *sc, const char *tag, int *out)
{
    const gx_view v = w->p->values[wv].view;
    int rc = s_new_const(w, w->p->values[wv].name, tag, GX_F32, v.ndim, v.shape, out);
    if (rc < 0)
        return rc;
    const float *src = v.data;
    float *dst = w->p->values[*out].view.data;
    int64_t inner = 1;
    for (int d = axis + 1; d < v.ndim; d++)
        inner *= v.shape[d];
    const int64_t M = v.shape[axis];
    for (int64_t i = 0; i < v.numel; i++)
        dst[i] = (float)((double)src[i] * sc[(i / inner) % M]);
    return GX_OK;
}

/* Anchor a (the last of a chain of affine steps after a Conv, Gemm or
 * MatMul) and the chain folded into the product's weights. */
static int s_rule_fold(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    int chain[S_MAX_PAT], kd[S_MAX_PAT], n = 0, cur = a, prod = -1;
    s_aff kind[S_MAX_PAT];
    /* walk back from the anchor to the product */
    while (n < S_MAX_PAT) {
        if (!s_affine_op(w, cur, &kd[n], &kind[n]))
            return GX_OK;
        chain[n++] = cur;
        const int v = p->steps[cur].in[kd[n - 1]];
        const int d = v >= 0 ? p->values[v].def : -1;
        if (d < 0 || w->dead[d])
            return GX_OK;
        const gx_op op = p->steps[d].op;
        if (op == GX_OP_CONV || op == GX_OP_GEMM || op == GX_OP_MATMUL) {
            prod = d;
            break;
        }
        if (!s_internal(w, v, 1))
            return GX_OK;
        cur = d;
    }
    if (prod < 0)
        return GX_OK;
    /* chain[] runs anchor first: put it in data order */
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        int t = chain[i];
        chain[i] = chain[j], chain[j] = t;
        t = kd[i];
        kd[i] = kd[j], kd[j] = t;
        s_aff k = kind[i];
        kind[i] = kind[j], kind[j] = k;
    }
    const gxd_step *ps = &p->steps[prod], *as = &p->steps[a];
    const int y = ps->out[0];
    const gx_view yv = p->values[y].view;
    char names[256];
    s_names(w, chain, n, names, sizeof names);
    /* near misses: once, from the step next to the product; not for what
     * is by design (a MatMul of two values, a MatMul's bias left to fuse) */
    bool say = n == 1;
    const char *why = NULL;
    if (!s_plain(w, prod))
        why = "it is not a plain static step";
    else if (w->is_out[y])
        why = "its output is a graph output";
    else if (!s_internal(w, y, 1))
        why = "its output has another reader";
    else if (yv.dtype != GX_F32)
        why = "it is not float32";
    else if (!s_cf32(p, ps->in[1]))
        why = "its weights are not a float32 constant", say = say && ps->op != GX_OP_MATMUL;
    else if (ps->op == GX_OP_CONV && ps->n_in > 2 && ps->in[2] >= 0 && !s_cf32(p, ps->in[2]))
        why = "its bias is not a constant";
    else if (ps->op == GX_OP_GEMM && ps->n_in > 2 && ps->in[2] >= 0 &&
             ps->attr[GX_GEMM_BETA].f != 0.0 && !s_cf32(p, ps->in[2]))
        why = "its C is not a constant";
    else if (ps->op == GX_OP_MATMUL && (p->values[ps->in[1]].view.ndim != 2 || yv.ndim < 1))
        why = "its B is not a matrix";
    if (why) {
        if (say)
            s_miss(w, "fold", s_name(as), "%s not folded into %s (%s): %s", names, s_name(ps),
                   gx_op_name(ps->op), why);
        return GX_OK;
    }
    const int ch = ps->op == GX_OP_CONV ? 1 : yv.ndim - 1;
    const int64_t M = yv.shape[ch];
    double *sc = malloc((size_t)(3 * M + 1) * sizeof *sc);
    if (!sc)
        return GX_ENOMEM;
    double *sh = sc + M, *tmp = sh + M;
    int rc = GX_OK;
    const size_t mark = p->n_values;
    gxd_step ns = {0};
    if ((why = s_compose(w, chain, kd, kind, n, &yv, ch, sc, sh, tmp)))
        goto decline;
    bool scales = false, shifts = false;
    for (int64_t m = 0; m < M; m++) {
        scales = scales || sc[m] != 1.0;
        shifts = shifts || sh[m] != 0.0;
    }
    const char *tag = s_name(as);
    int wv = ps->in[1];
    if (ps->op == GX_OP_CONV) {
        int b;
        if ((scales && (rc = s_scaled(w, ps->in[1], 0, sc, tag, &wv)) < 0) ||
            (rc = s_new_const(w, ps->n_in > 2 && ps->in[2] >= 0 ? p->values[ps->in[2]].name
                                                                : s_name(ps),
                              tag, GX_F32, 1, &M, &b)) < 0)
            goto out;
        const float *b0 = ps->n_in > 2 ? s_cf32(p, ps->in[2]) : NULL;
        float *bd = p->values[b].view.data;
        for (int64_t m = 0; m < M; m++)
            bd[m] = (float)((b0 ? (double)b0[m] : 0.0) * sc[m] + sh[m]);
        if ((rc = s_step_like(ps, 3, (const int[]){ps->in[0], wv, b}, as->out[0], &ns)) < 0)
            goto out;
    } else if (ps->op == GX_OP_GEMM) {
        const bool tb = ps->attr[GX_GEMM_TRANSB].i != 0;
        const double beta = ps->attr[GX_GEMM_BETA].f;
        const bool has_c = ps->n_in > 2 && ps->in[2] >= 0 && beta != 0.0;
        if (has_c && !s_per_channel(p, ps->in[2], &yv, 1, tmp)) {
            why = "its C varies along the rows";
            goto decline;
        }
        if (scales && (rc = s_scaled(w, ps->in[1], tb ? 0 : 1, sc, tag, &wv)) < 0)
            goto out;
        int c = -1;
        if (has_c || shifts) {
            if ((rc = s_new_const(w, has_c ? p->values[ps->in[2]].name : s_name(ps), tag, GX_F32,
                                  1, &M, &c)) < 0)
                goto out;
            float *cd = p->values[c].view.data;
            for (int64_t m = 0; m < M; m++)
                cd[m] = (float)((has_c ? beta * tmp[m] : 0.0) * sc[m] + sh[m]);
        }
        if ((rc = s_step_like(ps, c >= 0 ? 3 : 2, (const int[]){ps->in[0], wv, c}, as->out[0],
                              &ns)) < 0)
            goto out;
        ns.attr[GX_GEMM_BETA].f = 1.0;
        ns.attr[GX_GEMM_BETA].set = true;
    } else { /* MatMul */
        const int av = ps->in[0];
        if (shifts && (p->values[av].view.ndim != 2 || yv.ndim != 2)) {
            why = "a bias needs a Gemm, and the product is not 2-D";
            say = false; /* the fuse pass runs the bias as the MatMul's epilogue */
            goto decline;
        }
        if (shifts && !scales && !w->st->lim->no_fuse) {
            why = "a bias alone stays an Add";
            say = false; /* the fuse pass runs it as the MatMul's epilogue: as cheap */
            goto decline;
        }
        if (scales && (rc = s_scaled(w, ps->in[1], 1, sc, tag, &wv)) < 0)
            goto out;
        if (!shifts) {
            rc = s_step_like(ps, 2, (const int[]){av, wv}, as->out[0], &ns);
        } else {
            int c;
            if ((rc = s_new_const(w, s_name(ps), tag, GX_F32, 1, &M, &c)) < 0)
                goto out;
            float *cd = p->values[c].view.data;
            for (int64_t m = 0; m < M; m++)
                cd[m] = (float)sh[m];
            rc = s_step_new(w, GX_OP_GEMM, s_name(ps), 3, (const int[]){av, wv, c}, as->out[0],
                            &ns);
        }
        if (rc < 0)
            goto out;
    }
    if (!s_reinfer(p, &ns)) {
        why = "the folded step does not infer to the same shape";
        goto decline;
    }
    int gone[S_MAX_PAT + 1];
    memcpy(gone, chain, (size_t)(n - 1) * sizeof *gone);
    gone[n - 1] = prod;
    const char *pname = s_name(ps);
    const gx_op pop = ps->op;
    s_pend(w, gone, n, a);
    s_commit(w, a, &ns, gone, n);
    if (pop == p->steps[a].op)
        s_done(w, "fold", pname, "%s folded into %s (%s)", names, pname, gx_op_name(pop));
    else
        s_done(w, "fold", pname, "%s folded into %s (%s, now %s with bias)", names, pname,
               gx_op_name(pop), gx_op_name(p->steps[a].op));
    *hit = true;
    goto out;
decline:
    p->n_values = mark;
    if (say)
        s_miss(w, "fold", s_name(as), "%s not folded into %s (%s): %s", names, s_name(ps),
               gx_op_name(ps->op), why);
out:
    s_step_free(&ns);
    free(sc);
    return rc;
}

/* ---- transpose: a 2-D Transpose into a Gemm's flags ---- */

/* Is step t a plain Transpose swapping the two axes of a matrix? */
static bool s_swap2(const s_rw *w, int t)
{
    const gxd_step *s = &w->p->steps[t];
    const gx_attrval *perm = &s->attr[GX_TRANSPOSE_PERM];
    return w->p->values[s->in[0]].view.ndim == 2 &&
           (perm->n == 0 || (perm->n == 2 && perm->ints[0] == 1 && perm->ints[1] == 0));
}

static int s_rule_transpose(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if ((as->op != GX_OP_GEMM && as->op != GX_OP_MATMUL) || !s_plain(w, a) || as->n_in < 2)
        return GX_OK;
    if (as->op == GX_OP_MATMUL && (p->values[as->in[0]].view.ndim != 2 ||
                                   p->values[as->in[1]].view.ndim != 2))
        return GX_OK;
    int t[2] = {-1, -1}, gone[2], n_gone = 0;
    for (int k = 0; k < 2; k++) {
        const int v = as->in[k];
        const int d = s_prod(w, v, GX_OP_TRANSPOSE);
        if (d < 0 || !s_swap2(w, d) || (as->n_in > 2 && as->in[2] == v))
            continue;
        if (!s_internal(w, v, s_count(as, v))) {
            s_miss(w, "transpose", s_name(as), "%s (Transpose) not absorbed into %s: %s",
                   s_name(&p->steps[d]), s_name(as),
                   w->is_out[v] ? "its output is a graph output" : "its output has another reader");
            continue;
        }
        t[k] = d;
        if (!n_gone || gone[0] != d)
            gone[n_gone++] = d;
    }
    if (!n_gone)
        return GX_OK;
    gxd_step ns;
    int in[3] = {as->in[0], as->in[1], as->n_in > 2 ? as->in[2] : -1};
    for (int k = 0; k < 2; k++)
        if (t[k] >= 0)
            in[k] = p->steps[t[k]].in[0];
    int rc = as->op == GX_OP_GEMM ? s_step_like(as, as->n_in, in, as->out[0], &ns)
                                  : s_step_new(w, GX_OP_GEMM, s_name(as), 2, in, as->out[0], &ns);
    if (rc < 0) {
        s_step_free(&ns);
        return rc;
    }
    for (int k = 0; k < 2; k++) {
        if (t[k] < 0)
            continue;
        gx_attrval *f = &ns.attr[k ? GX_GEMM_TRANSB : GX_GEMM_TRANSA];
        f->i = !f->i;
        f->set = true;
    }
    if (!s_reinfer(p, &ns)) {
        s_step_free(&ns);
        return GX_OK;
    }
    char names[160];
    s_names(w, gone, n_gone, names, sizeof names);
    const gx_op was = as->op;
    s_pend(w, gone, n_gone, a);
    s_commit(w, a, &ns, gone, n_gone);
    const gxd_step *s = &p->steps[a];
    s_done(w, "transpose", s_name(s), "%s (Transpose) absorbed into %s (%s%s, transA=%d transB=%d)",
           names, s_name(s), gx_op_name(was), was == GX_OP_GEMM ? "" : ", now Gemm",
           (int)s->attr[GX_GEMM_TRANSA].i, (int)s->attr[GX_GEMM_TRANSB].i);
    *hit = true;
    return GX_OK;
}

/* *ns = a new Reshape (step `node`) of x to y's shape (a new int64
 * constant "<node>+shape"), writing y; *ok when it infers to y. When it
 * does not, the constant is taken back. GX_ENOMEM, or GX_OK. */
static int s_reshape_to(s_rw *w, const char *node, int x, int y, gxd_step *ns, bool *ok)
{
    gxd_plan *p = w->p;
    const size_t mark = p->n_values;
    const gx_view yv = p->values[y].view; /* a copy: s_new_const may move the values */
    const int64_t r = yv.ndim;
    int shape, rc;
    *ok = false;
    if ((rc = s_new_const(w, node, "shape", GX_I64, 1, &r, &shape)) == GX_OK) {
        memcpy(p->values[shape].view.data, yv.shape, (size_t)r * sizeof *yv.shape);
        rc = s_step_new(w, GX_OP_RESHAPE, node, 2, (const int[]){x, shape}, y, ns);
    }
    if (rc == GX_OK && !(*ok = s_reinfer(p, ns)))
        p->n_values = mark;
    return rc;
}

/* ---- permute: Transposes of Transposes, and ones that only reshape ---- */

/* Step s's perm (the reverse when it has none) into pm; its rank. */
static int s_perm(const gxd_plan *p, const gxd_step *s, int *pm)
{
    const gx_attrval *perm = &s->attr[GX_TRANSPOSE_PERM];
    const int rank = p->values[s->in[0]].view.ndim;
    for (int d = 0; d < rank; d++)
        pm[d] = perm->set ? (int)perm->ints[d] : rank - 1 - d;
    return rank;
}

static int s_rule_permute(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if (as->op != GX_OP_TRANSPOSE || !s_plain(w, a))
        return GX_OK;
    const int v = as->in[0], y = as->out[0], t = s_prod(w, v, GX_OP_TRANSPOSE);
    int pa[GX_MAX_DIMS], pt[GX_MAX_DIMS], q[GX_MAX_DIMS];
    const int rank = s_perm(p, as, pa);
    gxd_step ns = {0};
    int rc = GX_OK;
    const char *node = s_name(as);
    if (t >= 0 && s_internal(w, v, 1)) {
        /* y[i] = v[pa[i]] = x[pt[pa[i]]]: one Transpose, or none */
        s_perm(p, &p->steps[t], pt);
        bool ident = true;
        for (int i = 0; i < rank; i++)
            ident &= (q[i] = pt[pa[i]]) == i;
        const int x = p->steps[t].in[0];
        int64_t *ints = ident ? NULL : gxd_plan_own(p, (size_t)rank * sizeof *ints);
        if (!ident && !ints)
            return GX_ENOMEM;
        rc = ident ? s_step_new(w, GX_OP_IDENTITY, node, 1, &x, y, &ns)
                   : s_step_like(as, 1, &x, y, &ns);
        for (int i = 0; i < rank && ints; i++)
            ints[i] = q[i];
        if (ints)
            ns.attr[GX_TRANSPOSE_PERM] = (gx_attrval){.set = true, .ints = ints, .n = (size_t)rank};
        if (rc == GX_OK && s_reinfer(p, &ns)) {
            char names[160];
            s_names(w, (const int[]){t, a}, 2, names, sizeof names);
            s_pend(w, &t, 1, a);
            s_commit(w, a, &ns, &t, 1);
            s_done(w, "permute", s_name(&p->steps[a]), ident ? "%s (Transposes) cancel out"
                                                             : "%s (Transposes) became one",
                   names);
            *hit = true;
        }
        s_step_free(&ns);
        return rc;
    }
    /* only dims of 1 move: the elements keep their order */
    const gx_view *xv = &p->values[v].view;
    for (int i = 0, last = -1; i < rank; i++) {
        if (xv->shape[pa[i]] == 1)
            continue;
        if (pa[i] < last)
            return GX_OK;
        last = pa[i];
    }
    bool ok;
    if ((rc = s_reshape_to(w, node, v, y, &ns, &ok)) == GX_OK && ok) {
        s_pend(w, NULL, 0, a);
        s_commit(w, a, &ns, NULL, 0);
        s_done(w, "permute", s_name(&p->steps[a]),
               "%s (Transpose) moves only dims of 1: a Reshape", s_name(&p->steps[a]));
        *hit = true;
    }
    s_step_free(&ns);
    return rc;
}

/* ---- reduce: a Transpose feeding a reduction ---- */

/* Is op one of the Reduce* ops (ops/op.h's family)? */
static bool s_reduce_op(gx_op op)
{
#define S_IS(e, name) || op == GX_OP_##e
    return false GX_OPS_REDUCE(S_IS);
#undef S_IS
}

/* The reduction reads x itself, over the dims the Transpose moved its
 * axes from; what is left of x (all of its dims, reduced ones 1, with
 * keepdims) is transposed after it, unless no dim moves. */
static int s_rule_reduce(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if (!s_reduce_op(as->op) || !s_plain(w, a) || as->n_in < 1)
        return GX_OK;
    const int v = as->in[0], t = s_prod(w, v, GX_OP_TRANSPOSE);
    if (t < 0)
        return GX_OK;
    const gxd_step *ts = &p->steps[t];
    gx_view in[2] = {p->values[v].view, {.ndim = -1}};
    if (as->n_in > 1 && as->in[1] >= 0 && !(in[1] = p->values[as->in[1]].view).data)
        return GX_OK; /* axes known at run time only */
    bool mask[GX_MAX_DIMS];
    char err[160];
    if (gx_reduce_mask(gx_op_name(as->op), as->attr, as->n_in, in, mask, err, sizeof err) < 0)
        return GX_OK;
    if (!s_internal(w, v, s_count(as, v))) {
        s_miss(w, "reduce", s_name(as), "%s (Transpose) not moved after %s: %s", s_name(ts),
               s_name(as),
               w->is_out[v] ? "its output is a graph output" : "its output has another reader");
        return GX_OK;
    }
    const gx_view *xv = &p->values[ts->in[0]].view;
    const bool keep = as->attr[GX_REDUCE_KEEPDIMS].i != 0;
    int pm[GX_MAX_DIMS], nred = 0, nkept = 0;
    const int rank = s_perm(p, ts, pm);
    bool xmask[GX_MAX_DIMS] = {false};
    for (int d = 0; d < rank; d++) {
        if (mask[d])
            xmask[pm[d]] = true, nred++;
    }
    if (!nred)
        return GX_OK;
    /* the Transpose after: keepdims keeps every dim, so perm again;
     * otherwise the kept dims' order in y (pm[i], i kept) as ranks */
    int64_t after[GX_MAX_DIMS];
    bool moves = false;
    for (int i = 0; i < rank; i++) {
        if (keep) {
            after[nkept++] = pm[i];
            moves |= xv->shape[pm[i]] != 1 && pm[i] != i && !mask[i];
            continue;
        }
        if (mask[i])
            continue;
        int r = 0;
        for (int j = 0; j < rank; j++)
            r += !mask[j] && pm[j] < pm[i];
        after[nkept] = r;
        moves |= r != nkept++;
    }
    int64_t *axes = gxd_plan_own(p, (size_t)nred * sizeof *axes);
    int64_t *aperm = gxd_plan_own(p, (size_t)(nkept ? nkept : 1) * sizeof *aperm);
    if (!axes || !aperm)
        return GX_ENOMEM;
    for (int d = 0, n = 0; d < rank; d++)
        if (xmask[d])
            axes[n++] = d;
    memcpy(aperm, after, (size_t)nkept * sizeof *aperm);
    const int y = as->out[0];
    /* (with keepdims and only dims of 1 moving, the Transpose after is a
     * copy of the reduced values) */
    gxd_step ns1, ns2 = {0};
    const int x = ts->in[0];
    int rc = s_step_like(as, 1, &x, moves || keep ? v : y, &ns1);
    if (rc < 0) {
        s_step_free(&ns1);
        return rc;
    }
    ns1.attr[GX_REDUCE_AXES] = (gx_attrval){.set = true, .ints = axes, .n = (size_t)nred};
    if (!(moves || keep)) {
        if (!s_reinfer(p, &ns1)) {
            s_step_free(&ns1);
            return GX_OK;
        }
        s_pend(w, &t, 1, a);
        s_commit(w, a, &ns1, &t, 1);
        s_done(w, "reduce", s_name(&p->steps[a]),
               "%s (Transpose) removed: %s reduces its input over the same elements",
               s_name(&p->steps[t]), s_name(&p->steps[a]));
        *hit = true;
        return GX_OK;
    }
    /* v becomes what is left of x, read by the Transpose after */
    gxd_value *vv = &p->values[v];
    const gx_view was = vv->view;
    const size_t was_bytes = vv->nbytes;
    vv->view.numel = 1;
    for (int d = 0, n = 0; d < rank; d++) {
        if (xmask[d] && !keep)
            continue;
        vv->view.numel *= vv->view.shape[n++] = xmask[d] ? 1 : xv->shape[d];
    }
    vv->view.ndim = keep ? rank : rank - nred;
    vv->nbytes = (size_t)vv->view.numel * gx_dtype_size(vv->view.dtype);
    if ((rc = s_step_like(ts, 1, &v, y, &ns2)) < 0 ||
        !s_reinfer(p, &ns1) ||
        ((ns2.attr[GX_TRANSPOSE_PERM] = (gx_attrval){.set = true, .ints = aperm,
                                                     .n = (size_t)nkept}),
         !s_reinfer(p, &ns2))) {
        vv->view = was;
        vv->nbytes = was_bytes;
        s_step_free(&ns1);
        s_step_free(&ns2);
        return rc < 0 ? rc : GX_OK;
    }
    s_pend(w, &t, 1, a);
    s_commit(w, t, &ns1, NULL, 0);
    s_commit(w, a, &ns2, NULL, 0);
    s_done(w, "reduce", s_name(&p->steps[t]),
           "%s (Transpose) moved after %s, which reduces its input (%lld of %lld elements "
           "transposed)",
           s_name(&p->steps[a]), s_name(&p->steps[t]), (long long)vv->view.numel,
           (long long)p->values[p->steps[t].in[0]].view.numel);
    *hit = true;
    return GX_OK;
}

/* ---- reshape: chains of ops that only reshape ---- */

static bool s_reshape_op(gx_op op)
{
    return op == GX_OP_RESHAPE || op == GX_OP_FLATTEN || op == GX_OP_SQUEEZE ||
           op == GX_OP_UNSQUEEZE || op == GX_OP_IDENTITY;
}

/* Readers of v (steps after `from`, its producer) read u instead (v is
 * no graph output). */
static void s_redirect(s_rw *w, int v, int u, int from)
{
    gxd_plan *p = w->p;
    for (size_t i = (size_t)from + 1; i < w->n; i++) {
        if (w->dead[i])
            continue;
        gxd_step *s = &p->steps[i];
        for (int k = 0; k < s->n_in; k++)
            if (s->in[k] == v) {
                s->in[k] = u;
                w->reads[v]--;
                w->reads[u]++;
            }
    }
}

/* Does a control-flow step after `from` (v's producer) read v (a value
 * its subgraphs capture)? */
static bool s_captured(const s_rw *w, int v, int from)
{
    for (size_t i = (size_t)from + 1; i < w->n; i++)
        if (!w->dead[i] && w->p->steps[i].n_in != w->p->steps[i].n_formal &&
            s_count(&w->p->steps[i], v))
            return true;
    return false;
}

static int s_rule_reshape(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    if (!s_reshape_op(p->steps[a].op) || !s_plain(w, a))
        return GX_OK;
    int chain[S_MAX_PAT], n = 0, cur = a;
    for (;;) {
        chain[n++] = cur;
        const int v = p->steps[cur].in[0];
        const int d = v >= 0 ? p->values[v].def : -1;
        if (n == S_MAX_PAT || d < 0 || w->dead[d] || !s_reshape_op(p->steps[d].op) ||
            !s_plain(w, d) || !s_internal(w, v, 1))
            break;
        cur = d;
    }
    const int x = p->steps[chain[n - 1]].in[0], y = p->steps[a].out[0];
    const gx_view xv = p->values[x].view, yv = p->values[y].view;
    char names[256];
    s_names(w, chain, n, names, sizeof names);
    const char *node = s_name(&p->steps[a]);
    if (xv.dtype != yv.dtype || xv.numel != yv.numel || xv.layout != yv.layout)
        return GX_OK;
    if (s_same_shape(&xv, &yv) && !w->is_out[y] && !s_captured(w, y, a)) {
        char sh[160];
        s_pend(w, chain, n, -1);
        s_redirect(w, y, x, a);
        for (int i = 0; i < n; i++) {
            gxd_step *s = &p->steps[chain[i]];
            s_read(w, s, -1);
            p->flops -= s->cost.flops;
            s_gone(w, s->out[0], -1);
            s_step_free(s);
            w->dead[chain[i]] = true;
            w->into[chain[i]] = -1;
        }
        w->changed = true;
        s_done(w, "reshape", node, "%s dropped: %s keeps the shape %s of %s", names,
               p->values[y].name, gx_shape_str(yv.ndim, yv.shape, sh, sizeof sh),
               p->values[x].name);
        *hit = true;
        return GX_OK;
    }
    if (n < 2 || yv.numel == 0)
        return GX_OK;
    gxd_step ns = {0};
    bool ok;
    const int rc = s_reshape_to(w, node, x, y, &ns, &ok);
    if (rc == GX_OK && ok) {
        char sh[160];
        s_pend(w, chain, n, -1);
        s_commit(w, a, &ns, chain + 1, n - 1);
        s_done(w, "reshape", node, "%s became one Reshape to %s", names,
               gx_shape_str(yv.ndim, yv.shape, sh, sizeof sh));
        *hit = true;
    }
    s_step_free(&ns);
    return rc;
}

/* ---- patterns: LayerNormalization, Gelu, HardSwish ---- */

/* Steps of a pattern found so far (the anchor not among them), and the
 * first check that failed once its core was found. */
typedef struct s_pat {
    int step[S_MAX_PAT];
    int n;
    int core; /* the step that makes it this pattern (Erf, Clip...) */
    bool bad;
    char why[200];
} s_pat;

/* Records the near miss m once per pattern: from the longest anchor,
 * the first to look at its core in a round. */
static void s_pat_miss(s_rw *w, const s_pat *m, const char *rule, const char *node, gx_op op)
{
    if (m->core >= 0 && w->missed[m->core])
        return;
    if (m->core >= 0)
        w->missed[m->core] = true;
    s_miss(w, rule, node, "not one %s: %s", gx_op_name(op), m->why);
}

static bool s_pat_add(s_pat *m, int i)
{
    if (i < 0)
        return false;
    for (int k = 0; k < m->n; k++)
        if (m->step[k] == i)
            return true;
    if (m->n == S_MAX_PAT)
        return false;
    m->step[m->n++] = i;
    return true;
}

static void s_pat_fail(s_pat *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_pat_fail(s_pat *m, const char *fmt, ...)
{
    if (m->bad)
        return;
    m->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
}

/* Constant v, found where the pattern needs `want` (exactly, or to float
 * precision when !exact). */
static void s_pat_const(s_pat *m, const gxd_plan *p, int v, double want, bool exact,
                        const char *what)
{
    double c;
    if (!s_scalar(p, v, &c))
        s_pat_fail(m, "%s is not a scalar constant", what);
    else if (exact ? c != want : !s_near(c, want))
        s_pat_fail(m, "%s is %.9g, not %.9g", what, c, want);
}

/* Which input of binary step s is a scalar constant: 0 or 1, else -1. */
static int s_scalar_side(const gxd_plan *p, const gxd_step *s)
{
    double c;
    if (s->n_in != 2)
        return -1;
    const bool c0 = s_scalar(p, s->in[0], &c), c1 = s_scalar(p, s->in[1], &c);
    return c0 == c1 ? -1 : c0 ? 0 : 1;
}

/* Every value the pattern's steps make is read only by them (and the
 * anchor a) and is no graph output. */
static void s_pat_closed(const s_rw *w, int a, s_pat *m)
{
    const gxd_plan *p = w->p;
    for (int i = 0; i < m->n && !m->bad; i++) {
        const int v = p->steps[m->step[i]].out[0];
        int expect = s_count(&p->steps[a], v);
        for (int j = 0; j < m->n; j++)
            expect += s_count(&p->steps[m->step[j]], v);
        if (w->is_out[v])
            s_pat_fail(m, "%s is a graph output", p->values[v].name);
        else if (w->reads[v] != expect)
            s_pat_fail(m, "%s has a reader outside the pattern", p->values[v].name);
    }
}

/* Replaces the pattern (m's steps and anchor a) by ns; records it. */
static void s_pat_commit(s_rw *w, int a, s_pat *m, gxd_step *ns, const char *rule)
{
    int all[S_MAX_PAT + 1];
    memcpy(all, m->step, (size_t)m->n * sizeof *all);
    all[m->n] = a;
    char names[320];
    s_names(w, all, m->n + 1, names, sizeof names);
    const char *node = s_name(&w->p->steps[a]);
    s_pend(w, all, m->n + 1, -1);
    s_commit(w, a, ns, m->step, m->n);
    s_done(w, rule, node, "%s became one %s", names, gx_op_name(w->p->steps[a].op));
}

/* The first axis of ReduceMean step r when it reduces trailing axes only
 * (at least one) with keepdims, else -1. */
static int s_trailing_mean(const gxd_plan *p, int r)
{
    const gxd_step *s = &p->steps[r];
    gx_view in[2];
    bool mask[GX_MAX_DIMS];
    char err[160];
    for (int i = 0; i < 2; i++) {
        memset(&in[i], 0, sizeof in[i]);
        in[i].ndim = -1;
        if (i < s->n_in && s->in[i] >= 0)
            in[i] = p->values[s->in[i]].view;
    }
    if (s->attr[GX_REDUCE_KEEPDIMS].i == 0 ||
        gx_reduce_mask("ReduceMean", s->attr, s->n_in, in, mask, err, sizeof err) < 0)
        return -1;
    int first = in[0].ndim;
    while (first > 0 && mask[first - 1])
        first--;
    for (int i = 0; i < first; i++)
        if (mask[i])
            return -1;
    return first < in[0].ndim ? first : -1;
}

/* Anchor a: Add beta, Mul gamma or the Div of a spelled-out
 * LayerNormalization. */
static int s_rule_layernorm(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if ((as->op != GX_OP_ADD && as->op != GX_OP_MUL && as->op != GX_OP_DIV) || as->n_in != 2)
        return GX_OK;
    s_pat m = {.n = 0, .core = -1};
    int cur = a, gamma = -1, beta = -1;
    if (as->op == GX_OP_ADD) {
        const int kc = s_cf32(p, as->in[0]) ? 0 : s_cf32(p, as->in[1]) ? 1 : -1;
        if (kc < 0)
            return GX_OK;
        beta = as->in[kc];
        const int v = as->in[1 - kc];
        if ((cur = s_prod(w, v, GX_OP_MUL)) < 0 && (cur = s_prod(w, v, GX_OP_DIV)) < 0)
            return GX_OK;
        s_pat_add(&m, cur);
    }
    if (p->steps[cur].op == GX_OP_MUL) {
        const gxd_step *ms = &p->steps[cur];
        const int kc = ms->n_in != 2            ? -1
                       : s_cf32(p, ms->in[0]) ? 0
                       : s_cf32(p, ms->in[1]) ? 1
                                              : -1;
        if (kc < 0)
            return GX_OK;
        gamma = ms->in[kc];
        if ((cur = s_prod(w, ms->in[1 - kc], GX_OP_DIV)) < 0)
            return GX_OK;
        s_pat_add(&m, cur);
    }
    if (p->steps[cur].op != GX_OP_DIV)
        return GX_OK;
    m.core = cur;
    /* Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps))), d = Sub(x, ReduceMean(x)) */
    const gxd_step *dv = &p->steps[cur];
    const int d = dv->in[0];
    const int sq = s_prod(w, dv->in[1], GX_OP_SQRT);
    const int ad = sq >= 0 ? s_prod(w, p->steps[sq].in[0], GX_OP_ADD) : -1;
    const int ke = ad >= 0 ? s_scalar_side(p, &p->steps[ad]) : -1;
    const int rv = ke >= 0 ? s_prod(w, p->steps[ad].in[1 - ke], GX_OP_REDUCE_MEAN) : -1;
    const int sv = rv >= 0 ? p->steps[rv].in[0] : -1;
    const int pw = sv >= 0 ? s_prod(w, sv, GX_OP_POW) : -1;
    const int sqm = sv >= 0 && pw < 0 ? s_prod(w, sv, GX_OP_MUL) : -1;
    const int sb = s_prod(w, d, GX_OP_SUB);
    const int rm = sb >= 0 ? s_prod(w, p->steps[sb].in[1], GX_OP_REDUCE_MEAN) : -1;
    if (rv < 0 || (pw < 0 && sqm < 0) || rm < 0)
        return GX_OK;
    const int x = p->steps[sb].in[0];
    if (p->steps[rm].in[0] != x)
        return GX_OK;
    if (pw >= 0 ? p->steps[pw].in[0] != d
                : p->steps[sqm].in[0] != d || p->steps[sqm].in[1] != d)
        return GX_OK;
    /* the core is there: from here on, a failed check is a near miss */
    s_pat_add(&m, sq), s_pat_add(&m, ad), s_pat_add(&m, rv), s_pat_add(&m, pw >= 0 ? pw : sqm);
    s_pat_add(&m, sb), s_pat_add(&m, rm);
    if (pw >= 0)
        s_pat_const(&m, p, p->steps[pw].in[1], 2.0, true, "the exponent");
    const int axes[2] = {s_trailing_mean(p, rm), s_trailing_mean(p, rv)};
    if (axes[0] < 0 || axes[1] != axes[0])
        s_pat_fail(&m, "the means are not over the same trailing axes with keepdims");
    double eps = 0;
    if (!s_scalar(p, p->steps[ad].in[ke], &eps) || !isfinite(eps))
        s_pat_fail(&m, "epsilon is not a finite scalar constant");
    if (p->values[x].view.dtype != GX_F32)
        s_pat_fail(&m, "%s is not float32", p->values[x].name);
    s_pat_closed(w, a, &m);
    const char *node = s_name(as);
    if (m.bad) {
        s_pat_miss(w, &m, "layernorm", node, GX_OP_LAYERNORM);
        return GX_OK;
    }
    const gx_view xv = p->values[x].view;
    const size_t mark = p->n_values;
    gxd_step ns = {0};
    int rc = GX_OK;
    if (gamma < 0) {
        if ((rc = s_new_const(w, node, "ones", GX_F32, xv.ndim - axes[0], xv.shape + axes[0],
                              &gamma)) < 0)
            return rc;
        float *g = p->values[gamma].view.data;
        for (int64_t i = 0; i < p->values[gamma].view.numel; i++)
            g[i] = 1.0f;
    }
    if ((rc = s_step_new(w, GX_OP_LAYERNORM, node, beta >= 0 ? 3 : 2,
                         (const int[]){x, gamma, beta}, as->out[0], &ns)) < 0) {
        s_step_free(&ns);
        return rc;
    }
    ns.attr[GX_LAYERNORM_AXIS] = (gx_attrval){.set = true, .i = axes[0]};
    ns.attr[GX_LAYERNORM_EPSILON] = (gx_attrval){.set = true, .f = eps};
    if (!s_reinfer(p, &ns)) {
        p->n_values = mark;
        s_step_free(&ns);
        snprintf(m.why, sizeof m.why, "gamma or beta does not fit the normalised shape");
        s_pat_miss(w, &m, "layernorm", node, GX_OP_LAYERNORM);
        return GX_OK;
    }
    s_pat_commit(w, a, &m, &ns, "layernorm");
    *hit = true;
    return GX_OK;
}

/* Anchor a: Mul gamma, or the normalising step, of a spelled-out
 * RMSNormalization: x * Reciprocal(S) (or Div(1, S)), or Div(x, S), S =
 * Sqrt(Add(ReduceMean(Pow(x, 2) or x * x), eps)) over trailing axes. */
static int s_rule_rmsnorm(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if ((as->op != GX_OP_MUL && as->op != GX_OP_DIV) || as->n_in != 2)
        return GX_OK;
    s_pat m = {.n = 0, .core = -1};
    int nrm = a, gamma = -1;
    if (as->op == GX_OP_MUL) { /* Mul gamma: the other side is normalised */
        const int kc = s_cf32(p, as->in[0]) ? 0 : s_cf32(p, as->in[1]) ? 1 : -1;
        const int v = kc >= 0 ? as->in[1 - kc] : -1;
        const int d = v >= 0 && s_prod(w, v, GX_OP_MUL) >= 0 ? s_prod(w, v, GX_OP_MUL)
                                                            : s_prod(w, v, GX_OP_DIV);
        if (d >= 0) {
            gamma = as->in[kc];
            nrm = d;
            s_pat_add(&m, d);
        }
    }
    /* x * R or Div(x, S) */
    const gxd_step *ns = &p->steps[nrm];
    int x = -1, sq = -1, rc1 = -1;
    if (ns->op == GX_OP_DIV) {
        x = ns->in[0];
        sq = s_prod(w, ns->in[1], GX_OP_SQRT);
    } else {
        for (int k = 0; k < 2 && sq < 0; k++) {
            const int r = ns->in[k];
            double one = 0;
            rc1 = s_prod(w, r, GX_OP_RECIPROCAL);
            if (rc1 < 0 && (rc1 = s_prod(w, r, GX_OP_DIV)) >= 0 &&
                !(s_scalar(p, p->steps[rc1].in[0], &one) && one == 1.0))
                rc1 = -1;
            if (rc1 >= 0) {
                x = ns->in[1 - k];
                sq = s_prod(w, p->steps[rc1].in[p->steps[rc1].op == GX_OP_DIV ? 1 : 0],
                            GX_OP_SQRT);
            }
        }
    }
    const int ad = sq >= 0 ? s_prod(w, p->steps[sq].in[0], GX_OP_ADD) : -1;
    const int ke = ad >= 0 ? s_scalar_side(p, &p->steps[ad]) : -1;
    const int rv = ke >= 0 ? s_prod(w, p->steps[ad].in[1 - ke], GX_OP_REDUCE_MEAN) : -1;
    const int sv = rv >= 0 ? p->steps[rv].in[0] : -1;
    const int pw = sv >= 0 ? s_prod(w, sv, GX_OP_POW) : -1;
    const int sqm = sv >= 0 && pw < 0 ? s_prod(w, sv, GX_OP_MUL) : -1;
    if (rv < 0 || (pw < 0 && sqm < 0))
        return GX_OK;
    if (pw >= 0 ? p->steps[pw].in[0] != x
                : p->steps[sqm].in[0] != x || p->steps[sqm].in[1] != x)
        return GX_OK;
    /* the core is there: from here on, a failed check is a near miss */
    m.core = rv;
    if (nrm != a)
        s_pat_add(&m, nrm);
    if (rc1 >= 0)
        s_pat_add(&m, rc1);
    s_pat_add(&m, sq), s_pat_add(&m, ad), s_pat_add(&m, rv), s_pat_add(&m, pw >= 0 ? pw : sqm);
    if (pw >= 0)
        s_pat_const(&m, p, p->steps[pw].in[1], 2.0, true, "the exponent");
    const int axis = s_trailing_mean(p, rv);
    if (axis < 0)
        s_pat_fail(&m, "the mean is not over trailing axes with keepdims");
    double eps = 0;
    if (!s_scalar(p, p->steps[ad].in[ke], &eps) || !isfinite(eps))
        s_pat_fail(&m, "epsilon is not a finite scalar constant");
    if (p->values[x].view.dtype != GX_F32)
        s_pat_fail(&m, "%s is not float32", p->values[x].name);
    s_pat_closed(w, a, &m);
    const char *node = s_name(as);
    if (m.bad) {
        s_pat_miss(w, &m, "rmsnorm", node, GX_OP_RMSNORM);
        return GX_OK;
    }
    const gx_view xv = p->values[x].view;
    const size_t mark = p->n_values;
    int rc = GX_OK;
    if (gamma < 0) {
        if ((rc = s_new_const(w, node, "ones", GX_F32, xv.ndim - axis, xv.shape + axis,
                              &gamma)) < 0)
            return rc;
        float *g = p->values[gamma].view.data;
        for (int64_t i = 0; i < p->values[gamma].view.numel; i++)
            g[i] = 1.0f;
    }
    gxd_step st = {0};
    if ((rc = s_step_new(w, GX_OP_RMSNORM, node, 2, (const int[]){x, gamma}, as->out[0], &st)) <
        0) {
        s_step_free(&st);
        return rc;
    }
    st.attr[GX_RMSNORM_AXIS] = (gx_attrval){.set = true, .i = axis};
    st.attr[GX_RMSNORM_EPSILON] = (gx_attrval){.set = true, .f = eps};
    if (!s_reinfer(p, &st)) {
        p->n_values = mark;
        s_step_free(&st);
        snprintf(m.why, sizeof m.why, "gamma does not fit the normalised shape");
        s_pat_miss(w, &m, "rmsnorm", node, GX_OP_RMSNORM);
        return GX_OK;
    }
    s_pat_commit(w, a, &m, &st, "rmsnorm");
    *hit = true;
    return GX_OK;
}

/* A product of three factors at anchor a: f[0] * f[1] * k, k a scalar
 * constant, inner the other Mul or Div (-1: a plain Mul of two, k 1). */
typedef struct s_prod3 {
    int f[2];
    double k;
    int inner;
} s_prod3;

/* The readings of anchor a (Mul or Div) as such a product: at most 3. */
static int s_products(const s_rw *w, int a, s_prod3 *out)
{
    const gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    int n = 0;
    double c;
    if (as->n_in != 2 || as->in[0] < 0 || as->in[1] < 0)
        return 0;
    if (as->op == GX_OP_MUL) {
        if (!s_scalar(p, as->in[0], &c) && !s_scalar(p, as->in[1], &c))
            out[n++] = (s_prod3){{as->in[0], as->in[1]}, 1.0, -1};
        for (int i = 0; i < 2; i++) {
            const int P = as->in[i], Q = as->in[1 - i];
            if (!s_internal(w, P, s_count(as, P)) || s_count(as, P) != 1)
                continue;
            int in = s_prod(w, P, GX_OP_MUL);
            if (in < 0)
                in = s_prod(w, P, GX_OP_DIV);
            if (in < 0 || p->steps[in].n_in != 2)
                continue;
            const gxd_step *is = &p->steps[in];
            const int v[3] = {Q, is->in[0], is->in[1]};
            double k[3];
            bool isk[3];
            for (int j = 0; j < 3; j++)
                isk[j] = s_scalar(p, v[j], &k[j]);
            if (is->op == GX_OP_DIV) { /* Q * (C / k) */
                if (!isk[0] && !isk[1] && isk[2] && k[2] != 0.0)
                    out[n++] = (s_prod3){{Q, is->in[0]}, 1.0 / k[2], in};
                continue;
            }
            if (isk[0] + isk[1] + isk[2] != 1)
                continue;
            const int j = isk[0] ? 0 : isk[1] ? 1 : 2;
            out[n++] = (s_prod3){{v[j == 0 ? 1 : 0], v[j == 2 ? 1 : 2]}, k[j], in};
        }
    } else if (as->op == GX_OP_DIV && s_scalar(p, as->in[1], &c) && c != 0.0) {
        const int P = as->in[0];
        const int in = s_prod(w, P, GX_OP_MUL);
        if (in >= 0 && s_internal(w, P, 1) && p->steps[in].n_in == 2 &&
            !s_scalar(p, p->steps[in].in[0], &c) && !s_scalar(p, p->steps[in].in[1], &c)) {
            s_scalar(p, as->in[1], &c);
            out[n++] = (s_prod3){{p->steps[in].in[0], p->steps[in].in[1]}, 1.0 / c, in};
        }
    }
    return n;
}

/* Which input of binary step s is value v: 0 or 1, else -1 (also when
 * both are). */
static int s_side(const gxd_step *s, int v)
{
    if (s->n_in != 2 || (s->in[0] == v) == (s->in[1] == v))
        return -1;
    return s->in[0] == v ? 0 : 1;
}

/* t = 1 + Erf(x / sqrt 2) or 1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)):
 * adds its steps to m and returns the approximation ("none", "tanh"), or
 * NULL when t is not made so from x. */
static const char *s_gelu_core(const s_rw *w, int t, int x, s_pat *m)
{
    const gxd_plan *p = w->p;
    const int ad = s_prod(w, t, GX_OP_ADD);
    const int k1 = ad >= 0 ? s_scalar_side(p, &p->steps[ad]) : -1;
    if (k1 < 0)
        return NULL;
    const int T = p->steps[ad].in[1 - k1];
    const int er = s_prod(w, T, GX_OP_ERF), th = s_prod(w, T, GX_OP_TANH);
    if (er >= 0) {
        m->core = er;
        const int u = p->steps[er].in[0];
        const int dv = s_prod(w, u, GX_OP_DIV), ml = s_prod(w, u, GX_OP_MUL);
        if (dv >= 0 && p->steps[dv].in[0] == x && s_scalar_side(p, &p->steps[dv]) == 1) {
            s_pat_add(m, ad), s_pat_add(m, er), s_pat_add(m, dv);
            s_pat_const(m, p, p->steps[dv].in[1], sqrt(2.0), false, "the divisor of x");
        } else if (ml >= 0 && s_side(&p->steps[ml], x) >= 0 &&
                   s_scalar_side(p, &p->steps[ml]) == 1 - s_side(&p->steps[ml], x)) {
            s_pat_add(m, ad), s_pat_add(m, er), s_pat_add(m, ml);
            s_pat_const(m, p, p->steps[ml].in[1 - s_side(&p->steps[ml], x)], sqrt(0.5), false,
                        "the factor of x");
        } else {
            return NULL;
        }
        s_pat_const(m, p, p->steps[ad].in[k1], 1.0, true, "the constant added to Erf");
        return "none";
    }
    if (th < 0)
        return NULL;
    /* Tanh(c1 * (x + c2 * x^3)), x^3 as Pow(x, 3) or x * (x * x) */
    const int m1 = s_prod(w, p->steps[th].in[0], GX_OP_MUL);
    const int c1 = m1 >= 0 ? s_scalar_side(p, &p->steps[m1]) : -1;
    const int a2 = c1 >= 0 ? s_prod(w, p->steps[m1].in[1 - c1], GX_OP_ADD) : -1;
    const int sx = a2 >= 0 ? s_side(&p->steps[a2], x) : -1;
    const int m2 = sx >= 0 ? s_prod(w, p->steps[a2].in[1 - sx], GX_OP_MUL) : -1;
    const int c2 = m2 >= 0 ? s_scalar_side(p, &p->steps[m2]) : -1;
    const int cube = c2 >= 0 ? p->steps[m2].in[1 - c2] : -1;
    if (cube < 0)
        return NULL;
    const int pw = s_prod(w, cube, GX_OP_POW), m3 = s_prod(w, cube, GX_OP_MUL);
    int m4 = -1;
    if (pw >= 0) {
        if (p->steps[pw].in[0] != x)
            return NULL;
    } else if (m3 >= 0) { /* x * (x * x), either way round */
        const gxd_step *s3 = &p->steps[m3];
        const int sx3 = s_side(s3, x);
        m4 = sx3 >= 0 ? s_prod(w, s3->in[1 - sx3], GX_OP_MUL) : -1;
        if (m4 < 0 || p->steps[m4].in[0] != x || p->steps[m4].in[1] != x)
            return NULL;
    } else {
        return NULL;
    }
    m->core = th;
    s_pat_add(m, ad), s_pat_add(m, th), s_pat_add(m, m1), s_pat_add(m, a2), s_pat_add(m, m2);
    s_pat_add(m, pw >= 0 ? pw : m3);
    if (m4 >= 0)
        s_pat_add(m, m4);
    if (pw >= 0)
        s_pat_const(m, p, p->steps[pw].in[1], 3.0, true, "the exponent");
    s_pat_const(m, p, p->steps[m1].in[c1], 0.79788456080286535588, false,
                "the factor sqrt(2/pi)");
    s_pat_const(m, p, p->steps[m2].in[c2], 0.044715, false, "the factor of x^3");
    s_pat_const(m, p, p->steps[ad].in[k1], 1.0, true, "the constant added to Tanh");
    return "tanh";
}

/* x * Clip(x + 3, 0, 6): adds the steps to m; false if t is not so made. */
static bool s_relu6_core(const s_rw *w, int t, int x, s_pat *m)
{
    const gxd_plan *p = w->p;
    const int cl = s_prod(w, t, GX_OP_CLIP);
    const int ad = cl >= 0 ? s_prod(w, p->steps[cl].in[0], GX_OP_ADD) : -1;
    const int sx = ad >= 0 ? s_side(&p->steps[ad], x) : -1;
    if (sx < 0)
        return false;
    m->core = cl;
    s_pat_add(m, cl), s_pat_add(m, ad);
    s_pat_const(m, p, p->steps[ad].in[1 - sx], 3.0, true, "the constant added to x");
    const gxd_step *cs = &p->steps[cl];
    const double want[2] = {0.0, 6.0};
    for (int b = 0; b < 2; b++) {
        const int i = b + 1;
        const gx_attrval *at = &cs->attr[b ? GX_CLIP_MAX : GX_CLIP_MIN];
        if (i < cs->n_in && cs->in[i] >= 0)
            s_pat_const(m, p, cs->in[i], want[b], true, b ? "Clip's max" : "Clip's min");
        else if (!at->set || at->f != want[b])
            s_pat_fail(m, "Clip's %s is not %g", b ? "max" : "min", want[b]);
    }
    return true;
}

/* Anchor a: the last Mul (or Div) of a spelled-out Gelu or HardSwish. */
static int s_rule_activation(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if ((as->op != GX_OP_MUL && as->op != GX_OP_DIV) || !s_plain(w, a))
        return GX_OK;
    s_prod3 cand[3];
    const int n = s_products(w, a, cand);
    for (int c = 0; c < n; c++)
        for (int j = 0; j < 2; j++) {
            const int x = cand[c].f[j], t = cand[c].f[1 - j];
            const gx_view *xv = &p->values[x].view;
            if (xv->dtype != GX_F32 && xv->dtype != GX_F64)
                continue;
            s_pat m = {.n = 0, .core = -1};
            const char *rule = NULL, *approx = NULL;
            gx_op op = GX_OP_GELU;
            int hs = -1;
            if (cand[c].inner >= 0 && (approx = s_gelu_core(w, t, x, &m))) {
                rule = "gelu", op = GX_OP_GELU;
                if (cand[c].k != 0.5)
                    s_pat_fail(&m, "the constant factor is %.9g, not 0.5", cand[c].k);
            } else if (cand[c].inner >= 0 && s_relu6_core(w, t, x, &m)) {
                rule = "hardswish", op = GX_OP_HARDSWISH;
                if (!s_near(cand[c].k, 1.0 / 6.0))
                    s_pat_fail(&m, "the constant factor is %.9g, not 1/6", cand[c].k);
            } else if (cand[c].inner < 0 && (hs = s_prod(w, t, GX_OP_HARDSIGMOID)) >= 0 &&
                       p->steps[hs].in[0] == x) {
                rule = "hardswish", op = GX_OP_HARDSWISH;
                s_pat_add(&m, hs);
                m.core = hs;
                const gx_attrval *at = p->steps[hs].attr;
                if (!s_near(at[GX_HARDSIGMOID_ALPHA].f, 1.0 / 6.0) ||
                    at[GX_HARDSIGMOID_BETA].f != 0.5)
                    s_pat_fail(&m, "HardSigmoid has alpha %.9g and beta %.9g, not 1/6 and 0.5",
                               at[GX_HARDSIGMOID_ALPHA].f, at[GX_HARDSIGMOID_BETA].f);
            } else {
                continue;
            }
            if (cand[c].inner >= 0)
                s_pat_add(&m, cand[c].inner);
            s_pat_closed(w, a, &m);
            const char *node = s_name(as);
            if (m.bad) {
                s_pat_miss(w, &m, rule, node, op);
                continue;
            }
            gxd_step ns;
            int rc = s_step_new(w, op, node, 1, &x, as->out[0], &ns);
            if (rc < 0) {
                s_step_free(&ns);
                return rc;
            }
            if (approx)
                ns.attr[GX_GELU_APPROXIMATE] = (gx_attrval){.set = true, .s = approx};
            if (!s_reinfer(p, &ns)) {
                s_step_free(&ns);
                snprintf(m.why, sizeof m.why, "the output has another shape than %s",
                         p->values[x].name);
                s_pat_miss(w, &m, rule, node, op);
                continue;
            }
            s_pat_commit(w, a, &m, &ns, rule);
            *hit = true;
            return GX_OK;
        }
    return GX_OK;
}

/* ---- qdq: DequantizeLinear, Conv, QuantizeLinear into QLinearConv ---- */

/* The live DequantizeLinear step making v (plain, or folded at compile
 * time: a constant's), else -1. */
static int s_dq_step(const s_rw *w, int v)
{
    const int d = v >= 0 ? w->p->values[v].def : -1;
    if (d < 0 || (size_t)d >= w->n || w->dead[d])
        return -1;
    const gxd_step *s = &w->p->steps[d];
    if (s->op != GX_OP_DEQUANTIZE_LINEAR || s->n_out != 1 || s->dynamic || s->sub ||
        s->fused || (!s->folded && !s_plain(w, d)))
        return -1;
    return s->attr[GX_DEQUANTIZE_BLOCK_SIZE].i == 0 ? d : -1;
}

/* Is v a constant of dtype dt with one element, or (n > 1) n along one
 * dim? */
static bool s_const_of(const gxd_plan *p, int v, gx_dtype dt, int64_t n)
{
    if (v < 0)
        return false;
    const gxd_value *x = &p->values[v];
    return x->kind == GXD_VALUE_CONST && x->view.data && x->view.dtype == dt &&
           (x->view.numel == 1 || (n > 1 && x->view.numel == n && x->view.ndim == 1));
}

/* Input k of step s, or -1 when it has none there. */
static int s_in(const gxd_step *s, int k)
{
    return k < s->n_in ? s->in[k] : -1;
}

/* Zero point input k of quantizing step s, else a new scalar zero of dtype
 * dt (the default); -1 on ENOMEM. */
static int s_zero_point(s_rw *w, const gxd_step *s, int k, gx_dtype dt, const char *tag)
{
    if (s_in(s, k) >= 0)
        return s->in[k];
    int z;
    return s_new_const(w, s_name(s), tag, dt, 0, NULL, &z) < 0 ? -1 : z;
}

/* Is 8-bit quantizing step s (QuantizeLinear or DequantizeLinear) per
 * tensor: one float32 scale constant (its value in *scale) and one zero
 * point constant of dtype zt, or none? */
static bool s_per_tensor(const gxd_plan *p, const gxd_step *s, gx_dtype zt, double *scale)
{
    return s_scalar(p, s->in[1], scale) && *scale > 0 && p->values[s->in[1]].view.dtype == GX_F32 &&
           (s_in(s, 2) < 0 || s_const_of(p, s->in[2], zt, 1));
}

static bool s_8bit(gx_dtype t)
{
    return t == GX_U8 || t == GX_I8;
}

/* QuantizeLinear's byte of v as its kernel makes it (ops/cpu/quant.c:
 * the quotient in float, rounded half to even, plus the zero point),
 * before saturation. */
static double s_quantized(double v, double scale, double zp)
{
    return (double)rintf((float)v / (float)scale) + zp;
}

/* A Relu or Clip (constant bounds) whose result anchor a (QuantizeLinear)
 * alone reads, and which changes none of a's bytes: its step, else -1.
 * Q is monotone, so Q(Clip(x, lo, hi)) = min(max(Q(x), Q(lo)), Q(hi)),
 * which is Q(x) when Q(lo) saturates to the range's bottom and Q(hi) to
 * its top (Relu: lo = 0, so a's zero point is the bottom; as ONNX
 * Runtime's quantizer and PyTorch's observers leave it after a Relu).
 * Where the step is there but changes bytes, *why says so. */
static int s_qdq_act(const s_rw *w, int a, const char **why)
{
    const gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    int r = s_prod(w, as->in[0], GX_OP_RELU);
    if (r < 0)
        r = s_prod(w, as->in[0], GX_OP_CLIP);
    if (r < 0 || !s_internal(w, as->in[0], 1))
        return -1;
    const gxd_step *rs = &p->steps[r];
    const gx_dtype qt = p->values[as->out[0]].view.dtype;
    double scale, zp = 0, lo = 0, hi = INFINITY;
    if (!s_8bit(qt) || !s_per_tensor(p, as, qt, &scale) ||
        (s_in(as, 2) >= 0 && !s_scalar(p, as->in[2], &zp))) {
        *why = "the QuantizeLinear is not 8-bit per tensor";
        return r;
    }
    if (rs->op == GX_OP_CLIP)
        for (int b = 0; b < 2; b++) {
            const gx_attrval *at = &rs->attr[b ? GX_CLIP_MAX : GX_CLIP_MIN];
            double *bound = b ? &hi : &lo;
            *bound = b ? INFINITY : -INFINITY;
            if (s_in(rs, b + 1) >= 0 ? !s_scalar(p, rs->in[b + 1], bound)
                                     : at->set && isnan(*bound = at->f)) {
                *why = "the Clip's bounds are not constants";
                return r;
            }
        }
    const double qmin = qt == GX_U8 ? 0 : -128, qmax = qt == GX_U8 ? 255 : 127;
    if ((lo > -INFINITY && s_quantized(lo, scale, zp) > qmin) ||
        (hi < INFINITY && s_quantized(hi, scale, zp) < qmax))
        *why = rs->op == GX_OP_RELU
                   ? "the Relu changes bytes (the zero point is above the range's bottom)"
                   : "the Clip changes bytes (its bounds quantize inside the range)";
    return r;
}

/* The qdq rewrite's end: unless why (a near miss, recorded), anchor a
 * (QuantizeLinear) becomes a step of op named as the product c, reading
 * the 8-bit values d0 and d1 (DequantizeLinear steps) dequantize, their
 * scales and zero points, a's scale and zero point, and bias (-1: none);
 * c's first n_attr attributes (QLinearConv's are Conv's). c leaves, and
 * so does act (-1: none; s_qdq_act) and each DequantizeLinear of d0, d1
 * and db (-1: none) that ran per job for c alone (folded ones cost
 * nothing at run time). */
static int s_qdq_make(s_rw *w, int a, int c, int act, gx_op op, int d0, int d1, int db, int bias,
                      int n_attr, const char *why, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a], *cs = &p->steps[c], *s0 = &p->steps[d0],
                   *s1 = &p->steps[d1];
    char names[200];
    int named[5] = {d0, c, a}, n_named = 3;
    if (d1 != d0)
        named[n_named++] = d1;
    if (act >= 0)
        named[n_named++] = act;
    s_names(w, named, n_named, names, sizeof names);
    if (why) {
        s_miss(w, "qdq", s_name(as), "%s not one %s: %s", names, gx_op_name(op), why);
        return GX_OK;
    }
    const size_t mark = p->n_values;
    const gx_dtype t0 = p->values[s0->in[0]].view.dtype, t1 = p->values[s1->in[0]].view.dtype,
                   ty = p->values[as->out[0]].view.dtype;
    const int z0 = s_zero_point(w, s0, 2, t0, "zero_point"),
              z1 = s_zero_point(w, s1, 2, t1, "zero_point"),
              zy = s_zero_point(w, as, 2, ty, "zero_point");
    if (z0 < 0 || z1 < 0 || zy < 0)
        return GX_ENOMEM;
    const int in[9] = {s0->in[0], s0->in[1], z0, s1->in[0], s1->in[1], z1, as->in[1], zy, bias};
    gxd_step ns;
    int rc = s_step_new(w, op, s_name(cs), bias >= 0 ? 9 : 8, in, as->out[0], &ns);
    if (rc < 0) {
        s_step_free(&ns);
        return rc;
    }
    memcpy(ns.attr, cs->attr, (size_t)n_attr * sizeof *ns.attr);
    if (!s_reinfer(p, &ns)) {
        s_step_free(&ns);
        p->n_values = mark;
        s_miss(w, "qdq", s_name(as), "%s not one %s: it infers to another shape", names,
               gx_op_name(op));
        return GX_OK;
    }
    int gone[5], n = 0;
    gone[n++] = c;
    if (act >= 0)
        gone[n++] = act;
    const int dq[3] = {d0, d1 != d0 ? d1 : -1, db};
    for (int i = 0; i < 3; i++)
        if (dq[i] >= 0 && !p->steps[dq[i]].folded && s_internal(w, p->steps[dq[i]].out[0], 1))
            gone[n++] = dq[i];
    s_pend(w, gone, n, a);
    s_commit(w, a, &ns, gone, n);
    s_done(w, "qdq", s_name(&p->steps[a]), "%s became one %s", names, gx_op_name(op));
    *hit = true;
    return GX_OK;
}

/* Anchor a, QuantizeLinear of MatMul c (through act: s_qdq_act, which
 * act_why may decline): both operands DequantizeLinear of 8-bit values
 * (constants or not), everything per tensor: one QLinearMatMul. */
static int s_qdq_matmul(s_rw *w, int a, int c, int act, const char *act_why, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a], *cs = &p->steps[c];
    const int da = s_dq_step(w, cs->in[0]), db = s_dq_step(w, cs->in[1]);
    if (da < 0 || db < 0)
        return GX_OK;
    const gxd_step *xa = &p->steps[da], *xb = &p->steps[db];
    const gx_dtype qt = p->values[as->out[0]].view.dtype, at = p->values[xa->in[0]].view.dtype,
                   bt = p->values[xb->in[0]].view.dtype;
    double sc;
    const char *why = NULL;
    if (act_why)
        why = act_why;
    else if (!s_internal(w, cs->out[0], 1))
        why = "the MatMul's output has another reader";
    else if (p->values[cs->out[0]].view.dtype != GX_F32)
        why = "the MatMul is not float32";
    else if (!s_8bit(qt) || !s_8bit(at) || !s_8bit(bt))
        why = "not 8-bit quantized";
    else if (!s_per_tensor(p, as, qt, &sc) || !s_per_tensor(p, xa, at, &sc) ||
             !s_per_tensor(p, xb, bt, &sc))
        why = "a scale or zero point is not one constant (QLinearMatMul is per tensor)";
    return s_qdq_make(w, a, c, act, GX_OP_QLINEAR_MATMUL, da, db, -1, -1, 0, why, hit);
}

/* Anchor a: QuantizeLinear of a float32 Conv whose input is a
 * DequantizeLinear of 8-bit values and whose weights (and bias) are
 * dequantized constants, as ONNX Runtime's quantizer writes a quantized
 * model in its default QDQ format: one QLinearConv of the quantized values
 * (ORT fuses the same). Exact int32 sums, requantized once; the float path
 * can differ from it by one step where its float32 sums fall near half a
 * step. */
static int s_rule_qdq(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if (as->op != GX_OP_QUANTIZE_LINEAR || as->attr[GX_QUANTIZE_BLOCK_SIZE].i != 0)
        return GX_OK;
    /* the 8-bit ops run on the CPU alone: where a device is offered, its
     * float Conv and MatMul may be faster than them (the partition pass
     * decides after this one) */
    const gxd_partition_opts *po = w->st->lim->part;
    for (size_t i = 0; po && !po->off && i < po->n_backends; i++)
        if (po->backends[i] != gx_backend_cpu())
            return GX_OK;
    const char *act_why = NULL;
    const int act = s_qdq_act(w, a, &act_why);
    const int y = act >= 0 ? p->steps[act].in[0] : as->in[0], c = s_prod(w, y, GX_OP_CONV);
    if (c < 0) {
        const int mm = s_prod(w, y, GX_OP_MATMUL);
        return mm >= 0 ? s_qdq_matmul(w, a, mm, act, act_why, hit) : GX_OK;
    }
    const gxd_step *cs = &p->steps[c];
    const gx_dtype qt = p->values[as->out[0]].view.dtype;
    const int dx = s_dq_step(w, cs->in[0]), dw = s_dq_step(w, cs->in[1]);
    const int db = s_in(cs, 2) >= 0 ? s_dq_step(w, cs->in[2]) : -1;
    if (dx < 0 || dw < 0)
        return GX_OK; /* not the pattern: a float Conv beside quantized values */
    const gxd_step *xs = &p->steps[dx], *ws = &p->steps[dw];
    const gx_dtype xt = p->values[xs->in[0]].view.dtype, wt = p->values[ws->in[0]].view.dtype;
    const gx_view *wv = &p->values[ws->in[0]].view;
    const int64_t M = wv->ndim == 4 ? wv->shape[0] : 0;
    const float *wsc = s_cf32(p, ws->in[1]);
    double xscale = 0, yscale = 0;
    const char *why = NULL;
    if (act_why)
        why = act_why;
    else if (!s_internal(w, y, 1))
        why = "the Conv's output has another reader";
    else if (p->values[y].view.dtype != GX_F32)
        why = "the Conv is not float32";
    else if (!s_8bit(qt) || !s_8bit(xt) || !s_8bit(wt))
        why = "not 8-bit quantized";
    else if (!s_per_tensor(p, as, qt, &yscale) || !s_per_tensor(p, xs, xt, &xscale))
        why = "the input's or output's scale or zero point is not one constant";
    else if (p->values[ws->in[0]].kind != GXD_VALUE_CONST || M <= 0)
        why = "the weights are not 8-bit constants";
    else if (!wsc || !s_const_of(p, ws->in[1], GX_F32, M) ||
             (p->values[ws->in[1]].view.numel > 1 && ws->attr[GX_DEQUANTIZE_AXIS].i != 0 &&
              ws->attr[GX_DEQUANTIZE_AXIS].i != -4))
        why = "the weights' scales are not per tensor or per output channel";
    else if (s_in(ws, 2) >= 0 && !s_const_of(p, ws->in[2], wt, M))
        why = "the weights' zero points are not constants";
    else if (s_in(cs, 2) >= 0 && db < 0)
        why = "the bias is not dequantized int32";
    if (!why && db >= 0) {
        const gxd_step *bs = &p->steps[db];
        const float *bsc = s_cf32(p, bs->in[1]);
        const gxd_value *bz = s_in(bs, 2) >= 0 ? &p->values[bs->in[2]] : NULL;
        if (!s_const_of(p, bs->in[0], GX_I32, M) || !bsc || !s_const_of(p, bs->in[1], GX_F32, M))
            why = "the bias is not dequantized int32";
        for (int64_t m = 0; !why && bz && m < bz->view.numel; m++)
            if (bz->kind != GXD_VALUE_CONST || bz->view.dtype != GX_I32 ||
                ((const int32_t *)bz->view.data)[m] != 0)
                why = "the bias has a zero point";
        const bool per_b = p->values[bs->in[1]].view.numel > 1,
                   per_w = p->values[ws->in[1]].view.numel > 1;
        for (int64_t m = 0; !why && m < M; m++) {
            const double want = (double)(float)((float)xscale * wsc[per_w ? m : 0]);
            if (fabs(bsc[per_b ? m : 0] - want) > 1e-6 * want)
                why = "the bias's scale is not the input's times the weights'";
        }
    }
    return s_qdq_make(w, a, c, act, GX_OP_QLINEAR_CONV, dx, dw, db,
                      db >= 0 ? p->steps[db].in[0] : -1, GX_CONV_NATTRS, why, hit);
}

/* ---- attention: MatMul, scale, [mask], Softmax, MatMul ---- */

/* Is v attention's scores: made by a MatMul, or by a Mul or Div of one
 * by a scalar constant, or by a Where choosing between those and a
 * constant? */
static bool s_scores(const s_rw *w, int v)
{
    const int wh = s_prod(w, v, GX_OP_WHERE);
    if (wh >= 0)
        return s_scores(w, w->p->steps[wh].in[1]) || s_scores(w, w->p->steps[wh].in[2]);
    int d = s_prod(w, v, GX_OP_MUL) >= 0 ? s_prod(w, v, GX_OP_MUL) : s_prod(w, v, GX_OP_DIV);
    if (d >= 0) {
        const int k = s_scalar_side(w->p, &w->p->steps[d]);
        v = k < 0 ? -1 : w->p->steps[d].in[1 - k];
    }
    return s_prod(w, v, GX_OP_MATMUL) >= 0;
}

/* The checks of a Where(cond, scores, fill) in attention (keep_true; else
 * Where(cond, fill, scores)): cond a bool constant over every key (its last
 * dim is the keys', the others broadcast), fill a scalar constant at most
 * -1e9 (or -inf): its exp is 0 beside any real score, so the Where is
 * Attention's bool mask, as long as no row of cond masks every key (the
 * Where would then give every key the same weight, the mask none). */
static void s_where_mask(const gxd_plan *p, int cond, int fill, bool keep_true, int64_t keys,
                         s_pat *m)
{
    const gxd_value *cv = &p->values[cond];
    double c = 0;
    if (cv->kind != GXD_VALUE_CONST || cv->view.dtype != GX_BOOL || !cv->view.data ||
        cv->view.ndim < 1 || cv->view.ndim > 4 || cv->view.shape[cv->view.ndim - 1] != keys) {
        s_pat_fail(m, "the Where's condition %s is not a bool constant over every key", cv->name);
        return;
    }
    if (!s_scalar(p, fill, &c) || !(c <= -1e9)) {
        s_pat_fail(m, "the Where's other value is not a constant of at most -1e9");
        return;
    }
    const bool *b = cv->view.data;
    for (int64_t r = 0; r < cv->view.numel / keys; r++) {
        bool kept = false;
        for (int64_t j = 0; j < keys && !kept; j++)
            kept = b[r * keys + j] == keep_true;
        if (!kept) {
            s_pat_fail(m, "a row of the Where's condition %s masks every key", cv->name);
            return;
        }
    }
}

/* Anchor a: MatMul(P, V), P = Softmax(X) along the last axis, X =
 * [Add](Y, mask), Y = [Mul|Div](S, c), S = MatMul(Q, Kᵀ), all of rank 4,
 * Kᵀ made by a Transpose: one Attention of Q, K, V. K is that Transpose's
 * input permuted as Kᵀ's but for the last two axes: the Transpose stays
 * and writes K instead (Kᵀ's value, renamed; nothing else reads it), or
 * leaves when that permutation is none. */
static int s_rule_attention(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if (as->op != GX_OP_MATMUL || as->n_in != 2)
        return GX_OK;
    const int sm = s_prod(w, as->in[0], GX_OP_SOFTMAX);
    if (sm < 0)
        return GX_OK;
    s_pat m = {.n = 0, .core = sm};
    s_pat_add(&m, sm);
    int x = p->steps[sm].in[0], mask = -1;
    double scale = 1.0;
    const int ad = s_prod(w, x, GX_OP_ADD);
    if (ad >= 0) {
        const gxd_step *s = &p->steps[ad];
        const int k = s_scores(w, s->in[0]) ? 0 : 1;
        s_pat_add(&m, ad);
        mask = s->in[1 - k];
        x = s->in[k];
    }
    /* Where(cond, scores, c) (or Where(cond, c, scores): masked where
     * true), c very negative: a bool mask */
    int cond = -1, fill = -1;
    bool keep_true = true;
    const int wh = s_prod(w, x, GX_OP_WHERE);
    if (wh >= 0) {
        const gxd_step *s = &p->steps[wh];
        keep_true = s_scores(w, s->in[1]);
        if (!keep_true && !s_scores(w, s->in[2]))
            return GX_OK;
        s_pat_add(&m, wh);
        cond = s->in[0];
        fill = s->in[keep_true ? 2 : 1];
        x = s->in[keep_true ? 1 : 2];
    }
    const int sc = s_prod(w, x, GX_OP_MUL) >= 0 ? s_prod(w, x, GX_OP_MUL) : s_prod(w, x, GX_OP_DIV);
    if (sc >= 0) {
        const gxd_step *s = &p->steps[sc];
        const int k = s_scalar_side(p, s);
        double c = 0;
        if (k < 0 || (s->op == GX_OP_DIV && k == 0) || !s_scalar(p, s->in[k], &c))
            return GX_OK;
        s_pat_add(&m, sc);
        scale = s->op == GX_OP_MUL ? c : 1.0 / c;
        x = s->in[1 - k];
    }
    const int qk = s_prod(w, x, GX_OP_MATMUL);
    if (qk < 0)
        return GX_OK;
    s_pat_add(&m, qk);
    /* the core is there: from here on, a failed check is a near miss */
    const gxd_step *qs = &p->steps[qk];
    const int q = qs->in[0], kt = qs->in[1], v = as->in[1];
    const int tr = s_prod(w, kt, GX_OP_TRANSPOSE);
    const gx_view *qv = &p->values[q].view, *ktv = &p->values[kt].view,
                  *vv = &p->values[v].view;
    int64_t perm[4];
    if (qv->ndim != 4 || ktv->ndim != 4 || vv->ndim != 4)
        s_pat_fail(&m, "Q, Kᵀ and V are not all of rank 4");
    else if (qv->dtype != GX_F32 || ktv->dtype != GX_F32 || vv->dtype != GX_F32)
        s_pat_fail(&m, "Q, Kᵀ and V are not all float32");
    else if (tr < 0)
        s_pat_fail(&m, "Kᵀ (%s) is not made by a Transpose", p->values[kt].name);
    const gxd_step *ts = tr >= 0 ? &p->steps[tr] : NULL;
    if (!m.bad) { /* K = Transpose(X, perm with its last two swapped) */
        const gx_attrval *pa = &ts->attr[GX_TRANSPOSE_PERM];
        for (int d = 0; d < 4; d++)
            perm[d] = pa->n == 4 ? pa->ints[d] : 3 - d;
        const int64_t t = perm[2];
        perm[2] = perm[3], perm[3] = t;
    }
    int axis = (int)p->steps[sm].attr[GX_SOFTMAX_AXIS].i;
    if (!m.bad && axis != -1 && axis != 3)
        s_pat_fail(&m, "Softmax is along axis %d, not the last", axis);
    double c = scale;
    if (!m.bad && (!isfinite(c) || c == 0))
        s_pat_fail(&m, "the scale %.9g is not finite and non-zero", c);
    if (!m.bad && mask >= 0) {
        const gx_view *mv = &p->values[mask].view;
        if (mv->dtype != GX_F32 || mv->ndim < 1 || mv->shape[mv->ndim - 1] != ktv->shape[3])
            s_pat_fail(&m, "the mask %s is not float32 over every key", p->values[mask].name);
        else if (cond >= 0)
            s_pat_fail(&m, "it has both a Where and an added mask");
    }
    if (!m.bad && cond >= 0)
        s_where_mask(p, cond, fill, keep_true, ktv->shape[3], &m);
    s_pat_closed(w, a, &m);
    if (!m.bad && !s_internal(w, kt, 1))
        s_pat_fail(&m, "Kᵀ (%s) has another reader", p->values[kt].name);
    const char *node = s_name(as);
    if (m.bad) {
        s_pat_miss(w, &m, "attention", node, GX_OP_ATTENTION);
        return GX_OK;
    }
    const bool identity = perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && perm[3] == 3;
    const int kin = identity ? ts->in[0] : kt;
    const size_t mark = p->n_values;
    int rc = GX_OK;
    if (cond >= 0 && keep_true) {
        mask = cond;
    } else if (cond >= 0) { /* masked where true: the Attention's mask keeps where true */
        const gx_view cv = p->values[cond].view; /* a copy: p->values may move */
        if ((rc = s_new_const(w, node, "keep", GX_BOOL, cv.ndim, cv.shape, &mask)) < 0)
            return rc;
        const bool *src = cv.data;
        bool *dst = p->values[mask].view.data;
        for (int64_t i = 0; i < cv.numel; i++)
            dst[i] = !src[i];
    }
    /* Kᵀ's value holds K from here: its shape, for the checks */
    gxd_value *kval = &p->values[kt];
    const gx_view ktsave = kval->view;
    if (!identity) {
        const int64_t t = kval->view.shape[2];
        kval->view.shape[2] = kval->view.shape[3], kval->view.shape[3] = t;
    }
    gxd_step ns = {0}, nt = {0};
    rc = s_step_new(w, GX_OP_ATTENTION, node, mask >= 0 ? 4 : 3, (const int[]){q, kin, v, mask},
                    as->out[0], &ns);
    int64_t *owned = rc == GX_OK && !identity ? gxd_plan_own(p, sizeof perm) : NULL;
    if (rc == GX_OK && !identity && !owned)
        rc = GX_ENOMEM;
    if (rc == GX_OK && !identity)
        rc = s_step_like(ts, 1, ts->in, kt, &nt);
    if (rc < 0) {
        kval->view = ktsave;
        s_step_free(&ns), s_step_free(&nt);
        return rc;
    }
    ns.attr[GX_ATTENTION_SCALE] = (gx_attrval){.set = true, .f = c};
    if (!identity) {
        memcpy(owned, perm, sizeof perm);
        nt.attr[GX_TRANSPOSE_PERM] = (gx_attrval){.set = true, .ints = owned, .n = 4};
    }
    if (!s_reinfer(p, &ns) || (!identity && !s_reinfer(p, &nt))) {
        kval->view = ktsave;
        p->n_values = mark;
        s_step_free(&ns), s_step_free(&nt);
        snprintf(m.why, sizeof m.why, "Q, K and V do not fit one Attention (heads or batch)");
        s_pat_miss(w, &m, "attention", node, GX_OP_ATTENTION);
        return GX_OK;
    }
    if (identity) {
        s_pat_add(&m, tr);
    } else {
        const char *was = kval->name;
        const size_t len = strlen(was) + 3;
        char *name = gxd_plan_own(p, len);
        if (!name) {
            s_step_free(&ns), s_step_free(&nt);
            return GX_ENOMEM;
        }
        snprintf(name, len, "%s+K", was);
        kval->name = name;
        s_commit(w, tr, &nt, NULL, 0);
    }
    s_pat_commit(w, a, &m, &ns, "attention");
    *hit = true;
    return GX_OK;
}

/* v = Transpose(Reshape(x, [B, S, H, D]), [0, 2, 1, 3]) with x 3-D
 * [B, S, H * D], each step read only by the next (and v by `uses`
 * inputs of the Attention): x in *x, the two steps added to m. The 3-D
 * form of Attention reads x as those heads. */
static bool s_heads_in(const s_rw *w, int v, int uses, s_pat *m, int *x)
{
    const gxd_plan *p = w->p;
    const int t = s_prod(w, v, GX_OP_TRANSPOSE);
    const int r = t >= 0 ? s_prod(w, p->steps[t].in[0], GX_OP_RESHAPE) : -1;
    if (r < 0 || !s_internal(w, v, uses) || !s_internal(w, p->steps[t].in[0], 1))
        return false;
    const gx_attrval *pa = &p->steps[t].attr[GX_TRANSPOSE_PERM];
    if (pa->n != 4 || pa->ints[0] != 0 || pa->ints[1] != 2 || pa->ints[2] != 1 || pa->ints[3] != 3)
        return false;
    const gx_view *xv = &p->values[p->steps[r].in[0]].view, *rv = &p->values[p->steps[r].out[0]].view;
    if (xv->ndim != 3 || rv->ndim != 4 || xv->shape[0] != rv->shape[0] ||
        xv->shape[1] != rv->shape[1] || xv->shape[2] != rv->shape[2] * rv->shape[3])
        return false;
    s_pat_add(m, t), s_pat_add(m, r);
    *x = p->steps[r].in[0];
    return true;
}

/* Anchor a: Reshape([B, S, H * Dv]) of Transpose([0, 2, 1, 3]) of a 4-D
 * Attention whose Q, K and V are each a 3-D value reshaped to heads and
 * transposed the same way (s_heads_in): the Attention's 3-D form, which
 * reads the heads in place and writes the anchor's value. */
static int s_rule_heads(s_rw *w, int a, bool *hit)
{
    gxd_plan *p = w->p;
    const gxd_step *as = &p->steps[a];
    if (as->op != GX_OP_RESHAPE || p->values[as->out[0]].view.ndim != 3)
        return GX_OK;
    const int t = s_prod(w, as->in[0], GX_OP_TRANSPOSE);
    const int at = t >= 0 ? s_prod(w, p->steps[t].in[0], GX_OP_ATTENTION) : -1;
    if (at < 0 || !s_internal(w, as->in[0], 1) || !s_internal(w, p->steps[t].in[0], 1))
        return GX_OK;
    const gx_attrval *pa = &p->steps[t].attr[GX_TRANSPOSE_PERM];
    const gxd_step *ats = &p->steps[at];
    if (pa->n != 4 || pa->ints[0] != 0 || pa->ints[1] != 2 || pa->ints[2] != 1 ||
        pa->ints[3] != 3 || p->values[ats->in[0]].view.ndim != 4 || ats->n_in > 4)
        return GX_OK; /* (a KV cache stays as it is) */
    s_pat m = {.n = 0, .core = at};
    s_pat_add(&m, t), s_pat_add(&m, at);
    int in[4] = {-1, -1, -1, ats->n_in > 3 ? ats->in[3] : -1};
    for (int i = 0; i < 3; i++) {
        int uses = 0;
        for (int j = 0; j < 3; j++)
            uses += ats->in[j] == ats->in[i];
        if (!s_heads_in(w, ats->in[i], uses, &m, &in[i]))
            return GX_OK;
    }
    const gx_view *qh = &p->values[p->steps[m.step[3]].out[0]].view;  /* Q's heads */
    int kr = -1; /* K's Reshape: K's heads */
    for (int i = 2; i < m.n; i++)
        if (p->steps[m.step[i]].op == GX_OP_RESHAPE && p->steps[m.step[i]].in[0] == in[1])
            kr = m.step[i];
    if (kr < 0)
        return GX_OK;
    gxd_step ns;
    int rc = s_step_like(ats, ats->n_in, in, as->out[0], &ns);
    if (rc < 0) {
        s_step_free(&ns);
        return rc;
    }
    ns.attr[GX_ATTENTION_Q_NUM_HEADS] = (gx_attrval){.set = true, .i = qh->shape[2]};
    ns.attr[GX_ATTENTION_KV_NUM_HEADS] =
        (gx_attrval){.set = true, .i = p->values[p->steps[kr].out[0]].view.shape[2]};
    if (!s_reinfer(p, &ns)) {
        s_step_free(&ns);
        return GX_OK;
    }
    s_pat_commit(w, a, &m, &ns, "heads");
    *hit = true;
    return GX_OK;
}

/* ---- the pass ---- */

/* Step i's number once the dead steps are gone, following the steps
 * that took over dead ones' work; -1 if none did. */
static int s_final(const s_rw *w, const int *new_idx, int i)
{
    while (i >= 0 && w->dead[i])
        i = w->into[i];
    return i >= 0 ? new_idx[i] : -1;
}

/* Drops the dead steps, renumbers defs, hands the records to the plan. */
static int s_finish(s_rw *w)
{
    gxd_plan *p = w->p;
    int *new_idx = malloc((w->n + 1) * sizeof *new_idx);
    if (!new_idx)
        return GX_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < w->n; i++)
        new_idx[i] = w->dead[i] ? -1 : (int)j++;
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].def >= 0)
            p->values[v].def = s_final(w, new_idx, p->values[v].def);
    for (size_t i = 0; i < w->n; i++)
        if (!w->dead[i])
            p->steps[new_idx[i]] = p->steps[i];
    for (size_t i = j; i < w->n; i++)
        memset(&p->steps[i], 0, sizeof p->steps[i]);
    p->n_steps = j;
    free(new_idx);

    const size_t n = w->n_done + w->n_miss;
    if (!n)
        return GX_OK;
    gxd_rewrite *r = gxd_plan_own(p, n * sizeof *r);
    if (!r)
        return GX_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const s_rec *e = i < w->n_done ? &w->done[i] : &w->miss[i - w->n_done];
        const size_t len = strlen(e->what) + 1;
        char *what = gxd_plan_own(p, len);
        if (!what)
            return GX_ENOMEM;
        memcpy(what, e->what, len);
        const char **nodes = NULL;
        if (e->n_nodes && !(nodes = gxd_plan_own(p, (size_t)e->n_nodes * sizeof *nodes)))
            return GX_ENOMEM;
        if (e->n_nodes)
            memcpy(nodes, e->nodes, (size_t)e->n_nodes * sizeof *nodes);
        r[i] = (gxd_rewrite){.rule = e->rule, .node = e->node, .what = what,
                             .applied = e->applied, .nodes = nodes,
                             .n_nodes = (size_t)e->n_nodes};
    }
    p->rewrites = r;
    p->n_rewrites = n;
    return GX_OK;
}

/* One round: every live step, last to first, as the anchor of each rule
 * (the last step of what a rule replaces). */
static int s_round(s_rw *w)
{
    static int (*const rules[])(s_rw *, int, bool *) = {
        s_rule_attention, s_rule_heads,     s_rule_layernorm, s_rule_rmsnorm,
        s_rule_activation, s_rule_fold,     s_rule_transpose, s_rule_reduce,
        s_rule_permute,    s_rule_reshape,    s_rule_qdq,
    };
    for (size_t i = w->n; i-- > 0;) {
        bool hit = false;
        for (size_t r = 0; r < sizeof rules / sizeof rules[0] && !hit; r++) {
            if (w->dead[i] || !s_plain(w, (int)i))
                break;
            int rc = rules[r](w, (int)i, &hit);
            if (rc < 0 || w->oom)
                return rc < 0 ? rc : GX_ENOMEM;
        }
    }
    return GX_OK;
}

int gxd_pass_rewrite(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    if (st->lim->no_rewrite) {
        snprintf(p->rewrite_why, sizeof p->rewrite_why, "off (compiler.rewrite: false)");
        return GX_OK;
    }
    s_rw w = {.st = st, .p = p, .n = p->n_steps, .cap_values = p->n_values};
    w.reads = calloc(w.cap_values + 1, sizeof *w.reads);
    w.is_out = calloc(w.cap_values + 1, sizeof *w.is_out);
    w.dead = calloc(w.n + 1, sizeof *w.dead);
    w.into = malloc((w.n + 1) * sizeof *w.into);
    w.missed = calloc(w.n + 1, sizeof *w.missed);
    int rc = GX_ENOMEM;
    if (!w.reads || !w.is_out || !w.dead || !w.into || !w.missed)
        goto out;
    for (size_t i = 0; i < w.n; i++) {
        w.into[i] = -1;
        s_read(&w, &p->steps[i], +1);
    }
    for (size_t i = 0; i < p->n_outputs; i++)
        w.is_out[p->outputs[i]] = true;
    rc = GX_OK;
    for (int r = 0; r < S_ROUNDS && rc == GX_OK; r++) {
        s_clear_misses(&w);
        memset(w.missed, 0, w.n * sizeof *w.missed);
        w.changed = false;
        rc = s_round(&w);
        if (!w.changed)
            break;
    }
    if (rc == GX_OK)
        rc = s_finish(&w);
out:
    for (size_t i = 0; i < w.n_done; i++)
        free(w.done[i].what), free(w.done[i].nodes);
    s_clear_misses(&w);
    free(w.done), free(w.miss);
    free(w.reads), free(w.is_out), free(w.dead), free(w.into), free(w.missed);
    if (rc < 0) {
        /* the dead steps' arrays are freed already: what gxd_plan_destroy
         * frees is the rest */
        return gx_errf(st->err, st->errlen, rc, "out of memory while rewriting steps");
    }
    return GX_OK;
}
