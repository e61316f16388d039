/*
 * YAML graph files (docs/graph-format.md) into a gx_graph, through the public
 * graph builder.
 *
 * Two steps:
 *  1. libyaml's event parser feeds a compact tree (s_tree): 20 bytes a node
 *     plus its text, about five times the file's size in all, where
 *     libyaml's own document API costs some 170 bytes a scalar. Nesting is
 *     capped at S_MAX_DEPTH, which also keeps libyaml's scanner linear (its
 *     cost per token grows with the flow nesting level).
 *  2. A walk of the tree against the fixed schema (top level -> section
 *     lists -> entry maps -> small lists) calls the graph builder. Recursion
 *     depth is bounded by the schema, never by the input.
 *
 * Every error is "source:line:column: path: reason", the position being the
 * 1-based mark of the offending node and the path naming the entry
 * ("nodes[2].attrs.alpha"). Aliases (*x) are allowed, but each node fetch
 * counts against a budget proportional to the document size, so a file
 * cannot make the walk quadratic by aliasing a large list many times.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "core/internal.h"

#define S_MAX_FILE ((size_t)1 << 30)
/* The schema nests 6 deep (top, nodes, node, attrs, tensor, data). */
#define S_MAX_DEPTH 32
/* Far above any op's attribute count; bounds the duplicate check. */
#define S_MAX_ATTRS 256

/* ---- the tree ----------------------------------------------------------- */

typedef enum s_type {
    S_SCALAR,
    S_SEQ,
    S_MAP,
} s_type;

typedef struct s_node {
    uint32_t line, col; /* 1-based */
    uint32_t n;         /* scalar: length in bytes; list: items; map: pairs */
    uint32_t off;       /* scalar: offset in text; list, map: offset in kids
                         * (a map's kids are key, value, key, value...) */
    uint8_t type;       /* s_type */
    bool quoted;        /* a scalar written quoted or as a block */
} s_node;

/* An anchor in the open-addressing table: text offset of its name, node. */
typedef struct s_anchor {
    uint32_t name;
    uint32_t node;
    bool used;
} s_anchor;

/* A collection being read: its node, where its kids start on the pending
 * stack, and its anchor (text offset, or UINT32_MAX). */
typedef struct s_open {
    uint32_t node;
    size_t first;
    uint32_t anchor;
} s_open;

typedef struct s_tree {
    s_node *nodes;
    size_t n_nodes, cap_nodes;
    uint32_t *kids;
    size_t n_kids, cap_kids;
    uint32_t *pending; /* kids of the open collections */
    size_t n_pending, cap_pending;
    char *text; /* scalar values and anchor names, NUL-terminated */
    size_t n_text, cap_text;
    s_anchor *anchors;
    size_t n_anchors, cap_anchors; /* cap is 0 or a power of two */
    s_open open[S_MAX_DEPTH];
    int depth;
    bool has_root;
    uint32_t root;
} s_tree;

typedef struct s_ctx {
    s_tree t;
    const char *src;
    const char *base_dir;
    char *err;
    size_t errlen;
    int status;    /* the first error, once set */
    size_t visits; /* node fetches so far */
    size_t max_visits;
} s_ctx;

/* Which shape entries are allowed. */
typedef enum s_shape_mode {
    S_SHAPE_DECL,  /* inputs/outputs: ints >= 0, -1 or a name (symbolic) */
    S_SHAPE_CONST, /* constants: ints >= 0 */
} s_shape_mode;

/* What a plain scalar looks like. */
typedef enum s_num {
    S_NUM_NONE,  /* not a number */
    S_NUM_INT,   /* decimal integer that fits int64 */
    S_NUM_FLOAT, /* '.', exponent, inf or nan */
    S_NUM_RANGE, /* looks like a number but is out of range */
} s_num;

/* ---- errors ------------------------------------------------------------- */

static int s_failv(s_ctx *c, size_t line, size_t col, int status, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    c->status = status;
    gx_errf(c->err, c->errlen, status, "%s:%zu:%zu: %s", c->src, line, col, msg);
    return status;
}

/* An error at node n (NULL: the start of the file). */
__attribute__((format(printf, 4, 5))) static int s_fail(s_ctx *c, const s_node *n, int status,
                                                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_failv(c, n ? n->line : 1, n ? n->col : 1, status, fmt, ap);
    va_end(ap);
    return rc;
}

