/*
 * Seed 001's layout assignment: both worked examples with their injected
 * costs and counts (the branch case: without probabilities plan 2 wins at
 * 55 vs 105, with 0.9 / 0.1 plan 1 wins at 23 vs 26; the loop case: without
 * trip counts 90 vs 110, with 10 iterations 630 vs 290), expected
 * executions from profiles, the search on problems too large to
 * enumerate, and malformed problems.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/layout.h"
#include "gexec/status.h"
#include "tests/testutil.h"

enum { L0, L1, L2, NL };
#define NO INFINITY /* no kernel in that layout */
#define MIX 1000.0  /* l1 <-> l2 reorders: the seed's plans keep one layout */

/* Reorder costs of one edge: l0 -> l1 and l0 -> l2 cost `from_l0` (the
 * seed's r op), l1 <-> l2 cost MIX, the rest cannot happen. */
static void s_edge_costs(double *r, double from_l0)
{
    for (int a = 0; a < NL; a++)
        for (int b = 0; b < NL; b++)
            r[a * NL + b] = a == b ? 0 : a == L0 ? from_l0 : b == L0 ? NO : MIX;
}

/* The branch case (figures 1b, 1c): a (l0) -> r -> b -> s -> c | d -> m.
 * Ops: a, b, c, d (s and m are control flow, not layout-sensitive); r is
 * the reorder on the edge a -> b. */
enum { A, B, C, D, NOPS1 };

static const double s_cost1[NOPS1 * NL] = {
    [A * NL + L0] = 2,  [A * NL + L1] = NO, [A * NL + L2] = NO,
    [B * NL + L0] = NO, [B * NL + L1] = 1,  [B * NL + L2] = 1,
    [C * NL + L0] = NO, [C * NL + L1] = 10, [C * NL + L2] = 20,
    [D * NL + L0] = NO, [D * NL + L1] = 90, [D * NL + L2] = 30,
};
static const gxd_layout_edge s_edges1[] = {{A, B}, {B, C}, {B, D}};

static gxd_layout_problem s_branch(double *reorder, const double *count)
{
    for (int e = 0; e < 3; e++)
        s_edge_costs(&reorder[e * NL * NL], 2); /* opcost(r, {l0, l1 or l2}) = 2 */
    return (gxd_layout_problem){.n_ops = NOPS1, .n_layouts = NL, .cost = s_cost1,
                                .count = count, .n_edges = 3, .edge = s_edges1,
                                .reorder = reorder};
}

START_TEST(branch_case_without_probabilities)
{
    double reorder[3 * NL * NL];
    gxd_layout_problem pb = s_branch(reorder, NULL);
    const int plan1[NOPS1] = {L0, L1, L1, L1}, plan2[NOPS1] = {L0, L2, L2, L2};
    ck_assert_double_eq(gxd_layout_cost(&pb, plan1), 105); /* 2+2+1+10+90 */
    ck_assert_double_eq(gxd_layout_cost(&pb, plan2), 55);  /* 2+2+1+20+30 */
    int choice[NOPS1];
    gxd_layout_result res;
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_OK);
    ck_assert(res.exact);
    ck_assert_double_eq(res.total, 55);
    for (int op = 0; op < NOPS1; op++)
        ck_assert_int_eq(choice[op], plan2[op]);
}
END_TEST

START_TEST(branch_case_with_probabilities)
{
    /* s takes c 90% of the time, d 10%: runs(c) / runs(If) from a profile
     * of 1000 jobs */
    double reorder[3 * NL * NL];
    const double count[NOPS1] = {1, 1, gxd_layout_expected(900, 1000),
                                 gxd_layout_expected(100, 1000)};
    gxd_layout_problem pb = s_branch(reorder, count);
    const int plan1[NOPS1] = {L0, L1, L1, L1}, plan2[NOPS1] = {L0, L2, L2, L2};
    ck_assert_double_eq_tol(gxd_layout_cost(&pb, plan1), 23, 1e-9); /* 2+2+1+0.9*10+0.1*90 */
    ck_assert_double_eq_tol(gxd_layout_cost(&pb, plan2), 26, 1e-9); /* 2+2+1+0.9*20+0.1*30 */
    int choice[NOPS1];
    gxd_layout_result res;
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_OK);
    ck_assert_double_eq_tol(res.total, 23, 1e-9);
    for (int op = 0; op < NOPS1; op++)
        ck_assert_int_eq(choice[op], plan1[op]);
}
END_TEST

