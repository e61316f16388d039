/* The profile store: per graph id, node runs and times. See profile.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/profile.h"
#include "libclient/internal.h"
#include "libclient/json.h"
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
        if (st->folded || st->copy || st->reorder || !nn) /* the graph's nodes only */
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
        if (st->folded || st->copy || st->reorder || !nn) /* the graph's nodes only */
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

int gxd_profile_save(const gxd_profile *p, const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    int rc = s_path(path, sizeof path, dir, p->graph, err, errlen);
    if (rc < 0)
        return rc;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%s.json.XXXXXX", dir, p->graph) >= sizeof tmp)
        return gx_errf(err, errlen, GX_ELIMIT, "profile path too long");
    if (s_mkdirs(dir) != 0)
        return gx_errf(err, errlen, GX_EIO, "cannot create %s: %s", dir, strerror(errno));
    char *text = gxd_profile_to_json(p);
    if (!text)
        return gx_errf(err, errlen, GX_ENOMEM, "out of memory");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: %s", tmp, strerror(errno));
        free(text);
        return rc;
    }
    size_t len = strlen(text), put = 0;
    while (put < len) {
        ssize_t w = write(fd, text + put, len - put);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        put += (size_t)w;
    }
    free(text);
    int saved = errno;
    /* no fsync: saves run on the I/O thread; a file a crash leaves empty
     * or cut is ignored when read */
    if (put < len || fchmod(fd, 0644) != 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: %s", tmp, strerror(put < len ? saved : errno));
        close(fd);
        unlink(tmp);
        return rc;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        rc = gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return rc;
    }
    return GX_OK;
}
