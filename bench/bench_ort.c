/*
 * gexec against ONNX Runtime, side by side in one run: the same ONNX models
 * (the same serialized ModelProto bytes, the same inputs) through ORT's C API
 * in this process and through a gexecd. Prints one line per model and
 * asserts nothing (bench/README.md explains each figure).
 *
 *     bench/ort.sh                        # fetch ONNX Runtime (npm) once
 *     make -C build bench/bench_ort && build/bench/bench_ort
 *     build/bench/bench_ort --quick --only mlp,cnn
 *     build/bench/bench_ort --ort /path/to/libonnxruntime.so.1
 *
 * ONNX Runtime is loaded with dlopen (--ort PATH, else $GEXEC_ORT_LIB, else
 * where bench/ort.sh installs it, running bench/ort.sh when it is not
 * there) and called through its OrtApi table; no ORT header is needed. When
 * it cannot be loaded the ORT columns stay empty and gexec's figures are
 * still printed. Without --socket a private gexecd is started from the build
 * tree (bench/benchutil.h) with every core as a worker.
 *
 * Models are built here with protobuf-c (ai.onnx opset 17, IR version 8,
 * float32, random weights with a fixed seed), packed once, and the same bytes
 * go to OrtApi::CreateSessionFromArray and to gx_graph_parse_onnx.
 */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gexec/gexec.h>

#include "bench/benchutil.h"
#include "libclient/onnx.pb-c.h"

#define S_PROG "bench_ort"

/* ==== ONNX Runtime's C API, declared here ================================
 *
 * OrtApi is a table of function pointers that ORT only ever appends to, so
 * a slot's index never changes. The order below is that of struct OrtApi in
 * onnxruntime_c_api.h (checked against ORT_API_VERSION 15 and 24 headers),
 * up to the last slot this program calls; slots it does not call are plain
 * pointers under their ORT name. The static_asserts pin the slots used. */

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;

/* enum values from onnxruntime_c_api.h */
#define S_ORT_LOGGING_LEVEL_ERROR 3
#define S_ORT_ENABLE_ALL 99            /* GraphOptimizationLevel */
#define S_ORT_ARENA_ALLOCATOR 1        /* OrtAllocatorType */
#define S_ORT_MEM_TYPE_DEFAULT 0       /* OrtMemType */
#define S_ONNX_TENSOR_ELEMENT_FLOAT 1  /* ONNXTensorElementDataType */
/* The API version asked of OrtGetApiBase()->GetApi: every slot below exists
 * since well before it, and any ORT from 1.22 on serves it. */
#define S_ORT_API_VERSION 22

typedef struct s_ort_api_base {
    const void *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} s_ort_api_base;

typedef struct s_ort_api {
    void *CreateStatus;                                                       /* 0 */
    void *GetErrorCode;                                                       /* 1 */
    const char *(*GetErrorMessage)(const OrtStatus *status);                  /* 2 */
    OrtStatus *(*CreateEnv)(int log_level, const char *logid, OrtEnv **out); /* 3 */
    void *CreateEnvWithCustomLogger;                                          /* 4 */
    void *EnableTelemetryEvents;                                              /* 5 */
    void *DisableTelemetryEvents;                                             /* 6 */
    void *CreateSession;                                                      /* 7 */
    OrtStatus *(*CreateSessionFromArray)(const OrtEnv *env, const void *model_data,
                                         size_t model_data_length,
                                         const OrtSessionOptions *options,
                                         OrtSession **out);                   /* 8 */
    OrtStatus *(*Run)(OrtSession *session, const OrtRunOptions *run_options,
                      const char *const *input_names, const OrtValue *const *inputs,
                      size_t input_len, const char *const *output_names,
                      size_t output_names_len, OrtValue **outputs);           /* 9 */
    OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **options);          /* 10 */
    void *SetOptimizedModelFilePath;                                          /* 11 */
    void *CloneSessionOptions;                                                /* 12 */
    void *SetSessionExecutionMode;                                            /* 13 */
    void *EnableProfiling;                                                    /* 14 */
    void *DisableProfiling;                                                   /* 15 */
    void *EnableMemPattern;                                                   /* 16 */
    void *DisableMemPattern;                                                  /* 17 */
    void *EnableCpuMemArena;                                                  /* 18 */
    void *DisableCpuMemArena;                                                 /* 19 */
    void *SetSessionLogId;                                                    /* 20 */
    void *SetSessionLogVerbosityLevel;                                        /* 21 */
    void *SetSessionLogSeverityLevel;                                         /* 22 */
    OrtStatus *(*SetSessionGraphOptimizationLevel)(OrtSessionOptions *options,
                                                   int level);                /* 23 */
    OrtStatus *(*SetIntraOpNumThreads)(OrtSessionOptions *options, int n);   /* 24 */
    OrtStatus *(*SetInterOpNumThreads)(OrtSessionOptions *options, int n);   /* 25 */
    void *CreateCustomOpDomain;                                               /* 26 */
    void *CustomOpDomain_Add;                                                 /* 27 */
    void *AddCustomOpDomain;                                                  /* 28 */
    void *RegisterCustomOpsLibrary;                                           /* 29 */
    void *SessionGetInputCount;                                               /* 30 */
    void *SessionGetOutputCount;                                              /* 31 */
    void *SessionGetOverridableInitializerCount;                              /* 32 */
    void *SessionGetInputTypeInfo;                                            /* 33 */
    void *SessionGetOutputTypeInfo;                                           /* 34 */
    void *SessionGetOverridableInitializerTypeInfo;                           /* 35 */
    void *SessionGetInputName;                                                /* 36 */
    void *SessionGetOutputName;                                               /* 37 */
    void *SessionGetOverridableInitializerName;                               /* 38 */
    void *CreateRunOptions;                                                   /* 39 */
    void *RunOptionsSetRunLogVerbosityLevel;                                  /* 40 */
    void *RunOptionsSetRunLogSeverityLevel;                                   /* 41 */
    void *RunOptionsSetRunTag;                                                /* 42 */
    void *RunOptionsGetRunLogVerbosityLevel;                                  /* 43 */
    void *RunOptionsGetRunLogSeverityLevel;                                   /* 44 */
    void *RunOptionsGetRunTag;                                                /* 45 */
    void *RunOptionsSetTerminate;                                             /* 46 */
    void *RunOptionsUnsetTerminate;                                           /* 47 */
    void *CreateTensorAsOrtValue;                                             /* 48 */
    OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info, void *p_data,
                                                 size_t p_data_len, const int64_t *shape,
                                                 size_t shape_len, int type,
                                                 OrtValue **out);             /* 49 */
    void *IsTensor;                                                           /* 50 */
    OrtStatus *(*GetTensorMutableData)(OrtValue *value, void **out);          /* 51 */
    void *FillStringTensor;                                                   /* 52 */
    void *GetStringTensorDataLength;                                          /* 53 */
    void *GetStringTensorContent;                                             /* 54 */
    void *CastTypeInfoToTensorInfo;                                           /* 55 */
    void *GetOnnxTypeFromTypeInfo;                                            /* 56 */
    void *CreateTensorTypeAndShapeInfo;                                       /* 57 */
    void *SetTensorElementType;                                               /* 58 */
    void *SetDimensions;                                                      /* 59 */
    void *GetTensorElementType;                                               /* 60 */
    OrtStatus *(*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *info,
                                     size_t *out);                            /* 61 */
    OrtStatus *(*GetDimensions)(const OrtTensorTypeAndShapeInfo *info, int64_t *dims,
                                size_t dims_len);                             /* 62 */
    void *GetSymbolicDimensions;                                              /* 63 */
    void *GetTensorShapeElementCount;                                         /* 64 */
    OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *value,
                                        OrtTensorTypeAndShapeInfo **out);     /* 65 */
    void *GetTypeInfo;                                                        /* 66 */
    void *GetValueType;                                                       /* 67 */
    void *CreateMemoryInfo;                                                   /* 68 */
    OrtStatus *(*CreateCpuMemoryInfo)(int allocator_type, int mem_type,
                                      OrtMemoryInfo **out);                   /* 69 */
    void *CompareMemoryInfo;                                                  /* 70 */
    void *MemoryInfoGetName;                                                  /* 71 */
    void *MemoryInfoGetId;                                                    /* 72 */
    void *MemoryInfoGetMemType;                                               /* 73 */
    void *MemoryInfoGetType;                                                  /* 74 */
    void *AllocatorAlloc;                                                     /* 75 */
    void *AllocatorFree;                                                      /* 76 */
    void *AllocatorGetInfo;                                                   /* 77 */
    void *GetAllocatorWithDefaultOptions;                                     /* 78 */
    void *AddFreeDimensionOverride;                                           /* 79 */
    void *GetValue;                                                           /* 80 */
    void *GetValueCount;                                                      /* 81 */
    void *CreateValue;                                                        /* 82 */
    void *CreateOpaqueValue;                                                  /* 83 */
    void *GetOpaqueValue;                                                     /* 84 */
    void *KernelInfoGetAttribute_float;                                       /* 85 */
    void *KernelInfoGetAttribute_int64;                                       /* 86 */
    void *KernelInfoGetAttribute_string;                                      /* 87 */
    void *KernelContext_GetInputCount;                                        /* 88 */
    void *KernelContext_GetOutputCount;                                       /* 89 */
    void *KernelContext_GetInput;                                             /* 90 */
    void *KernelContext_GetOutput;                                            /* 91 */
    void (*ReleaseEnv)(OrtEnv *p);                                            /* 92 */
    void (*ReleaseStatus)(OrtStatus *p);                                      /* 93 */
    void (*ReleaseMemoryInfo)(OrtMemoryInfo *p);                              /* 94 */
    void (*ReleaseSession)(OrtSession *p);                                    /* 95 */
    void (*ReleaseValue)(OrtValue *p);                                        /* 96 */
    void *ReleaseRunOptions;                                                  /* 97 */
    void *ReleaseTypeInfo;                                                    /* 98 */
    void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *p);      /* 99 */
    void (*ReleaseSessionOptions)(OrtSessionOptions *p);                      /* 100 */
} s_ort_api;

#define S_SLOT(f, i) _Static_assert(offsetof(s_ort_api, f) == (i) * sizeof(void *), #f)
S_SLOT(GetErrorMessage, 2);
S_SLOT(CreateEnv, 3);
S_SLOT(CreateSessionFromArray, 8);
S_SLOT(Run, 9);
S_SLOT(CreateSessionOptions, 10);
S_SLOT(SetSessionGraphOptimizationLevel, 23);
S_SLOT(SetIntraOpNumThreads, 24);
S_SLOT(SetInterOpNumThreads, 25);
S_SLOT(CreateTensorWithDataAsOrtValue, 49);
S_SLOT(GetTensorMutableData, 51);
S_SLOT(GetDimensionsCount, 61);
S_SLOT(GetDimensions, 62);
S_SLOT(GetTensorTypeAndShape, 65);
S_SLOT(CreateCpuMemoryInfo, 69);
S_SLOT(ReleaseEnv, 92);
S_SLOT(ReleaseStatus, 93);
S_SLOT(ReleaseMemoryInfo, 94);
S_SLOT(ReleaseSession, 95);
S_SLOT(ReleaseValue, 96);
S_SLOT(ReleaseTensorTypeAndShapeInfo, 99);
S_SLOT(ReleaseSessionOptions, 100);
_Static_assert(sizeof(s_ort_api) == 101 * sizeof(void *), "OrtApi slots 0..100");

