/*
 * tune.db: the registry's local level, one SQLite database under the
 * daemon's state directory. One table of winners keyed by the full key
 * text (signature, device model), each with its candidates' build ids
 * and times (the cands column); WAL journal, so a daemon
 * killed at any moment leaves a valid database (the last transaction is
 * either in or not). Bounded: beyond max_records rows the oldest
 * measurements are deleted. A file that is not a database, or fails
 * SQLite's quick check, is moved aside and replaced by an empty one. A
 * database of schema 2 (whose keys held every candidate's name@version
 * and the library builds) is migrated in place (s_migrate).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/tune/tune_internal.h"
#include "core/internal.h"

#define S_SCHEMA_VERSION 3

struct gxd_tune_db {
    sqlite3 *db;
    sqlite3_stmt *get, *put, *reuse, *trim, *family;
    int64_t max_records;
    int64_t puts; /* since the last trim */
};

static const char s_schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS winners("
    " key TEXT PRIMARY KEY,"  /* signature | device | builds */
    " family TEXT NOT NULL,"  /* the same without the rows: other batch sizes */
    " op TEXT NOT NULL,"
    " impl TEXT NOT NULL,"
    " version INTEGER NOT NULL,"
    " ns INTEGER NOT NULL,"   /* the winner's median time */
    " others TEXT NOT NULL,"  /* name@v:ns or name@v:rejected (why), ... */
    " validation TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " measured_at INTEGER NOT NULL,"
    " reuse INTEGER NOT NULL DEFAULT 0,"
    " build TEXT NOT NULL DEFAULT '',"  /* the winner's build id */
    " cands TEXT NOT NULL DEFAULT '');" /* name@v build ns at; ... (gxd_tune_cands_str) */
    "CREATE INDEX IF NOT EXISTS winners_age ON winners(measured_at);"
    "CREATE INDEX IF NOT EXISTS winners_family ON winners(family);"
    "INSERT OR IGNORE INTO meta VALUES('schema', '3');";

static int s_prepare(gxd_tune_db *d, char *err, size_t errlen)
{
    const char *sql[5] = {
        "SELECT impl, version, ns, others, validation, host, measured_at, build, cands"
        " FROM winners WHERE key=?",
        "INSERT OR REPLACE INTO winners(key, op, impl, version, ns, others, validation, host,"
        " measured_at, family, build, cands) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
        "UPDATE winners SET reuse=reuse+1 WHERE key=?",
        "DELETE FROM winners WHERE key IN (SELECT key FROM winners ORDER BY measured_at DESC"
        " LIMIT -1 OFFSET ?)",
        "SELECT impl, version, ns, others, validation, host, measured_at, build, cands, key"
        " FROM winners WHERE family=? ORDER BY measured_at DESC LIMIT ?",
    };
    sqlite3_stmt **st[5] = {&d->get, &d->put, &d->reuse, &d->trim, &d->family};
    for (int i = 0; i < 5; i++)
        if (sqlite3_prepare_v2(d->db, sql[i], -1, st[i], NULL) != SQLITE_OK)
            return gx_errf(err, errlen, GX_EIO, "%s", sqlite3_errmsg(d->db));
    return GX_OK;
}

static void s_finalize(gxd_tune_db *d)
{
    sqlite3_finalize(d->get);
    sqlite3_finalize(d->put);
    sqlite3_finalize(d->reuse);
    sqlite3_finalize(d->trim);
    sqlite3_finalize(d->family);
    d->get = d->put = d->reuse = d->trim = d->family = NULL;
    if (d->db)
        sqlite3_close(d->db);
    d->db = NULL;
}

static void s_text(sqlite3_stmt *q, int col, char *dst, size_t len)
{
    const unsigned char *v = sqlite3_column_text(q, col);
    snprintf(dst, len, "%s", v ? (const char *)v : "");
}

/* The part of a schema-2 key after its n-th " | " (n = 2: the builds), or
 * NULL. */
static const char *s_part(const char *key, int n)
{
    const char *p = key;
    for (int i = 0; i < n && p; i++)
        if ((p = strstr(p, " | ")))
            p += 3;
    return p;
}

/* Schema 2 to 3, in one transaction: a key "sig | device | builds" becomes
 * "sig | device" (the family likewise), the builds part gives the
 * winner's and every candidate's build id (gxd_tune_build_id; the
 * candidates from others), and of the rows that then share a key the
 * newest measurement stays. A row whose key or others is not of schema
 * 2's form is dropped (logged). GX_OK or GX_EFORMAT with err. */
static int s_migrate(gxd_tune_db *d, const char *path, gxd_log *log, char *err, size_t errlen)
{
    static const char make[] =
        "CREATE TABLE winners3("
        " key TEXT PRIMARY KEY, family TEXT NOT NULL, op TEXT NOT NULL, impl TEXT NOT NULL,"
        " version INTEGER NOT NULL, ns INTEGER NOT NULL, others TEXT NOT NULL,"
        " validation TEXT NOT NULL, host TEXT NOT NULL, measured_at INTEGER NOT NULL,"
        " reuse INTEGER NOT NULL DEFAULT 0, build TEXT NOT NULL DEFAULT '',"
        " cands TEXT NOT NULL DEFAULT '');";
    static const char finish[] =
        "DROP TABLE winners;"
        "ALTER TABLE winners3 RENAME TO winners;"
        "CREATE INDEX winners_age ON winners(measured_at);"
        "CREATE INDEX winners_family ON winners(family);"
        "UPDATE meta SET v='3' WHERE k='schema';"
        "COMMIT;";
    sqlite3_stmt *get = NULL, *put = NULL;
    int64_t moved = 0, dropped = 0;
    char *emsg = NULL;
    gxd_tune_rec *r = malloc(sizeof *r);
    char cands[GXD_TUNE_MAX_IMPLS * 160];
    if (!r || sqlite3_exec(d->db, "BEGIN", NULL, NULL, &emsg) != SQLITE_OK ||
        sqlite3_exec(d->db, make, NULL, NULL, &emsg) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db,
                           "SELECT key, family, op, impl, version, ns, others, validation, host,"
                           " measured_at, reuse FROM winners ORDER BY measured_at, key",
                           -1, &get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db,
                           "INSERT OR REPLACE INTO winners3(key, family, op, impl, version, ns,"
                           " others, validation, host, measured_at, reuse, build, cands)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &put, NULL) != SQLITE_OK)
        goto fail;
    int s;
    while ((s = sqlite3_step(get)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(get, 0),
                   *fam = (const char *)sqlite3_column_text(get, 1),
                   *others = (const char *)sqlite3_column_text(get, 6);
        const char *kb = key ? s_part(key, 2) : NULL, *fb = fam ? s_part(fam, 2) : NULL;
        gxd_tune_buildinfo bi;
        memset(r, 0, sizeof *r);
        s_text(get, 3, r->impl, sizeof r->impl);
        r->version = sqlite3_column_int(get, 4);
        r->measured_at = sqlite3_column_int64(get, 9);
        if (!kb || !fb || !others || !gxd_tune_buildinfo_parse_legacy(kb, &bi) ||
            !gxd_tune_cands_from_others(others, &bi, r)) {
            dropped++;
            continue;
        }
        gxd_tune_build_id(r->impl, &bi, r->build, sizeof r->build);
        if (!gxd_tune_rec_cand(r, r->impl, r->version) && r->n_cands < GXD_TUNE_MAX_IMPLS) {
            gxd_tune_cand *c = &r->cands[r->n_cands++]; /* schema 2 kept the winner apart */
            _Static_assert(sizeof c->name == sizeof r->impl && sizeof c->build == sizeof r->build,
                           "a candidate's name and build are the record's");
            memcpy(c->name, r->impl, sizeof c->name);
            c->version = r->version;
            memcpy(c->build, r->build, sizeof c->build);
            c->ns = sqlite3_column_int64(get, 5);
            c->at = r->measured_at;
        }
        gxd_tune_cands_str(r, cands, sizeof cands);
        sqlite3_reset(put);
        sqlite3_bind_text(put, 1, key, (int)(kb - 3 - key), SQLITE_TRANSIENT);
        sqlite3_bind_text(put, 2, fam, (int)(fb - 3 - fam), SQLITE_TRANSIENT);
        for (int c = 2; c <= 10; c++)
            sqlite3_bind_value(put, c + 1, sqlite3_column_value(get, c));
        sqlite3_bind_text(put, 12, r->build, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(put, 13, cands, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(put) != SQLITE_DONE)
            goto fail;
        moved++;
    }
    if (s != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(get);
    sqlite3_finalize(put);
    get = put = NULL;
    if (sqlite3_exec(d->db, finish, NULL, NULL, &emsg) != SQLITE_OK)
        goto fail;
    if (log)
        GXD_LOG(log, GXD_LOG_INFO,
                "tune: %s migrated from schema 2: %lld records kept, %lld unreadable dropped",
                path, (long long)moved, (long long)dropped);
    free(r);
    return GX_OK;
fail:
    gx_errf(err, errlen, GX_EFORMAT, "%s: migrating from schema 2: %s", path,
            emsg ? emsg : sqlite3_errmsg(d->db));
    sqlite3_free(emsg);
    sqlite3_finalize(get);
    sqlite3_finalize(put);
    (void)sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    free(r);
    return GX_EFORMAT;
}

/* Open path and check it: GX_OK, GX_EFORMAT (not a database, or corrupt:
 * the caller moves it aside) or GX_EIO. */
static int s_open(gxd_tune_db *d, const char *path, gxd_log *log, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(path, &d->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        gx_errf(err, errlen, GX_EIO, "%s: %s", path, d->db ? sqlite3_errmsg(d->db) : "no memory");
        s_finalize(d);
        return GX_EIO;
    }
    sqlite3_busy_timeout(d->db, 2000);
    sqlite3_stmt *q = NULL;
    bool ok = false;
    char *emsg = NULL;
    rc = sqlite3_prepare_v2(d->db, "PRAGMA quick_check", -1, &q, NULL);
    if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(q, 0);
        ok = v && !strcmp((const char *)v, "ok");
        if (!ok)
            gx_errf(err, errlen, GX_EFORMAT, "%s: quick_check: %s", path, v ? (const char *)v : "?");
    } else {
        rc = sqlite3_errcode(d->db);
        gx_errf(err, errlen, GX_EFORMAT, "%s: %s", path, sqlite3_errmsg(d->db));
    }
    sqlite3_finalize(q);
    if (ok && sqlite3_exec(d->db, s_schema, NULL, NULL, &emsg) != SQLITE_OK) {
        ok = false;
        rc = sqlite3_errcode(d->db);
        gx_errf(err, errlen, GX_EFORMAT, "%s: %s", path, emsg ? emsg : "schema");
    }
    sqlite3_free(emsg);
    if (ok) {
        /* a database of another schema version is not ours to read, but
         * schema 2's, which we migrate */
        sqlite3_stmt *v = NULL;
        int version = S_SCHEMA_VERSION;
        if (sqlite3_prepare_v2(d->db, "SELECT v FROM meta WHERE k='schema'", -1, &v, NULL) ==
                SQLITE_OK &&
            sqlite3_step(v) == SQLITE_ROW)
            version = sqlite3_column_int(v, 0);
        sqlite3_finalize(v);
        if (version == 2) {
            ok = s_migrate(d, path, log, err, errlen) == GX_OK;
            if (!ok)
                rc = SQLITE_CORRUPT; /* moved aside */
        } else if (version != S_SCHEMA_VERSION) {
            ok = false;
            gx_errf(err, errlen, GX_EFORMAT, "%s: schema version %d, this gexecd reads %d", path,
                    version, S_SCHEMA_VERSION);
        }
    }
    if (ok && s_prepare(d, err, errlen) != GX_OK)
        ok = false;
    if (ok)
        return GX_OK;
    s_finalize(d);
    /* a file that is no database (or a damaged one) is moved aside; a
     * directory we cannot write to is an I/O error */
    return rc == SQLITE_CANTOPEN || rc == SQLITE_READONLY || rc == SQLITE_PERM ||
                   rc == SQLITE_IOERR
               ? GX_EIO
               : GX_EFORMAT;
}

gxd_tune_db *gxd_tune_db_open(const char *dir, int64_t max_records, gxd_log *log, char *err,
                              size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/tune.db", dir) >= (int)sizeof path) {
        gx_errf(err, errlen, GX_EINVAL, "tune: directory name too long");
        return NULL;
    }
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        gx_errf(err, errlen, GX_EIO, "tune: cannot make %s: %s", dir, strerror(errno));
        return NULL;
    }
    gxd_tune_db *d = calloc(1, sizeof *d);
    if (!d) {
        gx_errf(err, errlen, GX_ENOMEM, "tune: out of memory");
        return NULL;
    }
    d->max_records = max_records > 0 ? max_records : 100000;
    int rc = s_open(d, path, log, err, errlen);
    if (rc == GX_EFORMAT) {
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.corrupt-%lld", path, (long long)time(NULL));
        if (log)
            GXD_LOG(log, GXD_LOG_WARN, "tune: %s; moved aside to %s, starting a new database", err,
                    aside);
        if (rename(path, aside) != 0) {
            gx_errf(err, errlen, GX_EIO, "tune: cannot move %s aside: %s", path, strerror(errno));
            free(d);
            return NULL;
        }
        /* the journal files belong to the old file */
        char side[4200];
        snprintf(side, sizeof side, "%s-wal", path);
        (void)unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        (void)unlink(side);
        rc = s_open(d, path, log, err, errlen);
    }
    if (rc != GX_OK) {
        free(d);
        return NULL;
    }
    return d;
}

void gxd_tune_db_close(gxd_tune_db **dp)
{
    gxd_tune_db *d = *dp;
    if (!d)
        return;
    s_finalize(d);
    free(d);
    *dp = NULL;
}

/* A record from the first 9 columns of a SELECT. */
static void s_row(sqlite3_stmt *q, gxd_tune_rec *r)
{
    memset(r, 0, sizeof *r);
    s_text(q, 0, r->impl, sizeof r->impl);
    r->version = sqlite3_column_int(q, 1);
    r->ns = sqlite3_column_int64(q, 2);
    s_text(q, 3, r->others, sizeof r->others);
    s_text(q, 4, r->validation, sizeof r->validation);
    s_text(q, 5, r->host, sizeof r->host);
    r->measured_at = sqlite3_column_int64(q, 6);
    s_text(q, 7, r->build, sizeof r->build);
    const unsigned char *c = sqlite3_column_text(q, 8);
    if (!gxd_tune_cands_parse(c ? (const char *)c : "", r))
        r->n_cands = 0; /* damaged: every candidate is measured again */
    r->level = GXD_TUNE_LOCAL;
}

int gxd_tune_db_family(gxd_tune_db *d, const char *family, int max,
                       void (*fn)(void *arg, const char *key, const gxd_tune_rec *rec), void *arg)
{
    sqlite3_reset(d->family);
    sqlite3_bind_text(d->family, 1, family, -1, SQLITE_STATIC);
    sqlite3_bind_int(d->family, 2, max);
    int s;
    while ((s = sqlite3_step(d->family)) == SQLITE_ROW) {
        gxd_tune_rec r;
        s_row(d->family, &r);
        const unsigned char *key = sqlite3_column_text(d->family, 9);
        if (key)
            fn(arg, (const char *)key, &r);
    }
    sqlite3_reset(d->family);
    sqlite3_clear_bindings(d->family);
    return s == SQLITE_DONE ? GX_OK : GX_EIO;
}

int gxd_tune_db_get(gxd_tune_db *d, const char *const *keys, size_t n, gxd_tune_rec *recs,
                    bool *found)
{
    int rc = GX_OK;
    if (sqlite3_exec(d->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return GX_EIO;
    for (size_t i = 0; i < n; i++) {
        found[i] = false;
        if (!keys[i])
            continue;
        sqlite3_reset(d->get);
        sqlite3_bind_text(d->get, 1, keys[i], -1, SQLITE_STATIC);
        int s = sqlite3_step(d->get);
        if (s == SQLITE_ROW) {
            s_row(d->get, &recs[i]);
            found[i] = true;
            sqlite3_reset(d->reuse);
            sqlite3_bind_text(d->reuse, 1, keys[i], -1, SQLITE_STATIC);
            if (sqlite3_step(d->reuse) != SQLITE_DONE)
                rc = GX_EIO;
        } else if (s != SQLITE_DONE) {
            rc = GX_EIO;
        }
        sqlite3_clear_bindings(d->get);
    }
    sqlite3_reset(d->get);
    sqlite3_reset(d->reuse);
    if (sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        (void)sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
        rc = GX_EIO;
    }
    return rc;
}

int gxd_tune_db_put(gxd_tune_db *d, const char *key, const char *family, const char *op,
                    const gxd_tune_rec *r)
{
    sqlite3_stmt *q = d->put;
    sqlite3_reset(q);
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, op, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, r->impl, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 4, r->version);
    sqlite3_bind_int64(q, 5, r->ns);
    sqlite3_bind_text(q, 6, r->others, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, r->validation, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 8, r->host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 9, r->measured_at);
    sqlite3_bind_text(q, 10, family, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 11, r->build, -1, SQLITE_STATIC);
    char cands[GXD_TUNE_MAX_IMPLS * 160];
    gxd_tune_cands_str(r, cands, sizeof cands);
    sqlite3_bind_text(q, 12, cands, -1, SQLITE_TRANSIENT);
    int s = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (s != SQLITE_DONE)
        return GX_EIO;
    /* keep the table bounded; checking every 64 puts is enough */
    if (++d->puts >= 64 || d->max_records < 64) {
        d->puts = 0;
        sqlite3_reset(d->trim);
        sqlite3_bind_int64(d->trim, 1, d->max_records);
        s = sqlite3_step(d->trim);
        sqlite3_reset(d->trim);
        if (s != SQLITE_DONE)
            return GX_EIO;
    }
    return GX_OK;
}
