/* The scheduling policy on synthetic cost tables: seed 002's three rules,
 * the cases the benchmark runs, requested modes, one worker, and how the
 * choice scales with the machine. No daemon. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "daemon/policy.h"
#include "tests/testutil.h"

/* sync_us[w] = 1.5 + 0.75 w µs: the shape measured on a small x86 box
 * (a futex wake per member and a cache line per arrival). */
static double s_sync_tab[GXD_MAX_TEAM + 1];

static void s_setup(void)
{
    s_sync_tab[0] = s_sync_tab[1] = 0;
    for (int w = 2; w <= GXD_MAX_TEAM; w++)
        s_sync_tab[w] = 1.5 + 0.75 * w;
}

static gxd_policy_machine s_machine(int workers, size_t queued)
{
    return (gxd_policy_machine){.workers = workers,
                                .workers_total = workers,
                                .queued = queued,
                                .sync_us = s_sync_tab,
                                .dispatch_us = 0.5,
                                .copy_gbps = 10};
}

/* One Gemm [64,256]x[256,256] + Relu per branch, 8 branches, a Concat. */
static gxd_policy_job s_branches(void)
{
    return (gxd_policy_job){.total_us = 8 * 205 + 10,
                            .critical_us = 215,
                            .split_us = 8 * 200,
                            .split_crit_us = 200,
                            .n_steps = 17,
                            .n_split = 8,
                            .width = 8,
                            .io_bytes = 64 * 256 * 4 + 64 * 2048 * 4};
}

/* One 1024^3 MatMul. */
static gxd_policy_job s_matmul(void)
{
    return (gxd_policy_job){.total_us = 100000,
                            .critical_us = 100000,
                            .split_us = 100000,
                            .split_crit_us = 100000,
                            .n_steps = 1,
                            .n_split = 1,
                            .width = 1,
                            .io_bytes = 3.0 * 1024 * 1024 * 4};
}

/* 200 tiny elementwise steps on a [1,64] tensor: each cheaper than a sync. */
static gxd_policy_job s_chain(void)
{
    return (gxd_policy_job){.total_us = 100,
                            .critical_us = 100,
                            .split_us = 100,
                            .split_crit_us = 100,
                            .n_steps = 200,
                            .n_split = 200,
                            .width = 1,
                            .batch = 1,
                            .io_bytes = 2 * 64 * 4};
}

/* A small CNN at batch 32: a chain of 30 steps, 12 heavy convolutions;
 * sync_steps > 0 makes it the training-mode BatchNormalization variant. */
static gxd_policy_job s_cnn(size_t sync_steps)
{
    return (gxd_policy_job){.total_us = 4000,
                            .critical_us = 4000,
                            .split_us = 3600,
                            .split_crit_us = 3600,
                            .n_steps = 30,
                            .n_split = 12,
                            .width = 1,
                            .batch = 32,
                            .sync_steps = sync_steps,
                            .io_bytes = 32.0 * 3 * 32 * 32 * 4};
}

static void s_check_sane(const gxd_policy_job *job, const gxd_policy_machine *m,
                         const gxd_policy_choice *c)
{
    ck_assert_int_ge(c->workers, 1);
    ck_assert_int_le(c->workers, m->workers);
    ck_assert_int_ge(c->replicas, 1);
    ck_assert_int_eq(c->workers % c->replicas, 0);
    if (c->replicas > 1) {
        ck_assert_int_gt(job->batch, 0);
        ck_assert_int_le(c->replicas, job->batch);
        ck_assert_uint_eq(job->sync_steps, 0);
    }
    ck_assert_uint_gt(strlen(c->reason), 0);
    ck_assert_uint_lt(strlen(c->reason), sizeof c->reason);
    ck_assert(c->est_us[GX_MODE_AUTO] < 0);
    ck_assert(c->est_us[GX_MODE_SEQ] ==
              job->total_us * (job->seen[GX_MODE_SEQ] > 0 ? job->seen[GX_MODE_SEQ] : 1));
    ck_assert(c->model_us > 0 || job->total_us <= 0);
    ck_assert_int_gt(c->mode, GX_MODE_AUTO);
    ck_assert_int_lt(c->mode, GX_MODE_COUNT);
}

static gxd_policy_choice s_choose(const gxd_policy_job *job, int workers, size_t queued,
                                  gx_mode req)
{
    gxd_policy_machine m = s_machine(workers, queued);
    gxd_policy_choice c;
    gxd_policy_choose(job, &m, req, &c);
    s_check_sane(job, &m, &c);
    return c;
}

static bool s_inter_intra_family(gx_mode m)
{
    return m == GX_MODE_SEQ || m == GX_MODE_INTRA || m == GX_MODE_INTER || m == GX_MODE_INTER_INTRA;
}

