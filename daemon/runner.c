/* Running one job on a worker. See runner.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "daemon/batcher.h"
#include "daemon/exec/exec.h"
#include "daemon/policy.h"
#include "daemon/runner.h"
#include "daemon/shm.h"
#include "daemon/tune/tune.h"

/* A step is worth splitting when it takes this many times the sync. */
#define GXD_SPLIT_SYNC_FACTOR 4.0

/* EXPLAIN or COMPILE, an input the request left out: its declared dtype
 * and shape (no data), which must be concrete. */
static int s_declared_input(gxd_job *j, const gx_value_decl *d, gx_view *v)
{
    memset(v, 0, sizeof *v);
    v->dtype = d->dtype;
    if (d->ndim < 0)
        return gxd_job_fail(j, GX_ESHAPE,
                            "input '%s' is declared without a shape: give its shape (a tensor "
                            "or a shape for it) to plan it", d->name);
    v->ndim = d->ndim; /* numel: infer computes it, within the limits */
    v->kind = d->kind;
    for (int k = 0; k < d->ndim; k++) {
        if (d->shape[k] < 0)
            return gxd_job_fail(j, GX_ESHAPE,
                                "input '%s' has a symbolic dimension %d: give its shape "
                                "(a tensor or a shape for it) to plan it", d->name, k);
        v->shape[k] = d->shape[k];
    }
    return GX_OK;
}

/* Graph input i of the job's model, matched by name; errors name the
 * missing or unknown input (EXPLAIN: a missing one takes its declaration). */
static int s_bind_inputs(gxd_job *j, gx_view *views)
{
    const gx_graph *g = j->model->graph;
    for (size_t i = 0; i < j->n_in; i++) {
        bool known = false;
        for (size_t k = 0; k < g->n_inputs && !known; k++)
            known = strcmp(g->inputs[k].name, j->in[i].name) == 0;
        if (!known)
            return gxd_job_fail(j, GX_EGRAPH, "input '%s' is not an input of the graph",
                                j->in[i].name);
        for (size_t k = 0; k < i; k++)
            if (strcmp(j->in[k].name, j->in[i].name) == 0)
                return gxd_job_fail(j, GX_EGRAPH, "input '%s' given twice", j->in[i].name);
    }
    for (size_t k = 0; k < g->n_inputs; k++) {
        size_t i = 0;
        while (i < j->n_in && strcmp(g->inputs[k].name, j->in[i].name) != 0)
            i++;
        if (i < j->n_in)
            views[k] = j->in[i].view;
        else if (j->kind == GXD_JOB_RUN)
            return gxd_job_fail(j, GX_EGRAPH, "missing input '%s'", g->inputs[k].name);
        else if (s_declared_input(j, &g->inputs[k], &views[k]) < 0)
            return j->status;
    }
    return GX_OK;
}

/* The place for nbytes in the job's output area (RUN output_shm), GX_ALIGN
 * aligned after the outputs placed before: its offset in the region, or
 * false when the job has no area or the rest of it is too small. */
static bool s_area_place(gxd_job *j, size_t nbytes, uint64_t *offset)
{
    if (!j->out_shm)
        return false;
    const uintptr_t end = (uintptr_t)j->out_shm->base + j->out_shm_offset + j->out_shm_used;
    const uint64_t at = j->out_shm_used + (GX_ALIGN - end % GX_ALIGN) % GX_ALIGN;
    if (at > j->out_shm_bytes || nbytes > j->out_shm_bytes - at)
        return false;
    j->out_shm_used = at + nbytes;
    *offset = j->out_shm_offset + at;
    return true;
}

/* o's view and buffer for graph output k as the frames have it now
 * (replicas: their slices concatenated along axis 0; free() frees the
 * buffer). GX_OK, or the job failed (ENOMEM). */
static int s_output_buffer(gxd_job *j, gxd_job_output *o, const gxd_frame *f, int n_frames,
                           size_t k)
{
    o->view = *gxd_frame_output(&f[0], k);
    o->nbytes = 0;
    if (o->view.kind != GX_KIND_TENSOR) /* a sequence or none: s_output_value */
        return GX_OK;
    for (int r = 0; r < n_frames; r++) {
        const gx_view *v = gxd_frame_output(&f[r], k);
        o->nbytes += (size_t)v->numel * gx_dtype_size(v->dtype);
        if (r > 0) {
            o->view.shape[0] += v->shape[0];
            o->view.numel += v->numel;
        }
    }
    /* floating-point values the steps may write straight into the client's
     * output area; the others are copied there after the run
     * (s_collect_outputs), so a later step never reads an index or a shape
     * the client can change */
    if (gxd_shm_in_place(o->view.dtype) && s_area_place(j, o->nbytes, &o->shm_offset)) {
        o->view.data = (char *)j->out_shm->base + o->shm_offset;
        o->in_shm = true;
        return GX_OK;
    }
    /* aligned as an arena is: the steps write it directly */
    if (!(o->view.data = gx_aligned_alloc(o->nbytes)))
        return gxd_job_fail(j, GX_ENOMEM, "out of memory");
    return GX_OK;
}

