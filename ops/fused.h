/*
 * A fused group of elementwise ops (the compiler's fuse pass builds it):
 * a small program of ops over one output shape, run tile by tile by
 * gx_cpu_fused so that intermediate values live only in cache-sized
 * temporaries. Each op runs its own CPU kernel on the tile (or the same
 * expression; a chain of cheap float32 ops in registers, ops/cpu/fused.c),
 * so a fused group computes exactly what its ops compute one by one.
 *
 *   gx_fused f = {.n_in = 2, .n_ops = 2, .n_tmp = 1, .dtype = GX_F32};
 *   f.op[0] = (gx_fused_op){GX_OP_ADD, gx_cpu_kernel(GX_OP_ADD), .n_in = 2,
 *                           .in = {0, 1}, .out = 0};          // t0 = in0 + in1
 *   f.op[1] = (gx_fused_op){GX_OP_RELU, gx_cpu_kernel(GX_OP_RELU), .n_in = 1,
 *                           .in = {GX_FUSED_TMP(0)}, .out = -1}; // y = relu(t0)
 *   gx_cpu_fused(&f, in, &y, NULL, ith, nth);
 */
#ifndef GX_OPS_FUSED_H
#define GX_OPS_FUSED_H

#include "ops/op.h"

#define GX_FUSED_MAX_OPS 32    /* ops in one group */
#define GX_FUSED_MAX_IN 16     /* the group's inputs (and a head's product) */
#define GX_FUSED_MAX_OP_IN 8   /* inputs of one op in a group */
#define GX_FUSED_MAX_TMP 8     /* temporaries live at once */
#define GX_FUSED_MAX_GATHER 4  /* inputs neither scalar nor of the output's shape */
#define GX_FUSED_TILE_BYTES 8192 /* one temporary: a tile of the output */

/* Operand codes of a fused op: i >= 0 is the group's input i,
 * GX_FUSED_TMP(t) temporary t, GX_FUSED_NONE an omitted optional input. */
#define GX_FUSED_TMP(t) (-1 - (t))
#define GX_FUSED_NONE INT32_MIN

typedef struct gx_fused_op {
    gx_op op;
    gx_kernel_fn kernel;
    int n_in;
    int in[GX_FUSED_MAX_OP_IN];   /* operand codes */
    int out;                      /* temporary it writes; -1: the group's output */
    gx_attrval attr[GX_MAX_ATTRS]; /* resolved attributes (borrowing from the graph) */
} gx_fused_op;

/* Every op's output has the group's output shape and dtype; the group's
 * inputs broadcast to it (numpy rules); ops run in order, the last one
 * writes the output.
 *
 * An epilogue group has a head: a MatMul (both operands of rank >= 2), a
 * Gemm, or a float32 Conv (in the plain layout its CPU kernel
 * gx_cpu_conv_epi, in another its kernel for that layout, ops/layout.h)
 * producing a value of the output's shape and dtype, which its kernel
 * writes straight into the output: MatMul and Gemm a share's rows at a
 * time, and a Conv in NHWC or NCHW16c a share's contiguous rows
 * (gx_cpu_conv_layout_rows), after which the ops run over them; a plain
 * Conv a block of output channels and positions at a time, the ops
 * running over each block as soon as it is written, while it is in
 * cache. The ops read
 * the product as operand n_in (one past the group's inputs). */
typedef struct gx_fused {
    int n_in, n_ops, n_tmp;
    gx_dtype dtype;
    bool has_head;
    gx_fused_op head; /* its in[] are group inputs or GX_FUSED_NONE; out unused */
    gx_layout head_layout; /* a Conv head's layout: other than plain, its
                            * kernel's share ith writes the contiguous
                            * elements gx_cpu_conv_layout_rows gives */
    gx_fused_op op[GX_FUSED_MAX_OPS];
} gx_fused;

/* Share ith of nth of the group's work: whole tiles, or with a head the
 * elements its kernel's share ith writes (then the ops run on them). Reads
 * in[0..n_in), writes y; scratch is the head's scratch memory (its
 * schema's scratch() bytes; NULL when it has none). Never allocates,
 * never fails; y does not overlap an input. */
void gx_cpu_fused(const gx_fused *f, const gx_view *in, const gx_view *y, void *scratch, int ith,
                  int nth);

/* An epilogue: output elements [lo, hi) of the head are written. */
typedef void (*gx_fused_epi_fn)(void *ctx, int64_t lo, int64_t hi);

/* Conv's CPU kernel (float32, plain layout) with an epilogue: the same
 * share ith of k->nth, computing the same bits, and after each block of
 * output it finishes, epi on each run of elements of the block (blocks
 * of one share never overlap; together they are the share). epi NULL:
 * gx_cpu_CONV. */
void gx_cpu_conv_epi(const gx_kargs *k, gx_fused_epi_fn epi, void *ctx);

#endif
