/* Shared test helpers (see testutil.h). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gexec/gexec.h>

#include "tests/testutil.h"

void gxt_const(struct gx_graph *g, const char *name, int dt, int ndim, const int64_t *shape,
               const void *data)
{
    gx_tensor *t = gx_tensor_new((gx_dtype)dt, ndim, shape);
    ck_assert_ptr_nonnull(t);
    memcpy(gx_tensor_data(t), data, gx_tensor_nbytes(t));
    ck_assert_int_eq(gx_graph_add_const(g, name, &t), GX_OK);
}

/* The graph at nesting level `level` of gxt_nested_if(levels). */
static gx_graph *s_nested_level(int level, int levels)
{
    char name[32], out[32], sub[32];
    snprintf(name, sizeof name, "level%d", level);
    gx_graph *g = gx_graph_new(name);
    ck_assert_ptr_nonnull(g);
    snprintf(out, sizeof out, "y%d", level);
    if (level == levels) {
        gx_node *k = gx_graph_add_node(g, "Constant", "one", 0, NULL, 1, (const char *[]){"k"});
        ck_assert_ptr_nonnull(k);
        gx_tensor *t = gx_tensor_new_copy(GX_F32, 1, (int64_t[]){1}, (float[]){1}, 4);
        ck_assert_int_eq(gx_node_set_tensor(k, "value", &t), GX_OK);
        ck_assert_ptr_nonnull(gx_graph_add_node(g, "Add", "add", 2, (const char *[]){"x", "k"}, 1,
                                                (const char *[]){out}));
    } else {
        if (level == 0) {
            ck_assert_int_eq(gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){2}), GX_OK);
            ck_assert_int_eq(gx_graph_add_input(g, "c", GX_BOOL, 0, NULL), GX_OK);
        }
        snprintf(name, sizeof name, "if%d", level + 1);
        gx_node *n = gx_graph_add_node(g, "If", name, 1, (const char *[]){"c"}, 1,
                                       (const char *[]){out});
        ck_assert_ptr_nonnull(n);
        gx_graph *then = s_nested_level(level + 1, levels);
        snprintf(name, sizeof name, "else%d", level + 1);
        gx_graph *els = gx_graph_new(name);
        snprintf(sub, sizeof sub, "e%d", level + 1);
        ck_assert_ptr_nonnull(gx_graph_add_node(els, "Identity", name, 1, (const char *[]){"x"}, 1,
                                                (const char *[]){sub}));
        ck_assert_int_eq(gx_graph_add_output(els, sub), GX_OK);
        ck_assert_int_eq(gx_node_set_graph(n, "then_branch", &then), GX_OK);
        ck_assert_int_eq(gx_node_set_graph(n, "else_branch", &els), GX_OK);
    }
    ck_assert_int_eq(gx_graph_add_output(g, out), GX_OK);
    return g;
}

gx_graph *gxt_nested_if(int levels)
{
    return s_nested_level(0, levels);
}

bool gxt_allclose(const float *a, const float *b, size_t n, float rtol, float atol)
{
    for (size_t i = 0; i < n; i++) {
        bool same = a[i] == b[i] || (isnan(a[i]) && isnan(b[i])); /* infinities too */
        if (!same && !(fabsf(a[i] - b[i]) <= atol + rtol * fabsf(b[i]))) {
            fprintf(stderr, "allclose: element %zu: got %.9g, want %.9g\n", i, (double)a[i],
                    (double)b[i]);
            return false;
        }
    }
    return true;
}

const char *gxt_srcpath(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", GX_TEST_SRCDIR, rel);
    return buf;
}

char *gxt_tmpdir(void)
{
    char tmpl[] = "/tmp/gexec-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    ck_assert_msg(d != NULL, "mkdtemp: %s", strerror(errno));
    return strdup(d);
}

static int s_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

void gxt_rmtree(const char *dir)
{
    if (dir)
        nftw(dir, s_rm, 16, FTW_DEPTH | FTW_PHYS);
}

void gxt_daemon_start(gxt_daemon *d, const char *const *extra_args)
{
    gxt_daemon_start_yaml(d, NULL, extra_args);
}

