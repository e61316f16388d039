/*
 * Backends: the devices a plan's steps run on (seeds 000, 004), each a
 * table of operations in the style of ggml-backend. The compiler and the
 * executors reach a device only through its table:
 *
 *   const gx_backend *b = plan->devices[step->device];
 *   if (gx_backend_lists(b, GX_OP_CONV))                 // partition, pass one
 *       ok = gx_backend_accepts(b, &rc, why, sizeof why); // pass two: dtypes, attrs, shapes
 *   step->kernel = b->kernel(step->op);                   // plan
 *   void *arena = b->alloc(b, bytes);                     // an arena on the device
 *   b->copy(b, GX_COPY_TO_DEVICE, dst, src, n, queue);    // a copy step
 *
 * A backend has:
 *   what it runs   rules: one row per op (dtypes, an optional predicate over
 *                  attributes and shapes, the library); NULL: every op the
 *                  schemas accept (the CPU);
 *   kernels        one per op (required to run plans), by stable name too
 *                  (the artifact, explain); per memory layout (optional,
 *                  seed 001); fused elementwise groups as one step
 *                  (optional); constants prepared once per plan in the form
 *                  its kernels read ("library data", optional);
 *   memory         arenas allocated and freed on the device; host_memory:
 *                  the CPU can read them (the CPU's own arenas; a device
 *                  without it gets arenas of its own and explicit copies);
 *                  host memory pinned for its copies (optional);
 *   copies         host <-> device and within the device, on a queue;
 *   synchronisation queues (streams) made per worker and synchronised;
 *                  optional: without them every kernel and copy has
 *                  finished when it returns (the CPU);
 *   device time    marks on a queue and the device's time between two
 *                  (optional: CUDA events);
 *   graphs         a run of kernel steps recorded once and replayed as
 *                  one launch (optional: CUDA Graphs).
 *
 * Slots marked optional may be NULL. Backends are static storage, built in
 * (the CPU, CUDA) or registered at start-up (gx_backend_register: a GPU the
 * daemon owns; a test's device).
 */
#ifndef GX_OPS_BACKEND_H
#define GX_OPS_BACKEND_H

#include "ops/layout.h"
#include "ops/op.h"

/* Bit for a dtype in a rule's mask. */
#define GX_DT(e) (1u << GX_##e)
#define GX_DT_FLOAT (GX_DT(F32) | GX_DT(F16))

/* What a rule sees of one step: its op, resolved attributes (indexed like
 * the schema's attrs) and inferred input/output views (an omitted optional
 * input has ndim -1). */
typedef struct gx_rule_ctx {
    gx_op op;
    const gx_attrval *attr;
    int n_in;
    const gx_view *in;
    int n_out;
    const gx_view *out;
} gx_rule_ctx;

/* Attribute/shape predicate: true if the library supports this instance;
 * else false with "why" filled ("group 2 is neither 1 nor depthwise"). */
typedef bool (*gx_rule_fn)(const gx_rule_ctx *rc, char *why, size_t whylen);

/* One row of a backend's table. */
typedef struct gx_op_rule {
    gx_op op;
    uint32_t dtypes;      /* accepted dtypes (GX_DT) of every input and output,
                           * but the inputs in free_inputs */
    uint64_t free_inputs; /* bit i: input i may have any dtype (shapes, indices) */
    gx_rule_fn check;     /* optional: attributes and shapes */
    const char *lib;      /* the library that provides it, for explain ("cuDNN") */
} gx_op_rule;

typedef enum gx_copy_kind {
    GX_COPY_TO_DEVICE, /* host memory to the device's */
    GX_COPY_TO_HOST,   /* the device's memory to host memory; finished on return */
    GX_COPY_ON_DEVICE, /* within the device's memory */
} gx_copy_kind;

struct gx_fused;
typedef struct gx_backend gx_backend;

