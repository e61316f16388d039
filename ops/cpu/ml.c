/*
 * The ai.onnx.ml ops on the CPU (ops/schema_ml.c says what each computes).
 * Numeric inputs are read as doubles whatever their dtype; scores are
 * computed in double and stored as float32. The post transforms and the
 * binary classifiers' score columns follow ONNX Runtime (ml_common.h
 * there), which the spec leaves open: PROBIT is sqrt(2) erfinv(2x - 1) with
 * the same erfinv approximation, SOFTMAX_ZERO leaves zero scores zero.
 * Elementwise ops share elements, row ops rows; a tree ensemble's shares
 * cooperate: one builds its nodes in the scratch (sorting opsets 1-3's
 * ids to find children and leaf weights by binary search), then they
 * share blocks of rows. An SVMClassifier runs in one share.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "ops/cpu/cpu.h"

static double s_get(const gx_view *x, int64_t i)
{
    if (x->dtype == GX_F32)
        return ((const float *)x->data)[i];
    if (x->dtype == GX_F64)
        return ((const double *)x->data)[i];
    if (x->dtype == GX_I64)
        return (double)((const int64_t *)x->data)[i];
    return ((const int32_t *)x->data)[i]; /* the schemas let nothing else in */
}

static void s_put(const gx_view *y, int64_t i, double v)
{
    if (y->dtype == GX_F32)
        ((float *)y->data)[i] = (float)v;
    else if (y->dtype == GX_F64)
        ((double *)y->data)[i] = v;
    else if (y->dtype == GX_I64)
        ((int64_t *)y->data)[i] = (int64_t)v;
    else
        ((int32_t *)y->data)[i] = (int32_t)v;
}

/* Rows and columns of a [C] or [N, C] input. */
static void s_shape(const gx_view *x, int64_t *n, int64_t *c)
{
    *n = x->ndim == 2 ? x->shape[0] : 1;
    *c = x->shape[x->ndim - 1];
}

/* ---- the post transforms ---- */

static float s_erfinv(float x)
{
    const float sgn = x < 0 ? -1.0f : 1.0f;
    x = (1 - x) * (1 + x);
    const float l = logf(x);
    const float v = 2 / (3.14159f * 0.147f) + 0.5f * l;
    const float v2 = 1 / 0.147f * l;
    const float v3 = -v + sqrtf(v * v - v2);
    return sgn * sqrtf(v3);
}

static double s_probit(double v)
{
    return 1.41421356f * s_erfinv((float)(2 * v - 1));
}

static double s_logistic(double v)
{
    const double e = 1 / (1 + exp(-fabs(v)));
    return v < 0 ? 1 - e : e;
}

/* The transform t over s[0..m) (m >= 2, or a regressor's m == 1 where
 * only PROBIT applies). */
static void s_transform(double *s, int64_t m, int t)
{
    double mx = -INFINITY, sum = 0;
    switch (t) {
    case GX_ML_PROBIT:
        for (int64_t j = 0; j < m; j++)
            s[j] = s_probit(s[j]);
        break;
    case GX_ML_LOGISTIC:
        for (int64_t j = 0; j < m && m > 1; j++)
            s[j] = s_logistic(s[j]);
        break;
    case GX_ML_SOFTMAX:
        if (m < 2)
            break;
        for (int64_t j = 0; j < m; j++)
            mx = s[j] > mx ? s[j] : mx;
        for (int64_t j = 0; j < m; j++)
            sum += (s[j] = exp(s[j] - mx));
        for (int64_t j = 0; j < m; j++)
            s[j] /= sum;
        break;
    case GX_ML_SOFTMAX_ZERO:
        if (m < 2)
            break;
        for (int64_t j = 0; j < m; j++)
            mx = s[j] > mx ? s[j] : mx;
        for (int64_t j = 0; j < m; j++)
            if (s[j] > 1e-7 || s[j] < -1e-7)
                sum += (s[j] = exp(s[j] - mx));
            else
                s[j] *= exp(-mx);
        for (int64_t j = 0; j < m; j++)
            s[j] /= sum;
        break;
    default:
        break;
    }
}

/* ONNX Runtime's write_scores: m scores (1 with a binary classifier's
 * second column made from the first by how, -1: none) into z[0..k),
 * columns not written 0. */
static void s_write_scores(double *s, int64_t m, int t, int how, float *z, int64_t k)
{
    double two[2];
    if (m >= 2) {
        s_transform(s, m, t);
    } else if (m == 1 && t == GX_ML_PROBIT) {
        s[0] = s_probit(s[0]);
    } else if (m == 1 && how >= 0) {
        const double v = s[0];
        if (how <= 1)
            two[0] = 1 - v, two[1] = v;
        else if (t == GX_ML_LOGISTIC)
            two[0] = s_logistic(-v), two[1] = s_logistic(v);
        else if (how == 2)
            two[0] = -v, two[1] = v;
        else
            two[0] = v, two[1] = -v;
        s = two, m = 2;
    }
    for (int64_t j = 0; j < k; j++)
        z[j] = j < m ? (float)s[j] : 0.0f;
}

/* ---- LabelEncoder ---- */

/* The i-th of a key or value list as a double (int64, float lists). */
static double s_list_num(const gx_labenc_list *l, int64_t i)
{
    if (l->dtype == GX_F64)
        return ((const double *)l->data)[i];
    if (l->dtype == GX_F32)
        return ((const float *)l->data)[i];
    return (double)((const int64_t *)l->data)[i];
}

/* A string of the attribute s made once per share, in the job's heap. */
static const gx_strrec *s_made(const gx_kargs *k, const char *s, const gx_strrec **cache)
{
    if (!*cache && *s)
        *cache = gx_strheap_add(k->strs, s, strlen(s));
    return *cache;
}

static void s_labenc_v1(const gx_kargs *k, int64_t lo, int64_t hi)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_tensor *cs = k->attr[GX_LABENC_CLASSES_STRINGS].t;
    const gx_strrec *const *c = gx_tensor_cdata(cs);
    const int64_t n = gx_tensor_numel(cs);
    const gx_strrec *def = NULL;
    for (int64_t i = lo; i < hi; i++) {
        if (x->dtype == GX_STRING) {
            const gx_strrec *v = ((const gx_strrec *const *)x->data)[i];
            int64_t j = 0;
            while (j < n && !gx_str_eq(c[j], v))
                j++;
            ((int64_t *)y->data)[i] = j < n ? j : k->attr[GX_LABENC_DEFAULT_INT64].i;
        } else {
            const int64_t v = ((const int64_t *)x->data)[i];
            ((const gx_strrec **)y->data)[i] =
                v >= 0 && v < n ? c[v] : s_made(k, k->attr[GX_LABENC_DEFAULT_STRING].s, &def);
        }
    }
}

