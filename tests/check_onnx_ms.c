/* Models saved by ONNX Runtime after its graph optimizations, with their
 * com.microsoft contrib ops, run through gexec: each model of
 * tests/data/ms (tests/data/ms/gen.py) is optimized and saved by ORT
 * (SetOptimizedModelFilePath), the saved model runs on gexecd, and its
 * output is compared with ORT's on the original model (where ORT's
 * products are not exact on this CPU, gexec's: s_ort_exact).
 *
 * ONNX Runtime is loaded with dlopen from $GEXEC_ORT_LIB, else from
 * build/ort (bench/ort.sh); without it the test says so and checks
 * nothing. The OrtApi slots used are pinned by index, as bench/ort_save.c
 * does. */
#include <check.h>
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

/* LeakSanitizer's hook (sanitizer builds): what ONNX Runtime keeps for
 * the life of the process is its own, not gexec's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libonnxruntime.so\n";
}

typedef struct OrtStatus OrtStatus;
typedef struct s_ort_base {
    void *const *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} s_ort_base;

/* OrtApi slot indexes (onnxruntime_c_api.h) */
enum { S_MSG = 2, S_ENV = 3, S_SESSION = 7, S_RUN = 9, S_OPTIONS = 10, S_SAVE_PATH = 11,
       S_LEVEL = 23, S_THREADS = 24, S_TENSOR = 49, S_DATA = 51, S_NDIM = 61, S_DIMS = 62,
       S_SHAPE = 65, S_CPU_MEM = 69, S_REL_ENV = 92, S_REL_STATUS = 93, S_REL_MEM = 94,
       S_REL_SESSION = 95, S_REL_VALUE = 96, S_REL_SHAPE = 99, S_REL_OPTIONS = 100 };

static void *const *s_api;
static void *s_env, *s_mem;

#define S_FN(slot, ret, ...) ((ret(*)(__VA_ARGS__))s_api[slot])

/* Fail the test with st's message. */
static void s_ok(OrtStatus *st, const char *what)
{
    if (st)
        ck_abort_msg("ONNX Runtime: %s: %s", what, S_FN(S_MSG, const char *, OrtStatus *)(st));
}

/* Load ORT; false (and why on stdout) when it is not there. */
static bool s_ort_load(void)
{
    char path[4096] = "";
    const char *env = getenv("GEXEC_ORT_LIB");
    if (env && *env)
        snprintf(path, sizeof path, "%s", env);
    else {
        glob_t gl;
        if (glob(GX_TEST_BUILDDIR "/ort/node_modules/onnxruntime-node/bin/napi-v*/linux/*/"
                 "libonnxruntime.so.1", 0, NULL, &gl) == 0) {
            for (size_t i = 0; i < gl.gl_pathc; i++)
#if defined(__aarch64__)
                if (strstr(gl.gl_pathv[i], "/arm64/"))
#else
                if (strstr(gl.gl_pathv[i], "/x64/"))
#endif
                    snprintf(path, sizeof path, "%s", gl.gl_pathv[i]);
            globfree(&gl);
        }
    }
    void *dl = *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    const s_ort_base *(*get_base)(void) = NULL;
    if (dl)
        *(void **)&get_base = dlsym(dl, "OrtGetApiBase");
    if (!get_base || !(s_api = get_base()->GetApi(15))) {
        printf("onnx_ms: skipped: ONNX Runtime (libonnxruntime.so.1) not found (%s); set "
               "GEXEC_ORT_LIB or run bench/ort.sh\n",
               *path ? path : "no GEXEC_ORT_LIB, nothing under build/ort");
        return false;
    }
    s_ok(S_FN(S_ENV, OrtStatus *, int, const char *, void **)(3, "check_onnx_ms", &s_env),
         "CreateEnv");
    s_ok(S_FN(S_CPU_MEM, OrtStatus *, int, int, void **)(1, 0, &s_mem), "CreateCpuMemoryInfo");
    return true;
}

/* A session on model at level (0: none); with save, ORT writes the model
 * it optimized there. */
static void *s_session(const char *model, int level, const char *save)
{
    void *opt = NULL, *sess = NULL;
    s_ok(S_FN(S_OPTIONS, OrtStatus *, void **)(&opt), "CreateSessionOptions");
    s_ok(S_FN(S_LEVEL, OrtStatus *, void *, int)(opt, level), "optimization level");
    s_ok(S_FN(S_THREADS, OrtStatus *, void *, int)(opt, 1), "threads");
    if (save)
        s_ok(S_FN(S_SAVE_PATH, OrtStatus *, void *, const char *)(opt, save),
             "SetOptimizedModelFilePath");
    s_ok(S_FN(S_SESSION, OrtStatus *, void *, const char *, void *, void **)(s_env, model, opt,
                                                                            &sess),
         model);
    S_FN(S_REL_OPTIONS, void, void *)(opt);
    return sess;
}