START_TEST(test_rule1_queue_replica)
{
    gxd_policy_job job = s_cnn(0);
    job.batch = 0;
    for (int w = 2; w <= 16; w *= 2) {
        gxd_policy_choice c = s_choose(&job, w, 12, GX_MODE_AUTO);
        ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
        ck_assert_int_eq(c.workers, 1);
        ck_assert_int_eq(c.replicas, 1);
        /* The amortised time per job: every worker on its own job. */
        ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], job.total_us / (w < 13 ? w : 13), 1e-9);
        ck_assert_ptr_nonnull(strstr(c.reason, "rule 1 (12 queued)"));
        ck_assert_ptr_nonnull(strstr(c.reason, "us/job"));
    }
    /* Jobs are independent even when the graph couples its batch. */
    job = s_cnn(3);
    gxd_policy_choice c = s_choose(&job, 2, 12, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
    ck_assert_int_eq(c.replicas, 1);
    ck_assert(c.est_us[GX_MODE_INTER_REPLICA] < 0);
}
END_TEST

START_TEST(test_rule2_sync_no_split)
{
    gxd_policy_job job = s_cnn(3);
    int ws[] = {2, 4, 16, 64};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        gxd_policy_choice c = s_choose(&job, ws[i], 0, GX_MODE_AUTO);
        ck_assert(s_inter_intra_family(c.mode));
        ck_assert_int_ne(c.mode, GX_MODE_SEQ); /* 12 heavy convolutions pay for a team */
        ck_assert_int_eq(c.replicas, 1);
        ck_assert(c.est_us[GX_MODE_REPLICA] < 0);
        ck_assert(c.est_us[GX_MODE_INTER_REPLICA] < 0);
        ck_assert_ptr_nonnull(strstr(c.reason, "rule 2"));
    }
    /* Two branches of heavy steps on 8 workers: inter alone waits on the
     * critical path, intra alone syncs every step; together they win. */
    job = (gxd_policy_job){.total_us = 4000,
                           .critical_us = 2000,
                           .split_us = 4000,
                           .split_crit_us = 2000,
                           .n_steps = 20,
                           .n_split = 20,
                           .width = 2,
                           .batch = 16,
                           .sync_steps = 2};
    gxd_policy_choice c = s_choose(&job, 8, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTER_INTRA);
    ck_assert_int_eq(c.workers, 8);
    ck_assert_int_eq(c.replicas, 1);
    /* k = 4 workers per heavy step on the critical path, 10 of them:
     * 2000 / 4 (+10% for the shares' repeated work) + 10 sync(4), then 20
     * dispatches and one sync(8). */
    ck_assert_double_eq_tol(c.est_us[GX_MODE_INTER_INTRA], 500 * 1.1 + 10 * 4.5 + 10 + 7.5, 1e-9);
    ck_assert(c.est_us[GX_MODE_INTER_INTRA] < c.est_us[GX_MODE_INTRA]);
    ck_assert(c.est_us[GX_MODE_INTER_INTRA] < c.est_us[GX_MODE_INTER]);
}
END_TEST

START_TEST(test_rule3_batch_split)
{
    gxd_policy_job job = s_cnn(0);
    gxd_policy_choice c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
    ck_assert_int_eq(c.replicas, 2);
    ck_assert_int_eq(c.workers, 2);
    ck_assert_ptr_nonnull(strstr(c.reason, "rule 3 (batch 32)"));
    /* total / 2 + half the inputs and outputs copied at 10 GB/s + sync(2) */
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], 2000 + job.io_bytes / 2 / 1e4 + 3, 1e-6);
    c = s_choose(&job, 16, 0, GX_MODE_AUTO);
    ck_assert(c.mode == GX_MODE_REPLICA || c.mode == GX_MODE_INTER_REPLICA);
    ck_assert_int_ge(c.replicas, 8);
    /* A batch smaller than the machine, on a graph 4 wide: slices with
     * inter-op inside each. */
    job = (gxd_policy_job){.total_us = 4000,
                           .critical_us = 1000,
                           .n_steps = 40,
                           .width = 4,
                           .batch = 4,
                           .io_bytes = 4 * 4096};
    c = s_choose(&job, 16, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTER_REPLICA);
    ck_assert_int_eq(c.replicas, 4);
    ck_assert_int_eq(c.workers, 16);
    ck_assert(c.est_us[GX_MODE_INTER_REPLICA] < c.est_us[GX_MODE_REPLICA]);
    ck_assert(c.est_us[GX_MODE_INTER_REPLICA] < c.est_us[GX_MODE_INTER]);
    /* An uneven batch: the largest slice sets the time. */
    job = s_cnn(0);
    job.batch = 3;
    c = s_choose(&job, 2, 0, GX_MODE_REPLICA);
    ck_assert_int_eq(c.replicas, 2);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], 4000.0 * 2 / 3 + job.io_bytes / 2 / 1e4 + 3,
                            1e-6);
    /* Work that reads no batched value (a product of two constants) runs
     * whole in every slice: the split saves only the rest. */
    job = s_cnn(0);
    job.unbatched_us = 3000;
    c = s_choose(&job, 2, 0, GX_MODE_REPLICA);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA],
                            3000 + 1000.0 / 2 + job.io_bytes / 2 / 1e4 + 3, 1e-6);
    c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    /* Large weights on the batch (a vocabulary's Gemm at batch 8): every
     * slice reads them again, one after the other over the memory bus. */
    job = s_cnn(0);
    job.stream_bytes = 20e6; /* 2000 us at 10 GB/s: half the steps' time */
    c = s_choose(&job, 2, 0, GX_MODE_REPLICA);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA],
                            2000.0 * 2 + 2000.0 / 2 + job.io_bytes / 2 / 1e4 + 3, 1e-6);
    c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_ne(c.mode, GX_MODE_REPLICA);
    /* no more than the steps' time: weights read faster than the rate */
    job.stream_bytes = 1e9;
    c = s_choose(&job, 2, 0, GX_MODE_REPLICA);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], 4000.0 * 2 + job.io_bytes / 2 / 1e4 + 3,
                            1e-6);
}
END_TEST

