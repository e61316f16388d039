/*
 * The CPU kernel of a fused elementwise group (ops/fused.h). The output is
 * cut into tiles of GX_FUSED_TILE_BYTES; a thread's share is a run of
 * whole tiles. For each tile, each op of the group runs its own kernel on
 * tile-sized views: the group's inputs are read in place where they have
 * the output's shape, passed as one value where they are scalars, and
 * gathered into a tile where they broadcast along some dims; intermediate
 * values go to temporaries on the stack, and only the last op writes to
 * the output. Each element goes through the same row functions in the
 * same order as unfused, so results are bit-identical. The commonest
 * float32 ops skip their kernel's set-up (share, broadcast walk) and run
 * their row expression here directly: the same expression as
 * ops/cpu/elementwise.c's, so the same bits. A chain of the cheapest
 * exact ones (arithmetic, Max, Min, Relu, Neg, Abs, RoundToFloat16) goes over a tile in
 * one pass with its values in registers: a separate pass per op over a
 * tile in L1 costs as much as the memory traffic of the whole chain
 * (bench/bench_fuse: a 5-op chain at 52% of memcpy's rate before, 75-90%
 * with it).
 *
 * Epilogues: with a head (MatMul, Gemm, Conv), its kernel's share writes
 * the product into the output and the ops then run over what it wrote;
 * for Conv after each block of channels and positions (gx_cpu_conv_epi).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/gemm.h"
#include "ops/cpu/vmath.h"
#include "ops/fused.h"
#include "ops/layout.h"

/* How the ops read a group input per tile: in place, as one value, gathered
 * (broadcast), a copy of the head's product; or not at all (an operand of
 * the head only, such as a MatMul's weights). */
typedef enum s_in_kind { S_IN_FULL, S_IN_SCALAR, S_IN_GATHER, S_IN_HEAD, S_IN_UNUSED } s_in_kind;


/* n copies of the element of es bytes at src, to dst. */
static void s_fill(char *restrict dst, const char *restrict src, int64_t n, size_t es)
{
    if (es == 4) {
        uint32_t v, *d = (uint32_t *)(void *)dst;
        memcpy(&v, src, 4);
        for (int64_t i = 0; i < n; i++)
            d[i] = v;
    } else if (es == 8) {
        uint64_t v, *d = (uint64_t *)(void *)dst;
        memcpy(&v, src, 8);
        for (int64_t i = 0; i < n; i++)
            d[i] = v;
    } else {
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * (int64_t)es, src, es);
    }
}

/* Elements [lo, lo + n) of input x broadcast to y's shape, into buf. */
static void s_gather(const gx_view *y, const gx_view *x, const int64_t *stride, int64_t lo,
                     int64_t n, void *buf)
{
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 1, (const int64_t *const[]){stride});
    gx_nditer_seek(&it, lo, lo + n);
    const size_t es = gx_dtype_size(x->dtype);
    gx_nditer_run r;
    char *out = buf;
    while (gx_nditer_next(&it, &r)) {
        const char *src = (const char *)x->data + r.off[0] * (int64_t)es;
        char *dst = out + (r.y - lo) * (int64_t)es;
        if (it.step[0] == 1) {
            memcpy(dst, src, (size_t)r.n * es);
        } else { /* one repeated value along the run (a bias over a channel) */
            s_fill(dst, src, r.n, es);
        }
    }
}

/* ---- float32 rows: the expressions of ops/cpu/elementwise.c ---- */

#define S_BIN_ROWS(NAME, EXPR)                                                \
    GX_CPU_CLONES static void s_##NAME(int64_t n, float *restrict y, const float *restrict a, int64_t sa, \
                         const float *restrict b, int64_t sb)                 \
    {                                                                         \
        if (sa && sb) {                                                       \
            for (int64_t i = 0; i < n; i++) {                                 \
                const float x = a[i], z = b[i];                               \
                y[i] = EXPR;                                                  \
            }                                                                 \
        } else if (sa) {                                                      \
            const float z = *b;                                               \
            for (int64_t i = 0; i < n; i++) {                                 \
                const float x = a[i];                                         \
                y[i] = EXPR;                                                  \
            }                                                                 \
        } else {                                                              \
            const float x = *a;                                               \
            for (int64_t i = 0; i < n; i++) {                                 \
                const float z = b[i];                                         \
                y[i] = EXPR;                                                  \
            }                                                                 \
        }                                                                     \
    }

