/* Op tests of the rnn family (GX_OPS_RNN in ops/op.h): RNN, GRU and LSTM
 * against a naive reference (plain loops, no BLAS) over directions,
 * layouts, biases, initial states, peepholes, clip and linear_before_reset,
 * a hand-checked case, and the errors infer reports. */
#include <math.h>
#include <string.h>

#include "ops/gemm.h"
#include "ops/schema.h"
#include "tests/optest.h"
#include "tests/testutil.h"

#define A_STR(key, v) ((gx_attr){.name = (char *)(key), .type = GX_ATTR_STRING, .s = (char *)(v)})

/* One configuration of the reference. */
typedef struct s_cfg {
    gx_op op;
    int64_t seq, batch, in, hid;
    int nd;       /* directions */
    bool reverse; /* with nd == 1 */
    bool layout1;
    bool bias, h0, c0, peep;
    float clip; /* 0: none */
    bool lbr;
    bool scaled; /* W and R scaled by 1 / sqrt(fan-in), as trained weights are */
} s_cfg;

static int s_gates(gx_op op)
{
    return op == GX_OP_RNN ? 1 : op == GX_OP_GRU ? 3 : 4;
}

static float s_sig(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

static float s_cl(const s_cfg *c, float v)
{
    return c->clip > 0 ? fminf(fmaxf(v, -c->clip), c->clip) : v;
}

/* dot of W/R row `row` of direction d (gh rows of len n) with vector v */
static float s_dot(const float *m, int64_t d, int64_t gh, int64_t row, int64_t n, const float *v)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)m[(d * gh + row) * n + i] * v[i];
    return (float)s;
}

/* The reference: fills y, yh, yc (layouts as ONNX). */
static void s_reference(const s_cfg *c, const float *x, const float *w, const float *r,
                        const float *b, const float *h0, const float *c0, const float *p,
                        float *y, float *yh, float *yc)
{
    const int g = s_gates(c->op);
    const int64_t H = c->hid, gh = g * H, I = c->in;
    float *h = ot_alloc((size_t)H * 4), *cc = ot_alloc((size_t)H * 4);
    float *hn = ot_alloc((size_t)H * 4), *cn = ot_alloc((size_t)H * 4);
    float *rr = ot_alloc((size_t)H * 4), *rh = ot_alloc((size_t)H * 4);
    float *xt = ot_alloc((size_t)I * 4);
    for (int d = 0; d < c->nd; d++) {
        const bool back = c->reverse || d == 1;
        for (int64_t bi = 0; bi < c->batch; bi++) {
            const int64_t so = (c->layout1 ? bi * c->nd + d : d * c->batch + bi) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0 ? h0[so + j] : 0;
                cc[j] = c0 ? c0[so + j] : 0;
            }
            for (int64_t s = 0; s < c->seq; s++) {
                const int64_t t = back ? c->seq - 1 - s : s;
                for (int64_t i = 0; i < I; i++)
                    xt[i] = x[(c->layout1 ? bi * c->seq + t : t * c->batch + bi) * I + i];
                /* gate q's pre-activation parts: X W^T + Wb and H R^T + Rb */
#define XW(q, j) (s_dot(w, d, gh, (q) * H + (j), I, xt) + (b ? b[d * 2 * gh + (q) * H + (j)] : 0))
#define HR(q, j)                                                                                   \
    (s_dot(r, d, gh, (q) * H + (j), H, h) + (b ? b[d * 2 * gh + gh + (q) * H + (j)] : 0))
                if (g == 3) { /* GRU: r for every unit (the reset product needs them) */
                    for (int64_t l = 0; l < H; l++) {
                        rr[l] = s_sig(s_cl(c, XW(1, l) + HR(1, l)));
                        rh[l] = rr[l] * h[l];
                    }
                }
                for (int64_t j = 0; j < H; j++) {
                    if (g == 1) {
                        hn[j] = tanhf(s_cl(c, XW(0, j) + HR(0, j)));
                    } else if (g == 3) {
                        float z = s_sig(s_cl(c, XW(0, j) + HR(0, j)));
                        float hh;
                        if (c->lbr)
                            hh = rr[j] * HR(2, j);
                        else
                            hh = s_dot(r, d, gh, 2 * H + j, H, rh) +
                                 (b ? b[d * 2 * gh + gh + 2 * H + j] : 0);
                        float ht = tanhf(s_cl(c, XW(2, j) + hh));
                        hn[j] = (1 - z) * ht + z * h[j];
                    } else {
                        const float *pd = p ? p + d * 3 * H : NULL;
                        float ig = s_sig(s_cl(c, XW(0, j) + HR(0, j) + (pd ? pd[j] * cc[j] : 0)));
                        float fg = s_sig(
                            s_cl(c, XW(2, j) + HR(2, j) + (pd ? pd[2 * H + j] * cc[j] : 0)));
                        float ct = tanhf(s_cl(c, XW(3, j) + HR(3, j)));
                        cn[j] = fg * cc[j] + ig * ct;
                        float og =
                            s_sig(s_cl(c, XW(1, j) + HR(1, j) + (pd ? pd[H + j] * cn[j] : 0)));
                        hn[j] = og * tanhf(cn[j]);
                    }
                }
#undef XW
#undef HR
                memcpy(h, hn, sizeof(float) * (size_t)H);
                if (g == 4)
                    memcpy(cc, cn, sizeof(float) * (size_t)H);
                const int64_t yo = c->layout1 ? ((bi * c->seq + t) * c->nd + d) * H
                                              : ((t * c->nd + d) * c->batch + bi) * H;
                memcpy(y + yo, h, sizeof(float) * (size_t)H);
            }
            memcpy(yh + so, h, sizeof(float) * (size_t)H);
            if (yc)
                memcpy(yc + so, cc, sizeof(float) * (size_t)H);
        }
    }
}

