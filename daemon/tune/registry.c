/*
 * The registry's lookups: keys, the in-memory cache (a bounded hash table,
 * least recently found records evicted), tune.db behind it, statistics.
 * The explorer is in explore.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/tune/tune_internal.h"
#include "core/internal.h"
#include "ops/backend.h"

int gxd_tune_mode_parse(const char *s, gxd_tune_mode *out)
{
    static const char *names[] = {"off", "cache", "explore"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, names[i])) {
            *out = (gxd_tune_mode)i;
            return GX_OK;
        }
    return GX_EINVAL;
}

const char *gxd_tune_mode_name(gxd_tune_mode m)
{
    switch (m) {
    case GXD_TUNE_OFF: return "off";
    case GXD_TUNE_CACHE: return "cache";
    case GXD_TUNE_EXPLORE: return "explore";
    }
    return "?";
}

/* "cpu=<model name> isa=avx512,avx2,baseline" */
static void s_device(char *buf, size_t len)
{
    char model[160] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *v = strchr(line, ':') + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\n"), v);
            break;
        }
    if (f)
        fclose(f);
    int o = snprintf(buf, len, "cpu=%s isa=", model);
    const gx_backend_gemm_tune *gt = gx_backend_cpu()->gemm_tune;
    for (int i = 0; gt->isa_name(i) && o > 0 && (size_t)o < len; i++)
        o += snprintf(buf + o, len - (size_t)o, "%s%s", i ? "," : "", gt->isa_name(i));
}

