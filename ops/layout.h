/*
 * Memory layouts of 4-D float32 tensors (seed 001). A value's logical shape
 * is ONNX's [N, C, H, W]; the compiler's layout pass may store it in
 * another layout, and then the plan keeps its physical shape in
 * gx_view.shape and the layout in gx_view.layout:
 *
 *   GX_LAYOUT_PLAIN    [N, C, H, W]             row-major
 *   GX_LAYOUT_NHWC     [N, H, W, C]
 *   GX_LAYOUT_NCHW16C  [N, C/16, H, W, 16]      C a multiple of 16 (no padding)
 *
 * Element counts are the same in every layout, so an elementwise kernel
 * runs unchanged on same-shaped tensors of one layout, and a per-channel
 * constant broadcasts once reordered ([1,C,1,1] -> [1,1,1,C] or
 * [1,C/16,1,1,16]). Axis 0 stays the batch in every layout (seed 002's
 * slices cut it).
 *
 * Layout-sensitive ops have a kernel per layout they accept
 * (gx_cpu_layout_kernel); it reads the physical shapes of its views and
 * derives the node's logical geometry from them. A Conv's weights are
 * packed for its layout once, when the plan is built (gx_cpu_conv_pack).
 *
 *     gx_view x = {.dtype = GX_F32, .ndim = 4, .shape = {1, 32, 8, 8}, ...};
 *     gx_view p = gx_layout_physical(GX_LAYOUT_NCHW16C, &x); // [1, 2, 8, 8, 16]
 *     gx_layout_reorder(&x, &p, 0, 1);                       // p.data = x.data reordered
 */
#ifndef GX_OPS_LAYOUT_H
#define GX_OPS_LAYOUT_H

#include "ops/op.h"

#define GX_LAYOUT_BLOCK 16 /* channels per block of GX_LAYOUT_NCHW16C */

/* "nchw", "nhwc", "nchw16c"; static storage. */
const char *gx_layout_name(gx_layout l);

/* Can a value of this logical (plain) view be stored in layout l? float32,
 * rank 4, and for the blocked layout C a multiple of GX_LAYOUT_BLOCK.
 * Always true for GX_LAYOUT_PLAIN. */
bool gx_layout_fits(gx_layout l, const gx_view *logical);

/* The view of a logical (plain) tensor stored in layout l (which must fit):
 * physical shape, layout l, same dtype, numel and data pointer. */
gx_view gx_layout_physical(gx_layout l, const gx_view *logical);

/* The logical (plain) view of v: its shape in ONNX's order, layout plain,
 * same data pointer (the bytes stay where they are). */
gx_view gx_layout_logical(const gx_view *v);

/* Logical [N, C, H, W] of a physical view v of layout v->layout (dims[4]). */
void gx_layout_dims(const gx_view *v, int64_t dims[4]);

/* y = x in y's layout, share ith of nth: x and y are views of the same
 * logical tensor (any layouts, data set, not overlapping). Copies bytes
 * only, so any dtype works. */
void gx_layout_reorder(const gx_view *x, const gx_view *y, int ith, int nth);

/* A per-channel or scalar operand c of an elementwise op whose other
 * operand is a 4-D tensor of logical shape [N, C, H, W] in layout l: does c
 * broadcast to it in layout l once reordered (scalars, [C, 1, 1],
 * [1, C, 1, 1], ... and c of the full shape do)? If so and out is not NULL,
 * *out gets the physical shape c takes (data NULL): c's values in that
 * shape are gx_layout_operand_fill's. */
bool gx_layout_operand(gx_layout l, const gx_view *c, const int64_t nchw[4], gx_view *out);
/* Write c's values into out->data in the shape gx_layout_operand gave. */
void gx_layout_operand_fill(gx_layout l, const gx_view *c, const int64_t nchw[4],
                            const gx_view *out);

/* ---- CPU kernels per layout (ops/cpu/) ---- */

/* The CPU kernel of the node (ic: its attributes and logical input views,
 * outputs inferred) for inputs and outputs in layout l, or NULL (then why
 * says why not, "nhwc: MaxPool with Indices"). Plain gives
 * gx_cpu_kernel(op) for every op. Layout-sensitive ops: Conv (float32, 2-D,
 * constant weights), MaxPool, AveragePool, GlobalAveragePool,
 * GlobalMaxPool, BatchNormalization (inference). Elementwise ops need no
 * kernel of their own (see above). */
gx_kernel_fn gx_cpu_layout_kernel(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                  size_t len);

/* The time of op's kernel in layout l relative to plain (1.0) for the
 * node ic (whose kernel exists in l): the layout pass scales the schema's
 * estimate, or a time measured in another layout, by these. Measured on
 * one AVX-512 core by bench/bench_layout_ops and the pool kernels'
 * timings; a Conv's are raised where AVX-512 is missing (ops/layout.c). */
double gx_cpu_layout_factor(gx_op op, gx_layout l, const gx_infer *ic);

/* The layout in which op's kernel for layout l reads its input k (ic as
 * for gx_cpu_layout_kernel): l for every input, but a Conv's x where
 * gx_cpu_conv_layout_input says otherwise. The layout pass reorders each
 * input into this layout. */
gx_layout gx_cpu_layout_input(gx_op op, gx_layout l, const gx_infer *ic, int k);

/* Does op have kernels in layouts other than plain (Conv, the pools,
 * BatchNormalization)? Elementwise ops follow any layout without kernels
 * of their own. */
bool gx_layout_sensitive(gx_op op);

