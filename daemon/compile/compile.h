/*
 * The graph compiler: a numbered list of passes (compile.c) turns a verified
 * graph and the concrete shapes of its inputs into an executable plan:
 *
 *   1. verify   structure, names, ops, arity, attributes, acyclicity, limits,
 *               subgraph scopes, which inputs' values shapes depend on
 *   2. infer    dtypes and shapes of every value from the op schemas; nodes
 *               whose inputs are all known are evaluated (constant folding);
 *               nodes whose shapes depend on run-time values are left dynamic;
 *               a node whose op has no kernel for its float16 (bfloat16)
 *               inputs but takes them as float32 is marked wide
 *   2b. widen   float16 and bfloat16 graphs on float32 kernels: each wide
 *               step reads and writes float32 twins of its half values,
 *               constants converted here once, other values through one
 *               Cast step each way where a half value crosses between a
 *               wide step and anything else (never between two wide
 *               steps: a step with a half kernel whose inputs are float32
 *               already is widened too), so every later pass sees float32
 *               steps; the graph's Casts between float32 and float16 at
 *               twins become RoundToFloat16 steps, which fuse
 *               (docs/onnx.md, "float16 and bfloat16 models")
 *   3. rewrite  algebraic rewrites of the steps as exported: BatchNormalization,
 *               Mul and Add by per-channel constants folded into the Conv,
 *               Gemm or MatMul before them, Transposes into Gemm's flags,
 *               reshape chains into one Reshape, spelled-out
 *               LayerNormalization, Gelu and HardSwish into one step each
 *               (docs/rewrite.md)
 *   4. partition  the device of every step (seed 000): subgraphs per
 *               device with one entry and one exit, copies between devices
 *   5. layout   the memory layout of every 4-D value (seed 001): the
 *               assignment of layouts to layout-sensitive ops with the
 *               smallest expected cost, reorder steps where neighbours
 *               differ, Conv weights packed for their layout (before
 *               fuse, so fused groups form over values in their final
 *               layouts and a Conv heads an epilogue in its own)
 *   6. prepare  constant MatMul and Gemm weights packed for the packed CPU
 *               kernels (seed 004's library data), one copy per graph
 *               shared by all its plans
 *   7. fuse     chains and trees of elementwise ops whose intermediate
 *               values nobody else reads become one step that runs them
 *               tile by tile (ops/fused.h), with the MatMul, Gemm or Conv
 *               that feeds them if any (an epilogue); those values leave
 *               the arena
 *   8. memplan  liveness-based buffer assignment: each value gets a logical
 *               buffer number and an offset relative to an arena base
 *   9. dag      the steps' dependency graph, cost estimates, critical path
 *               and width for the parallel executors, and a second buffer
 *               assignment that stays valid whatever order independent
 *               steps run in
 *  10. batch    can a job be cut along axis 0 into slices that run as
 *               replicas (seed 002)? which steps mix samples?
 *  11. plan     the step list in dependency order with the kernel per step
 *
 * A plan is immutable once built and shared by every job (and worker) that
 * runs the graph with those input shapes (and values of keyed inputs); each
 * job brings its own arena. Only its run-time caches change after that,
 * each under its own lock or atomically: measured step times (stats), the
 * plans of subgraphs (sub) and of batch slices (slices).
 *
 * Shapes that depend on values (Reshape's shape, Slice's starts, NonZero...)
 * are resolved, in order of preference: from constants, by folding; from
 * graph inputs that reach such a slot ("keyed" inputs: their values become
 * part of the plan's signature, at most GXD_MAX_KEY_BYTES each); else at run
 * time ("dynamic" steps: infer runs again with the data, outputs live on the
 * heap). Control flow (If, Loop) always runs its subgraphs at run time, each
 * compiled on first use for its input signature.
 */
#ifndef GXD_COMPILE_H
#define GXD_COMPILE_H

#include <stdatomic.h>
#include <stdio.h>

#include "ops/backend.h"
#include "ops/fused.h"
#include "ops/op.h"

/* Largest keyed graph input: a bigger one stays a plain input, and the
 * nodes that read its value run dynamically. */
#define GXD_MAX_KEY_BYTES 4096

/* Most backends one plan may use. */
#define GXD_MAX_DEVICES 4