/* The wanted outputs' buffers for the reply, made before the run: output
 * i is graph output k (replicas: the frames' slices of it, concatenated
 * along axis 0). Where every frame's output is a static value its steps
 * write in the arena, the frames are pointed at their place in the buffer,
 * so the steps write the reply directly; the rest (dynamic shapes,
 * control flow, an input or constant given back) is copied after the run
 * by s_collect_outputs. GX_OK, or the job failed (ENOMEM, an unknown
 * output name). */
static int s_prepare_outputs(gxd_job *j, gxd_frame *f, int n_frames)
{
    const gx_graph *g = j->model->graph;
    size_t n = j->n_want ? j->n_want : g->n_outputs;
    if (!(j->out = calloc(n + 1, sizeof *j->out)) || !(j->out_k = calloc(n + 1, sizeof *j->out_k)))
        return gxd_job_fail(j, GX_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *name = j->n_want ? j->want[i] : g->outputs[i].name;
        size_t k = 0;
        while (k < g->n_outputs && strcmp(g->outputs[k].name, name) != 0)
            k++;
        if (k == g->n_outputs)
            return gxd_job_fail(j, GX_EGRAPH, "'%s' is not an output of the graph", name);
        gxd_job_output *o = &j->out[j->n_out];
        if (!(o->name = strdup(name)))
            return gxd_job_fail(j, GX_ENOMEM, "out of memory");
        j->out_k[j->n_out++] = k;
        bool direct = true;
        for (int r = 0; r < n_frames && direct; r++) {
            const gxd_plan *p = f[r].plan;
            const gxd_value *pv = &p->values[p->outputs[k]];
            direct = pv->kind == GXD_VALUE_TEMP && pv->view.ndim >= 0 &&
                     pv->view.dtype != GX_STRING; /* strings: copied out, s_output_value */
        }
        if (!direct)
            continue; /* shape known after the run */
        if (s_output_buffer(j, o, f, n_frames, k) < 0)
            return j->status;
        size_t at = 0;
        for (int r = 0; r < n_frames; r++) {
            const int v = f[r].plan->outputs[k];
            gx_view *fv = &f[r].val[v];
            const size_t nb = (size_t)fv->numel * gx_dtype_size(fv->dtype);
            /* not when an earlier output took this value: that one is copied */
            if (fv->data == (char *)f[r].arena + f[r].plan->values[v].offset ||
                (f[r].plan->dag_offset &&
                 fv->data == (char *)f[r].arena + f[r].plan->dag_offset[v]))
                fv->data = (char *)o->view.data + at;
            at += nb;
        }
    }
    return GX_OK;
}

/* A sequence, none or string tensor output: o->value, a copy of it (the
 * strings copied out of the job's heap, which goes with the frame), with
 * its frame's bytes (gx_wire_value_bytes) in o->view.data. GX_OK or the
 * job failed. */
static int s_output_value(gxd_job *j, gxd_job_output *o, const gxd_frame *f, int n_frames,
                          size_t k)
{
    const gx_view *v = gxd_frame_output(&f[0], k);
    if (n_frames > 1) /* the batch pass never slices a graph with such values */
        return gxd_job_fail(j, GX_EINTERNAL, "output '%s': a %s cut into slices", o->name,
                            gx_kind_name(v->kind));
    o->value = v->kind == GX_KIND_SEQUENCE ? gx_tensor_clone(v->data)
               : v->kind == GX_KIND_TENSOR
                   ? gx_tensor_new_copy(v->dtype, v->ndim, v->shape, v->data,
                                        (size_t)v->numel * gx_dtype_size(v->dtype))
                   : gx_none_new();
    if (o->value && v->kind == GX_KIND_NONE)
        o->value->dtype = (unsigned)v->dtype < GX_DTYPE_COUNT ? v->dtype : GX_F32;
    o->nbytes = o->value ? gx_wire_value_bytes(o->value) : 0;
    if (!o->value || !(o->view.data = gx_aligned_alloc(o->nbytes)))
        return gxd_job_fail(j, GX_ENOMEM, "out of memory");
    gx_wire_value_write(o->value, o->view.data);
    return GX_OK;
}

/* After the run: the outputs s_prepare_outputs could not point the frames
 * at get their buffers, and whatever is not where the reply wants it is
 * copied there. */
static int s_collect_outputs(gxd_job *j, const gxd_frame *f, int n_frames)
{
    for (size_t i = 0; i < j->n_out; i++) {
        gxd_job_output *o = &j->out[i];
        const size_t k = j->out_k[i];
        const gx_view *v0 = gxd_frame_output(&f[0], k);
        if (gx_wire_is_value(v0->kind, v0->dtype)) { /* never direct: s_prepare_outputs */
            o->view = *v0;
            o->view.data = NULL;
            if (s_output_value(j, o, f, n_frames, k) < 0)
                return j->status;
            continue;
        }
        if (!o->view.data && s_output_buffer(j, o, f, n_frames, k) < 0)
            return j->status;
        size_t at = 0;
        for (int r = 0; r < n_frames; r++) {
            const gx_view *v = gxd_frame_output(&f[r], k);
            size_t nb = (size_t)v->numel * gx_dtype_size(v->dtype);
            char *dst = (char *)o->view.data + at;
            if (nb && v->data != dst)
                memcpy(dst, v->data, nb);
            at += nb;
        }
        if (!o->in_shm && s_area_place(j, o->nbytes, &o->shm_offset)) {
            memcpy((char *)j->out_shm->base + o->shm_offset, o->view.data, o->nbytes);
            free(o->view.data);
            o->view.data = (char *)j->out_shm->base + o->shm_offset;
            o->in_shm = true;
        }
    }
    return GX_OK;
}