/* Keys are compared as they are: strings byte for byte, int64 exactly,
 * float32 by value with NaN equal to NaN. The first equal key wins. */
void gx_cpu_LABEL_ENCODER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    if (lo >= hi)
        return;
    if (k->attr[GX_LABENC_CLASSES_STRINGS].t) {
        s_labenc_v1(k, lo, hi);
        return;
    }
    gx_labenc_list ks, vs;
    gx_labenc_side(k->attr, false, &ks);
    gx_labenc_side(k->attr, true, &vs);
    const gx_tensor *dt = k->attr[GX_LABENC_DEFAULT_TENSOR].t;
    const gx_strrec *def_s = NULL;
    for (int64_t i = lo; i < hi; i++) {
        int64_t j = 0;
        if (x->dtype == GX_STRING) {
            const gx_strrec *v = ((const gx_strrec *const *)x->data)[i];
            const gx_strrec *const *kk = ks.data;
            while (j < ks.n && !gx_str_eq(kk[j], v))
                j++;
        } else if (x->dtype == GX_I64) {
            const int64_t v = ((const int64_t *)x->data)[i];
            const int64_t *kk = ks.data;
            while (j < ks.n && kk[j] != v)
                j++;
        } else {
            const float v = ((const float *)x->data)[i];
            while (j < ks.n) {
                const float kv = (float)s_list_num(&ks, j);
                if (kv == v || (isnan(kv) && isnan(v)))
                    break;
                j++;
            }
        }
        const bool hit = j < ks.n;
        if (y->dtype == GX_STRING) {
            const gx_strrec *r;
            if (hit)
                r = ((const gx_strrec *const *)vs.data)[j];
            else if (dt)
                r = ((const gx_strrec *const *)gx_tensor_cdata(dt))[0];
            else
                r = s_made(k, k->attr[GX_LABENC_DEFAULT_STRING].s, &def_s);
            ((const gx_strrec **)y->data)[i] = r;
        } else if (y->dtype == GX_I64) {
            ((int64_t *)y->data)[i] = hit ? ((const int64_t *)vs.data)[j]
                                      : dt ? ((const int64_t *)gx_tensor_cdata(dt))[0]
                                           : k->attr[GX_LABENC_DEFAULT_INT64].i;
        } else {
            ((float *)y->data)[i] = hit  ? (float)s_list_num(&vs, j)
                                    : dt ? ((const float *)gx_tensor_cdata(dt))[0]
                                         : (float)k->attr[GX_LABENC_DEFAULT_FLOAT].f;
        }
    }
}

/* ---- Scaler, Normalizer, Binarizer, Imputer ---- */

void gx_cpu_SCALER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_attrval *off = &k->attr[GX_SCALER_OFFSET], *sc = &k->attr[GX_SCALER_SCALE];
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    float *yd = y->data;
    for (int64_t i = lo; i < hi; i++) {
        const int64_t j = i % c;
        const float o = (float)off->floats[off->n == 1 ? 0 : j];
        const float s = (float)sc->floats[sc->n == 1 ? 0 : j];
        yd[i] = ((float)s_get(x, i) - o) * s;
    }
}

void gx_cpu_NORMALIZER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const char *norm = k->attr[GX_NORMALIZER_NORM].s;
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, n, 1, &lo, &hi);
    float *yd = y->data;
    for (int64_t r = lo; r < hi; r++) {
        double d = 0;
        if (strcmp(norm, "MAX") == 0) {
            d = -INFINITY;
            for (int64_t j = 0; j < c; j++)
                d = fmax(d, s_get(x, r * c + j));
        } else if (strcmp(norm, "L1") == 0) {
            for (int64_t j = 0; j < c; j++)
                d += fabs(s_get(x, r * c + j));
        } else {
            for (int64_t j = 0; j < c; j++)
                d += s_get(x, r * c + j) * s_get(x, r * c + j);
            d = sqrt(d);
        }
        for (int64_t j = 0; j < c; j++) {
            const double v = s_get(x, r * c + j);
            yd[r * c + j] = (float)(d != 0 ? v / d : v);
        }
    }
}

void gx_cpu_BINARIZER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const double t = (float)k->attr[GX_BINARIZER_THRESHOLD].f;
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        s_put(y, i, s_get(x, i) > t ? 1 : 0);
}

void gx_cpu_IMPUTER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    if (x->dtype == GX_F32) {
        const gx_attrval *iv = &k->attr[GX_IMPUTER_IMPUTED_VALUE_FLOATS];
        const float rv = (float)k->attr[GX_IMPUTER_REPLACED_VALUE_FLOAT].f;
        const float *xd = x->data;
        float *yd = y->data;
        for (int64_t i = lo; i < hi; i++) {
            const bool miss = isnan(rv) ? isnan(xd[i]) : xd[i] == rv;
            yd[i] = miss ? (float)iv->floats[iv->n == 1 ? 0 : i % c] : xd[i];
        }
    } else {
        const gx_attrval *iv = &k->attr[GX_IMPUTER_IMPUTED_VALUE_INT64S];
        const int64_t rv = k->attr[GX_IMPUTER_REPLACED_VALUE_INT64].i;
        const int64_t *xd = x->data;
        int64_t *yd = y->data;
        for (int64_t i = lo; i < hi; i++)
            yd[i] = xd[i] == rv ? iv->ints[iv->n == 1 ? 0 : i % c] : xd[i];
    }
}

/* ---- ArrayFeatureExtractor: moves elements of any size ---- */

void gx_cpu_ARRAY_FEATURE_EXTRACTOR(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t c = x->shape[x->ndim - 1], m = y->shape[y->ndim - 1];
    const int64_t *ix = k->in[1].data;
    const size_t es = gx_dtype_size(x->dtype);
    int64_t lo, hi;
    gx_cpu_share(k, y->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        memcpy((char *)y->data + i * es, (const char *)x->data + ((i / m) * c + ix[i % m]) * es,
               es);
}

/* ---- OneHotEncoder, FeatureVectorizer ---- */

void gx_cpu_ONE_HOT_ENCODER(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t m = y->shape[y->ndim - 1];
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, 1, &lo, &hi);
    float *yd = y->data;
    for (int64_t i = lo; i < hi; i++) {
        const int64_t j = gx_ohe_find(k->attr, x, i);
        memset(yd + i * m, 0, (size_t)m * sizeof *yd);
        if (j >= 0)
            yd[i * m + j] = 1;
    }
}

