/* The sequential executor. */
#include "daemon/exec/exec.h"

int gxd_exec_seq(gxd_frame *f)
{
    for (size_t s = 0; s < f->plan->n_steps; s++) {
        int rc = gxd_exec_should_stop(f->stop);
        if (rc == GX_OK)
            rc = gxd_exec_step(f, s);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}