START_TEST(test_matmul_intra)
{
    gxd_policy_job job = s_matmul();
    gxd_policy_choice c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_int_eq(c.workers, 2);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_INTRA], 50000 * 1.1 + 3, 1e-9); /* shares +10% */
    ck_assert(c.est_us[GX_MODE_INTER] == job.total_us); /* one step: nothing to spread */
    ck_assert(c.est_us[GX_MODE_REPLICA] < 0);
    c = s_choose(&job, 16, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_int_eq(c.workers, 16);
    ck_assert_ptr_nonnull(strstr(c.reason, "intra(16)"));
}
END_TEST

START_TEST(test_branches_inter)
{
    gxd_policy_job job = s_branches();
    gxd_policy_choice c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTER);
    ck_assert_int_eq(c.workers, 2);
    ck_assert(c.est_us[GX_MODE_INTER] < c.est_us[GX_MODE_INTRA]);
    /* max(critical, total / 2) + 17 dispatches + one sync(2) */
    ck_assert_double_eq_tol(c.est_us[GX_MODE_INTER], 825 + 17 * 0.5 + 3, 1e-9);
    c = s_choose(&job, 8, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTER);
    ck_assert_int_eq(c.workers, 8);
    /* More workers than branches: never more inter workers than the width. */
    c = s_choose(&job, 64, 0, GX_MODE_INTER);
    ck_assert_int_le(c.workers, 8);
}
END_TEST

START_TEST(test_tiny_chain_seq)
{
    gxd_policy_job job = s_chain();
    for (int w = 2; w <= 16; w *= 2) {
        gxd_policy_choice c = s_choose(&job, w, 0, GX_MODE_AUTO);
        ck_assert_int_eq(c.mode, GX_MODE_SEQ);
        ck_assert_int_eq(c.workers, 1);
        ck_assert(c.est_us[GX_MODE_INTRA] > job.total_us);
        c = s_choose(&job, w, 50, GX_MODE_AUTO);
        ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
        ck_assert_int_eq(c.workers, 1);
        ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], job.total_us / w, 1e-9);
    }
}
END_TEST

