/* Schema of Attention (opsets 23 and 24, ai.onnx): scaled dot-product
 * attention over 4-D or 3-D Q, K, V with grouped K/V heads, an optional
 * bool or additive mask, is_causal, scale, softcap, a KV cache (past_key,
 * past_value in; present_key, present_value out) and nonpad_kv_seqlen.
 * The scores output (qk_matmul_output) is refused: its meaning changed
 * between the reference's versions, and the kernel never holds the
 * scores whole. The rewrite pass also makes this op from MatMul → scale →
 * Softmax → MatMul as exporters spell it out (docs/rewrite.md). */
#include <math.h>
#include <string.h>

#include "ops/batch.h"
#include "ops/nn.h"

static const gx_attr_spec s_attention_attrs[] = {
    [GX_ATTENTION_IS_CAUSAL] = {.name = "is_causal", .type = GX_ATTR_INT},
    [GX_ATTENTION_KV_NUM_HEADS] = {.name = "kv_num_heads", .type = GX_ATTR_INT},
    [GX_ATTENTION_Q_NUM_HEADS] = {.name = "q_num_heads", .type = GX_ATTR_INT},
    [GX_ATTENTION_QK_MATMUL_OUTPUT_MODE] = {.name = "qk_matmul_output_mode",
                                            .type = GX_ATTR_INT},
    [GX_ATTENTION_SCALE] = {.name = "scale", .type = GX_ATTR_FLOAT},
    [GX_ATTENTION_SOFTCAP] = {.name = "softcap", .type = GX_ATTR_FLOAT},
    [GX_ATTENTION_SOFTMAX_PRECISION] = {.name = "softmax_precision", .type = GX_ATTR_INT},
};
_Static_assert(sizeof s_attention_attrs / sizeof s_attention_attrs[0] == GX_ATTENTION_NATTRS,
               "Attention attrs");

enum { S_Q, S_K, S_V, S_MASK, S_PAST_KEY, S_PAST_VALUE, S_NONPAD, S_NIN };

static bool s_present(const gx_infer *ic, int i)
{
    return i < ic->n_in && ic->in[i].ndim >= 0;
}

/* heads * size = hidden for the 3-D form; false when it does not divide. */
static bool s_split(int64_t hidden, int64_t heads, int64_t *size)
{
    if (heads <= 0 || hidden % heads != 0)
        return false;
    *size = hidden / heads;
    return true;
}

static gx_attn_strides s_strides(bool four, int64_t heads, int64_t seq, int64_t size)
{
    if (four)
        return (gx_attn_strides){.sample = heads * seq * size, .head = seq * size, .row = size};
    return (gx_attn_strides){.sample = seq * heads * size, .head = size, .row = heads * size};
}

