/*
 * Schemas of the text family (GX_OPS_TEXT in ops/op.h). TfIdfVectorizer
 * (opset 9) counts, per row of int32 or int64 token ids ([C] or [N, C]),
 * the n-grams of a pool given as attributes: pool_int64s holds the 1-grams,
 * then the 2-grams..., ngram_counts[k] where the (k+1)-grams start;
 * ngram_indexes[i] is the output column of the pool's i-th n-gram. The
 * output is float32 [1 + max(ngram_indexes)] or [N, that]. With a pool of
 * strings (pool_strings) the input is string tokens, compared byte for
 * byte.
 *
 * The string ops (docs/strings.md) make new strings in the job's string
 * heap (gx_kargs.strs); the shapes of StringNormalizer's and StringSplit's
 * outputs follow from the strings, so they are known at compile time for
 * constants only and are otherwise found at run time (GX_INFER_DYNAMIC; no
 * value_inputs: a plan is never keyed on strings).
 */
#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

#include "ops/schema.h"

static const gx_attr_spec s_tfidf_attrs[] = {
    [GX_TFIDF_MAX_GRAM_LENGTH] = {.name = "max_gram_length", .type = GX_ATTR_INT,
                                  .required = true},
    [GX_TFIDF_MAX_SKIP_COUNT] = {.name = "max_skip_count", .type = GX_ATTR_INT,
                                 .required = true},
    [GX_TFIDF_MIN_GRAM_LENGTH] = {.name = "min_gram_length", .type = GX_ATTR_INT,
                                  .required = true},
    [GX_TFIDF_MODE] = {.name = "mode", .type = GX_ATTR_STRING, .required = true},
    [GX_TFIDF_NGRAM_COUNTS] = {.name = "ngram_counts", .type = GX_ATTR_INTS, .required = true},
    [GX_TFIDF_NGRAM_INDEXES] = {.name = "ngram_indexes", .type = GX_ATTR_INTS,
                                .required = true},
    [GX_TFIDF_POOL_INT64S] = {.name = "pool_int64s", .type = GX_ATTR_INTS},
    [GX_TFIDF_WEIGHTS] = {.name = "weights", .type = GX_ATTR_FLOATS},
    [GX_TFIDF_POOL_STRINGS] = {.name = "pool_strings", .type = GX_ATTR_TENSOR},
};
_Static_assert(sizeof s_tfidf_attrs / sizeof s_tfidf_attrs[0] == GX_TFIDF_NATTRS,
               "TfIdfVectorizer attrs");

/* Output columns at most (a dense float32 row each), and the longest
 * n-gram. */
#define S_MAX_COLUMNS ((int64_t)1 << 24)
#define S_MAX_GRAM 1024

int64_t gx_tfidf_columns(const gx_attrval *attr)
{
    const gx_attrval *ix = &attr[GX_TFIDF_NGRAM_INDEXES];
    int64_t m = -1;
    for (size_t i = 0; i < ix->n; i++)
        m = ix->ints[i] > m ? ix->ints[i] : m;
    return m + 1;
}

int64_t gx_tfidf_pool_size(const gx_attrval *attr)
{
    const gx_tensor *ps = attr[GX_TFIDF_POOL_STRINGS].t;
    return ps ? gx_tensor_numel(ps) : (int64_t)attr[GX_TFIDF_POOL_INT64S].n;
}