gxd_tune *gxd_tune_new(const gxd_tune_opts *o, char *err, size_t errlen)
{
    gxd_tune *t = calloc(1, sizeof *t);
    if (!t) {
        gx_errf(err, errlen, GX_ENOMEM, "tune: out of memory");
        return NULL;
    }
    t->o = *o;
    t->o.dir = NULL; /* borrowed: not kept */
    t->log = o->log;
    if (t->o.max_cached <= 0)
        t->o.max_cached = 4096;
    if (t->o.budget_ms <= 0)
        t->o.budget_ms = 200;
    t->n_slots = (size_t)t->o.max_cached * 2;
    if (!(t->slots = calloc(t->n_slots, sizeof *t->slots))) {
        free(t);
        gx_errf(err, errlen, GX_ENOMEM, "tune: out of memory");
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_mutex_init(&t->qmu, NULL);
    pthread_cond_init(&t->qcv, NULL);
    atomic_init(&t->stop, false);
    t->n_impls = gxd_tune_builtin_impls(t->impls, GXD_TUNE_MAX_IMPLS);
    s_device(t->device, sizeof t->device);
    gxd_tune_buildinfo_now(&t->bi);
    gxd_tune_builds_update(t);
    if (gethostname(t->host, sizeof t->host - 1) != 0)
        snprintf(t->host, sizeof t->host, "unknown");
    if (o->mode != GXD_TUNE_OFF && o->dir && o->dir[0]) {
        char why[512];
        t->db = gxd_tune_db_open(o->dir, o->max_records, o->log, why, sizeof why);
        if (!t->db && o->log)
            GXD_LOG(o->log, GXD_LOG_WARN, "tune: %s; records are kept in memory only", why);
    }
    if (o->mode != GXD_TUNE_OFF && o->upstream && o->upstream[0]) {
        char why[512];
        if (!(t->up = gxd_tune_up_new(o->upstream, o->upstream_max_records, o->log, why, sizeof why))) {
            t->st.upstream_errors++;
            if (o->log)
                GXD_LOG(o->log, GXD_LOG_ERROR, "tune: tune.upstream %s; no central registry", why);
        }
    }
    return t;
}

void gxd_tune_destroy(gxd_tune **tp)
{
    gxd_tune *t = *tp;
    if (!t)
        return;
    gxd_tune_explore_stop(t);
    gxd_tune_up_destroy(&t->up);
    gxd_tune_db_close(&t->db);
    for (size_t i = 0; i < t->n_slots; i++)
        free(t->slots[i].key);
    free(t->slots);
    for (size_t i = 0; i < t->n_pending; i++)
        free(t->pending[i].key);
    for (size_t i = 0; i < t->n_tried && i < GXD_TUNE_MAX_PENDING; i++)
        free(t->tried[i]);
    pthread_cond_destroy(&t->qcv);
    pthread_mutex_destroy(&t->qmu);
    pthread_mutex_destroy(&t->mu);
    free(t);
    *tp = NULL;
}

gxd_tune_mode gxd_tune_get_mode(const gxd_tune *t)
{
    return t ? t->o.mode : GXD_TUNE_OFF;
}

const gxd_tune_impl *gxd_tune_impls(const gxd_tune *t, size_t *n)
{
    *n = t->n_impls;
    return t->impls;
}

bool gxd_tune_add_impl(gxd_tune *t, const gxd_tune_impl *im)
{
    if (t->n_impls >= GXD_TUNE_MAX_IMPLS)
        return false;
    t->impls[t->n_impls++] = *im;
    gxd_tune_builds_update(t);
    return true;
}

const gxd_tune_impl *gxd_tune_impl_find(const gxd_tune *t, const char *name, int version)
{
    for (size_t i = 0; i < t->n_impls; i++)
        if (!strcmp(t->impls[i].name, name) && (version < 0 || t->impls[i].version == version))
            return &t->impls[i];
    return NULL;
}

const gxd_tune_impl *gxd_tune_default(const gxd_tune *t, gx_op op)
{
    char name[32];
    if (op == GX_OP_CONV)
        return gxd_tune_impl_find(t, "conv.plain", -1);
    snprintf(name, sizeof name, "packed.%s", gx_backend_cpu()->gemm_tune->isa());
    return gxd_tune_impl_find(t, name, -1);
}

const char *gxd_tune_device(const gxd_tune *t)
{
    return t->device;
}

const char *gxd_tune_builds(const gxd_tune *t)
{
    return t->builds;
}

/* "<sig part> | <device>" (malloc'ed). */
static char *s_key(const gxd_tune *t, const char *s)
{
    const size_t len = strlen(s) + strlen(t->device) + 4;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s | %s", s, t->device);
    return k;
}

char *gxd_tune_key(const gxd_tune *t, const gxd_tune_sig *sig)
{
    char s[512];
    gxd_tune_sig_str(sig, s, sizeof s);
    return s_key(t, s);
}

char *gxd_tune_family(const gxd_tune *t, const gxd_tune_sig *sig)
{
    char s[512];
    gxd_tune_sig_family_str(sig, s, sizeof s);
    return s_key(t, s);
}

/* ---- the cache (under t->mu) ---- */

static uint64_t s_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of key, or the free slot where it would go (linear probing;
 * the table is at most half full). */
static gxd_tune_slot *s_slot(gxd_tune *t, const char *key)
{
    size_t i = (size_t)(s_hash(key) % t->n_slots);
    while (t->slots[i].key && strcmp(t->slots[i].key, key))
        i = (i + 1) % t->n_slots;
    return &t->slots[i];
}

/* Remove slot e, moving later entries of its run back (no tombstones). */
static void s_remove(gxd_tune *t, gxd_tune_slot *e)
{
    size_t i = (size_t)(e - t->slots);
    free(e->key);
    e->key = NULL;
    t->n_cached--;
    for (size_t j = (i + 1) % t->n_slots; t->slots[j].key; j = (j + 1) % t->n_slots) {
        gxd_tune_slot moved = t->slots[j];
        t->slots[j].key = NULL;
        *s_slot(t, moved.key) = moved;
    }
}

static void s_cache_put(gxd_tune *t, const char *key, const gxd_tune_rec *rec)
{
    gxd_tune_slot *e = s_slot(t, key);
    if (!e->key) {
        if (t->n_cached >= (size_t)t->o.max_cached) { /* evict the least recently found */
            gxd_tune_slot *old = NULL;
            for (size_t i = 0; i < t->n_slots; i++)
                if (t->slots[i].key && (!old || t->slots[i].used < old->used))
                    old = &t->slots[i];
            s_remove(t, old);
            e = s_slot(t, key);
        }
        if (!(e->key = gx_strdup(key)))
            return; /* ENOMEM: the record is just not cached */
        t->n_cached++;
        e->reuse = 0;
    }
    if (e->rec.ns != rec->ns || strcmp(e->rec.impl, rec->impl) || e->rec.version != rec->version)
        e->reuse = 0; /* another record: its own count */
    e->rec = *rec;
    e->used = ++t->clock;
}

void gxd_tune_cache_clear(gxd_tune *t)
{
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n_slots; i++) {
        free(t->slots[i].key);
        t->slots[i].key = NULL;
    }
    t->n_cached = 0;
    pthread_mutex_unlock(&t->mu);
}