void gxt_daemon_start_yaml(gxt_daemon *d, const char *yaml, const char *const *extra_args)
{
    memset(d, 0, sizeof *d);
    d->dir = gxt_tmpdir();
    static char conf[4200];
    if (yaml) {
        snprintf(conf, sizeof conf, "%s/gexecd.yaml", d->dir);
        FILE *f = fopen(conf, "w");
        ck_assert_msg(f != NULL, "%s: %s", conf, strerror(errno));
        fputs(yaml, f);
        ck_assert_int_eq(fclose(f), 0);
    }
    snprintf(d->endpoint, sizeof d->endpoint, "ipc://%s/gexecd.sock", d->dir);
    const char *bin = getenv("GEXECD");
    char path[4096];
    if (!bin) {
        snprintf(path, sizeof path, "%s/daemon/gexecd", GX_TEST_BUILDDIR);
        bin = path;
    }
    const char *argv[64] = {bin, "--foreground", "--socket", d->endpoint, "--log-level",
                            getenv("GXT_LOG_LEVEL") ? getenv("GXT_LOG_LEVEL") : "warn"};
    int argc = 6;
    /* profiles stay in the test's directory unless the test says where */
    static char profiles[4200];
    bool own_profiles = true;
    for (int i = 0; extra_args && extra_args[i]; i++)
        own_profiles &= strcmp(extra_args[i], "-c") != 0 && strcmp(extra_args[i], "--profile-dir") != 0;
    if (own_profiles) {
        snprintf(profiles, sizeof profiles, "%s/profiles", d->dir);
        argv[argc++] = "--profile-dir";
        argv[argc++] = profiles;
    }
    if (yaml) {
        argv[argc++] = "--config";
        argv[argc++] = conf;
    }
    for (int i = 0; extra_args && extra_args[i] && argc < 62; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(bin, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    d->pid = pid;
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "client: %s", err);
    gx_client_set_timeout(c, 200);
    int rc = GX_ECONNECT;
    /* 30 s, times Check's CK_TIMEOUT_MULTIPLIER: a sanitizer build on a
     * loaded machine calibrates for longer (a daemon that died says so at
     * once) */
    const char *mul = getenv("CK_TIMEOUT_MULTIPLIER");
    const int tries = 150 * (mul && atoi(mul) > 1 ? atoi(mul) : 1);
    for (int i = 0; i < tries && rc != GX_OK; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            d->pid = 0;
            ck_abort_msg("gexecd exited during start (status %d)", st);
        }
        rc = gx_client_ping(c);
    }
    gx_client_destroy(&c);
    ck_assert_msg(rc == GX_OK, "gexecd did not answer PING: %s", gx_strerror(rc));
}

int gxt_daemon_stop(gxt_daemon *d)
{
    int result = -1;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        int st = 0;
        /* up to a minute, times Check's CK_TIMEOUT_MULTIPLIER: a loaded
         * machine (two CPU hogs beside the suite) can stretch a clean
         * shutdown well past a few seconds, and a sanitizer build more (under
         * ThreadSanitizer the artifact writes a clean stop finishes took over
         * a minute after check_modes' shutdown test) */
        const char *mul = getenv("CK_TIMEOUT_MULTIPLIER");
        const int tries = 3000 * (mul && atoi(mul) > 1 ? atoi(mul) : 1);
        for (int i = 0; i < tries; i++) {
            if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
                result = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                d->pid = 0;
                break;
            }
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (d->pid > 0) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &st, 0);
            d->pid = 0;
        }
    }
    gxt_rmtree(d->dir);
    free(d->dir);
    d->dir = NULL;
    return result;
}

int gxt_sh(char *out, size_t len, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    /* the rest unread would end the command with SIGPIPE */
    char rest[4096];
    while (fread(rest, 1, sizeof rest, p) > 0)
        ;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void *s_team_helper(void *arg)
{
    gxt_team *e = arg;
    while (gxd_team_next_job(&e->t))
        ck_abort_msg("no job was queued");
    return NULL;
}

void gxt_team_start(gxt_team *e)
{
    ck_assert_int_eq(gxd_queue_init(&e->q, 8, 1 << 20), GX_OK);
    gxd_team_init(&e->t, &e->q);
    for (int i = 0; i < GXT_HELPERS; i++)
        ck_assert_int_eq(pthread_create(&e->th[i], NULL, s_team_helper, e), 0);
}

void gxt_team_stop(gxt_team *e)
{
    ck_assert_ptr_null(gxd_queue_close(&e->q));
    for (int i = 0; i < GXT_HELPERS; i++)
        pthread_join(e->th[i], NULL);
    gxd_team_fini(&e->t);
    gxd_queue_fini(&e->q);
}

gx_client *gxt_client(const gxt_daemon *d)
{
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    gx_client_set_timeout(c, 60000);
    return c;
}

void gxt_wait_stats(gx_client *c, const char *want)
{
    for (;;) {
        char *json = NULL;
        ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
        bool ok = strstr(json, want) != NULL;
        free(json);
        if (ok)
            return;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
}

long long gxt_stat(gx_client *c, const char *key)
{
    char *json = NULL, pat[64];
    ck_assert_int_eq(gx_client_stats(c, &json), GX_OK);
    const char *at = json, *dot = strchr(key, '.');
    if (dot) { /* "section.key": the key inside that section */
        snprintf(pat, sizeof pat, "\"%.*s\":", (int)(dot - key), key);
        at = strstr(json, pat);
        ck_assert_msg(at != NULL, "no %s in STATS", pat);
        key = dot + 1;
    }
    snprintf(pat, sizeof pat, "\"%s\":", key);
    at = strstr(at, pat);
    ck_assert_msg(at != NULL, "no %s in STATS", key);
    long long v = atoll(at + strlen(pat));
    free(json);
    return v;
}

gx_graph *gxt_endless_graph(void)
{
    gx_graph *body = gx_graph_new("body");
    gx_graph_add_input(body, "i", GX_I64, 0, NULL);
    gx_graph_add_input(body, "c", GX_BOOL, 0, NULL);
    gx_graph_add_input(body, "v", GX_F32, 1, (int64_t[]){1});
    gx_graph_add_node(body, "Identity", NULL, 1, (const char *[]){"c"}, 1,
                      (const char *[]){"c_out"});
    gx_graph_add_node(body, "Neg", NULL, 1, (const char *[]){"v"}, 1, (const char *[]){"v_out"});
    gx_graph_add_output(body, "c_out");
    gx_graph_add_output(body, "v_out");
    gx_graph *g = gx_graph_new("endless");
    gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){1});
    gx_graph_add_input(g, "c", GX_BOOL, 0, NULL);
    gx_node *n = gx_graph_add_node(g, "Loop", "forever", 3, (const char *[]){"", "c", "x"}, 1,
                                   (const char *[]){"y"});
    ck_assert_int_eq(gx_node_set_graph(n, "body", &body), GX_OK);
    gx_graph_add_output(g, "y");
    return g;
}

