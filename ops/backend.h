/*
 * Backends: the devices a plan's steps may run on, and per op the rules
 * under which each device's library supports it (seed 000). The compiler's
 * partition pass (daemon/compile/partition.c) reads them:
 *
 *   const gx_backend *cuda = gx_backend_find("cuda");
 *   if (gx_backend_lists(cuda, GX_OP_CONV))              // pass one: op in its table
 *       ok = gx_backend_accepts(cuda, &rc, why, sizeof why); // pass two: dtypes, attrs, shapes
 *
 * A backend is a name, a table of rules (one row per op it supports: the
 * dtypes it accepts and an optional predicate over attributes and shapes)
 * and its kernels. The CPU backend has no table: it runs everything the op
 * schemas accept (its rule is that infer succeeded). The CUDA backend's
 * table is declared (what cuBLAS/cuDNN support) but it has no kernels yet,
 * so the daemon does not offer it to the compiler (gx_backend_runnable).
 * Backends are static storage; tests may define their own.
 */
#ifndef GX_OPS_BACKEND_H
#define GX_OPS_BACKEND_H

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

typedef struct gx_backend {
    const char *name;         /* "cpu", "cuda": config and explain use it */
    const gx_op_rule *rules;  /* NULL: every op the schemas accept (the CPU) */
    size_t n_rules;
    /* Optional: the device's kernel for op, NULL where it has none. A backend
     * without this slot is declared only and cannot run a plan. */
    gx_kernel_fn (*kernel)(gx_op op);
} gx_backend;

/* The built-in backends; static storage. */
const gx_backend *gx_backend_cpu(void);
const gx_backend *gx_backend_cuda(void);
/* A built-in backend by name, NULL if none is called that. */
const gx_backend *gx_backend_find(const char *name);
/* Names of the built-in backends, for messages: "cpu, cuda". */
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
