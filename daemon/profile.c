/* The profile store: per graph id, node runs and times. See profile.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/profile.h"
#include "core/internal.h"
#include "core/json.h"
#include "ops/layout.h"

#define S_MAX_COUNT INT64_C(9007199254740991) /* 2^53 - 1: exact in JSON numbers */

gxd_profile *gxd_profile_new(const char *hex)
{
    gxd_profile *p = calloc(1, sizeof *p);
    if (p)
        snprintf(p->graph, sizeof p->graph, "%s", hex ? hex : "");
    return p;
}

void gxd_profile_destroy(gxd_profile **pp)
{
    if (!pp || !*pp)
        return;
    gxd_profile *p = *pp;
    for (size_t i = 0; i < p->n; i++)
        free(p->nodes[i].name);
    free(p->nodes);
    free(p);
    *pp = NULL;
}

int gxd_profile_add(gxd_profile *p, const char *name, int64_t runs, int64_t ns)
{
    if (p->n >= GXD_PROFILE_MAX_NODES || strlen(name) > GXD_PROFILE_MAX_NAME)
        return GX_ELIMIT;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        gxd_profile_node *nodes = realloc(p->nodes, cap * sizeof *nodes);
        if (!nodes)
            return GX_ENOMEM;
        p->nodes = nodes;
        p->cap = cap;
    }
    char *copy = gx_strdup(name);
    if (!copy)
        return GX_ENOMEM;
    p->nodes[p->n++] = (gxd_profile_node){copy, runs < 0 ? 0 : runs, ns < 0 ? 0 : ns};
    return GX_OK;
}

static int s_cmp(const void *a, const void *b)
{
    return strcmp(((const gxd_profile_node *)a)->name, ((const gxd_profile_node *)b)->name);
}

static int64_t s_sat_add(int64_t a, int64_t b)
{
    return a > S_MAX_COUNT - b ? S_MAX_COUNT : a + b;
}

void gxd_profile_finish(gxd_profile *p)
{
    if (p->n > 1)
        qsort(p->nodes, p->n, sizeof *p->nodes, s_cmp);
    size_t w = 0;
    for (size_t r = 0; r < p->n; r++) {
        gxd_profile_node *in = &p->nodes[r];
        if (w > 0 && strcmp(p->nodes[w - 1].name, in->name) == 0) {
            gxd_profile_node *d = &p->nodes[w - 1];
            /* times weighted by runs, among the entries that were timed */
            double wd = d->ns > 0 ? (double)(d->runs ? d->runs : 1) : 0;
            double wi = in->ns > 0 ? (double)(in->runs ? in->runs : 1) : 0;
            if (wd + wi > 0)
                d->ns = (int64_t)llround(((double)d->ns * wd + (double)in->ns * wi) / (wd + wi));
            d->runs = s_sat_add(d->runs, in->runs);
            free(in->name);
            continue;
        }
        p->nodes[w++] = *in;
    }
    p->n = w;
}

int gxd_profile_merge(gxd_profile *dst, const gxd_profile *src)
{
    dst->jobs = s_sat_add(dst->jobs, src->jobs);
    for (size_t i = 0; i < src->n; i++) {
        int rc = gxd_profile_add(dst, src->nodes[i].name, src->nodes[i].runs, src->nodes[i].ns);
        if (rc < 0)
            return rc;
    }
    gxd_profile_finish(dst);
    return GX_OK;
}

const gxd_profile_node *gxd_profile_find(const gxd_profile *p, const char *name)
{
    if (!p || !p->n)
        return NULL;
    gxd_profile_node key = {.name = (char *)name};
    return bsearch(&key, p->nodes, p->n, sizeof *p->nodes, s_cmp);
}

/* ---- folding a plan's counters ------------------------------------------- */

typedef struct s_fold {
    gxd_profile *p;
    const char *prefix; /* "<path of the control node>/" */
    bool try;
    int rc;
} s_fold;

static void s_fold_sub(void *arg, const char *attr, const gxd_plan *plan)
{
    s_fold *f = arg;
    char prefix[GXD_PROFILE_MAX_NAME + 2];
    if (f->rc < 0)
        return;
    if ((size_t)snprintf(prefix, sizeof prefix, "%s%s/", f->prefix, attr) >= sizeof prefix) {
        f->rc = GX_ELIMIT;
        return;
    }
    f->rc = gxd_profile_fold_plan(f->p, plan, prefix, false, f->try);
}

