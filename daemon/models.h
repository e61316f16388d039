/*
 * Loaded graphs ("models"), keyed by graph id: the verified graph and its
 * compiled plans, one per concrete input signature. Identical graphs from
 * different clients hash to one id and so share one model and its plans.
 *
 * The registry (find/add/evict) is used by the I/O thread only. A model is
 * reference-counted: the registry holds one reference, every job holding it
 * another, so eviction never frees a model a job still runs. A model's own
 * state (verification, plans, base profile) is guarded by its mutex:
 * workers compile.
 *
 * Plans are reference-counted too (gxd_plan_ref): the model holds its
 * cached plans, and each job the plan it runs, so a plan swapped out of the
 * cache stays valid until the last job running it lets go.
 *
 * The re-planner (issue 4, seed 001) is one background thread: the I/O
 * thread queues every model now and then (gxd_models_replan_tick, every
 * compiler.replan_ms); the thread skips a model that ran fewer than
 * compiler.replan_min_jobs jobs since it was last checked, else asks
 * stale() of each cached plan with the model's profile now (base plus live
 * counters) and, for a stale one, compiles a plan for the same inputs with
 * that profile and swaps it into the cache. Later jobs get the new plan;
 * running jobs finish on the old one, which the model keeps ("retired")
 * until nobody runs it, then folds its counters into the base profile and
 * frees it. One thread: compiles never overlap, and a model is queued at
 * most once at a time, so each plan is re-planned at most once per tick.
 * The thread runs at a lower priority (nice) than the workers.
 *
 *   gxd_models_init(&m, 256);
 *   gxd_models_replan_start(&m, &limits, 100);   // optional
 *   ...  // I/O thread: gxd_models_replan_tick(&m) every replan_ms
 *   gxd_models_fini(&m);                          // stops the thread
 */
#ifndef GXD_MODELS_H
#define GXD_MODELS_H

#include <pthread.h>
#include <stdatomic.h>

#include "daemon/artifacts.h"
#include "daemon/compile/compile.h"
#include "daemon/log.h"
#include "daemon/profile.h"

#define GXD_MAX_PLANS_PER_MODEL 32
/* plans swapped out that jobs still run, per model; a model with this many
 * is not re-planned until some are freed */
#define GXD_MAX_RETIRED_PLANS 8
/* a graph's name (LOAD "name"): this many bytes with the NUL */
#define GXD_MAX_GRAPH_NAME 64

/* The re-planner's question (default gxd_plan_layout_stale) and the
 * registry's compiler (default gxd_compile): tests put their own in
 * gxd_models.replan.stale and gxd_models.compile before use. */
typedef bool (*gxd_stale_fn)(const gxd_plan *p, const struct gxd_profile *prof, char *why,
                             size_t len);
typedef int (*gxd_compile_fn)(const gx_graph *g, const gx_view *inputs,
                              const gxd_compile_limits *lim, gxd_plan **out, char *err,
                              size_t errlen);

typedef struct gxd_model {
    gx_graph_id id;
    gx_graph *graph;
    atomic_int refs;
    pthread_mutex_t mu;
    int verified; /* 0 not yet, 1 ok, < 0 the status it failed with */
    /* verified: which inputs are keyed (their values are part of the
     * artifact's key); inputs beyond GX_MAX_OP_INPUTS are never planned */
    bool keyed[GX_MAX_OP_INPUTS];
    char error[1024];
    size_t n_plans;
    gxd_plan *plans[GXD_MAX_PLANS_PER_MODEL]; /* found by gxd_plan_matches */
    size_t n_retired;
    gxd_plan *retired[GXD_MAX_RETIRED_PLANS]; /* swapped out, jobs still run them */
    _Atomic int64_t last_used; /* registry LRU: set by the I/O thread and ring threads */
    uint64_t serial; /* this model's number in its registry: never reused */
    /* the memory budget: what the graph and the cached and retired plans
     * were counted for (under mu, bytes also read by the I/O thread) */
    _Atomic int64_t bytes;
    int64_t plan_bytes[GXD_MAX_PLANS_PER_MODEL];
    int64_t retired_bytes[GXD_MAX_RETIRED_PLANS];
    char name[GXD_MAX_GRAPH_NAME]; /* "" or the name LOAD gave it (I/O thread) */
    bool pinned; /* graphs.preload: never evicted, only UNLOADed (I/O thread) */
    /* ring slots that hold a reference to it (daemon/ring.c): they do not
     * keep it from eviction, which unbinds it (gxd_models.unbind) */
    atomic_int ring_binds;
    /* workers its next job should find up: its last job's team, or the
     * team that job would have taken with helpers up (runner.c,
     * s_team_hint); a RUN queued for it wakes as many (gxd_job.team) */
    atomic_int team;
    /* artifact writes waiting for or in the cache's writer thread, each
     * holding a reference: they do not keep it from eviction either (the
     * write finishes on its own reference) */
    atomic_int writes;
    /* The profile store (daemon/profile.h): what the graph's file held
     * when it was loaded (NULL: none) plus the counters of retired plans
     * freed since; the jobs counted at the last save (I/O thread). */
    gxd_profile *profile;
    int64_t saved_jobs;
    /* prepared constants shared by the graph's plans (daemon/compile/prepare.c) */
    gxd_shared *shared;
    /* what its plans' compiles charge the shared copies and subplans to:
     * this model's count (arg: the model) */
    gxd_budget budget;
    /* re-planner: queued (under the re-planner's lock), the next queued
     * model, the profile's jobs at the last check (its thread) */
    bool replan_queued;
    struct gxd_model *replan_next;
    int64_t replan_jobs;
    int64_t replan_forced; /* replanner.forced at its last check */
    const struct gxd_models *reg;
    struct gxd_model *next;
} gxd_model;

