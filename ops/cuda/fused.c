/*
 * The CUDA backend's fused slot (ops/backend.h, ops/fused.h): a fused
 * elementwise group runs as ONE generated kernel, over float32 or float16
 * tensors (kernels.c's prelude: loads and stores of the storage type, the
 * ops in float). Its CUDA C is built from
 * the group's ops with the expressions of the backend's own unary and
 * binary kernels (kernels.c), so that it computes what they compute one
 * by one; each thread reads its element of every input (the same index,
 * element 0 of a scalar, or an offset from broadcast strides), runs the
 * ops in registers and writes the output once. The source is compiled
 * with NVRTC when the plan is made (gx_cuda_fused_ready: the backend's
 * ready slot) and cached by its hash (gx_cuda_jit), so groups of the same
 * program share one kernel. Groups with a head (MatMul, Gemm,
 * Conv) are not formed on this device (its table's no_fused_heads).
 */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/cuda/internal.h"
#include "ops/fused.h"
#include "ops/schema.h"

#define S_SRC_MAX 16384

/* The kernel's parameter: the inputs, the output, the output's dims and
 * each input's strides over them (0 where it broadcasts). */
typedef struct s_params {
    const void *in[GX_FUSED_MAX_IN];
    void *y;
    long long n, nd;
    long long dim[GX_MAX_DIMS];
    long long st[GX_FUSED_MAX_IN][GX_MAX_DIMS];
} s_params;

typedef struct s_src {
    char buf[S_SRC_MAX];
    size_t len;
    bool full;
} s_src;

__attribute__((format(printf, 2, 3))) static void s_put(s_src *s, const char *fmt, ...)
{
    if (s->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->buf + s->len, sizeof s->buf - s->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof s->buf - s->len)
        s->full = true;
    else
        s->len += (size_t)n;
}

/* An operand: input i's value, temporary t, the product of a head. */
static void s_operand(s_src *s, const gx_fused *f, int code)
{
    if (code >= 0 && code < f->n_in)
        s_put(s, "i%d", code);
    else if (code < 0 && code != GX_FUSED_NONE)
        s_put(s, "t%d", -1 - code);
    else
        s_put(s, "0.f");
}

/* A float32 literal (infinities too). */
static void s_literal(s_src *s, double v)
{
    if (isinf(v))
        s_put(s, "__int_as_float(%s)", v > 0 ? "0x7f800000" : "0xff800000");
    else
        s_put(s, "((float)%.17g)", v);
}

/* The group's kernel source; false (with why) for an op without an
 * expression here. kinds[i]: 0 input i has the output's shape, 1 it is
 * a scalar, 2 it broadcasts. */
static bool s_source(const gx_fused *f, const int *kinds, const char *name, s_src *s, char *why,
                     size_t len)
{
    s_put(s, "%s", gx_cuda_prelude(f->dtype));
    s_put(s,
          "struct P { const T *in[%d]; T *y; long long n, nd; long long dim[%d];\n"
          "    long long st[%d][%d]; };\n"
          "extern \"C\" __global__ void %s(const P p)\n{\n"
          "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;\n"
          "         i += (long long)gridDim.x * blockDim.x) {\n",
          GX_FUSED_MAX_IN, GX_MAX_DIMS, GX_FUSED_MAX_IN, GX_MAX_DIMS, name);
    for (int i = 0; i < f->n_in; i++) {
        if (kinds[i] == 0) {
            s_put(s, "        const float i%d = LD(p.in[%d][i]);\n", i, i);
        } else if (kinds[i] == 1) {
            s_put(s, "        const float i%d = LD(p.in[%d][0]);\n", i, i);
        } else {
            s_put(s,
                  "        long long o%d = 0;\n"
                  "        for (long long r = i, d = p.nd - 1; d >= 0; d--) {\n"
                  "            o%d += (r %% p.dim[d]) * p.st[%d][d];\n"
                  "            r /= p.dim[d];\n"
                  "        }\n"
                  "        const float i%d = LD(p.in[%d][o%d]);\n",
                  i, i, i, i, i, i);
        }
    }
    for (int t = 0; t < f->n_tmp; t++)
        s_put(s, "        float t%d;\n", t);
    s_put(s, "        float r;\n");
    for (int j = 0; j < f->n_ops; j++) {
        const gx_fused_op *op = &f->op[j];
        const char *sym = gx_cuda_binary_sym(op->op);
        const char *expr = gx_cuda_unary_expr(op->op, op->attr);
        char dst[16];
        if (op->out < 0)
            snprintf(dst, sizeof dst, "r");
        else
            snprintf(dst, sizeof dst, "t%d", op->out);
        if (sym && op->n_in == 2) {
            s_put(s, "        { const float u = ");
            s_operand(s, f, op->in[0]);
            s_put(s, ", v = ");
            s_operand(s, f, op->in[1]);
            s_put(s, "; %s = u %s v; }\n", dst, sym);
        } else if (expr && op->n_in >= 1) {
            s_put(s, "        { const float v = ");
            s_operand(s, f, op->in[0]);
            s_put(s, ", a = ");
            s_literal(s, op->op == GX_OP_LEAKYRELU ? op->attr[GX_LEAKYRELU_ALPHA].f : 0);
            s_put(s, ", lov = ");
            if (op->op == GX_OP_CLIP && op->n_in > 1 && op->in[1] != GX_FUSED_NONE)
                s_operand(s, f, op->in[1]);
            else
                s_literal(s, op->op == GX_OP_CLIP && op->attr[GX_CLIP_MIN].set
                                 ? op->attr[GX_CLIP_MIN].f
                                 : -INFINITY);
            s_put(s, ", hiv = ");
            if (op->op == GX_OP_CLIP && op->n_in > 2 && op->in[2] != GX_FUSED_NONE)
                s_operand(s, f, op->in[2]);
            else
                s_literal(s, op->op == GX_OP_CLIP && op->attr[GX_CLIP_MAX].set
                                 ? op->attr[GX_CLIP_MAX].f
                                 : INFINITY);
            s_put(s, "; (void)a; (void)lov; (void)hiv; %s = %s; }\n", dst, expr);
        } else {
            snprintf(why, len, "no CUDA expression for %s in a fused group",
                     gx_op_name(op->op));
            return false;
        }
    }
    s_put(s, "        p.y[i] = ST(r);\n    }\n}\n");
    if (s->full)
        snprintf(why, len, "the fused kernel's source is over %d bytes", S_SRC_MAX);
    return !s->full;
}