/* An error at a libyaml mark (0-based). */
__attribute__((format(printf, 4, 5))) static int s_fail_at(s_ctx *c, const yaml_mark_t *m,
                                                           int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = s_failv(c, m->line + 1, m->column + 1, status, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- building the tree from events -------------------------------------- */

static void s_tree_fini(s_tree *t)
{
    free(t->nodes);
    free(t->kids);
    free(t->pending);
    free(t->text);
    free(t->anchors);
    memset(t, 0, sizeof *t);
}

/* Copy len bytes of s into the text arena; UINT32_MAX on ENOMEM. */
static uint32_t s_text_add(s_tree *t, const char *s, size_t len)
{
    if (len >= UINT32_MAX - t->n_text || !gx_grow(&t->text, &t->cap_text, t->n_text + len + 1, 1))
        return UINT32_MAX;
    uint32_t off = (uint32_t)t->n_text;
    if (len)
        memcpy(t->text + off, s, len);
    t->text[off + len] = '\0';
    t->n_text += len + 1;
    return off;
}

/* An anchor name into the text arena. */
static uint32_t s_name_add(s_tree *t, const yaml_char_t *name)
{
    return s_text_add(t, (const char *)name, strlen((const char *)name));
}

static size_t s_hash(const char *s)
{
    size_t h = 14695981039346656037u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The slot for anchor name in the table (cap > 0): its own or an empty one. */
static s_anchor *s_anchor_slot(s_tree *t, const char *name)
{
    size_t mask = t->cap_anchors - 1;
    for (size_t i = s_hash(name) & mask;; i = (i + 1) & mask) {
        s_anchor *a = &t->anchors[i];
        if (!a->used || strcmp(t->text + a->name, name) == 0)
            return a;
    }
}

/* Define (or redefine, as YAML allows) anchor at text offset name. */
static bool s_anchor_set(s_tree *t, uint32_t name, uint32_t node)
{
    if ((t->n_anchors + 1) * 2 > t->cap_anchors) {
        size_t ncap = t->cap_anchors ? t->cap_anchors * 2 : 64;
        s_anchor *old = t->anchors, *na = calloc(ncap, sizeof *na);
        if (!na)
            return false;
        size_t ocap = t->cap_anchors;
        t->anchors = na;
        t->cap_anchors = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].used)
                *s_anchor_slot(t, t->text + old[i].name) = old[i];
        free(old);
    }
    s_anchor *a = s_anchor_slot(t, t->text + name);
    if (!a->used)
        t->n_anchors++;
    *a = (s_anchor){.name = name, .node = node, .used = true};
    return true;
}

static bool s_anchor_get(s_tree *t, const char *name, uint32_t *node)
{
    if (!t->cap_anchors)
        return false;
    s_anchor *a = s_anchor_slot(t, name);
    if (a->used)
        *node = a->node;
    return a->used;
}

/* A new node at mark m; UINT32_MAX on ENOMEM or too many nodes. */
static uint32_t s_node_add(s_tree *t, s_type type, const yaml_mark_t *m)
{
    if (t->n_nodes >= UINT32_MAX - 1 ||
        !gx_grow(&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *t->nodes))
        return UINT32_MAX;
    s_node *n = &t->nodes[t->n_nodes];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    n->line = m->line + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(m->line + 1);
    n->col = m->column + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(m->column + 1);
    return (uint32_t)t->n_nodes++;
}

/* A finished node: the root, or the next kid of the innermost collection. */
static bool s_attach(s_tree *t, uint32_t node)
{
    if (t->depth == 0) {
        t->root = node;
        t->has_root = true;
        return true;
    }
    if (!gx_grow(&t->pending, &t->cap_pending, t->n_pending + 1, sizeof *t->pending))
        return false;
    t->pending[t->n_pending++] = node;
    return true;
}

/* Close the innermost collection: move its kids from pending to kids. */
static bool s_close(s_tree *t)
{
    s_open *o = &t->open[--t->depth];
    size_t count = t->n_pending - o->first;
    s_node *n = &t->nodes[o->node];
    if (t->n_kids + count >= UINT32_MAX ||
        !gx_grow(&t->kids, &t->cap_kids, t->n_kids + count, sizeof *t->kids))
        return false;
    if (count)
        memcpy(t->kids + t->n_kids, t->pending + o->first, count * sizeof *t->kids);
    n->off = (uint32_t)t->n_kids;
    n->n = (uint32_t)(n->type == S_MAP ? count / 2 : count);
    t->n_kids += count;
    t->n_pending = o->first;
    if (o->anchor != UINT32_MAX && !s_anchor_set(t, o->anchor, o->node))
        return false;
    return s_attach(t, o->node);
}

/* Explicit tags are refused: "!" (non-specific) is the only one allowed. */
static int s_check_tag(s_ctx *c, const yaml_char_t *tag, const yaml_mark_t *m)
{
    if (tag && strcmp((const char *)tag, "!") != 0)
        return s_fail_at(c, m, GX_EFORMAT, "explicit YAML tags (%s) are not supported",
                         (const char *)tag);
    return GX_OK;
}

/* One event into the tree. *done is set at the end of the first document. */
static int s_event(s_ctx *c, const yaml_event_t *e, bool *done)
{
    s_tree *t = &c->t;
    const yaml_mark_t *m = &e->start_mark;
    uint32_t node, text, anchor = UINT32_MAX;
    int rc;

    switch (e->type) {
    case YAML_NO_EVENT:
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
    case YAML_DOCUMENT_START_EVENT:
        return GX_OK;
    case YAML_DOCUMENT_END_EVENT:
        *done = true;
        return GX_OK;
    case YAML_ALIAS_EVENT:
        if (!s_anchor_get(t, (const char *)e->data.alias.anchor, &node))
            return s_fail_at(c, m, GX_EFORMAT, "undefined alias '*%s'",
                             (const char *)e->data.alias.anchor);
        return s_attach(t, node) ? GX_OK : s_fail_at(c, m, GX_ENOMEM, "out of memory");
    case YAML_SCALAR_EVENT:
        if ((rc = s_check_tag(c, e->data.scalar.tag, m)) < 0)
            return rc;
        node = s_node_add(t, S_SCALAR, m);
        text = node == UINT32_MAX ? UINT32_MAX
                                  : s_text_add(t, (const char *)e->data.scalar.value,
                                               e->data.scalar.length);
        if (text == UINT32_MAX)
            return s_fail_at(c, m, GX_ENOMEM, "out of memory");
        t->nodes[node].off = text;
        t->nodes[node].n = (uint32_t)e->data.scalar.length;
        t->nodes[node].quoted = e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (e->data.scalar.anchor && ((anchor = s_name_add(t, e->data.scalar.anchor)) ==
                                          UINT32_MAX ||
                                      !s_anchor_set(t, anchor, node)))
            return s_fail_at(c, m, GX_ENOMEM, "out of memory");
        return s_attach(t, node) ? GX_OK : s_fail_at(c, m, GX_ENOMEM, "out of memory");
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool seq = e->type == YAML_SEQUENCE_START_EVENT;
        const yaml_char_t *tag = seq ? e->data.sequence_start.tag : e->data.mapping_start.tag;
        if ((rc = s_check_tag(c, tag, m)) < 0)
            return rc;
        if (t->depth == S_MAX_DEPTH)
            return s_fail_at(c, m, GX_ELIMIT, "nesting deeper than %d levels", S_MAX_DEPTH);
        const yaml_char_t *name = seq ? e->data.sequence_start.anchor
                                      : e->data.mapping_start.anchor;
        if ((node = s_node_add(t, seq ? S_SEQ : S_MAP, m)) == UINT32_MAX ||
            (name && (anchor = s_name_add(t, name)) == UINT32_MAX))
            return s_fail_at(c, m, GX_ENOMEM, "out of memory");
        /* the anchor is defined when the collection closes */
        t->open[t->depth++] = (s_open){.node = node, .first = t->n_pending, .anchor = anchor};
        return GX_OK;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (t->depth == 0 || !t->nodes) /* libyaml balances its events */
            return s_fail_at(c, m, GX_EINTERNAL, "unbalanced YAML events");
        return s_close(t) ? GX_OK : s_fail_at(c, m, GX_ENOMEM, "out of memory");
    }
    return GX_OK;
}

/* ---- node access -------------------------------------------------------- */

static const char *s_str(const s_ctx *c, const s_node *n)
{
    return c->t.text + n->off;
}

/* Item i of a list, or entry i of a map's key, value, key, value... */
static uint32_t s_kid(const s_ctx *c, const s_node *n, size_t i)
{
    return c->t.kids[n->off + i];
}

/* Format an entry path ("nodes[2].attrs.alpha") for messages; truncation
 * is harmless. */
__attribute__((format(printf, 3, 4))) static void s_path(char *buf, size_t len,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Node idx of the tree, or NULL with the error set when the alias budget
 * is spent. at is where to report. */
static const s_node *s_get(s_ctx *c, uint32_t idx, const s_node *at, const char *path)
{
    if (idx >= c->t.n_nodes) {
        s_fail(c, at, GX_EINTERNAL, "%s: bad node index", path);
        return NULL;
    }
    const s_node *n = &c->t.nodes[idx];
    if (++c->visits > c->max_visits) {
        s_fail(c, n, GX_ELIMIT, "%s: too many alias expansions", path);
        return NULL;
    }
    return n;
}

static const char *s_type_name(s_type type)
{
    switch (type) {
    case S_SCALAR: return "a scalar";
    case S_SEQ: return "a list";
    case S_MAP: return "a map";
    }
    return "nothing";
}

static const char *s_kind(const s_node *n)
{
    return s_type_name((s_type)n->type);
}

static bool s_is_plain(const s_node *n)
{
    return n->type == S_SCALAR && !n->quoted;
}

static int s_expect(s_ctx *c, const s_node *n, s_type type, const char *path)
{
    if (n->type == type)
        return GX_OK;
    return s_fail(c, n, GX_EFORMAT, "%s: expected %s, got %s", path, s_type_name(type),
                  s_kind(n));
}

/* The text of a scalar node; an error for other nodes and embedded NULs. */
static int s_text(s_ctx *c, const s_node *n, const char *path, const char **out)
{
    int rc = s_expect(c, n, S_SCALAR, path);
    if (rc < 0)
        return rc;
    const char *s = s_str(c, n);
    if (strlen(s) != n->n)
        return s_fail(c, n, GX_EFORMAT, "%s: contains a NUL character", path);
    *out = s;
    return GX_OK;
}

/* A non-empty name. */
static int s_name(s_ctx *c, const s_node *n, const char *path, const char **out)
{
    int rc = s_text(c, n, path, out);
    if (rc < 0)
        return rc;
    if (!**out)
        return s_fail(c, n, GX_EFORMAT, "%s: empty name", path);
    return GX_OK;
}

/* Check a map's keys: scalars, each in allowed (NULL-terminated), no
 * duplicates. */
static int s_check_keys(s_ctx *c, const s_node *map, const char *path,
                        const char *const *allowed)
{
    for (size_t i = 0; i < map->n; i++) {
        const s_node *k = s_get(c, s_kid(c, map, 2 * i), map, path);
        if (!k)
            return c->status;
        if (k->type != S_SCALAR)
            return s_fail(c, k, GX_EFORMAT, "%s: keys must be scalars, got %s", path, s_kind(k));
        const char *ks = s_str(c, k);
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, ks) == 0;
        if (!known)
            return s_fail(c, k, GX_EFORMAT, "%s: unknown key '%s'", path, ks);
        /* the keys before are known and distinct: at most a few */
        for (size_t j = 0; j < i; j++)
            if (strcmp(s_str(c, &c->t.nodes[s_kid(c, map, 2 * j)]), ks) == 0)
                return s_fail(c, k, GX_EFORMAT, "%s: duplicate key '%s'", path, ks);
    }
    return GX_OK;
}

/* The value of key in map (keys already checked), or NULL if absent. A
 * missing required key sets the error, as does a failed fetch; *rc tells. */
static const s_node *s_lookup(s_ctx *c, const s_node *map, const char *key, bool required,
                              const char *path, int *rc)
{
    *rc = GX_OK;
    for (size_t i = 0; i < map->n; i++) {
        const s_node *k = &c->t.nodes[s_kid(c, map, 2 * i)];
        if (k->type == S_SCALAR && strcmp(s_str(c, k), key) == 0) {
            const s_node *v = s_get(c, s_kid(c, map, 2 * i + 1), k, path);
            if (!v)
                *rc = c->status;
            return v;
        }
    }
    if (required)
        *rc = s_fail(c, map, GX_EFORMAT, "%s: missing required key '%s'", path, key);
    return NULL;
}

/* ---- scalars ------------------------------------------------------------ */

static bool s_ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* Classify a plain scalar's text as a number; *fv always gets the value as
 * a double, *iv the integer for S_NUM_INT. */
static s_num s_number(const char *s, int64_t *iv, double *fv)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (s_ieq(p, "inf") || s_ieq(p, "infinity") || s_ieq(p, ".inf")) {
        *fv = neg ? -INFINITY : INFINITY;
        return S_NUM_FLOAT;
    }
    if (s_ieq(p, "nan") || s_ieq(p, ".nan")) {
        *fv = NAN;
        return S_NUM_FLOAT;
    }
    /* digits [. digits] [e [sign] digits], or . digits [...] */
    const char *q = p;
    size_t int_digits = 0, frac_digits = 0;
    bool dot = false, exp = false;
    while (*q >= '0' && *q <= '9')
        q++, int_digits++;
    if (*q == '.') {
        dot = true;
        q++;
        while (*q >= '0' && *q <= '9')
            q++, frac_digits++;
    }
    if (int_digits + frac_digits == 0)
        return S_NUM_NONE;
    if (*q == 'e' || *q == 'E') {
        exp = true;
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!(*q >= '0' && *q <= '9'))
            return S_NUM_NONE;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q)
        return S_NUM_NONE;
    errno = 0;
    *fv = strtod(s, NULL);
    if (errno == ERANGE && isinf(*fv))
        return S_NUM_RANGE;
    if (dot || exp)
        return S_NUM_FLOAT;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return S_NUM_RANGE;
    *iv = v;
    return S_NUM_INT;
}

