/*
 * The tune registry's exploration (daemon/tune, docs/tune.md) on product
 * shapes models have and on square and skinny ones: per shape, what the
 * default runs (the packed kernel on the ISA in use), the tuned winner,
 * and every candidate's median time (one thread, fixed inputs, each output
 * checked against a float64 reference); at the end the totals of the
 * default, of the tuned choices and of each candidate alone (the best
 * single implementation). Asserts nothing.
 *
 *     bench/bench_tune                 # budget 300 ms per shape
 *     bench/bench_tune 1000            # budget in ms per shape
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/tune/tune.h"
#include "ops/gemm.h"

#define S_MAX_IMPLS 16

int main(int argc, char **argv)
{
    static const int64_t shapes[][3] = {
        /* MLP / transformer layers (rows = batch × tokens) */
        {1, 512, 512},     {4, 512, 512},     {16, 512, 512},  {64, 512, 512},
        {128, 768, 768},   {128, 768, 3072},  {128, 3072, 768}, {1, 4096, 1000},
        /* square */
        {32, 32, 32},      {64, 64, 64},      {128, 128, 128}, {256, 256, 256},
        {512, 512, 512},   {1024, 1024, 1024},
        /* skinny */
        {1, 1024, 1024},   {2, 1024, 1024},   {1024, 1024, 8}, {1024, 8, 1024},
        {4096, 64, 64},    {64, 4096, 64},
    };
    const size_t n_shapes = sizeof shapes / sizeof shapes[0];
    char err[256];
    gxd_tune_opts o = {.mode = GXD_TUNE_EXPLORE, .budget_ms = argc > 1 ? atol(argv[1]) : 300};
    gxd_tune *t = gxd_tune_new(&o, err, sizeof err);
    if (!t) {
        fprintf(stderr, "bench_tune: %s\n", err);
        return 1;
    }
    size_t n_impls;
    const gxd_tune_impl *im = gxd_tune_impls(t, &n_impls);
    const gxd_tune_impl *def = gxd_tune_default(t, GX_OP_MATMUL);
    double total[S_MAX_IMPLS] = {0}, tot_def = 0, tot_tuned = 0;
    bool complete[S_MAX_IMPLS];
    for (size_t i = 0; i < n_impls; i++)
        complete[i] = true;
    printf("# %s\n# builds: %s\n# one thread, median ns per product; default: %s\n",
           gxd_tune_device(t), gxd_tune_builds(t), def ? def->name : "?");
    printf("%-16s %12s %16s %12s %7s  candidates\n", "M x K x N", "default ns", "tuned", "tuned ns",
           "speedup");
    for (size_t s = 0; s < n_shapes; s++) {
        gxd_tune_sig sig;
        memset(&sig, 0, sizeof sig);
        sig.op = GX_OP_MATMUL;
        sig.a_ndim = 2;
        sig.a_shape[0] = sig.m = shapes[s][0];
        sig.a_shape[1] = sig.k = shapes[s][1];
        sig.n = shapes[s][2];
        sig.c_ndim = -1;
        gxd_tune_rec r;
        if (gxd_tune_explore_sig(t, &sig, &r) != GX_OK) {
            printf("%lldx%lldx%lld: no valid candidate: %s\n", (long long)sig.m,
                   (long long)sig.k, (long long)sig.n, r.others);
            continue;
        }
        /* the default's time from the others' list */
        double d = -1;
        for (size_t i = 0; i < n_impls; i++) {
            char pat[48];
            snprintf(pat, sizeof pat, "%s@%d:", im[i].name, im[i].version);
            const char *p = strstr(r.others, pat);
            double ns = p ? atof(p + strlen(pat)) : -1;
            if (p && strncmp(p + strlen(pat), "rejected", 8) != 0 && ns > 0)
                total[i] += ns;
            else
                complete[i] = false;
            if (&im[i] == def)
                d = ns;
        }
        char shape[32];
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)sig.m, (long long)sig.k,
                 (long long)sig.n);
        printf("%-16s %12.0f %16s %12lld %6.2fx  %s\n", shape, d, r.impl, (long long)r.ns,
               d > 0 ? d / (double)r.ns : 0.0, r.others);
        tot_def += d > 0 ? d : 0;
        tot_tuned += (double)r.ns;
        fflush(stdout);
    }
    printf("\ntotal over the shapes (ns): default %.0f, tuned %.0f (%.2fx)\n", tot_def, tot_tuned,
           tot_tuned > 0 ? tot_def / tot_tuned : 0.0);
    size_t best = n_impls;
    for (size_t i = 0; i < n_impls; i++) {
        printf("  %-16s %s%.0f\n", im[i].name, complete[i] ? "" : "(not on every shape) ",
               total[i]);
        if (complete[i] && (best == n_impls || total[i] < total[best]))
            best = i;
    }
    if (best < n_impls)
        printf("best single implementation: %s, %.0f ns (tuned is %.2fx faster)\n", im[best].name,
               total[best], tot_tuned > 0 ? total[best] / tot_tuned : 0.0);
    gxd_tune_destroy(&t);
    return 0;
}
