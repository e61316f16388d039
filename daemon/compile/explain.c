/*
 * explain: a compiled plan as JSON, for `gexec-submit explain` (EXPLAIN
 * request, docs/protocol.md). Read-only: it looks at what the passes wrote
 * into the plan and never recomputes a decision.
 *
 * The object has one key per section, written by one function each and
 * listed in s_sections[] in output order; a pass that records new reasons
 * in the plan adds a row and a function there. Sections print only what
 * the plan holds: one with nothing to say writes an empty array or object.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/compile/layout.h"
#include "daemon/tune/tune.h"
#include "ops/layout.h"

/* Append a string literal. */
#define S_LIT(b, lit) gx_strbuf_put(b, lit, sizeof lit - 1)

typedef struct s_ctx {
    const gxd_plan *p;
    const gx_graph *g;
    int *scratch_of; /* value -> the step whose scratch it is, or -1 */
} s_ctx;

static void s_str(gx_strbuf *b, const char *s)
{
    if (s)
        gx_strbuf_json_str(b, s, strlen(s));
    else
        S_LIT(b, "null");
}

/* A float, or null when it has no JSON spelling. */
static void s_num(gx_strbuf *b, double v)
{
    if (isfinite(v))
        gx_strbuf_printf(b, "%.6g", v);
    else
        S_LIT(b, "null");
}

static void s_shape(gx_strbuf *b, const gx_view *v)
{
    if (v->ndim < 0) { /* dynamic: known at run time */
        S_LIT(b, "null");
        return;
    }
    S_LIT(b, "[");
    for (int i = 0; i < v->ndim; i++)
        gx_strbuf_printf(b, i ? ",%lld" : "%lld", (long long)v->shape[i]);
    S_LIT(b, "]");
}

/* ",\"bytes\":N", null for a value whose size is known only at run time. */
static void s_bytes(gx_strbuf *b, const gxd_value *v)
{
    if (v->kind == GXD_VALUE_DYNAMIC)
        S_LIT(b, ",\"bytes\":null");
    else
        gx_strbuf_printf(b, ",\"bytes\":%zu", v->nbytes);
}

static const char *s_value_kind(const s_ctx *x, int v)
{
    if (x->scratch_of[v] >= 0)
        return "scratch";
    switch (x->p->values[v].kind) {
    case GXD_VALUE_INPUT: return "input";
    case GXD_VALUE_CONST: return "const";
    case GXD_VALUE_TEMP: return "temp";
    case GXD_VALUE_DYNAMIC: return "dynamic";
    case GXD_VALUE_FUSED: return "fused";
    }
    return "?";
}

/* How a step runs: "folded" (at compile time, never per job), "control
 * flow" (the executor runs its subgraphs), "dynamic" (its kernel, after
 * infer runs again on the data), else "static". */
static const char *s_step_run(const gxd_step *s)
{
    if (s->folded)
        return "folded";
    if (!s->kernel && !s->copy)
        return "control flow";
    return s->dynamic ? "dynamic" : "static";
}

/* A value's name, as steps list it (an omitted optional input is null). */
static void s_value_ref(gx_strbuf *b, const s_ctx *x, int v)
{
    s_str(b, v >= 0 ? x->p->values[v].name : NULL);
}

static void s_decl_list(gx_strbuf *b, const s_ctx *x, const int *idx, size_t n, bool inputs)
{
    S_LIT(b, "[");
    for (size_t i = 0; i < n; i++) {
        const gxd_value *v = &x->p->values[idx[i]];
        gx_strbuf_printf(b, "%s{\"name\":", i ? "," : "");
        s_str(b, v->name);
        S_LIT(b, ",\"dtype\":");
        s_str(b, v->view.ndim >= 0 ? gx_dtype_name(v->view.dtype) : NULL);
        S_LIT(b, ",\"shape\":");
        s_shape(b, &v->view);
        s_bytes(b, v);
        if (inputs)
            gx_strbuf_printf(b, ",\"keyed\":%s", v->keyed ? "true" : "false");
        S_LIT(b, "}");
    }
    S_LIT(b, "]");
}

/* ---- sections ---- */

