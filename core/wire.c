/* The wire codec: see wire.h and docs/protocol.md. */
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"

int gx_wire_check(const void *buf, size_t len, int max_depth, char *err, size_t errlen)
{
    return gx_mp_check(buf, len, max_depth < GX_WIRE_DEPTH_LIMIT ? max_depth : GX_WIRE_DEPTH_LIMIT,
                       err, errlen);
}

int gx_wire_depth_for_nesting(int max_nesting)
{
    if (max_nesting <= 0)
        max_nesting = GX_WIRE_NESTING_DEFAULT;
    if (max_nesting > GX_WIRE_MAX_NESTING)
        max_nesting = GX_WIRE_MAX_NESTING;
    int d = GX_WIRE_DEPTH_FOR_NESTING(max_nesting + 1);
    return d < GX_WIRE_MAX_DEPTH ? GX_WIRE_MAX_DEPTH : d;
}

int gx_wire_unpack_depth(const void *buf, size_t len, int max_depth, msgpack_unpacked *out,
                         char *err, size_t errlen)
{
    return gx_mp_unpack(buf, len, max_depth < GX_WIRE_DEPTH_LIMIT ? max_depth : GX_WIRE_DEPTH_LIMIT,
                        out, err, errlen);
}

int gx_wire_unpack(const void *buf, size_t len, msgpack_unpacked *out, char *err, size_t errlen)
{
    return gx_wire_unpack_depth(buf, len, GX_WIRE_MAX_DEPTH, out, err, errlen);
}

const msgpack_object *gx_mp_find(const msgpack_object *o, const char *key)
{
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < o->via.map.size; i++)
        if (gx_mp_streq(&o->via.map.ptr[i].key, key))
            return &o->via.map.ptr[i].val;
    return NULL;
}

bool gx_mp_streq(const msgpack_object *o, const char *s)
{
    size_t n = strlen(s);
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
           memcmp(o->via.str.ptr, s, n) == 0;
}

int gx_mp_strdup(const msgpack_object *o, const char *what, char **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (!o)
        return gx_errf(err, errlen, GX_EPROTO, "%s: missing", what);
    if (o->type != MSGPACK_OBJECT_STR)
        return gx_errf(err, errlen, GX_EPROTO, "%s: expected a string", what);
    if (o->via.str.size > GX_WIRE_MAX_NAME)
        return gx_errf(err, errlen, GX_ELIMIT, "%s: string longer than %d bytes", what,
                       GX_WIRE_MAX_NAME);
    if (memchr(o->via.str.ptr, '\0', o->via.str.size))
        return gx_errf(err, errlen, GX_EPROTO, "%s: string contains a NUL byte", what);
    char *s = malloc(o->via.str.size + 1);
    if (!s)
        return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", what);
    memcpy(s, o->via.str.ptr, o->via.str.size);
    s[o->via.str.size] = '\0';
    *out = s;
    return GX_OK;
}

int gx_mp_int(const msgpack_object *o, const char *what, int64_t lo, int64_t hi, int64_t *out,
              char *err, size_t errlen)
{
    int64_t v;
    if (!o)
        return gx_errf(err, errlen, GX_EPROTO, "%s: missing", what);
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > INT64_MAX)
            return gx_errf(err, errlen, GX_EPROTO, "%s: integer out of range", what);
        v = (int64_t)o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        v = o->via.i64;
    } else {
        return gx_errf(err, errlen, GX_EPROTO, "%s: expected an integer", what);
    }
    if (v < lo || v > hi)
        return gx_errf(err, errlen, GX_EPROTO, "%s: %lld out of range [%lld, %lld]", what,
                       (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return GX_OK;
}

void gx_mp_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void s_pack_shape(msgpack_packer *pk, int ndim, const int64_t *shape)
{
    msgpack_pack_array(pk, (size_t)ndim);
    for (int i = 0; i < ndim; i++)
        msgpack_pack_int64(pk, shape[i]);
}

void gx_wire_pack_tensor_desc(msgpack_packer *pk, const char *name, gx_dtype dt, int ndim,
                              const int64_t *shape)
{
    gx_wire_pack_tensor_desc_shm(pk, name, dt, ndim, shape, NULL);
}

bool gx_wire_shm_name_ok(const char *name)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n < GX_WIRE_SHM_MAX_NAME && name[0] != '.' && strspn(name, ok) == n;
}

