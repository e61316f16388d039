/* Job lifetime. See job.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "core/proto.h"
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

int64_t gxd_job_queue_us(const gxd_job *j)
{
    return (j->t_start ? j->t_start : j->t_end) - j->t_enqueue;
}

int64_t gxd_job_compute_us(const gxd_job *j)
{
    return j->t_exec ? j->t_end - j->t_exec : 0;
}

const char *gxd_job_device(const gxd_job *j)
{
    return j->device[0] ? j->device : "cpu";
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

int gxd_job_set_urgency(gxd_job *j, const char *via, int64_t priority, int64_t deadline_ms,
                        int ceiling, bool elevated, const char *why_not, char *err,
                        size_t errlen)
{
    if (priority < GX_PRIORITY_MIN || priority > GX_PRIORITY_MAX)
        return gx_errf(err, errlen, GX_EINVAL, "%s: priority %lld outside [%d, %d]", via,
                       (long long)priority, GX_PRIORITY_MIN, GX_PRIORITY_MAX);
    if (deadline_ms < 0 || deadline_ms > GX_DEADLINE_MAX_MS)
        return gx_errf(err, errlen, GX_EINVAL,
                       "%s: deadline_ms %lld outside [0, %lld] (0: none; at most a day)", via,
                       (long long)deadline_ms, (long long)GX_DEADLINE_MAX_MS);
    if (priority > ceiling && !elevated)
        return gx_errf(err, errlen, GX_EPERM,
                       "%s: priority %lld is above limits.max_client_priority (%d), which only "
                       "limits.priority_users may exceed%s",
                       via, (long long)priority, ceiling, why_not ? why_not : "");
    j->priority = (int)priority;
    j->deadline_us = deadline_ms ? gxd_now_us() + deadline_ms * 1000 : 0;
    return GX_OK;
}