/* Each input's first inputdimensions[i] columns, zeros past its own. */
void gx_cpu_FEATURE_VECTORIZER(const gx_kargs *k)
{
    const gx_view *y = &k->out[0];
    const int64_t n = y->shape[0], w = y->shape[1];
    const gx_attrval *d = &k->attr[GX_FEATVEC_INPUTDIMENSIONS];
    int64_t lo, hi;
    gx_cpu_share(k, n, 1, &lo, &hi);
    float *yd = y->data;
    for (int64_t r = lo; r < hi; r++) {
        int64_t at = 0;
        for (int i = 0; i < k->n_in; i++) {
            const gx_view *x = &k->in[i];
            const int64_t c = x->shape[x->ndim - 1];
            for (int64_t j = 0; j < d->ints[i]; j++)
                yd[r * w + at + j] = j < c ? (float)s_get(x, r * c + j) : 0.0f;
            at += d->ints[i];
        }
    }
}

/* ---- LinearRegressor, LinearClassifier ---- */

#define S_ROW_MAX 256 /* scores a row holds on the stack; more go in the output */

void gx_cpu_LINEAR_REGRESSOR(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t e = k->attr[GX_LINREG_TARGETS].i;
    const int t = gx_ml_transform(k->attr[GX_LINREG_POST_TRANSFORM].s);
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, n, 1, &lo, &hi);
    float *yd = y->data;
    for (int64_t r = lo; r < hi; r++) {
        double buf[S_ROW_MAX];
        for (int64_t t0 = 0; t0 < e; t0 += S_ROW_MAX) {
            /* targets are independent until a transform mixes them */
            const int64_t m = e - t0 < S_ROW_MAX ? e - t0 : S_ROW_MAX;
            for (int64_t q = 0; q < m; q++) {
                double v = k->attr[GX_LINREG_INTERCEPTS].n
                               ? (float)k->attr[GX_LINREG_INTERCEPTS].floats[t0 + q]
                               : 0;
                for (int64_t j = 0; j < c; j++)
                    v += s_get(x, r * c + j) *
                         (float)k->attr[GX_LINREG_COEFFICIENTS].floats[(t0 + q) * c + j];
                buf[q] = v;
            }
            for (int64_t q = 0; q < m; q++)
                yd[r * e + t0 + q] = (float)buf[q];
        }
        if (t == GX_ML_NONE || (e == 1 && t != GX_ML_PROBIT))
            continue;
        /* the transform over the row as stored */
        if (e <= S_ROW_MAX) {
            for (int64_t q = 0; q < e; q++)
                buf[q] = yd[r * e + q];
            s_transform(buf, e, t);
            for (int64_t q = 0; q < e; q++)
                yd[r * e + q] = (float)buf[q];
        } else {
            for (int64_t q = 0; q < e; q++) { /* elementwise ones only past S_ROW_MAX */
                double v = yd[r * e + q];
                if (t == GX_ML_PROBIT)
                    v = s_probit(v);
                else if (t == GX_ML_LOGISTIC)
                    v = 1 / (1 + exp(-v));
                yd[r * e + q] = (float)v;
            }
        }
    }
}

void gx_cpu_LINEAR_CLASSIFIER(const gx_kargs *k)
{
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t e = (int64_t)a[GX_LINCLS_INTERCEPTS].n;
    const int t = gx_ml_transform(a[GX_LINCLS_POST_TRANSFORM].s);
    const gx_tensor *ls = a[GX_LINCLS_CLASSLABELS_STRINGS].t;
    const gx_strrec *const *lstr = ls ? gx_tensor_cdata(ls) : NULL;
    const int64_t nl = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_LINCLS_CLASSLABELS_INTS].n;
    const bool two = e == 1 && nl == 2;
    const gx_strrec *one_s = NULL, *zero_s = NULL;
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, n, 1, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        double buf[S_ROW_MAX + 1], *s = buf;
        float *z = k->n_out > 1 ? (float *)k->out[1].data + r * (two ? 2 : e) : NULL;
        if (e > S_ROW_MAX)
            s = NULL; /* scores straight into z below */
        int64_t best = 0;
        double bw = -INFINITY;
        for (int64_t q = 0; q < e; q++) {
            double v = a[GX_LINCLS_INTERCEPTS].n ? (float)a[GX_LINCLS_INTERCEPTS].floats[q] : 0;
            for (int64_t j = 0; j < c; j++)
                v += s_get(x, r * c + j) * (float)a[GX_LINCLS_COEFFICIENTS].floats[q * c + j];
            if (q == 0 || v > bw)
                bw = v, best = q;
            if (s)
                s[q] = v;
            else if (z)
                z[q] = (float)v;
        }
        if (e == 1) { /* binary: the sign of the one score */
            const bool pos = bw > 0;
            if (ls)
                ((const gx_strrec **)y->data)[r] =
                    nl == 2 ? lstr[pos ? 1 : 0]
                            : pos ? s_made(k, "1", &one_s) : s_made(k, "0", &zero_s);
            else
                ((int64_t *)y->data)[r] =
                    nl == 2 ? a[GX_LINCLS_CLASSLABELS_INTS].ints[pos ? 1 : 0] : pos ? 1 : 0;
        } else if (ls) {
            ((const gx_strrec **)y->data)[r] = lstr[best];
        } else {
            ((int64_t *)y->data)[r] = a[GX_LINCLS_CLASSLABELS_INTS].ints[best];
        }
        if (!z)
            continue;
        if (s) {
            if (e == 1 && two && t == GX_ML_LOGISTIC) { /* as ONNX Runtime 1.2x */
                s[0] = s_logistic(s[0]);
                s_write_scores(s, 1, GX_ML_NONE, 1, z, 2);
            } else if (e == 1) {
                s_write_scores(s, 1, t, two ? 1 : -1, z, two ? 2 : 1);
            }
            else
                s_write_scores(s, e, t, -1, z, e);
        } else if (t == GX_ML_PROBIT || t == GX_ML_LOGISTIC) {
            for (int64_t q = 0; q < e; q++)
                z[q] = (float)(t == GX_ML_PROBIT ? s_probit(z[q]) : 1 / (1 + exp(-z[q])));
        }
    }
}