static void s_sec_summary(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    size_t folded = 0;
    double est = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        folded += p->steps[i].folded;
        est += p->steps[i].est_us;
    }
    gx_strbuf_printf(b, "{\"steps\":%zu,\"folded\":%zu,\"dynamic\":%zu,\"control\":%zu,"
                        "\"values\":%zu,\"flops\":",
                     p->n_steps, folded, p->n_dynamic, p->n_control, p->n_values);
    s_num(b, p->flops);
    S_LIT(b, ",\"est_us\":");
    s_num(b, est);
    S_LIT(b, "}");
}

static void s_sec_inputs(gx_strbuf *b, const s_ctx *x)
{
    s_decl_list(b, x, x->p->inputs, x->p->n_inputs, true);
}

static void s_sec_outputs(gx_strbuf *b, const s_ctx *x)
{
    s_decl_list(b, x, x->p->outputs, x->p->n_outputs, false);
}

static void s_sec_steps(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "[");
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        gx_strbuf_printf(b, "%s{\"index\":%zu,\"node\":", i ? "," : "", i);
        s_str(b, s->node->name);
        S_LIT(b, ",\"op\":");
        s_str(b, gx_op_name(s->op));
        S_LIT(b, ",\"inputs\":[");
        for (int k = 0; k < s->n_formal; k++) {
            if (k)
                S_LIT(b, ",");
            s_value_ref(b, x, s->in[k]);
        }
        S_LIT(b, "],\"captured\":[");
        for (int k = s->n_formal; k < s->n_in; k++) {
            if (k > s->n_formal)
                S_LIT(b, ",");
            s_value_ref(b, x, s->in[k]);
        }
        S_LIT(b, "],\"outputs\":[");
        for (int k = 0; k < s->n_out; k++) {
            if (k)
                S_LIT(b, ",");
            s_value_ref(b, x, s->out[k]);
        }
        S_LIT(b, "],\"run\":");
        s_str(b, s_step_run(s));
        /* the device the partition pass chose; a fused step runs the group's
         * kernel, a copy the devices' copies */
        const char *dev = s->device >= 0 && (size_t)s->device < p->n_devices
                              ? p->devices[s->device]->name
                              : "cpu";
        S_LIT(b, ",\"device\":");
        s_str(b, dev);
        S_LIT(b, ",\"kernel\":");
        if (s->copy)
            gx_strbuf_printf(b, "\"%s.copy\"", dev);
        else if (!s->kernel || s->folded)
            S_LIT(b, "null");
        else if (s->fused)
            gx_strbuf_printf(b, "\"%s.fused\"", dev);
        else if (s->reorder)
            gx_strbuf_printf(b, "\"%s.reorder\"", dev);
        else if (s->layout != GX_LAYOUT_PLAIN)
            gx_strbuf_printf(b, "\"%s.%s.%s\"", dev, gx_op_name(s->op), gx_layout_name(s->layout));
        else
            gx_strbuf_printf(b, "\"%s.%s\"", dev, gx_op_name(s->op));
        S_LIT(b, ",\"fused\":[");
        for (size_t gi = 0; s->fused && gi < p->n_fuse_groups; gi++)
            if (p->fuse_groups[gi].step == (int)i)
                for (size_t k = 0; k < p->fuse_groups[gi].n_nodes; k++) {
                    if (k)
                        S_LIT(b, ",");
                    s_str(b, p->fuse_groups[gi].nodes[k]);
                }
        S_LIT(b, "]");
        S_LIT(b, ",\"est_us\":");
        s_num(b, s->est_us);
        /* what runs measured (or the profile store seeded): the policy's
         * estimate where present */
        int64_t ns = p->stats ? atomic_load_explicit(&p->stats[i].ns, memory_order_relaxed) : 0;
        S_LIT(b, ",\"measured_us\":");
        if (ns > 0)
            s_num(b, (double)ns / 1000.0);
        else
            S_LIT(b, "null");
        S_LIT(b, ",\"flops\":");
        s_num(b, s->cost.flops);
        S_LIT(b, ",\"bytes\":");
        s_num(b, s->cost.bytes);
        gx_strbuf_printf(b, ",\"scratch_bytes\":%zu,\"preds\":%d,\"succ\":[",
                         s->folded || s->dynamic ? (size_t)0 : s->scratch_bytes, s->n_preds);
        for (int k = 0; k < s->n_succ; k++)
            gx_strbuf_printf(b, k ? ",%d" : "%d", s->succ[k]);
        gx_strbuf_printf(b, "],\"on_batch\":%s}", s->on_batch ? "true" : "false");
    }
    S_LIT(b, "]");
}

