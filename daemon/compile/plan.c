/*
 * Pass 8, plan. Contract: every step has the kernel that will run it on the
 * device the partition pass chose (a copy step: the host's copy, for every
 * device that runs plans today shares the host's memory); steps stay in the
 * dependency order verify chose, copies included. After this pass the plan
 * is immutable but for its run-time caches
 * (compile.h).
 */
#include "daemon/compile/passes.h"

int gxd_pass_plan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++)
        p->steps[i].kernel = p->steps[i].copy
                                 ? gx_cpu_kernel(GX_OP_IDENTITY)
                                 : p->devices[p->steps[i].device]->kernel(p->steps[i].op);
    return GX_OK;
}
