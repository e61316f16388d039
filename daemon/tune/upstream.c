/*
 * The central registry (tune.upstream, docs/tune.md): one PostgreSQL
 * database shared by every gexecd of a site, behind tune.db. Its table is
 * tune.db's winners with the site's reuse count (lookups that found the
 * record there) and when it was last used (written or found); a write is
 * an upsert that keeps the faster record, so daemons racing on a key leave
 * the fastest. Bounded (tune.upstream_max_records): after writes, the rows
 * beyond the bound go, least recently used first (fewest reuses first
 * among those used at the same second).
 *
 * Never on the job path for long: the connection is made by this file's
 * thread (connect_timeout 2 s, TCP user timeout 2 s, statement_timeout
 * 2 s), with a backoff of 1 s doubling to 60 s while the server is
 * unreachable; a lookup asks the server only while connected (one query
 * per batch) and a failure drops the connection (the thread retries).
 * Writes are queued (bounded) and sent by the thread. An outage is logged
 * once, and again only after the server came back.
 */
#include <libpq-fe.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/tune/tune_internal.h"
#include "core/internal.h"

#define S_MAX_WRITES 1024
#define S_BACKOFF_MIN_MS 1000
#define S_BACKOFF_MAX_MS 60000

typedef struct s_write {
    char *key, *family, *op;
    gxd_tune_rec rec;
} s_write;

struct gxd_tune_up {
    char *url;
    gxd_log *log;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    PGconn *pg;    /* NULL: not connected */
    bool warned;   /* this outage was logged */
    int64_t backoff_ms, next_try_ms;
    s_write q[S_MAX_WRITES];
    size_t n_q;
    bool started, stop, connecting;
    pthread_t thread;
    int64_t errors, written, dropped;
    int64_t max_records; /* rows kept there */
    int64_t since_trim;  /* writes since the last trim */
    int64_t trimmed;     /* rows this daemon removed */
};

/* The table, and the columns a table made by an older gexecd lacks. */
static const char s_schema[] =
    "CREATE TABLE IF NOT EXISTS winners("
    " key TEXT PRIMARY KEY, family TEXT NOT NULL, op TEXT NOT NULL, impl TEXT NOT NULL,"
    " version INTEGER NOT NULL, ns BIGINT NOT NULL, others TEXT NOT NULL,"
    " validation TEXT NOT NULL, host TEXT NOT NULL, measured_at BIGINT NOT NULL);"
    "ALTER TABLE winners ADD COLUMN IF NOT EXISTS reuse BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE winners ADD COLUMN IF NOT EXISTS used_at BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE winners ADD COLUMN IF NOT EXISTS build TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE winners ADD COLUMN IF NOT EXISTS cands TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX IF NOT EXISTS winners_family ON winners(family, measured_at);"
    "CREATE INDEX IF NOT EXISTS winners_used ON winners(used_at, reuse);";

#define S_NOW "extract(epoch FROM now())::bigint"

/* A lookup: every record of the asked keys (each found one counted as
 * reused, and used now), and the newest max of each asked family (the
 * prefetch tune.db does; not counted). */
static const char s_get[] =
    "WITH hit AS (UPDATE winners SET reuse = reuse + 1, used_at = " S_NOW
    "  WHERE key = ANY($3::text[]) RETURNING key)"
    " SELECT key, impl, version, ns, others, validation, host, measured_at, build, cands FROM"
    " (SELECT *, row_number() OVER (PARTITION BY family ORDER BY measured_at DESC) AS r"
    "  FROM winners WHERE family = ANY($1::text[])) s"
    " WHERE r <= $2::int OR key = ANY($3::text[])";

static const char s_put[] =
    "INSERT INTO winners(key, family, op, impl, version, ns, others, validation, host,"
    " measured_at, build, cands, used_at) VALUES($1, $2, $3, $4, $5::int, $6::bigint, $7, $8,"
    " $9, $10::bigint, $11, $12, " S_NOW ")"
    " ON CONFLICT (key) DO UPDATE SET family = excluded.family, op = excluded.op,"
    " impl = excluded.impl, version = excluded.version, ns = excluded.ns,"
    " others = excluded.others, validation = excluded.validation, host = excluded.host,"
    " measured_at = excluded.measured_at, build = excluded.build, cands = excluded.cands,"
    " used_at = excluded.used_at"
    " WHERE excluded.ns < winners.ns";

/* The rows beyond $1, least recently used first, fewest reuses first
 * among equals, then the oldest measurement. */
