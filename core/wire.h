/*
 * The wire codec (docs/protocol.md): msgpack encoding of graphs, tensor
 * descriptors and message headers, shared by libgexec and gexecd.
 *
 * Decoding is written for hostile input: gx_wire_unpack first walks the
 * bytes without allocating (gx_wire_check), so a header claiming 2^32
 * elements or nesting 10^6 deep is refused before msgpack-c allocates, and
 * every getter names the field it rejects ("nodes[3].inputs[0]: expected a
 * string").
 */
#ifndef GX_WIRE_H
#define GX_WIRE_H

#include <msgpack.h>

#include "core/internal.h"
#include "core/mpdecode.h"

#define GX_WIRE_MAX_NAME 1024

/*
 * Graph nesting: the graph a message carries is level 0, the subgraphs of
 * its nodes (If's branches, Loop's and Scan's bodies) level 1, theirs
 * level 2... A decoder allows max_nesting levels (gexecd: limits.max_nesting)
 * and names the node that goes deeper; no configuration may allow more than
 * GX_WIRE_MAX_NESTING.
 */
#define GX_WIRE_NESTING_DEFAULT 16
#define GX_WIRE_MAX_NESTING 64
/*
 * msgpack depth of a request carrying a graph nested n levels: the header
 * map (1) holds the graph (2); the deepest thing in a graph at depth D is a
 * tensor attribute's shape (D+6: nodes, node, attrs, [type, value], tensor,
 * shape), and each level of nesting adds 5 (nodes, node, attrs, [type,
 * value], subgraph). The message depth limit follows from the nesting limit
 * through this, so a graph within the nesting limit is never refused for
 * its msgpack depth.
 */
#define GX_WIRE_DEPTH_FOR_NESTING(n) (8 + 5 * (n))
/* Depth allowed in messages that carry no graph (replies, gx_wire_unpack),
 * and the least any request may nest. */
#define GX_WIRE_MAX_DEPTH 32
/* The most gx_wire_check ever allows. */
#define GX_WIRE_DEPTH_LIMIT GX_WIRE_DEPTH_FOR_NESTING(GX_WIRE_MAX_NESTING + 1)
_Static_assert(GX_WIRE_DEPTH_LIMIT <= GX_MP_MAX_DEPTH, "the decoder's depth bound");

typedef struct gx_wire_limits {
    int64_t max_nodes;
    int64_t max_tensor_bytes;
} gx_wire_limits;

/* The message depth limit of a daemon whose nesting limit is max_nesting
 * (0: the default): GX_WIRE_DEPTH_FOR_NESTING(max_nesting + 1), never below
 * GX_WIRE_MAX_DEPTH. The level of slack lets a graph one level too deep
 * decode far enough for gx_wire_unpack_graph_nested to name its node. */
int gx_wire_depth_for_nesting(int max_nesting);

/* Check that buf holds exactly one well-formed msgpack object whose
 * container counts fit in the remaining bytes and whose depth is at most
 * max_depth (itself at most GX_WIRE_DEPTH_LIMIT). GX_OK or GX_EPROTO with a
 * message. Allocates nothing. */
int gx_wire_check(const void *buf, size_t len, int max_depth, char *err, size_t errlen);
/* gx_wire_check with max_depth, then decode into *out (msgpack_unpacked_init'ed
 * by the caller, destroyed by the caller with msgpack_unpacked_destroy).
 * Strings and binaries in *out point into buf, which must outlive it. The
 * decoder is gexec's own: msgpack-c's stops at 32 levels. */
int gx_wire_unpack_depth(const void *buf, size_t len, int max_depth, msgpack_unpacked *out,
                         char *err, size_t errlen);
/* gx_wire_unpack_depth with GX_WIRE_MAX_DEPTH. */
int gx_wire_unpack(const void *buf, size_t len, msgpack_unpacked *out, char *err,
                   size_t errlen);

/* ---- reading msgpack maps ---- */

/* Value of key in map o, or NULL (also when o is not a map). */
const msgpack_object *gx_mp_find(const msgpack_object *o, const char *key);
/* A string value as a new NUL-terminated copy (caller frees). Rejects
 * non-strings, embedded NULs and strings over GX_WIRE_MAX_NAME bytes. */
int gx_mp_strdup(const msgpack_object *o, const char *what, char **out, char *err,
                 size_t errlen);
/* Integer value (positive or negative msgpack int) within [lo, hi]. */
int gx_mp_int(const msgpack_object *o, const char *what, int64_t lo, int64_t hi,
              int64_t *out, char *err, size_t errlen);
/* Compare a msgpack string with a C string. */
bool gx_mp_streq(const msgpack_object *o, const char *s);

/* ---- packing ---- */

void gx_mp_pack_str(msgpack_packer *pk, const char *s);
/* Tensor descriptor {name, dtype, shape}; data travels separately. */
void gx_wire_pack_tensor_desc(msgpack_packer *pk, const char *name, gx_dtype dt, int ndim,
                              const int64_t *shape);
/* Decode a descriptor; *name is a new string (caller frees), *nbytes the
 * data size it implies (checked against max_bytes). */
int gx_wire_unpack_tensor_desc(const msgpack_object *o, const char *what, int64_t max_bytes,
                               char **name, gx_dtype *dt, int *ndim, int64_t *shape,
                               size_t *nbytes, char *err, size_t errlen);

