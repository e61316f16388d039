/*
 * Fuzz target: a compiled-plan artifact file as gexecd reads it from its
 * artifact cache (daemon/compile/artifact.c), against a fixed graph (an
 * MLP: MatMul, Add, Relu, Softmax over constants). The bytes are tried
 * twice: as a whole file (header, checksum, build id: almost always
 * refused early) and as the msgpack body behind a valid header with this
 * build's id, so the mutations reach the reader's checks of every field,
 * index, offset and name. A plan that is accepted must write back to an
 * artifact that reads again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/artifact.h"
#include "gexec/client.h"
#include "core/internal.h"
#include "core/wire.h"
#include "tests/fuzz/fuzz.h"

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 16 << 20,
                                         .max_arena_bytes = 64 << 20};

static void s_try(const gx_graph *g, const char *id, const void *buf, size_t len)
{
    char err[512];
    gxd_plan *p = NULL;
    if (gxd_artifact_read(buf, len, g, id, &s_lim, &p, err, sizeof err) != GX_OK)
        return;
    void *again = NULL;
    size_t n = 0;
    gxd_plan *q = NULL;
    if (gxd_artifact_write(p, g, id, &again, &n, err, sizeof err) != GX_OK ||
        gxd_artifact_read(again, n, g, id, &s_lim, &q, err, sizeof err) != GX_OK) {
        fprintf(stderr, "fuzz: an accepted artifact does not write and read back: %s\n", err);
        abort();
    }
    gxd_plan_destroy(&q);
    free(again);
    gxd_plan_destroy(&p);
}

int gx_fuzz_artifact(const uint8_t *data, size_t size)
{
    static gx_graph *g;
    static gx_graph_id id;
    if (!g) { /* once: kept for the process */
        g = gx_fuzz_artifact_graph();
        gx_wire_graph_id(g, &id);
    }
    s_try(g, id.hex, data, size);
    unsigned char *file = malloc(GX_ARTIFACT_HEADER + size + 1);
    if (!file)
        return 0;
    memcpy(file + GX_ARTIFACT_HEADER, data, size);
    gx_artifact_header_write(file, data, size, gxd_artifact_build_id());
    s_try(g, id.hex, file, GX_ARTIFACT_HEADER + size);
    free(file);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_artifact)