/* The loop case: gt and add in a Loop body, b after it; plan 1 runs all
 * in l1 (30 each), plan 2 in l2 (gt 10, add 10, b 90). */
enum { GT, ADD, BB, NOPS2 };

static const double s_cost2[NOPS2 * NL] = {
    [GT * NL + L0] = NO,  [GT * NL + L1] = 30,  [GT * NL + L2] = 10,
    [ADD * NL + L0] = NO, [ADD * NL + L1] = 30, [ADD * NL + L2] = 10,
    [BB * NL + L0] = NO,  [BB * NL + L1] = 30,  [BB * NL + L2] = 90,
};
static const gxd_layout_edge s_edges2[] = {{GT, ADD}, {ADD, GT}, {ADD, BB}};

static void s_loop(double iters, int *choice, gxd_layout_result *res, double *p1, double *p2)
{
    double reorder[3 * NL * NL];
    for (int e = 0; e < 3; e++)
        s_edge_costs(&reorder[e * NL * NL], NO);
    /* trip count = runs(body) / runs(Loop); the Loop runs once per job */
    const double it = gxd_layout_expected((unsigned long long)(iters * 50), 50);
    const double count[NOPS2] = {it, it, 1};
    gxd_layout_problem pb = {.n_ops = NOPS2, .n_layouts = NL, .cost = s_cost2, .count = count,
                             .n_edges = 3, .edge = s_edges2, .reorder = reorder};
    const int plan1[NOPS2] = {L1, L1, L1}, plan2[NOPS2] = {L2, L2, L2};
    *p1 = gxd_layout_cost(&pb, plan1);
    *p2 = gxd_layout_cost(&pb, plan2);
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, res), GX_OK);
}

START_TEST(loop_case_without_trip_counts)
{
    int choice[NOPS2];
    gxd_layout_result res;
    double p1, p2;
    s_loop(1, choice, &res, &p1, &p2);
    ck_assert_double_eq(p1, 90);  /* 30+30+30 */
    ck_assert_double_eq(p2, 110); /* 10+10+90 */
    ck_assert_double_eq(res.total, 90);
    for (int op = 0; op < NOPS2; op++)
        ck_assert_int_eq(choice[op], L1);
}
END_TEST

START_TEST(loop_case_with_ten_iterations)
{
    int choice[NOPS2];
    gxd_layout_result res;
    double p1, p2;
    s_loop(10, choice, &res, &p1, &p2);
    ck_assert_double_eq(p1, 630); /* 10*(30+30)+30 */
    ck_assert_double_eq(p2, 290); /* 10*(10+10)+90 */
    ck_assert_double_eq(res.total, 290);
    for (int op = 0; op < NOPS2; op++)
        ck_assert_int_eq(choice[op], L2);
}
END_TEST

START_TEST(expected_executions_without_a_profile)
{
    ck_assert_double_eq(gxd_layout_expected(0, 0), 1);
    ck_assert_double_eq(gxd_layout_expected(7, 0), 1);
    ck_assert_double_eq(gxd_layout_expected(0, 10), 0); /* a branch never taken */
    ck_assert_double_eq(gxd_layout_expected(25, 10), 2.5);
}
END_TEST

/* A chain of n ops too long to enumerate (3^n > GXD_LAYOUT_EXACT), solved
 * exactly as a forest, and with one extra edge closing a cycle (no longer
 * a forest: the search), which is never worse than a uniform assignment;
 * the chain's optimum is checked against a dynamic programme written here. */