/* ORT's output y of the session for input x (float32, n values). */
static float *s_ort_run(void *sess, float *x, int ndim, const int64_t *shape, size_t *n)
{
    size_t cnt = 1;
    for (int i = 0; i < ndim; i++)
        cnt *= (size_t)shape[i];
    void *in = NULL, *out = NULL, *info = NULL;
    s_ok(S_FN(S_TENSOR, OrtStatus *, void *, void *, size_t, const int64_t *, size_t, int,
              void **)(s_mem, x, cnt * sizeof *x, shape, (size_t)ndim, 1, &in),
         "input tensor");
    const char *in_name = "x", *out_name = "y";
    s_ok(S_FN(S_RUN, OrtStatus *, void *, void *, const char *const *, void *const *, size_t,
              const char *const *, size_t, void **)(sess, NULL, &in_name, &in, 1, &out_name, 1,
                                                    &out),
         "Run");
    size_t nd;
    int64_t dims[8];
    float *p;
    s_ok(S_FN(S_SHAPE, OrtStatus *, void *, void **)(out, &info), "output shape");
    s_ok(S_FN(S_NDIM, OrtStatus *, void *, size_t *)(info, &nd), "output rank");
    ck_assert_uint_le(nd, 8);
    s_ok(S_FN(S_DIMS, OrtStatus *, void *, int64_t *, size_t)(info, dims, nd), "dims");
    s_ok(S_FN(S_DATA, OrtStatus *, void *, void **)(out, (void **)&p), "output data");
    *n = 1;
    for (size_t i = 0; i < nd; i++)
        *n *= (size_t)dims[i];
    float *y = malloc(*n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    memcpy(y, p, *n * sizeof *y);
    S_FN(S_REL_SHAPE, void, void *)(info);
    S_FN(S_REL_VALUE, void, void *)(out);
    S_FN(S_REL_VALUE, void, void *)(in);
    return y;
}

/* Whether file holds the bytes of s. */
static bool s_file_has(const char *file, const char *s)
{
    FILE *f = fopen(file, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return memmem(buf, n, s, strlen(s)) != NULL;
}

static const struct {
    const char *model;
    int level;          /* ORT_ENABLE_EXTENDED 2, ORT_ENABLE_ALL 99 */
    const char *ops[6]; /* com.microsoft ops ORT writes into it */
    int ndim;
    int64_t shape[4];
    double tol;         /* abs + rel */
    bool u8s8;          /* uint8 x int8 products: see s_ort_exact */
} s_models[] = {
    {"cnn", 2, {"FusedConv"}, 4, {2, 3, 6, 6}, 1e-5, false},
    {"mlp", 2, {"Gelu", "QuickGelu"}, 2, {4, 8}, 1e-5, false},
    {"block", 2, {"FusedMatMul", "SkipLayerNormalization", "Gelu"}, 3, {2, 5, 8}, 1e-4, false},
    {"dq_mlp", 2, {"DynamicQuantizeMatMul"}, 2, {4, 8}, 1e-4, false},
    {"qconv", 99, {"QLinearConv"}, 4, {1, 4, 7, 7}, 1e-5, false},
    /* quantized outputs: at most one step of the output's scale (0.03) */
    {"qdq_ops", 2, {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat",
      "QLinearGlobalAveragePool"}, 4,
     {1, 4, 4, 4}, 0.031, false},
    /* com.microsoft.nchwc (where ORT has NCHWc kernels: AVX2, AVX-512) */
    {"nchwc_cnn", 99, {"ReorderInput", "ReorderOutput", "Upsample", "GlobalMaxPool"}, 4,
     {2, 3, 16, 16}, 1e-4, false},
    /* a quantized MobileNetV2 block whose QLinearConvs gexec runs in NHWC
     * (odd channel counts, uint8 and int8 weights, zero points not 0):
     * equal to ORT 1.30 (bench/ort.sh) with VNNI, whose float
     * requantization may differ from the ONNX reference by a step
     * elsewhere */
    {"qmbv2", 2, {"QLinearAdd"}, 4, {1, 21, 13, 11}, 1e-5, true},
};

/* Are ONNX Runtime's uint8 x int8 products exact on this CPU? Without
 * VNNI it multiplies them with vpmaddubsw, whose int16 pair sums saturate
 * (its quantizer's reduce_range is the cure), so a model with such
 * products is then compared with gexec's own output of the original
 * model instead: that still checks the com.microsoft ops ORT saved (the
 * original's standard ops are checked against the ONNX reference by the
 * conformance suite). */
static bool s_ort_exact(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
    return true;
#endif
}

/* The first output of the model at path on x, run by gexecd through c: a
 * copy (the caller frees it) of *ny values. */
static float *s_gx_run(gx_client *c, const char *path, const char *model, int ndim,
                       const int64_t *shape, const float *x, size_t n, size_t *ny)
{
    char err[2048];
    gx_graph *g = NULL;
    int rc = gx_graph_load_onnx(path, &g, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s: %s", model, err);
    gx_tensor *t = gx_tensor_new_copy(GX_F32, ndim, shape, x, n * sizeof *x);
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "x", t), GX_OK);
    gx_result *r = NULL;
    rc = gx_client_run(c, rq, &r);
    ck_assert_msg(rc == GX_OK, "%s: run: %s", model,
                  r ? gx_result_message(r) : gx_client_last_error(c));
    const gx_tensor *y = gx_result_output(r, 0);
    *ny = (size_t)gx_tensor_numel(y);
    float *out = malloc(*ny * sizeof *out);
    ck_assert_ptr_nonnull(out);
    memcpy(out, gx_tensor_cdata(y), *ny * sizeof *out);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_tensor_destroy(&t);
    gx_graph_destroy(&g);
    return out;
}

START_TEST(test_onnx_ms_ort_models)
{
    if (!s_ort_load())
        return;
    gxt_daemon d;
    char err[2048];
    gxt_daemon_start(&d, NULL);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c, "%s", err);
    char *dir = gxt_tmpdir();
    uint32_t seed = 12345;
    for (size_t m = 0; m < sizeof s_models / sizeof s_models[0]; m++) {
        char src[1024], saved[1024];
        snprintf(src, sizeof src, "%s", gxt_srcpath("tests/data/ms"));
        snprintf(src + strlen(src), sizeof src - strlen(src), "/%s.onnx", s_models[m].model);
        snprintf(saved, sizeof saved, "%s/%s.onnx", dir, s_models[m].model);
        size_t n = 1;
        for (int i = 0; i < s_models[m].ndim; i++)
            n *= (size_t)s_models[m].shape[i];
        float *x = malloc(n * sizeof *x);
        ck_assert_ptr_nonnull(x);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = (float)((seed >> 8) % 2001) / 500.0f - 2.0f;
        }
        /* ORT: the original model without its optimizations, and saved
         * optimized at the level */
        void *plain = s_session(src, 0, NULL);
        size_t ny;
        float *want = s_ort_run(plain, x, s_models[m].ndim, s_models[m].shape, &ny);
        S_FN(S_REL_SESSION, void, void *)(plain);
        S_FN(S_REL_SESSION, void, void *)(s_session(src, s_models[m].level, saved));
        if (strncmp(s_models[m].model, "nchwc", 5) == 0 &&
            !s_file_has(saved, "com.microsoft.nchwc")) {
            printf("onnx_ms: %s: skipped: ONNX Runtime has no NCHWc kernels on this CPU\n",
                   s_models[m].model);
            free(want);
            free(x);
            continue;
        }
        ck_assert_msg(s_file_has(saved, "com.microsoft"), "%s: no com.microsoft op saved",
                      s_models[m].model);
        for (size_t k = 0; k < 6 && s_models[m].ops[k]; k++)
            ck_assert_msg(s_file_has(saved, s_models[m].ops[k]), "%s: ORT saved no %s",
                          s_models[m].model, s_models[m].ops[k]);
        const bool by_ort = !s_models[m].u8s8 || s_ort_exact();
        if (!by_ort) {
            free(want);
            want = s_gx_run(c, src, s_models[m].model, s_models[m].ndim, s_models[m].shape, x,
                            n, &ny);
        }
        /* gexec on the saved model */
        size_t ng;
        float *got = s_gx_run(c, saved, s_models[m].model, s_models[m].ndim, s_models[m].shape,
                              x, n, &ng);
        ck_assert_uint_eq(ng, ny);
        double worst = 0;
        for (size_t i = 0; i < ny; i++) {
            double e = fabs((double)got[i] - want[i]);
            worst = fmax(worst, e);
            ck_assert_msg(e <= s_models[m].tol * (1 + fabs(want[i])),
                          "%s: element %zu is %.7g, %s gives %.7g", s_models[m].model, i, got[i],
                          by_ort ? "ONNX Runtime" : "gexec on the original", want[i]);
        }
        printf("onnx_ms: %s saved by ORT (level %d) matches %s on the original: %zu values, "
               "max abs diff %.3g\n", s_models[m].model, s_models[m].level,
               by_ort ? "ORT" : "gexec (this CPU has no VNNI: ORT's uint8 x int8 products "
                                "saturate)",
               ny, worst);
        free(got);
        free(want);
        free(x);
    }
    gxt_rmtree(dir);
    free(dir);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    S_FN(S_REL_MEM, void, void *)(s_mem);
    S_FN(S_REL_ENV, void, void *)(s_env);
}
END_TEST

