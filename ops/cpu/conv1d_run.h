/*
 * One run of the 1-D direct conv (ops/cpu/conv.c, s_conv_1d) for one
 * vector width: conv.c includes this once per width, with these defined,
 * and it undefines them at its end (no include guard: each inclusion is
 * another width):
 *
 *   S_C1_RUN          the name of the function this defines
 *   S_C1_ATTR         its target attribute
 *   s_cv, s_cm        the vector of floats and the lane mask
 *   S_CL              floats in s_cv
 *   S_CV, S_CMR       vectors of positions in a run, output channels at most
 *   S_CSET1(f), S_CZERO(), S_CLOAD(p), S_CSTORE(p, v), S_CFMA(a, b, c)
 *                     (a * b + c, one rounding)
 *   S_CMASK(lo, hi)   lanes [lo, hi) (0 <= lo, hi <= S_CL; none if hi <= lo)
 *   S_CLOADM(m, p)    p's lanes in m, zeros in the others (no fault there)
 *   S_CSTOREM(p, m, v) v's lanes in m to p
 *
 * Whatever the width, an output element is its bias (or 0) plus its
 * products in the order (input channel, tap), each fused into the sum, so
 * every width gives the same bits.
 */

/* One run: channels [0, MR) of W at w (rows of cg * k weights, ldw apart),
 * positions [p0, p0 + n) (n <= S_CV * S_CL) of y (rows P apart), x's rows
 * of L floats at x. CHK: some tap of the run reads outside [0, L) (or n <
 * S_CV * S_CL): masked loads of the lanes inside, masked stores of n lanes.
 * more: the sums go on from y's values (a pass over the input channels
 * before these) instead of starting at the bias; stored and reloaded
 * floats are the sums themselves, so a split into passes adds in the same
 * order. */
static inline S_C1_ATTR __attribute__((always_inline)) void
S_C1_RUN(const int MR, const bool CHK, const float *x, int64_t L, int64_t cg, int64_t k,
         int64_t dil, int64_t pad, const float *w, int64_t ldw, const float *bias, int64_t p0,
         int64_t n, float *y, int64_t P, bool more)
{
    s_cv acc[S_CMR][S_CV];
    if (more) {
#pragma GCC unroll 4
        for (int v = 0; v < S_CV; v++) {
            const int64_t left = n - v * S_CL;
            const s_cm m = S_CMASK(0, left < 0 ? 0 : left > S_CL ? S_CL : (int)left);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++)
                acc[i][v] = !CHK || left >= S_CL ? S_CLOAD(y + i * P + p0 + v * S_CL)
                                                 : S_CLOADM(m, y + i * P + p0 + v * S_CL);
        }
    } else {
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            const s_cv b = bias ? S_CSET1(bias[i]) : S_CZERO();
#pragma GCC unroll 4
            for (int v = 0; v < S_CV; v++)
                acc[i][v] = b;
        }
    }
    const int64_t s0 = p0 - pad;
    s_cm mk[S_C1_KMAX][S_CV];
    if (CHK) {
        for (int64_t t = 0; t < k; t++)
            for (int v = 0; v < S_CV; v++) {
                /* lane l reads x[at + l]: inside x and among the n */
                const int64_t at = s0 + t * dil + v * S_CL;
                const int64_t lo = -at, hi = L - at < n - v * S_CL ? L - at : n - v * S_CL;
                mk[t][v] = S_CMASK(lo < 0 ? 0 : lo > S_CL ? S_CL : (int)lo,
                                   hi < 0 ? 0 : hi > S_CL ? S_CL : (int)hi);
            }
    }
    for (int64_t c = 0; c < cg; c++) {
        const float *xc = x + c * L;
        const float *wc = w + c * k;
        for (int64_t t = 0; t < k; t++) {
            const int64_t s = s0 + t * dil;
            s_cv xv[S_CV];
#pragma GCC unroll 4
            for (int v = 0; v < S_CV; v++)
                xv[v] = CHK ? S_CLOADM(mk[t][v], xc + (s + v * S_CL))
                            : S_CLOAD(xc + (s + v * S_CL));
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++) {
                const s_cv wb = S_CSET1(wc[i * ldw + t]);
#pragma GCC unroll 4
                for (int v = 0; v < S_CV; v++)
                    acc[i][v] = S_CFMA(wb, xv[v], acc[i][v]);
            }
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < S_CV; v++) {
        const int64_t left = n - v * S_CL;
        if (!CHK || left >= S_CL) {
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++)
                S_CSTORE(y + i * P + p0 + v * S_CL, acc[i][v]);
        } else if (left > 0) {
            const s_cm m = S_CMASK(0, (int)left);
#pragma GCC unroll 6
            for (int i = 0; i < MR; i++)
                S_CSTOREM(y + i * P + p0 + v * S_CL, m, acc[i][v]);
        }
    }
}

#undef S_C1_RUN
#undef S_C1_ATTR
#undef s_cv
#undef s_cm
#undef S_CL
#undef S_CV
#undef S_CMR
#undef S_CSET1
#undef S_CZERO
#undef S_CLOAD
#undef S_CSTORE
#undef S_CFMA
#undef S_CMASK
#undef S_CLOADM
#undef S_CSTOREM
