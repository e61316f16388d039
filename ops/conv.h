/*
 * Inside the conv family: the sliding-window geometry that the schemas in
 * ops/schema_conv.c infer and the kernels in ops/cpu/conv.c and
 * ops/cpu/pool.c walk. A kernel recomputes its node's geometry from the same
 * attributes and shapes with err == NULL; infer already refused everything
 * that could fail, so it cannot fail there.
 *
 *     gx_win w;
 *     gx_win_init(&w, k->attr, &k->in[0], NULL, ceil_mode, NULL, 0);
 *     int64_t j0, j1;                      // taps of window o along dim d
 *     gx_win_taps(&w, d, o, &j0, &j1);
 */
#ifndef GX_OPS_CONV_H
#define GX_OPS_CONV_H

#include "ops/schema.h"

#define GX_WIN_MAX (GX_MAX_DIMS - 2)

/* x is [N, C, in...]; a window of k... taps spaced dil apart steps by stride
 * over x padded with pad_lo/pad_hi zeros (or -inf, or nothing) per spatial
 * dim and gives out... positions: out position o of dim d covers padded
 * coordinates o * stride - pad_lo + j * dil, j in [0, k). For ConvTranspose
 * the roles swap (gx_win_init_transpose): in... are y's dims and out... x's,
 * so that the same formula maps an x position and a tap to the y position
 * it adds to. */
typedef struct gx_win {
    int nsp; /* spatial dims: rank - 2 */
    int64_t in[GX_WIN_MAX], k[GX_WIN_MAX], out[GX_WIN_MAX];
    int64_t stride[GX_WIN_MAX], dil[GX_WIN_MAX], pad_lo[GX_WIN_MAX], pad_hi[GX_WIN_MAX];
    int64_t in_size, k_size, out_size; /* products over the spatial dims */
} gx_win;

/* Geometry of a Conv, ConvInteger or pool node from its GX_WIN_ attributes
 * and x: kshape gives the window (W's spatial dims) or, when NULL, the
 * kernel_shape attribute, which a conv then only has to match. ceil_mode
 * rounds the output size up (pools). Output sizes follow the ONNX formulas:
 * explicit pads, or auto_pad SAME_UPPER / SAME_LOWER (out = ceil(in /
 * stride), the odd padding at the end / start) or VALID (no padding). A pool
 * (pool == true) also needs every window to hold an element of x. GX_OK, or
 * GX_EATTR / GX_ESHAPE with a message prefixed by op. */
int gx_win_init(gx_win *w, const gx_attrval *attr, const char *op, const gx_view *x,
                const int64_t *kshape, bool ceil_mode, bool pool, char *err, size_t errlen);

/* Geometry of a ConvTranspose node (attributes GX_CONVTRANSPOSE_*) with x
 * [N, C, ...] and weights wt [C, M / group, k...]: y's spatial dims from
 * output_shape, or auto_pad SAME_* (x's times stride), or the pads and
 * output_padding. Same status and messages as gx_win_init. */
int gx_win_init_transpose(gx_win *w, const gx_attrval *attr, const gx_view *x, const gx_view *wt,
                          char *err, size_t errlen);

/* The taps [*j0, *j1) of out position o along dim d that land inside x
 * (the others fall into the padding); empty when *j0 >= *j1. */
static inline void gx_win_taps(const gx_win *w, int d, int64_t o, int64_t *j0, int64_t *j1)
{
    const int64_t start = o * w->stride[d] - w->pad_lo[d], dil = w->dil[d], in = w->in[d];
    int64_t a, b;
    if (dil == 1) { /* the common case, without divisions */
        a = start < 0 ? -start : 0;
        b = in - start;
    } else {
        a = start < 0 ? (-start + dil - 1) / dil : 0;
        b = start < in ? (in - start + dil - 1) / dil : 0;
    }
    if (b > w->k[d])
        b = w->k[d];
    *j0 = a;
    *j1 = a < b ? b : a;
}

/* Along the last spatial dim, out position o reads x element o * stride +
 * *c0 at tap t; [*a, *b) within [o0, o1) are the positions where that
 * element exists (a <= b). */
static inline void gx_win_inner(const gx_win *w, int64_t t, int64_t o0, int64_t o1, int64_t *c0,
                                int64_t *a, int64_t *b)
{
    const int last = w->nsp - 1;
    const int64_t s = w->stride[last], c = t * w->dil[last] - w->pad_lo[last];
    const int64_t in = w->in[last];
    int64_t lo = c >= 0 ? 0 : (-c + s - 1) / s;
    int64_t hi = in - c > 0 ? (in - c + s - 1) / s : 0;
    lo = lo < o0 ? o0 : lo;
    hi = hi > o1 ? o1 : hi;
    *c0 = c;
    *a = lo;
    *b = hi < lo ? lo : hi;
}