/* ---- com.microsoft ops as written by hand (tests/data/ms/gen.py DIRECT),
 * run by ORT as they are and by gexec through its lowerings ---- */

typedef struct s_in {
    const char *name;
    const int32_t *i32; /* int32 values; NULL: random float32 */
    int ndim;
    int64_t shape[5];
} s_in;

/* masks: key lengths; lengths then starts; raw [B, T] and [B, S, T];
 * (attn_reduce: its [B, S] mask summed into lengths by the model);
 * GPT-2's [B, past + S] with the first keys of sample 0 masked, so that
 * the causal mask leaves its first query no key (ORT's additive mask
 * then decides the row; with attention_bias such a row is the rounding
 * of scores near -10000, so MultiHeadAttention's mask keeps a key) */
static const int32_t s_lengths[] = {5, 3}, s_end_start[] = {4, 5, 1, 0},
                     s_raw2[] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 1},
                     s_gpt2[] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
                     s_kv_len[] = {4, 6},
                     s_mha[] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
static int32_t s_raw3[2 * 5 * 5];
/* GroupQueryAttention's seqlens_k (total - 1 for each sample) and
 * total_sequence_length: prompts of 4 and 3 tokens, 2 after a past of 3
 * (ORT runs more than one token after a past only for one sample), 1
 * after 5 */
static const int32_t s_gqa_sl4[] = {3, 3}, s_gqa_t4[] = {4}, s_gqa_sl5[] = {4},
                     s_gqa_t5[] = {5}, s_gqa_sl6[] = {5, 5}, s_gqa_t6[] = {6},
                     s_gqa_sl3[] = {2, 2}, s_gqa_t3[] = {3};
/* EmbedLayerNormalization's ids, segments and mask (a 2 in it: ORT counts
 * the ones) */
