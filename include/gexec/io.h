/*
 * Files: .npy tensors, YAML graph files (docs/graph-format.md) and ONNX
 * models (docs/onnx.md).
 *
 *     char err[256];
 *     gx_graph *g = NULL;
 *     if (gx_graph_load_yaml("examples/mlp.yaml", &g, err, sizeof err) < 0)
 *         fprintf(stderr, "%s\n", err);    // "examples/mlp.yaml:12:5: ..."
 *     if (gx_graph_load_onnx("model.onnx", &g, err, sizeof err) < 0)
 *         fprintf(stderr, "%s\n", err);    // "model.onnx: graph.node[3] (Conv 'c1'): ..."
 *
 * Errors name the file and, for YAML, the line and column; for ONNX the
 * node, attribute or tensor.
 */
#ifndef GEXEC_IO_H
#define GEXEC_IO_H

#include <gexec/graph.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read a .npy file (format 1.0-3.0, little-endian, C order) into a new
 * tensor owned by the caller (*out). On failure returns GX_EFORMAT, GX_EIO,
 * GX_EDTYPE or GX_ENOMEM, leaves *out NULL and writes a message to err. */
GX_EXPORT int gx_npy_load(const char *path, gx_tensor **out, char *err, size_t errlen);
/* Parse .npy bytes already in memory; same contract as gx_npy_load. */
GX_EXPORT int gx_npy_parse(const void *buf, size_t len, gx_tensor **out, char *err, size_t errlen);
/* Write t as a .npy file (format 1.0). GX_EDTYPE for dtypes numpy lacks. */
GX_EXPORT int gx_npy_save(const char *path, const gx_tensor *t, char *err, size_t errlen);

/* Load a YAML graph file; constants may be inline or .npy files relative to
 * the YAML file's directory. Caller owns *out. */
GX_EXPORT int gx_graph_load_yaml(const char *path, gx_graph **out, char *err, size_t errlen);
/* Parse YAML text; base_dir resolves relative .npy paths (NULL: cwd);
 * source_name is used in error messages. */
GX_EXPORT int gx_graph_parse_yaml(const char *text, size_t len, const char *base_dir,
                                  const char *source_name, gx_graph **out,
                                  char *err, size_t errlen);

/* Load an ONNX model (a ModelProto .onnx file): graph inputs that are not
 * initializers, outputs, initializers and Constant nodes as constants,
 * nodes with their attributes, subgraphs (If, Loop, Scan) as GRAPH
 * attributes. Tensors with external data are read from files relative to
 * the model's directory. Caller owns *out. On failure returns GX_EFORMAT
 * (malformed file), GX_EUNSUPPORTED (opset, attribute or value type
 * gexec lacks), GX_EDTYPE (a tensor's element type), GX_EATTR, GX_ELIMIT,
 * GX_EIO or GX_ENOMEM, leaves *out NULL and writes a message naming the
 * offending nodes or tensors to err. Which ops the graph uses is not
 * checked here: the daemon refuses unknown ones at LOAD (GX_EOP). */
GX_EXPORT int gx_graph_load_onnx(const char *path, gx_graph **out, char *err, size_t errlen);
/* Parse a serialized ModelProto already in memory; base_dir is where
 * external data files are looked up (NULL: models with external data are
 * refused). Same contract as gx_graph_load_onnx; buf is only read. */
GX_EXPORT int gx_graph_parse_onnx(const void *buf, size_t len, const char *base_dir,
                                  gx_graph **out, char *err, size_t errlen);
/* Read a serialized ONNX TensorProto (.pb file, as in the ONNX node tests'
 * test_data_set_0/input_0.pb) into a new tensor owned by the caller (*out).
 * External data is read relative to the file's directory. Errors as for
 * gx_graph_load_onnx; *out is NULL on failure. */
GX_EXPORT int gx_tensor_load_onnx(const char *path, gx_tensor **out, char *err, size_t errlen);
/* Read a value of a graph input or output (gx_graph_input_kind) from an
 * ONNX .pb file: a TensorProto for a tensor, a SequenceProto of tensors for
 * a sequence, an OptionalProto (of a tensor or such a sequence; empty:
 * none) when optional. An empty sequence is float32 (the file does not
 * say). Errors as for gx_tensor_load_onnx. */
GX_EXPORT int gx_value_load_onnx(const char *path, gx_kind kind, bool optional, gx_tensor **out,
                                 char *err, size_t errlen);
/* Parse TensorProto bytes in memory; external data is refused. */
GX_EXPORT int gx_tensor_parse_onnx(const void *buf, size_t len, gx_tensor **out, char *err,
                                   size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
