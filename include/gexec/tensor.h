/*
 * Tensors: a dtype, a shape and a dense row-major buffer the tensor owns.
 *
 *     int64_t shape[2] = {2, 3};
 *     gx_tensor *t = gx_tensor_new(GX_F32, 2, shape);
 *     float *p = gx_tensor_data(t);
 *     ...
 *     gx_tensor_destroy(&t);          // accepts NULL, sets t to NULL
 */
#ifndef GEXEC_TENSOR_H
#define GEXEC_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <gexec/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GX_MAX_DIMS 8

/* X(enum suffix, wire/YAML name, element size in bytes, numpy descr) */
#define GX_DTYPE_LIST(X)                                                      \
    X(F32, "float32", 4, "<f4")                                               \
    X(F16, "float16", 2, "<f2")                                               \
    X(BF16, "bfloat16", 2, NULL)                                              \
    X(F64, "float64", 8, "<f8")                                               \
    X(I64, "int64", 8, "<i8")                                                 \
    X(I32, "int32", 4, "<i4")                                                 \
    X(I8, "int8", 1, "|i1")                                                   \
    X(U8, "uint8", 1, "|u1")                                                  \
    X(BOOL, "bool", 1, "|b1")                                                 \
    X(I16, "int16", 2, "<i2")                                                 \
    X(U16, "uint16", 2, "<u2")                                                \
    X(U32, "uint32", 4, "<u4")                                                \
    X(U64, "uint64", 8, "<u8")                                                \
    X(STRING, "string", 8, NULL)

typedef enum gx_dtype {
#define GX_DTYPE_ENUM(e, name, size, descr) GX_##e,
    GX_DTYPE_LIST(GX_DTYPE_ENUM)
#undef GX_DTYPE_ENUM
    GX_DTYPE_COUNT
} gx_dtype;

/* "float32" etc.; NULL if dt is out of range. Static storage. */
GX_EXPORT const char *gx_dtype_name(gx_dtype dt);
/* Parse "float32" (also "f32"); returns GX_OK and sets *dt, or GX_EDTYPE. */
GX_EXPORT int gx_dtype_parse(const char *name, gx_dtype *dt);
/* Element size in bytes; 0 if dt is out of range. */
GX_EXPORT size_t gx_dtype_size(gx_dtype dt);

typedef struct gx_tensor gx_tensor;

/* A new zero-filled tensor. ndim in [0, GX_MAX_DIMS], dims >= 0.
 * Returns NULL on bad arguments, overflow or out of memory. Caller owns it. */
GX_EXPORT gx_tensor *gx_tensor_new(gx_dtype dt, int ndim, const int64_t *shape);
/* Like gx_tensor_new, then copies nbytes from data (must match the size). */
GX_EXPORT gx_tensor *gx_tensor_new_copy(gx_dtype dt, int ndim, const int64_t *shape,
                                        const void *data, size_t nbytes);
/* Frees the tensor and its buffer; accepts NULL and *t == NULL; sets *t = NULL. */
GX_EXPORT void gx_tensor_destroy(gx_tensor **t);

GX_EXPORT gx_dtype gx_tensor_dtype(const gx_tensor *t);
GX_EXPORT int gx_tensor_ndim(const gx_tensor *t);
/* Pointer to the tensor's ndim dims; valid while the tensor lives. */
GX_EXPORT const int64_t *gx_tensor_shape(const gx_tensor *t);
GX_EXPORT int64_t gx_tensor_numel(const gx_tensor *t);
GX_EXPORT size_t gx_tensor_nbytes(const gx_tensor *t);
/* The data buffer (64-byte aligned); owned by the tensor. */
GX_EXPORT void *gx_tensor_data(gx_tensor *t);
GX_EXPORT const void *gx_tensor_cdata(const gx_tensor *t);

/*
 * String tensors (GX_STRING, ONNX's STRING: docs/strings.md). Each element
 * is a byte string of any length and any bytes (UTF-8 by convention; not
 * NUL-terminated as far as its length goes, though a NUL always follows
 * it). An element is stored as a fixed-size handle (gx_dtype_size 8) that
 * the tensor's own string store backs, so read and write elements only
 * through these calls; gx_tensor_data of a string tensor is not for
 * clients. gx_tensor_new(GX_STRING, ...) holds empty strings.
 *
 *     const char *words[] = {"red", "green"};
 *     int64_t n = 2;
 *     gx_tensor *t = gx_tensor_new_strings(1, &n, words, NULL);
 *     size_t len;
 *     const char *s = gx_tensor_string(t, 1, &len);   // "green", 5
 */
/* A new string tensor of shape with numel elements: strs[i] of lens[i]
 * bytes (lens NULL: strlen of each; a NULL strs[i] is ""); the bytes are
 * copied. NULL on bad arguments, overflow or ENOMEM. Caller owns it. */
GX_EXPORT gx_tensor *gx_tensor_new_strings(int ndim, const int64_t *shape,
                                           const char *const *strs, const size_t *lens);
/* Element i (row-major) of a string tensor and its length in *len (may be
 * NULL); valid while the tensor lives and element i is not set again.
 * NULL if t is not a string tensor or i is out of range. */
GX_EXPORT const char *gx_tensor_string(const gx_tensor *t, int64_t i, size_t *len);
/* Sets element i of a string tensor to a copy of len bytes at s.
 * GX_OK, GX_EINVAL (not a string tensor, i out of range) or GX_ENOMEM. */
GX_EXPORT int gx_tensor_set_string(gx_tensor *t, int64_t i, const char *s, size_t len);

/*
 * Values that are not one tensor (ONNX sequence and optional values) travel
 * as gx_tensor handles too, of another kind: a sequence holds tensors of one
 * dtype (its items, each of its own shape); "none" is an optional value
 * without an element (an optional with one is its element). A sequence or
 * none has ndim 0, numel 0, nbytes 0 and no data.
 *
 *     gx_tensor *seq = gx_sequence_new(GX_F32);
 *     gx_sequence_append(seq, &t);            // takes ownership of t
 *     gx_request_add_input(rq, "s", seq);
 */
typedef enum gx_kind {
    GX_KIND_TENSOR,   /* a dense tensor */
    GX_KIND_SEQUENCE, /* a sequence of tensors */
    GX_KIND_NONE,     /* an optional value without an element */
    GX_KIND_COUNT
} gx_kind;

GX_EXPORT gx_kind gx_tensor_kind(const gx_tensor *t);
/* "tensor", "sequence", "none"; "?" out of range. Static storage. */
GX_EXPORT const char *gx_kind_name(gx_kind k);
/* An empty sequence of dt tensors. Caller owns it; NULL on ENOMEM or a
 * bad dtype. */
GX_EXPORT gx_tensor *gx_sequence_new(gx_dtype dt);
/* Appends *item (a tensor of the sequence's dtype; ownership moves in, also
 * on failure; *item is set to NULL). GX_EINVAL / GX_EDTYPE / GX_ENOMEM. */
GX_EXPORT int gx_sequence_append(gx_tensor *seq, gx_tensor **item);
/* Number of items of a sequence (0 for other kinds). */
GX_EXPORT size_t gx_sequence_length(const gx_tensor *seq);
/* Item i of a sequence, owned by it; NULL if i is out of range. */
GX_EXPORT gx_tensor *gx_sequence_item(const gx_tensor *seq, size_t i);
/* A new "none" (an optional without an element). Caller owns it. */
GX_EXPORT gx_tensor *gx_none_new(void);

#ifdef __cplusplus
}
#endif
#endif