static const int32_t s_eln_ids[] = {1, 5, 19, 0, 7, 3, 3, 12, 2, 0},
                     s_eln_seg[] = {0, 0, 0, 1, 1, 0, 1, 1, 1, 1},
                     s_eln_mask[] = {1, 1, 1, 1, 0, 1, 1, 2, 0, 0},
                     s_eln_ids3[] = {4, 0, 19, 18, 2, 2, 2, 2, 7, 11, 13, 17};

static const struct {
    const char *model;
    s_in in[7];
    const char *out[3];
} s_direct[] = {
    {"attn_lengths", {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_lengths, 1, {2}}}, {"y"}},
    {"attn_end_start", {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_end_start, 1, {4}}}, {"y"}},
    {"attn_mask2d", {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_raw2, 2, {2, 5}}}, {"y"}},
    {"attn_mask3d", {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_raw3, 3, {2, 5, 5}}}, {"y"}},
    {"attn_causal", {{"x", NULL, 3, {2, 5, 8}}}, {"y"}},
    {"attn_gpt2",
     {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_gpt2, 2, {2, 8}}, {"past", NULL, 5, {2, 2, 2, 3, 4}}},
     {"y", "present"}},
    {"attn_qkv", {{"x", NULL, 3, {2, 5, 8}}, {"attn_bias", NULL, 4, {1, 2, 5, 5}}}, {"y"}},
    {"mha_cross",
     {{"x", NULL, 3, {2, 5, 8}}, {"kv", NULL, 3, {2, 6, 8}}, {"mask", s_kv_len, 1, {2}}},
     {"y"}},
    {"mha_self",
     {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_mha, 2, {2, 8}},
      {"attn_bias", NULL, 4, {2, 1, 5, 8}}, {"past_key", NULL, 4, {2, 2, 3, 4}}},
     {"y", "present_key", "present_value"}},
    {"fmm_batch", {{"x", NULL, 3, {2, 5, 8}}}, {"y"}},
    {"attn_reduce", {{"x", NULL, 3, {2, 5, 8}}, {"mask", s_raw2, 2, {2, 5}}}, {"y"}},
    {"mha_bnsh",
     {{"x", NULL, 3, {2, 5, 8}}, {"key", NULL, 4, {2, 2, 6, 4}}, {"value", NULL, 4, {2, 2, 6, 4}},
      {"mask", s_kv_len, 1, {2}}},
     {"y"}},
    /* the ops of exported LLMs */
    {"mnb4", {{"x", NULL, 3, {2, 3, 40}}}, {"y"}},
    {"mnb4_plain", {{"x", NULL, 2, {4, 32}}}, {"y"}},
    {"mnb8", {{"x", NULL, 3, {2, 3, 64}}}, {"y"}},
    {"mnb2", {{"x", NULL, 3, {2, 3, 40}}}, {"y"}},
    {"mnb4_f32zp", {{"x", NULL, 3, {2, 3, 48}}}, {"y"}},
    {"rope_pos", {{"x", NULL, 3, {2, 5, 8}}}, {"y"}},
    {"rope_offset", {{"x", NULL, 3, {2, 5, 8}}}, {"y"}},
    {"rope_noheads", {{"x", NULL, 3, {2, 5, 8}}}, {"y"}},
    {"rope_4d_part", {{"x", NULL, 4, {2, 2, 5, 8}}}, {"y"}},
    {"qgap_nhwc", {{"x", NULL, 4, {1, 3, 4, 5}}}, {"y"}},
    {"gqa_prompt",
     {{"query", NULL, 3, {2, 4, 32}}, {"key", NULL, 3, {2, 4, 16}},
      {"value", NULL, 3, {2, 4, 16}}, {"seqlens_k", s_gqa_sl4, 1, {2}},
      {"total", s_gqa_t4, 0, {0}}},
     {"y", "present_key", "present_value"}},
    {"gqa_past_rope",
     {{"query", NULL, 3, {1, 2, 64}}, {"key", NULL, 3, {1, 2, 32}},
      {"value", NULL, 3, {1, 2, 32}}, {"past_key", NULL, 4, {1, 2, 3, 16}},
      {"past_value", NULL, 4, {1, 2, 3, 16}}, {"seqlens_k", s_gqa_sl5, 1, {1}},
      {"total", s_gqa_t5, 0, {0}}},
     {"y", "present_key", "present_value"}},
    {"gqa_packed_inter",
     {{"query", NULL, 3, {2, 1, 256}}, {"past_key", NULL, 4, {2, 2, 5, 32}},
      {"past_value", NULL, 4, {2, 2, 5, 32}}, {"seqlens_k", s_gqa_sl6, 1, {2}},
      {"total", s_gqa_t6, 0, {0}}},
     {"y", "present_key", "present_value"}},
    {"gqa_packed_softcap",
     {{"query", NULL, 3, {2, 3, 96}}, {"seqlens_k", s_gqa_sl3, 1, {2}},
      {"total", s_gqa_t3, 0, {0}}},
     {"y", "present_key", "present_value"}},
    {"eln_bert",
     {{"input_ids", s_eln_ids, 2, {2, 5}}, {"segment_ids", s_eln_seg, 2, {2, 5}},
      {"mask", s_eln_mask, 2, {2, 5}}},
     {"y", "mask_index", "embedding_sum"}},
    {"eln_distil", {{"input_ids", s_eln_ids3, 2, {3, 4}}}, {"y", "mask_index"}},
};