void gx_wire_pack_shm_ref(msgpack_packer *pk, const gx_wire_shm_ref *ref)
{
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "region");
    gx_mp_pack_str(pk, ref->region);
    gx_mp_pack_str(pk, "offset");
    msgpack_pack_uint64(pk, ref->offset);
    gx_mp_pack_str(pk, "bytes");
    msgpack_pack_uint64(pk, ref->bytes);
}

int gx_wire_unpack_shm_ref(const msgpack_object *o, const char *what, gx_wire_shm_ref *ref,
                           char *err, size_t errlen)
{
    memset(ref, 0, sizeof *ref);
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return gx_errf(err, errlen, GX_EPROTO, "%s: expected a map {region, offset, bytes}", what);
    const msgpack_object *r = gx_mp_find(o, "region");
    if (!r || r->type != MSGPACK_OBJECT_STR || r->via.str.size >= GX_WIRE_SHM_MAX_NAME)
        return gx_errf(err, errlen, GX_EPROTO, "%s.region: expected a region name of 1 to %d "
                       "characters", what, GX_WIRE_SHM_MAX_NAME - 1);
    memcpy(ref->region, r->via.str.ptr, r->via.str.size);
    ref->region[r->via.str.size] = '\0';
    if (!gx_wire_shm_name_ok(ref->region) || strlen(ref->region) != r->via.str.size)
        return gx_errf(err, errlen, GX_EINVAL, "%s.region: '%s' is not a region name (letters, "
                       "digits, '.', '_', '-', not starting with '.')", what, ref->region);
    int64_t off, bytes;
    char path[96];
    snprintf(path, sizeof path, "%s.offset", what);
    int rc = gx_mp_int(gx_mp_find(o, "offset"), path, 0, INT64_MAX, &off, err, errlen);
    snprintf(path, sizeof path, "%s.bytes", what);
    if (rc == GX_OK)
        rc = gx_mp_int(gx_mp_find(o, "bytes"), path, 0, INT64_MAX, &bytes, err, errlen);
    if (rc < 0)
        return rc;
    if (off > INT64_MAX - bytes)
        return gx_errf(err, errlen, GX_EINVAL, "%s: offset %lld + bytes %lld overflows", what,
                       (long long)off, (long long)bytes);
    ref->offset = (uint64_t)off;
    ref->bytes = (uint64_t)bytes;
    return GX_OK;
}

void gx_wire_pack_tensor_desc_shm(msgpack_packer *pk, const char *name, gx_dtype dt, int ndim,
                                  const int64_t *shape, const gx_wire_shm_ref *ref)
{
    msgpack_pack_map(pk, ref ? 4 : 3);
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, name);
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, gx_dtype_name(dt));
    gx_mp_pack_str(pk, "shape");
    s_pack_shape(pk, ndim, shape);
    if (ref) {
        gx_mp_pack_str(pk, "shm");
        gx_wire_pack_shm_ref(pk, ref);
    }
}

/* Decode the dtype field of map o. */
static int s_unpack_dtype(const msgpack_object *o, const char *what, gx_dtype *dt, char *err,
                          size_t errlen)
{
    char *dts = NULL;
    char path[GX_WIRE_MAX_NAME + 64];
    snprintf(path, sizeof path, "%s.dtype", what);
    int rc = gx_mp_strdup(gx_mp_find(o, "dtype"), path, &dts, err, errlen);
    if (rc < 0)
        return rc;
    rc = gx_dtype_parse(dts, dt);
    if (rc < 0)
        rc = gx_errf(err, errlen, GX_EDTYPE, "%s: unknown dtype '%s'", path, dts);
    free(dts);
    return rc;
}

