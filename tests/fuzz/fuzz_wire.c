/*
 * Fuzz target: a request header as gexecd reads it off the socket
 * (daemon/server.c): gx_wire_unpack, the common fields, RUN's tensor
 * descriptors and options, and the graph, which is then verified, compiled
 * for concrete shapes and executed (tests/fuzz/fuzz_graph.c).
 *
 * The graph is the header's "graph" field (LOAD, RUN) or, when there is
 * none, the top-level map itself, so bare encoded graphs fuzz well too.
 * Descriptors in "inputs" give the shapes of the graph inputs they name, as
 * a RUN's do. Headers are read as deep as the daemon's default nesting
 * limit allows; whatever gexec's decoder makes of one within msgpack-c's 32
 * levels, msgpack-c must make the same objects of.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "tests/fuzz/fuzz.h"

#define S_MAX_DESCS 64

static const gx_wire_limits s_lim = {1000, 64ll << 20};

/* The scalar header fields, read with the daemon's getters and ranges. */
static void s_fields(const msgpack_object *h)
{
    char err[256], *s = NULL;
    int64_t v;
    gx_mode mode;
    static const char *const ints[] = {"id", "v", "priority", "deadline_ms", "target"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        gx_mp_int(gx_mp_find(h, ints[i]), ints[i], i == 2 ? -100 : 0,
                  i == 2 ? 100 : INT64_MAX, &v, err, sizeof err);
    static const char *const strs[] = {"type", "graph_id", "mode"};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (gx_mp_strdup(gx_mp_find(h, strs[i]), strs[i], &s, err, sizeof err) == GX_OK && i == 2)
            gx_mode_parse(s, &mode);
        free(s);
        s = NULL;
    }
    const msgpack_object *o = gx_mp_find(h, "outputs");
    for (uint32_t i = 0; o && o->type == MSGPACK_OBJECT_ARRAY && i < o->via.array.size; i++) {
        if (gx_mp_strdup(&o->via.array.ptr[i], "outputs[]", &s, err, sizeof err) == GX_OK)
            free(s);
        s = NULL;
    }
}

/* RUN's "inputs": each descriptor that decodes goes into d[]. */
static size_t s_descs(const msgpack_object *h, gx_fuzz_shape *d)
{
    const msgpack_object *ins = gx_mp_find(h, "inputs");
    size_t n = 0;
    if (!ins || ins->type != MSGPACK_OBJECT_ARRAY)
        return 0;
    for (uint32_t i = 0; i < ins->via.array.size && n < S_MAX_DESCS; i++) {
        char err[1024];
        size_t nbytes;
        gx_fuzz_shape *x = &d[n];
        if (gx_wire_unpack_tensor_desc(&ins->via.array.ptr[i], "inputs[]", s_lim.max_tensor_bytes,
                                       &x->name, &x->dtype, &x->ndim, x->shape, &nbytes, err,
                                       sizeof err) == GX_OK)
            n++;
    }
    return n;
}

/* The same object, floats compared bit for bit (NaN too). */
static bool s_same(const msgpack_object *a, const msgpack_object *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return memcmp(&a->via.f64, &b->via.f64, sizeof a->via.f64) == 0;
    case MSGPACK_OBJECT_ARRAY:
        if (a->via.array.size != b->via.array.size)
            return false;
        for (uint32_t i = 0; i < a->via.array.size; i++)
            if (!s_same(&a->via.array.ptr[i], &b->via.array.ptr[i]))
                return false;
        return true;
    case MSGPACK_OBJECT_MAP:
        if (a->via.map.size != b->via.map.size)
            return false;
        for (uint32_t i = 0; i < a->via.map.size; i++)
            if (!s_same(&a->via.map.ptr[i].key, &b->via.map.ptr[i].key) ||
                !s_same(&a->via.map.ptr[i].val, &b->via.map.ptr[i].val))
                return false;
        return true;
    case MSGPACK_OBJECT_NIL:
    case MSGPACK_OBJECT_BOOLEAN:
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    case MSGPACK_OBJECT_STR:
    case MSGPACK_OBJECT_BIN:
    case MSGPACK_OBJECT_EXT:
        return msgpack_object_equal(*a, *b);
    }
    return false;
}

int gx_fuzz_wire(const uint8_t *data, size_t size)
{
    char err[1024];
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    int rc = gx_wire_unpack_depth(data, size, gx_wire_depth_for_nesting(0), &up, err, sizeof err);
    /* Within 32 levels, msgpack-c decodes the same objects. */
    if (rc == GX_OK && gx_wire_check(data, size, GX_WIRE_MAX_DEPTH, NULL, 0) == GX_OK) {
        msgpack_unpacked ref;
        msgpack_unpacked_init(&ref);
        size_t off = 0;
        if (msgpack_unpack_next(&ref, (const char *)data, size, &off) != MSGPACK_UNPACK_SUCCESS ||
            !s_same(&ref.data, &up.data)) {
            fprintf(stderr, "fuzz: gexec's decoder and msgpack-c disagree on %zu bytes\n", size);
            abort();
        }
        msgpack_unpacked_destroy(&ref);
    }
    if (rc == GX_EPROTO && gx_wire_check(data, size, gx_wire_depth_for_nesting(0), NULL, 0) == GX_OK) {
        fprintf(stderr, "fuzz: gx_wire_check accepts %zu bytes that the decoder refuses: %s\n",
                size, err);
        abort();
    }
    if (rc == GX_OK) {
        const msgpack_object *h = &up.data;
        gx_fuzz_shape descs[S_MAX_DESCS];
        size_t n_descs = 0;
        s_fields(h);
        n_descs = s_descs(h, descs);
        const msgpack_object *go = gx_mp_find(h, "graph");
        gx_graph *g = NULL;
        if (gx_wire_unpack_graph(go ? go : h, &s_lim, &g, err, sizeof err) == GX_OK) {
            gx_graph_id id;
            gx_wire_graph_id(g, &id);
            gx_fuzz_graph_roundtrip(g);
            gx_fuzz_graph_run(g, descs, n_descs, gx_fuzz_hash(data, size));
        }
        gx_graph_destroy(&g);
        for (size_t i = 0; i < n_descs; i++)
            free(descs[i].name);
    }
    msgpack_unpacked_destroy(&up);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_wire)
