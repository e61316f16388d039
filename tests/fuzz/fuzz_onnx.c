/*
 * Fuzz target: ONNX bytes. gx_graph_parse_onnx must refuse with a message or
 * return a graph; a graph that imports is what gexec-submit would send, so
 * its canonical wire encoding must survive the daemon's decoder unchanged,
 * and it goes through the compiler and the executor as in the wire target.
 * The same bytes are also read as a TensorProto (gx_tensor_parse_onnx), which
 * must return a consistent tensor or an error. No base_dir: external data is
 * refused, so nothing outside the input is read.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"
#include "tests/fuzz/fuzz.h"

static void s_fail(const char *what, const char *err)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, err);
    abort();
}

int gx_fuzz_onnx(const uint8_t *data, size_t size)
{
    char err[4096] = "";
    gx_graph *g = NULL;
    int rc = gx_graph_parse_onnx(data, size, NULL, &g, err, sizeof err);
    if (rc < 0 && (g || !*err))
        s_fail("gx_graph_parse_onnx failed without a message or with a graph", err);
    if (rc == GX_OK) {
        gx_fuzz_graph_roundtrip(g);
        gx_fuzz_graph_run(g, NULL, 0, gx_fuzz_hash(data, size));
    }
    gx_graph_destroy(&g);

    gx_tensor *t = NULL;
    err[0] = '\0';
    rc = gx_tensor_parse_onnx(data, size, &t, err, sizeof err);
    size_t nbytes;
    if (rc < 0 && (t || !*err))
        s_fail("gx_tensor_parse_onnx failed without a message or with a tensor", err);
    if (rc == GX_OK && (!gx_shape_nbytes(t->dtype, t->ndim, t->shape, &nbytes) ||
                        nbytes != t->nbytes || (nbytes && !t->data)))
        s_fail("gx_tensor_parse_onnx returned an inconsistent tensor", "");
    gx_tensor_destroy(&t);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_onnx)
