/*
 * CPU kernels of the signal family (GX_OPS_SIGNAL in ops/op.h): window
 * generators, DFT, STFT and MelWeightMatrix. The transforms are direct
 * O(n^2) sums in double per line, the twiddle factor advanced by one
 * complex rotation per term (its error grows like n * 2^-53, far below
 * float32 output precision) so that a line costs n trigonometric calls, not
 * n^2. Shares split the lines (or window elements, or mel bins).
 */
#include <math.h>

#include "ops/cpu/cpu.h"
#include "ops/schema.h"

/* The value of an int32/int64 scalar input. */
static int64_t s_int_value(const gx_view *v)
{
    return v->dtype == GX_I32 ? ((const int32_t *)v->data)[0] : ((const int64_t *)v->data)[0];
}

/* The value of a float32/float64 scalar input. */
static double s_real_value(const gx_view *v)
{
    return v->dtype == GX_F32 ? ((const float *)v->data)[0] : ((const double *)v->data)[0];
}

/* Stores v as element i of a float32 or float64 output (the output dtypes
 * infer allows for output_datatype). */
static inline void s_store(const gx_view *y, int64_t i, double v)
{
    if (y->dtype == GX_F64)
        ((double *)y->data)[i] = v;
    else
        ((float *)y->data)[i] = (float)v;
}

/* ---- windows: y[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the
 * size when periodic, else size - 1 ---- */

static void s_window(const gx_kargs *k, double a0, double a1, double a2)
{
    const gx_view *y = &k->out[0];
    const int64_t size = y->numel;
    const int64_t period = k->attr[GX_WINDOW_PERIODIC].i ? size : size - 1;
    int64_t lo, hi;
    gx_cpu_share(k, size, GX_CPU_LINE, &lo, &hi);
    for (int64_t n = lo; n < hi; n++) {
        /* a symmetric window of 1 element has period 0: its one point is
         * the window's start */
        const double t = period > 0 ? 2 * M_PI * (double)n / (double)period : 0;
        s_store(y, n, a0 - a1 * cos(t) + a2 * cos(2 * t));
    }
}

void gx_cpu_HANN_WINDOW(const gx_kargs *k) { s_window(k, 0.5, 0.5, 0); }
void gx_cpu_HAMMING_WINDOW(const gx_kargs *k) { s_window(k, 25.0 / 46, 21.0 / 46, 0); }
void gx_cpu_BLACKMAN_WINDOW(const gx_kargs *k) { s_window(k, 0.42, 0.5, 0.08); }

/* ---- DFT, STFT ---- */

/* One line of a transform of length len: y[b] (b < n_out, complex pairs
 * ys floats apart) = scale * sum over j < n_use of w[j] x[j] e^(sign 2 pi i
 * j b / len), x[j] at x + j * xs, real (channels 1) or complex (2); terms
 * j >= n_use are the zero padding. w NULL: no window. */
static void s_dft_line(const float *x, int64_t xs, int64_t channels, int64_t n_use,
                       const float *w, int64_t len, int64_t n_out, bool inverse, float *y,
                       int64_t ys)
{
    const double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)len : 1;
    for (int64_t b = 0; b < n_out; b++) {
        const double t = sign * 2 * M_PI * (double)(b % len) / (double)len;
        const double wr = cos(t), wi = sin(t);
        double zr = 1, zi = 0, re = 0, im = 0;
        for (int64_t j = 0; j < n_use; j++) {
            const float *p = x + j * xs;
            const double g = w ? w[j] : 1;
            const double xr = g * p[0], xi = channels == 2 ? g * p[1] : 0;
            re += xr * zr - xi * zi;
            im += xr * zi + xi * zr;
            const double nr = zr * wr - zi * wi;
            zi = zr * wi + zi * wr;
            zr = nr;
        }
        y[b * ys] = (float)(re * scale);
        y[b * ys + 1] = (float)(im * scale);
    }
}

/* Lines are the input's index tuples but axis and the channel dim: outer
 * (dims before axis) by inner (dims between axis and channels). */
