/* CPU kernels of the quant family (GX_OPS_QUANT in ops/op.h). Rounding is
 * rint's: to nearest, ties to even (the default FP environment). */
#include <math.h>
#include <string.h>

#include "ops/conv.h"
#include "ops/gemm.h" /* gx_cpu_gemm_isa */
#include "ops/cpu/cpu.h"
#include "ops/cpu/requant.h"

/* Per-axis geometry of scale s against x: element i of x uses scale
 * (i / inner) % n_ch; a per-tensor scale is n_ch = inner = 1. */
static void s_channels(const gx_view *x, const gx_view *s, int64_t axis, int64_t *n_ch,
                       int64_t *inner)
{
    *n_ch = 1;
    *inner = 1;
    int ax;
    if (s->numel > 1 && gx_axis_norm(axis, x->ndim, &ax)) {
        *n_ch = x->shape[ax];
        for (int d = ax + 1; d < x->ndim; d++)
            *inner *= x->shape[d];
    }
}

/* Zero point c as int32 (0 when omitted). */
static int32_t s_zero_point(const gx_kargs *k, int i, int64_t c)
{
    if (i >= k->n_in || k->in[i].ndim < 0)
        return 0;
    const gx_view *z = &k->in[i];
    return z->dtype == GX_I32 ? ((const int32_t *)z->data)[c]
           : z->dtype == GX_I8 ? ((const int8_t *)z->data)[c]
                               : ((const uint8_t *)z->data)[c];
}

/* v clamped to [lo, hi]; NaN gives lo (a cast of NaN is undefined). Two
 * plain selections, which vectorise as max and min. */
static float s_clampf(float v, float lo, float hi)
{
    const float a = v > lo ? v : lo;
    return a < hi ? a : hi;
}

/* Runs of bytes quantized and dequantized with one scale and zero point,
 * in explicit AVX-512 or AVX2 (s_isa_of): the compilers' vectorisation of
 * the plain loops narrows and widens through 256-bit steps and lowers the
 * saturating casts to blends, at several times the cost (bench_ort qdw_s2
 * on a Zen 3 core: its QuantizeLinear of 451584 floats took 200 us in
 * the plain loop's AVX2 clone). Every form gives the plain loop's bytes. */
enum { S_PLAIN, S_256, S_512 };
#ifdef GX_REQUANT_AVX512
/* y = rint(x / s) + z saturated to [lo, hi] (NaN: lo), as n bytes. */
__attribute__((target("avx512f"))) static void s_quantize_512(int64_t n, const float *x,
                                                               float s, float z, float lo,
                                                               float hi, void *y)
{
    const __m512 sv = _mm512_set1_ps(s), zv = _mm512_set1_ps(z);
    const __m512 lv = _mm512_set1_ps(lo), hv = _mm512_set1_ps(hi);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), sv);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          zv);
        v = _mm512_min_ps(_mm512_max_ps(v, lv), hv); /* max first: NaN gives lo */
        _mm512_mask_cvtepi32_storeu_epi8((char *)y + i, m, _mm512_cvttps_epi32(v));
    }
}

/* y = (x - z) * s for n bytes x (int8 when sgn, else uint8), 16 lanes. */
__attribute__((target("avx512f"))) static void s_dequantize_512(int64_t n, const void *x,
                                                                 bool sgn, float s, int32_t z,
                                                                 float *y)
{
    const __m512 sv = _mm512_set1_ps(s);
    const __m512i zv = _mm512_set1_epi32(z);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i b = _mm_loadu_si128((const __m128i *)((const char *)x + i));
        const __m512i v = sgn ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, zv)), sv));
    }
    for (; i < n; i++) /* the tail (a masked byte load would need AVX512BW) */
        y[i] = (float)((sgn ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i]) - z) * s;
}

/* s_quantize_512 in AVX2, 32 at a time: four vectors of int32 packed to
 * bytes (signed when lo < 0; the values are in range, so the packs do
 * not saturate), their 4-byte groups put back in order. */
