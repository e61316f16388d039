/* Mode selection and dispatch to the executors. See exec.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "daemon/job.h"

int gxd_exec_should_stop(const gxd_exec_stop *stop)
{
    if (atomic_load_explicit(stop->cancel, memory_order_relaxed))
        return GX_ECANCELLED;
    if (stop->deadline_us && gxd_now_us() >= stop->deadline_us)
        return GX_ETIMEDOUT;
    return GX_OK;
}

int gxd_frame_init(gxd_frame *f, const gxd_plan *plan, void *arena, const gx_view *inputs,
                   const gxd_compile_limits *lim, const gxd_exec_stop *stop, char *err,
                   size_t errlen)
{
    return gxd_frame_init_ex(f, plan, arena, false, inputs, lim, stop, err, errlen);
}

int gxd_frame_init_ex(gxd_frame *f, const gxd_plan *plan, void *arena, bool dag,
                      const gx_view *inputs, const gxd_compile_limits *lim,
                      const gxd_exec_stop *stop, char *err, size_t errlen)
{
    return gxd_frame_init_dev(f, plan, arena, NULL, dag, inputs, lim, stop, err, errlen);
}

/* The frame's own arenas and queues on the plan's devices without host
 * memory. */
static int s_devmem_make(gxd_frame *f, bool dag)
{
    const gxd_plan *p = f->plan;
    f->own_dm = true;
    for (size_t d = 1; d < p->n_devices; d++) {
        const gx_backend *b = p->devices[d];
        if (b->host_memory)
            continue;
        const size_t bytes = dag ? p->dev_dag_arena_bytes[d] : p->dev_arena_bytes[d];
        if (!(f->dm.arena[d] = b->alloc(b, bytes)))
            return gx_errf(f->err, f->errlen, GX_ENOMEM, "%s has no room for an arena of %zu bytes",
                           b->name, bytes);
        if (b->queue_new && !(f->dm.queue[d] = b->queue_new(b)))
            return gx_errf(f->err, f->errlen, GX_ENOMEM, "%s: cannot make a queue", b->name);
    }
    return GX_OK;
}

static void s_devmem_free(gxd_frame *f)
{
    const gxd_plan *p = f->plan;
    for (size_t d = 1; f->own_dm && d < p->n_devices; d++) {
        const gx_backend *b = p->devices[d];
        if (f->dm.queue[d]) {
            b->queue_sync(b, f->dm.queue[d]); /* nothing may still use the arena */
            b->queue_free(b, f->dm.queue[d]);
        }
        if (f->dm.arena[d])
            b->free(b, f->dm.arena[d]);
    }
    memset(&f->dm, 0, sizeof f->dm);
    f->own_dm = false;
}

int gxd_frame_init_dev(gxd_frame *f, const gxd_plan *plan, void *arena, const gxd_devmem *dm,
                       bool dag, const gx_view *inputs, const gxd_compile_limits *lim,
                       const gxd_exec_stop *stop, char *err, size_t errlen)
{
    *f = (gxd_frame){.plan = plan, .arena = arena, .lim = lim, .stop = stop, .err = err,
                     .errlen = errlen};
    if (dm) {
        f->dm = *dm;
    } else if (gxd_plan_off_host(plan)) {
        int rc = s_devmem_make(f, dag);
        if (rc < 0) {
            s_devmem_free(f);
            return rc;
        }
    }
    f->val = calloc(plan->n_values + 1, sizeof *f->val);
    f->heap = plan->n_dynamic ? calloc(plan->n_values + 1, sizeof *f->heap) : NULL;
    f->strs = gx_strheap_new(lim ? (size_t)lim->max_tensor_bytes : SIZE_MAX);
    f->own_strs = true;
    if (!f->val || (plan->n_dynamic && !f->heap) || !f->strs) {
        gxd_frame_fini(f);
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory for a frame of %zu values",
                       plan->n_values);
    }
    for (size_t i = 0; i < plan->n_values; i++) {
        const gxd_value *v = &plan->values[i];
        f->val[i] = v->view;
        if (v->kind == GXD_VALUE_INPUT || v->kind == GXD_VALUE_TEMP)
            f->val[i].data = (char *)(v->mem ? f->dm.arena[v->mem] : arena) +
                             (dag ? plan->dag_offset[i] : v->offset);
    }
    for (size_t i = 0; i < plan->n_inputs; i++) {
        const gxd_value *v = &plan->values[plan->inputs[i]];
        const size_t es = gx_dtype_size(v->view.dtype);
        if (inputs[i].kind != v->view.kind) {
            gxd_frame_fini(f);
            return gx_errf(err, errlen, GX_EDTYPE, "input '%s' is a %s; the plan was made for a %s",
                           v->name, gx_kind_name(inputs[i].kind), gx_kind_name(v->view.kind));
        }
        if (v->view.kind != GX_KIND_TENSOR) { /* a sequence or none: read where it is */
            f->val[plan->inputs[i]] = inputs[i];
            continue;
        }
        if (!v->nbytes)
            continue;
        if (es && (uintptr_t)inputs[i].data % es == 0) /* read in place: no kernel writes */
            f->val[plan->inputs[i]].data = (void *)inputs[i].data; /* its inputs */
        else
            memcpy(f->val[plan->inputs[i]].data, inputs[i].data, v->nbytes);
    }
    return GX_OK;
}