static int s_infer_tfidf(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const gx_attrval *at = ic->attr;
    const int64_t lo = at[GX_TFIDF_MIN_GRAM_LENGTH].i, hi = at[GX_TFIDF_MAX_GRAM_LENGTH].i;
    const int64_t skip = at[GX_TFIDF_MAX_SKIP_COUNT].i;
    const gx_attrval *cnt = &at[GX_TFIDF_NGRAM_COUNTS], *ix = &at[GX_TFIDF_NGRAM_INDEXES];
    const gx_attrval *pool = &at[GX_TFIDF_POOL_INT64S], *w = &at[GX_TFIDF_WEIGHTS];
    const char *mode = at[GX_TFIDF_MODE].s;
    const gx_tensor *ps = at[GX_TFIDF_POOL_STRINGS].t;
    if (pool->set == (ps != NULL))
        return gx_infer_errf(ic, GX_EATTR,
                             "TfIdfVectorizer: exactly one of pool_int64s and pool_strings needed");
    if (ps && (gx_tensor_dtype(ps) != GX_STRING || gx_tensor_ndim(ps) != 1))
        return gx_infer_errf(ic, GX_EATTR, "TfIdfVectorizer: pool_strings must be a list of strings");
    if (ps ? x->dtype != GX_STRING : x->dtype != GX_I64 && x->dtype != GX_I32)
        return gx_infer_errf(ic, GX_EDTYPE, "TfIdfVectorizer: input is %s; %s needed",
                             gx_dtype_name(x->dtype),
                             ps ? "string tokens (the pool is pool_strings)"
                                : "int32 or int64 token ids (the pool is pool_int64s)");
    if (x->ndim != 1 && x->ndim != 2)
        return gx_infer_errf(ic, GX_ESHAPE, "TfIdfVectorizer: input has rank %d; [C] or [N, C]",
                             x->ndim);
    if (strcmp(mode, "TF") != 0 && strcmp(mode, "IDF") != 0 && strcmp(mode, "TFIDF") != 0)
        return gx_infer_errf(ic, GX_EATTR, "TfIdfVectorizer: mode \"%s\" is not TF, IDF or TFIDF",
                             mode);
    if (lo < 1 || hi < lo || skip < 0 || hi > S_MAX_GRAM)
        return gx_infer_errf(ic, GX_EATTR,
                             "TfIdfVectorizer: gram lengths %lld..%lld and max_skip_count %lld; "
                             "1 <= min <= max <= %d and a count >= 0 needed",
                             (long long)lo, (long long)hi, (long long)skip, S_MAX_GRAM);
    const size_t pool_n = (size_t)gx_tfidf_pool_size(at);
    /* the pool's n-grams, size by size */
    size_t n_grams = 0;
    for (size_t k = 0; k < cnt->n; k++) {
        int64_t b = cnt->ints[k], e = k + 1 < cnt->n ? cnt->ints[k + 1] : (int64_t)pool_n;
        if (b < 0 || e < b || e > (int64_t)pool_n || (e - b) % (int64_t)(k + 1) != 0)
            return gx_infer_errf(ic, GX_EATTR,
                                 "TfIdfVectorizer: ngram_counts[%zu] = %lld does not start a "
                                 "whole number of %zu-grams within the pool of %zu",
                                 k, (long long)b, k + 1, pool_n);
        n_grams += (size_t)(e - b) / (k + 1);
    }
    if (ix->n != n_grams)
        return gx_infer_errf(ic, GX_EATTR,
                             "TfIdfVectorizer: %zu ngram_indexes for the pool's %zu n-grams",
                             ix->n, n_grams);
    for (size_t i = 0; i < ix->n; i++)
        if (ix->ints[i] < 0 || ix->ints[i] >= S_MAX_COLUMNS)
            return gx_infer_errf(ic, GX_EATTR,
                                 "TfIdfVectorizer: ngram_indexes[%zu] = %lld is out of [0, %lld)",
                                 i, (long long)ix->ints[i], (long long)S_MAX_COLUMNS);
    int64_t cols = gx_tfidf_columns(at);
    if (w->set && (int64_t)w->n < cols)
        return gx_infer_errf(ic, GX_EATTR,
                             "TfIdfVectorizer: %zu weights for %lld output columns", w->n,
                             (long long)cols);
    int64_t shape[2] = {x->shape[0], cols};
    if (x->ndim == 1)
        gx_view_set(&ic->out[0], GX_F32, 1, &cols);
    else
        gx_view_set(&ic->out[0], GX_F32, 2, shape);
    return GX_OK;
}