/* ---- tree ensembles ---- */

/* One representation for every opset's trees (gx_tree_node): nodes, the
 * roots' positions, the leaves' weights and BRANCH_MEMBER's sets, laid out
 * in the scratch; one walker. */
typedef struct s_forest {
    int64_t *hdr; /* the roots' count, set by the share that builds */
    gx_tree_key *nk, *wk;
    gx_tree_node *nodes;
    gx_tree_weight *wt;
    double *members;
    int64_t *roots;
    int64_t n, n_roots;
    double *score; /* a row's scores */
    unsigned char *has;
} s_forest;

static void s_forest_layout(const gx_kargs *k, s_forest *f, int64_t n, int64_t w, int64_t m,
                            int64_t n_out)
{
    char *p = k->scratch;
    f->hdr = (int64_t *)p, p += 64;
    f->n = n;
    f->nk = (gx_tree_key *)p, p += n * sizeof(gx_tree_key);
    f->wk = (gx_tree_key *)p, p += w * sizeof(gx_tree_key);
    f->nodes = (gx_tree_node *)p, p += n * sizeof(gx_tree_node);
    f->roots = (int64_t *)p, p += n * sizeof(int64_t);
    f->wt = (gx_tree_weight *)p, p += w * sizeof(gx_tree_weight);
    f->members = (double *)p, p += m * sizeof(double);
    f->score = (double *)p, p += GX_TREE_BLOCKS * n_out * sizeof(double);
    f->has = (unsigned char *)p; /* GX_TREE_BLOCKS * n_out */
}

/* Opsets 1 and 3: nodes found by (tree, node) ids (the schema checked
 * every child exists); the roots are the nodes no branch leads to. */
static void s_forest_build(const gx_kargs *k, s_forest *f, int64_t n_out, bool fill)
{
    const gx_attrval *a = k->attr;
    const int64_t n = (int64_t)a[GX_TREE_NODES_NODEIDS].n, w = (int64_t)a[GX_TREE_W_IDS].n;
    s_forest_layout(k, f, n, w, 0, n_out);
    if (!fill)
        return;
    const int64_t *tid = a[GX_TREE_NODES_TREEIDS].ints, *nid = a[GX_TREE_NODES_NODEIDS].ints;
    for (int64_t i = 0; i < n; i++)
        f->nk[i] = (gx_tree_key){tid[i], nid[i], i};
    for (int64_t i = 0; i < w; i++)
        f->wk[i] = (gx_tree_key){a[GX_TREE_W_TREEIDS].ints[i], a[GX_TREE_W_NODEIDS].ints[i], i};
    gx_tree_sort(f->nk, (size_t)n);
    gx_tree_sort(f->wk, (size_t)w);
    for (int64_t p = 0; p < w; p++)
        f->wt[p] = (gx_tree_weight){a[GX_TREE_W_IDS].ints[f->wk[p].idx],
                                    gx_ml_num(a, GX_TREE_W_WEIGHTS, GX_TREE_W_WEIGHTS_AS_TENSOR,
                                              f->wk[p].idx)};
    const gx_strrec *const *modes = gx_tensor_cdata(a[GX_TREE_NODES_MODES].t);
    const gx_attrval *mv = &a[GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE];
    memset(f->roots, 0, (size_t)n * sizeof *f->roots);
    for (int64_t i = 0; i < n; i++) {
        gx_tree_node *nd = &f->nodes[i];
        *nd = (gx_tree_node){.yes = -1, .no = -1, .mode = gx_tree_mode(modes[i]),
                             .feature = a[GX_TREE_NODES_FEATUREIDS].ints[i],
                             .value = gx_ml_num(a, GX_TREE_NODES_VALUES,
                                                GX_TREE_NODES_VALUES_AS_TENSOR, i),
                             .nan_yes = mv->n && mv->ints[i]};
        if (nd->mode != GX_TREE_LEAF) {
            nd->yes = f->nk[gx_tree_find(f->nk, (size_t)n, tid[i],
                                         a[GX_TREE_NODES_TRUENODEIDS].ints[i])]
                          .idx;
            nd->no = f->nk[gx_tree_find(f->nk, (size_t)n, tid[i],
                                        a[GX_TREE_NODES_FALSENODEIDS].ints[i])]
                         .idx;
            f->roots[nd->yes] = f->roots[nd->no] = 1;
        }
        int64_t lo = gx_tree_find(f->wk, (size_t)w, tid[i], nid[i]), hi = lo;
        while (lo >= 0 && hi < w && f->wk[hi].tree == tid[i] && f->wk[hi].node == nid[i])
            hi++;
        nd->wlo = lo < 0 ? 0 : lo;
        nd->whi = lo < 0 ? 0 : hi;
    }
    f->n_roots = 0; /* the nodes no branch leads to, in order */
    for (int64_t i = 0; i < n; i++)
        if (!f->roots[i])
            f->roots[f->n_roots++] = i;
    *f->hdr = f->n_roots;
}

/* Opset 5: interior node i at i, leaf j at ni + j with its one weight;
 * BRANCH_MEMBER's sets copied in order (the schema checked each has one). */
