/*
 * The CUDA backend's table (ops/backend.h) and its device: one GPU, its
 * primary context (one per process), arenas from cudaMalloc (never managed
 * memory) within a fraction of its memory, copies and kernels on a stream
 * per worker, generated kernels compiled with NVRTC and cached by source
 * hash. Until open finds the GPU the table is not usable, and the daemon
 * serves on the CPU.
 */
#include <config.h>

#include <dlfcn.h>
#include <stddef.h>
#include <nvrtc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/internal.h"

#define S_JIT_MAX 1024 /* fused groups add one kernel per distinct program */

static struct {
    int device;
    double fraction;
    bool tf32;           /* cuBLAS and cuDNN may use TF32 */
    bool ready;
    char why[400];       /* why it is not ready */
    int major, minor;    /* compute capability, for NVRTC */
    size_t total;        /* device memory */
    size_t limit;        /* arenas may take this much */
    atomic_size_t used;  /* bytes of live arenas */
    pthread_mutex_t mu;  /* the JIT cache and the fallback queue */
    struct {
        uint64_t hash;
        char name[32];
        cudaLibrary_t lib;
        cudaKernel_t fn;
    } jit[S_JIT_MAX];
    size_t n_jit;
    gx_cuda_queue fallback;
    bool fallback_made;
} s_dev = {.fraction = 0.9, .why = "no CUDA device: not opened", .mu = PTHREAD_MUTEX_INITIALIZER};

int gx_cuda_configure(int device, double mem_fraction, bool tf32)
{
    if (device < 0 || !(mem_fraction > 0 && mem_fraction <= 1))
        return GX_EINVAL;
    s_dev.device = device;
    s_dev.fraction = mem_fraction;
    s_dev.tf32 = tf32;
    return GX_OK;
}

bool gx_cuda_tf32(void)
{
    return s_dev.tf32;
}

gx_cublas_api gx_cublas;

int gx_cuda_blas_load(char *why, size_t len)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static bool loaded;
    static const struct {
        const char *sym;
        size_t off;
    } syms[] = {
        {"cublasCreate_v2", offsetof(gx_cublas_api, create)},
        {"cublasDestroy_v2", offsetof(gx_cublas_api, destroy)},
        {"cublasSetStream_v2", offsetof(gx_cublas_api, set_stream)},
        {"cublasSetMathMode", offsetof(gx_cublas_api, set_math_mode)},
        {"cublasSgemm_v2", offsetof(gx_cublas_api, sgemm)},
        {"cublasSgemmStridedBatched", offsetof(gx_cublas_api, sgemm_strided_batched)},
        {"cublasGemmEx", offsetof(gx_cublas_api, gemm_ex)},
        {"cublasGemmStridedBatchedEx", offsetof(gx_cublas_api, gemm_strided_batched_ex)},
        {"cublasGetStatusString", offsetof(gx_cublas_api, status_string)},
    };
    int rc = GX_OK;
    pthread_mutex_lock(&mu);
    if (loaded)
        goto out;
    /* the toolkit's copy configure found, else the loader's search
     * (LD_LIBRARY_PATH: a build run on another machine) */
    void *lib = dlopen(GX_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen(GX_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        rc = gx_errf(why, len, GX_EUNSUPPORTED, "cuBLAS (%s) cannot be loaded: %s",
                     GX_CUBLAS_SONAME, dlerror());
        goto out;
    }
    gx_cublas_api api;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *fn = dlsym(lib, syms[i].sym);
        if (!fn) {
            rc = gx_errf(why, len, GX_EUNSUPPORTED, "cuBLAS (%s) has no %s", GX_CUBLAS_SONAME,
                         syms[i].sym);
            dlclose(lib);
            goto out;
        }
        memcpy((char *)&api + syms[i].off, &fn, sizeof fn);
    }
    gx_cublas = api;
    loaded = true;
out:
    pthread_mutex_unlock(&mu);
    return rc;
}

