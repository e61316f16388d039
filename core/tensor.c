/* Dense tensors, dtypes and shape arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const struct {
    const char *name;
    size_t size;
} s_dtypes[] = {
#define GX_DTYPE_ROW(e, name, size, descr) {name, size},
    GX_DTYPE_LIST(GX_DTYPE_ROW)
#undef GX_DTYPE_ROW
};
_Static_assert(sizeof s_dtypes / sizeof s_dtypes[0] == GX_DTYPE_COUNT, "dtype table");

GX_EXPORT const char *gx_dtype_name(gx_dtype dt)
{
    return (unsigned)dt < GX_DTYPE_COUNT ? s_dtypes[dt].name : NULL;
}

GX_EXPORT size_t gx_dtype_size(gx_dtype dt)
{
    return (unsigned)dt < GX_DTYPE_COUNT ? s_dtypes[dt].size : 0;
}

GX_EXPORT int gx_dtype_parse(const char *name, gx_dtype *dt)
{
    static const char *const s_short[GX_DTYPE_COUNT] = {
        [GX_F32] = "f32", [GX_F16] = "f16", [GX_BF16] = "bf16", [GX_F64] = "f64",
        [GX_I64] = "i64", [GX_I32] = "i32", [GX_I8] = "i8",     [GX_U8] = "u8",
        [GX_BOOL] = "bool", [GX_I16] = "i16", [GX_U16] = "u16",  [GX_U32] = "u32",
        [GX_U64] = "u64", [GX_STRING] = "str",
    };
    if (!name)
        return GX_EDTYPE;
    for (int i = 0; i < GX_DTYPE_COUNT; i++) {
        if (strcmp(name, s_dtypes[i].name) == 0 || strcmp(name, s_short[i]) == 0) {
            *dt = (gx_dtype)i;
            return GX_OK;
        }
    }
    return GX_EDTYPE;
}

int64_t gx_shape_numel(int ndim, const int64_t *shape, int64_t limit)
{
    if (ndim < 0 || ndim > GX_MAX_DIMS)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] != 0 && n > limit / shape[i])
            return -1;
        n *= shape[i];
    }
    return n <= limit ? n : -1;
}

bool gx_shape_nbytes(gx_dtype dt, int ndim, const int64_t *shape, size_t *nbytes)
{
    size_t es = gx_dtype_size(dt);
    if (es == 0)
        return false;
    int64_t n = gx_shape_numel(ndim, shape, INT64_MAX / (int64_t)es);
    if (n < 0 || (uint64_t)n * es > SIZE_MAX / 2)
        return false;
    *nbytes = (size_t)n * es;
    return true;
}

char *gx_shape_str(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t off = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (ndim < 0) { /* a declaration of unknown rank */
        snprintf(buf, len, "of any shape");
        return buf;
    }
    off += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, i ? ",%lld" : "%lld",
                                (long long)shape[i]);
    if (off < len)
        snprintf(buf + off, len - off, "]");
    return buf;
}

void *gx_aligned_alloc(size_t nbytes)
{
    size_t n = (nbytes + GX_ALIGN - 1) / GX_ALIGN * GX_ALIGN;
    return aligned_alloc(GX_ALIGN, n ? n : GX_ALIGN);
}

gx_tensor *gx_tensor_adopt(gx_dtype dt, int ndim, const int64_t *shape, void *data)
{
    size_t nbytes;
    gx_tensor *t = NULL;
    if (ndim < 0 || ndim > GX_MAX_DIMS || (ndim > 0 && !shape) ||
        !gx_shape_nbytes(dt, ndim, shape, &nbytes) || !(t = calloc(1, sizeof *t))) {
        free(data);
        return NULL;
    }
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim > 0)
        memcpy(t->shape, shape, (size_t)ndim * sizeof shape[0]);
    t->numel = (int64_t)(nbytes / gx_dtype_size(dt));
    t->nbytes = nbytes;
    t->data = data;
    return t;
}

GX_EXPORT gx_tensor *gx_tensor_new(gx_dtype dt, int ndim, const int64_t *shape)
{
    size_t nbytes;
    if (ndim < 0 || ndim > GX_MAX_DIMS || (ndim > 0 && !shape) ||
        !gx_shape_nbytes(dt, ndim, shape, &nbytes))
        return NULL;
    void *data = gx_aligned_alloc(nbytes);
    if (!data)
        return NULL;
    memset(data, 0, nbytes);
    return gx_tensor_adopt(dt, ndim, shape, data);
}