/* Decode the shape field of map o. allow_symbolic accepts -1 dims. */
static int s_unpack_shape(const msgpack_object *o, const char *what, bool allow_symbolic,
                          int *ndim, int64_t *shape, char *err, size_t errlen)
{
    char path[GX_WIRE_MAX_NAME + 64];
    int rc;
    const msgpack_object *s = gx_mp_find(o, "shape");
    if (!s || s->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(err, errlen, GX_EPROTO, "%s.shape: expected an array of ints", what);
    if (s->via.array.size > GX_MAX_DIMS)
        return gx_errf(err, errlen, GX_ELIMIT, "%s.shape: %u dims (at most %d)", what,
                       s->via.array.size, GX_MAX_DIMS);
    *ndim = (int)s->via.array.size;
    for (int i = 0; i < *ndim; i++) {
        snprintf(path, sizeof path, "%s.shape[%d]", what, i);
        rc = gx_mp_int(&s->via.array.ptr[i], path, allow_symbolic ? -1 : 0, INT64_MAX,
                       &shape[i], err, errlen);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

/* Decode dtype + shape fields of map o. allow_symbolic accepts -1 dims. */
static int s_unpack_type(const msgpack_object *o, const char *what, bool allow_symbolic,
                         gx_dtype *dt, int *ndim, int64_t *shape, char *err, size_t errlen)
{
    int rc = s_unpack_dtype(o, what, dt, err, errlen);
    return rc < 0 ? rc : s_unpack_shape(o, what, allow_symbolic, ndim, shape, err, errlen);
}

int gx_wire_unpack_tensor_desc(const msgpack_object *o, const char *what, int64_t max_bytes,
                               char **name, gx_dtype *dt, int *ndim, int64_t *shape,
                               size_t *nbytes, char *err, size_t errlen)
{
    *name = NULL;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return gx_errf(err, errlen, GX_EPROTO, "%s: expected a map {name, dtype, shape}", what);
    char path[GX_WIRE_MAX_NAME + 64];
    snprintf(path, sizeof path, "%s.name", what);
    int rc = gx_mp_strdup(gx_mp_find(o, "name"), path, name, err, errlen);
    if (rc == GX_OK)
        rc = s_unpack_type(o, what, false, dt, ndim, shape, err, errlen);
    if (rc == GX_OK) {
        char sh[128];
        if (!gx_shape_nbytes(*dt, *ndim, shape, nbytes) || *nbytes > (uint64_t)max_bytes)
            rc = gx_errf(err, errlen, GX_ELIMIT, "%s: tensor '%s' of shape %s is larger than the limit of %lld bytes",
                         what, *name, gx_shape_str(*ndim, shape, sh, sizeof sh),
                         (long long)max_bytes);
    }
    if (rc < 0) {
        free(*name);
        *name = NULL;
    }
    return rc;
}

/* ---- graphs ---- */

static void s_pack_tensor_inline(msgpack_packer *pk, const gx_tensor *t)
{
    msgpack_pack_map(pk, 3);
    gx_mp_pack_str(pk, "dtype");
    gx_mp_pack_str(pk, gx_dtype_name(t->dtype));
    gx_mp_pack_str(pk, "shape");
    s_pack_shape(pk, t->ndim, t->shape);
    gx_mp_pack_str(pk, "data");
    if (t->dtype == GX_STRING) { /* an array of str (docs/protocol.md) */
        const gx_strrec *const *h = t->data;
        msgpack_pack_array(pk, (size_t)t->numel);
        for (int64_t i = 0; i < t->numel; i++) {
            msgpack_pack_str(pk, gx_str_len(h[i]));
            msgpack_pack_str_body(pk, gx_str_bytes(h[i]), gx_str_len(h[i]));
        }
        return;
    }
    msgpack_pack_bin(pk, t->nbytes);
    msgpack_pack_bin_body(pk, t->data, t->nbytes);
}

/* {name, dtype, shape}, leaving out what is unknown (dtype GX_DTYPE_COUNT,
 * ndim -1), plus kind "sequence" and optional true where they apply. Fully
 * declared tensors encode as tensor descriptors. */
static void s_pack_decls(msgpack_packer *pk, const gx_value_decl *d, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++) {
        bool typed = d[i].dtype != GX_DTYPE_COUNT, shaped = d[i].ndim >= 0;
        bool seq = d[i].kind == GX_KIND_SEQUENCE; /* plain tensors encode as before */
        msgpack_pack_map(pk, 1 + typed + shaped + seq + d[i].optional);
        gx_mp_pack_str(pk, "name");
        gx_mp_pack_str(pk, d[i].name);
        if (seq) {
            gx_mp_pack_str(pk, "kind");
            gx_mp_pack_str(pk, "sequence");
        }
        if (d[i].optional) {
            gx_mp_pack_str(pk, "optional");
            msgpack_pack_true(pk);
        }
        if (typed) {
            gx_mp_pack_str(pk, "dtype");
            gx_mp_pack_str(pk, gx_dtype_name(d[i].dtype));
        }
        if (shaped) {
            gx_mp_pack_str(pk, "shape");
            s_pack_shape(pk, d[i].ndim, d[i].shape);
        }
    }
}

static int s_attr_cmp(const void *a, const void *b)
{
    return strcmp((*(const gx_attr *const *)a)->name, (*(const gx_attr *const *)b)->name);
}

static void s_pack_attr_value(msgpack_packer *pk, const gx_attr *a)
{
    switch (a->type) {
    case GX_ATTR_INT:
        msgpack_pack_int64(pk, a->i);
        break;
    case GX_ATTR_FLOAT:
        msgpack_pack_double(pk, a->f);
        break;
    case GX_ATTR_STRING:
        gx_mp_pack_str(pk, a->s);
        break;
    case GX_ATTR_INTS:
        msgpack_pack_array(pk, a->n);
        for (size_t i = 0; i < a->n; i++)
            msgpack_pack_int64(pk, a->ints[i]);
        break;
    case GX_ATTR_FLOATS:
        msgpack_pack_array(pk, a->n);
        for (size_t i = 0; i < a->n; i++)
            msgpack_pack_double(pk, a->floats[i]);
        break;
    case GX_ATTR_TENSOR:
        s_pack_tensor_inline(pk, a->t);
        break;
    case GX_ATTR_GRAPH:
        gx_wire_pack_graph(pk, a->g);
        break;
    case GX_ATTR_TYPE_COUNT:
        msgpack_pack_nil(pk);
        break;
    }
}

static void s_pack_strv(msgpack_packer *pk, char *const *v, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        gx_mp_pack_str(pk, v[i]);
}

static void s_pack_node(msgpack_packer *pk, const gx_node *n)
{
    msgpack_pack_map(pk, 5);
    gx_mp_pack_str(pk, "op");
    gx_mp_pack_str(pk, n->op);
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, n->name);
    gx_mp_pack_str(pk, "inputs");
    s_pack_strv(pk, n->in, n->n_in);
    gx_mp_pack_str(pk, "outputs");
    s_pack_strv(pk, n->out, n->n_out);
    gx_mp_pack_str(pk, "attrs");
    /* Sorted by name so equal nodes encode equally whatever the set order. */
    const gx_attr *sorted[n->n_attr ? n->n_attr : 1];
    for (size_t i = 0; i < n->n_attr; i++)
        sorted[i] = &n->attr[i];
    qsort(sorted, n->n_attr, sizeof sorted[0], s_attr_cmp);
    msgpack_pack_map(pk, n->n_attr);
    for (size_t i = 0; i < n->n_attr; i++) {
        gx_mp_pack_str(pk, sorted[i]->name);
        msgpack_pack_array(pk, 2);
        gx_mp_pack_str(pk, gx_attr_type_name(sorted[i]->type));
        s_pack_attr_value(pk, sorted[i]);
    }
}

void gx_wire_pack_graph(msgpack_packer *pk, const gx_graph *g)
{
    msgpack_pack_map(pk, 5);
    gx_mp_pack_str(pk, "name");
    gx_mp_pack_str(pk, g->name ? g->name : "");
    gx_mp_pack_str(pk, "inputs");
    s_pack_decls(pk, g->inputs, g->n_inputs);
    gx_mp_pack_str(pk, "outputs");
    s_pack_decls(pk, g->outputs, g->n_outputs);
    gx_mp_pack_str(pk, "constants");
    msgpack_pack_array(pk, g->n_consts);
    for (size_t i = 0; i < g->n_consts; i++) {
        msgpack_pack_array(pk, 2);
        gx_mp_pack_str(pk, g->consts[i].name);
        s_pack_tensor_inline(pk, g->consts[i].t);
    }
    gx_mp_pack_str(pk, "nodes");
    msgpack_pack_array(pk, g->n_nodes);
    for (size_t i = 0; i < g->n_nodes; i++)
        s_pack_node(pk, g->nodes[i]);
}

static int s_sha_write(void *data, const char *buf, size_t len)
{
    sha256_update(data, len, (const uint8_t *)buf);
    return 0;
}

void gx_wire_graph_id(const gx_graph *g, gx_graph_id *id)
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    msgpack_packer pk;
    sha256_init(&ctx);
    msgpack_packer_init(&pk, &ctx, s_sha_write);
    gx_wire_pack_graph(&pk, g);
    sha256_digest(&ctx, sizeof digest, digest);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
        snprintf(id->hex + 2 * i, 3, "%02x", digest[i]);
}

