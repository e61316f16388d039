/*
 * .npy files: numpy's array format, versions 1.0, 2.0 and 3.0.
 *
 *   "\x93NUMPY" major minor  header_len (u16 LE for 1.x, u32 LE for 2.x/3.x)
 *   header: a Python dict literal, e.g.
 *           {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *           padded with spaces and ending in '\n'
 *   data:   numel * itemsize bytes, C order
 *
 * Files come from anywhere, so nothing in the header is trusted: every length
 * is checked against what the file holds before it is used, the dict is parsed
 * by a small strict tokenizer (never evaluated), sizes are computed with
 * overflow checks, and the data must be exactly as long as the header says.
 * Accepted dtypes are the descr column of GX_DTYPE_LIST (tensor.h) with byte
 * order '<', '|' or '=' (native, little-endian here), and numpy's
 * fixed-width strings as string tensors (docs/strings.md): 'U<n>' (n UCS-4
 * code points, to UTF-8) and 'S<n>' (n bytes), each element without its
 * trailing NULs; big-endian data, Fortran order, structured and object
 * dtypes are refused. A string tensor is saved as 'U<n>' when every element
 * is UTF-8, else as 'S<n>' (n the longest element, at least 1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"

#define S_MAGIC "\x93NUMPY"
#define S_MAGIC_LEN 6
/* numpy itself refuses headers over 10000 bytes unless told otherwise; a
 * valid header for GX_MAX_DIMS dims is under 200 bytes. */
#define S_MAX_HEADER 65536
/* Non-regular files (pipes, devices) are read whole; refuse more than this
 * (the daemon's default limits.max_tensor_bytes), so `-i x=/dev/zero` stops
 * after 1 GiB instead of exhausting memory. Regular files have no such cap:
 * their size is known before anything is read. */
#define S_MAX_STREAM ((size_t)1 << 30)

/* numpy's descr of each dtype (NULL: numpy has none). */
static const char *const s_descrs[GX_DTYPE_COUNT] = {
#define S_DESCR(e, name, size, descr) descr,
    GX_DTYPE_LIST(S_DESCR)
#undef S_DESCR
};

/* What the header says, once checked. */
typedef struct s_npy_header {
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    size_t data_offset; /* bytes from the start of the file */
    size_t nbytes;      /* data size implied by dtype and shape */
    char str_kind;      /* GX_STRING: 'U' or 'S' */
    size_t str_width;   /* GX_STRING: characters per element */
} s_npy_header;

/* Longest fixed-width string element accepted, in characters. */
#define S_MAX_STR_WIDTH ((size_t)1 << 24)

/* ---- the header dict ---------------------------------------------------- */

typedef struct s_lexer {
    const char *p, *end;
} s_lexer;