START_TEST(search_on_long_chains)
{
    enum { N = 40 };
    double cost[N * NL], reorder[(N - 1) * NL * NL];
    gxd_layout_edge edge[N - 1];
    unsigned seed = 99u + (unsigned)_i;
    for (int i = 0; i < N * NL; i++) {
        seed = seed * 1103515245u + 12345u;
        cost[i] = (double)(seed >> 16 & 1023) / 10.0;
    }
    for (int e = 0; e < N - 1; e++) {
        edge[e] = (gxd_layout_edge){e, e + 1};
        for (int a = 0; a < NL; a++)
            for (int b = 0; b < NL; b++) {
                seed = seed * 1103515245u + 12345u;
                reorder[(e * NL + a) * NL + b] = a == b ? 0 : (double)(seed >> 16 & 255) / 10.0;
            }
    }
    gxd_layout_problem pb = {.n_ops = N, .n_layouts = NL, .cost = cost, .n_edges = N - 1,
                             .edge = edge, .reorder = reorder};
    int choice[N], uniform[N];
    gxd_layout_result res;
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_OK);
    ck_assert(res.exact); /* a chain is a forest */
    ck_assert_double_eq_tol(res.total, gxd_layout_cost(&pb, choice), 1e-9);
    double chain = res.total;
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < N; i++)
            uniform[i] = l;
        ck_assert(res.total <= gxd_layout_cost(&pb, uniform) + 1e-9);
    }
    /* the chain's optimum by dynamic programming */
    double best[NL], next[NL];
    for (int l = 0; l < NL; l++)
        best[l] = cost[l];
    for (int i = 1; i < N; i++) {
        for (int b = 0; b < NL; b++) {
            next[b] = INFINITY;
            for (int a = 0; a < NL; a++)
                next[b] = fmin(next[b], best[a] + reorder[((i - 1) * NL + a) * NL + b]);
            next[b] += cost[i * NL + b];
        }
        for (int b = 0; b < NL; b++)
            best[b] = next[b];
    }
    double opt = fmin(best[0], fmin(best[1], best[2]));
    ck_assert_double_eq_tol(chain, opt, 1e-9);
    /* close a cycle: the search, never worse than one layout everywhere */
    gxd_layout_edge cyc[N];
    double rc[N * NL * NL];
    memcpy(cyc, edge, sizeof edge);
    memcpy(rc, reorder, sizeof reorder);
    cyc[N - 1] = (gxd_layout_edge){N - 1, 0};
    for (int a = 0; a < NL; a++)
        for (int b = 0; b < NL; b++)
            rc[((N - 1) * NL + a) * NL + b] = a == b ? 0 : 5;
    pb.edge = cyc;
    pb.reorder = rc;
    pb.n_edges = N;
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_OK);
    ck_assert(!res.exact);
    ck_assert_double_eq_tol(res.total, gxd_layout_cost(&pb, choice), 1e-9);
    for (int l = 0; l < NL; l++) {
        for (int i = 0; i < N; i++)
            uniform[i] = l;
        ck_assert(res.total <= gxd_layout_cost(&pb, uniform) + 1e-9);
    }
    ck_assert(res.total >= opt - 1e-9); /* the extra edge only adds cost */
}
END_TEST

START_TEST(malformed_problems)
{
    const double cost[2] = {NO, NO};
    int choice[2];
    gxd_layout_result res;
    gxd_layout_problem pb = {.n_ops = 1, .n_layouts = 2, .cost = cost};
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_EINVAL); /* no layout at all */
    const double ok[4] = {1, 2, 3, 4};
    const gxd_layout_edge bad[1] = {{0, 5}};
    const double r[4] = {0};
    pb = (gxd_layout_problem){.n_ops = 2, .n_layouts = 2, .cost = ok, .n_edges = 1,
                              .edge = bad, .reorder = r};
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_EINVAL);
    pb.n_edges = 0;
    pb.n_layouts = GXD_LAYOUT_MAX + 1;
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_EINVAL);
    const int fixed[2] = {1, -1};
    pb = (gxd_layout_problem){.n_ops = 2, .n_layouts = 2, .cost = ok, .fixed = fixed};
    ck_assert_int_eq(gxd_layout_solve(&pb, choice, &res), GX_OK);
    ck_assert_int_eq(choice[0], 1); /* fixed, though layout 0 is cheaper */
    ck_assert_int_eq(choice[1], 0);
    ck_assert_double_eq(res.total, 2 + 3);
}
END_TEST

Suite *layout_suite(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, branch_case_without_probabilities);
    tcase_add_test(tc, branch_case_with_probabilities);
    tcase_add_test(tc, loop_case_without_trip_counts);
    tcase_add_test(tc, loop_case_with_ten_iterations);
    tcase_add_test(tc, expected_executions_without_a_profile);
    tcase_add_loop_test(tc, search_on_long_chains, 0, 8);
    tcase_add_test(tc, malformed_problems);
    suite_add_tcase(s, tc);
    return s;
}