/* A failed job replies without tensors. */
static void s_drop_outputs(gxd_job *j)
{
    for (size_t i = 0; i < j->n_out; i++) {
        free(j->out[i].name);
        if (!j->out[i].in_shm)
            free(j->out[i].view.data);
        gx_tensor_destroy(&j->out[i].value);
    }
    j->n_out = 0;
}

/* Record why the job stops (rc from gxd_exec_should_stop); true if it must. */
static bool s_stopped(gxd_job *j, int rc, const char *when)
{
    if (rc == GX_ECANCELLED)
        gxd_job_fail(j, rc, "job %llu was cancelled %s", (unsigned long long)j->id, when);
    else if (rc == GX_ETIMEDOUT)
        gxd_job_fail(j, rc, "deadline expired %s", when);
    return rc < 0;
}

/* Bytes of step st's constant inputs of at least GXD_STREAM_MIN_BYTES:
 * weights too large to stay in a core's cache, read from memory by every
 * slice of a batch split. */
static double s_stream_bytes(const gxd_plan *p, const gxd_step *st)
{
    double b = 0;
    for (int i = 0; i < st->n_in; i++) {
        const int v = st->in[i];
        if (v >= 0 && p->values[v].kind == GXD_VALUE_CONST &&
            p->values[v].nbytes >= GXD_STREAM_MIN_BYTES)
            b += (double)p->values[v].nbytes;
    }
    return b;
}

/* The policy's view of a plan: step costs (measured where known), the
 * critical path through the DAG, what intra-op could split. A plan with
 * steps on a device without host memory (a GPU) is one device "worker":
 * its steps go on one queue in order (inter-op gains nothing, and only
 * the step-order executor replays them as one device graph) and they take
 * no shares; its replicas (separate arenas and queues) still may run at
 * once. estimated: the compiler's estimates even where times were
 * measured (to compare with a plan that never ran). */
static void s_describe(const gxd_plan *p, double split_min_us, bool estimated, gxd_policy_job *d)
{
    memset(d, 0, sizeof *d);
    double small[256] = {0}; /* most plans: no allocation per job */
    double *start = p->n_steps <= 256 ? small : calloc(p->n_steps + 1, sizeof *start);
    for (size_t s = 0; s < p->n_steps; s++) {
        const gxd_step *st = &p->steps[s];
        if (st->folded)
            continue;
        double c = estimated ? st->est_us : gxd_step_cost_us(p, s);
        d->total_us += c;
        d->n_steps++;
        if (st->kernel && !st->dynamic && c >= split_min_us && st->max_shares != 1 &&
            p->devices[st->device]->shares) {
            d->split_us += c;
            d->n_split++;
        }
        if (!st->on_batch)
            d->unbatched_us += c;
        else
            d->stream_bytes += s_stream_bytes(p, st);
        if (start) {
            double end = start[s] + c;
            for (int k = 0; k < st->n_succ; k++)
                if (start[st->succ[k]] < end)
                    start[st->succ[k]] = end;
            if (end > d->critical_us)
                d->critical_us = end;
        }
    }
    bool walked = start != NULL;
    if (start != small)
        free(start);
    if (!walked || !p->dag_ok || gxd_plan_off_host(p)) {
        d->critical_us = d->total_us;
        d->width = 1;
    } else {
        d->width = p->width;
    }
    d->split_crit_us = d->total_us > 0 ? d->critical_us * d->split_us / d->total_us : 0;
    d->batch = gxd_plan_slices_failed(p) ? 0 : p->batch;
    d->sync_steps = p->sync_steps;
    for (size_t i = 0; i < p->n_inputs; i++)
        d->io_bytes += (double)p->values[p->inputs[i]].nbytes;
    for (size_t i = 0; i < p->n_outputs; i++)
        d->io_bytes += (double)p->values[p->outputs[i]].nbytes;
    d->dynamic = p->n_dynamic || p->n_control;
}

static double s_split_min_us(const gxd_runner *rn)
{
    if (rn->ctx->cfg.sched_split_min_ns >= 0)
        return (double)rn->ctx->cfg.sched_split_min_ns / 1000.0;
    double m = GXD_SPLIT_SYNC_FACTOR * rn->cal->sync_us[rn->team_max];
    return m > 2.0 ? m : 2.0;
}

