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

bool gx_wire_is_value(gx_kind kind, gx_dtype dt)
{
    return kind != GX_KIND_TENSOR || dt == GX_STRING;
}

/* ---- string tensors: a msgpack array of str ---- */

static size_t s_arr_head(uint64_t n)
{
    return n < 16 ? 1 : n <= 0xffff ? 3 : 5;
}

static size_t s_str_head(uint64_t n)
{
    return n < 32 ? 1 : n <= 0xff ? 2 : n <= 0xffff ? 3 : 5;
}

/* Writes a msgpack head: marker bytes (fix | n, or tag8/16/32 and n). */
static unsigned char *s_put_head(unsigned char *p, uint64_t n, size_t head, unsigned fix,
                                 unsigned t8, unsigned t16, unsigned t32)
{
    switch (head) {
    case 1:
        *p++ = (unsigned char)(fix | n);
        break;
    case 2:
        *p++ = (unsigned char)t8;
        *p++ = (unsigned char)n;
        break;
    case 3:
        *p++ = (unsigned char)t16;
        *p++ = (unsigned char)(n >> 8);
        *p++ = (unsigned char)n;
        break;
    default:
        *p++ = (unsigned char)t32;
        for (int s = 24; s >= 0; s -= 8)
            *p++ = (unsigned char)(n >> s);
        break;
    }
    return p;
}

size_t gx_wire_strs_bytes(const gx_tensor *t)
{
    const gx_strrec *const *h = t->data;
    size_t n = s_arr_head((uint64_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++)
        n += s_str_head(gx_str_len(h[i])) + gx_str_len(h[i]);
    return n;
}

void *gx_wire_strs_write(const gx_tensor *t, void *dst)
{
    const gx_strrec *const *h = t->data;
    unsigned char *p = s_put_head(dst, (uint64_t)t->numel, s_arr_head((uint64_t)t->numel), 0x90,
                                  0, 0xdc, 0xdd);
    for (int64_t i = 0; i < t->numel; i++) {
        const size_t n = gx_str_len(h[i]);
        p = s_put_head(p, n, s_str_head(n), 0xa0, 0xd9, 0xda, 0xdb);
        if (n)
            memcpy(p, h[i]->bytes, n);
        p += n;
    }
    return p;
}

/* Reads a big-endian count of k bytes at *p (k bytes are there). */
static uint64_t s_be(const unsigned char *p, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v = v << 8 | p[i];
    return v;
}

int gx_wire_strs_read(gx_tensor *t, const void *data, size_t len, int64_t max_bytes,
                      size_t *used, const char *what, char *err, size_t errlen)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t n;
    int k;
    if (len < 1)
        return gx_errf(err, errlen, GX_EPROTO, "%s: a string tensor's data is empty", what);
    if ((*p & 0xf0) == 0x90)
        n = *p & 0x0f, k = 0;
    else if (*p == 0xdc || *p == 0xdd)
        k = *p == 0xdc ? 2 : 4, n = 0;
    else
        return gx_errf(err, errlen, GX_EPROTO,
                       "%s: a string tensor's data must be a msgpack array of str or bin", what);
    if ((size_t)(end - p) < 1 + (size_t)k)
        return gx_errf(err, errlen, GX_EPROTO, "%s: truncated string array", what);
    if (k)
        n = s_be(p + 1, k);
    p += 1 + k;
    if (n != (uint64_t)t->numel)
        return gx_errf(err, errlen, GX_ESHAPE, "%s: %llu strings, but the shape has %lld elements",
                       what, (unsigned long long)n, (long long)t->numel);
    const gx_strrec **h = t->data;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t sl;
        unsigned m = p < end ? *p : 0;
        if (p >= end)
            return gx_errf(err, errlen, GX_EPROTO, "%s: truncated at string %llu", what,
                           (unsigned long long)i);
        if ((m & 0xe0) == 0xa0)
            k = 0, sl = m & 0x1f;
        else if (m == 0xd9 || m == 0xc4)
            k = 1, sl = 0;
        else if (m == 0xda || m == 0xc5)
            k = 2, sl = 0;
        else if (m == 0xdb || m == 0xc6)
            k = 4, sl = 0;
        else
            return gx_errf(err, errlen, GX_EPROTO, "%s: element %llu is not a str or bin", what,
                           (unsigned long long)i);
        if ((size_t)(end - p) < 1 + (size_t)k)
            return gx_errf(err, errlen, GX_EPROTO, "%s: truncated at string %llu", what,
                           (unsigned long long)i);
        if (k)
            sl = s_be(p + 1, k);
        p += 1 + k;
        if (sl > (uint64_t)(end - p))
            return gx_errf(err, errlen, GX_EPROTO,
                           "%s: string %llu claims %llu bytes; %zu are left", what,
                           (unsigned long long)i, (unsigned long long)sl, (size_t)(end - p));
        total += sl;
        if (total > (uint64_t)max_bytes)
            return gx_errf(err, errlen, GX_ELIMIT,
                           "%s: its strings are larger than the tensor limit of %lld bytes", what,
                           (long long)max_bytes);
        bool ok;
        h[i] = gx_tensor_str_add(t, (const char *)p, (size_t)sl, &ok);
        if (!ok)
            return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", what);
        p += sl;
    }
    *used = (size_t)(p - (const unsigned char *)data);
    return GX_OK;
}