static void s_skip_ws(s_lexer *lx)
{
    while (lx->p < lx->end &&
           (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r'))
        lx->p++;
}

static bool s_accept(s_lexer *lx, char c)
{
    s_skip_ws(lx);
    if (lx->p < lx->end && *lx->p == c) {
        lx->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes into buf. False if malformed. */
static bool s_string(s_lexer *lx, char *buf, size_t len)
{
    s_skip_ws(lx);
    if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"'))
        return false;
    char q = *lx->p++;
    size_t n = 0;
    while (lx->p < lx->end && *lx->p != q) {
        char c = *lx->p++;
        if (c == '\\' || c == '\n' || c == '\0' || n + 1 >= len)
            return false;
        buf[n++] = c;
    }
    if (lx->p >= lx->end)
        return false;
    lx->p++;
    buf[n] = '\0';
    return true;
}

/* A bare word (True, False) into buf. */
static bool s_word(s_lexer *lx, char *buf, size_t len)
{
    s_skip_ws(lx);
    size_t n = 0;
    while (lx->p < lx->end && ((*lx->p >= 'A' && *lx->p <= 'Z') ||
                               (*lx->p >= 'a' && *lx->p <= 'z'))) {
        if (n + 1 >= len)
            return false;
        buf[n++] = *lx->p++;
    }
    buf[n] = '\0';
    return n > 0;
}

/* A non-negative decimal int (optional Python 2 'L' suffix) fitting int64. */
static bool s_dim(s_lexer *lx, int64_t *v)
{
    s_skip_ws(lx);
    if (lx->p >= lx->end || *lx->p < '0' || *lx->p > '9')
        return false;
    int64_t x = 0;
    while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
        int d = *lx->p++ - '0';
        if (x > (INT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    if (lx->p < lx->end && (*lx->p == 'L' || *lx->p == 'l'))
        lx->p++;
    *v = x;
    return true;
}

/* The shape tuple: "()", "(3,)", "(2, 3)", "(2, 3,)"; "(3)" is taken as (3,). */
static int s_shape(s_lexer *lx, s_npy_header *h, const char *src, char *err, size_t errlen)
{
    if (!s_accept(lx, '('))
        return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: 'shape' is not a tuple", src);
    h->ndim = 0;
    if (s_accept(lx, ')'))
        return GX_OK;
    for (;;) {
        int64_t d;
        s_skip_ws(lx);
        if (lx->p < lx->end && *lx->p == '-')
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: negative dimension in 'shape'",
                           src);
        if (!s_dim(lx, &d))
            return gx_errf(err, errlen, GX_EFORMAT,
                           "%s: npy header: 'shape' holds something other than non-negative "
                           "integers (or one too large)",
                           src);
        if (h->ndim == GX_MAX_DIMS)
            return gx_errf(err, errlen, GX_EFORMAT,
                           "%s: npy header: more than %d dimensions", src, GX_MAX_DIMS);
        h->shape[h->ndim++] = d;
        bool comma = s_accept(lx, ',');
        if (s_accept(lx, ')'))
            return GX_OK;
        if (!comma)
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: malformed 'shape' tuple",
                           src);
    }
}

static int s_descr(const char *d, s_npy_header *h, const char *src, char *err, size_t errlen)
{
    gx_dtype *dt = &h->dtype;
    if ((d[1] == 'U' || d[1] == 'S') && d[2] >= '0' && d[2] <= '9') { /* fixed-width strings */
        char *end;
        errno = 0;
        unsigned long long w = strtoull(d + 2, &end, 10);
        if (*end || errno || w > S_MAX_STR_WIDTH)
            return gx_errf(err, errlen, GX_EDTYPE, "%s: string dtype '%s' is malformed or wider "
                           "than %zu", src, d, S_MAX_STR_WIDTH);
        if (d[1] == 'U' && d[0] != '<' && d[0] != '=')
            return gx_errf(err, errlen, GX_EDTYPE,
                           "%s: dtype '%s' is not little-endian (save as '<U%llu')", src, d, w);
        *dt = GX_STRING;
        h->str_kind = d[1];
        h->str_width = (size_t)w;
        return GX_OK;
    }
    /* Byte order: '<' little, '|' not applicable, '=' native (little-endian
     * on every host gexec runs on), '>' and '!' big; for one-byte types the
     * order does not matter. */
    char order = d[0];
    bool big = order == '>' || order == '!';
    if (big || order == '<' || order == '|' || order == '=') {
        for (int i = 0; i < GX_DTYPE_COUNT; i++) {
            if (!s_descrs[i] || strcmp(s_descrs[i] + 1, d + 1) != 0)
                continue;
            if (big && gx_dtype_size((gx_dtype)i) > 1)
                return gx_errf(err, errlen, GX_EDTYPE,
                               "%s: big-endian dtype '%s' is not supported (save as '<%s')", src,
                               d, d + 1);
            *dt = (gx_dtype)i;
            return GX_OK;
        }
    }
    return gx_errf(err, errlen, GX_EDTYPE,
                   "%s: unsupported dtype '%s' (expected one of <f4 <f2 <f8 <i8 <i4 |i1 |u1 |b1)",
                   src, d);
}

/* Parse the dict in [p, p+len) into h (dtype, ndim, shape). */
static int s_parse_dict(const char *p, size_t len, s_npy_header *h, const char *src, char *err,
                        size_t errlen)
{
    s_lexer lx = {p, p + len};
    bool have_descr = false, have_order = false, have_shape = false;
    char key[64], val[64];
    int rc;

    if (!s_accept(&lx, '{'))
        return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header is not a dict", src);
    while (!s_accept(&lx, '}')) {
        if (!s_string(&lx, key, sizeof key))
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: expected a quoted key", src);
        if (!s_accept(&lx, ':'))
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: expected ':' after '%s'",
                           src, key);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (!s_string(&lx, val, sizeof val))
                return gx_errf(err, errlen, GX_EDTYPE,
                               "%s: npy header: 'descr' is not a simple dtype string "
                               "(structured dtypes are not supported)",
                               src);
            if ((rc = s_descr(val, h, src, err, errlen)) < 0)
                return rc;
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (!s_word(&lx, val, sizeof val) ||
                (strcmp(val, "True") != 0 && strcmp(val, "False") != 0))
                return gx_errf(err, errlen, GX_EFORMAT,
                               "%s: npy header: 'fortran_order' is not True or False", src);
            if (strcmp(val, "True") == 0)
                return gx_errf(err, errlen, GX_EFORMAT,
                               "%s: Fortran-order arrays are not supported "
                               "(save with numpy.ascontiguousarray)",
                               src);
            have_order = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if ((rc = s_shape(&lx, h, src, err, errlen)) < 0)
                return rc;
            have_shape = true;
        } else if (strcmp(key, "descr") == 0 || strcmp(key, "fortran_order") == 0 ||
                   strcmp(key, "shape") == 0) {
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: duplicate key '%s'", src,
                           key);
        } else {
            return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: unknown key '%s'", src,
                           key);
        }
        if (!s_accept(&lx, ',')) {
            if (!s_accept(&lx, '}'))
                return gx_errf(err, errlen, GX_EFORMAT,
                               "%s: npy header: expected ',' or '}' after '%s'", src, key);
            break;
        }
    }
    s_skip_ws(&lx);
    if (lx.p != lx.end)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header: junk after the dict", src);
    if (!have_descr || !have_order || !have_shape)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: npy header lacks '%s'", src,
                       !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return GX_OK;
}

