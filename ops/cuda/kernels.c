/*
 * The CUDA backend's kernels (float32 and float16): MatMul and Gemm through cuBLAS on
 * the worker's stream and handle; elementwise ops, broadcasting binary ops,
 * Softmax over the last axis, Gemm's C, Transpose (rank 6 at most) and
 * ReduceSum / ReduceMean over trailing axes and Cast between float32
 * and float16 as CUDA C compiled by NVRTC
 * when the plan is made (gx_cuda_kernel_ready; cached: gx_cuda_jit); the
 * shape ops and Concat as copies within
 * the device; Conv, pools and BatchNormalization through cuDNN (dnn.c).
 * Every kernel enqueues on its queue and returns; a failure is recorded
 * on the queue and reported by the next copy or sync.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/cuda/internal.h"
#include "ops/schema.h"

/* ---- generated kernels: the storage type ------------------------------- */

/* Every generated kernel is written over T, the tensors' storage type, and
 * computes in float: LD(x) reads an element as a float, ST(v) rounds one
 * to T. float16 converts with PTX's cvt (round to nearest even), so NVRTC
 * needs no header. */
static const char s_prelude_f32[] = "typedef float T;\n"
                                    "#define LD(x) (x)\n"
                                    "#define ST(v) (v)\n";
static const char s_prelude_f16[] =
    "typedef unsigned short T;\n"
    "__device__ __forceinline__ float LD(T h)\n"
    "{ float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "__device__ __forceinline__ T ST(float f)\n"
    "{ T h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n";

const char *gx_cuda_prelude(gx_dtype dt)
{
    return dt == GX_F16 ? s_prelude_f16 : s_prelude_f32;
}

/* The kernel `name` of body over dt's storage type (gx_cuda_jit). */
static const void *s_jit(gx_cuda_queue *q, gx_dtype dt, const char *body, const char *name)
{
    static _Thread_local char src[8192];
    int n = snprintf(src, sizeof src, "%s%s", gx_cuda_prelude(dt), body);
    if (n < 0 || (size_t)n >= sizeof src) {
        gx_cuda_fail(q, "the source of %s is over %zu bytes", name, sizeof src);
        return NULL;
    }
    return gx_cuda_jit(q, src, name);
}

/* ---- generated elementwise kernels -------------------------------------- */

/* y = f(x) over n elements; a, b: the op's scalars; lo/hi: Clip's bound
 * inputs (device pointers) or NULL. */
static const char s_unary_src[] =
    "extern \"C\" __global__ void %s(const T *__restrict__ x, T *__restrict__ y,\n"
    "    long long n, float a, float b, const T *lo, const T *hi)\n"
    "{\n"
    "    const float lov = lo ? LD(*lo) : a, hiv = hi ? LD(*hi) : b;\n"
    "    (void)lov, (void)hiv;\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        const float v = LD(x[i]);\n"
    "        y[i] = ST(%s);\n"
    "    }\n"
    "}\n";

static const char *const s_expr[GX_OP_COUNT] = {
    [GX_OP_RELU] = "v > 0.f ? v : 0.f",
    [GX_OP_SIGMOID] = "1.f / (1.f + expf(-v))",
    [GX_OP_TANH] = "tanhf(v)",
    [GX_OP_EXP] = "expf(v)",
    [GX_OP_LOG] = "logf(v)",
    [GX_OP_SQRT] = "sqrtf(v)",
    [GX_OP_NEG] = "-v",
    [GX_OP_ABS] = "fabsf(v)",
    [GX_OP_ERF] = "erff(v)",
    [GX_OP_GELU] = "0.5f * v * (1.f + erff(v * 0.7071067811865476f))",
    [GX_OP_LEAKYRELU] = "v < 0.f ? a * v : v",
    [GX_OP_CLIP] = "fminf(fmaxf(v, lov), hiv)",
};

const char *gx_cuda_unary_expr(gx_op op, const gx_attrval *attr)
{
    const char *approx = op == GX_OP_GELU ? attr[GX_GELU_APPROXIMATE].s : NULL;
    if (approx && strcmp(approx, "tanh") == 0)
        return "0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))";
    return s_expr[op];
}

