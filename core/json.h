/*
 * A small JSON reader (a tree of values), for the JSON the daemon writes:
 * gexec-submit renders `explain` from it and the tests check it. Depends on
 * libc only, so programs that link just the public libgexec can compile it
 * in. Not installed.
 *
 *     char err[128];
 *     gx_json *j = gx_json_parse(text, err, sizeof err);
 *     double arena = gx_json_num(gx_json_path(j, "memory.arena_bytes"), -1);
 *     gx_json_destroy(&j);
 */
#ifndef GX_JSON_H
#define GX_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gx_json_type {
    GX_JSON_NULL,
    GX_JSON_BOOL,
    GX_JSON_NUM,
    GX_JSON_STR,
    GX_JSON_ARR,
    GX_JSON_OBJ,
} gx_json_type;

typedef struct gx_json {
    gx_json_type type;
    bool b;
    double num;
    char *str;             /* STR: unescaped, NUL-terminated (UTF-8) */
    size_t n;              /* ARR, OBJ: elements */
    struct gx_json *items; /* ARR, OBJ: the elements */
    char **keys;           /* OBJ: key of items[i] */
} gx_json;

/* The value text holds (nesting at most 64 deep, nothing after it). A new
 * tree the caller destroys, or NULL with the reason and byte offset in err. */
gx_json *gx_json_parse(const char *text, char *err, size_t errlen);
void gx_json_destroy(gx_json **j);

/* Member key of object o (the first one), or NULL (absent, o NULL or not
 * an object). */
const gx_json *gx_json_get(const gx_json *o, const char *key);
/* Members by a dotted path ("memory.arena_bytes"); NULL where one is missing. */
const gx_json *gx_json_path(const gx_json *o, const char *path);
/* Element i of array a, or NULL. */
const gx_json *gx_json_at(const gx_json *a, size_t i);
/* Elements of an array (0 for anything else, NULL included). */
size_t gx_json_len(const gx_json *a);
/* The number, or def when v is NULL or not a number. */
double gx_json_num(const gx_json *v, double def);
/* The string, or def when v is NULL or not a string. */
const char *gx_json_str(const gx_json *v, const char *def);
/* true or false, or def when v is not a boolean. */
bool gx_json_bool(const gx_json *v, bool def);

#endif
