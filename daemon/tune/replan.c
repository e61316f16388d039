/*
 * Plans and the registry: when exploration stores a winner other than
 * what a cached plan runs, the re-planner (daemon/models.c) compiles the
 * plan again in the background; the new compile's prepare pass finds the
 * record. Checked at the re-planner's pace (compiler.replan_ms, once the
 * graph ran compiler.replan_min_jobs jobs since its last check).
 */
#include <stdio.h>
#include <string.h>

#include "daemon/compile/compile.h"
#include "daemon/tune/tune.h"

bool gxd_tune_plan_stale(const gxd_plan *p, const struct gxd_profile *prof, char *why, size_t len)
{
    if (gxd_plan_layout_stale(p, prof, why, len))
        return true;
    for (size_t i = 0; p->tune && i < p->n_impls; i++) {
        const gxd_impl_choice *c = &p->impls[i];
        gxd_tune_rec r;
        if (!c->sig || !strcmp(c->source, "whole batch") || !gxd_tune_peek(p->tune, c->sig, &r) ||
            !gxd_tune_impl_find(p->tune, r.impl, r.version))
            continue;
        /* another winner; or the default won, and a compile now says so */
        if (strcmp(r.impl, c->impl) != 0 || r.version != c->version ||
            !strcmp(c->source, "default")) {
            snprintf(why, len, "'%s' (%s): tuned %s@%d (%lld ns) over %s@%d (%s)",
                     c->node ? c->node : "?", gx_op_name(c->op), r.impl, r.version,
                     (long long)r.ns, c->impl, c->version, c->source);
            return true;
        }
    }
    return false;
}
