/*
 * Pass 11, plan. Contract: every step has the kernel that will run it on the
 * device the partition pass chose (a copy step: the host's copy, for every
 * device that runs plans today shares the host's memory), or the one the
 * layout pass chose for the step's layout; steps stay in the
 * dependency order verify chose, copies included. After this pass the plan
 * is immutable but for its run-time caches
 * (compile.h).
 */
#include "daemon/compile/passes.h"

int gxd_pass_plan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if (s->reorder || s->layout != GX_LAYOUT_PLAIN || s->kernel)
            continue; /* the layout or prepare pass chose the kernel */
        s->kernel = s->copy ? gx_cpu_kernel(GX_OP_IDENTITY) : p->devices[s->device]->kernel(s->op);
    }
    return GX_OK;
}