static const char s_trim[] =
    "DELETE FROM winners WHERE key IN (SELECT key FROM winners"
    " ORDER BY used_at, reuse, measured_at, key"
    " LIMIT greatest((SELECT count(*) FROM winners) - $1::bigint, 0))";

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gxd_tune_up_check_url(const char *url, char *err, size_t errlen)
{
    if (strncmp(url, "postgresql://", 13) != 0 && strncmp(url, "postgres://", 11) != 0)
        return gx_errf(err, errlen, GX_EINVAL,
                       "'%s' is not a postgresql:// URL", url);
    char *why = NULL;
    PQconninfoOption *o = PQconninfoParse(url, &why);
    if (!o) {
        gx_errf(err, errlen, GX_EINVAL, "'%s': %s", url,
                why ? why : "out of memory");
        PQfreemem(why);
        return GX_EINVAL;
    }
    PQconninfoFree(o);
    return GX_OK;
}

/* Under u->mu: the connection failed or broke; log the outage once. */
static void s_down(gxd_tune_up *u, const char *what, const char *msg)
{
    u->errors++;
    if (u->pg) {
        PQfinish(u->pg);
        u->pg = NULL;
    }
    if (!u->warned && u->log)
        GXD_LOG(u->log, GXD_LOG_WARN,
                "tune: central registry %s: %s; using tune.db alone, retrying in the background "
                "(logged once)",
                what, msg);
    u->warned = true;
    u->next_try_ms = s_now_ms() + u->backoff_ms;
    u->backoff_ms = u->backoff_ms * 2 > S_BACKOFF_MAX_MS ? S_BACKOFF_MAX_MS : u->backoff_ms * 2;
}

/* A new connection with the schema made, or NULL with msg. No lock held. */
static PGconn *s_connect(const char *url, char *msg, size_t len)
{
    const char *const keys[] = {"dbname",  "connect_timeout", "tcp_user_timeout",
                                "options", "application_name", NULL};
    const char *const vals[] = {url, "2", "2000", "-c statement_timeout=2000 -c client_min_messages=warning", "gexecd", NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    if (!pg) {
        snprintf(msg, len, "out of memory");
        return NULL;
    }
    if (PQstatus(pg) != CONNECTION_OK) {
        snprintf(msg, len, "%.*s", (int)strcspn(PQerrorMessage(pg), "\n"), PQerrorMessage(pg));
        PQfinish(pg);
        return NULL;
    }
    /* two daemons making the table at once: one of them may lose the
     * catalog race, and the table is there when it tries again */
    for (int tries = 0;; tries++) {
        PGresult *r = PQexec(pg, s_schema);
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(msg, len, "making the table: %.*s", (int)strcspn(PQerrorMessage(pg), "\n"),
                     PQerrorMessage(pg));
        PQclear(r);
        if (ok)
            return pg;
        if (tries == 2 || PQstatus(pg) != CONNECTION_OK)
            break;
    }
    PQfinish(pg);
    return NULL;
}

/* Try to connect now (u->mu held on entry and exit; released while
 * connecting). */
static void s_try_connect(gxd_tune_up *u)
{
    if (u->pg || u->connecting)
        return;
    u->connecting = true;
    pthread_mutex_unlock(&u->mu);
    char msg[512];
    PGconn *pg = s_connect(u->url, msg, sizeof msg);
    pthread_mutex_lock(&u->mu);
    u->connecting = false;
    pthread_cond_broadcast(&u->cv);
    if (!pg) {
        s_down(u, "unreachable", msg);
        return;
    }
    u->pg = pg;
    if (u->warned && u->log)
        GXD_LOG(u->log, GXD_LOG_INFO, "tune: central registry reachable again");
    u->warned = false;
    u->backoff_ms = S_BACKOFF_MIN_MS;
}

static void s_write_free(s_write *w)
{
    free(w->key);
    free(w->family);
    free(w->op);
    memset(w, 0, sizeof *w);
}

/* Remove the rows beyond u->max_records (s_trim). Under u->mu, connected. */
static void s_trim_rows(gxd_tune_up *u)
{
    char max[24];
    snprintf(max, sizeof max, "%lld", (long long)u->max_records);
    const char *p[1] = {max};
    PGresult *r = PQexecParams(u->pg, s_trim, 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
        const int64_t n = strtoll(PQcmdTuples(r), NULL, 10);
        u->trimmed += n;
        u->since_trim = 0;
        if (n > 0 && u->log)
            GXD_LOG(u->log, GXD_LOG_INFO,
                    "tune: central registry trimmed to %lld records (%lld least recently used "
                    "removed)",
                    (long long)u->max_records, (long long)n);
    } else {
        u->errors++; /* tried again after the next write */
        if (u->log)
            GXD_LOG(u->log, GXD_LOG_WARN, "tune: central registry: trimming failed: %.*s",
                    (int)strcspn(PQerrorMessage(u->pg), "\n"), PQerrorMessage(u->pg));
    }
    PQclear(r);
}

/* Send the queued writes, oldest first, while connected; then trim (every
 * 64 writes, or each time under a bound below 64). Under u->mu. */
static void s_flush(gxd_tune_up *u)
{
    while (u->pg && u->n_q && !u->stop) {
        s_write *w = &u->q[0];
        char version[16], ns[24], at[24];
        snprintf(version, sizeof version, "%d", w->rec.version);
        snprintf(ns, sizeof ns, "%lld", (long long)w->rec.ns);
        snprintf(at, sizeof at, "%lld", (long long)w->rec.measured_at);
        char cands[GXD_TUNE_MAX_IMPLS * 160];
        gxd_tune_cands_str(&w->rec, cands, sizeof cands);
        const char *p[12] = {w->key,         w->family,        w->op,   w->rec.impl,
                             version,        ns,               w->rec.others,
                             w->rec.validation, w->rec.host,   at,
                             w->rec.build,   cands};
        PGresult *r = PQexecParams(u->pg, s_put, 12, NULL, p, NULL, NULL, 0);
        const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) {
            char msg[512];
            snprintf(msg, sizeof msg, "%.*s", (int)strcspn(PQerrorMessage(u->pg), "\n"),
                     PQerrorMessage(u->pg));
            PQclear(r);
            if (PQstatus(u->pg) == CONNECTION_OK) { /* the server refused this record */
                u->errors++;
                u->dropped++;
                if (u->log)
                    GXD_LOG(u->log, GXD_LOG_WARN, "tune: central registry refused a record: %s",
                            msg);
            } else {
                s_down(u, "write failed", msg);
                return; /* the record stays queued */
            }
        } else {
            PQclear(r);
            u->written++;
            u->since_trim++;
        }
        s_write_free(w);
        memmove(&u->q[0], &u->q[1], (u->n_q - 1) * sizeof u->q[0]);
        u->n_q--;
        memset(&u->q[u->n_q], 0, sizeof u->q[0]);
        /* let a lookup in between two writes: a long queue after an
         * outage must not hold a compile up */
        pthread_mutex_unlock(&u->mu);
        sched_yield();
        pthread_mutex_lock(&u->mu);
    }
    if (u->pg && !u->stop && u->since_trim && (u->since_trim >= 64 || u->max_records < 64))
        s_trim_rows(u);
}