typedef enum gxd_value_kind {
    GXD_VALUE_INPUT,   /* graph input: copied into the arena per job */
    GXD_VALUE_CONST,   /* constant of the graph, or folded: read in place */
    GXD_VALUE_TEMP,    /* produced by a step, lives in the arena */
    GXD_VALUE_DYNAMIC, /* produced by a dynamic step: shape known at run time */
    GXD_VALUE_FUSED,   /* inside a fused step (def): lives in its tiles, not the arena;
                        * or a value the rewrite pass removed (def: the step that
                        * does its work, -1 if none), which no step reads */
} gxd_value_kind;

typedef struct gxd_value {
    const char *name; /* borrowed from the graph */
    gxd_value_kind kind;
    bool keyed;       /* graph input whose value is part of the plan signature */
    gx_view view;     /* dtype, shape, numel; data set for constants and keyed
                       * inputs (the plan's copy); ndim -1 for dynamic values */
    size_t nbytes;
    int def;          /* step that produces it; -1 for inputs and constants */
    int last_use;     /* last step reading it; n_steps if a graph output */
    int buffer;       /* logical buffer number; -1 for constants */
    size_t offset;    /* from the arena base */
    int mem;          /* memplan: the device whose memory (arena) holds it, an
                       * index into plan->devices; 0, the host, for inputs,
                       * host constants and every value of a device with host
                       * memory. A constant on another device (mem > 0) is
                       * the plan pass's copy, its data that device's. */
    bool is_view;     /* memplan: a view, the bytes of its step's first input
                       * (a reshape: gxd_view_source), at the same offsets */
    int placed_in;    /* memplan: 1 + the Concat output whose bytes at
                       * placed_at this value is, in the step-order arena
                       * (its producer writes it in place); 0: none */
    size_t placed_at;
} gxd_value;

typedef struct gxd_subplans gxd_subplans;

/* A constant the prepare pass made for the kernel of node's step (op; a
 * Gemm's transB; a Conv's layout): value (in plan->values, owned by the
 * plan) is value `from` (source; borrowed name) in the form `what` says.
 * Names, not step numbers: later passes renumber the steps. */
typedef struct gxd_prepared {
    const char *node;
    gx_op op;
    bool trans_b;
    gx_layout layout;
    int value, source;
    const char *from;
    size_t bytes;
    bool borrowed; /* the whole batch's plan owns it (a slice's plan, seed 002) */
    bool shared;   /* the graph's table holds it, for every plan of the graph */
    char what[96];
} gxd_prepared;

typedef struct gxd_step {
    gx_op op;
    const gx_node *node; /* borrowed from the graph */
    gx_attrval attr[GX_MAX_ATTRS];
    int n_in, n_out;
    int n_formal; /* node inputs; in[n_formal..n_in) are values its subgraphs capture */
    int *in;      /* value indices; -1 for an omitted optional input */
    int *out;
    gx_kernel_fn kernel;  /* NULL for control flow */
    gx_cost cost;
    bool dynamic;         /* infer (and output allocation) at run time */
    bool folded;          /* evaluated at compile time: not run */
    size_t scratch_bytes; /* the kernel's scratch memory (static steps) */
    int max_shares;       /* the most shares its kernel splits into; 0: any */
    int scratch;          /* its value index (memplan); -1 if none */
    gxd_subplans *sub;    /* control flow: compiled subgraphs, by signature */
    /* dag pass: the steps that must finish before this one (count) and
     * those waiting for it; estimated time from the schema's cost */
    int n_preds, n_succ;
    int *succ;
    double est_us;
    bool on_batch; /* batch pass: reads a batched value */
    /* partition pass: device is an index into plan->devices (0, the
     * fallback, for folded steps too), part an index into plan->parts (-1
     * for folded steps and copies). copy: a step the pass inserted to move
     * a value between devices (op Identity, node synthetic, owned by the
     * plan). */
    int device;
    int part;
    bool copy;
    /* fuse pass: the group of elementwise ops this step runs (owned by the
     * step; in[] are the group's inputs, out[0] its output, op and node
     * those of its last op); NULL for a plain step */
    gx_fused *fused;
    /* layout pass (seed 001): the layout the step's kernel runs in (its
     * layout-sensitive inputs and outputs are in it; for If and Loop, the
     * layout its subgraphs' captured values arrive in); reorder: a step the
     * pass inserted to move a value into another layout (op Identity, node
     * synthetic, kernel: its device's layouts->reorder) */
    gx_layout layout;
    bool reorder;
    /* infer and widen passes: wide, the step computes in float32 what the
     * graph has in float16 or bfloat16 (it reads and writes the values'
     * float32 twins); convert, a Cast step the widen pass inserted between
     * a half value and its twin (node synthetic, owned by the plan) */
    bool wide;
    bool convert;
    /* infer: a step the CPU has no kernel for in its 16-bit float dtype
     * that a device's rules take at that dtype (a backend with
     * half_kernels): not widened, it must run on such a device (else the
     * compile starts again with every such step widened) */
    bool dev_half;
} gxd_step;

