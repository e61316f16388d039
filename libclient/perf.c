/*
 * gexec-submit perf (see perf.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libclient/perf.h"

/* Latency buckets: bucket i holds [1.01^i, 1.01^(i+1)) us, 0 below 1 us;
 * the last holds everything from about 1000 s up. */
#define S_NB 2100
#define S_MAX_THREADS 1024

typedef struct s_stats {
    uint64_t ok, failed, late;
    uint64_t hist[S_NB];
    int64_t min_us, max_us;
    double sum_us, sum_queue, sum_compile, sum_compute, sum_device;
    uint64_t modes[GX_MODE_COUNT];
} s_stats;

typedef struct s_shared {
    const gxs_perf_opts *o;
    gx_graph_id id;
    int64_t t0, t_end;       /* us, CLOCK_MONOTONIC */
    atomic_llong next_slot;  /* --rate: the next send slot */
    atomic_bool stop;
    pthread_mutex_t mu;
    s_stats st;              /* under mu */
    int64_t last_done;       /* under mu */
    char first_error[512];   /* under mu */
} s_shared;

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void s_sleep_until(int64_t t_us)
{
    int64_t left;
    while ((left = t_us - s_now_us()) > 0) {
        struct timespec ts = {(time_t)(left / 1000000), (long)(left % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

static size_t s_bucket(int64_t us)
{
    if (us < 1)
        return 0;
    double b = log((double)us) / log(1.01);
    return b >= S_NB - 1 ? S_NB - 1 : (size_t)b;
}

/* The q-quantile (nearest rank) in us: the geometric middle of its bucket,
 * clamped to the observed range. */
static double s_quantile(const s_stats *s, double q)
{
    uint64_t n = s->ok;
    if (!n)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)n), seen = 0;
    if (rank < 1)
        rank = 1;
    for (size_t i = 0; i < S_NB; i++) {
        seen += s->hist[i];
        if (seen >= rank) {
            double v = i ? pow(1.01, (double)i + 0.5) : 0.5;
            return v < (double)s->min_us ? (double)s->min_us : v > (double)s->max_us ? (double)s->max_us : v;
        }
    }
    return (double)s->max_us;
}

static void s_fail_note(s_shared *sh, const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&sh->mu);
    sh->st.failed++;
    if (!sh->first_error[0])
        snprintf(sh->first_error, sizeof sh->first_error, fmt, a, b);
    pthread_mutex_unlock(&sh->mu);
}

static void *s_worker(void *arg)
{
    s_shared *sh = arg;
    const gxs_perf_opts *o = sh->o;
    char err[512];
    gx_client *c = gx_client_new(o->endpoint, err, sizeof err);
    gx_request *rq = gx_request_new();
    if (!c || !rq) {
        s_fail_note(sh, "%s%s", c ? "out of memory" : err, "");
        goto out;
    }
    gx_client_set_timeout(c, o->timeout_ms);
    gx_request_set_graph_id(rq, &sh->id);
    for (int i = 0; i < o->n_in; i++)
        gx_request_add_input(rq, o->in_names[i], o->inputs[i]);
    gx_request_set_mode(rq, o->mode);
    while (!atomic_load(&sh->stop)) {
        int64_t t_send;
        bool late = false;
        if (o->rate > 0) {
            long long slot = atomic_fetch_add(&sh->next_slot, 1);
            int64_t t_sched = sh->t0 + (int64_t)((double)slot * 1e6 / o->rate);
            if (t_sched >= sh->t_end)
                break;
            s_sleep_until(t_sched);
            t_send = s_now_us();
            late = t_send - t_sched > 1000; /* all clients were busy */
        } else {
            t_send = s_now_us();
            if (t_send >= sh->t_end)
                break;
        }
        gx_result *r = NULL;
        int rc = gx_client_run(c, rq, &r);
        int64_t t_done = s_now_us(), lat = t_done - t_send;
        if (rc != GX_OK) {
            s_fail_note(sh, "%s: %s", gx_status_name(rc), r ? gx_result_message(r) : gx_client_last_error(c));
            gx_result_destroy(&r);
            if (rc == GX_ECONNECT)
                break;
            continue;
        }
        const gx_run_info *info = gx_result_info(r);
        gx_mode m;
        pthread_mutex_lock(&sh->mu);
        s_stats *s = &sh->st;
        s->ok++;
        s->late += late;
        s->hist[s_bucket(lat)]++;
        if (s->ok == 1 || lat < s->min_us)
            s->min_us = lat;
        if (lat > s->max_us)
            s->max_us = lat;
        s->sum_us += (double)lat;
        s->sum_queue += (double)info->queue_us;
        s->sum_compile += (double)info->compile_us;
        s->sum_compute += (double)info->compute_us;
        s->sum_device += (double)info->device_us;
        if (gx_mode_parse(info->mode, &m) == GX_OK)
            s->modes[m]++;
        if (t_done > sh->last_done)
            sh->last_done = t_done;
        pthread_mutex_unlock(&sh->mu);
        gx_result_destroy(&r);
    }
out:
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return NULL;
}

/* Load the graph and run it once (the plan is compiled then, not while
 * measuring). */
static int s_warm_up(s_shared *sh)
{
    const gxs_perf_opts *o = sh->o;
    char err[512];
    gx_client *c = gx_client_new(o->endpoint, err, sizeof err);
    if (!c) {
        fprintf(stderr, "gexec-submit: %s\n", err);
        return 1;
    }
    gx_client_set_timeout(c, o->timeout_ms);
    int ret = 1;
    gx_request *rq = gx_request_new();
    gx_result *r = NULL;
    if (gx_client_load(c, o->graph, &sh->id) != GX_OK) {
        fprintf(stderr, "gexec-submit: %s\n", gx_client_last_error(c));
        goto out;
    }
    gx_request_set_graph_id(rq, &sh->id);
    for (int i = 0; i < o->n_in; i++)
        gx_request_add_input(rq, o->in_names[i], o->inputs[i]);
    gx_request_set_mode(rq, o->mode);
    int rc = gx_client_run(c, rq, &r);
    if (rc != GX_OK) {
        fprintf(stderr, "gexec-submit: warm-up run: %s: %s\n", gx_status_name(rc),
                r ? gx_result_message(r) : gx_client_last_error(c));
        goto out;
    }
    ret = 0;
out:
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    return ret;
}

/* The live line: elapsed time, requests, throughput so far, p50 so far.
 * On a terminal it rewrites itself; otherwise one line a second. */
static void s_progress(s_shared *sh, bool tty, bool last)
{
    pthread_mutex_lock(&sh->mu);
    s_stats s = sh->st;
    pthread_mutex_unlock(&sh->mu);
    double el = (double)(s_now_us() - sh->t0) / 1e6;
    if (el <= 0)
        el = 1e-6;
    fprintf(stderr, "%s[%5.1f/%.1f s] %" PRIu64 " ok, %" PRIu64 " failed, %.1f infer/s, p50 %.0f us%s",
            tty ? "\r" : "", el, sh->o->duration_s, s.ok, s.failed, (double)s.ok / el,
            s_quantile(&s, 0.5), tty && !last ? "   " : "\n");
    fflush(stderr);
}

static void s_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void s_report(const s_shared *sh, double window_s)
{
    const gxs_perf_opts *o = sh->o;
    const s_stats *s = &sh->st;
    double n = s->ok ? (double)s->ok : 1, tput = window_s > 0 ? (double)s->ok / window_s : 0;
    double mean = s->sum_us / n, queue = s->sum_queue / n, compile = s->sum_compile / n,
           compute = s->sum_compute / n, client = mean - queue - compile - compute,
           device = s->sum_device / n;
    const double qs[] = {0.5, 0.9, 0.99, 0.999};
    const char *qn[] = {"p50", "p90", "p99", "p99.9"};
    if (o->json) {
        printf("{\"graph_id\":\"%s\",\"graph\":", sh->id.hex);
        s_json_string(o->graph_path ? o->graph_path : "");
        printf(",\"mode\":\"%s\",\"concurrency\":%d,\"rate\":%.17g,\"duration_s\":%.17g,"
               "\"window_s\":%.6f,\"requests\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"late\":%" PRIu64
               ",\"throughput_per_s\":%.3f,\"latency_us\":{",
               gx_mode_name(o->mode), o->concurrency, o->rate, o->duration_s, window_s, s->ok,
               s->failed, s->late, tput);
        for (int i = 0; i < 4; i++)
            printf("\"%s\":%.1f,", qn[i], s_quantile(s, qs[i]));
        printf("\"min\":%" PRId64 ",\"max\":%" PRId64 ",\"mean\":%.1f},", s->ok ? s->min_us : 0,
               s->max_us, s->ok ? mean : 0);
        printf("\"split_us\":{\"client\":%.1f,\"queue\":%.1f,\"compile\":%.1f,\"compute\":%.1f,"
               "\"device\":%.1f},\"modes\":{",
               s->ok ? client : 0, queue * (s->ok > 0), compile * (s->ok > 0), compute * (s->ok > 0),
               device * (s->ok > 0));
        for (int m = 0, k = 0; m < GX_MODE_COUNT; m++)
            if (s->modes[m])
                printf("%s\"%s\":%" PRIu64, k++ ? "," : "", gx_mode_name((gx_mode)m), s->modes[m]);
        printf("}}\n");
        return;
    }
    printf("graph %s (%s)\n", sh->id.hex, o->graph_path ? o->graph_path : "-");
    if (o->rate > 0)
        printf("  load:        %.1f requests/s for %.1f s, at most %d in flight, mode %s\n", o->rate,
               o->duration_s, o->concurrency, gx_mode_name(o->mode));
    else
        printf("  load:        concurrency %d for %.1f s, mode %s\n", o->concurrency, o->duration_s,
               gx_mode_name(o->mode));
    printf("  requests:    %" PRIu64 " ok, %" PRIu64 " failed", s->ok, s->failed);
    if (o->rate > 0)
        printf(", %" PRIu64 " sent late (every client busy)", s->late);
    printf("\n  throughput:  %.1f infer/s\n", tput);
    if (!s->ok)
        return;
    printf("  latency:     p50 %.0f us, p90 %.0f us, p99 %.0f us, p99.9 %.0f us "
           "(min %" PRId64 ", max %" PRId64 ", mean %.0f)\n",
           s_quantile(s, 0.5), s_quantile(s, 0.9), s_quantile(s, 0.99), s_quantile(s, 0.999),
           s->min_us, s->max_us, mean);
    printf("  mean split:  client %.0f us (encode, send, network, receive, decode) + queue %.0f us"
           " + compile %.0f us + compute %.0f us",
           client, queue, compile, compute);
    if (device > 0)
        printf(" (%.0f us of it on a GPU)", device);
    printf("\n");
    printf("  modes:      ");
    for (int m = 0; m < GX_MODE_COUNT; m++)
        if (s->modes[m])
            printf(" %s %" PRIu64, gx_mode_name((gx_mode)m), s->modes[m]);
    printf("\n");
}

int gxs_perf_run(const gxs_perf_opts *o)
{
    if (o->concurrency < 1 || o->concurrency > S_MAX_THREADS) {
        fprintf(stderr, "gexec-submit: --concurrency must be in [1, %d]\n", S_MAX_THREADS);
        return 1;
    }
    s_shared *sh = calloc(1, sizeof *sh);
    pthread_t *th = calloc((size_t)o->concurrency, sizeof *th);
    int ret = 1, started = 0;
    if (!sh || !th) {
        fprintf(stderr, "gexec-submit: out of memory\n");
        goto out;
    }
    sh->o = o;
    pthread_mutex_init(&sh->mu, NULL);
    if (s_warm_up(sh))
        goto out_mu;
    bool tty = isatty(STDERR_FILENO);
    sh->t0 = s_now_us();
    sh->t_end = sh->t0 + (int64_t)(o->duration_s * 1e6);
    sh->last_done = sh->t0;
    for (; started < o->concurrency; started++)
        if (pthread_create(&th[started], NULL, s_worker, sh) != 0) {
            fprintf(stderr, "gexec-submit: cannot start client thread %d: %s\n", started, strerror(errno));
            atomic_store(&sh->stop, true);
            break;
        }
    int64_t next = sh->t0 + 1000000;
    while (started == o->concurrency && s_now_us() < sh->t_end) {
        int64_t until = next < sh->t_end ? next : sh->t_end;
        s_sleep_until(until);
        if (until == next) {
            s_progress(sh, tty, false);
            next += 1000000;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (started == o->concurrency && tty) /* the final count on the same line */
        s_progress(sh, tty, true);
    double window_s = (double)(sh->last_done - sh->t0) / 1e6;
    s_report(sh, window_s);
    if (sh->st.failed)
        fprintf(stderr, "gexec-submit: %" PRIu64 " request%s failed; the first: %s\n", sh->st.failed,
                sh->st.failed == 1 ? "" : "s", sh->first_error);
    ret = sh->st.failed || started != o->concurrency || !sh->st.ok ? 1 : 0;
out_mu:
    pthread_mutex_destroy(&sh->mu);
out:
    free(th);
    free(sh);
    return ret;
}
