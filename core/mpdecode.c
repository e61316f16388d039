/* msgpack decoding for hostile input: see mpdecode.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/mpdecode.h"

int gx_mp_errf(char *err, size_t errlen, int status, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* Upper bound on msgpack objects in one message: msgpack-c allocates one
 * object (24 bytes) per element, so this caps what a header can make it
 * allocate (~100 MiB). Graphs with 10^5 nodes stay far below it. */
#define GX_MP_MAX_OBJECTS (1u << 22)

static uint64_t s_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

int gx_mp_check(const void *buf, size_t len, int max_depth, char *err, size_t errlen)
{
    const uint8_t *p = buf, *end = p + len;
    uint64_t stack[GX_MP_MAX_DEPTH + 1]; /* elements left in each open container */
    int depth = 0;
    uint64_t pending = 1, objects = 0;
    if (max_depth > GX_MP_MAX_DEPTH)
        max_depth = GX_MP_MAX_DEPTH;
    stack[0] = 1;
    if (!buf || len == 0)
        return gx_mp_errf(err, errlen, GX_EPROTO, "empty message");
    while (depth >= 0) {
        if (stack[depth] == 0) {
            depth--;
            continue;
        }
        stack[depth]--;
        pending--;
        if (p >= end)
            return gx_mp_errf(err, errlen, GX_EPROTO, "truncated msgpack (%zu bytes)", len);
        if (++objects > GX_MP_MAX_OBJECTS)
            return gx_mp_errf(err, errlen, GX_ELIMIT, "message has more than %u msgpack objects",
                           GX_MP_MAX_OBJECTS);
        uint8_t b = *p++;
        uint64_t skip = 0, count = 0; /* payload bytes; child elements */
        int lenbytes = 0;
        bool container = false;
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
        } else if (b >= 0x80 && b <= 0x8f) {
            count = 2u * (b & 0x0f), container = true;
        } else if (b >= 0x90 && b <= 0x9f) {
            count = b & 0x0f, container = true;
        } else if (b >= 0xa0 && b <= 0xbf) {
            skip = b & 0x1f;
        } else {
            switch (b) {
            case 0xc4: case 0xd9: lenbytes = 1; break;
            case 0xc5: case 0xda: lenbytes = 2; break;
            case 0xc6: case 0xdb: lenbytes = 4; break;
            case 0xca: skip = 4; break;
            case 0xcb: skip = 8; break;
            case 0xcc: case 0xd0: skip = 1; break;
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xdc: case 0xde: lenbytes = 2, container = true; break;
            case 0xdd: case 0xdf: lenbytes = 4, container = true; break;
            default:
                return gx_mp_errf(err, errlen, GX_EPROTO,
                               "unsupported msgpack type byte 0x%02x at offset %zu", b,
                               (size_t)(p - 1 - (const uint8_t *)buf));
            }
            if (lenbytes) {
                if (end - p < lenbytes)
                    return gx_mp_errf(err, errlen, GX_EPROTO, "truncated msgpack length");
                uint64_t n = s_be(p, lenbytes);
                p += lenbytes;
                if (container)
                    count = (b == 0xde || b == 0xdf) ? 2 * n : n;
                else
                    skip = n;
            }
        }
        if (skip > (uint64_t)(end - p))
            return gx_mp_errf(err, errlen, GX_EPROTO, "truncated msgpack: %llu bytes announced, %zu left",
                           (unsigned long long)skip, (size_t)(end - p));
        p += skip;
        if (container && depth + 1 > max_depth) /* empty containers count too */
            return gx_mp_errf(err, errlen, GX_EPROTO, "msgpack nested deeper than %d", max_depth);
        if (container && count > 0) {
            pending += count;
            if (pending > (uint64_t)(end - p))
                return gx_mp_errf(err, errlen, GX_EPROTO,
                               "msgpack container announces %llu elements but only %zu bytes remain",
                               (unsigned long long)count, (size_t)(end - p));
            stack[++depth] = count;
        }
    }
    if (p != end)
        return gx_mp_errf(err, errlen, GX_EPROTO, "%zu trailing bytes after the msgpack object",
                       (size_t)(end - p));
    return GX_OK;
}

/*
 * Decode one object that gx_wire_check accepted, advancing *p: the same
 * objects msgpack-c makes (integers >= 0 are POSITIVE_INTEGER, float32 is
 * FLOAT32 widened to f64, empty containers have a NULL ptr, strings and
 * binaries point into the buffer), allocated from z. Recursion is bounded
 * by the depth the check allowed. Returns false when z is out of memory.
 */