static void s_forest_build5(const gx_kargs *k, s_forest *f, int64_t n_out, bool fill)
{
    const gx_attrval *a = k->attr;
    const int64_t ni = (int64_t)a[GX_TREE5_NODES_FEATUREIDS].n;
    const int64_t nl = (int64_t)a[GX_TREE5_LEAF_TARGETIDS].n;
    const gx_tensor *mvt = a[GX_TREE5_MEMBERSHIP_VALUES].t, *lw = a[GX_TREE5_LEAF_WEIGHTS].t;
    const gx_tensor *sp = a[GX_TREE5_NODES_SPLITS].t;
    const int64_t nm = mvt ? gx_tensor_numel(mvt) : 0;
    const bool dbl = gx_tensor_dtype(lw) == GX_F64;
    s_forest_layout(k, f, ni + nl, nl, nm, n_out);
    if (!fill)
        return;
#define S_NUM(t, i)                                                                           \
    (dbl ? ((const double *)gx_tensor_cdata(t))[i] : (double)((const float *)gx_tensor_cdata(t))[i])
    for (int64_t i = 0; i < nm; i++)
        f->members[i] = S_NUM(mvt, i);
    const uint8_t *md = gx_tensor_cdata(a[GX_TREE5_NODES_MODES].t);
    const gx_attrval *mv = &a[GX_TREE5_NODES_MISSING_VALUE_TRACKS_TRUE];
    int64_t at = 0;
    for (int64_t i = 0; i < ni; i++) {
        const int64_t t = a[GX_TREE5_NODES_TRUENODEIDS].ints[i];
        const int64_t e = a[GX_TREE5_NODES_FALSENODEIDS].ints[i];
        gx_tree_node *nd = &f->nodes[i];
        *nd = (gx_tree_node){
            .yes = a[GX_TREE5_NODES_TRUELEAFS].ints[i] ? ni + t : t,
            .no = a[GX_TREE5_NODES_FALSELEAFS].ints[i] ? ni + e : e,
            .mode = md[i] == 6 ? GX_TREE_MEMBER : md[i],
            .feature = a[GX_TREE5_NODES_FEATUREIDS].ints[i],
            .value = S_NUM(sp, i),
            .nan_yes = mv->n && mv->ints[i],
        };
        if (md[i] == 6) {
            nd->mlo = at;
            while (at < nm && !isnan(f->members[at]))
                at++;
            nd->mhi = at++;
        }
    }
    for (int64_t j = 0; j < nl; j++) {
        f->nodes[ni + j] = (gx_tree_node){.yes = -1, .no = -1, .wlo = j, .whi = j + 1,
                                          .mode = GX_TREE_LEAF};
        f->wt[j] = (gx_tree_weight){a[GX_TREE5_LEAF_TARGETIDS].ints[j], S_NUM(lw, j)};
    }
#undef S_NUM
    f->n_roots = (int64_t)a[GX_TREE5_TREE_ROOTS].n;
    for (int64_t r = 0; r < f->n_roots; r++) {
        const int64_t i = a[GX_TREE5_TREE_ROOTS].ints[r];
        f->roots[r] = gx_tree5_root_is_leaf(a, i) ? ni + i : i;
    }
    *f->hdr = f->n_roots;
}

typedef void (*s_forest_build_fn)(const gx_kargs *k, s_forest *f, int64_t n_out, bool fill);
typedef void (*s_forest_rows_fn)(const gx_kargs *k, const s_forest *f, int64_t lo, int64_t hi);

/* The shares split the work into units (gx_coop): unit 0 builds the
 * forest in the scratch, units 1 to GX_TREE_BLOCKS are blocks of rows,
 * each with its own row scores, run once unit 0 is done. Without a
 * gx_coop share 0 does it all. */
static void s_forest_run(const gx_kargs *k, int64_t n_out, s_forest_build_fn build,
                         s_forest_rows_fn rows)
{
    const bool coop = k->coop && k->nth > 1;
    if (!coop && k->ith != 0)
        return;
    int64_t n, c;
    s_shape(&k->in[0], &n, &c);
    const int64_t blocks = n < GX_TREE_BLOCKS ? n : GX_TREE_BLOCKS;
    gx_coop own = {0}, *co = coop ? k->coop : &own;
    s_forest f;
    build(k, &f, n_out, false);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&co->next, 1, memory_order_relaxed);
        if (u > blocks)
            return;
        if (u == 0) {
            build(k, &f, n_out, true);
        } else {
            gx_cpu_coop_wait(&co->done, 1);
            s_forest b = f;
            b.n_roots = *f.hdr;
            b.score = f.score + (u - 1) * n_out;
            b.has = f.has + (u - 1) * n_out;
            rows(k, &b, n * (u - 1) / blocks, n * u / blocks);
        }
        atomic_fetch_add_explicit(&co->done, 1, memory_order_release);
    }
}

/* The leaf row x reaches from root i (at most n steps: a cycle stops). */
static int64_t s_walk(const s_forest *f, const gx_view *x, int64_t off, int64_t i)
{
    for (int64_t step = 0; step < f->n && f->nodes[i].yes >= 0; step++) {
        const gx_tree_node *nd = &f->nodes[i];
        const double v = s_get(x, off + nd->feature), th = nd->value;
        bool go = false;
        switch (nd->mode) {
        case GX_TREE_LEQ: go = v <= th; break;
        case GX_TREE_LT: go = v < th; break;
        case GX_TREE_GTE: go = v >= th; break;
        case GX_TREE_GT: go = v > th; break;
        case GX_TREE_EQ: go = v == th; break;
        case GX_TREE_MEMBER:
            for (int64_t p = nd->mlo; p < nd->mhi && !go; p++)
                go = v == f->members[p];
            break;
        default: go = v != th; break;
        }
        if (isnan(v) && nd->nan_yes)
            go = true;
        i = go ? nd->yes : nd->no;
    }
    return i;
}

/* Row r's scores aggregated (agg: 0 sum, 1 min, 2 max) over the trees. */
static void s_forest_row(const s_forest *f, const gx_view *x, int64_t r, int64_t c, int64_t k,
                         int agg)
{
    memset(f->score, 0, (size_t)k * sizeof *f->score);
    memset(f->has, 0, (size_t)k);
    for (int64_t t = 0; t < f->n_roots; t++) {
        const gx_tree_node *leaf = &f->nodes[s_walk(f, x, r * c, f->roots[t])];
        for (int64_t p = leaf->wlo; p < leaf->whi; p++) {
            const int64_t id = f->wt[p].id;
            const double w = f->wt[p].w;
            if (agg == 0 || !f->has[id])
                f->score[id] = agg == 0 ? f->score[id] + w : w;
            else
                f->score[id] = agg == 1 ? fmin(f->score[id], w) : fmax(f->score[id], w);
            f->has[id] = 1;
        }
    }
}

/* The regressors' rows lo..hi: e targets aggregated (agg 0 sum, 1 min, 2
 * max; avg: the sum over the trees' count), base values a[] (opsets 1-3;
 * NULL: none), the transform t, into y (float32 or float64). */