void gxt_endless_init(gxt_endless *e)
{
    e->g = gxt_endless_graph();
    e->x = gx_tensor_new(GX_F32, 1, (int64_t[]){1});
    e->c = gx_tensor_new(GX_BOOL, 0, NULL);
    *(uint8_t *)gx_tensor_data(e->c) = 1;
    e->rq = gx_request_new();
    gx_request_set_graph(e->rq, e->g);
    gx_request_add_input(e->rq, "x", e->x);
    gx_request_add_input(e->rq, "c", e->c);
}

void gxt_endless_fini(gxt_endless *e)
{
    gx_request_destroy(&e->rq);
    gx_tensor_destroy(&e->x);
    gx_tensor_destroy(&e->c);
    gx_graph_destroy(&e->g);
}

void gxt_hold_start(gxt_hold *h, gx_client *c, gx_client *watch)
{
    gxt_endless_init(&h->e);
    ck_assert_int_eq(gx_client_submit(c, h->e.rq, &h->job), GX_OK);
    gxt_wait_stats(watch, "\"workers_busy\":1");
}

void gxt_hold_release(gxt_hold *h)
{
    ck_assert_int_eq(gx_job_cancel(h->job), GX_OK);
    ck_assert_int_eq(gx_job_wait(h->job, 60000, NULL), GX_ECANCELLED);
    gx_job_destroy(&h->job);
    gxt_endless_fini(&h->e);
}

static int s_tasks(void)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        n += e->d_name[0] != '.';
    closedir(dir);
#ifdef __SANITIZE_THREAD__
    n -= n > 1; /* ThreadSanitizer's own background thread is not the test's */
#endif
    return n;
}

int gxt_threads(void)
{
    /* pthread_join returns when the kernel clears the thread's id, before
     * it takes the task off the list: a thread just joined (a client's
     * ZeroMQ threads, at gx_client_destroy) can still be listed for a
     * moment, so read again until one is left, for 10 s at most */
    int n = s_tasks();
    for (int i = 0; n > 1 && i < 10000; i++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
        n = s_tasks();
    }
    return n;
}

gx_graph *gxt_slow_graph(int k)
{
    gx_graph *g = gx_graph_new("slow");
    int64_t s[2] = {GXT_SLOW_N, GXT_SLOW_N};
    gx_graph_add_input(g, "x", GX_F32, 2, s);
    gx_tensor *w = gx_tensor_new(GX_F32, 2, s);
    float *p = gx_tensor_data(w);
    for (int i = 0; i < GXT_SLOW_N; i++)
        p[i * GXT_SLOW_N + i] = 1.0f;
    gx_graph_add_const(g, "w", &w);
    char prev[32] = "x", cur[32];
    for (int i = 0; i < k; i++) {
        snprintf(cur, sizeof cur, "m%d", i);
        gx_graph_add_node(g, "MatMul", NULL, 2, (const char *[]){prev, "w"}, 1,
                          (const char *[]){cur});
        memcpy(prev, cur, sizeof prev);
    }
    gx_graph_add_output(g, prev);
    return g;
}