static const char *s_node_name(const gxd_step *st)
{
    return st->node && st->node->name ? st->node->name : NULL;
}

int gxd_profile_fold_plan(gxd_profile *p, const gxd_plan *plan, const char *prefix, bool top,
                          bool try)
{
    int64_t runs = atomic_load_explicit(&plan->stats[plan->n_steps].runs, memory_order_relaxed);
    char name[GXD_PROFILE_MAX_NAME + 2];
    int rc;
    if (top)
        p->jobs = s_sat_add(p->jobs, runs);
    for (size_t s = 0; s < plan->n_steps; s++) {
        const gxd_step *st = &plan->steps[s];
        const char *nn = s_node_name(st);
        /* the graph's nodes only */
        if (st->folded || st->copy || st->reorder || st->convert || !nn)
            continue;
        if ((size_t)snprintf(name, sizeof name, "%s%s", prefix, nn) >= sizeof name)
            return GX_ELIMIT;
        int64_t ns = atomic_load_explicit(&plan->stats[s].ns, memory_order_relaxed);
        if (runs > 0 && (rc = gxd_profile_add(p, name, runs, ns)) < 0)
            return rc;
        if (runs > 0 && ns > 0 && !st->fused && gx_layout_sensitive(st->op)) {
            /* its time in the layout it ran in, for the layout pass */
            char at[GXD_PROFILE_MAX_NAME + 16];
            if ((size_t)snprintf(at, sizeof at, "%s@%s", name, gx_layout_name(st->layout)) <=
                    GXD_PROFILE_MAX_NAME &&
                (rc = gxd_profile_add(p, at, runs, ns)) < 0)
                return rc;
        }
        if (st->sub) {
            if (strlen(name) + 1 >= sizeof name)
                return GX_ELIMIT;
            strcat(name, "/");
            s_fold f = {p, name, try, GX_OK};
            if (!gxd_subplans_each(st->sub, try, s_fold_sub, &f))
                return GX_EBUSY;
            if (f.rc < 0)
                return f.rc;
        }
    }
    /* nodes the fuse pass merged into a step ran with it; its time is the
     * step's, recorded under its last node above */
    for (size_t g = 0; runs > 0 && g < plan->n_fuse_groups; g++) {
        const gxd_fuse_group *fg = &plan->fuse_groups[g];
        if (fg->n_nodes < 2 || fg->step < 0 || (size_t)fg->step >= plan->n_steps)
            continue;
        for (size_t k = 0; k + 1 < fg->n_nodes; k++) {
            if ((size_t)snprintf(name, sizeof name, "%s%s", prefix, fg->nodes[k]) >= sizeof name)
                return GX_ELIMIT;
            if ((rc = gxd_profile_add(p, name, runs, 0)) < 0)
                return rc;
        }
    }
    return GX_OK;
}

size_t gxd_profile_seed(const gxd_profile *p, gxd_plan *plan)
{
    size_t seeded = 0;
    for (size_t s = 0; p && s < plan->n_steps; s++) {
        const gxd_step *st = &plan->steps[s];
        const char *nn = s_node_name(st);
        /* the graph's nodes only */
        if (st->folded || st->copy || st->reorder || st->convert || !nn)
            continue;
        const gxd_profile_node *e = gxd_profile_find(p, nn);
        if (e && e->ns > 0) {
            atomic_store_explicit(&plan->stats[s].ns, e->ns, memory_order_relaxed);
            seeded++;
        }
    }
    return seeded;
}

/* ---- the file format ------------------------------------------------------ */