/* Every value: where it lives in either arena and for which steps. */
static void s_sec_buffers(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "[");
    for (size_t i = 0; i < p->n_values; i++) {
        const gxd_value *v = &p->values[i];
        bool placed = v->kind == GXD_VALUE_INPUT || v->kind == GXD_VALUE_TEMP;
        gx_strbuf_printf(b, "%s{\"value\":", i ? "," : "");
        s_str(b, v->name);
        S_LIT(b, ",\"kind\":");
        s_str(b, s_value_kind(x, (int)i));
        S_LIT(b, ",\"dtype\":");
        s_str(b, v->view.ndim >= 0 ? gx_dtype_name(v->view.dtype) : NULL);
        S_LIT(b, ",\"shape\":");
        s_shape(b, &v->view);
        S_LIT(b, ",\"layout\":");
        s_str(b, v->view.ndim == 4 || v->view.layout != GX_LAYOUT_PLAIN
                     ? gx_layout_name(v->view.layout)
                     : NULL);
        s_bytes(b, v);
        if (placed)
            gx_strbuf_printf(b, ",\"buffer\":%d,\"offset\":%zu", v->buffer, v->offset);
        else
            S_LIT(b, ",\"buffer\":null,\"offset\":null");
        if (placed && p->dag_ok)
            gx_strbuf_printf(b, ",\"dag_offset\":%zu", p->dag_offset[i]);
        else
            S_LIT(b, ",\"dag_offset\":null");
        S_LIT(b, ",\"view_of\":");
        s_str(b, v->is_view ? p->values[gxd_view_source(p, (int)i)].name : NULL);
        S_LIT(b, ",\"in_place_of\":");
        s_str(b, v->placed_in ? p->values[v->placed_in - 1].name : NULL);
        gx_strbuf_printf(b, ",\"def\":%d,\"last_use\":%d,\"graph_output\":%s}", v->def,
                         v->last_use, v->last_use >= (int)p->n_steps ? "true" : "false");
    }
    S_LIT(b, "]");
}

static void s_sec_memory(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    gx_strbuf_printf(b, "{\"arena_bytes\":%zu,\"naive_bytes\":%zu,\"buffers\":%zu,\"dag_ok\":%s,",
                     p->arena_bytes, p->naive_bytes, p->n_buffers, p->dag_ok ? "true" : "false");
    if (p->dag_ok)
        gx_strbuf_printf(b, "\"dag_arena_bytes\":%zu,\"dag_why\":null,", p->dag_arena_bytes);
    else {
        S_LIT(b, "\"dag_arena_bytes\":null,\"dag_why\":");
        s_str(b, p->dag_why);
        S_LIT(b, ",");
    }
    gx_strbuf_printf(b, "\"width\":%d}", p->width);
}

static void s_sec_batch(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    gx_strbuf_printf(b, "{\"batch\":%lld,\"sync_steps\":%zu,\"why\":", (long long)p->batch,
                     p->sync_steps);
    s_str(b, p->batch > 0 ? NULL : p->batch_why);
    S_LIT(b, "}");
}

/* Element k of a keyed input's value (integers, bools and floats of the
 * sizes keys are made of; half floats as null). */
