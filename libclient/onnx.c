/*
 * ONNX models and tensors (docs/onnx.md) into gx_graph / gx_tensor, through
 * the public graph builder.
 *
 * Three steps:
 *  1. s_scan walks the protobuf bytes against protobuf-c's descriptors
 *     (generated at build time from ONNX's onnx.proto) without allocating:
 *     wire types, varints, lengths, nesting depth, and an estimate of what
 *     decoding will allocate. protobuf-c recurses into nested messages
 *     without a limit and allocates a struct for every (sub)message, so
 *     without this a small hostile file could exhaust the stack or memory.
 *  2. protobuf-c decodes the message.
 *  3. A walk of the decoded message calls the builder: opsets, then the
 *     graph (and subgraph attributes, recursively, up to S_MAX_GRAPH_DEPTH).
 *     Every pointer and count in the message is checked before use.
 *
 * Errors are "source: path: reason", the path naming the entry
 * ("graph.node[3] (Conv 'c1'): attribute 'pads'"). Problems that are
 * features gexec lacks (GX_EUNSUPPORTED, GX_EDTYPE, GX_EATTR) are collected
 * and the walk goes on, so one error names every unsupported node; anything
 * else (a malformed model, GX_ENOMEM, ...) ends the import at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "libclient/onnx.pb-c.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data of ONNX tensors is little-endian; this reader copies it as is"
#endif

/* protobuf's own limit on a serialized message. */
#define S_MAX_FILE ((size_t)INT32_MAX)
/* Nesting of protobuf messages; a subgraph level costs three (graph, node,
 * attribute), a nested type one. */
#define S_MAX_MSG_DEPTH 64
/* Subgraphs within subgraphs; the wire format allows fewer still. */
#define S_MAX_GRAPH_DEPTH 16
/* What decoding may allocate: this much, plus S_MEM_FACTOR x the input. */
#define S_MEM_BASE ((size_t)64 << 20)
#define S_MEM_FACTOR 16
/* The ai.onnx versions read (the newest in ONNX's changelog is 25). An
 * older version of an op means what the current one means, is converted
 * to it (s_convs), is read by the daemon's schema in its older form
 * (attributes that became inputs), or is refused by name (s_changed). */
#define S_OPSET_MIN 1
#define S_OPSET_MAX 25
/* Far above any op's attribute count; bounds the builder's duplicate check,
 * which is quadratic. */
#define S_MAX_ATTRS 256
/* Model-local functions calling functions (a function calling itself ends
 * here), and the nodes all calls may add (their subgraphs' too), so that a
 * few nested functions each calling the next many times cannot grow a
 * small file without bound. */
#define S_MAX_FN_DEPTH 16
#define S_MAX_INLINED ((size_t)1 << 18)
/* Room for the list of unsupported features in one message. */
#define S_MAX_LIST 2048

/* A set of borrowed strings (open addressing). */
typedef struct s_set {
    const char **slot;
    size_t cap, n; /* cap is 0 or a power of two */
} s_set;

/* A domain other than ai.onnx that the model imports. */
typedef struct s_domain {
    const char *name; /* borrowed from the message */
    int64_t version;
} s_domain;

typedef struct s_ctx {
    const char *src;      /* file name for messages */
    const char *base_dir; /* external data; NULL: refused */
    char last[1024];      /* the latest error: "path: reason" */
    /* collected unsupported features */
    int status;           /* of the first */
    size_t n_issues, n_listed;
    char list[S_MAX_LIST];
    /* every value name in the model, for names of omitted outputs */
    s_set values;
    /* opset_import: the ai.onnx version, and the other domains' */
    bool has_opset;
    int64_t opset;
    s_domain *domains;
    size_t n_domains;
    const Onnx__GraphProto *graph; /* the graph whose nodes are being read */
    const Onnx__GraphProto *main;  /* the model's graph */
    const Onnx__GraphProto *nchwc_graph; /* the graph nchwc_block was found for */
    int nchwc_block;                     /* its NCHWc block size (s_nchwc_block) */
    size_t n_unused;
    /* the model's functions (ModelProto.functions), inlined where called */
    Onnx__FunctionProto **functions;
    size_t n_functions;
    size_t n_inlined, n_calls; /* nodes inlined and calls so far */
    /* strings made here (node and value names), freed at the end */
    char **owned;
    size_t n_owned, cap_owned;
} s_ctx;

/* ---- errors ------------------------------------------------------------- */

/* Record "path: reason" as the latest error; returns status. */
__attribute__((format(printf, 4, 5))) static int s_fail(s_ctx *c, int status, const char *path,
                                                        const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (path && *path)
        snprintf(c->last, sizeof c->last, "%s: %s", path, msg);
    else
        snprintf(c->last, sizeof c->last, "%s", msg);
    return status;
}

static bool s_collectable(int rc)
{
    return rc == GX_EUNSUPPORTED || rc == GX_EDTYPE || rc == GX_EATTR;
}

/* After one entry (a node, a declaration, an initializer) returned rc:
 * collect a missing feature and carry on (GX_OK), or pass anything else
 * through to end the import. */
static int s_collect(s_ctx *c, int rc)
{
    if (rc >= 0 || !s_collectable(rc))
        return rc;
    if (c->n_issues++ == 0)
        c->status = rc;
    size_t used = strlen(c->list), need = strlen(c->last) + 2;
    if (used + need < sizeof c->list - 32) {
        snprintf(c->list + used, sizeof c->list - used, "%s%s", used ? "; " : "", c->last);
        c->n_listed++;
    }
    return GX_OK;
}

/* The final message for err: the error that ended the import (rc), or the
 * collected list. */
static int s_report(s_ctx *c, int rc, char *err, size_t errlen)
{
    if (rc < 0)
        return gx_errf(err, errlen, rc, "%s: %s", c->src, c->last);
    if (c->n_issues == 1)
        return gx_errf(err, errlen, c->status, "%s: %s", c->src, c->list);
    char more[48] = "";
    if (c->n_listed < c->n_issues)
        snprintf(more, sizeof more, "; and %zu more", c->n_issues - c->n_listed);
    return gx_errf(err, errlen, c->status, "%s: %zu unsupported features: %s%s", c->src,
                   c->n_issues, c->list, more);
}

/* ---- small helpers ------------------------------------------------------ */

static const char *s_str(const char *s)
{
    return s ? s : "";
}

static size_t s_hash(const char *s)
{
    size_t h = 14695981039346656037u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static const char **s_set_slot(const s_set *s, const char *k)
{
    size_t mask = s->cap - 1;
    for (size_t i = s_hash(k) & mask;; i = (i + 1) & mask)
        if (!s->slot[i] || strcmp(s->slot[i], k) == 0)
            return &s->slot[i];
}

static bool s_set_has(const s_set *s, const char *k)
{
    return s->cap && *s_set_slot(s, k);
}

/* Add k (borrowed: it must outlive the set); duplicates are ignored. */
static bool s_set_add(s_set *s, const char *k)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t ocap = s->cap, ncap = ocap ? ocap * 2 : 64;
        const char **old = s->slot, **ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return false;
        s->slot = ns;
        s->cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i])
                *s_set_slot(s, old[i]) = old[i];
        free(old);
    }
    const char **slot = s_set_slot(s, k);
    if (!*slot) {
        *slot = k;
        s->n++;
    }
    return true;
}

static void s_set_fini(s_set *s)
{
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* A string owned by the context until the import ends; NULL on ENOMEM. */
__attribute__((format(printf, 2, 3))) static char *s_own(s_ctx *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = gx_strdup(buf);
    if (!s || !gx_grow(&c->owned, &c->cap_owned, c->n_owned + 1, sizeof *c->owned)) {
        free(s);
        return NULL;
    }
    c->owned[c->n_owned++] = s;
    return s;
}

/* ONNX TensorProto.DataType names, for messages. */
static const char *s_onnx_type_name(int32_t t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT",     "UINT8",      "INT8",          "UINT16",
        "INT16",     "INT32",     "INT64",      "STRING",        "BOOL",
        "FLOAT16",   "DOUBLE",    "UINT32",     "UINT64",        "COMPLEX64",
        "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
        "FLOAT8E5M2FNUZ",
    };
    return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* gexec's dtype for an ONNX element type; false for those gexec lacks. */
static bool s_dtype(int32_t t, gx_dtype *dt)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *dt = GX_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *dt = GX_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *dt = GX_I8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: *dt = GX_U16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *dt = GX_I16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *dt = GX_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *dt = GX_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *dt = GX_BOOL; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *dt = GX_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *dt = GX_F64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *dt = GX_U32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *dt = GX_U64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *dt = GX_BF16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: *dt = GX_STRING; return true;
    default: return false;
    }
}

/* ---- step 1: checking the bytes ----------------------------------------- */

static bool s_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static bool s_is_packable(ProtobufCType t)
{
    return t != PROTOBUF_C_TYPE_STRING && t != PROTOBUF_C_TYPE_BYTES &&
           t != PROTOBUF_C_TYPE_MESSAGE;
}

/* Walk one message of type d in [p, p + len): every field well-formed, at
 * most S_MAX_MSG_DEPTH nested messages, *cost += an upper bound of what
 * protobuf-c allocates for it. Recursion is bounded by the depth check. */
static int s_scan(s_ctx *c, const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *d,
                  int depth, size_t *cost)
{
    const uint8_t *end = p + len;
    *cost += d->sizeof_message;
    while (p < end) {
        size_t at = (size_t)(p - (end - len));
        uint64_t key, v;
        if (!s_varint(&p, end, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
            return s_fail(c, GX_EFORMAT, NULL, "malformed protobuf: bad field key at byte %zu of a %s",
                          at, d->short_name);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
        switch (key & 7) {
        case 0: /* varint */
            if (!s_varint(&p, end, &v))
                return s_fail(c, GX_EFORMAT, NULL, "malformed protobuf: truncated varint in a %s",
                              d->short_name);
            *cost += 16;
            break;
        case 1: /* 64-bit */
        case 5: /* 32-bit */
            if ((size_t)(end - p) < ((key & 7) == 1 ? 8u : 4u))
                return s_fail(c, GX_EFORMAT, NULL, "malformed protobuf: truncated %s",
                              d->short_name);
            p += (key & 7) == 1 ? 8 : 4;
            *cost += 16;
            break;
        case 2: /* length-delimited */
            if (!s_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return s_fail(c, GX_EFORMAT, NULL,
                              "malformed protobuf: a field of a %s runs past its end",
                              d->short_name);
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth + 1 > S_MAX_MSG_DEPTH)
                    return s_fail(c, GX_ELIMIT, NULL, "messages nest deeper than %d levels",
                                  S_MAX_MSG_DEPTH);
                int rc = s_scan(c, p, (size_t)v, f->descriptor, depth + 1, cost);
                if (rc < 0)
                    return rc;
                *cost += sizeof(void *);
            } else if (f && f->label == PROTOBUF_C_LABEL_REPEATED && s_is_packable(f->type)) {
                *cost += (size_t)v * 8 + 16; /* a packed array: 8 bytes an element at most */
            } else {
                *cost += (size_t)v + 32; /* a copy of the bytes, or an unknown field */
            }
            p += v;
            break;
        default:
            return s_fail(c, GX_EFORMAT, NULL,
                          "malformed protobuf: wire type %u at byte %zu of a %s",
                          (unsigned)(key & 7), at, d->short_name);
        }
    }
    return GX_OK;
}

/* Check buf as a message of type d, then decode it. NULL with the error set. */
static ProtobufCMessage *s_decode(s_ctx *c, const void *buf, size_t len,
                                  const ProtobufCMessageDescriptor *d, int *rc)
{
    size_t cost = 0, limit = S_MEM_BASE + S_MEM_FACTOR * len;
    if (len > S_MAX_FILE) {
        *rc = s_fail(c, GX_ELIMIT, NULL, "%zu bytes; protobuf messages are at most %zu", len,
                     S_MAX_FILE);
        return NULL;
    }
    if ((*rc = s_scan(c, buf, len, d, 0, &cost)) < 0)
        return NULL;
    if (cost > limit) {
        *rc = s_fail(c, GX_ELIMIT, NULL,
                     "decoding would allocate about %zu bytes, more than the limit of %zu for "
                     "a %zu-byte %s", cost, limit, len, d->short_name);
        return NULL;
    }
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, buf);
    if (!m)
        *rc = s_fail(c, GX_EFORMAT, NULL, "not a valid ONNX %s (protobuf decoding failed)",
                     d->short_name);
    return m;
}

/* ---- tensors ------------------------------------------------------------ */

/* A decimal int64 >= 0 from an external_data value. */
static bool s_parse_size(const char *s, int64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

/* A location that stays inside the model's directory: relative, no "..". */
static bool s_safe_location(const char *loc)
{
    if (!*loc || *loc == '/')
        return false;
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        while (*p == '/')
            p++;
    }
    return true;
}

/* The tensor (dt, shape) whose bytes are in an external file; allocated
 * only once the file is known to hold them. */
static int s_external(s_ctx *c, const Onnx__TensorProto *tp, const char *what, gx_dtype dt,
                      int ndim, const int64_t *shape, size_t nbytes, gx_tensor **out)
{
    const char *loc = NULL;
    int64_t off = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e ? s_str(e->key) : "", *v = e ? s_str(e->value) : "";
        if (strcmp(k, "location") == 0)
            loc = v;
        else if (strcmp(k, "offset") == 0 && !s_parse_size(v, &off))
            return s_fail(c, GX_EFORMAT, what, "external data offset '%.40s' is not a size", v);
        else if (strcmp(k, "length") == 0 && !s_parse_size(v, &length))
            return s_fail(c, GX_EFORMAT, what, "external data length '%.40s' is not a size", v);
    }
    if (!loc)
        return s_fail(c, GX_EFORMAT, what, "external data without a location");
    if (!s_safe_location(loc))
        return s_fail(c, GX_EFORMAT, what,
                      "external data location '%.200s' must be a relative path inside the "
                      "model's directory (no '..')", loc);
    if (!c->base_dir)
        return s_fail(c, GX_EUNSUPPORTED, what,
                      "external data ('%.200s') needs the model's directory: load the model "
                      "from its file (gx_graph_load_onnx) or pass base_dir", loc);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", c->base_dir, loc) >= sizeof path)
        return s_fail(c, GX_ELIMIT, what, "external data path too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return s_fail(c, GX_EIO, what, "external data %s: %s", path, strerror(errno));
    struct stat st;
    int rc = GX_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = s_fail(c, GX_EIO, what, "external data %s: not a regular file", path);
        goto close_fd;
    }
    int64_t size = (int64_t)st.st_size;
    if (off > size || (length >= 0 && length > size - off)) {
        rc = s_fail(c, GX_EFORMAT, what,
                    "external data %s: offset %" PRId64 " and length %" PRId64
                    " run past the end of the file (%" PRId64 " bytes)",
                    path, off, length, size);
        goto close_fd;
    }
    if (length < 0)
        length = size - off;
    if ((uint64_t)length != nbytes) {
        rc = s_fail(c, GX_EFORMAT, what,
                    "external data %s: %" PRId64 " bytes, but dtype and shape need %zu", path,
                    length, nbytes);
        goto close_fd;
    }
    if (!(*out = gx_tensor_new(dt, ndim, shape))) {
        rc = s_fail(c, GX_ENOMEM, what, "out of memory");
        goto close_fd;
    }
    for (size_t got = 0; got < nbytes;) {
        ssize_t n = pread(fd, (char *)(*out)->data + got, nbytes - got,
                          (off_t)(off + (int64_t)got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = s_fail(c, GX_EIO, what, "external data %s: %s", path,
                        n < 0 ? strerror(errno) : "file shrank while reading");
            goto close_fd;
        }
        got += (size_t)n;
    }
close_fd:
    close(fd);
    if (rc < 0)
        gx_tensor_destroy(out);
    return rc;
}

/* int32_data holds the small integer types, bool and the 16-bit floats'
 * bits; each value must fit its type. */
static int s_from_int32(s_ctx *c, const char *what, const int32_t *src, size_t n, gx_dtype dt,
                        void *dst)
{
    int64_t lo, hi;
    switch (dt) {
    case GX_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case GX_U8: lo = 0, hi = UINT8_MAX; break;
    case GX_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case GX_U16: case GX_F16: case GX_BF16: lo = 0, hi = UINT16_MAX; break;
    case GX_BOOL: lo = 0, hi = 1; break;
    case GX_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case GX_F32: case GX_F64: case GX_I64: case GX_U32: case GX_U64: case GX_STRING:
    case GX_DTYPE_COUNT:
    default:
        return s_fail(c, GX_EINTERNAL, what, "int32_data for %s", gx_dtype_name(dt));
    }
    for (size_t i = 0; i < n; i++) {
        if (src[i] < lo || src[i] > hi)
            return s_fail(c, GX_EFORMAT, what, "int32_data[%zu] = %" PRId32 " is out of range for %s",
                          i, src[i], gx_dtype_name(dt));
        switch (gx_dtype_size(dt)) {
        case 1: ((uint8_t *)dst)[i] = (uint8_t)src[i]; break;
        case 2: ((uint16_t *)dst)[i] = (uint16_t)src[i]; break;
        default: ((int32_t *)dst)[i] = src[i]; break;
        }
    }
    return GX_OK;
}

/* The typed field that holds dt's values: its element count, its data,
 * its name. */
static void s_typed_field(const Onnx__TensorProto *tp, gx_dtype dt, size_t *n, const void **data,
                          const char **field)
{
    switch (dt) {
    case GX_F32: *n = tp->n_float_data, *data = tp->float_data, *field = "float_data"; return;
    case GX_F64: *n = tp->n_double_data, *data = tp->double_data, *field = "double_data"; return;
    case GX_I64: *n = tp->n_int64_data, *data = tp->int64_data, *field = "int64_data"; return;
    case GX_U32: case GX_U64:
        *n = tp->n_uint64_data, *data = tp->uint64_data, *field = "uint64_data";
        return;
    case GX_F16: case GX_BF16: case GX_I32: case GX_I8: case GX_U8: case GX_BOOL: case GX_I16:
    case GX_U16: case GX_STRING: case GX_DTYPE_COUNT:
        break;
    }
    *n = tp->n_int32_data, *data = tp->int32_data, *field = "int32_data";
}

/* A STRING TensorProto (its string_data, one bytes value per element)
 * into a new string tensor. */
static int s_strings(s_ctx *c, const Onnx__TensorProto *tp, const char *what, int ndim,
                     const int64_t *shape, size_t numel, gx_tensor **out)
{
    char sh[160];
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return s_fail(c, GX_EFORMAT, what, "a string tensor cannot have external data");
    if (tp->has_raw_data)
        return s_fail(c, GX_EFORMAT, what, "a string tensor has no raw_data (string_data only)");
    if (tp->n_string_data != numel)
        return s_fail(c, GX_EFORMAT, what, "string_data has %zu values, but shape %s needs %zu",
                      tp->n_string_data, gx_shape_str(ndim, shape, sh, sizeof sh), numel);
    gx_tensor *t = gx_tensor_new(GX_STRING, ndim, shape);
    const gx_strrec **h = t ? t->data : NULL;
    for (size_t i = 0; t && i < numel; i++) {
        bool ok;
        h[i] = gx_tensor_str_add(t, (const char *)tp->string_data[i].data,
                                 tp->string_data[i].len, &ok);
        if (!ok)
            gx_tensor_destroy(&t);
    }
    if (!t)
        return s_fail(c, GX_ENOMEM, what, "out of memory");
    *out = t;
    return GX_OK;
}

/* A TensorProto into a new tensor; what names it in messages. */
static int s_tensor(s_ctx *c, const Onnx__TensorProto *tp, const char *what, gx_tensor **out)
{
    *out = NULL;
    gx_dtype dt;
    int64_t shape[GX_MAX_DIMS];
    size_t nbytes;
    char sh[160];
    if (!tp->has_data_type || !s_dtype(tp->data_type, &dt))
        return s_fail(c, GX_EDTYPE, what, "element type %s (%" PRId32 ") is not supported",
                      s_onnx_type_name(tp->data_type), tp->data_type);
    if (tp->segment)
        return s_fail(c, GX_EUNSUPPORTED, what, "segmented tensors are not supported");
    if (tp->n_dims > GX_MAX_DIMS)
        return s_fail(c, GX_EUNSUPPORTED, what, "%zu dims; gexec supports at most %d", tp->n_dims,
                      GX_MAX_DIMS);
    int ndim = (int)tp->n_dims;
    for (int i = 0; i < ndim; i++) {
        if ((shape[i] = tp->dims[i]) < 0)
            return s_fail(c, GX_EFORMAT, what, "dims[%d] is negative (%" PRId64 ")", i, shape[i]);
    }
    if (!gx_shape_nbytes(dt, ndim, shape, &nbytes))
        return s_fail(c, GX_ELIMIT, what, "shape %s of %s is too large",
                      gx_shape_str(ndim, shape, sh, sizeof sh), gx_dtype_name(dt));
    size_t numel = nbytes / gx_dtype_size(dt);
    gx_tensor *t = NULL;
    int rc = GX_OK;

    if (dt == GX_STRING)
        return s_strings(c, tp, what, ndim, shape, numel, out);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        rc = s_external(c, tp, what, dt, ndim, shape, nbytes, &t);
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != nbytes)
            return s_fail(c, GX_EFORMAT, what, "raw_data has %zu bytes, but %s %s needs %zu",
                          tp->raw_data.len, gx_dtype_name(dt),
                          gx_shape_str(ndim, shape, sh, sizeof sh), nbytes);
        if (!(t = gx_tensor_new_copy(dt, ndim, shape, tp->raw_data.data, nbytes)))
            return s_fail(c, GX_ENOMEM, what, "out of memory");
    } else {
        size_t n;
        const void *src;
        const char *field;
        s_typed_field(tp, dt, &n, &src, &field);
        if (n != numel)
            return s_fail(c, GX_EFORMAT, what, "%s has %zu values, but shape %s needs %zu", field,
                          n, gx_shape_str(ndim, shape, sh, sizeof sh), numel);
        if (!(t = gx_tensor_new(dt, ndim, shape)))
            return s_fail(c, GX_ENOMEM, what, "out of memory");
        if (n && src == tp->int32_data) {
            rc = s_from_int32(c, what, src, n, dt, t->data);
        } else if (n && dt == GX_U32) {
            for (size_t i = 0; i < n && rc == GX_OK; i++) {
                if (tp->uint64_data[i] > UINT32_MAX)
                    rc = s_fail(c, GX_EFORMAT, what, "uint64_data[%zu] is out of range for uint32",
                                i);
                ((uint32_t *)t->data)[i] = (uint32_t)tp->uint64_data[i];
            }
        } else if (n) {
            memcpy(t->data, src, nbytes); /* float, double, int64, uint64: same layout */
        }
    }
    if (rc < 0)
        gx_tensor_destroy(&t);
    *out = t;
    return rc;
}

/* ---- graphs ------------------------------------------------------------- */

static int s_graph(s_ctx *c, const Onnx__GraphProto *gp, const char *path, int depth, bool top,
                   gx_graph **out);

/* Every value name of gp and its subgraphs into c->values (borrowed from
 * the message), so names made for omitted outputs clash with none. */
static bool s_gather_values(s_ctx *c, const Onnx__GraphProto *gp, int depth)
{
    if (!gp || depth > S_MAX_GRAPH_DEPTH)
        return true;
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i] && gp->input[i]->name && !s_set_add(&c->values, gp->input[i]->name))
            return false;
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i] && gp->initializer[i]->name &&
            !s_set_add(&c->values, gp->initializer[i]->name))
            return false;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (!n)
            continue;
        for (size_t k = 0; k < n->n_output; k++)
            if (n->output[k] && !s_set_add(&c->values, n->output[k]))
                return false;
        for (size_t k = 0; k < n->n_attribute; k++)
            if (n->attribute[k] && !s_gather_values(c, n->attribute[k]->g, depth + 1))
                return false;
    }
    return true;
}

/* A graph input (or output) declaration. Subgraph inputs may lack their
 * type or shape; the main graph's inputs need both. */
static int s_decl(s_ctx *c, gx_graph *g, const Onnx__ValueInfoProto *vi, const char *path,
                  bool input, bool top)
{
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    gx_dtype dt = GX_DTYPE_COUNT;
    int ndim = -1, rc;
    int64_t shape[GX_MAX_DIMS];
    const char *kind = input ? "input" : "output";

    /* optional(x) and sequence(tensor): gexec's value kinds (docs/onnx.md) */
    bool optional = false, seq = false;
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type &&
        tp->optional_type->elem_type) {
        optional = true;
        tp = tp->optional_type->elem_type;
    }
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type &&
        tp->sequence_type->elem_type &&
        tp->sequence_type->elem_type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        seq = true;
        tp = tp->sequence_type->elem_type;
    }
    if (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
        tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "%s '%.100s': %s values are not supported (only tensors, sequences of tensors and optionals of those)",
                      kind, name,
                      tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? "sequence"
                      : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE    ? "map"
                      : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "optional"
                      : tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE
                          ? "sparse tensor"
                          : "non-tensor value");
    const Onnx__TypeProto__Tensor *tt =
        tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
    if (tt && tt->has_elem_type && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED &&
        !s_dtype(tt->elem_type, &dt))
        return s_fail(c, GX_EDTYPE, path, "%s '%.100s': element type %s (%" PRId32 ") is not supported",
                      kind, name, s_onnx_type_name(tt->elem_type), tt->elem_type);
    if (seq)
        ndim = 0; /* a sequence's items have shapes of their own */
    else if (tt && tt->shape) {
        const Onnx__TensorShapeProto *sp = tt->shape;
        if (sp->n_dim > GX_MAX_DIMS)
            return s_fail(c, GX_EUNSUPPORTED, path, "%s '%.100s' has %zu dims; gexec supports at most %d",
                          kind, name, sp->n_dim, GX_MAX_DIMS);
        ndim = (int)sp->n_dim;
        for (int i = 0; i < ndim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
            shape[i] = -1; /* dim_param or nothing: symbolic */
            if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                (shape[i] = d->dim_value) < 0)
                return s_fail(c, GX_EFORMAT, path, "%s '%.100s': dim %d is negative (%" PRId64 ")",
                              kind, name, i, d->dim_value);
        }
    }
    if (input && top && dt == GX_DTYPE_COUNT)
        return s_fail(c, GX_EFORMAT, path, "graph input '%.100s' has no tensor element type", name);
    if (!input && dt == GX_DTYPE_COUNT)
        ndim = -1; /* a shape without a dtype declares nothing gexec checks */
    rc = !input ? gx_graph_add_output_decl(g, name, dt, ndim, shape)
         : top  ? gx_graph_add_input(g, name, dt, ndim, shape)
                : gx_graph_add_input_decl(g, name, dt, ndim, shape);
    if (rc == GX_OK && (seq || optional))
        rc = gx_graph_set_decl_kind(g, input, name, seq ? GX_KIND_SEQUENCE : GX_KIND_TENSOR,
                                    optional);
    if (rc < 0)
        return s_fail(c, rc, path, "cannot declare %s '%.100s': %s", kind, name, gx_strerror(rc));
    return GX_OK;
}

/* A STRING attribute's bytes as a C string (no NUL inside). */
static int s_attr_string(s_ctx *c, const ProtobufCBinaryData *s, const char *path, char **out)
{
    if (s->len && memchr(s->data, '\0', s->len))
        return s_fail(c, GX_EATTR, path, "string contains a NUL byte");
    if (!(*out = malloc(s->len + 1)))
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    if (s->len)
        memcpy(*out, s->data, s->len);
    (*out)[s->len] = '\0';
    return GX_OK;
}

static const char *s_attr_type_name(int t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT",   "INT",           "STRING",         "TENSOR",
        "GRAPH",     "FLOATS",  "INTS",          "STRINGS",        "TENSORS",
        "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
    };
    return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* One attribute onto node n; path names the node. */