/* Runs the op on random inputs (nth 1 and 3 one after another, and 3 on
 * threads at once: a single direction's shares split each step) and
 * compares all outputs with the reference. */
static void s_check(const s_cfg *c)
{
    const int g = s_gates(c->op);
    const int64_t H = c->hid, gh = g * H, nd = c->nd;
    gx_view in[8];
    int n_in = 3;
    in[0] = c->layout1 ? RANDV(c->batch, c->seq, c->in) : RANDV(c->seq, c->batch, c->in);
    in[1] = RANDV(nd, gh, c->in);
    in[2] = RANDV(nd, gh, H);
    for (int i = 1; i <= 2 && c->scaled; i++) {
        const float k = 1.0f / sqrtf((float)in[i].shape[2]);
        for (int64_t e = 0; e < in[i].numel; e++)
            ((float *)in[i].data)[e] *= k;
    }
    for (int i = 3; i < 8; i++)
        in[i] = (gx_view){.ndim = -1};
    if (c->bias)
        in[3] = RANDV(nd, 2 * gh), n_in = 4;
    if (c->h0) {
        in[5] = c->layout1 ? RANDV(c->batch, nd, H) : RANDV(nd, c->batch, H);
        n_in = 6;
        /* a uniform sequence_lens alongside */
        int32_t *len = ot_alloc((size_t)c->batch * sizeof *len);
        for (int64_t b = 0; b < c->batch; b++)
            len[b] = (int32_t)c->seq;
        in[4] = ot_view(GX_I32, len, SHAPE(c->batch));
    }
    if (c->c0)
        in[6] = c->layout1 ? RANDV(c->batch, nd, H) : RANDV(nd, c->batch, H), n_in = 7;
    if (c->peep)
        in[7] = RANDV(nd, 3 * H), n_in = 8;
    const int n_out = g == 4 ? 3 : 2;
    const int64_t ny = c->seq * nd * c->batch * H, nh = nd * c->batch * H;
    float *y = ot_alloc((size_t)ny * 4), *yh = ot_alloc((size_t)nh * 4);
    float *yc = g == 4 ? ot_alloc((size_t)nh * 4) : NULL;
    s_reference(c, in[0].data, in[1].data, in[2].data, c->bias ? in[3].data : NULL,
                c->h0 ? in[5].data : NULL, c->c0 ? in[6].data : NULL,
                c->peep ? in[7].data : NULL, y, yh, yc);
    const char *dir = nd == 2 ? "bidirectional" : c->reverse ? "reverse" : "forward";
    gx_attr attrs[6];
    int na = 0;
    attrs[na++] = A_INT("hidden_size", H);
    attrs[na++] = A_STR("direction", dir);
    attrs[na++] = A_INT("layout", c->layout1);
    if (c->clip > 0)
        attrs[na++] = A_FLOAT("clip", c->clip);
    if (c->op == GX_OP_GRU)
        attrs[na++] = A_INT("linear_before_reset", c->lbr);
    const gx_node node = {.n_attr = na, .attr = attrs};
    for (int run = 0; run < 3; run++) {
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out[3];
        char err[ERRLEN];
        int rc = run < 2 ? ot_run_n(c->op, &node, n_in, in, 1 + 2 * run, av, n_out, out, err)
                         : ot_run_threads(c->op, &node, n_in, in, 3, av, n_out, out, err);
        ck_assert_msg(rc == GX_OK, "%s: %s", gx_op_name(c->op), err);
        if (c->layout1)
            ot_check_shape(&out[0], SHAPE(c->batch, c->seq, nd, H));
        else
            ot_check_shape(&out[0], SHAPE(c->seq, nd, c->batch, H));
        ck_assert(ot_close(out[0].data, y, ny, 1e-4f, 1e-5f));
        ck_assert(ot_close(out[1].data, yh, nh, 1e-4f, 1e-5f));
        if (yc)
            ck_assert(ot_close(out[2].data, yc, nh, 1e-4f, 1e-5f));
    }
    ot_free_all(); /* the callers run many configurations */
}