/* Nesting state shared by the decoders of one graph and its subgraphs. */
typedef struct s_nest {
    int max;         /* levels allowed */
    const char *top; /* name of the top-level node being decoded */
    bool failed;     /* the error is a nesting error: passed up as it is */
} s_nest;

/* Decoder state: the limits, the nesting level of this graph and where
 * errors go. */
typedef struct s_dec {
    const gx_wire_limits *lim;
    s_nest *nest;
    int level;
    char *err;
    size_t errlen;
} s_dec;

static int s_unpack_graph(const msgpack_object *o, const gx_wire_limits *lim, s_nest *nest,
                          int level, gx_graph **out, char *err, size_t errlen);

/* A string tensor's inline data (docs/protocol.md): an array of numel str
 * or bin, at most max_tensor_bytes of strings in all. */
static int s_unpack_strs_inline(s_dec *d, const msgpack_object *data, const char *what, int ndim,
                                const int64_t *shape, gx_tensor **out)
{
    if (!data || data->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s.data: a string tensor needs an array of str",
                       what);
    gx_tensor *t = gx_tensor_new(GX_STRING, ndim, shape);
    if (!t)
        return gx_errf(d->err, d->errlen, GX_ENOMEM, "%s: out of memory", what);
    if (data->via.array.size != (uint64_t)t->numel) {
        int rc = gx_errf(d->err, d->errlen, GX_ESHAPE, "%s.data: %u strings, but the shape has %lld",
                         what, data->via.array.size, (long long)t->numel);
        gx_tensor_destroy(&t);
        return rc;
    }
    const gx_strrec **h = t->data;
    uint64_t total = 0;
    for (uint32_t i = 0; i < data->via.array.size; i++) {
        const msgpack_object *e = &data->via.array.ptr[i];
        const bool str = e->type == MSGPACK_OBJECT_STR;
        int rc = GX_OK;
        bool ok = true;
        if (!str && e->type != MSGPACK_OBJECT_BIN)
            rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s.data[%u]: expected a str or bin", what, i);
        else if ((total += str ? e->via.str.size : e->via.bin.size) >
                 (uint64_t)d->lim->max_tensor_bytes)
            rc = gx_errf(d->err, d->errlen, GX_ELIMIT,
                         "%s: strings larger than the limit of %lld bytes", what,
                         (long long)d->lim->max_tensor_bytes);
        else
            h[i] = gx_tensor_str_add(t, str ? e->via.str.ptr : e->via.bin.ptr,
                                     str ? e->via.str.size : e->via.bin.size, &ok);
        if (rc == GX_OK && !ok)
            rc = gx_errf(d->err, d->errlen, GX_ENOMEM, "%s: out of memory", what);
        if (rc < 0) {
            gx_tensor_destroy(&t);
            return rc;
        }
    }
    *out = t;
    return GX_OK;
}