/* ORT loaded, or why not. */
typedef struct s_ort {
    void *dl;
    const s_ort_api *api;
    OrtEnv *env;
    OrtMemoryInfo *mem;
    char version[32];
    char path[4096];
    char why[512]; /* non-empty: not loaded */
} s_ort;

/* Copy the status's message into buf (when given) and release it; returns
 * whether st was an error. */
static bool s_ort_failed(const s_ort *o, OrtStatus *st, char *buf, size_t len)
{
    if (!st)
        return false;
    if (buf)
        snprintf(buf, len, "%s", o->api->GetErrorMessage(st));
    o->api->ReleaseStatus(st);
    return true;
}

/* The first libonnxruntime.so.1 under DIR/node_modules/onnxruntime-node
 * (bench/ort.sh's layout) into path; false if none. */
static bool s_ort_find_in(const char *dir, char *path, size_t len)
{
    char pat[4200];
    snprintf(pat, sizeof pat, "%s/node_modules/onnxruntime-node/bin/napi-v*/linux/*/"
             "libonnxruntime.so.1", dir);
    glob_t gl;
    bool found = false;
    if (glob(pat, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc && !found; i++) {
#if defined(__x86_64__)
            found = strstr(gl.gl_pathv[i], "/linux/x64/") != NULL;
#elif defined(__aarch64__)
            found = strstr(gl.gl_pathv[i], "/linux/arm64/") != NULL;
#endif
            if (found)
                snprintf(path, len, "%s", gl.gl_pathv[i]);
        }
        globfree(&gl);
    }
    return found;
}

/* Where to load ORT from: --ort, $GEXEC_ORT_LIB, bench/ort.sh's default
 * folder (build/ort in the source tree, or ort/ next to this program's
 * folder), else what running bench/ort.sh prints. False with o->why set. */
static bool s_ort_locate(s_ort *o, const char *given, bool no_fetch)
{
    const char *env = getenv("GEXEC_ORT_LIB");
    if (given || (env && *env)) {
        snprintf(o->path, sizeof o->path, "%s", given ? given : env);
        return true;
    }
    char self[2048] = "", dir[2200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        snprintf(dir, sizeof dir, "%s/../ort", self);
        if (s_ort_find_in(dir, o->path, sizeof o->path))
            return true;
    }
    snprintf(dir, sizeof dir, "%s/build/ort", GXB_SRCDIR);
    if (s_ort_find_in(dir, o->path, sizeof o->path))
        return true;
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "'%s/bench/ort.sh'", GXB_SRCDIR);
    if (no_fetch || access(GXB_SRCDIR "/bench/ort.sh", X_OK) != 0) {
        snprintf(o->why, sizeof o->why, "not found (run bench/ort.sh, or give --ort PATH or "
                 "GEXEC_ORT_LIB)");
        return false;
    }
    printf("# ONNX Runtime not found: running bench/ort.sh (npm install onnxruntime-node)\n");
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    char line[4096] = "";
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = '\0';
        if (pclose(p) != 0)
            line[0] = '\0';
    }
    line[strcspn(line, "\n")] = '\0';
    if (!line[0]) {
        snprintf(o->why, sizeof o->why, "not found, and bench/ort.sh could not fetch it "
                 "(give --ort PATH or GEXEC_ORT_LIB)");
        return false;
    }
    snprintf(o->path, sizeof o->path, "%s", line);
    return true;
}

/* Load ORT; on failure o->why says why and o->api stays NULL. */
static void s_ort_open(s_ort *o, const char *given, bool no_fetch)
{
    if (!s_ort_locate(o, given, no_fetch))
        return;
    char *real = realpath(o->path, NULL);
    if (real) {
        snprintf(o->path, sizeof o->path, "%s", real);
        free(real);
    }
    o->dl = dlopen(o->path, RTLD_NOW | RTLD_LOCAL);
    if (!o->dl) {
        snprintf(o->why, sizeof o->why, "dlopen: %s", dlerror());
        return;
    }
    const s_ort_api_base *(*get_base)(void);
    *(void **)&get_base = dlsym(o->dl, "OrtGetApiBase");
    const s_ort_api_base *base = get_base ? get_base() : NULL;
    if (!base) {
        snprintf(o->why, sizeof o->why, "the library has no OrtGetApiBase");
        return;
    }
    snprintf(o->version, sizeof o->version, "%s", base->GetVersionString());
    const s_ort_api *api = base->GetApi(S_ORT_API_VERSION);
    if (!api) {
        snprintf(o->why, sizeof o->why, "ONNX Runtime %s does not serve API version %d (older "
                 "than 1.%d)", o->version, S_ORT_API_VERSION, S_ORT_API_VERSION);
        return;
    }
    o->api = api;
    char msg[400];
    if (s_ort_failed(o, api->CreateEnv(S_ORT_LOGGING_LEVEL_ERROR, S_PROG, &o->env), msg,
                     sizeof msg) ||
        s_ort_failed(o, api->CreateCpuMemoryInfo(S_ORT_ARENA_ALLOCATOR, S_ORT_MEM_TYPE_DEFAULT,
                                                 &o->mem), msg, sizeof msg)) {
        snprintf(o->why, sizeof o->why, "%s", msg);
        o->api = NULL;
    }
}

static void s_ort_close(s_ort *o)
{
    if (o->api) {
        o->api->ReleaseMemoryInfo(o->mem);
        o->api->ReleaseEnv(o->env);
    }
    /* the library stays loaded: ORT's static destructors run at exit */
}

/* A session for model bytes with `threads` intra-op threads, one inter-op
 * thread (sequential execution) and every graph optimization; spinning as
 * ORT's default. NULL with err set on failure. */
static OrtSession *s_ort_session(const s_ort *o, const void *model, size_t len, int threads,
                                 char *err, size_t errlen)
{
    const s_ort_api *a = o->api;
    OrtSessionOptions *so = NULL;
    OrtSession *s = NULL;
    if (s_ort_failed(o, a->CreateSessionOptions(&so), err, errlen))
        return NULL;
    if (!s_ort_failed(o, a->SetIntraOpNumThreads(so, threads), err, errlen) &&
        !s_ort_failed(o, a->SetInterOpNumThreads(so, 1), err, errlen) &&
        !s_ort_failed(o, a->SetSessionGraphOptimizationLevel(so, S_ORT_ENABLE_ALL), err, errlen))
        s_ort_failed(o, a->CreateSessionFromArray(o->env, model, len, so, &s), err, errlen);
    a->ReleaseSessionOptions(so);
    return s;
}

/* ==== building ONNX models ================================================
 *
 * s_mb holds one ModelProto being built; every string, tensor and message is
 * allocated here and freed by s_mb_fini. Values get fresh names ("t17"). */

typedef struct s_mb {
    void **mem;
    size_t n_mem, cap_mem;
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    size_t cap_node, cap_init, cap_in, cap_out;
    int next_id;
    uint64_t rng;
    double weight_bytes;
} s_mb;

static void *s_grow(void *p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 16;
    p = realloc(p, *cap * elem);
    if (!p)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    return p;
}

/* Zeroed memory owned by the builder. */
static void *s_alloc(s_mb *b, size_t n)
{
    b->mem = s_grow(b->mem, &b->cap_mem, b->n_mem, sizeof *b->mem);
    void *p = calloc(1, n ? n : 1);
    if (!p)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    return b->mem[b->n_mem++] = p;
}

static char *s_str(s_mb *b, const char *s)
{
    char *p = s_alloc(b, strlen(s) + 1);
    memcpy(p, s, strlen(s));
    return p;
}

static const char *s_fresh(s_mb *b)
{
    char name[32];
    snprintf(name, sizeof name, "t%d", b->next_id++);
    return s_str(b, name);
}

/* splitmix64: uniform in [lo, hi). */
static float s_uniform(uint64_t *state, float lo, float hi)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((double)(z >> 11) * 0x1.0p-53);
}

/* n int8 weights from a normal distribution (Box-Muller), quantized
 * symmetrically: the largest magnitude to 127. */
static void s_normal_int8(uint64_t *state, int8_t *w, int64_t n)
{
    float *v = malloc(sizeof *v * (size_t)n), top = 0;
    if (!v)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    for (int64_t i = 0; i < n; i++) {
        const float u = s_uniform(state, 0x1.0p-24f, 1.0f), t = s_uniform(state, 0.0f, 1.0f);
        v[i] = sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * t);
        top = fabsf(v[i]) > top ? fabsf(v[i]) : top;
    }
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)lrintf(v[i] / top * 127.0f);
    free(v);
}

static void s_mb_init(s_mb *b, const char *name, uint64_t seed)
{
    memset(b, 0, sizeof *b);
    b->rng = seed;
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__operator_set_id_proto__init(&b->opset);
    b->model.has_ir_version = 1;
    b->model.ir_version = 8;
    b->model.producer_name = (char *)S_PROG;
    b->opset.domain = (char *)"";
    b->opset.has_version = 1;
    b->opset.version = 17;
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->model.graph = &b->graph;
    b->graph.name = s_str(b, name);
}

static void s_mb_fini(s_mb *b)
{
    for (size_t i = 0; i < b->n_mem; i++)
        free(b->mem[i]);
    free(b->mem);
    free(b->graph.node);
    free(b->graph.initializer);
    free(b->graph.input);
    free(b->graph.output);
    memset(b, 0, sizeof *b);
}

/* The serialized model, malloc'ed (the caller frees it). */
static uint8_t *s_mb_pack(s_mb *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (!buf)
        gxb_die(S_PROG, "packing a model", strerror(ENOMEM));
    onnx__model_proto__pack(&b->model, buf);
    return buf;
}

/* A float tensor type; ndim < 0 leaves the shape out. */
static Onnx__ValueInfoProto *s_value_info(s_mb *b, const char *name, int ndim,
                                          const int64_t *dims)
{
    Onnx__TypeProto *tp = s_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = s_alloc(b, sizeof *tt);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    if (ndim >= 0) {
        Onnx__TensorShapeProto *sp = s_alloc(b, sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)ndim;
        sp->dim = s_alloc(b, (size_t)ndim * sizeof *sp->dim);
        for (int i = 0; i < ndim; i++) {
            Onnx__TensorShapeProto__Dimension *d = s_alloc(b, sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
            sp->dim[i] = d;
        }
        tt->shape = sp;
    }
    Onnx__ValueInfoProto *vi = s_alloc(b, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = s_str(b, name);
    vi->type = tp;
    return vi;
}

static void s_graph_input(s_mb *b, const char *name, int ndim, const int64_t *dims)
{
    Onnx__GraphProto *g = &b->graph;
    g->input = s_grow(g->input, &b->cap_in, g->n_input, sizeof *g->input);
    g->input[g->n_input++] = s_value_info(b, name, ndim, dims);
}

/* Declares an output (float32, shape left to inference). */
static void s_graph_output(s_mb *b, const char *name)
{
    Onnx__GraphProto *g = &b->graph;
    g->output = s_grow(g->output, &b->cap_out, g->n_output, sizeof *g->output);
    g->output[g->n_output++] = s_value_info(b, name, -1, NULL);
}

/* An initializer with raw data; returns its (fresh) name. */
static const char *s_init(s_mb *b, int elem, int ndim, const int64_t *dims, const void *data,
                          size_t nbytes)
{
    Onnx__TensorProto *t = s_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)s_fresh(b);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)ndim;
    t->dims = s_alloc(b, (size_t)ndim * sizeof *t->dims);
    if (ndim)
        memcpy(t->dims, dims, (size_t)ndim * sizeof *t->dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = s_alloc(b, nbytes);
    memcpy(t->raw_data.data, data, nbytes);
    Onnx__GraphProto *g = &b->graph;
    g->initializer = s_grow(g->initializer, &b->cap_init, g->n_initializer,
                            sizeof *g->initializer);
    g->initializer[g->n_initializer++] = t;
    b->weight_bytes += (double)nbytes;
    return t->name;
}

static int64_t s_numel(int ndim, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i];
    return n;
}

