/* The sequential executor; it times the steps when the plan wants it. */
#include "daemon/exec/exec.h"

int gxd_exec_seq(gxd_frame *f)
{
    bool timed = gxd_plan_wants_timing(f->plan);
    for (size_t s = 0; s < f->plan->n_steps; s++) {
        int rc = gxd_exec_should_stop(f->stop);
        int64_t t0 = timed ? gxd_now_ns() : 0;
        if (rc == GX_OK)
            rc = gxd_exec_step(f, s);
        if (rc < 0)
            return rc;
        if (timed && !f->plan->steps[s].folded)
            gxd_step_record(f->plan, s, gxd_now_ns() - t0);
    }
    return GX_OK;
}