#define S_UN_ROW(NAME, EXPR)                                                  \
    GX_CPU_CLONES static void s_##NAME(int64_t n, float *restrict y, const float *restrict a) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            const float v = a[i];                                             \
            y[i] = EXPR;                                                      \
        }                                                                     \
    }

S_BIN_ROWS(add, x + z)
S_BIN_ROWS(sub, x - z)
S_BIN_ROWS(mul, x * z)
S_BIN_ROWS(div, x / z)
S_BIN_ROWS(max, x != x ? x : z != z ? z : z > x ? z : x)
S_BIN_ROWS(min, x != x ? x : z != z ? z : z < x ? z : x)
S_UN_ROW(relu, v < 0 ? (float)0 : v)
S_UN_ROW(neg, -v)
S_UN_ROW(abs, fabsf(v))
S_UN_ROW(sigmoid, gx_v_sigmoidf(v))
S_UN_ROW(tanh, gx_v_tanhf(v))
S_UN_ROW(exp, gx_v_expf(v))
S_UN_ROW(erf, gx_v_erff(v))
S_UN_ROW(round_f16, gx_f32_round_f16(v))

typedef void (*s_bin_fn)(int64_t n, float *restrict y, const float *restrict a, int64_t sa,
                         const float *restrict b, int64_t sb);
typedef void (*s_un_fn)(int64_t n, float *restrict y, const float *restrict a);

/* The ops with a row here, by op (the others: NULL). */
static const s_bin_fn s_bins[GX_OP_COUNT] = {
    [GX_OP_ADD] = s_add, [GX_OP_SUB] = s_sub, [GX_OP_MUL] = s_mul,
    [GX_OP_DIV] = s_div, [GX_OP_MAX] = s_max, [GX_OP_MIN] = s_min,
};
static const s_un_fn s_uns[GX_OP_COUNT] = {
    [GX_OP_RELU] = s_relu,       [GX_OP_NEG] = s_neg,   [GX_OP_ABS] = s_abs,
    [GX_OP_SIGMOID] = s_sigmoid, [GX_OP_TANH] = s_tanh, [GX_OP_EXP] = s_exp,
    [GX_OP_ERF] = s_erf,         [GX_OP_ROUND_F16] = s_round_f16,
};

/* Runs op on a tile of n float32 elements if it has a row above and
 * float32 operands of n elements or one (Max and Min: two of them); false
 * otherwise (its kernel runs it). */
static bool s_fast(gx_op op, int n_in, const gx_view *a, int64_t n, float *y)
{
    for (int k = 0; k < n_in; k++)
        if (a[k].dtype != GX_F32 || (a[k].numel != n && a[k].numel != 1))
            return false;
    if (s_uns[op] && n_in == 1 && a[0].numel == n) {
        s_uns[op](n, y, a[0].data);
        return true;
    }
    if (s_bins[op] && n_in == 2) {
        s_bins[op](n, y, a[0].data, a[0].numel == n, a[1].data, a[1].numel == n);
        return true;
    }
    return false;
}

/* ---- float32 runs of ops in registers ----
 * A run of two or more ops of the kinds below, each but the first reading
 * the one before's output (its only reader, as every value inside a
 * group), goes over the tile once: a strip of S_VN vectors stays in
 * registers from the run's first op to its last (Sigmoid, Tanh, Exp and
 * Erf: in a buffer in L1 while vmath.h's function goes over it), and only
 * the last one stores (to a temporary or y). The expressions are those of
 * the rows above, element by element; IEEE +, -, *, / and the selects
 * give the same bits in a vector lane as in a scalar (no FMA contraction:
 * Makefile.am), so the run computes what its ops compute one by one. */

/* The vectors, in two widths: 16 floats where the GEMM's ISA
 * (gx_cpu_gemm_isa) is AVX-512, 8 elsewhere. gcc splits a wider vector's
 * arithmetic over the registers the CPU has, but lowers its compares (the
 * selects below) into scalar code lane by lane: with 16-float vectors on
 * AVX2 a 5-op chain ran 4.4 times slower. fused_regs.h is the run's code,
 * included once per width with s_v, s_vi, s_vu, s_vw and S_VL (floats in
 * s_v) defined as that width's. */
