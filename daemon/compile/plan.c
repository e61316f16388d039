/*
 * Pass 11, plan. Contract: every step has the kernel that will run it on the
 * device the partition pass chose (from that device's table), or the one
 * the layout or prepare pass chose; a copy step has none (the executor
 * copies through the devices' tables); steps stay in the dependency order
 * verify chose, copies included. After this pass the plan is immutable but
 * for its run-time caches (compile.h).
 */
#include "daemon/compile/passes.h"

int gxd_pass_plan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++) {
        gxd_step *s = &p->steps[i];
        if (s->reorder || s->layout != GX_LAYOUT_PLAIN || s->kernel || s->copy)
            continue; /* the layout or prepare pass chose the kernel */
        s->kernel = p->devices[s->device]->kernel(s->op);
    }
    return GX_OK;
}