char *gxd_profile_to_json(const gxd_profile *p)
{
    gx_strbuf b = {0};
    gx_strbuf_printf(&b, "{\"format\": \"gexec-profile\", \"version\": 1, \"graph\": ");
    gx_strbuf_json_str(&b, p->graph, strlen(p->graph));
    gx_strbuf_printf(&b, ", \"jobs\": %lld,\n \"nodes\": [", (long long)p->jobs);
    for (size_t i = 0; i < p->n; i++) {
        gx_strbuf_printf(&b, "%s\n  {\"name\": ", i ? "," : "");
        gx_strbuf_json_str(&b, p->nodes[i].name, strlen(p->nodes[i].name));
        gx_strbuf_printf(&b, ", \"runs\": %lld, \"ns\": %lld}", (long long)p->nodes[i].runs,
                         (long long)p->nodes[i].ns);
    }
    gx_strbuf_printf(&b, "]}\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* A count: an integer in [0, 2^53). */
static bool s_count(const gx_json *v, int64_t *out)
{
    if (!v || v->type != GX_JSON_NUM || !(v->num >= 0) || v->num > (double)S_MAX_COUNT ||
        v->num != floor(v->num))
        return false;
    *out = (int64_t)v->num;
    return true;
}

int gxd_profile_from_json(const char *text, const char *hex, gxd_profile **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    char why[128];
    gx_json *j = gx_json_parse(text, why, sizeof why);
    if (!j)
        return gx_errf(err, errlen, GX_EFORMAT, "not JSON: %s", why);
    gxd_profile *p = NULL;
    int rc;
    const gx_json *nodes = gx_json_get(j, "nodes");
    int64_t version = 0, jobs = 0;
    if (j->type != GX_JSON_OBJ ||
        strcmp(gx_json_str(gx_json_get(j, "format"), ""), "gexec-profile") != 0) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "not a gexec profile");
        goto out;
    }
    if (!s_count(gx_json_get(j, "version"), &version) || version != 1) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "unsupported profile version");
        goto out;
    }
    if (strcmp(gx_json_str(gx_json_get(j, "graph"), ""), hex) != 0) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "profile of another graph");
        goto out;
    }
    if (!s_count(gx_json_get(j, "jobs"), &jobs) || !nodes || nodes->type != GX_JSON_ARR) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "'jobs' or 'nodes' missing or malformed");
        goto out;
    }
    if (nodes->n > GXD_PROFILE_MAX_NODES) {
        rc = gx_errf(err, errlen, GX_ELIMIT, "more than %d nodes", GXD_PROFILE_MAX_NODES);
        goto out;
    }
    if (!(p = gxd_profile_new(hex))) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    p->jobs = jobs;
    for (size_t i = 0; i < nodes->n; i++) {
        const gx_json *e = &nodes->items[i];
        const char *name = gx_json_str(gx_json_get(e, "name"), NULL);
        int64_t runs, ns;
        if (e->type != GX_JSON_OBJ || !name || !*name || !s_count(gx_json_get(e, "runs"), &runs) ||
            !s_count(gx_json_get(e, "ns"), &ns)) {
            rc = gx_errf(err, errlen, GX_EFORMAT, "node %zu: malformed", i);
            goto out;
        }
        if ((rc = gxd_profile_add(p, name, runs, ns)) < 0) {
            gx_errf(err, errlen, rc, "node %zu: %s", i,
                    rc == GX_ELIMIT ? "name too long" : "out of memory");
            goto out;
        }
    }
    gxd_profile_finish(p);
    *out = p;
    p = NULL;
    rc = GX_OK;
out:
    gxd_profile_destroy(&p);
    gx_json_destroy(&j);
    return rc;
}

/* ---- the directory -------------------------------------------------------- */

void gxd_profile_dir(const char *cfg, char *out, size_t len)
{
    out[0] = '\0';
    if (!cfg || !*cfg)
        return;
    if (strcmp(cfg, "default") != 0) {
        snprintf(out, len, "%s", cfg);
        return;
    }
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    const char *unit = getenv("STATE_DIRECTORY"); /* systemd's StateDirectory= */
    int n = -1;
    if (unit && unit[0] == '/')
        n = snprintf(out, len, "%.*s/profiles", (int)strcspn(unit, ":"), unit);
    else if (geteuid() == 0)
        n = snprintf(out, len, "/var/lib/gexec/profiles");
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, len, "%s/gexec/profiles", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, len, "%s/.local/state/gexec/profiles", home);
    if (n < 0 || (size_t)n >= len)
        out[0] = '\0';
}

static int s_path(char *out, size_t len, const char *dir, const char *hex, char *err,
                  size_t errlen)
{
    for (const char *c = hex; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return gx_errf(err, errlen, GX_EINVAL, "graph id '%.80s' is not hex", hex);
    if (!*hex || (size_t)snprintf(out, len, "%s/%s.json", dir, hex) >= len)
        return gx_errf(err, errlen, GX_ELIMIT, "profile path too long");
    return GX_OK;
}

int gxd_profile_load(const char *dir, const char *hex, gxd_profile **out, char *err,
                     size_t errlen)
{
    char path[PATH_MAX];
    *out = NULL;
    int rc = s_path(path, sizeof path, dir, hex, err, errlen);
    if (rc < 0)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? GX_OK : gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "%s: not a regular file", path);
        goto out;
    }
    if (st.st_size > GXD_PROFILE_MAX_FILE) {
        rc = gx_errf(err, errlen, GX_ELIMIT, "%s: larger than %d bytes", path, GXD_PROFILE_MAX_FILE);
        goto out;
    }
    if (!(text = malloc((size_t)st.st_size + 1))) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "out of memory");
        goto out;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = gx_errf(err, errlen, GX_EIO, "%s: %s", path, r < 0 ? strerror(errno) : "truncated");
            goto out;
        }
        got += (size_t)r;
    }
    text[got] = '\0';
    if (strlen(text) != got) {
        rc = gx_errf(err, errlen, GX_EFORMAT, "%s: holds a NUL byte", path);
        goto out;
    }
    char why[256];
    if ((rc = gxd_profile_from_json(text, hex, out, why, sizeof why)) < 0)
        gx_errf(err, errlen, rc, "%s: %s", path, why);