/* ---- dtypes and shapes -------------------------------------------------- */

static int s_dtype(s_ctx *c, const s_node *n, const char *path, gx_dtype *dt)
{
    const char *s = NULL;
    int rc = s_text(c, n, path, &s);
    if (rc < 0)
        return rc;
    if (gx_dtype_parse(s, dt) == GX_OK)
        return GX_OK;
    return s_fail(c, n, GX_EDTYPE,
                  "%s: unknown dtype '%s' (expected one of"
#define S_DTNAME(e, name, size, descr) " " name
                  GX_DTYPE_LIST(S_DTNAME)
#undef S_DTNAME
                  ")",
                  path, s);
}

static bool s_is_ident(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static int s_shape(s_ctx *c, const s_node *n, const char *path, s_shape_mode mode,
                   int *ndim, int64_t *shape)
{
    int rc = s_expect(c, n, S_SEQ, path);
    if (rc < 0)
        return rc;
    size_t count = (size_t)n->n;
    if (count > GX_MAX_DIMS)
        return s_fail(c, n, GX_ELIMIT, "%s: %zu dimensions, at most %d are supported", path,
                      count, GX_MAX_DIMS);
    char ipath[160];
    for (size_t i = 0; i < count; i++) {
        s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
        const s_node *d = s_get(c, s_kid(c, n, i), n, ipath);
        const char *s = NULL;
        int64_t iv = 0;
        double fv;
        if (!d)
            return c->status;
        if ((rc = s_text(c, d, ipath, &s)) < 0)
            return rc;
        s_num kind = s_is_plain(d) ? s_number(s, &iv, &fv) : S_NUM_NONE;
        if (kind == S_NUM_INT && iv >= 0) {
            shape[i] = iv;
        } else if (mode == S_SHAPE_DECL && kind == S_NUM_INT && iv == -1) {
            shape[i] = -1;
        } else if (mode == S_SHAPE_DECL && kind == S_NUM_NONE && s_is_ident(s)) {
            shape[i] = -1; /* symbolic */
        } else if (kind == S_NUM_INT) {
            return s_fail(c, d, GX_ESHAPE, "%s: invalid dimension %lld%s", ipath, (long long)iv,
                          mode == S_SHAPE_DECL ? " (use -1 or a name for a symbolic dimension)"
                                               : " (constants need concrete dimensions >= 0)");
        } else {
            return s_fail(c, d, GX_ESHAPE, "%s: invalid dimension '%s' (expected %s)", ipath, s,
                          mode == S_SHAPE_DECL ? "an integer >= 0, -1 or a name"
                                               : "an integer >= 0");
        }
    }
    *ndim = (int)count;
    return GX_OK;
}

/* ---- half-precision conversion ------------------------------------------ */

/* x to a binary floating-point format with ebits exponent and mbits mantissa
 * bits (float16: 5/10, bfloat16: 8/7), rounding to nearest even. False if a
 * finite x rounds to infinity. */
static bool s_to_half(double x, int ebits, int mbits, uint16_t *out)
{
    const int bias = (1 << (ebits - 1)) - 1;
    const uint32_t expmask = (1u << ebits) - 1;
    uint32_t sign = signbit(x) ? 1u << (ebits + mbits) : 0;
    double a = fabs(x);
    uint32_t bits;
    if (isnan(x)) {
        bits = expmask << mbits | 1u << (mbits - 1);
    } else if (isinf(x)) {
        bits = expmask << mbits;
    } else if (a < ldexp(1.0, 1 - bias)) {
        /* subnormal: multiples of 2^(1-bias-mbits); 1 << mbits becomes the
         * smallest normal by itself */
        bits = (uint32_t)nearbyint(ldexp(a, bias - 1 + mbits));
    } else {
        int e;
        frexp(a, &e);
        e -= 1; /* a = 1.m * 2^e */
        if (e > bias)
            return false;
        uint32_t m = (uint32_t)nearbyint(ldexp(a, mbits - e)) - (1u << mbits);
        bits = ((uint32_t)(e + bias) << mbits) + m; /* m == 1 << mbits carries */
        if (bits >= expmask << mbits)
            return false;
    }
    *out = (uint16_t)(sign | bits);
    return true;
}

/* ---- tensors ------------------------------------------------------------ */

/* One inline value of dtype dt into p (element i). */
static int s_value(s_ctx *c, const s_node *n, const char *path, gx_dtype dt, void *p,
                   size_t i)
{
    const char *s = NULL;
    if (dt == GX_STRING) /* docs/strings.md: from ONNX models, .npy files or inputs */
        return s_fail(c, n, GX_EUNSUPPORTED,
                      "%s: string constants are not supported in YAML graphs (use an ONNX "
                      "model, a .npy file or an input)", path);
    int rc = s_text(c, n, path, &s);
    if (rc < 0)
        return rc;
    if (!s_is_plain(n))
        return s_fail(c, n, GX_EFORMAT, "%s: expected a number, got the quoted string '%s'", path,
                      s);
    if (dt == GX_BOOL) {
        uint8_t b;
        if (s_ieq(s, "true") || strcmp(s, "1") == 0)
            b = 1;
        else if (s_ieq(s, "false") || strcmp(s, "0") == 0)
            b = 0;
        else
            return s_fail(c, n, GX_EFORMAT, "%s: '%s' is not a bool (true, false, 0 or 1)", path,
                          s);
        ((uint8_t *)p)[i] = b;
        return GX_OK;
    }
    int64_t iv = 0;
    double fv = 0;
    s_num kind = s_number(s, &iv, &fv);
    const char *name = gx_dtype_name(dt);
    if (kind == S_NUM_NONE)
        return s_fail(c, n, GX_EFORMAT, "%s: '%s' is not a number", path, s);
    if (kind == S_NUM_RANGE)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);

    int64_t lo = 0, hi = 0;
    switch (dt) {
    case GX_F32:
        /* values below FLT_MAX + half an ulp round to FLT_MAX; converting
         * them with a cast would be undefined */
        if (isfinite(fv) && fabs(fv) >= ldexp(1.0, 128) - ldexp(1.0, 103))
            return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
        if (isfinite(fv) && fabs(fv) > FLT_MAX)
            fv = fv < 0 ? -FLT_MAX : FLT_MAX;
        ((float *)p)[i] = (float)fv;
        return GX_OK;
    case GX_F64:
        ((double *)p)[i] = fv;
        return GX_OK;
    case GX_F16:
    case GX_BF16: {
        uint16_t h;
        if (!(dt == GX_F16 ? s_to_half(fv, 5, 10, &h) : s_to_half(fv, 8, 7, &h)))
            return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
        ((uint16_t *)p)[i] = h;
        return GX_OK;
    }
    case GX_I64: lo = INT64_MIN, hi = INT64_MAX; break;
    case GX_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    case GX_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case GX_U8: lo = 0, hi = UINT8_MAX; break;
    case GX_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case GX_U16: lo = 0, hi = UINT16_MAX; break;
    case GX_U32: lo = 0, hi = UINT32_MAX; break;
    case GX_U64: lo = 0, hi = INT64_MAX; break; /* parsed as int64 */
    case GX_STRING:
    case GX_BOOL:
    case GX_DTYPE_COUNT:
        return s_fail(c, n, GX_EINTERNAL, "%s: unexpected dtype", path);
    }
    if (kind != S_NUM_INT)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is not an integer (dtype %s)", path, s, name);
    if (iv < lo || iv > hi)
        return s_fail(c, n, GX_EFORMAT, "%s: %s is out of range for %s", path, s, name);
    switch (dt) {
    case GX_I64: ((int64_t *)p)[i] = iv; break;
    case GX_I32: ((int32_t *)p)[i] = (int32_t)iv; break;
    case GX_I8: ((int8_t *)p)[i] = (int8_t)iv; break;
    case GX_U8: ((uint8_t *)p)[i] = (uint8_t)iv; break;
    case GX_I16: ((int16_t *)p)[i] = (int16_t)iv; break;
    case GX_U16: ((uint16_t *)p)[i] = (uint16_t)iv; break;
    case GX_U32: ((uint32_t *)p)[i] = (uint32_t)iv; break;
    case GX_U64: ((uint64_t *)p)[i] = (uint64_t)iv; break;
    case GX_F32:
    case GX_F16:
    case GX_BF16:
    case GX_F64:
    case GX_BOOL:
    case GX_STRING:
    case GX_DTYPE_COUNT: break;
    }
    return GX_OK;
}

