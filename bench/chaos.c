/*
 * chaos: many client processes against one local gexecd while clients are
 * SIGKILLed at random and the daemon is SIGKILLed and restarted; some jobs
 * carry large or hostile graphs. Bounded in time and count, local only (a
 * private directory under /tmp), not part of `make check`.
 *
 *   bench/chaos [seconds [clients-at-once [jobs-per-client [daemon-kills]]]]
 *   (defaults 60 8 40 3; GEXECD names the daemon binary)
 *
 * What it checks, from the clients' side (each client keeps every job it
 * submitted until its end, so a second reply to a job shows up in
 * gx_client_stray_replies):
 *   - every job the daemon answered was answered once (strays == 0) and
 *     with the right values (small jobs) or the expected refusal (hostile);
 *   - a job left without an answer is one whose daemon was killed after it
 *     was sent (the restart generation changed meanwhile), never otherwise;
 *   - the daemon survives every hostile graph and killed client (it is only
 *     ever killed by this program), and after the run its RSS is back within
 *     2x + 64 MiB of what it was after the warm-up round;
 *   - a SIGTERM at the end stops it with status 0.
 * Exit status 0 when all hold; the figures go to stdout.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gexec/gexec.h>

#define CHAOS_MAX_CLIENTS 64

static char s_dir[256], s_endpoint[512], s_epoch_path[512], s_daemon_bin[4096];

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void s_sleep_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

/* ---- the restart generation, shared through a file ---- */

static int s_epoch_read(void)
{
    FILE *f = fopen(s_epoch_path, "r");
    int e = -1;
    if (f) {
        if (fscanf(f, "%d", &e) != 1)
            e = -1;
        fclose(f);
    }
    return e;
}

static void s_epoch_write(int e)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", s_epoch_path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", e) < 0 || fclose(f) != 0 || rename(tmp, s_epoch_path) != 0) {
        perror("epoch");
        exit(2);
    }
}

/* ---- graphs ---- */

typedef enum { K_SMALL, K_CHAIN, K_BADOP, K_HUGE, K_CYCLE, K_COUNT } s_kind;
static const char *const s_kind_names[K_COUNT] = {"small", "chain", "bad-op", "huge", "cycle"};

/* y = x * 2 + tag over n floats (small), a chain of nodes Relu(Neg(...))
 * that ends as Identity (chain), an unknown op, a tensor over the size
 * limit, a cycle. */
static gx_graph *s_graph(s_kind k, int tag, int64_t n)
{
    gx_graph *g = gx_graph_new("chaos");
    switch (k) {
    case K_SMALL: {
        gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){n});
        gx_tensor *two = gx_tensor_new(GX_F32, 1, (int64_t[]){1});
        gx_tensor *b = gx_tensor_new(GX_F32, 1, (int64_t[]){1});
        *(float *)gx_tensor_data(two) = 2.0f;
        *(float *)gx_tensor_data(b) = (float)tag;
        gx_graph_add_const(g, "two", &two);
        gx_graph_add_const(g, "b", &b);
        gx_graph_add_node(g, "Mul", NULL, 2, (const char *[]){"x", "two"}, 1, (const char *[]){"t"});
        gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"t", "b"}, 1, (const char *[]){"y"});
        break;
    }
    case K_CHAIN: {
        gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){n});
        char prev[32] = "x", cur[32];
        for (int i = 0; i < 3000 + tag % 7; i++) {
            snprintf(cur, sizeof cur, "v%d", i);
            gx_graph_add_node(g, i % 2 ? "Neg" : "Relu", NULL, 1, (const char *[]){prev}, 1,
                              (const char *[]){cur});
            memcpy(prev, cur, sizeof prev);
        }
        gx_graph_add_node(g, "Identity", NULL, 1, (const char *[]){prev}, 1, (const char *[]){"y"});
        break;
    }
    case K_BADOP:
        gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){n});
        gx_graph_add_node(g, "NoSuchOp", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
        break;
    case K_HUGE:
        gx_graph_add_input(g, "x", GX_F32, 2, (int64_t[]){1 << 20, 1 << 20});
        gx_graph_add_node(g, "Relu", NULL, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
        break;
    case K_CYCLE:
        gx_graph_add_input(g, "x", GX_F32, 1, (int64_t[]){n});
        gx_graph_add_node(g, "Add", NULL, 2, (const char *[]){"x", "z"}, 1, (const char *[]){"y"});
        gx_graph_add_node(g, "Neg", NULL, 1, (const char *[]){"y"}, 1, (const char *[]){"z"});
        break;
    case K_COUNT:
        break;
    }
    gx_graph_add_output(g, "y");
    return g;
}