/* A step the widen pass runs in float32, for explain: its node, op, the
 * half dtype of its graph values and why ("no kernel in that dtype", or
 * "its inputs are float32 already": it has one, but it would only read
 * values converted back from float32). Strings borrowed. */
typedef struct gxd_widened {
    const char *node;
    gx_op op;
    gx_dtype half;
    const char *why;
} gxd_widened;

/* What the fuse pass did around one step, for explain: the nodes it runs
 * (more than one: a fused group) and why neighbours stayed out. */
typedef struct gxd_fuse_group {
    int step;           /* the step (index in plan->steps) */
    size_t n_nodes;
    const char **nodes; /* its nodes in run order, borrowed from the graph */
    gx_op *ops;
    char *why;          /* "node 'a' (Conv): not elementwise; ..." or "" */
} gxd_fuse_group;

/* What the rewrite pass did (applied) or almost did (not applied: the
 * pattern's core was there but a check failed), for explain. Strings
 * are borrowed from the graph (rule: static) or owned by the plan. */
typedef struct gxd_rewrite {
    const char *rule; /* "fold", "transpose", "reshape", "layernorm", "gelu", "hardswish" */
    const char *node; /* the node of the step it made, or the one it looked from */
    const char *what; /* "bn1 folded into conv1 (Conv)", or why not */
    bool applied;
    const char **nodes; /* applied: the graph nodes it replaced (the step's own
                         * among them), in step order; they run as that step */
    size_t n_nodes;
} gxd_rewrite;

/* What earlier runs measured of one step (mutable, shared by the jobs that
 * run the plan; updated without locks, a lost update is harmless). */
typedef struct gxd_step_stats {
    _Atomic int64_t ns; /* moving average of its time on one worker */
    _Atomic int64_t runs;
} gxd_step_stats;

