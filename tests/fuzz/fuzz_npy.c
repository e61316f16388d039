/*
 * Fuzz target: .npy bytes. gx_npy_parse (memory) and gx_npy_load (the same
 * bytes as a file) must agree: both refuse with the same status, or both
 * return the same tensor. A tensor that loads is written back with
 * gx_npy_save (where numpy has its dtype) and must load back unchanged.
 * Files are memfds, named through /proc/self/fd, so nothing touches disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "tests/fuzz/fuzz.h"

static void s_fail(const char *what, const char *err)
{
    fprintf(stderr, "fuzz: %s%s%s\n", what, err ? ": " : "", err ? err : "");
    abort();
}

static bool s_same(const gx_tensor *a, const gx_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->ndim) == 0 &&
           a->nbytes == b->nbytes && (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

static void s_check(const gx_tensor *t)
{
    size_t nbytes;
    if (t->ndim < 0 || t->ndim > GX_MAX_DIMS ||
        !gx_shape_nbytes(t->dtype, t->ndim, t->shape, &nbytes) || nbytes != t->nbytes ||
        (t->nbytes && !t->data) || (uintptr_t)t->data % GX_ALIGN != 0)
        s_fail("gx_npy_parse returned an inconsistent tensor", NULL);
}

int gx_fuzz_npy(const uint8_t *data, size_t size)
{
    char err[512], ferr[512], path[64];
    gx_tensor *t = NULL, *f = NULL;
    int rc = gx_npy_parse(data, size, &t, err, sizeof err);
    if (rc == GX_OK)
        s_check(t);
    else if (t)
        s_fail("gx_npy_parse failed but returned a tensor", err);

    int fd = gx_fuzz_memfd("gx_fuzz_npy", data, size, path, sizeof path);
    if (fd >= 0) {
        int frc = gx_npy_load(path, &f, ferr, sizeof ferr);
        if (frc != rc) {
            fprintf(stderr, "fuzz: gx_npy_parse says %s (%s), gx_npy_load says %s (%s)\n",
                    gx_status_name(rc), rc ? err : "", gx_status_name(frc), frc ? ferr : "");
            abort();
        }
        if (rc == GX_OK && !s_same(t, f))
            s_fail("gx_npy_parse and gx_npy_load return different tensors", NULL);
        gx_tensor_destroy(&f);
        /* Save what parsed, load it back. */
        if (rc == GX_OK && ftruncate(fd, 0) == 0) {
            int src = gx_npy_save(path, t, err, sizeof err);
            if (src == GX_OK) {
                if (gx_npy_load(path, &f, err, sizeof err) != GX_OK)
                    s_fail("a tensor gx_npy_save wrote does not load back", err);
                if (!s_same(t, f))
                    s_fail("a tensor gx_npy_save wrote loads back different", NULL);
                gx_tensor_destroy(&f);
            } else if (src != GX_EDTYPE) {
                s_fail("gx_npy_save failed", err);
            }
        }
        close(fd);
    }
    gx_tensor_destroy(&t);
    return 0;
}

GX_FUZZ_ENTRY(gx_fuzz_npy)