/* The machine as the policy sees it for a job starting now. */
static void s_machine(const gxd_runner *rn, gxd_policy_machine *m)
{
    gxd_ctx *ctx = rn->ctx;
    int idle = gxd_team_idle(rn->team);
    const int helpers = idle < rn->team_max ? idle : rn->team_max - 1;
    /* helpers still spinning after their last job join at once */
    const bool hot = helpers > 0 && gxd_queue_spinning(&ctx->queue) >= helpers;
    *m = (gxd_policy_machine){.workers = 1 + helpers,
                              .workers_total = rn->workers,
                              .queued = gxd_queue_len(&ctx->queue),
                              .sync_us = rn->cal->sync_us,
                              .dispatch_us = rn->cal->dispatch_us,
                              .join_us = hot ? rn->cal->join_spin_us : rn->cal->join_us,
                              .copy_gbps = rn->cal->copy_gbps,
                              .hot = hot};
}

/* Has any step of p been timed yet? */
static bool s_timed(const gxd_plan *p)
{
    for (size_t s = 0; s < p->n_steps; s++)
        if (!p->steps[s].folded && atomic_load_explicit(&p->stats[s].ns, memory_order_relaxed) > 0)
            return true;
    return false;
}

/* One job's replicas: the frames over their plans and arenas. */
typedef struct gxd_replicas {
    int n;
    gxd_frame f[GXD_MAX_TEAM];
    gxd_plan *plan[GXD_MAX_TEAM];
    bool owned[GXD_MAX_TEAM];
    int64_t plan_us; /* getting the slices' plans: compiled, cached or read */
} gxd_replicas;

static void s_replicas_fini(gxd_replicas *r)
{
    for (int i = 0; i < r->n; i++) {
        gxd_frame_fini(&r->f[i]);
        if (r->owned[i])
            gxd_plan_destroy(&r->plan[i]);
    }
    r->n = 0;
}

/* Lay out n replicas of the job over the worker's arenas: replica i gets
 * its slice of the batch (axis 0 of every batched input: the non-keyed
 * inputs with a dimension) and a plan for that size. With n == 1 the job's
 * own plan and inputs. GX_OK, or an error in err (replicas set up so far
 * stay in r for s_replicas_fini). */