typedef struct gxd_plan {
    size_t n_values, n_steps;
    gxd_value *values;
    gxd_step *steps;
    size_t n_inputs, n_outputs;
    int *inputs;  /* value index of graph input i */
    int *outputs; /* value index of graph output i */
    size_t n_buffers;
    size_t arena_bytes; /* peak: size of one (host) arena */
    /* memplan and dag passes: the arenas of devices without host memory
     * (index as plan->devices; 0 for the others, whose values are in the
     * host's arena), for step order and for the DAG executors */
    size_t dev_arena_bytes[GXD_MAX_DEVICES];
    size_t dev_dag_arena_bytes[GXD_MAX_DEVICES];
    /* plan pass: constants copied once into the memory of a device
     * without host memory that reads them (freed with the plan through
     * that device's table) */
    struct gxd_dev_const *dev_consts;
    size_t n_dev_consts;
    size_t naive_bytes; /* sum of all buffer sizes (no reuse), for comparison */
    double flops;
    size_t n_dynamic;   /* dynamic steps */
    size_t n_control;   /* control-flow steps */
    /* dag pass. dag_offset[v]: offset of value v in the arena of a DAG
     * executor (inter-op), dag_arena_bytes its size; dag_ok false when the
     * plan has too many steps for the analysis (then only the step order
     * may run it). width: most steps of one dependency level. */
    bool dag_ok;
    char dag_why[96]; /* why not, when !dag_ok */
    size_t *dag_offset;
    size_t dag_arena_bytes;
    int width;
    gxd_step_stats *stats; /* per step; stats[n_steps].runs counts the plan's runs */
    /* what its jobs measured per parallel mode against the policy's model
     * (daemon/policy.h gxd_policy_seen_get/put: GXD_SEEN_WORDS, cold and
     * hot teams), and the jobs that ran it: a seen entry's age */
    _Atomic uint64_t seen[2 * GX_MODE_COUNT];
    _Atomic uint64_t seen_jobs;
    struct gxd_slices *slices; /* plans of slices of the batch (gxd_plan_slice) */
    /* runs of device steps recorded as graphs and replayed (made at first
     * use, daemon/exec/exec_seq.c; freed with the plan) */
    struct gxd_graphs *_Atomic graphs;
    bool needs_keys;    /* a keyed input had no data (LOAD): do not cache */
    /* Replica split (seed 002), set by gxd_plan_batch: batch > 0 is the
     * size of axis 0 shared by the batched inputs when every step keeps
     * samples apart, so the job may be cut into slices along it; else 0,
     * and batch_why says why not. sync_steps counts the steps that mix
     * samples (seed 002's synchronous nodes). */
    int64_t batch;
    size_t sync_steps;
    char batch_why[160];
    void **owned;       /* folded values and keyed copies, freed with the plan */
    size_t n_owned, cap_owned;
    size_t owned_bytes; /* their bytes (the memory budget, daemon/models.h) */
    /* Partition pass (seed 000). devices: the backends offered, in order of
     * preference, the fallback (the CPU) first; parts: connected runs of
     * steps on one device (on other devices than the fallback: one entry
     * step, one exit step, at least the minimum size); fell: why steps a
     * preferred device first took ended elsewhere (one row per step and
     * device); n_copies: copy steps inserted on edges between devices. */
    const gx_backend *devices[GXD_MAX_DEVICES];
    size_t n_devices;
    struct gxd_part *parts;
    size_t n_parts;
    struct gxd_fallout *fell;
    size_t n_fell, cap_fell;
    size_t n_copies;
    /* widen pass: the wide steps in step order (owned by the plan), Cast
     * steps inserted, constants converted to float32 and their bytes */
    gxd_widened *widened;
    size_t n_widened;
    size_t widen_casts, widen_consts, widen_const_bytes;
    /* rewrite pass: what it did, then its near misses (owned by the
     * plan); rewrite_why says why the pass did not run ("" if it did) */
    gxd_rewrite *rewrites;
    size_t n_rewrites;
    char rewrite_why[64];
    /* fuse pass: groups formed (n_nodes > 1) and lone elementwise steps
     * whose neighbours stayed out, in step order; fuse_why says why the
     * pass did not run ("" if it did) */
    gxd_fuse_group *fuse_groups;
    size_t n_fuse_groups;
    size_t fused_values; /* intermediate values that left the arena */
    char fuse_why[64];
    /* layout pass: the problem it solved and what it chose
     * (daemon/compile/layout.h), for explain and gxd_plan_layout_stale */
    struct gxd_layout_rec *layout;
    /* layout pass: it had a free choice and made it (the plan's layouts
     * follow the profile); kept in artifacts, where the record is not, so
     * that the re-planner knows a plan read from one may change */
    bool layout_open;
    /* prepare pass: constants computed once for the kernel that reads them
     * (packed weights), in step order; prepared_bytes their total */
    struct gxd_prepared *prepared;
    size_t n_prepared, prepared_bytes;
    /* prepare pass: the plan's own constants no step reads any more (a
     * float16 model's float32 twins, now packed), freed: how many, bytes */
    size_t freed_consts, freed_const_bytes;
    /* prepare pass: the implementation each MatMul and Gemm it prepared
     * runs and where the choice came from (the tune registry, seed 003),
     * in step order (owned by the plan); tune: the registry it asked
     * (borrowed; NULL: none), for the re-planner */
    struct gxd_impl_choice *impls;
    size_t n_impls;
    struct gxd_tune *tune;
    struct gxd_shared_ref *shared_refs; /* references the plan holds (freed with it) */
    size_t n_shared_refs;
    /* Holders beyond the first (gxd_plan_ref, gxd_plan_release): 0 when
     * only its creator holds it, as a fresh plan. A model's cached plan is
     * held by the model and by each job running it. */
    atomic_int refs;
    /* read from an artifact file (daemon/compile/artifact.h), not
     * compiled: explain's records of the passes are absent */
    bool from_artifact;
} gxd_plan;

/* The implementation the prepare pass chose for a MatMul or Gemm step
 * (daemon/tune/tune.h): impl@version, and source: "default" (no record:
 * today's rule), "tuned (memory)" or "tuned (local)" (a record found in
 * that level), or "whole batch" (a slice's plan runs what the whole
 * batch's does). sig: the step's signature (owned by the plan), NULL when
 * the registry does not tune it. ns: the record's median time, else -1. */