static void s_elem(gx_strbuf *b, const gx_view *v, int64_t k)
{
    const void *d = v->data;
    switch (v->dtype) {
    case GX_I64: gx_strbuf_printf(b, "%lld", (long long)((const int64_t *)d)[k]); return;
    case GX_I32: gx_strbuf_printf(b, "%d", ((const int32_t *)d)[k]); return;
    case GX_I16: gx_strbuf_printf(b, "%d", ((const int16_t *)d)[k]); return;
    case GX_I8: gx_strbuf_printf(b, "%d", ((const int8_t *)d)[k]); return;
    case GX_U64: gx_strbuf_printf(b, "%llu", (unsigned long long)((const uint64_t *)d)[k]); return;
    case GX_U32: gx_strbuf_printf(b, "%u", ((const uint32_t *)d)[k]); return;
    case GX_U16: gx_strbuf_printf(b, "%u", ((const uint16_t *)d)[k]); return;
    case GX_U8: gx_strbuf_printf(b, "%u", ((const uint8_t *)d)[k]); return;
    case GX_BOOL: gx_strbuf_printf(b, "%s", ((const uint8_t *)d)[k] ? "true" : "false"); return;
    case GX_F32: s_num(b, ((const float *)d)[k]); return;
    case GX_F64: s_num(b, ((const double *)d)[k]); return;
    case GX_F16:
    case GX_BF16:
    case GX_STRING:
    case GX_DTYPE_COUNT:
        break;
    }
    S_LIT(b, "null");
}

/* Keyed inputs: their values are part of the plan's signature. */
static void s_sec_keyed(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "{\"inputs\":[");
    size_t n = 0;
    for (size_t i = 0; i < p->n_inputs; i++) {
        const gxd_value *v = &p->values[p->inputs[i]];
        if (!v->keyed)
            continue;
        gx_strbuf_printf(b, "%s{\"name\":", n++ ? "," : "");
        s_str(b, v->name);
        S_LIT(b, ",\"value\":[");
        for (int64_t k = 0; k < v->view.numel && v->view.data; k++) {
            if (k)
                S_LIT(b, ",");
            s_elem(b, &v->view, k);
        }
        S_LIT(b, "]}");
    }
    /* compiled without the values of inputs whose values shapes depend on:
     * the steps reading them run dynamically, and the plan is not cached */
    gx_strbuf_printf(b, "],\"values_missing\":%s}", p->needs_keys ? "true" : "false");
}

static void s_sec_folded(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "[");
    size_t n = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!s->folded)
            continue;
        gx_strbuf_printf(b, "%s{\"index\":%zu,\"node\":", n++ ? "," : "", i);
        s_str(b, s->node->name);
        S_LIT(b, ",\"op\":");
        s_str(b, gx_op_name(s->op));
        S_LIT(b, ",\"outputs\":[");
        for (int k = 0; k < s->n_out; k++) {
            if (k)
                S_LIT(b, ",");
            s_value_ref(b, x, s->out[k]);
        }
        S_LIT(b, "]}");
    }
    S_LIT(b, "]");
}

/* The widen pass's records: each step that computes in float32 what the
 * graph has in float16 or bfloat16 (its node, op, that dtype and why),
 * the Cast steps it inserted and the constants it converted; and the
 * steps kept at that dtype for a device whose kernels run it
 * (device_half: node, op, dtype, device). */
static void s_sec_widen(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    gx_strbuf_printf(b, "{\"casts\":%zu,\"constants\":%zu,\"constant_bytes\":%zu,\"steps\":[",
                     p->widen_casts, p->widen_consts, p->widen_const_bytes);
    for (size_t i = 0; i < p->n_widened; i++) {
        const gxd_widened *w = &p->widened[i];
        if (i)
            S_LIT(b, ",");
        S_LIT(b, "{\"node\":");
        s_str(b, w->node);
        S_LIT(b, ",\"op\":");
        s_str(b, gx_op_name(w->op));
        S_LIT(b, ",\"from\":");
        s_str(b, gx_dtype_name(w->half));
        S_LIT(b, ",\"why\":");
        s_str(b, w->why);
        S_LIT(b, "}");
    }
    S_LIT(b, "],\"device_half\":[");
    bool any = false;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!s->dev_half)
            continue;
        if (any)
            S_LIT(b, ",");
        S_LIT(b, "{\"node\":");
        s_str(b, s->node->name);
        S_LIT(b, ",\"op\":");
        s_str(b, gx_op_name(s->op));
        S_LIT(b, ",\"dtype\":");
        s_str(b, gx_dtype_name(p->values[s->out[0]].view.dtype));
        S_LIT(b, ",\"device\":");
        s_str(b, p->devices[s->device]->name);
        S_LIT(b, "}");
        any = true;
    }
    S_LIT(b, "]}");
}

