/*
 * TfIdfVectorizer on the CPU (token ids or strings), as ONNX's reference counts: for each skip
 * distance d in 1..max_skip_count+1 and each start position, the n-grams
 * x[s], x[s+d], ..., of lengths min_gram_length..max_gram_length found in
 * the pool add 1 to their column; 1-grams are counted at d = 1 only. A
 * pool n-gram is found by a scan of the pool's n-grams of its length (the
 * first match wins). Then IDF writes weight (1 without weights) where the
 * count is nonzero, TFIDF count x weight. Threads take whole rows.
 */
#include <string.h>

#include "ops/cpu/cpu.h"

/* The pool's n-grams of length n: [*b, *e) of pool_int64s and the number
 * of the first among all the pool's n-grams; false if there are none. */
static bool s_grams(const gx_attrval *at, int64_t n, int64_t *b, int64_t *e, int64_t *first)
{
    const gx_attrval *cnt = &at[GX_TFIDF_NGRAM_COUNTS];
    const int64_t pool_n = gx_tfidf_pool_size(at);
    if (n < 1 || (size_t)n > cnt->n)
        return false;
    *first = 0;
    for (int64_t k = 0; k < n; k++) {
        *b = cnt->ints[k];
        *e = (size_t)k + 1 < cnt->n ? cnt->ints[k + 1] : pool_n;
        if (k + 1 < n)
            *first += (*e - *b) / (k + 1);
    }
    return *e > *b;
}

/* Is pool entry p the same token as token i of row x (int32, int64 or
 * strings)? */
static bool s_same(const gx_attrval *at, int64_t p, const gx_view *x, const void *row, int64_t i)
{
    const gx_tensor *ps = at[GX_TFIDF_POOL_STRINGS].t;
    if (ps)
        return gx_str_eq(((const gx_strrec *const *)gx_tensor_cdata(ps))[p],
                         ((const gx_strrec *const *)row)[i]);
    const int64_t v = at[GX_TFIDF_POOL_INT64S].ints[p];
    return v == (x->dtype == GX_I32 ? ((const int32_t *)row)[i] : ((const int64_t *)row)[i]);
}

/* Adds 1 to the column of the pool n-gram x[s], x[s+d], ... of length n. */
static void s_count(const gx_attrval *at, const gx_view *x, const void *row, int64_t s,
                    int64_t d, int64_t n, float *y)
{
    int64_t b, e, first;
    if (!s_grams(at, n, &b, &e, &first))
        return;
    for (int64_t g = 0; b + g * n < e; g++) {
        int64_t j = 0;
        while (j < n && s_same(at, b + g * n + j, x, row, s + j * d))
            j++;
        if (j == n) {
            y[at[GX_TFIDF_NGRAM_INDEXES].ints[first + g]] += 1;
            return;
        }
    }
}

void gx_cpu_TFIDF_VECTORIZER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *yv = &k->out[0];
    const gx_attrval *at = k->attr;
    const int64_t rows = x->ndim == 2 ? x->shape[0] : 1, c = x->shape[x->ndim - 1];
    const int64_t cols = gx_tfidf_columns(at);
    const int64_t lo_n = at[GX_TFIDF_MIN_GRAM_LENGTH].i, hi_n = at[GX_TFIDF_MAX_GRAM_LENGTH].i;
    const int64_t max_d = at[GX_TFIDF_MAX_SKIP_COUNT].i + 1;
    const char *mode = at[GX_TFIDF_MODE].s;
    const gx_attrval *w = &at[GX_TFIDF_WEIGHTS];
    const size_t es = gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, rows, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const void *row = (const char *)x->data + (size_t)(r * c) * es;
        float *y = (float *)yv->data + r * cols;
        memset(y, 0, (size_t)cols * sizeof *y);
        int64_t start_n = lo_n;
        for (int64_t d = 1; d <= max_d; d++) {
            for (int64_t s = 0; s + d * (start_n - 1) < c; s++)
                for (int64_t n = start_n; n <= hi_n && s + (n - 1) * d < c; n++)
                    s_count(at, x, row, s, d, n, y);
            /* 1-grams do not depend on the skip distance */
            if (start_n == 1 && ++start_n > hi_n)
                break;
        }
        if (strcmp(mode, "TF") == 0)
            continue;
        const bool idf = strcmp(mode, "IDF") == 0;
        for (int64_t j = 0; j < cols; j++) {
            float wt = w->set ? (float)w->floats[j] : 1.0f;
            y[j] = idf ? (y[j] > 0 ? wt : 0) : y[j] * wt;
        }
    }
}