out:
    free(text);
    close(fd);
    return rc;
}

/* mkdir -p */
static int s_mkdirs(const char *dir)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", dir) >= sizeof tmp)
        return -1;
    for (char *c = tmp + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *c = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Write all of text to fd; 0 or an errno. */
static int s_write_all(int fd, const char *text, size_t len)
{
    size_t put = 0;
    while (put < len) {
        ssize_t w = write(fd, text + put, len - put);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        if (w == 0)
            return EIO;
        put += (size_t)w;
    }
    return 0;
}

static int s_write_file(const char *dir, const char *name, const void *buf, size_t len,
                        bool sync, const char **op)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    *op = "name the file";
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name) >= sizeof tmp)
        return ENAMETOOLONG;
    *op = "create the directory";
    if (s_mkdirs(dir) != 0)
        return errno;
    *op = "create a temporary file";
    int fd = mkstemp(tmp);
    if (fd < 0)
        return errno;
    *op = "write";
    int rc = s_write_all(fd, buf, len);
    if (rc == 0 && fchmod(fd, 0644) != 0)
        *op = "chmod", rc = errno;
    if (rc == 0 && sync && fsync(fd) != 0)
        *op = "fsync", rc = errno;
    if (close(fd) != 0 && rc == 0)
        *op = "close", rc = errno;
    if (rc == 0 && rename(tmp, path) != 0)
        *op = "rename", rc = errno;
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    if (!sync)
        return 0;
    /* the rename itself survives a crash once the directory is synced */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL)
            *op = "fsync the directory", rc = errno;
        close(dfd);
    }
    return rc;
}

int gxd_write_durable(const char *dir, const char *name, const void *buf, size_t len,
                      const char **op)
{
    return s_write_file(dir, name, buf, len, true, op);
}

int gxd_write_atomic(const char *dir, const char *name, const void *buf, size_t len,
                     const char **op)
{
    return s_write_file(dir, name, buf, len, false, op);
}

/* <dir>/<graph>.json through gxd_write_durable. On failure *op names the
 * step ("write", "rename"...), and the return is an errno (> 0) or a
 * negative gx_status with err set; 0 on success. *bytes: the file's size. */
static int s_save(const gxd_profile *p, const char *dir, const char **op, size_t *bytes,
                  char *err, size_t errlen)
{
    char path[PATH_MAX], name[96];
    int rc = s_path(path, sizeof path, dir, p->graph, err, errlen);
    *op = "name the file";
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "%s.json", p->graph);
    *op = "format";
    char *text = gxd_profile_to_json(p);
    if (!text)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    *bytes = strlen(text);
    rc = gxd_write_durable(dir, name, text, *bytes, op);
    free(text);
    return rc;
}

int gxd_profile_save(const gxd_profile *p, const char *dir, char *err, size_t errlen)
{
    const char *op = "";
    size_t bytes = 0;
    int rc = s_save(p, dir, &op, &bytes, err, errlen);
    if (rc > 0)
        return gx_errf(err, errlen, GX_EIO, "%s/%s.json: %s: %s", dir, p->graph, op, strerror(rc));
    return rc;
}

/* ---- the store: bounded in files and bytes -------------------------------- */

typedef struct s_entry {
    char hex[65];
    int64_t bytes;
    uint64_t used; /* recency: larger is more recent */
} s_entry;

struct gxd_profile_store {
    char dir[PATH_MAX];
    int64_t max_entries, max_bytes;
    gxd_log *log;
    pthread_mutex_t mu;
    bool scanned; /* the index holds the directory's files */
    s_entry *e;
    size_t n, cap;
    uint64_t clock; /* the last recency handed out */
    gxd_profile_store_stats st;
    /* the failure being counted: its cause ("write: No space left on
     * device") and how often it happened since it was logged */
    char cause[160];
    int64_t cause_count;
};

