/*
 * "testdev": a second device for tests (ops/backend.h), registered when a
 * program that links this file starts (tests/gexecd-testdev, the Check
 * suites). It runs the CPU's kernels, reached through the CPU's table, but
 * its memory is its own: arenas and constants come from its alloc, values
 * cross through explicit copies, and every kernel checks before it runs
 * that each tensor it reads or writes lies in memory this device gave out
 * (a step fed host memory directly aborts the process). Its memory is
 * mapped without access while none of its kernels or copies runs, so a
 * host step (or the executor) that touches it directly faults at once, as
 * it would on a GPU's memory. Counters let tests see that copies and
 * arenas ran. Not the CPU backend's code: only its kernels.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ops/backend.h"
#include "ops/cpu/cpu.h"
#include "ops/fused.h"
#include "tests/testdev.h"

#define S_MAX_BLOCKS 4096

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *p;
    size_t bytes;
} s_block[S_MAX_BLOCKS];
static size_t s_n_blocks;
static gx_testdev_stats s_stats;
static int s_inside_device; /* kernels and copies running (s_mu) */

static size_t s_mapped(size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes ? bytes + page - 1 : page) / page * page;
}

static void s_protect_all(int prot)
{
    for (size_t i = 0; i < s_n_blocks; i++)
        if (mprotect(s_block[i].p, s_mapped(s_block[i].bytes), prot) != 0) {
            perror("testdev: mprotect");
            abort();
        }
}

/* Its memory readable and writable while one of its kernels or copies runs. */
static void s_enter(void)
{
    pthread_mutex_lock(&s_mu);
    if (s_inside_device++ == 0)
        s_protect_all(PROT_READ | PROT_WRITE);
    pthread_mutex_unlock(&s_mu);
}

static void s_leave(void)
{
    pthread_mutex_lock(&s_mu);
    if (--s_inside_device == 0)
        s_protect_all(PROT_NONE);
    pthread_mutex_unlock(&s_mu);
}

static bool s_inside(const void *p, size_t bytes)
{
    bool in = false;
    pthread_mutex_lock(&s_mu);
    for (size_t i = 0; i < s_n_blocks && !in; i++)
        in = (const char *)p >= s_block[i].p &&
             (const char *)p + bytes <= s_block[i].p + s_block[i].bytes;
    pthread_mutex_unlock(&s_mu);
    return in;
}

static void s_check_view(const gx_view *v, const char *what, int i)
{
    if (v->ndim < 0 || v->numel == 0 || !v->data)
        return;
    size_t bytes = (size_t)v->numel * gx_dtype_size(v->dtype);
    if (!s_inside(v->data, bytes)) {
        fprintf(stderr, "testdev: %s %d (%zu bytes at %p) is not in testdev memory\n", what, i,
                bytes, v->data);
        abort();
    }
}

static void s_check(const gx_kargs *k)
{
    for (int i = 0; i < k->n_in; i++)
        s_check_view(&k->in[i], "input", i);
    for (int i = 0; i < k->n_out; i++)
        s_check_view(&k->out[i], "output", i);
    if (!k->queue) {
        fprintf(stderr, "testdev: a kernel ran without its queue\n");
        abort();
    }
    __atomic_add_fetch(&s_stats.kernels, 1, __ATOMIC_RELAXED);
}

/* ---- recorded graphs ----
 * A queue is a token that may be recording: its kernels are then kept
 * (the kernel, the group of a fused step, attributes and views, as a GPU
 * graph keeps a launch's arguments) rather than run, and a replay runs
 * them in order. gx_testdev_graph_mode makes recordings fail or replays
 * find the graph stale, for the executor's fallbacks. */
typedef struct s_call {
    gx_kernel_fn fn;     /* the CPU's kernel, or NULL for a fused step */
    const gx_fused *fused;
    gx_kargs k;          /* in, out: NULL (v, set when replayed) */
    gx_view v[2 * GX_MAX_OP_INPUTS];
} s_call;

typedef struct s_queue {
    bool recording;
    s_call *calls; /* while recording */
    size_t n, cap;
    bool lost;     /* out of memory while recording */
} s_queue;

typedef struct s_graph {
    s_call *calls;
    size_t n;
    const s_queue *queue;
    int launched; /* replays so far (STALE spares the first) */
} s_graph;

static int s_graph_mode; /* GX_TESTDEV_GRAPH_* */