/* A float32 initializer of uniform values in [lo, hi). */
static const char *s_rand(s_mb *b, int ndim, const int64_t *dims, float lo, float hi)
{
    size_t n = (size_t)s_numel(ndim, dims);
    float *v = malloc(n * sizeof *v);
    if (!v)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    for (size_t i = 0; i < n; i++)
        v[i] = s_uniform(&b->rng, lo, hi);
    const char *name = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ndim, dims, v,
                              n * sizeof *v);
    free(v);
    return name;
}

/* Weights of fan_in inputs per output (He uniform: Relu keeps the scale). */
static const char *s_weights(s_mb *b, int ndim, const int64_t *dims, int64_t fan_in)
{
    float a = (float)sqrt(6.0 / (double)fan_in);
    return s_rand(b, ndim, dims, -a, a);
}

/* A float32 scalar (0-d) initializer. */
static const char *s_scalar(s_mb *b, float v)
{
    return s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &v, sizeof v);
}

/* A 1-d int64 initializer (shapes for Reshape). */
static const char *s_ints(s_mb *b, size_t n, const int64_t *v)
{
    return s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, (int64_t[]){(int64_t)n}, v,
                  n * sizeof *v);
}

/* A node with n_in inputs and one fresh output (n->output[0]). */
static Onnx__NodeProto *s_node(s_mb *b, const char *op, size_t n_in, const char *const *in)
{
    Onnx__NodeProto *n = s_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = s_str(b, op);
    n->n_input = n_in;
    n->input = s_alloc(b, n_in * sizeof *n->input);
    for (size_t i = 0; i < n_in; i++)
        n->input[i] = s_str(b, in[i]);
    n->n_output = 1;
    n->output = s_alloc(b, sizeof *n->output);
    n->output[0] = (char *)s_fresh(b);
    n->attribute = s_alloc(b, 8 * sizeof *n->attribute);
    Onnx__GraphProto *g = &b->graph;
    g->node = s_grow(g->node, &b->cap_node, g->n_node, sizeof *g->node);
    g->node[g->n_node++] = n;
    return n;
}

static Onnx__AttributeProto *s_attr(s_mb *b, Onnx__NodeProto *n, const char *name,
                                    Onnx__AttributeProto__AttributeType type)
{
    if (n->n_attribute == 8)
        gxb_die(S_PROG, "building a model", "more than 8 attributes on a node");
    Onnx__AttributeProto *a = s_alloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = s_str(b, name);
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void s_attr_int(s_mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = s_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void s_attr_float(s_mb *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = s_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void s_attr_str(s_mb *b, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = s_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)s_str(b, v);
}

static void s_attr_ints(s_mb *b, Onnx__NodeProto *n, const char *name, size_t count,
                        const int64_t *v)
{
    Onnx__AttributeProto *a = s_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = s_alloc(b, count * sizeof *a->ints);
    memcpy(a->ints, v, count * sizeof *a->ints);
}

/* ---- layers: each returns the name of its output ---- */

static const char *s_op1(s_mb *b, const char *op, const char *x)
{
    return s_node(b, op, 1, (const char *[]){x})->output[0];
}

static const char *s_op2(s_mb *b, const char *op, const char *x, const char *y)
{
    return s_node(b, op, 2, (const char *[]){x, y})->output[0];
}

/* x[..., in] @ W[in, out] + bias[out] (MatMul, Add: as torch exports Linear
 * on a 3-d input). */
static const char *s_linear(s_mb *b, const char *x, int64_t in, int64_t out)
{
    const char *w = s_weights(b, 2, (int64_t[]){in, out}, in);
    const char *bias = s_rand(b, 1, (int64_t[]){out}, -0.1f, 0.1f);
    return s_op2(b, "Add", s_op2(b, "MatMul", x, w), bias);
}

/* Gemm(x[N, in], W[in, out], bias[out]). */
static const char *s_gemm(s_mb *b, const char *x, int64_t in, int64_t out)
{
    const char *w = s_weights(b, 2, (int64_t[]){in, out}, in);
    const char *bias = s_rand(b, 1, (int64_t[]){out}, -0.1f, 0.1f);
    return s_node(b, "Gemm", 3, (const char *[]){x, w, bias})->output[0];
}

/* Conv k x k (no bias), stride, pad k/2, group; then BatchNormalization
 * (inference, epsilon 1e-5). */
static const char *s_conv_bn(s_mb *b, const char *x, int64_t cin, int64_t cout, int64_t k,
                             int64_t stride, int64_t group)
{
    const char *w = s_weights(b, 4, (int64_t[]){cout, cin / group, k, k}, cin / group * k * k);
    Onnx__NodeProto *c = s_node(b, "Conv", 2, (const char *[]){x, w});
    s_attr_ints(b, c, "kernel_shape", 2, (int64_t[]){k, k});
    s_attr_ints(b, c, "strides", 2, (int64_t[]){stride, stride});
    s_attr_ints(b, c, "pads", 4, (int64_t[]){k / 2, k / 2, k / 2, k / 2});
    if (group != 1)
        s_attr_int(b, c, "group", group);
    const int64_t ch[] = {cout};
    const char *scale = s_rand(b, 1, ch, 0.5f, 1.5f), *bias = s_rand(b, 1, ch, -0.1f, 0.1f);
    const char *mean = s_rand(b, 1, ch, -0.1f, 0.1f), *var = s_rand(b, 1, ch, 0.5f, 1.5f);
    Onnx__NodeProto *bn = s_node(b, "BatchNormalization", 5,
                                 (const char *[]){c->output[0], scale, bias, mean, var});
    s_attr_float(b, bn, "epsilon", 1e-5f);
    return bn->output[0];
}

/* Clip(x, 0, 6) (opset 11+: bounds are inputs). */
static const char *s_relu6(s_mb *b, const char *x)
{
    return s_node(b, "Clip", 3, (const char *[]){x, s_scalar(b, 0.0f), s_scalar(b, 6.0f)})
        ->output[0];
}

static const char *s_maxpool2(s_mb *b, const char *x)
{
    Onnx__NodeProto *n = s_node(b, "MaxPool", 1, (const char *[]){x});
    s_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){2, 2});
    s_attr_ints(b, n, "strides", 2, (int64_t[]){2, 2});
    return n->output[0];
}

/* GlobalAveragePool, Flatten, Gemm to `classes`. */
static const char *s_head(s_mb *b, const char *x, int64_t ch, int64_t classes)
{
    const char *f = s_op1(b, "Flatten", s_op1(b, "GlobalAveragePool", x));
    return s_gemm(b, f, ch, classes);
}

static const char *s_transpose(s_mb *b, const char *x, const int64_t perm[4])
{
    Onnx__NodeProto *n = s_node(b, "Transpose", 1, (const char *[]){x});
    s_attr_ints(b, n, "perm", 4, perm);
    return n->output[0];
}

static const char *s_reduce_mean_last(s_mb *b, const char *x)
{
    Onnx__NodeProto *n = s_node(b, "ReduceMean", 1, (const char *[]){x});
    s_attr_ints(b, n, "axes", 1, (int64_t[]){-1}); /* an attribute up to opset 17 */
    s_attr_int(b, n, "keepdims", 1);
    return n->output[0];
}

/* LayerNorm over the last axis of width dim, in the pieces torch exports
 * before opset 17's LayerNormalization: ReduceMean, Sub, Pow 2, ReduceMean,
 * Add eps, Sqrt, Div, Mul gamma, Add beta. */
static const char *s_layernorm(s_mb *b, const char *x, int64_t dim)
{
    const char *d = s_op2(b, "Sub", x, s_reduce_mean_last(b, x));
    const char *var = s_reduce_mean_last(b, s_op2(b, "Pow", d, s_scalar(b, 2.0f)));
    const char *sd = s_op1(b, "Sqrt", s_op2(b, "Add", var, s_scalar(b, 1e-5f)));
    const char *n = s_op2(b, "Div", d, sd);
    const char *g = s_rand(b, 1, (int64_t[]){dim}, 0.5f, 1.5f);
    const char *beta = s_rand(b, 1, (int64_t[]){dim}, -0.1f, 0.1f);
    return s_op2(b, "Add", s_op2(b, "Mul", n, g), beta);
}

/* Multi-head self-attention on x[1, seq, dim]: Q, K, V projections, reshape
 * to [1, seq, heads, dim/heads], Transpose, softmax(Q K^T / sqrt(dim/heads))
 * V, Transpose back, Reshape, output projection. */
static const char *s_attention(s_mb *b, const char *x, int64_t seq, int64_t dim, int64_t heads)
{
    const int64_t hd = dim / heads;
    const char *split = s_ints(b, 4, (int64_t[]){1, seq, heads, hd});
    const char *merge = s_ints(b, 3, (int64_t[]){1, seq, dim});
    const int64_t bhsd[] = {0, 2, 1, 3}, bhds[] = {0, 2, 3, 1};
    const char *q = s_transpose(b, s_op2(b, "Reshape", s_linear(b, x, dim, dim), split), bhsd);
    const char *k = s_transpose(b, s_op2(b, "Reshape", s_linear(b, x, dim, dim), split), bhds);
    const char *v = s_transpose(b, s_op2(b, "Reshape", s_linear(b, x, dim, dim), split), bhsd);
    const char *s = s_op2(b, "Div", s_op2(b, "MatMul", q, k), s_scalar(b, sqrtf((float)hd)));
    Onnx__NodeProto *sm = s_node(b, "Softmax", 1, (const char *[]){s});
    s_attr_int(b, sm, "axis", -1);
    const char *o = s_transpose(b, s_op2(b, "MatMul", sm->output[0], v), bhsd);
    return s_linear(b, s_op2(b, "Reshape", o, merge), dim, dim);
}

/* ---- the models ---- */

typedef struct s_model s_model;
struct s_model {
    const char *name;
    const char *what;
    /* adds nodes from "x" and returns the output value's name */
    const char *(*build)(s_mb *b, const s_model *m);
    int ndim;
    int64_t x[GX_MAX_DIMS]; /* input shape */
    /* the output's quantization step when it comes out of a
     * DequantizeLinear (0: none): a difference of at most one step is a
     * rounding of requantization, not a mismatch (ORT requantizes in float,
     * gexec as the ONNX reference does) */
    float quantum;
};

/* A model file (bench_ort FILE.onnx): its bytes, input and output. */
typedef struct s_file {
    s_model m; /* name, input shape; no build */
    uint8_t *bytes;
    size_t len;
    char in_name[128], out_name[128];
} s_file;

static const char *s_build_mlp(s_mb *b, const s_model *m)
{
    const char *h = "x";
    for (int i = 0; i < 8; i++)
        h = s_op1(b, "Relu", s_linear(b, h, 512, 512));
    return h;
}

static const char *s_build_chain200(s_mb *b, const s_model *m)
{
    const char *c = s_rand(b, m->ndim, m->x, -0.5f, 0.5f), *h = "x";
    for (int i = 0; i < 40; i++) {
        h = s_op2(b, "Add", h, s_scalar(b, s_uniform(&b->rng, -0.1f, 0.1f)));
        h = s_op2(b, "Mul", h, s_scalar(b, s_uniform(&b->rng, 0.9f, 1.1f)));
        h = s_op1(b, "Relu", h);
        h = s_op2(b, "Add", h, c);
        h = s_op1(b, "Tanh", h);
    }
    return h;
}