/* The fixed prefix: magic, version, header length. pre holds avail bytes of
 * the file (at least the first 12 if the file has them); total is the file
 * size. Sets *hlen and *hstart, where the header begins. */
static int s_parse_prefix(const unsigned char *pre, size_t avail, size_t total, uint32_t *hlen,
                          size_t *hstart, const char *src, char *err, size_t errlen)
{
    if (avail < S_MAGIC_LEN + 2 || memcmp(pre, S_MAGIC, S_MAGIC_LEN) != 0)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: not a .npy file (bad magic)", src);
    unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: unsupported .npy format version %u.%u", src,
                       major, minor);
    size_t lenbytes = major == 1 ? 2 : 4;
    if (avail < 8 + lenbytes)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: truncated .npy header", src);
    if (major == 1)
        *hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    else
        *hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
                (uint32_t)pre[11] << 24;
    *hstart = 8 + lenbytes;
    if (*hlen > total - *hstart)
        return gx_errf(err, errlen, GX_EFORMAT,
                       "%s: header length %u runs past the end of the file (%zu bytes)", src,
                       (unsigned)*hlen, total);
    if (*hlen > S_MAX_HEADER)
        return gx_errf(err, errlen, GX_EFORMAT, "%s: header length %u exceeds the limit of %d",
                       src, (unsigned)*hlen, S_MAX_HEADER);
    return GX_OK;
}