START_TEST(test_onnx_ms_direct)
{
    if (!s_ort_load())
        return;
    for (size_t i = 0; i < sizeof s_raw3 / sizeof s_raw3[0]; i++)
        s_raw3[i] = (i * 7 + 3) % 5 != 0;
    gxt_daemon d;
    char err[2048];
    gxt_daemon_start(&d, NULL);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c, "%s", err);
    uint32_t seed = 777;
    for (size_t m = 0; m < sizeof s_direct / sizeof s_direct[0]; m++) {
        char src[1024];
        snprintf(src, sizeof src, "%s", gxt_srcpath("tests/data/ms"));
        snprintf(src + strlen(src), sizeof src - strlen(src), "/%s.onnx", s_direct[m].model);
        s_in ins[8];
        size_t n_in = 0;
        for (; n_in < 7 && s_direct[m].in[n_in].name; n_in++)
            ins[n_in] = s_direct[m].in[n_in];
        /* mha_self's past_value is past_key's twin */
        if (n_in && strcmp(ins[n_in - 1].name, "past_key") == 0) {
            ins[n_in] = ins[n_in - 1];
            ins[n_in++].name = "past_value";
        }
        void *data[8], *vals[8];
        const char *names[8];
        gx_tensor *ts[8];
        gx_request *rq = gx_request_new();
        for (size_t i = 0; i < n_in; i++) {
            size_t cnt = 1;
            for (int k = 0; k < ins[i].ndim; k++)
                cnt *= (size_t)ins[i].shape[k];
            data[i] = malloc(cnt * 4);
            ck_assert_ptr_nonnull(data[i]);
            if (ins[i].i32)
                memcpy(data[i], ins[i].i32, cnt * 4);
            else
                for (size_t k = 0; k < cnt; k++) {
                    seed = seed * 1103515245u + 12345u;
                    ((float *)data[i])[k] = (float)((seed >> 8) % 2001) / 500.0f - 2.0f;
                }
            names[i] = ins[i].name;
            vals[i] = NULL;
            s_ok(S_FN(S_TENSOR, OrtStatus *, void *, void *, size_t, const int64_t *, size_t, int,
                      void **)(s_mem, data[i], cnt * 4, ins[i].shape, (size_t)ins[i].ndim,
                               ins[i].i32 ? 6 : 1, &vals[i]),
                 "input tensor");
            ts[i] = gx_tensor_new_copy(ins[i].i32 ? GX_I32 : GX_F32, ins[i].ndim, ins[i].shape,
                                       data[i], cnt * 4);
            ck_assert_int_eq(gx_request_add_input(rq, ins[i].name, ts[i]), GX_OK);
        }
        size_t n_out = 0;
        while (n_out < 3 && s_direct[m].out[n_out])
            n_out++;
        void *outs[3] = {NULL, NULL, NULL};
        void *sess = s_session(src, 0, NULL);
        s_ok(S_FN(S_RUN, OrtStatus *, void *, void *, const char *const *, void *const *, size_t,
                  const char *const *, size_t, void **)(sess, NULL, names, vals, n_in,
                                                        s_direct[m].out, n_out, outs),
             s_direct[m].model);
        gx_graph *g = NULL;
        int rc = gx_graph_load_onnx(src, &g, err, sizeof err);
        ck_assert_msg(rc == GX_OK, "%s: %s", s_direct[m].model, err);
        ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
        gx_result *r = NULL;
        rc = gx_client_run(c, rq, &r);
        ck_assert_msg(rc == GX_OK, "%s: run: %s", s_direct[m].model,
                      r ? gx_result_message(r) : gx_client_last_error(c));
        double worst = 0;
        size_t total = 0;
        for (size_t o = 0; o < n_out; o++) {
            const gx_tensor *y = NULL;
            for (size_t k = 0; k < gx_result_output_count(r); k++)
                if (strcmp(gx_result_output_name(r, k), s_direct[m].out[o]) == 0)
                    y = gx_result_output(r, k);
            ck_assert_msg(y, "%s: no output %s", s_direct[m].model, s_direct[m].out[o]);
            void *info = NULL;
            size_t nd, ny = 1;
            int64_t dims[8];
            float *want;
            s_ok(S_FN(S_SHAPE, OrtStatus *, void *, void **)(outs[o], &info), "output shape");
            s_ok(S_FN(S_NDIM, OrtStatus *, void *, size_t *)(info, &nd), "output rank");
            ck_assert_uint_le(nd, 8);
            s_ok(S_FN(S_DIMS, OrtStatus *, void *, int64_t *, size_t)(info, dims, nd), "dims");
            s_ok(S_FN(S_DATA, OrtStatus *, void *, void **)(outs[o], (void **)&want), "data");
            ck_assert_int_eq(gx_tensor_ndim(y), (int)nd);
            for (size_t k = 0; k < nd; k++) {
                ck_assert_int_eq(gx_tensor_shape(y)[k], dims[k]);
                ny *= (size_t)dims[k];
            }
            const float *got = gx_tensor_cdata(y);
            if (gx_tensor_dtype(y) == GX_I32) { /* mask_index */
                for (size_t i = 0; i < ny; i++)
                    ck_assert_msg(((const int32_t *)got)[i] == ((const int32_t *)want)[i],
                                  "%s: %s element %zu is %d, ONNX Runtime gives %d",
                                  s_direct[m].model, s_direct[m].out[o], i,
                                  ((const int32_t *)got)[i], ((const int32_t *)want)[i]);
                got = NULL, total += ny, ny = 0;
            } else
                ck_assert_int_eq(gx_tensor_dtype(y), GX_F32);
            for (size_t i = 0; i < ny; i++) {
                double e = fabs((double)got[i] - want[i]);
                worst = fmax(worst, e);
                ck_assert_msg(e <= 1e-4 * (1 + fabs(want[i])),
                              "%s: %s element %zu is %.7g, ONNX Runtime gives %.7g",
                              s_direct[m].model, s_direct[m].out[o], i, got[i], want[i]);
            }
            total += ny;
            S_FN(S_REL_SHAPE, void, void *)(info);
            S_FN(S_REL_VALUE, void, void *)(outs[o]);
        }
        printf("onnx_ms: %s matches ORT: %zu values, max abs diff %.3g\n", s_direct[m].model,
               total, worst);
        S_FN(S_REL_SESSION, void, void *)(sess);
        for (size_t i = 0; i < n_in; i++) {
            S_FN(S_REL_VALUE, void, void *)(vals[i]);
            gx_tensor_destroy(&ts[i]);
            free(data[i]);
        }
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
        gx_graph_destroy(&g);
    }
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    S_FN(S_REL_MEM, void, void *)(s_mem);
    S_FN(S_REL_ENV, void, void *)(s_env);
}
END_TEST