/* ---- lookups ---- */

/* A prefetched record: into the cache unless there already. */
static void s_prefetch_one(void *arg, const char *key, const gxd_tune_rec *rec)
{
    gxd_tune *t = arg;
    if (!s_slot(t, key)->key) {
        s_cache_put(t, key, rec);
        t->st.prefetched++;
    }
}

/* Read the newest records of each family of sigs[0..n) into the cache
 * (the same products at the other batch sizes met before: a later compile
 * for one of them finds it in memory). Under t->mu. */
static void s_prefetch(gxd_tune *t, const gxd_tune_sig *sigs, size_t n)
{
    char *seen[16];
    size_t n_seen = 0;
    for (size_t i = 0; i < n; i++) {
        char *fam = gxd_tune_family(t, &sigs[i]);
        bool dup = !fam;
        for (size_t k = 0; k < n_seen && !dup; k++)
            dup = !strcmp(seen[k], fam);
        if (dup || n_seen == sizeof seen / sizeof seen[0]) {
            free(fam);
            continue;
        }
        seen[n_seen++] = fam;
        if (gxd_tune_db_family(t->db, fam, GXD_TUNE_PREFETCH, s_prefetch_one, t) != GX_OK)
            t->st.db_errors++;
    }
    for (size_t k = 0; k < n_seen; k++)
        free(seen[k]);
}

/* The central registry's answer to one batch: its records, merged by
 * s_central under t->mu. */
typedef struct s_rows {
    char **keys;
    gxd_tune_rec *recs;
    size_t n, cap;
    bool nomem;
} s_rows;

static void s_row_add(void *arg, const char *key, const gxd_tune_rec *rec)
{
    s_rows *r = arg;
    if (r->n == r->cap) {
        const size_t cap = r->cap ? r->cap * 2 : 16;
        char **k = realloc(r->keys, cap * sizeof *k);
        if (k)
            r->keys = k;
        gxd_tune_rec *v = k ? realloc(r->recs, cap * sizeof *v) : NULL;
        if (!v) {
            r->nomem = true;
            return;
        }
        r->recs = v;
        r->cap = cap;
    }
    if (!(r->keys[r->n] = gx_strdup(key))) {
        r->nomem = true;
        return;
    }
    r->recs[r->n++] = *rec;
}

/* Ask the central registry for the signatures still missing (one query,
 * with their families' newest records: the prefetch), without t->mu held
 * while it runs. A record of a missing key is a central hit, copied into
 * tune.db and the cache; the family's others go into the cache. Nothing
 * is asked while the registry is down (its thread reconnects). */
static void s_central(gxd_tune *t, const gxd_tune_sig *sigs, char **keys, size_t n,
                      gxd_tune_rec *recs, bool *found)
{
    const char **ask = calloc(n, sizeof *ask), **fams = calloc(n, sizeof *fams);
    char **famv = calloc(n, sizeof *famv);
    s_rows rows = {0};
    size_t n_ask = 0, n_fam = 0;
    if (!ask || !fams || !famv)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (!keys[i] || found[i])
            continue;
        ask[n_ask++] = keys[i];
        if (!(famv[i] = gxd_tune_family(t, &sigs[i])))
            continue;
        bool dup = false;
        for (size_t k = 0; k < n_fam && !dup; k++)
            dup = !strcmp(fams[k], famv[i]);
        if (!dup)
            fams[n_fam++] = famv[i];
    }
    if (!n_ask)
        goto out;
    const int rc = gxd_tune_up_get(t->up, ask, n_ask, fams, n_fam, GXD_TUNE_PREFETCH, s_row_add,
                                   &rows);
    pthread_mutex_lock(&t->mu);
    if (rc == GX_OK) {
        for (size_t r = 0; r < rows.n; r++) {
            bool asked = false;
            for (size_t i = 0; i < n; i++)
                if (keys[i] && !found[i] && !strcmp(keys[i], rows.keys[r])) {
                    asked = true;
                    if (!gxd_tune_rec_valid(t, &rows.recs[r]))
                        continue; /* its winner was rebuilt: stale here too */
                    found[i] = true;
                    recs[i] = rows.recs[r];
                    t->st.hits[GXD_TUNE_CENTRAL]++;
                    s_cache_put(t, keys[i], &rows.recs[r]);
                    s_slot(t, keys[i])->reuse += s_slot(t, keys[i])->key != NULL;
                    if (t->db && famv[i] &&
                        gxd_tune_db_put(t->db, keys[i], famv[i], gx_op_name(sigs[i].op),
                                        &rows.recs[r]) != GX_OK)
                        t->st.db_errors++;
                }
            if (!asked && !s_slot(t, rows.keys[r])->key) {
                s_cache_put(t, rows.keys[r], &rows.recs[r]);
                t->st.prefetched++;
            }
        }
    }
    pthread_mutex_unlock(&t->mu);
