/*
 * A float32 run of fused ops in registers (ops/cpu/fused.c) for one
 * vector width: fused.c includes this once per width, with s_v, s_vi,
 * s_vu, s_vw (the vector types), S_VL (floats in s_v), S_REGS (the name of
 * the function this defines) and S_REGS_ATTR (its target) defined; it
 * undefines them at its end. No include guard: each inclusion is another
 * width.
 */

#define s_strip S_REGS_NAME(S_REGS, _strip)
#define s_strip_run S_REGS_NAME(S_REGS, _strip_run)
#define S_REGS_NAME(a, b) S_REGS_NAME_(a, b)
#define S_REGS_NAME_(a, b) a##b

static inline __attribute__((always_inline)) void s_strip(const s_rop *q, s_v *acc, int64_t i,
                                                          int vn)
{
    switch (q->code) {
    S_STRIP_COMM(S_R_ADD, S_V_ADD, S_V_ADD_ZW);
    S_STRIP_BIN(S_R_SUB, S_V_SUB);
    S_STRIP_COMM(S_R_MUL, S_V_MUL, S_V_MUL_ZW);
    S_STRIP_BIN(S_R_DIV, S_V_DIV);
    S_STRIP_BIN(S_R_MAX, S_V_MAX);
    S_STRIP_BIN(S_R_MIN, S_V_MIN);
    S_STRIP_UN(S_R_RELU, S_V_RELU);
    S_STRIP_UN(S_R_NEG, S_V_NEG);
    S_STRIP_UN(S_R_RF16, S_V_RF16);
    S_STRIP_MATH(S_R_SIGMOID, gx_v_sigmoidf);
    S_STRIP_MATH(S_R_TANH, gx_v_tanhf);
    S_STRIP_MATH(S_R_EXP, gx_v_expf);
    S_STRIP_MATH(S_R_ERF, gx_v_erff);
    default:
        _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++) acc[j] = S_V_ABS(acc[j]);
        break;
    }
}

/* Elements [i, i + S_VL * vn) of the run r[0..n_r) into y (vn <= S_VN, a
 * constant once inlined). */
static inline __attribute__((always_inline)) void s_strip_run(const s_rop *r, int n_r,
                                                               int64_t i, float *y, int vn)
{
    s_v acc[S_VN];
    _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)
    {
        if (r[0].sa) {
            acc[j] = *(const s_vu *)(r[0].a + i + j * S_VL);
        } else {
            for (int l = 0; l < S_VL; l++)
                acc[j][l] = *r[0].a;
        }
    }
    /* the first op: its input 0 is in acc, its input 1 in b */
    for (int o = 0; o < n_r; o++)
        s_strip(&r[o], acc, i, vn);
    _Pragma("GCC unroll 8") for (int j = 0; j < vn; j++)
        *(s_vu *)(y + i + j * S_VL) = acc[j];
}

/* The run r[0..n_r) over n elements into y, a strip at a time, then a
 * vector at a time; the last few elements as one vector over zero-padded
 * copies of the operands. y may be an operand's memory (a strip's
 * elements are read before they are written over). */
S_REGS_ATTR static void S_REGS(const s_rop *r, int n_r, int64_t n, float *y)
{
    enum { S = S_VL * S_VN };
    int64_t i = 0;
    for (; i + S <= n; i += S)
        s_strip_run(r, n_r, i, y, S_VN);
    for (; i + S_VL <= n; i += S_VL)
        s_strip_run(r, n_r, i, y, 1);
    if (i == n)
        return;
    _Alignas(GX_ALIGN) float buf[GX_FUSED_MAX_OPS + 2][S_VL];
    s_rop t[GX_FUSED_MAX_OPS];
    const size_t m = (size_t)(n - i);
    t[0] = r[0]; /* (n_r >= 2; said for the compiler) */
    for (int o = 0; o < n_r; o++) {
        t[o] = r[o];
        if (o == 0 && r[0].sa) { /* the first op's input 0 */
            float *d = buf[GX_FUSED_MAX_OPS];
            memcpy(d, r[0].a + i, m * sizeof(float));
            memset(d + m, 0, (S_VL - m) * sizeof(float));
            t[0].a = d;
        }
        if (!s_unary(r[o].code) && r[o].sb) {
            float *d = buf[o];
            memcpy(d, r[o].b + i, m * sizeof(float));
            memset(d + m, 0, (S_VL - m) * sizeof(float));
            t[o].b = d;
        }
    }
    s_strip_run(t, n_r, 0, buf[GX_FUSED_MAX_OPS + 1], 1);
    memcpy(y + i, buf[GX_FUSED_MAX_OPS + 1], m * sizeof(float));
}

#undef s_strip
#undef s_strip_run
#undef S_REGS_NAME
#undef S_REGS_NAME_
#undef s_v
#undef s_vi
#undef s_vu
#undef s_vw
#undef S_VL
#undef S_REGS
#undef S_REGS_ATTR
