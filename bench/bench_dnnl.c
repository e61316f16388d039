/*
 * oneDNN (Debian's libdnnl-dev 2.6, OpenMP runtime) against gexec's own
 * float32 kernels, one thread, on the shapes of common CNNs: Conv (ResNet
 * 3x3 and 1x1, a first 7x7 conv, depthwise, grouped with 4 to 16
 * channels per group, 1-D) and MatMul (transformer and square shapes).
 * The question of issue 13: would oneDNN win as a candidate of the tune
 * registry (docs/tune.md "Candidates")?
 *
 * Conv columns (microseconds per call, best of RUNS, the thread's CPU
 * time): gexec's plain kernel (NCHW, im2col/pointwise/depthwise), its
 * NHWC and NCHW16c kernels (x already in that layout, weights packed:
 * what the layout pass runs; "-" where it has none), oneDNN with x and y
 * in NCHW and weights in the format it picks (reordered once, outside the
 * timing: the drop-in candidate for a plain step), and oneDNN with every
 * format its own (blocked; reorders outside the timing: what a layout of
 * its own would run). Then the best oneDNN over the best gexec, and the
 * largest difference of oneDNN's NCHW output from gexec's plain one
 * (|a - b| / (1 + |b|)). MatMul columns: gexec's packed kernel (B packed
 * beforehand, the ISA in use), OpenBLAS cblas_sgemm, dnnl_sgemm, and the
 * oneDNN matmul primitive with B in its own format (reordered once).
 *
 * Built when configure found oneDNN (libdnnl-dev):
 *
 *   make -C build bench/bench_dnnl && build/bench/bench_dnnl
 *
 * Asserts nothing; a busy machine lengthens the figures.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/benchutil.h"
#include "ops/gemm.h"
#include "ops/layout.h"

#define S_PROG "bench_dnnl"

#define RUNS 5
#define MIN_SECONDS 0.02 /* each run repeats the call for at least this long */