gxd_profile_store *gxd_profile_store_new(const char *dir, int64_t max_entries, int64_t max_bytes,
                                         gxd_log *log)
{
    if (!dir || !*dir || strlen(dir) >= PATH_MAX)
        return NULL;
    gxd_profile_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return NULL;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->max_entries = max_entries > 0 ? max_entries : 1;
    s->max_bytes = max_bytes > 0 ? max_bytes : 1;
    s->log = log;
    return s;
}

void gxd_profile_store_destroy(gxd_profile_store **sp)
{
    if (!sp || !*sp)
        return;
    gxd_profile_store *s = *sp;
    if (s->cause_count > 1 && s->log)
        GXD_LOG(s->log, GXD_LOG_WARN, "profiles in %s: %lld saves failed in all: %s", s->dir,
                (long long)s->cause_count, s->cause);
    pthread_mutex_destroy(&s->mu);
    free(s->e);
    free(s);
    *sp = NULL;
}

const char *gxd_profile_store_dir(const gxd_profile_store *s)
{
    return s->dir;
}

static bool s_is_hex64(const char *h, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return false;
    return true;
}

static s_entry *s_find_entry(gxd_profile_store *s, const char *hex)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].hex, hex) == 0)
            return &s->e[i];
    return NULL;
}

/* The entry of hex, added when missing; NULL on ENOMEM. */
static s_entry *s_entry_get(gxd_profile_store *s, const char *hex)
{
    s_entry *e = s_find_entry(s, hex);
    if (e)
        return e;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        s_entry *ne = realloc(s->e, cap * sizeof *ne);
        if (!ne)
            return NULL;
        s->e = ne;
        s->cap = cap;
    }
    e = &s->e[s->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->hex, sizeof e->hex, "%s", hex);
    return e;
}

/* A failure of cause (op and errno, or a message): logged the first time
 * in a row, counted after that; a change of cause logs the count of the
 * last one. Under the lock. */
static void s_failed(gxd_profile_store *s, const char *hex, const char *cause)
{
    s->st.failed++;
    if (s->cause_count > 0 && strcmp(s->cause, cause) == 0) {
        s->cause_count++;
        return;
    }
    if (s->cause_count > 1 && s->log)
        GXD_LOG(s->log, GXD_LOG_WARN, "profiles in %s: %lld saves failed: %s", s->dir,
                (long long)s->cause_count, s->cause);
    snprintf(s->cause, sizeof s->cause, "%s", cause);
    s->cause_count = 1;
    if (s->log)
        GXD_LOG(s->log, GXD_LOG_WARN,
                "profiles in %s not saved: %s (graph %.12s); further failures for this cause "
                "are counted, not logged",
                s->dir, cause, hex);
}

static void s_succeeded(gxd_profile_store *s)
{
    if (s->cause_count > 0 && s->log)
        GXD_LOG(s->log, GXD_LOG_INFO, "profiles in %s are saved again, after %lld failed: %s",
                s->dir, (long long)s->cause_count, s->cause);
    s->cause_count = 0;
    s->cause[0] = '\0';
}

/* Drop least recently used files (never keep's) until the bounds hold.
 * Under the lock. */
static void s_evict(gxd_profile_store *s, const char *keep)
{
    for (;;) {
        int64_t bytes = 0;
        for (size_t i = 0; i < s->n; i++)
            bytes += s->e[i].bytes;
        if ((int64_t)s->n <= s->max_entries && bytes <= s->max_bytes)
            break;
        size_t v = s->n;
        for (size_t i = 0; i < s->n; i++)
            if ((!keep || strcmp(s->e[i].hex, keep) != 0) && (v == s->n || s->e[i].used < s->e[v].used))
                v = i;
        if (v == s->n)
            break; /* only the file just written: it stays */
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s.json", s->dir, s->e[v].hex) < sizeof path &&
            unlink(path) != 0 && errno != ENOENT) {
            char cause[160];
            snprintf(cause, sizeof cause, "remove the least recently used file: %s", strerror(errno));
            s_failed(s, s->e[v].hex, cause);
        } else {
            s->st.evicted++;
        }
        s->e[v] = s->e[--s->n]; /* out of the index either way: never retried in a loop */
    }
}

