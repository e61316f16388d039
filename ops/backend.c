/* Backends and their op rules. See backend.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/backend.h"

const gx_attrval *gx_rule_attr(const gx_rule_ctx *rc, const char *name)
{
    const gx_op_schema *sc = gx_op_schema_get(rc->op);
    for (int i = 0; i < sc->n_attrs; i++)
        if (strcmp(sc->attrs[i].name, name) == 0)
            return &rc->attr[i];
    return NULL;
}

/* ---- CUDA: what cuBLAS and cuDNN support (declared; no kernels yet) ------ */

/* Writes the reason and returns false. */
__attribute__((format(printf, 3, 4))) static bool s_why(char *why, size_t len, const char *fmt,
                                                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return false;
}

/* cuBLAS batched GEMM: operands of rank 2 or more. */
static bool s_cuda_matmul(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->in[0].ndim < 2 || rc->in[1].ndim < 2)
        return s_why(why, len, "operands of rank %d and %d: cuBLAS needs rank 2 or more",
                     rc->in[0].ndim, rc->in[1].ndim);
    return true;
}

/* cuDNN convolution: 2-D, and group 1 or depthwise (group == channels). */
static bool s_cuda_conv(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->in[0].ndim != 4)
        return s_why(why, len, "input of rank %d: only 2-D convolutions (rank 4)",
                     rc->in[0].ndim);
    const gx_attrval *g = gx_rule_attr(rc, "group");
    int64_t group = g ? g->i : 1;
    if (group != 1 && group != rc->in[0].shape[1])
        return s_why(why, len, "group %lld is neither 1 nor depthwise (%lld channels)",
                     (long long)group, (long long)rc->in[0].shape[1]);
    return true;
}

/* cuDNN pooling: 2-D windows, one output (no MaxPool indices). */
static bool s_cuda_pool2d(const gx_rule_ctx *rc, char *why, size_t len)
{
    if (rc->in[0].ndim != 4)
        return s_why(why, len, "input of rank %d: only 2-D pooling (rank 4)", rc->in[0].ndim);
    if (rc->n_out > 1)
        return s_why(why, len, "the indices output is not supported");
    return true;
}

/* cuDNN softmax: over the last axis only. */
static bool s_cuda_softmax(const gx_rule_ctx *rc, char *why, size_t len)
{
    const gx_attrval *a = gx_rule_attr(rc, "axis");
    int64_t axis = a ? a->i : -1, nd = rc->in[0].ndim;
    if (axis != -1 && axis != nd - 1)
        return s_why(why, len, "axis %lld is not the last axis (%lld)", (long long)axis,
                     (long long)(nd - 1));
    return true;
}

/* cuDNN batch normalisation: inference only. */
static bool s_cuda_batchnorm(const gx_rule_ctx *rc, char *why, size_t len)
{
    const gx_attrval *a = gx_rule_attr(rc, "training_mode");
    if (a && a->i != 0)
        return s_why(why, len, "training_mode %lld: inference only", (long long)a->i);
    return true;
}

#define S_EW(op) {GX_OP_##op, GX_DT_FLOAT, 0, NULL, "cuDNN"}

static const gx_op_rule s_cuda_rules[] = {
    {GX_OP_MATMUL, GX_DT_FLOAT, 0, s_cuda_matmul, "cuBLAS"},
    {GX_OP_GEMM, GX_DT_FLOAT, 0, NULL, "cuBLAS"},
    {GX_OP_CONV, GX_DT_FLOAT, 0, s_cuda_conv, "cuDNN"},
    {GX_OP_MAXPOOL, GX_DT_FLOAT, 0, s_cuda_pool2d, "cuDNN"},
    {GX_OP_AVERAGEPOOL, GX_DT_FLOAT, 0, s_cuda_pool2d, "cuDNN"},
    {GX_OP_GLOBALMAXPOOL, GX_DT_FLOAT, 0, s_cuda_pool2d, "cuDNN"},
    {GX_OP_GLOBALAVERAGEPOOL, GX_DT_FLOAT, 0, s_cuda_pool2d, "cuDNN"},
    {GX_OP_SOFTMAX, GX_DT_FLOAT, 0, s_cuda_softmax, "cuDNN"},
    {GX_OP_LOGSOFTMAX, GX_DT_FLOAT, 0, s_cuda_softmax, "cuDNN"},
    {GX_OP_BATCHNORM, GX_DT_FLOAT, 0, s_cuda_batchnorm, "cuDNN"},
    S_EW(RELU), S_EW(SIGMOID), S_EW(TANH), S_EW(ADD), S_EW(SUB), S_EW(MUL), S_EW(DIV),
    S_EW(EXP), S_EW(LOG), S_EW(SQRT), S_EW(NEG), S_EW(ABS), S_EW(CLIP), S_EW(LEAKYRELU),
    S_EW(ELU), S_EW(ERF), S_EW(GELU), S_EW(IDENTITY),
    /* views of the same bytes: the shape input may be int64 */
    {GX_OP_RESHAPE, GX_DT_FLOAT, 1u << 1, NULL, "cuDNN"},
    {GX_OP_FLATTEN, GX_DT_FLOAT, 0, NULL, "cuDNN"},
    {GX_OP_SQUEEZE, GX_DT_FLOAT, 1u << 1, NULL, "cuDNN"},
    {GX_OP_UNSQUEEZE, GX_DT_FLOAT, 1u << 1, NULL, "cuDNN"},
    {GX_OP_TRANSPOSE, GX_DT_FLOAT, 0, NULL, "cuDNN"},
    {GX_OP_CONCAT, GX_DT_FLOAT, 0, NULL, "cuDNN"},
    {GX_OP_REDUCE_MEAN, GX_DT_FLOAT, 1u << 1, NULL, "cuDNN"},
    {GX_OP_REDUCE_SUM, GX_DT_FLOAT, 1u << 1, NULL, "cuDNN"},
};