/* The dict (hlen bytes at hdr) and the data size against the file size. */
static int s_parse_header(const char *hdr, uint32_t hlen, size_t hstart, size_t total,
                          s_npy_header *h, const char *src, char *err, size_t errlen)
{
    int rc = s_parse_dict(hdr, hlen, h, src, err, errlen);
    if (rc < 0)
        return rc;
    char sbuf[256];
    if (h->dtype == GX_STRING) { /* the file's bytes: width characters an element */
        const size_t item = h->str_width * (h->str_kind == 'U' ? 4 : 1);
        int64_t n = gx_shape_numel(h->ndim, h->shape, INT64_MAX / 8);
        if (n < 0 || (item && (uint64_t)n > SIZE_MAX / 2 / item))
            return gx_errf(err, errlen, GX_EFORMAT, "%s: shape %s of strings overflows", src,
                           gx_shape_str(h->ndim, h->shape, sbuf, sizeof sbuf));
        h->nbytes = (size_t)n * item;
    } else if (!gx_shape_nbytes(h->dtype, h->ndim, h->shape, &h->nbytes))
        return gx_errf(err, errlen, GX_EFORMAT, "%s: shape %s of %s overflows", src,
                       gx_shape_str(h->ndim, h->shape, sbuf, sizeof sbuf),
                       gx_dtype_name(h->dtype));
    h->data_offset = hstart + hlen;
    size_t have = total - h->data_offset;
    if (have < h->nbytes)
        return gx_errf(err, errlen, GX_EFORMAT,
                       "%s: data is truncated: shape %s of %s needs %zu bytes, the file holds %zu",
                       src, gx_shape_str(h->ndim, h->shape, sbuf, sizeof sbuf),
                       gx_dtype_name(h->dtype), h->nbytes, have);
    if (have > h->nbytes)
        return gx_errf(err, errlen, GX_EFORMAT,
                       "%s: %zu bytes of trailing data after the array (shape %s of %s)", src,
                       have - h->nbytes, gx_shape_str(h->ndim, h->shape, sbuf, sizeof sbuf),
                       gx_dtype_name(h->dtype));
    return GX_OK;
}

/* A tensor for h with an uninitialised buffer the caller fills. */
static int s_tensor_for(const s_npy_header *h, gx_tensor **out, const char *src, char *err,
                        size_t errlen)
{
    gx_tensor *t;
    if (h->nbytes == 0) {
        t = gx_tensor_new(h->dtype, h->ndim, h->shape);
    } else {
        void *data = gx_aligned_alloc(h->nbytes);
        if (!data)
            return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory for %zu bytes of data", src,
                           h->nbytes);
        t = gx_tensor_adopt(h->dtype, h->ndim, h->shape, data);
    }
    if (!t)
        return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", src);
    *out = t;
    return GX_OK;
}

/* A string tensor from fixed-width elements (h->str_kind, h->str_width)
 * at data: each without its trailing NULs, 'U' code points to UTF-8. */
static int s_strings(const s_npy_header *h, const unsigned char *data, gx_tensor **out,
                     const char *src, char *err, size_t errlen)
{
    gx_tensor *t = gx_tensor_new(GX_STRING, h->ndim, h->shape);
    const bool u = h->str_kind == 'U';
    const size_t w = h->str_width, item = w * (u ? 4 : 1);
    char *buf = malloc(w * 4 + 1);
    int rc = GX_OK;
    if (!t || !buf)
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", src);
    const gx_strrec **hd = t ? t->data : NULL;
    for (int64_t i = 0; rc == GX_OK && i < t->numel; i++) {
        const unsigned char *e = data + (size_t)i * item;
        size_t n = 0, len = w;
        if (!u) {
            while (len > 0 && e[len - 1] == 0)
                len--;
            memcpy(buf, e, len);
            n = len;
        } else {
            while (len > 0 && !(e[4 * (len - 1)] | e[4 * (len - 1) + 1] | e[4 * (len - 1) + 2] |
                                e[4 * (len - 1) + 3]))
                len--;
            for (size_t k = 0; k < len && rc == GX_OK; k++) {
                const unsigned char *q = e + 4 * k;
                uint32_t c = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                             (uint32_t)q[3] << 24;
                if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
                    rc = gx_errf(err, errlen, GX_EFORMAT,
                                 "%s: element %lld holds U+%X, not a Unicode scalar value", src,
                                 (long long)i, c);
                } else if (c < 0x80) {
                    buf[n++] = (char)c;
                } else if (c < 0x800) {
                    buf[n++] = (char)(0xc0 | c >> 6);
                    buf[n++] = (char)(0x80 | (c & 0x3f));
                } else if (c < 0x10000) {
                    buf[n++] = (char)(0xe0 | c >> 12);
                    buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
                    buf[n++] = (char)(0x80 | (c & 0x3f));
                } else {
                    buf[n++] = (char)(0xf0 | c >> 18);
                    buf[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
                    buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
                    buf[n++] = (char)(0x80 | (c & 0x3f));
                }
            }
        }
        bool ok;
        if (rc == GX_OK && (hd[i] = gx_tensor_str_add(t, buf, n, &ok), !ok))
            rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", src);
    }
    free(buf);
    if (rc < 0) {
        gx_tensor_destroy(&t);
        return rc;
    }
    *out = t;
    return GX_OK;
}