static int s_attr(s_ctx *c, gx_node *n, const Onnx__AttributeProto *a, const char *npath,
                  int depth)
{
    char path[800];
    const char *name = a->name;
    int rc = GX_OK;
    if (!name || !*name)
        return s_fail(c, GX_EFORMAT, npath, "an attribute without a name");
    snprintf(path, sizeof path, "%.640s: attribute '%.100s'", npath, name);
    if (a->ref_attr_name && *a->ref_attr_name)
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "references attribute '%.100s' of a function (not supported)",
                      a->ref_attr_name);
    if (!a->has_type)
        return s_fail(c, GX_EFORMAT, path, "no type (models older than IR version 2 are not supported)");
    switch ((int)a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        rc = gx_node_set_float(n, name, (double)a->f);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        rc = gx_node_set_int(n, name, a->i);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        char *s = NULL;
        if ((rc = s_attr_string(c, &a->s, path, &s)) < 0)
            return rc;
        rc = gx_node_set_string(n, name, s);
        free(s);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        double *v = malloc((a->n_floats ? a->n_floats : 1) * sizeof *v);
        if (!v)
            return s_fail(c, GX_ENOMEM, path, "out of memory");
        for (size_t i = 0; i < a->n_floats; i++)
            v[i] = (double)a->floats[i];
        rc = gx_node_set_floats(n, name, v, a->n_floats);
        free(v);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        rc = gx_node_set_ints(n, name, a->ints, a->n_ints);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        /* a list of strings: a 1-D string tensor attribute (docs/onnx.md) */
        gx_tensor *t = gx_tensor_new(GX_STRING, 1, (int64_t[]){(int64_t)a->n_strings});
        for (size_t i = 0; t && i < a->n_strings; i++)
            if (gx_tensor_set_string(t, (int64_t)i, (const char *)a->strings[i].data,
                                     a->strings[i].len) < 0)
                gx_tensor_destroy(&t);
        if (!t)
            return s_fail(c, GX_ENOMEM, path, "out of memory");
        rc = gx_node_set_tensor(n, name, &t);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        gx_tensor *t = NULL;
        if (!a->t)
            return s_fail(c, GX_EFORMAT, path, "TENSOR attribute without a tensor");
        if ((rc = s_tensor(c, a->t, path, &t)) < 0)
            return rc;
        rc = gx_node_set_tensor(n, name, &t);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
        gx_graph *sub = NULL;
        if (!a->g)
            return s_fail(c, GX_EFORMAT, path, "GRAPH attribute without a graph");
        if (depth >= S_MAX_GRAPH_DEPTH)
            return s_fail(c, GX_ELIMIT, path, "subgraphs nest deeper than %d levels",
                          S_MAX_GRAPH_DEPTH);
        snprintf(path, sizeof path, "%.640s.%.100s", npath, name);
        if ((rc = s_graph(c, a->g, path, depth + 1, false, &sub)) < 0 || !sub)
            return rc; /* !sub: its problems were collected */
        snprintf(path, sizeof path, "%.640s: attribute '%.100s'", npath, name);
        rc = gx_node_set_graph(n, name, &sub);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        return s_fail(c, GX_EFORMAT, path, "type UNDEFINED");
    default:
        return s_fail(c, GX_EUNSUPPORTED, path, "attributes of type %s (%d) are not supported",
                      s_attr_type_name((int)a->type), (int)a->type);
    }
    if (rc == GX_EATTR)
        return s_fail(c, GX_EATTR, path, "given twice");
    if (rc < 0)
        return s_fail(c, rc, path, "%s", gx_strerror(rc));
    return GX_OK;
}

/* A Constant node becomes a graph constant named after its output. */
static int s_constant(s_ctx *c, gx_graph *g, const Onnx__NodeProto *np, const char *path)
{
    if (np->n_input != 0 || np->n_output != 1 || !*np->output[0])
        return s_fail(c, GX_EFORMAT, path, "a Constant has no inputs and one output");
    if (np->n_attribute != 1 || !np->attribute[0] || !np->attribute[0]->name)
        return s_fail(c, GX_EFORMAT, path, "a Constant has exactly one attribute, this one %zu",
                      np->n_attribute);
    const Onnx__AttributeProto *a = np->attribute[0];
    const char *an = a->name;
    char apath[800];
    gx_tensor *t = NULL;
    int rc = GX_OK;
    snprintf(apath, sizeof apath, "%.640s: attribute '%.100s'", path, an);
    int want = strcmp(an, "value") == 0          ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
               : strcmp(an, "value_float") == 0  ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
               : strcmp(an, "value_floats") == 0 ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
               : strcmp(an, "value_int") == 0    ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
               : strcmp(an, "value_ints") == 0   ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                                                 : -1;
    if (want < 0 && strcmp(an, "value_string") == 0)
        want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (want < 0 && strcmp(an, "value_strings") == 0)
        want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (want < 0 && strcmp(an, "sparse_value") == 0)
        return s_fail(c, GX_EUNSUPPORTED, apath, "sparse constants are not supported");
    if (want < 0)
        return s_fail(c, GX_EFORMAT, apath, "not an attribute of Constant");
    if (!a->has_type || (int)a->type != want)
        return s_fail(c, GX_EFORMAT, apath, "has type %s, expected %s",
                      s_attr_type_name(a->has_type ? (int)a->type : 0), s_attr_type_name(want));
    switch (want) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!a->t)
            return s_fail(c, GX_EFORMAT, apath, "TENSOR attribute without a tensor");
        if ((rc = s_tensor(c, a->t, apath, &t)) < 0)
            return rc;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        if ((t = gx_tensor_new(GX_F32, 0, NULL)))
            *(float *)t->data = a->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        if ((t = gx_tensor_new(GX_I64, 0, NULL)))
            *(int64_t *)t->data = a->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        t = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){(int64_t)a->n_floats}, a->floats,
                               a->n_floats * sizeof *a->floats);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        if ((t = gx_tensor_new(GX_STRING, 0, NULL)) &&
            gx_tensor_set_string(t, 0, (const char *)a->s.data, a->s.len) < 0)
            gx_tensor_destroy(&t);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        t = gx_tensor_new(GX_STRING, 1, (int64_t[]){(int64_t)a->n_strings});
        for (size_t i = 0; t && i < a->n_strings; i++)
            if (gx_tensor_set_string(t, (int64_t)i, (const char *)a->strings[i].data,
                                     a->strings[i].len) < 0)
                gx_tensor_destroy(&t);
        break;
    default: /* INTS */
        t = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){(int64_t)a->n_ints}, a->ints,
                               a->n_ints * sizeof *a->ints);
        break;
    }
    if (!t)
        return s_fail(c, GX_ENOMEM, apath, "out of memory");
    if ((rc = gx_graph_add_const(g, np->output[0], &t)) < 0)
        return s_fail(c, rc, path, "cannot add constant '%.100s': %s", np->output[0],
                      gx_strerror(rc));
    return GX_OK;
}

/* The imported domain called name, or NULL. */
static const s_domain *s_domain_find(const s_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->n_domains; i++)
        if (strcmp(c->domains[i].name, name) == 0)
            return &c->domains[i];
    return NULL;
}

/* ---- nodes and version conversion --------------------------------------- */

/* One ONNX node on its way into the graph: the op, inputs, outputs and
 * attributes it is emitted with; a conversion changes these and adds
 * helper nodes around it. */
typedef struct s_emit {
    s_ctx *c;
    gx_graph *g;
    const Onnx__NodeProto *np;
    const char *path;       /* names the ONNX node in messages */
    int depth;
    s_set *node_names;      /* the graph's node names */
    const char *op;         /* the op emitted (the ONNX node's) */
    const char *name;       /* the emitted node's name, unique in the graph */
    const char **in, **out; /* room for n_input + 2 and n_output + 2 */
    size_t n_in, n_out;
    const char *skip[8];    /* attributes not copied onto the node */
    size_t n_skip;
} s_emit;

/* The attribute called name, or NULL. */
static const Onnx__AttributeProto *s_find(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0)
            return np->attribute[i];
    return NULL;
}

/* The attribute called name if it has type t, else NULL. */
static const Onnx__AttributeProto *s_find_typed(const Onnx__NodeProto *np, const char *name, int t)
{
    const Onnx__AttributeProto *a = s_find(np, name);
    return a && a->has_type && (int)a->type == t ? a : NULL;
}

/* The INT attribute called name, or def. */
static int64_t s_find_int(const Onnx__NodeProto *np, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a =
        s_find_typed(np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a ? a->i : def;
}

static void s_skip(s_emit *e, const char *attr)
{
    if (e->n_skip < sizeof e->skip / sizeof e->skip[0])
        e->skip[e->n_skip++] = attr;
}

static bool s_skipped(const s_emit *e, const char *attr)
{
    for (size_t i = 0; i < e->n_skip; i++)
        if (strcmp(e->skip[i], attr) == 0)
            return true;
    return false;
}

/* A value name no other value of the model has, "<node>/<what>[_k]";
 * NULL with the error set. */
static const char *s_fresh_value(s_emit *e, const char *what)
{
    s_ctx *c = e->c;
    char *s = s_own(c, "%.200s/%.60s", e->name, what);
    for (unsigned k = 1; s && s_set_has(&c->values, s); k++)
        s = s_own(c, "%.200s/%.60s_%u", e->name, what, k);
    if (!s || !s_set_add(&c->values, s)) {
        s_fail(c, GX_ENOMEM, e->path, "out of memory");
        return NULL;
    }
    return s;
}

/* A helper node op(ins) -> out; out NULL: a fresh value, returned in
 * *made. NULL with the error set (GX_ENOMEM). */
static gx_node *s_aux(s_emit *e, const char *op, size_t n_in, const char *const *ins,
                      const char *out, const char **made)
{
    s_ctx *c = e->c;
    char *name = s_own(c, "%.200s/%.60s", e->name, op);
    for (unsigned k = 1; name && s_set_has(e->node_names, name); k++)
        name = s_own(c, "%.200s/%.60s_%u", e->name, op, k);
    if (!name || !s_set_add(e->node_names, name)) {
        s_fail(c, GX_ENOMEM, e->path, "out of memory");
        return NULL;
    }
    if (!out && !(out = s_fresh_value(e, op)))
        return NULL;
    gx_node *n = gx_graph_add_node(e->g, op, name, n_in, ins, 1, &out);
    if (!n)
        s_fail(c, GX_ENOMEM, e->path, "cannot add a node (out of memory)");
    else if (made)
        *made = out;
    return n;
}

/* The same with an INT attribute; GX_OK or the error set. */
static int s_aux_i(s_emit *e, const char *op, size_t n_in, const char *const *ins,
                   const char *out, const char **made, const char *attr, int64_t v)
{
    gx_node *n = s_aux(e, op, n_in, ins, out, made);
    if (!n)
        return GX_ENOMEM;
    int rc = gx_node_set_int(n, attr, v);
    return rc < 0 ? s_fail(e->c, rc, e->path, "%s", gx_strerror(rc)) : GX_OK;
}

/* A constant (ownership of *t moves in) under a fresh name; NULL with the
 * error set. */
static const char *s_aux_const(s_emit *e, const char *what, gx_tensor **t)
{
    const char *name = NULL;
    if (!*t)
        s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
    else if ((name = s_fresh_value(e, what))) {
        int rc = gx_graph_add_const(e->g, name, t);
        if (rc < 0) {
            s_fail(e->c, rc, e->path, "cannot add constant '%.100s': %s", name, gx_strerror(rc));
            name = NULL;
        }
    }
    gx_tensor_destroy(t);
    return name;
}

/* An int64 constant: the vector v[0..n), or (scalar) the 0-D v[0]. */
static const char *s_aux_i64(s_emit *e, const char *what, bool scalar, size_t n, const int64_t *v)
{
    gx_tensor *t = scalar ? gx_tensor_new_copy(GX_I64, 0, NULL, v, sizeof *v)
                          : gx_tensor_new_copy(GX_I64, 1, (int64_t[]){(int64_t)n}, v,
                                               n * sizeof *v);
    return s_aux_const(e, what, &t);
}

/* The node itself with its attributes but the skipped ones, into *out. */
static int s_emit_node(s_emit *e, gx_node **out)
{
    gx_node *n = gx_graph_add_node(e->g, e->op, e->name, e->n_in, e->in, e->n_out, e->out);
    if (!n)
        return s_fail(e->c, GX_ENOMEM, e->path, "cannot add the node (out of memory)");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = e->np->attribute[i];
        int rc;
        if (!(a->name && s_skipped(e, a->name)) && (rc = s_attr(e->c, n, a, e->path, e->depth)) < 0)
            return rc;
    }
    if (out)
        *out = n;
    return GX_OK;
}

/* Set an attribute a conversion made; GX_OK or the error set. */
static int s_set_rc(s_emit *e, int rc, const char *attr)
{
    return rc < 0 ? s_fail(e->c, rc, e->path, "attribute '%s' as converted: %s", attr,
                           gx_strerror(rc))
                  : GX_OK;
}

/* *y = B reshaped so that numpy broadcasting lines it up with A from axis
 * on (opset 1-6 broadcast=1 with an axis): B's shape followed by
 * max(0, rank(A) - axis - rank(B)) ones (for a negative axis, -axis -
 * rank(B)). Shapes known when the graph is compiled fold to a constant. */
static int s_axis_broadcast(s_emit *e, const char *a, const char *b, int64_t axis, const char **y)
{
    const char *sa, *ra, *sb, *rb, *t, *n, *n0, *ones, *shp, *zero, *k;
    int64_t z = 0, kv = axis < 0 ? -axis : axis;
    gx_node *cn;
    if (!s_aux(e, "Shape", 1, &b, NULL, &sb) || !s_aux(e, "Shape", 1, &sb, NULL, &rb) ||
        !(k = s_aux_i64(e, "axis", false, 1, &kv)) || !(zero = s_aux_i64(e, "zero", false, 1, &z)))
        return GX_ENOMEM;
    if (axis >= 0) {
        if (!s_aux(e, "Shape", 1, &a, NULL, &sa) || !s_aux(e, "Shape", 1, &sa, NULL, &ra) ||
            !s_aux(e, "Sub", 2, (const char *[]){ra, k}, NULL, &t) ||
            !s_aux(e, "Sub", 2, (const char *[]){t, rb}, NULL, &n))
            return GX_ENOMEM;
    } else if (!s_aux(e, "Sub", 2, (const char *[]){k, rb}, NULL, &n)) {
        return GX_ENOMEM;
    }
    if (!s_aux(e, "Max", 2, (const char *[]){n, zero}, NULL, &n0) ||
        !(cn = s_aux(e, "ConstantOfShape", 1, &n0, NULL, &ones)))
        return GX_ENOMEM;
    gx_tensor *one = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){1}, (int64_t[]){1}, 8);
    int rc = one ? gx_node_set_tensor(cn, "value", &one) : GX_ENOMEM;
    if ((rc = s_set_rc(e, rc, "value")) < 0 ||
        (rc = s_aux_i(e, "Concat", 2, (const char *[]){sb, ones}, NULL, &shp, "axis", 0)) < 0)
        return rc;
    return s_aux_i(e, "Reshape", 2, (const char *[]){b, shp}, NULL, y, "allowzero", 1);
}

/* A float32 constant of shape (ndim, shape) cast to like's type; NULL
 * with the error set. */
static const char *s_aux_like(s_emit *e, const char *what, int ndim, const int64_t *shape,
                              const float *v, size_t n, const char *like)
{
    gx_tensor *t = gx_tensor_new_copy(GX_F32, ndim, shape, v, n * sizeof *v);
    const char *k = s_aux_const(e, what, &t), *out = NULL;
    if (k && !s_aux(e, "CastLike", 2, (const char *[]){k, like}, NULL, &out))
        return NULL;
    return out;
}

/* The FLOAT attribute name into *v: its value, def when absent, or (def
 * NaN: required) an error. */
static int s_float_attr(s_emit *e, const char *name, float def, float *v)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (!a && def != def)
        return s_fail(e->c, GX_EATTR, e->path, "%s of opset %" PRId64 " needs the FLOAT "
                      "attribute '%s'", e->op, e->c->opset, name);
    *v = a ? a->f : def;
    return GX_OK;
}

/* The rank the graph being read declares for value name where the daemon
 * checks it: an initializer, or an input or output of the model's graph
 * declared with a shape (value_info is not checked, so not trusted); else
 * -1. */
static int s_rank_of(const s_ctx *c, const char *name)
{
    const Onnx__GraphProto *gp = c->graph;
    if (!gp)
        return -1;
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i] && gp->initializer[i]->name &&
            strcmp(gp->initializer[i]->name, name) == 0)
            return gp->initializer[i]->n_dims <= GX_MAX_DIMS ? (int)gp->initializer[i]->n_dims
                                                              : -1;
    for (int l = 0; l < 2 && gp == c->main; l++) {
        Onnx__ValueInfoProto *const *list = l ? gp->output : gp->input;
        for (size_t i = 0, n = l ? gp->n_output : gp->n_input; i < n; i++) {
            const Onnx__ValueInfoProto *vi = list[i];
            if (!vi || !vi->name || strcmp(vi->name, name) != 0)
                continue;
            const Onnx__TypeProto *tp = vi->type;
            if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
                tp->tensor_type->has_elem_type && tp->tensor_type->elem_type &&
                tp->tensor_type->shape && tp->tensor_type->shape->n_dim <= GX_MAX_DIMS)
                return (int)tp->tensor_type->shape->n_dim;
            return -1;
        }
    }
    return -1;
}

/* Each conversion below prepares e (inputs, outputs, attributes to skip),
 * adds the helper nodes it needs and emits the node, so the daemon sees
 * the op in its current form. */

/* Softmax, LogSoftmax, Hardmax before 13 coerce the input to 2-D at axis
 * (default 1): Flatten(axis) -> op(axis=1) -> Reshape to the input's
 * shape. */
static int s_cv_coerce2d(s_emit *e)
{
    const char *x = e->n_in ? e->in[0] : "", *flat, *shape, *y0, *y;
    int64_t axis = s_find_int(e->np, "axis", 1);
    int rank;
    gx_node *n;
    int rc;
    if (!*x || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "%s takes one input and gives one output",
                      e->op);
    /* at the last axis (-1, or rank - 1 of a rank the daemon checks) the
     * 2-D coercion changes nothing: the op as it is */
    if ((rank = s_rank_of(e->c, x)) < 0)
        rank = s_rank_of(e->c, e->out[0]);
    if (axis == -1 || (rank > 0 && axis == rank - 1))
        return s_emit_node(e, NULL);
    if ((rc = s_aux_i(e, "Flatten", 1, &x, NULL, &flat, "axis", axis)) < 0 ||
        !s_aux(e, "Shape", 1, &x, NULL, &shape) || !(y0 = s_fresh_value(e, e->op)))
        return rc < 0 ? rc : GX_ENOMEM;
    y = e->out[0];
    e->in[0] = flat;
    e->out[0] = y0;
    s_skip(e, "axis");
    if ((rc = s_emit_node(e, &n)) < 0 ||
        (rc = s_set_rc(e, gx_node_set_int(n, "axis", 1), "axis")) < 0)
        return rc;
    return s_aux_i(e, "Reshape", 2, (const char *[]){y0, shape}, y, NULL, "allowzero", 1);
}

/* Opset 1-6 elementwise ops with two inputs: broadcast=1 lets B broadcast
 * to A, from axis when given (else numpy's trailing alignment, as now);
 * broadcast=0 wants equal shapes, which numpy broadcasting accepts. */
static int s_cv_legacy_broadcast(s_emit *e)
{
    const Onnx__AttributeProto *axis =
        s_find_typed(e->np, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    int rc;
    s_skip(e, "broadcast");
    s_skip(e, "axis");
    if (axis && s_find_int(e->np, "broadcast", 0) && e->n_in == 2 && *e->in[0] && *e->in[1] &&
        (rc = s_axis_broadcast(e, e->in[0], e->in[1], axis->i, &e->in[1])) < 0)
        return rc;
    return s_emit_node(e, NULL);
}

/* PRelu before 7: a slope of size 1, or one per channel (axis 1). */
static int s_cv_prelu(s_emit *e)
{
    int rc;
    if (e->n_in == 2 && *e->in[0] && *e->in[1] &&
        (rc = s_axis_broadcast(e, e->in[0], e->in[1], 1, &e->in[1])) < 0)
        return rc;
    return s_emit_node(e, NULL);
}

/* Gemm before 7: C broadcasts (broadcast=1) or has the output's shape,
 * both accepted by the unidirectional broadcasting of Gemm 7 on. */
static int s_cv_gemm(s_emit *e)
{
    s_skip(e, "broadcast");
    return s_emit_node(e, NULL);
}

/* BatchNormalization: before 7 is_test says the mode (default 0:
 * training, statistics of the batch); from 7 to 13 the mean and var
 * outputs mean training mode; 14 says it with training_mode. */
static int s_cv_batchnorm(s_emit *e)
{
    gx_node *n;
    int rc;
    s_skip(e, "is_test");
    bool stats = e->c->opset < 7 && !s_find_int(e->np, "is_test", 0);
    for (size_t i = 1; i < e->n_out; i++) {
        if (i >= 3 && *e->out[i])
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "outputs saved_mean and saved_var (before opset 14) are not "
                          "supported");
        stats |= *e->out[i] != '\0';
    }
    if (e->n_out > 3)
        e->n_out = 3;
    if (e->c->opset < 9 && s_find_int(e->np, "spatial", 1) == 0) {
        /* statistics per element ([C, D1, ...], lined up with X [N, C,
         * D1, ...] by numpy broadcasting): the formula itself */
        const char *d, *v, *sd, *q, *m, *eps;
        float epsv;
        if (stats)
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "spatial=0 in training mode (is_test=0 before opset 7, or mean and "
                          "var outputs) is not supported");
        if (e->n_in != 5 || !*e->in[0] || !*e->in[1] || !*e->in[2] || !*e->in[3] || !*e->in[4])
            return s_fail(e->c, GX_EFORMAT, e->path,
                          "BatchNormalization takes X, scale, B, mean and var");
        if ((rc = s_float_attr(e, "epsilon", 1e-5f, &epsv)) < 0)
            return rc;
        if (!(eps = s_aux_like(e, "epsilon", 0, NULL, &epsv, 1, e->in[4])) ||
            !s_aux(e, "Sub", 2, (const char *[]){e->in[0], e->in[3]}, NULL, &d) ||
            !s_aux(e, "Add", 2, (const char *[]){e->in[4], eps}, NULL, &v) ||
            !s_aux(e, "Sqrt", 1, &v, NULL, &sd) ||
            !s_aux(e, "Div", 2, (const char *[]){d, sd}, NULL, &q) ||
            !s_aux(e, "Mul", 2, (const char *[]){q, e->in[1]}, NULL, &m) ||
            !s_aux(e, "Add", 2, (const char *[]){m, e->in[2]}, e->out[0], NULL))
            return GX_ENOMEM;
        return GX_OK;
    }
    if ((rc = s_emit_node(e, &n)) < 0)
        return rc;
    return stats ? s_set_rc(e, gx_node_set_int(n, "training_mode", 1), "training_mode") : GX_OK;
}

/* Dropout before 12: is_test (before 7; 0, the default, is training,
 * which drops at random: 12's training_mode input, true) and, before 10, a
 * mask of the input's type rather than bool. ratio stays an attribute,
 * which the daemon reads as 12's input. */
static int s_cv_dropout(s_emit *e)
{
    const char *mask = e->n_out > 1 ? e->out[1] : "", *m;
    int rc;
    s_skip(e, "is_test");
    if (e->c->opset < 7 && !s_find_int(e->np, "is_test", 0)) {
        const bool yes = true;
        gx_tensor *t = gx_tensor_new_copy(GX_BOOL, 0, NULL, &yes, sizeof yes);
        const char *training = s_aux_const(e, "training_mode", &t);
        if (!training)
            return GX_ENOMEM;
        e->in[1] = ""; /* no ratio input: the attribute */
        e->in[2] = training;
        e->n_in = 3;
    }
    if (e->c->opset >= 10 || !*mask)
        return s_emit_node(e, NULL);
    if (!(m = s_fresh_value(e, "mask")))
        return GX_ENOMEM;
    e->out[1] = m;
    if ((rc = s_emit_node(e, NULL)) < 0)
        return rc;
    return s_aux(e, "CastLike", 2, (const char *[]){m, e->in[0]}, mask, NULL) ? GX_OK : GX_ENOMEM;
}

/* Concat before 4: axis is optional, default 1. */
static int s_cv_concat(s_emit *e)
{
    gx_node *n;
    int rc = s_emit_node(e, &n);
    if (rc < 0 || s_find(e->np, "axis"))
        return rc;
    return s_set_rc(e, gx_node_set_int(n, "axis", 1), "axis");
}

/* Reshape before 5: the shape is an attribute. */
static int s_cv_reshape(s_emit *e)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, "shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a)
        return s_fail(e->c, GX_EATTR, e->path, "Reshape of opset %" PRId64 " needs the INTS "
                      "attribute 'shape'", e->c->opset);
    const char *shape = s_aux_i64(e, "shape", false, a->n_ints, a->ints);
    if (!shape)
        return GX_ENOMEM;
    s_skip(e, "shape");
    e->n_in = 2;
    e->in[1] = shape;
    return s_emit_node(e, NULL);
}

/* Cast before 6: `to` names the type ("FLOAT"). */
static int s_cv_cast(s_emit *e)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, "to", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a)
        return s_emit_node(e, NULL);
    int32_t t = -1;
    for (int32_t i = 1; i <= ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16; i++)
        if (strlen(s_onnx_type_name(i)) == a->s.len &&
            memcmp(s_onnx_type_name(i), a->s.data, a->s.len) == 0)
            t = i;
    if (t < 0)
        return s_fail(e->c, GX_EATTR, e->path, "to='%.*s' is not an ONNX element type",
                      (int)(a->s.len > 40 ? 40 : a->s.len), (const char *)a->s.data);
    gx_node *n;
    int rc;
    s_skip(e, "to");
    if ((rc = s_emit_node(e, &n)) < 0)
        return rc;
    return s_set_rc(e, gx_node_set_int(n, "to", t), "to");
}

/* LpPool and GlobalLpPool before 2: p is a float. */
static int s_cv_lppool(s_emit *e)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, "p", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (!a)
        return s_emit_node(e, NULL);
    if (!(a->f >= 1 && a->f <= 1e6 && a->f == (float)(int64_t)a->f))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path, "p=%g: only whole p are supported",
                      (double)a->f);
    gx_node *n;
    int rc;
    s_skip(e, "p");
    if ((rc = s_emit_node(e, &n)) < 0)
        return rc;
    return s_set_rc(e, gx_node_set_int(n, "p", (int64_t)a->f), "p");
}

/* Pad before 2: the pads are called paddings. */
static int s_cv_pad(s_emit *e)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, "paddings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    gx_node *n;
    int rc;
    s_skip(e, "paddings");
    if ((rc = s_emit_node(e, &n)) < 0 || !a)
        return rc;
    return s_set_rc(e, gx_node_set_ints(n, "pads", a->ints, a->n_ints), "pads");
}

/* Upsample before 7: height_scale and width_scale of an NCHW input, mode
 * nearest or bilinear. */