/* Kernels per memory layout (seed 001; ops/layout.h). */
typedef struct gx_backend_layouts {
    /* The kernel of the node (ic: attributes, logical views) with its
     * inputs and outputs in layout l, or NULL with why. */
    gx_kernel_fn (*kernel)(gx_op op, gx_layout l, const gx_infer *ic, char *why, size_t len);
    /* Its time relative to the plain layout's kernel (1.0). */
    double (*factor)(gx_op op, gx_layout l, const gx_infer *ic);
    /* The layout that kernel reads input k in. */
    gx_layout (*input)(gx_op op, gx_layout l, const gx_infer *ic, int k);
    /* Scratch bytes of a Conv's kernel in l. */
    size_t (*conv_scratch)(gx_layout l, const gx_infer *ic);
    /* A Conv's weights packed for its kernel in l: the packed view's shape,
     * then its data. */
    void (*conv_pack_shape)(gx_layout l, const gx_attrval *attr, const gx_view *w,
                            gx_view *packed);
    void (*conv_pack)(gx_layout l, const gx_attrval *attr, const gx_view *w,
                      const gx_view *packed);
    /* Kernel of the reorder steps between layouts. */
    gx_kernel_fn reorder;
} gx_backend_layouts;

/* Constant B operands of MatMul and Gemm packed once per plan for the
 * kernels that read them so (ops/gemm.h). */
typedef struct gx_backend_gemm_pack {
    bool (*packable)(gx_op op, const gx_attrval *attr, const gx_view *a, const gx_view *b,
                     const gx_view *y, bool b_const, char *why, size_t whylen);
    size_t (*packed_floats)(gx_op op, const gx_attrval *attr, const gx_view *b);
    void (*pack)(gx_op op, const gx_attrval *attr, const gx_view *b, float *dst);
    gx_kernel_fn (*kernel)(gx_op op); /* reads in[1] packed */
    const char *(*impl)(void);        /* its implementation's name, "packed.avx512" */
} gx_backend_gemm_pack;

/* y = a · b, rows × kk by kk × cols, all row-major, by some kernel (a
 * library the daemon loaded: the BLAS). */
typedef void (*gx_gemm_product_fn)(void *ctx, int64_t rows, int64_t kk, int64_t cols,
                                   const float *a, const float *b, float *y);

/* The float32 MatMul/Gemm implementations a tune registry measures
 * against each other on the device (daemon/tune/), and a check of a
 * product function on it. */
typedef struct gx_backend_gemm_tune {
    /* The implementation gemm_pack's kernels use now ("avx512"), and the
     * name of the i-th one the device has (from 0, widest first; NULL
     * past the last). */
    const char *(*isa)(void);
    const char *(*isa_name)(int i);
    /* The packed kernel (B packed by gemm_pack) of op on the one called
     * isa, whatever is in use; NULL when the device lacks it. */
    gx_kernel_fn (*packed_kernel_isa)(gx_op op, const char *isa);
    /* MatMul over B as it is: the device's own loops, and the BLAS. */
    gx_kernel_fn plain_matmul;
    gx_kernel_fn blas_matmul;
    /* Items [lo, hi) of n that share k->ith of k->nth takes, as the
     * device's kernels split them (multiples of align but the last), for
     * candidates from other libraries (daemon/tune/impl_dnnl.c). */
    void (*share)(const gx_kargs *k, int64_t n, int64_t align, int64_t *lo, int64_t *hi);
    /* Does fn compute right here? One product of fixed pseudo-random data
     * against a double reference; false with why (naming what) when not. */
    bool (*verify)(const char *what, gx_gemm_product_fn fn, void *ctx, int64_t rows, int64_t kk,
                   int64_t cols, char *why, size_t whylen);
} gx_backend_gemm_tune;

/* Constant int8/uint8 B operands of MatMulInteger, QLinearMatMul and
 * QLinearConv packed once per plan for the kernels that read them so
 * (ops/qgemm.h). */
typedef struct gx_backend_qgemm_pack {
    int (*b_input)(gx_op op); /* the input the packed form replaces */
    bool (*packable)(gx_op op, const gx_attrval *attr, int n_in, const gx_view *in,
                     const gx_view *y, bool b_const, char *why, size_t whylen);
    size_t (*packed_bytes)(gx_op op, const gx_view *b);
    void (*pack)(gx_op op, const gx_view *b, void *dst);
    gx_kernel_fn (*kernel)(gx_op op); /* reads input b_input(op) packed */
    const char *(*impl)(void);        /* its implementation's name */
} gx_backend_qgemm_pack;

struct gx_backend {
    const char *name;         /* "cpu", "cuda": config, explain, replies */
    const gx_op_rule *rules;  /* NULL: every op the schemas accept (the CPU) */
    size_t n_rules;
    /* Optional: readies the device at start-up (its kernels checked on real
     * data); GX_OK or an error, with a line for the log in note either way
     * ("" for nothing to say). */
    int (*open)(const gx_backend *b, char *note, size_t len);
    /* Optional: can plans run on the device now (a GPU present and opened)?
     * false with why ("no CUDA device: ...") when not. NULL: always. */
    bool (*usable)(const gx_backend *b, char *why, size_t len);