/* Output `name` of res: n float32 values, each within 1e-5 relative of want. */
static void s_assert_output(const gx_result *res, const char *name, const double *want, size_t n)
{
    const gx_tensor *y = NULL;
    for (size_t k = 0; k < gx_result_output_count(res); k++)
        if (strcmp(gx_result_output_name(res, k), name) == 0)
            y = gx_result_output(res, k);
    ck_assert_msg(y, "no output %s", name);
    ck_assert_uint_eq((size_t)gx_tensor_numel(y), n);
    const float *got = gx_tensor_cdata(y);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])),
                      "%s[%zu] is %.7g, want %.7g", name, i, got[i], want[i]);
}

/* MatMulNBits, RotaryEmbedding and GemmFastGelu by hand, without ONNX
 * Runtime (tests/data/ms/hand_llm.onnx; gen.py's hand_llm says what it
 * holds). MatMulNBits' B dequantizes to the rows (q - zero point) *
 * scale: [(1-4)0.5, (3-4)0.5, (15-8)2, (5-8)2] = [-1.5, -0.5, 14, -6]
 * and [(8-8)1, (0-8)1, (2-2)0.25, (10-2)0.25] = [0, -8, 0, 2]; the
 * rotation of [x0, x1, x2, x3] at a position with cos [c0, c1], sin [s0,
 * s1] is [x0 c0 - x2 s0, x1 c1 - x3 s1, x2 c0 + x0 s0, x3 c1 + x1 s1]. */
START_TEST(test_onnx_ms_hand_llm)
{
    static const float a[8] = {1, 2, 3, 4, -1, 0, 0.5f, 1}, r[8] = {1, 2, 3, 4, 1, -1, 2, 0.5f},
                       g[2] = {1, -1};
    const double t = 1 * 1 - 1 * 2 + 0.5;
    const double want[3][8] = {
        /* [1, 2, 3, 4]: -1.5 - 1 + 42 - 24 + 0.5, -16 + 8 - 1; [-1, 0, 0.5, 1]:
         * 1.5 + 7 - 6 + 0.5, 2 - 1 */
        {16, -9, 3, 1},
        /* position 1: cos [0, 1], sin [1, 0]; position 2: cos [0.5, 0], sin [0.5, 1] */
        {-3, 2, 1, 4, -0.5, -0.5, 1.5, -1},
        {0.5 * t * (1 + tanh(0.7978845608028654 * (t + 0.044715 * t * t * t)))},
    };
    static const char *const outs[3] = {"y", "ry", "gy"};
    const int64_t sa[2] = {2, 4}, sr[3] = {1, 2, 4}, sg[2] = {1, 2};
    gxt_daemon d;
    char err[2048];
    gxt_daemon_start(&d, NULL);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c, "%s", err);
    char src[1024];
    snprintf(src, sizeof src, "%s/hand_llm.onnx", gxt_srcpath("tests/data/ms"));
    gx_graph *gr = NULL;
    ck_assert_msg(gx_graph_load_onnx(src, &gr, err, sizeof err) == GX_OK, "%s", err);
    gx_tensor *ts[3] = {gx_tensor_new_copy(GX_F32, 2, sa, a, sizeof a),
                        gx_tensor_new_copy(GX_F32, 3, sr, r, sizeof r),
                        gx_tensor_new_copy(GX_F32, 2, sg, g, sizeof g)};
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, gr), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "a", ts[0]), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "r", ts[1]), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "g", ts[2]), GX_OK);
    gx_result *res = NULL;
    int rc = gx_client_run(c, rq, &res);
    ck_assert_msg(rc == GX_OK, "run: %s", res ? gx_result_message(res) : gx_client_last_error(c));
    for (size_t o = 0; o < 3; o++)
        s_assert_output(res, outs[o], want[o], o == 0 ? 4 : o == 1 ? 8 : 1);
    gx_result_destroy(&res);
    gx_request_destroy(&rq);
    for (int i = 0; i < 3; i++)
        gx_tensor_destroy(&ts[i]);
    gx_graph_destroy(&gr);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

