/*
 * Helpers shared by the benchmarks (benchutil.h): clocks, memory, order
 * statistics, and for those that talk to gexecd, starting one.
 */
#include "bench/benchutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double gxb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

double gxb_now_s(void)
{
    return gxb_now_us() * 1e-6;
}

double gxb_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *gxb_alloc(const char *prog, size_t nbytes)
{
    void *p = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    memset(p, 0, nbytes);
    return p;
}

static int s_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void gxb_sort(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, s_cmp_double);
}

double gxb_median(double *v, size_t n)
{
    if (!n)
        return NAN;
    gxb_sort(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double gxb_pct(const double *sorted, size_t n, double p)
{
    if (!n)
        return NAN;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    return sorted[k ? (k > n ? n : k) - 1 : 0];
}

void gxb_die(const char *prog, const char *what, const char *why)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, why);
    exit(1);
}

static void s_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the daemon ---- */

static void s_gexecd_path(char *buf, size_t len)
{
    const char *env = getenv("GEXECD");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    /* this program is <build>/bench/bench_*; the daemon <build>/daemon/gexecd */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, len, "%s/../daemon/gexecd", self);
            if (access(buf, X_OK) == 0)
                return;
        }
    }
    snprintf(buf, len, "./daemon/gexecd");
}

#define S_MAX_EXTRA 16

void gxb_daemon_start(gxb_daemon *d, const char *prog, const char *const *extra_args)
{
    char bin[4200];
    s_gexecd_path(bin, sizeof bin);
    snprintf(d->dir, sizeof d->dir, "/tmp/gexec-bench-XXXXXX");
    if (!mkdtemp(d->dir)) {
        fprintf(stderr, "%s: mkdtemp: %s\n", prog, strerror(errno));
        exit(1);
    }
    snprintf(d->endpoint, sizeof d->endpoint, "ipc://%s/gexecd.sock", d->dir);
    /* no profile store: no earlier run steers the bench's plans */
    const char *argv[9 + S_MAX_EXTRA] = {bin, "--foreground", "--socket", d->endpoint,
                                         "--log-level", "warn", "--profile-dir", ""};
    size_t argc = 8;
    for (size_t i = 0; extra_args && extra_args[i]; i++) {
        if (i == S_MAX_EXTRA) {
            fprintf(stderr, "%s: more than %d extra gexecd arguments\n", prog, S_MAX_EXTRA);
            exit(1);
        }
        argv[argc++] = extra_args[i];
    }
    argv[argc] = NULL;
    d->pid = fork();
    if (d->pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
        exit(1);
    }
    if (d->pid == 0) {
        execv(bin, (char *const *)argv);
        fprintf(stderr, "%s: exec %s: %s\n", prog, bin, strerror(errno));
        _exit(127);
    }
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s: %s\n", prog, err);
        exit(1);
    }
    gx_client_set_timeout(c, 200);
    int rc = GX_ECONNECT;
    for (int i = 0; i < 100 && rc != GX_OK; i++) {
        int st;
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            fprintf(stderr, "%s: %s exited during start\n", prog, bin);
            exit(1);
        }
        rc = gx_client_ping(c);
    }
    gx_client_destroy(&c);
    if (rc != GX_OK) {
        fprintf(stderr, "%s: %s does not answer on %s\n", prog, bin, d->endpoint);
        kill(d->pid, SIGKILL);
        exit(1);
    }
}

/* Signal sig to the daemon, wait for it (SIGKILL after 10 s), remove its
 * socket and folder. */
static void s_daemon_end(gxb_daemon *d, int sig)
{
    int st;
    kill(d->pid, sig);
    for (int i = 0; i < 500; i++) {
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            break;
        }
        s_sleep_ms(20);
    }
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &st, 0);
    }
    char sock[128];
    snprintf(sock, sizeof sock, "%s/gexecd.sock", d->dir);
    unlink(sock);
    rmdir(d->dir);
}

void gxb_daemon_stop(gxb_daemon *d)
{
    s_daemon_end(d, SIGTERM);
}

void gxb_daemon_kill(gxb_daemon *d)
{
    s_daemon_end(d, SIGKILL);
}

/* ---- STATS ---- */

/* "key":value of the daemon's STATS JSON, as text. */
static void s_stat(const char *json, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = json ? strstr(json, pat) : NULL;
    snprintf(out, len, "?");
    if (!p)
        return;
    p += strlen(pat);
    if (*p == '"') {
        const char *e = strchr(p + 1, '"');
        snprintf(out, len, "%.*s", e ? (int)(e - p - 1) : 0, p + 1);
    } else {
        snprintf(out, len, "%.*s", (int)strcspn(p, ",}"), p);
    }
}

int gxb_stats_read(gx_client *c, gxb_stats *s)
{
    char *json = NULL;
    int rc = gx_client_stats(c, &json);
    if (rc < 0)
        return rc;
    s_stat(json, "version", s->version, sizeof s->version);
    s_stat(json, "workers", s->workers, sizeof s->workers);
    s_stat(json, "topology", s->topology, sizeof s->topology);
    free(json);
    return rc;
}

bool gxb_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

bool gxb_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}