typedef float s_v16 __attribute__((vector_size(64)));
typedef int32_t s_vi16 __attribute__((vector_size(64)));
typedef uint32_t s_vw16 __attribute__((vector_size(64)));
typedef float s_vu16 __attribute__((vector_size(64), aligned(4)));
typedef float s_v8 __attribute__((vector_size(32)));
typedef int32_t s_vi8 __attribute__((vector_size(32)));
typedef uint32_t s_vw8 __attribute__((vector_size(32)));
typedef float s_vu8 __attribute__((vector_size(32), aligned(4)));
#define S_VN 8                 /* vectors in a strip */
#define S_RUN_MIN (16 * S_VN)  /* elements in a tile a run goes over at least */

enum { S_R_NONE, S_R_ADD, S_R_SUB, S_R_MUL, S_R_DIV, S_R_MAX, S_R_MIN, S_R_RELU, S_R_NEG,
       S_R_ABS, S_R_RF16, S_R_SIGMOID, S_R_TANH, S_R_EXP, S_R_ERF };
static const uint8_t s_rcode[GX_OP_COUNT] = {
    [GX_OP_ADD] = S_R_ADD, [GX_OP_SUB] = S_R_SUB,   [GX_OP_MUL] = S_R_MUL,
    [GX_OP_DIV] = S_R_DIV, [GX_OP_MAX] = S_R_MAX,   [GX_OP_MIN] = S_R_MIN,
    [GX_OP_RELU] = S_R_RELU, [GX_OP_NEG] = S_R_NEG, [GX_OP_ABS] = S_R_ABS,
    [GX_OP_ROUND_F16] = S_R_RF16, [GX_OP_SIGMOID] = S_R_SIGMOID, [GX_OP_TANH] = S_R_TANH,
    [GX_OP_EXP] = S_R_EXP,         [GX_OP_ERF] = S_R_ERF,
};

/* One op of a run on a tile: its code; its operand from memory (the first
 * op: both) as a pointer with element stride 1, or 0 for a scalar; pos:
 * which input of the op the run's value is (0 or 1). */
typedef struct s_rop {
    int code, pos;
    const float *a, *b;
    int64_t sa, sb;
} s_rop;

/* The lane-by-lane expressions (macros: no function passes a vector by
 * value, which would tie it to a vector ABI). x is the op's input 0, z its
 * input 1; a select is t where m, else f.
 *
 * With two NaN operands, x86 returns its first source operand's (made
 * quiet), and the compiler may put either operand of a commutative + or *
 * first. The rows of ops/cpu/elementwise.c (and those above) come out
 * giving x's NaN, but z's where z is one value for the whole row; Add and
 * Mul here say so explicitly (a NaN v plus itself is v made quiet), so
 * that the NaN's bits too are those of the op alone. Sub and Div cannot
 * swap: x's. */
#define S_SEL(m, t, f) ((s_v)(((s_vi)(t) & (m)) | ((s_vi)(f) & ~(m))))
#define S_V_ADD(x, z) S_SEL((x) != (x), (x) + (x), (x) + (z))
#define S_V_ADD_ZW(x, z) S_SEL((z) != (z), (z) + (z), (x) + (z))
#define S_V_SUB(x, z) ((x) - (z))
#define S_V_MUL(x, z) S_SEL((x) != (x), (x) * (x), (x) * (z))
#define S_V_MUL_ZW(x, z) S_SEL((z) != (z), (z) * (z), (x) * (z))
#define S_V_DIV(x, z) ((x) / (z))
#define S_V_MAX(x, z) S_SEL((x) != (x), x, S_SEL((z) != (z), z, S_SEL((z) > (x), z, x)))
#define S_V_MIN(x, z) S_SEL((x) != (x), x, S_SEL((z) != (z), z, S_SEL((z) < (x), z, x)))
#define S_V_RELU(v) ((s_v)((s_vi)(v) & ~(s_vi)((v) < 0)))
#define S_V_NEG(v) (-(v))
#define S_V_ABS(v) ((s_v)((s_vi)(v) & 0x7fffffff))
/* RoundToFloat16: gx_f32_round_f16 lane by lane (the same integer and
 * float steps, selects for its conditions) */
