/*
 * Pass 7, fuse (seed 000). Contract: chains and trees of elementwise
 * arithmetic steps (the math family of ops/op.h with GX_OPF_ELEMENTWISE,
 * numpy broadcasting, no batch rule or scratch of their own) become one
 * step when every value passed between them has that step as its only
 * reader, is not a graph output, and has the group's output dtype and
 * shape; the group's inputs (other values, constants, graph inputs) may
 * broadcast to that shape. The fused step takes the place of the group's
 * last step (its op and node, in[] = the group's inputs, out[] = its
 * output, fused = the program of ops/fused.h), the other steps leave the
 * plan, and the values between them become GXD_VALUE_FUSED: memplan gives
 * them no memory. Steps keep their dependency order and each value's def
 * is renumbered. Every group formed, and every elementwise step whose
 * neighbours stayed out, is listed in plan->fuse_groups with the reasons.
 * Does nothing when limits->no_fuse is set (compiler.fuse: false).
 *
 * A Cast may join too, where its device's fused slot runs it (fused_casts):
 * its input, of another dtype, is then one of the group's inputs (only a
 * value of the group's dtype passes between members), e.g. the int32
 * product of a MatMulInteger cast to float32, scaled, biased and Relu'd.
 *
 * Epilogues: a MatMul (operands of rank >= 2), Gemm or float32 Conv in
 * the plain layout with the CPU's plain kernel (not one the layout pass
 * chose for another layout) whose product has the group's shape and
 * dtype, one reader in the group and is no graph output heads the group:
 * its kernel writes the product into the group's output, a share of rows
 * (Conv: a block of channels and positions) at a time, and the
 * elementwise ops run over those elements at once (bias, activation,
 * residual). It is listed first in the group; the fused step takes its
 * scratch memory (Conv's im2col columns); the batch pass judges it by its
 * own rule (gxd_fuse_batch_separable).
 *
 * A fused step computes exactly what its steps computed (each op runs its
 * own kernel, or the same expression, on tiles of the output; a head runs
 * its kernel with the step's share, so its row blocks are those the
 * unfused step would get with that share), and it keeps samples of a
 * batch apart exactly when all of its ops do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/passes.h"

#define S_MATH_ROW(e, name) [GX_OP_##e] = true,
static const bool s_math[GX_OP_COUNT] = {GX_OPS_MATH(S_MATH_ROW)};
#undef S_MATH_ROW

/* Why step i cannot be part of a fused group, or NULL if it can. */
static const char *s_unfusable(const gxd_plan *p, int i)
{
    const gxd_step *s = &p->steps[i];
    const gx_op_schema *sc = gx_op_schema_get(s->op);
    if (s->folded)
        return "evaluated at compile time";
    if (s->copy)
        return "copies a value between devices";
    if (s->dynamic)
        return "has shapes known only at run time";
    if (!(sc->flags & GX_OPF_ELEMENTWISE))
        return "not elementwise";
    const bool cast = s->op == GX_OP_CAST && s->n_in == 1 && s->in[0] >= 0 &&
                      p->values[s->in[0]].view.dtype != GX_STRING &&
                      p->values[s->out[0]].view.dtype != GX_STRING;
    if (cast && !p->devices[s->device]->fused_casts)
        return "its device runs no Cast in a fused group";
    if (!cast && (!s_math[s->op] || sc->batch || sc->scratch))
        return "not an arithmetic elementwise op";
    if (!p->devices[s->device]->fused || !p->devices[s->device]->kernel(s->op))
        return "its device runs no fused groups of it";
    if (s->n_out != 1 || s->n_in != s->n_formal)
        return "has several outputs";
    if (s->n_in > GX_FUSED_MAX_OP_IN)
        return "has too many inputs";
    if (p->values[s->out[0]].kind != GXD_VALUE_TEMP)
        return "has no output in the arena";
    return NULL;
}

/* Can step i be the head of an epilogue group (ops/fused.h): a MatMul of
 * operands of rank >= 2, a Gemm, or a float32 Conv in the plain layout
 * that runs the CPU's plain kernel (the layout pass may have given it
 * another), static, with its output in the arena, on a device whose fused
 * slot takes heads? */