/* A cuBLAS handle on stream (its math mode is set per product: s_gemm). */
static bool s_blas_new(cublasHandle_t *h, cudaStream_t stream)
{
    if (gx_cublas.create(h) != CUBLAS_STATUS_SUCCESS)
        return false;
    gx_cublas.set_stream(*h, stream);
    return true;
}

void gx_cuda_fail(gx_cuda_queue *q, const char *fmt, ...)
{
    if (q->err < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->msg, sizeof q->msg, fmt, ap);
    va_end(ap);
    q->err = GX_EINTERNAL;
}

int gx_cuda_bind(void)
{
    cudaSetDevice(s_dev.device);
    return s_dev.device;
}

gx_cuda_queue *gx_cuda_queue_of(const gx_kargs *k)
{
    gx_cuda_bind();
    if (k->queue) {
        gx_cuda_queue *q = k->queue;
        pthread_mutex_lock(&q->mu);
        return q;
    }
    pthread_mutex_lock(&s_dev.mu);
    if (!s_dev.fallback_made) {
        s_dev.fallback.stream = cudaStreamLegacy;
        s_blas_new(&s_dev.fallback.blas, cudaStreamLegacy);
        s_dev.fallback_made = true;
    }
    return &s_dev.fallback; /* held until gx_cuda_done */
}

void gx_cuda_done(const gx_kargs *k, gx_cuda_queue *q)
{
    if (k->queue) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    cudaError_t e = cudaStreamSynchronize(q->stream);
    if (e != cudaSuccess)
        fprintf(stderr, "gexec cuda: a kernel without a queue failed: %s\n", cudaGetErrorString(e));
    if (q->err < 0)
        fprintf(stderr, "gexec cuda: a kernel without a queue failed: %s\n", q->msg);
    q->err = GX_OK;
    pthread_mutex_unlock(&s_dev.mu);
}

/* FNV-1a */
static uint64_t s_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Compiles src to a cubin for this GPU; the image (malloc'd) or NULL with
 * the reason on q. */
static char *s_nvrtc(gx_cuda_queue *q, const char *src, const char *name)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        gx_cuda_fail(q, "NVRTC: %s", nvrtcGetErrorString(r));
        return NULL;
    }
    char arch[48];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", s_dev.major, s_dev.minor);
    const char *opts[] = {arch, "--std=c++17"};
    char *img = NULL;
    r = nvrtcCompileProgram(prog, 2, opts);
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        char log[160] = "";
        if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
            char *full = malloc(n);
            if (full && nvrtcGetProgramLog(prog, full) == NVRTC_SUCCESS)
                snprintf(log, sizeof log, "%s", full);
            free(full);
        }
        gx_cuda_fail(q, "NVRTC cannot compile %s for %s: %s %s", name, arch,
                     nvrtcGetErrorString(r), log);
        goto out;
    }
    size_t n = 0;
    if ((r = nvrtcGetCUBINSize(prog, &n)) != NVRTC_SUCCESS || !(img = malloc(n)) ||
        (r = nvrtcGetCUBIN(prog, img)) != NVRTC_SUCCESS) {
        gx_cuda_fail(q, "NVRTC: no cubin for %s: %s", name, nvrtcGetErrorString(r));
        free(img);
        img = NULL;
    }
out:
    nvrtcDestroyProgram(&prog);
    return img;
}