typedef struct gxd_impl_choice {
    const char *node;
    gx_op op;
    char impl[32];
    int version;
    char source[24];
    int64_t ns;
    const struct gxd_tune_sig *sig;
} gxd_impl_choice;

/* A constant in a device's memory: value (mem == device) holds the bytes
 * of host value source there. */
typedef struct gxd_dev_const {
    int device;
    int value, source;
} gxd_dev_const;

/* One partition: steps with part == its index, all on device. entry, exit:
 * its only entry and exit steps, or -1 where it has several (the fallback's
 * partitions may). */
typedef struct gxd_part {
    int device;
    int n_steps;
    int entry, exit;
    int n_entries, n_exits;
} gxd_part;

/* A step that fell out of device's subgraphs, and why ("cuDNN: Conv group
 * 2 is neither 1 nor depthwise", "subgraph below the minimum of 2 nodes",
 * "pruned: second input to the subgraph"...). */
typedef struct gxd_fallout {
    int step;
    int device;
    char why[160];
} gxd_fallout;

/* Where steps may run (the partition pass). backends: in order of
 * preference; the CPU is the fallback, and is added at the end when not
 * listed. Every backend must be runnable (gx_backend_runnable). min_nodes:
 * a subgraph on another device than the fallback with fewer steps goes
 * back to the fallback. off: skip the pass (every step on the CPU, no
 * partitions recorded), for comparisons. */
typedef struct gxd_partition_opts {
    const gx_backend *backends[GXD_MAX_DEVICES];
    size_t n_backends;
    int min_nodes;
    bool off;
    bool no_cost_check; /* partition.cost_check false: keep every subgraph big enough */
} gxd_partition_opts;

/* Defaults: the CPU alone, min_nodes 2. */
#define GXD_PARTITION_MIN_NODES 2

/* Constants the prepare pass makes from a graph's own constants (packed
 * weights), shared by every plan of the graph: one copy per (source,
 * form), however many input shapes, batch slices and re-plans the graph
 * gets. Thread-safe; each plan holds a reference on the copies it reads,
 * so a copy lives until the table and its last plan are gone. */
typedef struct gxd_shared gxd_shared;
/* NULL on ENOMEM. */
gxd_shared *gxd_shared_new(void);
/* Drops the table's references; plans keep theirs. Accepts NULL. The
 * budget a copy was charged to (gxd_compile_limits.budget of the compile
 * that made it) is not given it back: the table lives as long as its
 * model, whose count goes with it (daemon/models.c). */
void gxd_shared_destroy(gxd_shared **s);
/* The bytes of the copies the table holds (0 for NULL). */
int64_t gxd_shared_bytes(gxd_shared *s);

/* Where memory a graph's plans make beyond their own is counted (the
 * model's share of limits.max_memory_bytes, daemon/models.c): the
 * graph's shared prepared constants, and the plans of control-flow
 * subgraphs (compiled on first use, during a job too). room: the bytes a
 * new one may still take, and the limit's name for the error (what,
 * whatlen); 0 when no budget applies. charge: count bytes (negative:
 * give back): GX_OK, or GX_ELIMIT (err filled, nothing counted) when they
 * do not fit. Outlives every plan compiled with it: each charge made for
 * a plan is given back when the plan (or the table) is freed. */
typedef struct gxd_budget {
    int64_t (*room)(void *arg, char *what, size_t whatlen);
    int (*charge)(void *arg, int64_t bytes, char *err, size_t errlen);
    void *arg;
} gxd_budget;

/* The table's copy of the graph constant whose data is src (src_bytes)
 * prepared for dev's kernel of op (a Gemm's trans_b, a Conv's layout), of
 * bytes bytes, for a plan read from an artifact (daemon/compile/
 * artifact.c): the copy the table holds (a compile's or an earlier read's,
 * of the same size), else a new one fill(arg, dst) writes, charged to
 * budget (may be NULL). p gets a reference (freed with it). NULL with *rc:
 * GX_OK (the table holds a copy of another size: the caller keeps its
 * own), GX_ENOMEM, GX_ELIMIT (err filled) or fill's error. */
void *gxd_shared_get(gxd_shared *s, gxd_plan *p, const void *src, size_t src_bytes,
                     const gx_backend *dev, gx_op op, bool trans_b, gx_layout layout,
                     size_t bytes, int (*fill)(void *arg, void *dst), void *arg,
                     const gxd_budget *budget, int *rc, char *err, size_t errlen);