/* ---- one client process ---- */

typedef struct s_counts {
    int64_t submitted, ok, refused, lost_restart, lost_bad, wrong, strays, busy;
} s_counts;

/* Runs jobs jobs, writes its counts to fd, exits. */
static void s_client_main(int id, int jobs, int fd)
{
    srand((unsigned)(getpid() * 2654435761u));
    s_counts c = {0};
    char err[768];
    gx_client *cl = NULL;
    for (int i = 0; i < 200 && !cl; i++)
        if (!(cl = gx_client_new(s_endpoint, err, sizeof err)))
            s_sleep_ms(50);
    if (!cl) {
        fprintf(stderr, "client %d: %s\n", id, err);
        _exit(3);
    }
    gx_client_set_timeout(cl, 1000);
    const int64_t n = 64;
    gx_job **js = calloc((size_t)jobs, sizeof *js);
    s_kind *kind = calloc((size_t)jobs, sizeof *kind);
    int *tag = calloc((size_t)jobs, sizeof *tag), *epoch = calloc((size_t)jobs, sizeof *epoch);
    gx_tensor *x = gx_tensor_new(GX_F32, 1, (int64_t[]){n});
    for (int64_t i = 0; i < n; i++)
        ((float *)gx_tensor_data(x))[i] = (float)i;
    for (int j = 0; j < jobs; j++) {
        int r = rand() % 100;
        kind[j] = r < 70 ? K_SMALL : r < 80 ? K_CHAIN : r < 87 ? K_BADOP : r < 94 ? K_HUGE : K_CYCLE;
        tag[j] = rand() % 16;
        gx_graph *g = s_graph(kind[j], tag[j], n);
        gx_request *rq = gx_request_new();
        gx_request_set_graph(rq, g);
        if (kind[j] != K_HUGE)
            gx_request_add_input(rq, "x", x);
        epoch[j] = s_epoch_read();
        int rc = gx_client_submit(cl, rq, &js[j]);
        gx_request_destroy(&rq);
        gx_graph_destroy(&g);
        if (rc < 0) { /* refused before sending (the client checks the huge input) */
            c.refused++;
            continue;
        }
        c.submitted++;
    }
    /* wait for each; a job whose daemon was killed since it was sent is
     * given up (and kept: a late reply must not become a stray) */
    for (int j = 0; j < jobs; j++) {
        if (!js[j])
            continue;
        gx_result *res = NULL;
        int rc;
        for (;;) {
            rc = gx_job_wait(js[j], 1000, &res);
            if (rc != GX_ETIMEDOUT || (res && gx_result_status(res) == GX_ETIMEDOUT))
                break;
            gx_result_destroy(&res);
            if (s_epoch_read() != epoch[j])
                break;
        }
        if (rc == GX_ETIMEDOUT && !res) {
            if (s_epoch_read() != epoch[j])
                c.lost_restart++;
            else
                c.lost_bad++;
            continue;
        }
        int st = res ? gx_result_status(res) : rc;
        if (kind[j] == K_SMALL || kind[j] == K_CHAIN) {
            if (st == GX_OK) {
                const float *y = gx_tensor_cdata(gx_result_output(res, 0));
                bool good = true;
                for (int64_t i = 0; i < n; i++) /* a chain of Relu and Neg ends <= 0 */
                    good &= kind[j] == K_SMALL ? y[i] == 2.0f * (float)i + (float)tag[j] : y[i] <= 0.0f;
                c.ok += good;
                c.wrong += !good;
            } else if (st == GX_EQUEUEFULL || st == GX_ESHUTDOWN || st == GX_ELIMIT) {
                c.busy++; /* the daemon said no, once: allowed */
            } else {
                fprintf(stderr, "client %d job %d (%s): %s: %s\n", id, j, s_kind_names[kind[j]],
                        gx_status_name(st), res ? gx_result_message(res) : "");
                c.wrong++;
            }
        } else {
            if (st == GX_OK) {
                fprintf(stderr, "client %d job %d (%s) succeeded\n", id, j, s_kind_names[kind[j]]);
                c.wrong++;
            } else {
                c.refused++;
            }
        }
        gx_result_destroy(&res);
    }
    /* one more round trip so replies still on the way arrive, then count */
    for (int i = 0; i < 3 && gx_client_ping(cl) != GX_OK; i++)
        ;
    c.strays = (int64_t)gx_client_stray_replies(cl);
    ssize_t w = write(fd, &c, sizeof c);
    (void)w;
    _exit(0);
}