static void *s_main(void *arg)
{
    gxd_tune_up *u = arg;
    pthread_mutex_lock(&u->mu);
    while (!u->stop) {
        if (u->connecting) { /* a sync is connecting: wait for its outcome */
            pthread_cond_wait(&u->cv, &u->mu);
            continue;
        }
        if (!u->pg && s_now_ms() >= u->next_try_ms)
            s_try_connect(u);
        s_flush(u);
        if (u->stop)
            break;
        if (!u->pg) { /* sleep until the next try (or stop, or a sync) */
            const int64_t wait = u->next_try_ms - s_now_ms();
            if (wait > 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += wait / 1000;
                ts.tv_nsec += (wait % 1000) * 1000000;
                if (ts.tv_nsec >= 1000000000) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000;
                }
                pthread_cond_timedwait(&u->cv, &u->mu, &ts);
            }
        } else if (!u->n_q) {
            pthread_cond_wait(&u->cv, &u->mu);
        }
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

gxd_tune_up *gxd_tune_up_new(const char *url, int64_t max_records, gxd_log *log, char *err,
                             size_t errlen)
{
    if (gxd_tune_up_check_url(url, err, errlen) != GX_OK)
        return NULL;
    gxd_tune_up *u = calloc(1, sizeof *u);
    if (!u || !(u->url = gx_strdup(url))) {
        free(u);
        gx_errf(err, errlen, GX_ENOMEM, "tune: out of memory");
        return NULL;
    }
    u->log = log;
    u->max_records = max_records > 0 ? max_records : 1000000;
    u->backoff_ms = S_BACKOFF_MIN_MS;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    if (pthread_create(&u->thread, NULL, s_main, u) != 0) {
        gx_errf(err, errlen, GX_EINTERNAL, "tune: cannot start the central registry's thread");
        gxd_tune_up_destroy(&u);
        return NULL;
    }
    u->started = true;
    return u;
}

void gxd_tune_up_destroy(gxd_tune_up **up)
{
    gxd_tune_up *u = *up;
    if (!u)
        return;
    if (u->started) {
        pthread_mutex_lock(&u->mu);
        u->stop = true;
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        pthread_join(u->thread, NULL);
    }
    if (u->pg)
        PQfinish(u->pg);
    for (size_t i = 0; i < u->n_q; i++)
        s_write_free(&u->q[i]);
    pthread_cond_destroy(&u->cv);
    pthread_mutex_destroy(&u->mu);
    free(u->url);
    free(u);
    *up = NULL;
}

void gxd_tune_up_put(gxd_tune_up *u, const char *key, const char *family, const char *op,
                     const gxd_tune_rec *rec)
{
    s_write w = {.key = gx_strdup(key), .family = gx_strdup(family), .op = gx_strdup(op),
                 .rec = *rec};
    pthread_mutex_lock(&u->mu);
    if (!w.key || !w.family || !w.op) {
        u->dropped++;
        s_write_free(&w);
    } else {
        if (u->n_q == S_MAX_WRITES) { /* a long outage: the oldest goes */
            s_write_free(&u->q[0]);
            memmove(&u->q[0], &u->q[1], (u->n_q - 1) * sizeof u->q[0]);
            u->n_q--;
            u->dropped++;
        }
        u->q[u->n_q++] = w;
        pthread_cond_broadcast(&u->cv);
    }
    pthread_mutex_unlock(&u->mu);
}

int gxd_tune_up_sync(gxd_tune_up *u)
{
    pthread_mutex_lock(&u->mu);
    while (u->connecting)
        pthread_cond_wait(&u->cv, &u->mu);
    if (!u->pg)
        s_try_connect(u);
    s_flush(u);
    const int rc = u->pg && !u->n_q ? GX_OK : GX_EIO;
    pthread_mutex_unlock(&u->mu);
    return rc;
}

/* "{"a","b"}": an array literal of texts. NULL on ENOMEM. */
static char *s_array(const char *const *v, size_t n)
{
    size_t len = 3;
    for (size_t i = 0; i < n; i++)
        len += 2 * strlen(v[i]) + 3;
    char *s = malloc(len), *o = s;
    if (!s)
        return NULL;
    *o++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *o++ = ',';
        *o++ = '"';
        for (const char *c = v[i]; *c; c++) {
            if (*c == '"' || *c == '\\')
                *o++ = '\\';
            *o++ = *c;
        }
        *o++ = '"';
    }
    *o++ = '}';
    *o = '\0';
    return s;
}