START_TEST(test_requested)
{
    gxd_policy_job job = s_cnn(0);
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
        gxd_policy_choice c = s_choose(&job, 16, 0, (gx_mode)k);
        ck_assert_int_eq(c.mode, k);
        ck_assert_ptr_nonnull(strstr(c.reason, "requested"));
        ck_assert_ptr_nonnull(strstr(c.reason, gx_mode_name((gx_mode)k)));
        switch ((gx_mode)k) {
        case GX_MODE_SEQ:
        case GX_MODE_INTER: /* a chain: nothing for inter to spread */
            ck_assert_int_eq(c.workers, 1);
            break;
        case GX_MODE_INTRA:
        case GX_MODE_INTER_INTRA:
            ck_assert_int_ge(c.workers, 2);
            ck_assert_int_eq(c.replicas, 1);
            break;
        case GX_MODE_REPLICA:
        case GX_MODE_INTER_REPLICA:
            ck_assert_int_ge(c.replicas, 2);
            break;
        case GX_MODE_AUTO:
        case GX_MODE_COUNT:
            ck_abort();
        }
    }
    /* The tiny chain: intra is worse than seq but asked for, so it runs. */
    job = s_chain();
    gxd_policy_choice c = s_choose(&job, 2, 0, GX_MODE_INTRA);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_int_eq(c.workers, 2);
    ck_assert_ptr_nonnull(strstr(c.reason, "auto: seq"));
    /* A split the job does not allow runs as one copy. */
    job = s_matmul();
    c = s_choose(&job, 4, 0, GX_MODE_REPLICA);
    ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
    ck_assert_int_eq(c.workers, 1);
    ck_assert_int_eq(c.replicas, 1);
    ck_assert(c.est_us[GX_MODE_REPLICA] < 0);
    ck_assert_ptr_nonnull(strstr(c.reason, "no batch"));
    job = s_branches();
    job.batch = 64;
    job.sync_steps = 1;
    c = s_choose(&job, 4, 0, GX_MODE_INTER_REPLICA);
    ck_assert_int_eq(c.mode, GX_MODE_INTER_REPLICA);
    ck_assert_int_eq(c.replicas, 1);
    ck_assert_int_eq(c.workers, s_choose(&job, 4, 0, GX_MODE_INTER).workers);
    ck_assert_ptr_nonnull(strstr(c.reason, "sync steps"));
    /* Out of range is auto. */
    c = s_choose(&job, 4, 0, GX_MODE_COUNT);
    ck_assert_int_eq(c.mode, s_choose(&job, 4, 0, GX_MODE_AUTO).mode);
}
END_TEST

START_TEST(test_one_worker)
{
    gxd_policy_job jobs[] = {s_branches(), s_matmul(), s_chain(), s_cnn(0), s_cnn(2)};
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        gxd_policy_choice c = s_choose(&jobs[i], 1, 0, GX_MODE_AUTO);
        ck_assert_int_eq(c.mode, GX_MODE_SEQ);
        for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++) {
            if (c.est_us[k] >= 0)
                ck_assert(c.est_us[k] == jobs[i].total_us);
            gxd_policy_choice r = s_choose(&jobs[i], 1, 0, (gx_mode)k);
            ck_assert_int_eq(r.workers, 1);
            ck_assert_int_eq(r.replicas, 1);
        }
    }
    /* One worker free now, four owned: the queue still runs on all four. */
    gxd_policy_job job = s_matmul();
    gxd_policy_machine m = s_machine(1, 5);
    m.workers_total = 4;
    gxd_policy_choice c;
    gxd_policy_choose(&job, &m, GX_MODE_AUTO, &c);
    s_check_sane(&job, &m, &c);
    ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], job.total_us / 4, 1e-9);
}
END_TEST

START_TEST(test_not_applicable)
{
    gxd_policy_job jobs[] = {s_branches(), s_matmul(), s_cnn(2)};
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        gxd_policy_choice c = s_choose(&jobs[i], 4, 0, GX_MODE_AUTO);
        ck_assert(c.est_us[GX_MODE_REPLICA] < 0);
        ck_assert(c.est_us[GX_MODE_INTER_REPLICA] < 0);
        for (int k = GX_MODE_SEQ; k <= GX_MODE_INTER; k++)
            ck_assert(c.est_us[k] > 0);
        ck_assert(c.est_us[GX_MODE_INTER_INTRA] > 0);
        ck_assert_int_ne(c.mode, GX_MODE_REPLICA);
        ck_assert_int_ne(c.mode, GX_MODE_INTER_REPLICA);
    }
    /* Intra with nothing to split is applicable, at the sequential time. */
    gxd_policy_job job = s_branches();
    job.split_us = job.split_crit_us = 0;
    job.n_split = 0;
    gxd_policy_choice c = s_choose(&job, 4, 0, GX_MODE_AUTO);
    ck_assert(c.est_us[GX_MODE_INTRA] == job.total_us);
}
END_TEST