static void s_regress(const gx_kargs *k, const s_forest *f, int64_t lo, int64_t hi, int64_t e,
                      int agg, bool avg, int t, const gx_attrval *a)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const int64_t nb = a ? gx_ml_count(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR) : 0;
    int64_t n, c;
    s_shape(x, &n, &c);
    for (int64_t r = lo; r < hi; r++) {
        s_forest_row(f, x, r, c, e, agg);
        for (int64_t q = 0; q < e; q++) {
            double s = f->score[q];
            if (avg)
                s /= (double)f->n_roots;
            if (e == 1) /* ONNX Runtime: one base value adds to the one target */
                s += nb == 1 ? gx_ml_num(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR, 0)
                             : 0;
            else if (nb == e && (agg == 0 || f->has[q])) /* MIN, MAX: a target no leaf scored stays 0 */
                s += gx_ml_num(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR, q);
            f->score[q] = s;
        }
        const int tt = e == 1 && t != GX_ML_PROBIT ? GX_ML_NONE : t;
        s_transform(f->score, e, tt);
        /* ONNX Runtime 1.30's float64 LOGISTIC, SOFTMAX and PROBIT give
         * float32 values */
        const bool f32 = y->dtype != GX_F64 || (tt != GX_ML_NONE && tt != GX_ML_SOFTMAX_ZERO);
        for (int64_t q = 0; q < e; q++)
            s_put(y, r * e + q, f32 ? (float)f->score[q] : f->score[q]);
    }
}

static void s_treereg_rows(const gx_kargs *k, const s_forest *f, int64_t lo, int64_t hi)
{
    const gx_attrval *a = k->attr;
    const char *af = a[GX_TREE_REG_AGGREGATE_FUNCTION].s;
    s_regress(k, f, lo, hi, a[GX_TREE_REG_N_TARGETS].i,
              strcmp(af, "MIN") == 0 ? 1 : strcmp(af, "MAX") == 0 ? 2 : 0,
              strcmp(af, "AVERAGE") == 0, gx_ml_transform(a[GX_TREE_POST_TRANSFORM].s), a);
}

void gx_cpu_TREE_ENSEMBLE_REGRESSOR(const gx_kargs *k)
{
    s_forest_run(k, k->attr[GX_TREE_REG_N_TARGETS].i, s_forest_build, s_treereg_rows);
}

/* Opset 5: aggregate_function 0 AVERAGE, 1 SUM, 2 MIN, 3 MAX. */
static void s_tree5_rows(const gx_kargs *k, const s_forest *f, int64_t lo, int64_t hi)
{
    const gx_attrval *a = k->attr;
    const int64_t af = a[GX_TREE5_AGGREGATE_FUNCTION].i;
    s_regress(k, f, lo, hi, a[GX_TREE5_N_TARGETS].i, af == 2 ? 1 : af == 3 ? 2 : 0, af == 0,
              (int)a[GX_TREE5_POST_TRANSFORM].i, NULL);
}

void gx_cpu_TREE_ENSEMBLE(const gx_kargs *k)
{
    s_forest_run(k, k->attr[GX_TREE5_N_TARGETS].i, s_forest_build5, s_tree5_rows);
}

/* ONNX Runtime's TreeAggregatorClassifier: with two classes and the
 * weights of only one, the second score comes from the first and the label
 * from its sign (or from 0.5 when no weight is negative). */
static void s_treecls_rows(const gx_kargs *k, const s_forest *fp, int64_t lo, int64_t hi)
{
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_tensor *ls = a[GX_TREE_CLS_CLASSLABELS_STRINGS].t;
    const gx_strrec *const *lstr = ls ? gx_tensor_cdata(ls) : NULL;
    const int64_t kc = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_TREE_CLS_CLASSLABELS_INT64S].n;
    const int t = gx_ml_transform(a[GX_TREE_POST_TRANSFORM].s);
    const int64_t nb = gx_ml_count(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR);
    const s_forest f = *fp;
    bool all_pos = true, one_class = true;
    const int64_t w = (int64_t)a[GX_TREE_W_IDS].n;
    for (int64_t i = 0; i < w; i++) {
        all_pos = all_pos && f.wt[i].w >= 0;
        one_class = one_class && f.wt[i].id == f.wt[0].id;
    }
    const bool binary = kc == 2 && one_class && w > 0;
#define S_BASE(q) gx_ml_num(a, GX_TREE_BASE_VALUES, GX_TREE_BASE_VALUES_AS_TENSOR, q)
    int64_t n, c;
    s_shape(x, &n, &c);
    for (int64_t r = lo; r < hi; r++) {
        s_forest_row(&f, x, r, c, kc, 0);
        double *s = f.score;
        unsigned char *has = f.has;
        int64_t m = kc, cls; /* cls: a label index, or -1 - v for the raw label v */
        int how = -1;
        if (kc > 2) {
            for (int64_t q = 0; q < nb; q++)
                s[q] += S_BASE(q), has[q] = 1;
            cls = -1;
            for (int64_t q = 0; q < kc; q++)
                if (has[q] && (cls < 0 || s[q] > s[cls]))
                    cls = q;
            cls = cls < 0 ? 0 : cls;
        } else {
            if (nb == 2) {
                if (has[1]) {
                    s[1] = S_BASE(1) + s[0];
                    s[0] = -s[1];
                } else {
                    s[1] += S_BASE(1);
                    s[0] += S_BASE(0);
                }
            } else if (nb == 1) {
                s[0] += S_BASE(0);
                m = has[1] ? 2 : 1;
            } else {
                how = 3;
                m = has[1] ? 2 : 1;
            }
            const double pw = m == 2 && has[1] ? s[1] : has[0] ? s[0] : 0;
            if (binary && all_pos)
                how = pw > 0.5 ? 0 : 1, cls = pw > 0.5 ? 1 : 0;
            else if (binary)
                how = pw > 0 ? 2 : 3, cls = pw > 0 ? 1 : 0;
            else /* ONNX Runtime's positive and negative labels: 1 and 0 */
                cls = pw > 0 ? (ls ? 1 : -2) : (ls ? 0 : -1);
        }
        if (ls)
            ((const gx_strrec **)y->data)[r] = lstr[cls];
        else
            ((int64_t *)y->data)[r] =
                cls >= 0 ? a[GX_TREE_CLS_CLASSLABELS_INT64S].ints[cls] : -1 - cls;
        if (k->n_out > 1)
            s_write_scores(s, m, t, how, (float *)k->out[1].data + r * kc, kc);
    }
#undef S_BASE
}

