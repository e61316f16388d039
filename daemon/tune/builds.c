/*
 * Build ids (docs/tune.md "Key and record"): which builds of which
 * libraries a candidate's code comes from. A record keeps each measured
 * candidate's build id, so a library upgrade invalidates the records its
 * candidates won and no others, and a candidate added later is measured
 * additively instead of making every record unreachable.
 *
 * Also the records' candidate lists as text (tune.db, the central
 * registry), and the conversion of a schema-2 record (whose key held
 * every candidate's name and the builds) into a record of today.
 */
#include <config.h>

#include <cblas.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/tune/tune_internal.h"
#include "ops/backend.h"

/* The last blank-separated word of s ("0.3.21" of " OpenBLAS 0.3.21 "). */
static void s_last_word(const char *s, size_t n, char *buf, size_t len)
{
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    size_t b = n;
    while (b && !isspace((unsigned char)s[b - 1]))
        b--;
    snprintf(buf, len, "%.*s", (int)(n - b), s + b);
}

void gxd_tune_buildinfo_now(gxd_tune_buildinfo *b)
{
    memset(b, 0, sizeof *b);
    snprintf(b->gexec, sizeof b->gexec, "%s", PACKAGE_VERSION);
    snprintf(b->isa, sizeof b->isa, "%s", gx_backend_cpu()->gemm_tune->isa());
    s_last_word(OPENBLAS_VERSION, strlen(OPENBLAS_VERSION), b->openblas, sizeof b->openblas);
    snprintf(b->core, sizeof b->core, "%s", openblas_get_corename());
    gxd_tune_dnnl_build(b->onednn, sizeof b->onednn);
}

bool gxd_tune_buildinfo_parse_legacy(const char *s, gxd_tune_buildinfo *b)
{
    memset(b, 0, sizeof *b);
    if (sscanf(s, "gexec-%31s gemm=%15s [", b->gexec, b->isa) != 2)
        return false;
    const char *lb = strchr(s, '['), *rb = lb ? strchr(lb, ']') : NULL;
    if (!rb)
        return false;
    s_last_word(lb + 1, (size_t)(rb - lb - 1), b->openblas, sizeof b->openblas);
    if (sscanf(rb + 1, " core=%31s", b->core) != 1)
        return false;
    const char *d = strstr(rb, " onednn=");
    if (d)
        sscanf(d, " onednn=%15s", b->onednn);
    return true;
}

void gxd_tune_build_id(const char *name, const gxd_tune_buildinfo *b, char *buf, size_t len)
{
    if (!strncmp(name, "packed.", 7))
        snprintf(buf, len, "gexec-%s", b->gexec);
    else if (!strcmp(name, "plain"))
        snprintf(buf, len, "gexec-%s.%s", b->gexec, b->isa);
    else if (!strcmp(name, "conv.plain"))
        snprintf(buf, len, "gexec-%s.%s+openblas-%s.%s", b->gexec, b->isa, b->openblas, b->core);
    else if (!strcmp(name, "blas"))
        snprintf(buf, len, "openblas-%s.%s", b->openblas, b->core);
    else if (!strncmp(name, "dnnl.", 5) && b->onednn[0])
        snprintf(buf, len, "onednn-%s", b->onednn);
    else
        snprintf(buf, len, "none");
    for (char *p = buf; *p; p++) /* one word in the text forms */
        if (isspace((unsigned char)*p) || *p == ';')
            *p = '_';
}

void gxd_tune_cands_str(const gxd_tune_rec *rec, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < rec->n_cands && o + 1 < len; i++) {
        const gxd_tune_cand *c = &rec->cands[i];
        const int w = snprintf(buf + o, len - o, "%s%s@%d %s %lld %lld", i ? "; " : "", c->name,
                               c->version, c->build[0] ? c->build : "none", (long long)c->ns,
                               (long long)c->at);
        if (w < 0 || (size_t)w >= len - o) { /* cut: end at the last whole entry */
            buf[o] = '\0';
            break;
        }
        o += (size_t)w;
    }
}

