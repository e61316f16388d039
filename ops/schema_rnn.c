/* Schemas of the rnn family (GX_OPS_RNN in ops/op.h): RNN, GRU and LSTM,
 * float32, layouts 0 and 1, every direction. Only the default activations
 * (the attribute "activations" is a list of strings, which graphs cannot
 * carry, so it is refused as an unknown attribute; activation_alpha/beta,
 * which only non-default activations read, are refused when given).
 * sequence_lens is accepted when every length is the whole sequence: its
 * value is read (value_inputs) to check that. */
#include <limits.h>
#include <string.h>

#include "ops/schema.h"

/* The attributes of all three ops; GRU and LSTM append one. */
#define S_RNN_ATTRS                                                           \
    [GX_RNN_ACTIVATION_ALPHA] = {.name = "activation_alpha", .type = GX_ATTR_FLOATS}, \
    [GX_RNN_ACTIVATION_BETA] = {.name = "activation_beta", .type = GX_ATTR_FLOATS},   \
    [GX_RNN_CLIP] = {.name = "clip", .type = GX_ATTR_FLOAT},                  \
    [GX_RNN_DIRECTION] = {.name = "direction", .type = GX_ATTR_STRING, .def_s = "forward"}, \
    [GX_RNN_HIDDEN_SIZE] = {.name = "hidden_size", .type = GX_ATTR_INT},      \
    [GX_RNN_LAYOUT] = {.name = "layout", .type = GX_ATTR_INT}

static const gx_attr_spec s_rnn_attrs[] = {S_RNN_ATTRS};
_Static_assert(sizeof s_rnn_attrs / sizeof s_rnn_attrs[0] == GX_RNN_NATTRS, "RNN attrs");