size_t gx_wire_value_bytes(const gx_tensor *t)
{
    size_t n = t->kind != GX_KIND_TENSOR ? 0
               : t->dtype == GX_STRING  ? gx_wire_strs_bytes(t)
                                        : t->nbytes;
    for (size_t i = 0; i < t->n_items; i++)
        n += t->items[i]->dtype == GX_STRING ? gx_wire_strs_bytes(t->items[i])
                                             : t->items[i]->nbytes;
    return n;
}

void gx_wire_value_write(const gx_tensor *t, void *dst)
{
    char *p = dst;
    if (t->kind == GX_KIND_TENSOR && t->dtype == GX_STRING)
        gx_wire_strs_write(t, p);
    else if (t->kind == GX_KIND_TENSOR && t->nbytes)
        memcpy(p, t->data, t->nbytes);
    for (size_t i = 0; i < t->n_items; i++) {
        if (t->items[i]->dtype == GX_STRING) {
            p = gx_wire_strs_write(t->items[i], p);
            continue;
        }
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
    if (kind == GX_KIND_TENSOR && dt == GX_STRING) {
        size_t used = 0;
        if (!(*out = gx_tensor_new(dt, ndim, shape))) {
            rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            goto fail;
        }
        if ((rc = gx_wire_strs_read(*out, data, len, max_bytes, &used, *name, err, errlen)) < 0)
            goto fail;
        if (used != len)
            rc = gx_errf(err, errlen, GX_EPROTO, "'%s': %zu bytes after its string array",
                         *name, len - used);
        goto done;
    }
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
        if (dt == GX_STRING) { /* its string array */
            gx_tensor *item = gx_shape_nbytes(dt, ndim, shape, &nbytes) &&
                                      nbytes <= (uint64_t)max_bytes
                                  ? gx_tensor_new(dt, ndim, shape)
                                  : NULL;
            size_t used = 0;
            if (!item)
                rc = gx_errf(err, errlen, GX_ELIMIT, "'%s': item %zu is larger than the limit",
                             *name, i);
            else
                rc = gx_wire_strs_read(item, (const char *)data + at, len - at,
                                       max_bytes > (int64_t)at ? max_bytes - (int64_t)at : 0, &used, *name, err, errlen);
            if (rc == GX_OK && gx_sequence_append(*out, &item) < 0)
                rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            gx_tensor_destroy(&item);
            if (rc < 0)
                goto fail;
            at += used;
            continue;
        }
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
