/*
 * Internal definitions shared by libgexec and gexecd: the bodies of the
 * public opaque types (tensor, graph, node, attribute) and small helpers.
 * Nothing here is installed or exported.
 */
#ifndef GX_INTERNAL_H
#define GX_INTERNAL_H

#define GX_BUILDING 1
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gexec/gexec.h>

#define GX_ALIGN 64

struct gx_tensor {
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
    void *data; /* GX_ALIGN-aligned, owned (free()) */
    gx_kind kind;      /* GX_KIND_SEQUENCE: items, not data; GX_KIND_NONE: nothing */
    size_t n_items, cap_items;
    gx_tensor **items; /* a sequence's tensors, owned */
    struct gx_strblock *strs; /* GX_STRING: the records data's handles point at, owned */
};

/*
 * One element of a string tensor (docs/strings.md): data holds a handle
 * per element, a pointer to a record (len bytes, then a NUL), or NULL for
 * the empty string. Records never move and are never changed once made;
 * whoever made them (a tensor's string store, a job's string heap, a plan)
 * keeps them until every handle to them is gone. Copying a handle copies
 * the string.
 */
typedef struct gx_strrec {
    uint64_t len;
    char bytes[]; /* len bytes, then '\0' */
} gx_strrec;
_Static_assert(sizeof(const gx_strrec *) == 8, "a string handle is 8 bytes");

/* The record's bytes and length; "" and 0 for NULL. */
static inline const char *gx_str_bytes(const gx_strrec *r) { return r ? r->bytes : ""; }
static inline size_t gx_str_len(const gx_strrec *r) { return r ? (size_t)r->len : 0; }
/* Bytes of a record of len bytes in a store (8-aligned). */
static inline size_t gx_strrec_size(size_t len)
{
    return (sizeof(gx_strrec) + len + 1 + 7) & ~(size_t)7;
}
/* Whether two strings hold the same bytes. */
bool gx_str_eq(const gx_strrec *a, const gx_strrec *b);
/* Writes a record of n bytes at s into mem (gx_strrec_size(n) bytes, 8-aligned). */
const gx_strrec *gx_strrec_write(void *mem, const char *s, size_t n);

/* A string tensor's copy of a record (a new one in t's store; NULL on
 * ENOMEM, or for the empty string with *ok left true). */
const gx_strrec *gx_tensor_str_add(gx_tensor *t, const char *s, size_t n, bool *ok);
/* Frees a tensor's string store (gx_tensor_destroy does). */
void gx_tensor_strs_free(gx_tensor *t);

/*
 * A job's string heap (docs/strings.md): the records string kernels make
 * while a job runs, in chunks freed together when the job ends. Bounded:
 * an allocation past max_bytes (counting each record's gx_strrec_size)
 * fails, and the heap remembers it (exceeded) so the executor fails the
 * job with GX_ELIMIT. Thread-safe (intra-op shares allocate at once).
 */
typedef struct gx_strheap gx_strheap;
/* A new empty heap of at most max_bytes. NULL on ENOMEM. Caller owns it. */
gx_strheap *gx_strheap_new(size_t max_bytes);
/* Frees every record it made. Accepts NULL; sets *h = NULL. */
void gx_strheap_destroy(gx_strheap **h);
/* A record of n bytes copied from s (NULL s: n bytes of zeros to fill
 * through the returned record's bytes); NULL for n == 0 (the empty
 * string) or when the heap is full or out of memory (then
 * gx_strheap_failed is true and the string reads as ""). */
const gx_strrec *gx_strheap_add(gx_strheap *h, const char *s, size_t n);
/* Whether an allocation failed; *limit gets max_bytes. */
bool gx_strheap_failed(const gx_strheap *h, size_t *limit);
/* Bytes taken so far. */
size_t gx_strheap_used(const gx_strheap *h);

/* A deep copy of t, whatever its kind. NULL on ENOMEM. Caller owns it. */
gx_tensor *gx_tensor_clone(const gx_tensor *t);

/* X(enum suffix, wire name) */
#define GX_ATTR_TYPE_LIST(X)                                                  \
    X(INT, "int")                                                             \
    X(FLOAT, "float")                                                         \
    X(STRING, "string")                                                       \
    X(INTS, "ints")                                                           \
    X(FLOATS, "floats")                                                       \
    X(TENSOR, "tensor")                                                       \
    X(GRAPH, "graph")

typedef enum gx_attr_type {
#define GX_ATTR_ENUM(e, name) GX_ATTR_##e,
    GX_ATTR_TYPE_LIST(GX_ATTR_ENUM)
#undef GX_ATTR_ENUM
    GX_ATTR_TYPE_COUNT
} gx_attr_type;