static int s_unpack_tensor_inline(s_dec *d, const msgpack_object *o, const char *what,
                                  gx_tensor **out)
{
    gx_dtype dt;
    int ndim;
    int64_t shape[GX_MAX_DIMS];
    size_t nbytes;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected a map {dtype, shape, data}", what);
    int rc = s_unpack_type(o, what, false, &dt, &ndim, shape, d->err, d->errlen);
    if (rc < 0)
        return rc;
    if (!gx_shape_nbytes(dt, ndim, shape, &nbytes) || nbytes > (uint64_t)d->lim->max_tensor_bytes)
        return gx_errf(d->err, d->errlen, GX_ELIMIT, "%s: tensor larger than the limit of %lld bytes",
                       what, (long long)d->lim->max_tensor_bytes);
    const msgpack_object *data = gx_mp_find(o, "data");
    if (dt == GX_STRING)
        return s_unpack_strs_inline(d, data, what, ndim, shape, out);
    if (!data || data->type != MSGPACK_OBJECT_BIN)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s.data: expected binary data", what);
    if (data->via.bin.size != nbytes)
        return gx_errf(d->err, d->errlen, GX_ESHAPE, "%s.data: %u bytes, but dtype and shape need %zu",
                       what, data->via.bin.size, nbytes);
    *out = gx_tensor_new_copy(dt, ndim, shape, data->via.bin.ptr, nbytes);
    return *out ? GX_OK : gx_errf(d->err, d->errlen, GX_ENOMEM, "%s: out of memory", what);
}

