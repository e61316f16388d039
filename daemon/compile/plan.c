/*
 * Pass 7, plan. Contract: every step has the kernel that will run it on the
 * chosen device (the CPU for now); steps stay in the dependency order verify
 * chose. After this pass the plan is immutable but for its run-time caches
 * (compile.h).
 */
#include "daemon/compile/passes.h"

int gxd_pass_plan(gxd_cstate *st)
{
    gxd_plan *p = st->plan;
    for (size_t i = 0; i < p->n_steps; i++)
        p->steps[i].kernel = gx_cpu_kernel(p->steps[i].op);
    return GX_OK;
}