/* Kernel of the reorder steps the layout pass inserts: in[0] to out[0]
 * (gx_layout_reorder over their views' layouts). */
void gx_cpu_reorder(const gx_kargs *k);

/* Conv in a layout (ops/cpu/conv_layout.c). gx_cpu_conv_layout: the
 * kernel for layout l (not plain) or NULL with why. Its input 1 is the
 * weights packed by gx_cpu_conv_pack: pack_shape fills *packed's dtype,
 * ndim, shape, numel (data untouched) from the logical weights w; pack
 * writes packed->data. Its input 0 is a physical view in the layout
 * gx_cpu_conv_layout_input gives, its output one of layout l, its input 2
 * the plain bias [M] or omitted. */
gx_kernel_fn gx_cpu_conv_layout(gx_layout l, const gx_infer *ic, char *why, size_t len);
/* Share ith of k->nth of that kernel (the same elements, the same bits)
 * as the head of the fused group f (ops/fused.h) whose inputs are in: a
 * Relu or Clip of its product that is f's only op (float32 scalar or
 * absent bounds) is applied to each output element as it is stored, and
 * then epi is not called; otherwise epi(ctx, lo, hi) runs on each range of
 * output elements as soon as it is written (a row of a block, positions
 * of an NHWC row; together they tile the share's
 * gx_cpu_conv_layout_rows). f NULL: epi alone. */
struct gx_fused;
void gx_cpu_conv_layout_epi(gx_layout l, const gx_kargs *k, const struct gx_fused *f,
                            const gx_view *in, void (*epi)(void *ctx, int64_t lo, int64_t hi),
                            void *ctx);
/* The layout the Conv kernel for l reads x in: l, but NCHW for a group-1
 * Conv in NCHW16c whose C is not a multiple of 16, or in NHWC with at most
 * 4 (a network's first conv reads the image as it arrives). */
gx_layout gx_cpu_conv_layout_input(gx_layout l, const gx_infer *ic);
void gx_cpu_conv_pack_shape(gx_layout l, const gx_attrval *attr, const gx_view *w,
                            gx_view *packed);
void gx_cpu_conv_pack(gx_layout l, const gx_attrval *attr, const gx_view *w,
                      const gx_view *packed);
/* Packed weights, both layouts: shape [kh, kw, C, Mp] (M rounded up to a
 * multiple of 16), stored as Mp / 16 blocks of [kh][kw][C][16] (zeros past
 * M): the GEMM's B [kh * kw * C, M] in panels (ops/gemm.h). Depthwise
 * (group == C == M; W [M, 1, kh, kw]): [kh, kw, 1, Mp], blocks of
 * [kh][kw][16]. attr: the node's resolved attributes (the group).
 *
 * Bytes of scratch the node's kernel in layout l needs (like a schema's
 * scratch(): for the whole node, shared by all shares; ic as for
 * gx_cpu_conv_layout): none, the kernels run directly. */
size_t gx_cpu_conv_layout_scratch(gx_layout l, const gx_infer *ic);
/* Shares of an NHWC Conv that get work: shares ith >= this (of any nth)
 * get none, which bounds the scratch whatever nth is at run time. */
#define GX_CONV_LAYOUT_SHARES 64
/* The element range [*lo, *hi) of the physical output y (layout l) that
 * share ith of nth of the Conv kernel writes, contiguous; the shares of
 * one nth tile the output. NHWC: output positions (n, oh, ow) in chunks
 * of 8, times all M; NCHW16c: whole rows (n, m-block, oh) of ow * 16. */
void gx_cpu_conv_layout_rows(gx_layout l, const gx_view *y, int ith, int nth, int64_t *lo,
                             int64_t *hi);

/* Pools and BatchNormalization in a layout (ops/cpu/pool_layout.c): the
 * kernel of op for layout l (not plain) or NULL with why. Input 0 and
 * output 0 are physical views of layout l; BatchNormalization's scale,
 * bias, mean and var stay plain [C]. */
gx_kernel_fn gx_cpu_pool_layout(gx_op op, gx_layout l, const gx_infer *ic, char *why,
                                size_t len);

/* Concat in NHWC or NCHW16c (ops/cpu/shape.c): the plain kernel along the
 * physical axis that holds the logical one; every input must fit the
 * layout (float32, 4-D, NCHW16c: channels a multiple of 16). NULL with why
 * otherwise. */
gx_kernel_fn gx_cpu_concat_layout(gx_layout l, const gx_infer *ic, char *why, size_t len);

/* Resize (nearest, N and C kept) in NHWC (ops/cpu/resize.c): whole pixels
 * of C floats copied; the same bytes as in NCHW. NULL with why otherwise. */
gx_kernel_fn gx_cpu_resize_layout(gx_layout l, const gx_infer *ic, char *why, size_t len);

/* QLinearConv in NHWC bytes (ops/cpu/qconv_layout.c): the kernel for
 * layout l or NULL with why. 1x1 (group 1, no padding) and depthwise
 * windows with constant weights, where AVX-512 (and VNNI for 1x1) runs.
 * Its input 3 is W packed by the qgemm pack (ops/qgemm.h, the prepare
 * pass), inputs 0 and output 0 physical NHWC views. */
gx_kernel_fn gx_cpu_qconv_layout(gx_layout l, const gx_infer *ic, char *why, size_t len);
/* That kernel, whatever the node (ops/cpu/names.c names it). */
gx_kernel_fn gx_cpu_qconv_layout_fn(void);

#endif