static int s_cv_upsample(s_emit *e)
{
    const Onnx__AttributeProto *h =
        s_find_typed(e->np, "height_scale", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    const Onnx__AttributeProto *w =
        s_find_typed(e->np, "width_scale", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    const Onnx__AttributeProto *m =
        s_find_typed(e->np, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!h || !w)
        return s_fail(e->c, GX_EATTR, e->path, "Upsample of opset %" PRId64 " needs "
                      "height_scale and width_scale", e->c->opset);
    const char *mode = "nearest";
    if (m && m->s.len == 8 && memcmp(m->s.data, "bilinear", 8) == 0)
        mode = "linear";
    else if (m && !(m->s.len == 7 && memcmp(m->s.data, "nearest", 7) == 0))
        return s_fail(e->c, GX_EATTR, e->path, "mode '%.*s' is not nearest or bilinear",
                      (int)(m->s.len > 40 ? 40 : m->s.len), (const char *)m->s.data);
    gx_node *n;
    int rc;
    s_skip(e, "height_scale");
    s_skip(e, "width_scale");
    s_skip(e, "mode");
    if ((rc = s_emit_node(e, &n)) < 0 ||
        (rc = s_set_rc(e, gx_node_set_string(n, "mode", mode), "mode")) < 0)
        return rc;
    double sc[4] = {1, 1, h->f, w->f};
    return s_set_rc(e, gx_node_set_floats(n, "scales", sc, 4), "scales");
}

/* RNN, GRU, LSTM before 7: output_sequence only said whether Y is
 * wanted, which the outputs say. */
static int s_cv_rnn(s_emit *e)
{
    s_skip(e, "output_sequence");
    return s_emit_node(e, NULL);
}

/* The constant called name in the graph being read (an initializer or a
 * Constant node's tensor), or NULL. */
static const Onnx__TensorProto *s_const_named(const s_ctx *c, const char *name)
{
    const Onnx__GraphProto *gp = c->graph;
    for (size_t i = 0; gp && i < gp->n_initializer; i++)
        if (gp->initializer[i] && gp->initializer[i]->name &&
            strcmp(gp->initializer[i]->name, name) == 0)
            return gp->initializer[i];
    for (size_t i = 0; gp && i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (n && n->op_type && strcmp(n->op_type, "Constant") == 0 && n->n_output == 1 &&
            n->output[0] && strcmp(n->output[0], name) == 0 && n->n_attribute == 1 &&
            n->attribute[0] && n->attribute[0]->t)
            return n->attribute[0]->t;
    }
    return NULL;
}

/* DFT from 20: axis is input 2 (default -2), where 17 had an attribute
 * (default 1). */
static int s_cv_dft(s_emit *e)
{
    int64_t axis = -2;
    if (e->n_in > 2 && *e->in[2]) {
        const Onnx__TensorProto *t = s_const_named(e->c, e->in[2]);
        gx_tensor *v = NULL;
        int rc;
        if (!t)
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "axis (input 2 from opset 20) must be a constant");
        if ((rc = s_tensor(e->c, t, e->path, &v)) < 0)
            return rc;
        bool ok = v && gx_tensor_numel(v) == 1 && (v->dtype == GX_I64 || v->dtype == GX_I32);
        if (ok)
            axis = v->dtype == GX_I64 ? *(int64_t *)v->data : *(int32_t *)v->data;
        gx_tensor_destroy(&v);
        if (!ok)
            return s_fail(e->c, GX_EFORMAT, e->path, "axis (input 2) is not an integer scalar");
    }
    if (e->n_in > 2)
        e->n_in = 2;
    while (e->n_in > 1 && !*e->in[e->n_in - 1])
        e->n_in--;
    gx_node *n;
    int rc = s_emit_node(e, &n);
    return rc < 0 ? rc : s_set_rc(e, gx_node_set_int(n, "axis", axis), "axis");
}

/* The experimental ops of opsets 1-9, removed in 10, as the ops they
 * stand for: ImageScaler (x * scale + bias per channel of NCHW), Affine
 * (alpha * x + beta), Scale (x * scale), ScaledTanh (alpha * tanh(beta *
 * x)), ParametricSoftplus (alpha * softplus(beta * x)) and Crop (a Slice
 * of H and W). */
static int s_cv_experimental(s_emit *e)
{
    const char *op = e->op, *x = e->n_in ? e->in[0] : "", *y = e->n_out ? e->out[0] : "";
    const char *k1, *k2, *t, *u;
    float alpha, beta;
    int rc;
    if (e->n_in != 1 || !*x || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "%s takes one input and gives one output", op);
    if (strcmp(op, "Crop") == 0) {
        const Onnx__AttributeProto *b =
            s_find_typed(e->np, "border", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
        const Onnx__AttributeProto *sc =
            s_find_typed(e->np, "scale", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
        bool neg = false;
        for (size_t i = 0; b && i < b->n_ints; i++)
            neg |= b->ints[i] < 0 || b->ints[i] > INT32_MAX;
        for (size_t i = 0; sc && i < sc->n_ints; i++)
            neg |= sc->ints[i] < 0 || sc->ints[i] > INT32_MAX;
        if (!b || b->n_ints != 4 || (sc && sc->n_ints != 2) || neg)
            return s_fail(e->c, GX_EATTR, e->path,
                          "Crop needs border [left, top, right, bottom] and at most a scale "
                          "[height, width], none negative");
        int64_t starts[2] = {b->ints[1], b->ints[0]}, ends[2], axes[2] = {2, 3};
        if (sc) {
            ends[0] = b->ints[1] + sc->ints[0];
            ends[1] = b->ints[0] + sc->ints[1];
        } else {
            ends[0] = b->ints[3] ? -b->ints[3] : INT64_MAX;
            ends[1] = b->ints[2] ? -b->ints[2] : INT64_MAX;
        }
        const char *st = s_aux_i64(e, "starts", false, 2, starts);
        const char *en = st ? s_aux_i64(e, "ends", false, 2, ends) : NULL;
        const char *ax = en ? s_aux_i64(e, "axes", false, 2, axes) : NULL;
        if (!ax || !s_aux(e, "Slice", 4, (const char *[]){x, st, en, ax}, y, NULL))
            return GX_ENOMEM;
        return GX_OK;
    }
    if (strcmp(op, "ImageScaler") == 0) {
        const Onnx__AttributeProto *b =
            s_find_typed(e->np, "bias", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
        if ((rc = s_float_attr(e, "scale", 1, &alpha)) < 0)
            return rc;
        if (!(k1 = s_aux_like(e, "scale", 0, NULL, &alpha, 1, x)))
            return GX_ENOMEM;
        if (!b)
            return s_aux(e, "Mul", 2, (const char *[]){x, k1}, y, NULL) ? GX_OK : GX_ENOMEM;
        if (!s_aux(e, "Mul", 2, (const char *[]){x, k1}, NULL, &t) ||
            !(k2 = s_aux_like(e, "bias", 3, (int64_t[]){(int64_t)b->n_floats, 1, 1}, b->floats,
                              b->n_floats, x)) ||
            !s_aux(e, "Add", 2, (const char *[]){t, k2}, y, NULL))
            return GX_ENOMEM;
        return GX_OK;
    }
    if (strcmp(op, "Scale") == 0) {
        if ((rc = s_float_attr(e, "scale", 1, &alpha)) < 0)
            return rc;
        if (!(k1 = s_aux_like(e, "scale", 0, NULL, &alpha, 1, x)) ||
            !s_aux(e, "Mul", 2, (const char *[]){x, k1}, y, NULL))
            return GX_ENOMEM;
        return GX_OK;
    }
    /* Affine, ScaledTanh, ParametricSoftplus */
    bool affine = strcmp(op, "Affine") == 0;
    if ((rc = s_float_attr(e, "alpha", affine ? 1 : NAN, &alpha)) < 0 ||
        (rc = s_float_attr(e, "beta", affine ? 0 : NAN, &beta)) < 0)
        return rc;
    if (!(k1 = s_aux_like(e, "alpha", 0, NULL, &alpha, 1, x)) ||
        !(k2 = s_aux_like(e, "beta", 0, NULL, &beta, 1, x)))
        return GX_ENOMEM;
    if (affine)
        return s_aux(e, "Mul", 2, (const char *[]){x, k1}, NULL, &t) &&
                       s_aux(e, "Add", 2, (const char *[]){t, k2}, y, NULL)
                   ? GX_OK
                   : GX_ENOMEM;
    if (!s_aux(e, "Mul", 2, (const char *[]){x, k2}, NULL, &t) ||
        !s_aux(e, strcmp(op, "ScaledTanh") == 0 ? "Tanh" : "Softplus", 1, &t, NULL, &u) ||
        !s_aux(e, "Mul", 2, (const char *[]){u, k1}, y, NULL))
        return GX_ENOMEM;
    return GX_OK;
}

/* Tile before 6: Tile(input, tiles, axis), both scalars, repeats the
 * input tiles times along axis. repeats = Where(Range(rank) == axis,
 * tiles, 1). */
static int s_cv_tile1(s_emit *e)
{
    if (e->n_in != 3 || !*e->in[0] || !*e->in[1] || !*e->in[2])
        return s_fail(e->c, GX_EFORMAT, e->path, "Tile before opset 6 takes input, tiles, axis");
    const char *x = e->in[0], *sh, *rks, *zero, *one, *range, *ax, *eq, *tl, *reps, *e0;
    int64_t z = 0, o = 1;
    int rc;
    if (!s_aux(e, "Shape", 1, &x, NULL, &sh) ||
        !(zero = s_aux_i64(e, "zero", true, 1, &z)) || !(one = s_aux_i64(e, "one", true, 1, &o)) ||
        !(e0 = s_aux_i64(e, "empty_shape", false, 0, &z)))
        return GX_ENOMEM;
    if (!s_aux(e, "Size", 1, &sh, NULL, &rks) ||
        !s_aux(e, "Range", 3, (const char *[]){zero, rks, one}, NULL, &range))
        return GX_ENOMEM;
    if ((rc = s_aux_i(e, "Cast", 1, &e->in[2], NULL, &ax, "to",
                      ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) < 0 ||
        (rc = s_aux_i(e, "Cast", 1, &e->in[1], NULL, &tl, "to",
                      ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) < 0)
        return rc;
    const char *axs, *tls;
    if (!s_aux(e, "Reshape", 2, (const char *[]){ax, e0}, NULL, &axs) ||
        !s_aux(e, "Reshape", 2, (const char *[]){tl, e0}, NULL, &tls) ||
        !s_aux(e, "Equal", 2, (const char *[]){range, axs}, NULL, &eq) ||
        !s_aux(e, "Where", 3, (const char *[]){eq, tls, one}, NULL, &reps))
        return GX_ENOMEM;
    e->in[1] = reps;
    e->n_in = 2;
    return s_emit_node(e, NULL);
}

/* Scan 8: inputs (sequence_lens, N states [B, ...], M scan inputs
 * [B, T, ...]) with a batch axis the body does not see; outputs N final
 * states [B, ...] and K scan outputs [B, T, ...]. Becomes a Loop over the
 * batch whose body takes sample b of each input (Gather) and runs Scan 9
 * on it with the same body; the Loop stacks what each iteration returns
 * along a new axis 0, the batch. A scan input read in reverse (directions)
 * is reversed in the body and scanned forward. Only without
 * sequence_lens. */
static int s_cv_scan8(s_emit *e)
{
    s_ctx *c = e->c;
    const Onnx__AttributeProto *body =
        s_find_typed(e->np, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    const Onnx__AttributeProto *dirs =
        s_find_typed(e->np, "directions", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t m = s_find_int(e->np, "num_scan_inputs", -1);
    if (!body || !body->g || m < 1 || e->n_in < 1 + (size_t)m || e->n_out < 1 ||
        (dirs && dirs->n_ints != (size_t)m))
        return s_fail(c, GX_EFORMAT, e->path,
                      "Scan 8 needs a body, num_scan_inputs >= 1 and as many inputs after "
                      "sequence_lens, and a direction per scan input if any");
    if (*e->in[0])
        return s_fail(c, GX_EUNSUPPORTED, e->path,
                      "sequence_lens (input 0 of Scan before opset 9) is not supported");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = s_str(e->np->attribute[i]->name);
        if (strcmp(an, "body") && strcmp(an, "directions") && strcmp(an, "num_scan_inputs"))
            return s_fail(c, GX_EATTR, e->path, "attribute '%.100s' of Scan 8 is not supported",
                          an);
    }
    if (e->depth + 1 >= S_MAX_GRAPH_DEPTH)
        return s_fail(c, GX_ELIMIT, e->path, "subgraphs nest deeper than %d levels",
                      S_MAX_GRAPH_DEPTH);
    size_t n_vals = e->n_in - 1; /* states, then scan inputs */
    const char **inner_in = calloc(n_vals + 1, sizeof *inner_in);
    const char **inner_out = calloc(e->n_out + 1, sizeof *inner_out);
    gx_graph *lb = gx_graph_new(NULL);
    const char *shape, *zero, *trip, *iter, *cond_in, *cond_out, *first = e->in[1];
    int64_t z = 0;
    int rc = GX_OK;
    if (!inner_in || !inner_out || !lb) {
        rc = s_fail(c, GX_ENOMEM, e->path, "out of memory");
        goto out;
    }
    /* the trip count: the batch, dim 0 of the first input */
    if (!s_aux(e, "Shape", 1, &first, NULL, &shape) ||
        !(zero = s_aux_i64(e, "zero", true, 1, &z))) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = s_aux_i(e, "Gather", 2, (const char *[]){shape, zero}, NULL, &trip, "axis", 0)) < 0)
        goto out;
    /* the Loop's body: (iter, cond) -> (cond, final states, scan outputs) */
    if (!(iter = s_fresh_value(e, "iter")) || !(cond_in = s_fresh_value(e, "cond_in")) ||
        !(cond_out = s_fresh_value(e, "cond_out"))) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = gx_graph_add_input_decl(lb, iter, GX_I64, 0, NULL)) < 0 ||
        (rc = gx_graph_add_input_decl(lb, cond_in, GX_BOOL, 0, NULL)) < 0 ||
        !gx_graph_add_node(lb, "Identity", "cond", 1, &cond_in, 1, &cond_out) ||
        (rc = gx_graph_add_output(lb, cond_out)) < 0) {
        rc = s_fail(c, rc < 0 ? rc : GX_ENOMEM, e->path, "cannot build the loop body: %s",
                    gx_strerror(rc < 0 ? rc : GX_ENOMEM));
        goto out;
    }
    for (size_t i = 0; i < n_vals; i++) {
        char nn[32];
        snprintf(nn, sizeof nn, "sample_%zu", i);
        gx_node *gn;
        if (!(inner_in[i] = s_fresh_value(e, nn))) {
            rc = GX_ENOMEM;
            goto out;
        }
        if (!(gn = gx_graph_add_node(lb, "Gather", nn, 2, (const char *[]){e->in[1 + i], iter}, 1,
                                     &inner_in[i])) ||
            (rc = gx_node_set_int(gn, "axis", 0)) < 0) {
            rc = s_fail(c, GX_ENOMEM, e->path, "out of memory");
            goto out;
        }
        /* a scan input read in reverse: the sample reversed along its
         * sequence axis, scanned forward (the outputs are in step order
         * either way) */
        size_t j = i - (n_vals - (size_t)m);
        if (i >= n_vals - (size_t)m && dirs && j < dirs->n_ints && dirs->ints[j]) {
            const int64_t st = -1, en = INT64_MIN, ax = 0, step = -1;
            const char *cs, *ce, *ca, *cp, *rev;
            snprintf(nn, sizeof nn, "reverse_%zu", i);
            if (!(cs = s_aux_i64(e, "rev_start", false, 1, &st)) ||
                !(ce = s_aux_i64(e, "rev_end", false, 1, &en)) ||
                !(ca = s_aux_i64(e, "rev_axis", false, 1, &ax)) ||
                !(cp = s_aux_i64(e, "rev_step", false, 1, &step)) ||
                !(rev = s_fresh_value(e, nn))) {
                rc = GX_ENOMEM;
                goto out;
            }
            if (!gx_graph_add_node(lb, "Slice", nn, 5,
                                   (const char *[]){inner_in[i], cs, ce, ca, cp}, 1, &rev)) {
                rc = s_fail(c, GX_ENOMEM, e->path, "out of memory");
                goto out;
            }
            inner_in[i] = rev;
        }
    }
    for (size_t i = 0; i < e->n_out; i++) {
        if (!(inner_out[i] = s_fresh_value(e, "step_out"))) {
            rc = GX_ENOMEM;
            goto out;
        }
        if ((rc = gx_graph_add_output(lb, inner_out[i])) < 0) {
            rc = s_fail(c, rc, e->path, "cannot build the loop body: %s", gx_strerror(rc));
            goto out;
        }
    }
    gx_node *scan = gx_graph_add_node(lb, "Scan", "scan", n_vals, inner_in, e->n_out, inner_out);
    if (!scan || (rc = gx_node_set_int(scan, "num_scan_inputs", m)) < 0) {
        rc = s_fail(c, GX_ENOMEM, e->path, "out of memory");
        goto out;
    }
    if ((rc = s_attr(c, scan, body, e->path, e->depth + 1)) < 0)
        goto out;
    /* the node: Loop(trip, "") with that body, the Scan 8's outputs */
    e->op = "Loop";
    e->in[0] = trip;
    e->in[1] = "";
    e->n_in = 2;
    s_skip(e, "body");
    s_skip(e, "directions");
    s_skip(e, "num_scan_inputs");
    gx_node *loop;
    if ((rc = s_emit_node(e, &loop)) < 0)
        goto out;
    rc = s_set_rc(e, gx_node_set_graph(loop, "body", &lb), "body");
out:
    gx_graph_destroy(&lb);
    free(inner_in);
    free(inner_out);
    return rc;
}

/* RoiAlign before 16 did not shift by half a pixel, which 16 calls
 * coordinate_transformation_mode "output_half_pixel" (its default is
 * "half_pixel"). */
static int s_cv_roialign(s_emit *e)
{
    gx_node *n;
    int rc = s_emit_node(e, &n);
    if (rc < 0 || s_find(e->np, "coordinate_transformation_mode"))
        return rc;
    return s_set_rc(e, gx_node_set_string(n, "coordinate_transformation_mode",
                                          "output_half_pixel"),
                    "coordinate_transformation_mode");
}

/* MeanVarianceNormalization before 9 (experimental): across_channels
 * (default 0: over H and W of NCHW; 1: over C, H and W) and
 * normalize_variance (default 1; 0: subtract the mean only). */
static int s_cv_mvn1(s_emit *e)
{
    int64_t axes[3] = {1, 2, 3};
    bool across = s_find_int(e->np, "across_channels", 0) != 0;
    size_t n_axes = across ? 3 : 2;
    const int64_t *ax = across ? axes : axes + 1;
    int rc;
    if (e->n_in != 1 || !*e->in[0] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "%s takes one input and gives one output",
                      e->op);
    if (s_find_int(e->np, "normalize_variance", 1)) {
        gx_node *n;
        s_skip(e, "across_channels");
        s_skip(e, "normalize_variance");
        if ((rc = s_emit_node(e, &n)) < 0)
            return rc;
        return s_set_rc(e, gx_node_set_ints(n, "axes", ax, n_axes), "axes");
    }
    const char *x = e->in[0], *mean;
    gx_node *rm = s_aux(e, "ReduceMean", 1, &x, NULL, &mean);
    if (!rm)
        return GX_ENOMEM;
    if ((rc = s_set_rc(e, gx_node_set_ints(rm, "axes", ax, n_axes), "axes")) < 0)
        return rc;
    return s_aux(e, "Sub", 2, (const char *[]){x, mean}, e->out[0], NULL) ? GX_OK : GX_ENOMEM;
}

/* QuantizeLinear and DequantizeLinear from 21 and 23: output_dtype and
 * precision, whose default 0 (the type of the zero point or scale, as
 * before) is dropped; other values go to the daemon, which names what it
 * lacks. */
static int s_cv_quant21(s_emit *e)
{
    if (s_find_int(e->np, "output_dtype", 1) == 0)
        s_skip(e, "output_dtype");
    if (s_find_int(e->np, "precision", 1) == 0)
        s_skip(e, "precision");
    return s_emit_node(e, NULL);
}

/* DynamicSlice (experimental, opsets 1-9) is Slice 10: data, starts, ends
 * and axes as inputs. */
static int s_cv_dynamic_slice(s_emit *e)
{
    e->op = "Slice";
    return s_emit_node(e, NULL);
}

/* ConstantFill (experimental, opsets 1-9): a tensor of `value` (default
 * 0) of type `dtype` (default float) whose shape is the input's values
 * (input_as_shape=1), the input's shape, or the `shape` attribute, then
 * extra_shape: ConstantOfShape (float) and a Cast. */
static int s_cv_constant_fill(s_emit *e)
{
    const Onnx__AttributeProto *sh =
        s_find_typed(e->np, "shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    const Onnx__AttributeProto *ex =
        s_find_typed(e->np, "extra_shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    const char *x = e->n_in ? e->in[0] : "", *shape, *filled;
    int64_t dtype = s_find_int(e->np, "dtype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    gx_dtype dt;
    float value;
    int rc;
    if (e->n_in > 1 || e->n_out != 1 || (*x && sh))
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "ConstantFill takes at most one input (or a shape attribute) and gives "
                      "one output");
    if (!s_dtype((int32_t)dtype, &dt) || dtype != (int32_t)dtype)
        return s_fail(e->c, GX_EDTYPE, e->path, "dtype %" PRId64 " is not supported", dtype);
    if ((rc = s_float_attr(e, "value", 0, &value)) < 0)
        return rc;
    if (!*x) {
        size_t n = (sh ? sh->n_ints : 0) + (ex ? ex->n_ints : 0);
        int64_t *dims = calloc(n + 1, sizeof *dims);
        if (!dims)
            return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
        if (sh && sh->n_ints)
            memcpy(dims, sh->ints, sh->n_ints * sizeof *dims);
        if (ex && ex->n_ints)
            memcpy(dims + (sh ? sh->n_ints : 0), ex->ints, ex->n_ints * sizeof *dims);
        shape = s_aux_i64(e, "shape", false, n, dims);
        free(dims);
        if (!shape)
            return GX_ENOMEM;
    } else {
        if (s_find_int(e->np, "input_as_shape", 0))
            rc = s_aux_i(e, "Cast", 1, &x, NULL, &shape, "to",
                         ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
        else
            rc = s_aux(e, "Shape", 1, &x, NULL, &shape) ? GX_OK : GX_ENOMEM;
        if (rc < 0)
            return rc;
        if (ex && ex->n_ints) {
            const char *extra = s_aux_i64(e, "extra_shape", false, ex->n_ints, ex->ints);
            if (!extra || (rc = s_aux_i(e, "Concat", 2, (const char *[]){shape, extra}, NULL,
                                        &shape, "axis", 0)) < 0)
                return extra ? rc : GX_ENOMEM;
        }
    }
    bool f32 = dt == GX_F32;
    gx_node *n = s_aux(e, "ConstantOfShape", 1, &shape, f32 ? e->out[0] : NULL, &filled);
    if (!n)
        return GX_ENOMEM;
    gx_tensor *v = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){1}, &value, sizeof value);
    if ((rc = s_set_rc(e, v ? gx_node_set_tensor(n, "value", &v) : GX_ENOMEM, "value")) < 0 || f32)
        return rc;
    return s_aux_i(e, "Cast", 1, &filled, e->out[0], NULL, "to", dtype);
}

/* Version conversions: a node of op in an ai.onnx opset in [from, below)
 * goes through fn. */
/* Optional: its type attribute (a TypeProto) declares only what a none
 * would hold, which gexec's none does not need. */
static int s_cv_optional(s_emit *e)
{
    s_skip(e, "type");
    return s_emit_node(e, NULL);
}

/* ---- com.microsoft contrib ops ------------------------------------------
 *
 * ONNX Runtime writes these into the models it saves after its graph
 * optimizations (docs/onnx.md lists which). Each is lowered to the ai.onnx
 * ops it is made of, with the semantics of ORT's contrib op spec, so the
 * daemon keeps one meaning per op and its fuse pass fuses them again. */

/* The STRING attribute name into buf ("" when absent). */
static void s_ms_string(const s_emit *e, const char *name, char *buf, size_t len)
{
    const Onnx__AttributeProto *a =
        s_find_typed(e->np, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    size_t n = a && a->s.data ? a->s.len : 0;
    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(buf, a->s.data, n);
    buf[n] = '\0';
}

/* The activation a fused contrib op names, from x into y: Relu, Tanh,
 * Sigmoid, LeakyRelu (p[0]: alpha, default 0.01), HardSigmoid (alpha,
 * beta: 0.2, 0.5) or Clip (min, max: required); n_p parameters given. */
static int s_ms_activation(s_emit *e, const char *act, size_t n_p, const float *p, const char *x,
                           const char *y)
{
    static const struct {
        const char *op;
        size_t n_p;
        float def[2]; /* NaN: required */
    } acts[] = {
        {"Relu", 0, {0, 0}},           {"Tanh", 0, {0, 0}},
        {"Sigmoid", 0, {0, 0}},        {"LeakyRelu", 1, {0.01f, 0}},
        {"HardSigmoid", 2, {0.2f, 0.5f}}, {"Clip", 2, {NAN, NAN}},
    };
    size_t k = 0;
    while (k < sizeof acts / sizeof acts[0] && strcmp(act, acts[k].op) != 0)
        k++;
    if (k == sizeof acts / sizeof acts[0])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "activation '%.60s' is not supported (gexec runs Relu, Tanh, Sigmoid, "
                      "LeakyRelu, HardSigmoid and Clip)", act);
    float v[2];
    for (size_t i = 0; i < acts[k].n_p; i++) {
        v[i] = i < n_p ? p[i] : acts[k].def[i];
        if (v[i] != v[i])
            return s_fail(e->c, GX_EATTR, e->path, "activation %s needs %zu parameters, the "
                          "node gives %zu", act, acts[k].n_p, n_p);
    }
    if (strcmp(act, "Clip") == 0) {
        const char *lo = s_aux_like(e, "min", 0, NULL, &v[0], 1, x),
                   *hi = lo ? s_aux_like(e, "max", 0, NULL, &v[1], 1, x) : NULL;
        return hi && s_aux(e, "Clip", 3, (const char *[]){x, lo, hi}, y, NULL) ? GX_OK
                                                                                : GX_ENOMEM;
    }
    gx_node *n = s_aux(e, act, 1, &x, y, NULL);
    int rc = n ? GX_OK : GX_ENOMEM;
    if (n && acts[k].n_p >= 1)
        rc = s_set_rc(e, gx_node_set_float(n, "alpha", v[0]), "alpha");
    if (n && rc == GX_OK && acts[k].n_p >= 2)
        rc = s_set_rc(e, gx_node_set_float(n, "beta", v[1]), "beta");
    return rc;
}

/* Emit the node (e->op) into a fresh value, then add Z (when given) and
 * apply the activation act (when named) on the way to the node's output. */
static int s_ms_fused(s_emit *e, const char *z, const char *act, size_t n_p, const float *p)
{
    const char *y = e->out[0], *t;
    int rc = GX_OK;
    if (!*act && !z)
        return s_emit_node(e, NULL);
    if (!(e->out[0] = s_fresh_value(e, e->op)) || (rc = s_emit_node(e, NULL)) < 0)
        return e->out[0] ? rc : GX_ENOMEM;
    t = e->out[0];
    if (z && !s_aux(e, "Add", 2, (const char *[]){t, z}, *act ? NULL : y, &t))
        return GX_ENOMEM;
    return *act ? s_ms_activation(e, act, n_p, p, t, y) : GX_OK;
}

/* Trailing omitted inputs off e. */
static void s_ms_trim(s_emit *e)
{
    while (e->n_in && !*e->in[e->n_in - 1])
        e->n_in--;
}

/* FusedConv: Conv, + Z (input 3), activation (activation_params). */
static int s_ms_fused_conv(s_emit *e)
{
    char act[32];
    const Onnx__AttributeProto *pa =
        s_find_typed(e->np, "activation_params", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    const char *z = e->n_in > 3 && *e->in[3] ? e->in[3] : NULL;
    if (e->n_in < 2 || !*e->in[0] || !*e->in[1] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "FusedConv takes X, W, B and Z, and gives Y");
    s_ms_string(e, "activation", act, sizeof act);
    s_skip(e, "activation");
    s_skip(e, "activation_params");
    e->op = "Conv";
    if (e->n_in > 3)
        e->n_in = 3;
    s_ms_trim(e);
    return s_ms_fused(e, z, act, pa ? pa->n_floats : 0, pa ? pa->floats : NULL);
}

/* FusedGemm: Gemm, then the activation (activation_alpha, _beta). */
static int s_ms_fused_gemm(s_emit *e)
{
    char act[32];
    float p[2];
    size_t n_p = 0;
    const char *names[2] = {"activation_alpha", "activation_beta"};
    s_ms_string(e, "activation", act, sizeof act);
    for (size_t i = 0; i < 2; i++) {
        const Onnx__AttributeProto *a =
            s_find_typed(e->np, names[i], ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
        if (a && n_p == i)
            p[n_p++] = a->f;
        s_skip(e, names[i]);
    }
    s_skip(e, "activation");
    s_skip(e, "activation_gamma");
    if (e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "FusedGemm gives one output");
    e->op = "Gemm";
    return s_ms_fused(e, NULL, act, n_p, p);
}

/* The last two axes of x swapped: a Transpose where x's rank is known,
 * else an Einsum "...ij->...ji". */
static int s_ms_swap_last(s_emit *e, const char *x, const char **y)
{
    int r = s_rank_of(e->c, x);
    gx_node *n;
    if (r >= 2) {
        int64_t perm[GX_MAX_DIMS];
        for (int i = 0; i < r; i++)
            perm[i] = i;
        perm[r - 2] = r - 1;
        perm[r - 1] = r - 2;
        return (n = s_aux(e, "Transpose", 1, &x, NULL, y))
                   ? s_set_rc(e, gx_node_set_ints(n, "perm", perm, (size_t)r), "perm")
                   : GX_ENOMEM;
    }
    return (n = s_aux(e, "Einsum", 1, &x, NULL, y))
               ? s_set_rc(e, gx_node_set_string(n, "equation", "...ij->...ji"), "equation")
               : GX_ENOMEM;
}

/* The rank of value name: s_rank_of's, else the one the graph's
 * value_info declares (ORT writes it into the models it saves), else
 * what its maker gives: Cast, Identity and Not keep their input's,
 * ReduceSum/ReduceMax with keepdims=0 drops its axes (how
 * the transformer fusions make mask_index); -1 unknown. The lowerings
 * check it when the graph runs (s_ms_rank_guard). depth bounds the walk. */
static int s_ms_rank_at(const s_ctx *c, const char *name, int depth)
{
    int r = s_rank_of(c, name);
    const Onnx__GraphProto *gp = c->graph;
    for (size_t i = 0; r < 0 && gp && i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi || !vi->name || strcmp(vi->name, name) != 0)
            continue;
        const Onnx__TypeProto *tp = vi->type;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
            tp->tensor_type->shape && tp->tensor_type->shape->n_dim <= GX_MAX_DIMS)
            r = (int)tp->tensor_type->shape->n_dim;
    }
    for (size_t i = 0; r < 0 && gp && depth < 16 && i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (!n || n->n_output < 1 || !n->output[0] || strcmp(n->output[0], name) != 0 ||
            n->n_input < 1 || !n->input[0] || !n->op_type || (n->domain && *n->domain))
            continue;
        const char *op = n->op_type;
        bool reduce = strcmp(op, "ReduceSum") == 0 || strcmp(op, "ReduceMax") == 0;
        if (!reduce && strcmp(op, "Cast") && strcmp(op, "Identity") && strcmp(op, "Not"))
            return -1;
        int in = s_ms_rank_at(c, n->input[0], depth + 1);
        if (!reduce || in < 0)
            return in;
        if (s_find_int(n, "keepdims", 1))
            return in;
        const Onnx__AttributeProto *ax =
            s_find_typed(n, "axes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
        const Onnx__TensorProto *t = n->n_input > 1 && n->input[1] && *n->input[1]
                                         ? s_const_named(c, n->input[1])
                                         : NULL;
        int64_t k = ax ? (int64_t)ax->n_ints : t && t->n_dims == 1 ? t->dims[0] : -1;
        return k > 0 && k <= in ? in - (int)k : -1;
    }
    return r;
}

static int s_ms_rank(const s_ctx *c, const char *name)
{
    return s_ms_rank_at(c, name, 0);
}

/* x, checked to have r axes when the graph runs: Reshape(x,
 * Reshape(Shape(x), [r])), which fails unless Shape(x) has r values (and
 * folds away when the shape is known). */
static int s_ms_rank_guard(s_emit *e, const char *x, int r, const char **y)
{
    int64_t rv = r;
    const char *sh, *k, *sh2;
    return s_aux(e, "Shape", 1, &x, NULL, &sh) && (k = s_aux_i64(e, "rank", false, 1, &rv)) &&
                   s_aux(e, "Reshape", 2, (const char *[]){sh, k}, NULL, &sh2) &&
                   s_aux(e, "Reshape", 2, (const char *[]){x, sh2}, NULL, y)
               ? GX_OK
               : GX_ENOMEM;
}

/* FusedMatMul: alpha * MatMul(A, B), each operand first permuted as ORT
 * does: transBatchA moves A's first axis past its batch axes ([d1, ...,
 * d(r-2), d0, d(r-1)]: d0 becomes the rows), transA then swaps the last
 * two; the same for B. With transBatch the rank must be declared (checked
 * when the graph runs). */
static int s_ms_fused_matmul(s_emit *e)
{
    static const char *const names[] = {"alpha", "transA", "transB", "transBatchA",
                                        "transBatchB"};
    float alpha;
    int rc;
    if (e->n_in != 2 || !*e->in[0] || !*e->in[1] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "FusedMatMul takes A and B, and gives Y");
    if ((rc = s_float_attr(e, "alpha", 1.0f, &alpha)) < 0)
        return rc;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        s_skip(e, names[i]);
    for (int i = 0; i < 2; i++) {
        bool trans = s_find_int(e->np, i ? "transB" : "transA", 0) != 0;
        if (!s_find_int(e->np, i ? "transBatchB" : "transBatchA", 0)) {
            if (trans && (rc = s_ms_swap_last(e, e->in[i], &e->in[i])) < 0)
                return rc;
            continue;
        }
        int r = s_ms_rank(e->c, e->in[i]);
        if (r < 2)
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "FusedMatMul with transBatch%c needs the rank of %c declared in the "
                          "model (a graph input, an initializer or value_info), of 2 or more",
                          i ? 'B' : 'A', i ? 'B' : 'A');
        int64_t perm[GX_MAX_DIMS];
        for (int d = 0; d < r - 2; d++)
            perm[d] = d + 1;
        perm[r - 2] = trans ? r - 1 : 0;
        perm[r - 1] = trans ? 0 : r - 1;
        gx_node *n;
        if ((rc = s_ms_rank_guard(e, e->in[i], r, &e->in[i])) < 0)
            return rc;
        if (!(n = s_aux(e, "Transpose", 1, &e->in[i], NULL, &e->in[i])) ||
            (rc = s_set_rc(e, gx_node_set_ints(n, "perm", perm, (size_t)r), "perm")) < 0)
            return n ? rc : GX_ENOMEM;
    }
    e->op = "MatMul";
    if (alpha == 1.0f)
        return s_emit_node(e, NULL);
    const char *y = e->out[0], *k;
    if (!(e->out[0] = s_fresh_value(e, "MatMul")) || (rc = s_emit_node(e, NULL)) < 0)
        return e->out[0] ? rc : GX_ENOMEM;
    return (k = s_aux_like(e, "alpha", 0, NULL, &alpha, 1, e->out[0])) &&
                   s_aux(e, "Mul", 2, (const char *[]){e->out[0], k}, y, NULL)
               ? GX_OK
               : GX_ENOMEM;
}

/* Gelu (erf), FastGelu (tanh, with an optional bias input) and BiasGelu
 * (erf of A + B): the Gelu of opset 20, after the bias's Add. */
static int s_ms_gelu(s_emit *e)
{
    bool tanh = strcmp(e->op, "FastGelu") == 0;
    size_t want = strcmp(e->op, "Gelu") == 0 ? 1 : 2;
    gx_node *n;
    int rc;
    s_ms_trim(e);
    if (e->n_in < 1 || e->n_in > want || !*e->in[0] || e->n_out != 1 ||
        (strcmp(e->op, "BiasGelu") == 0 && e->n_in != 2))
        return s_fail(e->c, GX_EFORMAT, e->path, "%s takes %s and gives one output", e->op,
                      want == 1 ? "one input" : "X and a bias");
    if (e->n_in == 2 && !s_aux(e, "Add", 2, (const char *[]){e->in[0], e->in[1]}, NULL, &e->in[0]))
        return GX_ENOMEM;
    e->n_in = 1;
    e->op = "Gelu";
    if ((rc = s_emit_node(e, &n)) < 0)
        return rc;
    return tanh ? s_set_rc(e, gx_node_set_string(n, "approximate", "tanh"), "approximate") : GX_OK;
}

/* QuickGelu: x * Sigmoid(alpha * x), alpha default 1.702. */
static int s_ms_quick_gelu(s_emit *e)
{
    float alpha;
    const char *x = e->n_in == 1 ? e->in[0] : "", *ax = x, *k, *s;
    int rc;
    if (!*x || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "QuickGelu takes one input and gives one output");
    if ((rc = s_float_attr(e, "alpha", 1.702f, &alpha)) < 0)
        return rc;
    if (alpha != 1.0f && (!(k = s_aux_like(e, "alpha", 0, NULL, &alpha, 1, x)) ||
                          !s_aux(e, "Mul", 2, (const char *[]){x, k}, NULL, &ax)))
        return GX_ENOMEM;
    return s_aux(e, "Sigmoid", 1, &ax, NULL, &s) &&
                   s_aux(e, "Mul", 2, (const char *[]){x, s}, e->out[0], NULL)
               ? GX_OK
               : GX_ENOMEM;
}

/* BiasAdd: X + bias + skip. */
static int s_ms_bias_add(s_emit *e)
{
    const char *t;
    if (e->n_in != 3 || !*e->in[0] || !*e->in[1] || !*e->in[2] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "BiasAdd takes X, bias and skip, and gives Y");
    return s_aux(e, "Add", 2, (const char *[]){e->in[0], e->in[1]}, NULL, &t) &&
                   s_aux(e, "Add", 2, (const char *[]){t, e->in[2]}, e->out[0], NULL)
               ? GX_OK
               : GX_ENOMEM;
}

/* SkipLayerNormalization (input, skip, gamma, beta, bias) and
 * SkipSimplifiedLayerNormalization (input, skip, gamma, bias): the sum
 * input + skip (+ bias), which output 3 gives, then LayerNormalization or
 * RMSNormalization over the last axis. LayerNormalization's mean and
 * inv_std_var are its outputs 1 and 2; the simplified form's are refused. */
static int s_ms_skip_norm(s_emit *e)
{
    bool simple = strcmp(e->op, "SkipSimplifiedLayerNormalization") == 0;
    size_t bias_at = simple ? 3 : 4;
    const char *sum = e->n_out > 3 && *e->out[3] ? e->out[3] : NULL, *t;
    float eps;
    gx_node *n;
    int rc;
    if (e->n_in < 3 || !*e->in[0] || !*e->in[1] || !*e->in[2] || e->n_in > bias_at + 1 ||
        e->n_out < 1 || !*e->out[0])
        return s_fail(e->c, GX_EFORMAT, e->path, "%s takes input, skip, gamma%s and bias", e->op,
                      simple ? "" : ", beta");
    if (simple && ((e->n_out > 1 && *e->out[1]) || (e->n_out > 2 && *e->out[2])))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "outputs mean and inv_std_var of %s are not supported", e->op);
    if ((rc = s_float_attr(e, "epsilon", 1e-12f, &eps)) < 0)
        return rc;
    bool bias = e->n_in > bias_at && *e->in[bias_at];
    if (!s_aux(e, "Add", 2, (const char *[]){e->in[0], e->in[1]}, bias ? NULL : sum, &t) ||
        (bias && !s_aux(e, "Add", 2, (const char *[]){t, e->in[bias_at]}, sum, &t)))
        return GX_ENOMEM;
    e->in[1] = e->in[2];
    e->in[2] = simple ? "" : e->n_in > 3 ? e->in[3] : "";
    e->in[0] = t;
    e->n_in = 3;
    s_ms_trim(e);
    e->n_out = e->n_out > 3 ? 3 : e->n_out;
    while (e->n_out > 1 && !*e->out[e->n_out - 1])
        e->n_out--;
    e->op = simple ? "RMSNormalization" : "LayerNormalization";
    s_skip(e, "epsilon");
    s_skip(e, "axis");
    if ((rc = s_emit_node(e, &n)) < 0 ||
        (rc = s_set_rc(e, gx_node_set_int(n, "axis", -1), "axis")) < 0)
        return rc;
    return s_set_rc(e, gx_node_set_float(n, "epsilon", eps), "epsilon");
}

/* SimplifiedLayerNormalization (X, scale; axis, epsilon, stash_type): the
 * RMSNormalization of opset 23; its inv_std_var output is refused. */
static int s_ms_simplified_norm(s_emit *e)
{
    if (e->n_out > 1)
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "output inv_std_var of SimplifiedLayerNormalization is not supported");
    e->op = "RMSNormalization";
    return s_emit_node(e, NULL);
}

/* DynamicQuantizeMatMul (A, B, b_scale, b_zero_point, bias): A quantized
 * to uint8 as DynamicQuantizeLinear does, MatMulInteger with B, then
 * scaled by a_scale * b_scale, plus bias. */
static int s_ms_dq_matmul(s_emit *e)
{
    const char *q[3], *mm, *f, *s1, *s2;
    if (e->n_in < 3 || !*e->in[0] || !*e->in[1] || !*e->in[2] || e->n_in > 5 || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "DynamicQuantizeMatMul takes A, B, b_scale, b_zero_point and bias");
    const char *bzp = e->n_in > 3 ? e->in[3] : "", *bias = e->n_in > 4 ? e->in[4] : "";
    for (int i = 0; i < 3; i++)
        if (!(q[i] = s_fresh_value(e, i == 0 ? "a_quant" : i == 1 ? "a_scale" : "a_zero_point")))
            return GX_ENOMEM;
    char *name = s_own(e->c, "%.200s/DynamicQuantizeLinear", e->name);
    for (unsigned k = 1; name && s_set_has(e->node_names, name); k++)
        name = s_own(e->c, "%.200s/DynamicQuantizeLinear_%u", e->name, k);
    if (!name || !s_set_add(e->node_names, name) ||
        !gx_graph_add_node(e->g, "DynamicQuantizeLinear", name, 1, &e->in[0], 3, q))
        return s_fail(e->c, GX_ENOMEM, e->path, "cannot add DynamicQuantizeLinear");
    gx_node *cast;
    int rc;
    if (!s_aux(e, "MatMulInteger", *bzp ? 4 : 3, (const char *[]){q[0], e->in[1], q[2], bzp},
               NULL, &mm) ||
        !(cast = s_aux(e, "Cast", 1, &mm, NULL, &f)))
        return GX_ENOMEM;
    if ((rc = s_set_rc(e, gx_node_set_int(cast, "to", 1), "to")) < 0)
        return rc;
    if (!s_aux(e, "Mul", 2, (const char *[]){q[1], e->in[2]}, NULL, &s1) ||
        !s_aux(e, "Mul", 2, (const char *[]){f, s1}, *bias ? NULL : e->out[0], &s2) ||
        (*bias && !s_aux(e, "Add", 2, (const char *[]){s2, bias}, e->out[0], NULL)))
        return GX_ENOMEM;
    return GX_OK;
}

/* The node as e->op on channels-last data: X transposed from NHWC (rank
 * 2 + the length of kernel_shape) to NCHW, the node, the result back. */
static int s_ms_nhwc(s_emit *e)
{
    const Onnx__AttributeProto *ks =
        s_find_typed(e->np, "kernel_shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int r = ks ? (int)ks->n_ints + 2 : 0, rc = GX_OK;
    if (r < 3 || r > GX_MAX_DIMS || e->n_in < 1 || !*e->in[0] || e->n_out != 1)
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "%s on channels-last data needs kernel_shape (1 to %d axes), X and Y",
                      e->op, GX_MAX_DIMS - 2);
    int64_t to[GX_MAX_DIMS], back[GX_MAX_DIMS];
    to[0] = back[0] = 0;
    to[1] = r - 1;
    back[r - 1] = 1;
    for (int i = 2; i < r; i++)
        to[i] = i - 1, back[i - 1] = i;
    gx_node *n;
    const char *y = e->out[0];
    if (!(n = s_aux(e, "Transpose", 1, &e->in[0], NULL, &e->in[0])) ||
        (rc = s_set_rc(e, gx_node_set_ints(n, "perm", to, (size_t)r), "perm")) < 0 ||
        !(e->out[0] = s_fresh_value(e, "nchw")) || (rc = s_emit_node(e, NULL)) < 0 ||
        !(n = s_aux(e, "Transpose", 1, &e->out[0], y, NULL)))
        return n && e->out[0] ? rc : GX_ENOMEM;
    return s_set_rc(e, gx_node_set_ints(n, "perm", back, (size_t)r), "perm");
}

/* QLinearConv of com.microsoft: ai.onnx's QLinearConv, on NHWC data when
 * channels_last is 1 (W stays [M, C/group, k...]). */
static int s_ms_qlinear_conv(s_emit *e)
{
    bool last = s_find_int(e->np, "channels_last", 0) != 0;
    s_skip(e, "channels_last");
    e->op = "QLinearConv";
    return last ? s_ms_nhwc(e) : s_emit_node(e, NULL);
}

/* NhwcMaxPool: ai.onnx's MaxPool on NHWC data. */
static int s_ms_nhwc_maxpool(s_emit *e)
{
    e->op = "MaxPool";
    return s_ms_nhwc(e);
}

/* DequantizeLinear(x, scale[, zero point]) into a fresh value *y. */
static bool s_ms_dq(s_emit *e, const char *x, const char *s, const char *z, const char **y)
{
    return s_aux(e, "DequantizeLinear", *z ? 3 : 2, (const char *[]){x, s, z}, NULL, y) != NULL;
}

static int s_ms_transpose(s_emit *e, const char *x, size_t n, const int64_t *perm,
                          const char *y, const char **made);

/* The QLinear ops of com.microsoft (QLinearAdd, QLinearMul: A, A_scale,
 * A_zero_point, B, ..., C_scale, C_zero_point; QLinearSigmoid,
 * QLinearLeakyRelu, QLinearGlobalAveragePool: X, X_scale, X_zero_point,
 * Y_scale, Y_zero_point; QLinearConcat: Y_scale, Y_zero_point, then X,
 * scale, zero point per input) as what they are defined to be: the float
 * op between DequantizeLinear of the inputs and QuantizeLinear of the
 * result (QLinearGlobalAveragePool with channels_last: the pool between
 * Transposes from and back to channels last). */
static int s_ms_qlinear(s_emit *e)
{
    const char *op = e->op + strlen("QLinear");
    bool concat = strcmp(op, "Concat") == 0, binary = !strcmp(op, "Add") || !strcmp(op, "Mul");
    size_t n_x = concat ? (e->n_in >= 5 ? (e->n_in - 2) / 3 : 0) : binary ? 2 : 1;
    size_t first = concat ? 2 : 0, ys = concat ? 0 : 3 * n_x;
    int rc = GX_OK;
    if (e->n_out != 1 || n_x == 0 || e->n_in < first + 3 * n_x + (concat ? 0 : 1) ||
        e->n_in > first + 3 * n_x + (concat ? 0 : 2) || !*e->in[ys])
        return s_fail(e->c, GX_EFORMAT, e->path, "%s: %zu inputs do not fit its signature",
                      e->op, e->n_in);
    /* channels_last (QLinearGlobalAveragePool): X [N, spatial..., C], of
     * the rank the model declares, else 4 (ORT's NHWC 2-D pools);
     * checked when the graph runs */
    int last = s_find_int(e->np, "channels_last", 0) ? s_ms_rank(e->c, e->in[0]) : 0;
    if (last < 0)
        last = 4;
    if (last && (strcmp(op, "GlobalAveragePool") != 0 || last < 3))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "%s with channels_last is not supported (gexec runs it on "
                      "QLinearGlobalAveragePool whose X has a rank of 3 or more)", e->op);
    const char *yz = e->n_in > ys + 1 ? e->in[ys + 1] : "", *f = NULL;
    const char **xs = calloc(n_x, sizeof *xs);
    if (!xs)
        return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
    for (size_t i = 0; i < n_x && rc == GX_OK; i++) {
        const char *const *t = e->in + first + 3 * i;
        if (!*t[0] || !*t[1])
            rc = s_fail(e->c, GX_EFORMAT, e->path, "%s: input %zu or its scale is missing",
                        e->op, i);
        else if (!s_ms_dq(e, t[0], t[1], t[2], &xs[i]))
            rc = GX_ENOMEM;
    }
    gx_node *n = NULL;
    if (rc == GX_OK) {
        if (concat)
            rc = s_aux_i(e, "Concat", n_x, xs, NULL, &f, "axis", s_find_int(e->np, "axis", 0));
        else if (last) {
            int64_t to[GX_MAX_DIMS], back[GX_MAX_DIMS];
            to[0] = back[0] = 0, to[1] = last - 1, back[last - 1] = 1;
            for (int i = 2; i < last; i++)
                to[i] = i - 1, back[i - 1] = i;
            if ((rc = s_ms_rank_guard(e, xs[0], last, &f)) == GX_OK &&
                (rc = s_ms_transpose(e, f, (size_t)last, to, NULL, &f)) == GX_OK)
                rc = s_aux(e, op, 1, &f, NULL, &f) ? s_ms_transpose(e, f, (size_t)last, back, NULL, &f)
                                                   : GX_ENOMEM;
        } else if (!(n = s_aux(e, op, n_x, xs, NULL, &f)))
            rc = GX_ENOMEM;
        else if (strcmp(op, "LeakyRelu") == 0) {
            float alpha;
            if ((rc = s_float_attr(e, "alpha", 0.01f, &alpha)) == GX_OK)
                rc = s_set_rc(e, gx_node_set_float(n, "alpha", alpha), "alpha");
        }
    }
    free(xs);
    if (rc == GX_OK && !s_aux(e, "QuantizeLinear", *yz ? 3 : 2,
                              (const char *[]){f, e->in[ys], yz}, e->out[0], NULL))
        rc = GX_ENOMEM;
    return rc;
}

/* ---- com.microsoft Attention and MultiHeadAttention ---------------------
 *
 * Both become ai.onnx's Attention (opset 23, 3-D Q, K, V of num_heads
 * heads), with ORT's CPU kernel's padding mask spelt out as an additive
 * float mask [B, 1, 1 or S, T] (T the keys: past + new):
 * mask_filter_value (default -10000) where a key is masked, plus
 * attention_bias. unidirectional is the op's is_causal: ORT, too, leaves
 * the keys after a query out entirely (a row whose visible keys are all
 * padding then spreads over those, as ORT's does). */

/* Dim axis of x as an int64 [1]. */
static int s_ms_dim(s_emit *e, const char *x, int64_t axis, const char **d)
{
    const char *sh, *k;
    if (!s_aux(e, "Shape", 1, &x, NULL, &sh) || !(k = s_aux_i64(e, "axis", false, 1, &axis)))
        return GX_ENOMEM;
    return s_aux_i(e, "Gather", 2, (const char *[]){sh, k}, NULL, d, "axis", 0);
}

/* Unsqueeze(x, axes) into y (NULL: fresh, in *made). */
static int s_ms_unsqueeze(s_emit *e, const char *x, size_t n, const int64_t *axes,
                          const char *y, const char **made)
{
    const char *k = s_aux_i64(e, "axes", false, n, axes);
    return k && s_aux(e, "Unsqueeze", 2, (const char *[]){x, k}, y, made) ? GX_OK : GX_ENOMEM;
}

/* Reshape x to the n dims d, into a fresh value *y. */
static int s_ms_reshape(s_emit *e, const char *x, size_t n, const int64_t *d, const char **y)
{
    const char *k = s_aux_i64(e, "shape", false, n, d);
    return k && s_aux(e, "Reshape", 2, (const char *[]){x, k}, NULL, y) ? GX_OK : GX_ENOMEM;
}

/* Transpose x by perm (n axes), into y (NULL: fresh, in *made). */
static int s_ms_transpose(s_emit *e, const char *x, size_t n, const int64_t *perm,
                             const char *y, const char **made)
{
    gx_node *t = s_aux(e, "Transpose", 1, &x, y, made);
    return t ? s_set_rc(e, gx_node_set_ints(t, "perm", perm, n), "perm") : GX_ENOMEM;
}

/* The padding mask (int32 mask of the given rank) as ORT's kernel reads
 * it, additive [B, 1, 1 or S, T]: rank 1 [B] key lengths (keys from
 * end[b] on masked) or [2B] the lengths then the starts (keys before
 * start[b] masked too); rank 2 [B, T] and 3 [B, S, T] raw masks, 0
 * masked. x: Q (its batch), t: T as [1], f and zero: Q-typed scalars. */
static int s_ms_pad_mask(s_emit *e, const char *mask, int rank, const char *x, const char *t,
                         const char *f, const char *zero, const char **y)
{
    const char *m, *w;
    int rc;
    if ((rc = s_ms_rank_guard(e, mask, rank, &m)) < 0)
        return rc;
    if (rank == 1) {
        const char *m64, *b, *b2, *zeros, *cat, *ends, *starts, *ts, *ar, *e1, *s1, *ge, *lt, *cond;
        const char *z0, *one, *zax, *scal;
        int64_t zv = 0, ov = 1;
        gx_node *cs;
        if ((rc = s_aux_i(e, "Cast", 1, &m, NULL, &m64, "to",
                          ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) < 0 ||
            (rc = s_ms_dim(e, x, 0, &b)) < 0)
            return rc;
        if (!(cs = s_aux(e, "ConstantOfShape", 1, &b, NULL, &zeros)))
            return GX_ENOMEM;
        gx_tensor *zt = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){1}, &zv, sizeof zv);
        rc = zt ? gx_node_set_tensor(cs, "value", &zt) : GX_ENOMEM;
        if ((rc = s_set_rc(e, rc, "value")) < 0 ||
            (rc = s_aux_i(e, "Concat", 2, (const char *[]){m64, zeros}, NULL, &cat, "axis", 0)) < 0)
            return rc;
        if (!(z0 = s_aux_i64(e, "zero", false, 1, &zv)) ||
            !s_aux(e, "Add", 2, (const char *[]){b, b}, NULL, &b2) ||
            !s_aux(e, "Slice", 4, (const char *[]){cat, z0, b, z0}, NULL, &ends) ||
            !s_aux(e, "Slice", 4, (const char *[]){cat, b, b2, z0}, NULL, &starts) ||
            !(scal = s_aux_i64(e, "scalar", false, 0, &zv)) ||
            !s_aux(e, "Reshape", 2, (const char *[]){t, scal}, NULL, &ts) ||
            !(zax = s_aux_i64(e, "start", true, 1, &zv)) ||
            !(one = s_aux_i64(e, "delta", true, 1, &ov)) ||
            !s_aux(e, "Range", 3, (const char *[]){zax, ts, one}, NULL, &ar))
            return GX_ENOMEM;
        if ((rc = s_ms_unsqueeze(e, ends, 1, &ov, NULL, &e1)) < 0 ||
            (rc = s_ms_unsqueeze(e, starts, 1, &ov, NULL, &s1)) < 0)
            return rc;
        if (!s_aux(e, "GreaterOrEqual", 2, (const char *[]){ar, e1}, NULL, &ge) ||
            !s_aux(e, "Less", 2, (const char *[]){ar, s1}, NULL, &lt) ||
            !s_aux(e, "Or", 2, (const char *[]){ge, lt}, NULL, &cond) ||
            !s_aux(e, "Where", 3, (const char *[]){cond, f, zero}, NULL, &w))
            return GX_ENOMEM;
    } else {
        int32_t zi = 0;
        gx_tensor *zt = gx_tensor_new_copy(GX_I32, 0, NULL, &zi, sizeof zi);
        const char *k = s_aux_const(e, "zero", &zt), *cond;
        if (!k || !s_aux(e, "Greater", 2, (const char *[]){m, k}, NULL, &cond) ||
            !s_aux(e, "Where", 3, (const char *[]){cond, zero, f}, NULL, &w))
            return GX_ENOMEM;
    }
    return s_ms_unsqueeze(e, w, rank == 3 ? 1 : 2, (const int64_t[]){1, 2}, NULL, y);
}