/* The code points of UTF-8 s[0..n) into cp (NULL: count only); -1 when s
 * is not UTF-8. */
static int64_t s_utf8_points(const unsigned char *s, size_t n, uint32_t *cp)
{
    int64_t k = 0;
    for (size_t i = 0; i < n; k++) {
        size_t len = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3
                   : (s[i] & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || len > n - i)
            return -1;
        uint32_t c = s[i] & (len == 1 ? 0x7f : 0x7f >> len);
        for (size_t j = 1; j < len; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return -1;
            c = c << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if ((len > 1 && c < min[len]) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return -1;
        if (cp)
            cp[k] = c;
        i += len;
    }
    return k;
}

/* numpy stores bool as any byte; kernels expect 0 or 1. */
static void s_normalize_bool(gx_tensor *t)
{
    if (t->dtype != GX_BOOL)
        return;
    unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = p[i] != 0;
}

static int s_parse(const void *buf, size_t len, gx_tensor **out, const char *src, char *err,
                   size_t errlen)
{
    const unsigned char *b = buf;
    uint32_t hlen = 0;
    size_t hstart = 0;
    s_npy_header h = {.ndim = 0};
    int rc;

    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "%s: no output tensor", src);
    *out = NULL;
    if (!buf && len)
        return gx_errf(err, errlen, GX_EINVAL, "%s: NULL buffer", src);
    if ((rc = s_parse_prefix(b, len, len, &hlen, &hstart, src, err, errlen)) < 0)
        return rc;
    if ((rc = s_parse_header((const char *)b + hstart, hlen, hstart, len, &h, src, err,
                             errlen)) < 0)
        return rc;
    gx_tensor *t;
    if (h.dtype == GX_STRING)
        return s_strings(&h, b + h.data_offset, out, src, err, errlen);
    if ((rc = s_tensor_for(&h, &t, src, err, errlen)) < 0)
        return rc;
    if (h.nbytes)
        memcpy(t->data, b + h.data_offset, h.nbytes);
    s_normalize_bool(t);
    *out = t;
    return GX_OK;
}

GX_EXPORT int gx_npy_parse(const void *buf, size_t len, gx_tensor **out, char *err,
                           size_t errlen)
{
    return s_parse(buf, len, out, "<npy buffer>", err, errlen);
}

/* ---- files -------------------------------------------------------------- */

static bool s_read_exact(FILE *f, void *buf, size_t n)
{
    return n == 0 || fread(buf, 1, n, f) == n;
}

/* Read a whole non-regular file (pipe, device) into memory. */
static int s_slurp(FILE *f, unsigned char **buf, size_t *len, const char *path, char *err,
                   size_t errlen)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    if (!b)
        return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
    for (;;) {
        if (n == cap) {
            if (cap >= S_MAX_STREAM) {
                free(b);
                return gx_errf(err, errlen, GX_EFORMAT, "%s: stream larger than %zu bytes", path,
                               (size_t)S_MAX_STREAM);
            }
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(b);
                return gx_errf(err, errlen, GX_EIO, "%s: read error", path);
            }
            break;
        }
    }
    *buf = b;
    *len = n;
    return GX_OK;
}