/* Every op over directions x layouts, with and without the optional inputs. */
START_TEST(test_rnn_family_vs_reference)
{
    const gx_op ops[] = {GX_OP_RNN, GX_OP_GRU, GX_OP_LSTM};
    for (int o = 0; o < 3; o++) {
        for (int dir = 0; dir < 3; dir++) {
            for (int lay = 0; lay < 2; lay++) {
                for (int opt = 0; opt < 2; opt++) {
                    s_cfg c = {.op = ops[o], .seq = 4, .batch = 3, .in = 5, .hid = 4,
                               .nd = dir == 2 ? 2 : 1, .reverse = dir == 1,
                               .layout1 = lay, .bias = opt, .h0 = opt,
                               .c0 = opt && ops[o] == GX_OP_LSTM,
                               .peep = opt && ops[o] == GX_OP_LSTM,
                               .clip = opt ? 0.5f : 0, .lbr = opt};
                    s_check(&c);
                    if (ops[o] == GX_OP_GRU) {
                        c.lbr = !c.lbr;
                        s_check(&c);
                    }
                }
            }
        }
    }
}
END_TEST

/* Sequences longer than the steps whose input products the kernel takes
 * at once (gx_rnn_chunk: 256 KiB of gate sums), so that several chunks
 * run, in every direction and both layouts, at batch 1 (matrix-vector
 * products; GRU and LSTM) and more; one direction with hidden units
 * enough for three shares to split each step; with each of the GEMM's
 * ISAs this CPU has (they choose the matrix-vector kernel). */
static const char *const s_isas[] = {"avx512", "avx2", "baseline"};

START_TEST(test_rnn_long_sequences)
{
    if (!gx_cpu_gemm_isa_set(s_isas[_i]))
        return;
    const gx_op ops[] = {GX_OP_RNN, GX_OP_GRU, GX_OP_LSTM};
    for (int o = 0; o < 3; o++)
        for (int64_t batch = o == 0 ? 2 : 1; batch <= 3; batch += 2)
            for (int lay = 0; lay < 2; lay++)
                for (int nd = 1; nd <= 2; nd++) {
                    /* about 1100 gate sums a step: chunks of under 70 steps */
                    const int g = s_gates(ops[o]);
                    const int64_t hid = (1100 + batch * g - 1) / (batch * g);
                    s_cfg c = {.op = ops[o], .seq = 70, .batch = batch, .in = 8, .hid = hid,
                               .nd = nd, .reverse = nd == 1 && lay, .layout1 = lay,
                               .bias = true, .h0 = lay, .c0 = lay && ops[o] == GX_OP_LSTM,
                               .lbr = lay, .peep = nd == 1 && ops[o] == GX_OP_LSTM,
                               .scaled = true};
                    ck_assert_int_gt(c.seq, gx_rnn_chunk(c.seq, batch, g * hid));
                    s_check(&c);
                }
}
END_TEST