static bool s_head_ok(const gxd_plan *p, int i)
{
    const gxd_step *s = &p->steps[i];
    if (p->devices[s->device]->no_fused_heads)
        return false;
    if (s->folded || s->copy || s->dynamic || s->n_out != 1 || s->n_in != s->n_formal ||
        s->n_in > GX_FUSED_MAX_OP_IN || p->values[s->out[0]].kind != GXD_VALUE_TEMP)
        return false;
    if (s->op == GX_OP_CONV) { /* float32, its kernel for its layout (ops/fused.h); in
                                * NHWC or NCHW16c x may be NCHW (layouts->input) */
        const gx_view *x = &p->values[s->in[0]].view, *y = &p->values[s->out[0]].view;
        const bool kernel = s->layout == GX_LAYOUT_PLAIN
                                ? !s->kernel ||
                                      s->kernel == p->devices[s->device]->kernel(GX_OP_CONV)
                                : s->kernel != NULL;
        return kernel && (x->layout == s->layout || s->layout != GX_LAYOUT_PLAIN) &&
               y->layout == s->layout && x->dtype == GX_F32 && y->dtype == GX_F32;
    }
    if (gx_op_schema_get(s->op)->scratch)
        return false;
    if (s->op == GX_OP_GEMM)
        return true;
    return s->op == GX_OP_MATMUL && p->values[s->in[0]].view.ndim >= 2 &&
           p->values[s->in[1]].view.ndim >= 2;
}

static bool s_same_shape(const gx_view *a, const gx_view *b)
{
    return a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, (size_t)(a->ndim > 0 ? a->ndim : 0) * sizeof *a->shape);
}

/* A group being formed: its elementwise steps in step order, and its
 * head (a MatMul or Gemm whose product they read) or -1. */
typedef struct s_group {
    int n;
    int m[GX_FUSED_MAX_OPS];
    int head;
} s_group;

/* Operand code of the head's product while the program is built: it
 * becomes f->n_in once the group's inputs are known. */
#define S_HEAD_CODE (INT32_MIN + 1)

static int s_pos(const s_group *g, int step)
{
    for (int j = 0; j < g->n; j++)
        if (g->m[j] == step)
            return j;
    return -1;
}

/* The program of group g (its steps have mark[] == r; the last is r) into
 * f, and its inputs (value indices) into ext[0..f->n_in). NULL, or why
 * the group is too big for the kernel. */