static const char *s_build_branches(s_mb *b, const s_model *m)
{
    const char *br[8];
    for (int i = 0; i < 8; i++)
        br[i] = s_op1(b, "Relu", s_gemm(b, "x", 256, 256));
    Onnx__NodeProto *n = s_node(b, "Concat", 8, br);
    s_attr_int(b, n, "axis", 1);
    return n->output[0];
}

static const char *s_build_cnn(s_mb *b, const s_model *m)
{
    const char *h = s_op1(b, "Relu", s_conv_bn(b, "x", 3, 16, 3, 1, 1));
    h = s_op1(b, "Relu", s_conv_bn(b, s_maxpool2(b, h), 16, 32, 3, 1, 1));
    h = s_op1(b, "Relu", s_conv_bn(b, s_maxpool2(b, h), 32, 64, 3, 1, 1));
    return s_head(b, h, 64, 10);
}

static const char *s_build_matmul(s_mb *b, const s_model *m)
{
    return s_op2(b, "MatMul", "x", s_rand(b, 2, (int64_t[]){1024, 1024}, -0.5f, 0.5f));
}

static const char *s_build_chain5(s_mb *b, const s_model *m)
{
    const char *h = s_op2(b, "Add", "x", s_scalar(b, 0.25f));
    h = s_op1(b, "Relu", s_op2(b, "Mul", h, s_scalar(b, 1.5f)));
    return s_op2(b, "Mul", s_op1(b, "Sigmoid", h), s_scalar(b, 0.75f));
}

static const char *s_build_attention(s_mb *b, const s_model *m)
{
    return s_attention(b, "x", 128, 256, 4);
}

static const char *s_build_mobilenet(s_mb *b, const s_model *m)
{
    /* inverted residual blocks: expansion, output channels, stride */
    static const int64_t blocks[][3] = {{4, 24, 2}, {4, 24, 1}, {4, 32, 2},
                                        {4, 32, 1}, {4, 64, 2}, {4, 64, 1}};
    const char *h = s_relu6(b, s_conv_bn(b, "x", 3, 16, 3, 2, 1));
    int64_t c = 16;
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        int64_t e = c * blocks[i][0], out = blocks[i][1], stride = blocks[i][2];
        const char *t = s_relu6(b, s_conv_bn(b, h, c, e, 1, 1, 1));
        t = s_relu6(b, s_conv_bn(b, t, e, e, 3, stride, e));
        t = s_conv_bn(b, t, e, out, 1, 1, 1);
        h = stride == 1 && c == out ? s_op2(b, "Add", h, t) : t;
        c = out;
    }
    return s_head(b, h, c, 100);
}

/* 1x1 Conv with a bias (no BatchNormalization): squeeze-and-excitation. */
static const char *s_conv1x1_bias(s_mb *b, const char *x, int64_t cin, int64_t cout)
{
    const char *w = s_weights(b, 4, (int64_t[]){cout, cin, 1, 1}, cin);
    const char *bias = s_rand(b, 1, (int64_t[]){cout}, -0.1f, 0.1f);
    return s_node(b, "Conv", 3, (const char *[]){x, w, bias})->output[0];
}

/* MobileNetV3's squeeze-and-excitation: x * HardSigmoid(Conv(Relu(Conv(GAP x)))). */
static const char *s_se(s_mb *b, const char *x, int64_t c)
{
    const char *s = s_op1(b, "GlobalAveragePool", x);
    s = s_op1(b, "Relu", s_conv1x1_bias(b, s, c, c / 4));
    Onnx__NodeProto *hs = s_node(b, "HardSigmoid", 1,
                                 (const char *[]){s_conv1x1_bias(b, s, c / 4, c)});
    s_attr_float(b, hs, "alpha", 1.0f / 6.0f);
    return s_op2(b, "Mul", x, hs->output[0]);
}

static const char *s_build_mobilenetv3(s_mb *b, const s_model *m)
{
    /* MobileNetV3-Small's blocks: expanded channels, out, kernel, stride,
     * squeeze-and-excitation, HardSwish (else Relu) */
    static const int64_t blocks[][6] = {
        {16, 16, 3, 2, 1, 0},  {72, 24, 3, 2, 0, 0},  {88, 24, 3, 1, 0, 0},
        {96, 40, 5, 2, 1, 1},  {240, 40, 5, 1, 1, 1}, {120, 48, 5, 1, 1, 1},
        {288, 96, 5, 2, 1, 1}, {576, 96, 5, 1, 1, 1},
    };
    const char *h = s_op1(b, "HardSwish", s_conv_bn(b, "x", 3, 16, 3, 2, 1));
    int64_t c = 16;
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        const int64_t *k = blocks[i];
        const char *act = k[5] ? "HardSwish" : "Relu";
        const char *t = h;
        if (k[0] != c)
            t = s_op1(b, act, s_conv_bn(b, t, c, k[0], 1, 1, 1));
        t = s_op1(b, act, s_conv_bn(b, t, k[0], k[0], k[2], k[3], k[0]));
        if (k[4])
            t = s_se(b, t, k[0]);
        t = s_conv_bn(b, t, k[0], k[1], 1, 1, 1);
        h = k[3] == 1 && c == k[1] ? s_op2(b, "Add", h, t) : t;
        c = k[1];
    }
    h = s_op1(b, "HardSwish", s_conv_bn(b, h, c, 576, 1, 1, 1));
    const char *f = s_op1(b, "Flatten", s_op1(b, "GlobalAveragePool", h));
    return s_gemm(b, s_op1(b, "HardSwish", s_gemm(b, f, 576, 1024)), 1024, 1000);
}

/* x upsampled 2x by Resize (nearest, scales input), as FPN's top-down path. */
static const char *s_upsample2(s_mb *b, const char *x)
{
    const char *scales = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){4},
                                (float[]){1, 1, 2, 2}, 4 * sizeof(float));
    Onnx__NodeProto *r = s_node(b, "Resize", 3, (const char *[]){x, "", scales});
    s_attr_str(b, r, "mode", "nearest");
    return r->output[0];
}

/* A small feature pyramid: a 3-stage backbone (Conv+BN+Relu, stride 2),
 * lateral 1x1 convs, top-down Resize 2x + Add, 3x3 smoothing, and a
 * ConvTranspose 2x head on the finest level. */
static const char *s_build_fpn(s_mb *b, const s_model *m)
{
    const char *c1 = s_op1(b, "Relu", s_conv_bn(b, "x", 3, 32, 3, 2, 1));
    const char *c2 = s_op1(b, "Relu", s_conv_bn(b, c1, 32, 64, 3, 2, 1));
    const char *c3 = s_op1(b, "Relu", s_conv_bn(b, c2, 64, 128, 3, 2, 1));
    const char *p3 = s_conv1x1_bias(b, c3, 128, 64);
    const char *p2 = s_op2(b, "Add", s_conv1x1_bias(b, c2, 64, 64), s_upsample2(b, p3));
    const char *p1 = s_op2(b, "Add", s_conv1x1_bias(b, c1, 32, 64), s_upsample2(b, p2));
    p1 = s_op1(b, "Relu", s_conv_bn(b, p1, 64, 64, 3, 1, 1));
    const char *w = s_weights(b, 4, (int64_t[]){64, 16, 2, 2}, 64 * 4);
    Onnx__NodeProto *up = s_node(b, "ConvTranspose", 2, (const char *[]){p1, w});
    s_attr_ints(b, up, "kernel_shape", 2, (int64_t[]){2, 2});
    s_attr_ints(b, up, "strides", 2, (int64_t[]){2, 2});
    return up->output[0];
}

/* ResNet's basic block: two 3x3 Conv+BN, the shortcut a 1x1 Conv+BN where
 * the shape changes, Relu after the sum. */
static const char *s_basic_block(s_mb *b, const char *x, int64_t cin, int64_t cout, int64_t stride)
{
    const char *t = s_op1(b, "Relu", s_conv_bn(b, x, cin, cout, 3, stride, 1));
    t = s_conv_bn(b, t, cout, cout, 3, 1, 1);
    const char *sc = stride != 1 || cin != cout ? s_conv_bn(b, x, cin, cout, 1, stride, 1) : x;
    return s_op1(b, "Relu", s_op2(b, "Add", t, sc));
}

static const char *s_build_resnet18(s_mb *b, const s_model *m)
{
    const char *h = s_maxpool2(b, s_op1(b, "Relu", s_conv_bn(b, "x", 3, 64, 7, 2, 1)));
    int64_t c = 64;
    for (int64_t st = 0; st < 4; st++) {
        const int64_t out = 64 << st;
        h = s_basic_block(b, h, c, out, st ? 2 : 1);
        h = s_basic_block(b, h, out, out, 1);
        c = out;
    }
    return s_head(b, h, c, 1000);
}

/* ResNeXt's bottleneck: 1x1 Conv+BN+Relu to width, 3x3 Conv+BN+Relu in 32
 * groups (stride), 1x1 Conv+BN to cout, the shortcut a 1x1 Conv+BN where
 * the shape changes, Relu after the sum. */
static const char *s_resnext_block(s_mb *b, const char *x, int64_t cin, int64_t width,
                                   int64_t cout, int64_t stride)
{
    const char *t = s_op1(b, "Relu", s_conv_bn(b, x, cin, width, 1, 1, 1));
    t = s_op1(b, "Relu", s_conv_bn(b, t, width, width, 3, stride, 32));
    t = s_conv_bn(b, t, width, cout, 1, 1, 1);
    const char *sc = stride != 1 || cin != cout ? s_conv_bn(b, x, cin, cout, 1, stride, 1) : x;
    return s_op1(b, "Relu", s_op2(b, "Add", t, sc));
}

static const char *s_build_resnext(s_mb *b, const s_model *m)
{
    const char *h = s_maxpool2(b, s_op1(b, "Relu", s_conv_bn(b, "x", 3, 64, 7, 2, 1)));
    h = s_resnext_block(b, h, 64, 128, 256, 1);
    for (int i = 0; i < 2; i++)
        h = s_resnext_block(b, h, 256, 128, 256, 1);
    h = s_resnext_block(b, h, 256, 256, 512, 2);
    return s_head(b, h, 512, 1000);
}

static const char *s_build_transformer(s_mb *b, const s_model *m)
{
    const char *r1 = s_op2(b, "Add", "x", s_attention(b, s_layernorm(b, "x", 256), 128, 256, 4));
    /* GELU as torch exports it: x * (erf(x / sqrt 2) + 1) * 0.5 */
    const char *f = s_linear(b, r1, 256, 1024);
    const char *e = s_op1(b, "Erf", s_op2(b, "Div", f, s_scalar(b, sqrtf(2.0f))));
    const char *g = s_op2(b, "Mul", f, s_op2(b, "Add", e, s_scalar(b, 1.0f)));
    g = s_op2(b, "Mul", g, s_scalar(b, 0.5f));
    const char *r2 = s_op2(b, "Add", r1, s_linear(b, g, 1024, 256));
    return s_layernorm(b, r2, 256);
}

/* A recurrent layer as exported (one node, gate weights W, R and biases B
 * for one direction): x [64, 1, 128] -> hidden 256, output Y. */
static const char *s_build_rnn(s_mb *b, const char *op, int gates)
{
    const int64_t in = 128, hid = 256, gh = gates * hid;
    const char *w = s_weights(b, 3, (int64_t[]){1, gh, in}, in);
    const char *r = s_weights(b, 3, (int64_t[]){1, gh, hid}, hid);
    const char *bias = s_rand(b, 2, (int64_t[]){1, 2 * gh}, -0.1f, 0.1f);
    Onnx__NodeProto *n = s_node(b, op, 4, (const char *[]){"x", w, r, bias});
    s_attr_int(b, n, "hidden_size", hid);
    return n->output[0];
}