int gx_attention_setup(gx_infer *ic, gx_attention *a)
{
    const char *op = "Attention";
    const gx_attrval *at = ic->attr;
    int rc;
    for (int i = S_Q; i <= S_V; i++)
        if ((rc = gx_infer_need_f32(ic, op, i)) < 0)
            return rc;
    if (ic->n_out > 3)
        return gx_infer_errf(ic, GX_EUNSUPPORTED,
                             "%s: output qk_matmul_output is not supported (Y, present_key and "
                             "present_value only)",
                             op);
    if (s_present(ic, S_PAST_KEY) != s_present(ic, S_PAST_VALUE))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: past_key and past_value come together", op);
    const gx_view *q = &ic->in[S_Q], *k = &ic->in[S_K], *v = &ic->in[S_V];
    if (q->ndim != k->ndim || q->ndim != v->ndim || (q->ndim != 3 && q->ndim != 4))
        return gx_infer_errf(ic, GX_ESHAPE, "%s: Q, K and V have ranks %d, %d, %d; all 3 or all 4",
                             op, q->ndim, k->ndim, v->ndim);
    const bool four = q->ndim == 4;
    memset(a, 0, sizeof *a);
    a->batch = q->shape[0];
    if (four) {
        a->q_heads = q->shape[1], a->q_seq = q->shape[2], a->head = q->shape[3];
        a->kv_heads = k->shape[1], a->kv_seq = k->shape[2];
        a->v_head = v->shape[3];
        if (k->shape[3] != a->head || v->shape[1] != a->kv_heads || v->shape[2] != a->kv_seq)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: K [B, kv_heads, kv_seq, %lld] and V [B, kv_heads, kv_seq, "
                                 "v_head] do not fit Q's head size or each other",
                                 op, (long long)a->head);
    } else {
        a->q_heads = at[GX_ATTENTION_Q_NUM_HEADS].i, a->kv_heads = at[GX_ATTENTION_KV_NUM_HEADS].i;
        if (!at[GX_ATTENTION_Q_NUM_HEADS].set || !at[GX_ATTENTION_KV_NUM_HEADS].set)
            return gx_infer_errf(ic, GX_EATTR,
                                 "%s: 3-D Q, K, V need q_num_heads and kv_num_heads", op);
        a->q_seq = q->shape[1], a->kv_seq = k->shape[1];
        int64_t kh = 0;
        if (!s_split(q->shape[2], a->q_heads, &a->head) ||
            !s_split(k->shape[2], a->kv_heads, &kh) || kh != a->head ||
            !s_split(v->shape[2], a->kv_heads, &a->v_head) || v->shape[1] != a->kv_seq)
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: Q, K, V's last dims %lld, %lld, %lld do not split into "
                                 "%lld query and %lld key/value heads of one size",
                                 op, (long long)q->shape[2], (long long)k->shape[2],
                                 (long long)v->shape[2], (long long)a->q_heads,
                                 (long long)a->kv_heads);
    }
    if (k->shape[0] != a->batch || v->shape[0] != a->batch)
        return gx_infer_errf(ic, GX_ESHAPE, "%s: Q, K and V have batch sizes %lld, %lld, %lld",
                             op, (long long)a->batch, (long long)k->shape[0],
                             (long long)v->shape[0]);
    if (a->kv_heads <= 0 || a->q_heads % a->kv_heads != 0)
        return gx_infer_errf(ic, GX_ESHAPE,
                             "%s: %lld query heads are not a multiple of %lld key/value heads",
                             op, (long long)a->q_heads, (long long)a->kv_heads);
    if (a->head > GX_ATTENTION_MAX_HEAD || a->v_head > INT32_MAX)
        return gx_infer_errf(ic, GX_EUNSUPPORTED, "%s: head size %lld is above %d", op,
                             (long long)a->head, GX_ATTENTION_MAX_HEAD);
    if ((a->has_past = s_present(ic, S_PAST_KEY))) {
        const gx_view *pk = &ic->in[S_PAST_KEY], *pv = &ic->in[S_PAST_VALUE];
        for (int i = S_PAST_KEY; i <= S_PAST_VALUE; i++)
            if ((rc = gx_infer_need_f32(ic, op, i)) < 0)
                return rc;
        a->past = pk->ndim == 4 ? pk->shape[2] : -1;
        if (pk->ndim != 4 || pv->ndim != 4 || pk->shape[0] != a->batch ||
            pk->shape[1] != a->kv_heads || pk->shape[3] != a->head ||
            pv->shape[0] != a->batch || pv->shape[1] != a->kv_heads || pv->shape[2] != a->past ||
            pv->shape[3] != a->v_head) {
            char sk[GX_SHAPE_STRLEN], sv[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: past_key %s and past_value %s are not [%lld, %lld, past, "
                                 "%lld] and [%lld, %lld, past, %lld]",
                                 op, gx_shape_str(pk->ndim, pk->shape, sk, sizeof sk),
                                 gx_shape_str(pv->ndim, pv->shape, sv, sizeof sv),
                                 (long long)a->batch, (long long)a->kv_heads, (long long)a->head,
                                 (long long)a->batch, (long long)a->kv_heads,
                                 (long long)a->v_head);
        }
    }
    a->total = a->past + a->kv_seq;
    if ((a->has_nonpad = s_present(ic, S_NONPAD))) {
        const gx_view *np = &ic->in[S_NONPAD];
        if (np->dtype != GX_I64 || np->ndim != 1 || np->shape[0] != a->batch)
            return gx_infer_errf(ic, GX_ESHAPE, "%s: nonpad_kv_seqlen is not int64 [%lld]", op,
                                 (long long)a->batch);
    }
    memcpy(a->present_k, (int64_t[]){a->batch, a->kv_heads, a->total, a->head},
           sizeof a->present_k);
    memcpy(a->present_v, (int64_t[]){a->batch, a->kv_heads, a->total, a->v_head},
           sizeof a->present_v);
    a->q = s_strides(four, a->q_heads, a->q_seq, a->head);
    a->k = s_strides(four, a->kv_heads, a->kv_seq, a->head);
    a->v = s_strides(four, a->kv_heads, a->kv_seq, a->v_head);
    a->y = s_strides(four, a->q_heads, a->q_seq, a->v_head);
    a->y_ndim = q->ndim;
    if (four)
        memcpy(a->y_shape, (int64_t[]){a->batch, a->q_heads, a->q_seq, a->v_head},
               sizeof a->y_shape);
    else
        memcpy(a->y_shape, (int64_t[]){a->batch, a->q_seq, a->q_heads * a->v_head, 0},
               sizeof a->y_shape);

    a->causal = at[GX_ATTENTION_IS_CAUSAL].i != 0;
    a->scale = at[GX_ATTENTION_SCALE].set ? at[GX_ATTENTION_SCALE].f
                                          : 1.0 / sqrt((double)(a->head > 0 ? a->head : 1));
    a->softcap = at[GX_ATTENTION_SOFTCAP].f;
    if (!isfinite(a->scale) || !isfinite(a->softcap) || a->softcap < 0)
        return gx_infer_errf(ic, GX_EATTR, "%s: scale %g and softcap %g must be finite, softcap >= 0",
                             op, a->scale, a->softcap);
    if ((a->has_mask = s_present(ic, S_MASK))) {
        const gx_view *m = &ic->in[S_MASK];
        if (m->dtype != GX_BOOL && m->dtype != GX_F32)
            return gx_infer_errf(ic, GX_EDTYPE, "%s: attn_mask is %s; bool or float32", op,
                                 gx_dtype_name(m->dtype));
        /* as the reference: a last dim shorter than kv_seq is padded
         * with masked keys, the other dims broadcast */
        const int64_t full[4] = {a->batch, a->q_heads, a->q_seq, a->total};
        bool ok = m->ndim >= 1 && m->ndim <= 4 && m->shape[m->ndim - 1] <= a->total;
        for (int d = 0; ok && d < m->ndim - 1; d++) {
            const int64_t want = full[4 - m->ndim + d];
            ok = m->shape[d] == want || m->shape[d] == 1;
        }
        if (!ok) {
            char sm[GX_SHAPE_STRLEN], sf[GX_SHAPE_STRLEN];
            return gx_infer_errf(ic, GX_ESHAPE,
                                 "%s: attn_mask %s does not fit %s (rank 1 to 4, the last dim "
                                 "at most the keys', the others 1 or equal)",
                                 op,
                                 gx_shape_str(m->ndim, m->shape, sm, sizeof sm),
                                 gx_shape_str(4, full, sf, sizeof sf));
        }
    }
    return GX_OK;
}