static const char *s_build(const gxd_plan *p, const int *mark, int r, const s_group *g,
                           gx_fused *f, int *ext)
{
    const gx_view *y = &p->values[p->steps[r].out[0]].view;
    int tmp_of[GX_FUSED_MAX_OPS];
    bool busy[GX_FUSED_MAX_TMP] = {0};
    int n_gather = 0;
    memset(f, 0, sizeof *f);
    f->dtype = y->dtype;
    f->n_ops = g->n;
    if (g->head >= 0) { /* its inputs first */
        const gxd_step *s = &p->steps[g->head];
        f->has_head = true;
        f->head.op = s->op;
        f->head.kernel = s->kernel ? s->kernel : p->devices[s->device]->kernel(s->op);
        f->head_layout = s->layout;
        f->head.n_in = s->n_in;
        f->head.out = -1;
        memcpy(f->head.attr, s->attr, sizeof f->head.attr);
        for (int k = 0; k < s->n_in; k++) {
            const int v = s->in[k];
            int e = 0;
            while (v >= 0 && e < f->n_in && ext[e] != v)
                e++;
            if (v >= 0 && e == f->n_in) {
                const int64_t numel = p->values[v].view.numel;
                if (numel != y->numel && numel != 1 && ++n_gather > GX_FUSED_MAX_GATHER)
                    return "the group would have too many broadcast inputs";
                ext[f->n_in++] = v;
            }
            f->head.in[k] = v < 0 ? GX_FUSED_NONE : e;
        }
    }
    for (int j = 0; j < g->n; j++) {
        const gxd_step *s = &p->steps[g->m[j]];
        gx_fused_op *op = &f->op[j];
        op->op = s->op;
        op->kernel = p->devices[s->device]->kernel(s->op);
        op->n_in = s->n_in;
        memcpy(op->attr, s->attr, sizeof op->attr);
        for (int k = 0; k < s->n_in; k++) {
            const int v = s->in[k];
            const int d = v >= 0 ? p->values[v].def : -1;
            if (v < 0) {
                op->in[k] = GX_FUSED_NONE;
            } else if (d >= 0 && d == g->head) {
                op->in[k] = S_HEAD_CODE;
            } else if (d >= 0 && mark[d] == r) {
                op->in[k] = GX_FUSED_TMP(tmp_of[s_pos(g, d)]);
            } else {
                int e = 0;
                while (e < f->n_in && ext[e] != v)
                    e++;
                if (e == f->n_in) {
                    const int64_t numel = p->values[v].view.numel;
                    if (f->n_in + (g->head >= 0) == GX_FUSED_MAX_IN)
                        return "the group would have too many inputs";
                    if (numel != y->numel && numel != 1 && ++n_gather > GX_FUSED_MAX_GATHER)
                        return "the group would have too many broadcast inputs";
                    ext[f->n_in++] = v;
                }
                op->in[k] = e;
            }
        }
        /* the output's temporary is taken before the inputs' are given
         * back: a kernel's output never overlaps its inputs */
        op->out = -1;
        if (j < g->n - 1) {
            int t = 0;
            while (t < GX_FUSED_MAX_TMP && busy[t])
                t++;
            if (t == GX_FUSED_MAX_TMP)
                return "the group would need too many temporaries at once";
            busy[t] = true;
            tmp_of[j] = op->out = t;
            if (t + 1 > f->n_tmp)
                f->n_tmp = t + 1;
        }
        for (int k = 0; k < op->n_in; k++) /* each value inside has one reader */
            if (op->in[k] != GX_FUSED_NONE && op->in[k] != S_HEAD_CODE && op->in[k] < 0)
                busy[-1 - op->in[k]] = false;
    }
    for (int j = 0; j < g->n; j++)
        for (int k = 0; k < f->op[j].n_in; k++)
            if (f->op[j].in[k] == S_HEAD_CODE)
                f->op[j].in[k] = f->n_in;
    return NULL;
}

/* Reasons why neighbours stayed out of one group, "; "-separated. */
typedef struct s_why {
    char buf[512];
    size_t len;
} s_why;

static void s_why_add(s_why *w, const gxd_step *s, const char *reason)
{
    char who[160];
    snprintf(who, sizeof who, "node '%s' (", s->node->name);
    if (w->len + 1 >= sizeof w->buf || strstr(w->buf, who)) /* full, or said already */
        return;
    int n = snprintf(w->buf + w->len, sizeof w->buf - w->len, "%snode '%s' (%s): %s",
                     w->len ? "; " : "", s->node->name, gx_op_name(s->op), reason);
    w->len = n < 0 ? w->len : w->len + (size_t)n;
    if (w->len >= sizeof w->buf) /* cut: say so */
        memcpy(w->buf + sizeof w->buf - 4, "...", 4), w->len = sizeof w->buf - 1;
}

/* Why producer d (of value v, read by a member) stays out of a group
 * whose output is y, on device dev; NULL if it may join. */
static const char *s_neighbour(const gxd_plan *p, int d, int v, const gx_view *y, int dev,
                               const int *readers, const bool *is_out, char *tmp, size_t tmplen)
{
    const gx_view *x = &p->values[v].view;
    if (p->steps[d].device != dev)
        return "runs on another device";
    if (is_out[v])
        return "its output is a graph output";
    if (readers[v] > 1)
        return "its output has another reader";
    if (x->dtype != y->dtype) {
        snprintf(tmp, tmplen, "dtype %s, not %s", gx_dtype_name(x->dtype),
                 gx_dtype_name(y->dtype));
        return tmp;
    }
    const char *why = s_unfusable(p, d);
    if (why)
        return why;
    if (!s_same_shape(x, y))
        return x->numel == y->numel ? "its output has another shape"
                                    : "its output broadcasts to the bigger operand";
    return NULL;
}

