/*
 * Conv in the NHWC and NCHW16c layouts (ops/cpu/conv_layout.c): random
 * shapes and attributes against the plain Conv kernel (the reference,
 * within 1e-4 of each output's sum of |products|), the packed weights and
 * the input reordered into the layout the kernel reads it in
 * (gx_cpu_layout_input: NCHW for an NCHW16c Conv whose C is not a multiple
 * of 16 and an NHWC one with C <= 4); shares of nth = 2, 3, 7 and 70 each write exactly their
 * gx_cpu_conv_layout_rows range, byte for byte what nth = 1 writes, also
 * all at once on threads, and stay inside the scratch; group 1,
 * depthwise (group == C == M), groups of 2, 4 and 8 channels in and out,
 * and groups of 16 or more channels in and out, on the widest ISA, on AVX2
 * where the CPU has it (so that AVX-512 machines test it too) and on the
 * baseline (gx_cpu_gemm_isa_set); a fused Relu or Clip applied as the kernel
 * stores, and the epilogue's ranges (gx_cpu_conv_layout_epi); and the
 * refusals.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/fused.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

#define S_GUARD 256 /* bytes of 0xA5 after the scratch, which no share may touch */

static uint64_t s_seed = 0x9e3779b97f4a7c15u;

static int64_t s_pick(int64_t n)
{
    s_seed = s_seed * 6364136223846793005u + 1442695040888963407u;
    return (int64_t)((s_seed >> 33) % (uint64_t)n);
}

/* One Conv: its attributes, and how x, W and bias look. */
typedef struct s_case {
    int64_t n, c, m, h, w, kh, kw, sh, sw, dh, dw, pads[4];
    int64_t group; /* 0: 1 */
    const char *auto_pad; /* NULL: explicit pads */
    bool bias;
} s_case;

/* Each output's sum of |x * w| (+ |bias|): the scale of its rounding. */
static void s_scale(const s_case *t, const gx_attrval *av, const gx_view *x, const gx_view *wt,
                    const float *bias, double *out)
{
    gx_win w;
    gx_win_init(&w, av, "Conv", x, wt->shape + 2, false, false, NULL, 0);
    const float *xd = x->data, *wd = wt->data;
    const int64_t g = t->group ? t->group : 1, cg = t->c / g;
    for (int64_t n = 0; n < t->n; n++)
        for (int64_t m = 0; m < t->m; m++)
            for (int64_t oh = 0; oh < w.out[0]; oh++)
                for (int64_t ow = 0; ow < w.out[1]; ow++) {
                    double s = bias ? fabs(bias[m]) : 0.0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t a = 0; a < t->kh; a++)
                            for (int64_t b = 0; b < t->kw; b++) {
                                const int64_t i = oh * w.stride[0] - w.pad_lo[0] + a * w.dil[0];
                                const int64_t j = ow * w.stride[1] - w.pad_lo[1] + b * w.dil[1];
                                if (i < 0 || i >= t->h || j < 0 || j >= t->w)
                                    continue;
                                const int64_t c = m / (t->m / g) * cg + ci;
                                s += fabs((double)xd[((n * t->c + c) * t->h + i) * t->w + j] *
                                          wd[((m * cg + ci) * t->kh + a) * t->kw + b]);
                            }
                    out[((n * t->m + m) * w.out[0] + oh) * w.out[1] + ow] = s;
                }
}

/* Runs share ith of nth of kernel f into y (physical, data set). */
static void s_share(gx_kernel_fn f, const gx_attrval *av, int n_in, const gx_view *in,
                    const gx_view *y, void *scratch, int ith, int nth)
{
    gx_kargs k = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = y, .scratch = scratch,
                  .ith = ith, .nth = nth};
    f(&k);
}

/* One share on its own thread. */
typedef struct s_job {
    gx_kernel_fn f;
    gx_kargs k;
} s_job;

static void *s_job_run(void *arg)
{
    const s_job *j = arg;
    j->f(&j->k);
    return NULL;
}

/* All nth shares at once, one thread each (shares that shared scratch
 * bytes would spoil each other's products). */
