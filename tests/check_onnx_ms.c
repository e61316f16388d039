/* Models saved by ONNX Runtime after its graph optimizations, with their
 * com.microsoft contrib ops, run through gexec: each model of
 * tests/data/ms (tests/data/ms/gen.py) is optimized and saved by ORT
 * (SetOptimizedModelFilePath), the saved model runs on gexecd, and its
 * output is compared with ORT's on the original model.
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
} s_models[] = {
    {"cnn", 2, {"FusedConv"}, 4, {2, 3, 6, 6}, 1e-5},
    {"mlp", 2, {"Gelu", "QuickGelu"}, 2, {4, 8}, 1e-5},
    {"block", 2, {"FusedMatMul", "SkipLayerNormalization", "Gelu"}, 3, {2, 5, 8}, 1e-4},
    {"dq_mlp", 2, {"DynamicQuantizeMatMul"}, 2, {4, 8}, 1e-4},
    {"qconv", 99, {"QLinearConv"}, 4, {1, 4, 7, 7}, 1e-5},
    /* quantized outputs: at most one step of the output's scale (0.03) */
    {"qdq_ops", 2, {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat",
      "QLinearGlobalAveragePool"}, 4,
     {1, 4, 4, 4}, 0.031},
};

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
        ck_assert_msg(s_file_has(saved, "com.microsoft"), "%s: no com.microsoft op saved",
                      s_models[m].model);
        for (size_t k = 0; k < 6 && s_models[m].ops[k]; k++)
            ck_assert_msg(s_file_has(saved, s_models[m].ops[k]), "%s: ORT saved no %s",
                          s_models[m].model, s_models[m].ops[k]);
        /* gexec on the saved model */
        gx_graph *g = NULL;
        int rc = gx_graph_load_onnx(saved, &g, err, sizeof err);
        ck_assert_msg(rc == GX_OK, "%s: %s", s_models[m].model, err);
        gx_tensor *t = gx_tensor_new_copy(GX_F32, s_models[m].ndim, s_models[m].shape, x,
                                          n * sizeof *x);
        gx_request *rq = gx_request_new();
        ck_assert_int_eq(gx_request_set_graph(rq, g), GX_OK);
        ck_assert_int_eq(gx_request_add_input(rq, "x", t), GX_OK);
        gx_result *r = NULL;
        rc = gx_client_run(c, rq, &r);
        ck_assert_msg(rc == GX_OK, "%s: run: %s", s_models[m].model,
                      r ? gx_result_message(r) : gx_client_last_error(c));
        const gx_tensor *y = gx_result_output(r, 0);
        ck_assert_uint_eq((size_t)gx_tensor_numel(y), ny);
        const float *got = gx_tensor_cdata(y);
        double worst = 0;
        for (size_t i = 0; i < ny; i++) {
            double e = fabs((double)got[i] - want[i]);
            worst = fmax(worst, e);
            ck_assert_msg(e <= s_models[m].tol * (1 + fabs(want[i])),
                          "%s: element %zu is %.7g, ONNX Runtime gives %.7g", s_models[m].model,
                          i, got[i], want[i]);
        }
        printf("onnx_ms: %s saved by ORT (level %d) matches ORT on the original: %zu values, "
               "max abs diff %.3g\n", s_models[m].model, s_models[m].level, ny, worst);
        gx_result_destroy(&r);
        gx_request_destroy(&rq);
        gx_tensor_destroy(&t);
        gx_graph_destroy(&g);
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

Suite *onnx_ms_suite(void)
{
    Suite *s = suite_create("onnx_ms");
    TCase *tc = tcase_create("ort");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_onnx_ms_ort_models);
    suite_add_tcase(s, tc);
    return s;
}