START_TEST(test_scaling)
{
    struct {
        gxd_policy_job job;
        size_t queued;
    } cases[] = {{s_branches(), 0}, {s_matmul(), 0}, {s_cnn(0), 0}, {s_cnn(3), 0}, {s_chain(), 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gxd_policy_choice c2 = s_choose(&cases[i].job, 2, cases[i].queued, GX_MODE_AUTO);
        gxd_policy_choice c16 = s_choose(&cases[i].job, 16, cases[i].queued, GX_MODE_AUTO);
        /* More workers never make the chosen estimate worse. */
        ck_assert(c16.est_us[c16.mode] <= c2.est_us[c2.mode]);
        if (i < 4)
            ck_assert_int_gt(c16.workers, c2.workers);
    }
    /* 8 branches on 16 workers: all 8 branches at once, the spare workers
     * splitting the Gemms. */
    gxd_policy_job job = s_branches();
    gxd_policy_choice c = s_choose(&job, 16, 0, GX_MODE_AUTO);
    ck_assert(c.mode == GX_MODE_INTER || c.mode == GX_MODE_INTER_INTRA);
    ck_assert_int_ge(c.workers, 8);
    /* The queued replicas fill the machine: 3 queued on 16 workers is 4
     * jobs at once, on 2 workers 2. */
    job = s_chain();
    ck_assert_double_eq_tol(s_choose(&job, 16, 3, GX_MODE_AUTO).est_us[GX_MODE_REPLICA], 25, 1e-9);
    ck_assert_double_eq_tol(s_choose(&job, 2, 3, GX_MODE_AUTO).est_us[GX_MODE_REPLICA], 50, 1e-9);
    /* The largest team the interface allows. */
    job = s_matmul();
    c = s_choose(&job, GXD_MAX_TEAM, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_int_gt(c.workers, 16);
    ck_assert_int_le(c.workers, GXD_MAX_TEAM);
}
END_TEST

START_TEST(test_tolerance)
{
    /* Two heavy steps on two branches, 4 workers: inter+intra(4) is the
     * smallest, intra(4) within 3% on as many workers: the smaller wins. */
    gxd_policy_job job = {.total_us = 1000,
                          .critical_us = 500,
                          .split_us = 1000,
                          .split_crit_us = 500,
                          .n_steps = 2,
                          .n_split = 2,
                          .width = 2};
    gxd_policy_choice c = s_choose(&job, 4, 0, GX_MODE_AUTO);
    ck_assert(c.est_us[GX_MODE_INTER_INTRA] < c.est_us[GX_MODE_INTRA]);
    ck_assert(c.est_us[GX_MODE_INTER_INTRA] * 1.03 > c.est_us[GX_MODE_INTRA]);
    ck_assert_int_eq(c.mode, GX_MODE_INTER_INTRA);
    ck_assert_int_eq(c.workers, 4);
    ck_assert_ptr_null(strstr(c.reason, "within 3%"));
    /* intra(4) beats the queued replicas by 1%: one worker per job wins. */
    job = (gxd_policy_job){.total_us = 1000,
                           .critical_us = 1000,
                           .split_us = 1000,
                           .split_crit_us = 1000,
                           .n_steps = 12,
                           .n_split = 12,
                           .width = 1};
    c = s_choose(&job, 4, 2, GX_MODE_AUTO);
    ck_assert(c.est_us[GX_MODE_INTRA] < c.est_us[GX_MODE_REPLICA]);
    ck_assert(c.est_us[GX_MODE_REPLICA] <= c.est_us[GX_MODE_INTRA] * 1.03);
    ck_assert_int_eq(c.mode, GX_MODE_REPLICA);
    ck_assert_int_eq(c.workers, 1);
    ck_assert_ptr_nonnull(strstr(c.reason, "fewer workers"));
}
END_TEST

START_TEST(test_hostile_inputs)
{
    /* Garbage in: no crash, sane choices, every reason fits. */
    gxd_policy_job job = {.total_us = NAN,
                          .critical_us = -5,
                          .split_us = INFINITY,
                          .n_steps = 3,
                          .n_split = 99,
                          .width = -2,
                          .batch = -7,
                          .io_bytes = -1};
    gxd_policy_machine m = {
        .workers = 0, .workers_total = 0, .queued = (size_t)-1, .sync_us = NULL};
    gxd_policy_choice c;
    for (int k = 0; k <= GX_MODE_COUNT; k++) {
        gxd_policy_choose(&job, &m, (gx_mode)k, &c);
        ck_assert_int_eq(c.workers, 1);
        ck_assert_int_eq(c.replicas, 1);
        ck_assert_uint_gt(strlen(c.reason), 0);
        for (int i = GX_MODE_SEQ; i < GX_MODE_COUNT; i++)
            ck_assert(!isnan(c.est_us[i]));
    }
    /* Every case, machine size, queue and request. */
    gxd_policy_job huge = s_cnn(0);
    huge.batch = LLONG_MAX;
    gxd_policy_job jobs[] = {s_branches(), s_matmul(), s_chain(), s_cnn(0), s_cnn(4), huge};
    int ws[] = {1, 2, 3, 16, 255, GXD_MAX_TEAM};
    size_t qs[] = {0, 1, 1000000};
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
        for (size_t w = 0; w < sizeof ws / sizeof ws[0]; w++)
            for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++)
                for (int k = GX_MODE_AUTO; k < GX_MODE_COUNT; k++)
                    s_choose(&jobs[i], ws[w], qs[q], (gx_mode)k);
}
END_TEST

/* Profile-guided choice: a mode whose jobs took longer than the model
 * said is estimated that much slower, and loses to one that did not. */
START_TEST(test_seen_ratio)
{
    gxd_policy_job job = s_matmul();
    gxd_policy_choice c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    const double model = c.est_us[GX_MODE_INTRA];
    ck_assert_double_eq_tol(c.model_us, model, 1e-9);
    ck_assert_ptr_null(strstr(c.reason, "measured"));

    /* the team modes' jobs took 2.5 times the model: seq (as measured)
     * wins */
    job.seen[GX_MODE_INTRA] = job.seen[GX_MODE_INTER_INTRA] = 2.5;
    job.seen[GX_MODE_SEQ] = 1.1;
    c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_SEQ);
    ck_assert_int_eq(c.workers, 1);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_INTRA], model * 2.5, 1e-6);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_SEQ], job.total_us * 1.1, 1e-6);
    ck_assert_double_eq_tol(c.model_us, job.total_us, 1e-9); /* before the ratio */
    ck_assert_ptr_nonnull(strstr(c.reason, "measured/model seq 1.10 intra 2.50 inter+intra 2.50"));

    /* a requested mode keeps its model time for the record */
    c = s_choose(&job, 2, 0, GX_MODE_INTRA);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_double_eq_tol(c.model_us, model, 1e-9);

    /* a queued replica runs the job on one worker: seq's ratio, and its
     * model time is the job's on that worker, not the amortised one */
    job = s_cnn(0);
    job.batch = 0; /* no split to compare with */
    job.seen[GX_MODE_SEQ] = 2;
    c = s_choose(&job, 4, 10, GX_MODE_REPLICA);
    ck_assert_int_eq(c.workers, 1);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_REPLICA], job.total_us * 2 / 4, 1e-6);
    ck_assert_double_eq_tol(c.model_us, job.total_us, 1e-9);

    /* nonsense ratios are ignored */
    job = s_matmul();
    job.seen[GX_MODE_INTRA] = NAN;
    job.seen[GX_MODE_SEQ] = -3;
    c = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(c.mode, GX_MODE_INTRA);
    ck_assert_double_eq_tol(c.est_us[GX_MODE_INTRA], model, 1e-9);
}
END_TEST