/* ONNX's test_simple_rnn_defaults: X [1, 3, 2], W and R all 0.1, H 4. */
START_TEST(test_rnn_hand_values)
{
    gx_view x = F32V(SHAPE(1, 3, 2), 1, 2, 3, 4, 5, 6);
    gx_view w = F32V(SHAPE(1, 4, 2), .1f, .1f, .1f, .1f, .1f, .1f, .1f, .1f);
    float rv[16];
    for (int i = 0; i < 16; i++)
        rv[i] = .1f;
    gx_view r = ot_view(GX_F32, ot_copy(rv, sizeof rv), SHAPE(1, 4, 4));
    /* tanh(0.1 * (x0 + x1)) per unit */
    const float a = tanhf(.3f), b = tanhf(.7f), c = tanhf(1.1f);
    ot_expect(GX_OP_RNN, NODE(A_INT("hidden_size", 4)), 3, (gx_view[]){x, w, r},
              F32V(SHAPE(1, 1, 3, 4), a, a, a, a, b, b, b, b, c, c, c, c), 1e-5f, 1e-6f);
}
END_TEST

/* hidden_size may be left to W's rows; Y may be omitted (only Y_h). */
/* A sequence of no steps: Y is empty, Y_h (and LSTM's Y_c) are the
 * initial state, with one share and with three splitting each step. */
START_TEST(test_rnn_no_steps)
{
    for (int nth = 1; nth <= 3; nth += 2) {
        const gx_view x = RANDV(0, 2, 3), w = RANDV(1, 16, 3), r = RANDV(1, 16, 4);
        const gx_view h0 = RANDV(1, 2, 4), c0 = RANDV(1, 2, 4);
        gx_view in[7] = {x, w, r, {.ndim = -1}, {.ndim = -1}, h0, c0};
        gx_attrval av[GX_MAX_ATTRS];
        gx_view out[3];
        char err[ERRLEN];
        int rc = ot_run_n(GX_OP_LSTM, NODE(A_INT("hidden_size", 4)), 7, in, nth, av, 3, out, err);
        ck_assert_msg(rc == GX_OK, "%s", err);
        ck_assert_int_eq(out[0].numel, 0);
        ck_assert(ot_close(out[1].data, h0.data, 8, 0, 0));
        ck_assert(ot_close(out[2].data, c0.data, 8, 0, 0));
    }
}
END_TEST

START_TEST(test_rnn_hidden_from_w)
{
    s_cfg c = {.op = GX_OP_LSTM, .seq = 2, .batch = 2, .in = 3, .hid = 2, .nd = 1};
    gx_view in[3] = {RANDV(2, 2, 3), RANDV(1, 8, 3), RANDV(1, 8, 2)};
    float y[8], yh[4], yc[4];
    s_reference(&c, in[0].data, in[1].data, in[2].data, NULL, NULL, NULL, NULL, y, yh, yc);
    gx_attrval av[GX_MAX_ATTRS];
    gx_view out[2];
    char err[ERRLEN];
    ck_assert_int_eq(ot_run_n(GX_OP_LSTM, NODE(), 3, in, 1, av, 2, out, err), GX_OK);
    ot_check_shape(&out[1], SHAPE(1, 2, 2));
    ck_assert(ot_close(out[1].data, yh, 4, 1e-4f, 1e-5f));
}
END_TEST