static const gx_attr_spec s_gru_attrs[] = {
    S_RNN_ATTRS,
    [GX_GRU_LINEAR_BEFORE_RESET] = {.name = "linear_before_reset", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_gru_attrs / sizeof s_gru_attrs[0] == GX_GRU_NATTRS, "GRU attrs");

static const gx_attr_spec s_lstm_attrs[] = {
    S_RNN_ATTRS,
    [GX_LSTM_INPUT_FORGET] = {.name = "input_forget", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_lstm_attrs / sizeof s_lstm_attrs[0] == GX_LSTM_NATTRS, "LSTM attrs");

/* Input positions shared by the three ops (LSTM adds initial_c and P). */
enum { S_X, S_W, S_R, S_B, S_SEQ_LENS, S_INITIAL_H, S_INITIAL_C, S_P };

static bool s_present(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* GX_OK when the optional input i is absent, or float32 with shape want. */
static int s_check_opt(gx_infer *ic, const char *op, int i, const char *name, int ndim,
                       const int64_t *want)
{
    if (!s_present(ic, i))
        return GX_OK;
    int rc = gx_infer_need_f32(ic, op, i);
    if (rc < 0)
        return rc;
    const gx_view *v = &ic->in[i];
    bool ok = v->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++)
        ok = v->shape[d] == want[d];
    if (!ok) {
        char sv[GX_SHAPE_STRLEN], sw[GX_SHAPE_STRLEN];
        return gx_infer_errf(ic, GX_ESHAPE, "%s: %s is %s, expected %s", op, name,
                             gx_shape_str(v->ndim, v->shape, sv, sizeof sv),
                             gx_shape_str(ndim, want, sw, sizeof sw));
    }
    return GX_OK;
}

/* sequence_lens: int32 [batch], every length seq (other lengths are not
 * supported); its value may only be known at run time. */
static int s_check_seq_lens(gx_infer *ic, const char *op, int64_t seq, int64_t batch)
{
    if (!s_present(ic, S_SEQ_LENS))
        return GX_OK;
    const gx_view *v = &ic->in[S_SEQ_LENS];
    char sv[GX_SHAPE_STRLEN];
    if (v->dtype != GX_I32)
        return gx_infer_errf(ic, GX_EDTYPE, "%s: sequence_lens is %s, expected int32", op,
                             gx_dtype_name(v->dtype) ? gx_dtype_name(v->dtype)
                                                     : "an unknown dtype");
    if (v->ndim != 1 || v->shape[0] != batch)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: sequence_lens is %s, expected [%lld]", op,
                             gx_shape_str(v->ndim, v->shape, sv, sizeof sv), (long long)batch);
    const int32_t *len = gx_infer_value(ic, S_SEQ_LENS);
    if (!len)
        return GX_INFER_DYNAMIC;
    for (int64_t b = 0; b < batch; b++) {
        if (len[b] != seq)
            return gx_infer_errf(ic, GX_EUNSUPPORTED,
                                 "%s: sequence_lens[%lld] is %d; only lengths equal to the "
                                 "sequence length %lld are supported",
                                 op, (long long)b, (int)len[b], (long long)seq);
    }
    return GX_OK;
}

/* Shared infer; gates: 1 (RNN), 3 (GRU) or 4 (LSTM). */
static int s_infer(gx_infer *ic, const char *op, int gates)
{
    const gx_attrval *a = ic->attr;
    int rc;
    if ((rc = gx_infer_need_f32(ic, op, S_X)) < 0 || (rc = gx_infer_need_f32(ic, op, S_W)) < 0 ||
        (rc = gx_infer_need_f32(ic, op, S_R)) < 0)
        return rc;
    if (a[GX_RNN_ACTIVATION_ALPHA].n > 0 || a[GX_RNN_ACTIVATION_BETA].n > 0)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: activation_alpha/activation_beta are not supported (only the "
                             "default activations, which take none)",
                             op);
    const int64_t layout = a[GX_RNN_LAYOUT].i;
    if (layout != 0 && layout != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: layout %lld; 0 or 1 expected", op,
                             (long long)layout);
    const char *dir = a[GX_RNN_DIRECTION].s ? a[GX_RNN_DIRECTION].s : "";
    int64_t nd;
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
        nd = 1;
    else if (strcmp(dir, "bidirectional") == 0)
        nd = 2;
    else
        return gx_infer_errf(ic, GX_EATTR,
                             "%s: direction '%s'; forward, reverse or bidirectional expected",
                             op, dir);
    if (a[GX_RNN_CLIP].set && !(a[GX_RNN_CLIP].f > 0))
        return gx_infer_errf(ic, GX_EATTR, "%s: clip %g; a positive threshold expected", op,
                             a[GX_RNN_CLIP].f);
    if (gates == 3 && a[GX_GRU_LINEAR_BEFORE_RESET].i != 0 && a[GX_GRU_LINEAR_BEFORE_RESET].i != 1)
        return gx_infer_errf(ic, GX_EATTR, "%s: linear_before_reset %lld; 0 or 1 expected", op,
                             (long long)a[GX_GRU_LINEAR_BEFORE_RESET].i);
    if (gates == 4 && a[GX_LSTM_INPUT_FORGET].i != 0)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: input_forget %lld is not supported", op,
                             (long long)a[GX_LSTM_INPUT_FORGET].i);
    const gx_view *x = &ic->in[S_X], *w = &ic->in[S_W];
    char s1[GX_SHAPE_STRLEN];
    if (x->ndim != 3)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: X is %s; rank 3 expected", op,
                             gx_shape_str(x->ndim, x->shape, s1, sizeof s1));
    const int64_t seq = x->shape[layout ? 1 : 0], batch = x->shape[layout ? 0 : 1];
    const int64_t in = x->shape[2];
    int64_t hid;
    if (a[GX_RNN_HIDDEN_SIZE].set) {
        hid = a[GX_RNN_HIDDEN_SIZE].i;
        if (hid <= 0 || hid > INT_MAX / gates)
            return gx_infer_errf(ic, GX_EATTR, "%s: hidden_size %lld; a positive size expected",
                                 op, (long long)hid);
    } else {
        if (w->ndim != 3 || w->shape[1] % gates != 0 || w->shape[1] == 0)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: W is %s; without hidden_size it must be [%lld, %d * "
                                 "hidden_size, %lld]",
                                 op, gx_shape_str(w->ndim, w->shape, s1, sizeof s1),
                                 (long long)nd, gates, (long long)in);
        hid = w->shape[1] / gates;
    }
    const int64_t gh = gates * hid;
    const int64_t hshape[3] = {layout ? batch : nd, layout ? nd : batch, hid};
    if ((rc = s_check_opt(ic, op, S_W, "W", 3, (int64_t[]){nd, gh, in})) < 0 ||
        (rc = s_check_opt(ic, op, S_R, "R", 3, (int64_t[]){nd, gh, hid})) < 0 ||
        (rc = s_check_opt(ic, op, S_B, "B", 2, (int64_t[]){nd, 2 * gh})) < 0 ||
        (rc = s_check_opt(ic, op, S_INITIAL_H, "initial_h", 3, hshape)) < 0 ||
        (gates == 4 && (rc = s_check_opt(ic, op, S_INITIAL_C, "initial_c", 3, hshape)) < 0) ||
        (gates == 4 && (rc = s_check_opt(ic, op, S_P, "P", 2, (int64_t[]){nd, 3 * hid})) < 0))
        return rc;
    /* BLAS sees batch rows and leading dims up to seq * in (layout 1) */
    if (batch > INT_MAX || in > INT_MAX / (seq > 0 ? seq : 1))
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: X %s exceeds the BLAS limit %d", op,
                             gx_shape_str(x->ndim, x->shape, s1, sizeof s1), INT_MAX);
    if ((rc = s_check_seq_lens(ic, op, seq, batch)) != GX_OK)
        return rc;
    if (ic->n_out > 0) {
        const int64_t y0[4] = {seq, nd, batch, hid}, y1[4] = {batch, seq, nd, hid};
        gx_view_set(&ic->out[0], GX_F32, 4, layout ? y1 : y0);
    }
    for (int o = 1; o < ic->n_out; o++)
        gx_view_set(&ic->out[o], GX_F32, 3, hshape);
    return GX_OK;
}

