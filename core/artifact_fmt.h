/*
 * The header of a compiled-plan artifact file (seed 004; docs/artifact.md),
 * shared by the daemon, which writes and reads artifacts
 * (daemon/compile/artifact.c), and gexec-submit, which prints them
 * (explain --artifact). A file is this fixed header, then one msgpack map
 * (the body) whose checksum the header holds:
 *
 *   offset  bytes  field
 *        0      8  magic "GXARTIF\0" (a plan), "GXCONST\0" (a constants file)
 *        8      4  format version (little-endian)
 *       12      4  header bytes (GX_ARTIFACT_HEADER)
 *       16      8  body bytes
 *       24      8  FNV-1a 64 of the body, over 8-byte little-endian words
 *       32     32  build id, NUL-padded ("gexec-0.2.0 k0123456789abcdef")
 *       64     32  constants file, NUL-padded: the name ("<16 hex>") of the
 *                  constants file the plan's prepared constants are in
 *                  (version 2; "": none, the file holds them), or a
 *                  constants file's own
 *
 * A constants file's body is the prepared constants' bytes, each at an
 * offset (GX_ARTIFACT_ALIGN-aligned) a plan that reads it names.
 *
 *   gx_artifact_header h;
 *   if (gx_artifact_header_read(buf, len, &h, err, sizeof err) == GX_OK)
 *       body = buf + GX_ARTIFACT_HEADER;  // h.body_bytes of msgpack
 */
#ifndef GX_ARTIFACT_FMT_H
#define GX_ARTIFACT_FMT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gexec/status.h"

#define GX_ARTIFACT_MAGIC "GXARTIF"
#define GX_ARTIFACT_CONSTS_MAGIC "GXCONST"
#define GX_ARTIFACT_VERSION 2
#define GX_ARTIFACT_HEADER 96
#define GX_ARTIFACT_BUILD 32
#define GX_ARTIFACT_CONSTS 32
#define GX_ARTIFACT_ALIGN 64

typedef struct gx_artifact_header {
    uint32_t version;
    uint64_t body_bytes;
    uint64_t checksum;
    char build[GX_ARTIFACT_BUILD + 1];
    char consts[GX_ARTIFACT_CONSTS + 1];
} gx_artifact_header;

static inline uint64_t gx_artifact_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void gx_artifact_put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

/* FNV-1a 64 over the body, one 8-byte little-endian word at a time (the
 * tail zero-padded), then the length. */
static inline uint64_t gx_artifact_checksum(const void *body, size_t len)
{
    const unsigned char *p = body;
    uint64_t h = 1469598103934665603ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        h = (h ^ gx_artifact_le(p + i, 8)) * 1099511628211ull;
    if (i < len)
        h = (h ^ gx_artifact_le(p + i, (int)(len - i))) * 1099511628211ull;
    return (h ^ (uint64_t)len) * 1099511628211ull;
}

/* The header of a file of len bytes at buf with magic (GX_ARTIFACT_MAGIC,
 * GX_ARTIFACT_CONSTS_MAGIC): magic, sizes, checksum. The version, build
 * id and constants name are only read: the caller decides what it
 * accepts. GX_OK, or GX_EFORMAT with why ("truncated: ...", "checksum
 * mismatch"). */
static inline int gx_artifact_header_read_magic(const void *buf, size_t len, const char *magic,
                                                gx_artifact_header *h, char *err, size_t errlen)
{
    const unsigned char *p = buf;
    if (len < GX_ARTIFACT_HEADER || memcmp(p, magic, 8) != 0) {
        snprintf(err, errlen, "not a gexec %s (%s)",
                 strcmp(magic, GX_ARTIFACT_MAGIC) ? "constants file" : "artifact",
                 len < GX_ARTIFACT_HEADER ? "shorter than its header" : "no magic");
        return GX_EFORMAT;
    }
    h->version = (uint32_t)gx_artifact_le(p + 8, 4);
    h->body_bytes = gx_artifact_le(p + 16, 8);
    h->checksum = gx_artifact_le(p + 24, 8);
    memcpy(h->build, p + 32, GX_ARTIFACT_BUILD);
    h->build[GX_ARTIFACT_BUILD] = '\0';
    memcpy(h->consts, p + 32 + GX_ARTIFACT_BUILD, GX_ARTIFACT_CONSTS);
    h->consts[GX_ARTIFACT_CONSTS] = '\0';
    if (gx_artifact_le(p + 12, 4) != GX_ARTIFACT_HEADER) {
        snprintf(err, errlen, "a header of %llu bytes (expected %d)",
                 (unsigned long long)gx_artifact_le(p + 12, 4), GX_ARTIFACT_HEADER);
        return GX_EFORMAT;
    }
    if (h->body_bytes != len - GX_ARTIFACT_HEADER) {
        snprintf(err, errlen, "truncated: the header says %llu body bytes, the file has %zu",
                 (unsigned long long)h->body_bytes, len - GX_ARTIFACT_HEADER);
        return GX_EFORMAT;
    }
    if (gx_artifact_checksum(p + GX_ARTIFACT_HEADER, (size_t)h->body_bytes) != h->checksum) {
        snprintf(err, errlen, "checksum mismatch (corrupt file)");
        return GX_EFORMAT;
    }
    return GX_OK;
}

/* gx_artifact_header_read_magic for a plan's file. */
static inline int gx_artifact_header_read(const void *buf, size_t len, gx_artifact_header *h,
                                          char *err, size_t errlen)
{
    return gx_artifact_header_read_magic(buf, len, GX_ARTIFACT_MAGIC, h, err, errlen);
}

/* Writes the header (magic, this version) for a body of len bytes whose
 * checksum is sum into p (GX_ARTIFACT_HEADER bytes); consts: the
 * constants file's name, or "". */
static inline void gx_artifact_header_put(unsigned char *p, const char *magic, uint64_t len,
                                          uint64_t sum, const char *build, const char *consts)
{
    memset(p, 0, GX_ARTIFACT_HEADER);
    memcpy(p, magic, 8);
    gx_artifact_put_le(p + 8, GX_ARTIFACT_VERSION, 4);
    gx_artifact_put_le(p + 12, GX_ARTIFACT_HEADER, 4);
    gx_artifact_put_le(p + 16, len, 8);
    gx_artifact_put_le(p + 24, sum, 8);
    size_t n = strlen(build);
    memcpy(p + 32, build, n < GX_ARTIFACT_BUILD ? n : GX_ARTIFACT_BUILD);
    n = strlen(consts);
    memcpy(p + 32 + GX_ARTIFACT_BUILD, consts, n < GX_ARTIFACT_CONSTS ? n : GX_ARTIFACT_CONSTS);
}

/* Writes the header of a plan's file for a body of len bytes into p. */
static inline void gx_artifact_header_write(unsigned char *p, const void *body, size_t len,
                                            const char *build)
{
    gx_artifact_header_put(p, GX_ARTIFACT_MAGIC, len, gx_artifact_checksum(body, len), build, "");
}

#endif