const void *gx_cuda_jit(gx_cuda_queue *q, const char *src, const char *name)
{
    const uint64_t h = s_hash(src);
    static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&jit_mu);
    const void *fn = NULL;
    for (size_t i = 0; i < s_dev.n_jit && !fn; i++)
        if (s_dev.jit[i].hash == h && strcmp(s_dev.jit[i].name, name) == 0)
            fn = (const void *)s_dev.jit[i].fn;
    if (!fn && s_dev.n_jit == S_JIT_MAX)
        gx_cuda_fail(q, "NVRTC: the cache of %d kernels is full", S_JIT_MAX);
    else if (!fn) {
        char *img = s_nvrtc(q, src, name);
        cudaLibrary_t lib;
        cudaKernel_t k;
        cudaError_t e;
        if (img && (e = cudaLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0)) != cudaSuccess)
            gx_cuda_fail(q, "loading %s: %s", name, cudaGetErrorString(e));
        else if (img && (e = cudaLibraryGetKernel(&k, lib, name)) != cudaSuccess)
            gx_cuda_fail(q, "kernel %s: %s", name, cudaGetErrorString(e));
        else if (img) {
            s_dev.jit[s_dev.n_jit].hash = h;
            snprintf(s_dev.jit[s_dev.n_jit].name, sizeof s_dev.jit[0].name, "%s", name);
            s_dev.jit[s_dev.n_jit].lib = lib;
            s_dev.jit[s_dev.n_jit++].fn = k;
            fn = (const void *)k;
        }
        free(img);
    }
    pthread_mutex_unlock(&jit_mu);
    return fn;
}

size_t gx_cuda_jit_count(void)
{
    return s_dev.n_jit; /* read without the lock: a count for tests and logs */
}

unsigned gx_cuda_grid(int64_t n)
{
    int64_t g = (n + 255) / 256;
    return (unsigned)(g < 1 ? 1 : g > 65535 * 8 ? 65535 * 8 : g);
}

void gx_cuda_launch(gx_cuda_queue *q, const void *fn, unsigned grid, unsigned block, void **args)
{
    if (!fn)
        return;
    cudaError_t e = cudaLaunchKernel(fn, (dim3){grid, 1, 1}, (dim3){block, 1, 1}, args, 0,
                                     q->stream);
    if (e != cudaSuccess)
        gx_cuda_fail(q, "kernel launch: %s", cudaGetErrorString(e));
}

/* ---- the table's slots ------------------------------------------------- */

static int s_open(const gx_backend *b, char *note, size_t len)
{
    (void)b;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(s_dev.why, sizeof s_dev.why, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return gx_errf(note, len, GX_EUNSUPPORTED, "%s; serving on CPU", s_dev.why);
    }
    if (s_dev.device >= n) {
        snprintf(s_dev.why, sizeof s_dev.why, "no CUDA device %d (%d present)", s_dev.device, n);
        return gx_errf(note, len, GX_EUNSUPPORTED, "%s; serving on CPU", s_dev.why);
    }
    struct cudaDeviceProp prop;
    size_t avail = 0, total = 0;
    if ((e = cudaSetDevice(s_dev.device)) != cudaSuccess || (e = cudaFree(NULL)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, s_dev.device)) != cudaSuccess ||
        (e = cudaMemGetInfo(&avail, &total)) != cudaSuccess) {
        snprintf(s_dev.why, sizeof s_dev.why, "CUDA device %d: %s", s_dev.device,
                 cudaGetErrorString(e));
        return gx_errf(note, len, GX_EUNSUPPORTED, "%s; serving on CPU", s_dev.why);
    }
    s_dev.major = prop.major;
    s_dev.minor = prop.minor;
    s_dev.total = total;
    s_dev.limit = (size_t)((double)total * s_dev.fraction);
    char why[240];
    if (gx_cuda_blas_load(why, sizeof why) < 0) {
        snprintf(s_dev.why, sizeof s_dev.why, "CUDA device %d (%.64s): %s", s_dev.device,
                 prop.name, why);
        return gx_errf(note, len, GX_EUNSUPPORTED, "%s; serving on CPU", s_dev.why);
    }
    if (gx_cuda_selfcheck(why, sizeof why) < 0) {
        snprintf(s_dev.why, sizeof s_dev.why, "CUDA device %d (%.64s): self-check failed: %s",
                 s_dev.device, prop.name, why);
        return gx_errf(note, len, GX_EINTERNAL, "%s; serving on CPU", s_dev.why);
    }