#define S_V_RF16(v)                                                           \
    ({                                                                        \
        const s_vw x_ = (s_vw)(v), ax_ = x_ & 0x7fffffffu;                    \
        const s_v a_ = (s_v)ax_, sub_ = (a_ + 0.5f) - 0.5f;                   \
        const s_vw n_ = (ax_ + 0xfffu + ((ax_ >> 13) & 1u)) & 0xffffe000u;    \
        const s_vw inf_ = n_ * 0u + 0x7f800000u, nan_ = n_ * 0u + 0x7fc00000u; \
        s_v r_ = S_SEL((s_vi)(ax_ < 0x38800000u), sub_, (s_v)n_);             \
        r_ = S_SEL((s_vi)(ax_ >= 0x477ff000u), (s_v)inf_, r_);                \
        r_ = S_SEL((s_vi)(ax_ > 0x7f800000u), (s_v)nan_, r_);                 \
        (s_v)((s_vw)r_ | (x_ & 0x80000000u));                                 \
    })

static inline __attribute__((always_inline)) bool s_unary(int code)
{
    return code >= S_R_RELU;
}

/* Op q of a run on the strip acc at element i: the switch outside, the
 * loops over the strip unrolled so that acc stays in registers; w is the
 * operand from memory, a vector or one value in every lane. */
#define S_STRIP_LOOP(EXPR)                                                    \
    _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)                    \
    {                                                                         \
        s_v w;                                                                \
        if (q->sb) {                                                          \
            w = *(const s_vu *)(q->b + i + j * S_VL);                         \
        } else {                                                              \
            for (int l = 0; l < S_VL; l++)                                    \
                w[l] = *q->b;                                                 \
        }                                                                     \
        acc[j] = EXPR;                                                        \
    }
#define S_STRIP_BIN(CODE, EXPR)                                               \
    case CODE:                                                                \
        if (q->pos == 0) {                                                    \
            S_STRIP_LOOP(EXPR(acc[j], w))                                     \
        } else {                                                              \
            S_STRIP_LOOP(EXPR(w, acc[j]))                                     \
        }                                                                     \
        break
/* Add, Mul: z's NaN wins where z is one value (the op's input 1, not the
 * run's value) */
#define S_STRIP_COMM(CODE, EXPR, EXPR_ZW)                                     \
    case CODE:                                                                \
        if (q->pos == 0 && !q->sb) {                                          \
            S_STRIP_LOOP(EXPR_ZW(acc[j], w))                                  \
        } else if (q->pos == 0) {                                             \
            S_STRIP_LOOP(EXPR(acc[j], w))                                     \
        } else {                                                              \
            S_STRIP_LOOP(EXPR(w, acc[j]))                                     \
        }                                                                     \
        break
#define S_STRIP_UN(CODE, EXPR)                                                \
    case CODE:                                                                \
        _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)                \
            acc[j] = EXPR(acc[j]);                                            \
        break
/* The functions of vmath.h (those of the rows above) over the strip's
 * elements in a buffer in L1: a plain loop, which gcc vectorises */
#define S_STRIP_MATH(CODE, FN)                                                \
    case CODE: {                                                              \
        _Alignas(64) float t_[S_VN * S_VL];                                   \
        _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)                \
            *(s_v *)(t_ + j * S_VL) = acc[j];                                 \
        for (int l = 0; l < vn * S_VL; l++)                                   \
            t_[l] = FN(t_[l]);                                                \
        _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)                \
            acc[j] = *(const s_v *)(t_ + j * S_VL);                           \
        break;                                                                \
    }

#define s_v s_v8
#define s_vi s_vi8
#define s_vu s_vu8
#define s_vw s_vw8
#define S_VL 8
#define S_REGS s_run_regs8
#define S_REGS_ATTR GX_CPU_CLONES_256
#include "ops/cpu/fused_regs.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define s_v s_v16
#define s_vi s_vi16
#define s_vu s_vu16
#define s_vw s_vw16
#define S_VL 16
#define S_REGS s_run_regs16
#define S_REGS_ATTR __attribute__((target("avx512f")))
#include "ops/cpu/fused_regs.h"
#endif

/* The run r[0..n_r) over n elements into y, in the widest vectors the
 * GEMM's ISA has (the same bits in either). */
static void s_run_regs(const s_rop *r, int n_r, int64_t n, float *y)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (!strcmp(gx_cpu_gemm_isa(), "avx512")) {
        s_run_regs16(r, n_r, n, y);
        return;
    }
#endif
    s_run_regs8(r, n_r, n, y);
}

