/* Mode selection and dispatch to the executors. See exec.h. */
#include <stdio.h>
#include <string.h>

#include "daemon/exec/exec.h"
#include "daemon/job.h"

typedef int (*gxd_executor_fn)(const gxd_plan *plan, void *arena, const gx_view *inputs,
                               const gxd_exec_stop *stop);

/* The executor of each mode; NULL where it is not built yet. */
static const gxd_executor_fn s_executors[GX_MODE_COUNT] = {
    [GX_MODE_AUTO] = NULL,
    [GX_MODE_SEQ] = gxd_exec_seq,
    [GX_MODE_INTRA] = NULL,
    [GX_MODE_INTER] = NULL,
    [GX_MODE_REPLICA] = NULL,
};

int gxd_exec_choose(const gxd_plan *plan, gx_mode requested, gxd_exec_choice *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->workers = 1;
    switch (requested) {
    case GX_MODE_AUTO:
        out->mode = GX_MODE_SEQ;
        snprintf(out->reason, sizeof out->reason,
                 "auto: sequential is the only executor built; %zu steps, %.3g MFLOP",
                 plan->n_steps, plan->flops / 1e6);
        return GX_OK;
    case GX_MODE_SEQ:
        out->mode = GX_MODE_SEQ;
        snprintf(out->reason, sizeof out->reason, "requested by the client");
        return GX_OK;
    case GX_MODE_INTRA:
    case GX_MODE_INTER:
    case GX_MODE_REPLICA:
    case GX_MODE_COUNT:
        break;
    }
    return gx_errf(err, errlen, GX_EUNSUPPORTED,
                   "parallel mode '%s' is not implemented yet; available modes: auto, seq",
                   gx_mode_name(requested));
}

void *gxd_exec_value_data(const gxd_plan *plan, void *arena, int v)
{
    const gxd_value *val = &plan->values[v];
    return val->kind == GXD_VALUE_CONST ? val->view.data : (char *)arena + val->offset;
}

int gxd_exec_should_stop(const gxd_exec_stop *stop)
{
    if (atomic_load_explicit(stop->cancel, memory_order_relaxed))
        return GX_ECANCELLED;
    if (stop->deadline_us && gxd_now_us() >= stop->deadline_us)
        return GX_ETIMEDOUT;
    return GX_OK;
}

int gxd_exec_run(const gxd_plan *plan, const gxd_exec_choice *ch, void *arena,
                 const gx_view *inputs, const gxd_exec_stop *stop)
{
    gxd_executor_fn fn = (unsigned)ch->mode < GX_MODE_COUNT ? s_executors[ch->mode] : NULL;
    if (!fn)
        return GX_EUNSUPPORTED;
    return fn(plan, arena, inputs, stop);
}
