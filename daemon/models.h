/*
 * Loaded graphs ("models"), keyed by graph id: the verified graph and its
 * compiled plans, one per concrete input signature. Identical graphs from
 * different clients hash to one id and so share one model and its plans.
 *
 * The registry (find/add/evict) is used by the I/O thread only. A model is
 * reference-counted: the registry holds one reference, every job holding it
 * another, so eviction never frees a model a job still runs. A model's own
 * state (verification, plans) is guarded by its mutex: workers compile.
 */
#ifndef GXD_MODELS_H
#define GXD_MODELS_H

#include <pthread.h>
#include <stdatomic.h>

#include "daemon/compile/compile.h"
#include "daemon/log.h"
#include "daemon/profile.h"

#define GXD_MAX_PLANS_PER_MODEL 32

typedef struct gxd_model {
    gx_graph_id id;
    gx_graph *graph;
    atomic_int refs;
    pthread_mutex_t mu;
    int verified; /* 0 not yet, 1 ok, < 0 the status it failed with */
    char error[1024];
    size_t n_plans;
    gxd_plan *plans[GXD_MAX_PLANS_PER_MODEL]; /* found by gxd_plan_matches */
    int64_t last_used; /* registry LRU, I/O thread */
    /* The profile store (daemon/profile.h): what the graph's file held
     * when it was loaded (NULL: none), read-only while the model lives;
     * the jobs counted at the last save (I/O thread). */
    gxd_profile *profile;
    int64_t saved_jobs;
    const struct gxd_models *reg;
    struct gxd_model *next;
} gxd_model;

typedef struct gxd_models {
    gxd_model *head;
    size_t n, max;
    /* profile store: its directory ("" off), and where to warn */
    char profile_dir[1024];
    gxd_log *log;
} gxd_models;

void gxd_models_init(gxd_models *m, size_t max);
/* Drops the registry's references (a model's last saves its profile). */
void gxd_models_fini(gxd_models *m);
/* The profile store in dir ("" or NULL: off); warnings go to log. */
void gxd_models_set_profile(gxd_models *m, const char *dir, gxd_log *log);
/* I/O thread, now and then: save the profile of every model that ran jobs
 * since its last save, skipping a model a worker is compiling for. */
void gxd_models_save_profiles(gxd_models *m);
/* The model's profile now: its base plus its plans' counters (finished),
 * or NULL (ENOMEM, or try and a worker holds the model's lock or a
 * subgraph cache's). The caller destroys it. */
gxd_profile *gxd_model_profile(gxd_model *mdl, bool try);
/* A new reference to the model with this id, or NULL. */
gxd_model *gxd_models_find(gxd_models *m, const char *hex);
/* The model for *g (ownership of *g moves in; *g is set to NULL): the
 * existing one with the same id, or a new one. Evicts the least recently
 * used idle model beyond the configured maximum. Returns a new reference,
 * NULL on ENOMEM. */
gxd_model *gxd_models_add(gxd_models *m, gx_graph **g);
gxd_model *gxd_model_ref(gxd_model *mdl);
/* Drop a reference; the last one frees the model. Accepts NULL. */
void gxd_model_release(gxd_model **mdl);

/* Worker side: verify once (cached, also the failure). */
int gxd_model_verify(gxd_model *mdl, const gxd_compile_limits *lim, char *err, size_t errlen);
/* Worker side: the plan for these input views (in graph input order),
 * compiled on first use. *owned tells the caller to destroy the plan itself
 * (only when the model's plan cache is full). *compile_us is 0 on a hit. */
int gxd_model_plan(gxd_model *mdl, const gx_view *inputs, const gxd_compile_limits *lim,
                   gxd_plan **plan, bool *owned, int64_t *compile_us, char *err, size_t errlen);

#endif