out:
    for (size_t r = 0; r < rows.n; r++)
        free(rows.keys[r]);
    free(rows.keys);
    free(rows.recs);
    for (size_t i = 0; famv && i < n; i++)
        free(famv[i]);
    free(famv);
    free(fams);
    free(ask);
}

void gxd_tune_lookup_batch(gxd_tune *t, const gxd_tune_sig *sigs, size_t n, gxd_tune_rec *recs,
                           bool *found)
{
    gxd_tune_lookup_batch_prio(t, sigs, NULL, n, recs, found);
}

void gxd_tune_lookup_batch_prio(gxd_tune *t, const gxd_tune_sig *sigs, const double *weight,
                                size_t n, gxd_tune_rec *recs, bool *found)
{
    for (size_t i = 0; i < n; i++)
        found[i] = false;
    if (!t || t->o.mode == GXD_TUNE_OFF || !n)
        return;
    char **keys = calloc(n, sizeof *keys);
    bool *dbf = calloc(n, sizeof *dbf), *stale = calloc(n, sizeof *stale);
    if (!keys || !dbf || !stale)
        goto out;
    for (size_t i = 0; i < n; i++)
        keys[i] = gxd_tune_key(t, &sigs[i]);
    pthread_mutex_lock(&t->mu);
    size_t n_db = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keys[i])
            continue;
        t->st.lookups++;
        gxd_tune_slot *e = s_slot(t, keys[i]);
        stale[i] = e->key && !gxd_tune_rec_valid(t, &e->rec);
        if (e->key && !stale[i]) {
            e->used = ++t->clock;
            e->reuse++;
            recs[i] = e->rec;
            recs[i].level = GXD_TUNE_MEMORY;
            found[i] = true;
            t->st.hits[GXD_TUNE_MEMORY]++;
        } else {
            n_db++;
        }
    }
    if (n_db && t->db) { /* the misses, in one transaction */
        const char **ask = calloc(n, sizeof *ask);
        if (ask) {
            for (size_t i = 0; i < n; i++)
                ask[i] = found[i] ? NULL : keys[i];
            if (gxd_tune_db_get(t->db, ask, n, recs, dbf) != GX_OK) {
                t->st.db_errors++;
                if (!t->db_warned && t->log)
                    GXD_LOG(t->log, GXD_LOG_WARN, "tune: reading tune.db failed (logged once)");
                t->db_warned = true;
            }
            for (size_t i = 0; i < n; i++)
                if (dbf[i] && !gxd_tune_rec_valid(t, &recs[i])) {
                    stale[i] = true; /* its winner was rebuilt, or is gone */
                } else if (dbf[i]) {
                    found[i] = true;
                    t->st.hits[GXD_TUNE_LOCAL]++;
                    s_cache_put(t, keys[i], &recs[i]);
                    s_slot(t, keys[i])->reuse += s_slot(t, keys[i])->key != NULL;
                }
            free(ask);
        }
        s_prefetch(t, sigs, n);
    }
    pthread_mutex_unlock(&t->mu);
    if (t->up)
        s_central(t, sigs, keys, n, recs, found);
    /* hits whose records lack a candidate: measured additively (dbf[i]
     * says so now) */
    size_t n_add = 0;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < n; i++) {
        t->st.misses += keys[i] && !found[i];
        t->st.stale += keys[i] && !found[i] && stale[i];
        dbf[i] = found[i] && t->o.mode == GXD_TUNE_EXPLORE &&
                 gxd_tune_rec_lacks(t, sigs[i].op, &recs[i]);
        n_add += dbf[i];
    }
    t->st.additive += (int64_t)n_add;
    pthread_mutex_unlock(&t->mu);
    if (t->o.mode == GXD_TUNE_EXPLORE) {
        pthread_mutex_lock(&t->qmu);
        for (size_t i = 0; i < n; i++)
            if (keys[i] && (!found[i] || dbf[i]))
                gxd_tune_queue_sig(t, keys[i], &sigs[i], weight ? weight[i] : 0.0, found[i]);
        pthread_mutex_unlock(&t->qmu);
    }
