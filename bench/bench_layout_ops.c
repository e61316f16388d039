/*
 * Conv per layout: the plain kernel (gx_cpu_kernel(GX_OP_CONV), im2col +
 * sgemm) against the NHWC and NCHW16c kernels (ops/cpu/conv_layout.c) on
 * small-CNN shapes (3x3, 1x1, depthwise with stride 1 and 2, a network's
 * first conv on 3 channels, inverted-residual 1x1s), one thread (as
 * gexecd's workers run OpenBLAS), best of several runs, x in the layout
 * each kernel reads it in (gx_cpu_layout_input), reorders and weight
 * packing excluded. One line per shape: microseconds per call and each
 * layout's time over plain's (below 1: faster; nan: no kernel in that
 * layout), and the largest difference of a layout's result from plain's
 * (|a - b| / (1 + |b|)). The ratios are gx_cpu_layout_factor's
 * (ops/layout.c). Times are the thread's CPU time, so that other
 * processes on the machine lengthen them less. Asserts nothing.
 *
 *     bench/bench_layout_ops                    # the shapes below
 *     bench/bench_layout_ops N C M HW K S [G]   # one shape
 *     bench/bench_layout_ops q [N C M HW K S [G]]  # QLinearConv: NCHW and NHWC
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/benchutil.h"
#include "ops/layout.h"
#include "ops/qgemm.h"

#define S_PROG "bench_layout_ops"

#define RUNS 7
#define MIN_SECONDS 0.02 /* each run repeats the call for at least this long */

