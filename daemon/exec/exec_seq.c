/* The sequential executor. */
#include <string.h>

#include "daemon/exec/exec.h"

int gxd_exec_seq(const gxd_plan *plan, void *arena, const gx_view *inputs,
                 const gxd_exec_stop *stop)
{
    for (size_t i = 0; i < plan->n_inputs; i++) {
        const gxd_value *v = &plan->values[plan->inputs[i]];
        if (v->nbytes)
            memcpy(gxd_exec_value_data(plan, arena, plan->inputs[i]), inputs[i].data, v->nbytes);
    }
    gx_view in[GX_MAX_OP_INPUTS], out[GX_MAX_OP_INPUTS];
    for (size_t s = 0; s < plan->n_steps; s++) {
        int rc = gxd_exec_should_stop(stop);
        if (rc < 0)
            return rc;
        const gxd_step *st = &plan->steps[s];
        for (int k = 0; k < st->n_in; k++) {
            if (st->in[k] < 0) {
                memset(&in[k], 0, sizeof in[k]);
                in[k].ndim = -1;
                continue;
            }
            in[k] = plan->values[st->in[k]].view;
            in[k].data = gxd_exec_value_data(plan, arena, st->in[k]);
        }
        for (int k = 0; k < st->n_out; k++) {
            out[k] = plan->values[st->out[k]].view;
            out[k].data = gxd_exec_value_data(plan, arena, st->out[k]);
        }
        gx_kargs ka = {.attr = st->attr, .n_in = st->n_in, .in = in, .n_out = st->n_out,
                       .out = out, .nth = 1};
        st->kernel(&ka);
    }
    return GX_OK;
}
