/*
 * Fuzz target: a YAML graph file (gx_graph_parse_yaml). A graph that parses
 * is what gexec-submit would send: its canonical wire encoding must survive
 * the daemon's decoder unchanged, and it goes through the compiler and the
 * executor as in the wire target. Relative `file:` constants resolve in
 * examples/ of the source tree (mlp_input.npy, broadcast_input.npy).
 */
#include <stdlib.h>

#include <gexec/io.h>

#include "tests/fuzz/fuzz.h"

#ifdef GX_TEST_SRCDIR
#define S_BASE_DIR GX_TEST_SRCDIR "/examples"
#else
#define S_BASE_DIR NULL
#endif

int gx_fuzz_yaml(const uint8_t *data, size_t size)
{
    char err[1024];
    gx_graph *g = NULL;
    if (gx_graph_parse_yaml((const char *)data, size, S_BASE_DIR, "fuzz.yaml", &g, err,
                            sizeof err) == GX_OK) {
        gx_fuzz_graph_roundtrip(g);
        gx_fuzz_graph_run(g, NULL, 0, gx_fuzz_hash(data, size));
    }
    gx_graph_destroy(&g);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_yaml)
