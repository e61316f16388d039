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
    struct gxd_model *next;
} gxd_model;

typedef struct gxd_models {
    gxd_model *head;
    size_t n, max;
} gxd_models;

void gxd_models_init(gxd_models *m, size_t max);
/* Drops the registry's references. */
void gxd_models_fini(gxd_models *m);
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