void gxd_frame_fini(gxd_frame *f)
{
    if (f->heap)
        for (size_t i = 0; i < f->plan->n_values; i++)
            if (f->heap[i]) {
                gx_view v = f->val[i];
                v.data = f->heap[i];
                gxd_view_free(&v);
            }
    free(f->heap);
    free(f->val);
    f->heap = NULL;
    f->val = NULL;
    if (f->own_strs)
        gx_strheap_destroy(&f->strs);
    f->strs = NULL;
    if (f->plan)
        s_devmem_free(f);
}

void gxd_frame_borrow_strs(gxd_frame *f, const gxd_frame *parent)
{
    if (f->own_strs)
        gx_strheap_destroy(&f->strs);
    f->strs = parent->strs;
    f->own_strs = false;
}

const gx_view *gxd_frame_output(const gxd_frame *f, size_t i)
{
    return &f->val[f->plan->outputs[i]];
}

/* A dynamic step's outputs: infer with every input's data, then heap
 * buffers for the outputs and, if the kernel wants it, scratch. */
static int s_dynamic_outputs(gxd_frame *f, const gxd_step *st, const gx_view *in, gx_view *out,
                             void **scratch)
{
    const gx_op_schema *sc = gx_op_schema_get(st->op);
    char msg[384] = "", sh[160];
    memset(out, 0, sizeof *out * (size_t)st->n_out);
    gx_infer ic = {st->attr, st->n_formal, in, st->n_out, out, msg, sizeof msg};
    int rc = sc->infer(&ic);
    if (rc == GX_OK)
        rc = gx_op_check_strings(st->op, &ic);
    if (rc == GX_INFER_DYNAMIC)
        rc = gx_errf(msg, sizeof msg, GX_EINTERNAL, "inference still depends on unknown values");
    if (rc < 0)
        return gx_errf(f->err, f->errlen, rc, "node '%s' (%s): %s", st->node->name, st->node->op,
                       msg[0] ? msg : gx_strerror(rc));
    for (int k = 0; k < st->n_out; k++) {
        size_t es = gx_dtype_size(out[k].dtype), nbytes = 0;
        int64_t n = es ? gx_shape_numel(out[k].ndim, out[k].shape,
                                        f->lim->max_tensor_bytes / (int64_t)es)
                       : -1;
        if (n < 0)
            return gx_errf(f->err, f->errlen, GX_ELIMIT,
                           "node '%s' (%s): output %d of shape %s is larger than the tensor limit of %lld bytes",
                           st->node->name, st->node->op, k,
                           gx_shape_str(out[k].ndim, out[k].shape, sh, sizeof sh),
                           (long long)f->lim->max_tensor_bytes);
        out[k].numel = n;
        nbytes = (size_t)n * es;
        int v = st->out[k];
        free(f->heap[v]);
        if (!(f->heap[v] = gx_aligned_alloc(nbytes ? nbytes : 1)))
            return gx_errf(f->err, f->errlen, GX_ENOMEM, "node '%s': out of memory for %zu bytes",
                           st->node->name, nbytes);
        out[k].data = f->heap[v];
        f->val[v] = out[k];
    }
    size_t sbytes = sc->scratch ? sc->scratch(&ic) : 0;
    if (sbytes && !(*scratch = gx_aligned_alloc(sbytes)))
        return gx_errf(f->err, f->errlen, GX_ENOMEM, "node '%s': out of memory for %zu bytes",
                       st->node->name, sbytes);
    return GX_OK;
}

int gxd_exec_step(gxd_frame *f, size_t s)
{
    return gxd_exec_step_share(f, s, 0, 1, NULL);
}

/* A copy step: its input's bytes into its output, between the memories
 * of the devices that hold them (through a host buffer between two
 * devices). */
