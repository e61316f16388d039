/*
 * The tune registry's exploration (daemon/tune, docs/tune.md) on product
 * shapes models have and on square and skinny ones: per shape, what the
 * default runs (the packed kernel on the ISA in use), the tuned winner,
 * and every candidate's median time (one thread, fixed inputs, each output
 * checked against a float64 reference); at the end the totals of the
 * default, of the tuned choices and of each candidate alone (the best
 * single implementation). Then the same for Conv steps in the plain layout
 * (the shapes of docs/tune.md "oneDNN, measured": gexec's plain kernel,
 * the default, against oneDNN's convolution, dnnl.conv, when built with
 * it). Asserts nothing.
 *
 *     bench/bench_tune                 # budget 300 ms per shape, both parts
 *     bench/bench_tune 1000            # budget in ms per shape
 *     bench/bench_tune 300 conv        # Conv only ("matmul": MatMul only)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/tune/tune.h"
#include "ops/gemm.h"
#include "ops/schema.h"

#define S_MAX_IMPLS 16

/* A Conv shape: images, channels in and out, group, spatial dims (1 or
 * 2), input size (square), kernel (square), stride, padding. */
typedef struct s_cshape {
    const char *what;
    int64_t n, c, m, g;
    int nsp;
    int64_t in, k, stride, pad;
} s_cshape;

/* The registry's signature of a Conv step of shape cs (with a bias). */
static bool s_conv_sig(const s_cshape *cs, gxd_tune_sig *sig)
{
    const int nd = cs->nsp + 2;
    gx_view in[3] = {{.dtype = GX_F32, .ndim = nd, .shape = {cs->n, cs->c, cs->in, cs->in}},
                     {.dtype = GX_F32, .ndim = nd, .shape = {cs->m, cs->c / cs->g, cs->k, cs->k}},
                     {.dtype = GX_F32, .ndim = 1, .shape = {cs->m}}};
    const int64_t out = (cs->in + 2 * cs->pad - cs->k) / cs->stride + 1;
    gx_view y = {.dtype = GX_F32, .ndim = nd, .shape = {cs->n, cs->m, out, out}};
    const int64_t st[2] = {cs->stride, cs->stride}, dil[2] = {1, 1},
                  pads[4] = {cs->pad, cs->pad, cs->pad, cs->pad};
    gx_attrval attr[GX_MAX_ATTRS] = {{0}};
    attr[GX_WIN_STRIDES] = (gx_attrval){.set = true, .ints = st, .n = (size_t)cs->nsp};
    attr[GX_WIN_DILATIONS] = (gx_attrval){.set = true, .ints = dil, .n = (size_t)cs->nsp};
    attr[GX_WIN_PADS] = (gx_attrval){.set = true, .ints = pads, .n = 2 * (size_t)cs->nsp};
    attr[GX_CONV_GROUP] = (gx_attrval){.set = true, .i = cs->g};
    for (int i = 0; i < 3; i++)
        in[i].numel = gx_shape_numel(in[i].ndim, in[i].shape, INT64_MAX);
    y.numel = gx_shape_numel(nd, y.shape, INT64_MAX);
    char why[128];
    if (!gxd_tune_sig_of(GX_OP_CONV, attr, 3, in, &y, sig, why, sizeof why)) {
        fprintf(stderr, "bench_tune: %s: %s\n", cs->what, why);
        return false;
    }
    return true;
}

