/*
 * Values that are not one tensor on the wire (docs/protocol.md, "Sequences
 * and optional values"): a sequence's descriptor lists its items' shapes
 * and its one frame holds their bytes back to back; "none" (an optional
 * without an element) has an empty frame. Tensors keep their descriptor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"

static void s_pack_dims(msgpack_packer *pk, int ndim, const int64_t *shape)
{
    msgpack_pack_array(pk, (size_t)ndim);
    for (int i = 0; i < ndim; i++)
        msgpack_pack_int64(pk, shape[i]);
}

void gx_wire_pack_value_desc(msgpack_packer *pk, const char *name, const gx_tensor *t)
{
    if (t->kind == GX_KIND_TENSOR) {
        gx_wire_pack_tensor_desc(pk, name, t->dtype, t->ndim, t->shape);
        return;
    }
    const bool seq = t->kind == GX_KIND_SEQUENCE;
    msgpack_pack_map(pk, seq ? 5 : 4);
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, name);
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, gx_dtype_name(t->dtype));
    gx_mp_pack_str(pk, "shape");
    msgpack_pack_array(pk, 0);
    gx_mp_pack_str(pk, "kind");
    gx_mp_pack_str(pk, seq ? "sequence" : "none");
    if (seq) {
        gx_mp_pack_str(pk, "items");
        msgpack_pack_array(pk, t->n_items);
        for (size_t i = 0; i < t->n_items; i++)
            s_pack_dims(pk, t->items[i]->ndim, t->items[i]->shape);
    }
}

size_t gx_wire_value_bytes(const gx_tensor *t)
{
    size_t n = t->kind == GX_KIND_TENSOR ? t->nbytes : 0;
    for (size_t i = 0; i < t->n_items; i++)
        n += t->items[i]->nbytes;
    return n;
}

void gx_wire_value_write(const gx_tensor *t, void *dst)
{
    char *p = dst;
    if (t->kind == GX_KIND_TENSOR && t->nbytes)
        memcpy(p, t->data, t->nbytes);
    for (size_t i = 0; i < t->n_items; i++) {
        if (t->items[i]->nbytes)
            memcpy(p, t->items[i]->data, t->items[i]->nbytes);
        p += t->items[i]->nbytes;
    }
}

int gx_wire_desc_kind(const msgpack_object *o, const char *what, gx_kind *kind, char *err,
                      size_t errlen)
{
    const msgpack_object *k = gx_mp_find(o, "kind");
    *kind = GX_KIND_TENSOR;
    if (!k || gx_mp_streq(k, "tensor"))
        return GX_OK;
    if (gx_mp_streq(k, "sequence"))
        *kind = GX_KIND_SEQUENCE;
    else if (gx_mp_streq(k, "none"))
        *kind = GX_KIND_NONE;
    else
        return gx_errf(err, errlen, GX_EPROTO,
                       "%s.kind: expected \"tensor\", \"sequence\" or \"none\"", what);
    return GX_OK;
}

/* Item i's shape from the descriptor's items array. */
static int s_item_shape(const msgpack_object *it, const char *what, size_t i, int *ndim,
                        int64_t *shape, char *err, size_t errlen)
{
    if (it->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(err, errlen, GX_EPROTO, "%s.items[%zu]: expected an array of ints", what, i);
    if (it->via.array.size > GX_MAX_DIMS)
        return gx_errf(err, errlen, GX_ELIMIT, "%s.items[%zu]: %u dims (at most %d)", what, i,
                       it->via.array.size, GX_MAX_DIMS);
    *ndim = (int)it->via.array.size;
    for (int d = 0; d < *ndim; d++) {
        char path[GX_WIRE_MAX_NAME + 64];
        snprintf(path, sizeof path, "%s.items[%zu][%d]", what, i, d);
        int rc = gx_mp_int(&it->via.array.ptr[d], path, 0, INT64_MAX, &shape[d], err, errlen);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

int gx_wire_unpack_value(const msgpack_object *o, const char *what, int64_t max_bytes,
                         const void *data, size_t len, char **name, gx_tensor **out, char *err,
                         size_t errlen)
{
    gx_dtype dt;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    size_t nbytes;
    gx_kind kind;
    *out = NULL;
    int rc = gx_wire_unpack_tensor_desc(o, what, max_bytes, name, &dt, &ndim, shape, &nbytes,
                                        err, errlen);
    if (rc == GX_OK)
        rc = gx_wire_desc_kind(o, what, &kind, err, errlen);
    if (rc < 0)
        goto fail;
    if (kind == GX_KIND_TENSOR) {
        if (len != nbytes) {
            rc = gx_errf(err, errlen, GX_EPROTO, "'%s': its frame has %zu bytes but dtype and shape need %zu",
                         *name, len, nbytes);
            goto fail;
        }
        if (!(*out = gx_tensor_new_copy(dt, ndim, shape, data, nbytes)))
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto done;
    }
    if (!(*out = kind == GX_KIND_NONE ? gx_none_new() : gx_sequence_new(dt))) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto fail;
    }
    if (kind == GX_KIND_NONE)
        (*out)->dtype = dt;
    const msgpack_object *items = gx_mp_find(o, "items");
    if (kind == GX_KIND_SEQUENCE && (!items || items->type != MSGPACK_OBJECT_ARRAY)) {
        rc = gx_errf(err, errlen, GX_EPROTO, "%s.items: a sequence needs an array of shapes", what);
        goto fail;
    }
    size_t at = 0, n = kind == GX_KIND_SEQUENCE ? items->via.array.size : 0;
    for (size_t i = 0; i < n; i++) {
        if ((rc = s_item_shape(&items->via.array.ptr[i], what, i, &ndim, shape, err, errlen)) < 0)
            goto fail;
        if (!gx_shape_nbytes(dt, ndim, shape, &nbytes) || nbytes > len - at ||
            at + nbytes > (uint64_t)max_bytes) {
            rc = gx_errf(err, errlen, GX_EPROTO,
                         "'%s': item %zu does not fit in the frame's %zu bytes (or the limit of %lld)",
                         *name, i, len, (long long)max_bytes);
            goto fail;
        }
        gx_tensor *item = gx_tensor_new_copy(dt, ndim, shape, (const char *)data + at, nbytes);
        if (!item || gx_sequence_append(*out, &item) < 0) {
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto fail;
        }
        at += nbytes;
    }
    if (at != len) {
        rc = gx_errf(err, errlen, GX_EPROTO, "'%s': its frame has %zu bytes but its items need %zu",
                     *name, len, at);
        goto fail;
    }
done:
    if (rc == GX_OK)
        return rc;
fail:
    gx_tensor_destroy(out);
    free(*name);
    *name = NULL;
    return rc;
}