typedef struct gxd_replanner {
    gxd_stale_fn stale;     /* set before gxd_models_replan_start */
    gxd_compile_limits lim; /* lim.profile: set per compile */
    int64_t min_jobs;
    bool started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* work queued, stop, or the thread went idle */
    bool stop, busy;
    gxd_model *head, *tail; /* queued models, a reference each */
    /* counts, for logs and tests */
    _Atomic int64_t checks, replans, failures;
    /* bumped by gxd_models_replan_force: a model whose replan_forced
     * differs is checked whatever its job count */
    _Atomic int64_t forced;
} gxd_replanner;

typedef struct gxd_models {
    gxd_model *head;
    size_t n, max;
    uint64_t serials; /* models created so far (gxd_model.serial) */
    /* limits.max_memory_bytes (0: none) and the bytes of the models in the
     * registry or unloading (gxd_model.bytes summed; any thread adds) */
    int64_t max_bytes;
    _Atomic int64_t bytes;
    /* unloaded models jobs still hold; freed by gxd_models_reap (I/O thread) */
    gxd_model *unloading;
    size_t n_unloading;
    /* profile store (NULL: off; owned), and where to warn */
    gxd_profile_store *store;
    gxd_log *log;
    gxd_compile_fn compile; /* plans of the models' graphs (job path and re-plans) */
    /* compiled plans on disk (NULL: off; owned): a plan-cache miss reads
     * its artifact before compiling, compiles and re-plans write one */
    gxd_artifacts *artifacts;
    gxd_replanner replan;
    /* Evicting a model that ring slots hold (ring_binds > 0): drops those
     * references first (the server sets it to gxd_rings_unbind; NULL: such
     * a model is not evicted). I/O thread. */
    void (*unbind)(void *arg, gxd_model *mdl);
    void *unbind_arg;
} gxd_models;

void gxd_models_init(gxd_models *m, size_t max);
/* Stops the re-planner (a compile in progress finishes first), then drops
 * the registry's references (a model's last saves its profile), then
 * closes the profile store. */
void gxd_models_fini(gxd_models *m);
/* Start the re-planner thread: it compiles with lim (copied; lim->part
 * must outlive m) and checks a model once it ran min_jobs jobs since its
 * last check. GX_OK, or GX_EINTERNAL when the thread cannot start. */
int gxd_models_replan_start(gxd_models *m, const gxd_compile_limits *lim, int64_t min_jobs);
/* I/O thread, every compiler.replan_ms: queue every model not queued yet
 * for the re-planner. No-op when it was not started. */
void gxd_models_replan_tick(gxd_models *m);
/* Any thread: something other than the profiles changed what a compile
 * would choose (a new tune winner, daemon/tune): the next check of every
 * model (next tick) looks at its plans whatever its job count. */
void gxd_models_replan_force(gxd_models *m);
/* Wait until the re-planner has nothing queued or in progress (tests). */
void gxd_models_replan_wait(gxd_models *m);
/* The profile store in dir ("" or NULL: off), bounded to max_entries files
 * of max_bytes in all (daemon/profile.h); the directory is read now;
 * warnings go to log. GX_OK, or GX_ENOMEM (the store is then off). */
int gxd_models_set_profile(gxd_models *m, const char *dir, int64_t max_entries, int64_t max_bytes,
                           gxd_log *log);
/* The artifact cache in dir ("" or NULL: off), bounded to max_files files
 * of max_bytes in all (daemon/artifacts.h). GX_OK, or GX_ENOMEM (off). */
int gxd_models_set_artifacts(gxd_models *m, const char *dir, int64_t max_files,
                             int64_t max_bytes, gxd_log *log);
/* I/O thread, now and then: save the profile of every model that ran jobs
 * since its last save, skipping a model a worker is compiling for. */
void gxd_models_save_profiles(gxd_models *m);
/* The model's profile now: its base plus its plans' counters (finished),
 * retired plans' included (those no job runs any more are folded into the
 * base and freed here),
 * or NULL (ENOMEM, or try and a worker holds the model's lock or a
 * subgraph cache's). The caller destroys it. */