/* What the two ops share, after their own inputs are ready: q, k, v (3-D,
 * or 4-D with four); past_key, past_value 4-D or ""; mask (int32, its
 * rank) and attention_bias or ""; the outputs y, present_key,
 * present_value ("" or NULL: not asked). s_ms_attend emits the Attention
 * node, its mask made as the section's comment says. */
typedef struct s_ms_attn {
    const char *q, *k, *v, *mask, *bias, *pk, *pv;
    int mask_rank;
    bool four; /* Q, K, V 4-D [B, N, seq, H] (else 3-D [B, seq, N * H]) */
    const char *y, *present_k, *present_v;
    int64_t kv_heads; /* key/value heads of 3-D K, V (0: num_heads) */
    bool causal;      /* causal whatever unidirectional says */
    float softcap;    /* 0: none */
} s_ms_attn;

static int s_ms_attend(s_emit *e, const s_ms_attn *a)
{
    int64_t heads = s_find_int(e->np, "num_heads", 0);
    bool causal = a->causal || s_find_int(e->np, "unidirectional", 0) != 0;
    float scale, filter;
    int rc;
    if (heads <= 0)
        return s_fail(e->c, GX_EATTR, e->path, "%s needs num_heads > 0", e->op);
    if ((rc = s_float_attr(e, "scale", 0.0f, &scale)) < 0 ||
        (rc = s_float_attr(e, "mask_filter_value", -10000.0f, &filter)) < 0)
        return rc;
    const char *mask = "";
    if (*a->mask || *a->bias) {
        const char *t = NULL, *p, *zero, *f, *parts[2];
        size_t n = 0;
        float zv = 0;
        /* key lengths need T: K's length, plus the past's */
        if (*a->mask && a->mask_rank == 1 &&
            ((rc = s_ms_dim(e, a->k, a->four ? 2 : 1, &t)) < 0 ||
             (*a->pk && ((rc = s_ms_dim(e, a->pk, 2, &p)) < 0 ||
                         !s_aux(e, "Add", 2, (const char *[]){p, t}, NULL, &t)))))
            return rc < 0 ? rc : GX_ENOMEM;
        if (!(zero = s_aux_like(e, "zero", 0, NULL, &zv, 1, a->q)) ||
            !(f = s_aux_like(e, "mask_filter_value", 0, NULL, &filter, 1, a->q)))
            return GX_ENOMEM;
        if (*a->mask && (rc = s_ms_pad_mask(e, a->mask, a->mask_rank, a->q, t, f, zero,
                                            &parts[n++])) < 0)
            return rc;
        if (*a->bias)
            parts[n++] = a->bias;
        mask = parts[0];
        if (n == 2 && !s_aux(e, "Add", 2, parts, NULL, &mask))
            return GX_ENOMEM;
    }
    const char *outs[3] = {a->y, a->present_k && *a->present_k ? a->present_k : NULL,
                           a->present_v && *a->present_v ? a->present_v : NULL};
    size_t n_out = outs[1] || outs[2] ? 3 : 1;
    for (int i = 1; i < 3; i++)
        if (n_out == 3 && !outs[i] && !(outs[i] = s_fresh_value(e, i == 1 ? "present_key"
                                                                          : "present_value")))
            return GX_ENOMEM;
    const char *ins[6] = {a->q, a->k, a->v, mask, a->pk, a->pv};
    size_t n_in = *a->pk ? 6 : *mask ? 4 : 3;
    gx_node *n = gx_graph_add_node(e->g, "Attention", e->name, n_in, ins, n_out, outs);
    if (!n)
        return s_fail(e->c, GX_ENOMEM, e->path, "cannot add the node (out of memory)");
    if ((!a->four &&
         ((rc = s_set_rc(e, gx_node_set_int(n, "q_num_heads", heads), "q_num_heads")) < 0 ||
          (rc = s_set_rc(e, gx_node_set_int(n, "kv_num_heads", a->kv_heads ? a->kv_heads : heads),
                         "kv_num_heads")) < 0)) ||
        (causal && (rc = s_set_rc(e, gx_node_set_int(n, "is_causal", 1), "is_causal")) < 0) ||
        (a->softcap > 0.0f &&
         (rc = s_set_rc(e, gx_node_set_float(n, "softcap", a->softcap), "softcap")) < 0))
        return rc;
    return scale != 0.0f ? s_set_rc(e, gx_node_set_float(n, "scale", scale), "scale") : GX_OK;
}