static int s_copy(gxd_frame *f, const gxd_step *st)
{
    const gxd_plan *p = f->plan;
    const int from = p->values[st->in[0]].mem, to = p->values[st->out[0]].mem;
    const gx_backend *src = p->devices[from], *dst = p->devices[to];
    void *y = f->val[st->out[0]].data;
    const void *x = f->val[st->in[0]].data;
    const size_t n = p->values[st->out[0]].nbytes;
    int rc;
    if (from == to)
        rc = dst->copy(dst, to ? GX_COPY_ON_DEVICE : GX_COPY_TO_HOST, y, x, n, f->dm.queue[to]);
    else if (!from)
        rc = dst->copy(dst, GX_COPY_TO_DEVICE, y, x, n, f->dm.queue[to]);
    else if (!to)
        rc = src->copy(src, GX_COPY_TO_HOST, y, x, n, f->dm.queue[from]);
    else { /* device to device */
        void *host = gx_aligned_alloc(n ? n : 1);
        rc = !host ? GX_ENOMEM : src->copy(src, GX_COPY_TO_HOST, host, x, n, f->dm.queue[from]);
        if (rc == GX_OK)
            rc = dst->copy(dst, GX_COPY_TO_DEVICE, y, host, n, f->dm.queue[to]);
        free(host);
    }
    if (rc < 0)
        return gx_errf(f->err, f->errlen, rc, "copying '%s' from %s to %s: %s",
                       p->values[st->in[0]].name, src->name, dst->name, gx_strerror(rc));
    return GX_OK;
}

int gxd_exec_step_share(gxd_frame *f, size_t s, int ith, int nth, gx_coop *coop)
{
    const gxd_step *st = &f->plan->steps[s];
    if (st->folded)
        return GX_OK;
    if (st->copy)
        return ith ? GX_OK : s_copy(f, st);
    if (!st->kernel)
        return gxd_exec_control(f, st);
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    for (int k = 0; k < st->n_formal; k++) {
        if (st->in[k] < 0) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].ndim = -1;
        } else {
            in[k] = f->val[st->in[k]];
        }
        if (st->in[k] >= 0 && in[k].kind != GX_KIND_TENSOR) {
            /* a sequence or none reaches a kernel only through a dynamic
             * step; Identity passes it on, every other op refuses it */
            if (st->op == GX_OP_IDENTITY && st->n_out == 1 && !st->fused && !ith) {
                gxd_frame_alias(f, st->out[0], &in[k]);
                return GX_OK;
            }
            return gx_errf(f->err, f->errlen, GX_EDTYPE,
                           "node '%s' (%s): input %d is a %s; the op takes tensors",
                           st->node->name, st->node->op, k, gx_kind_name(in[k].kind));
        }
    }
    void *scratch = NULL;
    if (st->dynamic) {
        int rc = s_dynamic_outputs(f, st, in, out, &scratch);
        if (rc < 0) {
            free(scratch);
            return rc;
        }
    } else {
        for (int k = 0; k < st->n_out; k++)
            out[k] = f->val[st->out[k]];
        if (st->scratch >= 0)
            scratch = f->val[st->scratch].data;
    }
    const gx_backend *dev = f->plan->devices[st->device];
    gx_kargs ka = {.attr = st->attr, .n_in = st->n_formal, .in = in, .n_out = st->n_out,
                   .out = out, .scratch = scratch, .ith = ith, .nth = nth, .coop = coop,
                   .queue = f->dm.queue[st->device], .strs = f->strs};
    if (st->fused)
        dev->fused(dev, st->fused, &ka);
    else
        st->kernel(&ka);
    if (st->dynamic)
        free(scratch);
    size_t limit;
    if (gx_strheap_failed(f->strs, &limit))
        return gx_errf(f->err, f->errlen, GX_ELIMIT,
                       "node '%s' (%s): the job's strings exceed the limit of %zu bytes "
                       "(limits.max_tensor_bytes)",
                       st->node->name, st->node->op, limit);
    return GX_OK;
}

double gxd_step_cost_us(const gxd_plan *p, size_t s)
{
    int64_t ns = atomic_load_explicit(&p->stats[s].ns, memory_order_relaxed);
    return ns > 0 ? (double)ns / 1000.0 : p->steps[s].est_us;
}

void gxd_step_record(const gxd_plan *p, size_t s, int64_t ns)
{
    gxd_step_stats *st = &p->stats[s];
    int64_t old = atomic_load_explicit(&st->ns, memory_order_relaxed);
    if (ns <= 0)
        ns = 1;
    /* quick to come down (the first runs are cold: page faults, caches),
     * slow to go up (a run that was preempted) */
    int64_t now = old <= 0 ? ns : ns < old ? (old + ns) / 2 : old + (ns - old) / 8;
    atomic_store_explicit(&st->ns, now, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->runs, 1, memory_order_relaxed);
}

bool gxd_plan_wants_timing(const gxd_plan *p)
{
    int64_t n = atomic_fetch_add_explicit(&p->stats[p->n_steps].runs, 1, memory_order_relaxed);
    return (n >= 1 && n < 6) || n % GXD_TIMING_EVERY == 0;
}