void gx_cpu_TREE_ENSEMBLE_CLASSIFIER(const gx_kargs *k)
{
    const gx_tensor *ls = k->attr[GX_TREE_CLS_CLASSLABELS_STRINGS].t;
    s_forest_run(k, ls ? gx_tensor_numel(ls) : (int64_t)k->attr[GX_TREE_CLS_CLASSLABELS_INT64S].n,
                 s_forest_build, s_treecls_rows);
}

/* ---- SVMRegressor, SVMClassifier (ONNX Runtime's order of operations) ---- */

/* The input row as float32 (ONNX Runtime casts every input so). */
static void s_row_f32(const gx_view *x, int64_t r, int64_t c, float *xf)
{
    for (int64_t j = 0; j < c; j++)
        xf[j] = (float)s_get(x, r * c + j);
}

/* The kernel of row xf and vector v (float lists, c columns): RBF in
 * float32 as ONNX Runtime's loop, the others as its GEMM (alpha x.v + cc)
 * then POLY's power or SIGMOID's tanh. */
static float s_svm_kernel(int kt, const double *kp, const float *xf, const double *v, int64_t c,
                          float cc)
{
    const float gamma = kp ? (float)kp[0] : 0, coef0 = kp ? (float)kp[1] : 0;
    const float degree = kp ? (float)kp[2] : 0;
    if (kt == GX_SVM_RBF) {
        float sum = 0;
        for (int64_t j = 0; j < c; j++) {
            const float d = xf[j] - (float)v[j];
            sum += d * d;
        }
        return expf(-gamma * sum);
    }
    double dot = 0;
    for (int64_t j = 0; j < c; j++)
        dot += (double)xf[j] * (float)v[j];
    if (kt == GX_SVM_LINEAR)
        return (float)(dot + cc);
    const float g = (float)(gamma * dot + coef0);
    if (kt == GX_SVM_POLY)
        return degree == 2 ? g * g : degree == 3 ? g * g * g : powf(g, degree);
    return tanhf(g);
}

#define S_SVM_MAX_COLS 4096 /* a row's columns as float32 on the stack (the schemas' bound) */

void gx_cpu_SVM_REGRESSOR(const gx_kargs *k)
{
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0];
    const int64_t v = a[GX_SVMR_N_SUPPORTS].i;
    const int kt = v > 0 ? gx_svm_kernel(a[GX_SVM_KERNEL_TYPE].s) : GX_SVM_LINEAR;
    const double *kp = a[GX_SVM_KERNEL_PARAMS].n ? a[GX_SVM_KERNEL_PARAMS].floats : NULL;
    const double *co = a[GX_SVM_COEFFICIENTS].floats, *sv = a[GX_SVM_SUPPORT_VECTORS].floats;
    const float rho = (float)a[GX_SVM_RHO].floats[0];
    int64_t n, c, lo, hi;
    s_shape(x, &n, &c);
    gx_cpu_share(k, n, 1, &lo, &hi);
    float *yd = k->out[0].data, xf[S_SVM_MAX_COLS];
    for (int64_t r = lo; r < hi; r++) {
        double s = 0;
        s_row_f32(x, r, c, xf);
        if (v > 0) {
            for (int64_t q = 0; q < v; q++)
                s += (double)s_svm_kernel(kt, kp, xf, sv + q * c, c, 0) * (float)co[q];
            s += rho;
        } else {
            s = s_svm_kernel(GX_SVM_LINEAR, NULL, xf, co, c, rho);
        }
        yd[r] = a[GX_SVMR_ONE_CLASS].i ? ((float)s > 0 ? 1.0f : -1.0f) : (float)s;
    }
}

/* libsvm's pairwise coupling (Wu, Lin and Weng's second method) over the
 * k x k pairwise probabilities r into p, in float32 as ONNX Runtime. */
