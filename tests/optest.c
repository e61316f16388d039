/* The op test harness. See optest.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/optest.h"
#include "tests/testutil.h"
/* ---- test memory: freed after each test by the fixture ---- */

static void *s_mem[512];
static int s_nmem;

void *ot_alloc(size_t nbytes)
{
    ck_assert_int_lt(s_nmem, (int)(sizeof s_mem / sizeof s_mem[0]));
    void *p = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    ck_assert_ptr_nonnull(p);
    memset(p, 0, nbytes + 64);
    return s_mem[s_nmem++] = p;
}

/* The string heap the kernels of one test make strings in (ot_strs). */
static gx_strheap *s_strs;

gx_strheap *ot_strs(void)
{
    if (!s_strs)
        ck_assert_ptr_nonnull(s_strs = gx_strheap_new((size_t)1 << 30));
    return s_strs;
}

static gx_tensor *s_keep[64];
static int s_nkeep;

gx_tensor *ot_keep(gx_tensor *t)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_int_lt(s_nkeep, (int)(sizeof s_keep / sizeof s_keep[0]));
    return s_keep[s_nkeep++] = t;
}

gx_view ot_strings(int ndim, const int64_t *shape, const char *const *strs)
{
    gx_tensor *t = ot_keep(gx_tensor_new_strings(ndim, shape, strs, NULL));
    return ot_view(GX_STRING, t->data, ndim, shape);
}

void ot_free_all(void)
{
    while (s_nmem > 0)
        free(s_mem[--s_nmem]);
    while (s_nkeep > 0)
        gx_tensor_destroy(&s_keep[--s_nkeep]);
    gx_strheap_destroy(&s_strs);
}

/* ---- building inputs ---- */

/* SHAPE(2, 3) expands to the ndim, shape argument pair. */

gx_view ot_view(gx_dtype dt, void *data, int ndim, const int64_t *shape)
{
    gx_view v = {.dtype = dt, .ndim = ndim, .data = data};
    if (ndim > 0)
        memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    v.numel = gx_shape_numel(ndim, shape, INT64_MAX);
    return v;
}

gx_view ot_like_f32(const gx_view *x)
{
    gx_view v = *x;
    v.dtype = GX_F32;
    v.data = ot_alloc((size_t)v.numel * sizeof(float));
    return v;
}

size_t ot_nbytes(const gx_view *v)
{
    return (size_t)v->numel * gx_dtype_size(v->dtype);
}

/* A float32 view of the literal values, e.g. F32V(SHAPE(2), 1, 2). */

void *ot_copy(const void *src, size_t nbytes)
{
    return memcpy(ot_alloc(nbytes), src, nbytes);
}

static uint64_t s_seed = 0x2545F4914F6CDD1DULL;

/* Deterministic pseudo-random float in [-2, 2). */
float ot_randf(void)
{
    s_seed = s_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((s_seed >> 40) & 0xFFFFFF) / (float)0x1000000 * 4.0f - 2.0f;
}

gx_view ot_rand(gx_dtype dt, int ndim, const int64_t *shape)
{
    gx_view v = ot_view(dt, NULL, ndim, shape);
    size_t es = gx_dtype_size(dt);
    v.data = ot_alloc((size_t)v.numel * es);
    for (int64_t i = 0; i < v.numel; i++) {
        if (dt == GX_F32) {
            ((float *)v.data)[i] = ot_randf();
        } else { /* every byte from the generator's high bits (a float's low
                    bytes are mostly zero bits) */
            for (size_t b = 0; b < es; b++) {
                s_seed = s_seed * 6364136223846793005ULL + 1442695040888963407ULL;
                ((unsigned char *)v.data)[i * (int64_t)es + (int64_t)b] =
                    (unsigned char)(s_seed >> 56);
            }
        }
    }
    return v;
}


/* Nodes carry only attributes here; names are not looked at. */

/* ---- running an op ---- */

typedef struct s_share {
    gx_op op;
    gx_kargs k;
} s_share;

static void *s_share_main(void *arg)
{
    s_share *sh = arg;
    gx_cpu_kernel(sh->op)(&sh->k);
    return NULL;
}