static int s_infer_attention(gx_infer *ic)
{
    gx_attention a;
    int rc = gx_attention_setup(ic, &a);
    if (rc < 0)
        return rc;
    gx_view_set(&ic->out[0], GX_F32, a.y_ndim, a.y_shape);
    if (ic->n_out > 1)
        gx_view_set(&ic->out[1], GX_F32, 4, a.present_k);
    if (ic->n_out > 2)
        gx_view_set(&ic->out[2], GX_F32, 4, a.present_v);
    return GX_OK;
}

/* Two products of q_seq × kv_seq × head, the softmax's few flops per score */
static gx_cost s_cost_attention(const gx_infer *ic)
{
    gx_attention a;
    gx_attention_setup((gx_infer *)ic, &a);
    const double scores = (double)a.batch * (double)a.q_heads * (double)a.q_seq * (double)a.total;
    return (gx_cost){.flops = scores * (2.0 * (double)a.head + 2.0 * (double)a.v_head + 6.0),
                     .bytes = gx_infer_io_bytes(ic)};
}

/* Samples apart: Q, K, V (and the cache and nonpad_kv_seqlen, when given)
 * batched; a mask batched along [B, ...] (rank 4) or shared (rank < 4, or
 * a first dim of 1). */
static bool s_batch_attention(const gx_batch_ctx *bc)
{
    for (int i = S_Q; i < S_NIN; i++)
        if (i != S_MASK && (i <= S_V || (i < bc->n_in && bc->in[i].ndim >= 0)) &&
            !gx_batch_in(bc, i))
            return false;
    if (bc->n_in > S_MASK && bc->in[S_MASK].ndim >= 0) {
        const gx_view *m = &bc->in[S_MASK];
        const bool batched = gx_batch_in(bc, S_MASK);
        if (batched ? m->ndim != 4 : m->ndim == 4 && m->shape[0] != 1)
            return false;
    }
    for (int k = 0; k < bc->n_out; k++)
        bc->out_batched[k] = true;
    return true;
}

const gx_op_schema gx_schema_ATTENTION = {
    .min_in = 3, .max_in = S_NIN, .min_out = 1, .max_out = 4,
    .attrs = s_attention_attrs, .n_attrs = GX_ATTENTION_NATTRS,
    .infer = s_infer_attention, .cost = s_cost_attention, .batch = s_batch_attention,
};
