/*
 * What the daemon does with a graph once it has decoded one, for the graph
 * fuzz targets (wire, yaml): verify, compile for concrete shapes, execute.
 * See fuzz.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/exec/exec.h"
#include "core/wire.h"
#include "tests/fuzz/fuzz.h"

/* Generous but bounded, like a daemon's configured limits. */
static const gxd_compile_limits s_lim = {
    .max_nodes = 1000,
    .max_tensor_bytes = 64ll << 20,
    .max_arena_bytes = 256ll << 20,
};
static const gx_wire_limits s_wire_lim = {1000, 64ll << 20};

/* Plans doing more work than this compile but are not executed: a big
 * MatMul is slow, not wrong, and libFuzzer would report it as a timeout. */
#define S_EXEC_MAX_FLOPS 2e7
#define S_EXEC_MAX_BYTES 8e7
#define S_EXEC_MAX_ZONE ((size_t)64 << 20)
/* Above this many values the pairwise memplan check is skipped (quadratic). */
#define S_CHECK_MAX_VALUES 1024
/* Poisoned bytes after every value in the execution zone. */
#define S_REDZONE 64

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define S_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define S_ASAN 1
#endif
#ifdef S_ASAN
#include <sanitizer/asan_interface.h>
#define S_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define S_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define S_POISON(p, n) ((void)(p), (void)(n))
#define S_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static size_t s_aligned(size_t n)
{
    return (n + GX_ALIGN - 1) / GX_ALIGN * GX_ALIGN;
}

/* The concrete shape of graph input i: a given one of the same name, else
 * the declaration with symbolic dims made concrete. */
static void s_input_view(const gx_value_decl *d, size_t i, const gx_fuzz_shape *given,
                         size_t n_given, uint32_t seed, gx_view *v)
{
    memset(v, 0, sizeof *v);
    for (size_t k = 0; k < n_given; k++)
        if (strcmp(given[k].name, d->name) == 0) {
            v->dtype = given[k].dtype;
            v->ndim = given[k].ndim;
            memcpy(v->shape, given[k].shape, sizeof v->shape);
            return;
        }
    v->dtype = d->dtype;
    v->ndim = d->ndim;
    for (int k = 0; k < d->ndim && k < GX_MAX_DIMS; k++)
        v->shape[k] = d->shape[k] >= 0 ? d->shape[k]
                                       : 1 + (int64_t)((seed >> ((i * 3 + (size_t)k) % 29)) % 3);
}

static void s_broken(const char *what, const gxd_plan *plan, size_t a, size_t b)
{
    fprintf(stderr, "fuzz: memplan: %s (values '%s' and '%s')\n", what, plan->values[a].name,
            plan->values[b].name);
    abort();
}

/* Pass 8's contract (memplan.c): aligned offsets inside the arena, and no
 * two values that are live at the same step overlap, but for views and
 * Concat inputs placed in their output (gxd_memory_home). */
static void s_check_memplan(const gxd_plan *plan)
{
    for (size_t a = 0; a < plan->n_values; a++) {
        const gxd_value *va = &plan->values[a];
        if (va->kind == GXD_VALUE_CONST || va->kind == GXD_VALUE_FUSED || va->nbytes == 0)
            continue;
        if (va->offset % GX_ALIGN != 0 || va->offset + va->nbytes > plan->arena_bytes)
            s_broken("a value is misaligned or outside the arena", plan, a, a);
        if (plan->n_values > S_CHECK_MAX_VALUES)
            continue;
        for (size_t b = a + 1; b < plan->n_values; b++) {
            const gxd_value *vb = &plan->values[b];
            if (vb->kind == GXD_VALUE_CONST || vb->kind == GXD_VALUE_FUSED || vb->nbytes == 0)
                continue;
            /* a view and its source, a Concat's input written in place in
             * its output: the same bytes by design (two inputs placed in
             * one Concat are still checked) */
            int ha = gxd_memory_home(plan, (int)a), hb = gxd_memory_home(plan, (int)b);
            if (ha == (int)b || hb == (int)a || (ha == hb && (va->is_view || vb->is_view)))
                continue;
            bool live_together = va->def <= vb->last_use && vb->def <= va->last_use;
            bool overlap = va->offset < vb->offset + vb->nbytes &&
                           vb->offset < va->offset + va->nbytes;
            if (live_together && overlap)
                s_broken("two live values share memory", plan, a, b);
        }
    }
}

/* Execute the plan over zero-filled inputs. Rather than the plan's shared
 * arena, every value (constants included, copied) gets its own slot in one
 * zone, followed by poisoned bytes, so under ASan a kernel that reads or
 * writes past any tensor is caught, not only past the arena. The plan is
 * ours: its offsets and constant pointers are rewritten for that. */