__attribute__((target("avx2"))) static void s_quantize_256(int64_t n, const float *x, float s,
                                                            float z, float lo, float hi, void *y)
{
    const __m256 sv = _mm256_set1_ps(s), zv = _mm256_set1_ps(z);
    const __m256 lv = _mm256_set1_ps(lo), hv = _mm256_set1_ps(hi);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < n; i += 32) {
        __m256i q[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            const int64_t left = n - i - v * 8;
            const __m256 xv = left >= 8 ? _mm256_loadu_ps(x + i + v * 8)
                                        : _mm256_maskload_ps(x + i + v * 8, gx_mask8(left));
            __m256 t = _mm256_round_ps(_mm256_div_ps(xv, sv),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            t = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(t, zv), lv), hv); /* NaN gives lo */
            q[v] = _mm256_cvtps_epi32(t);
        }
        const __m256i w0 = _mm256_packs_epi32(q[0], q[1]), w1 = _mm256_packs_epi32(q[2], q[3]);
        const __m256i b = _mm256_permutevar8x32_epi32(
            lo < 0.0f ? _mm256_packs_epi16(w0, w1) : _mm256_packus_epi16(w0, w1), order);
        if (n - i >= 32) {
            _mm256_storeu_si256((__m256i *)((char *)y + i), b);
        } else {
            uint8_t t[32];
            _mm256_storeu_si256((__m256i *)t, b);
            memcpy((char *)y + i, t, (size_t)(n - i));
        }
    }
}

/* s_dequantize_512 in AVX2, 8 at a time. */
__attribute__((target("avx2"))) static void s_dequantize_256(int64_t n, const void *x, bool sgn,
                                                              float s, int32_t z, float *y)
{
    const __m256 sv = _mm256_set1_ps(s);
    const __m256i zv = _mm256_set1_epi32(z);
    int64_t i = 0;
#pragma GCC unroll 4
    for (; i + 8 <= n; i += 8) {
        int64_t b8;
        memcpy(&b8, (const char *)x + i, sizeof b8);
        const __m128i b = _mm_cvtsi64_si128(b8);
        const __m256i v = sgn ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, zv)), sv));
    }
    for (; i < n; i++)
        y[i] = (float)((sgn ? ((const int8_t *)x)[i] : ((const uint8_t *)x)[i]) - z) * s;
}

/* The byte kernels of the GEMM's ISA (gx_cpu_gemm_isa: tests set it to
 * take each) where the CPU has them. */
static int s_isa_of(void)
{
    const char *isa = gx_cpu_gemm_isa();
    if (!strcmp(isa, "avx512") && gx_requant_avx512())
        return S_512;
    return strcmp(isa, "baseline") && gx_requant_avx2() ? S_256 : S_PLAIN;
}
#else
static int s_isa_of(void)
{
    return S_PLAIN;
}
/* never called */
#define s_quantize_512(n, x, s, z, lo, hi, y) ((void)0)
#define s_dequantize_512(n, x, sgn, s, z, y) ((void)0)
#define s_quantize_256(n, x, s, z, lo, hi, y) ((void)0)
#define s_dequantize_256(n, x, sgn, s, z, y) ((void)0)
#endif

/* ---- QuantizeLinear ---- */

/* A run of n elements sharing one scale s and zero point z: y =
 * saturate(rint(x / s) + z), the quotient rounded to float first (as the
 * ONNX reference's numpy does; a product with 1 / s is not always the
 * same). */