out:
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    free(dbf);
    free(stale);
}

int gxd_tune_store(gxd_tune *t, const gxd_tune_sig *sig, const gxd_tune_rec *rec_in)
{
    char *key = gxd_tune_key(t, sig), *fam = gxd_tune_family(t, sig);
    if (!key || !fam) {
        free(key);
        free(fam);
        return GX_ENOMEM;
    }
    gxd_tune_rec copy, *rec = &copy;
    copy = *rec_in;
    const gxd_tune_impl *im = gxd_tune_impl_find(t, rec->impl, rec->version);
    if (!rec->build[0] && im) /* measured by this daemon's build */
        snprintf(rec->build, sizeof rec->build, "%s", im->build);
    int rc = GX_OK;
    pthread_mutex_lock(&t->mu);
    s_cache_put(t, key, rec);
    t->st.stored++;
    if (t->db && gxd_tune_db_put(t->db, key, fam, gx_op_name(sig->op), rec) != GX_OK) {
        rc = GX_EIO;
        t->st.db_errors++;
        if (!t->db_warned && t->log)
            GXD_LOG(t->log, GXD_LOG_WARN, "tune: writing tune.db failed (logged once)");
        t->db_warned = true;
    }
    pthread_mutex_unlock(&t->mu);
    if (t->up) /* sent by the central registry's thread */
        gxd_tune_up_put(t->up, key, fam, gx_op_name(sig->op), rec);
    free(key);
    free(fam);
    return rc;
}

void gxd_tune_get_stats(gxd_tune *t, gxd_tune_stats *s)
{
    pthread_mutex_lock(&t->mu);
    *s = t->st;
    s->cached = (int64_t)t->n_cached;
    s->n_top = 0;
    for (size_t i = 0; i < t->n_slots; i++) { /* insertion into the top, most reused first */
        const gxd_tune_slot *e = &t->slots[i];
        if (!e->key || e->reuse <= 0)
            continue;
        int at = s->n_top;
        while (at > 0 && s->top[at - 1].reuse < e->reuse)
            at--;
        if (at >= GXD_TUNE_TOP)
            continue;
        const int last = s->n_top < GXD_TUNE_TOP ? s->n_top : GXD_TUNE_TOP - 1;
        memmove(&s->top[at + 1], &s->top[at], (size_t)(last - at) * sizeof s->top[0]);
        snprintf(s->top[at].sig, sizeof s->top[at].sig, "%.*s", (int)strcspn(e->key, "|"), e->key);
        const size_t n = strlen(s->top[at].sig);
        if (n && s->top[at].sig[n - 1] == ' ')
            s->top[at].sig[n - 1] = '\0';
        snprintf(s->top[at].impl, sizeof s->top[at].impl, "%s", e->rec.impl);
        s->top[at].version = e->rec.version;
        s->top[at].reuse = e->reuse;
        if (s->n_top < GXD_TUNE_TOP)
            s->n_top++;
    }
    pthread_mutex_unlock(&t->mu);
    if (t->up)
        gxd_tune_up_stats(t->up, s);
    pthread_mutex_lock(&t->qmu);
    s->pending = (int64_t)t->n_pending + (t->busy ? 1 : 0);
    pthread_mutex_unlock(&t->qmu);
}

int gxd_tune_upstream_sync(gxd_tune *t)
{
    return t && t->up ? gxd_tune_up_sync(t->up) : GX_EIO;
}

int gxd_tune_upstream_check(const char *url, char *err, size_t errlen)
{
    return gxd_tune_up_check_url(url, err, errlen);
}

bool gxd_tune_peek(gxd_tune *t, const gxd_tune_sig *sig, gxd_tune_rec *rec)
{
    if (!t || t->o.mode == GXD_TUNE_OFF)
        return false;
    char *key = gxd_tune_key(t, sig);
    if (!key)
        return false;
    pthread_mutex_lock(&t->mu);
    const gxd_tune_slot *e = s_slot(t, key);
    const bool found = e->key != NULL && gxd_tune_rec_valid(t, &e->rec);
    if (found)
        *rec = e->rec;
    pthread_mutex_unlock(&t->mu);
    free(key);
    return found;
}