/* FNV-1a of the source, for the kernel's name. */
static uint64_t s_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* The group's kernel over k's views (compiled once: by ready) and its
 * parameter p (k's data pointers, NULL before a run); NULL with the
 * reason on q. */
static const void *s_fused_fn(gx_cuda_queue *q, const gx_fused *f, const gx_kargs *k,
                              s_params *p)
{
    const gx_view *y = &k->out[0];
    static _Thread_local s_src src; /* 16 KiB: off the stack */
    memset(p, 0, sizeof *p);
    int kinds[GX_FUSED_MAX_IN];
    char why[160];
    if (f->has_head || (f->dtype != GX_F32 && f->dtype != GX_F16) || f->n_in > GX_FUSED_MAX_IN ||
        y->ndim > GX_MAX_DIMS) {
        gx_cuda_fail(q, "a fused group with a head or of another dtype than float32 or float16");
        return NULL;
    }
    p->y = y->data;
    p->n = (long long)y->numel;
    p->nd = y->ndim;
    for (int d = 0; d < y->ndim; d++)
        p->dim[d] = y->shape[d];
    for (int i = 0; i < f->n_in; i++) {
        const gx_view *x = &k->in[i];
        p->in[i] = x->data;
        kinds[i] = x->numel == y->numel ? 0 : x->numel == 1 ? 1 : 2;
        if (kinds[i] == 2) { /* numpy strides right-aligned, 0 on broadcast dims */
            long long st = 1;
            for (int d = y->ndim - 1; d >= 0; d--) {
                const int xd = d - (y->ndim - x->ndim);
                const int64_t n = xd >= 0 ? x->shape[xd] : 1;
                p->st[i][d] = n == 1 && y->shape[d] != 1 ? 0 : st;
                st *= n;
            }
        }
    }
    /* the name first with a placeholder hash, then the hash of the rest */
    src.len = 0;
    src.full = false;
    if (!s_source(f, kinds, "gx_fused_XXXXXXXXXXXXXXXX", &src, why, sizeof why)) {
        gx_cuda_fail(q, "%s", why);
        return NULL;
    }
    char name[40];
    snprintf(name, sizeof name, "gx_fused_%016llx",
             (unsigned long long)s_hash(src.buf, src.len));
    char *at = strstr(src.buf, "gx_fused_XXXXXXXXXXXXXXXX");
    memcpy(at, name, strlen(name));
    return gx_cuda_jit(q, src.buf, name);
}

void gx_cuda_fused_ready(gx_cuda_queue *q, const gx_fused *f, const gx_kargs *k)
{
    s_params p;
    s_fused_fn(q, f, k, &p);
}

void gx_cuda_fused(const gx_backend *b, const gx_fused *f, const gx_kargs *k)
{
    (void)b;
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    s_params p;
    const void *fn = s_fused_fn(q, f, k, &p);
    void *args[] = {&p};
    if (fn && p.n > 0)
        gx_cuda_launch(q, fn, gx_cuda_grid(p.n), 256, args);
    gx_cuda_done(k, q);
}
