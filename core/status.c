/* Status codes and the small error/string helpers every module uses. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

GX_EXPORT const char *gx_strerror(int status)
{
    switch (status) {
#define GX_STATUS_MSG(name, value, msg)                                       \
    case value:                                                               \
        return msg;
        GX_STATUS_LIST(GX_STATUS_MSG)
#undef GX_STATUS_MSG
    }
    return "unknown status";
}

GX_EXPORT const char *gx_status_name(int status)
{
    switch (status) {
#define GX_STATUS_NAME(name, value, msg)                                      \
    case value:                                                               \
        return "GX_" #name;
        GX_STATUS_LIST(GX_STATUS_NAME)
#undef GX_STATUS_NAME
    }
    return "GX_EUNKNOWN";
}

GX_EXPORT int gx_status_from_name(const char *name)
{
#define GX_STATUS_MATCH(sym, value, msg)                                      \
    if (name && strcmp(name, "GX_" #sym) == 0)                                \
        return value;
    GX_STATUS_LIST(GX_STATUS_MATCH)
#undef GX_STATUS_MATCH
    return GX_EINTERNAL;
}

int gx_errf(char *err, size_t errlen, int status, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}

char *gx_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

bool gx_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap : 4;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return false;
        ncap *= 2;
    }
    void *p = realloc(*(void **)arr, ncap * elem);
    if (!p)
        return false;
    *(void **)arr = p;
    *cap = ncap;
    return true;
}

void gx_strbuf_put(gx_strbuf *b, const char *s, size_t n)
{
    if (b->oom || !gx_grow(&b->p, &b->cap, b->n + n + 1, 1)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void gx_strbuf_printf(gx_strbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof tmp) {
        gx_strbuf_put(b, tmp, (size_t)n);
        return;
    }
    if (b->oom || !gx_grow(&b->p, &b->cap, b->n + (size_t)n + 1, 1)) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void gx_strbuf_json_str(gx_strbuf *b, const char *s, size_t n)
{
    char esc[8];
    gx_strbuf_put(b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch != '"' && ch != '\\' && ch >= 0x20) {
            run++;
            continue;
        }
        gx_strbuf_put(b, s + i - run, run);
        run = 0;
        if (ch < 0x20)
            gx_strbuf_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", ch));
        else
            gx_strbuf_put(b, ch == '"' ? "\\\"" : "\\\\", 2);
    }
    gx_strbuf_put(b, s + n - run, run);
    gx_strbuf_put(b, "\"", 1);
}