/* Temporaries are this far apart: not a multiple of 4 KiB, so that
 * reading one while writing the next does not alias in the CPU's
 * store-to-load check (which compares addresses modulo 4 KiB). */
#define S_STRIDE (GX_FUSED_TILE_BYTES + 5 * GX_ALIGN)

/* What the tiles of one call see: the views the ops read and write, set
 * up once; per tile only their length and data move (a 1-D view reads
 * only shape[0], a scalar nothing). */
typedef struct s_run {
    const gx_fused *f;
    const gx_view *in, *y;
    int n_src;
    int64_t tile, ey;
    s_in_kind kind[GX_FUSED_MAX_IN + 1];
    int slot[GX_FUSED_MAX_IN + 1];
    int64_t stride[GX_FUSED_MAX_GATHER][GX_MAX_DIMS];
    int64_t ex[GX_FUSED_MAX_IN + 1];
    gx_view src[GX_FUSED_MAX_IN + 1], tv[GX_FUSED_MAX_TMP], out, none;
    const gx_view *args[GX_FUSED_MAX_OPS][GX_FUSED_MAX_OP_IN];
    int run[GX_FUSED_MAX_OPS]; /* ops of the register run starting at op o, or 0 */
    unsigned char (*tmp)[S_STRIDE], (*gat)[S_STRIDE];
} s_run;

/* Can op o join a register run (float32 operands of the tile's length or
 * scalars, an op with an expression there)? */
static bool s_run_op(const gx_fused *f, const gx_view *in, const gx_view *y, int o)
{
    const gx_fused_op *op = &f->op[o];
    const int code = s_rcode[op->op];
    if (!code || op->n_in != (code >= S_R_RELU ? 1 : 2))
        return false;
    for (int k = 0; k < op->n_in; k++) {
        const int c = op->in[k];
        if (c == GX_FUSED_NONE || (c >= 0 && (c < f->n_in ? &in[c] : y)->dtype != GX_F32))
            return false;
    }
    return true;
}

/* The register runs of f (R->run): each a maximal run of two or more ops
 * that can join one, each op after the first reading the one before's
 * temporary as exactly one of its operands. */
static void s_runs(const gx_fused *f, const gx_view *in, const gx_view *y, s_run *R)
{
    memset(R->run, 0, sizeof R->run);
    if (f->dtype != GX_F32 || y->numel < S_RUN_MIN) /* no tile long enough */
        return;
    for (int o = 0; o < f->n_ops;) {
        int len = 0;
        while (o + len < f->n_ops && s_run_op(f, in, y, o + len)) {
            if (len > 0) {
                const gx_fused_op *prev = &f->op[o + len - 1], *e = &f->op[o + len];
                const int t = prev->out >= 0 ? GX_FUSED_TMP(prev->out) : GX_FUSED_NONE;
                int reads = 0;
                for (int k = 0; k < e->n_in; k++)
                    reads += e->in[k] == t;
                if (prev->out < 0 || reads != 1)
                    break;
            }
            len++;
        }
        if (len >= 2)
            R->run[o] = len;
        o += len > 0 ? len : 1;
    }
}