/* The rewrite pass's records: each rewrite it made (the step's node, the
 * rule, what it replaced) and each near miss with why it declined. */
static void s_sec_rewrite(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "{\"off\":");
    if (p->rewrite_why[0])
        s_str(b, p->rewrite_why);
    else
        S_LIT(b, "null");
    for (int applied = 1; applied >= 0; applied--) {
        if (applied)
            S_LIT(b, ",\"applied\":[");
        else
            S_LIT(b, ",\"declined\":[");
        size_t n = 0;
        for (size_t i = 0; i < p->n_rewrites; i++) {
            const gxd_rewrite *r = &p->rewrites[i];
            if (r->applied != (bool)applied)
                continue;
            if (n++)
                S_LIT(b, ",");
            S_LIT(b, "{\"rule\":");
            s_str(b, r->rule);
            S_LIT(b, ",\"node\":");
            s_str(b, r->node);
            if (applied) {
                S_LIT(b, ",\"nodes\":[");
                for (size_t k = 0; k < r->n_nodes; k++) {
                    if (k)
                        S_LIT(b, ",");
                    s_str(b, r->nodes[k]);
                }
                S_LIT(b, "],\"what\":");
            } else {
                S_LIT(b, ",\"why\":");
            }
            s_str(b, r->what);
            S_LIT(b, "}");
        }
        S_LIT(b, "]");
    }
    S_LIT(b, "}");
}

/* The fuse pass's groups (seed 000): each fused step's nodes and ops in
 * run order, and why the neighbours of each group (or of a lone
 * elementwise step) stayed out. */
static void s_sec_fusion(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "{\"off\":");
    if (p->fuse_why[0])
        s_str(b, p->fuse_why);
    else
        S_LIT(b, "null");
    gx_strbuf_printf(b, ",\"values_removed\":%zu,\"groups\":[", p->fused_values);
    for (size_t gi = 0; gi < p->n_fuse_groups; gi++) {
        const gxd_fuse_group *fg = &p->fuse_groups[gi];
        gx_strbuf_printf(b, "%s{\"step\":%d,\"nodes\":[", gi ? "," : "", fg->step);
        for (size_t k = 0; k < fg->n_nodes; k++) {
            if (k)
                S_LIT(b, ",");
            s_str(b, fg->nodes[k]);
        }
        S_LIT(b, "],\"ops\":[");
        for (size_t k = 0; k < fg->n_nodes; k++) {
            if (k)
                S_LIT(b, ",");
            s_str(b, gx_op_name(fg->ops[k]));
        }
        S_LIT(b, "],\"why_not_more\":");
        s_str(b, fg->why ? fg->why : "");
        S_LIT(b, "}");
    }
    S_LIT(b, "]}");
}

/* Runs of two or more consecutive kernel steps that begin in part k on a
 * device with graph slots: the sequential executor replays each as one
 * graph (daemon/exec/exec_seq.c) when scheduler.device_graphs is on. */
static int s_graph_runs(const gxd_plan *p, int k)
{
    int runs = 0;
    for (size_t s = 0; s < p->n_steps;) {
        const gxd_step *st = &p->steps[s];
        const gx_backend *b = p->devices[st->device];
        if (st->folded || st->part != k || !st->kernel || st->copy || st->dynamic ||
            st->device == 0 || !b->capture_begin) {
            s++;
            continue;
        }
        int kernels = 0;
        for (; s < p->n_steps; s++) {
            const gxd_step *t = &p->steps[s];
            if (t->folded)
                continue;
            if (t->device != st->device || !t->kernel || t->copy || t->dynamic)
                break;
            kernels++;
        }
        runs += kernels >= 2;
    }
    return runs;
}

/* The partition pass's records (seed 000): the devices offered, the
 * partitions with their entry and exit, copies, and why each step that
 * fell out of a device did. */