static void s_execute(gxd_plan *plan)
{
    double bytes = 0;
    for (size_t s = 0; s < plan->n_steps; s++)
        bytes += plan->steps[s].cost.bytes;
    size_t zone_bytes = 0;
    for (size_t i = 0; i < plan->n_values; i++)
        zone_bytes += s_aligned(plan->values[i].nbytes) + S_REDZONE;
    if (plan->flops > S_EXEC_MAX_FLOPS || bytes > S_EXEC_MAX_BYTES || zone_bytes > S_EXEC_MAX_ZONE)
        return;
    gx_view *in = calloc(plan->n_inputs + 1, sizeof *in);
    char *zone = gx_aligned_alloc(zone_bytes);
    bool ok = in && zone;
    for (size_t i = 0; i < plan->n_inputs && ok; i++) {
        const gxd_value *v = &plan->values[plan->inputs[i]];
        in[i] = v->view;
        ok = (in[i].data = gx_aligned_alloc(v->nbytes)) != NULL;
        if (ok)
            memset(in[i].data, 0, v->nbytes);
    }
    if (ok) {
        memset(zone, 0, zone_bytes);
        size_t off = 0;
        for (size_t i = 0; i < plan->n_values; i++) {
            gxd_value *v = &plan->values[i];
            if (v->kind == GXD_VALUE_CONST && !v->view.data) {
                /* freed by prepare: no step reads it */
            } else if (v->kind == GXD_VALUE_CONST) {
                if (v->nbytes)
                    memcpy(zone + off, v->view.data, v->nbytes);
                v->view.data = zone + off;
            } else {
                v->offset = off;
            }
            S_POISON(zone + off + v->nbytes, s_aligned(v->nbytes) - v->nbytes + S_REDZONE);
            off += s_aligned(v->nbytes) + S_REDZONE;
        }
        atomic_bool cancel = false;
        gxd_exec_stop stop = {&cancel, 0};
        gxd_frame f;
        char err[1024] = "";
        int rc = gxd_frame_init(&f, plan, zone, in, &s_lim, &stop, err, sizeof err);
        if (rc == GX_OK)
            rc = gxd_exec_seq(&f);
        /* dynamic steps may fail at run time (a bad runtime shape), with a
         * message; anything else is a bug */
        if (rc != GX_OK && (!err[0] || rc == GX_ECANCELLED || rc == GX_ETIMEDOUT)) {
            fprintf(stderr, "fuzz: gxd_exec_seq returned %s without a stop request\n",
                    gx_status_name(rc));
            abort();
        }
        /* Read every output as the daemon does when it replies. */
        volatile unsigned char sink = 0;
        for (size_t o = 0; rc == GX_OK && o < plan->n_outputs; o++) {
            const gx_view *v = gxd_frame_output(&f, o);
            const unsigned char *p = v->data;
            size_t nbytes = (size_t)v->numel * gx_dtype_size(v->dtype);
            for (size_t b = 0; b < nbytes; b += 64)
                sink ^= p[b];
            if (nbytes)
                sink ^= p[nbytes - 1];
        }
        gxd_frame_fini(&f);
        (void)sink;
        S_UNPOISON(zone, zone_bytes);
    }
    for (size_t i = 0; in && i < plan->n_inputs; i++)
        free(in[i].data);
    free(in);
    free(zone);
}

void gx_fuzz_graph_run(const gx_graph *g, const gx_fuzz_shape *given, size_t n_given,
                       uint32_t seed)
{
    char err[1024];
    if (gxd_verify(g, &s_lim, err, sizeof err) != GX_OK)
        return;
    gx_view *in = calloc(g->n_inputs + 1, sizeof *in);
    if (!in)
        return;
    for (size_t i = 0; i < g->n_inputs; i++)
        s_input_view(&g->inputs[i], i, given, n_given, seed, &in[i]);
    gxd_plan *plan = NULL;
    int rc = gxd_compile(g, in, &s_lim, &plan, err, sizeof err);
    free(in);
    if (rc == GX_OK) {
        if (!plan || plan->arena_bytes > (uint64_t)s_lim.max_arena_bytes) {
            fprintf(stderr, "fuzz: gxd_compile accepted a plan over its arena limit\n");
            abort();
        }
        s_check_memplan(plan);
        s_execute(plan);
    } else if (plan) {
        fprintf(stderr, "fuzz: gxd_compile failed (%s) but returned a plan\n", err);
        abort();
    }
    gxd_plan_destroy(&plan);
}

static void s_pack(const gx_graph *g, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    gx_wire_pack_graph(&pk, g);
}

void gx_fuzz_graph_roundtrip(const gx_graph *g)
{
    msgpack_sbuffer a, b;
    msgpack_unpacked up;
    gx_graph *back = NULL;
    char err[1024];
    s_pack(g, &a);
    msgpack_unpacked_init(&up);
    int rc = gx_wire_unpack(a.data, a.size, &up, err, sizeof err);
    if (rc == GX_OK)
        rc = gx_wire_unpack_graph(&up.data, &s_wire_lim, &back, err, sizeof err);
    if (rc == GX_OK) {
        s_pack(back, &b);
        if (a.size != b.size || memcmp(a.data, b.data, a.size) != 0) {
            fprintf(stderr,
                    "fuzz: the canonical encoding of a graph (%zu bytes) re-encodes "
                    "differently (%zu bytes) after the daemon decodes it\n",
                    a.size, b.size);
            abort();
        }
        msgpack_sbuffer_destroy(&b);
    }
    gx_graph_destroy(&back);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&a);
}