/* Bytes of graph constant b prepared for dev's kernel of op (a Gemm's
 * trans_b, a Conv's layout, the reading step's attr), as this build's
 * prepare pass writes them; 0 where dev has no such form. An artifact's
 * plan whose prepared constants hold other sizes was compiled by a build
 * that packed differently (daemon/compile/artifact.c refuses it). */
size_t gxd_prepare_bytes(const gx_backend *dev, gx_op op, bool trans_b, gx_layout layout,
                         const gx_attrval *attr, const gx_view *b);

typedef struct gxd_compile_limits {
    int64_t max_nodes;
    int64_t max_tensor_bytes;
    int64_t max_arena_bytes;
    /* limits.max_compile_ms in µs (0: none): one compile stops with
     * GX_ELIMIT after the pass that ends beyond it */
    int64_t max_compile_us;
    /* The bytes the plan may hold as gxd_plan_mem_bytes counts them, its
     * arena included (0: none), and the limit it comes from, for the
     * error ("limits.max_memory_bytes (2097152) less the 400100 its
     * graph holds"). Checked before the prepare pass allocates each
     * constant and after every pass, so a plan beyond it is refused with
     * GX_ELIMIT once the memory planner knows its arena, before any job
     * allocates one (daemon/models.c sets it) */
    int64_t max_plan_bytes;
    const char *max_plan_what;
    const gxd_partition_opts *part; /* NULL: the defaults (the CPU alone) */
    bool no_fuse; /* compiler.fuse: false: the fuse pass leaves the steps alone */
    /* the widen pass leaves the graph's Casts between float32 and float16
     * and the value-moving steps alone (phase 2 off: tests compare) */
    bool no_round;
    bool no_rewrite; /* compiler.rewrite: false: the rewrite pass leaves the steps alone */
    /* The layout pass (seed 001): the graph's profile, whose runs give
     * each node's expected executions per job (NULL: every node runs
     * once); no_layout: every value stays plain; no_layout_times: the
     * profile's measured times per layout (<node>@<layout>) are ignored and
     * the estimates are weighed by the counts alone, so the choice does not
     * depend on how fast the machine was (compiler.layout_measured). */
    const struct gxd_profile *profile;
    /* the graph's table of shared prepared constants (NULL: each plan
     * packs its own) */
    gxd_shared *shared;
    /* where the shared table's copies and the subplans are counted (NULL:
     * nowhere); set by daemon/models.c */
    const gxd_budget *budget;
    /* the best-implementation registry the prepare pass asks (NULL: every
     * MatMul and Gemm runs the default; daemon/tune/tune.h) */
    struct gxd_tune *tune;
    bool no_layout;
    bool no_layout_times;
    /* scheduler.device_graphs false: the sequential executor launches a
     * device's steps one by one, never as a recorded graph (read when a
     * plan runs, not by the passes) */
    bool no_graphs;
    /* scheduler.device_time false: the sequential executor puts no marks
     * on the devices' queues (jobs report no device time) */
    bool no_device_time;
} gxd_compile_limits;

/* What a plan holds: its tables, folded and prepared constants and one
 * arena (a job running it allocates one); its slice plans are counted as
 * they are made (daemon/models.c). The memory budget's measure. */
int64_t gxd_plan_mem_bytes(const gxd_plan *p);

/* Pass 1 alone: is the graph well formed, independent of input shapes?
 * GX_OK, or GX_EGRAPH / GX_EOP / GX_EATTR / GX_ELIMIT with a message naming
 * the node and the problem. */
int gxd_verify(const gx_graph *g, const gxd_compile_limits *lim, char *err, size_t errlen);
/* gxd_verify, and which graph inputs are keyed (their values shape the
 * plan, when at most GXD_MAX_KEY_BYTES): keyed[i] for input i, the caller's
 * array of g->n_inputs. */
int gxd_verify_keyed(const gx_graph *g, const gxd_compile_limits *lim, bool *keyed, char *err,
                     size_t errlen);

/* Run every pass for the given input shapes (in graph input order; a
 * symbolic declared dim takes the given size; data, where given, is read for
 * keyed inputs). *out is a new plan owned by the caller, borrowing from g
 * (which must outlive it). */