static const gx_backend s_cuda = {.name = "cuda",
                                  .rules = s_cuda_rules,
                                  .n_rules = sizeof s_cuda_rules / sizeof s_cuda_rules[0],
                                  .kernel = NULL};

const gx_backend *gx_backend_cuda(void)
{
    return &s_cuda;
}

static const gx_backend *s_registered[GX_BACKEND_MAX];
static size_t s_n_registered;

int gx_backend_register(const gx_backend *b)
{
    if (gx_backend_find(b->name))
        return GX_EINVAL;
    if (s_n_registered == GX_BACKEND_MAX)
        return GX_ELIMIT;
    s_registered[s_n_registered++] = b;
    return GX_OK;
}

const gx_backend *gx_backend_find(const char *name)
{
    const gx_backend *builtin[] = {gx_backend_cpu(), &s_cuda};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(builtin[i]->name, name) == 0)
            return builtin[i];
    for (size_t i = 0; i < s_n_registered; i++)
        if (strcmp(s_registered[i]->name, name) == 0)
            return s_registered[i];
    return NULL;
}

const char *gx_backend_names(void)
{
    static char names[GX_BACKEND_MAX * 24 + 16];
    size_t o = (size_t)snprintf(names, sizeof names, "cpu, cuda");
    for (size_t i = 0; i < s_n_registered && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, ", %s", s_registered[i]->name);
    return names;
}

/* ---- rules --------------------------------------------------------------- */

static const gx_op_rule *s_rule(const gx_backend *b, gx_op op)
{
    for (size_t i = 0; i < b->n_rules; i++)
        if (b->rules[i].op == op)
            return &b->rules[i];
    return NULL;
}

bool gx_backend_lists(const gx_backend *b, gx_op op)
{
    return !b->rules || s_rule(b, op);
}

static bool s_dtype_ok(uint32_t mask, const gx_view *v)
{
    return v->ndim < 0 || (v->dtype < 32 && (mask >> v->dtype) & 1u);
}

bool gx_backend_accepts(const gx_backend *b, const gx_rule_ctx *rc, char *why, size_t whylen)
{
    if (!b->rules) /* infer accepted it: that is the whole rule */
        return true;
    const gx_op_rule *r = s_rule(b, rc->op);
    if (!r) {
        snprintf(why, whylen, "%s has no %s", b->name, gx_op_name(rc->op));
        return false;
    }
    for (int i = 0; i < rc->n_in; i++)
        if (!((r->free_inputs >> i) & 1u) && !s_dtype_ok(r->dtypes, &rc->in[i])) {
            snprintf(why, whylen, "%s: %s %s input %d is not supported", r->lib,
                     gx_op_name(rc->op), gx_dtype_name(rc->in[i].dtype), i);
            return false;
        }
    for (int i = 0; i < rc->n_out; i++)
        if (!s_dtype_ok(r->dtypes, &rc->out[i])) {
            snprintf(why, whylen, "%s: %s %s output %d is not supported", r->lib,
                     gx_op_name(rc->op), gx_dtype_name(rc->out[i].dtype), i);
            return false;
        }
    if (r->check) {
        char msg[160] = "";
        if (!r->check(rc, msg, sizeof msg)) {
            snprintf(why, whylen, "%s: %s %s", r->lib, gx_op_name(rc->op), msg);
            return false;
        }
    }
    return true;
}

bool gx_backend_runnable(const gx_backend *b, char *why, size_t whylen)
{
    if (b->kernel && b->alloc && b->free && (b->host_memory || b->copy))
        return true;
    snprintf(why, whylen, "declared only: this build has no %s kernels", b->name);
    return false;
}