/* The ops over output elements [e_lo, e_hi), a tile at a time. */
static void s_tiles(void *ctx, int64_t e_lo, int64_t e_hi)
{
    s_run *R = ctx;
    const gx_fused *f = R->f;
    const gx_view *in = R->in, *y = R->y;
    const int64_t tile = R->tile, ey = R->ey;
    for (int64_t lo = e_lo; lo < e_hi; lo += tile) {
        const int64_t n = e_hi - lo < tile ? e_hi - lo : tile;
        for (int i = 0; i < R->n_src; i++) {
            switch (R->kind[i]) {
            case S_IN_SCALAR:
            case S_IN_UNUSED:
                continue;
            case S_IN_FULL:
                R->src[i].data = (char *)(i < f->n_in ? in[i].data : y->data) + lo * R->ex[i];
                break;
            case S_IN_GATHER:
                s_gather(y, &in[i], R->stride[R->slot[i]], lo, n, R->gat[R->slot[i]]);
                break;
            case S_IN_HEAD:
                memcpy(R->gat[R->slot[i]], (const char *)y->data + lo * ey, (size_t)(n * ey));
                break;
            }
            R->src[i].shape[0] = R->src[i].numel = n;
        }
        for (int k = 0; k < f->n_tmp; k++)
            R->tv[k].shape[0] = R->tv[k].numel = n;
        for (int o = 0; o < f->n_ops; o++) {
            const gx_fused_op *op = &f->op[o];
            if (R->run[o] && n >= S_RUN_MIN) { /* (a short tile: op by op is as fast) */
                s_rop r[GX_FUSED_MAX_OPS];
                const int n_r = R->run[o];
                for (int q = 0; q < n_r; q++) {
                    const gx_fused_op *e = &f->op[o + q];
                    const int pos = q == 0 || e->n_in == 1 ? 0
                                    : e->in[0] == GX_FUSED_TMP(f->op[o + q - 1].out) ? 0
                                                                                      : 1;
                    const gx_view *b = e->n_in == 2 ? R->args[o + q][1 - pos] : NULL;
                    r[q] = (s_rop){.code = s_rcode[e->op], .pos = pos,
                                   .a = R->args[o + q][0]->data,
                                   .sa = R->args[o + q][0]->numel == n,
                                   .b = b ? b->data : NULL, .sb = b && b->numel == n};
                }
                const gx_fused_op *e = &f->op[o + n_r - 1];
                s_run_regs(r, n_r, n,
                           e->out >= 0 ? (float *)R->tv[e->out].data
                                       : (float *)(void *)((char *)y->data + lo * ey));
                o += n_r - 1;
                continue;
            }
            gx_view a[GX_FUSED_MAX_OP_IN];
            for (int k = 0; k < op->n_in; k++)
                a[k] = *R->args[o][k];
            const gx_view *y_op = &R->out;
            if (op->out >= 0) {
                y_op = &R->tv[op->out];
            } else {
                R->out.shape[0] = R->out.numel = n;
                R->out.data = (char *)y->data + lo * ey;
            }
            if (f->dtype == GX_F32 && s_fast(op->op, op->n_in, a, n, y_op->data))
                continue;
            const gx_kargs ka = {.attr = op->attr, .n_in = op->n_in, .in = a, .n_out = 1,
                                 .out = y_op, .scratch = NULL, .ith = 0, .nth = 1};
            op->kernel(&ka);
        }
    }
}

/* With a head: runs its kernel's share ith of nth, writing those elements
 * of y, and the ops over them: Conv's after each block it writes
 * (gx_cpu_conv_epi; in NHWC or NCHW16c gx_cpu_conv_layout_epi, which
 * applies a lone Relu or Clip as it stores); MatMul's and Gemm's once the
 * share is done, over the rows it wrote (the kernels split their output's
 * rows with gx_cpu_share, alignment 1: MatMul's rows of all its matrices,
 * Gemm's rows). */
static void s_head(const gx_fused *f, const gx_view *in, const gx_view *y, void *scratch,
                   int ith, int nth, s_run *R)
{
    gx_view a[GX_FUSED_MAX_OP_IN];
    for (int k = 0; k < f->head.n_in; k++)
        a[k] = f->head.in[k] == GX_FUSED_NONE ? (gx_view){.ndim = -1} : in[f->head.in[k]];
    const gx_kargs ka = {.attr = f->head.attr, .n_in = f->head.n_in, .in = a, .n_out = 1,
                         .out = y, .scratch = scratch, .ith = ith, .nth = nth};
    if (f->head.op == GX_OP_CONV && f->head_layout == GX_LAYOUT_PLAIN) {
        gx_cpu_conv_epi(&ka, s_tiles, R);
        return;
    }
    if (f->head.op == GX_OP_CONV) { /* in another layout: ops/layout.h */
        gx_cpu_conv_layout_epi(f->head_layout, &ka, f, in, s_tiles, R);
        return;
    }
    f->head.kernel(&ka);
    if (gx_cpu_gemm_is_packed(f->head.kernel)) { /* rows, or some columns of every row */
        gx_gemm_block b;
        gx_cpu_gemm_packed_share(&ka, y, &b);
        if (b.c0 == 0 && b.c1 == b.n)
            s_tiles(R, b.r0 * b.n, b.r1 * b.n);
        else
            for (int64_t r = b.r0; r < b.r1; r++)
                s_tiles(R, r * b.n + b.c0, r * b.n + b.c1);
        return;
    }
    const int64_t n = y->ndim >= 1 ? y->shape[y->ndim - 1] : 1;
    int64_t r0 = 0, r1 = 0;
    if (n > 0)
        gx_cpu_share(&ka, y->numel / n, 1, &r0, &r1);
    s_tiles(R, r0 * n, r1 * n);
}

