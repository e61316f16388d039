/* Backends and their op rules. See backend.h. */
#include <stdio.h>
#include <string.h>

#include "ops/backend.h"

const gx_attrval *gx_rule_attr(const gx_rule_ctx *rc, const char *name)
{
    const gx_op_schema *sc = gx_op_schema_get(rc->op);
    for (int i = 0; i < sc->n_attrs; i++)
        if (strcmp(sc->attrs[i].name, name) == 0)
            return &rc->attr[i];
    return NULL;
}

static const gx_backend *s_registered[GX_BACKEND_MAX];
static size_t s_n_registered;

int gx_backend_register(const gx_backend *b)
{
    if (gx_backend_find(b->name))
        return GX_EINVAL;
    if (s_n_registered == GX_BACKEND_MAX)
        return GX_ELIMIT;
    s_registered[s_n_registered++] = b;
    return GX_OK;
}

const gx_backend *gx_backend_find(const char *name)
{
    const gx_backend *builtin[] = {gx_backend_cpu(), gx_backend_cuda()};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(builtin[i]->name, name) == 0)
            return builtin[i];
    for (size_t i = 0; i < s_n_registered; i++)
        if (strcmp(s_registered[i]->name, name) == 0)
            return s_registered[i];
    return NULL;
}

const char *gx_backend_names(void)
{
    static char names[GX_BACKEND_MAX * 24 + 16];
    size_t o = (size_t)snprintf(names, sizeof names, "cpu, cuda");
    for (size_t i = 0; i < s_n_registered && o < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, ", %s", s_registered[i]->name);
    return names;
}

/* ---- rules --------------------------------------------------------------- */

static const gx_op_rule *s_rule(const gx_backend *b, gx_op op)
{
    for (size_t i = 0; i < b->n_rules; i++)
        if (b->rules[i].op == op)
            return &b->rules[i];
    return NULL;
}

bool gx_backend_lists(const gx_backend *b, gx_op op)
{
    return !b->rules || s_rule(b, op);
}

static bool s_dtype_ok(uint32_t mask, const gx_view *v)
{
    return v->ndim < 0 || (v->dtype < 32 && (mask >> v->dtype) & 1u);
}

bool gx_backend_accepts(const gx_backend *b, const gx_rule_ctx *rc, char *why, size_t whylen)
{
    if (!b->rules) /* infer accepted it: that is the whole rule */
        return true;
    const gx_op_rule *r = s_rule(b, rc->op);
    if (!r) {
        snprintf(why, whylen, "%s has no %s", b->name, gx_op_name(rc->op));
        return false;
    }
    for (int i = 0; i < rc->n_in; i++)
        if (!((r->free_inputs >> i) & 1u) && !s_dtype_ok(r->dtypes, &rc->in[i])) {
            snprintf(why, whylen, "%s: %s %s input %d is not supported", r->lib,
                     gx_op_name(rc->op), gx_dtype_name(rc->in[i].dtype), i);
            return false;
        }
    for (int i = 0; i < rc->n_out; i++)
        if (!s_dtype_ok(r->dtypes, &rc->out[i])) {
            snprintf(why, whylen, "%s: %s %s output %d is not supported", r->lib,
                     gx_op_name(rc->op), gx_dtype_name(rc->out[i].dtype), i);
            return false;
        }
    if (r->check) {
        char msg[160] = "";
        if (!r->check(rc, msg, sizeof msg)) {
            snprintf(why, whylen, "%s: %s %s", r->lib, gx_op_name(rc->op), msg);
            return false;
        }
    }
    return true;
}

bool gx_backend_runnable(const gx_backend *b, char *why, size_t whylen)
{
    if (!(b->kernel && b->alloc && b->free && (b->host_memory || b->copy))) {
        snprintf(why, whylen, "declared only: this build has no %s kernels", b->name);
        return false;
    }
    return !b->usable || b->usable(b, why, whylen);
}