/* Keeps the call on q if q records; false when it must run now. */
static bool s_record(const gx_kargs *k, gx_kernel_fn fn, const gx_fused *fused)
{
    s_queue *q = k->queue;
    if (!q || !q->recording)
        return false;
    for (int i = 0; i < k->n_in; i++) /* checked as they would be when run */
        s_check_view(&k->in[i], "input", i);
    for (int i = 0; i < k->n_out; i++)
        s_check_view(&k->out[i], "output", i);
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 16;
        s_call *c = realloc(q->calls, cap * sizeof *c);
        if (c) {
            q->calls = c;
            q->cap = cap;
        }
    }
    if (k->n_in + k->n_out > 2 * GX_MAX_OP_INPUTS || k->nth != 1 || q->n == q->cap) {
        q->lost = true;
        return true;
    }
    s_call *c = &q->calls[q->n++];
    c->fn = fn;
    c->fused = fused;
    c->k = *k;
    memcpy(c->v, k->in, sizeof *k->in * (size_t)k->n_in);
    memcpy(c->v + k->n_in, k->out, sizeof *k->out * (size_t)k->n_out);
    c->k.in = c->k.out = NULL; /* c->v's, set at replay: q->calls moves as it grows */
    return true;
}

/* One checking kernel per op with a CPU kernel. */
#define S_KERNEL(e, name)                                                                      \
    static void s_k_##e(const gx_kargs *k)                                                     \
    {                                                                                          \
        if (s_record(k, gx_backend_cpu()->kernel(GX_OP_##e), NULL))                            \
            return;                                                                            \
        s_check(k);                                                                            \
        s_enter();                                                                             \
        gx_backend_cpu()->kernel(GX_OP_##e)(k);                                                \
        s_leave();                                                                             \
    }
GX_KERNEL_OP_LIST(S_KERNEL)
#undef S_KERNEL

static const gx_kernel_fn s_kernels[GX_OP_COUNT] = {
#define S_ROW(e, name) [GX_OP_##e] = s_k_##e,
    GX_KERNEL_OP_LIST(S_ROW)
#undef S_ROW
};

static gx_kernel_fn s_kernel(gx_op op)
{
    return (unsigned)op < GX_OP_COUNT ? s_kernels[op] : NULL;
}

/* Stable names, "testdev.<Op>@1", so plans on testdev go to artifacts. */
static const char *s_kernel_name(gx_kernel_fn fn)
{
    static const char *const names[GX_OP_COUNT] = {
#define S_NAME(e, name) [GX_OP_##e] = "testdev." name "@1",
        GX_KERNEL_OP_LIST(S_NAME)
#undef S_NAME
    };
    for (int op = 0; fn && op < GX_OP_COUNT; op++)
        if (s_kernels[op] == fn)
            return names[op];
    return NULL;
}

static gx_kernel_fn s_kernel_by_name(const char *name)
{
    for (int op = 0; op < GX_OP_COUNT; op++)
        if (s_kernels[op] && !strcmp(s_kernel_name(s_kernels[op]), name))
            return s_kernels[op];
    return NULL;
}

/* A fused group (only while testdev claims like a backend with a fused
 * slot, GEXEC_TESTDEV_RULES=cuda): the CPU's fused kernel over testdev
 * memory, its ops on the CPU's kernels. */
static void s_fused(const gx_backend *b, const gx_fused *f, const gx_kargs *k)
{
    (void)b;
    static _Thread_local gx_fused cpu;
    if (s_record(k, NULL, f))
        return;
    s_check(k);
    cpu = *f;
    if (cpu.has_head)
        cpu.head.kernel = gx_backend_cpu()->kernel(cpu.head.op);
    for (int j = 0; j < cpu.n_ops; j++)
        cpu.op[j].kernel = gx_backend_cpu()->kernel(cpu.op[j].op);
    s_enter();
    gx_cpu_fused(&cpu, k->in, &k->out[0], k->scratch, k->ith, k->nth);
    s_leave();
}

static void *s_alloc(const gx_backend *b, size_t bytes)
{
    (void)b;
    char *p = mmap(NULL, s_mapped(bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    pthread_mutex_lock(&s_mu);
    if (s_n_blocks == S_MAX_BLOCKS) {
        munmap(p, s_mapped(bytes));
        p = NULL;
    } else if (s_inside_device && mprotect(p, s_mapped(bytes), PROT_READ | PROT_WRITE) != 0) {
        perror("testdev: mprotect");
        abort();
    }
    if (p) {
        s_block[s_n_blocks].p = p;
        s_block[s_n_blocks++].bytes = bytes;
        s_stats.allocs++;
        s_stats.live++;
    }
    pthread_mutex_unlock(&s_mu);
    return p;
}

static void s_free(const gx_backend *b, void *p)
{
    (void)b;
    if (!p)
        return;
    pthread_mutex_lock(&s_mu);
    size_t i = 0;
    while (i < s_n_blocks && s_block[i].p != p)
        i++;
    if (i == s_n_blocks) {
        fprintf(stderr, "testdev: free of %p, which it did not give out\n", p);
        abort();
    }
    munmap(p, s_mapped(s_block[i].bytes));
    s_block[i] = s_block[--s_n_blocks];
    s_stats.live--;
    pthread_mutex_unlock(&s_mu);
}

static size_t s_in_use(const gx_backend *b)
{
    (void)b;
    size_t bytes = 0;
    pthread_mutex_lock(&s_mu);
    for (size_t i = 0; i < s_n_blocks; i++)
        bytes += s_block[i].bytes;
    pthread_mutex_unlock(&s_mu);
    return bytes;
}

static int s_copy(const gx_backend *b, gx_copy_kind kind, void *dst, const void *src, size_t n,
                  void *queue)
{
    (void)b, (void)queue;
    if (!n)
        return GX_OK;
    /* the device's side must be its memory */
    if ((kind != GX_COPY_TO_HOST && !s_inside(dst, n)) ||
        (kind != GX_COPY_TO_DEVICE && !s_inside(src, n))) {
        fprintf(stderr, "testdev: copy (kind %d) of %zu bytes outside testdev memory\n",
                (int)kind, n);
        abort();
    }
    s_enter();
    memcpy(dst, src, n);
    s_leave();
    __atomic_add_fetch(kind == GX_COPY_TO_HOST ? &s_stats.to_host : &s_stats.to_device, 1,
                       __ATOMIC_RELAXED);
    return GX_OK;
}

/* A queue: nothing runs late on this device; the token proves the
 * executors hand each kernel its device's queue (and records graphs). */
static void *s_queue_new(const gx_backend *b)
{
    (void)b;
    __atomic_add_fetch(&s_stats.queues, 1, __ATOMIC_RELAXED);
    return calloc(1, sizeof(s_queue));
}

static void s_queue_free(const gx_backend *b, void *queue)
{
    (void)b;
    s_queue *q = queue;
    if (q && q->recording) {
        fprintf(stderr, "testdev: a queue freed while it records\n");
        abort();
    }
    if (q)
        free(q->calls);
    free(q);
}

static int s_capture_begin(const gx_backend *b, void *queue)
{
    (void)b;
    s_queue *q = queue;
    if (q->recording) {
        fprintf(stderr, "testdev: a recording began twice on one queue\n");
        abort();
    }
    *q = (s_queue){.recording = true};
    return GX_OK;
}

static void *s_capture_end(const gx_backend *b, void *queue)
{
    (void)b;
    s_queue *q = queue;
    if (!q->recording) {
        fprintf(stderr, "testdev: a recording ended that did not begin\n");
        abort();
    }
    s_graph *g = q->lost || __atomic_load_n(&s_graph_mode, __ATOMIC_RELAXED) ==
                                GX_TESTDEV_GRAPH_FAIL
                     ? NULL
                     : malloc(sizeof *g);
    if (g)
        *g = (s_graph){q->calls, q->n, q, 0};
    else
        free(q->calls);
    *q = (s_queue){0};
    if (g)
        __atomic_add_fetch(&s_stats.captures, 1, __ATOMIC_RELAXED);
    return g;
}

static int s_replay(const gx_backend *b, void *graph, void *queue)
{
    (void)b;
    s_graph *g = graph;
    if (g->queue != queue || (g->launched && __atomic_load_n(&s_graph_mode, __ATOMIC_RELAXED) ==
                                                 GX_TESTDEV_GRAPH_STALE))
        return 1;
    g->launched++;
    for (size_t i = 0; i < g->n; i++) {
        gx_kargs k = g->calls[i].k;
        k.in = g->calls[i].v;
        k.out = g->calls[i].v + k.n_in;
        k.queue = queue;
        if (g->calls[i].fused) {
            s_fused(NULL, g->calls[i].fused, &k);
            continue;
        }
        s_check(&k);
        s_enter();
        g->calls[i].fn(&k);
        s_leave();
    }
    __atomic_add_fetch(&s_stats.replays, 1, __ATOMIC_RELAXED);
    return GX_OK;
}

static void s_graph_free(const gx_backend *b, void *graph)
{
    (void)b;
    s_graph *g = graph;
    if (g)
        free(g->calls);
    free(g);
}

static int s_queue_sync(const gx_backend *b, void *queue)
{
    (void)b, (void)queue;
    return GX_OK;
}

/* A step readied at plan time: its views are the plan's (no data but its
 * constants', which are this device's memory). */
static int s_ready(const gx_backend *b, gx_op op, const gx_fused *f, const gx_kargs *k, char *why,
                   size_t len)
{
    (void)b, (void)op, (void)f, (void)why, (void)len;
    if (k->queue) {
        fprintf(stderr, "testdev: a step readied with a queue\n");
        abort();
    }
    for (int i = 0; i < k->n_in; i++) /* its constants: this device's copies */
        s_check_view(&k->in[i], "a readied step's input", i);
    __atomic_add_fetch(&s_stats.readied, 1, __ATOMIC_RELAXED);
    return GX_OK;
}

/* Pinned host memory: whole pages, never pinned twice, unpinned before it
 * is freed (the arena cache's part; a GPU's driver refuses the rest). */
#define S_PINS 256
static struct {
    void *p;
    size_t bytes;
} s_pinned[S_PINS];

static int s_pin(const gx_backend *b, void *p, size_t bytes)
{
    (void)b;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if ((uintptr_t)p % page || bytes % page || !bytes) {
        fprintf(stderr, "testdev: pinning %zu bytes at %p: not whole pages\n", bytes, p);
        abort();
    }
    pthread_mutex_lock(&s_mu);
    int free_at = -1;
    for (int i = 0; i < S_PINS; i++) {
        const char *q = s_pinned[i].p, *c = p;
        if (q && c < q + s_pinned[i].bytes && q < c + bytes) {
            fprintf(stderr, "testdev: %p pinned twice\n", p);
            abort();
        }
        if (!q && free_at < 0)
            free_at = i;
    }
    if (free_at >= 0) {
        s_pinned[free_at].p = p;
        s_pinned[free_at].bytes = bytes;
        s_stats.pins++;
        s_stats.pins_live++;
    }
    pthread_mutex_unlock(&s_mu);
    return free_at >= 0 ? GX_OK : GX_ENOMEM;
}

static void s_unpin(const gx_backend *b, void *p)
{
    (void)b;
    pthread_mutex_lock(&s_mu);
    int i = 0;
    while (i < S_PINS && s_pinned[i].p != p)
        i++;
    if (i == S_PINS) {
        fprintf(stderr, "testdev: %p unpinned but not pinned\n", p);
        abort();
    }
    s_pinned[i].p = NULL;
    s_stats.pins_live--;
    pthread_mutex_unlock(&s_mu);
}

/* Device time: its kernels have run when they return, so a mark is the
 * host's clock at the time it is made. */
static void *s_mark(const gx_backend *b, void *queue)
{
    (void)b;
    s_queue *q = queue;
    if (!q || q->recording) {
        fprintf(stderr, "testdev: a mark without a queue, or while it records\n");
        abort();
    }
    int64_t *m = malloc(sizeof *m);
    struct timespec ts;
    if (!m)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *m = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    __atomic_add_fetch(&s_stats.marks, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s_stats.marks_live, 1, __ATOMIC_RELAXED);
    return m;
}

static int64_t s_elapsed_ns(const gx_backend *b, void *from, void *to)
{
    (void)b;
    int64_t ns = from && to ? *(int64_t *)to - *(int64_t *)from : -1;
    __atomic_sub_fetch(&s_stats.marks_live, (from != NULL) + (to != NULL), __ATOMIC_RELAXED);
    free(from);
    free(to);
    return ns;
}

static gx_backend s_testdev = {
    .name = "testdev",
    .rules = NULL, /* every op the schemas accept, as the CPU */
    .kernel = s_kernel,
    .kernel_name = s_kernel_name,
    .kernel_by_name = s_kernel_by_name,
    .ready = s_ready,
    .shares = true,
    .exact_slices = true,
    .host_memory = false,
    .alloc = s_alloc,
    .free = s_free,
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

static void s_print_graph_stats(void)
{
    fprintf(stderr, "testdev: %llu graphs recorded, %llu replayed\n",
            (unsigned long long)s_stats.captures, (unsigned long long)s_stats.replays);
}

/* GEXEC_TESTDEV_GRAPH_STATS set: the graph counters on stderr at exit.
 * GEXEC_TESTDEV_RULES=NAME: testdev claims what backend NAME's rules
 * claim (cuda: the subgraphs a GPU would take, run here) and forms fused
 * groups as NAME does. */
__attribute__((constructor)) static void s_register(void)
{
    const char *like = getenv("GEXEC_TESTDEV_RULES");
    const gx_backend *b = like ? gx_backend_find(like) : NULL;
    if (b) {
        s_testdev.rules = b->rules;
        s_testdev.n_rules = b->n_rules;
        if (b->fused) { /* its fused groups too (cuda: without heads) */
            s_testdev.fused = s_fused;
            s_testdev.no_fused_heads = b->no_fused_heads;
            s_testdev.fused_casts = b->fused_casts;
        }
    }
    gx_backend_register(&s_testdev);
    if (getenv("GEXEC_TESTDEV_GRAPH_STATS"))
        atexit(s_print_graph_stats);
}

const gx_backend *gx_testdev(void)
{
    return &s_testdev;
}

gx_testdev_stats gx_testdev_stats_get(void)
{
    pthread_mutex_lock(&s_mu);
    gx_testdev_stats st = s_stats;
    pthread_mutex_unlock(&s_mu);
    return st;
}

void gx_testdev_graph_mode(int mode)
{
    __atomic_store_n(&s_graph_mode, mode, __ATOMIC_RELAXED);
}