static int s_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth,
                 bool threads, gx_attrval *av, int n_out, gx_view *out, char *err)
{
    const gx_op_schema *s = gx_op_schema_get(op);
    err[0] = '\0';
    int rc = gx_op_resolve_attrs(op, node, av, err, ERRLEN);
    if (rc < 0)
        return rc;
    ck_assert_int_ge(n_in, s->min_in);
    ck_assert_int_le(n_in, s->max_in);
    ck_assert_int_ge(n_out, s->min_out);
    ck_assert_int_le(n_out, s->max_out);
    memset(out, 0, sizeof *out * (size_t)n_out);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = n_out, .out = out, .err = err,
                   .errlen = ERRLEN};
    if ((rc = s->infer(&ic)) < 0 || (rc = gx_op_check_strings(op, &ic)) < 0)
        return rc;
    ck_assert_msg(rc == GX_OK, "%s: infer with every input's data returned %d", gx_op_name(op), rc);
    gx_cost c = s->cost(&ic);
    ck_assert(c.flops >= 0 && c.bytes >= 0);
    void *scratch = s->scratch ? ot_alloc(s->scratch(&ic)) : NULL;
    for (int i = 0; i < n_out; i++) {
        ck_assert_int_eq(out[i].numel, gx_shape_numel(out[i].ndim, out[i].shape, INT64_MAX));
        size_t nbytes = (size_t)out[i].numel * gx_dtype_size(out[i].dtype);
        out[i].data = ot_alloc(nbytes);
        memset(out[i].data, 0xFF, nbytes);
    }
    gx_coop co = {0};
    gx_kargs k = {.attr = av, .n_in = n_in, .in = in, .n_out = n_out, .out = out,
                  .scratch = scratch, .nth = nth, .coop = &co, .strs = ot_strs()};
    if (!threads) {
        for (k.ith = 0; k.ith < nth; k.ith++)
            gx_cpu_kernel(op)(&k);
        return GX_OK;
    }
    s_share sh[16];
    pthread_t th[16];
    ck_assert_int_le(nth, 16);
    for (int i = 0; i < nth; i++) {
        sh[i] = (s_share){op, k};
        sh[i].k.ith = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, s_share_main, &sh[i]), 0);
    }
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    return GX_OK;
}

int ot_run_n(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth,
             gx_attrval *av, int n_out, gx_view *out, char *err)
{
    return s_run(op, node, n_in, in, nth, false, av, n_out, out, err);
}

int ot_run_threads(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth,
                   gx_attrval *av, int n_out, gx_view *out, char *err)
{
    return s_run(op, node, n_in, in, nth, true, av, n_out, out, err);
}

int ot_run(gx_op op, const gx_node *node, int n_in, const gx_view *in, int nth, gx_attrval *av,
           gx_view *out, char *err)
{
    return ot_run_n(op, node, n_in, in, nth, av, 1, out, err);
}

/* Expects infer to fail with status and exactly the message msg (or, when
 * msg is NULL, any message). */
void ot_expect_error(gx_op op, const gx_node *node, int n_in, const gx_view *in, int status,
                           const char *msg)
{
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out;
    char err[ERRLEN];
    int rc = ot_run(op, node, n_in, in, 1, av, &out, err);
    ck_assert_msg(rc == status, "%s: got %s (%s), want %s", gx_op_name(op), gx_status_name(rc),
                  err, gx_status_name(status));
    ck_assert_msg(err[0] != '\0', "%s: no message", gx_op_name(op));
    if (msg)
        ck_assert_str_eq(err, msg);
}

/* gxt_allclose, also taking equal infinities as equal. */
bool ot_close(const float *got, const float *want, int64_t n, float rtol, float atol)
{
    for (int64_t i = 0; i < n; i++) {
        if (got[i] != want[i] && !gxt_allclose(&got[i], &want[i], 1, rtol, atol)) {
            fprintf(stderr, "  at element %lld of %lld\n", (long long)i, (long long)n);
            return false;
        }
    }
    return true;
}

void ot_check_shape(const gx_view *v, int ndim, const int64_t *shape)
{
    ck_assert_int_eq(v->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(v->shape[i], shape[i]);
}

/* Runs op (nth = 1 and 3) and compares the float32 output with the given
 * shape and values. */
void ot_expect(gx_op op, const gx_node *node, int n_in, const gx_view *in, gx_view want,
                     float rtol, float atol)
{
    for (int nth = 1; nth <= 3; nth += 2) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out;
        char err[ERRLEN];
        int rc = ot_run(op, node, n_in, in, nth, av, &out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(op), err);
        ot_check_shape(&out, want.ndim, want.shape);
        ck_assert_int_eq(out.dtype, want.dtype);
        ck_assert_msg(ot_close(out.data, want.data, want.numel, rtol, atol),
                      "%s nth=%d", gx_op_name(op), nth);
    }
}