static int s_infer_rnn(gx_infer *ic)
{
    return s_infer(ic, "RNN", 1);
}

static int s_infer_gru(gx_infer *ic)
{
    return s_infer(ic, "GRU", 3);
}

static int s_infer_lstm(gx_infer *ic)
{
    return s_infer(ic, "LSTM", 4);
}

/* gates * hidden_size, from R [D, gates * hidden, hidden]. */
static gx_cost s_cost(const gx_infer *ic)
{
    const gx_view *x = &ic->in[S_X], *r = &ic->in[S_R];
    const double steps = (double)x->shape[0] * (double)x->shape[1] * (double)r->shape[0];
    const double gh = (double)r->shape[1];
    return (gx_cost){.flops = 2.0 * steps * gh * (double)(x->shape[2] + r->shape[2]),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* The kernel's state, per direction: gate sums of X for gx_rnn_chunk
 * steps ([steps, batch, gates * hidden]), of H ([batch, gates * hidden]),
 * then H twice (the step's and the previous), C and a temporary
 * ([batch, hidden] each). */
static size_t s_scratch(const gx_infer *ic)
{
    const gx_view *x = &ic->in[S_X], *r = &ic->in[S_R];
    const bool layout1 = ic->attr[GX_RNN_LAYOUT].i != 0;
    const int64_t batch = x->shape[layout1 ? 0 : 1], seq = x->shape[layout1 ? 1 : 0];
    const int64_t gh = r->shape[1];
    const int64_t steps = gx_rnn_chunk(seq, batch, gh);
    return (size_t)(r->shape[0] * batch * ((steps + 1) * gh + 4 * r->shape[2])) * sizeof(float);
}

/* A bidirectional layer: one share per direction, each runs its own
 * recurrence. One direction: any number, splitting every step (the
 * kernel's shares cooperate through gx_kargs.coop). */
static int s_shares(const gx_infer *ic)
{
    const int nd = (int)ic->in[S_R].shape[0];
    return nd > 1 ? nd : 0;
}

const gx_op_schema gx_schema_RNN = {
    .min_in = 3, .max_in = 6, .min_out = 1, .max_out = 2,
    .attrs = s_rnn_attrs, .n_attrs = GX_RNN_NATTRS,
    .value_inputs = 1u << S_SEQ_LENS,
    .infer = s_infer_rnn, .cost = s_cost, .scratch = s_scratch, .shares = s_shares,
};

const gx_op_schema gx_schema_GRU = {
    .min_in = 3, .max_in = 6, .min_out = 1, .max_out = 2,
    .attrs = s_gru_attrs, .n_attrs = GX_GRU_NATTRS,
    .value_inputs = 1u << S_SEQ_LENS,
    .infer = s_infer_gru, .cost = s_cost, .scratch = s_scratch, .shares = s_shares,
};

const gx_op_schema gx_schema_LSTM = {
    .min_in = 3, .max_in = 8, .min_out = 1, .max_out = 3,
    .attrs = s_lstm_attrs, .n_attrs = GX_LSTM_NATTRS,
    .value_inputs = 1u << S_SEQ_LENS,
    .infer = s_infer_lstm, .cost = s_cost, .scratch = s_scratch, .shares = s_shares,
};