static const char *s_build_lstm(s_mb *b, const s_model *m)
{
    return s_build_rnn(b, "LSTM", 4);
}

static const char *s_build_gru(s_mb *b, const s_model *m)
{
    return s_build_rnn(b, "GRU", 3);
}

/* ONNX Runtime's quantize_dynamic form of a Linear layer: x ->
 * DynamicQuantizeLinear -> MatMulInteger by int8 weights -> Cast ->
 * Mul (x's scale times the weights') -> Add bias; four of them with Relu.
 * normal: the weights a trained layer's are like, normally distributed,
 * quantized by their largest magnitude to 127 (as quantize_dynamic does);
 * else uniform over the whole int8 range (the worst case for a kernel
 * whose pair sums must stay within int16). */
static const char *s_dq_mlp(s_mb *b, bool normal)
{
    const char *h = "x";
    const int64_t d = 768;
    int8_t *w = malloc((size_t)(d * d));
    if (!w)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    const int8_t zero = 0;
    for (int layer = 0; layer < 4; layer++) {
        if (normal)
            s_normal_int8(&b->rng, w, d * d);
        else
            for (int64_t i = 0; i < d * d; i++)
                w[i] = (int8_t)(s_uniform(&b->rng, -127.0f, 127.0f));
        const char *wq = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 2, (int64_t[]){d, d}, w,
                                (size_t)(d * d));
        const char *wz = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 0, NULL, &zero, 1);
        Onnx__NodeProto *q = s_node(b, "DynamicQuantizeLinear", 1, (const char *[]){h});
        q->n_output = 3;
        q->output = s_alloc(b, 3 * sizeof *q->output);
        for (int i = 0; i < 3; i++)
            q->output[i] = (char *)s_fresh(b);
        Onnx__NodeProto *mm = s_node(b, "MatMulInteger", 4,
                                     (const char *[]){q->output[0], wq, q->output[2], wz});
        Onnx__NodeProto *f = s_node(b, "Cast", 1, (const char *[]){mm->output[0]});
        s_attr_int(b, f, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        const char *scale = s_op2(b, "Mul", q->output[1], s_scalar(b, 1.0f / 127.0f / 28.0f));
        const char *y = s_op2(b, "Mul", f->output[0], scale);
        h = s_op1(b, "Relu", s_op2(b, "Add", y, s_rand(b, 1, (int64_t[]){d}, -0.1f, 0.1f)));
    }
    free(w);
    return h;
}

static const char *s_build_dq_mlp(s_mb *b, const s_model *m)
{
    (void)m;
    return s_dq_mlp(b, false);
}

static const char *s_build_dq_mlp_n(s_mb *b, const s_model *m)
{
    (void)m;
    return s_dq_mlp(b, true);
}

/* An audio front end: 1-D convolutions over 16000 samples (1 s at 16
 * kHz), widening and dilating, each with Relu. */
static const char *s_build_conv1d(s_mb *b, const s_model *m)
{
    static const int64_t spec[][3] = {{64, 7, 1}, {64, 3, 2}, {128, 3, 4}, {128, 3, 8},
                                      {128, 3, 1}}; /* out channels, width, dilation */
    const char *h = "x";
    int64_t c = 1;
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        const int64_t co = spec[i][0], k = spec[i][1], dil = spec[i][2], pad = k / 2 * dil;
        const char *w = s_weights(b, 3, (int64_t[]){co, c, k}, c * k);
        const char *bias = s_rand(b, 1, (int64_t[]){co}, -0.1f, 0.1f);
        Onnx__NodeProto *n = s_node(b, "Conv", 3, (const char *[]){h, w, bias});
        s_attr_ints(b, n, "kernel_shape", 1, (int64_t[]){k});
        s_attr_ints(b, n, "dilations", 1, (int64_t[]){dil});
        s_attr_ints(b, n, "pads", 2, (int64_t[]){pad, pad});
        h = s_op1(b, "Relu", n->output[0]);
        c = co;
    }
    return h;
}

/* ---- quantized convolutions (QLinearConv, as ONNX Runtime's static
 * quantization writes a MobileNetV2 block: uint8 activations, int8
 * weights with per-channel scales, int32 bias) ---- */

/* A uint8 scalar initializer. */
static const char *s_u8(s_mb *b, uint8_t v)
{
    return s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL, &v, 1);
}

/* QLinearConv k x k (pad k/2, stride, group) from x (uint8, scale xs,
 * zero point 128, c channels) to m channels of scale ys and zero point
 * 128: random int8 weights (He uniform, per-channel scales), int32 bias;
 * qdq: the same in the QDQ form ORT's quantizer writes by default
 * (DequantizeLinear of x, of the weights and of the bias, a float Conv,
 * QuantizeLinear of its output). */
static const char *s_qconv(s_mb *b, const char *x, float xs, int64_t c, int64_t m, int64_t k,
                           int64_t stride, int64_t group, float ys, bool qdq)
{
    const int64_t cg = c / group, taps = cg * k * k, n = m * taps;
    int8_t *w = malloc((size_t)n);
    float *ws = malloc((size_t)m * sizeof *ws);
    int32_t *bias = malloc((size_t)m * sizeof *bias);
    if (!w || !ws || !bias)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    const float a = (float)sqrt(6.0 / (double)taps);
    for (int64_t j = 0; j < m; j++) {
        ws[j] = a / 127.0f * s_uniform(&b->rng, 0.8f, 1.2f);
        bias[j] = (int32_t)(s_uniform(&b->rng, -0.1f, 0.1f) / (xs * ws[j]));
    }
    for (int64_t i = 0; i < n; i++)
        w[i] = (int8_t)s_uniform(&b->rng, -127.0f, 127.0f);
    int8_t *wz = calloc((size_t)m, 1);
    if (!wz)
        gxb_die(S_PROG, "building a model", strerror(ENOMEM));
    const char *wn = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 4,
                            (int64_t[]){m, cg, k, k}, w, (size_t)n);
    const char *wsn = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){m}, ws,
                             (size_t)m * sizeof *ws);
    const char *wzn = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, (int64_t[]){m}, wz,
                             (size_t)m);
    const char *bn = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, (int64_t[]){m}, bias,
                            (size_t)m * sizeof *bias);
    Onnx__NodeProto *q;
    if (qdq) {
        float *bs = malloc((size_t)m * sizeof *bs);
        if (!bs)
            gxb_die(S_PROG, "building a model", strerror(ENOMEM));
        for (int64_t j = 0; j < m; j++)
            bs[j] = xs * ws[j];
        const char *bsn = s_init(b, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){m}, bs,
                                 (size_t)m * sizeof *bs);
        free(bs);
        const char *xf = s_node(b, "DequantizeLinear", 3,
                                (const char *[]){x, s_scalar(b, xs), s_u8(b, 128)})->output[0];
        Onnx__NodeProto *dw = s_node(b, "DequantizeLinear", 3, (const char *[]){wn, wsn, wzn});
        s_attr_int(b, dw, "axis", 0);
        Onnx__NodeProto *db = s_node(b, "DequantizeLinear", 2, (const char *[]){bn, bsn});
        s_attr_int(b, db, "axis", 0);
        q = s_node(b, "Conv", 3, (const char *[]){xf, dw->output[0], db->output[0]});
    } else {
        q = s_node(b, "QLinearConv", 9,
                   (const char *[]){x, s_scalar(b, xs), s_u8(b, 128), wn, wsn, wzn,
                                    s_scalar(b, ys), s_u8(b, 128), bn});
    }
    s_attr_ints(b, q, "kernel_shape", 2, (int64_t[]){k, k});
    s_attr_ints(b, q, "pads", 4, (int64_t[]){k / 2, k / 2, k / 2, k / 2});
    s_attr_ints(b, q, "strides", 2, (int64_t[]){stride, stride});
    s_attr_int(b, q, "group", group);
    free(w), free(ws), free(bias), free(wz);
    if (qdq)
        return s_node(b, "QuantizeLinear", 3,
                      (const char *[]){q->output[0], s_scalar(b, ys), s_u8(b, 128)})
            ->output[0];
    return q->output[0];
}

/* QuantizeLinear of the float input to uint8 (scale s, zero point 128). */
static const char *s_quant(s_mb *b, const char *x, float s)
{
    return s_node(b, "QuantizeLinear", 3, (const char *[]){x, s_scalar(b, s), s_u8(b, 128)})
        ->output[0];
}

static const char *s_dequant(s_mb *b, const char *x, float s)
{
    return s_node(b, "DequantizeLinear", 3, (const char *[]){x, s_scalar(b, s), s_u8(b, 128)})
        ->output[0];
}

#define S_QS (6.0f / 255.0f) /* the activations' scale: about [-3, 3] */

/* A MobileNetV2 inverted residual block, quantized: 1x1 expand c -> 6c,
 * depthwise 3x3, 1x1 project 6c -> c, residual Add in float. */
static const char *s_mbv2_block(s_mb *b, const s_model *m, bool qdq)
{
    const int64_t c = m->x[1];
    const char *xq = s_quant(b, "x", S_QS);
    const char *e = s_qconv(b, xq, S_QS, c, 6 * c, 1, 1, 1, S_QS, qdq);
    const char *d = s_qconv(b, e, S_QS, 6 * c, 6 * c, 3, 1, 6 * c, S_QS, qdq);
    const char *p = s_qconv(b, d, S_QS, 6 * c, c, 1, 1, 1, S_QS, qdq);
    return s_op2(b, "Add", s_dequant(b, p, S_QS), s_dequant(b, xq, S_QS));
}

static const char *s_build_qmbv2(s_mb *b, const s_model *m)
{
    return s_mbv2_block(b, m, false);
}

/* The same block in QDQ form. */
static const char *s_build_qdq_mbv2(s_mb *b, const s_model *m)
{
    return s_mbv2_block(b, m, true);
}

/* One QLinearConv between QuantizeLinear and DequantizeLinear: 1x1 to 6
 * times the channels, or depthwise 3x3 (stride 1 or 2). */
static const char *s_build_qconv1x1(s_mb *b, const s_model *m)
{
    const int64_t c = m->x[1];
    return s_dequant(b, s_qconv(b, s_quant(b, "x", S_QS), S_QS, c, 6 * c, 1, 1, 1, S_QS, false),
                     S_QS);
}

static const char *s_build_qdw(s_mb *b, const s_model *m)
{
    const int64_t c = m->x[1];
    return s_dequant(b, s_qconv(b, s_quant(b, "x", S_QS), S_QS, c, c, 3, 1, c, S_QS, false), S_QS);
}

static const char *s_build_qdw_s2(s_mb *b, const s_model *m)
{
    const int64_t c = m->x[1];
    return s_dequant(b, s_qconv(b, s_quant(b, "x", S_QS), S_QS, c, c, 3, 2, c, S_QS, false), S_QS);
}

