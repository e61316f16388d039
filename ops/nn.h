/*
 * Inside the nn family: the parameters of Resize/Upsample and Pad, worked
 * out once from a node's attributes and inputs. Both the schema (for the
 * output shape and the checks) and the CPU kernel (for the coordinates)
 * call the same setup, so the two cannot disagree.
 *
 *     gx_resize r;
 *     int rc = gx_resize_setup(ic, GX_OP_RESIZE, &r);   // in infer
 *     ...
 *     gx_resize_setup(&(gx_infer){...kernel's views...}, op, &r); // in the kernel
 */
#ifndef GX_OPS_NN_H
#define GX_OPS_NN_H

#include "ops/schema.h"

typedef enum gx_interp { GX_INTERP_NEAREST, GX_INTERP_LINEAR, GX_INTERP_CUBIC } gx_interp;

/* coordinate_transformation_mode: how an output index maps to an input
 * coordinate. */
typedef enum gx_coord {
    GX_COORD_HALF_PIXEL,
    GX_COORD_HALF_PIXEL_SYMMETRIC,
    GX_COORD_PYTORCH_HALF_PIXEL,
    GX_COORD_ALIGN_CORNERS,
    GX_COORD_ASYMMETRIC,
    GX_COORD_TF_HALF_PIXEL_FOR_NN,
    GX_COORD_TF_CROP_AND_RESIZE
} gx_coord;

/* nearest_mode, plus SIMPLE: Upsample and opset-10 Resize, which take the
 * floor when enlarging and the ceiling when shrinking (as onnxruntime). */
typedef enum gx_nearest {
    GX_NEAREST_ROUND_PREFER_FLOOR,
    GX_NEAREST_ROUND_PREFER_CEIL,
    GX_NEAREST_FLOOR,
    GX_NEAREST_CEIL,
    GX_NEAREST_SIMPLE
} gx_nearest;

/* Everything the kernel needs, per dim of X (dims not resized have scale 1
 * and roi [0, 1]). scale is the factor the coordinate transformation divides
 * by: the given scale, or out / in when sizes are given. */
typedef struct gx_resize {
    gx_interp mode;
    gx_coord coord;
    gx_nearest nearest;
    double cubic_a;
    bool exclude_outside;
    float extrapolation;
    int ndim;
    int64_t in[GX_MAX_DIMS], out[GX_MAX_DIMS];
    double scale[GX_MAX_DIMS];
    double roi_lo[GX_MAX_DIMS], roi_hi[GX_MAX_DIMS];
} gx_resize;

/* Resize (opset 10 form when it has exactly two inputs, X and scales; else
 * opset 11-19: X, roi, scales, sizes) or Upsample (scales as input, or as
 * the opset-7 attribute). Checks everything, fills r. GX_OK,
 * GX_INFER_DYNAMIC when scales/sizes/roi are not known yet, or an error
 * with a message in ic->err. Reads ic->attr, ic->n_in and ic->in only. */
int gx_resize_setup(gx_infer *ic, gx_op op, gx_resize *r);

typedef enum gx_pad_mode { GX_PAD_CONSTANT, GX_PAD_REFLECT, GX_PAD_EDGE, GX_PAD_WRAP } gx_pad_mode;

/* Pad, opset 2-10 (pads and value attributes) or 11+ (pads, constant_value
 * and axes inputs). begin/end are per dim of the data, negative to crop.
 * value holds the constant in the data's dtype (zero when none is given or
 * its value is not known yet: only the kernel reads it). */
typedef struct gx_pad {
    gx_pad_mode mode;
    int ndim;
    int64_t begin[GX_MAX_DIMS], end[GX_MAX_DIMS];
    unsigned char value[8];
} gx_pad;

/* Like gx_resize_setup, for Pad. */
int gx_pad_setup(gx_infer *ic, gx_pad *p);

/* Attention (opsets 23 and 24): softmax(Q Kᵀ · scale + mask) V per head,
 * with grouped K/V heads (query head h reads K/V head h / (q_heads /
 * kv_heads)), a KV cache (past_key and past_value, 4-D [B, kv_heads, past,
 * head], come before K and V; present_key and present_value are the two
 * together) and opset 24's nonpad_kv_seqlen (int64 [B]: keys from
 * nonpad_kv_seqlen[b] on are masked; clamped to [0, total] at run time). Q, K, V are 4-D [B, heads, seq, head]
 * or 3-D [B, seq, heads * head] with q_num_heads and kv_num_heads given;
 * Y has Q's form with V's head size. Element (b, h, i, d) of Q is at
 * b * q.sample + h * q.head + i * q.row + d, and so for K, V and Y: the
 * kernel reads rows in place either way. The mask is bool (false: masked)
 * or Q's dtype (added), broadcasting to [B, q_heads, q_seq, total] but
 * along the keys: a shorter last dim masks the keys past it (as the ONNX
 * reference pads it). qk_matmul_output (output 3) is not supported. */
#define GX_ATTENTION_MAX_HEAD 16384 /* Q's head size at most */

typedef struct gx_attn_strides {
    int64_t sample, head, row;
} gx_attn_strides;

typedef struct gx_attention {
    int64_t batch, q_heads, kv_heads, q_seq, kv_seq, head, v_head;
    int64_t past;  /* keys of past_key / past_value before K's (0: none) */
    int64_t total; /* past + kv_seq: the keys attended */
    gx_attn_strides q, k, v, y;
    double scale, softcap; /* softcap 0: none */
    bool causal;           /* key j > query i + offset masked (the offset: past, or
                            * nonpad_kv_seqlen[b] - q_seq without past, else 0) */
    bool has_mask, has_past, has_nonpad;
    int y_ndim;
    int64_t y_shape[4];
    int64_t present_k[4], present_v[4]; /* present_key, present_value: 4-D */
} gx_attention;

/* Like gx_resize_setup, for Attention. */
int gx_attention_setup(gx_infer *ic, gx_attention *a);

#endif