#ifdef HAVE_CUDNN
    /* the rules claim Conv, pools and BatchNormalization: cuDNN must load */
    cudnnHandle_t dnn;
    cudnnStatus_t ds = cudnnCreate(&dnn);
    if (ds != CUDNN_STATUS_SUCCESS) {
        snprintf(s_dev.why, sizeof s_dev.why, "CUDA device %d (%.64s): cuDNN %zu: %s",
                 s_dev.device, prop.name, cudnnGetVersion(), cudnnGetErrorString(ds));
        return gx_errf(note, len, GX_EINTERNAL, "%s; serving on CPU", s_dev.why);
    }
    cudnnDestroy(dnn);
#endif
    s_dev.ready = true;
    snprintf(note, len,
             "GPU %d: %.64s, sm_%d%d, %zu MiB (%zu free; arenas up to %zu MiB); cuBLAS and NVRTC "
             "kernels checked%s; %s",
             s_dev.device, prop.name, prop.major, prop.minor, total >> 20, avail >> 20,
             s_dev.limit >> 20,
#ifdef HAVE_CUDNN
             "; cuDNN ready",
#else
             "; no cuDNN (Conv, pools, BatchNormalization stay on the CPU)",
#endif
             s_dev.tf32 ? "float32 MatMul, Gemm and Conv may use TF32 (gpu_tf32); float16 kept"
                        : "float32 in full precision; float16 kept");
    return GX_OK;
}

static bool s_usable(const gx_backend *b, char *why, size_t len)
{
    (void)b;
    if (!s_dev.ready)
        snprintf(why, len, "%s", s_dev.why);
    return s_dev.ready;
}

/* Live arenas and their sizes, for the memory bound. */
static pthread_mutex_t s_arena_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *p;
    size_t bytes;
} *s_arena;
static size_t s_n_arena, s_cap_arena;

static void *s_alloc(const gx_backend *b, size_t bytes)
{
    (void)b;
    gx_cuda_bind();
    if (!bytes)
        bytes = 1;
    void *p = NULL;
    pthread_mutex_lock(&s_arena_mu);
    const size_t used = atomic_load(&s_dev.used);
    if ((s_dev.limit && used + bytes > s_dev.limit) ||
        !gx_grow(&s_arena, &s_cap_arena, s_n_arena + 1, sizeof *s_arena) ||
        cudaMalloc(&p, bytes) != cudaSuccess) {
        pthread_mutex_unlock(&s_arena_mu);
        return NULL;
    }
    s_arena[s_n_arena].p = p;
    s_arena[s_n_arena++].bytes = bytes;
    atomic_fetch_add(&s_dev.used, bytes);
    pthread_mutex_unlock(&s_arena_mu);
    return p;
}

static void s_free(const gx_backend *b, void *p)
{
    (void)b;
    if (!p)
        return;
    gx_cuda_bind();
    pthread_mutex_lock(&s_arena_mu);
    for (size_t i = 0; i < s_n_arena; i++)
        if (s_arena[i].p == p) {
            atomic_fetch_sub(&s_dev.used, s_arena[i].bytes);
            s_arena[i] = s_arena[--s_n_arena];
            break;
        }
    pthread_mutex_unlock(&s_arena_mu);
    cudaFree(p);
}

static size_t s_capacity(const gx_backend *b)
{
    (void)b;
    gx_cuda_bind();
    size_t avail = 0, total = 0;
    if (cudaMemGetInfo(&avail, &total) != cudaSuccess)
        return 0;
    size_t used = atomic_load(&s_dev.used);
    size_t room = s_dev.limit > used ? s_dev.limit - used : 0;
    return room < avail ? room : avail;
}

static size_t s_in_use(const gx_backend *b)
{
    (void)b;
    return atomic_load(&s_dev.used);
}

/* Host memory page-locked for copies at the bus's speed (a pageable
 * buffer goes through the driver's staging, at a fraction of it). */
static int s_pin(const gx_backend *b, void *p, size_t bytes)
{
    (void)b;
    gx_cuda_bind();
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
        cudaGetLastError();
        return GX_ENOMEM;
    }
    return GX_OK;
}

