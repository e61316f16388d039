/*
 * msgpack decoding for hostile input, shared by the wire codec (wire.c:
 * gx_wire_check and gx_wire_unpack_depth are these within the wire's depth
 * limit) and programs that link only the public libgexec and read msgpack
 * themselves (gexec-submit's `explain --artifact`). Depends on libc and
 * msgpack-c only.
 *
 * gx_mp_check walks the bytes without allocating, so a container claiming
 * 2^32 elements or nesting 10^6 deep is refused before anything is
 * allocated for it; gx_mp_unpack then builds the objects msgpack-c would.
 *
 *     msgpack_unpacked mp;
 *     msgpack_unpacked_init(&mp);
 *     if (gx_mp_unpack(buf, len, 16, &mp, err, sizeof err) == GX_OK) ... mp.data ...
 *     msgpack_unpacked_destroy(&mp);
 */
#ifndef GX_MPDECODE_H
#define GX_MPDECODE_H

#include <msgpack.h>
#include <stddef.h>

#include "gexec/status.h"

/* The deepest nesting any caller may allow (the wire's limit for the
 * deepest graphs, GX_WIRE_DEPTH_LIMIT, is below it). */
#define GX_MP_MAX_DEPTH 340

/* GX_OK when buf[0..len) is exactly one well-formed msgpack object whose
 * container counts fit in the remaining bytes, with at most 2^22 objects,
 * nested at most max_depth deep (clamped to GX_MP_MAX_DEPTH). GX_EPROTO or
 * GX_ELIMIT with a message in err (err may be NULL). Allocates nothing. */
int gx_mp_check(const void *buf, size_t len, int max_depth, char *err, size_t errlen);
/* gx_mp_check, then decode into *out (msgpack_unpacked_init'ed by the
 * caller, destroyed by the caller with msgpack_unpacked_destroy). Strings
 * and binaries in *out point into buf, which must outlive it. gexec's own
 * decoder: msgpack-c's stops at 32 levels. GX_ENOMEM as well. */
int gx_mp_unpack(const void *buf, size_t len, int max_depth, msgpack_unpacked *out, char *err,
                 size_t errlen);

/* gx_errf for programs without libgexec's internals: fmt into err (may be
 * NULL), returns status. */
int gx_mp_errf(char *err, size_t errlen, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