static void s_threads(gx_kernel_fn f, const gx_attrval *av, int n_in, const gx_view *in,
                      const gx_view *y, void *scratch, int nth)
{
    pthread_t tid[8];
    s_job job[8];
    ck_assert_int_le(nth, 8);
    for (int i = 0; i < nth; i++) {
        job[i] = (s_job){.f = f, .k = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = y,
                                       .scratch = scratch, .ith = i, .nth = nth}};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, s_job_run, &job[i]), 0);
    }
    for (int i = 0; i < nth; i++)
        pthread_join(tid[i], NULL);
}

/* The ranges an epilogue was handed, in order. */
typedef struct s_ranges {
    int n;
    int64_t lo[4096], hi[4096];
} s_ranges;

static void s_record(void *ctx, int64_t lo, int64_t hi)
{
    s_ranges *r = ctx;
    ck_assert_int_lt(r->n, 4096);
    r->lo[r->n] = lo, r->hi[r->n++] = hi;
}

/* gx_cpu_conv_layout_epi against the kernel (y1, nth = 1): a lone Relu or
 * Clip of the product is applied as the kernel stores, the very bytes of
 * Relu's and Clip's kernels on y1, for nth 1 and 3; any other group gets
 * epilogue calls on disjoint ranges that tile each share's
 * gx_cpu_conv_layout_rows. */
static void s_check_epilogues(gx_layout l, gx_kernel_fn f, const gx_attrval *av, int n_in,
                              const gx_view *kin, const gx_view *y1)
{
    (void)f;
    const size_t ybytes = (size_t)y1->numel * sizeof(float);
    float bounds[2] = {-0.25f, 0.5f};
    gx_view gin[2] = {{.dtype = GX_F32, .ndim = 0, .numel = 1, .data = &bounds[0]},
                      {.dtype = GX_F32, .ndim = 0, .numel = 1, .data = &bounds[1]}};
    for (int which = 0; which < 2; which++) { /* Relu, Clip */
        gx_fused g = {.n_in = which ? 2 : 0, .n_ops = 1, .dtype = GX_F32, .has_head = true};
        g.op[0] = (gx_fused_op){.op = which ? GX_OP_CLIP : GX_OP_RELU, .n_in = which ? 3 : 1,
                                .in = {which ? 2 : 0, 0, 1}, .out = -1};
        gx_attrval oav[GX_MAX_ATTRS] = {{0}};
        /* the op's own kernel on the product */
        gx_view want = *y1, ops[3] = {*y1, gin[0], gin[1]};
        want.data = ot_alloc(ybytes);
        const gx_kargs ka = {.attr = oav, .n_in = which ? 3 : 1, .in = ops, .n_out = 1,
                             .out = &want, .ith = 0, .nth = 1};
        gx_cpu_kernel(which ? GX_OP_CLIP : GX_OP_RELU)(&ka);
        for (int nth = 1; nth <= 3; nth += 2) {
            gx_view got = *y1;
            got.data = ot_alloc(ybytes);
            memset(got.data, 0xFF, ybytes);
            for (int ith = 0; ith < nth; ith++) {
                gx_kargs k = {.attr = av, .n_in = n_in, .in = kin, .n_out = 1, .out = &got,
                              .ith = ith, .nth = nth};
                s_ranges none = {0};
                gx_cpu_conv_layout_epi(l, &k, &g, gin, s_record, &none);
                ck_assert_int_eq(none.n, 0);
            }
            ck_assert_msg(!memcmp(got.data, want.data, ybytes), "%s: fused %s differs",
                          gx_layout_name(l), which ? "Clip" : "Relu");
        }
    }
    /* no group: the epilogue's ranges */
    static s_ranges r;
    gx_view got = *y1;
    got.data = ot_alloc(ybytes);
    for (int nth = 1; nth <= 3; nth++) {
        for (int ith = 0; ith < nth; ith++) {
            gx_kargs k = {.attr = av, .n_in = n_in, .in = kin, .n_out = 1, .out = &got,
                          .ith = ith, .nth = nth};
            int64_t lo, hi, covered = 0;
            gx_cpu_conv_layout_rows(l, y1, ith, nth, &lo, &hi);
            r.n = 0;
            gx_cpu_conv_layout_epi(l, &k, NULL, NULL, s_record, &r);
            for (int i = 0; i < r.n; i++) {
                ck_assert(r.lo[i] >= lo && r.lo[i] < r.hi[i] && r.hi[i] <= hi);
                for (int j = 0; j < i; j++)
                    ck_assert(r.hi[j] <= r.lo[i] || r.hi[i] <= r.lo[j]);
                covered += r.hi[i] - r.lo[i];
            }
            ck_assert_int_eq(covered, hi - lo);
        }
        ck_assert(!memcmp(got.data, y1->data, ybytes));
    }
}