#define S_QUANTIZE(T, LO, HI)                                                 \
    GX_CPU_CLONES static void s_quantize_plain_##T(int64_t n, const float *restrict x, float s, \
                                                   float z, T *restrict y)    \
    {                                                                         \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = (T)s_clampf(rintf(x[i] / s) + z, LO, HI);                  \
    }                                                                         \
    static void s_quantize_run_##T(int isa, int64_t n, const float *x, float s, float z, T *y) \
    {                                                                         \
        if (isa == S_512)                                                     \
            s_quantize_512(n, x, s, z, LO, HI, y);                            \
        else if (isa == S_256)                                                \
            s_quantize_256(n, x, s, z, LO, HI, y);                            \
        else                                                                  \
            s_quantize_plain_##T(n, x, s, z, y);                              \
    }                                                                         \
    static void s_quantize_##T(const gx_kargs *k, int isa, int64_t lo, int64_t hi, int64_t n_ch, \
                               int64_t inner)                                 \
    {                                                                         \
        const float *x = k->in[0].data, *scale = k->in[1].data;               \
        T *y = k->out[0].data;                                                \
        for (int64_t i = lo; i < hi;) {                                       \
            const int64_t c = (i / inner) % n_ch;                             \
            const int64_t end = n_ch == 1 ? hi : (i / inner + 1) * inner;     \
            const int64_t n = (end < hi ? end : hi) - i;                      \
            s_quantize_run_##T(isa, n, x + i, scale[c], (float)s_zero_point(k, 2, c), y + i); \
            i += n;                                                           \
        }                                                                     \
    }
S_QUANTIZE(uint8_t, 0.0f, 255.0f)
S_QUANTIZE(int8_t, -128.0f, 127.0f)
#undef S_QUANTIZE

void gx_cpu_QUANTIZE_LINEAR(const gx_kargs *k)
{
    int64_t lo, hi, n_ch, inner;
    gx_cpu_share(k, k->out[0].numel, GX_CPU_LINE * 4, &lo, &hi);
    s_channels(&k->in[0], &k->in[1], k->attr[GX_QUANTIZE_AXIS].i, &n_ch, &inner);
    if (k->out[0].dtype == GX_I8)
        s_quantize_int8_t(k, s_isa_of(), lo, hi, n_ch, inner);
    else
        s_quantize_uint8_t(k, s_isa_of(), lo, hi, n_ch, inner);
}

/* ---- DequantizeLinear ---- */

#define S_DEQUANTIZE(T)                                                       \
    GX_CPU_CLONES static void s_dequantize_plain_##T(int64_t n, const T *restrict x, float s,  \
                                                     int32_t z, float *restrict y) \
    {                                                                         \
        for (int64_t i = 0; i < n; i++)                                       \
            y[i] = (sizeof(T) < 4 ? (float)((int32_t)x[i] - z)                 \
                                  : (float)((int64_t)x[i] - z)) * s;           \
    }                                                                         \
    /* bytes in AVX-512 or AVX2 */                                            \
    static void s_dequantize_run_##T(int isa, int64_t n, const T *x, float s, int32_t z,     \
                                     float *y)                                \
    {                                                                         \
        if (sizeof(T) == 1 && isa == S_512)                                   \
            s_dequantize_512(n, x, (T)-1 < 0, s, z, y);                       \
        else if (sizeof(T) == 1 && isa == S_256)                              \
            s_dequantize_256(n, x, (T)-1 < 0, s, z, y);                       \
        else                                                                  \
            s_dequantize_plain_##T(n, x, s, z, y);                            \
    }                                                                         \
    static void s_dequantize_##T(const gx_kargs *k, int isa, int64_t lo, int64_t hi,         \
                                 int64_t n_ch, int64_t inner)                 \
    {                                                                         \
        const T *x = k->in[0].data;                                           \
        const float *scale = k->in[1].data;                                   \
        float *y = k->out[0].data;                                            \
        for (int64_t i = lo; i < hi;) {                                       \
            const int64_t c = (i / inner) % n_ch;                             \
            const int64_t end = n_ch == 1 ? hi : (i / inner + 1) * inner;     \
            const int64_t n = (end < hi ? end : hi) - i;                      \
            s_dequantize_run_##T(isa, n, x + i, scale[c], s_zero_point(k, 2, c), y + i); \
            i += n;                                                           \
        }                                                                     \
    }
S_DEQUANTIZE(uint8_t)
S_DEQUANTIZE(int8_t)
S_DEQUANTIZE(int32_t)
#undef S_DEQUANTIZE

