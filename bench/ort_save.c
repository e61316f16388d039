/* ort_save: have ONNX Runtime optimize an ONNX model and save the result,
 * the way SessionOptions' optimized model file path does, to see which
 * contrib ops (com.microsoft) ORT writes into the models it saves.
 *
 *     build/bench/ort_save LIB MODEL OUT [basic|extended|all]
 *
 * LIB is libonnxruntime.so.1 (bench/ort.sh fetches it). The default level
 * is extended (ORT_ENABLE_EXTENDED); all adds the layout optimizations,
 * whose NCHWc ops are specific to the machine that saved the model. The
 * OrtApi slots used are pinned by index (see bench/bench_ort.c). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct OrtStatus OrtStatus;
typedef struct s_ort_api_base {
    void *const *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} s_ort_api_base;

/* OrtApi slot indexes (onnxruntime_c_api.h) */
enum { S_MSG = 2, S_ENV = 3, S_SESSION = 7, S_OPTIONS = 10, S_SAVE_PATH = 11, S_LEVEL = 23,
       S_REL_ENV = 92, S_REL_STATUS = 93, S_REL_SESSION = 95, S_REL_OPTIONS = 100 };

static void *const *s_api;

/* Print st's message and release it; true if st was an error. */
static int s_failed(OrtStatus *st, const char *what)
{
    if (!st)
        return 0;
    fprintf(stderr, "ort_save: %s: %s\n", what,
            ((const char *(*)(const OrtStatus *))s_api[S_MSG])(st));
    ((void (*)(OrtStatus *))s_api[S_REL_STATUS])(st);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: ort_save LIB MODEL OUT [basic|extended|all]\n");
        return 2;
    }
    const char *lv = argc == 5 ? argv[4] : "extended";
    int level = strcmp(lv, "basic") == 0 ? 1 : strcmp(lv, "all") == 0 ? 99 : 2;
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "ort_save: dlopen: %s\n", dlerror());
        return 1;
    }
    const s_ort_api_base *(*get_base)(void);
    *(void **)&get_base = dlsym(dl, "OrtGetApiBase");
    if (!get_base || !(s_api = get_base()->GetApi(15))) {
        fprintf(stderr, "ort_save: %s is not a usable ONNX Runtime\n", argv[1]);
        return 1;
    }
    void *env = NULL, *opt = NULL, *sess = NULL;
    int bad = s_failed(((OrtStatus * (*)(int, const char *, void **)) s_api[S_ENV])(3, "ort_save",
                                                                                    &env),
                       "CreateEnv") ||
              s_failed(((OrtStatus * (*)(void **)) s_api[S_OPTIONS])(&opt),
                       "CreateSessionOptions") ||
              s_failed(((OrtStatus * (*)(void *, int)) s_api[S_LEVEL])(opt, level),
                       "SetSessionGraphOptimizationLevel") ||
              s_failed(((OrtStatus * (*)(void *, const char *)) s_api[S_SAVE_PATH])(opt, argv[3]),
                       "SetOptimizedModelFilePath") ||
              s_failed(((OrtStatus * (*)(void *, const char *, void *, void **))
                            s_api[S_SESSION])(env, argv[2], opt, &sess),
                       argv[2]);
    if (sess)
        ((void (*)(void *))s_api[S_REL_SESSION])(sess);
    if (opt)
        ((void (*)(void *))s_api[S_REL_OPTIONS])(opt);
    if (env)
        ((void (*)(void *))s_api[S_REL_ENV])(env);
    return bad;
}