/* The case in layout l: false when infer refuses its geometry (the caller
 * draws another). */
static bool s_run_case(const s_case *t, gx_layout l)
{
    int64_t strides[2] = {t->sh, t->sw}, dil[2] = {t->dh, t->dw};
    int64_t pads[4] = {t->pads[0], t->pads[1], t->pads[2], t->pads[3]};
    gx_attr at[4] = {{.name = (char *)"strides", .type = GX_ATTR_INTS, .ints = strides, .n = 2},
                     {.name = (char *)"dilations", .type = GX_ATTR_INTS, .ints = dil, .n = 2},
                     {.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = pads, .n = 4}};
    int na = 3;
    if (t->auto_pad)
        at[2] = A_STR("auto_pad", t->auto_pad);
    const int64_t g = t->group ? t->group : 1, cg = t->c / g;
    at[na++] = A_INT("group", g);
    const gx_node node = {.n_attr = na, .attr = at};
    gx_view in[3] = {ot_rand(GX_F32, SHAPE(t->n, t->c, t->h, t->w)),
                     ot_rand(GX_F32, SHAPE(t->m, cg, t->kh, t->kw)),
                     ot_rand(GX_F32, SHAPE(t->m))};
    const int n_in = t->bias ? 3 : 2;
    gx_attrval av[GX_MAX_ATTRS];
    gx_view ref;
    char err[ERRLEN], why[ERRLEN];
    if (ot_run(GX_OP_CONV, &node, n_in, in, 1, av, &ref, err) != GX_OK) {
        if (getenv("S_VERBOSE"))
            fprintf(stderr, "skipped: %s\n", err);
        return false;
    }
    gx_view out = ref;
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = 1, .out = &out};
    gx_kernel_fn f = gx_cpu_conv_layout(l, &ic, why, sizeof why);
    ck_assert_msg(f != NULL, "%s: %s", gx_layout_name(l), why);
    ck_assert_ptr_eq(gx_cpu_layout_kernel(GX_OP_CONV, l, &ic, why, sizeof why), f);

    /* what the layout pass hands the kernel: x in the layout it reads */
    gx_view kin[3];
    const gx_layout lx = gx_cpu_layout_input(GX_OP_CONV, l, &ic, 0);
    ck_assert_int_eq(lx, gx_cpu_conv_layout_input(l, &ic));
    ck_assert(lx == l || ((!t->group || t->group == 1) && ((l == GX_LAYOUT_NCHW16C && t->c % 16) ||
                                        (l == GX_LAYOUT_NHWC && t->c <= 4))));
    kin[0] = gx_layout_physical(lx, &in[0]);
    kin[0].data = ot_alloc((size_t)in[0].numel * sizeof(float));
    gx_layout_reorder(&in[0], &kin[0], 0, 1);
    gx_cpu_conv_pack_shape(l, av, &in[1], &kin[1]);
    ck_assert_int_ge(kin[1].numel, in[1].numel); /* NHWC pads M to whole panels */
    ck_assert_int_eq(kin[1].numel, gx_shape_numel(kin[1].ndim, kin[1].shape, INT64_MAX));
    kin[1].data = ot_alloc((size_t)kin[1].numel * sizeof(float));
    gx_cpu_conv_pack(l, av, &in[1], &kin[1]);
    kin[2] = in[2];
    const size_t sbytes = gx_cpu_conv_layout_scratch(l, &ic);
    unsigned char *scratch = ot_alloc(sbytes + S_GUARD);
    memset(scratch + sbytes, 0xA5, S_GUARD);

    const size_t ybytes = (size_t)ref.numel * sizeof(float);
    gx_view y1 = gx_layout_physical(l, &ref);
    y1.data = ot_alloc(ybytes);
    memset(y1.data, 0xFF, ybytes);
    s_share(f, av, n_in, kin, &y1, sbytes ? scratch : NULL, 0, 1);

    /* against the plain kernel */
    gx_view back = ref;
    back.data = ot_alloc(ybytes);
    gx_layout_reorder(&y1, &back, 0, 1);
    double *scale = ot_alloc((size_t)ref.numel * sizeof *scale);
    s_scale(t, av, &in[0], &in[1], t->bias ? in[2].data : NULL, scale);
    const float *got = back.data, *want = ref.data;
    int64_t e = 0; /* the first element off (ck_assert in a loop this long is slow) */
    while (e < ref.numel && fabs((double)got[e] - want[e]) <= 1e-4 * scale[e] + 1e-30)
        e++;
    if (e < ref.numel)
        ck_abort_msg("%s n%lld c%lld m%lld %lldx%lld k%lldx%lld: element %lld is %g, want %g",
                     gx_layout_name(l), (long long)t->n, (long long)t->c, (long long)t->m,
                     (long long)t->h, (long long)t->w, (long long)t->kh, (long long)t->kw,
                     (long long)e, got[e], want[e]);

    /* shares: each writes its rows range, the bytes nth = 1 wrote */
    gx_view ys = y1;
    ys.data = ot_alloc(ybytes);
    const int64_t numel = ref.numel;
    for (int nth = 2; nth <= 70; nth = nth == 2 ? 3 : nth == 3 ? 7 : nth == 7 ? 70 : 71) {
        int64_t next = 0;
        for (int ith = 0; ith < nth; ith++) {
            int64_t lo, hi;
            gx_cpu_conv_layout_rows(l, &y1, ith, nth, &lo, &hi);
            ck_assert_int_eq(lo, next);
            ck_assert_int_le(lo, hi);
            next = hi;
            memset(ys.data, 0xFF, ybytes);
            s_share(f, av, n_in, kin, &ys, sbytes ? scratch : NULL, ith, nth);
            const unsigned char *a = ys.data, *b = y1.data;
            const size_t blo = (size_t)lo * sizeof(float), bhi = (size_t)hi * sizeof(float);
            ck_assert_msg(!memcmp(a + blo, b + blo, bhi - blo),
                          "%s: share %d of %d differs from nth = 1", gx_layout_name(l), ith, nth);
            size_t i = 0;
            while (i < ybytes && ((i >= blo && i < bhi) || a[i] == 0xFF))
                i++;
            ck_assert_msg(i == ybytes, "%s: share %d of %d wrote byte %zu outside [%zu, %zu)",
                          gx_layout_name(l), ith, nth, i, blo, bhi);
        }
        ck_assert_int_eq(next, numel);
    }
    s_check_epilogues(l, f, av, n_in, kin, &y1);
    /* the shares of nth = 7 at once: the whole output, and the scratch
     * guard untouched */
    memset(ys.data, 0xFF, ybytes);
    s_threads(f, av, n_in, kin, &ys, sbytes ? scratch : NULL, 7);
    ck_assert_msg(!memcmp(ys.data, y1.data, ybytes), "%s: 7 threads differ from nth = 1",
                  gx_layout_name(l));
    size_t gb = 0;
    while (gb < S_GUARD && scratch[sbytes + gb] == 0xA5)
        gb++;
    ck_assert_msg(gb == S_GUARD, "%s: the kernel wrote past its scratch", gx_layout_name(l));
    return true;
}