void gx_cpu_fused(const gx_fused *f, const gx_view *in, const gx_view *y, void *scratch, int ith,
                  int nth)
{
    _Alignas(GX_ALIGN) unsigned char tmp[GX_FUSED_MAX_TMP][S_STRIDE];
    _Alignas(GX_ALIGN) unsigned char gat[GX_FUSED_MAX_GATHER + 1][S_STRIDE];
    s_run R = {.f = f, .in = in, .y = y, .tmp = tmp, .gat = gat, .none = {.ndim = -1}};
    s_in_kind *kind = R.kind;
    int *slot = R.slot;
    size_t es = gx_dtype_size(y->dtype);
    int n_gather = 0;
    for (int i = 0; i < f->n_in; i++) {
        bool used = false;
        for (int o = 0; o < f->n_ops && !used; o++)
            for (int k = 0; k < f->op[o].n_in; k++)
                used = used || f->op[o].in[k] == i;
        slot[i] = -1;
        if (!used) {
            kind[i] = S_IN_UNUSED;
            continue;
        }
        size_t e = gx_dtype_size(in[i].dtype);
        es = e > es ? e : es;
        kind[i] = in[i].numel == y->numel ? S_IN_FULL
                  : in[i].numel == 1      ? S_IN_SCALAR
                                          : S_IN_GATHER;
        if (kind[i] == S_IN_GATHER) {
            if (n_gather == GX_FUSED_MAX_GATHER) { /* the fuse pass never builds one */
                fprintf(stderr, "%s:%d: fused group with too many broadcast inputs\n", __FILE__,
                        __LINE__);
                abort();
            }
            slot[i] = n_gather;
            gx_bcast_strides(y->ndim, in[i].ndim, in[i].shape, R.stride[n_gather++]);
        }
    }
    /* the head's product: operand n_in, y's tile read in place, or a copy
     * of it when the last op reads it (that op writes y's tile, and no
     * kernel's output may overlap its inputs) */
    R.n_src = f->n_in + (f->has_head ? 1 : 0);
    if (f->has_head) {
        const gx_fused_op *last = &f->op[f->n_ops - 1];
        bool copy = false;
        for (int k = 0; k < last->n_in; k++)
            copy = copy || last->in[k] == f->n_in;
        kind[f->n_in] = copy ? S_IN_HEAD : S_IN_FULL;
        slot[f->n_in] = GX_FUSED_MAX_GATHER;
    }
    R.tile = (int64_t)(GX_FUSED_TILE_BYTES / es);
    R.ey = (int64_t)gx_dtype_size(y->dtype);
    for (int i = 0; i < R.n_src; i++) {
        const gx_view *x = i < f->n_in ? &in[i] : y;
        R.ex[i] = (int64_t)gx_dtype_size(x->dtype);
        R.src[i] = (gx_view){.dtype = x->dtype, .ndim = kind[i] == S_IN_SCALAR ? 0 : 1,
                             .numel = 1, .data = x->data};
        if (kind[i] == S_IN_GATHER || kind[i] == S_IN_HEAD)
            R.src[i].data = gat[slot[i]];
    }
    for (int t = 0; t < f->n_tmp; t++)
        R.tv[t] = (gx_view){.dtype = f->dtype, .ndim = 1, .data = tmp[t]};
    R.out = (gx_view){.dtype = f->dtype, .ndim = 1};
    for (int o = 0; o < f->n_ops; o++)
        for (int k = 0; k < f->op[o].n_in; k++) {
            const int c = f->op[o].in[k];
            R.args[o][k] = c == GX_FUSED_NONE ? &R.none : c >= 0 ? &R.src[c] : &R.tv[-1 - c];
        }

    s_runs(f, in, y, &R);
    if (f->has_head) {
        s_head(f, in, y, scratch, ith, nth, &R);
    } else {
        const int64_t n_tiles = (y->numel + R.tile - 1) / R.tile;
        const int64_t e_hi = n_tiles * (ith + 1) / nth * R.tile;
        s_tiles(&R, n_tiles * ith / nth * R.tile, e_hi < y->numel ? e_hi : y->numel);
    }
}