    /* ---- kernels ---- */
    /* The device's kernel for op, NULL where it has none. A backend without
     * this slot is declared only and cannot run a plan. */
    gx_kernel_fn (*kernel)(gx_op op);
    /* Optional: a stable name for each of its kernels ("cpu.Conv.nhwc")
     * and back; NULL when unknown. */
    const char *(*kernel_name)(gx_kernel_fn fn);
    gx_kernel_fn (*kernel_by_name)(const char *name);
    /* Optional: a hash of its kernels' names and versions (an artifact
     * written by another build of the table is not read). */
    uint64_t (*kernels_id)(void);
    /* Optional: kernels per memory layout; NULL: the plain layout only. */
    const gx_backend_layouts *layouts;
    /* Optional: runs a fused group (ops/fused.h) as one step; k->in are the
     * group's inputs, k->out[0] its output. NULL: no fusion on the device. */
    void (*fused)(const gx_backend *b, const struct gx_fused *f, const gx_kargs *k);
    /* Optional: readies a step's kernel before any job runs, e.g. compiles
     * the code it generates for these attributes and shapes. k has the
     * step's attributes and views (constants with data, other values
     * without), no queue; f is its fused group or NULL. GX_OK, or an
     * error with why (the plan is refused). Called by the plan pass once
     * per step of the device (not for dynamic steps: their shapes come at
     * run time). */
    int (*ready)(const gx_backend *b, gx_op op, const struct gx_fused *f, const gx_kargs *k,
                 char *why, size_t len);
    /* Does its fused slot refuse groups with a head (MatMul, Gemm, Conv:
     * ops/fused.h)? Then the fuse pass forms elementwise groups only. */
    bool no_fused_heads;
    /* Does its fused slot run Cast in a group (of one of the group's inputs,
     * of any dtype but strings, to the group's dtype)? */
    bool fused_casts;
    /* Do its kernels run the 16-bit float dtypes its rules list? Then a
     * step the CPU would compute in float32 (the widen pass) keeps its
     * float16 or bfloat16 values where this device's rules take it
     * (daemon/compile/widen.c: device half steps). */
    bool half_kernels;
    /* Optional: packed constant GEMM operands, float32 and integer. */
    const gx_backend_gemm_pack *gemm_pack;
    const gx_backend_qgemm_pack *qgemm_pack;
    /* Optional: its MatMul/Gemm implementations for a tune registry. */
    const gx_backend_gemm_tune *gemm_tune;
    /* Do its kernels take shares (gx_kargs ith of nth) run by several
     * threads at once? Else each step runs whole on one thread. */
    bool shares;
    /* Optional: rough costs for the partition pass's check that moving a
     * subgraph here pays (all zero: it always does): per step launched,
     * per copy to or from the device and the copies' rate, and the
     * device's float32 rate and memory rate. */
    struct {
        double launch_us, copy_us, copy_bytes_per_us, flops_per_us, bytes_per_us;
    } cost;
    /* Do its kernels give each sample of a batch the same bits whatever
     * the batch size around it? Only then may a job's batch be cut into
     * slices that run as replicas (seed 002; the batch pass). */
    bool exact_slices;

    /* ---- memory ---- */
    /* Is the device's memory host memory (kernels of the CPU read it)? */
    bool host_memory;
    /* An arena of bytes on the device (aligned to GX_ALIGN at least), NULL
     * when it has no room; free releases one. Required to run plans. */
    void *(*alloc)(const gx_backend *b, size_t bytes);
    void (*free)(const gx_backend *b, void *p);
    /* Optional: bytes the device can still give, 0 when unknown. */
    size_t (*capacity)(const gx_backend *b);
    /* Optional: bytes its alloc has given out and free not yet taken back
     * (arenas, constants and prepared weights on the device), for STATS. */
    size_t (*in_use)(const gx_backend *b);

    /* Optional (both or neither): page-locks the host memory [p, p+bytes)
     * (page-aligned) so that copies between it and the device run at the
     * bus's speed, with no staging: GX_OK, or an error (it stays as it
     * was); unpin undoes it before the memory is freed. A worker's host
     * arenas for plans using the device are pinned (daemon/arenas.c). */
    int (*pin)(const gx_backend *b, void *p, size_t bytes);
    void (*unpin)(const gx_backend *b, void *p);