static const s_model s_models[] = {
    {"mlp_b1", "x[1,512] -> 8 x (MatMul 512x512, Add bias, Relu)", s_build_mlp, 2, {1, 512}, 0},
    {"mlp_b64", "x[64,512] -> the same 8 layers", s_build_mlp, 2, {64, 512}, 0},
    {"chain200", "x[262144] -> 200 elementwise ops: 40 x (Add s, Mul s, Relu, Add C[262144], "
     "Tanh)", s_build_chain200, 1, {262144}, 0},
    {"tiny200", "x[64] -> the same 200 ops on 64 floats: the cost of a step beside its "
     "kernel", s_build_chain200, 1, {64}, 0},
    {"branches8", "x[64,256] -> 8 x Relu(Gemm 256x256 + bias) -> Concat axis 1",
     s_build_branches, 2, {64, 256}, 0},
    {"cnn_b1", "x[1,3,32,32] -> 3 x (Conv 3x3 + BN + Relu, MaxPool 2 after the first two) "
     "-> GAP -> Flatten -> Gemm 64->10", s_build_cnn, 4, {1, 3, 32, 32}, 0},
    {"cnn_b32", "x[32,3,32,32] -> the same CNN", s_build_cnn, 4, {32, 3, 32, 32}, 0},
    {"matmul1024", "x[1024,1024] MatMul W[1024,1024]", s_build_matmul, 2, {1024, 1024}, 0},
    {"chain5", "x[1048576] (4 MiB) -> Add s, Mul s, Relu, Sigmoid, Mul s", s_build_chain5, 1,
     {1048576}, 0},
    {"attention", "x[1,128,256] -> Q,K,V MatMul+Add, 4 heads, Softmax(Q K^T / 8) V, "
     "out projection", s_build_attention, 3, {1, 128, 256}, 0},
    {"mobilenet", "x[1,3,112,112] -> Conv s2 + BN + Clip6, 6 inverted residual blocks "
     "(expand 4, depthwise 3x3) to 64 ch -> GAP -> Gemm 64->100", s_build_mobilenet, 4,
     {1, 3, 112, 112}, 0},
    {"mobilenetv3", "x[1,3,224,224] -> MobileNetV3-Small: HardSwish, depthwise 3x3 and 5x5, "
     "squeeze-and-excitation (HardSigmoid), 576 ch -> Gemm 1024 -> Gemm 1000",
     s_build_mobilenetv3, 4, {1, 3, 224, 224}, 0},
    {"fpn", "x[1,3,128,128] -> 3 stride-2 Conv+BN+Relu, lateral 1x1 convs, Resize 2x + Add "
     "top-down, 3x3 Conv, ConvTranspose 2x to 16 ch", s_build_fpn, 4, {1, 3, 128, 128}, 0},
    {"resnet18", "x[1,3,224,224] -> ResNet-18: Conv 7x7 s2 + BN + Relu, MaxPool, 8 basic "
     "blocks (64 to 512 ch) -> GAP -> Gemm 512->1000", s_build_resnet18, 4, {1, 3, 224, 224}, 0},
    {"resnext", "x[1,3,224,224] -> ResNeXt-50's first stage and a stride-2 block: Conv 7x7 s2 "
     "+ BN + Relu, MaxPool, 3 bottlenecks (1x1 to 128, 3x3 in 32 groups of 4, 1x1 to 256) at "
     "56x56, one to 512 ch (32 groups of 8, stride 2) -> GAP -> Gemm 512->1000",
     s_build_resnext, 4, {1, 3, 224, 224}, 0},
    {"lstm", "x[64,1,128] -> LSTM, 256 units, 64 steps at batch 1", s_build_lstm, 3, {64, 1, 128}, 0},
    {"gru", "x[64,1,128] -> GRU, 256 units, 64 steps at batch 1", s_build_gru, 3, {64, 1, 128}, 0},
    {"dq_mlp", "x[8,768] -> 4 x (DynamicQuantizeLinear, MatMulInteger int8 768x768, Cast, Mul "
     "scales, Add bias, Relu), weights uniform over int8", s_build_dq_mlp, 2, {8, 768}, 0},
    {"dq_mlp_n", "the same, weights normal (a trained layer's) quantized to int8 by their "
     "largest magnitude", s_build_dq_mlp_n, 2, {8, 768}, 0},
    {"qmbv2", "x[1,24,56,56] -> QuantizeLinear u8, QLinearConv 1x1 24->144, depthwise 3x3, "
     "1x1 144->24 (int8 weights, per-channel scales), DequantizeLinear, residual Add",
     s_build_qmbv2, 4, {1, 24, 56, 56}, S_QS},
    {"qdq_mbv2", "x[1,24,56,56] -> the same block in QDQ form (DequantizeLinear, float Conv, "
     "QuantizeLinear: ORT's quantizer's default)", s_build_qdq_mbv2, 4, {1, 24, 56, 56}, S_QS},
    {"qconv1x1", "x[1,24,56,56] -> QuantizeLinear u8, QLinearConv 1x1 24->144, "
     "DequantizeLinear", s_build_qconv1x1, 4, {1, 24, 56, 56}, S_QS},
    {"qdw", "x[1,144,56,56] -> QuantizeLinear u8, depthwise 3x3 QLinearConv, "
     "DequantizeLinear", s_build_qdw, 4, {1, 144, 56, 56}, S_QS},
    {"qdw_s2", "x[1,144,56,56] -> the same depthwise 3x3 at stride 2", s_build_qdw_s2, 4,
     {1, 144, 56, 56}, S_QS},
    {"conv1d", "x[1,1,16000] -> 5 x (Conv1d k7/k3, dilations 1-8, to 64/128 ch, Relu)",
     s_build_conv1d, 3, {1, 1, 16000}, 0},
    {"transformer", "x[1,128,256] -> LN (torch pieces), 4-head attention, residual, FFN "
     "256->1024->256 (Erf GELU), residual, LN", s_build_transformer, 3, {1, 128, 256}, 0},
};
#define S_N_MODELS (sizeof s_models / sizeof s_models[0])

/* A model file as an s_model: its bytes, its one float32 input (the first
 * graph input that is not an initializer; dimensions without a fixed size
 * taken as 1) and its first output. Dies on anything else. */
static void s_model_file(const char *path, s_file *mf)
{
    s_model *m = &mf->m;
    FILE *f = fopen(path, "rb");
    if (!f)
        gxb_die(S_PROG, path, strerror(errno));
    for (;;) {
        if (!(mf->bytes = realloc(mf->bytes, mf->len + 65536)))
            gxb_die(S_PROG, path, strerror(ENOMEM));
        const size_t got = fread(mf->bytes + mf->len, 1, 65536, f);
        mf->len += got;
        if (got < 65536)
            break;
    }
    const bool bad = ferror(f);
    fclose(f);
    Onnx__ModelProto *mp = bad ? NULL : onnx__model_proto__unpack(NULL, mf->len, mf->bytes);
    if (!mp || !mp->graph || mp->graph->n_output == 0)
        gxb_die(S_PROG, path, "not an ONNX model with a graph and an output");
    const Onnx__GraphProto *g = mp->graph;
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < g->n_input && !in; i++) {
        bool init = false;
        for (size_t j = 0; j < g->n_initializer && !init; j++)
            init = strcmp(g->initializer[j]->name, g->input[i]->name) == 0;
        in = init ? NULL : g->input[i];
    }
    const Onnx__TypeProto__Tensor *tt = in && in->type ? in->type->tensor_type : NULL;
    if (!tt || tt->elem_type != S_ONNX_TENSOR_ELEMENT_FLOAT || !tt->shape ||
        tt->shape->n_dim > GX_MAX_DIMS)
        gxb_die(S_PROG, path, "the model's input is not one float32 tensor of known rank");
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i] != in) {
            bool init = false;
            for (size_t j = 0; j < g->n_initializer && !init; j++)
                init = strcmp(g->initializer[j]->name, g->input[i]->name) == 0;
            if (!init)
                gxb_die(S_PROG, path, "the model has more than one input");
        }
    m->ndim = (int)tt->shape->n_dim;
    for (int d = 0; d < m->ndim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        m->x[d] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          dim->dim_value > 0
                      ? dim->dim_value
                      : 1;
    }
    snprintf(mf->in_name, sizeof mf->in_name, "%s", in->name);
    snprintf(mf->out_name, sizeof mf->out_name, "%s", g->output[0]->name);
    onnx__model_proto__free_unpacked(mp, NULL);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    m->name = base;
    m->what = path;
}

/* ==== measuring ============================================================ */

enum { S_ORT1, S_ORT2, S_GX_SEQ, S_GX_AUTO, S_NCFG };
static const char *const s_cfg_name[S_NCFG] = {"ORT 1 thread", "ORT 2 threads", "gexec seq",
                                               "gexec auto"};

typedef struct s_opts {
    const char *socket; /* NULL: start a gexecd */
    const char *ort;    /* --ort */
    const char *only;   /* comma-separated names or prefixes */
    const char *save;   /* --save DIR: each model's ONNX bytes as DIR/<name>.onnx */
    bool no_fetch;      /* never run bench/ort.sh */
    double seconds;     /* timed runs per (model, configuration) */
    int max_runs;
    int warmup;
    int rounds;
    char **files; /* FILE.onnx arguments: these models instead of the built-in ones */
    int n_files;
} s_opts;

/* A growing list of doubles. */
typedef struct s_vec {
    double *v;
    size_t n, cap;
} s_vec;

static void s_vec_push(s_vec *a, double x)
{
    a->v = s_grow(a->v, &a->cap, a->n, sizeof *a->v);
    a->v[a->n++] = x;
}

/* NAN when empty; sorts a. */
static double s_median(s_vec *a)
{
    return gxb_median(a->v, a->n);
}

/* How auto's jobs ran ("intra/2"), counted. */
typedef struct s_tally {
    char what[8][48];
    int n[8];
    int count;
} s_tally;

static void s_tally_add(s_tally *t, const gx_run_info *info)
{
    char what[48];
    snprintf(what, sizeof what, "%s/%d", info->mode, info->workers);
    if (info->replicas > 1)
        snprintf(what + strlen(what), sizeof what - strlen(what), "x%d", info->replicas);
    int i = 0;
    while (i < t->count && strcmp(t->what[i], what) != 0)
        i++;
    if (i == t->count) {
        if (t->count == 8)
            return;
        snprintf(t->what[t->count++], sizeof t->what[0], "%s", what);
    }
    t->n[i]++;
}

/* The most frequent, with its share when not all agree. */
static void s_tally_top(const s_tally *t, char *buf, size_t len)
{
    int best = -1, total = 0;
    for (int i = 0; i < t->count; i++) {
        total += t->n[i];
        if (best < 0 || t->n[i] > t->n[best])
            best = i;
    }
    if (best < 0)
        snprintf(buf, len, "-");
    else if (t->n[best] == total)
        snprintf(buf, len, "%s", t->what[best]);
    else
        snprintf(buf, len, "%s:%d%%", t->what[best], 100 * t->n[best] / total);
}

/* An output kept for the check. */
typedef struct s_out {
    float *v;
    int64_t n;
    int ndim;
    int64_t dims[GX_MAX_DIMS];
} s_out;

/* One model in both runtimes. */
typedef struct s_case {
    const s_model *m;
    const s_file *file; /* m's file, or NULL: a built-in model */
    uint8_t *bytes;
    size_t len;
    size_t nodes;
    double weight_bytes;
    gx_tensor *x;
    /* ORT */
    OrtSession *sess[2];
    OrtValue *ort_x;
    char ort_err[512];
    /* gexec */
    gx_request *rq[2]; /* seq, auto */
    char gx_err[1024];
    /* per configuration: usable, timings, the last warm-up output */
    bool ok[S_NCFG];
    char run_err[S_NCFG][512];
    s_vec wall[S_NCFG];    /* ORT: Run(); gexec: client round trip */
    s_vec compute[S_NCFG]; /* gexec: compute_us */
    s_tally auto_ran;
    s_out out[S_NCFG];
} s_case;

typedef struct s_ctx {
    s_opts o;
    s_ort ort;
    gx_client *c;
} s_ctx;