static int s_unpack_decls(s_dec *d, gx_graph *g, const msgpack_object *o, const char *what,
                          bool outputs)
{
    if (!o || o->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected an array", what);
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        const msgpack_object *e = &o->via.array.ptr[i];
        char path[96], *name = NULL;
        snprintf(path, sizeof path, "%s[%u]", what, i);
        if (e->type != MSGPACK_OBJECT_MAP)
            return gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected a map", path);
        char npath[112];
        snprintf(npath, sizeof npath, "%s.name", path);
        int rc = gx_mp_strdup(gx_mp_find(e, "name"), npath, &name, d->err, d->errlen);
        if (rc < 0)
            return rc;
        /* dtype and shape are each left out when unknown (see s_pack_decls) */
        gx_dtype dt = GX_DTYPE_COUNT;
        int ndim = -1;
        int64_t shape[GX_MAX_DIMS];
        if (gx_mp_find(e, "dtype"))
            rc = s_unpack_dtype(e, path, &dt, d->err, d->errlen);
        if (rc == GX_OK && gx_mp_find(e, "shape"))
            rc = s_unpack_shape(e, path, true, &ndim, shape, d->err, d->errlen);
        if (rc == GX_OK) {
            rc = outputs ? gx_graph_add_output_decl(g, name, dt, ndim, shape)
                         : gx_graph_add_input_decl(g, name, dt, ndim, shape);
            /* a sequence (of dtype tensors) or an optional: see s_pack_decls */
            const msgpack_object *kind = gx_mp_find(e, "kind"), *opt = gx_mp_find(e, "optional");
            bool seq = kind && gx_mp_streq(kind, "sequence");
            if (rc == GX_OK && ((kind && !seq && !gx_mp_streq(kind, "tensor")) ||
                                (opt && opt->type != MSGPACK_OBJECT_BOOLEAN)))
                rc = gx_errf(d->err, d->errlen, GX_EPROTO,
                             "%s: kind must be \"tensor\" or \"sequence\", optional a bool", path);
            else if (rc == GX_OK && (seq || (opt && opt->via.boolean)))
                rc = gx_graph_set_decl_kind(g, !outputs, name,
                                            seq ? GX_KIND_SEQUENCE : GX_KIND_TENSOR,
                                            opt && opt->via.boolean);
            if (rc < 0 && rc != GX_EPROTO)
                rc = gx_errf(d->err, d->errlen, rc, "%s: %s", path, gx_strerror(rc));
        }
        free(name);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

static int s_unpack_strv(s_dec *d, const msgpack_object *o, const char *what, bool allow_empty,
                         char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!o || o->type != MSGPACK_OBJECT_ARRAY)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected an array of strings", what);
    char **v = calloc(o->via.array.size ? o->via.array.size : 1, sizeof *v);
    if (!v)
        return GX_ENOMEM;
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s[%u]", what, i);
        int rc = gx_mp_strdup(&o->via.array.ptr[i], path, &v[i], d->err, d->errlen);
        if (rc == GX_OK && !allow_empty && !*v[i])
            rc = gx_errf(d->err, d->errlen, GX_EGRAPH, "%s: empty name", path);
        if (rc < 0) {
            for (uint32_t j = 0; j <= i; j++)
                free(v[j]);
            free(v);
            return rc;
        }
    }
    *out = v;
    *n = o->via.array.size;
    return GX_OK;
}