#define CK(call)                                                                                   \
    do {                                                                                           \
        dnnl_status_t st_ = (call);                                                                \
        if (st_ != dnnl_success) {                                                                 \
            fprintf(stderr, "bench_dnnl: %s: status %d\n", #call, (int)st_);                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static dnnl_engine_t s_eng;
static dnnl_stream_t s_str;

static float *s_values(int64_t n, int seed)
{
    float *p = gxb_alloc(S_PROG, (size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(((i + seed) * 7919) % 1000) / 1000.0f - 0.5f;
    return p;
}

/* Something to time: a gexec kernel or a oneDNN primitive. */
typedef struct s_call {
    gx_kernel_fn f;
    const gx_kargs *k;
    dnnl_primitive_t prim;
    int nargs;
    const dnnl_exec_arg_t *args;
    void (*fn)(void *arg);
    void *arg;
} s_call;

static void s_once(const s_call *c)
{
    if (c->f)
        c->f(c->k);
    else if (c->prim) {
        CK(dnnl_primitive_execute(c->prim, s_str, c->nargs, c->args));
        CK(dnnl_stream_wait(s_str));
    } else
        c->fn(c->arg);
}

/* Best microseconds per call over RUNS runs. */
static double s_time(const s_call *c)
{
    double best = 1e30;
    s_once(c); /* warm */
    for (int r = 0; r < RUNS; r++) {
        int calls = 0;
        const double t0 = gxb_cpu_s();
        double t;
        do {
            s_once(c);
            calls++;
        } while ((t = gxb_cpu_s() - t0) < MIN_SECONDS);
        if (t / calls < best)
            best = t / calls;
    }
    return best * 1e6;
}

static dnnl_memory_t s_mem(const dnnl_memory_desc_t *md, void *data)
{
    dnnl_memory_t m;
    CK(dnnl_memory_create(&m, md, s_eng, data ? data : DNNL_MEMORY_ALLOCATE));
    return m;
}

/* src (format of from) into a new memory of format to, once. */
static dnnl_memory_t s_reordered(dnnl_memory_t src, const dnnl_memory_desc_t *to)
{
    const dnnl_memory_desc_t *from;
    CK(dnnl_memory_get_memory_desc(src, &from));
    dnnl_memory_t dst = s_mem(to, NULL);
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t r;
    CK(dnnl_reorder_primitive_desc_create(&pd, from, s_eng, to, s_eng, NULL));
    CK(dnnl_primitive_create(&r, pd));
    dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    CK(dnnl_primitive_execute(r, s_str, 2, a));
    CK(dnnl_stream_wait(s_str));
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(pd);
    return dst;
}

/* oneDNN's Conv on x, w, b (plain, NCHW / NCW): with plain x and y
 * (plain_io) or its own formats; microseconds, and its output into y
 * (plain) when plain_io. */
static double s_dnnl_conv(int nsp, const gx_view *x, const gx_view *w, const gx_view *b,
                          const gx_view *y, int64_t g, int64_t st, int64_t pad, bool plain_io,
                          float *yout)
{
    dnnl_dims_t xd, wd, bd, yd, sd, dd, pl, pr;
    const int nd = nsp + 2;
    for (int i = 0; i < nd; i++) {
        xd[i] = x->shape[i];
        yd[i] = y->shape[i];
    }
    int wn = nd;
    if (g > 1) { /* [g, m/g, c/g, k...] */
        wd[0] = g;
        wd[1] = w->shape[0] / g;
        for (int i = 1; i < nd; i++)
            wd[i + 1] = w->shape[i];
        wn = nd + 1;
    } else
        for (int i = 0; i < nd; i++)
            wd[i] = w->shape[i];
    bd[0] = b->shape[0];
    for (int i = 0; i < nsp; i++) {
        sd[i] = st;
        dd[i] = 0;
        pl[i] = pr[i] = pad;
    }
    const dnnl_format_tag_t act = nsp == 1 ? dnnl_ncw : dnnl_nchw;
    const dnnl_format_tag_t wt = nsp == 1 ? (g > 1 ? dnnl_goiw : dnnl_oiw)
                                          : (g > 1 ? dnnl_goihw : dnnl_oihw);
    dnnl_memory_desc_t xm, wm, bm, ym, xa, wa, ya;
    CK(dnnl_memory_desc_init_by_tag(&xm, nd, xd, dnnl_f32, act));
    CK(dnnl_memory_desc_init_by_tag(&wm, wn, wd, dnnl_f32, wt));
    CK(dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_x));
    CK(dnnl_memory_desc_init_by_tag(&ym, nd, yd, dnnl_f32, act));
    CK(dnnl_memory_desc_init_by_tag(&xa, nd, xd, dnnl_f32, plain_io ? act : dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&wa, wn, wd, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&ya, nd, yd, dnnl_f32, plain_io ? act : dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    CK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                  dnnl_convolution_direct, &xa, &wa, &bm, &ya, sd,
                                                  dd, pl, pr));
    dnnl_primitive_desc_t pd;
    CK(dnnl_primitive_desc_create(&pd, &cd, NULL, s_eng, NULL));
    dnnl_primitive_t prim;
    CK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t mx0 = s_mem(&xm, x->data), mw0 = s_mem(&wm, w->data), mb = s_mem(&bm, b->data);
    dnnl_memory_t mx = s_reordered(mx0, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
    dnnl_memory_t mw = s_reordered(mw0, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    dnnl_memory_t my = s_mem(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), NULL);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb},
                              {DNNL_ARG_DST, my}};
    const s_call c = {.prim = prim, .nargs = 4, .args = args};
    const double us = s_time(&c);
    if (yout) {
        dnnl_memory_t yp = s_reordered(my, &ym);
        void *h;
        CK(dnnl_memory_get_data_handle(yp, &h));
        memcpy(yout, h, (size_t)y->numel * sizeof(float));
        dnnl_memory_destroy(yp);
    }
    dnnl_memory_destroy(mx0);
    dnnl_memory_destroy(mw0);
    dnnl_memory_destroy(mb);
    dnnl_memory_destroy(mx);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(my);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    return us;
}

/* gexec's Conv in layout l (x reordered and W packed beforehand), or NAN
 * when it has no kernel in l; its plain output into yout (plain only). */
static double s_gexec_conv(gx_layout l, const gx_attrval *attr, gx_infer *ic, const gx_view *in,
                           const gx_view *out, float *yout)
{
    gx_kernel_fn f;
    gx_view kin[3] = {in[0], in[1], in[2]}, y = *out;
    void *scratch;
    const gx_op_schema *s = gx_op_schema_get(GX_OP_CONV);
    if (l == GX_LAYOUT_PLAIN) {
        f = gx_cpu_kernel(GX_OP_CONV);
        scratch = gxb_alloc(S_PROG, s->scratch(ic));
    } else {
        char why[256];
        if (!(f = gx_cpu_conv_layout(l, ic, why, sizeof why)))
            return NAN;
        kin[0] = gx_layout_physical(gx_cpu_layout_input(GX_OP_CONV, l, ic, 0), &in[0]);
        kin[0].data = gxb_alloc(S_PROG, (size_t)in[0].numel * sizeof(float));
        gx_layout_reorder(&in[0], &kin[0], 0, 1);
        gx_cpu_conv_pack_shape(l, attr, &in[1], &kin[1]);
        kin[1].data = gxb_alloc(S_PROG, (size_t)kin[1].numel * sizeof(float));
        gx_cpu_conv_pack(l, attr, &in[1], &kin[1]);
        y = gx_layout_physical(l, out);
        scratch = gxb_alloc(S_PROG, gx_cpu_conv_layout_scratch(l, ic));
    }
    const gx_kargs k = {.attr = attr, .n_in = 3, .in = kin, .n_out = 1, .out = &y,
                        .scratch = scratch, .ith = 0, .nth = 1};
    const s_call c = {.f = f, .k = &k};
    const double us = s_time(&c);
    if (yout)
        memcpy(yout, out->data, (size_t)out->numel * sizeof(float));
    free(scratch);
    if (l != GX_LAYOUT_PLAIN) {
        free(kin[0].data);
        free(kin[1].data);
    }
    return us;
}

/* One Conv [n, c, hw (, hw)] * [m, c / g, k (, k)] with bias, pad `pad`,
 * stride st, nsp spatial dims (1 or 2). */
static void s_conv(const char *what, int nsp, int64_t n, int64_t c, int64_t m, int64_t hw,
                   int64_t kk, int64_t st, int64_t pad, int64_t g)
{
    int64_t pads[4] = {pad, pad, pad, pad}, strides[2] = {st, st};
    gx_attr at[] = {{.name = (char *)"pads", .type = GX_ATTR_INTS, .ints = pads, .n = 2 * nsp},
                    {.name = (char *)"group", .type = GX_ATTR_INT, .i = g},
                    {.name = (char *)"strides", .type = GX_ATTR_INTS, .ints = strides, .n = nsp}};
    const gx_node node = {.n_attr = 3, .attr = at};
    gx_view in[3] = {{.dtype = GX_F32, .ndim = 2 + nsp, .shape = {n, c, hw, hw}},
                     {.dtype = GX_F32, .ndim = 2 + nsp, .shape = {m, c / g, kk, kk}},
                     {.dtype = GX_F32, .ndim = 1, .shape = {m}}};
    for (int i = 0; i < 3; i++) {
        in[i].numel = gx_shape_numel(in[i].ndim, in[i].shape, INT64_MAX);
        in[i].data = s_values(in[i].numel, i);
    }
    gx_view out = {0};
    gx_attrval attr[GX_MAX_ATTRS];
    char err[256];
    gx_infer ic = {.attr = attr, .n_in = 3, .in = in, .n_out = 1, .out = &out, .err = err,
                   .errlen = sizeof err};
    const gx_op_schema *s = gx_op_schema_get(GX_OP_CONV);
    if (gx_op_resolve_attrs(GX_OP_CONV, &node, attr, err, sizeof err) < 0 || s->infer(&ic) < 0) {
        fprintf(stderr, "bench_dnnl: %s\n", err);
        exit(1);
    }
    out.data = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
    float *ref = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
    float *got = gxb_alloc(S_PROG, (size_t)out.numel * sizeof(float));
    double us[GX_LAYOUT_COUNT];
    for (int l = 0; l < GX_LAYOUT_COUNT; l++)
        us[l] = s_gexec_conv((gx_layout)l, attr, &ic, in, &out, l == GX_LAYOUT_PLAIN ? ref : NULL);
    const double dp = s_dnnl_conv(nsp, &in[0], &in[1], &in[2], &out, g, st, pad, true, got);
    const double da = s_dnnl_conv(nsp, &in[0], &in[1], &in[2], &out, g, st, pad, false, NULL);
    double worst = 0.0, bg = us[0];
    for (int64_t i = 0; i < out.numel; i++) {
        const double d = fabs((double)got[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
        worst = d > worst ? d : worst;
    }
    for (int l = 1; l < GX_LAYOUT_COUNT; l++)
        bg = !isnan(us[l]) && us[l] < bg ? us[l] : bg;
    char shape[64];
    snprintf(shape, sizeof shape, "%lld %lld>%lld %lld%s k%lld s%lld g%lld", (long long)n,
             (long long)c, (long long)m, (long long)hw, nsp == 2 ? "^2" : "", (long long)kk,
             (long long)st, (long long)g);
    printf("%-14s %-30s %9.1f %9.1f %9.1f %9.1f %9.1f  %5.2f  %.0e\n", what, shape,
           us[GX_LAYOUT_PLAIN], us[GX_LAYOUT_NHWC], us[GX_LAYOUT_NCHW16C], dp, da,
           (dp < da ? dp : da) / bg, worst);
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        free(in[i].data);
    free(out.data);
    free(ref);
    free(got);
}

/* ---- MatMul ---- */

typedef struct s_mm {
    int64_t m, k, n;
    const float *a, *b;
    float *y;
} s_mm;

static void s_blas(void *arg)
{
    const s_mm *p = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->m, (int)p->n, (int)p->k, 1.0f,
                p->a, (int)p->k, p->b, (int)p->n, 0.0f, p->y, (int)p->n);
}

static void s_dsgemm(void *arg)
{
    const s_mm *p = arg;
    CK(dnnl_sgemm('N', 'N', p->m, p->n, p->k, 1.0f, p->a, p->k, p->b, p->n, 0.0f, p->y, p->n));
}

static void s_matmul(const char *what, int64_t m, int64_t k, int64_t n)
{
    gx_view a = {.dtype = GX_F32, .ndim = 2, .shape = {m, k}, .numel = m * k};
    gx_view b = {.dtype = GX_F32, .ndim = 2, .shape = {k, n}, .numel = k * n};
    gx_view y = {.dtype = GX_F32, .ndim = 2, .shape = {m, n}, .numel = m * n};
    a.data = s_values(a.numel, 1);
    b.data = s_values(b.numel, 2);
    y.data = gxb_alloc(S_PROG, (size_t)y.numel * sizeof(float));
    gx_attrval attr[GX_MAX_ATTRS] = {0};
    gx_view bp = b;
    bp.data = gxb_alloc(S_PROG, gx_cpu_gemm_packed_floats(GX_OP_MATMUL, attr, &b) * sizeof(float));
    gx_cpu_gemm_pack(GX_OP_MATMUL, attr, &b, bp.data);
    gx_view kin[2] = {a, bp};
    const gx_kargs kg = {.attr = attr, .n_in = 2, .in = kin, .n_out = 1, .out = &y, .nth = 1};
    const s_call cg = {.f = gx_cpu_gemm_packed_kernel_isa(GX_OP_MATMUL, gx_cpu_gemm_isa()),
                       .k = &kg};
    const double tg = s_time(&cg);
    float *ref = gxb_alloc(S_PROG, (size_t)y.numel * sizeof(float));
    memcpy(ref, y.data, (size_t)y.numel * sizeof(float));
    s_mm p = {m, k, n, a.data, b.data, y.data};
    const double tb = s_time(&(s_call){.fn = s_blas, .arg = &p});
    const double ts = s_time(&(s_call){.fn = s_dsgemm, .arg = &p});
    /* the matmul primitive, B in its own format */
    dnnl_dims_t ad = {m, k}, bd = {k, n}, yd = {m, n};
    dnnl_memory_desc_t am, bm, ba, ym;
    CK(dnnl_memory_desc_init_by_tag(&am, 2, ad, dnnl_f32, dnnl_ab));
    CK(dnnl_memory_desc_init_by_tag(&bm, 2, bd, dnnl_f32, dnnl_ab));
    CK(dnnl_memory_desc_init_by_tag(&ba, 2, bd, dnnl_f32, dnnl_format_tag_any));
    CK(dnnl_memory_desc_init_by_tag(&ym, 2, yd, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t md;
    CK(dnnl_matmul_desc_init(&md, &am, &ba, NULL, &ym));
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    CK(dnnl_primitive_desc_create(&pd, &md, NULL, s_eng, NULL));
    CK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t ma = s_mem(&am, a.data), mb0 = s_mem(&bm, b.data), my = s_mem(&ym, y.data);
    dnnl_memory_t mb = s_reordered(mb0, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, my}};
    const double tp = s_time(&(s_call){.prim = prim, .nargs = 3, .args = args});
    double worst = 0.0;
    for (int64_t i = 0; i < y.numel; i++) {
        const double d = fabs((double)((float *)y.data)[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
        worst = d > worst ? d : worst;
    }
    const double bd1 = ts < tp ? ts : tp, bg = tg < tb ? tg : tb;
    printf("%-14s %-30s %9.1f %9.1f %9.1f %9.1f  %5.2f  %.0e\n", what, "", tg, tb, ts, tp,
           bd1 / bg, worst);
    dnnl_memory_destroy(ma);
    dnnl_memory_destroy(mb0);
    dnnl_memory_destroy(mb);
    dnnl_memory_destroy(my);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    free(a.data);
    free(b.data);
    free(bp.data);
    free(y.data);
    free(ref);
}

int main(void)
{
    openblas_set_num_threads(1); /* as gexecd's workers run it */
    omp_set_num_threads(1);
    CK(dnnl_engine_create(&s_eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&s_str, s_eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("# oneDNN %d.%d.%d (%s), gexec gemm ISA %s, OpenBLAS %s; one thread, best of %d; "
           "microseconds\n",
           v->major, v->minor, v->patch, v->hash, gx_cpu_gemm_isa(), openblas_get_corename(),
           RUNS);
    printf("%-14s %-30s %9s %9s %9s %9s %9s  %5s  %s\n", "# Conv", "N C>M HW k s g", "gx.plain",
           "gx.nhwc", "gx.16c", "dnnl.nchw", "dnnl.any", "dn/gx", "maxdiff");
    s_conv("resnet 7x7", 2, 1, 3, 64, 224, 7, 2, 3, 1);
    s_conv("resnet 3x3", 2, 1, 64, 64, 56, 3, 1, 1, 1);
    s_conv("resnet 3x3", 2, 1, 128, 128, 28, 3, 1, 1, 1);
    s_conv("resnet 3x3", 2, 1, 256, 256, 14, 3, 1, 1, 1);
    s_conv("resnet 3x3", 2, 1, 512, 512, 7, 3, 1, 1, 1);
    s_conv("resnet 3x3 s2", 2, 1, 128, 128, 56, 3, 2, 1, 1);
    s_conv("resnet 3x3 b8", 2, 8, 64, 64, 56, 3, 1, 1, 1);
    s_conv("resnet 1x1", 2, 1, 64, 256, 56, 1, 1, 0, 1);
    s_conv("resnet 1x1", 2, 1, 256, 64, 56, 1, 1, 0, 1);
    s_conv("resnet 1x1", 2, 1, 512, 128, 28, 1, 1, 0, 1);
    s_conv("resnet 1x1", 2, 1, 1024, 256, 14, 1, 1, 0, 1);
    s_conv("resnet 1x1", 2, 1, 2048, 512, 7, 1, 1, 0, 1);
    s_conv("resnet 1x1 b8", 2, 8, 256, 64, 56, 1, 1, 0, 1);
    s_conv("depthwise", 2, 1, 32, 32, 112, 3, 1, 1, 32);
    s_conv("depthwise s2", 2, 1, 96, 96, 112, 3, 2, 1, 96);
    s_conv("depthwise", 2, 1, 144, 144, 56, 3, 1, 1, 144);
    s_conv("depthwise", 2, 1, 384, 384, 14, 3, 1, 1, 384);
    s_conv("depthwise 5x5", 2, 1, 240, 240, 14, 5, 1, 2, 240);
    s_conv("depthwise", 2, 1, 960, 960, 7, 3, 1, 1, 960);
    s_conv("grouped 4/g", 2, 1, 128, 128, 56, 3, 1, 1, 32);
    s_conv("grouped 8/g", 2, 1, 256, 256, 28, 3, 1, 1, 32);
    s_conv("grouped 16/g", 2, 1, 512, 512, 14, 3, 1, 1, 32);
    s_conv("grouped 8/g", 2, 1, 64, 64, 56, 3, 1, 1, 8);
    s_conv("grouped 16/g", 2, 1, 1024, 1024, 7, 3, 1, 1, 64);
    s_conv("1-D k3", 1, 1, 64, 64, 1000, 3, 1, 1, 1);
    s_conv("1-D k5", 1, 1, 256, 256, 400, 5, 1, 2, 1);
    s_conv("1-D k3", 1, 1, 80, 384, 3000, 3, 1, 1, 1);
    s_conv("1-D k3 s2", 1, 1, 384, 384, 3000, 3, 2, 1, 1);
    s_conv("1-D dw k31", 1, 1, 512, 512, 200, 31, 1, 15, 512);
    s_conv("1-D k1", 1, 1, 512, 1024, 200, 1, 1, 0, 1);
    printf("%-14s %-30s %9s %9s %9s %9s  %5s  %s\n", "# MatMul", "", "gx.packed", "openblas",
           "dnnl_sgemm", "dnnl.mm", "dn/gx", "maxdiff");
    static const int64_t mm[][3] = {{1, 768, 768},    {1, 768, 3072},   {1, 3072, 768},
                                    {32, 768, 768},   {32, 768, 3072},  {128, 768, 768},
                                    {128, 768, 3072}, {128, 3072, 768}, {64, 64, 64},
                                    {256, 256, 256},  {512, 512, 512},  {1024, 1024, 1024},
                                    {8, 4096, 4096},  {2048, 64, 64},   {16, 512, 16}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        char w[48];
        snprintf(w, sizeof w, "%lldx%lldx%lld", (long long)mm[i][0], (long long)mm[i][1],
                 (long long)mm[i][2]);
        s_matmul(w, mm[i][0], mm[i][1], mm[i][2]);
    }
    dnnl_stream_destroy(s_str);
    dnnl_engine_destroy(s_eng);
    return 0;
}