static const char *const s_auto[] = {"SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"};

/* A random case; odd channel counts only when odd is set. */
static s_case s_random(bool odd)
{
    static const int64_t blocks[] = {16, 32, 48}, odds[] = {1, 3, 5, 7, 13};
    static const int64_t ks[][2] = {{1, 1}, {3, 3}, {5, 5}, {3, 1}, {1, 3}, {3, 3}};
    s_case t = {.n = 1 + s_pick(3)};
    t.c = odd && s_pick(2) ? odds[s_pick(5)] : blocks[s_pick(3)];
    t.m = odd && s_pick(2) ? odds[s_pick(5)] : blocks[s_pick(3)];
    t.h = 1 + s_pick(17);
    t.w = 1 + s_pick(17);
    const int64_t *k = ks[s_pick(6)];
    t.kh = k[0], t.kw = k[1];
    t.sh = 1 + s_pick(2), t.sw = 1 + s_pick(2);
    t.dh = s_pick(4) ? 1 : 2, t.dw = s_pick(4) ? 1 : 2;
    if (s_pick(3) == 0) {
        t.auto_pad = s_auto[s_pick(4)];
        if (!strcmp(t.auto_pad, "NOTSET"))
            t.auto_pad = NULL;
    } else {
        for (int i = 0; i < 4; i++)
            t.pads[i] = s_pick(3);
    }
    t.bias = s_pick(2);
    const int64_t cg = 2 << s_pick(3);
    if (s_pick(4) == 0) { /* depthwise */
        t.m = t.c;
        t.group = t.c;
    } else if (s_pick(4) == 0 && t.c % cg == 0) { /* groups of 2, 4 or 8 channels */
        t.m = t.c;
        t.group = t.c / cg;
    } else if (s_pick(4) == 0 && t.c % 32 == 0 && t.m % 16 == 0) { /* groups of 16 channels */
        t.group = t.c / 16;
        t.m = t.group * 16 * (1 + s_pick(2));
    }
    return t;
}

