/* Job lifetime. See job.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/job.h"
#include "daemon/models.h"
#include "daemon/ring.h"
#include "daemon/shm.h"

int64_t gxd_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

gxd_job *gxd_job_new(gxd_job_kind kind, const void *identity, size_t identity_len, uint64_t id)
{
    if (identity_len > GXD_MAX_IDENTITY)
        return NULL;
    gxd_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->kind = kind;
    memcpy(j->identity, identity, identity_len);
    j->identity_len = identity_len;
    j->id = id;
    j->ran_mode = GX_MODE_SEQ;
    j->replicas = 1;
    j->batched = 1;
    for (int m = 0; m < GX_MODE_COUNT; m++)
        j->est_us[m] = -1;
    atomic_init(&j->cancel, false);
    return j;
}

void gxd_job_destroy(gxd_job **jp)
{
    if (!jp || !*jp)
        return;
    gxd_job *j = *jp;
    for (size_t i = 0; i < j->n_in; i++) {
        free(j->in[i].name);
        zmq_msg_close(&j->in[i].frame);
        gxd_shm_region_release(&j->in[i].shm);
        gx_tensor_destroy(&j->in[i].value);
    }
    for (size_t i = 0; i < j->n_want; i++)
        free(j->want[i]);
    for (size_t i = 0; i < j->n_out; i++) {
        free(j->out[i].name);
        if (!j->out[i].in_shm)
            free(j->out[i].view.data);
        gx_tensor_destroy(&j->out[i].value);
    }
    gxd_shm_region_release(&j->out_shm);
    gxd_ring_release(&j->ring);
    free(j->in);
    free(j->want);
    free(j->out);
    free(j->out_k);
    free(j->explain);
    gxd_model_release(&j->model);
    free(j);
    *jp = NULL;
}

int gxd_job_fail(gxd_job *j, int status, const char *fmt, ...)
{
    if (j->status < 0)
        return j->status;
    j->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof j->message, fmt, ap);
    va_end(ap);
    return status;
}