void gx_cpu_DEQUANTIZE_LINEAR(const gx_kargs *k)
{
    int64_t lo, hi, n_ch, inner;
    gx_cpu_share(k, k->out[0].numel, GX_CPU_LINE, &lo, &hi);
    s_channels(&k->in[0], &k->in[1], k->attr[GX_DEQUANTIZE_AXIS].i, &n_ch, &inner);
    const int isa = s_isa_of();
    if (k->in[0].dtype == GX_I8)
        s_dequantize_int8_t(k, isa, lo, hi, n_ch, inner);
    else if (k->in[0].dtype == GX_I32)
        s_dequantize_int32_t(k, isa, lo, hi, n_ch, inner);
    else
        s_dequantize_uint8_t(k, isa, lo, hi, n_ch, inner);
}

/* ---- DynamicQuantizeLinear ---- */

typedef float s_v8 __attribute__((vector_size(32), aligned(4)));
typedef int32_t s_vi8 __attribute__((vector_size(32), aligned(4)));

/* The range of x with 0 in it: [min(0, min x), max(0, max x)]; NaN is
 * passed over. 8 lanes at a time, selected by compare masks (C has no ?:
 * on vectors; gcc lowers the compares of vectors wider than AVX2's
 * registers lane by lane into scalar code). */
GX_CPU_CLONES static void s_range(int64_t n, const float *restrict x, float *mn, float *mx)
{
    s_v8 lo = {0}, hi = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const s_v8 v = *(const s_v8 *)(x + i);
        const s_vi8 l = v < lo, h = v > hi;
        lo = (s_v8)(((s_vi8)v & l) | ((s_vi8)lo & ~l));
        hi = (s_v8)(((s_vi8)v & h) | ((s_vi8)hi & ~h));
    }
    float a = 0.0f, b = 0.0f;
    for (int l = 0; l < 8; l++) {
        a = lo[l] < a ? lo[l] : a;
        b = hi[l] > b ? hi[l] : b;
    }
    for (; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
    }
    *mn = a, *mx = b;
}

/* The range is [min(0, min x), max(0, max x)], so 0 is exact; scale =
 * range / 255 and zero point = saturate(round(-min / scale)). Every share
 * scans all of x for the range (no shared state between shares); share 0
 * writes the scalar outputs. An all-zero x has scale 0: y and the zero
 * point are 0 then. */
void gx_cpu_DYNAMIC_QUANTIZE_LINEAR(const gx_kargs *k)
{
    const float *x = k->in[0].data;
    const int64_t n = k->in[0].numel;
    float mn, mx;
    s_range(n, x, &mn, &mx);
    const float scale = (mx - mn) / 255.0f;
    const float zp = scale > 0.0f ? s_clampf(rintf(-mn / scale), 0.0f, 255.0f) : 0.0f;
    if (k->ith == 0) {
        *(float *)k->out[1].data = scale;
        *(uint8_t *)k->out[2].data = (uint8_t)zp;
    }
    int64_t lo, hi;
    gx_cpu_share(k, n, GX_CPU_LINE * 4, &lo, &hi);
    uint8_t *y = k->out[0].data;
    if (scale > 0.0f)
        s_quantize_run_uint8_t(s_isa_of(), hi - lo, x + lo, scale, zp, y + lo);
    else if (hi > lo)
        memset(y + lo, 0, (size_t)(hi - lo));
}

/* ---- QLinearMatMul ---- */

/* Element e (int32) of a uint8 or int8 tensor. */
static int32_t s_byte(const gx_view *v, int64_t e)
{
    return v->dtype == GX_I8 ? ((const int8_t *)v->data)[e] : ((const uint8_t *)v->data)[e];
}

/* Exact sums of (a - a_zp)(b - b_zp), scaled by a_scale * b_scale /
 * y_scale (float32, then the product in double as the ONNX reference's
 * numpy does), rounded half to even, plus y_zp, saturated. Shares
 * are output rows. */