/* The rank of mask input name for e: declared (s_ms_rank) and 1 to 3,
 * else an error naming what is missing. */
static int s_ms_mask_rank(s_emit *e, const char *name, const char *what, int *rank)
{
    char got[32] = "it is not declared";
    *rank = s_ms_rank(e->c, name);
    if (*rank >= 1 && *rank <= 3)
        return GX_OK;
    if (*rank >= 0)
        snprintf(got, sizeof got, "it has %d", *rank);
    return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                  "%s of %s must have a rank gexec can read in the model (a graph input, an "
                  "initializer or value_info) of 1 to 3 ([B] or [2B] lengths, [B, T], [B, S, "
                  "T]); %s",
                  what, e->op, got);
}

/* Attention (input, weights, bias, mask_index, past, attention_bias,
 * past_sequence_length; num_heads, qkv_hidden_sizes, unidirectional,
 * scale, mask_filter_value): input x weights + bias split into Q, K and
 * V (qkv_hidden_sizes, else three equal parts); past [2, B, N, P, H]
 * gives past_key and past_value, present is the two presents stacked.
 * do_rotary, past_present_share_buffer and past_sequence_length are
 * refused. */
static int s_ms_attention(s_emit *e)
{
    static const char *const attrs[] = {"num_heads", "unidirectional", "scale",
                                        "mask_filter_value", "qkv_hidden_sizes"};
    const Onnx__AttributeProto *qkv =
        s_find_typed(e->np, "qkv_hidden_sizes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    const char *in[7] = {"", "", "", "", "", "", ""};
    int rc;
    for (size_t i = 0; i < e->n_in && i < 7; i++)
        in[i] = e->in[i];
    if (e->n_in < 2 || e->n_in > 7 || !*in[0] || !*in[1] || e->n_out < 1 || e->n_out > 2)
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "Attention takes input, weights, bias, mask_index, past, attention_bias "
                      "and gives output, present");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        bool known = false;
        for (size_t j = 0; j < sizeof attrs / sizeof attrs[0]; j++)
            known = known || strcmp(an, attrs[j]) == 0;
        if (!known && !((strcmp(an, "do_rotary") == 0 || strcmp(an, "rotary_embedding_dim") == 0 ||
                         strcmp(an, "past_present_share_buffer") == 0) &&
                        s_find_int(e->np, an, 0) == 0))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "Attention: attribute '%.60s' is not supported (gexec runs num_heads, "
                          "qkv_hidden_sizes, unidirectional, scale and mask_filter_value)", an);
    }
    if (*in[6])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "Attention: input past_sequence_length (a shared past/present buffer) is "
                      "not supported");
    if (qkv && (qkv->n_ints != 3 || qkv->ints[0] != qkv->ints[1] || qkv->ints[0] <= 0 ||
                qkv->ints[2] <= 0))
        return s_fail(e->c, GX_EATTR, e->path,
                      "Attention: qkv_hidden_sizes must be 3 positive sizes, Q's and K's equal");
    s_ms_attn a = {.mask = in[3], .bias = in[5], .pk = "", .pv = "", .y = e->out[0],
                   .present_k = NULL, .present_v = NULL};
    if (*a.mask && (rc = s_ms_mask_rank(e, a.mask, "mask_index", &a.mask_rank)) < 0)
        return rc;
    const char *xw, *parts[3];
    if (!s_aux(e, "MatMul", 2, (const char *[]){in[0], in[1]}, NULL, &xw) ||
        (*in[2] && !s_aux(e, "Add", 2, (const char *[]){xw, in[2]}, NULL, &xw)))
        return GX_ENOMEM;
    for (int i = 0; i < 3; i++)
        if (!(parts[i] = s_fresh_value(e, i == 0 ? "q" : i == 1 ? "k" : "v")))
            return GX_ENOMEM;
    char *sname = s_own(e->c, "%.200s/Split", e->name);
    if (!sname || !s_set_add(e->node_names, sname))
        return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
    gx_node *sp = gx_graph_add_node(e->g, "Split", sname, 1, &xw, 3, parts);
    if (!sp || (rc = gx_node_set_int(sp, "axis", -1)) < 0 ||
        (qkv && (rc = gx_node_set_ints(sp, "split", qkv->ints, 3)) < 0))
        return s_fail(e->c, GX_ENOMEM, e->path, "cannot add the Split (out of memory)");
    a.q = parts[0], a.k = parts[1], a.v = parts[2];
    if (*in[4]) {
        for (int i = 0; i < 2; i++) {
            int64_t iv = i;
            const char *k = s_aux_i64(e, "index", true, 1, &iv);
            if (!k || (rc = s_aux_i(e, "Gather", 2, (const char *[]){in[4], k}, NULL,
                                    i ? &a.pv : &a.pk, "axis", 0)) < 0)
                return k ? rc : GX_ENOMEM;
        }
    }
    const char *pres[2] = {NULL, NULL};
    if (e->n_out > 1 && *e->out[1])
        for (int i = 0; i < 2; i++)
            if (!(pres[i] = s_fresh_value(e, i ? "present_value" : "present_key")))
                return GX_ENOMEM;
    a.present_k = pres[0], a.present_v = pres[1];
    if ((rc = s_ms_attend(e, &a)) < 0 || !pres[0])
        return rc;
    const char *u[2];
    for (int i = 0; i < 2; i++)
        if ((rc = s_ms_unsqueeze(e, pres[i], 1, (const int64_t[]){0}, NULL, &u[i])) < 0)
            return rc;
    return s_aux_i(e, "Concat", 2, u, e->out[1], NULL, "axis", 0);
}

/* MultiHeadAttention with 4-D key and value [B, N, L, H]: query (plus
 * the first third of bias; key and value take none) split into heads
 * [B, N, S, H], the 4-D Attention, its output back to [B, S, N * H_v]. */
static int s_ms_mha4(s_emit *e, s_ms_attn *a, const char *const qkv[3], const char *bias)
{
    int64_t heads = s_find_int(e->np, "num_heads", 0), zero = 0;
    const char *q = qkv[0], *r, *y4, *t;
    int rc;
    if (heads <= 0)
        return s_fail(e->c, GX_EATTR, e->path, "%s needs num_heads > 0", e->op);
    if (*bias) {
        const char *d, *z = s_aux_i64(e, "start", false, 1, &zero), *bq;
        if (!z || (rc = s_ms_dim(e, q, 2, &d)) < 0)
            return z ? rc : GX_ENOMEM;
        if (!s_aux(e, "Slice", 3, (const char *[]){bias, z, d}, NULL, &bq) ||
            !s_aux(e, "Add", 2, (const char *[]){q, bq}, NULL, &q))
            return GX_ENOMEM;
    }
    if ((rc = s_ms_reshape(e, q, 4, (const int64_t[]){0, 0, heads, -1}, &r)) < 0 ||
        (rc = s_ms_transpose(e, r, 4, (const int64_t[]){0, 2, 1, 3}, NULL, &t)) < 0 ||
        !(y4 = s_fresh_value(e, "y4")))
        return rc < 0 ? rc : GX_ENOMEM;
    a->q = t, a->k = qkv[1], a->v = qkv[2], a->four = true, a->y = y4;
    if ((rc = s_ms_attend(e, a)) < 0 ||
        (rc = s_ms_transpose(e, y4, 4, (const int64_t[]){0, 2, 1, 3}, NULL, &t)) < 0)
        return rc;
    const int64_t back[3] = {0, 0, -1};
    const char *k = s_aux_i64(e, "shape", false, 3, back);
    return k && s_aux(e, "Reshape", 2, (const char *[]){t, k}, e->out[0], NULL) ? GX_OK
                                                                               : GX_ENOMEM;
}

/* MultiHeadAttention (query, key, value, bias, key_padding_mask,
 * attention_bias, past_key, past_value; num_heads, unidirectional, scale,
 * mask_filter_value): 3-D query, key and value (each plus its third of
 * bias) or 4-D key and value (s_ms_mha4), 4-D past_key and past_value,
 * outputs output, present_key and present_value. Packed QKV or KV,
 * past_sequence_length, cache_indirection and output qk are refused. */
static int s_ms_mha(s_emit *e)
{
    const char *in[10] = {"", "", "", "", "", "", "", "", "", ""};
    int rc;
    for (size_t i = 0; i < e->n_in && i < 10; i++)
        in[i] = e->in[i];
    if (e->n_in < 3 || !*in[0] || !*in[1] || !*in[2])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "MultiHeadAttention with packed QKV or KV (key or value omitted) is not "
                      "supported: gexec runs a 3-D query with separate key and value");
    if (e->n_in > 10 || e->n_out < 1 || e->n_out > 4)
        return s_fail(e->c, GX_EFORMAT, e->path, "MultiHeadAttention: %zu inputs, %zu outputs",
                      e->n_in, e->n_out);
    if (*in[8] || *in[9] || (e->n_out > 3 && *e->out[3]))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "MultiHeadAttention: past_sequence_length, cache_indirection and output qk "
                      "are not supported");
    if (!*in[6] != !*in[7])
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "MultiHeadAttention: past_key and past_value come together");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        if (strcmp(an, "num_heads") && strcmp(an, "unidirectional") && strcmp(an, "scale") &&
            strcmp(an, "mask_filter_value"))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "MultiHeadAttention: attribute '%.60s' is not supported (gexec runs "
                          "num_heads, unidirectional, scale and mask_filter_value)", an);
    }
    /* key and value 4-D [B, N, L, H] (BNSH: a cross-attention cache) or
     * 3-D like query */
    static const char *const names[3] = {"query", "key", "value"};
    bool four = s_ms_rank(e->c, in[1]) == 4 && s_ms_rank(e->c, in[2]) == 4;
    for (int i = 0; i < 3; i++) {
        int r = s_ms_rank(e->c, in[i]);
        if (r >= 0 && r != (four && i ? 4 : 3))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "MultiHeadAttention with a %d-D %s is not supported (gexec runs 3-D "
                          "query, and 3-D or 4-D [B, N, L, H] key and value)", r, names[i]);
    }
    if (four && *in[6])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "MultiHeadAttention: past_key and past_value with 4-D key and value are "
                      "not supported");
    s_ms_attn a = {.mask = in[4], .bias = in[5], .pk = in[6], .pv = in[7], .y = e->out[0],
                   .present_k = e->n_out > 1 ? e->out[1] : NULL,
                   .present_v = e->n_out > 2 ? e->out[2] : NULL};
    if (*a.mask && (rc = s_ms_mask_rank(e, a.mask, "key_padding_mask", &a.mask_rank)) < 0)
        return rc;
    const char *qkv[3];
    for (int i = 0; i < 3; i++)
        if ((rc = s_ms_rank_guard(e, in[i], four && i ? 4 : 3, &qkv[i])) < 0)
            return rc;
    if (four)
        return s_ms_mha4(e, &a, qkv, in[3]);
    if (*in[3]) {
        const char *parts[3];
        for (int i = 0; i < 3; i++)
            if (!(parts[i] = s_fresh_value(e, i == 0 ? "bias_q" : i == 1 ? "bias_k" : "bias_v")))
                return GX_ENOMEM;
        /* bias: [D + D + D_v], split at Q's and K's last dims */
        const char *dq, *dk, *dv, *sizes;
        if ((rc = s_ms_dim(e, qkv[0], 2, &dq)) < 0 || (rc = s_ms_dim(e, qkv[1], 2, &dk)) < 0 ||
            (rc = s_ms_dim(e, qkv[2], 2, &dv)) < 0 ||
            (rc = s_aux_i(e, "Concat", 3, (const char *[]){dq, dk, dv}, NULL, &sizes, "axis",
                          0)) < 0)
            return rc;
        char *sname = s_own(e->c, "%.200s/Split", e->name);
        if (!sname || !s_set_add(e->node_names, sname))
            return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
        gx_node *sp = gx_graph_add_node(e->g, "Split", sname, 2, (const char *[]){in[3], sizes},
                                        3, parts);
        if (!sp || gx_node_set_int(sp, "axis", 0) < 0)
            return s_fail(e->c, GX_ENOMEM, e->path, "cannot add the Split (out of memory)");
        for (int i = 0; i < 3; i++)
            if (!s_aux(e, "Add", 2, (const char *[]){qkv[i], parts[i]}, NULL, &qkv[i]))
                return GX_ENOMEM;
    }
    a.q = qkv[0], a.k = qkv[1], a.v = qkv[2];
    return s_ms_attend(e, &a);
}

/* ---- com.microsoft ops of exported LLMs ----------------------------------
 *
 * MatMulNBits, RotaryEmbedding and GemmFastGelu, as onnxruntime.transformers
 * and the model builders of onnxruntime-genai write them. */

/* The bits-wide fields of the uint8 x, each byte giving 8 / bits values
 * low bits first, into a fresh [..., 8 / bits] *y (x unsqueezed on a new
 * last axis, BitShift right by 0, bits, ..., BitwiseAnd 2^bits - 1);
 * bits 8: x unsqueezed. */
static int s_ms_unpack_bits(s_emit *e, const char *x, int64_t bits, const char **y)
{
    const int64_t last = -1, per = 8 / bits;
    uint8_t shifts[8], mask = (uint8_t)((1u << bits) - 1);
    int rc;
    if ((rc = s_ms_unsqueeze(e, x, 1, &last, NULL, y)) < 0 || bits == 8)
        return rc;
    for (int64_t i = 0; i < per; i++)
        shifts[i] = (uint8_t)(i * bits);
    gx_tensor *st = gx_tensor_new_copy(GX_U8, 1, &per, shifts, (size_t)per);
    gx_tensor *mt = gx_tensor_new_copy(GX_U8, 0, NULL, &mask, 1);
    const char *sk = s_aux_const(e, "shifts", &st), *mk = sk ? s_aux_const(e, "mask", &mt) : NULL;
    gx_node *n;
    gx_tensor_destroy(&mt);
    if (!mk || !(n = s_aux(e, "BitShift", 2, (const char *[]){*y, sk}, NULL, y)) ||
        (rc = s_set_rc(e, gx_node_set_string(n, "direction", "RIGHT"), "direction")) < 0)
        return mk ? rc : GX_ENOMEM;
    return s_aux(e, "BitwiseAnd", 2, (const char *[]){*y, mk}, NULL, y) ? GX_OK : GX_ENOMEM;
}

/* x (integer) cast to float32 into a fresh *y. */
static int s_ms_to_float(s_emit *e, const char *x, const char **y)
{
    return s_aux_i(e, "Cast", 1, &x, NULL, y, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
}

/* The data type of the constant name (0: not a constant of the model). */
static int s_ms_const_type(const s_emit *e, const char *name)
{
    const Onnx__TensorProto *t = s_const_named(e->c, name);
    return t && t->has_data_type ? (int)t->data_type : 0;
}

/* MatMulNBits (A, B, scales, zero_points, g_idx, bias; K, N, bits,
 * block_size, accuracy_level): A times the [K, N] matrix B holds
 * quantized, column n of it in N rows of k_blocks = ceil(K / block_size)
 * blocks of block_size bits-wide values (uint8 bytes, low bits first):
 * value (q - zero point) * scale of its block; the zero points default to
 * 2^(bits - 1), are uint8 packed as B is (each row ceil(k_blocks * bits /
 * 8) bytes) or of scales' type; then plus bias. The dequantization is ops
 * on constants, which the daemon folds when the graph compiles: the node
 * runs as a float32 MatMul. g_idx and types other than float32 are
 * refused; accuracy_level (ORT's int8 compute at 4) is a hint, gexec
 * computes in float32. */
static int s_ms_matmul_nbits(s_emit *e)
{
    const int64_t K = s_find_int(e->np, "K", 0), N = s_find_int(e->np, "N", 0),
                  bits = s_find_int(e->np, "bits", 4), bs = s_find_int(e->np, "block_size", 0);
    const char *in[6] = {"", "", "", "", "", ""};
    int rc;
    for (size_t i = 0; i < e->n_in && i < 6; i++)
        in[i] = e->in[i];
    if (e->n_in < 3 || e->n_in > 6 || !*in[0] || !*in[1] || !*in[2] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "MatMulNBits takes A, B, scales, zero_points, g_idx and bias, and gives Y");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        if (strcmp(an, "K") && strcmp(an, "N") && strcmp(an, "bits") && strcmp(an, "block_size") &&
            strcmp(an, "accuracy_level"))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "MatMulNBits: attribute '%.60s' is not supported (gexec runs K, N, "
                          "bits, block_size and accuracy_level)", an);
    }
    if (K <= 0 || N <= 0 || bs < 1 || K > INT32_MAX || N > INT32_MAX || bs > INT32_MAX ||
        (bits != 2 && bits != 4 && bits != 8) || (bs * bits) % 8 != 0)
        return s_fail(e->c, GX_EATTR, e->path,
                      "MatMulNBits needs K, N > 0, bits 2, 4 or 8 and a block_size of whole "
                      "bytes (K %" PRId64 ", N %" PRId64 ", bits %" PRId64 ", block_size %" PRId64
                      ")", K, N, bits, bs);
    if (*in[4])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "MatMulNBits: input g_idx (act-order) is not supported");
    int st = s_ms_const_type(e, in[2]);
    if (st && st != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "MatMulNBits with scales of ONNX type %d is not supported (gexec runs "
                      "float32)", st);
    const int64_t kb = (K + bs - 1) / bs, per = 8 / bits, zrow = (kb * bits + 7) / 8;
    const char *q, *zp, *sc, *w, *t;
    if ((rc = s_ms_reshape(e, in[1], 3, (const int64_t[]){N, kb, bs * bits / 8}, &q)) < 0 ||
        (rc = s_ms_unpack_bits(e, q, bits, &q)) < 0 ||
        (rc = s_ms_reshape(e, q, 3, (const int64_t[]){N, kb, bs}, &q)) < 0 ||
        (rc = s_ms_to_float(e, q, &q)) < 0 ||
        (rc = s_ms_reshape(e, in[2], 3, (const int64_t[]){N, kb, 1}, &sc)) < 0)
        return rc;
    if (!*in[3]) {
        float def = (float)(1 << (bits - 1));
        gx_tensor *zt = gx_tensor_new_copy(GX_F32, 0, NULL, &def, sizeof def);
        if (!(zp = s_aux_const(e, "zero_point", &zt)))
            return GX_ENOMEM;
    } else {
        int zt = s_ms_const_type(e, in[3]);
        zp = in[3];
        if (zt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8) {
            const int64_t zero = 0, one = 1;
            const char *s0, *s1, *ax;
            if ((rc = s_ms_reshape(e, zp, 2, (const int64_t[]){N, zrow}, &zp)) < 0 ||
                (rc = s_ms_unpack_bits(e, zp, bits, &zp)) < 0 ||
                (rc = s_ms_reshape(e, zp, 2, (const int64_t[]){N, zrow * per}, &zp)) < 0)
                return rc;
            if (!(s0 = s_aux_i64(e, "start", false, 1, &zero)) ||
                !(s1 = s_aux_i64(e, "end", false, 1, &kb)) ||
                !(ax = s_aux_i64(e, "axis", false, 1, &one)) ||
                !s_aux(e, "Slice", 4, (const char *[]){zp, s0, s1, ax}, NULL, &zp))
                return GX_ENOMEM;
            if ((rc = s_ms_to_float(e, zp, &zp)) < 0)
                return rc;
        } else if (zt != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "MatMulNBits: zero_points must be a constant of the model, uint8 or "
                          "float32 (ONNX type %d)", zt);
        }
        if ((rc = s_ms_reshape(e, zp, 3, (const int64_t[]){N, kb, 1}, &zp)) < 0)
            return rc;
    }
    if (!s_aux(e, "Sub", 2, (const char *[]){q, zp}, NULL, &w) ||
        !s_aux(e, "Mul", 2, (const char *[]){w, sc}, NULL, &w))
        return GX_ENOMEM;
    if ((rc = s_ms_reshape(e, w, 2, (const int64_t[]){N, kb * bs}, &w)) < 0)
        return rc;
    if (kb * bs != K) {
        const int64_t zero = 0, one = 1;
        const char *s0 = s_aux_i64(e, "start", false, 1, &zero), *s1, *ax;
        if (!s0 || !(s1 = s_aux_i64(e, "end", false, 1, &K)) ||
            !(ax = s_aux_i64(e, "axis", false, 1, &one)) ||
            !s_aux(e, "Slice", 4, (const char *[]){w, s0, s1, ax}, NULL, &w))
            return GX_ENOMEM;
    }
    if ((rc = s_ms_transpose(e, w, 2, (const int64_t[]){1, 0}, NULL, &t)) < 0)
        return rc;
    if (!s_aux(e, "MatMul", 2, (const char *[]){in[0], t}, *in[5] ? NULL : e->out[0], &w) ||
        (*in[5] && !s_aux(e, "Add", 2, (const char *[]){w, in[5]}, e->out[0], NULL)))
        return GX_ENOMEM;
    return GX_OK;
}

/* The position ids [B, S] (int64) of tokens s < S starting at start (an
 * int64 [1]) in every sample: start + s, B and S the dims 0 and seq_axis
 * of x, into a fresh *y. */
static int s_ms_positions(s_emit *e, const char *x, int64_t seq_axis, const char *start,
                          const char **y)
{
    const char *b, *s, *ss, *scal, *z, *one, *ar, *p2, *bs;
    const int64_t zero = 0, onev = 1;
    int rc;
    if ((rc = s_ms_dim(e, x, 0, &b)) < 0 || (rc = s_ms_dim(e, x, seq_axis, &s)) < 0)
        return rc;
    if (!(scal = s_aux_i64(e, "scalar", false, 0, &zero)) ||
        !s_aux(e, "Reshape", 2, (const char *[]){s, scal}, NULL, &ss) ||
        !(z = s_aux_i64(e, "start", true, 1, &zero)) ||
        !(one = s_aux_i64(e, "delta", true, 1, &onev)) ||
        !s_aux(e, "Range", 3, (const char *[]){z, ss, one}, NULL, &ar) ||
        !s_aux(e, "Add", 2, (const char *[]){ar, start}, NULL, &p2))
        return GX_ENOMEM;
    if ((rc = s_ms_unsqueeze(e, p2, 1, &zero, NULL, &p2)) < 0 ||
        (rc = s_aux_i(e, "Concat", 2, (const char *[]){b, s}, NULL, &bs, "axis", 0)) < 0)
        return rc;
    return s_aux(e, "Expand", 2, (const char *[]){p2, bs}, NULL, y) ? GX_OK : GX_ENOMEM;
}

/* RotaryEmbedding of com.microsoft (input, position_ids, cos_cache,
 * sin_cache; interleaved, num_heads, rotary_embedding_dim, scale,
 * is_packed_batching): ai.onnx's RotaryEmbedding (opset 23, inputs in
 * its order). position_ids [B, S] as they are, or [1] the first position
 * (token s of every sample at position_ids[0] + s, expanded to [B, S]).
 * A 3-D input without num_heads has heads of 2 * cos_cache's last dim
 * (as ORT reads it): it is split into [B, N, S, H] and back. scale is
 * read by ORT's CPU kernel but not applied; gexec does the same. The
 * input's and position_ids' ranks must be known to the importer. */
