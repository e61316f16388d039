/*
 * YAML graph files (docs/graph-format.md) into a gx_graph, through the public
 * graph builder.
 *
 * libyaml's document API loads the whole file into a node tree; this file
 * walks the tree against a fixed schema (top level -> section lists -> entry
 * maps -> small lists), so recursion depth is bounded by the schema, never by
 * the input. Every error is "source:line:column: path: reason", the position
 * being libyaml's 1-based mark of the offending node and the path naming the
 * entry ("nodes[2].attrs.alpha").
 *
 * Aliases (*x) are allowed, but each node fetch counts against a budget
 * proportional to the document size, so a file cannot make the walk
 * quadratic by aliasing a large list many times.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "libclient/internal.h"

#define S_MAX_FILE ((size_t)1 << 30)
/* Far above any op's attribute count; bounds the duplicate check. */
#define S_MAX_ATTRS 256

typedef struct s_ctx {
    yaml_document_t *doc;
    const char *src;
    const char *base_dir;
    char *err;
    size_t errlen;
    int status;       /* the first error, once set */
    size_t visits;    /* node fetches so far */
    size_t max_visits;
} s_ctx;

/* Which shape entries are allowed. */
typedef enum s_shape_mode {
    S_SHAPE_DECL,  /* inputs/outputs: ints >= 0, -1 or a name (symbolic) */
    S_SHAPE_CONST, /* constants: ints >= 0 */
} s_shape_mode;

/* What a plain scalar looks like. */
typedef enum s_num {
    S_NUM_NONE,  /* not a number */
    S_NUM_INT,   /* decimal integer that fits int64 */
    S_NUM_FLOAT, /* '.', exponent, inf or nan */
    S_NUM_RANGE, /* looks like a number but is out of range */
} s_num;

/* ---- errors and node access -------------------------------------------- */

static int s_failv(s_ctx *c, const yaml_mark_t *m, int status, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    c->status = status;
    return gx_errf(c->err, c->errlen, status, "%s:%zu:%zu: %s", c->src, m ? m->line + 1 : 1,
                   m ? m->column + 1 : 1, msg);
}

__attribute__((format(printf, 4, 5))) static int s_fail(s_ctx *c, const yaml_node_t *n,
                                                        int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_failv(c, n ? &n->start_mark : NULL, status, fmt, ap);
    va_end(ap);
    return rc;
}

/* Format an entry path ("nodes[2].attrs.alpha") for messages; truncation
 * is harmless. */
__attribute__((format(printf, 3, 4))) static void s_path(char *buf, size_t len,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Node idx of the document, or NULL with the error set (alias budget spent,
 * explicit tag). at is where to report. */
static yaml_node_t *s_get(s_ctx *c, int idx, const yaml_node_t *at, const char *path)
{
    yaml_node_t *n = yaml_document_get_node(c->doc, idx);
    if (!n) {
        s_fail(c, at, GX_EFORMAT, "%s: missing value", path);
        return NULL;
    }
    if (++c->visits > c->max_visits) {
        s_fail(c, n, GX_ELIMIT, "%s: too many alias expansions", path);
        return NULL;
    }
    const char *def = n->type == YAML_SCALAR_NODE     ? YAML_DEFAULT_SCALAR_TAG
                      : n->type == YAML_SEQUENCE_NODE ? YAML_DEFAULT_SEQUENCE_TAG
                                                      : YAML_DEFAULT_MAPPING_TAG;
    if (n->tag && strcmp((const char *)n->tag, def) != 0) {
        s_fail(c, n, GX_EFORMAT, "%s: explicit YAML tags (%s) are not supported", path,
               (const char *)n->tag);
        return NULL;
    }
    return n;
}

static const char *s_kind(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE     ? "a scalar"
           : n->type == YAML_SEQUENCE_NODE ? "a list"
           : n->type == YAML_MAPPING_NODE  ? "a map"
                                           : "nothing";
}

static bool s_is_plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int s_expect(s_ctx *c, const yaml_node_t *n, yaml_node_type_t type, const char *path)
{
    if (n->type == type)
        return GX_OK;
    return s_fail(c, n, GX_EFORMAT, "%s: expected %s, got %s", path,
                  type == YAML_SCALAR_NODE     ? "a scalar"
                  : type == YAML_SEQUENCE_NODE ? "a list"
                                               : "a map",
                  s_kind(n));
}

/* The text of a scalar node; an error for other nodes and embedded NULs. */
static int s_text(s_ctx *c, const yaml_node_t *n, const char *path, const char **out)
{
    int rc = s_expect(c, n, YAML_SCALAR_NODE, path);
    if (rc < 0)
        return rc;
    const char *s = (const char *)n->data.scalar.value;
    if (strlen(s) != n->data.scalar.length)
        return s_fail(c, n, GX_EFORMAT, "%s: contains a NUL character", path);
    *out = s;
    return GX_OK;
}

/* A non-empty name. */
static int s_name(s_ctx *c, const yaml_node_t *n, const char *path, const char **out)
{
    int rc = s_text(c, n, path, out);
    if (rc < 0)
        return rc;
    if (!**out)
        return s_fail(c, n, GX_EFORMAT, "%s: empty name", path);
    return GX_OK;
}

/* Check a map's keys: scalars, each in allowed (NULL-terminated), no
 * duplicates. */
static int s_check_keys(s_ctx *c, const yaml_node_t *map, const char *path,
                        const char *const *allowed)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = s_get(c, p->key, map, path);
        const char *ks;
        if (!k)
            return c->status;
        if (k->type != YAML_SCALAR_NODE)
            return s_fail(c, k, GX_EFORMAT, "%s: keys must be scalars, got %s", path, s_kind(k));
        ks = (const char *)k->data.scalar.value;
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, ks) == 0;
        if (!known)
            return s_fail(c, k, GX_EFORMAT, "%s: unknown key '%s'", path, ks);
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = yaml_document_get_node(c->doc, q->key);
            if (k2 && strcmp((const char *)k2->data.scalar.value, ks) == 0)
                return s_fail(c, k, GX_EFORMAT, "%s: duplicate key '%s'", path, ks);
        }
    }
    return GX_OK;
}