/* How the Conv kernel computes a node (and so whether it needs scratch):
 * a 1x1 window with stride 1 and no padding is one product per (image,
 * group) straight from x; a depthwise conv (one input channel per group and
 * several groups) runs directly, as each group's product would be a matrix
 * times a vector; everything else goes through im2col and sgemm. */
typedef enum gx_conv_path { GX_CONV_POINTWISE, GX_CONV_DEPTHWISE, GX_CONV_IM2COL } gx_conv_path;
gx_conv_path gx_conv_path_of(const gx_win *w, int64_t channels, int64_t group);

/* How many blocks the Conv kernel splits each group's output channels (mg
 * of them) into: 1 when the n images have enough output positions p per
 * group to share among threads by columns, else up to one per 128 channels,
 * so that late layers with few positions still give each thread a product
 * of useful size. The im2col path builds one copy of the columns per block,
 * each by the thread that uses it. */
int64_t gx_conv_row_blocks(int64_t n, int64_t group, int64_t mg, int64_t p);

/* Output positions of a tile of the im2col path, whose columns (cgk =
 * channels of a group x taps rows) one product reads from L2: about a
 * quarter of a plane of P positions (so a lone plane still splits four
 * ways), 64 to 1024, a multiple of 16, within a fixed budget. */
int64_t gx_conv_tile(int64_t p, int64_t cgk);

/* Floats of the im2col path's columns per image, for ng (group, block)
 * products of p positions each: a tile-sized region per unit (group,
 * block, tile), whether or not the last tile of a plane is whole. A
 * thread builds every tile it has in the region of its first unit, which
 * no other thread's unit owns, so the columns stay in its cache. */
int64_t gx_conv_col_floats(int64_t ng, int64_t p, int64_t cgk);

/* How many images' column buffers (per_image elements each: im2col for
 * Conv, the product before col2im for ConvTranspose) the kernel's scratch
 * holds at once, 1..n: the whole batch of n unless that would exceed a fixed
 * budget, then as many as fit. The kernel takes one such pass at a time. */
int64_t gx_conv_pass_images(int64_t n, int64_t per_image);

/* MaxUnpool's unpooled spatial dims before any output_shape: (in - 1) *
 * stride + kernel - pads per dim of x. The indices always address this
 * shape; a larger output_shape only adds zeros at the end of each dim. */
void gx_maxunpool_dims(const gx_attrval *attr, const gx_view *x, int64_t *dims);

/* Col2Im's geometry (opset 18) over n spatial dims: input [N, channels *
 * kprod, nblocks] of columns, output [N, channels, image...]; a block
 * starts at col * stride - pads[d] and its kernel offsets step by dil. */
typedef struct gx_col2im {
    int n;
    int64_t image[GX_MAX_DIMS], block[GX_MAX_DIMS], dil[GX_MAX_DIMS], stride[GX_MAX_DIMS];
    int64_t pads[2 * GX_MAX_DIMS]; /* begins, then ends */
    int64_t cols[GX_MAX_DIMS];     /* blocks along each dim */
    int64_t kprod, nblocks, channels;
} gx_col2im;

/* Checks Col2Im's inputs and attributes (image_shape and block_shape
 * values must be known) and fills g. GX_OK, GX_INFER_DYNAMIC, or an error
 * with a message in ic->err. Shared by the schema and the kernel. */
int gx_col2im_setup(gx_infer *ic, gx_col2im *g);

/* DeformConv's geometry (opset 19, 2-D only): X [n, c, h, w], W [m, c /
 * group, kh, kw], offset [n, og * kh * kw * 2, oh, ow] and the optional B
 * [m] and mask [n, og * kh * kw, oh, ow]; tap (ki, kj) of output (i, j)
 * samples X at (i * sh - ph + ki * dh, j * sw - pw + kj * dw) plus its
 * offset, bilinearly. */
typedef struct gx_deformconv {
    int64_t n, c, h, w, m, kh, kw, oh, ow;
    int64_t group, og, dh, dw, ph, pw, sh, sw;
    bool has_b, has_mask;
} gx_deformconv;

/* Checks DeformConv's inputs and attributes and fills g. GX_OK or an
 * error with a message in ic->err. Shared by the schema and the kernel. */
int gx_deformconv_setup(gx_infer *ic, gx_deformconv *g);

#endif