/* ---- the driver ---- */

static pid_t s_daemon_start(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        char conf[600];
        snprintf(conf, sizeof conf, "%s/gexecd.yaml", s_dir);
        const char *argv[] = {s_daemon_bin, "--foreground", "--socket", s_endpoint, "--log-level",
                              "error", "--profile-dir", "", "-c", conf, NULL};
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    /* wait until it answers (the restart generation stays the same) */
    char err[768];
    for (int i = 0; i < 600; i++) {
        gx_client *c = gx_client_new(s_endpoint, err, sizeof err);
        if (c) {
            gx_client_set_timeout(c, 500);
            int rc = gx_client_ping(c);
            gx_client_destroy(&c);
            if (rc == GX_OK)
                return pid;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            fprintf(stderr, "chaos: gexecd exited during start\n");
            exit(2);
        }
        s_sleep_ms(100);
    }
    fprintf(stderr, "chaos: gexecd did not answer\n");
    exit(2);
}

static long s_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

typedef struct s_slot {
    pid_t pid;
    int fd;
} s_slot;

static void s_reap(s_slot *sl, s_counts *tot, int64_t *killed, int64_t *crashed, bool was_killed)
{
    s_counts c;
    int st = 0;
    waitpid(sl->pid, &st, 0);
    ssize_t r = read(sl->fd, &c, sizeof c);
    close(sl->fd);
    if (was_killed) {
        (*killed)++;
    } else if (r != (ssize_t)sizeof c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        (*crashed)++;
    } else {
        tot->submitted += c.submitted;
        tot->ok += c.ok;
        tot->refused += c.refused;
        tot->lost_restart += c.lost_restart;
        tot->lost_bad += c.lost_bad;
        tot->wrong += c.wrong;
        tot->strays += c.strays;
        tot->busy += c.busy;
    }
    sl->pid = 0;
}

