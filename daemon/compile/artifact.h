/*
 * Compiled plans on disk (seed 004's executable artifact; docs/artifact.md):
 * a plan serialises to one versioned, self-describing file (the step DAG,
 * each step's kernel by stable name, the buffer table with offsets in each
 * arena, the constants in the form the kernels read them) and reads back
 * into a plan that runs like the one compiled, without compiling.
 *
 *   void *buf; size_t len;
 *   if (gxd_artifact_write(plan, g, id.hex, &buf, &len, err, sizeof err) == GX_OK)
 *       ... save buf ...
 *   gxd_plan *p;
 *   rc = gxd_artifact_read(buf, len, g, id.hex, &lim, &p, err, sizeof err);
 *
 * A plan's nodes are borrowed from its graph: the artifact names them (and
 * the graph's constants it reads in place), and the reader binds them to g
 * again, which must be the graph the plan was compiled from (its id) and
 * outlive the plan. The reader trusts nothing in the file: the header's
 * checksum, format version and build id, then every index, size and name
 * are checked before anything runs. Explain-only records (rewrites, fuse
 * groups, the layout problem, partition fallout, widened steps) are not
 * saved; a plan read back has from_artifact set and explain says so.
 * Plans of control-flow subgraphs are compiled at run time as always.
 */
#ifndef GXD_ARTIFACT_H
#define GXD_ARTIFACT_H

#include "daemon/compile/compile.h"
#include "core/artifact_fmt.h"

/* This build's id (static storage): the gexec version and a hash of the
 * op and kernel tables and the artifact format. An artifact from another
 * build is refused (GX_EVERSION). */
const char *gxd_artifact_build_id(void);

/* Serialise p, compiled from g (whose id is graph_id), into *buf (malloc'ed,
 * *len bytes; the caller frees). GX_OK; GX_EUNSUPPORTED (why in err) for a
 * plan that cannot be saved: one compiled without its keyed inputs'
 * values, or with a kernel that has no stable name; GX_ENOMEM. */
int gxd_artifact_write(const gxd_plan *p, const gx_graph *g, const char *graph_id, void **buf,
                       size_t *len, char *err, size_t errlen);

/* The plan in the artifact buf[0..len) for graph g with id graph_id
 * (lim: its tune registry resolves the kernels the registry named; the
 * plan's run-time compiles use the caller's limits as always). *out is a
 * new plan owned by the caller, borrowing from g. GX_OK; GX_EFORMAT
 * (truncated, corrupt, malformed, an index or size out of range),
 * GX_EVERSION (another format version or build), GX_ENOTFOUND (stale: for
 * another graph, or a node, constant, kernel or device it names is not
 * here, or lim's tune registry now names another implementation for one
 * of its steps), GX_ENOMEM; err says which and where. */
int gxd_artifact_read(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                      const gxd_compile_limits *lim, gxd_plan **out, char *err, size_t errlen);

/* gxd_artifact_read for the plan of a slice of whole's batch
 * (gxd_plan_slice): constants the file holds with the same name, size and
 * bytes as whole's are whole's, borrowed instead of copied (as a slice
 * compiled from whole borrows them), so whole must outlive the plan. */
int gxd_artifact_read_slice(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                            const gxd_compile_limits *lim, const gxd_plan *whole, gxd_plan **out,
                            char *err, size_t errlen);

/* gxd_artifact_write, with the plan's prepared constants (packed weights)
 * in a constants file of their own (format version 2, docs/artifact.md):
 * *buf, *len the plan's file, which names it; *cbuf, *clen (NULL, 0 when
 * the plan has none: then *buf holds everything) the constants file,
 * whose name (16 hex digits, a hash of its contents and the build: plans
 * of the same constants name the same file) goes to cname (at least
 * GX_ARTIFACT_CONSTS + 1 bytes). The caller frees both. */
int gxd_artifact_write_split(const gxd_plan *p, const gx_graph *g, const char *graph_id,
                             void **buf, size_t *len, void **cbuf, size_t *clen, char *cname,
                             char *err, size_t errlen);

/* The name of a constants file whose body of len bytes has checksum sum
 * (gx_artifact_checksum) in this build: 16 hex digits into name (at
 * least GX_ARTIFACT_CONSTS + 1 bytes). */
void gxd_artifact_consts_name(uint64_t sum, uint64_t len, char *name, size_t n);

/* Where a reader gets the constants file a plan's file names: load gives
 * the whole file (header included) in *buf, *len, borrowed until the read
 * returns; GX_OK or an error (the plan is then refused, GX_ENOTFOUND). It
 * is called at most once per read, and not at all when the graph's table
 * of shared constants (lim->shared) already holds every constant the
 * plan reads from it. */
typedef struct gxd_artifact_consts {
    int (*load)(void *arg, const char *name, const void **buf, size_t *len);
    void *arg;
} gxd_artifact_consts;

/* gxd_artifact_read_slice (whole may be NULL) for a file that may name a
 * constants file (consts: where it comes from; NULL: such a file is
 * refused). A prepared copy of a graph constant goes to lim->shared (the
 * graph's table), shared with every other plan of the graph, compiled or
 * read, instead of a copy per plan. */
int gxd_artifact_read_ex(const void *buf, size_t len, const gx_graph *g, const char *graph_id,
                         const gxd_compile_limits *lim, const gxd_plan *whole,
                         const gxd_artifact_consts *consts, gxd_plan **out, char *err,
                         size_t errlen);

/* The key of the artifact of plan inputs for graph graph_id on the
 * devices of lim (lim->part; NULL: the CPU) in this build:
 * "<graph id>-<16 hex digits>" into buf (at least 96 bytes). The hex digits
 * hash the inputs' dtypes, shapes and layouts, the values of keyed inputs
 * (keyed[i], NULL: none; as the compiler keys them: with data, at most
 * GXD_MAX_KEY_BYTES), the device names, the compiler's switches and the
 * build id. Plans for other keyed values have other keys. */
void gxd_artifact_key(const char *graph_id, const gx_view *inputs, const bool *keyed,
                      size_t n_inputs, const gxd_compile_limits *lim, char *buf, size_t len);

#endif