int gxd_tune_up_get(gxd_tune_up *u, const char *const *keys, size_t n_keys,
                    const char *const *families, size_t n_fam, int max_per_family,
                    void (*fn)(void *arg, const char *key, const gxd_tune_rec *rec), void *arg)
{
    pthread_mutex_lock(&u->mu);
    if (!u->pg) { /* down: never connect on the job path */
        pthread_mutex_unlock(&u->mu);
        return GX_EIO;
    }
    char *ka = s_array(keys, n_keys), *fa = s_array(families, n_fam), max[16];
    snprintf(max, sizeof max, "%d", max_per_family);
    int rc = GX_ENOMEM;
    if (ka && fa) {
        const char *p[3] = {fa, max, ka};
        PGresult *r = PQexecParams(u->pg, s_get, 3, NULL, p, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
            rc = GX_OK;
            for (int i = 0; i < PQntuples(r); i++) {
                gxd_tune_rec rec;
                memset(&rec, 0, sizeof rec);
                snprintf(rec.impl, sizeof rec.impl, "%s", PQgetvalue(r, i, 1));
                rec.version = atoi(PQgetvalue(r, i, 2));
                rec.ns = strtoll(PQgetvalue(r, i, 3), NULL, 10);
                snprintf(rec.others, sizeof rec.others, "%s", PQgetvalue(r, i, 4));
                snprintf(rec.validation, sizeof rec.validation, "%s", PQgetvalue(r, i, 5));
                snprintf(rec.host, sizeof rec.host, "%s", PQgetvalue(r, i, 6));
                rec.measured_at = strtoll(PQgetvalue(r, i, 7), NULL, 10);
                snprintf(rec.build, sizeof rec.build, "%s", PQgetvalue(r, i, 8));
                if (!gxd_tune_cands_parse(PQgetvalue(r, i, 9), &rec))
                    rec.n_cands = 0; /* damaged: every candidate is measured again */
                rec.level = GXD_TUNE_CENTRAL;
                fn(arg, PQgetvalue(r, i, 0), &rec);
            }
        } else {
            char msg[512];
            snprintf(msg, sizeof msg, "%.*s", (int)strcspn(PQerrorMessage(u->pg), "\n"),
                     PQerrorMessage(u->pg));
            s_down(u, "read failed", msg);
            pthread_cond_broadcast(&u->cv); /* the thread retries after the backoff */
            rc = GX_EIO;
        }
        PQclear(r);
    }
    pthread_mutex_unlock(&u->mu);
    free(ka);
    free(fa);
    return rc;
}

void gxd_tune_up_stats(gxd_tune_up *u, gxd_tune_stats *s)
{
    pthread_mutex_lock(&u->mu);
    s->upstream_up = u->pg != NULL;
    s->upstream_errors = u->errors;
    s->upstream_written = u->written;
    s->upstream_queued = (int64_t)u->n_q;
    s->upstream_dropped = u->dropped;
    s->upstream_trimmed = u->trimmed;
    pthread_mutex_unlock(&u->mu);
}
