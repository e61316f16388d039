/*
 * Fuzz target: a gexecd config file (gxd_config_load, which takes a path:
 * the bytes go into a memfd named through /proc/self/fd). A config that
 * loads is dumped (gexecd --print-config) and the dump must load into a
 * fresh config and dump identically.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "core/internal.h"
#include "tests/fuzz/fuzz.h"

/* gxd_config_dump into a new buffer (caller frees); NULL on ENOMEM. */
static char *s_dump(const gxd_config *c, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    gxd_config_dump(c, f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Load bytes into a fresh config; rc of gxd_config_load (GX_EIO if no memfd). */
static int s_load(gxd_config *c, const void *data, size_t size, char *err, size_t errlen)
{
    char path[64];
    gxd_config_init(c);
    int fd = gx_fuzz_memfd("gx_fuzz_config", data, size, path, sizeof path);
    if (fd < 0)
        return GX_EIO;
    int rc = gxd_config_load(c, path, err, errlen);
    close(fd);
    return rc;
}

int gx_fuzz_config(const uint8_t *data, size_t size)
{
    char err[1024];
    gxd_config c, again;
    int rc = s_load(&c, data, size, err, sizeof err);
    size_t n1 = 0, n2 = 0;
    char *d1 = rc == GX_OK ? s_dump(&c, &n1) : NULL;
    if (d1) {
        rc = s_load(&again, d1, n1, err, sizeof err);
        if (rc != GX_OK) {
            fprintf(stderr, "fuzz: the dump of a loaded config does not load: %s\n--- dump:\n%s",
                    err, d1);
            abort();
        }
        char *d2 = s_dump(&again, &n2);
        if (d2 && (n1 != n2 || memcmp(d1, d2, n1) != 0)) {
            fprintf(stderr, "fuzz: a dumped config reloads differently\n--- first:\n%s--- second:\n%s",
                    d1, d2);
            abort();
        }
        free(d2);
        gxd_config_fini(&again);
    }
    free(d1);
    gxd_config_fini(&c);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_config)