/* GroupQueryAttention by hand, without ONNX Runtime
 * (tests/data/ms/hand_gqa.onnx; gen.py's hand_gqa). g1: query heads 0
 * and 1 share the one key/value head (K [1, 0], [0, 0]; V [4, 8], [0,
 * -4]); token 0 sees key 0 only (causal): V0 for both heads; token 1's
 * head 0 [0, 5] scores 0 and 0 (the mean of V), head 1 [1, 7] scores ln 3
 * and 0 (weights 3/4, 1/4). g2: past key [0, 1], value [1, 0]; the new
 * token is at position 1 (past 1), where the rotation is [x0, x1] ->
 * [-x1, x0]: q [1, 0] -> [0, 1], k [0, 2] -> [-2, 0]; scores 1 (past) and
 * 0, so y = [e, 1] / (e + 1) and present_key holds the rotated key. Then
 * seqlens_k that is not total_sequence_length - 1 fails the run (gexec
 * runs only whole caches), and local_window_size is refused by name. */
START_TEST(test_onnx_ms_hand_gqa)
{
    static const float q1[8] = {0, 0, 0, 0, 0, 5, 1, 7}, k1[4] = {1, 0, 0, 0},
                       v1[4] = {4, 8, 0, -4}, q2[2] = {1, 0}, k2[2] = {0, 2}, v2[2] = {0, 1},
                       pk[2] = {0, 1}, pv[2] = {1, 0};
    static const int32_t sl[1] = {1}, t[1] = {2}, bad[1] = {0};
    const double e1 = exp(1.0);
    const double want[6][8] = {{4, 8, 4, 8, 2, 2, 3, 5}, {1, 0, 0, 0}, {4, 8, 0, -4},
                               {e1 / (e1 + 1), 1 / (e1 + 1)}, {0, 1, -2, 0}, {1, 0, 0, 1}};
    static const size_t n_want[6] = {8, 4, 4, 2, 4, 4};
    static const char *const outs[6] = {"y1", "pk1", "pv1", "y2", "pk2", "pv2"};
    gxt_daemon d;
    char err[2048];
    gxt_daemon_start(&d, NULL);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c, "%s", err);
    char src[1024];
    snprintf(src, sizeof src, "%s/hand_gqa.onnx", gxt_srcpath("tests/data/ms"));
    gx_graph *gr = NULL;
    ck_assert_msg(gx_graph_load_onnx(src, &gr, err, sizeof err) == GX_OK, "%s", err);
    for (int pass = 0; pass < 2; pass++) {
        gx_tensor *ts[12] = {
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 2, 4}, q1, sizeof q1),
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 2, 2}, k1, sizeof k1),
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 2, 2}, v1, sizeof v1),
            gx_tensor_new_copy(GX_I32, 1, (int64_t[]){1}, pass ? bad : sl, sizeof sl),
            gx_tensor_new_copy(GX_I32, 0, NULL, t, sizeof t),
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 1, 2}, q2, sizeof q2),
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 1, 2}, k2, sizeof k2),
            gx_tensor_new_copy(GX_F32, 3, (int64_t[]){1, 1, 2}, v2, sizeof v2),
            gx_tensor_new_copy(GX_F32, 4, (int64_t[]){1, 1, 1, 2}, pk, sizeof pk),
            gx_tensor_new_copy(GX_F32, 4, (int64_t[]){1, 1, 1, 2}, pv, sizeof pv),
            gx_tensor_new_copy(GX_I32, 1, (int64_t[]){1}, sl, sizeof sl),
            gx_tensor_new_copy(GX_I32, 0, NULL, t, sizeof t)};
        static const char *const names[12] = {"q1", "k1", "v1", "sl1", "t1", "q2",
                                              "k2", "v2", "past_k2", "past_v2", "sl2", "t2"};
        gx_request *rq = gx_request_new();
        ck_assert_int_eq(gx_request_set_graph(rq, gr), GX_OK);
        for (int i = 0; i < 12; i++)
            ck_assert_int_eq(gx_request_add_input(rq, names[i], ts[i]), GX_OK);
        gx_result *res = NULL;
        int rc = gx_client_run(c, rq, &res);
        if (pass) {
            const char *msg = res ? gx_result_message(res) : gx_client_last_error(c);
            ck_assert_msg(rc != GX_OK, "seqlens_k 0 with total_sequence_length 2 ran");
            ck_assert_msg(msg && strstr(msg, "check_seqlens_k"), "message: %s", msg);
        } else {
            ck_assert_msg(rc == GX_OK, "run: %s",
                          res ? gx_result_message(res) : gx_client_last_error(c));
            for (size_t o = 0; o < 6; o++)
                s_assert_output(res, outs[o], want[o], n_want[o]);
        }
        gx_result_destroy(&res);
        gx_request_destroy(&rq);
        for (int i = 0; i < 12; i++)
            gx_tensor_destroy(&ts[i]);
    }
    gx_graph_destroy(&gr);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
    snprintf(src, sizeof src, "%s/gqa_refused.onnx", gxt_srcpath("tests/data/ms"));
    ck_assert_int_eq(gx_graph_load_onnx(src, &gr, err, sizeof err), GX_EUNSUPPORTED);
    ck_assert_msg(strstr(err, "GroupQueryAttention") && strstr(err, "local_window_size"), "%s",
                  err);
}
END_TEST