GX_EXPORT int gx_npy_load(const char *path, gx_tensor **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_npy_load: no output tensor");
    *out = NULL;
    if (!path)
        return gx_errf(err, errlen, GX_EINVAL, "gx_npy_load: no path");

    FILE *f = fopen(path, "rb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc;
    if (fstat(fileno(f), &st) != 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
        goto close_file;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: is a directory", path);
        goto close_file;
    }
    if (!S_ISREG(st.st_mode)) {
        unsigned char *buf = NULL;
        size_t len = 0;
        if ((rc = s_slurp(f, &buf, &len, path, err, errlen)) == GX_OK) {
            rc = s_parse(buf, len, out, path, err, errlen);
            free(buf);
        }
        goto close_file;
    }

    /* Regular file: read the prefix and header, check the sizes against the
     * file size, then read the data straight into the tensor's buffer. */
    size_t total = (size_t)st.st_size;
    unsigned char pre[12];
    size_t avail = total < sizeof pre ? total : sizeof pre;
    uint32_t hlen = 0;
    size_t hstart = 0;
    s_npy_header h = {.ndim = 0};
    char *hdr = NULL;
    gx_tensor *t = NULL;
    if (!s_read_exact(f, pre, avail)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: read error", path);
        goto close_file;
    }
    if ((rc = s_parse_prefix(pre, avail, total, &hlen, &hstart, path, err, errlen)) < 0)
        goto close_file;
    if (!(hdr = malloc(hlen ? hlen : 1))) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
        goto close_file;
    }
    if (fseek(f, (long)hstart, SEEK_SET) != 0 || !s_read_exact(f, hdr, hlen)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: cannot read the header", path);
        goto free_hdr;
    }
    if ((rc = s_parse_header(hdr, hlen, hstart, total, &h, path, err, errlen)) < 0)
        goto free_hdr;
    if (h.dtype == GX_STRING) { /* converted element by element: the whole file */
        unsigned char *buf = malloc(total ? total : 1);
        if (!buf)
            rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
        else if (fseek(f, 0, SEEK_SET) != 0 || !s_read_exact(f, buf, total))
            rc = gx_errf(err, errlen, GX_EIO, "%s: read error", path);
        else
            rc = s_parse(buf, total, out, path, err, errlen);
        free(buf);
        goto free_hdr;
    }
    if ((rc = s_tensor_for(&h, &t, path, err, errlen)) < 0)
        goto free_hdr;
    if (!s_read_exact(f, t->data, h.nbytes)) {
        rc = gx_errf(err, errlen, feof(f) ? GX_EFORMAT : GX_EIO,
                     "%s: data is truncated (the file shrank while being read)", path);
        gx_tensor_destroy(&t);
        goto free_hdr;
    }
    s_normalize_bool(t);
    *out = t;
    rc = GX_OK;
free_hdr:
    free(hdr);
close_file:
    fclose(f);
    return rc;
}

/* The header numpy writes for format 1.0: dict, spaces, '\n', padded so the
 * data starts on a 64-byte boundary. Returns its length including the 10-byte
 * prefix, or 0 if it does not fit in len. */
static size_t s_format_header(const gx_tensor *t, const char *descr, char *buf, size_t len)
{
    char shape[GX_MAX_DIMS * 22 + 4];
    size_t n = 0;
    shape[n++] = '(';
    for (int i = 0; i < t->ndim; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
                              (long long)t->shape[i]);
    if (t->ndim == 1)
        shape[n++] = ',';
    shape[n++] = ')';
    shape[n] = '\0';

    char dict[sizeof shape + 64];
    int dn = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      descr, shape);
    if (dn < 0 || (size_t)dn >= sizeof dict)
        return 0;
    size_t total = 10 + (size_t)dn + 1;
    total = (total + 63) / 64 * 64;
    if (total > len || total - 10 > UINT16_MAX)
        return 0;
    size_t hlen = total - 10;
    memcpy(buf, S_MAGIC, S_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)dn);
    memset(buf + 10 + dn, ' ', total - 10 - (size_t)dn - 1);
    buf[total - 1] = '\n';
    return total;
}

