/*
 * Fuzz targets: one per parser that reads bytes from outside the process.
 *
 *     gx_fuzz_wire    a request header off the socket (gx_wire_unpack, the
 *                     header fields, tensor descriptors, gx_wire_unpack_graph),
 *                     then the compiler and the sequential executor on every
 *                     graph that decodes (kernels must stay inside their
 *                     tensors, the memory plan must keep live values apart)
 *     gx_fuzz_npy     a .npy file (gx_npy_parse)
 *     gx_fuzz_yaml    a YAML graph file (gx_graph_parse_yaml), then the graph's
 *                     canonical wire encoding and the compiler as for wire
 *     gx_fuzz_onnx    an ONNX model (gx_graph_parse_onnx), then the graph's
 *                     canonical wire encoding and the compiler as for wire;
 *                     the same bytes as an ONNX tensor (gx_tensor_parse_onnx)
 *     gx_fuzz_config  a gexecd config file (gxd_config_load), then a dump and
 *                     reload that must reproduce it
 *     gx_fuzz_artifact a compiled-plan artifact (gxd_artifact_read) against a
 *                     fixed graph, as a file and as a body behind a valid
 *                     header; an accepted plan must write and read back
 *     gx_fuzz_consts  a constants file (the prepared constants a plan's file
 *                     names) beside a valid plan file of that graph, as a
 *                     file and as a body behind a valid header
 *
 * Each accepts any bytes, returns 0, and must neither crash, leak, trip a
 * sanitizer nor take long. A broken invariant (a canonical encoding that
 * does not round-trip, a dumped config that does not reload) aborts with a
 * message, so the fuzzer reports it as a crash.
 *
 * They are called by tests/check_fuzz.c, which replays tests/fuzz/corpus/
 * in `make check`, and by libFuzzer through LLVMFuzzerTestOneInput when a
 * file is built with -DGX_LIBFUZZER (tests/fuzz/run.sh).
 */
#ifndef GX_FUZZ_H
#define GX_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <gexec/graph.h>

int gx_fuzz_wire(const uint8_t *data, size_t size);
int gx_fuzz_npy(const uint8_t *data, size_t size);
int gx_fuzz_yaml(const uint8_t *data, size_t size);
int gx_fuzz_onnx(const uint8_t *data, size_t size);
int gx_fuzz_config(const uint8_t *data, size_t size);
int gx_fuzz_artifact(const uint8_t *data, size_t size);
int gx_fuzz_consts(const uint8_t *data, size_t size);
/* The fixed graph gx_fuzz_artifact and gx_fuzz_consts read artifacts
 * against (tests/fuzz/fuzz_util.c; a new graph the caller destroys;
 * tests/fuzz/corpus/artifact/ holds its plans, tests/fuzz/corpus/consts/
 * its constants). */
gx_graph *gx_fuzz_artifact_graph(void);

/* ---- shared by the graph targets (tests/fuzz/fuzz_graph.c) ---- */

/* An input shape a request gave for a graph input (a RUN descriptor). */
typedef struct gx_fuzz_shape {
    char *name; /* owned */
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
} gx_fuzz_shape;

/* Run what the daemon runs on a graph a client sent: verify, then compile
 * for concrete input shapes (given[] by name where present, else the
 * declared shape with each -1 dim set to 1..3 chosen by seed). When compile
 * accepts it, check the memory plan's contract and, when the work is small
 * enough for a fuzzer, execute the plan with the sequential executor over
 * zero-filled inputs, every tensor followed by poisoned bytes (ASan). */
void gx_fuzz_graph_run(const gx_graph *g, const gx_fuzz_shape *given, size_t n_given,
                       uint32_t seed);

/* Encode g canonically, decode it as the daemon would and encode it again:
 * if the daemon accepts it, both encodings must be equal (the graph id the
 * client computes is the one the daemon computes). Aborts otherwise. */
void gx_fuzz_graph_roundtrip(const gx_graph *g);

/* ---- shared by every target (tests/fuzz/fuzz_util.c) ---- */

/* FNV-1a of the input, to derive choices (symbolic dim sizes) from it. */
uint32_t gx_fuzz_hash(const uint8_t *data, size_t size);

/* A memfd holding size bytes, its /proc/self/fd path in path (for APIs that
 * take a file name); the caller closes it. -1 without memfds or /proc. */
int gx_fuzz_memfd(const char *name, const void *data, size_t size, char *path, size_t pathlen);

/* The libFuzzer entry point calling fn, in a file built with -DGX_LIBFUZZER. */
#ifdef GX_LIBFUZZER
#define GX_FUZZ_ENTRY(fn)                                                     \
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);                   \
    int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return fn(d, n); }
#else
#define GX_FUZZ_ENTRY(fn)
#endif

#endif