gxd_profile *gxd_model_profile(gxd_model *mdl, bool try);
/* A new reference to the model with this id, or NULL. */
gxd_model *gxd_models_find(gxd_models *m, const char *hex);
/* The memory budget in bytes (limits.max_memory_bytes; 0: none). Counted:
 * each graph (its constants, tensor attributes, subgraphs and nodes) and
 * each plan a model keeps (gxd_plan_mem_bytes), the slice plans of its
 * plans included, from when it is kept until the model or the plan is
 * freed; and, through the model's gxd_budget, its shared prepared
 * constants and the plans of its control-flow bodies (charged when made,
 * at run time too, given back when freed). Every plan is compiled with the room the budget leaves its model
 * (gxd_compile_limits.max_plan_bytes), so one that would not fit is
 * refused before a job allocates its arena (docs/security.md). */
void gxd_models_set_budget(gxd_models *m, int64_t max_bytes);
/* What a graph holds (constants, tensor attributes, subgraphs, nodes). */
int64_t gxd_graph_mem_bytes(const gx_graph *g);
/* The model for *g (ownership of *g moves in; *g is set to NULL): the
 * existing one with the same id, or a new one. Evicts the least recently
 * used idle models beyond graphs.max and, until the graph fits, beyond the
 * memory budget. *out is a new reference. GX_OK; GX_ELIMIT when the graph
 * does not fit even with every idle model evicted (err names the budget);
 * GX_ENOMEM. */
int gxd_models_add(gxd_models *m, gx_graph **g, gxd_model **out, char *err, size_t errlen);
/* The same, for the graph whose id (gx_wire_graph_id) the caller knows. */
int gxd_models_add_id(gxd_models *m, gx_graph **g, const gx_graph_id *id, gxd_model **out,
                      char *err, size_t errlen);
/* The model with this id in the registry (not unloading), or NULL; no new
 * reference and no use counted (the LRU order stays). I/O thread. */
gxd_model *gxd_models_peek(gxd_models *m, const char *hex);
/* I/O thread, every turn: evict idle models, least recently used first,
 * while the budget is exceeded (plans compiled meanwhile on workers). */
void gxd_models_trim(gxd_models *m);
gxd_model *gxd_model_ref(gxd_model *mdl);
/* A new reference to the model named name, or NULL. */
gxd_model *gxd_models_find_name(gxd_models *m, const char *name);
/* Give mdl the name (taken from any other model that had it). */
void gxd_models_set_name(gxd_models *m, gxd_model *mdl, const char *name);
/* UNLOAD: mdl leaves the registry now (find, LIST and RUN no longer see
 * it); the registry's reference is dropped at once when nobody else holds
 * the model, else by gxd_models_reap once the jobs holding it are done, so
 * a running or queued job never fails for it. GX_OK, or GX_ENOTFOUND when
 * mdl is not in the registry. The caller still drops its own reference. */
int gxd_models_unload(gxd_models *m, gxd_model *mdl);
/* I/O thread, every turn: free the unloaded models nobody holds any more. */
void gxd_models_reap(gxd_models *m);
/* Drop a reference; the last one frees the model. Accepts NULL. */
void gxd_model_release(gxd_model **mdl);

/* Worker side: verify once (cached, also the failure). */
int gxd_model_verify(gxd_model *mdl, const gxd_compile_limits *lim, char *err, size_t errlen);
/* Worker side: the plan for these input views (in graph input order),
 * compiled on first use with the model's profile now (lim->profile is
 * replaced by it). A plan that with its graph exceeds the memory budget
 * on its own is refused (GX_ELIMIT, naming the budget; a compiled one as
 * soon as its size is known, before its arena exists); one that fits is
 * kept and counted, and gxd_models_trim makes room by evicting idle
 * models. *plan is a new hold the caller drops with
 * gxd_plan_release before it drops the model (the plan borrows the
 * model's graph). *compile_us is 0 on a hit, also when the plan was read
 * from the artifact cache instead of compiled (m->artifacts). */
int gxd_model_plan(gxd_model *mdl, const gx_view *inputs, const gxd_compile_limits *lim,
                   gxd_plan **plan, int64_t *compile_us, char *err, size_t errlen);
/* Worker side: gxd_plan_slice for whole, one of the model's plans, with
 * the artifact cache (m->artifacts) as its store: a slice's plan is read
 * from its file (key: whole's, and the slice's rows) before it is
 * compiled, and written when compiled, so that a restarted daemon's first
 * replica job compiles nothing either. *compiled: as gxd_plan_slice_stored.
 * A slice made now is compiled within the budget's room and counted for
 * the model with whole. */
int gxd_model_slice(gxd_model *mdl, gxd_plan *whole, const gx_view *inputs,
                    const gxd_compile_limits *lim, gxd_plan **out, bool *owned, bool *compiled,
                    char *err, size_t errlen);
/* Worker side: the artifact file of plan p (gxd_model_plan's for lim), as
 * the artifact cache keeps it: *buf malloc'ed, *len bytes, the caller
 * frees; key (at least 96 bytes) its name in the cache, without ".gxa".
 * GX_OK; GX_EUNSUPPORTED for a plan that is not stored (why in err: one
 * compiled without its keyed inputs' values, one with device memory of
 * its own), GX_ENOMEM. */
int gxd_model_artifact(const gxd_model *mdl, const gxd_plan *p, const gxd_compile_limits *lim,
                       void **buf, size_t *len, char *key, size_t keylen, char *err,
                       size_t errlen);

#endif