const char *gx_attr_type_name(gx_attr_type t);

typedef struct gx_attr {
    char *name;
    gx_attr_type type;
    int64_t i;      /* INT */
    double f;       /* FLOAT */
    char *s;        /* STRING */
    int64_t *ints;  /* INTS, n entries */
    double *floats; /* FLOATS, n entries */
    size_t n;
    gx_tensor *t;   /* TENSOR */
    gx_graph *g;    /* GRAPH: a subgraph (If branches, Loop body) */
} gx_attr;

struct gx_node {
    char *op;
    char *name;
    size_t n_in, n_out, n_attr;
    char **in;  /* "" = omitted optional input */
    char **out;
    gx_attr *attr;
};

/* A declared graph input or output. For outputs dtype may be GX_DTYPE_COUNT
 * and ndim -1 (not declared); for inputs of subgraphs either may be unknown
 * on its own (see gx_graph_add_input_decl). shape[i] == -1 is a symbolic
 * dim. */
typedef struct gx_value_decl {
    char *name;
    gx_kind kind;   /* GX_KIND_TENSOR or GX_KIND_SEQUENCE (of dtype tensors) */
    bool optional;  /* an optional value: none, or one of kind */
    gx_dtype dtype;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
} gx_value_decl;

typedef struct gx_const {
    char *name;
    gx_tensor *t;
} gx_const;

struct gx_graph {
    char *name;
    size_t n_inputs, n_outputs, n_consts, n_nodes;
    size_t cap_inputs, cap_outputs, cap_consts, cap_nodes;
    gx_value_decl *inputs;
    gx_value_decl *outputs;
    gx_const *consts;
    gx_node **nodes; /* pointers, so gx_node handles stay valid */
};

/* Adds an output declaration with dtype/shape (ndim -1: undeclared). */
int gx_graph_add_output_decl(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                             const int64_t *shape);
/* Adds an input declaration that may leave its dtype (GX_DTYPE_COUNT) or its
 * rank (ndim -1) unknown, as subgraph inputs (Loop bodies) may; the public
 * gx_graph_add_input needs both. */
int gx_graph_add_input_decl(gx_graph *g, const char *name, gx_dtype dt, int ndim,
                            const int64_t *shape);

/* Declares the input or output `name` declared last in g a sequence (of
 * its dtype tensors) and/or optional. GX_OK or GX_EINVAL (no such decl). */
int gx_graph_set_decl_kind(gx_graph *g, bool input, const char *name, gx_kind kind,
                           bool optional);

/* Element count of a shape; -1 on negative dims or overflow past limit. */
int64_t gx_shape_numel(int ndim, const int64_t *shape, int64_t limit);
/* Size in bytes of a tensor of dt and shape; 0 and false on overflow. */
bool gx_shape_nbytes(gx_dtype dt, int ndim, const int64_t *shape, size_t *nbytes);
/* Writes "[2,3,4]" into buf. Returns buf. */
char *gx_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);

/* Adopt an aligned buffer as a tensor (takes ownership of data, freed with
 * free()). Returns NULL (and frees data) on bad shape or ENOMEM. */
gx_tensor *gx_tensor_adopt(gx_dtype dt, int ndim, const int64_t *shape, void *data);

/* Aligned allocation helpers (free with free()). */
void *gx_aligned_alloc(size_t nbytes);

/* printf into an error buffer (err may be NULL); returns status unchanged,
 * so `return gx_errf(err, len, GX_EINVAL, "bad %s", x);` reads naturally. */
int gx_errf(char *err, size_t errlen, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

char *gx_strdup(const char *s);

/* Grow *arr (element size elem) so it holds at least need elements. */
bool gx_grow(void *arr, size_t *cap, size_t need, size_t elem);

/* A growing NUL-terminated text buffer (JSON written by the daemon and the
 * client library). Zero-initialise it; an allocation failure sets oom and
 * makes later appends no-ops, so a writer checks once at the end. p is
 * malloc'ed: the owner frees it (or takes it). */
typedef struct gx_strbuf {
    char *p;
    size_t n, cap;
    bool oom;
} gx_strbuf;

void gx_strbuf_put(gx_strbuf *b, const char *s, size_t n);
void gx_strbuf_printf(gx_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes of s as a JSON string literal: quoted, with '"' and '\\' escaped
 * and control characters as \u00XX; other bytes (UTF-8) as they are. */
void gx_strbuf_json_str(gx_strbuf *b, const char *s, size_t n);

#endif