static int s_replicas_init(gxd_ctx *ctx, gxd_job *j, gxd_plan *plan, const gx_view *inputs,
                           int n, bool dag, gxd_arenas *a, const gxd_exec_stop *stop,
                           gxd_replicas *r, char *err, size_t errlen)
{
    gx_view in[GX_MAX_OP_INPUTS];
    int64_t at = 0, B = n > 1 ? plan->batch : 0;
    size_t total = 0;
    /* only the entries used are cleared: the whole table is some 150 KiB */
    r->n = 0;
    r->plan_us = 0;
    for (int i = 0; i < n; i++) {
        memset(&r->f[i], 0, sizeof r->f[i]);
        r->plan[i] = NULL;
        r->owned[i] = false;
        gxd_plan *rp = plan;
        memcpy(in, inputs, plan->n_inputs * sizeof *in);
        if (n > 1) {
            int64_t b = B / n + (i < B % n);
            for (size_t k = 0; k < plan->n_inputs; k++) {
                const gxd_value *v = &plan->values[plan->inputs[k]];
                if (v->keyed || v->view.ndim < 1)
                    continue;
                size_t row = v->nbytes / (size_t)B;
                in[k].shape[0] = b;
                in[k].numel = v->view.numel / B * b;
                in[k].data = (char *)inputs[k].data + (size_t)at * row;
            }
            at += b;
            int64_t t0 = gxd_now_us();
            bool compiled = false;
            int rc = gxd_model_slice(j->model, plan, in, &ctx->limits, &rp, &r->owned[i],
                                     &compiled, err, errlen);
            r->plan_us += gxd_now_us() - t0;
            if (compiled) /* not when cached or read from its artifact */
                j->compile_us += gxd_now_us() - t0;
            if (rc < 0)
                return rc;
            r->plan[i] = rp;
            r->n = i + 1; /* owns the plan from here on */
            for (size_t k = 0; k < plan->n_outputs; k++) {
                const gx_view *o = &rp->values[rp->outputs[k]].view,
                              *full = &plan->values[plan->outputs[k]].view;
                if (o->ndim != full->ndim || o->ndim < 1 || o->shape[0] != b ||
                    memcmp(&o->shape[1], &full->shape[1],
                           (size_t)(o->ndim - 1) * sizeof o->shape[0]))
                    return gx_errf(err, errlen, GX_EINTERNAL,
                                   "output '%s' of a slice of %lld does not have the slice's shape",
                                   rp->values[rp->outputs[k]].name, (long long)b);
            }
            if (dag && !rp->dag_ok)
                return gx_errf(err, errlen, GX_EUNSUPPORTED,
                               "a slice's plan cannot run out of order");
        }
        size_t bytes = dag ? rp->dag_arena_bytes : rp->arena_bytes;
        if ((total += bytes) > (uint64_t)ctx->limits.max_arena_bytes)
            return gx_errf(err, errlen, GX_ELIMIT,
                           "%d replicas need arenas of %zu bytes in all (limit %lld)", n, total,
                           (long long)ctx->limits.max_arena_bytes);
        void *arena = gxd_arenas_get(a, i, bytes);
        if (!arena)
            return gx_errf(err, errlen, GX_ENOMEM, "cannot allocate an arena of %zu bytes",
                           dag ? rp->dag_arena_bytes : rp->arena_bytes);
        gxd_devmem dm, *dmp = NULL;
        int rc = GX_OK;
        if (gxd_plan_off_host(rp) &&
            (rc = gxd_arenas_devmem(a, i, rp, dag, dmp = &dm, err, errlen)) < 0)
            return rc;
        rc = gxd_frame_init_dev(&r->f[i], rp, arena, dmp, dag, in, &ctx->limits, stop, err,
                                errlen);
        r->plan[i] = rp;
        r->n = i + 1;
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

/* What the chosen mode means for the executor. */
static void s_config(const gxd_policy_choice *c, const gxd_plan *plan, double split_min_us,
                     gxd_par_cfg *cfg)
{
    gx_mode m = c->mode;
    cfg->workers = c->workers > 0 ? c->workers : 1;
    cfg->dag = (m == GX_MODE_INTER || m == GX_MODE_INTER_INTRA || m == GX_MODE_INTER_REPLICA) &&
               plan->dag_ok;
    cfg->split = m == GX_MODE_INTRA || m == GX_MODE_INTER_INTRA;
    cfg->split_min_us = split_min_us;
    if (m == GX_MODE_REPLICA && cfg->workers > c->replicas)
        cfg->workers = c->replicas; /* each replica runs in step order */
}

/* Workers the next job of the plan should find up (gxd_model.team): those
 * of its configuration cfg, or where that is one worker because helpers
 * would have had to be woken (m), those it would use with helpers already
 * up (and hot teams' seen ratios, at the plan's run count runs): waking
 * them as it is queued makes them so. */
static int s_team_hint(const gxd_runner *rn, const gxd_policy_job *pj, uint64_t runs,
                       const gxd_policy_machine *m, gx_mode mode, const gxd_plan *plan,
                       double split_min, const gxd_par_cfg *cfg)
{
    if (cfg->workers > 1 || m->workers <= 1 || m->hot)
        return cfg->workers;
    gxd_policy_machine up = *m;
    up.join_us = rn->cal->join_spin_us;
    up.hot = true;
    gxd_policy_job hot = *pj;
    gxd_policy_seen_get(plan->seen, runs, true, &hot);
    gxd_policy_choice c;
    gxd_policy_choose(&hot, &up, mode, &c);
    gxd_par_cfg team;
    s_config(&c, plan, split_min, &team);
    return team.workers;
}

_Static_assert(sizeof ((gxd_plan *)0)->seen == GXD_SEEN_WORDS * sizeof(uint64_t),
               "gxd_plan.seen holds the policy's seen record");

/* Choose the mode, lay out the replicas, run. Fills the job's result. */
static void s_run(const gxd_runner *rn, gxd_arenas *a, gxd_job *j, gxd_plan *plan,
                  const gx_view *inputs, const gxd_exec_stop *stop)
{
    gxd_ctx *ctx = rn->ctx;
    char err[1024] = "";
    double split_min = s_split_min_us(rn);
    gxd_policy_job pj;
    s_describe(plan, split_min, false, &pj);
    const uint64_t runs = atomic_fetch_add_explicit(&plan->seen_jobs, 1, memory_order_relaxed);
    gxd_policy_machine m;
    s_machine(rn, &m);
    gxd_policy_seen_get(plan->seen, runs, m.hot, &pj);
    gxd_policy_choice c;
    gxd_policy_choose(&pj, &m, j->mode, &c);
    gxd_par_cfg cfg;
    s_config(&c, plan, split_min, &cfg);
    atomic_store_explicit(&j->model->team,
                          s_team_hint(rn, &pj, runs, &m, j->mode, plan, split_min, &cfg),
                          memory_order_relaxed);
    int n = c.replicas > 1 && plan->batch > 1 ? c.replicas : 1;
    if (n > plan->batch && n > 1)
        n = (int)plan->batch;
    j->t_exec = gxd_now_us();
    gxd_replicas r;
    int rc = s_replicas_init(ctx, j, plan, inputs, n, cfg.dag, a, stop, &r, err, sizeof err);
    int64_t plan_us = r.plan_us;
    if (rc < 0 && n > 1 && rc != GX_ENOMEM) {
        /* the split did not work out: run the job whole */
        char why[sizeof c.reason];
        snprintf(why, sizeof why, "%s", err);
        s_replicas_fini(&r);
        n = 1;
        /* the best of the modes that run the job whole (later jobs of this
         * plan are never split: gxd_plan_slices_failed) */
        pj.batch = 0;
        gxd_policy_choose(&pj, &m,
                          j->mode == GX_MODE_AUTO          ? GX_MODE_AUTO
                          : j->mode == GX_MODE_INTER_REPLICA ? GX_MODE_INTER
                                                             : GX_MODE_SEQ,
                          &c);
        s_config(&c, plan, split_min, &cfg);
        char chosen[sizeof c.reason];
        snprintf(chosen, sizeof chosen, "%s", c.reason);
        snprintf(c.reason, sizeof c.reason, "batch split failed (%.50s): %.80s", why, chosen);
        err[0] = '\0';
        rc = s_replicas_init(ctx, j, plan, inputs, 1, cfg.dag, a, stop, &r, err, sizeof err);
    }
    j->t_exec += plan_us; /* slice plans compiled or read: not compute */
    if (c.mode == GX_MODE_INTER_REPLICA && n == 1)
        c.mode = GX_MODE_INTER; /* one copy: that is what ran */
    bool wants_dag = c.mode == GX_MODE_INTER || c.mode == GX_MODE_INTER_INTRA ||
                     c.mode == GX_MODE_INTER_REPLICA;
    size_t len = strlen(c.reason);
    if (wants_dag && !cfg.dag && len < sizeof c.reason - 1)
        snprintf(c.reason + len, sizeof c.reason - len, "; in step order: %s",
                 n > 1 ? r.plan[0]->dag_why : plan->dag_why);
    j->ran_mode = c.mode;
    gxd_plan_devices(plan, j->device, sizeof j->device);
    j->replicas = n;
    memcpy(j->est_us, c.est_us, sizeof j->est_us);
    snprintf(j->reason, sizeof j->reason, "%s", c.reason);
    int members = 1;
    if (rc == GX_OK && s_prepare_outputs(j, r.f, n) == GX_OK &&
        (rc = gxd_exec_par(rn->team, &cfg, r.f, n, &members, err, sizeof err)) == GX_OK) {
        s_collect_outputs(j, r.f, n);
        if (j->status >= 0)
            gxd_policy_seen_put(plan->seen, runs, m.hot, &c, c.workers,
                                (double)(gxd_now_us() - j->t_exec));
    }
    for (int i = 0; i < r.n; i++)
        j->device_us += r.f[i].device_ns / 1000;
    if (rc < 0 || j->status < 0)
        s_drop_outputs(j);
    j->workers = members;
    s_replicas_fini(&r);
    if (rc == GX_ECANCELLED || rc == GX_ETIMEDOUT)
        s_stopped(j, rc, "while running");
    else if (rc < 0)
        gxd_job_fail(j, rc, "%s", err[0] ? err : gx_strerror(rc));
}

/* Member m of a batch whose merged run failed (why) runs alone on plan,
 * as if it had not been batched; its reason says so. */
static void s_run_alone(const gxd_runner *rn, gxd_arenas *a, gxd_job *m, gxd_plan *plan,
                        const char *why)
{
    gx_view v[GX_MAX_OP_INPUTS];
    gxd_exec_stop stop = {&m->cancel, m->deadline_us};
    if (s_stopped(m, gxd_exec_should_stop(&stop), "before the job could run"))
        return;
    gxd_batch_views(m, m->model->graph, v);
    s_run(rn, a, m, plan, v, &stop);
    char r[sizeof m->reason];
    snprintf(r, sizeof r, "alone, its batch failed (%.60s): %.70s", why, m->reason);
    memcpy(m->reason, r, sizeof r);
}

/* Dynamic batching (daemon/batcher.h): take the queued jobs like j (its
 * plan and bound inputs), and when the merged plan keeps their samples
 * apart and the policy estimates one merged run faster than the jobs
 * apart, run them as one job and split its outputs back. If the merged
 * run fails, every member runs alone (so one member's bad data fails only
 * that member); a member cancelled or past its deadline by the end gets
 * that error, its part of the outputs dropped. True when j ran so: its
 * result and every member's are set, the members are linked from
 * j->batch_next for the caller to hand on. False: j is to run alone
 * (nothing was taken, or the taken jobs went back to the queue; any the
 * queue refused back are failed and linked from j->batch_next). */
static bool s_run_batch(const gxd_runner *rn, gxd_arenas *a, gxd_job *j, gxd_plan *plan,
                        const gx_view *inputs)
{
    gxd_ctx *ctx = rn->ctx;
    const int64_t max = ctx->cfg.sched_batch_max < GXD_BATCH_MAX ? ctx->cfg.sched_batch_max
                                                                 : GXD_BATCH_MAX;
    const int64_t delay = ctx->cfg.sched_batch_delay_us;
    const gx_graph *g = j->model->graph;
    char why[160], err[1024] = "";
    int64_t rows;
    if (max <= 1)
        return false;
    if (!gxd_batch_plan_ok(j, plan, &rows, why, sizeof why)) {
        GXD_LOG(&ctx->log, GXD_LOG_DEBUG, "job %llu leads no batch: %s",
                (unsigned long long)j->id, why);
        return false;
    }
    const double split_min = s_split_min_us(rn);
    gxd_policy_job one;
    s_describe(plan, split_min, false, &one);
    /* the batch's run takes at most its jobs one after another: no member
     * joins unless that still meets its deadline, the leader's included */
    const double one_us = one.total_us > 1 ? one.total_us : 1;
    int64_t now = gxd_now_us();
    size_t want = (size_t)max - 1;
    if (j->deadline_us) {
        double fit = (double)(j->deadline_us - now) / one_us;
        if (fit < 2)
            return false;
        if (fit < (double)max)
            want = (size_t)fit - 1;
    }
    const int64_t run_us = (int64_t)(one_us * (double)(want + 1)) + 1;
    int64_t until = delay > 0 ? now + delay : 0;
    if (j->deadline_us && until > j->deadline_us - run_us)
        until = j->deadline_us - run_us;
    gxd_batch_like_arg la = {.plan = plan, .graph = g, .inputs = inputs, .run_us = run_us};
    gxd_job *m[GXD_BATCH_MAX];
    m[0] = j;
    size_t n = 1 + gxd_queue_take_like(&ctx->queue, j, gxd_batch_like, &la, m + 1, want, until);
    if (n == 1)
        return false;

    /* the merged inputs and their plan */
    const int64_t t_taken = gxd_now_us();
    gx_view merged[GX_MAX_OP_INPUTS];
    void *bufs[GX_MAX_OP_INPUTS] = {0};
    gx_view *vv = calloc(n * g->n_inputs + 1, sizeof *vv);
    const gx_view **vp = calloc(n, sizeof *vp);
    gxd_plan *mplan = NULL;
    int64_t compile_us = 0;
    int rc = vv && vp ? GX_OK : GX_ENOMEM;
    for (size_t i = 0; i < n && rc == GX_OK; i++) {
        m[i]->t_start = i ? t_taken : m[i]->t_start;
        gxd_batch_views(m[i], g, vv + i * g->n_inputs);
        vp[i] = vv + i * g->n_inputs;
    }
    if (rc == GX_OK)
        rc = gxd_batch_concat(g->n_inputs, vp, n, merged, bufs);
    if (rc == GX_OK)
        rc = gxd_model_plan(j->model, merged, &ctx->limits, &mplan, &compile_us, err,
                            sizeof err);
    bool go = rc == GX_OK && mplan->batch == rows * (int64_t)n && mplan->sync_steps == 0;
    gxd_policy_merge_choice mc = {.merge = false};
    if (go) {
        /* measured times against measured ones, else estimates on both */
        const bool est = !s_timed(mplan) || !s_timed(plan);
        gxd_policy_job pone, pm;
        gxd_policy_machine mach;
        s_describe(plan, split_min, est, &pone);
        s_describe(mplan, split_min, est, &pm);
        s_machine(rn, &mach);
        gxd_policy_merge(&pone, &pm, (int)n, &mach, &mc);
        go = mc.merge;
    }
    gxd_job **tail = &j->batch_next;
    if (!go)
        GXD_LOG(&ctx->log, GXD_LOG_DEBUG, "batch of %zu jobs not merged: %s", n,
                rc < 0 ? err
                : mplan->batch != rows * (int64_t)n ? mplan->batch_why
                                                    : mc.reason);
    if (!go) {
        for (size_t i = 1; i < n; i++) {
            int prc = gxd_queue_putback(&ctx->queue, m[i]);
            if (prc < 0) { /* it stays with this worker, answered */
                gxd_job_fail(m[i], prc, prc == GX_ESHUTDOWN ? "the daemon is shutting down"
                                                            : "out of memory");
                m[i]->t_end = gxd_now_us();
                *tail = m[i];
                tail = &m[i]->batch_next;
            }
        }
        goto out;
    }

    /* one run for all, into a carrier job nobody answers */
    gxd_job *carrier = gxd_job_new(GXD_JOB_RUN, j->identity, j->identity_len, j->id);
    if (carrier) {
        carrier->model = gxd_model_ref(j->model);
        carrier->want = j->want;
        carrier->n_want = j->n_want;
        carrier->compile_us = compile_us;
        int64_t dl = 0;
        for (size_t i = 0; i < n; i++)
            if (m[i]->deadline_us && (!dl || m[i]->deadline_us < dl))
                dl = m[i]->deadline_us;
        /* the leader's cancel stops the run; then the others run alone */
        gxd_exec_stop stop = {&j->cancel, dl};
        s_run(rn, a, carrier, mplan, merged, &stop);
        carrier->want = NULL;
        carrier->n_want = 0;
    }
    const int crc = carrier ? carrier->status : GX_ENOMEM;
    snprintf(why, sizeof why, "%.150s", carrier ? carrier->message : "out of memory");
    char reason[sizeof j->reason];
    snprintf(reason, sizeof reason, "%.80s; %.70s", mc.reason, carrier ? carrier->reason : "");
    for (size_t i = 0; i < n; i++) {
        gxd_job *mi = m[i];
        if (crc < 0) {
            s_run_alone(rn, a, mi, plan, why);
        } else if (atomic_load(&mi->cancel)) {
            gxd_job_fail(mi, GX_ECANCELLED, "job %llu was cancelled while running (in a batch)",
                         (unsigned long long)mi->id);
            mi->batched = (int)n;
        } else if (mi->deadline_us && gxd_now_us() >= mi->deadline_us) {
            gxd_job_fail(mi, GX_ETIMEDOUT, "deadline expired while running (in a batch)");
            mi->batched = (int)n;
        } else {
            gxd_batch_split(carrier, mi, i, n, reason);
        }
        mi->t_end = gxd_now_us();
        if (i > 0) {
            *tail = mi;
            tail = &mi->batch_next;
        }
    }
    j->batch_lead = crc == GX_OK;
    gxd_job_destroy(&carrier);
out:
    for (size_t i = 1; i < n; i++)
        gxd_queue_release(&ctx->queue, m[i]); /* putback did already: no-op */
    gxd_plan_release(&mplan);
    for (size_t k = 0; k < GX_MAX_OP_INPUTS; k++)
        free(bufs[k]);
    free(vv);
    free(vp);
    return go;
}

/* COMPILE: the plan's artifact, the job's one output ("artifact", uint8,
 * the file's bytes), and its name in the artifact cache. */
static void s_artifact_out(gxd_ctx *ctx, gxd_job *j, const gxd_plan *plan)
{
    char err[512];
    void *buf = NULL;
    size_t len = 0;
    int rc = gxd_model_artifact(j->model, plan, &ctx->limits, &buf, &len, j->key, sizeof j->key,
                                err, sizeof err);
    if (rc < 0) {
        gxd_job_fail(j, rc, "no artifact for this plan: %s", err);
        return;
    }
    if (!(j->out = calloc(1, sizeof *j->out))) {
        free(buf);
        gxd_job_fail(j, GX_ENOMEM, "out of memory");
        return;
    }
    j->n_out = 1; /* the job frees the buffer from here on */
    j->out[0].view = (gx_view){.dtype = GX_U8, .ndim = 1, .shape = {(int64_t)len},
                               .numel = (int64_t)len, .data = buf};
    j->out[0].nbytes = len;
    if (!(j->out[0].name = strdup("artifact")))
        gxd_job_fail(j, GX_ENOMEM, "out of memory");
}

void gxd_runner_execute(const gxd_runner *rn, gxd_arenas *a, gxd_job *j)
{
    gxd_ctx *ctx = rn->ctx;
    char err[1024];
    gx_view inputs[GX_MAX_OP_INPUTS];
    gxd_plan *plan = NULL; /* a hold on the model's plan: a re-plan may swap it meanwhile */
    int rc;
    gxd_exec_stop stop = {&j->cancel, j->deadline_us};
    j->t_start = gxd_now_us();
    if (s_stopped(j, gxd_exec_should_stop(&stop), "before the job could run"))
        goto out;
    if ((rc = gxd_model_verify(j->model, &ctx->limits, err, sizeof err)) < 0) {
        gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    const gx_graph *g = j->model->graph;
    if (j->kind == GXD_JOB_LOAD) {
        /* With fully concrete inputs, compile now: shape errors surface at
         * LOAD and the first RUN finds its plan ready. */
        bool concrete = g->n_inputs <= GX_MAX_OP_INPUTS;
        for (size_t i = 0; i < g->n_inputs && concrete; i++) {
            const gx_value_decl *d = &g->inputs[i];
            concrete = d->ndim >= 0;
            memset(&inputs[i], 0, sizeof inputs[i]);
            inputs[i].dtype = d->dtype;
            inputs[i].ndim = d->ndim;
            inputs[i].kind = d->kind;
            for (int k = 0; k < d->ndim; k++)
                concrete = concrete && (inputs[i].shape[k] = d->shape[k]) >= 0;
        }
        if (concrete &&
            (rc = gxd_model_plan(j->model, inputs, &ctx->limits, &plan, &j->compile_us, err,
                                 sizeof err)) < 0)
            gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    if (g->n_inputs > GX_MAX_OP_INPUTS) {
        gxd_job_fail(j, GX_ELIMIT, "graph has more than %d inputs", GX_MAX_OP_INPUTS);
        goto out;
    }
    if (s_bind_inputs(j, inputs) < 0)
        goto out;
    if ((rc = gxd_model_plan(j->model, inputs, &ctx->limits, &plan, &j->compile_us, err,
                             sizeof err)) < 0) {
        gxd_job_fail(j, rc, "%s", err);
        goto out;
    }
    if (j->kind == GXD_JOB_COMPILE) {
        s_artifact_out(ctx, j, plan);
        goto out;
    }
    if (j->kind == GXD_JOB_EXPLAIN) {
        if (j->tune && (rc = gxd_tune_request_plan(ctx->tune, plan)) < 0)
            gxd_job_fail(j, rc, "tune: the registry is off (tune.mode: off)");
        else if (!(j->explain = gxd_plan_explain_json(plan, g)))
            gxd_job_fail(j, GX_ENOMEM, "out of memory describing the plan");
        goto out;
    }
    if (s_stopped(j, gxd_exec_should_stop(&stop), "before the job could run"))
        goto out;
    if (!s_run_batch(rn, a, j, plan, inputs))
        s_run(rn, a, j, plan, inputs, &stop);
out:
    gxd_plan_release(&plan);
    j->t_end = gxd_now_us();
}