/* The record kept with a plan: per mode, halfway to each job's ratio by
 * a bounded step (so the median of jobs that scatter), one-worker runs
 * under seq, forgotten when stale. */
START_TEST(test_seen_record)
{
    _Atomic uint64_t w[GXD_SEEN_WORDS];
    for (int k = 0; k < GXD_SEEN_WORDS; k++)
        atomic_init(&w[k], 0);
    gxd_policy_job job = {0};
    gxd_policy_choice c = {.mode = GX_MODE_INTRA, .model_us = 100};

    gxd_policy_seen_get(w, 0, false, &job);
    for (int k = 0; k < GX_MODE_COUNT; k++)
        ck_assert(job.seen[k] == 0);
    gxd_policy_seen_put(w, 1, false, &c, 2, 300); /* 3x */
    gxd_policy_seen_get(w, 2, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], 3, 1e-6);
    ck_assert(job.seen[GX_MODE_SEQ] == 0);
    gxd_policy_seen_put(w, 3, false, &c, 2, 310); /* near: the geometric mean */
    gxd_policy_seen_get(w, 3, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], sqrt(3 * 3.1), 1e-6);
    gxd_policy_seen_put(w, 3, false, &c, 2, 100); /* far: one step down */
    gxd_policy_seen_get(w, 3, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], sqrt(3 * 3.1) / 1.125, 1e-6);
    gxd_policy_seen_put(w, 4, false, &c, 2, 1000); /* far: one step up */
    gxd_policy_seen_get(w, 4, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], sqrt(3 * 3.1), 1e-6);
    gxd_policy_seen_put(w, 4, false, &c, 2, 300);
    gxd_policy_seen_get(w, 4, false, &job);
    const double intra = sqrt(sqrt(3 * 3.1) * 3);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], intra, 1e-6);

    /* the same mode on one worker counts for seq */
    gxd_policy_seen_put(w, 5, false, &c, 1, 150);
    gxd_policy_seen_get(w, 5, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_SEQ], 1.5, 1e-6);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], intra, 1e-6);

    /* bounded: a job stopped at once, a worker preempted for ever */
    c.mode = GX_MODE_INTER;
    gxd_policy_seen_put(w, 6, false, &c, 2, 1e-3);
    gxd_policy_seen_get(w, 6, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTER], 1.0 / 16, 1e-6);
    c.mode = GX_MODE_REPLICA;
    gxd_policy_seen_put(w, 6, false, &c, 2, 1e12);
    gxd_policy_seen_get(w, 6, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_REPLICA], 16, 1e-6);

    /* nothing to learn from: no model time, no time, no mode */
    c.model_us = 0;
    gxd_policy_seen_put(w, 7, false, &c, 2, 100);
    c = (gxd_policy_choice){.mode = GX_MODE_AUTO, .model_us = 100};
    gxd_policy_seen_put(w, 7, false, &c, 2, 100);
    c.mode = GX_MODE_INTER_INTRA;
    gxd_policy_seen_put(w, 7, false, &c, 2, NAN);
    gxd_policy_seen_put(w, 7, false, &c, 2, -5);
    gxd_policy_seen_get(w, 7, false, &job);
    ck_assert(job.seen[GX_MODE_INTER_INTRA] == 0 && job.seen[GX_MODE_AUTO] == 0);
    ck_assert_double_eq_tol(job.seen[GX_MODE_REPLICA], 16, 1e-6);

    /* stale: not renewed for GXD_SEEN_STALE runs of the plan */
    gxd_policy_seen_get(w, 5 + GXD_SEEN_STALE, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_SEQ], 1.5, 1e-6);
    gxd_policy_seen_get(w, 6 + GXD_SEEN_STALE, false, &job);
    ck_assert(job.seen[GX_MODE_SEQ] == 0);
    ck_assert_double_eq_tol(job.seen[GX_MODE_REPLICA], 16, 1e-6);
    /* a stale entry is replaced, not averaged */
    c = (gxd_policy_choice){.mode = GX_MODE_SEQ, .model_us = 100};
    gxd_policy_seen_put(w, 6 + GXD_SEEN_STALE, false, &c, 1, 400);
    gxd_policy_seen_get(w, 6 + GXD_SEEN_STALE, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_SEQ], 4, 1e-6);
    /* the run count wraps at 2^32 without ending an entry early */
    c.mode = GX_MODE_INTRA;
    gxd_policy_seen_put(w, 0xFFFFFFF0u, false, &c, 2, 200);
    gxd_policy_seen_get(w, 0x100000010ull, false, &job);
    ck_assert_double_eq_tol(job.seen[GX_MODE_INTRA], 2, 1e-6);
}
END_TEST

