/*
 * Schemas of the text family (GX_OPS_TEXT in ops/op.h). TfIdfVectorizer
 * (opset 9) counts, per row of int32 or int64 token ids ([C] or [N, C]),
 * the n-grams of a pool given as attributes: pool_int64s holds the 1-grams,
 * then the 2-grams..., ngram_counts[k] where the (k+1)-grams start;
 * ngram_indexes[i] is the output column of the pool's i-th n-gram. The
 * output is float32 [1 + max(ngram_indexes)] or [N, that]. A pool of
 * strings (pool_strings) is not supported: gexec has no string tensors.
 */
#include <string.h>

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

static int s_infer_tfidf(gx_infer *ic)
{
    const gx_view *x = &ic->in[0];
    const gx_attrval *at = ic->attr;
    const int64_t lo = at[GX_TFIDF_MIN_GRAM_LENGTH].i, hi = at[GX_TFIDF_MAX_GRAM_LENGTH].i;
    const int64_t skip = at[GX_TFIDF_MAX_SKIP_COUNT].i;
    const gx_attrval *cnt = &at[GX_TFIDF_NGRAM_COUNTS], *ix = &at[GX_TFIDF_NGRAM_INDEXES];
    const gx_attrval *pool = &at[GX_TFIDF_POOL_INT64S], *w = &at[GX_TFIDF_WEIGHTS];
    const char *mode = at[GX_TFIDF_MODE].s;
    if (x->dtype != GX_I64 && x->dtype != GX_I32)
        return gx_infer_errf(ic, GX_EDTYPE,
                             "TfIdfVectorizer: input is %s; int32 or int64 token ids needed "
                             "(gexec has no string tensors)",
                             gx_dtype_name(x->dtype));
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
    if (!pool->set)
        return gx_infer_errf(ic, GX_EATTR, "TfIdfVectorizer: pool_int64s is missing");
    /* the pool's n-grams, size by size */
    size_t n_grams = 0;
    for (size_t k = 0; k < cnt->n; k++) {
        int64_t b = cnt->ints[k], e = k + 1 < cnt->n ? cnt->ints[k + 1] : (int64_t)pool->n;
        if (b < 0 || e < b || e > (int64_t)pool->n || (e - b) % (int64_t)(k + 1) != 0)
            return gx_infer_errf(ic, GX_EATTR,
                                 "TfIdfVectorizer: ngram_counts[%zu] = %lld does not start a "
                                 "whole number of %zu-grams within the pool of %zu",
                                 k, (long long)b, k + 1, pool->n);
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
                 (double)at[GX_TFIDF_MAX_GRAM_LENGTH].i * (double)at[GX_TFIDF_POOL_INT64S].n;
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
    .n_attrs = GX_TFIDF_NATTRS, .infer = s_infer_tfidf, .cost = s_cost_tfidf,
    .batch = s_batch_tfidf,
};