/* Inline data: a flat list (or one scalar) of exactly numel values. */
static int s_inline(s_ctx *c, const s_node *data, const char *path, gx_dtype dt, int ndim,
                    const int64_t *shape, gx_tensor **out)
{
    char sbuf[256], ipath[192];
    bool one = data->type == S_SCALAR;
    if (!one && data->type != S_SEQ)
        return s_fail(c, data, GX_EFORMAT, "%s: expected a flat list of values, got %s", path,
                      s_kind(data));
    size_t count = one ? 1 : (size_t)data->n;
    size_t nbytes;
    if (!gx_shape_nbytes(dt, ndim, shape, &nbytes))
        return s_fail(c, data, GX_ELIMIT, "%s: shape %s is too large", path,
                      gx_shape_str(ndim, shape, sbuf, sizeof sbuf));
    int64_t numel = gx_shape_numel(ndim, shape, INT64_MAX);
    if (numel < 0 || (uint64_t)numel != count)
        return s_fail(c, data, GX_ESHAPE, "%s: shape %s needs %lld values, got %zu", path,
                      gx_shape_str(ndim, shape, sbuf, sizeof sbuf), (long long)numel, count);
    gx_tensor *t = gx_tensor_new(dt, ndim, shape);
    if (!t)
        return s_fail(c, data, GX_ENOMEM, "%s: out of memory for %zu bytes", path, nbytes);
    void *p = gx_tensor_data(t);
    int rc = GX_OK;
    if (one) {
        rc = s_value(c, data, path, dt, p, 0);
    } else {
        for (size_t i = 0; i < count && rc == GX_OK; i++) {
            s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
            const s_node *v = s_get(c, s_kid(c, data, i), data, ipath);
            rc = v ? s_value(c, v, ipath, dt, p, i) : c->status;
        }
    }
    if (rc < 0) {
        gx_tensor_destroy(&t);
        return rc;
    }
    *out = t;
    return GX_OK;
}