void gx_cpu_QLINEAR_MATMUL(const gx_kargs *k)
{
    const gx_view *a = &k->in[0], *b = &k->in[3], *y = &k->out[0];
    const int64_t m = a->shape[a->ndim - 2], kk = a->shape[a->ndim - 1];
    const int64_t n = b->shape[b->ndim - 1];
    const int nb = y->ndim - 2;
    int64_t sa[GX_MAX_DIMS] = {0}, sb[GX_MAX_DIMS] = {0};
    gx_bcast_strides(nb, a->ndim - 2, a->shape, sa);
    gx_bcast_strides(nb, b->ndim - 2, b->shape, sb);
    const int32_t az = s_zero_point(k, 2, 0), bz = s_zero_point(k, 5, 0);
    const float yz = (float)s_zero_point(k, 7, 0);
    const float mul = *(const float *)k->in[1].data * *(const float *)k->in[4].data /
                      *(const float *)k->in[6].data;
    const float qlo = y->dtype == GX_I8 ? -128.0f : 0.0f, qhi = y->dtype == GX_I8 ? 127.0f : 255.0f;
    int64_t lo, hi;
    gx_cpu_share(k, y->numel / (n ? n : 1), 1, &lo, &hi);
    for (int64_t row = lo; row < hi; row++) {
        const int64_t batch = row / m, i = row % m;
        int64_t oa = 0, ob = 0, rem = batch;
        for (int d = nb - 1; d >= 0; d--) {
            const int64_t idx = rem % y->shape[d];
            rem /= y->shape[d];
            oa += idx * sa[d];
            ob += idx * sb[d];
        }
        oa = oa * m * kk + i * kk;
        ob = ob * kk * n;
        for (int64_t j = 0; j < n; j++) {
            int64_t acc = 0;
            for (int64_t p = 0; p < kk; p++)
                acc += (s_byte(a, oa + p) - az) * (s_byte(b, ob + p * n + j) - bz);
            const float v = s_clampf((float)rint((double)acc * mul) + yz, qlo, qhi);
            if (y->dtype == GX_I8)
                ((int8_t *)y->data)[row * n + j] = (int8_t)v;
            else
                ((uint8_t *)y->data)[row * n + j] = (uint8_t)v;
        }
    }
}

/* ---- Unique ---- */

/* Serial (share 0 does it all): the sort has no cheap split. */
void gx_cpu_UNIQUE(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const bool flatten = !k->attr[GX_UNIQUE_AXIS].set;
    int axis = 0;
    if (!flatten)
        gx_axis_norm(k->attr[GX_UNIQUE_AXIS].i, x->ndim, &axis);
    int64_t *work = k->scratch;
    const int64_t u = gx_unique_run(x, flatten, axis, k->attr[GX_UNIQUE_SORTED].i != 0, work);
    const int64_t n = flatten ? x->numel : x->shape[axis];
    int64_t outer = 1, inner = 1;
    for (int d = 0; !flatten && d < x->ndim; d++) {
        if (d < axis)
            outer *= x->shape[d];
        else if (d > axis)
            inner *= x->shape[d];
    }
    const size_t row = (size_t)inner * gx_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < u; j++)
            memcpy((char *)y->data + (size_t)(o * u + j) * row,
                   (const char *)x->data + (size_t)(o * n + work[j]) * row, row);
    }
    /* indices, inverse_indices and counts lie in work at 0, 2n and n */
    static const int at[4] = {0, 0, 2, 1};
    for (int o = 1; o < k->n_out && o < 4; o++) {
        if (k->out[o].data)
            memcpy(k->out[o].data, work + at[o] * n, (size_t)k->out[o].numel * sizeof *work);
    }
}

/* ---- NonMaxSuppression ---- */

/* Serial (share 0 does it all): each selection depends on the previous. */
void gx_cpu_NON_MAX_SUPPRESSION(const gx_kargs *k)
{
    if (k->ith != 0)
        return;
    gx_nms_run(k->n_in, k->in, k->attr[GX_NMS_CENTER_POINT_BOX].i != 0, k->out[0].data,
               k->scratch);
}