/* Runs one client to completion in slot sl (started, not waited). */
static void s_spawn(s_slot *sl, int id, int jobs)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        s_client_main(id, jobs, fds[1]);
    }
    close(fds[1]);
    sl->pid = pid;
    sl->fd = fds[0];
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 60;
    int at_once = argc > 2 ? atoi(argv[2]) : 8;
    int jobs = argc > 3 ? atoi(argv[3]) : 40;
    int daemon_kills = argc > 4 ? atoi(argv[4]) : 3;
    if (seconds < 1 || seconds > 3600 || at_once < 1 || at_once > CHAOS_MAX_CLIENTS || jobs < 1 ||
        jobs > 10000 || daemon_kills < 0 || daemon_kills > 100) {
        fprintf(stderr, "usage: chaos [seconds<=3600 [clients<=%d [jobs<=10000 [daemon-kills<=100]]]]\n",
                CHAOS_MAX_CLIENTS);
        return 2;
    }
    const char *bin = getenv("GEXECD");
    snprintf(s_daemon_bin, sizeof s_daemon_bin, "%s", bin ? bin : "daemon/gexecd");
    snprintf(s_dir, sizeof s_dir, "/tmp/gexec-chaos-XXXXXX");
    if (!mkdtemp(s_dir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(s_endpoint, sizeof s_endpoint, "ipc://%s/gexecd.sock", s_dir);
    snprintf(s_epoch_path, sizeof s_epoch_path, "%s/epoch", s_dir);
    char conf[600];
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", s_dir);
    FILE *f = fopen(conf, "w");
    fputs("graphs:\n  max: 32\nlimits:\n  max_memory_bytes: 512M\n  max_tensor_bytes: 64M\n"
          "client_heartbeat_ms: 1000\ntune:\n  mode: off\n", f);
    fclose(f);
    srand((unsigned)time(NULL));
    int epoch = 0;
    s_epoch_write(epoch);
    pid_t daemon = s_daemon_start();

    s_counts tot = {0};
    int64_t clients = 0, killed = 0, crashed = 0, restarts = 0;
    s_slot slots[CHAOS_MAX_CLIENTS] = {0};
    /* warm-up: one round of clients, nothing killed, then the baseline RSS */
    for (int i = 0; i < at_once; i++)
        s_spawn(&slots[i], (int)clients++, jobs);
    for (int i = 0; i < at_once; i++)
        s_reap(&slots[i], &tot, &killed, &crashed, false);
    long rss0 = s_rss_kib(daemon), rss_max = rss0;

    int64_t t_end = s_now_ms() + (int64_t)seconds * 1000;
    int64_t kill_every = (int64_t)seconds * 1000 / (daemon_kills + 1), next_kill = s_now_ms() + kill_every;
    while (s_now_ms() < t_end) {
        for (int i = 0; i < at_once; i++) {
            siginfo_t si = {0};
            if (slots[i].pid > 0 &&
                (waitid(P_PID, (id_t)slots[i].pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
                 si.si_pid == 0))
                continue; /* still running */
            if (slots[i].pid > 0) /* finished: collect it */
                s_reap(&slots[i], &tot, &killed, &crashed, false);
            s_spawn(&slots[i], (int)clients++, jobs);
        }
        /* a client killed at random, about 1 in 4 turns */
        if (rand() % 4 == 0) {
            int i = rand() % at_once;
            if (slots[i].pid > 0) {
                kill(slots[i].pid, SIGKILL);
                s_reap(&slots[i], &tot, &killed, &crashed, true);
            }
        }
        if (restarts < daemon_kills && s_now_ms() >= next_kill) {
            kill(daemon, SIGKILL);
            waitpid(daemon, NULL, 0);
            s_epoch_write(++epoch); /* before the restart: jobs sent since are new */
            daemon = s_daemon_start();
            restarts++;
            next_kill += kill_every;
        }
        long rss = s_rss_kib(daemon);
        if (rss > rss_max)
            rss_max = rss;
        s_sleep_ms(100);
    }
    for (int i = 0; i < at_once; i++)
        if (slots[i].pid > 0)
            s_reap(&slots[i], &tot, &killed, &crashed, false);
    /* the daemon must still be the one this program started */
    bool alive = waitpid(daemon, NULL, WNOHANG) == 0;
    long rss_end = alive ? s_rss_kib(daemon) : -1;
    int stop_status = -1;
    if (alive) {
        int st = 0;
        kill(daemon, SIGTERM);
        waitpid(daemon, &st, 0);
        stop_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    bool rss_ok = rss_end >= 0 && rss_end <= 2 * rss0 + 64 * 1024;
    printf("chaos: %d s, %lld clients (%lld killed at random, %lld failed), %lld daemon restarts\n",
           seconds, (long long)clients, (long long)killed, (long long)crashed, (long long)restarts);
    printf("jobs: %lld sent, %lld ok, %lld refused as expected, %lld turned away (queue/limit), "
           "%lld lost to a daemon kill, %lld lost otherwise, %lld wrong, %lld stray replies\n",
           (long long)tot.submitted, (long long)tot.ok, (long long)tot.refused, (long long)tot.busy,
           (long long)tot.lost_restart, (long long)tot.lost_bad, (long long)tot.wrong,
           (long long)tot.strays);
    printf("daemon RSS: %ld KiB after warm-up, %ld KiB peak, %ld KiB at the end (%s); SIGTERM: "
           "status %d\n", rss0, rss_max, rss_end, rss_ok ? "within bounds" : "OVER", stop_status);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "chaos: could not remove %s\n", s_dir);
    bool pass = tot.lost_bad == 0 && tot.wrong == 0 && tot.strays == 0 && crashed == 0 && alive &&
                stop_status == 0 && rss_ok;
    printf("%s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}