static void s_sec_partition(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "{\"devices\":[");
    for (size_t d = 0; d < p->n_devices; d++) {
        if (d)
            S_LIT(b, ",");
        s_str(b, p->devices[d]->name);
    }
    S_LIT(b, "],\"parts\":[");
    for (size_t k = 0; k < p->n_parts; k++) {
        const gxd_part *pt = &p->parts[k];
        gx_strbuf_printf(b, "%s{\"device\":", k ? "," : "");
        s_str(b, pt->device >= 0 && (size_t)pt->device < p->n_devices
                     ? p->devices[pt->device]->name
                     : "?");
        gx_strbuf_printf(b, ",\"steps\":%d,\"entry\":%d,\"exit\":%d,\"graph_runs\":%d}",
                         pt->n_steps, pt->entry, pt->exit, s_graph_runs(p, (int)k));
    }
    gx_strbuf_printf(b, "],\"copies\":%zu,\"fell\":[", p->n_copies);
    for (size_t k = 0; k < p->n_fell; k++) {
        const gxd_fallout *f = &p->fell[k];
        gx_strbuf_printf(b, "%s{\"step\":%d,\"node\":", k ? "," : "", f->step);
        s_str(b, f->step >= 0 && (size_t)f->step < p->n_steps ? p->steps[f->step].node->name : "?");
        S_LIT(b, ",\"device\":");
        s_str(b, f->device >= 0 && (size_t)f->device < p->n_devices ? p->devices[f->device]->name
                                                                    : "?");
        S_LIT(b, ",\"why\":");
        s_str(b, f->why);
        S_LIT(b, "}");
    }
    S_LIT(b, "]}");
}

/* The layout pass's records (seed 001): each op it could lay out, with
 * its cost per layout and expected executions, and the choice; the totals;
 * the reorder steps. */
static void s_sec_layout(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    const gxd_layout_rec *r = p->layout;
    if (!r || r->why[0]) {
        S_LIT(b, "{\"off\":");
        s_str(b, r ? r->why : p->from_artifact ? "not saved in the artifact" : "not run");
        S_LIT(b, "}");
        return;
    }
    S_LIT(b, "{\"total_us\":");
    s_num(b, r->total);
    S_LIT(b, ",\"plain_us\":");
    s_num(b, r->plain_total);
    gx_strbuf_printf(b, ",\"exact\":%s,\"constants_rewritten\":%zu,\"ops\":[",
                     r->exact ? "true" : "false", r->n_packed);
    bool first = true;
    for (size_t o = 0; o < r->n_ops; o++) {
        const gxd_layout_op *op = &r->ops[o];
        if (!op->free && op->fixed == GX_LAYOUT_PLAIN)
            continue; /* fixed plain: nothing to say */
        gx_strbuf_printf(b, "%s{\"node\":", first ? "" : ",");
        first = false;
        s_str(b, op->node);
        S_LIT(b, ",\"op\":");
        s_str(b, op->op < GX_OP_COUNT ? gx_op_name(op->op) : "graph input");
        S_LIT(b, ",\"count\":");
        s_num(b, op->count);
        S_LIT(b, ",\"cost_us\":{");
        for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
            gx_strbuf_printf(b, "%s\"%s\":", l ? "," : "", gx_layout_name((gx_layout)l));
            s_num(b, op->free ? op->cost[l] : NAN);
        }
        S_LIT(b, "},\"chosen\":");
        s_str(b, gx_layout_name((gx_layout)op->chosen));
        S_LIT(b, ",\"why_not\":");
        s_str(b, op->why);
        S_LIT(b, "}");
    }
    S_LIT(b, "],\"reorders\":[");
    first = true;
    for (size_t i = 0; i < p->n_steps; i++) {
        const gxd_step *s = &p->steps[i];
        if (!s->reorder)
            continue;
        gx_strbuf_printf(b, "%s{\"step\":%zu,\"value\":", first ? "" : ",", i);
        first = false;
        s_str(b, p->values[s->in[0]].name);
        S_LIT(b, ",\"from\":");
        s_str(b, gx_layout_name(p->values[s->in[0]].view.layout));
        S_LIT(b, ",\"to\":");
        s_str(b, gx_layout_name(s->layout));
        S_LIT(b, "}");
    }
    S_LIT(b, "]}");
}

/* The prepare pass's constants: each made once per plan for the kernel
 * of a step, and their total bytes (part of the plan's memory). */