/* Read the directory into the index once: profiles by modification time
 * (the oldest least recent), temporary files a crash left removed. Under
 * the lock. */
static void s_scan(gxd_profile_store *s)
{
    if (s->scanned)
        return;
    s->scanned = true;
    DIR *d = opendir(s->dir);
    if (!d)
        return; /* none yet: created on the first save */
    struct dirent *de;
    typedef struct {
        s_entry e;
        struct timespec mtime;
    } s_found;
    s_found *found = NULL;
    size_t n = 0, cap = 0;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        size_t len = strlen(nm);
        struct stat st;
        if (fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (nm[0] == '.' && len == 1 + 64 + 5 + 7 && s_is_hex64(nm + 1, 64) &&
            strncmp(nm + 65, ".json.", 6) == 0) {
            unlinkat(dirfd(d), nm, 0); /* ".<hex>.json.XXXXXX": a save cut short */
            continue;
        }
        if (len != 64 + 5 || !s_is_hex64(nm, 64) || strcmp(nm + 64, ".json") != 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            s_found *nf = realloc(found, nc * sizeof *nf);
            if (!nf)
                break;
            found = nf;
            cap = nc;
        }
        memset(&found[n], 0, sizeof found[n]);
        memcpy(found[n].e.hex, nm, 64);
        found[n].e.bytes = st.st_size;
        found[n].mtime = st.st_mtim;
        n++;
    }
    closedir(d);
    /* oldest first; equal times by name, so the order does not depend on
     * the directory's */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0; j--) {
            const s_found *a = &found[j - 1], *b = &found[j];
            bool later = a->mtime.tv_sec > b->mtime.tv_sec ||
                         (a->mtime.tv_sec == b->mtime.tv_sec &&
                          (a->mtime.tv_nsec > b->mtime.tv_nsec ||
                           (a->mtime.tv_nsec == b->mtime.tv_nsec && strcmp(a->e.hex, b->e.hex) > 0)));
            if (!later)
                break;
            s_found t = found[j - 1];
            found[j - 1] = found[j];
            found[j] = t;
        }
    for (size_t i = 0; i < n; i++) {
        s_entry *e = s_entry_get(s, found[i].e.hex);
        if (!e)
            break;
        e->bytes = found[i].e.bytes;
        e->used = ++s->clock;
    }
    free(found);
    s_evict(s, NULL);
}

void gxd_profile_store_open(gxd_profile_store *s)
{
    pthread_mutex_lock(&s->mu);
    s_scan(s);
    pthread_mutex_unlock(&s->mu);
}

int gxd_profile_store_load(gxd_profile_store *s, const char *hex, gxd_profile **out, char *err,
                           size_t errlen)
{
    int rc = gxd_profile_load(s->dir, hex, out, err, errlen);
    pthread_mutex_lock(&s->mu);
    s_scan(s);
    s_entry *e = s_find_entry(s, hex);
    if (e) {
        /* used now: the file's time says so after a restart too */
        char path[PATH_MAX];
        e->used = ++s->clock;
        if ((size_t)snprintf(path, sizeof path, "%s/%s.json", s->dir, hex) < sizeof path)
            (void)utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int gxd_profile_store_save(gxd_profile_store *s, const gxd_profile *p)
{
    char err[256] = "";
    const char *op = "";
    size_t bytes = 0;
    pthread_mutex_lock(&s->mu);
    s_scan(s);
    int rc = s_save(p, s->dir, &op, &bytes, err, sizeof err);
    if (rc != 0) {
        char cause[160];
        if (rc > 0)
            snprintf(cause, sizeof cause, "%s: %s", op, strerror(rc));
        else
            snprintf(cause, sizeof cause, "%s", err);
        s_failed(s, p->graph, cause);
        pthread_mutex_unlock(&s->mu);
        return rc > 0 ? GX_EIO : rc;
    }
    s->st.saved++;
    s_succeeded(s);
    s_entry *e = s_entry_get(s, p->graph);
    if (e) {
        e->bytes = (int64_t)bytes;
        e->used = ++s->clock;
    }
    s_evict(s, p->graph);
    pthread_mutex_unlock(&s->mu);
    return GX_OK;
}

void gxd_profile_store_stats_get(gxd_profile_store *s, gxd_profile_store_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    out->entries = (int64_t)s->n;
    out->bytes = 0;
    for (size_t i = 0; i < s->n; i++)
        out->bytes += s->e[i].bytes;
    pthread_mutex_unlock(&s->mu);
}