/* The generated kernel of unary op over dt (compiled once: by ready). */
static const void *s_unary_fn(gx_cuda_queue *q, gx_op op, const gx_attrval *attr, gx_dtype dt)
{
    char src[sizeof s_unary_src + 256], name[48];
    snprintf(name, sizeof name, "gx_%s", gx_op_name(op));
    snprintf(src, sizeof src, s_unary_src, name, gx_cuda_unary_expr(op, attr));
    return s_jit(q, dt, src, name);
}

static void s_unary(const gx_kargs *k, gx_op op)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const void *fn = s_unary_fn(q, op, k->attr, k->out[0].dtype);
    const void *x = k->in[0].data;
    void *y = k->out[0].data;
    long long n = (long long)k->out[0].numel;
    float a = 0, b = 0;
    const void *lo = NULL, *hi = NULL;
    if (op == GX_OP_LEAKYRELU)
        a = (float)k->attr[GX_LEAKYRELU_ALPHA].f;
    if (op == GX_OP_CLIP) {
        a = k->attr[GX_CLIP_MIN].set ? (float)k->attr[GX_CLIP_MIN].f : -INFINITY;
        b = k->attr[GX_CLIP_MAX].set ? (float)k->attr[GX_CLIP_MAX].f : INFINITY;
        if (k->n_in > 1 && k->in[1].ndim >= 0 && k->in[1].data)
            lo = k->in[1].data;
        if (k->n_in > 2 && k->in[2].ndim >= 0 && k->in[2].data)
            hi = k->in[2].data;
    }
    void *args[] = {&x, &y, &n, &a, &b, &lo, &hi};
    if (n > 0)
        gx_cuda_launch(q, fn, gx_cuda_grid(n), 256, args);
    gx_cuda_done(k, q);
}

/* y = a OP b with numpy broadcasting: the output's index split into
 * coordinates, each input's offset from its strides (0 on broadcast
 * dimensions). */
typedef struct s_bcast {
    long long n, nd;
    long long dim[6], sa[6], sb[6];
} s_bcast;

static const char s_binary_src[] =
    "struct bc { long long n, nd; long long dim[6], sa[6], sb[6]; };\n"
    "extern \"C\" __global__ void %s(const T *__restrict__ a, const T *__restrict__ b,\n"
    "    T *__restrict__ y, bc p)\n"
    "{\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        long long r = i, ia = 0, ib = 0;\n"
    "        for (int d = (int)p.nd - 1; d >= 0; d--) {\n"
    "            const long long c = r %% p.dim[d];\n"
    "            r /= p.dim[d];\n"
    "            ia += c * p.sa[d];\n"
    "            ib += c * p.sb[d];\n"
    "        }\n"
    "        const float u = LD(a[ia]), v = LD(b[ib]);\n"
    "        y[i] = ST(u %s v);\n"
    "    }\n"
    "}\n";

/* Strides of input v (right-aligned to nd dims), 0 where it broadcasts. */
static void s_strides(const gx_view *v, int nd, const int64_t *dim, long long *st)
{
    long long s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        const int vd = d - (nd - v->ndim);
        const int64_t n = vd >= 0 ? v->shape[vd] : 1;
        st[d] = n == 1 && dim[d] != 1 ? 0 : s;
        s *= n;
    }
}

/* The generated kernel of binary op over dt (compiled once: by ready). */
static const void *s_binary_fn(gx_cuda_queue *q, gx_op op, gx_dtype dt)
{
    char src[sizeof s_binary_src + 64], name[48];
    snprintf(name, sizeof name, "gx_%s", gx_op_name(op));
    snprintf(src, sizeof src, s_binary_src, name, gx_cuda_binary_sym(op));
    return s_jit(q, dt, src, name);
}