static void s_sec_prepared(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    gx_strbuf_printf(b, "{\"bytes\":%zu,\"freed\":%zu,\"freed_bytes\":%zu,\"constants\":[",
                     p->prepared_bytes, p->freed_consts, p->freed_const_bytes);
    for (size_t i = 0; i < p->n_prepared; i++) {
        const gxd_prepared *r = &p->prepared[i];
        gx_strbuf_printf(b, "%s{\"node\":", i ? "," : "");
        s_str(b, r->node ? r->node : "");
        S_LIT(b, ",\"from\":");
        s_str(b, r->from);
        S_LIT(b, ",\"value\":");
        s_str(b, p->values[r->value].name);
        gx_strbuf_printf(b, ",\"bytes\":%zu,\"borrowed\":%s,\"what\":", r->bytes,
                         r->borrowed ? "true" : "false");
        s_str(b, r->what);
        S_LIT(b, "}");
    }
    S_LIT(b, "]}");
}

/* The implementation each MatMul and Gemm runs (prepare pass, seed 003):
 * impl@version, where the choice came from (default, tuned (memory),
 * tuned (local), tuned (central), whole batch), the record's time, the signature. */
static void s_sec_impls(gx_strbuf *b, const s_ctx *x)
{
    const gxd_plan *p = x->p;
    S_LIT(b, "[");
    for (size_t i = 0; i < p->n_impls; i++) {
        const gxd_impl_choice *c = &p->impls[i];
        char sig[512] = "";
        if (c->sig)
            gxd_tune_sig_str(c->sig, sig, sizeof sig);
        gx_strbuf_printf(b, "%s{\"node\":", i ? "," : "");
        s_str(b, c->node ? c->node : "");
        S_LIT(b, ",\"op\":");
        s_str(b, gx_op_name(c->op));
        S_LIT(b, ",\"impl\":");
        s_str(b, c->impl);
        gx_strbuf_printf(b, ",\"version\":%d,\"source\":", c->version);
        s_str(b, c->source);
        if (c->ns >= 0)
            gx_strbuf_printf(b, ",\"ns\":%lld", (long long)c->ns);
        S_LIT(b, ",\"signature\":");
        s_str(b, c->sig ? sig : NULL);
        S_LIT(b, "}");
    }
    S_LIT(b, "]");
}

/* The sections, in output order. */
static const struct {
    const char *key;
    void (*write)(gx_strbuf *b, const s_ctx *x);
} s_sections[] = {
    {"summary", s_sec_summary}, {"inputs", s_sec_inputs}, {"outputs", s_sec_outputs},
    {"steps", s_sec_steps},     {"buffers", s_sec_buffers}, {"memory", s_sec_memory},
    {"batch", s_sec_batch},     {"keyed", s_sec_keyed},   {"folded", s_sec_folded},
    {"widen", s_sec_widen},     {"rewrite", s_sec_rewrite},
    {"partition", s_sec_partition}, {"layout", s_sec_layout}, {"prepared", s_sec_prepared},
    {"fusion", s_sec_fusion}, {"implementations", s_sec_impls},
};

char *gxd_plan_explain_json(const gxd_plan *p, const gx_graph *g)
{
    s_ctx x = {.p = p, .g = g};
    if (!(x.scratch_of = malloc((p->n_values + 1) * sizeof *x.scratch_of)))
        return NULL;
    for (size_t i = 0; i < p->n_values; i++)
        x.scratch_of[i] = -1;
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].scratch >= 0 && p->steps[i].scratch_bytes && !p->steps[i].folded &&
            !p->steps[i].dynamic)
            x.scratch_of[p->steps[i].scratch] = (int)i;
    gx_strbuf b = {0};
    S_LIT(&b, "{\"graph\":");
    s_str(&b, g->name);
    /* a plan read from an artifact file has no records of the passes */
    S_LIT(&b, ",\"source\":");
    s_str(&b, p->from_artifact ? "from artifact" : "compiled");
    for (size_t i = 0; i < sizeof s_sections / sizeof s_sections[0]; i++) {
        S_LIT(&b, ",");
        s_str(&b, s_sections[i].key);
        S_LIT(&b, ":");
        s_sections[i].write(&b, &x);
    }
    S_LIT(&b, "}");
    free(x.scratch_of);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