/* ---- shared-memory references (docs/shm.md) ---- */

/* A region name: 1 to GX_WIRE_SHM_MAX_NAME - 1 of [A-Za-z0-9._-], not
 * starting with '.'; the file is /dev/shm/<name>. */
#define GX_WIRE_SHM_MAX_NAME 128
bool gx_wire_shm_name_ok(const char *name);

/* {region, offset, bytes}: where a tensor lies in a registered region. */
typedef struct gx_wire_shm_ref {
    char region[GX_WIRE_SHM_MAX_NAME];
    uint64_t offset, bytes;
} gx_wire_shm_ref;

void gx_wire_pack_shm_ref(msgpack_packer *pk, const gx_wire_shm_ref *ref);
/* A tensor descriptor whose data lies at ref ("shm" key) instead of in a
 * frame; ref NULL: gx_wire_pack_tensor_desc's. */
void gx_wire_pack_tensor_desc_shm(msgpack_packer *pk, const char *name, gx_dtype dt, int ndim,
                                  const int64_t *shape, const gx_wire_shm_ref *ref);
/* Decode {region, offset, bytes} (what names it in errors): GX_OK, or
 * GX_EPROTO / GX_EINVAL with err. offset + bytes does not overflow. */
int gx_wire_unpack_shm_ref(const msgpack_object *o, const char *what, gx_wire_shm_ref *ref,
                           char *err, size_t errlen);

/* ---- values that are not one tensor (core/wire_value.c) ---- */

/* The descriptor of t, whatever its kind: a tensor's is the tensor
 * descriptor; a sequence adds kind "sequence" and items (each item's shape);
 * none adds kind "none". */
void gx_wire_pack_value_desc(msgpack_packer *pk, const char *name, const gx_tensor *t);
/* The bytes of t's frame (a sequence: its items' bytes back to back; a
 * string tensor, or each string item: gx_wire_strs_write's array), and
 * writing them to dst. */
size_t gx_wire_value_bytes(const gx_tensor *t);
void gx_wire_value_write(const gx_tensor *t, void *dst);
/* Whether a value of kind and dtype travels as a value (its frame made by
 * gx_wire_value_write, decoded by gx_wire_unpack_value, never in shared
 * memory): sequences, nones and string tensors. */
bool gx_wire_is_value(gx_kind kind, gx_dtype dt);

/*
 * A string tensor's data on the wire (docs/protocol.md, "String tensors"):
 * one msgpack array of numel elements, each a str or a bin of the
 * element's bytes. gx_wire_strs_bytes / gx_wire_strs_write encode the
 * tensor's elements; gx_wire_strs_read decodes data[0..len) into t (a new
 * string tensor of the descriptor's shape), at most max_bytes of string
 * bytes in all, and says in *used how many bytes it read. GX_OK, or
 * GX_EPROTO / GX_ELIMIT / GX_ENOMEM with a message naming `what`.
 * Allocates nothing before a length is checked against the bytes left.
 */
size_t gx_wire_strs_bytes(const gx_tensor *t);
void *gx_wire_strs_write(const gx_tensor *t, void *dst);
int gx_wire_strs_read(gx_tensor *t, const void *data, size_t len, int64_t max_bytes,
                      size_t *used, const char *what, char *err, size_t errlen);

/* The kind a descriptor names (no kind: a tensor). GX_OK or GX_EPROTO. */
int gx_wire_desc_kind(const msgpack_object *o, const char *what, gx_kind *kind, char *err,
                      size_t errlen);
/* Decodes descriptor o and its frame (data, len) into a new value *out
 * (caller owns it and *name): sizes are checked against the descriptor and
 * max_bytes before anything is copied. GX_OK, or GX_EPROTO / GX_ELIMIT /
 * GX_EDTYPE / GX_ENOMEM with a message naming the field. */
int gx_wire_unpack_value(const msgpack_object *o, const char *what, int64_t max_bytes,
                         const void *data, size_t len, char **name, gx_tensor **out, char *err,
                         size_t errlen);

/* The canonical encoding of g: fixed key order, attributes sorted by name,
 * floats as float64. Equal graphs encode to equal bytes. */
void gx_wire_pack_graph(msgpack_packer *pk, const gx_graph *g);
/* Decode a graph; *out is new (caller owns). GX_EPROTO / GX_ELIMIT /
 * GX_EDTYPE / GX_ESHAPE with a message naming the field on failure; a graph
 * nested deeper than max_nesting levels (0: GX_WIRE_NESTING_DEFAULT; at
 * most GX_WIRE_MAX_NESTING) is GX_ELIMIT naming the limit, the node, its
 * attribute and the top-level node it is inside. */
int gx_wire_unpack_graph_nested(const msgpack_object *o, const gx_wire_limits *lim,
                                int max_nesting, gx_graph **out, char *err, size_t errlen);
/* gx_wire_unpack_graph_nested with the default nesting limit. */
int gx_wire_unpack_graph(const msgpack_object *o, const gx_wire_limits *lim, gx_graph **out,
                         char *err, size_t errlen);
/* SHA-256 of the canonical encoding, in hex. */
void gx_wire_graph_id(const gx_graph *g, gx_graph_id *id);

#endif