bool gxd_tune_cands_parse(const char *s, gxd_tune_rec *rec)
{
    rec->n_cands = 0;
    while (*s == ' ')
        s++;
    while (*s) {
        if (rec->n_cands == GXD_TUNE_MAX_IMPLS)
            return false;
        gxd_tune_cand c;
        memset(&c, 0, sizeof c);
        long long ns = 0, at = 0;
        int used = 0;
        if (sscanf(s, "%31[^@ ;]@%d %63s %lld %lld%n", c.name, &c.version, c.build, &ns, &at,
                   &used) != 5)
            return false;
        c.ns = ns;
        c.at = at;
        rec->cands[rec->n_cands++] = c;
        s += used;
        if (*s == ';')
            s++;
        else if (*s)
            return false;
        while (*s == ' ')
            s++;
    }
    return true;
}

bool gxd_tune_cands_from_others(const char *s, const gxd_tune_buildinfo *b, gxd_tune_rec *rec)
{
    rec->n_cands = 0;
    while (*s) {
        if (rec->n_cands == GXD_TUNE_MAX_IMPLS)
            return false;
        gxd_tune_cand c;
        memset(&c, 0, sizeof c);
        int used = 0;
        if (sscanf(s, "%31[^@,]@%d:%n", c.name, &c.version, &used) != 2 || !used)
            return false;
        s += used;
        if (!strncmp(s, "rejected", 8)) {
            c.ns = -1;
            s += 8;
            if (*s == ' ' && s[1] == '(') { /* the reason, parentheses balanced */
                int depth = 0;
                for (s++; *s; s++) {
                    depth += *s == '(';
                    depth -= *s == ')';
                    if (!depth) {
                        s++;
                        break;
                    }
                }
            }
        } else {
            char *end;
            c.ns = strtoll(s, &end, 10);
            if (end == s)
                return false;
            s = end;
        }
        gxd_tune_build_id(c.name, b, c.build, sizeof c.build);
        c.at = rec->measured_at;
        rec->cands[rec->n_cands++] = c;
        if (!strncmp(s, ", ", 2))
            s += 2;
        else if (*s)
            return false;
    }
    return true;
}

const gxd_tune_cand *gxd_tune_rec_cand(const gxd_tune_rec *rec, const char *name, int version)
{
    for (int i = 0; i < rec->n_cands; i++)
        if (rec->cands[i].version == version && !strcmp(rec->cands[i].name, name))
            return &rec->cands[i];
    return NULL;
}

bool gxd_tune_rec_has(const gxd_tune_rec *rec, const gxd_tune_impl *im)
{
    const gxd_tune_cand *c = gxd_tune_rec_cand(rec, im->name, im->version);
    return c && !strcmp(c->build, im->build);
}

bool gxd_tune_rec_valid(const gxd_tune *t, const gxd_tune_rec *rec)
{
    const gxd_tune_impl *im = gxd_tune_impl_find(t, rec->impl, rec->version);
    return im && !strcmp(im->build, rec->build);
}

bool gxd_tune_rec_lacks(const gxd_tune *t, gx_op op, const gxd_tune_rec *rec)
{
    for (size_t i = 0; i < t->n_impls; i++)
        if (gxd_tune_impl_kernel(&t->impls[i], op) && !gxd_tune_rec_has(rec, &t->impls[i]))
            return true;
    return false;
}

void gxd_tune_builds_update(gxd_tune *t)
{
    size_t o = 0;
    t->builds[0] = '\0';
    for (size_t i = 0; i < t->n_impls; i++) {
        gxd_tune_impl *im = &t->impls[i];
        if (!im->build[0])
            gxd_tune_build_id(im->name, &t->bi, im->build, sizeof im->build);
        for (char *p = im->build; *p; p++)
            if (isspace((unsigned char)*p) || *p == ';')
                *p = '_';
        if (o + 1 < sizeof t->builds) {
            const int w = snprintf(t->builds + o, sizeof t->builds - o, "%s%s@%d=%s", i ? " " : "",
                                   im->name, im->version, im->build);
            o = w > 0 && (size_t)w < sizeof t->builds - o ? o + (size_t)w : sizeof t->builds - 1;
        }
    }
}