/* Everything the pass found, before the steps move. */
typedef struct s_found {
    int *mark;        /* step -> the last step of its group, or -1 */
    gx_fused **prog;  /* by last step: the group's program, NULL if none formed */
    int **ext;        /* by last step: its inputs */
    gxd_fuse_group *groups; /* in reverse step order, step = old index */
    size_t n_groups;
} s_found;

static int s_find(gxd_cstate *st, s_found *fd)
{
    gxd_plan *p = st->plan;
    const size_t n = p->n_steps;
    int *readers = calloc(p->n_values + 1, sizeof *readers);
    int *last = malloc((p->n_values + 1) * sizeof *last);
    bool *is_out = calloc(p->n_values + 1, sizeof *is_out);
    gx_fused *f = malloc(sizeof *f);
    int ext[GX_FUSED_MAX_IN];
    int rc = GX_ENOMEM;
    if (!readers || !last || !is_out || !f)
        goto out;
    for (size_t v = 0; v < p->n_values; v++)
        last[v] = -1;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < p->steps[i].n_in; k++) {
            int v = p->steps[i].in[k];
            if (v >= 0 && last[v] != (int)i) {
                last[v] = (int)i;
                readers[v]++;
            }
        }
    for (size_t i = 0; i < p->n_outputs; i++)
        is_out[p->outputs[i]] = true;

    for (int r = (int)n - 1; r >= 0; r--) {
        if (fd->mark[r] >= 0 || s_unfusable(p, r))
            continue;
        const gx_view *y = &p->values[p->steps[r].out[0]].view;
        s_group g = {.n = 1, .m = {r}, .head = -1};
        int queue[GX_FUSED_MAX_OPS] = {r}, nq = 1;
        s_why why = {.len = 0};
        char tmp[96];
        fd->mark[r] = r;
        for (int q = 0; q < nq; q++) {
            const gxd_step *s = &p->steps[queue[q]];
            for (int k = 0; k < s->n_in; k++) {
                const int v = s->in[k];
                const int d = v >= 0 ? p->values[v].def : -1;
                if (d < 0 || p->values[v].kind != GXD_VALUE_TEMP || fd->mark[d] == r)
                    continue;
                const gx_view *x = &p->values[v].view;
                if (g.head < 0 && !is_out[v] && readers[v] == 1 && x->dtype == y->dtype &&
                    p->steps[d].device == p->steps[r].device && s_same_shape(x, y) &&
                    s_head_ok(p, d)) { /* an epilogue group */
                    g.head = d;
                    fd->mark[d] = r;
                    if (!s_build(p, fd->mark, r, &g, f, ext))
                        continue;
                    g.head = -1;
                    fd->mark[d] = -1;
                }
                const char *reason = s_neighbour(p, d, v, y, p->steps[r].device, readers, is_out,
                                                 tmp, sizeof tmp);
                if (!reason && g.n == GX_FUSED_MAX_OPS)
                    reason = "the group is full";
                if (!reason) {
                    int j = g.n++;
                    for (; j > 0 && g.m[j - 1] > d; j--)
                        g.m[j] = g.m[j - 1];
                    g.m[j] = d;
                    fd->mark[d] = r;
                    if ((reason = s_build(p, fd->mark, r, &g, f, ext))) {
                        memmove(&g.m[j], &g.m[j + 1], (size_t)(g.n - j - 1) * sizeof *g.m);
                        g.n--;
                        fd->mark[d] = -1;
                    } else {
                        queue[nq++] = d;
                    }
                }
                if (reason)
                    s_why_add(&why, &p->steps[d], reason);
            }
        }
        const int has_head = g.head >= 0, size = g.n + has_head;
        if (size < 2 && !why.len)
            continue;
        gxd_fuse_group *e = &fd->groups[fd->n_groups];
        memset(e, 0, sizeof *e);
        e->step = r;
        e->n_nodes = (size_t)size;
        e->nodes = calloc((size_t)size, sizeof *e->nodes);
        e->ops = calloc((size_t)size, sizeof *e->ops);
        e->why = strdup(why.buf);
        fd->n_groups++;
        if (!e->nodes || !e->ops || !e->why)
            goto out;
        for (int j = 0; j < size; j++) { /* the head runs first */
            const gxd_step *ms = &p->steps[has_head && j == 0 ? g.head : g.m[j - has_head]];
            e->nodes[j] = ms->node->name;
            e->ops[j] = ms->op;
        }
        if (size < 2)
            continue;
        if (s_build(p, fd->mark, r, &g, f, ext)) /* it was built with these members */
            abort();
        if (!(fd->prog[r] = malloc(sizeof *f)) ||
            !(fd->ext[r] = malloc((size_t)(f->n_in + 1) * sizeof *ext)))
            goto out;
        memcpy(fd->prog[r], f, sizeof *f);
        memcpy(fd->ext[r], ext, (size_t)f->n_in * sizeof *ext);
    }
    rc = GX_OK;