START_TEST(test_rnn_errors)
{
    gx_view x = RANDV(2, 1, 3), w = RANDV(1, 4, 3), r = RANDV(1, 4, 4);
    gx_view in[3] = {x, w, r};
    ot_expect_error(GX_OP_RNN, NODE(A_STR("direction", "sideways")), 3, in, GX_EATTR,
                    "RNN: direction 'sideways'; forward, reverse or bidirectional expected");
    ot_expect_error(GX_OP_RNN, NODE(A_INT("layout", 2)), 3, in, GX_EATTR,
                    "RNN: layout 2; 0 or 1 expected");
    ot_expect_error(GX_OP_RNN, NODE(A_FLOAT("clip", -1)), 3, in, GX_EATTR,
                    "RNN: clip -1; a positive threshold expected");
    ot_expect_error(GX_OP_RNN, NODE(A_INT("hidden_size", 5)), 3, in, GX_ESHAPE,
                    "RNN: W is [1,4,3], expected [1,5,3]");
    ot_expect_error(GX_OP_RNN, NODE(A_INT("hidden_size", 0)), 3, in, GX_EATTR,
                    "RNN: hidden_size 0; a positive size expected");
    ot_expect_error(GX_OP_RNN, NODE(), 3, (gx_view[]){RANDV(2, 3), w, r}, GX_ESHAPE,
                    "RNN: X is [2,3]; rank 3 expected");
    ot_expect_error(GX_OP_RNN, NODE(), 3, (gx_view[]){x, w, RANDV(1, 4, 3)}, GX_ESHAPE,
                    "RNN: R is [1,4,3], expected [1,4,4]");
    ot_expect_error(GX_OP_RNN, NODE(), 4, (gx_view[]){x, w, r, RANDV(1, 4)}, GX_ESHAPE,
                    "RNN: B is [1,4], expected [1,8]");
    ot_expect_error(GX_OP_RNN, NODE(), 6,
                    (gx_view[]){x, w, r, {.ndim = -1}, {.ndim = -1}, RANDV(1, 2, 4)}, GX_ESHAPE,
                    "RNN: initial_h is [1,2,4], expected [1,1,4]");
    ot_expect_error(GX_OP_RNN, NODE(), 3, (gx_view[]){ot_rand(GX_F64, SHAPE(2, 1, 3)), w, r},
                    GX_EDTYPE, NULL);
    ot_expect_error(GX_OP_RNN,
                    NODE(((gx_attr){.name = "activation_alpha", .type = GX_ATTR_FLOATS,
                                    .floats = (double[]){1.0}, .n = 1})),
                    3, in, GX_EUNSUPPORTED, NULL);
    int32_t lens[1] = {1};
    gx_view sl = ot_view(GX_I32, lens, SHAPE(1));
    ot_expect_error(GX_OP_RNN, NODE(), 5, (gx_view[]){x, w, r, {.ndim = -1}, sl},
                    GX_EUNSUPPORTED,
                    "RNN: sequence_lens[0] is 1; only lengths equal to the sequence length 2 "
                    "are supported");
    ot_expect_error(GX_OP_GRU, NODE(A_INT("linear_before_reset", 2)), 3,
                    (gx_view[]){x, RANDV(1, 12, 3), RANDV(1, 12, 4)}, GX_EATTR,
                    "GRU: linear_before_reset 2; 0 or 1 expected");
    ot_expect_error(GX_OP_LSTM, NODE(A_INT("input_forget", 1)), 3,
                    (gx_view[]){x, RANDV(1, 16, 3), RANDV(1, 16, 4)}, GX_EUNSUPPORTED,
                    "LSTM: input_forget 1 is not supported");
    ot_expect_error(GX_OP_LSTM, NODE(), 8,
                    (gx_view[]){x, RANDV(1, 16, 3), RANDV(1, 16, 4), {.ndim = -1},
                                {.ndim = -1}, {.ndim = -1}, {.ndim = -1}, RANDV(1, 4)},
                    GX_ESHAPE, "LSTM: P is [1,4], expected [1,12]");
    ot_expect_error(GX_OP_LSTM, NODE(), 3, (gx_view[]){x, RANDV(1, 6, 3), RANDV(1, 6, 4)},
                    GX_ESHAPE, NULL);
}
END_TEST

Suite *ops_rnn_suite(void)
{
    Suite *s = suite_create("ops_rnn");
    TCase *tc = tcase_create("rnn");
    tcase_add_checked_fixture(tc, NULL, ot_free_all);
    tcase_set_timeout(tc, 120); /* the float64 references, on a loaded machine */
    tcase_add_test(tc, test_rnn_family_vs_reference);
    tcase_add_loop_test(tc, test_rnn_long_sequences, 0, (int)(sizeof s_isas / sizeof *s_isas));
    tcase_add_test(tc, test_rnn_hand_values);
    tcase_add_test(tc, test_rnn_no_steps);
    tcase_add_test(tc, test_rnn_hidden_from_w);
    tcase_add_test(tc, test_rnn_errors);
    suite_add_tcase(s, tc);
    return s;
}