static int s_ms_rotary(s_emit *e)
{
    const int64_t heads = s_find_int(e->np, "num_heads", 0),
                  dim = s_find_int(e->np, "rotary_embedding_dim", 0),
                  inter = s_find_int(e->np, "interleaved", 0);
    int rc;
    if (e->n_in != 4 || !*e->in[0] || !*e->in[1] || !*e->in[2] || !*e->in[3] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "RotaryEmbedding takes input, position_ids, cos_cache and sin_cache, and "
                      "gives one output");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        if (strcmp(an, "num_heads") && strcmp(an, "rotary_embedding_dim") &&
            strcmp(an, "interleaved") && strcmp(an, "scale") &&
            !(strcmp(an, "is_packed_batching") == 0 && s_find_int(e->np, an, 0) == 0))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "RotaryEmbedding: attribute '%.60s' is not supported (gexec runs "
                          "interleaved, num_heads, rotary_embedding_dim and scale)", an);
    }
    if (dim > 0 && heads <= 0)
        return s_fail(e->c, GX_EATTR, e->path,
                      "RotaryEmbedding: rotary_embedding_dim needs num_heads");
    const int rx = s_ms_rank(e->c, e->in[0]), rp = s_ms_rank(e->c, e->in[1]);
    if ((rx != 3 && rx != 4) || (rp != 1 && rp != 2))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "RotaryEmbedding needs the ranks of input (3 or 4) and position_ids (1 or "
                      "2) declared in the model (a graph input, an initializer or value_info); "
                      "they are %d and %d", rx, rp);
    const char *x, *pos, *y = e->out[0], *shape_x = NULL;
    if ((rc = s_ms_rank_guard(e, e->in[0], rx, &x)) < 0 ||
        (rc = s_ms_rank_guard(e, e->in[1], rp, &pos)) < 0)
        return rc;
    if (rp == 1 && (rc = s_ms_positions(e, x, rx == 4 ? 2 : 1, pos, &pos)) < 0)
        return rc;
    bool split = rx == 3 && heads <= 0;
    if (split) {
        /* [B, S, hidden] as [B, N, S, H], H = 2 * cos_cache's last dim */
        const char *h, *two, *h2, *pre, *sh, *r;
        const int64_t twov = 2, lead[3] = {0, 0, -1};
        if ((rc = s_ms_dim(e, e->in[2], -1, &h)) < 0)
            return rc;
        if (!(two = s_aux_i64(e, "two", false, 1, &twov)) ||
            !s_aux(e, "Mul", 2, (const char *[]){h, two}, NULL, &h2) ||
            !(pre = s_aux_i64(e, "shape", false, 3, lead)) ||
            !s_aux(e, "Shape", 1, &x, NULL, &shape_x))
            return GX_ENOMEM;
        if ((rc = s_aux_i(e, "Concat", 2, (const char *[]){pre, h2}, NULL, &sh, "axis", 0)) < 0)
            return rc;
        if (!s_aux(e, "Reshape", 2, (const char *[]){x, sh}, NULL, &r) ||
            (rc = s_ms_transpose(e, r, 4, (const int64_t[]){0, 2, 1, 3}, NULL, &x)) < 0 ||
            !(y = s_fresh_value(e, "rotated")))
            return rc < 0 ? rc : GX_ENOMEM;
    }
    gx_node *n = s_aux(e, "RotaryEmbedding", 4, (const char *[]){x, e->in[2], e->in[3], pos}, y,
                       NULL);
    if (!n || (rc = s_set_rc(e, gx_node_set_int(n, "interleaved", inter), "interleaved")) < 0 ||
        (rx == 3 && !split &&
         (rc = s_set_rc(e, gx_node_set_int(n, "num_heads", heads), "num_heads")) < 0) ||
        (dim > 0 &&
         (rc = s_set_rc(e, gx_node_set_int(n, "rotary_embedding_dim", dim), "rotary_embedding_dim")) < 0))
        return n ? rc : GX_ENOMEM;
    if (!split)
        return GX_OK;
    const char *t;
    if ((rc = s_ms_transpose(e, y, 4, (const int64_t[]){0, 2, 1, 3}, NULL, &t)) < 0)
        return rc;
    return s_aux(e, "Reshape", 2, (const char *[]){t, shape_x}, e->out[0], NULL) ? GX_OK
                                                                                 : GX_ENOMEM;
}

/* EmbedLayerNormalization (input_ids, segment_ids, word_embedding,
 * position_embedding, segment_embedding, gamma, beta, mask,
 * position_ids; epsilon, mask_index_type) as BERT's exports fuse it:
 * Gather of the word, position (position_ids [B, S] or [1, S], else 0 ..
 * S - 1) and segment embeddings (when segment_ids are given), their sum
 * (output embedding_sum), LayerNormalization over the last axis (gamma,
 * beta, epsilon) into output; mask_index [B] (int32) counts the entries
 * of each row of mask equal to 1 (0 without mask), as ORT's CPU kernel
 * does. Ids out of range fail the Gather when the graph runs. */
static int s_ms_embed_norm(s_emit *e)
{
    const char *in[9] = {"", "", "", "", "", "", "", "", ""};
    const char *out[3] = {"", "", ""};
    float eps;
    int rc;
    for (size_t i = 0; i < e->n_in && i < 9; i++)
        in[i] = e->in[i];
    for (size_t i = 0; i < e->n_out && i < 3; i++)
        out[i] = e->out[i];
    if (e->n_in < 7 || e->n_in > 9 || !*in[0] || !*in[2] || !*in[3] || !*in[5] || !*in[6] ||
        !*in[1] != !*in[4] || e->n_out < 1 || e->n_out > 3 || !*out[0])
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "EmbedLayerNormalization takes input_ids, segment_ids and "
                      "segment_embedding (both or neither), word_embedding, position_embedding, "
                      "gamma, beta, mask, position_ids, and gives output, mask_index, "
                      "embedding_sum");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        if (strcmp(an, "epsilon") && strcmp(an, "mask_index_type"))
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "EmbedLayerNormalization: attribute '%.60s' is not supported (gexec "
                          "runs epsilon and mask_index_type)", an);
    }
    if ((rc = s_float_attr(e, "epsilon", 1e-12f, &eps)) < 0)
        return rc;
    const char *sum, *pos = in[8], *t;
    if (!s_aux(e, "Gather", 2, (const char *[]){in[2], in[0]}, NULL, &sum))
        return GX_ENOMEM;
    if (!*pos) {
        const int64_t zero = 0;
        const char *z = s_aux_i64(e, "start", false, 1, &zero);
        if (!z)
            return GX_ENOMEM;
        if ((rc = s_ms_positions(e, in[0], 1, z, &pos)) < 0)
            return rc;
    }
    if (!s_aux(e, "Gather", 2, (const char *[]){in[3], pos}, NULL, &t) ||
        !s_aux(e, "Add", 2, (const char *[]){sum, t}, *in[1] || !*out[2] ? NULL : out[2], &sum))
        return GX_ENOMEM;
    if (*in[1] && (!s_aux(e, "Gather", 2, (const char *[]){in[4], in[1]}, NULL, &t) ||
                   !s_aux(e, "Add", 2, (const char *[]){sum, t}, *out[2] ? out[2] : NULL, &sum)))
        return GX_ENOMEM;
    gx_node *n = s_aux(e, "LayerNormalization", 3, (const char *[]){sum, in[5], in[6]}, out[0],
                       NULL);
    if (!n || (rc = s_set_rc(e, gx_node_set_int(n, "axis", -1), "axis")) < 0 ||
        (rc = s_set_rc(e, gx_node_set_float(n, "epsilon", eps), "epsilon")) < 0)
        return n ? rc : GX_ENOMEM;
    if (!*out[1])
        return GX_OK;
    if (*in[7]) {
        /* the count of ones in each row */
        int32_t onev = 1;
        const int64_t axis = 1;
        gx_tensor *ot = gx_tensor_new_copy(GX_I32, 0, NULL, &onev, sizeof onev);
        const char *k = s_aux_const(e, "one", &ot), *eq, *ax;
        if (!k || !s_aux(e, "Equal", 2, (const char *[]){in[7], k}, NULL, &eq) ||
            !(ax = s_aux_i64(e, "axes", false, 1, &axis)))
            return GX_ENOMEM;
        if ((rc = s_aux_i(e, "Cast", 1, &eq, NULL, &eq, "to",
                          ONNX__TENSOR_PROTO__DATA_TYPE__INT32)) < 0)
            return rc;
        return s_aux_i(e, "ReduceSum", 2, (const char *[]){eq, ax}, out[1], NULL, "keepdims", 0);
    }
    const char *b;
    gx_node *cs;
    const int32_t zero = 0;
    if ((rc = s_ms_dim(e, in[0], 0, &b)) < 0)
        return rc;
    if (!(cs = s_aux(e, "ConstantOfShape", 1, &b, out[1], NULL)))
        return GX_ENOMEM;
    gx_tensor *zt = gx_tensor_new_copy(GX_I32, 1, (int64_t[]){1}, &zero, sizeof zero);
    return s_set_rc(e, zt ? gx_node_set_tensor(cs, "value", &zt) : GX_ENOMEM, "value");
}

/* GroupQueryAttention (query, key, value, past_key, past_value,
 * seqlens_k, total_sequence_length, cos_cache, sin_cache; num_heads,
 * kv_num_heads, scale, softcap, do_rotary, rotary_interleaved): ai.onnx's
 * Attention on 3-D Q [B, S, N * H], K and V [B, S, kv_N * H] with
 * kv_num_heads, is_causal, the KV cache past_key/past_value [B, kv_N, P,
 * H] (BNSH) and present_key/present_value [B, kv_N, P + S, H]. Without key
 * and value, query is packed [B, S, (N + 2 kv_N) * H] and Split. With
 * do_rotary Q and K first go through ai.onnx's RotaryEmbedding at the
 * positions P + s (rotary_embedding_dim twice cos_cache's last dim where
 * cos_cache is a constant). gexec runs the form in which every sample
 * holds the whole cache: seqlens_k[b] + 1 = total_sequence_length = P + S
 * for every b, checked when the graph runs (a Reshape named
 * <node>/check_seqlens_k_is_past_plus_new_minus_1 fails otherwise);
 * ORT's per-sample lengths (right-padded batches, a shared past/present
 * buffer) are not run. */
static int s_ms_gqa(s_emit *e)
{
    static const char *const attrs[] = {"num_heads", "kv_num_heads", "scale", "softcap",
                                        "do_rotary", "rotary_interleaved"};
    static const char *const zero_attrs[] = {"smooth_softmax", "qk_output"};
    static const char *const refused_in[] = {"position_ids", "attention_bias", "head_sink"};
    const int64_t heads = s_find_int(e->np, "num_heads", 0),
                  kvh = s_find_int(e->np, "kv_num_heads", 0),
                  rotary = s_find_int(e->np, "do_rotary", 0),
                  inter = s_find_int(e->np, "rotary_interleaved", 0);
    const char *in[12] = {"", "", "", "", "", "", "", "", "", "", "", ""};
    int rc;
    for (size_t i = 0; i < e->n_in && i < 12; i++)
        in[i] = e->in[i];
    if (e->n_in < 7 || e->n_in > 12 || !*in[0] || !*in[5] || !*in[6] || e->n_out < 1 ||
        e->n_out > 4 || !*in[1] != !*in[2] || !*in[3] != !*in[4])
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "GroupQueryAttention takes query, key and value (both or neither), "
                      "past_key and past_value (both or neither), seqlens_k, "
                      "total_sequence_length, cos_cache, sin_cache, and gives output, "
                      "present_key, present_value");
    for (size_t i = 0; i < e->np->n_attribute; i++) {
        const char *an = e->np->attribute[i]->name ? e->np->attribute[i]->name : "";
        bool known = strcmp(an, "local_window_size") == 0 &&
                     s_find_int(e->np, "local_window_size", -1) == -1;
        for (size_t j = 0; j < sizeof attrs / sizeof attrs[0]; j++)
            known = known || strcmp(an, attrs[j]) == 0;
        for (size_t j = 0; j < sizeof zero_attrs / sizeof zero_attrs[0]; j++)
            known = known || (strcmp(an, zero_attrs[j]) == 0 && s_find_int(e->np, an, 0) == 0);
        if (!known)
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "GroupQueryAttention: attribute '%.60s' is not supported (gexec runs "
                          "num_heads, kv_num_heads, scale, softcap, do_rotary, "
                          "rotary_interleaved, local_window_size -1)", an);
    }
    for (size_t i = 9; i < 12; i++)
        if (*in[i])
            return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                          "GroupQueryAttention: input %s is not supported", refused_in[i - 9]);
    if (e->n_out > 3 && *e->out[3])
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "GroupQueryAttention: output output_qk is not supported");
    if (heads <= 0 || kvh <= 0 || heads % kvh != 0)
        return s_fail(e->c, GX_EATTR, e->path,
                      "GroupQueryAttention needs num_heads a multiple of kv_num_heads > 0 (%" PRId64
                      ", %" PRId64 ")", heads, kvh);
    if (rotary && (!*in[7] || !*in[8]))
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "GroupQueryAttention: do_rotary needs cos_cache and sin_cache");
    float softcap;
    if ((rc = s_float_attr(e, "softcap", 0.0f, &softcap)) < 0)
        return rc;
    const char *q, *k = in[1], *v = in[2];
    if ((rc = s_ms_rank_guard(e, in[0], 3, &q)) < 0)
        return rc;
    if (!*k) {
        /* packed [B, S, (N + 2 kv_N) * H]: Q, K, V of N, kv_N, kv_N heads */
        const int64_t parts = heads + 2 * kvh;
        const char *d, *kp, *h, *kn, *kkv, *hq, *hkv, *sizes, *outs[3];
        if ((rc = s_ms_dim(e, q, 2, &d)) < 0)
            return rc;
        if (!(kp = s_aux_i64(e, "parts", false, 1, &parts)) ||
            !s_aux(e, "Div", 2, (const char *[]){d, kp}, NULL, &h) ||
            !(kn = s_aux_i64(e, "num_heads", false, 1, &heads)) ||
            !(kkv = s_aux_i64(e, "kv_num_heads", false, 1, &kvh)) ||
            !s_aux(e, "Mul", 2, (const char *[]){h, kn}, NULL, &hq) ||
            !s_aux(e, "Mul", 2, (const char *[]){h, kkv}, NULL, &hkv))
            return GX_ENOMEM;
        if ((rc = s_aux_i(e, "Concat", 3, (const char *[]){hq, hkv, hkv}, NULL, &sizes, "axis",
                          0)) < 0)
            return rc;
        for (int i = 0; i < 3; i++)
            if (!(outs[i] = s_fresh_value(e, i == 0 ? "q" : i == 1 ? "k" : "v")))
                return GX_ENOMEM;
        char *sname = s_own(e->c, "%.200s/Split", e->name);
        if (!sname || !s_set_add(e->node_names, sname))
            return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
        gx_node *sp = gx_graph_add_node(e->g, "Split", sname, 2, (const char *[]){q, sizes}, 3,
                                        outs);
        if (!sp || gx_node_set_int(sp, "axis", 2) < 0)
            return s_fail(e->c, GX_ENOMEM, e->path, "cannot add the Split (out of memory)");
        q = outs[0], k = outs[1], v = outs[2];
    }
    /* P (0 without a past) and the check that every sample's length
     * seqlens_k[b] + 1 and total_sequence_length are P + S: the count of
     * those that are not is the length of a zero vector which, with Q's
     * last dim after it, must Reshape to [1] (that dim, used below) */
    const char *p, *sdim, *want, *lens, *tot, *all, *eq, *ne, *cnt, *zs, *cat, *qd, *one;
    const int64_t zero = 0, onev = 1;
    if (*in[3]) {
        if ((rc = s_ms_dim(e, in[3], 2, &p)) < 0)
            return rc;
    } else if (!(p = s_aux_i64(e, "past", false, 1, &zero)))
        return GX_ENOMEM;
    if ((rc = s_ms_dim(e, q, 1, &sdim)) < 0 ||
        (rc = s_ms_reshape(e, in[5], 1, (const int64_t[]){-1}, &lens)) < 0 ||
        (rc = s_aux_i(e, "Cast", 1, &lens, NULL, &lens, "to",
                      ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) < 0 ||
        (rc = s_ms_reshape(e, in[6], 1, (const int64_t[]){1}, &tot)) < 0 ||
        (rc = s_aux_i(e, "Cast", 1, &tot, NULL, &tot, "to",
                      ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) < 0)
        return rc;
    if (!(one = s_aux_i64(e, "one", false, 1, &onev)) ||
        !s_aux(e, "Add", 2, (const char *[]){p, sdim}, NULL, &want) ||
        !s_aux(e, "Add", 2, (const char *[]){lens, one}, NULL, &lens))
        return GX_ENOMEM;
    if ((rc = s_aux_i(e, "Concat", 2, (const char *[]){lens, tot}, NULL, &all, "axis", 0)) < 0)
        return rc;
    gx_node *cs;
    if (!s_aux(e, "Equal", 2, (const char *[]){all, want}, NULL, &eq) ||
        !s_aux(e, "Not", 1, &eq, NULL, &ne))
        return GX_ENOMEM;
    if ((rc = s_aux_i(e, "Cast", 1, &ne, NULL, &ne, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT64)) <
            0 ||
        (rc = s_aux_i(e, "ReduceSum", 1, &ne, NULL, &cnt, "keepdims", 1)) < 0)
        return rc;
    if (!(cs = s_aux(e, "ConstantOfShape", 1, &cnt, NULL, &zs)))
        return GX_ENOMEM;
    gx_tensor *zt = gx_tensor_new_copy(GX_I64, 1, (int64_t[]){1}, &zero, sizeof zero);
    if ((rc = s_set_rc(e, zt ? gx_node_set_tensor(cs, "value", &zt) : GX_ENOMEM, "value")) < 0 ||
        (rc = s_ms_dim(e, q, 2, &qd)) < 0 ||
        (rc = s_aux_i(e, "Concat", 2, (const char *[]){zs, qd}, NULL, &cat, "axis", 0)) < 0)
        return rc;
    {
        const char *k1 = s_aux_i64(e, "shape", false, 1, &onev), *b, *s, *shape, *chk;
        char *cname = s_own(e->c, "%.200s/check_seqlens_k_is_past_plus_new_minus_1", e->name);
        if (!k1 || !(chk = s_fresh_value(e, "checked")) || !cname ||
            !s_set_add(e->node_names, cname) ||
            !gx_graph_add_node(e->g, "Reshape", cname, 2, (const char *[]){cat, k1}, 1, &chk))
            return s_fail(e->c, GX_ENOMEM, e->path, "out of memory");
        if ((rc = s_ms_dim(e, q, 0, &b)) < 0 || (rc = s_ms_dim(e, q, 1, &s)) < 0 ||
            (rc = s_aux_i(e, "Concat", 3, (const char *[]){b, s, chk}, NULL, &shape, "axis", 0)) <
                0)
            return rc;
        if (!s_aux(e, "Reshape", 2, (const char *[]){q, shape}, NULL, &q))
            return GX_ENOMEM;
    }
    if (rotary) {
        /* Q and K rotated at positions P + s, as ai.onnx's RotaryEmbedding
         * with num_heads on 3-D input */
        const Onnx__TensorProto *cc = s_const_named(e->c, in[7]);
        const int64_t dim = cc && cc->n_dims == 2 ? 2 * cc->dims[1] : 0;
        const char *pos, *xs[2] = {q, k};
        if ((rc = s_ms_positions(e, q, 1, p, &pos)) < 0)
            return rc;
        for (int i = 0; i < 2; i++) {
            gx_node *n = s_aux(e, "RotaryEmbedding", 4, (const char *[]){xs[i], in[7], in[8], pos},
                               NULL, &xs[i]);
            if (!n ||
                (rc = s_set_rc(e, gx_node_set_int(n, "interleaved", inter != 0), "interleaved")) <
                    0 ||
                (rc = s_set_rc(e, gx_node_set_int(n, "num_heads", i ? kvh : heads), "num_heads")) <
                    0 ||
                (dim > 0 && (rc = s_set_rc(e, gx_node_set_int(n, "rotary_embedding_dim", dim),
                                           "rotary_embedding_dim")) < 0))
                return n ? rc : GX_ENOMEM;
        }
        q = xs[0], k = xs[1];
    }
    s_ms_attn a = {.q = q, .k = k, .v = v, .mask = "", .bias = "", .pk = in[3], .pv = in[4],
                   .y = e->out[0], .present_k = e->n_out > 1 ? e->out[1] : NULL,
                   .present_v = e->n_out > 2 ? e->out[2] : NULL, .kv_heads = kvh, .causal = true,
                   .softcap = softcap};
    return s_ms_attend(e, &a);
}

/* GemmFastGelu (X, W, bias): FastGelu (tanh Gelu) of X W + bias. */
static int s_ms_gemm_fast_gelu(s_emit *e)
{
    const char *t;
    gx_node *n;
    s_ms_trim(e);
    if (e->n_in < 2 || e->n_in > 3 || !*e->in[0] || !*e->in[1] || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "GemmFastGelu takes X, W and bias, and gives Y");
    if (!s_aux(e, "MatMul", 2, (const char *[]){e->in[0], e->in[1]}, NULL, &t) ||
        (e->n_in == 3 && !s_aux(e, "Add", 2, (const char *[]){t, e->in[2]}, NULL, &t)) ||
        !(n = s_aux(e, "Gelu", 1, &t, e->out[0], NULL)))
        return GX_ENOMEM;
    return s_set_rc(e, gx_node_set_string(n, "approximate", "tanh"), "approximate");
}

/* The lowering of each com.microsoft op that has one; the others of
 * s_other_ops run as the gexec op of their name. */
static const struct {
    const char *op;
    int (*fn)(s_emit *e);
} s_ms_lowerings[] = {
    {"FusedConv", s_ms_fused_conv},
    {"FusedGemm", s_ms_fused_gemm},
    {"FusedMatMul", s_ms_fused_matmul},
    {"Gelu", s_ms_gelu},
    {"FastGelu", s_ms_gelu},
    {"BiasGelu", s_ms_gelu},
    {"QuickGelu", s_ms_quick_gelu},
    {"BiasAdd", s_ms_bias_add},
    {"SkipLayerNormalization", s_ms_skip_norm},
    {"SkipSimplifiedLayerNormalization", s_ms_skip_norm},
    {"SimplifiedLayerNormalization", s_ms_simplified_norm},
    {"DynamicQuantizeMatMul", s_ms_dq_matmul},
    {"QLinearConv", s_ms_qlinear_conv},
    {"QLinearAdd", s_ms_qlinear},
    {"QLinearMul", s_ms_qlinear},
    {"QLinearSigmoid", s_ms_qlinear},
    {"QLinearLeakyRelu", s_ms_qlinear},
    {"QLinearGlobalAveragePool", s_ms_qlinear},
    {"QLinearConcat", s_ms_qlinear},
    {"NhwcMaxPool", s_ms_nhwc_maxpool},
    {"Attention", s_ms_attention},
    {"MultiHeadAttention", s_ms_mha},
    {"MatMulNBits", s_ms_matmul_nbits},
    {"RotaryEmbedding", s_ms_rotary},
    {"GemmFastGelu", s_ms_gemm_fast_gelu},
    {"GroupQueryAttention", s_ms_gqa},
    {"EmbedLayerNormalization", s_ms_embed_norm},
};

/* ---- com.microsoft.nchwc ------------------------------------------------
 *
 * ONNX Runtime's layout optimizations (ORT_ENABLE_ALL) put 2-D Convs and
 * pools on NCHWc data: channels in blocks of 8 (AVX2) or 16 (AVX-512),
 * the tensor's shape [N, C padded to the block, H, W]. gexec reads each
 * such value as the plain NCHW tensor of that shape (the padded channels
 * included), which every op here treats channel by channel as ORT does:
 * ReorderInput pads the channels with zeros (after NHWC -> NCHW when
 * channels_last), ReorderOutput cuts them to `channels` (then NCHW ->
 * NHWC when channels_last), Conv's weights, which ORT saved reordered,
 * are put back in OIHW order (folded when the graph compiles), and the
 * ai.onnx ops ORT leaves between them (Add, Concat, ...) see the same
 * padded tensors ORT's do. */

/* Whether value name is NCHWc in the graph being read: made by a
 * com.microsoft.nchwc node other than ReorderOutput, or by another node
 * from such a value (ORT runs elementwise ops and Concat on them). */
static bool s_nchwc_blocked(const s_ctx *c, const char *name, int depth)
{
    const Onnx__GraphProto *gp = c->graph;
    for (size_t i = 0; gp && depth < 64 && i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        bool made = false;
        for (size_t j = 0; n && j < n->n_output && !made; j++)
            made = n->output[j] && strcmp(n->output[j], name) == 0;
        if (!made)
            continue;
        if (n->domain && strcmp(n->domain, "com.microsoft.nchwc") == 0)
            return !n->op_type || strcmp(n->op_type, "ReorderOutput") != 0;
        for (size_t j = 0; j < n->n_input; j++)
            if (n->input[j] && *n->input[j] && s_nchwc_blocked(c, n->input[j], depth + 1))
                return true;
        return false;
    }
    return false;
}

/* The dims of Conv node n's weights (an initializer, 4-D) into w; false
 * when they are not there. */
static bool s_nchwc_wdims(const s_ctx *c, const Onnx__NodeProto *n, int64_t w[4])
{
    const Onnx__TensorProto *t = n->n_input > 1 && n->input[1] ? s_const_named(c, n->input[1])
                                                                : NULL;
    if (!t || t->n_dims != 4)
        return false;
    for (int i = 0; i < 4; i++)
        w[i] = t->dims[i];
    return true;
}

/* The block size of the graph's NCHWc values (8 or 16) into *block: the
 * one every nchwc Conv's saved weights fit (B divides the padded output
 * channels; with NCHWc input, B divides the input channels too, but for
 * depthwise; with NCHW input, fewer input channels than B). Where both
 * fit, ORT's choice on this CPU (16 with AVX-512F, else 8), as the model
 * was saved on a machine like it (ORT's NCHWc models do not move). */
static int s_nchwc_block(s_emit *e, int *block)
{
    s_ctx *c = e->c;
    const Onnx__GraphProto *gp = c->graph;
    unsigned fits = 3; /* bit 0: 8, bit 1: 16 */
    if (c->nchwc_graph == gp && c->nchwc_block) {
        *block = c->nchwc_block;
        return GX_OK;
    }
    for (size_t i = 0; gp && i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        int64_t w[4];
        if (!n || !n->domain || strcmp(n->domain, "com.microsoft.nchwc") != 0 || !n->op_type ||
            strcmp(n->op_type, "Conv") != 0 || !s_nchwc_wdims(c, n, w))
            continue;
        int64_t group = s_find_int(n, "group", 1);
        bool blocked = n->n_input > 0 && n->input[0] && s_nchwc_blocked(c, n->input[0], 0);
        for (int b = 0; b < 2; b++) {
            int64_t bs = b ? 16 : 8;
            bool ok = w[0] % bs == 0;
            if (blocked && !(group > 1 && w[1] == 1))
                ok = ok && w[1] % bs == 0;
            else if (!blocked)
                ok = ok && group == 1 && w[1] < bs;
            if (!ok)
                fits &= ~(1u << b);
        }
    }
    if (fits == 1 || fits == 2)
        *block = fits == 1 ? 8 : 16;
#if defined(__x86_64__) || defined(__i386__)
    else if (fits == 3)
        *block = __builtin_cpu_supports("avx512f") ? 16 : 8;
#endif
    else
        *block = 0;
    if (*block) {
        c->nchwc_graph = gp;
        c->nchwc_block = *block;
        return GX_OK;
    }
    return s_fail(c, GX_EUNSUPPORTED, e->path,
                  "the NCHWc block size of this model's com.microsoft.nchwc Convs %s; save the "
                  "model at ORT_ENABLE_EXTENDED instead",
                  fits ? "cannot be told from their weights on this CPU"
                       : "is neither 8 nor 16 by their weights");
}

/* Conv (X, W, B, Sum; activation, activation_params and Conv's
 * attributes): W, saved by ORT as [O padded, I, KH, KW] in blocks
 * (OIHWBiBo: [O/B, I/B, KH, KW, Bi, Bo] for NCHWc input; OIHWBo: [O/B,
 * I, KH, KW, Bo] for NCHW input or depthwise), put back in OIHW order;
 * then FusedConv's Conv + Sum, activation. */
static int s_nchwc_conv(s_emit *e)
{
    int64_t w[4];
    int block, rc;
    if (e->n_in < 2 || !*e->in[0] || !*e->in[1] || !s_nchwc_wdims(e->c, e->np, w) ||
        w[0] <= 0 || w[1] <= 0)
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "nchwc Conv needs its weights as a 4-D initializer");
    if ((rc = s_nchwc_block(e, &block)) < 0)
        return rc;
    int64_t group = s_find_int(e->np, "group", 1);
    bool bibo = s_nchwc_blocked(e->c, e->in[0], 0) && !(group > 1 && w[1] == 1);
    if (w[0] % block || (bibo && w[1] % block))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "nchwc Conv weights [%" PRId64 ", %" PRId64 ", ...] are not in blocks of %d",
                      w[0], w[1], block);
    const char *r, *t, *back;
    if (bibo) {
        int64_t d[6] = {w[0] / block, w[1] / block, w[2], w[3], block, block};
        if ((rc = s_ms_reshape(e, e->in[1], 6, d, &r)) < 0 ||
            (rc = s_ms_transpose(e, r, 6, (const int64_t[]){0, 5, 1, 4, 2, 3}, NULL, &t)) < 0)
            return rc;
    } else {
        int64_t d[5] = {w[0] / block, w[1], w[2], w[3], block};
        if ((rc = s_ms_reshape(e, e->in[1], 5, d, &r)) < 0 ||
            (rc = s_ms_transpose(e, r, 5, (const int64_t[]){0, 4, 1, 2, 3}, NULL, &t)) < 0)
            return rc;
    }
    if ((rc = s_ms_reshape(e, t, 4, w, &back)) < 0)
        return rc;
    e->in[1] = back;
    return s_ms_fused_conv(e);
}