static void s_random_cases(gx_layout l, bool odd, int count)
{
    for (int done = 0; done < count;) {
        s_case t = s_random(odd);
        if (l == GX_LAYOUT_NCHW16C && t.m % 16) /* odd C only: x read in NCHW */
            t.m = 16 * (1 + s_pick(3));
        if (l == GX_LAYOUT_NCHW16C && t.group && t.c % 16)
            t.group = 0;
        done += s_run_case(&t, l);
        ot_free_all();
    }
}

START_TEST(nhwc_fixed_cases)
{
    /* pointwise (a plane as one row), 3x3 pad 1 with C and M not multiples
     * of 16, 5x5 pad 2, 1x1 with stride 2, depthwise */
    const s_case cases[] = {
        {.n = 2, .c = 16, .m = 32, .h = 8, .w = 8, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .bias = true},
        {.n = 3, .c = 7, .m = 5, .h = 17, .w = 17, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .pads = {1, 1, 1, 1}},
        {.n = 3, .c = 48, .m = 16, .h = 17, .w = 17, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .pads = {2, 2, 2, 2}, .bias = true},
        {.n = 1, .c = 3, .m = 4, .h = 9, .w = 7, .kh = 1, .kw = 1, .sh = 2, .sw = 2, .dh = 1,
         .dw = 1},
        {.n = 2, .c = 5, .m = 5, .h = 9, .w = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 2, .dh = 1,
         .dw = 1, .pads = {1, 1, 1, 0}, .group = 5, .bias = true}, /* depthwise */
        /* more chunks of positions than GX_CONV_LAYOUT_SHARES: shares past it idle
         * at nth = 70 */
        {.n = 1, .c = 3, .m = 4, .h = 130, .w = 130, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert(s_run_case(&cases[i], GX_LAYOUT_NHWC));
}
END_TEST

START_TEST(nchw16c_fixed_cases)
{
    const s_case cases[] = {
        {.n = 2, .c = 32, .m = 16, .h = 16, .w = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
        {.n = 1, .c = 16, .m = 48, .h = 13, .w = 11, .kh = 5, .kw = 5, .sh = 2, .sw = 1, .dh = 1,
         .dw = 2, .pads = {2, 0, 1, 2}},
        {.n = 3, .c = 16, .m = 16, .h = 1, .w = 1, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1,
         .dw = 1, .bias = true},
        {.n = 2, .c = 32, .m = 32, .h = 10, .w = 9, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .dh = 1,
         .dw = 2, .pads = {1, 2, 0, 1}, .group = 32, .bias = true}, /* depthwise */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert(s_run_case(&cases[i], GX_LAYOUT_NCHW16C));
}
END_TEST

/* A network's first conv and the other direct paths: NCHW16c reading x
 * in NCHW (C 1, 3, 5, 20; strides, dilation, a 1x1 over whole planes),
 * NHWC's direct kernel (C a multiple of 16, M not: a masked last block),
 * depthwise with stride 2 in both layouts, odd sizes. */
static const s_case s_direct_cases[] = {
    {.n = 2, .c = 3, .m = 16, .h = 32, .w = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
    {.n = 1, .c = 3, .m = 32, .h = 17, .w = 15, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
    {.n = 1, .c = 1, .m = 16, .h = 9, .w = 23, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .dh = 2,
     .dw = 2, .pads = {2, 3, 1, 0}},
    {.n = 3, .c = 5, .m = 48, .h = 7, .w = 5, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .bias = true},
    {.n = 1, .c = 20, .m = 16, .h = 6, .w = 31, .kh = 3, .kw = 3, .sh = 1, .sw = 2, .dh = 1,
     .dw = 1, .pads = {0, 1, 0, 1}},
    {.n = 2, .c = 32, .m = 24, .h = 11, .w = 13, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
    {.n = 1, .c = 16, .m = 40, .h = 14, .w = 9, .kh = 5, .kw = 5, .sh = 2, .sw = 2, .dh = 2,
     .dw = 1, .pads = {2, 2, 2, 2}},
    {.n = 2, .c = 64, .m = 64, .h = 15, .w = 17, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 64, .bias = true},
    {.n = 1, .c = 48, .m = 48, .h = 28, .w = 28, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 48},
    /* depthwise 3 and 5 wide at stride 1 along W (s_dw3_512, s_dwk256):
     * runs of 8 and the rest, uneven pads, a masked last block of 8 lanes
     * (C 24), batch 2 */
    {.n = 2, .c = 24, .m = 24, .h = 9, .w = 29, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {0, 2, 1, 1}, .group = 24, .bias = true},
    {.n = 1, .c = 32, .m = 32, .h = 6, .w = 37, .kh = 3, .kw = 3, .sh = 2, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 0, 1, 2}, .group = 32, .bias = true},
    {.n = 2, .c = 40, .m = 40, .h = 11, .w = 23, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {2, 1, 2, 3}, .group = 40, .bias = true},
    /* one channel per broadcast, 5 and 7 wide at strides 1 and 2 (s_dkr256):
     * ResNet's 7x7 stride-2 first conv with a last block of 8 lanes (M 24),
     * a 5x5 over NHWC's C 20 with uneven pads, runs of 6 and the rest */
    {.n = 2, .c = 3, .m = 24, .h = 21, .w = 37, .kh = 7, .kw = 7, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {3, 3, 3, 3}, .bias = true},
    {.n = 1, .c = 20, .m = 16, .h = 9, .w = 29, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 2, 3, 1}},
    /* and at stride 2 along W: runs of 8 and the rest, uneven pads, C 24 and 40 */
    {.n = 2, .c = 24, .m = 24, .h = 8, .w = 41, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {0, 1, 1, 2}, .group = 24, .bias = true},
    {.n = 1, .c = 40, .m = 40, .h = 13, .w = 45, .kh = 5, .kw = 5, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {2, 2, 1, 3}, .group = 40},
    {.n = 1, .c = 16, .m = 64, .h = 56, .w = 56, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .bias = true},
    /* groups of 16 or more channels (ResNeXt, grouped 3x3): 2 groups of 16
     * in and 32 out, 4 of 32 in and 16 out with stride 2, 8 of 16 and 16
     * (runs of blocks cut at each group), a 1x1 with 3 groups */
    {.n = 2, .c = 32, .m = 64, .h = 11, .w = 13, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 2, .bias = true},
    {.n = 1, .c = 128, .m = 64, .h = 9, .w = 10, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 4},
    {.n = 1, .c = 128, .m = 128, .h = 14, .w = 14, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 8, .bias = true},
    {.n = 2, .c = 48, .m = 96, .h = 7, .w = 9, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .group = 3},
    /* position runs (rows narrower than 12 columns): ResNet's 7x7 planes
     * with weights too large for 4 blocks at once (runs of 2, then 1),
     * batch 2; strided and dilated with uneven pads; NHWC x with C not a
     * multiple of 16 (one channel per broadcast) */
    {.n = 2, .c = 320, .m = 80, .h = 7, .w = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .bias = true},
    {.n = 1, .c = 32, .m = 48, .h = 13, .w = 11, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 2,
     .dw = 2, .pads = {2, 1, 0, 2}},
    {.n = 3, .c = 24, .m = 16, .h = 5, .w = 9, .kh = 3, .kw = 5, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 2, 1, 2}, .bias = true},
    /* groups of 4 (ResNeXt 32x4d), 2 and 8 channels, stride 2, dilated */
    {.n = 1, .c = 128, .m = 128, .h = 14, .w = 15, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 32, .bias = true},
    {.n = 2, .c = 32, .m = 32, .h = 9, .w = 11, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1,
     .dw = 1, .pads = {1, 1, 1, 1}, .group = 16},
    {.n = 1, .c = 64, .m = 64, .h = 12, .w = 13, .kh = 3, .kw = 5, .sh = 1, .sw = 2, .dh = 2,
     .dw = 1, .pads = {2, 2, 1, 2}, .group = 8, .bias = true},
};

/* The cases on the ISA `force` (NULL: the one in use; false when the CPU
 * lacks it), then random ones too. */
static bool s_direct(const char *force)
{
    char isa[32];
    snprintf(isa, sizeof isa, "%s", gx_cpu_gemm_isa());
    if (force && !gx_cpu_gemm_isa_set(force))
        return false;
    for (size_t i = 0; i < sizeof s_direct_cases / sizeof s_direct_cases[0]; i++) {
        const s_case *t = &s_direct_cases[i];
        if (t->m % 16 == 0 && (!t->group || t->c % 16 == 0))
            ck_assert(s_run_case(t, GX_LAYOUT_NCHW16C));
        ck_assert(s_run_case(t, GX_LAYOUT_NHWC));
        ot_free_all();
    }
    /* depthwise with C not a multiple of 16 (NHWC's masked last block) */
    const s_case dw = {.n = 1, .c = 24, .m = 24, .h = 9, .w = 10, .kh = 3, .kw = 3, .sh = 2,
                       .sw = 2, .dh = 1, .dw = 1, .pads = {1, 1, 1, 1}, .group = 24,
                       .bias = true};
    ck_assert(s_run_case(&dw, GX_LAYOUT_NHWC));
    /* groups of 8 and of 4 with C = 24, 20 (a last block of 8, 4 lanes) */
    const s_case g8 = {.n = 1, .c = 24, .m = 24, .h = 7, .w = 12, .kh = 3, .kw = 3, .sh = 1,
                       .sw = 1, .dh = 1, .dw = 1, .pads = {1, 1, 1, 1}, .group = 3,
                       .bias = true};
    const s_case g4 = {.n = 2, .c = 20, .m = 20, .h = 6, .w = 9, .kh = 3, .kw = 3, .sh = 2,
                       .sw = 1, .dh = 1, .dw = 1, .pads = {0, 1, 1, 1}, .group = 5};
    ck_assert(s_run_case(&g8, GX_LAYOUT_NHWC));
    ck_assert(s_run_case(&g4, GX_LAYOUT_NHWC));
    if (force) {
        s_random_cases(GX_LAYOUT_NHWC, true, 10);
        s_random_cases(GX_LAYOUT_NCHW16C, true, 10);
    }
    ck_assert(gx_cpu_gemm_isa_set(isa));
    return true;
}

START_TEST(direct_cases)
{
    s_direct(NULL);
}
END_TEST

START_TEST(direct_cases_baseline)
{
    ck_assert(s_direct("baseline"));
}
END_TEST

/* The AVX2 kernels (s_dk256, s_dw256), also on AVX-512 machines. */
START_TEST(direct_cases_avx2)
{
    if (!s_direct("avx2"))
        printf("direct_cases_avx2: no AVX2 + FMA here, skipped\n");
}
END_TEST

START_TEST(nchw16c_random_odd_c)
{
    s_random_cases(GX_LAYOUT_NCHW16C, true, 30);
}
END_TEST

START_TEST(nhwc_random)
{
    s_random_cases(GX_LAYOUT_NHWC, true, 40);
}
END_TEST

START_TEST(nchw16c_random)
{
    s_random_cases(GX_LAYOUT_NCHW16C, false, 40);
}
END_TEST

/* gx_cpu_conv_layout's refusals, each with a reason. */
static void s_refused(gx_layout l, const gx_node *node, int64_t c, int64_t m, int64_t cg,
                      bool constant, const char *needle)
{
    gx_view in[2] = {ot_rand(GX_F32, SHAPE(1, c, 8, 8)), ot_rand(GX_F32, SHAPE(m, cg, 3, 3))};
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN], why[ERRLEN] = "";
    ck_assert_int_eq(ot_run(GX_OP_CONV, node, 2, in, 1, av, &out, err), GX_OK);
    if (!constant)
        in[1].data = NULL;
    gx_infer ic = {.attr = av, .n_in = 2, .in = in, .n_out = 1, .out = &out};
    ck_assert_ptr_null(gx_cpu_conv_layout(l, &ic, why, sizeof why));
    ck_assert_msg(strstr(why, needle), "%s: '%s' lacks '%s'", gx_layout_name(l), why, needle);
    ck_assert_ptr_null(gx_cpu_layout_kernel(GX_OP_CONV, l, &ic, why, sizeof why));
}

START_TEST(refusals)
{
    const gx_node *g2 = NODE(A_INT("group", 2));
    s_refused(GX_LAYOUT_NHWC, NODE(A_INT("group", 4)), 12, 12, 3, true, "group 4"); /* 3 each */
    s_refused(GX_LAYOUT_NHWC, g2, 48, 48, 24, true, "group 2"); /* 24: not a multiple of 16 */
    s_refused(GX_LAYOUT_NHWC, NODE(A_INT("group", 4)), 4, 8, 1, true, "group 4"); /* M = 2C */
    s_refused(GX_LAYOUT_NCHW16C, g2, 16, 32, 8, true, "group 2"); /* groups of 8 channels in */
    s_refused(GX_LAYOUT_NHWC, g2, 32, 16, 16, true, "group 2");    /* groups of 8 out */
    s_refused(GX_LAYOUT_NCHW16C, NULL, 3, 8, 3, true, "multiple of 16");
    s_refused(GX_LAYOUT_NCHW16C, NULL, 16, 8, 16, true, "multiple of 16");
    s_refused(GX_LAYOUT_NCHW16C, NODE(A_INT("group", 24)), 24, 24, 1, true, "multiple of 16");
    s_refused(GX_LAYOUT_NHWC, NULL, 16, 16, 16, false, "not a constant");
    s_refused(GX_LAYOUT_NCHW16C, NULL, 16, 16, 16, false, "not a constant");
    /* C = 3 is fine in NHWC, and in NCHW16c (x read in NCHW) */
    const s_case t = {.n = 1, .c = 3, .m = 16, .h = 8, .w = 8, .kh = 3, .kw = 3, .sh = 1,
                      .sw = 1, .dh = 1, .dw = 1, .pads = {1, 1, 1, 1}};
    ck_assert(s_run_case(&t, GX_LAYOUT_NHWC));
    ck_assert(s_run_case(&t, GX_LAYOUT_NCHW16C));
}
END_TEST

Suite *layout_conv_suite(void)
{
    Suite *s = suite_create("layout_conv");
    TCase *tc = tcase_create("layout_conv");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, nhwc_fixed_cases);
    tcase_add_test(tc, nchw16c_fixed_cases);
    tcase_add_test(tc, nhwc_random);
    tcase_add_test(tc, nchw16c_random);
    tcase_add_test(tc, nchw16c_random_odd_c);
    tcase_add_test(tc, direct_cases);
    tcase_add_test(tc, direct_cases_baseline);
    tcase_add_test(tc, direct_cases_avx2);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}