/* A tensor from a .npy file named relative to the YAML file's directory. */
static int s_npy_file(s_ctx *c, const s_node *fn, const char *path, gx_tensor **out)
{
    const char *file;
    int rc = s_name(c, fn, path, &file);
    if (rc < 0)
        return rc;
    char *full = NULL;
    if (file[0] != '/' && c->base_dir && c->base_dir[0]) {
        size_t n = strlen(c->base_dir) + strlen(file) + 2;
        if (!(full = malloc(n)))
            return s_fail(c, fn, GX_ENOMEM, "%s: out of memory", path);
        snprintf(full, n, "%s/%s", c->base_dir, file);
    }
    char nerr[512];
    rc = gx_npy_load(full ? full : file, out, nerr, sizeof nerr);
    free(full);
    if (rc < 0)
        return s_fail(c, fn, rc, "%s: %s", path, nerr);
    return GX_OK;
}

/* A tensor map: {dtype, shape, data} or {file} (dtype and shape then check
 * the file). The caller has checked the keys. */
static int s_tensor(s_ctx *c, const s_node *map, const char *path, gx_tensor **out)
{
    char kpath[192], sa[256], sb[256];
    int rc;
    gx_dtype dt = GX_DTYPE_COUNT;
    int ndim = -1;
    int64_t shape[GX_MAX_DIMS];

    *out = NULL;
    const s_node *data = s_lookup(c, map, "data", false, path, &rc);
    if (rc < 0)
        return rc;
    const s_node *file = s_lookup(c, map, "file", false, path, &rc);
    if (rc < 0)
        return rc;
    if (data && file)
        return s_fail(c, file, GX_EFORMAT, "%s: 'data' and 'file' are exclusive", path);
    if (!data && !file)
        return s_fail(c, map, GX_EFORMAT, "%s: needs 'data' (with dtype and shape) or 'file'",
                      path);
    const s_node *dtn = s_lookup(c, map, "dtype", data != NULL, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.dtype", path);
    if (dtn && (rc = s_dtype(c, dtn, kpath, &dt)) < 0)
        return rc;
    const s_node *shn = s_lookup(c, map, "shape", data != NULL, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.shape", path);
    if (shn && (rc = s_shape(c, shn, kpath, S_SHAPE_CONST, &ndim, shape)) < 0)
        return rc;

    if (data) {
        s_path(kpath, sizeof kpath, "%s.data", path);
        return s_inline(c, data, kpath, dt, ndim, shape, out);
    }
    s_path(kpath, sizeof kpath, "%s.file", path);
    gx_tensor *t;
    if ((rc = s_npy_file(c, file, kpath, &t)) < 0)
        return rc;
    if (dtn && t->dtype != dt) {
        rc = s_fail(c, dtn, GX_EDTYPE, "%s: dtype %s, but the file holds %s", path,
                    gx_dtype_name(dt), gx_dtype_name(t->dtype));
        gx_tensor_destroy(&t);
        return rc;
    }
    if (shn && (t->ndim != ndim || memcmp(t->shape, shape, sizeof(int64_t) * (size_t)ndim))) {
        rc = s_fail(c, shn, GX_ESHAPE, "%s: shape %s, but the file holds %s", path,
                    gx_shape_str(ndim, shape, sa, sizeof sa),
                    gx_shape_str(t->ndim, t->shape, sb, sizeof sb));
        gx_tensor_destroy(&t);
        return rc;
    }
    *out = t;
    return GX_OK;
}

/* ---- sections ----------------------------------------------------------- */

/* Calls fn for each item of the list under key (absent: nothing). */
typedef int (*s_item_fn)(s_ctx *c, gx_graph *g, const s_node *item, const char *path);

static int s_each(s_ctx *c, gx_graph *g, const s_node *root, const char *key, bool required,
                  s_item_fn fn)
{
    int rc;
    const s_node *list = s_lookup(c, root, key, required, "top level", &rc);
    if (!list)
        return rc;
    if ((rc = s_expect(c, list, S_SEQ, key)) < 0)
        return rc;
    char path[64];
    for (size_t i = 0; i < list->n; i++) {
        s_path(path, sizeof path, "%s[%zu]", key, i);
        const s_node *item = s_get(c, s_kid(c, list, i), list, path);
        if (!item)
            return c->status;
        if ((rc = fn(c, g, item, path)) < 0)
            return rc;
    }
    return GX_OK;
}

static int s_builder_fail(s_ctx *c, const s_node *n, int rc, const char *path,
                          const char *what)
{
    return s_fail(c, n, rc, "%s: cannot add %s: %s", path, what, gx_strerror(rc));
}

static int s_input(s_ctx *c, gx_graph *g, const s_node *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", NULL};
    char kpath[96];
    const char *name;
    gx_dtype dt;
    int ndim, rc;
    int64_t shape[GX_MAX_DIMS];

    if ((rc = s_expect(c, item, S_MAP, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    const s_node *nn = s_lookup(c, item, "name", true, path, &rc);
    if (!nn)
        return rc;
    const s_node *dn = s_lookup(c, item, "dtype", true, path, &rc);
    if (!dn)
        return rc;
    const s_node *sn = s_lookup(c, item, "shape", true, path, &rc);
    if (!sn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if ((rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.dtype", path);
    if ((rc = s_dtype(c, dn, kpath, &dt)) < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.shape", path);
    if ((rc = s_shape(c, sn, kpath, S_SHAPE_DECL, &ndim, shape)) < 0)
        return rc;
    if ((rc = gx_graph_add_input(g, name, dt, ndim, shape)) < 0)
        return s_builder_fail(c, item, rc, path, "input");
    return GX_OK;
}

static int s_output(s_ctx *c, gx_graph *g, const s_node *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", NULL};
    char kpath[96];
    const char *name;
    gx_dtype dt = GX_DTYPE_COUNT;
    int ndim = -1, rc;
    int64_t shape[GX_MAX_DIMS];

    if (item->type == S_SCALAR) {
        if ((rc = s_name(c, item, path, &name)) < 0)
            return rc;
    } else {
        if ((rc = s_expect(c, item, S_MAP, path)) < 0 ||
            (rc = s_check_keys(c, item, path, keys)) < 0)
            return rc;
        const s_node *nn = s_lookup(c, item, "name", true, path, &rc);
        if (!nn)
            return rc;
        s_path(kpath, sizeof kpath, "%s.name", path);
        if ((rc = s_name(c, nn, kpath, &name)) < 0)
            return rc;
        const s_node *dn = s_lookup(c, item, "dtype", false, path, &rc);
        if (rc < 0)
            return rc;
        s_path(kpath, sizeof kpath, "%s.dtype", path);
        if (dn && (rc = s_dtype(c, dn, kpath, &dt)) < 0)
            return rc;
        const s_node *sn = s_lookup(c, item, "shape", false, path, &rc);
        if (rc < 0)
            return rc;
        s_path(kpath, sizeof kpath, "%s.shape", path);
        if (sn && (rc = s_shape(c, sn, kpath, S_SHAPE_DECL, &ndim, shape)) < 0)
            return rc;
        if (sn && !dn)
            return s_fail(c, sn, GX_EFORMAT, "%s: a declared shape needs a dtype too", path);
    }
    if ((rc = gx_graph_add_output_decl(g, name, dt, ndim, shape)) < 0)
        return s_builder_fail(c, item, rc, path, "output");
    return GX_OK;
}

static int s_constant(s_ctx *c, gx_graph *g, const s_node *item, const char *path)
{
    static const char *const keys[] = {"name", "dtype", "shape", "data", "file", NULL};
    char kpath[96];
    const char *name;
    gx_tensor *t;
    int rc;

    if ((rc = s_expect(c, item, S_MAP, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    const s_node *nn = s_lookup(c, item, "name", true, path, &rc);
    if (!nn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if ((rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    if ((rc = s_tensor(c, item, path, &t)) < 0)
        return rc;
    if ((rc = gx_graph_add_const(g, name, &t)) < 0)
        return s_builder_fail(c, item, rc, path, "constant");
    return GX_OK;
}

/* The items of a list attribute as numbers, into ints and floats (v->n
 * each); *any_float tells whether one is not an integer. */
static int s_attr_list(s_ctx *c, const s_node *v, const char *path, int64_t *ints,
                       double *floats, bool *any_float)
{
    char ipath[192];
    int rc;
    for (size_t i = 0; i < v->n; i++) {
        s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
        const s_node *e = s_get(c, s_kid(c, v, i), v, ipath);
        const char *s = NULL;
        if (!e)
            return c->status;
        if ((rc = s_text(c, e, ipath, &s)) < 0)
            return rc;
        s_num kind = s_is_plain(e) ? s_number(s, &ints[i], &floats[i]) : S_NUM_NONE;
        if (kind == S_NUM_NONE)
            return s_fail(c, e, GX_EATTR,
                          "%s: '%s' is not a number (list attributes hold ints or floats)", ipath,
                          s);
        if (kind == S_NUM_RANGE)
            return s_fail(c, e, GX_EATTR, "%s: %s is out of range", ipath, s);
        *any_float |= kind == S_NUM_FLOAT;
    }
    return GX_OK;
}

static int s_graph(s_ctx *c, const s_node *root, const char *path, gx_graph **out);

/* One attribute, typed from its YAML form (see docs/graph-format.md): a
 * scalar, a list, a tensor map, or a graph map (one with `nodes`). */
static int s_attr(s_ctx *c, gx_node *node, const char *name, const s_node *v,
                  const char *path)
{
    int rc;
    if (v->type == S_SCALAR) {
        const char *s = NULL;
        int64_t iv = 0;
        double fv = 0;
        if ((rc = s_text(c, v, path, &s)) < 0)
            return rc;
        s_num kind = s_is_plain(v) ? s_number(s, &iv, &fv) : S_NUM_NONE;
        if (kind == S_NUM_RANGE)
            return s_fail(c, v, GX_EATTR, "%s: %s is out of range", path, s);
        rc = kind == S_NUM_INT     ? gx_node_set_int(node, name, iv)
             : kind == S_NUM_FLOAT ? gx_node_set_float(node, name, fv)
                                   : gx_node_set_string(node, name, s);
    } else if (v->type == S_SEQ) {
        size_t count = (size_t)v->n;
        int64_t *ints = malloc((count ? count : 1) * sizeof *ints);
        double *floats = malloc((count ? count : 1) * sizeof *floats);
        bool any_float = false;
        int lrc = ints && floats ? s_attr_list(c, v, path, ints, floats, &any_float)
                                 : s_fail(c, v, GX_ENOMEM, "%s: out of memory", path);
        rc = lrc < 0     ? lrc
             : any_float ? gx_node_set_floats(node, name, floats, count)
                         : gx_node_set_ints(node, name, ints, count);
        free(ints);
        free(floats);
        if (lrc < 0)
            return lrc; /* reported */
    } else if (s_lookup(c, v, "nodes", false, path, &rc)) {
        gx_graph *sub = NULL;
        if ((rc = s_graph(c, v, path, &sub)) < 0)
            return rc;
        rc = gx_node_set_graph(node, name, &sub);
    } else {
        static const char *const keys[] = {"dtype", "shape", "data", "file", NULL};
        gx_tensor *t;
        if ((rc = s_check_keys(c, v, path, keys)) < 0 || (rc = s_tensor(c, v, path, &t)) < 0)
            return rc;
        rc = gx_node_set_tensor(node, name, &t);
    }
    if (rc < 0)
        return s_fail(c, v, rc, "%s: cannot set attribute: %s", path, gx_strerror(rc));
    return GX_OK;
}

/* A list of value names; "" (omitted optional input) only if allow_empty. */
static int s_names(s_ctx *c, const s_node *list, const char *path, bool allow_empty,
                   const char ***out, size_t *count)
{
    int rc = s_expect(c, list, S_SEQ, path);
    if (rc < 0)
        return rc;
    size_t n = (size_t)list->n;
    const char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return s_fail(c, list, GX_ENOMEM, "%s: out of memory", path);
    char ipath[128];
    for (size_t i = 0; i < n; i++) {
        s_path(ipath, sizeof ipath, "%s[%zu]", path, i);
        const s_node *e = s_get(c, s_kid(c, list, i), list, ipath);
        rc = !e            ? c->status
             : allow_empty ? s_text(c, e, ipath, &names[i])
                           : s_name(c, e, ipath, &names[i]);
        if (rc < 0) {
            free(names);
            return rc;
        }
    }
    *out = names;
    *count = n;
    return GX_OK;
}

static int s_op_node(s_ctx *c, gx_graph *g, const s_node *item, const char *path)
{
    static const char *const keys[] = {"op", "name", "inputs", "outputs", "attrs", NULL};
    char kpath[96], apath[192];
    const char *op, *name = NULL;
    const char **ins = NULL, **outs = NULL;
    size_t n_in = 0, n_out = 0;
    int rc;

    if ((rc = s_expect(c, item, S_MAP, path)) < 0 ||
        (rc = s_check_keys(c, item, path, keys)) < 0)
        return rc;
    const s_node *opn = s_lookup(c, item, "op", true, path, &rc);
    if (!opn)
        return rc;
    s_path(kpath, sizeof kpath, "%s.op", path);
    if ((rc = s_name(c, opn, kpath, &op)) < 0)
        return rc;
    const s_node *nn = s_lookup(c, item, "name", false, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.name", path);
    if (nn && (rc = s_name(c, nn, kpath, &name)) < 0)
        return rc;
    const s_node *in = s_lookup(c, item, "inputs", true, path, &rc);
    if (!in)
        return rc;
    const s_node *out = s_lookup(c, item, "outputs", true, path, &rc);
    if (!out)
        return rc;
    const s_node *attrs = s_lookup(c, item, "attrs", false, path, &rc);
    if (rc < 0)
        return rc;
    s_path(kpath, sizeof kpath, "%s.attrs", path);
    if (attrs && (rc = s_expect(c, attrs, S_MAP, kpath)) < 0)
        return rc;

    s_path(kpath, sizeof kpath, "%s.inputs", path);
    if ((rc = s_names(c, in, kpath, true, &ins, &n_in)) < 0)
        goto free_names;
    s_path(kpath, sizeof kpath, "%s.outputs", path);
    if ((rc = s_names(c, out, kpath, false, &outs, &n_out)) < 0)
        goto free_names;
    gx_node *node = gx_graph_add_node(g, op, name, n_in, ins, n_out, outs);
    if (!node) {
        rc = s_fail(c, item, GX_ENOMEM, "%s: cannot add node '%s'", path, op);
        goto free_names;
    }
    if (!attrs)
        goto free_names;
    s_path(kpath, sizeof kpath, "%s.attrs", path);
    if (attrs->n > S_MAX_ATTRS) {
        rc = s_fail(c, attrs, GX_ELIMIT, "%s: more than %d attributes", kpath, S_MAX_ATTRS);
        goto free_names;
    }
    for (size_t i = 0; i < attrs->n; i++) {
        const s_node *k = s_get(c, s_kid(c, attrs, 2 * i), attrs, kpath);
        const char *aname;
        if (!k) {
            rc = c->status;
            goto free_names;
        }
        if ((rc = s_name(c, k, kpath, &aname)) < 0)
            goto free_names;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(s_str(c, &c->t.nodes[s_kid(c, attrs, 2 * j)]), aname) == 0) {
                rc = s_fail(c, k, GX_EATTR, "%s: duplicate attribute '%s'", kpath, aname);
                goto free_names;
            }
        }
        s_path(apath, sizeof apath, "%s.attrs.%s", path, aname);
        const s_node *v = s_get(c, s_kid(c, attrs, 2 * i + 1), k, apath);
        if (!v) {
            rc = c->status;
            goto free_names;
        }
        if ((rc = s_attr(c, node, aname, v, apath)) < 0)
            goto free_names;
    }
free_names:
    free(ins);
    free(outs);
    return rc;
}

/* ---- entry points ------------------------------------------------------- */

/* Line and column (1-based, in characters) of byte offset off in text. */
static void s_offset_pos(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; text && i < off && i < len; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            ++*col;
        }
    }
}

static int s_syntax_error(s_ctx *c, yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_MEMORY_ERROR)
        return gx_errf(c->err, c->errlen, GX_ENOMEM, "%s:1:1: out of memory parsing YAML", c->src);
    if (p->error == YAML_READER_ERROR) {
        size_t line, col;
        s_offset_pos(text, len, p->problem_offset, &line, &col);
        return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:%zu:%zu: %s", c->src, line, col,
                       p->problem ? p->problem : "invalid input");
    }
    char ctxbuf[256] = "";
    if (p->context)
        snprintf(ctxbuf, sizeof ctxbuf, " (%s at %zu:%zu)", p->context, p->context_mark.line + 1,
                 p->context_mark.column + 1);
    return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:%zu:%zu: YAML syntax error: %s%s", c->src,
                   p->problem_mark.line + 1, p->problem_mark.column + 1,
                   p->problem ? p->problem : "malformed YAML", ctxbuf);
}

/* Build the graph from the loaded document. */
/* A graph map: the whole file, or a subgraph attribute (If, Loop). */
static int s_graph(s_ctx *c, const s_node *root, const char *path, gx_graph **out)
{
    static const char *const keys[] = {"name", "inputs", "outputs", "constants", "nodes", NULL};
    const char *name = NULL;
    int rc;

    if (root->type != S_MAP)
        return s_fail(c, root, GX_EFORMAT, "%s: expected a map, got %s", path, s_kind(root));
    if ((rc = s_check_keys(c, root, path, keys)) < 0)
        return rc;
    const s_node *nn = s_lookup(c, root, "name", false, path, &rc);
    if (rc < 0)
        return rc;
    if (nn && (rc = s_name(c, nn, "name", &name)) < 0)
        return rc;
    gx_graph *g = gx_graph_new(name);
    if (!g)
        return gx_errf(c->err, c->errlen, GX_ENOMEM, "%s:1:1: out of memory", c->src);
    if ((rc = s_each(c, g, root, "inputs", false, s_input)) < 0 ||
        (rc = s_each(c, g, root, "constants", false, s_constant)) < 0 ||
        (rc = s_each(c, g, root, "nodes", true, s_op_node)) < 0 ||
        (rc = s_each(c, g, root, "outputs", true, s_output)) < 0) {
        gx_graph_destroy(&g);
        return rc;
    }
    *out = g;
    return GX_OK;
}

static int s_build(s_ctx *c, gx_graph **out)
{
    const s_node *root = c->t.has_root ? &c->t.nodes[c->t.root] : NULL;
    if (!root)
        return gx_errf(c->err, c->errlen, GX_EFORMAT, "%s:1:1: empty graph file", c->src);
    return s_graph(c, root, "top level", out);
}

/* Parse the first document of the stream into c->t; refuse a second. */
static int s_load(s_ctx *c, yaml_parser_t *p, const char *text, size_t len)
{
    yaml_event_t e;
    bool done = false, end = false;
    int rc = GX_OK;
    while (!done && !end) {
        if (!yaml_parser_parse(p, &e))
            return s_syntax_error(c, p, text, len);
        end = e.type == YAML_STREAM_END_EVENT;
        rc = s_event(c, &e, &done);
        yaml_event_delete(&e);
        if (rc < 0)
            return rc;
    }
    if (end)
        return GX_OK; /* no document at all */
    /* A second document is a mistake (a stray '---'), not something to
     * ignore. */
    if (!yaml_parser_parse(p, &e))
        return s_syntax_error(c, p, text, len);
    if (e.type != YAML_STREAM_END_EVENT)
        rc = s_fail_at(c, &e.start_mark, GX_EFORMAT,
                       "more than one YAML document in a graph file");
    yaml_event_delete(&e);
    return rc;
}

GX_EXPORT int gx_graph_parse_yaml(const char *text, size_t len, const char *base_dir,
                                  const char *source_name, gx_graph **out, char *err,
                                  size_t errlen)
{
    const char *src = source_name ? source_name : "<yaml>";
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "%s:1:1: no output graph", src);
    *out = NULL;
    if (!text && len)
        return gx_errf(err, errlen, GX_EINVAL, "%s:1:1: NULL text", src);
    if (len > S_MAX_FILE)
        return gx_errf(err, errlen, GX_ELIMIT, "%s:1:1: graph file is %zu bytes, the limit is %zu",
                       src, len, S_MAX_FILE);

    yaml_parser_t parser;
    s_ctx c = {.src = src, .base_dir = base_dir, .err = err, .errlen = errlen};
    int rc;

    if (!yaml_parser_initialize(&parser))
        return gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", src);
    yaml_parser_set_input_string(&parser, (const unsigned char *)(text ? text : ""), len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    rc = s_load(&c, &parser, text, len);
    yaml_parser_delete(&parser);
    if (rc == GX_OK) {
        /* Numbers are read with strtod, which follows LC_NUMERIC: read them
         * in the C locale whatever the host program set (this thread only). */
        locale_t cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        locale_t prev = cloc ? uselocale(cloc) : (locale_t)0;
        c.max_visits = 4 * c.t.n_nodes + 4096;
        rc = s_build(&c, out);
        if (cloc) {
            uselocale(prev);
            freelocale(cloc);
        }
    }
    s_tree_fini(&c.t);
    return rc;
}

/* Read a whole file of at most S_MAX_FILE bytes. */
static int s_read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s:1:1: %s", path, strerror(errno));
    struct stat st;
    int rc = GX_OK;
    char *buf = NULL;
    size_t cap = 1 << 16, n = 0;
    if (fstat(fileno(f), &st) != 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: %s", path, strerror(errno));
        goto close_file;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: is a directory", path);
        goto close_file;
    }
    if (S_ISREG(st.st_mode)) {
        if ((uint64_t)st.st_size > S_MAX_FILE) {
            rc = gx_errf(err, errlen, GX_ELIMIT,
                         "%s:1:1: graph file is %lld bytes, the limit is %zu", path,
                         (long long)st.st_size, S_MAX_FILE);
            goto close_file;
        }
        cap = (size_t)st.st_size + 1;
    }
    for (;;) {
        if (n == cap || !buf) {
            size_t ncap = buf ? cap * 2 : cap;
            char *nb;
            if (buf && cap > S_MAX_FILE) {
                rc = gx_errf(err, errlen, GX_ELIMIT, "%s:1:1: graph file exceeds %zu bytes",
                             path, S_MAX_FILE);
                goto close_file;
            }
            if (!(nb = realloc(buf, ncap))) {
                rc = gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", path);
                goto close_file;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = gx_errf(err, errlen, GX_EIO, "%s:1:1: read error", path);
            break;
        }
    }
close_file:
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return GX_OK;
}

GX_EXPORT int gx_graph_load_yaml(const char *path, gx_graph **out, char *err, size_t errlen)
{
    if (!out)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_yaml: no output graph");
    *out = NULL;
    if (!path)
        return gx_errf(err, errlen, GX_EINVAL, "gx_graph_load_yaml: no path");
    char *text = NULL, *dir;
    size_t len = 0;
    int rc = s_read_file(path, &text, &len, err, errlen);
    if (rc < 0)
        return rc;
    const char *slash = strrchr(path, '/');
    if (!slash)
        dir = gx_strdup(".");
    else if (slash == path)
        dir = gx_strdup("/");
    else if ((dir = malloc((size_t)(slash - path) + 1)) != NULL) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
    }
    if (!dir)
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s:1:1: out of memory", path);
    else
        rc = gx_graph_parse_yaml(text, len, dir, path, out, err, errlen);
    free(dir);
    free(text);
    return rc;
}
