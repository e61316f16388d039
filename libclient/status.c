/* Status codes and the small error/string helpers every module uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libclient/internal.h"

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