/* Explore every Conv shape and print default vs tuned. */
static void s_conv_part(gxd_tune *t)
{
    static const s_cshape shapes[] = {
        {"3->64 7x7 s2 224 (first conv)", 1, 3, 64, 1, 2, 224, 7, 2, 3},
        {"3x3 64@56", 1, 64, 64, 1, 2, 56, 3, 1, 1},
        {"3x3 128@28", 1, 128, 128, 1, 2, 28, 3, 1, 1},
        {"3x3 256@14", 1, 256, 256, 1, 2, 14, 3, 1, 1},
        {"3x3 512@7", 1, 512, 512, 1, 2, 7, 3, 1, 1},
        {"3x3 128@56 s2", 1, 128, 128, 1, 2, 56, 3, 2, 1},
        {"1x1 64->256@56", 1, 64, 256, 1, 2, 56, 1, 1, 0},
        {"1x1 256->64@56", 1, 256, 64, 1, 2, 56, 1, 1, 0},
        {"1x1 1024->256@14", 1, 1024, 256, 1, 2, 14, 1, 1, 0},
        {"1x1 2048->512@7", 1, 2048, 512, 1, 2, 7, 1, 1, 0},
        {"1x1 256->64@56 batch 8", 8, 256, 64, 1, 2, 56, 1, 1, 0},
        {"dw 3x3 32@112", 1, 32, 32, 32, 2, 112, 3, 1, 1},
        {"dw 3x3 144@56", 1, 144, 144, 144, 2, 56, 3, 1, 1},
        {"dw 3x3 960@7", 1, 960, 960, 960, 2, 7, 3, 1, 1},
        {"dw 5x5 240@14", 1, 240, 240, 240, 2, 14, 5, 1, 2},
        {"g32 (4 ch/g) 128@28", 1, 128, 128, 32, 2, 28, 3, 1, 1},
        {"g8 (8 ch/g) 64@56", 1, 64, 64, 8, 2, 56, 3, 1, 1},
        {"g32 (16 ch/g) 512@14", 1, 512, 512, 32, 2, 14, 3, 1, 1},
        {"g64 (16 ch/g) 1024@7", 1, 1024, 1024, 64, 2, 7, 3, 1, 1},
        {"1-D k3 64@1000", 1, 64, 64, 1, 1, 1000, 3, 1, 1},
        {"1-D k5 256@400", 1, 256, 256, 1, 1, 400, 5, 1, 2},
        {"1-D k3 80->384@3000", 1, 80, 384, 1, 1, 3000, 3, 1, 1},
        {"1-D k3 s2 384@3000", 1, 384, 384, 1, 1, 3000, 3, 2, 1},
        {"1-D 1x1 512->1024@200", 1, 512, 1024, 1, 1, 200, 1, 1, 0},
        {"1-D dw k31 512@200", 1, 512, 512, 512, 1, 200, 31, 1, 15},
    };
    const gxd_tune_impl *def = gxd_tune_default(t, GX_OP_CONV);
    double tot_def = 0, tot_tuned = 0;
    printf("\nConv, plain layout (x and y NCHW), bias; default: %s\n", def ? def->name : "?");
    printf("%-32s %12s %12s %12s %7s  candidates\n", "conv (batch 1 unless said)", "default ns",
           "tuned", "tuned ns", "speedup");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        gxd_tune_sig sig;
        gxd_tune_rec r;
        if (!s_conv_sig(&shapes[s], &sig))
            continue;
        if (gxd_tune_explore_sig(t, &sig, &r) != GX_OK) {
            printf("%-32s no valid candidate: %s\n", shapes[s].what, r.others);
            continue;
        }
        char pat[48];
        snprintf(pat, sizeof pat, "%s@%d:", def->name, def->version);
        const char *p = strstr(r.others, pat);
        const double d = p ? atof(p + strlen(pat)) : -1;
        printf("%-32s %12.0f %12s %12lld %6.2fx  %s\n", shapes[s].what, d, r.impl,
               (long long)r.ns, d > 0 ? d / (double)r.ns : 0.0, r.others);
        tot_def += d > 0 ? d : 0;
        tot_tuned += (double)r.ns;
        fflush(stdout);
    }
    printf("\nConv total over the shapes (ns): default %.0f, tuned %.0f (%.2fx)\n", tot_def,
           tot_tuned, tot_tuned > 0 ? tot_def / tot_tuned : 0.0);
}

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
    openblas_set_num_threads(1); /* as gexecd runs it (daemon/pool.c) */
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
    const char *part = argc > 2 ? argv[2] : "";
    if (!strcmp(part, "conv")) {
        s_conv_part(t);
        gxd_tune_destroy(&t);
        return 0;
    }
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
        if (!im[i].matmul) /* another op's */
            continue;
        printf("  %-16s %s%.0f\n", im[i].name, complete[i] ? "" : "(not on every shape) ",
               total[i]);
        if (complete[i] && (best == n_impls || total[i] < total[best]))
            best = i;
    }
    if (best < n_impls)
        printf("best single implementation: %s, %.0f ns (tuned is %.2fx faster)\n", im[best].name,
               total[best], tot_tuned > 0 ? total[best] / tot_tuned : 0.0);
    if (strcmp(part, "matmul") != 0)
        s_conv_part(t);
    gxd_tune_destroy(&t);
    return 0;
}