/* Writes the header and data bytes to path; removes it on failure. */
static int s_write(const char *path, const char *hdr, size_t hn, const void *data, size_t n,
                   char *err, size_t errlen)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    bool ok = fwrite(hdr, 1, hn, f) == hn && (n == 0 || fwrite(data, 1, n, f) == n);
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        remove(path);
        return gx_errf(err, errlen, GX_EIO, "%s: write failed: %s", path, strerror(saved));
    }
    return GX_OK;
}

/* A string tensor as '<U<n>' (all UTF-8) or '|S<n>'. */
static int s_save_strings(const char *path, const gx_tensor *t, char *err, size_t errlen)
{
    bool utf8 = true;
    size_t w = 1;
    for (int64_t i = 0; i < t->numel; i++) {
        size_t n;
        const unsigned char *s = (const unsigned char *)gx_tensor_string(t, i, &n);
        int64_t k = utf8 ? s_utf8_points(s, n, NULL) : -1;
        utf8 = utf8 && k >= 0;
        w = n > w ? n : w; /* bytes bound code points */
    }
    const size_t item = utf8 ? 4 * w : w;
    if ((uint64_t)t->numel > SIZE_MAX / 2 / item)
        return gx_errf(err, errlen, GX_ELIMIT, "%s: too large to save", path);
    unsigned char *data = calloc((size_t)t->numel * item + 1, 1);
    uint32_t *cp = malloc((w + 1) * sizeof *cp);
    if (!data || !cp) {
        free(data);
        free(cp);
        return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
    }
    size_t wmax = 1;
    for (int64_t i = 0; i < t->numel; i++) {
        size_t n;
        const unsigned char *s = (const unsigned char *)gx_tensor_string(t, i, &n);
        unsigned char *e = data + (size_t)i * item;
        if (!utf8) {
            memcpy(e, s, n);
            continue;
        }
        int64_t k = s_utf8_points(s, n, cp);
        wmax = (size_t)k > wmax ? (size_t)k : wmax;
        for (int64_t j = 0; j < k; j++)
            for (int b = 0; b < 4; b++)
                e[4 * j + b] = (unsigned char)(cp[j] >> (8 * b));
    }
    free(cp);
    if (utf8 && wmax < w) { /* the elements as wide as the most code points */
        for (int64_t i = 0; i < t->numel; i++)
            memmove(data + (size_t)i * 4 * wmax, data + (size_t)i * item, 4 * wmax);
        w = wmax;
    }
    char descr[32], hdr[512];
    snprintf(descr, sizeof descr, "%s%zu", utf8 ? "<U" : "|S", w);
    size_t hn = s_format_header(t, descr, hdr, sizeof hdr);
    int rc = hn ? s_write(path, hdr, hn, data, (size_t)t->numel * (utf8 ? 4 * w : w), err, errlen)
                : gx_errf(err, errlen, GX_EINTERNAL, "%s: npy header does not fit", path);
    free(data);
    return rc;
}

GX_EXPORT int gx_npy_save(const char *path, const gx_tensor *t, char *err, size_t errlen)
{
    if (!path || !t)
        return gx_errf(err, errlen, GX_EINVAL, "gx_npy_save: no %s", path ? "tensor" : "path");
    if (t->kind == GX_KIND_TENSOR && t->dtype == GX_STRING)
        return s_save_strings(path, t, err, errlen);
    if ((unsigned)t->dtype >= GX_DTYPE_COUNT || !s_descrs[t->dtype])
        return gx_errf(err, errlen, GX_EDTYPE, "%s: numpy has no dtype %s", path,
                       gx_dtype_name(t->dtype) ? gx_dtype_name(t->dtype) : "(invalid)");

    char hdr[512];
    size_t hn = s_format_header(t, s_descrs[t->dtype], hdr, sizeof hdr);
    if (hn == 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "%s: npy header does not fit", path);

    FILE *f = fopen(path, "wb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    bool ok = fwrite(hdr, 1, hn, f) == hn;
    if (ok && t->nbytes)
        ok = fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        remove(path);
        return gx_errf(err, errlen, GX_EIO, "%s: write failed: %s", path, strerror(saved));
    }
    return GX_OK;
}
