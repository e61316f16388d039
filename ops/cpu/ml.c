/*
 * The ai.onnx.ml ops on the CPU (ops/schema_ml.c says what each computes).
 * Numeric inputs are read as doubles whatever their dtype; scores are
 * computed in double and stored as float32. The post transforms and the
 * binary classifiers' score columns follow ONNX Runtime (ml_common.h
 * there), which the spec leaves open: PROBIT is sqrt(2) erfinv(2x - 1) with
 * the same erfinv approximation, SOFTMAX_ZERO leaves zero scores zero.
 * Elementwise ops share elements, row ops rows; a tree ensemble runs in one
 * share, which first sorts its nodes' ids into the scratch to find
 * children and leaf weights by binary search.
 */
#include <math.h>
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

typedef struct s_forest {
    const gx_attrval *a;
    gx_tree_key *nk, *wk;
    gx_tree_node *nodes;
    int64_t *roots;
    int64_t n, w, n_roots;
    double *score; /* a row's scores */
    unsigned char *has;
} s_forest;

/* The lookups in the scratch (the schema checked every child exists). */
static void s_forest_build(const gx_kargs *k, s_forest *f, int64_t n_out)
{
    const gx_attrval *a = k->attr;
    f->a = a;
    f->n = (int64_t)a[GX_TREE_NODES_NODEIDS].n;
    f->w = (int64_t)a[GX_TREE_W_IDS].n;
    char *p = k->scratch;
    f->nk = (gx_tree_key *)p, p += f->n * sizeof(gx_tree_key);
    f->wk = (gx_tree_key *)p, p += f->w * sizeof(gx_tree_key);
    f->nodes = (gx_tree_node *)p, p += f->n * sizeof(gx_tree_node);
    f->roots = (int64_t *)p, p += f->n * sizeof(int64_t);
    f->score = (double *)p, p += n_out * sizeof(double);
    f->has = (unsigned char *)p;
    const int64_t *tid = a[GX_TREE_NODES_TREEIDS].ints, *nid = a[GX_TREE_NODES_NODEIDS].ints;
    for (int64_t i = 0; i < f->n; i++)
        f->nk[i] = (gx_tree_key){tid[i], nid[i], i};
    for (int64_t i = 0; i < f->w; i++)
        f->wk[i] = (gx_tree_key){a[GX_TREE_W_TREEIDS].ints[i], a[GX_TREE_W_NODEIDS].ints[i], i};
    gx_tree_sort(f->nk, (size_t)f->n);
    gx_tree_sort(f->wk, (size_t)f->w);
    const gx_strrec *const *modes = gx_tensor_cdata(a[GX_TREE_NODES_MODES].t);
    memset(f->roots, 0, (size_t)f->n * sizeof *f->roots);
    for (int64_t i = 0; i < f->n; i++) {
        gx_tree_node *nd = &f->nodes[i];
        nd->yes = nd->no = -1;
        if (gx_tree_mode(modes[i]) != GX_TREE_LEAF) {
            nd->yes = f->nk[gx_tree_find(f->nk, (size_t)f->n, tid[i],
                                         a[GX_TREE_NODES_TRUENODEIDS].ints[i])]
                          .idx;
            nd->no = f->nk[gx_tree_find(f->nk, (size_t)f->n, tid[i],
                                        a[GX_TREE_NODES_FALSENODEIDS].ints[i])]
                         .idx;
            f->roots[nd->yes] = f->roots[nd->no] = 1;
        }
        int64_t lo = gx_tree_find(f->wk, (size_t)f->w, tid[i], nid[i]), hi = lo;
        while (lo >= 0 && hi < f->w && f->wk[hi].tree == tid[i] && f->wk[hi].node == nid[i])
            hi++;
        nd->wlo = lo < 0 ? 0 : lo;
        nd->whi = lo < 0 ? 0 : hi;
    }
    f->n_roots = 0; /* the nodes no branch leads to, in order */
    for (int64_t i = 0; i < f->n; i++)
        if (!f->roots[i])
            f->roots[f->n_roots++] = i;
}

/* The leaf row x reaches from root i (at most n steps: a cycle stops). */
static int64_t s_walk(const s_forest *f, const gx_view *x, int64_t off, int64_t i)
{
    const gx_attrval *a = f->a;
    const gx_strrec *const *modes = gx_tensor_cdata(a[GX_TREE_NODES_MODES].t);
    const gx_attrval *mv = &a[GX_TREE_NODES_MISSING_VALUE_TRACKS_TRUE];
    for (int64_t step = 0; step < f->n && f->nodes[i].yes >= 0; step++) {
        const double v = s_get(x, off + a[GX_TREE_NODES_FEATUREIDS].ints[i]);
        const double th = (float)a[GX_TREE_NODES_VALUES].floats[i];
        bool go;
        switch (gx_tree_mode(modes[i])) {
        case GX_TREE_LEQ: go = v <= th; break;
        case GX_TREE_LT: go = v < th; break;
        case GX_TREE_GTE: go = v >= th; break;
        case GX_TREE_GT: go = v > th; break;
        case GX_TREE_EQ: go = v == th; break;
        default: go = v != th; break;
        }
        if (isnan(v) && mv->n && mv->ints[i])
            go = true;
        i = go ? f->nodes[i].yes : f->nodes[i].no;
    }
    return i;
}