static void s_coupling(int64_t k, const float *r, float *q, float *qp, float *p)
{
    const float eps = 0.005f / (float)k;
    memset(q, 0, (size_t)(k * k) * sizeof *q);
    for (int64_t i = 0; i < k; i++) {
        p[i] = 1.0f / (float)k;
        for (int64_t j = 0; j < i; j++) {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = q[j * k + i];
        }
        for (int64_t j = i + 1; j < k; j++) {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = -r[j * k + i] * r[i * k + j];
        }
    }
    for (int loop = 0; loop < 100; loop++) {
        float pqp = 0, max_error = 0;
        for (int64_t i = 0; i < k; i++) {
            qp[i] = 0;
            for (int64_t j = 0; j < k; j++)
                qp[i] += q[i * k + j] * p[j];
            pqp += p[i] * qp[i];
        }
        for (int64_t i = 0; i < k; i++) {
            const float err = fabsf(qp[i] - pqp);
            max_error = err > max_error ? err : max_error;
        }
        if (max_error < eps)
            break;
        for (int64_t i = 0; i < k; i++) {
            const float diff = (-qp[i] + pqp) / q[i * k + i];
            p[i] += diff;
            pqp = (pqp + diff * (diff * q[i * k + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
            for (int64_t j = 0; j < k; j++) {
                qp[j] = (qp[j] + diff * q[i * k + j]) / (1 + diff);
                p[j] /= (1 + diff);
            }
        }
    }
}

static float s_logistic_f(float v)
{
    const float e = 1 / (1 + expf(-fabsf(v)));
    return v < 0 ? 1 - e : e;
}

/* With support vectors (libsvm): a score per pair of classes, the label
 * by votes, scores the pairs' (transformed) or, with prob_a and prob_b,
 * the classes' probabilities by pairwise coupling (then transformed).
 * Without (liblinear): a score per class, coefficients . x + rho[0]. */
void gx_cpu_SVM_CLASSIFIER(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_tensor *ls = a[GX_SVMC_CLASSLABELS_STRINGS].t;
    const gx_strrec *const *lstr = ls ? gx_tensor_cdata(ls) : NULL;
    int64_t kc, v, c, n;
    gx_svm_sizes(a, &kc, &v, &c);
    s_shape(x, &n, &c);
    const int64_t pairs = kc * (kc - 1) / 2;
    const bool proba = a[GX_SVMC_PROB_A].n > 0;
    const int kt = v > 0 ? gx_svm_kernel(a[GX_SVM_KERNEL_TYPE].s) : GX_SVM_LINEAR;
    const int t = gx_ml_transform(a[GX_SVM_POST_TRANSFORM].s);
    const double *kp = a[GX_SVM_KERNEL_PARAMS].n ? a[GX_SVM_KERNEL_PARAMS].floats : NULL;
    const double *co = a[GX_SVM_COEFFICIENTS].floats, *sv = a[GX_SVM_SUPPORT_VECTORS].floats;
    const double *rho = a[GX_SVM_RHO].floats;
    const int64_t *vpc = a[GX_SVMC_VECTORS_PER_CLASS].ints;
    const int64_t cols = v > 0 && !proba ? (kc > 2 ? pairs : 2) : kc;
    bool all_pos = true;
    for (size_t i = 0; i < a[GX_SVM_COEFFICIENTS].n; i++)
        all_pos = all_pos && (float)co[i] >= 0;
    /* the scratch: a row's scores (doubles), then float32 kernels, pair
     * scores, pairwise probabilities, the coupling's Q, Qp and p, votes */
    double *s = k->scratch;
    float *kern = (float *)(s + (kc > pairs ? kc : pairs)), *ps = kern + v, *r2 = ps + pairs;
    float *q = r2 + kc * kc, *qp = q + kc * kc, *p = qp + kc;
    int64_t *votes = (int64_t *)(((uintptr_t)(p + kc) + 7) & ~(uintptr_t)7);
    float xs[S_SVM_MAX_COLS];
    for (int64_t r = 0; r < n; r++) {
        float *z = k->n_out > 1 ? (float *)k->out[1].data + r * cols : NULL;
        int64_t best = 0;
        s_row_f32(x, r, c, xs);
        if (v == 0) { /* liblinear: every class's score takes rho[0] (ONNX Runtime) */
            float mw = 0;
            for (int64_t cl = 0; cl < kc; cl++) {
                const float f = s_svm_kernel(GX_SVM_LINEAR, NULL, xs, co + cl * c, c,
                                             (float)rho[0]);
                if (cl == 0 || f > mw)
                    mw = f, best = cl;
                s[cl] = f;
            }
            if (kc == 2 && !proba && ((all_pos && mw >= 0.5f) || (!all_pos && mw > 0)))
                best = 1;
            if (z)
                s_write_scores(s, kc, t, -1, z, kc);
        } else {
            for (int64_t j = 0; j < v; j++)
                kern[j] = s_svm_kernel(kt, kp, xs, sv + j * c, c, 0);
            memset(votes, 0, (size_t)kc * sizeof *votes);
            int64_t idx = 0;
            for (int64_t i = 0, si = 0; i < kc - 1; si += vpc[i], i++)
                for (int64_t j = i + 1, sj = si + vpc[i]; j < kc; sj += vpc[j], j++) {
                    double sum = 0;
                    for (int64_t m = 0; m < vpc[i]; m++)
                        sum += (float)((float)co[(j - 1) * v + si + m] * kern[si + m]);
                    for (int64_t m = 0; m < vpc[j]; m++)
                        sum += (float)((float)co[i * v + sj + m] * kern[sj + m]);
                    sum += (float)rho[idx];
                    ps[idx++] = (float)sum;
                    votes[sum > 0 ? i : j]++;
                }
            for (int64_t i = 1; i < kc; i++)
                if (votes[i] > votes[best])
                    best = i;
            if (z && proba) {
                memset(r2, 0, (size_t)(kc * kc) * sizeof *r2);
                idx = 0;
                for (int64_t i = 0; i < kc - 1; i++)
                    for (int64_t j = i + 1; j < kc; j++, idx++) {
                        const float val = ps[idx] * (float)a[GX_SVMC_PROB_A].floats[idx] +
                                          (float)a[GX_SVMC_PROB_B].floats[idx];
                        float p2 = 1 - s_logistic_f(val);
                        p2 = p2 < 1.0e-7f ? 1.0e-7f : p2;
                        p2 = p2 > 1 - 1.0e-7f ? 1 - 1.0e-7f : p2;
                        r2[i * kc + j] = p2;
                        r2[j * kc + i] = 1 - p2;
                    }
                s_coupling(kc, r2, q, qp, p);
                for (int64_t i = 0; i < kc; i++)
                    s[i] = p[i];
                s_write_scores(s, kc, t, -1, z, kc);
            } else if (z && kc == 2) { /* one pair: ONNX Runtime's second column */
                const float f = ps[0];
                if (t == GX_ML_PROBIT)
                    z[0] = (float)s_probit(f), z[1] = 0;
                else if (t == GX_ML_LOGISTIC)
                    z[0] = s_logistic_f(-f), z[1] = s_logistic_f(f);
                else if (t == GX_ML_NONE)
                    z[0] = -f, z[1] = f;
                else
                    z[0] = 1 - f, z[1] = f;
            } else if (z) {
                for (int64_t i = 0; i < pairs; i++)
                    s[i] = ps[i];
                s_write_scores(s, pairs, t, -1, z, pairs);
            }
        }
        if (ls)
            ((const gx_strrec **)y->data)[r] = lstr[best];
        else
            ((int64_t *)y->data)[r] = a[GX_SVMC_CLASSLABELS_INTS].ints[best];
    }
}

/* ---- CategoryMapper: the last equal entry wins (ONNX Runtime's maps) ---- */

void gx_cpu_CATEGORY_MAPPER(const gx_kargs *k)
{
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_strrec *const *cs = gx_tensor_cdata(a[GX_CATMAP_CATS_STRINGS].t);
    const int64_t *ci = a[GX_CATMAP_CATS_INT64S].ints, m = (int64_t)a[GX_CATMAP_CATS_INT64S].n;
    const gx_strrec *def = NULL;
    int64_t lo, hi;
    gx_cpu_share(k, x->numel, GX_CPU_LINE, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        int64_t j = m - 1;
        if (x->dtype == GX_STRING) {
            const gx_strrec *s = ((const gx_strrec *const *)x->data)[i];
            while (j >= 0 && !gx_str_eq(cs[j], s))
                j--;
            ((int64_t *)y->data)[i] = j >= 0 ? ci[j] : a[GX_CATMAP_DEFAULT_INT64].i;
        } else {
            const int64_t v = ((const int64_t *)x->data)[i];
            while (j >= 0 && ci[j] != v)
                j--;
            ((const gx_strrec **)y->data)[i] =
                j >= 0 ? cs[j] : s_made(k, a[GX_CATMAP_DEFAULT_STRING].s, &def);
        }
    }
}