/* ReorderInput (channels_last): NHWC -> NCHW when channels_last, then the
 * channels padded with zeros to a multiple of the block. */
static int s_nchwc_reorder_input(s_emit *e)
{
    const char *x = e->n_in == 1 ? e->in[0] : "", *ch, *k, *m, *s, *p, *pads;
    int block, rc;
    if (!*x || e->n_out != 1)
        return s_fail(e->c, GX_EFORMAT, e->path, "ReorderInput takes X and gives Y");
    if ((rc = s_nchwc_block(e, &block)) < 0)
        return rc;
    if (s_find_int(e->np, "channels_last", 0) &&
        (rc = s_ms_transpose(e, x, 4, (const int64_t[]){0, 3, 1, 2}, NULL, &x)) < 0)
        return rc;
    /* pad: (block - C % block) % block after the channels */
    int64_t bv = block, zeros[5] = {0, 0, 0, 0, 0};
    const char *z5, *z2;
    if ((rc = s_ms_dim(e, x, 1, &ch)) < 0)
        return rc;
    if (!(k = s_aux_i64(e, "block", false, 1, &bv)) ||
        !s_aux(e, "Mod", 2, (const char *[]){ch, k}, NULL, &m) ||
        !s_aux(e, "Sub", 2, (const char *[]){k, m}, NULL, &s) ||
        !s_aux(e, "Mod", 2, (const char *[]){s, k}, NULL, &p) ||
        !(z5 = s_aux_i64(e, "zeros", false, 5, zeros)) ||
        !(z2 = s_aux_i64(e, "zeros", false, 2, zeros)))
        return GX_ENOMEM;
    if ((rc = s_aux_i(e, "Concat", 3, (const char *[]){z5, p, z2}, NULL, &pads, "axis", 0)) < 0)
        return rc;
    return s_aux(e, "Pad", 2, (const char *[]){x, pads}, e->out[0], NULL) ? GX_OK : GX_ENOMEM;
}

/* ReorderOutput (channels, channels_last): the first `channels` channels,
 * then NCHW -> NHWC when channels_last. */
static int s_nchwc_reorder_output(s_emit *e)
{
    int64_t ch = s_find_int(e->np, "channels", 0), zero = 0, one = 1;
    bool last = s_find_int(e->np, "channels_last", 0) != 0;
    const char *x = e->n_in == 1 ? e->in[0] : "", *st, *en, *ax, *y;
    if (!*x || e->n_out != 1 || ch <= 0)
        return s_fail(e->c, GX_EFORMAT, e->path,
                      "ReorderOutput takes X, gives Y and needs channels > 0");
    if (!(st = s_aux_i64(e, "start", false, 1, &zero)) ||
        !(en = s_aux_i64(e, "channels", false, 1, &ch)) ||
        !(ax = s_aux_i64(e, "axis", false, 1, &one)) ||
        !s_aux(e, "Slice", 4, (const char *[]){x, st, en, ax}, last ? NULL : e->out[0], &y))
        return GX_ENOMEM;
    return last ? s_ms_transpose(e, y, 4, (const int64_t[]){0, 2, 3, 1}, e->out[0], NULL)
                : GX_OK;
}

/* MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool: ai.onnx's, on
 * the padded NCHW tensor. */
static int s_nchwc_pool(s_emit *e)
{
    return s_emit_node(e, NULL);
}

/* Upsample (scales: integers, mode nearest or linear,
 * coordinate_transformation_mode): Resize by those scales; nearest takes
 * the input pixel out / scale (asymmetric, floor), linear interpolates
 * with the given coordinate transformation (default asymmetric). */
static int s_nchwc_upsample(s_emit *e)
{
    const Onnx__AttributeProto *sc =
        s_find_typed(e->np, "scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    char mode[16], ctm[32];
    int rc;
    s_ms_string(e, "mode", mode, sizeof mode);
    s_ms_string(e, "coordinate_transformation_mode", ctm, sizeof ctm);
    bool linear = strcmp(mode, "linear") == 0;
    if (e->n_in != 1 || !*e->in[0] || e->n_out != 1 || !sc || sc->n_ints != 4 ||
        (!linear && *mode && strcmp(mode, "nearest") != 0))
        return s_fail(e->c, GX_EUNSUPPORTED, e->path,
                      "nchwc Upsample needs X, 4 integer scales and mode nearest or linear");
    float f[4];
    for (int i = 0; i < 4; i++) {
        if (sc->ints[i] <= 0)
            return s_fail(e->c, GX_EATTR, e->path, "nchwc Upsample: scale %" PRId64,
                          sc->ints[i]);
        f[i] = (float)sc->ints[i];
    }
    gx_tensor *t = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){4}, f, sizeof f);
    const char *k = s_aux_const(e, "scales", &t);
    gx_node *n;
    if (!k || !(n = s_aux(e, "Resize", 3, (const char *[]){e->in[0], "", k}, e->out[0], NULL)))
        return GX_ENOMEM;
    if ((rc = s_set_rc(e, gx_node_set_string(n, "mode", linear ? "linear" : "nearest"),
                       "mode")) < 0)
        return rc;
    if ((rc = s_set_rc(e, gx_node_set_string(n, "coordinate_transformation_mode",
                                             linear && *ctm ? ctm : "asymmetric"),
                       "coordinate_transformation_mode")) < 0)
        return rc;
    return linear ? GX_OK
                  : s_set_rc(e, gx_node_set_string(n, "nearest_mode", "floor"), "nearest_mode");
}

/* The lowering of each com.microsoft.nchwc op. */
static const struct {
    const char *op;
    int (*fn)(s_emit *e);
} s_nchwc_lowerings[] = {
    {"Conv", s_nchwc_conv},
    {"ReorderInput", s_nchwc_reorder_input},
    {"ReorderOutput", s_nchwc_reorder_output},
    {"MaxPool", s_nchwc_pool},
    {"AveragePool", s_nchwc_pool},
    {"GlobalMaxPool", s_nchwc_pool},
    {"GlobalAveragePool", s_nchwc_pool},
    {"Upsample", s_nchwc_upsample},
};

static const struct {
    const char *op;
    int64_t from, below;
    int (*fn)(s_emit *e);
} s_convs[] = {
    {"Softmax", 1, 13, s_cv_coerce2d},
    {"LogSoftmax", 1, 13, s_cv_coerce2d},
    {"Hardmax", 1, 13, s_cv_coerce2d},
    {"Add", 1, 7, s_cv_legacy_broadcast},
    {"Sub", 1, 7, s_cv_legacy_broadcast},
    {"Mul", 1, 7, s_cv_legacy_broadcast},
    {"Div", 1, 7, s_cv_legacy_broadcast},
    {"Pow", 1, 7, s_cv_legacy_broadcast},
    {"And", 1, 7, s_cv_legacy_broadcast},
    {"Or", 1, 7, s_cv_legacy_broadcast},
    {"Xor", 1, 7, s_cv_legacy_broadcast},
    {"Equal", 1, 7, s_cv_legacy_broadcast},
    {"Greater", 1, 7, s_cv_legacy_broadcast},
    {"Less", 1, 7, s_cv_legacy_broadcast},
    {"PRelu", 1, 7, s_cv_prelu},
    {"Gemm", 1, 7, s_cv_gemm},
    {"BatchNormalization", 1, 14, s_cv_batchnorm},
    {"Dropout", 1, 12, s_cv_dropout},
    {"Concat", 1, 4, s_cv_concat},
    {"Reshape", 1, 5, s_cv_reshape},
    {"Cast", 1, 6, s_cv_cast},
    {"LpPool", 1, 2, s_cv_lppool},
    {"GlobalLpPool", 1, 2, s_cv_lppool},
    {"Pad", 1, 2, s_cv_pad},
    {"Upsample", 1, 7, s_cv_upsample},
    {"RNN", 1, 7, s_cv_rnn},
    {"GRU", 1, 7, s_cv_rnn},
    {"LSTM", 1, 7, s_cv_rnn},
    {"Scan", 8, 9, s_cv_scan8},
    {"RoiAlign", 10, 16, s_cv_roialign},
    {"MeanVarianceNormalization", 1, 9, s_cv_mvn1},
    {"Tile", 1, 6, s_cv_tile1},
    {"ImageScaler", 1, 10, s_cv_experimental},
    {"Affine", 1, 10, s_cv_experimental},
    {"Scale", 1, 10, s_cv_experimental},
    {"ScaledTanh", 1, 10, s_cv_experimental},
    {"ParametricSoftplus", 1, 10, s_cv_experimental},
    {"Crop", 1, 10, s_cv_experimental},
    {"DynamicSlice", 1, 10, s_cv_dynamic_slice},
    {"ConstantFill", 1, 10, s_cv_constant_fill},
    {"Optional", 15, S_OPSET_MAX + 1, s_cv_optional},
    {"DFT", 20, S_OPSET_MAX + 1, s_cv_dft},
    {"QuantizeLinear", 21, S_OPSET_MAX + 1, s_cv_quant21},
    {"DequantizeLinear", 21, S_OPSET_MAX + 1, s_cv_quant21},
};

/* Where an older opset meant something else by the same node and no
 * conversion exists, that version is refused rather than run with the
 * wrong meaning. */
static const struct {
    const char *op;
    int64_t since;
    const char *why;
} s_changed[] = {
    {"Scan", 8, "Scan first appeared in opset 8"},
};

/* The ops of other domains than ai.onnx that gexec runs (com.microsoft's
 * through their lowering in s_ms_lowerings when they have one, the others
 * under the gexec op of their name), in the versions of their domain's opset from
 * first_version to last_version. ai.onnx.ml: docs/onnx.md, "Other
 * domains"; the forms of its older opsets the schemas take as they are
 * (LabelEncoder's classes_strings of opset 1, keys_ and values_ lists of
 * 2, tensors of 4, the trees' *_as_tensor of 3); s_ml_node refuses the ops
 * of maps by name. */
static const struct {
    const char *domain, *op;
    int64_t first_version, last_version;
} s_other_ops[] = {
    {"ai.onnx.preview.training", "Adagrad", 1, 1},
    {"ai.onnx.preview.training", "Adam", 1, 1},
    {"ai.onnx.preview.training", "Momentum", 1, 1},
    {"com.microsoft", "FusedConv", 1, 1},
    {"com.microsoft", "FusedGemm", 1, 1},
    {"com.microsoft", "FusedMatMul", 1, 1},
    {"com.microsoft", "Gelu", 1, 1},
    {"com.microsoft", "FastGelu", 1, 1},
    {"com.microsoft", "BiasGelu", 1, 1},
    {"com.microsoft", "QuickGelu", 1, 1},
    {"com.microsoft", "BiasAdd", 1, 1},
    {"com.microsoft", "SkipLayerNormalization", 1, 1},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1},
    {"com.microsoft", "LayerNormalization", 1, 1},
    {"com.microsoft", "SimplifiedLayerNormalization", 1, 1},
    {"com.microsoft", "DynamicQuantizeMatMul", 1, 1},
    {"com.microsoft", "QLinearConv", 1, 1},
    {"com.microsoft", "QLinearAdd", 1, 1},
    {"com.microsoft", "QLinearMul", 1, 1},
    {"com.microsoft", "QLinearSigmoid", 1, 1},
    {"com.microsoft", "QLinearLeakyRelu", 1, 1},
    {"com.microsoft", "QLinearGlobalAveragePool", 1, 1},
    {"com.microsoft", "QLinearConcat", 1, 1},
    {"com.microsoft", "NhwcMaxPool", 1, 1},
    {"com.microsoft", "Attention", 1, 1},
    {"com.microsoft", "MultiHeadAttention", 1, 1},
    {"com.microsoft", "MatMulNBits", 1, 1},
    {"com.microsoft", "RotaryEmbedding", 1, 1},
    {"com.microsoft", "GemmFastGelu", 1, 1},
    {"com.microsoft", "GroupQueryAttention", 1, 1},
    {"com.microsoft", "EmbedLayerNormalization", 1, 1},
    {"com.microsoft.nchwc", "Conv", 1, 1},
    {"com.microsoft.nchwc", "ReorderInput", 1, 1},
    {"com.microsoft.nchwc", "ReorderOutput", 1, 1},
    {"com.microsoft.nchwc", "MaxPool", 1, 1},
    {"com.microsoft.nchwc", "AveragePool", 1, 1},
    {"com.microsoft.nchwc", "GlobalMaxPool", 1, 1},
    {"com.microsoft.nchwc", "GlobalAveragePool", 1, 1},
    {"com.microsoft.nchwc", "Upsample", 1, 1},
    {"ai.onnx.ml", "LabelEncoder", 1, 5},
    {"ai.onnx.ml", "Scaler", 1, 5},
    {"ai.onnx.ml", "Normalizer", 1, 5},
    {"ai.onnx.ml", "Binarizer", 1, 5},
    {"ai.onnx.ml", "Imputer", 1, 5},
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, 5},
    {"ai.onnx.ml", "OneHotEncoder", 1, 5},
    {"ai.onnx.ml", "FeatureVectorizer", 1, 5},
    {"ai.onnx.ml", "LinearRegressor", 1, 5},
    {"ai.onnx.ml", "LinearClassifier", 1, 5},
    {"ai.onnx.ml", "TreeEnsembleRegressor", 1, 5},
    {"ai.onnx.ml", "TreeEnsembleClassifier", 1, 5},
    {"ai.onnx.ml", "TreeEnsemble", 5, 5},
    {"ai.onnx.ml", "SVMRegressor", 1, 5},
    {"ai.onnx.ml", "SVMClassifier", 1, 5},
    {"ai.onnx.ml", "CategoryMapper", 1, 5},
};

/* An ai.onnx.ml node's forms gexec does not run, refused with what to do
 * instead; GX_OK for the others. */
static int s_ml_node(s_ctx *c, const char *op, const char *path)
{
    if (strcmp(op, "ZipMap") == 0)
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "ZipMap is not supported: it outputs a sequence of maps, a type gexec does "
                      "not have; export the model without ZipMap (sklearn-onnx: options "
                      "{'zipmap': False}) and read the probabilities tensor");
    if (strcmp(op, "DictVectorizer") == 0 || strcmp(op, "CastMap") == 0)
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "%s is not supported: it takes a map, a type gexec does not have; feed "
                      "the values as a tensor (a DictVectorizer's as its [N, C] output)",
                      op);
    return GX_OK;
}

/* One node. node_names holds the graph's node names (explicit and made). */
static int s_node(s_ctx *c, gx_graph *g, const Onnx__NodeProto *np, size_t idx,
                  const char *gpath, int depth, s_set *node_names)
{
    char path[640];
    const char *op = s_str(np->op_type), *name = s_str(np->name), *dom = s_str(np->domain);
    if (*name)
        snprintf(path, sizeof path, "%.400s.node[%zu] (%.60s '%.100s')", gpath, idx, op, name);
    else
        snprintf(path, sizeof path, "%.400s.node[%zu] (%.60s)", gpath, idx, op);
    if (!*op)
        return s_fail(c, GX_EFORMAT, path, "node without an op_type");
    bool other = *dom && strcmp(dom, "ai.onnx") != 0;
    if (other) {
        const s_domain *d = s_domain_find(c, dom);
        bool dom_known = false, op_known = false;
        for (size_t i = 0; i < sizeof s_other_ops / sizeof s_other_ops[0]; i++)
            if (strcmp(dom, s_other_ops[i].domain) == 0) {
                dom_known = true;
                op_known = op_known || (strcmp(op, s_other_ops[i].op) == 0 && d &&
                                        d->version >= s_other_ops[i].first_version &&
                                        d->version <= s_other_ops[i].last_version);
            }
        char ver[64] = "the model does not import it";
        if (d)
            snprintf(ver, sizeof ver, "opset %" PRId64 " imported", d->version);
        if (!dom_known)
            return s_fail(c, GX_EUNSUPPORTED, path,
                          "operator domain '%.100s' is not supported (op '%.60s', %s; gexec runs "
                          "the ai.onnx ops)",
                          dom, op, ver);
        int rc = strcmp(dom, "ai.onnx.ml") == 0 ? s_ml_node(c, op, path) : GX_OK;
        if (rc < 0)
            return rc;
        if (!op_known)
            return s_fail(c, GX_EUNSUPPORTED, path,
                          "op '%.60s' of domain '%.100s' is not supported (%s; docs/onnx.md "
                          "lists the ops and versions gexec runs of that domain)",
                          op, dom, ver);
    }
    if (!other && !c->has_opset)
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "op '%.60s' of ai.onnx, but the model imports no ai.onnx opset", op);
    /* the ops of ai.onnx.ml and ai.onnx.preview.training (no ai.onnx op
     * has their names) are gexec ops too: an ai.onnx node naming one is
     * refused rather than run as the other domain's */
    for (size_t i = 0; !other && i < sizeof s_other_ops / sizeof s_other_ops[0]; i++)
        if (strcmp(op, s_other_ops[i].op) == 0 &&
            strncmp(s_other_ops[i].domain, "ai.onnx.", 8) == 0)
            return s_fail(c, GX_EUNSUPPORTED, path,
                          "op '%.60s' is not an ai.onnx op (the node's domain is %s): it is an op "
                          "of domain '%s'; set the node's domain",
                          op, *dom ? "'ai.onnx'" : "empty, ai.onnx", s_other_ops[i].domain);
    if (!other && strcmp(op, "RegexFullMatch") == 0) /* docs/strings.md */
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "RegexFullMatch is not supported: gexec has no regular expression engine "
                      "with RE2's semantics");
    if (!other && (c->opset < S_OPSET_MIN || c->opset > S_OPSET_MAX))
        return s_fail(c, GX_EUNSUPPORTED, path,
                      "ai.onnx opset %" PRId64 " is not supported (gexec reads opsets %d to %d)",
                      c->opset, S_OPSET_MIN, S_OPSET_MAX);
    for (size_t i = 0; i < np->n_input; i++)
        if (!np->input[i])
            return s_fail(c, GX_EFORMAT, path, "input %zu has no name", i);
    for (size_t i = 0; i < np->n_output; i++)
        if (!np->output[i])
            return s_fail(c, GX_EFORMAT, path, "output %zu has no name", i);
    if (np->n_attribute > S_MAX_ATTRS)
        return s_fail(c, GX_ELIMIT, path, "%zu attributes (at most %d)", np->n_attribute,
                      S_MAX_ATTRS);
    for (size_t i = 0; i < np->n_attribute; i++)
        if (!np->attribute[i])
            return s_fail(c, GX_EFORMAT, path, "attribute %zu is empty", i);
    if (strcmp(op, "Constant") == 0)
        return s_constant(c, g, np, path);
    for (size_t i = 0; i < sizeof s_changed / sizeof s_changed[0]; i++)
        if (strcmp(op, s_changed[i].op) == 0 && c->opset < s_changed[i].since)
            return s_fail(c, GX_EUNSUPPORTED, path,
                          "%s of opset %" PRId64 " is not supported (%s); gexec runs opset %" PRId64
                          " and later",
                          op, c->opset, s_changed[i].why, s_changed[i].since);

    s_emit e = {.c = c, .g = g, .np = np, .path = path, .depth = depth,
                .node_names = node_names, .op = op, .n_in = np->n_input};
    /* Omitted optional outputs: trailing ones are dropped, others get a
     * fresh name nothing reads. */
    e.n_out = np->n_output;
    while (e.n_out && !*np->output[e.n_out - 1])
        e.n_out--;
    e.in = calloc(np->n_input + 2, sizeof *e.in);
    e.out = calloc(e.n_out + 2, sizeof *e.out);
    int rc = GX_OK;
    if (!e.in || !e.out)
        rc = s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < np->n_input && rc == GX_OK; i++)
        e.in[i] = np->input[i];
    for (size_t i = 0; i < e.n_out && rc == GX_OK; i++) {
        e.out[i] = np->output[i];
        while (!*e.out[i] && rc == GX_OK) {
            char *fresh = s_own(c, "gx_unused_%zu", c->n_unused++);
            if (fresh && s_set_has(&c->values, fresh))
                continue; /* the model uses that name: try the next */
            if (!fresh || !s_set_add(&c->values, fresh))
                rc = s_fail(c, GX_ENOMEM, path, "out of memory");
            else
                e.out[i] = fresh;
        }
    }
    /* Nodes without a name get "<op>_<index>", made unique in the graph. */
    if (rc == GX_OK && !*name) {
        char *fresh = s_own(c, "%.100s_%zu", op, idx);
        for (unsigned k = 1; fresh && s_set_has(node_names, fresh); k++)
            fresh = s_own(c, "%.100s_%zu_%u", op, idx, k);
        if (!fresh || !s_set_add(node_names, fresh))
            rc = s_fail(c, GX_ENOMEM, path, "out of memory");
        name = fresh;
    }
    e.name = name;
    /* consumed_inputs (opsets 1-5) was an in-place hint of no meaning */
    if (!other && c->opset < 7)
        s_skip(&e, "consumed_inputs");
    /* the trees' nodes_hitrates are a hint for reordering, of no meaning */
    if (other && strncmp(op, "TreeEnsemble", 12) == 0) {
        s_skip(&e, "nodes_hitrates");
        s_skip(&e, "nodes_hitrates_as_tensor");
    }
    int (*fn)(s_emit *) = NULL;
    for (size_t i = 0; other && strcmp(dom, "com.microsoft") == 0 &&
                       i < sizeof s_ms_lowerings / sizeof s_ms_lowerings[0] && !fn; i++)
        if (strcmp(op, s_ms_lowerings[i].op) == 0)
            fn = s_ms_lowerings[i].fn;
    for (size_t i = 0; other && strcmp(dom, "com.microsoft.nchwc") == 0 &&
                       i < sizeof s_nchwc_lowerings / sizeof s_nchwc_lowerings[0] && !fn; i++)
        if (strcmp(op, s_nchwc_lowerings[i].op) == 0)
            fn = s_nchwc_lowerings[i].fn;
    for (size_t i = 0; !other && i < sizeof s_convs / sizeof s_convs[0] && !fn; i++)
        if (strcmp(op, s_convs[i].op) == 0 && c->opset >= s_convs[i].from &&
            c->opset < s_convs[i].below)
            fn = s_convs[i].fn;
    if (rc == GX_OK)
        rc = fn ? fn(&e) : s_emit_node(&e, NULL);
    free(e.in);
    free(e.out);
    return rc;
}

/* ---- model-local functions ---------------------------------------------- */

/* A node calling one of the model's functions (ModelProto.functions) is
 * replaced by the function's body, as ONNX Runtime inlines it: the body's
 * inputs and outputs become the caller's, every other name of the body
 * gets the caller's name in front ("layer1/t3", made unique), attributes
 * referring to the function's (ref_attr_name) take the caller's value, else
 * the function's default, else are left out, and the body's nodes are read
 * with the opsets the function imports. A body node may call a function in
 * turn (S_MAX_FN_DEPTH deep); a body node's subgraphs (an If in a
 * function) are copied with the body's names they use renamed. */

/* The k-th length-delimited field numbered num of m that the generated
 * code does not know (fields newer than Debian's onnx.proto:
 * FunctionProto.attribute_proto is 11 and .overload 13, NodeProto.overload
 * 8); false if there is none. */
static bool s_unknown_field(const ProtobufCMessage *m, uint32_t num, size_t k,
                            ProtobufCBinaryData *out)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *f = &m->unknown_fields[i];
        if (f->tag != num || f->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED || k-- != 0)
            continue;
        /* protobuf-c keeps the length prefix in data */
        const uint8_t *p = f->data, *end = f->data + f->len;
        uint64_t len;
        if (!s_varint(&p, end, &len) || len != (uint64_t)(end - p))
            return false;
        *out = (ProtobufCBinaryData){.len = (size_t)len, .data = (uint8_t *)p};
        return true;
    }
    return false;
}

/* The function np calls (same domain, name and overload), or NULL. */
static const Onnx__FunctionProto *s_function_find(const s_ctx *c, const Onnx__NodeProto *np)
{
    ProtobufCBinaryData want = {0}, have;
    s_unknown_field(&np->base, 8, 0, &want);
    for (size_t i = 0; i < c->n_functions; i++) {
        const Onnx__FunctionProto *f = c->functions[i];
        if (!f || strcmp(s_str(f->name), s_str(np->op_type)) != 0 ||
            strcmp(s_str(f->domain), s_str(np->domain)) != 0)
            continue;
        have = (ProtobufCBinaryData){0};
        s_unknown_field(&f->base, 13, 0, &have);
        if (have.len == want.len && (!want.len || memcmp(have.data, want.data, want.len) == 0))
            return f;
    }
    return NULL;
}

/* One call being inlined: the body's names and what they became. */
typedef struct s_call {
    const char *label; /* the caller's name, in front of the body's names */
    struct {
        const char *from, *to;
    } *map;
    size_t n, cap;
    Onnx__AttributeProto **defaults; /* the function's attribute defaults */
    size_t n_defaults;
    void **mem; /* the copies of body nodes and subgraphs, freed with the call */
    size_t n_mem, cap_mem;
} s_call;

/* n zeroed elements of size, freed with the call; NULL on ENOMEM. */
static void *s_call_alloc(s_call *k, size_t n, size_t size)
{
    void *p = calloc(n + 1, size);
    if (!p || !gx_grow(&k->mem, &k->cap_mem, k->n_mem + 1, sizeof *k->mem)) {
        free(p);
        return NULL;
    }
    return k->mem[k->n_mem++] = p;
}

static bool s_call_map(s_call *k, const char *from, const char *to)
{
    if (!gx_grow(&k->map, &k->cap, k->n + 1, sizeof *k->map))
        return false;
    k->map[k->n].from = from;
    k->map[k->n++].to = to;
    return true;
}

/* What the body's name `from` is in the caller's graph (a new name the
 * first time); NULL on ENOMEM. */
static const char *s_call_name(s_ctx *c, s_call *k, const char *from)
{
    if (!*from)
        return from; /* an omitted optional input or output */
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->map[i].from, from) == 0)
            return k->map[i].to;
    char *to = s_own(c, "%.200s/%.200s", k->label, from);
    for (unsigned u = 2; to && s_set_has(&c->values, to); u++)
        to = s_own(c, "%.200s/%.200s#%u", k->label, from, u);
    if (!to || !s_set_add(&c->values, to) || !s_call_map(k, from, to))
        return NULL;
    return to;
}