/* ---- the string ops (docs/strings.md): their strings go to the job's
 * string heap; a full heap gives "" and fails the job after the step ---- */

/* A heap copy of s[0..n) mapped by case action act ("NONE": as it is). */
static const gx_strrec *s_cased(gx_strheap *h, const gx_strrec *r, const char *act)
{
    const char *s = gx_str_bytes(r);
    const size_t n = gx_str_len(r);
    if (strcmp(act, "NONE") == 0 || n == 0)
        return r; /* the same string: a handle copy */
    const bool up = strcmp(act, "UPPER") == 0;
    const size_t m = gx_text_case(s, n, up, NULL);
    const gx_strrec *out = gx_strheap_add(h, NULL, m);
    if (out)
        gx_text_case(s, n, up, (char *)out->bytes);
    return out;
}

/* One thread: the output's length depends on every element before. */
void gx_cpu_STRING_NORMALIZER(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_strrec *const *xs = x->data;
    const gx_strrec **ys = y->data;
    const char *act = k->attr[GX_STRNORM_CASE_CHANGE_ACTION].s;
    int64_t n = 0;
    for (int64_t i = 0; i < x->numel; i++)
        if (!gx_strnorm_drops(k->attr, xs[i]))
            ys[n++] = s_cased(k->strs, xs[i], act);
    if (n == 0 && y->numel == 1)
        ys[0] = NULL; /* every string dropped: one "" */
}

void gx_cpu_STRING_CONCAT(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, 1, &lo, &hi);
    if (lo >= hi)
        return;
    int64_t strides[2][GX_MAX_DIMS];
    for (int i = 0; i < 2; i++)
        gx_bcast_strides(y->ndim, k->in[i].ndim, k->in[i].shape, strides[i]);
    gx_nditer it;
    gx_nditer_init(&it, y->ndim, y->shape, 2, (const int64_t *const[]){strides[0], strides[1]});
    gx_nditer_seek(&it, lo, hi);
    const gx_strrec *const *a = k->in[0].data, *const *b = k->in[1].data;
    const gx_strrec **ys = y->data;
    gx_nditer_run r;
    while (gx_nditer_next(&it, &r)) {
        for (int64_t j = 0; j < r.n; j++) {
            const gx_strrec *sa = a[r.off[0] + j * it.step[0]], *sb = b[r.off[1] + j * it.step[1]];
            const size_t na = gx_str_len(sa), nb = gx_str_len(sb);
            const gx_strrec *out = !nb ? sa : !na ? sb : gx_strheap_add(k->strs, NULL, na + nb);
            if (out && na && nb) {
                memcpy((char *)out->bytes, sa->bytes, na);
                memcpy((char *)out->bytes + na, sb->bytes, nb);
            }
            ys[r.y + j] = out;
        }
    }
}

typedef struct s_split_ctx {
    gx_strheap *heap;
    const gx_strrec **row;
} s_split_ctx;

static void s_split_put(void *ctx, int64_t i, const char *p, size_t n)
{
    s_split_ctx *c = ctx;
    c->row[i] = gx_strheap_add(c->heap, p, n);
}

/* Elements are split apart: threads take whole elements. */
void gx_cpu_STRING_SPLIT(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t w = y->shape[y->ndim - 1];
    const gx_strrec *const *xs = x->data;
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, 1, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        s_split_ctx c = {k->strs, (const gx_strrec **)y->data + i * w};
        int64_t n = gx_strsplit(k->attr, xs[i], s_split_put, &c);
        for (int64_t j = n; j < w; j++)
            c.row[j] = NULL;
        if (k->n_out > 1)
            ((int64_t *)k->out[1].data)[i] = n;
    }
}