void gx_cpu_DFT(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    int ax = 0;
    gx_axis_norm(k->attr[GX_DFT_AXIS].i, x->ndim, &ax);
    const int64_t channels = x->shape[x->ndim - 1], n_in = x->shape[ax], n_out = y->shape[ax];
    const int64_t len = k->n_in > 1 && k->in[1].ndim >= 0 ? s_int_value(&k->in[1]) : n_in;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++)
        outer *= x->shape[d];
    for (int d = ax + 1; d < x->ndim - 1; d++)
        inner *= x->shape[d];
    int64_t lo, hi;
    gx_cpu_share(k, outer * inner, 1, &lo, &hi);
    for (int64_t l = lo; l < hi; l++) {
        const int64_t o = l / inner, i = l % inner;
        s_dft_line((const float *)x->data + (o * n_in * inner + i) * channels, inner * channels,
                   channels, n_in < len ? n_in : len, NULL, len, n_out,
                   k->attr[GX_DFT_INVERSE].i != 0,
                   (float *)y->data + (o * n_out * inner + i) * 2, inner * 2);
    }
}

/* Lines are (batch, frame) pairs; frame f starts at sample f * frame_step. */
void gx_cpu_STFT(const gx_kargs *k)
{
    const gx_view *x = &k->in[0], *y = &k->out[0];
    const bool has_win = k->n_in > 2 && k->in[2].ndim >= 0;
    const int64_t step = s_int_value(&k->in[1]);
    const int64_t len = k->n_in > 3 && k->in[3].ndim >= 0 ? s_int_value(&k->in[3])
                                                          : k->in[2].shape[0];
    const int64_t channels = x->shape[2], samples = x->shape[1];
    const int64_t frames = y->shape[1], bins = y->shape[2];
    int64_t lo, hi;
    gx_cpu_share(k, x->shape[0] * frames, 1, &lo, &hi);
    for (int64_t l = lo; l < hi; l++) {
        const int64_t b = l / frames, f = l % frames;
        s_dft_line((const float *)x->data + (b * samples + f * step) * channels, channels,
                   channels, len, has_win ? (const float *)k->in[2].data : NULL, len, bins,
                   false, (float *)y->data + l * bins * 2, 2);
    }
}

/* ---- MelWeightMatrix: triangular filters between mel-spaced bins ---- */

/* The spectrogram bin of the i-th of the num_mel_bins + 2 points evenly
 * spaced in mel from lower to upper (mel = 2595 log10(1 + hz / 700)),
 * as ONNX computes it: floor((dft_length + 1) hz / sample_rate). */
static int64_t s_mel_point(const gx_kargs *k, int64_t i)
{
    const int64_t bins = s_int_value(&k->in[0]), len = s_int_value(&k->in[1]),
                  rate = s_int_value(&k->in[2]);
    const double lo = 2595 * log10(1 + s_real_value(&k->in[3]) / 700);
    const double hi = 2595 * log10(1 + s_real_value(&k->in[4]) / 700);
    const double mel = (double)i * (hi - lo) / (double)(bins + 2) + lo;
    const double hz = 700 * (pow(10, mel / 2595) - 1);
    return (int64_t)floor((double)(len + 1) * hz / (double)rate);
}

/* Writes column m of y (rows spectrogram bins); rows past the matrix are
 * skipped (points round to at most dft_length / 2 + 1 for odd lengths). */
static void s_mel_column(const gx_kargs *k, int64_t m)
{
    const gx_view *y = &k->out[0];
    const int64_t rows = y->shape[0], cols = y->shape[1];
    const int64_t l = s_mel_point(k, m), c = s_mel_point(k, m + 1), h = s_mel_point(k, m + 2);
    for (int64_t r = 0; r < rows; r++)
        s_store(y, r * cols + m, 0);
    /* the order is ONNX's: the falling edge overwrites the centre */
    if (c == l) {
        if (c >= 0 && c < rows)
            s_store(y, c * cols + m, 1);
    } else {
        for (int64_t r = l; r <= c; r++)
            if (r >= 0 && r < rows)
                s_store(y, r * cols + m, (double)(r - l) / (double)(c - l));
    }
    for (int64_t r = c; r < h; r++)
        if (r >= 0 && r < rows)
            s_store(y, r * cols + m, (double)(h - r) / (double)(h - c));
}

void gx_cpu_MEL_WEIGHT_MATRIX(const gx_kargs *k)
{
    int64_t lo, hi;
    gx_cpu_share(k, k->out[0].shape[1], 1, &lo, &hi);
    for (int64_t m = lo; m < hi; m++)
        s_mel_column(k, m);
}