    /* ---- copies (required when !host_memory) ---- */
    /* n bytes from src to dst, in order on queue (NULL: finished on return).
     * A copy to the device has read src when it returns (src may be
     * written next); a copy to the host has finished. GX_OK or an error
     * code (a failed kernel before it on queue may be reported here). */
    int (*copy)(const gx_backend *b, gx_copy_kind kind, void *dst, const void *src, size_t n,
                void *queue);

    /* ---- synchronisation (optional: NULL on a device whose kernels have
     * finished when they return) ---- */
    /* A queue (stream) of the calling worker for the device's kernels and
     * copies (gx_kargs.queue), and its release. */
    void *(*queue_new)(const gx_backend *b);
    void (*queue_free)(const gx_backend *b, void *queue);
    /* Waits until everything put on queue has finished. GX_OK or an error. */
    int (*queue_sync)(const gx_backend *b, void *queue);

    /* ---- device time (optional, both or neither) ----
     * mark: an event put on queue now (the device reaches it when the
     * work put there before has finished), NULL when none can be made.
     * elapsed_ns: waits until the device has passed `to`, frees both
     * marks, and returns the device's nanoseconds from `from` to `to`
     * (-1 when it cannot tell). The step-order executor brackets each
     * stretch of kernel steps on the device with two marks (the job's
     * device time: gxd_frame.device_ns); never called on a NULL queue. */
    void *(*mark)(const gx_backend *b, void *queue);
    int64_t (*elapsed_ns)(const gx_backend *b, void *from, void *to);

    /* ---- whole-run graphs (optional, all four or none; seed 004) ----
     * The sequential executor records a run of consecutive kernel steps
     * put on one queue (no copies, dynamic or control-flow steps between)
     * as one graph and replays it in later jobs with the same arena and
     * queue (daemon/exec/exec_seq.c). Never called on a NULL queue.
     * capture_begin: the kernels called on queue from now on, on this
     * thread, are recorded, not run; GX_OK, or an error (run the steps
     * one by one). capture_end: stops recording; the graph (owned by the
     * caller, freed with graph_free), or NULL when the recording failed
     * (nothing ran, nothing is left on queue: run the steps one by one;
     * an error a kernel met while recording is cleared). replay: puts the
     * graph's work on queue: GX_OK; 1 when the graph no longer fits the
     * queue (its library state changed: capture again); or an error
     * (nothing was put on queue). */
    int (*capture_begin)(const gx_backend *b, void *queue);
    void *(*capture_end)(const gx_backend *b, void *queue);
    int (*replay)(const gx_backend *b, void *graph, void *queue);
    void (*graph_free)(const gx_backend *b, void *graph);
};

/* The built-in backends; static storage. The CPU's table is in
 * ops/cpu/backend.c. */
const gx_backend *gx_backend_cpu(void);
const gx_backend *gx_backend_cuda(void);
/* Adds b (static storage) to the backends gx_backend_find knows; GX_OK,
 * GX_EINVAL for a name taken, GX_ELIMIT past GX_BACKEND_MAX. Call before
 * any lookup from another thread (start-up, a test's set-up). */
#define GX_BACKEND_MAX 8
int gx_backend_register(const gx_backend *b);
/* A backend by name (built in or registered), NULL if none is called that. */
const gx_backend *gx_backend_find(const char *name);
/* Names of the known backends, for messages: "cpu, cuda". */
const char *gx_backend_names(void);

/* Pass one: does b's table have a row for op (can the device run it at all)? */
bool gx_backend_lists(const gx_backend *b, gx_op op);
/* Pass two: does b support this instance (dtypes, attributes, shapes)? On
 * false, why says which rule failed. */
bool gx_backend_accepts(const gx_backend *b, const gx_rule_ctx *rc, char *why, size_t whylen);
/* Can plans run on b in this build? false with why ("declared only: this
 * build has no cuda kernels") when not. */
bool gx_backend_runnable(const gx_backend *b, char *why, size_t whylen);

/* Attribute `name` of a rule's step, NULL if the op has none by that name. */
const gx_attrval *gx_rule_attr(const gx_rule_ctx *rc, const char *name);

#endif