out:
    free(readers), free(last), free(is_out), free(f);
    return rc;
}

/* Step i leaves the plan: it is inside another step's group. */
static bool s_dropped(const s_found *fd, size_t i)
{
    return fd->mark[i] >= 0 && fd->mark[i] != (int)i && fd->prog[fd->mark[i]];
}

/* The fused steps take their groups' places; the others leave. */
/* Step i's number after s_rewrite: its own, or its group's. */
static int s_renumber(const s_found *fd, const int *new_idx, int i)
{
    if (i < 0)
        return i;
    return new_idx[i] >= 0 ? new_idx[i] : new_idx[fd->mark[i]];
}

static void s_rewrite(gxd_plan *p, s_found *fd, int *new_idx, double *flops)
{
    const size_t n = p->n_steps;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        new_idx[i] = s_dropped(fd, i) ? -1 : (int)j++;
    for (size_t v = 0; v < p->n_values; v++) {
        gxd_value *val = &p->values[v];
        if (val->def < 0)
            continue;
        if (s_dropped(fd, (size_t)val->def)) {
            val->kind = GXD_VALUE_FUSED;
            val->def = new_idx[fd->mark[val->def]];
            p->fused_values++;
        } else {
            val->def = new_idx[val->def];
        }
    }
    for (size_t i = 0; i < n; i++)
        flops[i] = 0;
    for (size_t i = 0; i < n; i++)
        if (fd->mark[i] >= 0 && fd->prog[fd->mark[i]])
            flops[fd->mark[i]] += p->steps[i].cost.flops;
    /* a fused step takes its head's scratch (its members' only one) */
    for (size_t i = 0; i < n; i++)
        if (s_dropped(fd, i) && p->steps[i].scratch_bytes && !p->steps[i].folded)
            p->steps[fd->mark[i]].scratch_bytes = p->steps[i].scratch_bytes;
    for (size_t i = 0; i < n; i++) {
        gxd_step *s = &p->steps[i];
        if (new_idx[i] < 0) { /* (succ: only set when a test runs the pass again) */
            free(s->in);
            free(s->out);
            free(s->succ);
            continue;
        }
        if (fd->prog[i]) {
            free(s->in);
            s->fused = fd->prog[i];
            s->in = fd->ext[i];
            s->n_in = s->n_formal = s->fused->n_in;
            fd->prog[i] = NULL;
            fd->ext[i] = NULL;
            double bytes = (double)p->values[s->out[0]].nbytes;
            for (int k = 0; k < s->n_in; k++)
                bytes += (double)p->values[s->in[k]].nbytes;
            s->cost = (gx_cost){.flops = flops[i], .bytes = bytes};
        }
        p->steps[new_idx[i]] = *s;
    }
    p->n_steps = j;
}