int gxd_compile(const gx_graph *g, const gx_view *inputs, const gxd_compile_limits *lim,
                gxd_plan **out, char *err, size_t errlen);

/* A subgraph's plan: inputs are the subgraph's declared inputs, then the
 * values it captures from enclosing graphs, named by captured[]. A
 * captured value whose konst[] is true (konst may be NULL) is a constant
 * of the enclosing plan: the subplan takes it as a constant (its data
 * from inputs, read in place: it must outlive the subplan), so its
 * weights are packed and its constant steps folded as the outer plan's. */
int gxd_compile_sub(const gx_graph *g, const char *const *captured, const bool *konst,
                    size_t n_captured, const gx_view *inputs, const gxd_compile_limits *lim,
                    gxd_plan **out, char *err, size_t errlen);

/* gxd_verify for a subgraph that captures the named outer values. */
int gxd_verify_sub(const gx_graph *g, const char *const *captured, size_t n_captured,
                   const gxd_compile_limits *lim, char *err, size_t errlen);

/* Compiled subgraphs of one control-flow step (daemon/compile/subplans.c),
 * by graph and signature; shared by the jobs that run the step, so guarded
 * by its own lock. */
gxd_subplans *gxd_subplans_new(const gxd_plan *p, const gxd_step *s, const gxd_budget *budget);
void gxd_subplans_destroy(gxd_subplans **sp);
/* Subgraph attribute `attr` of the step, and where each value it captures
 * is among the step's inputs: the subgraph's input i (after its declared
 * inputs) is step input pos[i], i < *n. NULL if the step has no such
 * subgraph. */
const gx_graph *gxd_subplans_graph(const gxd_subplans *sp, const char *attr, const int **pos,
                                   size_t *n);
/* The plan of subgraph g for inputs (declared, then captured), compiled on
 * first use. *owned: the cache is full, the caller destroys the plan. With
 * a budget (gxd_subplans_new), a compile gets the room it leaves and a plan
 * kept in the cache is charged to it until the cache is destroyed; one it
 * cannot take is refused (GX_ELIMIT). */
int gxd_subplans_get(gxd_subplans *sp, const gx_graph *g, const gx_view *inputs,
                     const bool *konst, const gxd_compile_limits *lim, gxd_plan **plan,
                     bool *owned, char *err, size_t errlen);
/* konst[i] for the n values step s of plan p passes a subgraph (step
 * inputs pos[i], gxd_subplans_graph): is it a constant of p with its data
 * at hand (gxd_compile_sub)? */
void gxd_subplans_consts(const gxd_plan *p, const gxd_step *s, const int *pos, size_t n,
                         bool *konst);

/* For the profile store: fn for each cached plan of sp with the subgraph
 * attribute it was compiled from ("body", "then_branch"), under the
 * cache's lock. try: give up (false) when the lock is held (a worker
 * compiling a subgraph) instead of waiting. */
bool gxd_subplans_each(gxd_subplans *sp, bool try,
                       void (*fn)(void *arg, const char *attr, const gxd_plan *p), void *arg);

/* The plan of one slice of p's batch (seed 002's replica split): inputs
 * are p's with axis 0 of the batched ones cut to the slice's size. Compiled
 * on first use with the graph's declared axis 0 left free, and cached on p
 * by slice size (under the cache's own lock: jobs share p). *owned: the
 * cache is full, the caller destroys the plan. */
int gxd_plan_slice(gxd_plan *p, const gx_graph *g, const gx_view *inputs,
                   const gxd_compile_limits *lim, gxd_plan **out, bool *owned, char *err,
                   size_t errlen);

/* Has a slice of p failed to compile (a Reshape to a shape that names the
 * whole batch, say)? Then the others would too: the policy stops
 * splitting p's jobs. */
bool gxd_plan_slices_failed(const gxd_plan *p);

/* Where slice plans are kept across restarts (the daemon's artifact cache:
 * daemon/models.c). load answers the plan of the slice of size rows of
 * whole's batch for inputs (a new plan the slice cache then owns), or
 * NULL: none, compile it; save is shown each slice plan compiled. Both are
 * called under whole's slice cache lock. */
typedef struct gxd_slice_store {
    gxd_plan *(*load)(void *arg, const gxd_plan *whole, const gx_view *inputs, int64_t size);
    void (*save)(void *arg, const gxd_plan *whole, const gxd_plan *slice, int64_t size);
    void *arg;
} gxd_slice_store;