static void s_binary(const gx_kargs *k, gx_op op)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *y = &k->out[0];
    const void *fn = s_binary_fn(q, op, y->dtype);
    s_bcast p = {.n = (long long)y->numel, .nd = y->ndim};
    if (k->in[0].numel == y->numel && k->in[1].numel == y->numel) { /* no broadcast */
        p.nd = 1;
        p.dim[0] = p.n;
        p.sa[0] = p.sb[0] = 1;
    } else {
        for (int d = 0; d < y->ndim; d++)
            p.dim[d] = y->shape[d];
        s_strides(&k->in[0], y->ndim, y->shape, p.sa);
        s_strides(&k->in[1], y->ndim, y->shape, p.sb);
    }
    const void *a = k->in[0].data, *b = k->in[1].data;
    void *yp = y->data;
    void *args[] = {&a, &b, &yp, &p};
    if (p.n > 0)
        gx_cuda_launch(q, fn, gx_cuda_grid(p.n), 256, args);
    gx_cuda_done(k, q);
}

/* One block of 256 threads per row of `cols`. */
static const char s_softmax_src[] =
    "extern \"C\" __global__ void gx_softmax(const T *__restrict__ x,\n"
    "    T *__restrict__ y, long long cols)\n"
    "{\n"
    "    __shared__ float sh[256];\n"
    "    const T *xr = x + (long long)blockIdx.x * cols;\n"
    "    T *yr = y + (long long)blockIdx.x * cols;\n"
    "    const int t = threadIdx.x;\n"
    "    float m = __int_as_float(0xff800000);\n"
    "    for (long long j = t; j < cols; j += blockDim.x) m = fmaxf(m, LD(xr[j]));\n"
    "    sh[t] = m;\n"
    "    __syncthreads();\n"
    "    for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) sh[t] = fmaxf(sh[t], sh[t + s]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "    m = sh[0];\n"
    "    __syncthreads();\n"
    "    float sum = 0.f;\n"
    "    for (long long j = t; j < cols; j += blockDim.x) sum += expf(LD(xr[j]) - m);\n"
    "    sh[t] = sum;\n"
    "    __syncthreads();\n"
    "    for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) sh[t] += sh[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    const float inv = 1.f / sh[0];\n"
    "    for (long long j = t; j < cols; j += blockDim.x)\n"
    "        yr[j] = ST(expf(LD(xr[j]) - m) * inv);\n"
    "}\n";

static void s_k_softmax(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *x = &k->in[0];
    const void *fn = s_jit(q, x->dtype, s_softmax_src, "gx_softmax");
    long long cols = x->ndim ? (long long)x->shape[x->ndim - 1] : 1;
    long long rows = cols ? (long long)x->numel / cols : 0;
    const void *xp = x->data;
    void *yp = k->out[0].data;
    void *args[] = {&xp, &yp, &cols};
    if (rows > 0 && cols > 0)
        gx_cuda_launch(q, fn, (unsigned)rows, 256, args);
    gx_cuda_done(k, q);
}

/* ---- Transpose, Concat, ReduceSum / ReduceMean ------------------------- */

/* y[i] = x[offset of i's coordinates]: dim are y's dims, st the stride in x
 * of the axis each of y's dims comes from (rank 6 at most). */
typedef struct s_perm {
    long long n, nd;
    long long dim[6], st[6];
} s_perm;

static const char s_transpose_src[] =
    "struct pm { long long n, nd; long long dim[6], st[6]; };\n"
    "extern \"C\" __global__ void gx_transpose(const T *__restrict__ x,\n"
    "    T *__restrict__ y, pm p)\n"
    "{\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        long long r = i, o = 0;\n"
    "        for (int d = (int)p.nd - 1; d >= 0; d--) {\n"
    "            const long long c = r % p.dim[d];\n"
    "            r /= p.dim[d];\n"
    "            o += c * p.st[d];\n"
    "        }\n"
    "        y[i] = x[o];\n"
    "    }\n"
    "}\n";