/* Teams that found their helpers spinning and teams that woke them keep
 * entries of their own (on a VM, cold teams ran at 0.7 of the model and
 * hot ones at 1.4); one worker has no helpers: seq's entry is one. */
START_TEST(test_seen_hot_cold)
{
    _Atomic uint64_t w[GXD_SEEN_WORDS];
    for (int k = 0; k < GXD_SEEN_WORDS; k++)
        atomic_init(&w[k], 0);
    gxd_policy_job cold = {0}, hot = {0};
    gxd_policy_choice c = {.mode = GX_MODE_INTRA, .model_us = 100};
    gxd_policy_seen_put(w, 1, true, &c, 2, 140);
    gxd_policy_seen_put(w, 1, false, &c, 2, 70);
    c.mode = GX_MODE_INTER;
    gxd_policy_seen_put(w, 1, true, &c, 2, 300);
    c.mode = GX_MODE_SEQ;
    gxd_policy_seen_put(w, 1, true, &c, 1, 110);
    gxd_policy_seen_get(w, 2, false, &cold);
    gxd_policy_seen_get(w, 2, true, &hot);
    ck_assert_double_eq_tol(hot.seen[GX_MODE_INTRA], 1.4, 1e-6);
    ck_assert_double_eq_tol(cold.seen[GX_MODE_INTRA], 0.7, 1e-6);
    ck_assert_double_eq_tol(hot.seen[GX_MODE_INTER], 3, 1e-6);
    ck_assert(cold.seen[GX_MODE_INTER] == 0);
    ck_assert_double_eq_tol(hot.seen[GX_MODE_SEQ], 1.1, 1e-6);
    ck_assert_double_eq_tol(cold.seen[GX_MODE_SEQ], 1.1, 1e-6);

    /* each set steers its own choice: a matmul whose team beats one worker
     * cold (0.7) stays on it; hot at 3x it does not */
    gxd_policy_job job = s_matmul();
    memcpy(job.seen, cold.seen, sizeof job.seen);
    gxd_policy_choice a = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_ne(a.mode, GX_MODE_SEQ);
    for (int k = GX_MODE_SEQ + 1; k < GX_MODE_COUNT; k++)
        job.seen[k] = 3;
    a = s_choose(&job, 2, 0, GX_MODE_AUTO);
    ck_assert_int_eq(a.mode, GX_MODE_SEQ);
    ck_assert_msg(!strstr(a.reason, "spinning"), "%s", a.reason);
    /* the reason says which set it used */
    memcpy(job.seen, hot.seen, sizeof job.seen);
    gxd_policy_machine m = s_machine(2, 0);
    m.hot = true;
    gxd_policy_choose(&job, &m, GX_MODE_AUTO, &a);
    ck_assert_msg(
        strstr(a.reason, "measured/model seq 1.10 intra 1.40 inter 3.00 (helpers spinning)"), "%s",
        a.reason);
}
END_TEST