/* The value of key in map (keys already checked), or NULL if absent. A
 * missing required key sets the error, as does a failed fetch; *rc tells. */
static yaml_node_t *s_lookup(s_ctx *c, const yaml_node_t *map, const char *key, bool required,
                             const char *path, int *rc)
{
    *rc = GX_OK;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE &&
            strcmp((const char *)k->data.scalar.value, key) == 0) {
            yaml_node_t *v = s_get(c, p->value, k, path);
            if (!v)
                *rc = c->status;
            return v;
        }
    }
    if (required)
        *rc = s_fail(c, map, GX_EFORMAT, "%s: missing required key '%s'", path, key);
    return NULL;
}

/* ---- scalars ------------------------------------------------------------ */

static bool s_ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* Classify a plain scalar's text as a number; *fv always gets the value as
 * a double, *iv the integer for S_NUM_INT. */
static s_num s_number(const char *s, int64_t *iv, double *fv)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (s_ieq(p, "inf") || s_ieq(p, "infinity") || s_ieq(p, ".inf")) {
        *fv = neg ? -INFINITY : INFINITY;
        return S_NUM_FLOAT;
    }
    if (s_ieq(p, "nan") || s_ieq(p, ".nan")) {
        *fv = NAN;
        return S_NUM_FLOAT;
    }
    /* digits [. digits] [e [sign] digits], or . digits [...] */
    const char *q = p;
    size_t int_digits = 0, frac_digits = 0;
    bool dot = false, exp = false;
    while (*q >= '0' && *q <= '9')
        q++, int_digits++;
    if (*q == '.') {
        dot = true;
        q++;
        while (*q >= '0' && *q <= '9')
            q++, frac_digits++;
    }
    if (int_digits + frac_digits == 0)
        return S_NUM_NONE;
    if (*q == 'e' || *q == 'E') {
        exp = true;
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!(*q >= '0' && *q <= '9'))
            return S_NUM_NONE;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q)
        return S_NUM_NONE;
    errno = 0;
    *fv = strtod(s, NULL);
    if (errno == ERANGE && isinf(*fv))
        return S_NUM_RANGE;
    if (dot || exp)
        return S_NUM_FLOAT;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return S_NUM_RANGE;
    *iv = v;
    return S_NUM_INT;
}

/* ---- dtypes and shapes -------------------------------------------------- */

static int s_dtype(s_ctx *c, const yaml_node_t *n, const char *path, gx_dtype *dt)
{
    const char *s = NULL;
    int rc = s_text(c, n, path, &s);
    if (rc < 0)
        return rc;
    if (gx_dtype_parse(s, dt) == GX_OK)
        return GX_OK;
    return s_fail(c, n, GX_EDTYPE,
                  "%s: unknown dtype '%s' (expected one of"
#define S_DTNAME(e, name, size, descr) " " name
                  GX_DTYPE_LIST(S_DTNAME)
#undef S_DTNAME
                  ")",
                  path, s);
}