GX_EXPORT gx_tensor *gx_tensor_new_copy(gx_dtype dt, int ndim, const int64_t *shape,
                                        const void *data, size_t nbytes)
{
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    if (t && t->nbytes != nbytes) {
        gx_tensor_destroy(&t);
        return NULL;
    }
    if (t && nbytes && dt == GX_STRING) { /* data: handles; the strings are copied */
        const gx_strrec *const *src = data;
        const gx_strrec **dst = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            bool ok;
            dst[i] = gx_tensor_str_add(t, gx_str_bytes(src[i]), gx_str_len(src[i]), &ok);
            if (!ok) {
                gx_tensor_destroy(&t);
                return NULL;
            }
        }
    } else if (t && nbytes) {
        memcpy(t->data, data, nbytes);
    }
    return t;
}

GX_EXPORT void gx_tensor_destroy(gx_tensor **t)
{
    if (!t || !*t)
        return;
    for (size_t i = 0; i < (*t)->n_items; i++)
        gx_tensor_destroy(&(*t)->items[i]);
    free((*t)->items);
    gx_tensor_strs_free(*t);
    free((*t)->data);
    free(*t);
    *t = NULL;
}

GX_EXPORT gx_dtype gx_tensor_dtype(const gx_tensor *t) { return t->dtype; }
GX_EXPORT int gx_tensor_ndim(const gx_tensor *t) { return t->ndim; }
GX_EXPORT const int64_t *gx_tensor_shape(const gx_tensor *t) { return t->shape; }
GX_EXPORT int64_t gx_tensor_numel(const gx_tensor *t) { return t->numel; }
GX_EXPORT size_t gx_tensor_nbytes(const gx_tensor *t) { return t->nbytes; }
GX_EXPORT void *gx_tensor_data(gx_tensor *t) { return t->data; }
GX_EXPORT const void *gx_tensor_cdata(const gx_tensor *t) { return t->data; }

GX_EXPORT gx_kind gx_tensor_kind(const gx_tensor *t) { return t->kind; }

GX_EXPORT const char *gx_kind_name(gx_kind k)
{
    static const char *const names[GX_KIND_COUNT] = {"tensor", "sequence", "none"};
    return (unsigned)k < GX_KIND_COUNT ? names[k] : "?";
}

GX_EXPORT gx_tensor *gx_sequence_new(gx_dtype dt)
{
    if ((unsigned)dt >= GX_DTYPE_COUNT)
        return NULL;
    gx_tensor *t = calloc(1, sizeof *t);
    if (t) {
        t->kind = GX_KIND_SEQUENCE;
        t->dtype = dt;
    }
    return t;
}

GX_EXPORT int gx_sequence_append(gx_tensor *seq, gx_tensor **item)
{
    int rc = GX_OK;
    if (!item || !*item || !seq || seq->kind != GX_KIND_SEQUENCE ||
        (*item)->kind != GX_KIND_TENSOR)
        rc = GX_EINVAL;
    else if ((*item)->dtype != seq->dtype)
        rc = GX_EDTYPE;
    else if (!gx_grow(&seq->items, &seq->cap_items, seq->n_items + 1, sizeof *seq->items))
        rc = GX_ENOMEM;
    if (rc < 0) {
        if (item)
            gx_tensor_destroy(item);
        return rc;
    }
    seq->items[seq->n_items++] = *item;
    *item = NULL;
    return GX_OK;
}

GX_EXPORT size_t gx_sequence_length(const gx_tensor *seq)
{
    return seq && seq->kind == GX_KIND_SEQUENCE ? seq->n_items : 0;
}

GX_EXPORT gx_tensor *gx_sequence_item(const gx_tensor *seq, size_t i)
{
    return seq && seq->kind == GX_KIND_SEQUENCE && i < seq->n_items ? seq->items[i] : NULL;
}

GX_EXPORT gx_tensor *gx_none_new(void)
{
    gx_tensor *t = calloc(1, sizeof *t);
    if (t) {
        t->kind = GX_KIND_NONE;
        t->dtype = GX_F32;
    }
    return t;
}

gx_tensor *gx_tensor_clone(const gx_tensor *t)
{
    if (t->kind == GX_KIND_TENSOR)
        return gx_tensor_new_copy(t->dtype, t->ndim, t->shape, t->data, t->nbytes);
    gx_tensor *c = t->kind == GX_KIND_NONE ? gx_none_new() : gx_sequence_new(t->dtype);
    for (size_t i = 0; c && i < t->n_items; i++) {
        gx_tensor *it = gx_tensor_clone(t->items[i]);
        if (!it || gx_sequence_append(c, &it) < 0)
            gx_tensor_destroy(&c);
    }
    return c;
}