/* per token, per skip, per gram length: a scan of the pool's n-grams */
static gx_cost s_cost_tfidf(const gx_infer *ic)
{
    const gx_attrval *at = ic->attr;
    double per = (double)(at[GX_TFIDF_MAX_SKIP_COUNT].i + 1) *
                 (double)at[GX_TFIDF_MAX_GRAM_LENGTH].i * (double)gx_tfidf_pool_size(at);
    return (gx_cost){.flops = per * (double)gx_view_numel(&ic->in[0]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* Rows are counted apart: a row of the batch is a row of the output. */
static bool s_batch_tfidf(const gx_batch_ctx *bc)
{
    bc->out_batched[0] = bc->in_batched[0];
    return !bc->in_batched[0] || bc->in[0].ndim == 2;
}

const gx_op_schema gx_schema_TFIDF_VECTORIZER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_tfidf_attrs,
    .n_attrs = GX_TFIDF_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_tfidf,
    .cost = s_cost_tfidf,
    .batch = s_batch_tfidf,
};

/* ---- case mapping ---- */

/* The C.UTF-8 locale for towupper_l/towlower_l, made once; (locale_t)0
 * where the system lacks it (then ASCII only). Never changed after. */
static locale_t s_utf8_locale;
static pthread_once_t s_utf8_once = PTHREAD_ONCE_INIT;

static void s_utf8_init(void)
{
    s_utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* The code point at p (n bytes left): its length, or 0 when the bytes
 * are not UTF-8 (one byte then passes as it is). */
static size_t s_utf8_dec(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    size_t len = (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || len > n)
        return 0;
    uint32_t c = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

static size_t s_utf8_enc(uint32_t c, unsigned char *out)
{
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xc0 | c >> 6);
        out[1] = (unsigned char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xe0 | c >> 12);
        out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | c >> 18);
    out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (c & 0x3f));
    return 4;
}

static uint32_t s_map(uint32_t c, bool up)
{
    if (c < 0x80)
        return up ? (c >= 'a' && c <= 'z' ? c - 32 : c) : (c >= 'A' && c <= 'Z' ? c + 32 : c);
    pthread_once(&s_utf8_once, s_utf8_init);
    if (!s_utf8_locale)
        return c;
    wint_t m = up ? towupper_l((wint_t)c, s_utf8_locale) : towlower_l((wint_t)c, s_utf8_locale);
    return m <= 0x10ffff && !(m >= 0xd800 && m <= 0xdfff) ? (uint32_t)m : c;
}

size_t gx_text_case(const char *s, size_t n, bool up, char *dst)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0, out = 0;
    while (at < n) {
        uint32_t c;
        unsigned char buf[4];
        size_t len = s_utf8_dec(p + at, n - at, &c);
        if (!len) { /* not UTF-8: the byte as it is */
            if (dst)
                dst[out] = (char)p[at];
            out++, at++;
            continue;
        }
        size_t m = s_utf8_enc(s_map(c, up), buf);
        if (dst)
            memcpy(dst + out, buf, m);
        out += m, at += len;
    }
    return out;
}

bool gx_text_eq_nocase(const char *a, size_t na, const char *b, size_t nb)
{
    const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        uint32_t ca, cb;
        size_t la = s_utf8_dec(p + i, na - i, &ca), lb = s_utf8_dec(q + j, nb - j, &cb);
        if (!la)
            ca = 0x110000u + p[i], la = 1; /* raw bytes match only themselves */
        if (!lb)
            cb = 0x110000u + q[j], lb = 1;
        if (ca != cb && (ca > 0x10ffff || cb > 0x10ffff || s_map(ca, false) != s_map(cb, false)))
            return false;
        i += la, j += lb;
    }
    return i == na && j == nb;
}

/* ---- StringNormalizer (opset 10) ---- */

static const gx_attr_spec s_strnorm_attrs[] = {
    [GX_STRNORM_CASE_CHANGE_ACTION] = {.name = "case_change_action", .type = GX_ATTR_STRING,
                                       .def_s = "NONE"},
    [GX_STRNORM_IS_CASE_SENSITIVE] = {.name = "is_case_sensitive", .type = GX_ATTR_INT},
    [GX_STRNORM_LOCALE] = {.name = "locale", .type = GX_ATTR_STRING, .def_s = ""},
    [GX_STRNORM_STOPWORDS] = {.name = "stopwords", .type = GX_ATTR_TENSOR},
};
_Static_assert(sizeof s_strnorm_attrs / sizeof s_strnorm_attrs[0] == GX_STRNORM_NATTRS,
               "StringNormalizer attrs");

