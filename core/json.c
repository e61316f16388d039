/* The JSON reader. See json.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

#define GX_JSON_MAX_DEPTH 64

typedef struct s_in {
    const char *s, *p;
    char *err;
    size_t errlen;
    bool failed;
} s_in;

static bool s_fail(s_in *in, const char *what)
{
    if (!in->failed && in->err && in->errlen)
        snprintf(in->err, in->errlen, "JSON: %s at byte %zu", what, (size_t)(in->p - in->s));
    in->failed = true;
    return false;
}

static void s_ws(s_in *in)
{
    while (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r')
        in->p++;
}

static void s_free(gx_json *j)
{
    for (size_t i = 0; i < j->n; i++) {
        s_free(&j->items[i]);
        if (j->keys)
            free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->str);
}

static int s_hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v = v * 16 + (c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1000000);
    }
    return v < 0 ? -1 : v;
}

static size_t s_utf8(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string literal at in->p (the opening quote) into a new buffer. */
static char *s_string(s_in *in)
{
    const char *p = ++in->p;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    while (out && *p != '"') {
        char tmp[4];
        size_t k = 1;
        unsigned char c = (unsigned char)*p;
        if (c == '\0' || c < 0x20) {
            in->p = p;
            s_fail(in, c ? "control character in a string" : "unterminated string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            tmp[0] = (char)c;
            p++;
        } else {
            char e = p[1];
            const char *map = strchr("\"\\/bfnrt", e);
            if (e && map) {
                tmp[0] = "\"\\/\b\f\n\r\t"[map - "\"\\/bfnrt"];
                p += 2;
            } else if (e == 'u' && s_hex4(p + 2) >= 0) {
                unsigned cp = (unsigned)s_hex4(p + 2);
                p += 6;
                if (cp >= 0xd800 && cp < 0xdc00 && p[0] == '\\' && p[1] == 'u' &&
                    s_hex4(p + 2) >= 0xdc00 && s_hex4(p + 2) < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned)s_hex4(p + 2) - 0xdc00);
                    p += 6;
                }
                k = s_utf8(cp, tmp);
            } else {
                in->p = p;
                s_fail(in, "bad escape in a string");
                free(out);
                return NULL;
            }
        }
        if (n + k + 1 > cap) {
            char *grown = realloc(out, cap * 2 + k);
            if (!grown)
                free(out);
            out = grown;
            cap = cap * 2 + k;
        }
        if (out) {
            memcpy(out + n, tmp, k);
            n += k;
        }
    }
    if (!out) {
        s_fail(in, "out of memory");
        return NULL;
    }
    out[n] = '\0';
    in->p = p + 1;
    return out;
}

static bool s_value(s_in *in, gx_json *v, int depth);

/* Elements of an array or members of an object, up to close. */
static bool s_container(s_in *in, gx_json *v, int depth, bool obj)
{
    char close = obj ? '}' : ']';
    size_t cap = 0;
    in->p++;
    s_ws(in);
    if (*in->p == close) {
        in->p++;
        return true;
    }
    for (;;) {
        if (v->n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            gx_json *items = realloc(v->items, ncap * sizeof *items);
            if (items)
                v->items = items;
            char **keys = obj ? realloc(v->keys, ncap * sizeof *keys) : NULL;
            if (keys)
                v->keys = keys;
            if (!items || (obj && !keys))
                return s_fail(in, "out of memory");
            cap = ncap;
        }
        char *key = NULL;
        s_ws(in);
        if (obj) {
            if (*in->p != '"')
                return s_fail(in, "expected a member name");
            if (!(key = s_string(in)))
                return false;
            s_ws(in);
            if (*in->p != ':') {
                free(key);
                return s_fail(in, "expected ':'");
            }
            in->p++;
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (obj)
            v->keys[v->n] = key;
        v->n++;
        if (!s_value(in, &v->items[v->n - 1], depth + 1))
            return false;
        s_ws(in);
        if (*in->p == close) {
            in->p++;
            return true;
        }
        if (*in->p != ',')
            return s_fail(in, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        in->p++;
    }
}

static bool s_value(s_in *in, gx_json *v, int depth)
{
    if (depth > GX_JSON_MAX_DEPTH)
        return s_fail(in, "nested too deep");
    s_ws(in);
    const char *p = in->p;
    if (*p == '{' || *p == '[') {
        v->type = *p == '{' ? GX_JSON_OBJ : GX_JSON_ARR;
        return s_container(in, v, depth, *p == '{');
    }
    if (*p == '"') {
        v->type = GX_JSON_STR;
        return (v->str = s_string(in)) != NULL;
    }
    if (strncmp(p, "null", 4) == 0) {
        in->p += 4;
        return true;
    }
    if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
        v->type = GX_JSON_BOOL;
        v->b = *p == 't';
        in->p += v->b ? 4 : 5;
        return true;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        char *end;
        v->type = GX_JSON_NUM;
        v->num = strtod(p, &end);
        if (end == p)
            return s_fail(in, "bad number");
        in->p = end;
        return true;
    }
    return s_fail(in, *p ? "unexpected character" : "unexpected end");
}

gx_json *gx_json_parse(const char *text, char *err, size_t errlen)
{
    s_in in = {text, text, err, errlen, false};
    gx_json *j = calloc(1, sizeof *j);
    if (!j || !text) {
        free(j);
        if (err && errlen)
            snprintf(err, errlen, "JSON: %s", text ? "out of memory" : "no text");
        return NULL;
    }
    if (s_value(&in, j, 0)) {
        s_ws(&in);
        if (*in.p == '\0')
            return j;
        s_fail(&in, "trailing text");
    }
    gx_json_destroy(&j);
    return NULL;
}

void gx_json_destroy(gx_json **jp)
{
    if (!jp || !*jp)
        return;
    s_free(*jp);
    free(*jp);
    *jp = NULL;
}

const gx_json *gx_json_get(const gx_json *o, const char *key)
{
    if (!o || o->type != GX_JSON_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return &o->items[i];
    return NULL;
}

const gx_json *gx_json_path(const gx_json *o, const char *path)
{
    char key[128];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = gx_json_get(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

const gx_json *gx_json_at(const gx_json *a, size_t i)
{
    return a && a->type == GX_JSON_ARR && i < a->n ? &a->items[i] : NULL;
}

size_t gx_json_len(const gx_json *a)
{
    return a && a->type == GX_JSON_ARR ? a->n : 0;
}

double gx_json_num(const gx_json *v, double def)
{
    return v && v->type == GX_JSON_NUM ? v->num : def;
}

const char *gx_json_str(const gx_json *v, const char *def)
{
    return v && v->type == GX_JSON_STR ? v->str : def;
}

bool gx_json_bool(const gx_json *v, bool def)
{
    return v && v->type == GX_JSON_BOOL ? v->b : def;
}