/* Row r's scores aggregated (agg: 0 sum, 1 min, 2 max) over the trees. */
static void s_forest_row(const s_forest *f, const gx_view *x, int64_t r, int64_t c, int64_t k,
                         int agg)
{
    const gx_attrval *a = f->a;
    memset(f->score, 0, (size_t)k * sizeof *f->score);
    memset(f->has, 0, (size_t)k);
    for (int64_t t = 0; t < f->n_roots; t++) {
        const gx_tree_node *leaf = &f->nodes[s_walk(f, x, r * c, f->roots[t])];
        for (int64_t p = leaf->wlo; p < leaf->whi; p++) {
            const int64_t wi = f->wk[p].idx, id = a[GX_TREE_W_IDS].ints[wi];
            const double w = (float)a[GX_TREE_W_WEIGHTS].floats[wi];
            if (agg == 0 || !f->has[id])
                f->score[id] = agg == 0 ? f->score[id] + w : w;
            else
                f->score[id] = agg == 1 ? fmin(f->score[id], w) : fmax(f->score[id], w);
            f->has[id] = 1;
        }
    }
}

void gx_cpu_TREE_ENSEMBLE_REGRESSOR(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0];
    const int64_t e = a[GX_TREE_REG_N_TARGETS].i;
    const char *af = a[GX_TREE_REG_AGGREGATE_FUNCTION].s;
    const bool avg = strcmp(af, "AVERAGE") == 0;
    const int agg = strcmp(af, "MIN") == 0 ? 1 : strcmp(af, "MAX") == 0 ? 2 : 0;
    const int t = gx_ml_transform(a[GX_TREE_POST_TRANSFORM].s);
    const gx_attrval *bv = &a[GX_TREE_BASE_VALUES];
    s_forest f;
    s_forest_build(k, &f, e);
    int64_t n, c;
    s_shape(x, &n, &c);
    float *yd = k->out[0].data;
    for (int64_t r = 0; r < n; r++) {
        s_forest_row(&f, x, r, c, e, agg);
        for (int64_t q = 0; q < e; q++) {
            double s = f.score[q];
            if (avg)
                s /= (double)f.n_roots;
            if (e == 1) /* ONNX Runtime: one base value adds to the one target */
                s += bv->n == 1 ? (float)bv->floats[0] : 0;
            else if ((int64_t)bv->n == e && (agg == 0 || f.has[q]))
                s += (float)bv->floats[q]; /* MIN, MAX: a target no leaf scored stays 0 */
            f.score[q] = s;
        }
        s_transform(f.score, e, e == 1 && t != GX_ML_PROBIT ? GX_ML_NONE : t);
        for (int64_t q = 0; q < e; q++)
            yd[r * e + q] = (float)f.score[q];
    }
}

/* ONNX Runtime's TreeAggregatorClassifier: with two classes and the
 * weights of only one, the second score comes from the first and the label
 * from its sign (or from 0.5 when no weight is negative). */
void gx_cpu_TREE_ENSEMBLE_CLASSIFIER(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    const gx_attrval *a = k->attr;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const gx_tensor *ls = a[GX_TREE_CLS_CLASSLABELS_STRINGS].t;
    const gx_strrec *const *lstr = ls ? gx_tensor_cdata(ls) : NULL;
    const int64_t kc = ls ? gx_tensor_numel(ls) : (int64_t)a[GX_TREE_CLS_CLASSLABELS_INT64S].n;
    const int t = gx_ml_transform(a[GX_TREE_POST_TRANSFORM].s);
    const gx_attrval *bv = &a[GX_TREE_BASE_VALUES];
    bool all_pos = true, one_class = true;
    for (size_t i = 0; i < a[GX_TREE_W_IDS].n; i++) {
        all_pos = all_pos && (float)a[GX_TREE_W_WEIGHTS].floats[i] >= 0;
        one_class = one_class && a[GX_TREE_W_IDS].ints[i] == a[GX_TREE_W_IDS].ints[0];
    }
    const bool binary = kc == 2 && one_class && a[GX_TREE_W_IDS].n > 0;
    s_forest f;
    s_forest_build(k, &f, kc);
    int64_t n, c;
    s_shape(x, &n, &c);
    for (int64_t r = 0; r < n; r++) {
        s_forest_row(&f, x, r, c, kc, 0);
        double *s = f.score;
        unsigned char *has = f.has;
        int64_t m = kc, cls; /* cls: a label index, or -1 - v for the raw label v */
        int how = -1;
        if (kc > 2) {
            for (int64_t q = 0; q < (int64_t)bv->n; q++)
                s[q] += (float)bv->floats[q], has[q] = 1;
            cls = -1;
            for (int64_t q = 0; q < kc; q++)
                if (has[q] && (cls < 0 || s[q] > s[cls]))
                    cls = q;
            cls = cls < 0 ? 0 : cls;
        } else {
            if (bv->n == 2) {
                if (has[1]) {
                    s[1] = (float)bv->floats[1] + s[0];
                    s[0] = -s[1];
                } else {
                    s[1] += (float)bv->floats[1];
                    s[0] += (float)bv->floats[0];
                }
            } else if (bv->n == 1) {
                s[0] += (float)bv->floats[0];
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
}