static bool s_is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static int s_shape(s_ctx *c, const yaml_node_t *n, const char *path, s_shape_mode mode,
                   int *ndim, int64_t *shape)
{
    int rc = s_expect(c, n, YAML_SEQUENCE_NODE, path);
    if (rc < 0)
        return rc;
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count > GX_MAX_DIMS)
        return s_fail(c, n, GX_ELIMIT, "%s: %zu dimensions, at most %d are supported", path,
                      count, GX_MAX_DIMS);
    char ipath[160];
    for (size_t i = 0; i < count; i++) {
        s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
        yaml_node_t *d = s_get(c, n->data.sequence.items.start[i], n, ipath);
        const char *s = NULL;
        int64_t iv = 0;
        double fv;
        if (!d)
            return c->status;
        if ((rc = s_text(c, d, ipath, &s)) < 0)
            return rc;
        s_num kind = s_is_plain(d) ? s_number(s, &iv, &fv) : S_NUM_NONE;
        if (kind == S_NUM_INT && iv >= 0) {
            shape[i] = iv;
        } else if (mode == S_SHAPE_DECL && kind == S_NUM_INT && iv == -1) {
            shape[i] = -1;
        } else if (mode == S_SHAPE_DECL && kind == S_NUM_NONE && s_is_ident(s)) {
            shape[i] = -1; /* symbolic */
        } else if (kind == S_NUM_INT) {
            return s_fail(c, d, GX_ESHAPE, "%s: invalid dimension %lld%s", ipath, (long long)iv,
                          mode == S_SHAPE_DECL ? " (use -1 or a name for a symbolic dimension)"
                                               : " (constants need concrete dimensions >= 0)");
        } else {
            return s_fail(c, d, GX_ESHAPE, "%s: invalid dimension '%s' (expected %s)", ipath, s,
                          mode == S_SHAPE_DECL ? "an integer >= 0, -1 or a name"
                                               : "an integer >= 0");
        }
    }
    *ndim = (int)count;
    return GX_OK;
}

/* ---- half-precision conversion ------------------------------------------ */

/* x to a binary floating-point format with ebits exponent and mbits mantissa
 * bits (float16: 5/10, bfloat16: 8/7), rounding to nearest even. False if a
 * finite x rounds to infinity. */
static bool s_to_half(double x, int ebits, int mbits, uint16_t *out)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const uint32_t expmask = (1u << ebits) - 1;
    uint32_t sign = signbit(x) ? 1u << (ebits + mbits) : 0;
    double a = fabs(x);
    uint32_t bits;
    if (isnan(x)) {
        bits = expmask << mbits | 1u << (mbits - 1);
    } else if (isinf(x)) {
        bits = expmask << mbits;
    } else if (a < ldexp(1.0, 1 - bias)) {
        /* subnormal: multiples of 2^(1-bias-mbits); 1 << mbits becomes the
         * smallest normal by itself */
        bits = (uint32_t)nearbyint(ldexp(a, bias - 1 + mbits));
    } else {
        int e;
        frexp(a, &e);
        e -= 1; /* a = 1.m * 2^e */
        if (e > bias)
            return false;
        uint32_t m = (uint32_t)nearbyint(ldexp(a, mbits - e)) - (1u << mbits);
        bits = ((uint32_t)(e + bias) << mbits) + m; /* m == 1 << mbits carries */
        if (bits >= expmask << mbits)
            return false;
    }
    *out = (uint16_t)(sign | bits);
    return true;
}

/* ---- tensors ------------------------------------------------------------ */

/* One inline value of dtype dt into p (element i). */
static int s_value(s_ctx *c, const yaml_node_t *n, const char *path, gx_dtype dt, void *p,
                   size_t i)
{
    const char *s = NULL;
    int rc = s_text(c, n, path, &s);
    if (rc < 0)
        return rc;
    if (!s_is_plain(n))
        return s_fail(c, n, GX_EFORMAT, "%s: expected a number, got the quoted string '%s'", path,
                      s);
    if (dt == GX_BOOL) {
        uint8_t b;
        if (s_ieq(s, "true") || strcmp(s, "1") == 0)
            b = 1;
        else if (s_ieq(s, "false") || strcmp(s, "0") == 0)
            b = 0;
        else
            return s_fail(c, n, GX_EFORMAT, "%s: '%s' is not a bool (true, false, 0 or 1)", path,
                          s);
        ((uint8_t *)p)[i] = b;
        return GX_OK;
    }
    int64_t iv = 0;
    double fv = 0;
    s_num kind = s_number(s, &iv, &fv);
    const char *name = gx_dtype_name(dt);
    if (kind == S_NUM_NONE)
        return s_fail(c, n, GX_EFORMAT, "%s: '%s' is not a number", path, s);
    if (kind == S_NUM_RANGE)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);

    int64_t lo = 0, hi = 0;
    switch (dt) {
    case GX_F32:
        /* values below FLT_MAX + half an ulp round to FLT_MAX; converting
         * them with a cast would be undefined */
        if (isfinite(fv) && fabs(fv) >= ldexp(1.0, 128) - ldexp(1.0, 103))
            return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
        if (isfinite(fv) && fabs(fv) > FLT_MAX)
            fv = fv < 0 ? -FLT_MAX : FLT_MAX;
        ((float *)p)[i] = (float)fv;
        return GX_OK;
    case GX_F64:
        ((double *)p)[i] = fv;
        return GX_OK;
    case GX_F16:
    case GX_BF16: {
        uint16_t h;
        if (!(dt == GX_F16 ? s_to_half(fv, 5, 10, &h) : s_to_half(fv, 8, 7, &h)))
            return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
        ((uint16_t *)p)[i] = h;
        return GX_OK;
    }
    case GX_I64: lo = INT64_MIN, hi = INT64_MAX; break;
    case GX_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case GX_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case GX_U8: lo = 0, hi = UINT8_MAX; break;
    case GX_BOOL:
    case GX_DTYPE_COUNT:
        return s_fail(c, n, GX_EINTERNAL, "%s: unexpected dtype", path);
    }
    if (kind != S_NUM_INT)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is not an integer (dtype %s)", path, s, name);
    if (iv < lo || iv > hi)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
    switch (dt) {
    case GX_I64: ((int64_t *)p)[i] = iv; break;
    case GX_I32: ((int32_t *)p)[i] = (int32_t)iv; break;
    case GX_I8: ((int8_t *)p)[i] = (int8_t)iv; break;
    case GX_U8: ((uint8_t *)p)[i] = (uint8_t)iv; break;
    case GX_F32:
    case GX_F16:
    case GX_BF16:
    case GX_F64:
    case GX_BOOL:
    case GX_DTYPE_COUNT: break;
    }
    return GX_OK;
}