void ot_check_threads(gx_op op, const gx_node *node, int n_in, const gx_view *in, int n_out,
                      gx_view *out)
{
    gx_attrval av[GX_MAX_ATTRS];
    char err[ERRLEN];
    const char *name = gx_op_name(op);
    int rc = ot_run_n(op, node, n_in, in, 1, av, n_out, out, err);
    ck_assert_msg(rc == GX_OK, "%s: %s", name, err);
    for (int nth = 3; nth <= 7; nth += 4) {
        gx_view on[4];
        ck_assert_int_eq(ot_run_n(op, node, n_in, in, nth, av, n_out, on, err), GX_OK);
        for (int i = 0; i < n_out; i++)
            ck_assert_msg(memcmp(on[i].data, out[i].data, ot_nbytes(&out[i])) == 0,
                          "%s: output %d with nth=%d differs from nth=1", name, i, nth);
        ot_check_shares(op, av, n_in, in, n_out, out, nth);
    }
}

void ot_check_f32(gx_op op, const gx_node *node, int n_in, const gx_view *in, const gx_view *want,
                  float rtol, float atol)
{
    gx_view out;
    ot_check_threads(op, node, n_in, in, 1, &out);
    ot_check_shape(&out, want->ndim, want->shape);
    ck_assert_int_eq(out.dtype, GX_F32);
    ck_assert_msg(ot_close(out.data, want->data, want->numel, rtol, atol), "%s: values",
                  gx_op_name(op));
}

void ot_check_shares(gx_op op, const gx_attrval *av, int n_in, const gx_view *in, int n_out,
                     const gx_view *out, int nth)
{
    const gx_op_schema *s = gx_op_schema_get(op);
    gx_view o[2][GX_MAX_OP_INPUTS];
    unsigned char *count[GX_MAX_OP_INPUTS];
    size_t nbytes[GX_MAX_OP_INPUTS];
    ck_assert_int_le(n_out, GX_MAX_OP_INPUTS);
    gx_infer ic = {.attr = av, .n_in = n_in, .in = in, .n_out = n_out, .out = (gx_view *)out};
    /* malloc, not ot_alloc: callers run this in loops over many cases */
    void *scratch = s->scratch ? aligned_alloc(64, (s->scratch(&ic) + 64) / 64 * 64) : NULL;
    for (int i = 0; i < n_out; i++) {
        nbytes[i] = (size_t)out[i].numel * gx_dtype_size(out[i].dtype);
        count[i] = calloc(1, nbytes[i] + 1);
        for (int f = 0; f < 2; f++) {
            o[f][i] = out[i];
            o[f][i].data = malloc(nbytes[i] + 1);
            ck_assert(o[f][i].data);
        }
        ck_assert(count[i]);
    }
    for (int ith = 0; ith < nth; ith++) {
        for (int f = 0; f < 2; f++) {
            for (int i = 0; i < n_out; i++)
                memset(o[f][i].data, f ? 0xFF : 0x00, nbytes[i]);
            gx_kargs k = {.attr = av, .n_in = n_in, .in = in, .n_out = n_out, .out = o[f],
                          .scratch = scratch, .ith = ith, .nth = nth, .strs = ot_strs()};
            gx_cpu_kernel(op)(&k);
        }
        for (int i = 0; i < n_out; i++) {
            const unsigned char *b0 = o[0][i].data, *b1 = o[1][i].data;
            for (size_t j = 0; j < nbytes[i]; j++)
                count[i][j] += b0[j] != 0x00 || b1[j] != 0xFF;
        }
    }
    for (int i = 0; i < n_out; i++) {
        for (size_t j = 0; j < nbytes[i]; j++)
            ck_assert_msg(count[i][j] == 1, "%s nth=%d: byte %zu of output %d written by %d shares",
                          gx_op_name(op), nth, j, i, count[i][j]);
        free(count[i]);
        free(o[0][i].data);
        free(o[1][i].data);
    }
    free(scratch);
}

void ot_unravel(int64_t flat, int nd, const int64_t *shape, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}

int64_t ot_bcast_off(int ndo, const int64_t *idx, int nd, const int64_t *shape)
{
    int64_t off = 0;
    for (int d = 0; d < nd; d++)
        off = off * shape[d] + (shape[d] == 1 ? 0 : idx[d + ndo - nd]);
    return off;
}