static void s_out_set(s_out *o, const float *v, int64_t n, int ndim, const int64_t *dims)
{
    free(o->v);
    o->v = malloc((size_t)n * sizeof *o->v + 1);
    if (!o->v)
        gxb_die(S_PROG, "keeping an output", strerror(ENOMEM));
    memcpy(o->v, v, (size_t)n * sizeof *o->v);
    o->n = n;
    o->ndim = ndim;
    memcpy(o->dims, dims, (size_t)ndim * sizeof *dims);
}

/* One ORT run of configuration cfg: its time in *us; keeps the output when
 * keep. Returns false with k->run_err[cfg] set on failure. */
static bool s_ort_run(const s_ctx *x, s_case *k, int cfg, bool keep, double *us)
{
    const s_ort_api *a = x->ort.api;
    const char *in_name = k->file ? k->file->in_name : "x";
    const char *out_name = k->file ? k->file->out_name : "y";
    const OrtValue *in[1] = {k->ort_x};
    OrtValue *out = NULL;
    double t0 = gxb_now_us();
    OrtStatus *st = a->Run(k->sess[cfg], NULL, &in_name, in, 1, &out_name, 1, &out);
    *us = gxb_now_us() - t0;
    char *err = k->run_err[cfg];
    const size_t elen = sizeof k->run_err[cfg];
    if (s_ort_failed(&x->ort, st, err, elen))
        return false;
    bool ok = true;
    if (keep) {
        OrtTensorTypeAndShapeInfo *info = NULL;
        size_t ndim = 0;
        int64_t dims[GX_MAX_DIMS];
        void *data = NULL;
        ok = !s_ort_failed(&x->ort, a->GetTensorTypeAndShape(out, &info), err, elen) &&
             !s_ort_failed(&x->ort, a->GetDimensionsCount(info, &ndim), err, elen) &&
             ndim <= GX_MAX_DIMS &&
             !s_ort_failed(&x->ort, a->GetDimensions(info, dims, ndim), err, elen) &&
             !s_ort_failed(&x->ort, a->GetTensorMutableData(out, &data), err, elen);
        if (ok)
            s_out_set(&k->out[cfg], data, s_numel((int)ndim, dims), (int)ndim, dims);
        a->ReleaseTensorTypeAndShapeInfo(info);
    }
    a->ReleaseValue(out);
    return ok;
}

/* "GX_EOP: message" into buf, the status name once. */
static void s_gx_error(char *buf, size_t len, const char *what, int rc, const char *msg)
{
    const char *name = gx_status_name(rc);
    if (strncmp(msg, name, strlen(name)) == 0)
        snprintf(buf, len, "%s%s", what, msg);
    else
        snprintf(buf, len, "%s%s: %s", what, name, msg);
}

/* One gexec RUN of configuration cfg: round trip in *us, compute_us in
 * *compute; counts auto's mode; keeps the output when keep. */
static bool s_gx_run(const s_ctx *x, s_case *k, int cfg, bool keep, double *us, double *compute)
{
    gx_result *r = NULL;
    double t0 = gxb_now_us();
    int rc = gx_client_run(x->c, k->rq[cfg - S_GX_SEQ], &r);
    *us = gxb_now_us() - t0;
    if (rc < 0) {
        s_gx_error(k->run_err[cfg], sizeof k->run_err[cfg], "", rc,
                   r ? gx_result_message(r) : gx_client_last_error(x->c));
        gx_result_destroy(&r);
        return false;
    }
    const gx_run_info *info = gx_result_info(r);
    *compute = (double)info->compute_us;
    if (cfg == S_GX_AUTO && !keep)
        s_tally_add(&k->auto_ran, info);
    const gx_tensor *y = gx_result_output(r, 0);
    if (keep && y && gx_tensor_dtype(y) == GX_F32)
        s_out_set(&k->out[cfg], gx_tensor_cdata(y), gx_tensor_numel(y), gx_tensor_ndim(y),
                  gx_tensor_shape(y));
    else if (keep)
        snprintf(k->run_err[cfg], sizeof k->run_err[cfg], "no float32 output");
    gx_result_destroy(&r);
    return true;
}

/* Run cfg once; false (and the configuration dropped) on failure. */
static bool s_run(const s_ctx *x, s_case *k, int cfg, bool keep, bool record)
{
    double us = 0, compute = 0;
    bool ok = cfg < S_GX_SEQ ? s_ort_run(x, k, cfg, keep, &us)
                             : s_gx_run(x, k, cfg, keep, &us, &compute);
    if (!ok) {
        k->ok[cfg] = false;
        return false;
    }
    if (record) {
        s_vec_push(&k->wall[cfg], us);
        if (cfg >= S_GX_SEQ)
            s_vec_push(&k->compute[cfg], compute);
    }
    return true;
}

/* Build the model (weights from seed: models built by the same function get
 * the same weights), its input (from input_seed), ORT's sessions and gexec's
 * loaded graph. */
static void s_case_setup(const s_ctx *x, s_case *k, const s_model *m, const s_file *file,
                         uint64_t seed, uint64_t input_seed)
{
    memset(k, 0, sizeof *k);
    k->m = m;
    k->file = file;
    if (file) {
        k->bytes = malloc(file->len);
        if (!k->bytes)
            gxb_die(S_PROG, m->name, "out of memory");
        memcpy(k->bytes, file->bytes, file->len);
        k->len = file->len;
    } else {
        s_mb b;
        s_mb_init(&b, m->name, seed);
        s_graph_input(&b, "x", m->ndim, m->x);
        /* the output gets a fixed name: an Identity would be a node more, so
         * the builder's last node is renamed instead */
        const char *y = m->build(&b, m);
        Onnx__NodeProto *last = b.graph.node[b.graph.n_node - 1];
        if (strcmp(last->output[0], y) != 0)
            gxb_die(S_PROG, m->name, "the output is not the last node's");
        last->output[0] = s_str(&b, "y");
        s_graph_output(&b, "y");
        k->nodes = b.graph.n_node;
        k->weight_bytes = b.weight_bytes;
        k->bytes = s_mb_pack(&b, &k->len);
        s_mb_fini(&b);
    }
    if (x->o.save && !file) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.onnx", x->o.save, m->name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(k->bytes, 1, k->len, f) != k->len || fclose(f) != 0)
            gxb_die(S_PROG, path, "cannot write the model");
    }

    k->x = gx_tensor_new(GX_F32, m->ndim, m->x);
    if (!k->x)
        gxb_die(S_PROG, m->name, "cannot allocate the input");
    float *px = gx_tensor_data(k->x);
    uint64_t rng = input_seed;
    for (int64_t i = 0; i < gx_tensor_numel(k->x); i++)
        px[i] = s_uniform(&rng, -1.0f, 1.0f);

    if (x->ort.api) {
        const s_ort_api *a = x->ort.api;
        bool ok = true;
        for (int t = 0; t < 2 && ok; t++)
            ok = (k->sess[t] = s_ort_session(&x->ort, k->bytes, k->len, t + 1, k->ort_err,
                                             sizeof k->ort_err)) != NULL;
        if (ok && s_ort_failed(&x->ort,
                               a->CreateTensorWithDataAsOrtValue(
                                   x->ort.mem, px, gx_tensor_nbytes(k->x), m->x,
                                   (size_t)m->ndim, S_ONNX_TENSOR_ELEMENT_FLOAT, &k->ort_x),
                               k->ort_err, sizeof k->ort_err))
            ok = false;
        k->ok[S_ORT1] = k->ok[S_ORT2] = ok;
    }

    gx_graph *g = NULL;
    gx_graph_id id;
    char err[900];
    int rc = gx_graph_parse_onnx(k->bytes, k->len, NULL, &g, err, sizeof err);
    if (rc < 0) {
        s_gx_error(k->gx_err, sizeof k->gx_err, "ONNX import: ", rc, err);
    } else if ((rc = gx_client_load(x->c, g, &id)) < 0) {
        s_gx_error(k->gx_err, sizeof k->gx_err, "LOAD: ", rc, gx_client_last_error(x->c));
    } else {
        for (int i = 0; i < 2; i++) {
            k->rq[i] = gx_request_new();
            gx_request_set_graph_id(k->rq[i], &id);
            gx_request_add_input(k->rq[i], file ? file->in_name : "x", k->x);
            gx_request_set_mode(k->rq[i], i == 0 ? GX_MODE_SEQ : GX_MODE_AUTO);
        }
        k->ok[S_GX_SEQ] = k->ok[S_GX_AUTO] = true;
    }
    gx_graph_destroy(&g);
}

static void s_case_teardown(const s_ctx *x, s_case *k)
{
    if (x->ort.api) {
        for (int t = 0; t < 2; t++)
            x->ort.api->ReleaseSession(k->sess[t]);
        x->ort.api->ReleaseValue(k->ort_x);
    }
    for (int i = 0; i < 2; i++)
        gx_request_destroy(&k->rq[i]);
    for (int i = 0; i < S_NCFG; i++) {
        free(k->wall[i].v);
        free(k->compute[i].v);
        free(k->out[i].v);
    }
    gx_tensor_destroy(&k->x);
    free(k->bytes);
}

/* Warm up every configuration (keeping the last output for the check), then
 * time them round-robin: `rounds` rounds, each giving every configuration
 * its share of runs and seconds, the order rotating from round to round so
 * that drift and other load hit all alike. Each configuration starts after
 * a pause longer than either runtime keeps its idle threads spinning
 * (gexecd's scheduler.spin_us, ORT's intra-op spinning), so neither
 * measures the other's spinning threads. */
static void s_case_measure(const s_ctx *x, s_case *k)
{
    for (int cfg = 0; cfg < S_NCFG; cfg++)
        for (int i = 0; i < x->o.warmup && k->ok[cfg]; i++)
            s_run(x, k, cfg, i == x->o.warmup - 1, false);
    int rounds = x->o.rounds;
    int per_round = (x->o.max_runs + rounds - 1) / rounds;
    double budget = x->o.seconds * 1e6 / rounds;
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < S_NCFG; j++) {
            int cfg = (j + r) % S_NCFG;
            struct timespec quiet = {0, 20 * 1000 * 1000};
            nanosleep(&quiet, NULL);
            double end = gxb_now_us() + budget;
            for (int i = 0; i < per_round && k->ok[cfg]; i++) {
                if (!s_run(x, k, cfg, false, true) || (i >= 1 && gxb_now_us() >= end))
                    break;
            }
        }
}

/* gexec's output against the reference: the largest absolute difference and
 * that difference relative to the reference's largest magnitude. False when
 * the shapes differ (or a value is not finite). */
static bool s_compare(const s_out *g, const s_out *ref, double *abs_err, double *rel_err)
{
    *abs_err = *rel_err = INFINITY;
    if (!g->v || g->n != ref->n || g->ndim != ref->ndim ||
        memcmp(g->dims, ref->dims, (size_t)g->ndim * sizeof g->dims[0]) != 0)
        return false;
    double amax = 0, rmax = 0;
    for (int64_t i = 0; i < g->n; i++) {
        double d = fabs((double)g->v[i] - (double)ref->v[i]);
        if (!(d <= amax)) /* also NaN */
            amax = isnan(d) ? INFINITY : d;
        double r = fabs((double)ref->v[i]);
        if (r > rmax)
            rmax = r;
    }
    *abs_err = amax;
    *rel_err = rmax > 0 ? amax / rmax : amax;
    return isfinite(amax);
}

/* A relative error (to the output's scale) above this is a MISMATCH. */
#define S_REL_TOL 1e-3

static void s_fmt_us(char *buf, size_t len, double us)
{
    if (isnan(us))
        snprintf(buf, len, "-");
    else if (us >= 100000)
        snprintf(buf, len, "%.0f", us);
    else
        snprintf(buf, len, "%.1f", us);
}