static int s_build(const uint8_t **p, msgpack_zone *z, msgpack_object *o)
{
    uint8_t b = *(*p)++;
    uint64_t n = 0; /* string/binary bytes, or container elements */
    bool map = false;
    memset(o, 0, sizeof *o);
    if (b <= 0x7f) {
        o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = b;
        return GX_OK;
    }
    if (b >= 0xe0) {
        o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = (int8_t)b;
        return GX_OK;
    }
    if (b <= 0x8f) {
        n = b & 0x0f, map = true;
        goto container;
    }
    if (b <= 0x9f) {
        n = b & 0x0f;
        goto container;
    }
    if (b <= 0xbf) {
        n = b & 0x1f;
        o->type = MSGPACK_OBJECT_STR;
        goto bytes;
    }
    switch (b) {
    case 0xc0:
        o->type = MSGPACK_OBJECT_NIL;
        return GX_OK;
    case 0xc2: case 0xc3:
        o->type = MSGPACK_OBJECT_BOOLEAN, o->via.boolean = b == 0xc3;
        return GX_OK;
    case 0xc4: case 0xc5: case 0xc6:
        n = s_be(*p, 1 << (b - 0xc4)), *p += 1 << (b - 0xc4);
        o->type = MSGPACK_OBJECT_BIN;
        goto bytes;
    case 0xd9: case 0xda: case 0xdb:
        n = s_be(*p, 1 << (b - 0xd9)), *p += 1 << (b - 0xd9);
        o->type = MSGPACK_OBJECT_STR;
        goto bytes;
    case 0xca: {
        uint32_t u = (uint32_t)s_be(*p, 4);
        float f;
        memcpy(&f, &u, sizeof f);
        *p += 4;
        o->type = MSGPACK_OBJECT_FLOAT32, o->via.f64 = f;
        return GX_OK;
    }
    case 0xcb: {
        uint64_t u = s_be(*p, 8);
        *p += 8;
        o->type = MSGPACK_OBJECT_FLOAT64;
        memcpy(&o->via.f64, &u, sizeof u);
        return GX_OK;
    }
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        o->type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        o->via.u64 = s_be(*p, 1 << (b - 0xcc)), *p += 1 << (b - 0xcc);
        return GX_OK;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        int nb = 1 << (b - 0xd0);
        uint64_t u = s_be(*p, nb);
        *p += nb;
        if (nb < 8 && (u >> (8 * nb - 1)) & 1) /* sign-extend */
            u |= ~UINT64_C(0) << (8 * nb);
        int64_t v = (int64_t)u;
        if (v >= 0)
            o->type = MSGPACK_OBJECT_POSITIVE_INTEGER, o->via.u64 = (uint64_t)v;
        else
            o->type = MSGPACK_OBJECT_NEGATIVE_INTEGER, o->via.i64 = v;
        return GX_OK;
    }
    case 0xdc: case 0xdd:
        n = s_be(*p, b == 0xdc ? 2 : 4), *p += b == 0xdc ? 2 : 4;
        goto container;
    case 0xde: case 0xdf:
        n = s_be(*p, b == 0xde ? 2 : 4), *p += b == 0xde ? 2 : 4, map = true;
        goto container;
    default:
        return GX_EPROTO; /* not reached: gx_wire_check refuses every other byte */
    }
bytes:
    if (o->type == MSGPACK_OBJECT_STR)
        o->via.str.size = (uint32_t)n, o->via.str.ptr = (const char *)*p;
    else
        o->via.bin.size = (uint32_t)n, o->via.bin.ptr = (const char *)*p;
    *p += n;
    return GX_OK;
container:
    o->type = map ? MSGPACK_OBJECT_MAP : MSGPACK_OBJECT_ARRAY;
    if (n == 0)
        return GX_OK;
    if (map) {
        msgpack_object_kv *kv = msgpack_zone_malloc(z, n * sizeof *kv);
        if (!kv)
            return GX_ENOMEM;
        o->via.map.ptr = kv, o->via.map.size = (uint32_t)n;
        for (uint64_t i = 0; i < n; i++) {
            int rc = s_build(p, z, &kv[i].key);
            if (rc < 0 || (rc = s_build(p, z, &kv[i].val)) < 0)
                return rc;
        }
    } else {
        msgpack_object *e = msgpack_zone_malloc(z, n * sizeof *e);
        if (!e)
            return GX_ENOMEM;
        o->via.array.ptr = e, o->via.array.size = (uint32_t)n;
        for (uint64_t i = 0; i < n; i++) {
            int rc = s_build(p, z, &e[i]);
            if (rc < 0)
                return rc;
        }
    }
    return GX_OK;
}

int gx_mp_unpack(const void *buf, size_t len, int max_depth, msgpack_unpacked *out, char *err,
                 size_t errlen)
{
    int rc = gx_mp_check(buf, len, max_depth, err, errlen);
    if (rc < 0)
        return rc;
    msgpack_unpacked_destroy(out);
    out->zone = msgpack_zone_new(MSGPACK_ZONE_CHUNK_SIZE);
    if (!out->zone)
        return gx_mp_errf(err, errlen, GX_ENOMEM, "out of memory decoding message");
    const uint8_t *p = buf;
    if ((rc = s_build(&p, out->zone, &out->data)) < 0) {
        msgpack_unpacked_destroy(out);
        return rc == GX_ENOMEM ? gx_mp_errf(err, errlen, rc, "out of memory decoding message")
                               : gx_mp_errf(err, errlen, rc, "malformed msgpack");
    }
    return GX_OK;
}