static void s_unpin(const gx_backend *b, void *p)
{
    (void)b;
    gx_cuda_bind();
    if (cudaHostUnregister(p) != cudaSuccess)
        cudaGetLastError();
}

/* Reports and clears q's error. */
static int s_report(gx_cuda_queue *q)
{
    int rc = q->err;
    if (rc < 0) {
        fprintf(stderr, "gexec cuda: %s\n", q->msg);
        q->err = GX_OK;
    }
    return rc;
}

static int s_copy_on(gx_cuda_queue *q, gx_copy_kind kind, void *dst, const void *src, size_t n)
{
    if (q && q->err < 0)
        return s_report(q);
    if (!n)
        return GX_OK;
    const enum cudaMemcpyKind k = kind == GX_COPY_TO_DEVICE ? cudaMemcpyHostToDevice
                                  : kind == GX_COPY_TO_HOST ? cudaMemcpyDeviceToHost
                                                            : cudaMemcpyDeviceToDevice;
    cudaError_t e;
    if (!q)
        e = cudaMemcpy(dst, src, n, k);
    else if ((e = cudaMemcpyAsync(dst, src, n, k, q->stream)) == cudaSuccess &&
             kind != GX_COPY_ON_DEVICE) /* src read (to the device), dst written (to the host) */
        e = cudaStreamSynchronize(q->stream);
    if (e != cudaSuccess) {
        fprintf(stderr, "gexec cuda: copy of %zu bytes: %s\n", n, cudaGetErrorString(e));
        return GX_EINTERNAL;
    }
    return q ? s_report(q) : GX_OK;
}

static int s_copy(const gx_backend *b, gx_copy_kind kind, void *dst, const void *src, size_t n,
                  void *queue)
{
    (void)b;
    gx_cuda_bind();
    gx_cuda_queue *q = queue;
    if (q)
        pthread_mutex_lock(&q->mu);
    int rc = s_copy_on(q, kind, dst, src, n);
    if (q)
        pthread_mutex_unlock(&q->mu);
    return rc;
}

/* Released queues are kept for the next frame (a cuBLAS handle costs
 * milliseconds and device memory to make): at most S_POOL of them. */
#define S_POOL 64
static pthread_mutex_t s_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static gx_cuda_queue *s_pool[S_POOL];
static size_t s_n_pool;

static void *s_queue_new(const gx_backend *b)
{
    (void)b;
    gx_cuda_bind();
    gx_cuda_queue *q = NULL;
    pthread_mutex_lock(&s_pool_mu);
    if (s_n_pool)
        q = s_pool[--s_n_pool];
    pthread_mutex_unlock(&s_pool_mu);
    if (q)
        return q;
    if (!(q = calloc(1, sizeof *q)))
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    if (cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking) != cudaSuccess) {
        free(q);
        return NULL;
    }
    if (!s_blas_new(&q->blas, q->stream)) {
        cudaStreamDestroy(q->stream);
        free(q);
        return NULL;
    }
    q->id = gx_cuda_serial();
    return q;
}