/* Inline data: a flat list (or one scalar) of exactly numel values. */
static int s_inline(s_ctx *c, const yaml_node_t *data, const char *path, gx_dtype dt, int ndim,
                    const int64_t *shape, gx_tensor **out)
{
    char sbuf[256], ipath[192];
    bool one = data->type == YAML_SCALAR_NODE;
    if (!one && data->type != YAML_SEQUENCE_NODE)
        return s_fail(c, data, GX_EFORMAT, "%s: expected a flat list of values, got %s", path,
                      s_kind(data));
    size_t count = one ? 1
                       : (size_t)(data->data.sequence.items.top - data->data.sequence.items.start);
    size_t nbytes;
    if (!gx_shape_nbytes(dt, ndim, shape, &nbytes))
        return s_fail(c, data, GX_ELIMIT, "%s: shape %s is too large", path,
                      gx_shape_str(ndim, shape, sbuf, sizeof sbuf));
    int64_t numel = gx_shape_numel(ndim, shape, INT64_MAX);
    if (numel < 0 || (uint64_t)numel != count)
        return s_fail(c, data, GX_ESHAPE, "%s: shape %s needs %lld values, got %zu", path,
                      gx_shape_str(ndim, shape, sbuf, sizeof sbuf), (long long)numel, count);
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    if (!t)
        return s_fail(c, data, GX_ENOMEM, "%s: out of memory for %zu bytes", path, nbytes);
    void *p = gx_tensor_data(t);
    int rc = GX_OK;
    if (one) {
        rc = s_value(c, data, path, dt, p, 0);
    } else {
        for (size_t i = 0; i < count && rc == GX_OK; i++) {
            s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
            yaml_node_t *v = s_get(c, data->data.sequence.items.start[i], data, ipath);
            rc = v ? s_value(c, v, ipath, dt, p, i) : c->status;
        }
    }
    if (rc < 0) {
        gx_tensor_destroy(&t);
        return rc;
    }
    *out = t;
    return GX_OK;
}

/* A tensor from a .npy file named relative to the YAML file's directory. */
static int s_npy_file(s_ctx *c, const yaml_node_t *fn, const char *path, gx_tensor **out)
{
    const char *file;
    int rc = s_name(c, fn, path, &file);
    if (rc < 0)
        return rc;
    char *full = NULL;
    if (file[0] != '/' && c->base_dir && c->base_dir[0]) {
        size_t n = strlen(c->base_dir) + strlen(file) + 2;
        if (!(full = malloc(n)))
            return s_fail(c, fn, GX_ENOMEM, "%s: out of memory", path);
        snprintf(full, n, "%s/%s", c->base_dir, file);
    }
    char nerr[512];
    rc = gx_npy_load(full ? full : file, out, nerr, sizeof nerr);
    free(full);
    if (rc < 0)
        return s_fail(c, fn, rc, "%s: %s", path, nerr);
    return GX_OK;
}

/* A tensor map: {dtype, shape, data} or {file} (dtype and shape then check
 * the file). The caller has checked the keys. */