static float *s_values(int64_t n)
{
    float *p = gxb_alloc(S_PROG, (size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* Best microseconds per call of f over RUNS runs. */
static double s_time(gx_kernel_fn f, const gx_kargs *k)
{
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        int calls = 0;
        const double t0 = gxb_cpu_s();
        double t;
        do {
            f(k);
            calls++;
        } while ((t = gxb_cpu_s() - t0) < MIN_SECONDS);
        if (t / calls < best)
            best = t / calls;
    }
    return best * 1e6;
}

/* One Conv [n, c, hw, hw] * [m, c / g, kk, kk] (g: 1 or c == m,
 * depthwise) with bias, pad kk / 2, stride st: prints plain, NHWC and
 * NCHW16c microseconds and the ratios (x in the layout each kernel reads:
 * NCHW for an NCHW16c Conv whose C is not a multiple of 16). */
static void s_shape(int64_t n, int64_t c, int64_t m, int64_t hw, int64_t kk, int64_t st,
                    int64_t g)
{
    const int64_t p = kk / 2;
    gx_attr at[] = {{.name = (char *)"pads", .type = GX_ATTR_INTS,
                     .ints = (int64_t[]){p, p, p, p}, .n = 4},
                    {.name = (char *)"group", .type = GX_ATTR_INT, .i = g},
                    {.name = (char *)"strides", .type = GX_ATTR_INTS,
                     .ints = (int64_t[]){st, st}, .n = 2}};
    const gx_node node = {.n_attr = 3, .attr = at};
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 4, .shape = {n, c, hw, hw}},
                     {.dtype = GX_F32, .ndim = 4, .shape = {m, c / g, kk, kk}},
                     {.dtype = GX_F32, .ndim = 1, .shape = {m}}};
    for (int i = 0; i < 3; i++) {
        in[i].numel = gx_shape_numel(in[i].ndim, in[i].shape, INT64_MAX);
        in[i].data = s_values(in[i].numel);
    }
    gx_view out = {0};
    gx_attrval attr[GX_MAX_ATTRS];
    char err[256];
    gx_infer ic = {.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    const gx_op_schema *s = gx_op_schema_get(GX_OP_CONV);
    if (gx_op_resolve_attrs(GX_OP_CONV, &node, attr, err, sizeof err) < 0 || s->infer(&ic) < 0) {
        fprintf(stderr, "bench_layout_ops: %s\n", err);
        exit(1);
    }
    out.data = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
    double us[GX_LAYOUT_COUNT], worst = 0.0;
    float *ref = NULL;
    for (int l = 0; l < GX_LAYOUT_COUNT; l++) {
        gx_kernel_fn f;
        gx_view kin[3] = {in[0], in[1], in[2]}, y = out;
        void *scratch;
        if (l == GX_LAYOUT_PLAIN) {
            f = gx_cpu_kernel(GX_OP_CONV);
            scratch = gxb_alloc(S_PROG, s->scratch(&ic));
        } else {
            char why[256];
            if (!(f = gx_cpu_conv_layout((gx_layout)l, &ic, why, sizeof why))) {
                us[l] = NAN; /* no kernel in this layout (M not a multiple of 16) */
                continue;
            }
            kin[0] = gx_layout_physical(gx_cpu_layout_input(GX_OP_CONV, (gx_layout)l, &ic, 0),
                                        &in[0]);
            kin[0].data = gxb_alloc(S_PROG, (size_t)in[0].numel * sizeof(float));
            gx_layout_reorder(&in[0], &kin[0], 0, 1);
            gx_cpu_conv_pack_shape((gx_layout)l, attr, &in[1], &kin[1]);
            kin[1].data = gxb_alloc(S_PROG, (size_t)kin[1].numel * sizeof(float));
            gx_cpu_conv_pack((gx_layout)l, attr, &in[1], &kin[1]);
            y = gx_layout_physical((gx_layout)l, &out);
            scratch = gxb_alloc(S_PROG, gx_cpu_conv_layout_scratch((gx_layout)l, &ic));
        }
        const gx_kargs k = {.attr = attr, .n_in = 3, .in = kin, .n_out = 1, .out = &y,
                            .scratch = scratch, .ith = 0, .nth = 1};
        us[l] = s_time(f, &k);
        if (l == GX_LAYOUT_PLAIN) {
            ref = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
            memcpy(ref, out.data, (size_t)out.numel * sizeof(float));
        } else { /* the layout's result, back in plain, against plain's */
            gx_view back = out;
            back.data = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
            gx_layout_reorder(&y, &back, 0, 1);
            const float *b = back.data;
            for (int64_t i = 0; i < out.numel; i++) {
                const double d = fabs((double)b[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
                worst = d > worst ? d : worst;
            }
            free(back.data);
        }
        free(scratch);
        if (l != GX_LAYOUT_PLAIN) {
            free(kin[0].data);
            free(kin[1].data);
        }
    }
    free(ref);
    printf("%3lld %4lld %4lld %4lld  %lldx%lld%s s%lld %10.1f %10.1f %10.1f   %6.2f %6.2f  %.0e\n",
           (long long)n, (long long)c, (long long)m, (long long)hw, (long long)kk, (long long)kk,
           g == c ? "dw" : g > 1 ? "g " : "  ", (long long)st, us[GX_LAYOUT_PLAIN],
           us[GX_LAYOUT_NHWC], us[GX_LAYOUT_NCHW16C], us[GX_LAYOUT_NHWC] / us[GX_LAYOUT_PLAIN],
           us[GX_LAYOUT_NCHW16C] / us[GX_LAYOUT_PLAIN], worst);
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        free(in[i].data);
    free(out.data);
}

/* One QLinearConv of the same geometry (uint8 x and y, int8 weights with
 * per-channel scales, zero points 128 and 0, int32 bias; pad kk / 2 but
 * none for 1x1): the plain kernel (qgemm's packed one for group 1,
 * ops/cpu/conv.c's for depthwise) against the NHWC one
 * (ops/cpu/qconv_layout.c), both from W packed by the qgemm pack; the
 * last column counts the output bytes that differ (0: the same bytes). */
static void s_qshape(int64_t n, int64_t c, int64_t m, int64_t hw, int64_t kk, int64_t st,
                     int64_t g)
{
    const int64_t p = kk / 2;
    gx_attr at[] = {{.name = (char *)"pads", .type = GX_ATTR_INTS,
                     .ints = (int64_t[]){p, p, p, p}, .n = 4},
                    {.name = (char *)"group", .type = GX_ATTR_INT, .i = g},
                    {.name = (char *)"strides", .type = GX_ATTR_INTS,
                     .ints = (int64_t[]){st, st}, .n = 2}};
    const gx_node node = {.n_attr = 3, .attr = at};
    const float xs = 6.0f / 255.0f;
    const uint8_t zp = 128;
    gx_view in[9] = {
        {.dtype = GX_U8, .ndim = 4, .shape = {n, c, hw, hw}},
        {.dtype = GX_F32, .ndim = 0, .data = (void *)&xs},
        {.dtype = GX_U8, .ndim = 0, .data = (void *)&zp},
        {.dtype = GX_I8, .ndim = 4, .shape = {m, c / g, kk, kk}},
        {.dtype = GX_F32, .ndim = 1, .shape = {m}},
        {.dtype = GX_I8, .ndim = 1, .shape = {m}},
        {.dtype = GX_F32, .ndim = 0, .data = (void *)&xs},
        {.dtype = GX_U8, .ndim = 0, .data = (void *)&zp},
        {.dtype = GX_I32, .ndim = 1, .shape = {m}}};
    for (int i = 0; i < 9; i++) {
        in[i].numel = gx_shape_numel(in[i].ndim, in[i].shape, INT64_MAX);
        if (!in[i].data)
            in[i].data = gxb_alloc(S_PROG, (size_t)in[i].numel * gx_dtype_size(in[i].dtype));
    }
    for (int64_t i = 0; i < in[0].numel; i++)
        ((uint8_t *)in[0].data)[i] = (uint8_t)(i * 7919 % 251);
    for (int64_t i = 0; i < in[3].numel; i++)
        ((int8_t *)in[3].data)[i] = (int8_t)(i * 104729 % 255 - 127);
    for (int64_t j = 0; j < m; j++) {
        ((float *)in[4].data)[j] = 0.3f / (float)(c / g * kk * kk) * (1.0f + (float)(j % 7) / 7);
        ((int32_t *)in[8].data)[j] = (int32_t)(j * 37 % 2001) - 1000;
    }
    gx_view out = {0};
    gx_attrval attr[GX_MAX_ATTRS];
    char err[256];
    gx_infer ic = {.attr = attr, .n_in = 9, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    if (gx_op_resolve_attrs(GX_OP_QLINEAR_CONV, &node, attr, err, sizeof err) < 0 ||
        gx_op_schema_get(GX_OP_QLINEAR_CONV)->infer(&ic) < 0) {
        fprintf(stderr, "bench_layout_ops: %s\n", err);
        exit(1);
    }
    void *packed = gxb_alloc(S_PROG, gx_cpu_qgemm_packed_bytes(GX_OP_QLINEAR_CONV, &in[3]));
    gx_cpu_qgemm_pack(GX_OP_QLINEAR_CONV, &in[3], packed);
    uint8_t *ref = gxb_alloc(S_PROG, (size_t)out.numel);
    double us[2] = {NAN, NAN};
    int64_t differ = 0;
    for (int l = 0; l < 2; l++) {
        gx_view kin[9], y = out;
        memcpy(kin, in, sizeof kin);
        gx_kernel_fn f;
        char why[256];
        if (l == 0) {
            f = g == 1 ? gx_cpu_qgemm_kernel(GX_OP_QLINEAR_CONV) : gx_cpu_kernel(GX_OP_QLINEAR_CONV);
            kin[3].data = g == 1 ? packed : in[3].data;
            y.data = ref;
        } else {
            if (!(f = gx_cpu_qconv_layout(GX_LAYOUT_NHWC, &ic, why, sizeof why))) {
                fprintf(stderr, "# %s\n", why);
                break;
            }
            kin[0] = gx_layout_physical(GX_LAYOUT_NHWC, &in[0]);
            kin[0].data = gxb_alloc(S_PROG, (size_t)in[0].numel);
            gx_layout_reorder(&in[0], &kin[0], 0, 1);
            kin[3].data = packed;
            y = gx_layout_physical(GX_LAYOUT_NHWC, &out);
            y.data = gxb_alloc(S_PROG, (size_t)out.numel);
        }
        const gx_kargs k = {.attr = attr, .n_in = 9, .in = kin, .n_out = 1, .out = &y,
                            .ith = 0, .nth = 1};
        us[l] = s_time(f, &k);
        if (l == 1) {
            gx_view back = out;
            back.data = gxb_alloc(S_PROG, (size_t)out.numel);
            gx_layout_reorder(&y, &back, 0, 1);
            for (int64_t i = 0; i < out.numel; i++)
                differ += ((const uint8_t *)back.data)[i] != ref[i];
            free(back.data);
            free(y.data);
            free(kin[0].data);
        }
    }
    printf("%3lld %4lld %4lld %4lld  %lldx%lld%s s%lld %10.1f %10.1f   %6.2f  %lld\n",
           (long long)n, (long long)c, (long long)m, (long long)hw, (long long)kk, (long long)kk,
           g == c ? "dw" : g > 1 ? "g " : "  ", (long long)st, us[0], us[1], us[1] / us[0],
           (long long)differ);
    fflush(stdout);
    for (int i = 0; i < 9; i++)
        if (in[i].ndim > 0)
            free(in[i].data);
    free(packed);
    free(ref);
}

int main(int argc, char **argv)
{
    openblas_set_num_threads(1); /* as gexecd's workers run it */
    if (argc > 1 && !strcmp(argv[1], "q")) { /* QLinearConv */
        printf("# QLinearConv, u8 x int8 per channel, pad k/2 (1x1: none); one thread, best of "
               "%d; microseconds\n", RUNS);
        printf("  N    C    M   HW  kernel         plain       nhwc   nhwc/p  bytes differing\n");
        if (argc == 8 || argc == 9) {
            int64_t a[7] = {0, 0, 0, 0, 0, 0, 1};
            for (int i = 2; i < argc; i++)
                if ((a[i - 2] = strtoll(argv[i], NULL, 10)) <= 0) {
                    fprintf(stderr, "usage: bench_layout_ops q [N C M HW K S [G]]\n");
                    return 2;
                }
            s_qshape(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
            return 0;
        }
        /* MobileNetV2's inverted residual blocks */
        static const int64_t blk[][2] = {{24, 56}, {32, 28}, {64, 14}, {96, 14}, {160, 7}};
        for (size_t i = 0; i < sizeof blk / sizeof *blk; i++) {
            const int64_t c = blk[i][0], hw = blk[i][1];
            s_qshape(1, c, 6 * c, hw, 1, 1, 1);
            s_qshape(1, 6 * c, 6 * c, hw, 3, 1, 6 * c);
            s_qshape(1, 6 * c, 6 * c, hw, 3, 2, 6 * c);
            s_qshape(1, 6 * c, c, hw, 1, 1, 1);
        }
        return 0;
    }
    printf("# Conv, pad k/2, bias; one thread, best of %d; microseconds\n", RUNS);
    printf("  N    C    M   HW  kernel         plain       nhwc    nchw16c   nhwc/p 16c/p  "
           "maxdiff\n");
    if (argc == 7 || argc == 8) {
        int64_t a[7] = {0, 0, 0, 0, 0, 0, 1};
        for (int i = 1; i < argc; i++)
            if ((a[i - 1] = strtoll(argv[i], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: bench_layout_ops [N C M HW K S [G]]\n");
                return 2;
            }
        s_shape(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
        return 0;
    }
    static const int64_t ns[] = {1, 8}, cs[] = {16, 32, 64}, hws[] = {32, 16, 8}, ks[] = {3, 1};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 2; b++)
            for (size_t c = 0; c < 3; c++)
                for (size_t d = 0; d < 3; d++)
                    s_shape(ns[a], cs[c], cs[c], hws[d], ks[b], 1, 1);
    for (size_t a = 0; a < 2; a++) /* depthwise 3x3, stride 1 and 2 */
        for (size_t c = 1; c < 3; c++)
            for (size_t d = 0; d < 2; d++)
                for (int64_t st = 1; st <= 2; st++)
                    s_shape(ns[a], cs[c], cs[c], hws[d], 3, st, cs[c]);
    /* a network's first conv: 3 channels in, NCHW16c reads them in NCHW */
    for (size_t a = 0; a < 2; a++) {
        s_shape(ns[a], 3, 16, 32, 3, 1, 1);
        s_shape(ns[a], 3, 32, 64, 3, 2, 1);
        s_shape(ns[a], 3, 16, 112, 3, 2, 1);
    }
    /* inverted residual blocks' 1x1 convs: C and M not always multiples of 16 */
    s_shape(1, 24, 96, 28, 1, 1, 1);
    s_shape(1, 96, 24, 28, 1, 1, 1);
    s_shape(1, 16, 64, 56, 1, 1, 1);
    /* ResNet-18's 3x3 convs at 224x224: few, short rows, large weights */
    for (int64_t c = 64, hw = 56; c <= 512; c *= 2, hw /= 2)
        s_shape(1, c, c, hw, 3, 1, 1);
    return 0;
}