static int s_unpack_attr(s_dec *d, gx_node *n, const msgpack_object_kv *kv, const char *what)
{
    char *name = NULL, path[GX_WIRE_MAX_NAME + 160];
    int rc = gx_mp_strdup(&kv->key, what, &name, d->err, d->errlen);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof path, "%s.%s", what, name);
    const msgpack_object *v = &kv->val;
    gx_attr_type type = GX_ATTR_TYPE_COUNT;
    if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 2) {
        rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected [type, value]", path);
        goto out;
    }
    for (int t = 0; t < GX_ATTR_TYPE_COUNT; t++)
        if (gx_mp_streq(&v->via.array.ptr[0], gx_attr_type_name((gx_attr_type)t)))
            type = (gx_attr_type)t;
    const msgpack_object *val = &v->via.array.ptr[1];
    switch (type) {
    case GX_ATTR_INT: {
        int64_t i;
        rc = gx_mp_int(val, path, INT64_MIN, INT64_MAX, &i, d->err, d->errlen);
        if (rc == GX_OK)
            rc = gx_node_set_int(n, name, i);
        break;
    }
    case GX_ATTR_FLOAT:
        if (val->type != MSGPACK_OBJECT_FLOAT64 && val->type != MSGPACK_OBJECT_FLOAT32)
            rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected a float", path);
        else
            rc = gx_node_set_float(n, name, val->via.f64);
        break;
    case GX_ATTR_STRING: {
        char *s = NULL;
        rc = gx_mp_strdup(val, path, &s, d->err, d->errlen);
        if (rc == GX_OK)
            rc = gx_node_set_string(n, name, s);
        free(s);
        break;
    }
    case GX_ATTR_INTS:
    case GX_ATTR_FLOATS: {
        if (val->type != MSGPACK_OBJECT_ARRAY) {
            rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected an array", path);
            break;
        }
        uint32_t cnt = val->via.array.size;
        int64_t *iv = type == GX_ATTR_INTS ? calloc(cnt + 1, sizeof *iv) : NULL;
        double *fv = type == GX_ATTR_FLOATS ? calloc(cnt + 1, sizeof *fv) : NULL;
        if (!iv && !fv) {
            rc = GX_ENOMEM;
            break;
        }
        for (uint32_t i = 0; i < cnt && rc == GX_OK; i++) {
            const msgpack_object *e = &val->via.array.ptr[i];
            if (iv)
                rc = gx_mp_int(e, path, INT64_MIN, INT64_MAX, &iv[i], d->err, d->errlen);
            else if (e->type == MSGPACK_OBJECT_FLOAT64 || e->type == MSGPACK_OBJECT_FLOAT32)
                fv[i] = e->via.f64;
            else
                rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s[%u]: expected a float", path, i);
        }
        if (rc == GX_OK)
            rc = iv ? gx_node_set_ints(n, name, iv, cnt) : gx_node_set_floats(n, name, fv, cnt);
        free(iv);
        free(fv);
        break;
    }
    case GX_ATTR_TENSOR: {
        gx_tensor *t = NULL;
        rc = s_unpack_tensor_inline(d, val, path, &t);
        if (rc == GX_OK)
            rc = gx_node_set_tensor(n, name, &t);
        break;
    }
    case GX_ATTR_GRAPH: {
        gx_graph *sub = NULL;
        char why[512] = "";
        if (d->level + 1 > d->nest->max) {
            d->nest->failed = true;
            rc = gx_errf(d->err, d->errlen, GX_ELIMIT,
                         "node '%s' (%s), attribute '%s': graphs nest %d levels deep, beyond "
                         "the nesting limit of %d (limits.max_nesting); the top-level node "
                         "is '%s'",
                         n->name, n->op, name, d->level + 1, d->nest->max, d->nest->top);
            break;
        }
        rc = s_unpack_graph(val, d->lim, d->nest, d->level + 1, &sub, why, sizeof why);
        if (rc < 0 && d->nest->failed)
            rc = gx_errf(d->err, d->errlen, rc, "%s", why);
        else if (rc < 0)
            rc = gx_errf(d->err, d->errlen, rc, "%s: %s", path, why);
        else
            rc = gx_node_set_graph(n, name, &sub);
        break;
    }
    case GX_ATTR_TYPE_COUNT:
        rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s: unknown attribute type", path);
        break;
    }
    if (rc == GX_EATTR)
        rc = gx_errf(d->err, d->errlen, GX_EATTR, "%s: attribute given twice", path);
    else if (rc == GX_ENOMEM)
        rc = gx_errf(d->err, d->errlen, GX_ENOMEM, "%s: out of memory", path);
out:
    free(name);
    return rc;
}

static int s_unpack_node(s_dec *d, gx_graph *g, const msgpack_object *o, uint32_t idx)
{
    char what[64], path[96];
    snprintf(what, sizeof what, "nodes[%u]", idx);
    if (o->type != MSGPACK_OBJECT_MAP)
        return gx_errf(d->err, d->errlen, GX_EPROTO, "%s: expected a map", what);
    char *op = NULL, *name = NULL, **in = NULL, **out = NULL;
    size_t n_in = 0, n_out = 0;
    int rc;
    snprintf(path, sizeof path, "%s.op", what);
    if ((rc = gx_mp_strdup(gx_mp_find(o, "op"), path, &op, d->err, d->errlen)) < 0)
        goto out;
    snprintf(path, sizeof path, "%s.name", what);
    if ((rc = gx_mp_strdup(gx_mp_find(o, "name"), path, &name, d->err, d->errlen)) < 0)
        goto out;
    snprintf(path, sizeof path, "%s.inputs", what);
    if ((rc = s_unpack_strv(d, gx_mp_find(o, "inputs"), path, true, &in, &n_in)) < 0)
        goto out;
    snprintf(path, sizeof path, "%s.outputs", what);
    if ((rc = s_unpack_strv(d, gx_mp_find(o, "outputs"), path, false, &out, &n_out)) < 0)
        goto out;
    gx_node *n = gx_graph_add_node(g, op, name, n_in, (const char *const *)in, n_out,
                                   (const char *const *)out);
    if (!n) {
        rc = gx_errf(d->err, d->errlen, GX_EGRAPH, "%s: invalid node (empty op, name or output)", what);
        goto out;
    }
    if (d->level == 0)
        d->nest->top = n->name;
    const msgpack_object *attrs = gx_mp_find(o, "attrs");
    if (attrs && attrs->type != MSGPACK_OBJECT_MAP) {
        rc = gx_errf(d->err, d->errlen, GX_EPROTO, "%s.attrs: expected a map", what);
        goto out;
    }
    snprintf(path, sizeof path, "%s.attrs", what);
    for (uint32_t i = 0; attrs && i < attrs->via.map.size && rc == GX_OK; i++)
        rc = s_unpack_attr(d, n, &attrs->via.map.ptr[i], path);
out:
    free(op);
    free(name);
    for (size_t i = 0; i < n_in; i++)
        free(in[i]);
    for (size_t i = 0; i < n_out; i++)
        free(out[i]);
    free(in);
    free(out);
    return rc;
}