static void s_queue_free(const gx_backend *b, void *queue)
{
    (void)b;
    gx_cuda_queue *q = queue;
    if (!q)
        return;
    gx_cuda_bind();
    cudaStreamSynchronize(q->stream);
    q->err = GX_OK;
    pthread_mutex_lock(&s_pool_mu);
    if (s_n_pool < S_POOL) {
        s_pool[s_n_pool++] = q;
        q = NULL;
    }
    pthread_mutex_unlock(&s_pool_mu);
    if (!q)
        return;
    gx_cublas.destroy(q->blas);
#ifdef HAVE_CUDNN
    gx_cuda_dnn_fini(q);
#endif
    cudaStreamDestroy(q->stream);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

static int s_queue_sync(const gx_backend *b, void *queue)
{
    (void)b;
    gx_cuda_queue *q = queue;
    gx_cuda_bind();
    pthread_mutex_lock(&q->mu);
    cudaError_t e = cudaStreamSynchronize(q->stream);
    if (e != cudaSuccess)
        gx_cuda_fail(q, "stream: %s", cudaGetErrorString(e));
    int rc = s_report(q);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

uint64_t gx_cuda_serial(void)
{
    static atomic_uint_fast64_t next = 1;
    return atomic_fetch_add(&next, 1);
}

/* The code a step's kernel generates, compiled when the plan is made. */
static int s_ready(const gx_backend *b, gx_op op, const struct gx_fused *f, const gx_kargs *k,
                   char *why, size_t len)
{
    (void)b;
    gx_cuda_bind();
    gx_cuda_queue q = {.err = GX_OK}; /* collects the error; nothing runs on it */
    if (f)
        gx_cuda_fused_ready(&q, f, k);
    else
        gx_cuda_kernel_ready(&q, op, k);
    return q.err < 0 ? gx_errf(why, len, q.err, "%s", q.msg) : GX_OK;
}

/* ---- device time: CUDA events ------------------------------------------
 * Events are kept for reuse (making one costs about as much as a small
 * kernel's launch): at most S_EVENTS wait in the pool. */
#define S_EVENTS 256
static pthread_mutex_t s_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static cudaEvent_t s_ev[S_EVENTS];
static size_t s_n_ev;

static void s_event_put(cudaEvent_t e)
{
    pthread_mutex_lock(&s_ev_mu);
    if (s_n_ev < S_EVENTS) {
        s_ev[s_n_ev++] = e;
        e = NULL;
    }
    pthread_mutex_unlock(&s_ev_mu);
    if (e)
        cudaEventDestroy(e);
}

static void *s_mark(const gx_backend *b, void *queue)
{
    (void)b;
    gx_cuda_queue *q = queue;
    gx_cuda_bind();
    cudaEvent_t e = NULL;
    pthread_mutex_lock(&s_ev_mu);
    if (s_n_ev)
        e = s_ev[--s_n_ev];
    pthread_mutex_unlock(&s_ev_mu);
    if (!e && cudaEventCreate(&e) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    pthread_mutex_lock(&q->mu);
    cudaError_t r = cudaEventRecord(e, q->stream);
    pthread_mutex_unlock(&q->mu);
    if (r != cudaSuccess) {
        cudaEventDestroy(e);
        cudaGetLastError();
        return NULL;
    }
    return e;
}

static int64_t s_elapsed_ns(const gx_backend *b, void *from, void *to)
{
    (void)b;
    gx_cuda_bind();
    float ms = -1;
    if (from && to) {
        cudaError_t e = cudaEventElapsedTime(&ms, from, to);
        if (e == cudaErrorNotReady) { /* the device has not passed it yet */
            cudaGetLastError();
            if ((e = cudaEventSynchronize(to)) == cudaSuccess)
                e = cudaEventElapsedTime(&ms, from, to);
        }
        if (e != cudaSuccess) {
            ms = -1;
            cudaGetLastError();
        }
    }
    if (from)
        s_event_put(from);
    if (to)
        s_event_put(to);
    return ms < 0 ? -1 : (int64_t)((double)ms * 1e6);
}

/* ---- whole-run graphs (CUDA Graphs) ------------------------------------
 * The executor records a run of kernels on a queue by stream capture in
 * thread-local mode (another thread's cudaMalloc does not break it; one
 * on this thread, a synchronous copy or a sync does, and then the run
 * goes step by step) and replays it with cudaGraphLaunch on that queue.
 * The graph holds the arena's pointers and the queue's cuBLAS handle and
 * cuDNN workspace: it replays only on the queue it was recorded on, and
 * only while that workspace is the same. */
typedef struct s_graph {
    cudaGraphExec_t exec;
    uint64_t queue_id, ws_gen;
} s_graph;

static int s_capture_begin(const gx_backend *b, void *queue)
{
    (void)b;
    gx_cuda_queue *q = queue;
    gx_cuda_bind();
    pthread_mutex_lock(&q->mu);
    int rc = q->err < 0 ? q->err : GX_OK; /* reported by the steps one by one */
    if (rc == GX_OK && cudaStreamBeginCapture(q->stream, cudaStreamCaptureModeThreadLocal) !=
                           cudaSuccess) {
        cudaGetLastError();
        rc = GX_EINTERNAL;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

static void *s_capture_end(const gx_backend *b, void *queue)
{
    (void)b;
    gx_cuda_queue *q = queue;
    gx_cuda_bind();
    pthread_mutex_lock(&q->mu);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(q->stream, &graph);
    s_graph *g = NULL;
    if (e == cudaSuccess && graph && q->err == GX_OK && (g = calloc(1, sizeof *g)) &&
        (e = cudaGraphInstantiate(&g->exec, graph, 0)) == cudaSuccess) {
        g->queue_id = q->id;
        g->ws_gen = q->ws_gen;
    } else {
        free(g);
        g = NULL;
        fprintf(stderr, "gexec cuda: a run of kernels cannot be recorded as a graph (%s); it "
                        "runs kernel by kernel\n",
                q->err < 0 ? q->msg : e != cudaSuccess ? cudaGetErrorString(e) : "no graph");
        q->err = GX_OK; /* nothing ran: the steps run again one by one */
        cudaGetLastError();
    }
    if (graph)
        cudaGraphDestroy(graph);
    pthread_mutex_unlock(&q->mu);
    return g;
}

static int s_replay(const gx_backend *b, void *graph, void *queue)
{
    (void)b;
    s_graph *g = graph;
    gx_cuda_queue *q = queue;
    gx_cuda_bind();
    pthread_mutex_lock(&q->mu);
    int rc = GX_OK;
    if (q->id != g->queue_id || q->ws_gen != g->ws_gen) {
        rc = 1; /* another queue, or its workspace was replaced */
    } else {
        cudaError_t e = cudaGraphLaunch(g->exec, q->stream);
        if (e != cudaSuccess) {
            fprintf(stderr, "gexec cuda: launching a recorded graph: %s; its run goes kernel by "
                            "kernel\n",
                    cudaGetErrorString(e));
            cudaGetLastError();
            rc = GX_EINTERNAL;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

static void s_graph_free(const gx_backend *b, void *graph)
{
    (void)b;
    s_graph *g = graph;
    if (!g)
        return;
    gx_cuda_bind();
    cudaGraphExecDestroy(g->exec);
    free(g);
}

static const gx_backend s_cuda = {
    .name = "cuda",
    .rules = gx_cuda_rules,
    .n_rules = GX_CUDA_N_RULES,
    .open = s_open,
    .usable = s_usable,
    .kernel = gx_cuda_kernel,
    .fused = gx_cuda_fused,
    .ready = s_ready,
    .no_fused_heads = true,
    .half_kernels = true,
    .shares = false,
    /* a kernel launch, a pageable copy (and its synchronisation), and a
     * data-centre GPU's float32 and memory rates */
    .cost = {.launch_us = 5, .copy_us = 10, .copy_bytes_per_us = 10000, .flops_per_us = 2e7,
             .bytes_per_us = 1e6},
    .host_memory = false,
    .alloc = s_alloc,
    .free = s_free,
    .capacity = s_capacity,
    .in_use = s_in_use,
    .pin = s_pin,
    .unpin = s_unpin,
    .copy = s_copy,
    .queue_new = s_queue_new,
    .queue_free = s_queue_free,
    .queue_sync = s_queue_sync,
    .mark = s_mark,
    .elapsed_ns = s_elapsed_ns,
    .capture_begin = s_capture_begin,
    .capture_end = s_capture_end,
    .replay = s_replay,
    .graph_free = s_graph_free,
};

const gx_backend *gx_backend_cuda(void)
{
    return &s_cuda;
}