static void s_k_transpose(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_attrval *pa = &k->attr[GX_TRANSPOSE_PERM];
    long long xst[6];
    long long st = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        xst[d] = st;
        st *= x->shape[d];
    }
    s_perm p = {.n = (long long)y->numel, .nd = y->ndim};
    for (int d = 0; d < y->ndim; d++) {
        const int from = pa->set && pa->n == (size_t)x->ndim ? (int)pa->ints[d] : x->ndim - 1 - d;
        p.dim[d] = y->shape[d];
        p.st[d] = xst[from < 0 ? from + x->ndim : from];
    }
    const void *xp = x->data;
    void *yp = y->data;
    void *args[] = {&xp, &yp, &p};
    if (p.n > 0)
        gx_cuda_launch(q, s_jit(q, x->dtype, s_transpose_src, "gx_transpose"),
                       gx_cuda_grid(p.n), 256, args);
    gx_cuda_done(k, q);
}

/* Each input a block of rows copied into its columns of y (one 2-D copy
 * per input: rows = the product of the dims before the axis). */
static void s_k_concat(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *y = &k->out[0];
    int axis = (int)k->attr[GX_CONCAT_AXIS].i;
    if (axis < 0)
        axis += y->ndim;
    const size_t es = gx_dtype_size(y->dtype);
    size_t rows = 1, inner = es;
    for (int d = 0; d < axis; d++)
        rows *= (size_t)y->shape[d];
    for (int d = axis + 1; d < y->ndim; d++)
        inner *= (size_t)y->shape[d];
    const size_t pitch = (size_t)y->shape[axis] * inner;
    size_t at = 0;
    for (int i = 0; i < k->n_in; i++) {
        const gx_view *x = &k->in[i];
        const size_t width = (size_t)(x->ndim > axis ? x->shape[axis] : 0) * inner;
        cudaError_t e = cudaSuccess;
        if (width && rows)
            e = cudaMemcpy2DAsync((char *)y->data + at, pitch, x->data, width, width, rows,
                                  cudaMemcpyDeviceToDevice, q->stream);
        if (e != cudaSuccess)
            gx_cuda_fail(q, "Concat: a copy of %zu x %zu bytes: %s", rows, width,
                         cudaGetErrorString(e));
        at += width;
    }
    gx_cuda_done(k, q);
}

/* y[r] = the sum (times scale) of x's row r of cols elements: one block
 * of 256 threads per row. */
static const char s_reduce_src[] =
    "extern \"C\" __global__ void gx_reduce_rows(const T *__restrict__ x,\n"
    "    T *__restrict__ y, long long rows, long long cols, float scale)\n"
    "{\n"
    "    __shared__ float sh[256];\n"
    "    const int t = threadIdx.x;\n"
    "    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {\n"
    "        const T *xr = x + r * cols;\n"
    "        float s = 0.f;\n"
    "        for (long long j = t; j < cols; j += blockDim.x) s += LD(xr[j]);\n"
    "        sh[t] = s;\n"
    "        __syncthreads();\n"
    "        for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
    "            if (t < h) sh[t] += sh[t + h];\n"
    "            __syncthreads();\n"
    "        }\n"
    "        if (t == 0) y[r] = ST(sh[0] * scale);\n"
    "        __syncthreads();\n"
    "    }\n"
    "}\n";

/* The rules claim trailing reductions only (rules.c), so that y's
 * elements are rows of x of in / out elements each. */
static void s_reduce(const gx_kargs *k, bool mean)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    long long rows = (long long)k->out[0].numel;
    long long cols = rows ? (long long)k->in[0].numel / rows : 0;
    float scale = mean && cols ? 1.f / (float)cols : 1.f;
    const void *xp = k->in[0].data;
    void *yp = k->out[0].data;
    void *args[] = {&xp, &yp, &rows, &cols, &scale};
    if (rows > 0)
        gx_cuda_launch(q, s_jit(q, k->in[0].dtype, s_reduce_src, "gx_reduce_rows"),
                       (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8), 256, args);
    gx_cuda_done(k, q);
}

static void s_k_reduce_sum(const gx_kargs *k)
{
    s_reduce(k, false);
}