/* gxd_plan_slice that asks store (NULL: none) before compiling a slice's
 * plan and shows it the plans it compiles; *compiled: this call compiled
 * one (it was neither cached nor stored). */
int gxd_plan_slice_stored(gxd_plan *p, const gx_graph *g, const gx_view *inputs,
                          const gxd_compile_limits *lim, const gxd_slice_store *store,
                          gxd_plan **out, bool *owned, bool *compiled, char *err, size_t errlen);

/* Would the layout pass decide differently for p's graph with the
 * expected executions and measured times of profile prof than it did when
 * p was built (seed 001: a graph has run often enough for its profile to
 * change a decision), saving more than 3% of the graph's expected cost
 * per job plus 1 us? If so, why says which op's layout changes and the
 * costs ("'conv1': nchw16c (31.2 us per job) over nhwc (40.1 us per job);
 * ..."). Cheap: solves the plan's recorded problem again, compiles
 * nothing. A plan read from an artifact has no recorded problem: when
 * its layout pass had a choice (layout_open), it is stale once there is
 * a profile, so the re-planner compiles it from the graph (and writes
 * the new plan's artifact). */
bool gxd_plan_layout_stale(const gxd_plan *p, const struct gxd_profile *prof, char *why,
                           size_t len);

/* Does cached plan p serve inputs (shapes, dtypes, and values of its keyed
 * inputs)? */
bool gxd_plan_matches(const gxd_plan *p, const gx_view *inputs);
/* Frees p now, whoever else holds it (a plan nobody shares). Accepts NULL. */
void gxd_plan_destroy(gxd_plan **p);
/* What the sequential executor did with p's runs of device steps
 * (daemon/exec/exec_seq.c): graphs recorded, replays (each one launch
 * for the whole run), recordings that failed (that run then always goes
 * step by step), graphs that no longer fit their queue and were dropped,
 * and runs left step by step because the plan's cache was full. */
typedef struct gxd_graph_stats {
    int64_t captures, replays, failed, stale, full;
    int entries; /* graphs held */
} gxd_graph_stats;
gxd_graph_stats gxd_plan_graph_stats(const gxd_plan *p);
/* Frees p's graphs (gxd_plan_destroy calls it). */
void gxd_plan_graphs_free(gxd_plan *p);
/* Another holder of p (which the caller holds); returns p. */
gxd_plan *gxd_plan_ref(gxd_plan *p);
/* Drops the caller's hold and nulls *p; the last holder frees the plan.
 * Accepts NULL. */
void gxd_plan_release(gxd_plan **p);

/* The partition pass's records of p, one line each, for explain:
 * devices, partitions with their entry and exit, copies, and why each step
 * that fell out of a device did. */
void gxd_plan_partition_explain(const gxd_plan *p, FILE *out);

/* The plan as a JSON object for `explain` (daemon/compile/explain.c;
 * its sections are described in docs/protocol.md, EXPLAIN). g is the graph
 * p was compiled from. Returns a malloc'ed NUL-terminated string the caller
 * frees, or NULL on ENOMEM. Reads only what the passes recorded. */
char *gxd_plan_explain_json(const gxd_plan *p, const gx_graph *g);

/* Does any step of plan run on a device without host memory (so that its
 * frames need device memory, daemon/exec/exec.h)? */
bool gxd_plan_off_host(const gxd_plan *plan);
/* The devices plan's steps run on, for replies: "cpu", "cuda+cpu" (the
 * offered devices that run a step, in order of preference, the fallback
 * last). */
void gxd_plan_devices(const gxd_plan *plan, char *buf, size_t len);

/* Pass 8 (memplan) on its own, for tests: assign offsets to the values in
 * device mem's memory (value.mem) given their nbytes/def/last_use; sets
 * buffer (numbered from *n_buffers on, which counts them) and offset, and
 * returns the arena size. */
size_t gxd_memplan_assign(gxd_value *values, size_t n_values, int mem, size_t *n_buffers);
/* The value whose memory value v uses: v itself, or for a view the first
 * value up its chain of reshapes that is no view. */
int gxd_view_source(const gxd_plan *plan, int v);
/* The value whose memory value v's bytes lie in, in the step-order arena:
 * v's view source, or the Concat output that source is placed in. */
int gxd_memory_home(const gxd_plan *plan, int v);

#endif
