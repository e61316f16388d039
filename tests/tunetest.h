/*
 * What the registry's suites (check_tune, check_tune_upstream) build their
 * lookups from: a MatMul signature and a record.
 */
#ifndef GX_TUNETEST_H
#define GX_TUNETEST_H

#include <stdio.h>
#include <string.h>

#include "daemon/tune/tune.h"

/* A float32 MatMul [m, k] x [k, n]. */
static inline gxd_tune_sig tt_sig(int64_t m, int64_t k, int64_t n)
{
    gxd_tune_sig s;
    memset(&s, 0, sizeof s);
    s.op = GX_OP_MATMUL;
    s.a_ndim = 2;
    s.a_shape[0] = m;
    s.a_shape[1] = k;
    s.m = m;
    s.k = k;
    s.n = n;
    s.c_ndim = -1;
    return s;
}

/* A record of impl at ns (blas at twice that), measured on host. */
static inline gxd_tune_rec tt_rec(const char *impl, int64_t ns, const char *host)
{
    gxd_tune_rec r;
    memset(&r, 0, sizeof r);
    snprintf(r.impl, sizeof r.impl, "%s", impl);
    r.version = 1;
    r.ns = ns;
    snprintf(r.others, sizeof r.others, "blas@1:%lld", (long long)ns * 2);
    snprintf(r.validation, sizeof r.validation, "test");
    snprintf(r.host, sizeof r.host, "%s", host);
    r.measured_at = 1700000000;
    return r;
}

#endif