static void s_k_reduce_mean(const gx_kargs *k)
{
    s_reduce(k, true);
}

/* ---- cuBLAS ------------------------------------------------------------- */

static const char *s_blas_err(cublasStatus_t s)
{
    return gx_cublas.status_string(s);
}

/* Y[M,N] = alpha op(A) op(B) + beta Y over dt, row-major, as cuBLAS's
 * column-major Y^T = op(B)^T op(A)^T; batch products with strides sa, sb
 * (0: shared). float32: SGEMM (TF32 where allowed); float16: GemmEx with
 * float accumulation (tensor cores), Y rounded to float16 once. */
static void s_gemm(gx_cuda_queue *q, gx_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                   int64_t kk, float alpha, const void *a, int64_t sa, const void *b, int64_t sb,
                   float beta, void *y, int64_t batch)
{
    if (m <= 0 || n <= 0 || batch <= 0)
        return;
    const int lda = (int)(ta ? m : kk), ldb = (int)(tb ? kk : n);
    const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s = gx_cublas.set_math_mode(q->blas, gx_cuda_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH);
    if (s == CUBLAS_STATUS_SUCCESS && dt == GX_F16 && batch == 1)
        s = gx_cublas.gemm_ex(q->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, b, CUDA_R_16F, ldb,
                              a, CUDA_R_16F, lda, &beta, y, CUDA_R_16F, (int)n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else if (s == CUBLAS_STATUS_SUCCESS && dt == GX_F16)
        s = gx_cublas.gemm_strided_batched_ex(q->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, b,
                                              CUDA_R_16F, ldb, sb, a, CUDA_R_16F, lda, sa, &beta,
                                              y, CUDA_R_16F, (int)n, m * n, (int)batch,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else if (s == CUBLAS_STATUS_SUCCESS && batch == 1)
        s = gx_cublas.sgemm(q->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, b, ldb, a, lda,
                            &beta, y, (int)n);
    else if (s == CUBLAS_STATUS_SUCCESS)
        s = gx_cublas.sgemm_strided_batched(q->blas, ob, oa, (int)n, (int)m, (int)kk, &alpha, b,
                                            ldb, sb, a, lda, sa, &beta, y, (int)n, m * n,
                                            (int)batch);
    if (s != CUBLAS_STATUS_SUCCESS)
        gx_cuda_fail(q, "cuBLAS %s %lldx%lldx%lld (batch %lld): %s",
                     dt == GX_F16 ? "GemmEx (float16)" : "SGEMM", (long long)m, (long long)n,
                     (long long)kk, (long long)batch, s_blas_err(s));
}

static int64_t s_batch(const gx_view *v)
{
    int64_t b = 1;
    for (int i = 0; i < v->ndim - 2; i++)
        b *= v->shape[i];
    return b;
}

static void s_k_matmul(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const int64_t m = a->shape[a->ndim - 2], kk = a->shape[a->ndim - 1];
    const int64_t n = b->shape[b->ndim - 1];
    int64_t ba = s_batch(a), bb = s_batch(b);
    if (kk == 0) { /* an empty sum */
        cudaMemsetAsync(y->data, 0, (size_t)y->numel * gx_dtype_size(y->dtype), q->stream);
    } else if (b->ndim == 2) { /* the batch folds into the rows */
        s_gemm(q, y->dtype, false, false, m * ba, n, kk, 1.f, a->data, 0, b->data, 0, 0.f,
               y->data, 1);
    } else {
        const int64_t batch = ba > bb ? ba : bb;
        s_gemm(q, y->dtype, false, false, m, n, kk, 1.f, a->data, a->ndim == 2 ? 0 : m * kk,
               b->data, kk * n, 0.f, y->data, batch);
    }
    gx_cuda_done(k, q);
}

/* Y = beta * C broadcast to [M,N] (C of shape [], [N], [1,N], [M,1], [M,N]). */
static const char s_bias_src[] =
    "extern \"C\" __global__ void gx_gemm_bias(const T *__restrict__ c, T *__restrict__ y,\n"
    "    long long m, long long n, long long cm, long long cn, float beta)\n"
    "{\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m * n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        const long long r = i / n, col = i - r * n;\n"
    "        y[i] = ST(beta * LD(c[(cm > 1 ? r : 0) * cn + (cn > 1 ? col : 0)]));\n"
    "    }\n"
    "}\n";

/* Does the Gemm add beta C? */
static bool s_gemm_has_c(const gx_kargs *k)
{
    return k->n_in > 2 && k->in[2].ndim >= 0 && (float)k->attr[GX_GEMM_BETA].f != 0.f;
}

static void s_k_gemm(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const gx_view *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const bool ta = k->attr[GX_GEMM_TRANSA].i != 0, tb = k->attr[GX_GEMM_TRANSB].i != 0;
    const float alpha = (float)k->attr[GX_GEMM_ALPHA].f;
    float beta = (float)k->attr[GX_GEMM_BETA].f;
    long long m = y->shape[0], n = y->shape[1];
    const int64_t kk = a->shape[ta ? 0 : 1];
    (void)b;
    const bool has_c = s_gemm_has_c(k) && k->in[2].data;
    if (has_c) {
        const gx_view *c = &k->in[2];
        long long cm = c->ndim == 2 ? c->shape[0] : 1;
        long long cn = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
        const void *cp = c->data;
        void *yp = y->data;
        void *args[] = {&cp, &yp, &m, &n, &cm, &cn, &beta};
        if (m * n > 0)
            gx_cuda_launch(q, s_jit(q, y->dtype, s_bias_src, "gx_gemm_bias"),
                           gx_cuda_grid(m * n), 256, args);
    }
    if (kk == 0 || alpha == 0.f) {
        if (!has_c)
            cudaMemsetAsync(y->data, 0, (size_t)y->numel * gx_dtype_size(y->dtype), q->stream);
    } else {
        s_gemm(q, y->dtype, ta, tb, m, n, kk, alpha, a->data, 0, k->in[1].data, 0,
               has_c ? 1.f : 0.f, y->data, 1);
    }
    gx_cuda_done(k, q);
}

/* ---- the shape ops: the same bytes ------------------------------------ */

static void s_k_copy(const gx_kargs *k)
{
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const size_t n = (size_t)k->out[0].numel * gx_dtype_size(k->out[0].dtype);
    cudaError_t e = cudaSuccess;
    if (n && k->out[0].data != k->in[0].data)
        e = cudaMemcpyAsync(k->out[0].data, k->in[0].data, n, cudaMemcpyDeviceToDevice,
                            q->stream);
    if (e != cudaSuccess)
        gx_cuda_fail(q, "device copy of %zu bytes: %s", n, cudaGetErrorString(e));
    gx_cuda_done(k, q);
}

/* ---- Cast between float32 and float16 --------------------------------- */

/* y = x converted: LD and ST of the float16 prelude (round to nearest
 * even, overflow to infinity). */
static const char s_cast_f16_to_f32_src[] =
    "extern \"C\" __global__ void gx_cast_f16_f32(const T *__restrict__ x,\n"
    "    float *__restrict__ y, long long n)\n"
    "{\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        y[i] = LD(x[i]);\n"
    "}\n";
static const char s_cast_f32_to_f16_src[] =
    "extern \"C\" __global__ void gx_cast_f32_f16(const float *__restrict__ x,\n"
    "    T *__restrict__ y, long long n)\n"
    "{\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        y[i] = ST(x[i]);\n"
    "}\n";

/* The kernel converting from to to (float32 and float16 either way). */
static const void *s_cast_fn(gx_cuda_queue *q, gx_dtype from)
{
    return from == GX_F16 ? s_jit(q, GX_F16, s_cast_f16_to_f32_src, "gx_cast_f16_f32")
                          : s_jit(q, GX_F16, s_cast_f32_to_f16_src, "gx_cast_f32_f16");
}

static void s_k_cast(const gx_kargs *k)
{
    if (k->in[0].dtype == k->out[0].dtype) {
        s_k_copy(k);
        return;
    }
    gx_cuda_queue *q = gx_cuda_queue_of(k);
    const void *x = k->in[0].data;
    void *y = k->out[0].data;
    long long n = (long long)k->out[0].numel;
    void *args[] = {&x, &y, &n};
    if (n > 0)
        gx_cuda_launch(q, s_cast_fn(q, k->in[0].dtype), gx_cuda_grid(n), 256, args);
    gx_cuda_done(k, q);
}

/* ---- the table ---------------------------------------------------------- */

#define S_UNARY(e)                                                                             \
    static void s_k_##e(const gx_kargs *k)                                                     \
    {                                                                                          \
        s_unary(k, GX_OP_##e);                                                                 \
    }
S_UNARY(RELU)
S_UNARY(SIGMOID)
S_UNARY(TANH)
S_UNARY(EXP)
S_UNARY(LOG)
S_UNARY(SQRT)
S_UNARY(NEG)
S_UNARY(ABS)
S_UNARY(ERF)
S_UNARY(GELU)
S_UNARY(LEAKYRELU)
S_UNARY(CLIP)
#undef S_UNARY

const char *gx_cuda_binary_sym(gx_op op)
{
    return op == GX_OP_ADD ? "+" : op == GX_OP_SUB ? "-" : op == GX_OP_MUL ? "*"
         : op == GX_OP_DIV ? "/" : NULL;
}

#define S_BINARY(e)                                                                            \
    static void s_k_##e(const gx_kargs *k)                                                     \
    {                                                                                          \
        s_binary(k, GX_OP_##e);                                                                \
    }
S_BINARY(ADD)
S_BINARY(SUB)
S_BINARY(MUL)
S_BINARY(DIV)
#undef S_BINARY

static const gx_kernel_fn s_kernels[GX_OP_COUNT] = {
    [GX_OP_MATMUL] = s_k_matmul, [GX_OP_GEMM] = s_k_gemm,
    [GX_OP_RELU] = s_k_RELU, [GX_OP_SIGMOID] = s_k_SIGMOID, [GX_OP_TANH] = s_k_TANH,
    [GX_OP_EXP] = s_k_EXP, [GX_OP_LOG] = s_k_LOG, [GX_OP_SQRT] = s_k_SQRT,
    [GX_OP_NEG] = s_k_NEG, [GX_OP_ABS] = s_k_ABS, [GX_OP_ERF] = s_k_ERF,
    [GX_OP_GELU] = s_k_GELU, [GX_OP_LEAKYRELU] = s_k_LEAKYRELU, [GX_OP_CLIP] = s_k_CLIP,
    [GX_OP_ADD] = s_k_ADD, [GX_OP_SUB] = s_k_SUB, [GX_OP_MUL] = s_k_MUL, [GX_OP_DIV] = s_k_DIV,
    [GX_OP_SOFTMAX] = s_k_softmax,
    [GX_OP_IDENTITY] = s_k_copy, [GX_OP_RESHAPE] = s_k_copy, [GX_OP_FLATTEN] = s_k_copy,
    [GX_OP_SQUEEZE] = s_k_copy, [GX_OP_UNSQUEEZE] = s_k_copy,
    [GX_OP_TRANSPOSE] = s_k_transpose, [GX_OP_CONCAT] = s_k_concat,
    [GX_OP_REDUCE_SUM] = s_k_reduce_sum, [GX_OP_REDUCE_MEAN] = s_k_reduce_mean,
    [GX_OP_CAST] = s_k_cast,
};

void gx_cuda_kernel_ready(gx_cuda_queue *q, gx_op op, const gx_kargs *k)
{
    if ((unsigned)op >= GX_OP_COUNT || !s_kernels[op])
        return; /* cuDNN's */
    const gx_dtype dt = k->n_in > 0 ? k->in[0].dtype : GX_F32;
    if (s_expr[op])
        s_unary_fn(q, op, k->attr, k->out[0].dtype);
    else if (gx_cuda_binary_sym(op))
        s_binary_fn(q, op, k->out[0].dtype);
    else if (op == GX_OP_SOFTMAX)
        s_jit(q, dt, s_softmax_src, "gx_softmax");
    else if (op == GX_OP_TRANSPOSE)
        s_jit(q, dt, s_transpose_src, "gx_transpose");
    else if (op == GX_OP_REDUCE_SUM || op == GX_OP_REDUCE_MEAN)
        s_jit(q, dt, s_reduce_src, "gx_reduce_rows");
    else if (op == GX_OP_GEMM && s_gemm_has_c(k))
        s_jit(q, k->out[0].dtype, s_bias_src, "gx_gemm_bias");
    else if (op == GX_OP_CAST && k->in[0].dtype != k->out[0].dtype)
        s_cast_fn(q, k->in[0].dtype);
}

gx_kernel_fn gx_cuda_kernel(gx_op op)
{
    if ((unsigned)op >= GX_OP_COUNT)
        return NULL;
#ifdef HAVE_CUDNN
    if (!s_kernels[op])
        return gx_cuda_dnn_kernel(op);
#endif
    return s_kernels[op];
}

/* ---- the self-check at open -------------------------------------------- */

int gx_cuda_selfcheck(char *why, size_t len)
{
    gx_cuda_queue q = {0};
    float h[8] = {1, -2, 3, -4, 1, 0, 0, 1}, out[8] = {0};
    float *d = NULL;
    int rc = GX_OK;
    cudaError_t e;
    if ((e = cudaStreamCreateWithFlags(&q.stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d, sizeof h * 2)) != cudaSuccess ||
        (e = cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice)) != cudaSuccess) {
        rc = gx_errf(why, len, GX_EINTERNAL, "%s", cudaGetErrorString(e));
        goto out;
    }
    if (gx_cublas.create(&q.blas) != CUBLAS_STATUS_SUCCESS) {
        rc = gx_errf(why, len, GX_EINTERNAL, "cuBLAS: cannot create a handle");
        goto out;
    }
    gx_cublas.set_stream(q.blas, q.stream);
    /* Relu of [1,-2,3,-4] into d+8, then [[1,-2],[3,-4]] x I into d+12 */
    gx_view in = {.dtype = GX_F32, .ndim = 1, .shape = {4}, .numel = 4, .data = d};
    gx_view o = {.dtype = GX_F32, .ndim = 1, .shape = {4}, .numel = 4, .data = d + 8};
    gx_attrval attr[GX_MAX_ATTRS] = {0};
    gx_kargs ka = {.attr = attr, .n_in = 1, .in = &in, .n_out = 1, .out = &o, .nth = 1,
                   .queue = &q};
    s_k_RELU(&ka);
    s_gemm(&q, GX_F32, false, false, 2, 2, 2, 1.f, d, 0, d + 4, 0, 0.f, d + 12, 1);
    if ((e = cudaStreamSynchronize(q.stream)) != cudaSuccess ||
        (e = cudaMemcpy(out, d + 8, sizeof out, cudaMemcpyDeviceToHost)) != cudaSuccess) {
        rc = gx_errf(why, len, GX_EINTERNAL, "%s", cudaGetErrorString(e));
        goto out;
    }
    if (q.err < 0) {
        rc = gx_errf(why, len, GX_EINTERNAL, "%s", q.msg);
        goto out;
    }
    const float want[8] = {1, 0, 3, 0, 1, -2, 3, -4};
    if (memcmp(out, want, sizeof want) != 0)
        rc = gx_errf(why, len, GX_EINTERNAL,
                     "wrong results: Relu gave %g %g %g %g, a product %g %g %g %g", out[0],
                     out[1], out[2], out[3], out[4], out[5], out[6], out[7]);
out:
    if (q.blas)
        gx_cublas.destroy(q.blas);
    if (d)
        cudaFree(d);
    if (q.stream)
        cudaStreamDestroy(q.stream);
    return rc;
}