static void s_fmt_ratio(char *buf, size_t len, double a, double b)
{
    if (isnan(a) || isnan(b) || b <= 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f", a / b);
}

static void s_print_header(void)
{
    printf("%-12s %9s %9s %9s %9s %-14s %9s %7s %8s %8s %8s %s\n", "# model", "ORT_1thr",
           "ORT_2thr", "gx_seq", "gx_auto", "auto_ran", "gx_e2e", "seq/ORT", "auto/ORT",
           "max_abs", "max_rel", "check");
}

static void s_case_print(const s_ctx *x, s_case *k)
{
    double ort[2], seq, aut, e2e;
    for (int t = 0; t < 2; t++)
        ort[t] = s_median(&k->wall[S_ORT1 + t]);
    seq = s_median(&k->compute[S_GX_SEQ]);
    aut = s_median(&k->compute[S_GX_AUTO]);
    e2e = s_median(&k->wall[S_GX_AUTO]);
    double best = isnan(ort[0]) ? ort[1] : isnan(ort[1]) ? ort[0] : fmin(ort[0], ort[1]);

    /* the check: each gexec mode's output against ORT's (1 thread, else 2) */
    const s_out *ref = k->out[S_ORT1].v ? &k->out[S_ORT1] : k->out[S_ORT2].v ? &k->out[S_ORT2]
                                                                           : NULL;
    char abs_s[16] = "-", rel_s[16] = "-", check[96] = "-";
    if (ref && (k->out[S_GX_SEQ].v || k->out[S_GX_AUTO].v)) {
        double worst_abs = 0, worst_rel = 0;
        const char *bad = NULL;
        bool quantum = false; /* some differ by one quantization step */
        for (int cfg = S_GX_SEQ; cfg <= S_GX_AUTO; cfg++) {
            if (!k->out[cfg].v)
                continue;
            double ae, re;
            bool same_shape = s_compare(&k->out[cfg], ref, &ae, &re);
            bool step = same_shape && re > S_REL_TOL && ae <= k->m->quantum * 1.001;
            quantum = quantum || step;
            if (!same_shape || (re > S_REL_TOL && !step))
                bad = bad ? bad : cfg == S_GX_SEQ ? "seq" : "auto";
            worst_abs = fmax(worst_abs, ae);
            worst_rel = fmax(worst_rel, re);
        }
        snprintf(abs_s, sizeof abs_s, "%.1e", worst_abs);
        snprintf(rel_s, sizeof rel_s, "%.1e", worst_rel);
        if (bad)
            snprintf(check, sizeof check, "MISMATCH (%s)", bad);
        else
            snprintf(check, sizeof check, quantum ? "ok (1 quantum)" : "ok");
    }
    char c[8][32], ran[48];
    s_fmt_us(c[0], sizeof c[0], ort[0]);
    s_fmt_us(c[1], sizeof c[1], ort[1]);
    s_fmt_us(c[2], sizeof c[2], seq);
    s_fmt_us(c[3], sizeof c[3], aut);
    s_fmt_us(c[4], sizeof c[4], e2e);
    s_fmt_ratio(c[5], sizeof c[5], seq, best);
    s_fmt_ratio(c[6], sizeof c[6], aut, best);
    s_tally_top(&k->auto_ran, ran, sizeof ran);
    printf("%-12s %9s %9s %9s %9s %-14s %9s %7s %8s %8s %8s %s\n", k->m->name, c[0], c[1], c[2],
           c[3], ran, c[4], c[5], c[6], abs_s, rel_s, check);
    /* why a column is empty */
    if (x->ort.api && k->ort_err[0])
        printf("#   %s: ORT refused the model: %s\n", k->m->name, k->ort_err);
    if (k->gx_err[0])
        printf("#   %s: gexec refused the model: %s\n", k->m->name, k->gx_err);
    for (int cfg = 0; cfg < S_NCFG; cfg++)
        if (k->run_err[cfg][0])
            printf("#   %s: %s: %s\n", k->m->name, s_cfg_name[cfg], k->run_err[cfg]);
    fflush(stdout);
}

/* ==== main ================================================================ */

/* Whether name is listed in --only (names or prefixes, comma-separated). */
static bool s_selected(const char *only, const char *name)
{
    if (!only)
        return true;
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        if (n && strncmp(name, p, n) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: bench_ort [--quick] [--only NAMES] [--ort PATH] [--socket EP] [--seconds S]\n"
            "                 [--runs N] [--no-fetch] [--save DIR] [--list] [FILE.onnx...]\n"
            "  --quick        short runs (0.25 s and at most 40 runs per model and\n"
            "                 configuration)\n"
            "  --only NAMES   models whose names start with one of NAMES (comma-separated)\n"
            "  --ort PATH     libonnxruntime.so.1 (default: $GEXEC_ORT_LIB, else where\n"
            "                 bench/ort.sh installs it, running bench/ort.sh if needed)\n"
            "  --socket EP    measure the gexecd at EP (default: start one on a temporary\n"
            "                 ipc socket: $GEXECD or ../daemon/gexecd next to this program)\n"
            "  --no-fetch     do not run bench/ort.sh when ONNX Runtime is not found\n"
            "  --save DIR     also write each model to DIR/<name>.onnx\n"
            "  --seconds S    timed seconds per model and configuration (1.5)\n"
            "  --runs N       at most N timed runs per model and configuration (2000)\n"
            "  --list         print the models and exit\n"
            "  FILE.onnx...   these models instead of the built-in ones: each with one\n"
            "                 float32 input (a dimension without a fixed size taken as 1);\n"
            "                 the first output is compared\n");
}

static bool s_parse(int argc, char **argv, s_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o->seconds = 0.25;
            o->max_runs = 40;
            o->warmup = 2;
            o->rounds = 2;
            continue;
        }
        if (strcmp(a, "--no-fetch") == 0) {
            o->no_fetch = true;
            continue;
        }
        if (strcmp(a, "--list") == 0) {
            for (size_t m = 0; m < S_N_MODELS; m++)
                printf("%-12s %s\n", s_models[m].name, s_models[m].what);
            exit(0);
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            s_usage(stdout);
            exit(0);
        }
        if (a[0] != '-') {
            o->files = argv + i;
            o->n_files = argc - i;
            return true; /* files come last */
        }
        if (!v)
            return false;
        i++;
        if (strcmp(a, "--socket") == 0)
            o->socket = v;
        else if (strcmp(a, "--ort") == 0)
            o->ort = v;
        else if (strcmp(a, "--only") == 0)
            o->only = v;
        else if (strcmp(a, "--save") == 0)
            o->save = v;
        else if (strcmp(a, "--seconds") == 0 && (o->seconds = atof(v)) > 0)
            ;
        else if (strcmp(a, "--runs") == 0 && (o->max_runs = atoi(v)) > 0)
            ;
        else
            return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    s_ctx x = {.o = {.seconds = 1.5, .max_runs = 2000, .warmup = 3, .rounds = 8}};
    if (!s_parse(argc, argv, &x.o)) {
        s_usage(stderr);
        return 2;
    }
    /* the built-in models, or the files given */
    size_t n_models = x.o.n_files > 0 ? (size_t)x.o.n_files : S_N_MODELS;
    s_file *files = x.o.n_files > 0 ? calloc(n_models, sizeof *files) : NULL;
    s_model *models = calloc(n_models, sizeof *models);
    if (!models || (x.o.n_files > 0 && !files))
        gxb_die(S_PROG, "models", "out of memory");
    for (size_t m = 0; m < n_models; m++) {
        if (files)
            s_model_file(x.o.files[m], &files[m]);
        models[m] = files ? files[m].m : s_models[m];
    }
    bool any = false;
    for (size_t m = 0; m < n_models; m++)
        any |= s_selected(x.o.only, models[m].name);
    if (!any) {
        fprintf(stderr, "bench_ort: --only %s matches no model (see --list)\n", x.o.only);
        return 2;
    }
    double t_start = gxb_now_us();

    s_ort_open(&x.ort, x.o.ort, x.o.no_fetch);

    gxb_daemon d = {0};
    const char *endpoint = x.o.socket;
    if (!endpoint) {
        gxb_daemon_start(&d, S_PROG, NULL);
        endpoint = d.endpoint;
    }
    char err[256];
    x.c = gx_client_new(endpoint, err, sizeof err);
    if (!x.c)
        gxb_die(S_PROG, endpoint, err);
    gxb_stats st;
    int rc = gxb_stats_read(x.c, &st);
    if (rc < 0)
        gxb_die(S_PROG, "STATS", gx_client_last_error(x.c));
    printf("# gexecd %s at %s (%s), %s workers; %s\n", st.version, endpoint,
           x.o.socket ? "given" : "started here", st.workers, st.topology);
    if (x.ort.api)
        printf("# ONNX Runtime %s from %s: CPU provider, all graph optimizations, 1 and 2 "
               "intra-op threads\n", x.ort.version, x.ort.path);
    else
        printf("# ONNX Runtime NOT LOADED: %s%s%s; its columns stay empty\n", x.ort.why,
               x.ort.path[0] && !strstr(x.ort.why, x.ort.path) ? ": " : "",
               x.ort.path[0] && !strstr(x.ort.why, x.ort.path) ? x.ort.path : "");
    printf("# medians in us; per model and configuration %d warm-up runs, then %.2f s or %d "
           "runs in %d rounds\n", x.o.warmup, x.o.seconds, x.o.max_runs, x.o.rounds);
    printf("# ORT_*: Run(); gx_seq, gx_auto: the daemon's compute_us in mode seq and auto "
           "(auto_ran: mode/workers auto chose); gx_e2e: auto's client round trip (libgexec's "
           "shared-memory ring for inputs up to 256 KiB on a local daemon; GEXEC_RING=0: the "
           "socket);\n"
           "# seq/ORT, auto/ORT: gexec compute_us over the faster ORT (< 1: gexec faster); "
           "max_abs, max_rel: gexec vs ORT output (rel to max |ORT|; > %.0e: MISMATCH, but "
           "one quantization step of a quantized output: ok (1 quantum))\n",
           S_REL_TOL);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni") && !__builtin_cpu_supports("avxvnni"))
        printf("# this CPU has no VNNI: ONNX Runtime multiplies uint8 by int8 with vpmaddubsw, "
               "whose int16 pair sums saturate, so its QLinearConv and MatMulInteger outputs "
               "differ from the exact ones (its quantizer's reduce_range avoids this): a "
               "MISMATCH on a model with such products is then ONNX Runtime's (gexec's "
               "integer products are exact on every ISA)\n");
#endif
    for (size_t m = 0; m < n_models; m++)
        if (s_selected(x.o.only, models[m].name))
            printf("#   %-12s %s\n", models[m].name, models[m].what);
    s_print_header();
    fflush(stdout);

    for (size_t m = 0; m < n_models; m++) {
        if (!s_selected(x.o.only, models[m].name))
            continue;
        s_case k;
        s_case_setup(&x, &k, &models[m], files ? &files[m] : NULL, 0x6e78, 0x5eed + m);
        s_case_measure(&x, &k);
        s_case_print(&x, &k);
        s_case_teardown(&x, &k);
    }
    printf("# %.0f s in all\n", (gxb_now_us() - t_start) * 1e-6);

    gx_client_destroy(&x.c);
    if (!x.o.socket)
        gxb_daemon_stop(&d);
    s_ort_close(&x.ort);
    for (int i = 0; i < x.o.n_files; i++)
        free(files[i].bytes);
    free(files);
    free(models);
    return 0;
}
