/*
 * Building a computation graph in code. Ops, attribute names and semantics
 * follow the ONNX operator specification; values are named tensors.
 *
 *     gx_graph *g = gx_graph_new("mlp");
 *     int64_t xs[2] = {1, 4};
 *     gx_graph_add_input(g, "x", GX_F32, 2, xs);
 *     gx_graph_add_const(g, "w", &w);          // takes ownership of w
 *     const char *mm_in[] = {"x", "w"}, *mm_out[] = {"h"};
 *     gx_graph_add_node(g, "MatMul", "mm", 2, mm_in, 1, mm_out);
 *     gx_node *n = gx_graph_add_node(g, "Softmax", NULL, 1,
 *                                    (const char *[]){"h"}, 1,
 *                                    (const char *[]){"y"});
 *     gx_node_set_int(n, "axis", -1);
 *     gx_graph_add_output(g, "y");
 *     ...
 *     gx_graph_destroy(&g);
 *
 * The builder checks only what it can see locally (non-empty names, valid
 * dtypes, duplicate attributes); the daemon verifies the whole graph at LOAD.
 */
#ifndef GEXEC_GRAPH_H
#define GEXEC_GRAPH_H

#include <stdbool.h>
#include <gexec/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gx_graph gx_graph;
typedef struct gx_node gx_node;

/* A new empty graph; name may be NULL. Caller owns it. NULL on ENOMEM. */
GX_EXPORT gx_graph *gx_graph_new(const char *name);
/* Frees the graph, its nodes and constants; accepts NULL; sets *g = NULL. */
GX_EXPORT void gx_graph_destroy(gx_graph **g);

/* Declare a graph input. A dim of -1 is symbolic (fixed per RUN); ndim -1
 * leaves the rank unknown too (any shape at RUN, as ONNX's input without a
 * shape). */
GX_EXPORT int gx_graph_add_input(gx_graph *g, const char *name, gx_dtype dt,
                                 int ndim, const int64_t *shape);
/* Declare a graph output by value name. */
GX_EXPORT int gx_graph_add_output(gx_graph *g, const char *name);
/* Add a constant (weights). Ownership of *t moves into the graph, also on
 * failure; *t is set to NULL. */
GX_EXPORT int gx_graph_add_const(gx_graph *g, const char *name, gx_tensor **t);

/* Add a node. An empty string "" in inputs marks an omitted optional input.
 * name may be NULL (one is generated). Returns a node owned by the graph,
 * valid until the graph is destroyed, or NULL on bad arguments / ENOMEM. */
GX_EXPORT gx_node *gx_graph_add_node(gx_graph *g, const char *op, const char *name,
                                     size_t n_in, const char *const *inputs,
                                     size_t n_out, const char *const *outputs);

/* Attributes (ONNX types INT, FLOAT, STRING, INTS, FLOATS, TENSOR). Setting an
 * attribute twice is GX_EATTR. */
GX_EXPORT int gx_node_set_int(gx_node *n, const char *name, int64_t v);
GX_EXPORT int gx_node_set_float(gx_node *n, const char *name, double v);
GX_EXPORT int gx_node_set_string(gx_node *n, const char *name, const char *v);
GX_EXPORT int gx_node_set_ints(gx_node *n, const char *name, const int64_t *v, size_t count);
GX_EXPORT int gx_node_set_floats(gx_node *n, const char *name, const double *v, size_t count);
/* Ownership of *t moves into the node, also on failure. */
GX_EXPORT int gx_node_set_tensor(gx_node *n, const char *name, gx_tensor **t);
/* A subgraph attribute (If's then_branch/else_branch, Loop's body): takes
 * ownership of *g and sets it to NULL, also on failure. The subgraph may use
 * values of the enclosing graphs by name. */
GX_EXPORT int gx_node_set_graph(gx_node *n, const char *name, gx_graph **g);

GX_EXPORT size_t gx_graph_node_count(const gx_graph *g);
GX_EXPORT size_t gx_graph_input_count(const gx_graph *g);
GX_EXPORT size_t gx_graph_output_count(const gx_graph *g);
/* Name of input/output i; owned by the graph; NULL if i is out of range. */
GX_EXPORT const char *gx_graph_input_name(const gx_graph *g, size_t i);
GX_EXPORT const char *gx_graph_output_name(const gx_graph *g, size_t i);
/* The declared dtype of input i; GX_DTYPE_COUNT if i is out of range. */
GX_EXPORT gx_dtype gx_graph_input_dtype(const gx_graph *g, size_t i);
/* What input (output) i holds: GX_KIND_TENSOR or GX_KIND_SEQUENCE (of its
 * dtype tensors), GX_KIND_COUNT if i is out of range; *optional (may be
 * NULL) says whether it may also be none (an ONNX optional). */
GX_EXPORT gx_kind gx_graph_input_kind(const gx_graph *g, size_t i, bool *optional);
GX_EXPORT gx_kind gx_graph_output_kind(const gx_graph *g, size_t i, bool *optional);

#ifdef __cplusplus
}
#endif
#endif