int gxd_pass_fuse(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    const size_t n = p->n_steps;
    if (st->lim->no_fuse) {
        snprintf(p->fuse_why, sizeof p->fuse_why, "off (compiler.fuse: false)");
        return GX_OK;
    }
    s_found fd = {.mark = malloc((n + 1) * sizeof *fd.mark),
                  .prog = calloc(n + 1, sizeof *fd.prog),
                  .ext = calloc(n + 1, sizeof *fd.ext),
                  .groups = calloc(n + 1, sizeof *fd.groups)};
    int *new_idx = malloc((n + 1) * sizeof *new_idx);
    double *flops = malloc((n + 1) * sizeof *flops);
    int rc = GX_ENOMEM;
    if (!fd.mark || !fd.prog || !fd.ext || !fd.groups || !new_idx || !flops)
        goto out;
    for (size_t i = 0; i < n; i++)
        fd.mark[i] = -1;
    if ((rc = s_find(st, &fd)) < 0)
        goto out;
    s_rewrite(p, &fd, new_idx, flops);
    /* in step order, with the new step numbers */
    for (size_t a = 0, b = fd.n_groups; a < b--; a++) {
        gxd_fuse_group t = fd.groups[a];
        fd.groups[a] = fd.groups[b];
        fd.groups[b] = t;
    }
    for (size_t i = 0; i < fd.n_groups; i++)
        fd.groups[i].step = new_idx[fd.groups[i].step];
    /* the partition pass's records name steps too: a fused step stands
     * for every step of its group */
    for (size_t k = 0; k < p->n_parts; k++) {
        p->parts[k].entry = s_renumber(&fd, new_idx, p->parts[k].entry);
        p->parts[k].exit = s_renumber(&fd, new_idx, p->parts[k].exit);
    }
    for (size_t k = 0; k < p->n_fell; k++)
        p->fell[k].step = s_renumber(&fd, new_idx, p->fell[k].step);
    p->fuse_groups = fd.groups;
    p->n_fuse_groups = fd.n_groups;
    fd.groups = NULL;
    fd.n_groups = 0;
out:
    for (size_t i = 0; i < n && fd.prog; i++) {
        free(fd.prog[i]);
        if (fd.ext)
            free(fd.ext[i]);
    }
    for (size_t i = 0; i < fd.n_groups; i++) {
        free(fd.groups[i].nodes);
        free(fd.groups[i].ops);
        free(fd.groups[i].why);
    }
    free(fd.groups), free(fd.mark), free(fd.prog), free(fd.ext), free(new_idx);
    free(flops);
    if (rc < 0)
        return gx_errf(st->err, st->errlen, rc, "out of memory while fusing steps");
    return GX_OK;
}

bool gxd_fuse_batch_separable(const gxd_plan *p, const gxd_step *s, const bool *in_batched,
                              bool *out_batched)
{
    const gx_fused *f = s->fused;
    const gx_view *y = &p->values[s->out[0]].view;
    gx_view in[GX_FUSED_MAX_IN + 1];
    bool b[GX_FUSED_MAX_IN + 1], used[GX_FUSED_MAX_IN + 1] = {0}, head_b = false;
    if (f->has_head) { /* its own rule, on its inputs */
        gx_view hin[GX_FUSED_MAX_OP_IN];
        bool hb[GX_FUSED_MAX_OP_IN];
        for (int k = 0; k < f->head.n_in; k++) {
            const int c = f->head.in[k];
            hin[k] = c == GX_FUSED_NONE ? (gx_view){.ndim = -1} : p->values[s->in[c]].view;
            hb[k] = c != GX_FUSED_NONE && in_batched[c];
        }
        gx_batch_ctx bc = {.attr = f->head.attr, .n_in = f->head.n_in, .in = hin,
                           .in_batched = hb, .n_out = 1, .out = y, .out_batched = &head_b};
        if (!gx_op_batch_separable(f->head.op, &bc)) {
            out_batched[0] = false;
            return false;
        }
    }
    /* the elementwise ops: the broadcasting rule over what they read */
    for (int o = 0; o < f->n_ops; o++)
        for (int k = 0; k < f->op[o].n_in; k++)
            if (f->op[o].in[k] >= 0)
                used[f->op[o].in[k]] = true;
    int n = 0;
    for (int i = 0; i <= f->n_in; i++) {
        if (!used[i])
            continue;
        in[n] = i < f->n_in ? p->values[s->in[i]].view : *y;
        b[n++] = i < f->n_in ? in_batched[i] : head_b;
    }
    const gx_fused_op *last = &f->op[f->n_ops - 1];
    gx_batch_ctx bc = {.attr = last->attr, .n_in = n, .in = in, .in_batched = b, .n_out = 1,
                       .out = y, .out_batched = out_batched};
    return gx_op_batch_separable(last->op, &bc);
}