bool gx_strnorm_drops(const gx_attrval *attr, const gx_strrec *r)
{
    const gx_tensor *sw = attr[GX_STRNORM_STOPWORDS].t;
    const bool cs = attr[GX_STRNORM_IS_CASE_SENSITIVE].i != 0;
    for (int64_t i = 0; sw && i < gx_tensor_numel(sw); i++) {
        size_t n;
        const char *w = gx_tensor_string(sw, i, &n);
        if (cs ? n == gx_str_len(r) && memcmp(w, gx_str_bytes(r), n) == 0
               : gx_text_eq_nocase(w, n, gx_str_bytes(r), gx_str_len(r)))
            return true;
    }
    return false;
}

/* The input: [C] or [1, C] strings; the output: the strings not dropped
 * (one "" when every one is), in the same rank. */
static int s_infer_strnorm(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const char *act = ic->attr[GX_STRNORM_CASE_CHANGE_ACTION].s;
    const gx_tensor *sw = ic->attr[GX_STRNORM_STOPWORDS].t;
    if (x->dtype != GX_STRING || x->kind != GX_KIND_TENSOR)
        return gx_infer_errf(ic, GX_EDTYPE, "StringNormalizer: input is %s; strings needed",
                             gx_dtype_name(x->dtype));
    if (!(x->ndim == 1 || (x->ndim == 2 && x->shape[0] == 1))) {
        char sh[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "StringNormalizer: input has shape %s; [C] or [1, C]",
                             gx_shape_str(x->ndim, x->shape, sh, sizeof sh));
    }
    if (strcmp(act, "NONE") != 0 && strcmp(act, "LOWER") != 0 && strcmp(act, "UPPER") != 0)
        return gx_infer_errf(ic, GX_EATTR,
                             "StringNormalizer: case_change_action \"%s\" is not NONE, LOWER or UPPER",
                             act);
    if (sw && (gx_tensor_dtype(sw) != GX_STRING || gx_tensor_ndim(sw) != 1))
        return gx_infer_errf(ic, GX_EATTR, "StringNormalizer: stopwords must be a list of strings");
    int64_t shape[2] = {1, 0};
    gx_view_set(&ic->out[0], GX_STRING, x->ndim, x->ndim == 1 ? shape + 1 : shape);
    if (!x->data)
        return GX_INFER_DYNAMIC;
    int64_t kept = 0;
    const gx_strrec *const *h = x->data;
    for (int64_t i = 0; i < x->numel; i++)
        kept += !gx_strnorm_drops(ic->attr, h[i]);
    shape[1] = kept ? kept : 1;
    gx_view_set(&ic->out[0], GX_STRING, x->ndim, x->ndim == 1 ? shape + 1 : shape);
    return GX_OK;
}

static gx_cost s_cost_strings(const gx_infer *ic)
{
    double n = 0;
    for (int i = 0; i < ic->n_in; i++)
        n += (double)gx_view_numel(&ic->in[i]);
    for (int i = 0; i < ic->n_out; i++)
        n += (double)gx_view_numel(&ic->out[i]);
    return (gx_cost){.flops = 16 * n, .bytes = 32 * n};
}

const gx_op_schema gx_schema_STRING_NORMALIZER = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .attrs = s_strnorm_attrs,
    .n_attrs = GX_STRNORM_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_strnorm,
    .cost = s_cost_strings,
};

/* ---- StringConcat (opset 20): x + y elementwise, broadcast ---- */