/* EmbedLayerNormalization by hand, without ONNX Runtime
 * (tests/data/ms/hand_eln.onnx; gen.py's hand_eln): ids [3, 0, 1] at
 * positions 0, 1, 2 with segments [1, 0, 1] sum to e3 + [1, 1, 0, 0] +
 * [0, 0, 5, 0], e0 + [0, 2, 0, 0], e1 + [0, 0, 0, 3] + [0, 0, 5, 0];
 * output is their layer norm (worked out here from the sums, epsilon
 * 0.01, gamma [1, 2, 1, 1], beta [0, 0, 0, 1]); mask [1, 1, 0] has 2
 * ones. */
START_TEST(test_onnx_ms_hand_eln)
{
    static const int32_t ids[3] = {3, 0, 1}, seg[3] = {1, 0, 1}, mask[3] = {1, 1, 0};
    static const float sums[12] = {1, 1, 5, 1, 1, 2, 0, 0, 0, 1, 5, 3};
    static const float gamma[4] = {1, 2, 1, 1}, beta[4] = {0, 0, 0, 1};
    double want[12];
    for (int t = 0; t < 3; t++) {
        double mean = 0, var = 0;
        for (int i = 0; i < 4; i++)
            mean += sums[t * 4 + i] / 4.0;
        for (int i = 0; i < 4; i++)
            var += (sums[t * 4 + i] - mean) * (sums[t * 4 + i] - mean) / 4.0;
        for (int i = 0; i < 4; i++)
            want[t * 4 + i] = (sums[t * 4 + i] - mean) / sqrt(var + 0.01) * gamma[i] + beta[i];
    }
    gxt_daemon d;
    char err[2048];
    gxt_daemon_start(&d, NULL);
    gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
    ck_assert_msg(c, "%s", err);
    char src[1024];
    snprintf(src, sizeof src, "%s/hand_eln.onnx", gxt_srcpath("tests/data/ms"));
    gx_graph *gr = NULL;
    ck_assert_msg(gx_graph_load_onnx(src, &gr, err, sizeof err) == GX_OK, "%s", err);
    gx_tensor *ts[3] = {gx_tensor_new_copy(GX_I32, 2, (int64_t[]){1, 3}, ids, sizeof ids),
                        gx_tensor_new_copy(GX_I32, 2, (int64_t[]){1, 3}, seg, sizeof seg),
                        gx_tensor_new_copy(GX_I32, 2, (int64_t[]){1, 3}, mask, sizeof mask)};
    gx_request *rq = gx_request_new();
    ck_assert_int_eq(gx_request_set_graph(rq, gr), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "ids", ts[0]), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "seg", ts[1]), GX_OK);
    ck_assert_int_eq(gx_request_add_input(rq, "mask", ts[2]), GX_OK);
    gx_result *res = NULL;
    int rc = gx_client_run(c, rq, &res);
    ck_assert_msg(rc == GX_OK, "run: %s", res ? gx_result_message(res) : gx_client_last_error(c));
    const gx_tensor *y = NULL, *mi = NULL, *sum = NULL;
    for (size_t k = 0; k < gx_result_output_count(res); k++) {
        const char *n = gx_result_output_name(res, k);
        if (strcmp(n, "y") == 0)
            y = gx_result_output(res, k);
        else if (strcmp(n, "mask_index") == 0)
            mi = gx_result_output(res, k);
        else if (strcmp(n, "sum") == 0)
            sum = gx_result_output(res, k);
    }
    ck_assert_msg(y && mi && sum, "outputs y, mask_index and sum");
    ck_assert_int_eq(gx_tensor_numel(y), 12);
    ck_assert_int_eq(gx_tensor_numel(sum), 12);
    ck_assert_int_eq(gx_tensor_numel(mi), 1);
    ck_assert_int_eq(gx_tensor_dtype(mi), GX_I32);
    ck_assert_int_eq(((const int32_t *)gx_tensor_cdata(mi))[0], 2);
    for (int i = 0; i < 12; i++) {
        const float gs = ((const float *)gx_tensor_cdata(sum))[i],
                    gy = ((const float *)gx_tensor_cdata(y))[i];
        ck_assert_msg(gs == sums[i], "sum[%d] is %.7g, want %.7g", i, gs, sums[i]);
        ck_assert_msg(fabs(gy - want[i]) <= 1e-5 * (1 + fabs(want[i])), "y[%d] is %.7g, want %.7g",
                      i, gy, want[i]);
    }
    gx_result_destroy(&res);
    gx_request_destroy(&rq);
    for (int i = 0; i < 3; i++)
        gx_tensor_destroy(&ts[i]);
    gx_graph_destroy(&gr);
    gx_client_destroy(&c);
    ck_assert_int_eq(gxt_daemon_stop(&d), 0);
}
END_TEST

Suite *onnx_ms_suite(void)
{
    Suite *s = suite_create("onnx_ms");
    TCase *tc = tcase_create("ort");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_onnx_ms_ort_models);
    tcase_add_test(tc, test_onnx_ms_direct);
    tcase_add_test(tc, test_onnx_ms_hand_llm);
    tcase_add_test(tc, test_onnx_ms_hand_gqa);
    tcase_add_test(tc, test_onnx_ms_hand_eln);
    suite_add_tcase(s, tc);
    return s;
}
