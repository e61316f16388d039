/* Artifacts as JSON for gexec-submit. See artifact_read.h. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/artifact_fmt.h"
#include "libclient/artifact_read.h"
#include "core/mpdecode.h"

/* The depth of an artifact's body (the writer's S_MAX_DEPTH). */
#define S_MAX_DEPTH 16

/* A JSON string of n bytes at s: quotes, backslashes and control bytes
 * escaped (bytes from 0x80 pass as they are). */
static void s_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* o as JSON; depth is bounded by the check gx_mp_unpack made. */
static void s_json(FILE *f, const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        fputs("null", f);
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        fputs(o->via.boolean ? "true" : "false", f);
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        fprintf(f, "%" PRIu64, o->via.u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        fprintf(f, "%" PRId64, o->via.i64);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (isfinite(o->via.f64))
            fprintf(f, "%.17g", o->via.f64);
        else
            fputs("null", f);
        break;
    case MSGPACK_OBJECT_STR:
        s_str(f, o->via.str.ptr, o->via.str.size);
        break;
    case MSGPACK_OBJECT_BIN:
        fprintf(f, "{\"bin\":%" PRIu32 "}", o->via.bin.size);
        break;
    case MSGPACK_OBJECT_ARRAY:
        fputc('[', f);
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i)
                fputc(',', f);
            s_json(f, &o->via.array.ptr[i]);
        }
        fputc(']', f);
        break;
    case MSGPACK_OBJECT_MAP:
        fputc('{', f);
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;
            if (i)
                fputc(',', f);
            if (k->type == MSGPACK_OBJECT_STR)
                s_str(f, k->via.str.ptr, k->via.str.size);
            else
                fputs("\"?\"", f); /* the writer's keys are strings */
            fputc(':', f);
            s_json(f, &o->via.map.ptr[i].val);
        }
        fputc('}', f);
        break;
    case MSGPACK_OBJECT_EXT:
        fputs("null", f); /* gx_mp_check refuses ext types */
        break;
    }
}

/* The whole file at path into *buf (malloc'ed, *len bytes). */
static int s_slurp(const char *path, unsigned char **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        return gx_mp_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    int rc = GX_OK;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        rc = gx_mp_errf(err, errlen, GX_EIO, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size > SIZE_MAX - 1 || !(*buf = malloc((size_t)st.st_size + 1)))
        rc = gx_mp_errf(err, errlen, GX_ENOMEM, "%s: no memory for %lld bytes", path,
                    (long long)st.st_size);
    else if (fread(*buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
        rc = gx_mp_errf(err, errlen, GX_EIO, "%s: short read", path);
    *len = rc == GX_OK ? (size_t)st.st_size : 0;
    fclose(f);
    if (rc < 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int gxs_artifact_json(const char *path, char **json, bool *intact, char *err, size_t errlen)
{
    unsigned char *buf = NULL;
    size_t len = 0, jlen = 0;
    *json = NULL;
    *intact = false;
    int rc = s_slurp(path, &buf, &len, err, errlen);
    if (rc < 0)
        return rc;
    /* the daemon's header checks, then the checksum's verdict kept apart:
     * a corrupt body is still shown, marked so */
    gx_artifact_header h;
    char why[256];
    rc = gx_artifact_header_read(buf, len, &h, why, sizeof why);
    const bool sum_ok = rc == GX_OK;
    if (rc < 0 && strncmp(why, "checksum", 8) != 0) {
        free(buf);
        return gx_mp_errf(err, errlen, rc, "%s: %s", path, why);
    }
    FILE *f = open_memstream(json, &jlen);
    if (!f) {
        free(buf);
        return gx_mp_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    fputs("{\"file\":", f);
    s_str(f, path, strlen(path));
    fprintf(f, ",\"file_bytes\":%zu,\"version\":%" PRIu32 ",\"build\":", len, h.version);
    s_str(f, h.build, strlen(h.build));
    fputs(",\"consts\":", f); /* the constants file it names ("": none) */
    s_str(f, h.consts, strlen(h.consts));
    fprintf(f, ",\"body_bytes\":%" PRIu64 ",\"checksum\":\"%s\",\"body\":", h.body_bytes,
            sum_ok ? "ok" : "mismatch");
    msgpack_unpacked mp;
    msgpack_unpacked_init(&mp);
    rc = gx_mp_unpack(buf + GX_ARTIFACT_HEADER, (size_t)h.body_bytes, S_MAX_DEPTH, &mp, why,
                      sizeof why);
    if (rc == GX_OK && mp.data.type != MSGPACK_OBJECT_MAP)
        rc = gx_mp_errf(why, sizeof why, GX_EFORMAT, "the body is not a map");
    if (rc == GX_OK) {
        s_json(f, &mp.data);
    } else {
        fputs("null,\"body_error\":", f);
        s_str(f, why, strlen(why));
    }
    fputc('}', f);
    msgpack_unpacked_destroy(&mp);
    free(buf);
    if (fclose(f) != 0 || !*json) {
        free(*json);
        *json = NULL;
        return gx_mp_errf(err, errlen, GX_ENOMEM, "out of memory");
    }
    *intact = sum_ok && rc == GX_OK;
    return GX_OK;
}
