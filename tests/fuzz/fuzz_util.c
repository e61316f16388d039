/* Helpers every fuzz target shares. See fuzz.h. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

uint32_t gx_fuzz_hash(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h;
}

int gx_fuzz_memfd(const char *name, const void *data, size_t size, char *path, size_t pathlen)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, (const char *)data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    if (access(path, R_OK | W_OK) != 0) { /* no /proc: skip the file checks */
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- the artifact targets' graph ---- */

static void s_artifact_const(gx_graph *g, const char *name, int ndim, const int64_t *shape)
{
    gx_tensor *t = gx_tensor_new(GX_F32, ndim, shape);
    float *d = gx_tensor_data(t);
    for (int64_t i = 0; i < gx_tensor_numel(t); i++)
        d[i] = (float)(i % 7) * 0.25f - 0.5f;
    gx_graph_add_const(g, name, &t);
}

gx_graph *gx_fuzz_artifact_graph(void)
{
    gx_graph *g = gx_graph_new("mlp");
    gx_graph_add_input(g, "x", GX_F32, 2, (const int64_t[]){4, 16});
    s_artifact_const(g, "w1", 2, (const int64_t[]){16, 24});
    s_artifact_const(g, "b1", 1, (const int64_t[]){24});
    s_artifact_const(g, "w2", 2, (const int64_t[]){24, 8});
    const char *const n[][3] = {{"MatMul", "x", "w1"}, {"Add", "m1", "b1"}, {"Relu", "a1", NULL},
                                {"MatMul", "r1", "w2"}, {"Softmax", "m2", NULL}};
    const char *const out[] = {"m1", "a1", "r1", "m2", "y"};
    for (size_t i = 0; i < 5; i++)
        gx_graph_add_node(g, n[i][0], NULL, n[i][2] ? 2 : 1, &n[i][1], 1, &out[i]);
    gx_graph_add_output(g, "y");
    return g;
}