static int s_infer_strconcat(gx_infer *ic)
{
    const gx_view *a = &ic->in[0], *b = &ic->in[1];
    int nd;
    int64_t shape[GX_MAX_DIMS];
    if (a->dtype != GX_STRING || b->dtype != GX_STRING)
        return gx_infer_errf(ic, GX_EDTYPE, "StringConcat: inputs are %s and %s; strings needed",
                             gx_dtype_name(a->dtype), gx_dtype_name(b->dtype));
    if (!gx_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) {
        char sa[GX_SHAPE_STRLEN], sb[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "StringConcat: shapes %s and %s are not broadcastable",
                             gx_shape_str(a->ndim, a->shape, sa, sizeof sa),
                             gx_shape_str(b->ndim, b->shape, sb, sizeof sb));
    }
    gx_view_set(&ic->out[0], GX_STRING, nd, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_STRING_CONCAT = {
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1, .flags = GX_OPF_STRINGS,
    .infer = s_infer_strconcat, .cost = s_cost_strings,
};

/* ---- StringSplit (opset 20): Python's str.split ---- */

static const gx_attr_spec s_strsplit_attrs[] = {
    [GX_STRSPLIT_DELIMITER] = {.name = "delimiter", .type = GX_ATTR_STRING, .def_s = ""},
    [GX_STRSPLIT_MAXSPLIT] = {.name = "maxsplit", .type = GX_ATTR_INT, .def_i = -1},
};
_Static_assert(sizeof s_strsplit_attrs / sizeof s_strsplit_attrs[0] == GX_STRSPLIT_NATTRS,
               "StringSplit attrs");

static bool s_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int64_t gx_strsplit(const gx_attrval *attr, const gx_strrec *r,
                    void (*fn)(void *ctx, int64_t i, const char *p, size_t n), void *ctx)
{
    const char *d = attr[GX_STRSPLIT_DELIMITER].s;
    const size_t dn = strlen(d);
    const int64_t max = attr[GX_STRSPLIT_MAXSPLIT].set && attr[GX_STRSPLIT_MAXSPLIT].i >= 0
                            ? attr[GX_STRSPLIT_MAXSPLIT].i
                            : INT64_MAX;
    const char *s = gx_str_bytes(r);
    size_t n = gx_str_len(r), at = 0;
    int64_t k = 0;
    if (dn == 0) { /* runs of whitespace; none at the ends */
        while (true) {
            while (at < n && s_space(s[at]))
                at++;
            if (at == n)
                return k;
            size_t end = at;
            if (k == max) { /* the rest, trailing spaces included, as Python does */
                if (fn)
                    fn(ctx, k, s + at, n - at);
                return k + 1;
            }
            while (end < n && !s_space(s[end]))
                end++;
            if (fn)
                fn(ctx, k, s + at, end - at);
            k++;
            at = end;
        }
    }
    while (true) {
        const char *hit = NULL;
        if (k < max)
            for (size_t i = at; i + dn <= n && !hit; i++)
                if (memcmp(s + i, d, dn) == 0)
                    hit = s + i;
        size_t end = hit ? (size_t)(hit - s) : n;
        if (fn)
            fn(ctx, k, s + at, end - at);
        k++;
        if (!hit)
            return k;
        at = end + dn;
    }
}

/* Outputs: Y, x's shape + [the most substrings of any element] ("" past
 * an element's own), and Z, int64 x's shape: each element's count. */
static int s_infer_strsplit(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    if (x->dtype != GX_STRING || x->kind != GX_KIND_TENSOR)
        return gx_infer_errf(ic, GX_EDTYPE, "StringSplit: input is %s; strings needed",
                             gx_dtype_name(x->dtype));
    if (x->ndim >= GX_MAX_DIMS)
        return gx_infer_errf(ic, GX_ELIMIT, "StringSplit: input has rank %d; at most %d",
                             x->ndim, GX_MAX_DIMS - 1);
    int64_t shape[GX_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof shape[0]);
    shape[x->ndim] = 0;
    gx_view_set(&ic->out[0], GX_STRING, x->ndim + 1, shape);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_I64, x->ndim, x->shape);
    if (!x->data)
        return GX_INFER_DYNAMIC;
    const gx_strrec *const *h = x->data;
    int64_t most = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = gx_strsplit(ic->attr, h[i], NULL, NULL);
        most = k > most ? k : most;
    }
    shape[x->ndim] = most;
    gx_view_set(&ic->out[0], GX_STRING, x->ndim + 1, shape);
    return GX_OK;
}

const gx_op_schema gx_schema_STRING_SPLIT = {
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 2, .attrs = s_strsplit_attrs,
    .n_attrs = GX_STRSPLIT_NATTRS, .flags = GX_OPF_STRINGS, .infer = s_infer_strsplit,
    .cost = s_cost_strings,
};
