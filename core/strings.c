/*
 * String tensors' storage (docs/strings.md): a tensor's own string store,
 * which backs the handles of a string tensor the client library or the
 * wire decoder made, and a job's string heap, which backs the strings the
 * kernels make while the job runs. Both are lists of blocks of records
 * (gx_strrec) that never move; a store grows without bound (its tensor
 * was already checked against the limits), a heap is bounded.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* A block of records. */
typedef struct gx_strblock {
    struct gx_strblock *next;
    size_t used, cap;
    _Alignas(8) char mem[];
} gx_strblock;

#define S_BLOCK_MIN ((size_t)4096)

/* Room for need bytes at the head of *list (a new block when the head
 * has none); NULL on ENOMEM. */
static void *s_take(gx_strblock **list, size_t need)
{
    gx_strblock *b = *list;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > S_BLOCK_MIN ? need : S_BLOCK_MIN;
        if (!(b = malloc(sizeof *b + cap)))
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = *list;
        *list = b;
    }
    void *p = b->mem + b->used;
    b->used += need;
    return p;
}

static void s_free_blocks(gx_strblock *b)
{
    while (b) {
        gx_strblock *next = b->next;
        free(b);
        b = next;
    }
}

bool gx_str_eq(const gx_strrec *a, const gx_strrec *b)
{
    size_t n = gx_str_len(a);
    return n == gx_str_len(b) && (n == 0 || memcmp(a->bytes, b->bytes, n) == 0);
}

const gx_strrec *gx_strrec_write(void *mem, const char *s, size_t n)
{
    gx_strrec *r = mem;
    r->len = n;
    if (s && n)
        memcpy(r->bytes, s, n);
    else if (n)
        memset(r->bytes, 0, n);
    r->bytes[n] = '\0';
    return r;
}

const gx_strrec *gx_tensor_str_add(gx_tensor *t, const char *s, size_t n, bool *ok)
{
    *ok = true;
    if (n == 0)
        return NULL;
    /* the wire encodes a string of at most 2^32 - 1 bytes */
    void *mem = n <= UINT32_MAX ? s_take(&t->strs, gx_strrec_size(n)) : NULL;
    if (!mem) {
        *ok = false;
        return NULL;
    }
    return gx_strrec_write(mem, s, n);
}

void gx_tensor_strs_free(gx_tensor *t)
{
    s_free_blocks(t->strs);
    t->strs = NULL;
}

GX_EXPORT gx_tensor *gx_tensor_new_strings(int ndim, const int64_t *shape,
                                           const char *const *strs, const size_t *lens)
{
    gx_tensor *t = gx_tensor_new(GX_STRING, ndim, shape);
    if (!t || (t->numel > 0 && !strs)) {
        gx_tensor_destroy(&t);
        return NULL;
    }
    const gx_strrec **h = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        bool ok;
        const char *s = strs[i] ? strs[i] : "";
        h[i] = gx_tensor_str_add(t, s, lens && strs[i] ? lens[i] : strlen(s), &ok);
        if (!ok) {
            gx_tensor_destroy(&t);
            return NULL;
        }
    }
    return t;
}

GX_EXPORT const char *gx_tensor_string(const gx_tensor *t, int64_t i, size_t *len)
{
    if (!t || t->kind != GX_KIND_TENSOR || t->dtype != GX_STRING || i < 0 || i >= t->numel)
        return NULL;
    const gx_strrec *r = ((const gx_strrec *const *)t->data)[i];
    if (len)
        *len = gx_str_len(r);
    return gx_str_bytes(r);
}

GX_EXPORT int gx_tensor_set_string(gx_tensor *t, int64_t i, const char *s, size_t len)
{
    if (!t || t->kind != GX_KIND_TENSOR || t->dtype != GX_STRING || i < 0 || i >= t->numel ||
        (len && !s))
        return GX_EINVAL;
    bool ok;
    const gx_strrec *r = gx_tensor_str_add(t, s, len, &ok);
    if (!ok)
        return GX_ENOMEM;
    ((const gx_strrec **)t->data)[i] = r; /* the old record stays until the tensor goes */
    return GX_OK;
}

/* ---- a job's string heap ---- */

struct gx_strheap {
    pthread_mutex_t mu;
    gx_strblock *blocks;
    size_t used, max_bytes;
    atomic_bool failed; /* read after every step: no lock */
};

gx_strheap *gx_strheap_new(size_t max_bytes)
{
    gx_strheap *h = calloc(1, sizeof *h);
    if (h) {
        pthread_mutex_init(&h->mu, NULL);
        h->max_bytes = max_bytes;
    }
    return h;
}

void gx_strheap_destroy(gx_strheap **hp)
{
    gx_strheap *h = hp ? *hp : NULL;
    if (!h)
        return;
    s_free_blocks(h->blocks);
    pthread_mutex_destroy(&h->mu);
    free(h);
    *hp = NULL;
}

const gx_strrec *gx_strheap_add(gx_strheap *h, const char *s, size_t n)
{
    if (n == 0)
        return NULL;
    const size_t need = n < SIZE_MAX / 2 ? gx_strrec_size(n) : SIZE_MAX;
    void *mem = NULL;
    pthread_mutex_lock(&h->mu);
    if (!atomic_load(&h->failed) && need <= h->max_bytes - h->used &&
        (mem = s_take(&h->blocks, need)))
        h->used += need;
    else
        atomic_store(&h->failed, true);
    pthread_mutex_unlock(&h->mu);
    return mem ? gx_strrec_write(mem, s, n) : NULL;
}

bool gx_strheap_failed(const gx_strheap *h, size_t *limit)
{
    bool f = atomic_load_explicit(&h->failed, memory_order_relaxed);
    if (limit)
        *limit = h->max_bytes;
    return f;
}

size_t gx_strheap_used(const gx_strheap *h)
{
    gx_strheap *m = (gx_strheap *)h;
    pthread_mutex_lock(&m->mu);
    size_t u = m->used;
    pthread_mutex_unlock(&m->mu);
    return u;
}