int gx_wire_unpack_graph_nested(const msgpack_object *o, const gx_wire_limits *lim,
                                int max_nesting, gx_graph **out, char *err, size_t errlen)
{
    s_nest nest = {max_nesting > 0 ? max_nesting : GX_WIRE_NESTING_DEFAULT, "", false};
    if (nest.max > GX_WIRE_MAX_NESTING)
        nest.max = GX_WIRE_MAX_NESTING;
    return s_unpack_graph(o, lim, &nest, 0, out, err, errlen);
}

int gx_wire_unpack_graph(const msgpack_object *o, const gx_wire_limits *lim, gx_graph **out,
                         char *err, size_t errlen)
{
    return gx_wire_unpack_graph_nested(o, lim, 0, out, err, errlen);
}

static int s_unpack_graph(const msgpack_object *o, const gx_wire_limits *lim, s_nest *nest,
                          int level, gx_graph **out, char *err, size_t errlen)
{
    s_dec d = {lim, nest, level, err, errlen};
    *out = NULL;
    if (!o || o->type != MSGPACK_OBJECT_MAP)
        return gx_errf(err, errlen, GX_EPROTO, "graph: expected a map");
    char *name = NULL;
    const msgpack_object *nm = gx_mp_find(o, "name");
    int rc = nm ? gx_mp_strdup(nm, "graph.name", &name, err, errlen) : GX_OK;
    if (rc < 0)
        return rc;
    gx_graph *g = gx_graph_new(name);
    free(name);
    if (!g)
        return gx_errf(err, errlen, GX_ENOMEM, "graph: out of memory");
    const msgpack_object *nodes = gx_mp_find(o, "nodes");
    const msgpack_object *consts = gx_mp_find(o, "constants");
    if ((rc = s_unpack_decls(&d, g, gx_mp_find(o, "inputs"), "inputs", false)) < 0 ||
        (rc = s_unpack_decls(&d, g, gx_mp_find(o, "outputs"), "outputs", true)) < 0)
        goto fail;
    if (consts && consts->type != MSGPACK_OBJECT_ARRAY) {
        rc = gx_errf(err, errlen, GX_EPROTO, "constants: expected an array");
        goto fail;
    }
    for (uint32_t i = 0; consts && i < consts->via.array.size; i++) {
        const msgpack_object *c = &consts->via.array.ptr[i];
        char path[64], *cname = NULL;
        gx_tensor *t = NULL;
        snprintf(path, sizeof path, "constants[%u]", i);
        if (c->type != MSGPACK_OBJECT_ARRAY || c->via.array.size != 2) {
            rc = gx_errf(err, errlen, GX_EPROTO, "%s: expected [name, tensor]", path);
            goto fail;
        }
        rc = gx_mp_strdup(&c->via.array.ptr[0], path, &cname, err, errlen);
        if (rc == GX_OK)
            rc = s_unpack_tensor_inline(&d, &c->via.array.ptr[1], path, &t);
        if (rc == GX_OK)
            rc = gx_graph_add_const(g, cname, &t);
        free(cname);
        gx_tensor_destroy(&t);
        if (rc < 0)
            goto fail;
    }
    if (!nodes || nodes->type != MSGPACK_OBJECT_ARRAY) {
        rc = gx_errf(err, errlen, GX_EPROTO, "nodes: expected an array");
        goto fail;
    }
    if (nodes->via.array.size > (uint64_t)lim->max_nodes) {
        rc = gx_errf(err, errlen, GX_ELIMIT, "graph has %u nodes (limit %lld)",
                     nodes->via.array.size, (long long)lim->max_nodes);
        goto fail;
    }
    for (uint32_t i = 0; i < nodes->via.array.size; i++)
        if ((rc = s_unpack_node(&d, g, &nodes->via.array.ptr[i], i)) < 0)
            goto fail;
    *out = g;
    return GX_OK;
fail:
    gx_graph_destroy(&g);
    return rc;
}
