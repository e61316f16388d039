/* The CPU kernels' stable names (ops/cpu/names.h): one table, built once. */
#include <pthread.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/names.h"
#include "ops/gemm.h"
#include "ops/layout.h"
#include "ops/qgemm.h"

typedef struct s_row {
    const char *name;
    gx_kernel_fn fn;
} s_row;

/* The per-op kernels: "cpu.<ONNX name>@1". */
static const s_row s_ops[] = {
#define S_OP_ROW(e, name) {"cpu." name "@1", gx_cpu_##e},
    GX_KERNEL_OP_LIST(S_OP_ROW)
#undef S_OP_ROW
};

/* The kernels per layout and the packed GEMM kernels, which the files
 * that define them hand out by what they run (fixed names; a kernel the
 * CPU lacks, such as an ISA's, has no row at run time). */
typedef enum s_kind {
    S_CONV,
    S_POOL,
    S_RESIZE,
    S_CONCAT,
    S_REORDER,
    S_PACKED,
    S_PACKED_ISA,
    S_QPACKED,
    S_QCONV_LAYOUT
} s_kind;

static const struct {
    const char *name;
    s_kind kind;
    int arg; /* a layout (S_CONV) or an op */
    const char *isa;
} s_fixed[] = {
    {"cpu.Conv.nhwc@1", S_CONV, GX_LAYOUT_NHWC, NULL},
    {"cpu.Conv.nchw16c@1", S_CONV, GX_LAYOUT_NCHW16C, NULL},
    {"cpu.MaxPool.layout@1", S_POOL, GX_OP_MAXPOOL, NULL},
    {"cpu.AveragePool.layout@1", S_POOL, GX_OP_AVERAGEPOOL, NULL},
    {"cpu.GlobalMaxPool.layout@1", S_POOL, GX_OP_GLOBALMAXPOOL, NULL},
    {"cpu.GlobalAveragePool.layout@1", S_POOL, GX_OP_GLOBALAVERAGEPOOL, NULL},
    {"cpu.BatchNormalization.layout@1", S_POOL, GX_OP_BATCHNORM, NULL},
    {"cpu.InstanceNormalization.layout@1", S_POOL, GX_OP_INSTANCENORM, NULL},
    {"cpu.Resize.nhwc@1", S_RESIZE, 0, NULL},
    {"cpu.Concat.layout@1", S_CONCAT, 0, NULL},
    {"cpu.reorder@1", S_REORDER, 0, NULL},
    {"cpu.MatMul.packed@1", S_PACKED, GX_OP_MATMUL, NULL},
    {"cpu.Gemm.packed@1", S_PACKED, GX_OP_GEMM, NULL},
    {"cpu.MatMul.packed.avx512@1", S_PACKED_ISA, GX_OP_MATMUL, "avx512"},
    {"cpu.Gemm.packed.avx512@1", S_PACKED_ISA, GX_OP_GEMM, "avx512"},
    {"cpu.MatMul.packed.avx2@1", S_PACKED_ISA, GX_OP_MATMUL, "avx2"},
    {"cpu.Gemm.packed.avx2@1", S_PACKED_ISA, GX_OP_GEMM, "avx2"},
    {"cpu.MatMul.packed.baseline@1", S_PACKED_ISA, GX_OP_MATMUL, "baseline"},
    {"cpu.Gemm.packed.baseline@1", S_PACKED_ISA, GX_OP_GEMM, "baseline"},
    {"cpu.MatMulInteger.packed@1", S_QPACKED, GX_OP_MATMUL_INTEGER, NULL},
    {"cpu.QLinearMatMul.packed@1", S_QPACKED, GX_OP_QLINEAR_MATMUL, NULL},
    {"cpu.QLinearConv.packed@2", S_QPACKED, GX_OP_QLINEAR_CONV, NULL},
    {"cpu.ConvInteger.packed@1", S_QPACKED, GX_OP_CONVINTEGER, NULL},
    {"cpu.QLinearConv.nhwc@1", S_QCONV_LAYOUT, GX_LAYOUT_NHWC, NULL},
};
#define S_N_FIXED (sizeof s_fixed / sizeof s_fixed[0])

static s_row s_extra[S_N_FIXED];
static size_t s_n_extra;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void s_init(void)
{
    for (size_t i = 0; i < S_N_FIXED; i++) {
        const gx_op op = (gx_op)s_fixed[i].arg;
        gx_kernel_fn fn = NULL;
        switch (s_fixed[i].kind) {
        case S_CONV:
            fn = gx_cpu_conv_layout_fn((gx_layout)s_fixed[i].arg);
            break;
        case S_POOL:
            fn = gx_cpu_pool_layout_fn(op);
            break;
        case S_RESIZE:
            fn = gx_cpu_resize_layout_fn();
            break;
        case S_CONCAT:
            fn = gx_cpu_concat_layout_fn();
            break;
        case S_REORDER:
            fn = gx_cpu_reorder;
            break;
        case S_PACKED:
            fn = gx_cpu_gemm_packed_kernel(op);
            break;
        case S_PACKED_ISA:
            fn = gx_cpu_gemm_packed_kernel_isa(op, s_fixed[i].isa);
            break;
        case S_QPACKED:
            fn = gx_cpu_qgemm_kernel(op);
            break;
        case S_QCONV_LAYOUT:
            fn = gx_cpu_qconv_layout_fn();
            break;
        }
        if (fn)
            s_extra[s_n_extra++] = (s_row){s_fixed[i].name, fn};
    }
}

const char *gx_cpu_kernel_name(gx_kernel_fn fn)
{
    if (!fn)
        return NULL;
    pthread_once(&s_once, s_init);
    for (size_t i = 0; i < sizeof s_ops / sizeof s_ops[0]; i++)
        if (s_ops[i].fn == fn)
            return s_ops[i].name;
    for (size_t i = 0; i < s_n_extra; i++)
        if (s_extra[i].fn == fn)
            return s_extra[i].name;
    return NULL;
}

gx_kernel_fn gx_cpu_kernel_by_name(const char *name)
{
    if (!name)
        return NULL;
    pthread_once(&s_once, s_init);
    for (size_t i = 0; i < sizeof s_ops / sizeof s_ops[0]; i++)
        if (!strcmp(s_ops[i].name, name))
            return s_ops[i].fn;
    for (size_t i = 0; i < s_n_extra; i++)
        if (!strcmp(s_extra[i].name, name))
            return s_extra[i].fn;
    return NULL;
}

static uint64_t s_fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator: "ab","c" != "a","bc" */
}

/* Raised when a kernel keeps its name but reads its scratch (or a packed
 * constant) differently: a plan stored in an artifact holds the sizes of
 * the build that compiled it, so that build's plans must not be read.
 * 2: RNN, GRU and LSTM keep H twice (their shares split a step); 3: the
 * integer products' packed B adds its wide form (ops/qgemm.h); 4: a
 * product's packed B, its narrow form. */
#define S_KERNELS_REV "4"

uint64_t gx_cpu_kernel_table_hash(void)
{
    uint64_t h = s_fnv(1469598103934665603ull, S_KERNELS_REV);
    for (size_t i = 0; i < sizeof s_ops / sizeof s_ops[0]; i++)
        h = s_fnv(h, s_ops[i].name);
    for (size_t i = 0; i < S_N_FIXED; i++) /* whatever this CPU has */
        h = s_fnv(h, s_fixed[i].name);
    for (int op = 0; op < GX_OP_COUNT; op++)
        h = s_fnv(h, gx_op_name((gx_op)op));
    return h;
}