static int s_tensor(s_ctx *c, const yaml_node_t *map, const char *path, gx_tensor **out)
{
    char kpath[192], sa[256], sb[256];
    int rc;
    gx_dtype dt = GX_DTYPE_COUNT;
    int ndim = -1;
    int64_t shape[GX_MAX_DIMS];

    *out = NULL;
    yaml_node_t *data = s_lookup(c, map, "data", false, path, &rc);
    if (rc < 0)
        return rc;
    yaml_node_t *file = s_lookup(c, map, "file", false, path, &rc);
    if (rc < 0)
        return rc;
    if (data && file)
        return s_fail(c, file, GX_EFORMAT, "%s: 'data' and 'file' are exclusive", path);
    if (!data && !file)
        return s_fail(c, map, GX_EFORMAT, "%s: needs 'data' (with dtype and shape) or 'file'",
                      path);
    yaml_node_t *dtn = s_lookup(c, map, "dtype", data != NULL, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.dtype", path);
    if (dtn && (rc = s_dtype(c, dtn, kpath, &dt)) < 0)
        return rc;
    yaml_node_t *shn = s_lookup(c, map, "shape", data != NULL, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.shape", path);
    if (shn && (rc = s_shape(c, shn, kpath, S_SHAPE_CONST, &ndim, shape)) < 0)
        return rc;

    if (data) {
        s_path(kpath, sizeof kpath, "%s.data", path);
        return s_inline(c, data, kpath, dt, ndim, shape, out);
    }
    s_path(kpath, sizeof kpath, "%s.file", path);
    gx_tensor *t;
    if ((rc = s_npy_file(c, file, kpath, &t)) < 0)
        return rc;
    if (dtn && t->dtype != dt) {
        rc = s_fail(c, dtn, GX_EDTYPE, "%s: dtype %s, but the file holds %s", path,
                    gx_dtype_name(dt), gx_dtype_name(t->dtype));
        gx_tensor_destroy(&t);
        return rc;
    }
    if (shn && (t->ndim != ndim || memcmp(t->shape, shape, sizeof(int64_t) * (size_t)ndim))) {
        rc = s_fail(c, shn, GX_ESHAPE, "%s: shape %s, but the file holds %s", path,
                    gx_shape_str(ndim, shape, sa, sizeof sa),
                    gx_shape_str(t->ndim, t->shape, sb, sizeof sb));
        gx_tensor_destroy(&t);
        return rc;
    }
    *out = t;
    return GX_OK;
}

/* ---- sections ----------------------------------------------------------- */

/* Calls fn for each item of the list under key (absent: nothing). */
typedef int (*s_item_fn)(s_ctx *c, gx_graph *g, const yaml_node_t *item, const char *path);

static int s_each(s_ctx *c, gx_graph *g, const yaml_node_t *root, const char *key, bool required,
                  s_item_fn fn)
{
    int rc;
    yaml_node_t *list = s_lookup(c, root, key, required, "top level", &rc);
    if (!list)
        return rc;
    if ((rc = s_expect(c, list, YAML_SEQUENCE_NODE, key)) < 0)
        return rc;
    char path[64];
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top;
         it++) {
        s_path(path, sizeof path, "%s[%zu]", key, (size_t)(it - list->data.sequence.items.start));
        yaml_node_t *item = s_get(c, *it, list, path);
        if (!item)
            return c->status;
        if ((rc = fn(c, g, item, path)) < 0)
            return rc;
    }
    return GX_OK;
}

static int s_builder_fail(s_ctx *c, const yaml_node_t *n, int rc, const char *path,
                          const char *what)
{
    return s_fail(c, n, rc, "%s: cannot add %s: %s", path, what, gx_strerror(rc));
}

static int s_input(s_ctx *c, gx_graph *g, const yaml_node_t *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", NULL};
    char kpath[96];
    const char *name;
    gx_dtype dt;
    int ndim, rc;
    int64_t shape[GX_MAX_DIMS];

    if ((rc = s_expect(c, item, YAML_MAPPING_NODE, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    yaml_node_t *nn = s_lookup(c, item, "name", true, path, &rc);
    if (!nn)
        return rc;
    yaml_node_t *dn = s_lookup(c, item, "dtype", true, path, &rc);
    if (!dn)
        return rc;
    yaml_node_t *sn = s_lookup(c, item, "shape", true, path, &rc);
    if (!sn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if ((rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.dtype", path);
    if ((rc = s_dtype(c, dn, kpath, &dt)) < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.shape", path);
    if ((rc = s_shape(c, sn, kpath, S_SHAPE_DECL, &ndim, shape)) < 0)
        return rc;
    if ((rc = gx_graph_add_input(g, name, dt, ndim, shape)) < 0)
        return s_builder_fail(c, item, rc, path, "input");
    return GX_OK;
}

static int s_output(s_ctx *c, gx_graph *g, const yaml_node_t *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", NULL};
    char kpath[96];
    const char *name;
    gx_dtype dt = GX_DTYPE_COUNT;
    int ndim = -1, rc;
    int64_t shape[GX_MAX_DIMS];

    if (item->type == YAML_SCALAR_NODE) {
        if ((rc = s_name(c, item, path, &name)) < 0)
            return rc;
    } else {
        if ((rc = s_expect(c, item, YAML_MAPPING_NODE, path)) < 0 ||
            (rc = s_check_keys(c, item, path, keys)) < 0)
            return rc;
        yaml_node_t *nn = s_lookup(c, item, "name", true, path, &rc);
        if (!nn)
            return rc;
        s_path(kpath, sizeof kpath, "%s.name", path);
        if ((rc = s_name(c, nn, kpath, &name)) < 0)
            return rc;
        yaml_node_t *dn = s_lookup(c, item, "dtype", false, path, &rc);
        if (rc < 0)
            return rc;
        s_path(kpath, sizeof kpath, "%s.dtype", path);
        if (dn && (rc = s_dtype(c, dn, kpath, &dt)) < 0)
            return rc;
        yaml_node_t *sn = s_lookup(c, item, "shape", false, path, &rc);
        if (rc < 0)
            return rc;
        s_path(kpath, sizeof kpath, "%s.shape", path);
        if (sn && (rc = s_shape(c, sn, kpath, S_SHAPE_DECL, &ndim, shape)) < 0)
            return rc;
        if (sn && !dn)
            return s_fail(c, sn, GX_EFORMAT, "%s: a declared shape needs a dtype too", path);
    }
    if ((rc = gx_graph_add_output_decl(g, name, dt, ndim, shape)) < 0)
        return s_builder_fail(c, item, rc, path, "output");
    return GX_OK;
}

static int s_constant(s_ctx *c, gx_graph *g, const yaml_node_t *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", "data", "file", NULL};
    char kpath[96];
    const char *name;
    gx_tensor *t;
    int rc;

    if ((rc = s_expect(c, item, YAML_MAPPING_NODE, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    yaml_node_t *nn = s_lookup(c, item, "name", true, path, &rc);
    if (!nn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if ((rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    if ((rc = s_tensor(c, item, path, &t)) < 0)
        return rc;
    if ((rc = gx_graph_add_const(g, name, &t)) < 0)
        return s_builder_fail(c, item, rc, path, "constant");
    return GX_OK;
}

/* One attribute, typed from its YAML form (see docs/graph-format.md). */
static int s_attr(s_ctx *c, gx_node *node, const char *name, const yaml_node_t *v,
                  const char *path)
{
    int rc;
    if (v->type == YAML_SCALAR_NODE) {
        const char *s = NULL;
        int64_t iv = 0;
        double fv = 0;
        if ((rc = s_text(c, v, path, &s)) < 0)
            return rc;
        s_num kind = s_is_plain(v) ? s_number(s, &iv, &fv) : S_NUM_NONE;
        if (kind == S_NUM_RANGE)
            return s_fail(c, v, GX_EATTR, "%s: %s is out of range", path, s);
        rc = kind == S_NUM_INT     ? gx_node_set_int(node, name, iv)
             : kind == S_NUM_FLOAT ? gx_node_set_float(node, name, fv)
                                   : gx_node_set_string(node, name, s);
    } else if (v->type == YAML_SEQUENCE_NODE) {
        size_t count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
        int64_t *ints = malloc((count ? count : 1) * sizeof *ints);
        double *floats = malloc((count ? count : 1) * sizeof *floats);
        bool any_float = false, reported = false;
        char ipath[192];
        if (!ints || !floats) {
            free(ints);
            free(floats);
            return s_fail(c, v, GX_ENOMEM, "%s: out of memory", path);
        }
        rc = GX_OK;
        for (size_t i = 0; i < count && rc == GX_OK; i++) {
            s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
            yaml_node_t *e = s_get(c, v->data.sequence.items.start[i], v, ipath);
            const char *s = NULL;
            reported = true; /* any failure in here is reported at once */
            if (!e) {
                rc = c->status;
                break;
            }
            if ((rc = s_text(c, e, ipath, &s)) < 0)
                break;
            s_num kind = s_is_plain(e) ? s_number(s, &ints[i], &floats[i]) : S_NUM_NONE;
            if (kind == S_NUM_NONE)
                rc = s_fail(c, e, GX_EATTR,
                            "%s: '%s' is not a number (list attributes hold ints or floats)",
                            ipath, s);
            else if (kind == S_NUM_RANGE)
                rc = s_fail(c, e, GX_EATTR, "%s: %s is out of range", ipath, s);
            any_float |= kind == S_NUM_FLOAT;
        }
        if (rc == GX_OK) {
            reported = false;
            rc = any_float ? gx_node_set_floats(node, name, floats, count)
                           : gx_node_set_ints(node, name, ints, count);
        }
        free(ints);
        free(floats);
        if (rc < 0 && reported)
            return rc;
    } else {
        static const char *const keys[] = {"dtype", "shape", "data", "file", NULL};
        gx_tensor *t;
        if ((rc = s_check_keys(c, v, path, keys)) < 0 || (rc = s_tensor(c, v, path, &t)) < 0)
            return rc;
        rc = gx_node_set_tensor(node, name, &t);
    }
    if (rc < 0)
        return s_fail(c, v, rc, "%s: cannot set attribute: %s", path, gx_strerror(rc));
    return GX_OK;
}

/* A list of value names; "" (omitted optional input) only if allow_empty. */
static int s_names(s_ctx *c, const yaml_node_t *list, const char *path, bool allow_empty,
                   const char ***out, size_t *count)
{
    int rc = s_expect(c, list, YAML_SEQUENCE_NODE, path);
    if (rc < 0)
        return rc;
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    const char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return s_fail(c, list, GX_ENOMEM, "%s: out of memory", path);
    char ipath[128];
    for (size_t i = 0; i < n; i++) {
        s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
        yaml_node_t *e = s_get(c, list->data.sequence.items.start[i], list, ipath);
        rc = !e            ? c->status
             : allow_empty ? s_text(c, e, ipath, &names[i])
                           : s_name(c, e, ipath, &names[i]);
        if (rc < 0) {
            free(names);
            return rc;
        }
    }
    *out = names;
    *count = n;
    return GX_OK;
}

static int s_node(s_ctx *c, gx_graph *g, const yaml_node_t *item, const char *path)
{
    static const char *const keys[] = {"op", "name", "inputs", "outputs", "attrs", NULL};
    char kpath[96], apath[192];
    const char *op, *name = NULL;
    const char **ins = NULL, **outs = NULL;
    size_t n_in = 0, n_out = 0;
    int rc;

    if ((rc = s_expect(c, item, YAML_MAPPING_NODE, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    yaml_node_t *opn = s_lookup(c, item, "op", true, path, &rc);
    if (!opn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.op", path);
    if ((rc = s_name(c, opn, kpath, &op)) < 0)
        return rc;
    yaml_node_t *nn = s_lookup(c, item, "name", false, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if (nn && (rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    yaml_node_t *in = s_lookup(c, item, "inputs", true, path, &rc);
    if (!in)
        return rc;
    yaml_node_t *out = s_lookup(c, item, "outputs", true, path, &rc);
    if (!out)
        return rc;
    yaml_node_t *attrs = s_lookup(c, item, "attrs", false, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.attrs", path);
    if (attrs && (rc = s_expect(c, attrs, YAML_MAPPING_NODE, kpath)) < 0)
        return rc;

    s_path(kpath, sizeof kpath, "%s.inputs", path);
    if ((rc = s_names(c, in, kpath, true, &ins, &n_in)) < 0)
        goto free_names;
    s_path(kpath, sizeof kpath, "%s.outputs", path);
    if ((rc = s_names(c, out, kpath, false, &outs, &n_out)) < 0)
        goto free_names;
    gx_node *node = gx_graph_add_node(g, op, name, n_in, ins, n_out, outs);
    if (!node) {
        rc = s_fail(c, item, GX_ENOMEM, "%s: cannot add node '%s'", path, op);
        goto free_names;
    }
    if (!attrs)
        goto free_names;
    s_path(kpath, sizeof kpath, "%s.attrs", path);
    if ((size_t)(attrs->data.mapping.pairs.top - attrs->data.mapping.pairs.start) > S_MAX_ATTRS) {
        rc = s_fail(c, attrs, GX_ELIMIT, "%s: more than %d attributes", kpath, S_MAX_ATTRS);
        goto free_names;
    }
    for (yaml_node_pair_t *p = attrs->data.mapping.pairs.start; p < attrs->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = s_get(c, p->key, attrs, kpath);
        const char *aname;
        if (!k) {
            rc = c->status;
            goto free_names;
        }
        if ((rc = s_name(c, k, kpath, &aname)) < 0)
            goto free_names;
        for (yaml_node_pair_t *q = attrs->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = yaml_document_get_node(c->doc, q->key);
            if (k2 && strcmp((const char *)k2->data.scalar.value, aname) == 0) {
                rc = s_fail(c, k, GX_EATTR, "%s: duplicate attribute '%s'", kpath, aname);
                goto free_names;
            }
        }
        s_path(apath, sizeof apath, "%s.attrs.%s", path, aname);
        yaml_node_t *v = s_get(c, p->value, k, apath);
        if (!v) {
            rc = c->status;
            goto free_names;
        }
        if ((rc = s_attr(c, node, aname, v, apath)) < 0)
            goto free_names;
    }
free_names:
    free(ins);
    free(outs);
    return rc;
}

/* ---- entry points ------------------------------------------------------- */

/* Line and column (1-based, in characters) of byte offset off in text. */
static void s_offset_pos(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; text && i < off && i < len; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            ++*col;
        }
    }
}

static int s_syntax_error(s_ctx *c, yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_MEMORY_ERROR)
        return gx_errf(c->err, c->errlen, GX_ENOMEM, "%s:1:1: out of memory parsing YAML", c->src);
    if (p->error == YAML_READER_ERROR) {
        size_t line, col;
        s_offset_pos(text, len, p->problem_offset, &line, &col);
        return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:%zu:%zu: %s", c->src, line, col,
                       p->problem ? p->problem : "invalid input");
    }
    char ctxbuf[256] = "";
    if (p->context)
        snprintf(ctxbuf, sizeof ctxbuf, " (%s at %zu:%zu)", p->context, p->context_mark.line + 1,
                 p->context_mark.column + 1);
    return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:%zu:%zu: YAML syntax error: %s%s", c->src,
                   p->problem_mark.line + 1, p->problem_mark.column + 1,
                   p->problem ? p->problem : "malformed YAML", ctxbuf);
}

/* Build the graph from the loaded document. */
static int s_build(s_ctx *c, gx_graph **out)
{
    static const char *const keys[] = {"name", "inputs", "outputs", "constants", "nodes", NULL};
    yaml_node_t *root = yaml_document_get_root_node(c->doc);
    const char *name = NULL;
    int rc;

    if (!root)
        return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:1:1: empty graph file", c->src);
    if (root->type != YAML_MAPPING_NODE)
        return s_fail(c, root, GX_EFORMAT, "top level: expected a map, got %s", s_kind(root));
    if ((rc = s_check_keys(c, root, "top level", keys)) < 0)
        return rc;
    yaml_node_t *nn = s_lookup(c, root, "name", false, "top level", &rc);
    if (rc < 0)
        return rc;
    if (nn && (rc = s_name(c, nn, "name", &name)) < 0)
        return rc;
    gx_graph *g = gx_graph_new(name);
    if (!g)
        return gx_errf(c->err, c->errlen, GX_ENOMEM, "%s:1:1: out of memory", c->src);
    if ((rc = s_each(c, g, root, "inputs", false, s_input)) < 0 ||
        (rc = s_each(c, g, root, "constants", false, s_constant)) < 0 ||
        (rc = s_each(c, g, root, "nodes", true, s_node)) < 0 ||
        (rc = s_each(c, g, root, "outputs", true, s_output)) < 0) {
        gx_graph_destroy(&g);
        return rc;
    }
    *out = g;
    return GX_OK;
}

GX_EXPORT int gx_graph_parse_yaml(const char *text, size_t len, const char *base_dir,
                                  const char *source_name, gx_graph **out, char *err,
                                  size_t errlen)
{
    const char *src = source_name ? source_name : "<yaml>";
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "%s:1:1: no output graph", src);
    *out = NULL;
    if (!text && len)
        return gx_errf(err, errlen, GX_EINVAL, "%s:1:1: NULL text", src);
    if (len > S_MAX_FILE)
        return gx_errf(err, errlen, GX_ELIMIT, "%s:1:1: graph file is %zu bytes, the limit is %zu",
                       src, len, S_MAX_FILE);

    yaml_parser_t parser;
    yaml_document_t doc;
    s_ctx c = {.doc = &doc, .src = src, .base_dir = base_dir, .err = err, .errlen = errlen};
    int rc;

    if (!yaml_parser_initialize(&parser))
        return gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", src);
    yaml_parser_set_input_string(&parser, (const unsigned char *)(text ? text : ""), len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = s_syntax_error(&c, &parser, text, len);
        goto free_parser;
    }
    c.max_visits = 4 * (size_t)(doc.nodes.top - doc.nodes.start) + 4096;
    rc = s_build(&c, out);
    if (rc == GX_OK) {
        /* A second document is a mistake (a stray '---'), not something to
         * ignore. */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            rc = s_syntax_error(&c, &parser, text, len);
        } else {
            yaml_node_t *r = yaml_document_get_root_node(&next);
            if (r)
                rc = gx_errf(err, errlen, GX_EFORMAT,
                             "%s:%zu:%zu: more than one YAML document in a graph file", src,
                             r->start_mark.line + 1, r->start_mark.column + 1);
            yaml_document_delete(&next);
        }
        if (rc < 0)
            gx_graph_destroy(out);
    }
    yaml_document_delete(&doc);
free_parser:
    yaml_parser_delete(&parser);
    return rc;
}

/* Read a whole file of at most S_MAX_FILE bytes. */
static int s_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s:1:1: %s", path, strerror(errno));
    struct stat st;
    int rc = GX_OK;
    char *buf = NULL;
    size_t cap = 1 << 16, n = 0;
    if (fstat(fileno(f), &st) != 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: %s", path, strerror(errno));
        goto close_file;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: is a directory", path);
        goto close_file;
    }
    if (S_ISREG(st.st_mode)) {
        if ((uint64_t)st.st_size > S_MAX_FILE) {
            rc = gx_errf(err, errlen, GX_ELIMIT,
                         "%s:1:1: graph file is %lld bytes, the limit is %zu", path,
                         (long long)st.st_size, S_MAX_FILE);
            goto close_file;
        }
        cap = (size_t)st.st_size + 1;
    }
    for (;;) {
        if (n == cap || !buf) {
            size_t ncap = buf ? cap * 2 : cap;
            char *nb;
            if (buf && cap > S_MAX_FILE) {
                rc = gx_errf(err, errlen, GX_ELIMIT, "%s:1:1: graph file exceeds %zu bytes",
                             path, S_MAX_FILE);
                goto close_file;
            }
            if (!(nb = realloc(buf, ncap))) {
                rc = gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", path);
                goto close_file;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: read error", path);
            break;
        }
    }
close_file:
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return GX_OK;
}

GX_EXPORT int gx_graph_load_yaml(const char *path, gx_graph **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_yaml: no output graph");
    *out = NULL;
    if (!path)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_yaml: no path");
    char *text = NULL, *dir;
    size_t len = 0;
    int rc = s_read_file(path, &text, &len, err, errlen);
    if (rc < 0)
        return rc;
    const char *slash = strrchr(path, '/');
    if (!slash)
        dir = gx_strdup(".");
    else if (slash == path)
        dir = gx_strdup("/");
    else if ((dir = malloc((size_t)(slash - path) + 1)) != NULL) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    if (!dir)
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", path);
    else
        rc = gx_graph_parse_yaml(text, len, dir, path, out, err, errlen);
    free(dir);
    free(text);
    return rc;
}
