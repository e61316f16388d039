/*
 * Fuzz target: a constants file (the prepared constants, packed weights,
 * that a plan's artifact file names; docs/artifact.md) as gexecd reads it
 * for a valid plan file of the fixed graph gx_fuzz_artifact_graph, the
 * plan the compiler makes for it. The bytes are tried twice: as the whole
 * constants file the plan names (magic, sizes, checksum, version, build
 * id, name: almost always refused early), and as the body of a valid
 * constants file, the plan's file renamed to name that one, so that the
 * mutations reach the bounds of every constant the plan reads there.
 * Every buffer is exactly its size (ASan sees overreads). An accepted
 * plan must have its prepared constants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/artifact_fmt.h"
#include "core/internal.h"
#include "core/wire.h"
#include "daemon/compile/artifact.h"
#include "tests/fuzz/fuzz.h"

static const gxd_compile_limits s_lim = {.max_nodes = 1000, .max_tensor_bytes = 16 << 20,
                                         .max_arena_bytes = 64 << 20};

/* The constants file a read asks for. */
typedef struct s_file {
    const void *buf;
    size_t len;
} s_file;

static int s_load(void *arg, const char *name, const void **buf, size_t *len)
{
    const s_file *f = arg;
    (void)name;
    *buf = f->buf;
    *len = f->len;
    return GX_OK;
}

/* The plan's file (plan, n bytes) read with the constants file c. */
static void s_try(const gx_graph *g, const char *id, const void *plan, size_t n, const void *c,
                  size_t clen)
{
    char err[512];
    gxd_plan *p = NULL;
    s_file f = {c, clen};
    const gxd_artifact_consts cs = {s_load, &f};
    if (gxd_artifact_read_ex(plan, n, g, id, &s_lim, NULL, &cs, &p, err, sizeof err) != GX_OK)
        return;
    for (size_t i = 0; i < p->n_prepared; i++)
        if (!p->values[p->prepared[i].value].view.data) {
            fprintf(stderr, "fuzz: an accepted plan lacks prepared constant %zu\n", i);
            abort();
        }
    gxd_plan_destroy(&p);
}

/* The plan file of the fixed graph and the name of its constants file,
 * made once; NULL when the compiler prepared no constant. */
static unsigned char *s_plan_file(const gx_graph *g, const char *id, size_t *len, char *cname)
{
    char err[512];
    gx_view in = {.dtype = GX_F32, .ndim = 2, .shape = {4, 16}, .numel = 64};
    gxd_plan *p = NULL;
    void *buf = NULL, *cbuf = NULL;
    size_t clen = 0;
    if (gxd_compile(g, &in, &s_lim, &p, err, sizeof err) != GX_OK ||
        gxd_artifact_write_split(p, g, id, &buf, len, &cbuf, &clen, cname, err, sizeof err) !=
            GX_OK) {
        fprintf(stderr, "fuzz: the fixed graph does not compile and write: %s\n", err);
        abort();
    }
    gxd_plan_destroy(&p);
    free(cbuf);
    if (!clen) {
        free(buf);
        return NULL;
    }
    return buf;
}

int gx_fuzz_consts(const uint8_t *data, size_t size)
{
    static gx_graph *g;
    static gx_graph_id id;
    static unsigned char *plan;
    static size_t plan_len;
    static char cname[GX_ARTIFACT_CONSTS + 1];
    if (!g) { /* once: kept for the process */
        g = gx_fuzz_artifact_graph();
        gx_wire_graph_id(g, &id);
        plan = s_plan_file(g, id.hex, &plan_len, cname);
    }
    if (!plan)
        return 0;
    s_try(g, id.hex, plan, plan_len, data, size);
    /* the bytes as a valid constants file's body, named as its contents
     * hash, and the plan's file naming it (the name's every occurrence,
     * the header resealed) */
    unsigned char *c = malloc(GX_ARTIFACT_HEADER + size + 1), *q = malloc(plan_len);
    if (!c || !q) {
        free(c), free(q);
        return 0;
    }
    memcpy(c + GX_ARTIFACT_HEADER, data, size);
    const uint64_t sum = gx_artifact_checksum(data, size);
    char name[GX_ARTIFACT_CONSTS + 1];
    gxd_artifact_consts_name(sum, size, name, sizeof name);
    gx_artifact_header_put(c, GX_ARTIFACT_CONSTS_MAGIC, size, sum, gxd_artifact_build_id(), name);
    memcpy(q, plan, plan_len);
    const size_t nl = strlen(cname);
    unsigned char *body = q + GX_ARTIFACT_HEADER, *end = q + plan_len;
    for (unsigned char *at = body; nl && (at = memmem(at, (size_t)(end - at), cname, nl));
         at += nl)
        memcpy(at, name, nl);
    const size_t blen = plan_len - GX_ARTIFACT_HEADER;
    gx_artifact_header_put(q, GX_ARTIFACT_MAGIC, blen, gx_artifact_checksum(body, blen),
                           gxd_artifact_build_id(), name);
    s_try(g, id.hex, q, plan_len, c, GX_ARTIFACT_HEADER + size);
    free(c), free(q);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_consts)
