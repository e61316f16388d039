/*
 * Files: .npy tensors and YAML graph files (docs/graph-format.md).
 *
 *     char err[256];
 *     gx_graph *g = NULL;
 *     if (gx_graph_load_yaml("examples/mlp.yaml", &g, err, sizeof err) < 0)
 *         fprintf(stderr, "%s\n", err);    // "examples/mlp.yaml:12:5: ..."
 *
 * Errors name the file and, for YAML, the line and column.
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

#ifdef __cplusplus
}
#endif
#endif