/* What the body's name `from` became, or itself (a subgraph's own). */
static const char *s_call_lookup(const s_call *k, const char *from)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->map[i].from, from) == 0)
            return k->map[i].to;
    return from;
}

static void s_call_fini(s_call *k)
{
    for (size_t i = 0; i < k->n_mem; i++)
        free(k->mem[i]);
    free(k->mem);
    for (size_t i = 0; i < k->n_defaults; i++)
        protobuf_c_message_free_unpacked(&k->defaults[i]->base, NULL);
    free(k->defaults);
    free(k->map);
}

/* The function's attribute defaults (attribute_proto, IR version 9). */
static int s_call_defaults(s_ctx *c, s_call *k, const Onnx__FunctionProto *f, const char *path)
{
    ProtobufCBinaryData b = {0};
    size_t n = 0;
    while (n <= S_MAX_ATTRS && s_unknown_field(&f->base, 11, n, &b))
        n++; /* each lookup walks the fields: stop past the limit */
    if (n > S_MAX_ATTRS)
        return s_fail(c, GX_ELIMIT, path, "%zu attribute defaults (at most %d)", n, S_MAX_ATTRS);
    if (n && !(k->defaults = calloc(n, sizeof *k->defaults)))
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc;
        s_unknown_field(&f->base, 11, i, &b);
        ProtobufCMessage *m = s_decode(c, b.data, b.len, &onnx__attribute_proto__descriptor, &rc);
        if (!m)
            return s_fail(c, rc, path, "attribute default %zu: %s", i, c->last);
        k->defaults[k->n_defaults++] = (Onnx__AttributeProto *)m;
    }
    return GX_OK;
}

/* Attribute a of a body node as the call gives it: itself, or (a reference
 * to the function's attribute) the caller's or the default's value under
 * a's name in *tmp; NULL when the reference has neither. */
static const Onnx__AttributeProto *s_call_attr(const s_call *k, const Onnx__NodeProto *caller,
                                               const Onnx__AttributeProto *a,
                                               Onnx__AttributeProto *tmp)
{
    if (!a->ref_attr_name || !*a->ref_attr_name)
        return a;
    const Onnx__AttributeProto *v = NULL;
    for (size_t i = 0; i < caller->n_attribute && !v; i++)
        if (caller->attribute[i] && caller->attribute[i]->name &&
            strcmp(caller->attribute[i]->name, a->ref_attr_name) == 0)
            v = caller->attribute[i];
    for (size_t i = 0; i < k->n_defaults && !v; i++)
        if (k->defaults[i]->name && strcmp(k->defaults[i]->name, a->ref_attr_name) == 0)
            v = k->defaults[i];
    if (!v)
        return NULL;
    *tmp = *v;
    tmp->name = a->name;
    return tmp;
}

/* Opset imports list[0..n) into c: the ai.onnx version, the other domains
 * appended to doms[*nd...]. */
static int s_opset_list(s_ctx *c, Onnx__OperatorSetIdProto *const *list, size_t n,
                        const char *path, s_domain *doms, size_t *nd)
{
    for (size_t i = 0; i < n; i++) {
        const Onnx__OperatorSetIdProto *o = list[i];
        if (!o)
            return s_fail(c, GX_EFORMAT, path, "opset_import %zu is empty", i);
        const char *dom = s_str(o->domain);
        int64_t v = o->has_version ? o->version : 0;
        if (!*dom || strcmp(dom, "ai.onnx") == 0) {
            c->has_opset = true;
            c->opset = v;
        } else {
            doms[(*nd)++] = (s_domain){.name = dom, .version = v};
        }
    }
    return GX_OK;
}

/* The opsets a function's body is read with: its own imports, then the
 * model's domains it does not name. The caller restores c's. */
static int s_call_opsets(s_ctx *c, const Onnx__FunctionProto *f, const char *path,
                         s_domain **doms)
{
    if (!f->n_opset_import)
        return GX_OK;
    if (!(*doms = calloc(f->n_opset_import + c->n_domains + 1, sizeof **doms)))
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    size_t nd = 0;
    int rc = s_opset_list(c, f->opset_import, f->n_opset_import, path, *doms, &nd);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < c->n_domains; i++) {
        bool named = false;
        for (size_t j = 0; j < nd && !named; j++)
            named = strcmp((*doms)[j].name, c->domains[i].name) == 0;
        if (!named)
            (*doms)[nd++] = c->domains[i];
    }
    c->domains = *doms;
    c->n_domains = nd;
    return GX_OK;
}

static int s_node_or_call(s_ctx *c, gx_graph *g, const Onnx__NodeProto *np, size_t idx,
                          const char *gpath, int depth, s_set *node_names, int level);

static int s_call_copy(s_ctx *c, s_call *k, const Onnx__NodeProto *caller,
                       const Onnx__NodeProto *b, bool top, Onnx__NodeProto *n,
                       const char *path);

/* Subgraph gp of a body node as the call makes it (*out): its nodes by
 * s_call_copy, its outputs renamed where they name the body's values. */
static int s_call_graph(s_ctx *c, s_call *k, const Onnx__NodeProto *caller,
                        const Onnx__GraphProto *gp, Onnx__GraphProto **out, const char *path)
{
    if (gp->n_node > S_MAX_INLINED - c->n_inlined)
        return s_fail(c, GX_ELIMIT, path,
                      "the model's function calls add more than %zu nodes", S_MAX_INLINED);
    c->n_inlined += gp->n_node;
    Onnx__GraphProto *ng = s_call_alloc(k, 1, sizeof *ng);
    if (!ng)
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    *ng = *gp;
    ng->node = s_call_alloc(k, gp->n_node, sizeof *ng->node);
    ng->output = s_call_alloc(k, gp->n_output, sizeof *ng->output);
    if (!ng->node || !ng->output)
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < gp->n_node; i++) {
        if (!gp->node[i])
            continue; /* s_graph reports it */
        if (!(ng->node[i] = s_call_alloc(k, 1, sizeof *ng->node[i])))
            return s_fail(c, GX_ENOMEM, path, "out of memory");
        int rc = s_call_copy(c, k, caller, gp->node[i], false, ng->node[i], path);
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi || !vi->name)
            continue;
        if (!(ng->output[i] = s_call_alloc(k, 1, sizeof *ng->output[i])))
            return s_fail(c, GX_ENOMEM, path, "out of memory");
        *ng->output[i] = *vi;
        ng->output[i]->name = (char *)s_call_lookup(k, vi->name);
    }
    *out = ng;
    return GX_OK;
}

/* Body node b as the call makes it (*n, its arrays the call's): the
 * body's own level (top) gets the body's names through the call's map,
 * new ones with the caller's name in front; inside a subgraph only the
 * body's names change (the subgraph's own stay). Attributes referring to
 * the function's take the call's values; subgraphs are copied likewise. */
static int s_call_copy(s_ctx *c, s_call *k, const Onnx__NodeProto *caller,
                       const Onnx__NodeProto *b, bool top, Onnx__NodeProto *n, const char *path)
{
    *n = *b;
    n->input = s_call_alloc(k, b->n_input, sizeof *n->input);
    n->output = s_call_alloc(k, b->n_output, sizeof *n->output);
    n->attribute = s_call_alloc(k, b->n_attribute, sizeof *n->attribute);
    n->n_attribute = 0;
    if (!n->input || !n->output || !n->attribute)
        return s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < b->n_input; i++)
        if (b->input[i] && !(n->input[i] = (char *)(top ? s_call_name(c, k, b->input[i])
                                                        : s_call_lookup(k, b->input[i]))))
            return s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < b->n_output; i++)
        if (b->output[i] &&
            !(n->output[i] = (char *)(top ? s_call_name(c, k, b->output[i]) : b->output[i])))
            return s_fail(c, GX_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < b->n_attribute; i++) {
        const Onnx__AttributeProto *a = b->attribute[i];
        Onnx__AttributeProto *na = s_call_alloc(k, 1, sizeof *na);
        if (!na)
            return s_fail(c, GX_ENOMEM, path, "out of memory");
        if (!a) {
            n->attribute[n->n_attribute++] = NULL; /* s_node reports it */
            continue;
        }
        if (!(a = s_call_attr(k, caller, a, na)))
            continue; /* neither given nor defaulted: left out */
        if (a != na)
            *na = *a;
        Onnx__GraphProto *const g = na->g, *const *const gs = na->graphs;
        int rc = g ? s_call_graph(c, k, caller, g, &na->g, path) : GX_OK;
        if (rc == GX_OK && na->n_graphs &&
            !(na->graphs = s_call_alloc(k, na->n_graphs, sizeof *na->graphs)))
            rc = s_fail(c, GX_ENOMEM, path, "out of memory");
        for (size_t j = 0; j < na->n_graphs && rc == GX_OK; j++)
            rc = gs[j] ? s_call_graph(c, k, caller, gs[j], &na->graphs[j], path) : GX_OK;
        if (rc < 0)
            return rc;
        n->attribute[n->n_attribute++] = na;
    }
    return GX_OK;
}

/* Body node b of call k as a node of the caller's graph, read by s_node
 * (or inlined in turn). */
static int s_call_node(s_ctx *c, gx_graph *g, s_call *k, const Onnx__NodeProto *caller,
                       const Onnx__NodeProto *b, size_t idx, const char *path, int depth,
                       s_set *node_names, int level)
{
    Onnx__NodeProto n;
    int rc = s_call_copy(c, k, caller, b, true, &n, path);
    /* the node's name: the caller's in front, unique in the graph */
    const char *base = b->name && *b->name ? b->name : s_own(c, "%.60s_%zu", s_str(b->op_type), idx);
    char *name = base ? s_own(c, "%.200s/%.200s", k->label, base) : NULL;
    for (unsigned u = 2; name && s_set_has(node_names, name); u++)
        name = s_own(c, "%.200s/%.200s#%u", k->label, base, u);
    if (rc == GX_OK && (!name || !s_set_add(node_names, name)))
        rc = s_fail(c, GX_ENOMEM, path, "out of memory");
    n.name = name;
    if (rc == GX_OK)
        rc = s_collect(c, s_node_or_call(c, g, &n, idx, path, depth, node_names, level + 1));
    return rc;
}

/* np calls f: f's body into g (see above). */
static int s_inline(s_ctx *c, gx_graph *g, const Onnx__NodeProto *np,
                    const Onnx__FunctionProto *f, size_t idx, const char *gpath, int depth,
                    s_set *node_names, int level)
{
    char path[640];
    const char *name = s_str(np->name);
    snprintf(path, sizeof path, "%.400s.node[%zu] (%.60s '%.100s'): function '%.60s'", gpath,
             idx, s_str(np->op_type), name, s_str(f->name));
    if (level >= S_MAX_FN_DEPTH)
        return s_fail(c, GX_ELIMIT, path,
                      "functions called more than %d deep (does a function call itself?)",
                      S_MAX_FN_DEPTH);
    if (np->n_input > f->n_input || np->n_output > f->n_output)
        return s_fail(c, GX_EFORMAT, path,
                      "%zu inputs and %zu outputs for a function of %zu and %zu", np->n_input,
                      np->n_output, f->n_input, f->n_output);
    if (f->n_node > S_MAX_INLINED - c->n_inlined)
        return s_fail(c, GX_ELIMIT, path,
                      "the model's function calls add more than %zu nodes", S_MAX_INLINED);
    c->n_inlined += f->n_node;
    s_call k = {.label = *name ? name : s_own(c, "%.60s_%zu", s_str(f->name), c->n_calls)};
    c->n_calls++;
    int rc = k.label ? GX_OK : s_fail(c, GX_ENOMEM, path, "out of memory");
    /* the body's inputs and outputs are the caller's */
    for (size_t i = 0; i < f->n_input + f->n_output && rc == GX_OK; i++) {
        bool in = i < f->n_input;
        size_t j = in ? i : i - f->n_input;
        const char *formal = in ? f->input[j] : f->output[j];
        const char *actual = in ? (j < np->n_input ? np->input[j] : "")
                                : (j < np->n_output ? np->output[j] : "");
        if (!formal || !*formal || !actual)
            rc = s_fail(c, GX_EFORMAT, path, "%s %zu has no name", in ? "input" : "output", j);
        else if ((in || *actual) && !s_call_map(&k, formal, actual))
            rc = s_fail(c, GX_ENOMEM, path, "out of memory");
    }
    if (rc == GX_OK)
        rc = s_call_defaults(c, &k, f, path);
    bool has_opset = c->has_opset;
    int64_t opset = c->opset;
    s_domain *domains = c->domains, *doms = NULL;
    size_t n_domains = c->n_domains;
    if (rc == GX_OK)
        rc = s_call_opsets(c, f, path, &doms);
    for (size_t i = 0; i < f->n_node && rc == GX_OK; i++)
        rc = f->node[i] ? s_call_node(c, g, &k, np, f->node[i], i, path, depth, node_names, level)
                        : s_fail(c, GX_EFORMAT, path, "node %zu is empty", i);
    c->has_opset = has_opset;
    c->opset = opset;
    c->domains = domains;
    c->n_domains = n_domains;
    free(doms);
    s_call_fini(&k);
    return rc;
}

/* np, or the body of the function it calls. */
static int s_node_or_call(s_ctx *c, gx_graph *g, const Onnx__NodeProto *np, size_t idx,
                          const char *gpath, int depth, s_set *node_names, int level)
{
    const Onnx__FunctionProto *f = c->n_functions ? s_function_find(c, np) : NULL;
    return f ? s_inline(c, g, np, f, idx, gpath, depth, node_names, level)
             : s_node(c, g, np, idx, gpath, depth, node_names);
}

/* gp into a new graph (*out). Entries with missing features are collected
 * (then *out is NULL and GX_OK returned, unless another error ends it). */
static int s_graph(s_ctx *c, const Onnx__GraphProto *gp, const char *path, int depth, bool top,
                   gx_graph **out)
{
    char epath[640];
    s_set inits = {0}, node_names = {0};
    size_t issues = c->n_issues;
    int rc = GX_OK;
    *out = NULL;
    gx_graph *g = gx_graph_new(gp->name && *gp->name ? gp->name : NULL);
    if (!g)
        return s_fail(c, GX_ENOMEM, path, "out of memory");

    if (gp->n_sparse_initializer)
        rc = s_collect(c, s_fail(c, GX_EUNSUPPORTED, path, "sparse initializers are not supported"));
    for (size_t i = 0; i < gp->n_initializer && rc == GX_OK; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        gx_tensor *t = NULL;
        snprintf(epath, sizeof epath, "%.400s.initializer[%zu]", path, i);
        if (!tp || !tp->name || !*tp->name) {
            rc = s_fail(c, GX_EFORMAT, epath, "initializer without a name");
            break;
        }
        snprintf(epath, sizeof epath, "%.400s.initializer[%zu] '%.100s'", path, i, tp->name);
        if (!s_set_add(&inits, tp->name))
            rc = s_fail(c, GX_ENOMEM, epath, "out of memory");
        else if ((rc = s_collect(c, s_tensor(c, tp, epath, &t))) == GX_OK && t &&
                 (rc = gx_graph_add_const(g, tp->name, &t)) < 0)
            rc = s_fail(c, rc, epath, "cannot add constant: %s", gx_strerror(rc));
    }
    for (size_t i = 0; i < gp->n_input && rc == GX_OK; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        snprintf(epath, sizeof epath, "%.400s.input[%zu]", path, i);
        if (!vi || !vi->name || !*vi->name)
            rc = s_fail(c, GX_EFORMAT, epath, "input without a name");
        else if (!s_set_has(&inits, vi->name)) /* an initializer's default: a constant */
            rc = s_collect(c, s_decl(c, g, vi, epath, true, top));
    }
    for (size_t i = 0; i < gp->n_node && rc == GX_OK; i++)
        if (gp->node[i] && gp->node[i]->name && *gp->node[i]->name &&
            !s_set_add(&node_names, gp->node[i]->name))
            rc = s_fail(c, GX_ENOMEM, path, "out of memory");
    const Onnx__GraphProto *outer = c->graph;
    for (size_t i = 0; i < gp->n_node && rc == GX_OK; i++) {
        c->graph = gp;
        if (!gp->node[i])
            rc = s_fail(c, GX_EFORMAT, path, "node %zu is empty", i);
        else
            rc = s_collect(c, s_node_or_call(c, g, gp->node[i], i, path, depth, &node_names, 0));
    }
    c->graph = outer;
    for (size_t i = 0; i < gp->n_output && rc == GX_OK; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        snprintf(epath, sizeof epath, "%.400s.output[%zu]", path, i);
        if (!vi || !vi->name || !*vi->name)
            rc = s_fail(c, GX_EFORMAT, epath, "output without a name");
        else
            rc = s_collect(c, s_decl(c, g, vi, epath, false, top));
    }
    s_set_fini(&inits);
    s_set_fini(&node_names);
    if (rc < 0 || c->n_issues > issues)
        gx_graph_destroy(&g);
    *out = g;
    return rc;
}

/* Every opset_import entry is accepted and recorded: nodes are judged by
 * their own domain and its version (s_node), so an import no node uses
 * costs nothing. A model older than IR version 3 without imports uses
 * ai.onnx opset 1. */
static int s_opsets(s_ctx *c, const Onnx__ModelProto *m)
{
    if (!(c->domains = calloc(m->n_opset_import + 1, sizeof *c->domains)))
        return s_fail(c, GX_ENOMEM, "opset_import", "out of memory");
    int rc = s_opset_list(c, m->opset_import, m->n_opset_import, "", c->domains, &c->n_domains);
    if (rc < 0)
        return rc;
    if (!m->n_opset_import && m->has_ir_version && m->ir_version < 3) {
        c->has_opset = true;
        c->opset = 1;
    }
    return GX_OK;
}

static void s_ctx_fini(s_ctx *c)
{
    for (size_t i = 0; i < c->n_owned; i++)
        free(c->owned[i]);
    free(c->owned);
    s_set_fini(&c->values);
    free(c->domains);
}

static int s_parse_model(const void *buf, size_t len, const char *base_dir, const char *src,
                         gx_graph **out, char *err, size_t errlen)
{
    s_ctx c = {.src = src, .base_dir = base_dir};
    int rc;
    Onnx__ModelProto *m =
        (Onnx__ModelProto *)s_decode(&c, buf, len, &onnx__model_proto__descriptor, &rc);
    if (!m)
        return s_report(&c, rc, err, errlen);
    c.main = m->graph;
    c.functions = m->functions;
    c.n_functions = m->n_functions;
    if (!m->graph)
        rc = s_fail(&c, GX_EFORMAT, NULL, "the model has no graph");
    else if ((rc = s_opsets(&c, m)) == GX_OK) {
        if (!s_gather_values(&c, m->graph, 0))
            rc = s_fail(&c, GX_ENOMEM, NULL, "out of memory");
        else
            rc = s_graph(&c, m->graph, "graph", 0, true, out);
    }
    if (rc < 0 || c.n_issues) {
        gx_graph_destroy(out);
        rc = s_report(&c, rc, err, errlen);
    }
    protobuf_c_message_free_unpacked(&m->base, NULL);
    s_ctx_fini(&c);
    return rc;
}

static int s_parse_tensor(const void *buf, size_t len, const char *base_dir, const char *src,
                          gx_tensor **out, char *err, size_t errlen)
{
    s_ctx c = {.src = src, .base_dir = base_dir};
    int rc;
    Onnx__TensorProto *tp =
        (Onnx__TensorProto *)s_decode(&c, buf, len, &onnx__tensor_proto__descriptor, &rc);
    if (!tp)
        return s_report(&c, rc, err, errlen);
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s'", s_str(tp->name));
    rc = s_tensor(&c, tp, what, out);
    if (rc < 0)
        rc = s_report(&c, rc, err, errlen);
    protobuf_c_message_free_unpacked(&tp->base, NULL);
    s_ctx_fini(&c);
    return rc;
}

/* ---- files -------------------------------------------------------------- */

/* The whole file (at most S_MAX_FILE bytes) and its directory. */
static int s_read_file(const char *path, void **buf, size_t *len, char **dir, char *err,
                       size_t errlen)
{
    *buf = NULL;
    *dir = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc = GX_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: not a regular file", path);
        goto close_fd;
    }
    if ((uint64_t)st.st_size > S_MAX_FILE) {
        rc = gx_errf(err, errlen, GX_ELIMIT, "%s: %lld bytes; protobuf messages are at most %zu",
                     path, (long long)st.st_size, S_MAX_FILE);
        goto close_fd;
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *p = malloc(size ? size : 1);
    if (!p) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
        goto close_fd;
    }
    while (got < size) {
        ssize_t n = read(fd, p + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(p);
            rc = gx_errf(err, errlen, GX_EIO, "%s: %s", path, n < 0 ? strerror(errno) : "file shrank");
            goto close_fd;
        }
        got += (size_t)n;
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        *dir = gx_strdup(".");
    else if (slash == path)
        *dir = gx_strdup("/");
    else if ((*dir = malloc((size_t)(slash - path) + 1)) != NULL) {
        memcpy(*dir, path, (size_t)(slash - path));
        (*dir)[slash - path] = '\0';
    }
    if (!*dir) {
        free(p);
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
        goto close_fd;
    }
    *buf = p;
    *len = size;
close_fd:
    close(fd);
    return rc;
}

GX_EXPORT int gx_graph_parse_onnx(const void *buf, size_t len, const char *base_dir,
                                  gx_graph **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_parse_onnx: no output graph");
    *out = NULL;
    if (!buf && len)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_parse_onnx: NULL buffer");
    return s_parse_model(buf ? buf : "", len, base_dir, "<onnx>", out, err, errlen);
}

GX_EXPORT int gx_graph_load_onnx(const char *path, gx_graph **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_onnx: no output graph");
    *out = NULL;
    if (!path)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_onnx: no path");
    void *buf;
    size_t len = 0;
    char *dir;
    int rc = s_read_file(path, &buf, &len, &dir, err, errlen);
    if (rc < 0)
        return rc;
    rc = s_parse_model(buf, len, dir, path, out, err, errlen);
    free(buf);
    free(dir);
    return rc;
}

GX_EXPORT int gx_tensor_parse_onnx(const void *buf, size_t len, gx_tensor **out, char *err,
                                   size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_tensor_parse_onnx: no output tensor");
    *out = NULL;
    if (!buf && len)
        return gx_errf(err, errlen, GX_EINVAL, "gx_tensor_parse_onnx: NULL buffer");
    return s_parse_tensor(buf ? buf : "", len, NULL, "<onnx tensor>", out, err, errlen);
}

/* One field of a protobuf message: its number, wire type, and a varint's
 * value or a length-delimited field's bytes. false at the end or on
 * malformed bytes (*bad then). */
static bool s_pb_field(const uint8_t **p, const uint8_t *end, uint32_t *num, int *wt, uint64_t *v,
                       const uint8_t **bytes, bool *bad)
{
    uint64_t tag, len;
    *bad = false;
    if (*p >= end)
        return false;
    if (!s_varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) {
        *bad = true;
        return false;
    }
    *num = (uint32_t)(tag >> 3);
    *wt = (int)(tag & 7);
    if (*wt == 0)
        return (*bad = !s_varint(p, end, v)) == false;
    if (*wt == 2 && s_varint(p, end, &len) && len <= (uint64_t)(end - *p)) {
        *bytes = *p;
        *v = len;
        *p += len;
        return true;
    }
    if (*wt == 1 || *wt == 5) {
        size_t n = *wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) >= n) {
            *p += n;
            return true;
        }
    }
    *bad = true;
    return false;
}

/* ONNX's SequenceProto / OptionalProto (onnx-data.proto) field numbers and
 * their elem_type codes. */
enum { S_PB_ELEM_TYPE = 2, S_PB_TENSOR = 3, S_PB_OPT_SEQUENCE = 5 };
enum { S_PB_TYPE_TENSOR = 1, S_PB_TYPE_SEQUENCE = 3 };

/* A SequenceProto of tensors, or (optional) an OptionalProto of a tensor
 * or such a sequence, into *out. */
static int s_parse_value(const uint8_t *buf, size_t len, const char *dir, const char *src,
                         bool optional, gx_tensor **out, char *err, size_t errlen)
{
    const uint8_t *p = buf, *end = buf + len, *bytes = NULL;
    uint32_t num;
    int wt, rc = GX_OK;
    uint64_t v;
    bool bad;
    int64_t elem = 0;
    *out = NULL;
    while (rc == GX_OK && s_pb_field(&p, end, &num, &wt, &v, &bytes, &bad)) {
        if (num == S_PB_ELEM_TYPE && wt == 0) {
            elem = (int64_t)v;
        } else if (num == S_PB_TENSOR && wt == 2 && optional) {
            gx_tensor_destroy(out);
            rc = s_parse_tensor(bytes, (size_t)v, dir, src, out, err, errlen);
        } else if (num == S_PB_OPT_SEQUENCE && wt == 2 && optional) {
            gx_tensor_destroy(out);
            rc = s_parse_value(bytes, (size_t)v, dir, src, false, out, err, errlen);
        } else if (num == S_PB_TENSOR && wt == 2) {
            gx_tensor *t = NULL;
            if ((rc = s_parse_tensor(bytes, (size_t)v, dir, src, &t, err, errlen)) < 0)
                break;
            if (!*out && !(*out = gx_sequence_new(t->dtype)))
                rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
            else if ((rc = gx_sequence_append(*out, &t)) < 0)
                rc = gx_errf(err, errlen, rc, "%s: the sequence's tensors differ in dtype", src);
            gx_tensor_destroy(&t);
        } else if (wt == 2 && num >= 4) {
            rc = gx_errf(err, errlen, GX_EUNSUPPORTED,
                         "%s: %s of sparse tensors, maps or optionals are not supported", src,
                         optional ? "an optional" : "a sequence");
        }
    }
    if (rc == GX_OK && bad)
        rc = gx_errf(err, errlen, GX_EFORMAT, "%s: not a valid %s", src,
                     optional ? "OptionalProto" : "SequenceProto");
    if (rc == GX_OK && elem != 0 && elem != S_PB_TYPE_TENSOR &&
        !(optional && elem == S_PB_TYPE_SEQUENCE))
        rc = gx_errf(err, errlen, GX_EUNSUPPORTED, "%s: element type %lld is not supported", src,
                     (long long)elem);
    if (rc == GX_OK && !*out && !(*out = optional ? gx_none_new() : gx_sequence_new(GX_F32)))
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    if (rc < 0)
        gx_tensor_destroy(out);
    return rc;
}

GX_EXPORT int gx_value_load_onnx(const char *path, gx_kind kind, bool optional, gx_tensor **out,
                                 char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_value_load_onnx: no output value");
    *out = NULL;
    if (!path || (kind != GX_KIND_TENSOR && kind != GX_KIND_SEQUENCE))
        return gx_errf(err, errlen, GX_EINVAL, "gx_value_load_onnx: no path or a bad kind");
    void *buf;
    size_t len = 0;
    char *dir;
    int rc = s_read_file(path, &buf, &len, &dir, err, errlen);
    if (rc < 0)
        return rc;
    if (!optional && kind == GX_KIND_TENSOR)
        rc = s_parse_tensor(buf, len, dir, path, out, err, errlen);
    else
        rc = s_parse_value(buf, len, dir, path, optional, out, err, errlen);
    free(buf);
    free(dir);
    return rc;
}

GX_EXPORT int gx_tensor_load_onnx(const char *path, gx_tensor **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_tensor_load_onnx: no output tensor");
    *out = NULL;
    if (!path)
        return gx_errf(err, errlen, GX_EINVAL, "gx_tensor_load_onnx: no path");
    void *buf;
    size_t len = 0;
    char *dir;
    int rc = s_read_file(path, &buf, &len, &dir, err, errlen);
    if (rc < 0)
        return rc;
    rc = s_parse_tensor(buf, len, dir, path, out, err, errlen);
    free(buf);
    free(dir);
    return rc;
}