/* Jobs of a mode that is fast now and then and slow mostly (a team
 * whose helpers are up only sometimes), and the other way round: the
 * entry ends near the ratio most jobs had, wherever it starts. */
START_TEST(test_seen_median)
{
    static const double ratio[2][3] = {{1, 8, 8}, {8, 1, 1}};
    for (int p = 0; p < 2; p++)
        for (int start = 0; start < 2; start++) {
            _Atomic uint64_t w[GXD_SEEN_WORDS];
            for (int k = 0; k < GXD_SEEN_WORDS; k++)
                atomic_init(&w[k], 0);
            gxd_policy_choice c = {.mode = GX_MODE_INTRA, .model_us = 100};
            gxd_policy_seen_put(w, 0, false, &c, 2, start ? 800 : 100);
            for (int i = 0; i < 300; i++)
                gxd_policy_seen_put(w, (uint64_t)i, false, &c, 2, 100 * ratio[p][i % 3]);
            gxd_policy_job job = {0};
            gxd_policy_seen_get(w, 300, false, &job);
            const double want = ratio[p][1];
            ck_assert_msg(job.seen[GX_MODE_INTRA] > want / 1.5 &&
                              job.seen[GX_MODE_INTRA] < want * 1.5,
                          "pattern %d from %s: %g, most jobs %g", p, start ? "8" : "1",
                          job.seen[GX_MODE_INTRA], want);
        }
}
END_TEST

/* The estimates in a reason: two decimals under 10 us, one under 100,
 * none from there (halves rounded away from zero; from 1e15 on, printf's
 * digits); a reason that does not fit is cut, terminated. */
START_TEST(test_reason_numbers)
{
    static const struct {
        double us;
        const char *says;
    } cases[] = {{3.14159, "seq 3.14us"},  {9.999, "seq 10.00us"}, {0.004, "seq 0.00us"},
                 {42.25, "seq 42.3us"},    {99.94, "seq 99.9us"},  {1234.5, "seq 1235us"},
                 {1e18, "seq 1000000000000000000us"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gxd_policy_job job = s_chain();
        job.total_us = job.critical_us = job.split_us = job.split_crit_us = cases[i].us;
        gxd_policy_machine m = s_machine(1, 0);
        gxd_policy_choice c;
        gxd_policy_choose(&job, &m, GX_MODE_SEQ, &c);
        ck_assert_msg(strstr(c.reason, cases[i].says) != NULL, "%g: %s", cases[i].us, c.reason);
    }
    /* every seen ratio and a long rule: past the line's 160 bytes */
    gxd_policy_job job = s_chain();
    for (int k = GX_MODE_SEQ; k < GX_MODE_COUNT; k++)
        job.seen[k] = 1.0 + k / 100.0;
    gxd_policy_machine m = s_machine(8, 123456789);
    gxd_policy_choice c;
    gxd_policy_choose(&job, &m, GX_MODE_AUTO, &c);
    ck_assert_uint_eq(strlen(c.reason), sizeof c.reason - 1);
    ck_assert_ptr_nonnull(strstr(c.reason, "rule 1 (123456789 queued)"));
}
END_TEST

Suite *policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("choose");
    tcase_add_unchecked_fixture(tc, s_setup, NULL);
    tcase_add_test(tc, test_rule1_queue_replica);
    tcase_add_test(tc, test_rule2_sync_no_split);
    tcase_add_test(tc, test_rule3_batch_split);
    tcase_add_test(tc, test_matmul_intra);
    tcase_add_test(tc, test_branches_inter);
    tcase_add_test(tc, test_tiny_chain_seq);
    tcase_add_test(tc, test_requested);
    tcase_add_test(tc, test_one_worker);
    tcase_add_test(tc, test_not_applicable);
    tcase_add_test(tc, test_scaling);
    tcase_add_test(tc, test_tolerance);
    tcase_add_test(tc, test_hostile_inputs);
    tcase_add_test(tc, test_seen_ratio);
    tcase_add_test(tc, test_seen_record);
    tcase_add_test(tc, test_seen_hot_cold);
    tcase_add_test(tc, test_seen_median);
    tcase_add_test(tc, test_reason_numbers);
    suite_add_tcase(s, tc);
    return s;
}
