/*
 * conformance: run the ONNX backend node tests through a real gexecd.
 *
 *   conformance [-e ENDPOINT] [-d DATA_DIR] [-s SUITES] [-v] [-j] [-m MODE | --modes[=LIST]]
 *               [FILTER...]
 *
 * For every case directory of DATA_DIR (default
 * /usr/share/libonnx-testdata/data/node, sorted) whose name contains one of
 * the FILTERs (all without any): load model.onnx with gx_graph_load_onnx
 * and test_data_set_0/input_<N>.pb (N in the order of the graph's inputs),
 * run the graph inline with gx_client_run (30 s), and compare each output
 * with output_<N>.pb: same dtype and shape, floats within rtol 1e-3 + atol
 * 1e-5 (NaN equals NaN; f16/bf16 compared as f32; bfloat16 within one of
 * its ulps, 2^-7 relative, as ONNX 1.12's data truncates where gexec rounds
 * to nearest), integers and bools exactly. A case is
 *   PASS         all outputs match;
 *   UNSUPPORTED  the importer or the daemon refuses it with GX_EOP,
 *                GX_EUNSUPPORTED, GX_EDTYPE or GX_EATTR (which includes
 *                inputs or outputs that are sequences, maps or optionals),
 *                or its test data contradicts the model's own input
 *                declarations (a broken case; bfloat16 data stored as
 *                uint16, as numpy has no bfloat16, is read as bfloat16),
 *                or its outputs differ where the expected ones do not
 *                follow from its model (a broken case, s_broken), or
 *                only its outputs' values differ and it draws random
 *                numbers (the expected ones are numpy's draws;
 *                s_random_ops), whose unseeded outputs --modes does not
 *                compare either;
 *   FAIL         anything else: wrong values, shape or dtype, other errors,
 *                timeouts, the daemon dying.
 * Prints FAIL and UNSUPPORTED lines (-v: PASS lines too, and a summary of
 * the unsupported cases by op), then "conformance: P passed, F failed,
 * U unsupported (N cases)" (tests/conformance.sh and bootstrap.sh read the
 * first four words; anything else goes after a ';'). -j prints one JSON
 * object a case instead ({"case", "result", "reason"}) and a final JSON
 * summary. Exits 1 if a case failed, 2 on usage or set-up errors, else 0.
 *
 * Execution modes (include/gexec/client.h): by default every case runs in
 * mode auto; -m MODE runs every case in MODE instead. --modes runs each
 * case in seq (checked against the test data as above), then again in
 * every other fixed mode (intra, inter, replica, inter+intra,
 * inter+replica; --modes=LIST: those of the comma-separated LIST, which
 * may also name seq or auto), and requires each output of each mode to be
 * byte-identical to seq's: same names, dtypes, shapes and bytes. A case is
 * then FAIL if seq fails, or if any mode's outputs differ or its run
 * returns an error (GX_EUNSUPPORTED included: the mode must run what seq
 * runs); the reason names the mode and the output. A case seq cannot run
 * (UNSUPPORTED, or FAIL before any output) is not run in the other modes.
 * The summary line then adds, after a ';', each mode's counts as
 * passed/failed/unsupported, where for a compared mode passed means
 * identical to seq, failed means different or an error, and unsupported
 * means not compared; -j adds "modes" to each case and "by_mode" to the
 * summary.
 *
 * -s SUITES (comma-separated, or "all") runs the named suites of Debian's
 * libonnx-testdata instead: node, simple, pytorch-converted,
 * pytorch-operator, each a folder of the data root
 * (/usr/share/libonnx-testdata/data, or -d). Cases are then named
 * "<suite>/<case>", FILTERs match those names, and the summary line adds
 * each suite's counts as passed/failed/unsupported after a ';' (-j:
 * "by_suite").
 *
 * --device NAME: the daemon it starts prefers device NAME (partition.prefer
 * [NAME, cpu], min_nodes 1, cost_check false), so subgraphs, copies and that device's
 * arenas run in every case (tests/gexecd-testdev has the test device
 * "testdev", tests/testdev.c).
 *
 * Without -e it starts the build tree's gexecd ($GEXEC_DAEMON, else
 * ../daemon/gexecd next to this program) in the foreground on a temporary
 * socket, restarts it when it dies or hangs (that case FAILs) and stops it
 * at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "libclient/onnx.pb-c.h"

#define DEFAULT_ROOT "/usr/share/libonnx-testdata/data"
#define DEFAULT_DATA DEFAULT_ROOT "/node"
#define MAX_SUITES 8
/* The suites of libonnx-testdata -s all runs ("real" holds no models). */
static const char *const s_all_suites[] = {"node", "simple", "pytorch-converted",
                                           "pytorch-operator"};
#define RUN_TIMEOUT_MS 30000
#define RTOL 1e-3
#define ATOL 1e-5

typedef enum result { R_PASS, R_FAIL, R_UNSUPPORTED } result;
static const char *const s_result_names[] = {"PASS", "FAIL", "UNSUPPORTED"};

typedef struct daemon_proc {
    const char *bin; /* NULL: an external daemon (-e) */
    const char *device; /* --device: the device it prefers, or NULL */
    pid_t pid;
    char dir[64];
    char endpoint[128];
    int restarts;
    char died[160]; /* how it ended, once it has */
} daemon_proc;

/* Unsupported cases counted by op, for -v. */
typedef struct op_count {
    char op[64];
    int cases;
    char example[160]; /* the first reason */
} op_count;

typedef struct runner {
    const char *data;
    const char *endpoint;
    bool verbose, json;
    gx_mode mode;              /* the mode of every case (-m; auto by default) */
    bool modes;                /* --modes: seq, then compare each of cmp[] with it */
    gx_mode cmp[GX_MODE_COUNT * 2];
    int n_cmp;
    int mode_counts[GX_MODE_COUNT][3]; /* --modes: per mode (cmp[] and seq) */
    result case_modes[GX_MODE_COUNT * 2]; /* --modes: the last case's result per cmp[] */
    bool seq_ran;    /* --modes: the last case ran in seq, and ... */
    result case_seq; /* ... matched the test data (R_PASS) or not (R_FAIL) */
    daemon_proc d;
    gx_client *client;
    int counts[3];
    const char *suites[MAX_SUITES]; /* -s: the suites, in order */
    int n_suites;
    int suite_counts[MAX_SUITES][3];
    op_count *ops;
    size_t n_ops, cap_ops;
} runner;

/* ---- the daemon --------------------------------------------------------- */

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void s_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The gexecd to start: $GEXEC_DAEMON, else ../daemon/gexecd relative to
 * this program. Static storage. */
static const char *s_daemon_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("GEXEC_DAEMON");
    if (env && *env)
        return env;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return NULL;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    /* a libtool-built program may live in tests/.libs/ */
    size_t len = strlen(self);
    if (len >= 6 && strcmp(self + len - 6, "/.libs") == 0)
        self[len - 6] = '\0';
    snprintf(path, sizeof path, "%s/../daemon/gexecd", self);
    return access(path, X_OK) == 0 ? path : NULL;
}

/* True while our daemon runs (or for an external one); once it has ended,
 * reaps it and says how in d->died. */
static bool s_daemon_alive(daemon_proc *d)
{
    if (!d->bin || d->pid <= 0)
        return d->bin == NULL;
    int st;
    if (waitpid(d->pid, &st, WNOHANG) != d->pid)
        return true;
    d->pid = 0;
    if (WIFSIGNALED(st))
        snprintf(d->died, sizeof d->died, "gexecd died of signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else
        snprintf(d->died, sizeof d->died, "gexecd exited with status %d", WEXITSTATUS(st));
    return false;
}

static void s_daemon_stop(daemon_proc *d)
{
    if (d->bin && d->pid > 0) {
        kill(d->pid, SIGTERM);
        int st;
        for (int i = 0; i < 250 && waitpid(d->pid, &st, WNOHANG) != d->pid; i++)
            s_sleep_ms(20);
        if (kill(d->pid, 0) == 0) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &st, 0);
        }
        d->pid = 0;
    }
}

/* Start gexecd on ipc://<dir>/gexecd.sock, its log in <dir>/gexecd.log,
 * with a config that splits every kernel step intra-op can split
 * (scheduler.split_min_ns: 0), so the intra-op modes run every kernel's
 * shares, not only the heavy ones; wait until it answers PING. */
static int s_daemon_start(daemon_proc *d)
{
    char log[128], conf[128];
    snprintf(log, sizeof log, "%s/gexecd.log", d->dir);
    snprintf(conf, sizeof conf, "%s/gexecd.yaml", d->dir);
    FILE *cf = fopen(conf, "w");
    if (!cf)
        return -1;
    /* no profile store: decisions (layouts) never depend on earlier runs,
     * and nothing is left behind */
    /* one connection per mode sends hundreds of graphs, which the other
     * modes' connections hold too (never idle, so never dropped): the
     * per-client graph limit (issue 18) is not what this tests */
    fputs("scheduler:\n  split_min_ns: 0\nprofile:\n  dir: \"\"\n"
          "limits:\n  client_graphs: 1000000\n",
          cf);
    if (d->device) /* every subgraph it can take, however small */
        fprintf(cf, "partition:\n  prefer: [%s, cpu]\n  min_nodes: 1\n  cost_check: false\n",
                d->device);
    if (fclose(cf) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* no orphan daemon if the runner is killed */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execl(d->bin, d->bin, "--foreground", "--config", conf, "--socket", d->endpoint,
              "--log-level", "error", (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", d->bin, strerror(errno));
        _exit(127);
    }
    d->pid = pid;
    d->died[0] = '\0';
    char err[256];
    gx_client *c = gx_client_new(d->endpoint, err, sizeof err);
    if (!c)
        return -1;
    gx_client_set_timeout(c, 200);
    int rc = GX_ECONNECT;
    for (int i = 0; i < 100 && rc != GX_OK && s_daemon_alive(d); i++)
        rc = gx_client_ping(c);
    gx_client_destroy(&c);
    if (rc != GX_OK) {
        fprintf(stderr, "conformance: %s did not start (see %s)\n", d->bin, log);
        s_daemon_stop(d);
        return -1;
    }
    return 0;
}

/* (Re)connect the client to the daemon. */
static int s_connect(runner *r)
{
    char err[256];
    gx_client_destroy(&r->client);
    r->client = gx_client_new(r->endpoint, err, sizeof err);
    if (!r->client) {
        fprintf(stderr, "conformance: %s\n", err);
        return -1;
    }
    gx_client_set_timeout(r->client, RUN_TIMEOUT_MS + 5000);
    return 0;
}

/* After the daemon died or hung during a case: a fresh one, a fresh client. */
static int s_daemon_restart(runner *r)
{
    s_daemon_stop(&r->d);
    r->d.restarts++;
    if (s_daemon_start(&r->d) < 0)
        return -1;
    return s_connect(r);
}

/* ---- values ------------------------------------------------------------- */

static float s_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float f;
    if (exp == 0)
        f = ldexpf((float)man, -24);
    else if (exp == 31)
        f = man ? NAN : INFINITY;
    else
        f = ldexpf((float)(man | 0x400), (int)exp - 25);
    return sign ? -f : f;
}

static float s_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Element i of a floating-point tensor as a double. */
static double s_float_at(const gx_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case GX_F32: return ((const float *)t->data)[i];
    case GX_F64: return ((const double *)t->data)[i];
    case GX_F16: return s_f16_to_f32(((const uint16_t *)t->data)[i]);
    case GX_BF16: return s_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case GX_I64: case GX_I32: case GX_I8: case GX_U8: case GX_BOOL: case GX_I16: case GX_U16:
    case GX_U32: case GX_U64: case GX_STRING: case GX_DTYPE_COUNT:
        break;
    }
    return NAN;
}

static bool s_is_float(gx_dtype dt)
{
    return dt == GX_F32 || dt == GX_F64 || dt == GX_F16 || dt == GX_BF16;
}

/* Compare got with want; false with a reason. */
static bool s_compare(const char *name, const gx_tensor *got, const gx_tensor *want, char *why,
                      size_t len);

/* Sequences and none (include/gexec/tensor.h) as s_compare and
 * s_same_tensor (same): the same kind, then for a sequence the same
 * length and dtype and each item compared; false with why. */
static bool s_compare_value(const char *name, const gx_tensor *got, const gx_tensor *want,
                            char *why, size_t len,
                            bool (*same)(const char *, const gx_tensor *, const gx_tensor *,
                                         char *, size_t))
{
    if (got->kind != want->kind) {
        snprintf(why, len, "output '%s': a %s, expected a %s", name, gx_kind_name(got->kind),
                 gx_kind_name(want->kind));
        return false;
    }
    if (got->kind == GX_KIND_TENSOR)
        return same(name, got, want, why, len);
    if (got->kind == GX_KIND_NONE)
        return true;
    if (got->n_items != want->n_items || got->dtype != want->dtype) {
        snprintf(why, len, "output '%s': a sequence of %zu %s, expected %zu %s", name,
                 got->n_items, gx_dtype_name(got->dtype), want->n_items,
                 gx_dtype_name(want->dtype));
        return false;
    }
    for (size_t i = 0; i < got->n_items; i++) {
        char item[600];
        snprintf(item, sizeof item, "%s[%zu]", name, i);
        if (!same(item, got->items[i], want->items[i], why, len))
            return false;
    }
    return true;
}

/* Whether string tensors a and b (same shape) hold the same strings; else
 * why says where they first differ. */
static bool s_same_strings(const char *name, const gx_tensor *a, const gx_tensor *b,
                           const char *other, char *why, size_t len)
{
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < a->numel; i++) {
        size_t na, nb;
        const char *sa = gx_tensor_string(a, i, &na), *sb = gx_tensor_string(b, i, &nb);
        if ((na != nb || memcmp(sa, sb, na) != 0) && bad++ == 0)
            first = i;
    }
    if (bad)
        snprintf(why, len, "output '%s': %lld of %lld strings differ; first at %lld: got \"%.60s\", %s \"%.60s\"",
                 name, (long long)bad, (long long)a->numel, (long long)first,
                 gx_tensor_string(a, first, NULL), other, gx_tensor_string(b, first, NULL));
    return bad == 0;
}

static bool s_compare(const char *name, const gx_tensor *got, const gx_tensor *want, char *why,
                      size_t len)
{
    char s1[160], s2[160];
    if (got->dtype != want->dtype) {
        snprintf(why, len, "output '%s': dtype %s, expected %s", name, gx_dtype_name(got->dtype),
                 gx_dtype_name(want->dtype));
        return false;
    }
    if (got->ndim != want->ndim ||
        memcmp(got->shape, want->shape, (size_t)got->ndim * sizeof got->shape[0]) != 0) {
        snprintf(why, len, "output '%s': shape %s, expected %s", name,
                 gx_shape_str(got->ndim, got->shape, s1, sizeof s1),
                 gx_shape_str(want->ndim, want->shape, s2, sizeof s2));
        return false;
    }
    int64_t bad = 0, first = -1;
    if (got->dtype == GX_STRING)
        return s_same_strings(name, got, want, "expected", why, len);
    if (s_is_float(got->dtype)) {
        double rtol = got->dtype == GX_BF16 ? 0x1p-7 : RTOL;
        for (int64_t i = 0; i < got->numel; i++) {
            double a = s_float_at(got, i), b = s_float_at(want, i);
            bool same = a == b || (isnan(a) && isnan(b));
            if (!same && !(fabs(a - b) <= ATOL + rtol * fabs(b)) && bad++ == 0)
                first = i;
        }
        if (bad)
            snprintf(why, len, "output '%s': %lld of %lld values differ; first at %lld: got %.9g, expected %.9g",
                     name, (long long)bad, (long long)got->numel, (long long)first,
                     s_float_at(got, first), s_float_at(want, first));
    } else {
        size_t es = gx_dtype_size(got->dtype);
        const uint8_t *a = got->data, *b = want->data;
        for (int64_t i = 0; i < got->numel; i++)
            if (memcmp(a + (size_t)i * es, b + (size_t)i * es, es) != 0 && bad++ == 0)
                first = i;
        if (bad) {
            int64_t va = 0, vb = 0;
            memcpy(&va, a + (size_t)first * es, es); /* little-endian: low bytes */
            memcpy(&vb, b + (size_t)first * es, es);
            if (es < 8 && got->dtype != GX_U8 && got->dtype != GX_U16 && got->dtype != GX_U32 &&
                got->dtype != GX_BOOL) {
                va = (va << (64 - 8 * es)) >> (64 - 8 * es); /* sign-extend */
                vb = (vb << (64 - 8 * es)) >> (64 - 8 * es);
            }
            snprintf(why, len, "output '%s': %lld of %lld values differ; first at %lld: got %lld, expected %lld",
                     name, (long long)bad, (long long)got->numel, (long long)first, (long long)va,
                     (long long)vb);
        }
    }
    return bad == 0;
}

/* ---- cases -------------------------------------------------------------- */

static bool s_unsupported_status(int rc)
{
    return rc == GX_EOP || rc == GX_EUNSUPPORTED || rc == GX_EDTYPE || rc == GX_EATTR;
}

static result s_classify(int rc)
{
    return s_unsupported_status(rc) ? R_UNSUPPORTED : R_FAIL;
}

/* Number of files dir/<prefix>_<N>.pb with N = 0, 1, ... */
static int s_count_files(const char *dir, const char *prefix)
{
    char path[PATH_MAX];
    int n = 0;
    for (;; n++) {
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
        if (access(path, R_OK) != 0)
            return n;
    }
}

/* Flatten a message to one line for the report. */
static void s_one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

/* Line the test data up with the model's declarations. numpy has no
 * bfloat16, so the ONNX test data stores bfloat16 values as uint16 tensors
 * with the same bits: read those as bfloat16 where the model declares
 * bfloat16. An input that still contradicts its declaration is a broken test
 * case (some ONNX 1.12 cases declare one shape and give another): -1 with
 * the reason, for UNSUPPORTED. */
static int s_check_test_data(const gx_graph *g, gx_tensor **in, gx_tensor **want, char *why,
                             size_t len)
{
    char s1[160], s2[160];
    for (size_t i = 0; i < g->n_inputs; i++) {
        const gx_value_decl *d = &g->inputs[i];
        bool same = true;
        if (in[i]->kind != GX_KIND_TENSOR) { /* a sequence or none: its items' dtype */
            if (in[i]->kind == GX_KIND_SEQUENCE && !in[i]->n_items)
                in[i]->dtype = d->dtype; /* an empty one's file does not say */
            if (in[i]->kind == GX_KIND_SEQUENCE && in[i]->dtype != d->dtype) {
                snprintf(why, len, "broken test case: input '%s' is a sequence of %s, but the model declares %s",
                         d->name, gx_dtype_name(in[i]->dtype), gx_dtype_name(d->dtype));
                return -1;
            }
            continue;
        }
        if (d->dtype == GX_BF16 && in[i]->dtype == GX_U16)
            in[i]->dtype = GX_BF16;
        same = d->dtype == in[i]->dtype && d->ndim == in[i]->ndim;
        for (int k = 0; same && k < d->ndim; k++)
            same = d->shape[k] == -1 || d->shape[k] == in[i]->shape[k];
        if (!same) {
            snprintf(why, len,
                     "broken test case: input '%s' is %s %s, but the model declares %s %s",
                     d->name, gx_dtype_name(in[i]->dtype),
                     gx_shape_str(in[i]->ndim, in[i]->shape, s1, sizeof s1),
                     gx_dtype_name(d->dtype), gx_shape_str(d->ndim, d->shape, s2, sizeof s2));
            return -1;
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        if (g->outputs[i].dtype == GX_BF16 && want[i]->dtype == GX_U16)
            want[i]->dtype = GX_BF16;
        if (want[i]->kind == GX_KIND_SEQUENCE && !want[i]->n_items &&
            g->outputs[i].dtype != GX_DTYPE_COUNT)
            want[i]->dtype = g->outputs[i].dtype;
    }
    return 0;
}

/* Submit rq and wait for its reply, watching that the daemon lives: as
 * gx_client_run, but a crash is noticed at once. GX_ECONNECT without a
 * result when nothing came. */
static int s_run(runner *r, const gx_request *rq, gx_result **res)
{
    gx_job *job = NULL;
    *res = NULL;
    int rc = gx_client_submit(r->client, rq, &job);
    int64_t t0 = s_now_ms();
    while (job) {
        rc = gx_job_wait(job, 100, res);
        if (rc != GX_ETIMEDOUT || *res)
            break;
        if (!s_daemon_alive(&r->d) || s_now_ms() - t0 > RUN_TIMEOUT_MS + 5000) {
            rc = GX_ECONNECT;
            break;
        }
    }
    gx_job_destroy(&job);
    return rc;
}

/* Run rq in mode and wait: R_PASS with *res (caller frees) when the
 * daemon ran it; otherwise the classification of the error, its reason in
 * why. Restarts (or reconnects to) the daemon when it died or hung. */
static result s_run_mode(runner *r, gx_request *rq, gx_mode mode, gx_result **res, char *why,
                         size_t len)
{
    int rc = gx_request_set_mode(rq, mode);
    if (rc < 0) {
        snprintf(why, len, "cannot set mode %s", gx_mode_name(mode));
        return R_FAIL;
    }
    rc = s_run(r, rq, res);
    if (!s_daemon_alive(&r->d)) {
        snprintf(why, len, "%s", r->d.died);
        if (s_daemon_restart(r) < 0)
            snprintf(why + strlen(why), len - strlen(why), "; restarting it failed");
        gx_result_destroy(res);
        return R_FAIL;
    }
    if (rc >= 0)
        return R_PASS;
    if (*res)
        snprintf(why, len, "run: %s: %s", gx_status_name(rc), gx_result_message(*res));
    else if (rc == GX_ECONNECT)
        snprintf(why, len, "run: no reply within %d ms", RUN_TIMEOUT_MS + 5000);
    else
        snprintf(why, len, "run: %s: %s", gx_status_name(rc), gx_client_last_error(r->client));
    if (!*res && r->d.bin) {
        /* no reply at all: a hung daemon would fail every later case */
        snprintf(why + strlen(why), len - strlen(why), " (gexecd restarted)");
        if (s_daemon_restart(r) < 0)
            snprintf(why + strlen(why), len - strlen(why), "; restarting it failed");
    } else if (!*res && s_connect(r) < 0) {
        snprintf(why + strlen(why), len - strlen(why), "; reconnecting failed");
    }
    result out = *res ? s_classify(rc) : R_FAIL;
    gx_result_destroy(res);
    return out;
}

/* The output of res named name, or NULL. */
static const gx_tensor *s_output_named(const gx_result *res, const char *name)
{
    for (size_t k = 0; k < gx_result_output_count(res); k++)
        if (strcmp(gx_result_output_name(res, k), name) == 0)
            return gx_result_output(res, k);
    return NULL;
}

/* --modes: is output name of a mode (a) byte-identical to seq's (b): same
 * dtype, shape and bytes (so -0 differs from 0, and NaN payloads count)?
 * False with the first difference in why. */
static bool s_same_tensor(const char *name, const gx_tensor *a, const gx_tensor *b, char *why,
                          size_t len)
{
    char s1[160], s2[160];
    if (a->dtype != b->dtype || a->ndim != b->ndim ||
        memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]) != 0) {
        snprintf(why, len, "output '%s': %s %s, seq gave %s %s", name, gx_dtype_name(a->dtype),
                 gx_shape_str(a->ndim, a->shape, s1, sizeof s1), gx_dtype_name(b->dtype),
                 gx_shape_str(b->ndim, b->shape, s2, sizeof s2));
        return false;
    }
    if (a->dtype == GX_STRING)
        return s_same_strings(name, a, b, "seq", why, len);
    size_t es = gx_dtype_size(a->dtype);
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < a->numel; k++)
        if (memcmp((const uint8_t *)a->data + (size_t)k * es,
                   (const uint8_t *)b->data + (size_t)k * es, es) != 0 && bad++ == 0)
            first = k;
    if (!bad)
        return true;
    uint64_t va = 0, vb = 0;
    memcpy(&va, (const uint8_t *)a->data + (size_t)first * es, es);
    memcpy(&vb, (const uint8_t *)b->data + (size_t)first * es, es);
    if (s_is_float(a->dtype))
        snprintf(why, len,
                 "output '%s': %lld of %lld values not bit-identical to seq's; first at %lld: "
                 "got %.9g (0x%llx), seq %.9g (0x%llx)",
                 name, (long long)bad, (long long)a->numel, (long long)first, s_float_at(a, first),
                 (unsigned long long)va, s_float_at(b, first), (unsigned long long)vb);
    else
        snprintf(why, len,
                 "output '%s': %lld of %lld values differ from seq's; first at %lld: "
                 "got 0x%llx, seq 0x%llx",
                 name, (long long)bad, (long long)a->numel, (long long)first,
                 (unsigned long long)va, (unsigned long long)vb);
    return false;
}

/* --modes: is every output of got byte-identical to seq's (same names and
 * count, then s_same_tensor)? False with the first difference in why. */
static bool s_identical(const gx_result *seq, const gx_result *got, char *why, size_t len)
{
    size_t n = gx_result_output_count(seq);
    if (gx_result_output_count(got) != n) {
        snprintf(why, len, "%zu outputs, seq gave %zu", gx_result_output_count(got), n);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = gx_result_output_name(seq, i);
        const gx_tensor *a = s_output_named(got, name);
        if (!a) {
            snprintf(why, len, "output '%s' missing", name);
            return false;
        }
        if (!s_compare_value(name, a, gx_result_output(seq, i), why, len, s_same_tensor))
            return false;
    }
    return true;
}

/* --self-test: s_same_tensor, the comparison --modes relies on, on
 * synthetic tensors (no daemon, no test data). 0 when every check holds. */
static int s_self_test(void)
{
    int64_t shape[2] = {2, 3}, shape2[2] = {3, 2};
    float f[6] = {1, 2, 3, 4, 5, 6}, g[6];
    int32_t i32[6] = {1, 2, 3, 4, 5, 6}, j32[6];
    char why[512];
    int failed = 0;
    struct self_case {
        const char *what;
        bool want_same;
        const char *want_in_why; /* in the reason when they differ */
        gx_tensor *a, *b;        /* a mode's output, seq's */
    } c[6];
    memcpy(g, f, sizeof g);
    c[0] = (struct self_case){"identical floats", true, "", gx_tensor_new_copy(GX_F32, 2, shape, f, sizeof f),
                          gx_tensor_new_copy(GX_F32, 2, shape, g, sizeof g)};
    g[4] = nextafterf(5.0f, 6.0f); /* one ulp: within every tolerance, not identical */
    c[1] = (struct self_case){"one float one ulp off", false, "first at 4",
                          gx_tensor_new_copy(GX_F32, 2, shape, g, sizeof g),
                          gx_tensor_new_copy(GX_F32, 2, shape, f, sizeof f)};
    memcpy(g, f, sizeof g);
    g[0] = 0.0f, f[0] = -0.0f; /* equal as numbers, not as bytes */
    c[2] = (struct self_case){"-0 against 0", false, "first at 0",
                          gx_tensor_new_copy(GX_F32, 2, shape, f, sizeof f),
                          gx_tensor_new_copy(GX_F32, 2, shape, g, sizeof g)};
    memcpy(j32, i32, sizeof j32);
    j32[5] = 7;
    c[3] = (struct self_case){"one int differs", false, "got 0x7, seq 0x6",
                          gx_tensor_new_copy(GX_I32, 2, shape, j32, sizeof j32),
                          gx_tensor_new_copy(GX_I32, 2, shape, i32, sizeof i32)};
    c[4] = (struct self_case){"transposed shape", false, "[3,2]",
                          gx_tensor_new_copy(GX_I32, 2, shape2, i32, sizeof i32),
                          gx_tensor_new_copy(GX_I32, 2, shape, i32, sizeof i32)};
    c[5] = (struct self_case){"same bytes, other dtype", false, "int32",
                          gx_tensor_new_copy(GX_I32, 2, shape, f, sizeof f),
                          gx_tensor_new_copy(GX_F32, 2, shape, f, sizeof f)};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        why[0] = '\0';
        bool ok = c[k].a && c[k].b;
        bool same = ok && s_same_tensor("y", c[k].a, c[k].b, why, sizeof why);
        if (!ok || same != c[k].want_same || !strstr(why, c[k].want_in_why)) {
            printf("self-test FAIL %s: %s%s\n", c[k].what, same ? "identical" : "differs: ", why);
            failed++;
        }
        gx_tensor_destroy(&c[k].a);
        gx_tensor_destroy(&c[k].b);
    }
    printf("conformance self-test: %d of %zu checks failed\n", failed, sizeof c / sizeof c[0]);
    return failed ? 1 : 0;
}

/* --modes: run rq in each mode of r->cmp and compare with seq's result;
 * records each mode's result in r->case_modes and appends every failure
 * ("mode M: ...") to why. Returns R_FAIL if any mode failed, else R_PASS. */
static result s_compare_modes(runner *r, gx_request *rq, const gx_result *seq, char *why,
                              size_t len)
{
    result out = R_PASS;
    for (int i = 0; i < r->n_cmp; i++) {
        char mwhy[1024] = "";
        gx_result *res = NULL;
        gx_mode m = r->cmp[i];
        result mr = s_run_mode(r, rq, m, &res, mwhy, sizeof mwhy);
        if (mr == R_PASS && !s_identical(seq, res, mwhy, sizeof mwhy))
            mr = R_FAIL;
        else if (mr != R_PASS)
            mr = R_FAIL; /* an error where seq ran, GX_EUNSUPPORTED included */
        gx_result_destroy(&res);
        r->case_modes[i] = mr;
        if (mr == R_PASS)
            continue;
        size_t used = strlen(why);
        snprintf(why + used, len - used, "%smode %s: %s", used ? "; " : "", gx_mode_name(m), mwhy);
        out = R_FAIL;
    }
    return out;
}

/* Cases whose expected outputs do not follow from their own model (ONNX's
 * generator computed them with attributes the node does not carry): their
 * outputs are still computed and compared, and a mismatch makes them
 * broken cases (UNSUPPORTED, with this reason) rather than failures. */
static const struct {
    const char *name, *why;
} s_broken[] = {
    {"test_adam_multiple", "the expected outputs use epsilon 1e-2, but the Adam node has no "
                           "epsilon attribute (the default is 1e-6)"},
};

/* The reason case name (or <suite>/name) is known broken, or NULL. */
static const char *s_broken_why(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < sizeof s_broken / sizeof s_broken[0]; i++)
        if (strcmp(base, s_broken[i].name) == 0)
            return s_broken[i].why;
    return NULL;
}

/* Ops whose outputs are random draws (ops/cpu/random.c; Dropout in
 * training too). ONNX's expected outputs for them are numpy's draws, which
 * another generator does not reproduce: a case with one is checked for its
 * outputs' dtypes and shapes, and is UNSUPPORTED ("random draws") when only
 * the values differ. */
static const char *const s_random_ops[] = {"Bernoulli",         "Multinomial",
                                           "RandomNormal",      "RandomNormalLike",
                                           "RandomUniform",     "RandomUniformLike"};

/* Does node n draw: one of s_random_ops, or a Dropout given a
 * training_mode input (which may be true)? */
static bool s_node_draws(const gx_node *n)
{
    if (strcmp(n->op, "Dropout") == 0)
        return n->n_in > 2 && n->in[2][0];
    for (size_t k = 0; k < sizeof s_random_ops / sizeof s_random_ops[0]; k++)
        if (strcmp(n->op, s_random_ops[k]) == 0)
            return true;
    return false;
}

/* Does g draw random numbers? *seeded: every node that does has a seed
 * (its outputs are then the same in every mode). */
static bool s_draws(const gx_graph *g, bool *seeded)
{
    bool draws = false;
    *seeded = true;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (!s_node_draws(g->nodes[i]))
            continue;
        draws = true;
        bool seed = false;
        for (size_t a = 0; a < g->nodes[i]->n_attr; a++)
            seed = seed || strcmp(g->nodes[i]->attr[a].name, "seed") == 0;
        *seeded = *seeded && seed;
    }
    return draws;
}

/* Same kind, dtype and shape (the values aside); else why. */
static bool s_same_form(const char *name, const gx_tensor *got, const gx_tensor *want, char *why,
                        size_t len)
{
    if (got->kind == want->kind && got->dtype == want->dtype && got->ndim == want->ndim &&
        memcmp(got->shape, want->shape, (size_t)got->ndim * sizeof got->shape[0]) == 0)
        return true;
    snprintf(why, len, "output '%s': its kind, dtype or shape differs from the test data's",
             name);
    return false;
}

/* Run one case; the reason goes to why. With --modes, also the other modes
 * (r->case_modes says how each went; R_UNSUPPORTED: not compared). */
static result s_run_case(runner *r, const char *name, char *why, size_t len)
{
    char dir[PATH_MAX], path[PATH_MAX + 64], err[2048];
    gx_graph *g = NULL;
    gx_tensor **in = NULL, **want = NULL;
    gx_request *rq = NULL;
    gx_result *res = NULL;
    size_t n_in = 0, n_want = 0;
    result out = R_FAIL;
    int rc;

    for (int i = 0; i < r->n_cmp; i++)
        r->case_modes[i] = R_UNSUPPORTED;
    r->seq_ran = false;

    snprintf(dir, sizeof dir, "%s/%s", r->data, name);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if ((rc = gx_graph_load_onnx(path, &g, err, sizeof err)) < 0) {
        const char *msg = strncmp(err, path, strlen(path)) == 0 ? err + strlen(path) + 2 : err;
        snprintf(why, len, "import: %s: %s", gx_status_name(rc), msg);
        return s_classify(rc);
    }
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/test_data_set_0");
    n_in = gx_graph_input_count(g);
    n_want = gx_graph_output_count(g);
    int files_in = s_count_files(dir, "input"), files_out = s_count_files(dir, "output");
    if ((size_t)files_in != n_in || (size_t)files_out != n_want) {
        snprintf(why, len, "the graph has %zu inputs and %zu outputs, the test data %d and %d",
                 n_in, n_want, files_in, files_out);
        goto out;
    }
    in = calloc(n_in + 1, sizeof *in);
    want = calloc(n_want + 1, sizeof *want);
    if (!in || !want) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_in + n_want; i++) {
        bool is_in = i < n_in;
        size_t k = is_in ? i : i - n_in;
        snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, is_in ? "input" : "output", k);
        bool opt;
        gx_kind kind = is_in ? gx_graph_input_kind(g, k, &opt) : gx_graph_output_kind(g, k, &opt);
        if ((rc = gx_value_load_onnx(path, kind, opt, is_in ? &in[k] : &want[k], err,
                                     sizeof err)) < 0) {
            snprintf(why, len, "test data: %s: %s", gx_status_name(rc), err);
            out = s_classify(rc);
            goto out;
        }
    }

    if (s_check_test_data(g, in, want, why, len) < 0) {
        out = R_UNSUPPORTED;
        goto out;
    }

    if (!(rq = gx_request_new()) || gx_request_set_graph(rq, g) < 0 ||
        gx_request_set_deadline_ms(rq, RUN_TIMEOUT_MS) < 0) {
        snprintf(why, len, "cannot build the request");
        goto out;
    }
    for (size_t i = 0; i < n_in; i++)
        if ((rc = gx_request_add_input(rq, gx_graph_input_name(g, i), in[i])) < 0) {
            snprintf(why, len, "input '%s': %s", gx_graph_input_name(g, i), gx_strerror(rc));
            goto out;
        }
    out = s_run_mode(r, rq, r->modes ? GX_MODE_SEQ : r->mode, &res, why, len);
    if (out != R_PASS)
        goto out;
    for (size_t i = 0; i < n_want && out == R_PASS; i++) {
        const char *oname = gx_graph_output_name(g, i);
        const gx_tensor *got = s_output_named(res, oname);
        if (!got) {
            snprintf(why, len, "output '%s' missing from the result", oname);
            out = R_FAIL;
        } else if (!s_compare_value(oname, got, want[i], why, len, s_compare)) {
            out = R_FAIL;
        }
    }
    bool seeded;
    const bool draws = s_draws(g, &seeded);
    if (out == R_FAIL && draws) {
        out = R_UNSUPPORTED;
        for (size_t i = 0; i < n_want && out == R_UNSUPPORTED; i++) {
            const char *oname = gx_graph_output_name(g, i);
            const gx_tensor *got = s_output_named(res, oname);
            if (!got || !s_same_form(oname, got, want[i], why, len))
                out = R_FAIL;
        }
        if (out == R_UNSUPPORTED)
            snprintf(why, len, "random draws: the expected outputs are numpy's; gexec's "
                               "outputs have their dtypes and shapes");
    }
    if (out == R_FAIL && s_broken_why(name)) {
        char got[1024];
        snprintf(got, sizeof got, "%s", why);
        snprintf(why, len, "broken test case: %s (%s)", s_broken_why(name), got);
        out = R_UNSUPPORTED;
    }
    /* seq ran: the other modes must give its bytes, whether or not seq
     * matched the test data */
    r->seq_ran = true;
    r->case_seq = out;
    /* unseeded draws differ from run to run, so from mode to mode */
    if (r->modes && (!draws || seeded) &&
        s_compare_modes(r, rq, res, why, len) != R_PASS)
        out = R_FAIL;
out:
    for (size_t i = 0; in && i < n_in; i++)
        gx_tensor_destroy(&in[i]);
    for (size_t i = 0; want && i < n_want; i++)
        gx_tensor_destroy(&want[i]);
    free(in);
    free(want);
    gx_result_destroy(&res);
    gx_request_destroy(&rq);
    gx_graph_destroy(&g);
    return out;
}

/* ---- the summary by op -------------------------------------------------- */

static void s_count_op(runner *r, const char *op, const char *why)
{
    for (size_t i = 0; i < r->n_ops; i++) {
        if (strcmp(r->ops[i].op, op) == 0) {
            r->ops[i].cases++;
            return;
        }
    }
    if (!gx_grow(&r->ops, &r->cap_ops, r->n_ops + 1, sizeof *r->ops))
        return;
    op_count *o = &r->ops[r->n_ops++];
    memset(o, 0, sizeof *o);
    snprintf(o->op, sizeof o->op, "%s", op);
    snprintf(o->example, sizeof o->example, "%s", why);
    o->cases = 1;
}

/* Count an unsupported case under each op it names as unknown ("unknown op
 * 'Conv'"), else under the first op of its model. */
static void s_note_unsupported(runner *r, const char *name, const char *why)
{
    char seen[1024] = "|";
    bool named = false;
    for (const char *p = why; (p = strstr(p, "unknown op '")) != NULL;) {
        p += strlen("unknown op '");
        const char *q = strchr(p, '\'');
        if (!q)
            break;
        char op[64], key[70];
        snprintf(op, sizeof op, "%.*s", (int)(q - p < 63 ? q - p : 63), p);
        snprintf(key, sizeof key, "|%s|", op);
        if (!strstr(seen, key) && strlen(seen) + strlen(key) < sizeof seen) {
            strcat(seen, key + 1);
            s_count_op(r, op, why);
        }
        named = true;
        p = q;
    }
    if (named)
        return;
    char path[PATH_MAX];
    char op[64] = "?";
    snprintf(path, sizeof path, "%s/%s/model.onnx", r->data, name);
    FILE *f = fopen(path, "rb");
    if (f) {
        uint8_t *buf = NULL;
        size_t n = 0, cap = 0;
        for (;;) {
            if (n == cap && !gx_grow(&buf, &cap, n + 65536, 1))
                break;
            size_t got = fread(buf + n, 1, cap - n, f);
            if (!got)
                break;
            n += got;
        }
        fclose(f);
        Onnx__ModelProto *m = buf ? onnx__model_proto__unpack(NULL, n, buf) : NULL;
        if (m && m->graph && m->graph->n_node && m->graph->node[0]->op_type)
            snprintf(op, sizeof op, "%s", m->graph->node[0]->op_type);
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        free(buf);
    }
    s_count_op(r, op, why);
}

static int s_cmp_ops(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    return x->cases != y->cases ? y->cases - x->cases : strcmp(x->op, y->op);
}

static void s_print_summary(runner *r)
{
    if (!r->n_ops)
        return;
    qsort(r->ops, r->n_ops, sizeof *r->ops, s_cmp_ops);
    printf("unsupported cases by op (a case counts under every op it lacks; cases, first reason):\n");
    for (size_t i = 0; i < r->n_ops; i++)
        printf("  %-24s %4d  %s\n", r->ops[i].op, r->ops[i].cases, r->ops[i].example);
}

/* ---- main --------------------------------------------------------------- */

static void s_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool s_wanted(const char *name, char **filters, int n_filters)
{
    if (n_filters == 0)
        return true;
    for (int i = 0; i < n_filters; i++)
        if (strstr(name, filters[i]))
            return true;
    return false;
}

static int s_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void s_usage(FILE *f)
{
    fprintf(f, "usage: conformance [-e ENDPOINT] [-d DATA_DIR] [-s SUITES] [-v] [-j]\n"
               "                   [-m MODE | --modes[=LIST]] [--device NAME] [FILTER...]\n"
               "  -e EP   use the gexecd at EP (default: start the build tree's gexecd)\n"
               "  -d DIR  the ONNX node tests (default " DEFAULT_DATA "); with -s, the\n"
               "          folder of the suites (default " DEFAULT_ROOT ")\n"
               "  -s LIST run the comma-separated suites of the data (node, simple,\n"
               "          pytorch-converted, pytorch-operator; all: those four), cases named\n"
               "          <suite>/<case>, with each suite's counts in the summary\n"
               "  -v      print PASS lines and a summary of unsupported cases by op\n"
               "  -j      one JSON object per case, and a JSON summary\n"
               "  -m MODE run every case in MODE (default auto)\n"
               "  --modes run every case in seq, then in each other fixed mode (or each mode\n"
               "          of the comma-separated LIST), whose outputs must be byte-identical\n"
               "          to seq's\n"
               "  --self-test  check the comparison --modes uses on synthetic tensors, and exit\n"
               "  --device NAME  the daemon started prefers device NAME for every subgraph\n"
               "          it can take (partition.prefer, min_nodes 1)\n"
               "Modes: ");
    for (int m = 0; m < GX_MODE_COUNT; m++)
        fprintf(f, "%s%s", m ? ", " : "", gx_mode_name((gx_mode)m));
    fprintf(f, ".\nRuns the cases whose names contain any FILTER (all without one).\n");
}

/* --modes' LIST (NULL: every fixed mode but seq) into r->cmp. */
static int s_parse_modes(runner *r, const char *list)
{
    r->modes = true;
    r->n_cmp = 0;
    if (!list) {
        for (int m = 0; m < GX_MODE_COUNT; m++)
            if (m != GX_MODE_AUTO && m != GX_MODE_SEQ)
                r->cmp[r->n_cmp++] = (gx_mode)m;
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        gx_mode m;
        if (gx_mode_parse(tok, &m) < 0) {
            fprintf(stderr, "conformance: --modes: unknown mode '%s'\n", tok);
            return -1;
        }
        if (r->n_cmp == (int)(sizeof r->cmp / sizeof r->cmp[0])) {
            fprintf(stderr, "conformance: --modes: too many modes\n");
            return -1;
        }
        r->cmp[r->n_cmp++] = m;
    }
    if (!r->n_cmp) {
        fprintf(stderr, "conformance: --modes= names no mode\n");
        return -1;
    }
    return 0;
}

/* -s's LIST into r->suites (names point into list, or the static table). */
static int s_parse_suites(runner *r, char *list)
{
    r->n_suites = 0;
    if (strcmp(list, "all") == 0) {
        for (size_t i = 0; i < sizeof s_all_suites / sizeof s_all_suites[0]; i++)
            r->suites[r->n_suites++] = s_all_suites[i];
        return 0;
    }
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strchr(tok, '/') || strcmp(tok, "..") == 0 || strcmp(tok, ".") == 0) {
            fprintf(stderr, "conformance: -s: '%s' is not a suite name\n", tok);
            return -1;
        }
        if (r->n_suites == MAX_SUITES) {
            fprintf(stderr, "conformance: -s: at most %d suites\n", MAX_SUITES);
            return -1;
        }
        r->suites[r->n_suites++] = tok;
    }
    if (!r->n_suites) {
        fprintf(stderr, "conformance: -s names no suite\n");
        return -1;
    }
    return 0;
}

/* Add the cases of folder dir (under r->data) whose names match to
 * *cases, as "<prefix><name>"; -1 on errors (said). */
static int s_list_cases(const runner *r, const char *sub, char **filters, int n_filters,
                        char ***cases, size_t *n_cases, size_t *cap_cases)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s%s", r->data, *sub ? "/" : "", sub);
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "conformance: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        char name[PATH_MAX], model[PATH_MAX + 16];
        if (de->d_name[0] == '.')
            continue;
        snprintf(name, sizeof name, "%s%s%s", sub, *sub ? "/" : "", de->d_name);
        if (!s_wanted(name, filters, n_filters))
            continue;
        snprintf(model, sizeof model, "%s/%s/model.onnx", r->data, name);
        if (access(model, R_OK) != 0)
            continue;
        char *copy = gx_strdup(name);
        if (!copy || !gx_grow(cases, cap_cases, *n_cases + 1, sizeof **cases)) {
            free(copy);
            fprintf(stderr, "conformance: out of memory\n");
            closedir(dp);
            return -1;
        }
        (*cases)[(*n_cases)++] = copy;
    }
    closedir(dp);
    return 0;
}

/* The index in r->suites of the suite of case name (-s), or -1. */
static int s_suite_of(const runner *r, const char *name)
{
    size_t len = strcspn(name, "/");
    for (int i = 0; i < r->n_suites; i++)
        if (strlen(r->suites[i]) == len && strncmp(r->suites[i], name, len) == 0)
            return i;
    return -1;
}

/* Count the case res under each mode: seq (its own result against the
 * test data when it ran, else the case's), then each compared mode (a mode
 * listed twice counts twice, under one name). */
static void s_count_modes(runner *r, result res)
{
    r->mode_counts[GX_MODE_SEQ][r->seq_ran ? r->case_seq : res]++;
    for (int i = 0; i < r->n_cmp; i++)
        if (r->cmp[i] != GX_MODE_SEQ)
            r->mode_counts[r->cmp[i]][r->case_modes[i]]++;
}

int main(int argc, char **argv)
{
    enum { OPT_MODES = 256, OPT_SELF_TEST, OPT_DEVICE };
    static const struct option lopts[] = {
        {"modes", optional_argument, NULL, OPT_MODES},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"self-test", no_argument, NULL, OPT_SELF_TEST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    runner r = {.data = NULL, .mode = GX_MODE_AUTO};
    bool have_m = false;
    int opt, status = 2;
    while ((opt = getopt_long(argc, argv, "e:d:s:vjm:h", lopts, NULL)) != -1) {
        switch (opt) {
        case 'e': r.endpoint = optarg; break;
        case 'd': r.data = optarg; break;
        case 's':
            if (s_parse_suites(&r, optarg) < 0)
                return 2;
            break;
        case 'v': r.verbose = true; break;
        case 'j': r.json = true; break;
        case 'm':
            if (gx_mode_parse(optarg, &r.mode) < 0) {
                fprintf(stderr, "conformance: -m: unknown mode '%s'\n", optarg);
                s_usage(stderr);
                return 2;
            }
            have_m = true;
            break;
        case OPT_MODES:
            if (s_parse_modes(&r, optarg) < 0)
                return 2;
            break;
        case OPT_DEVICE: r.d.device = optarg; break;
        case OPT_SELF_TEST: return s_self_test();
        case 'h': s_usage(stdout); return 0;
        default: s_usage(stderr); return 2;
        }
    }
    if (have_m && r.modes) {
        fprintf(stderr, "conformance: -m and --modes exclude each other\n");
        return 2;
    }
    char **filters = argv + optind;
    int n_filters = argc - optind;

    if (!r.data)
        r.data = r.n_suites ? DEFAULT_ROOT : DEFAULT_DATA;
    char **cases = NULL;
    size_t n_cases = 0, cap_cases = 0;
    for (int i = 0; i < (r.n_suites ? r.n_suites : 1); i++)
        if (s_list_cases(&r, r.n_suites ? r.suites[i] : "", filters, n_filters, &cases, &n_cases,
                         &cap_cases) < 0)
            goto free_cases;
    qsort(cases, n_cases, sizeof *cases, s_cmp_str);

    if (!r.endpoint) {
        r.d.bin = s_daemon_path();
        if (!r.d.bin) {
            fprintf(stderr, "conformance: gexecd not found (set GEXEC_DAEMON)\n");
            goto free_cases;
        }
        snprintf(r.d.dir, sizeof r.d.dir, "/tmp/gexec-conformance-XXXXXX");
        if (!mkdtemp(r.d.dir)) {
            fprintf(stderr, "conformance: mkdtemp: %s\n", strerror(errno));
            goto free_cases;
        }
        snprintf(r.d.endpoint, sizeof r.d.endpoint, "ipc://%s/gexecd.sock", r.d.dir);
        r.endpoint = r.d.endpoint;
        if (s_daemon_start(&r.d) < 0)
            goto stop;
    }
    if (s_connect(&r) < 0)
        goto stop;

    for (size_t i = 0; i < n_cases; i++) {
        char why[4096] = "";
        result res = s_run_case(&r, cases[i], why, sizeof why);
        s_one_line(why);
        r.counts[res]++;
        int si = s_suite_of(&r, cases[i]);
        if (r.n_suites && si >= 0)
            r.suite_counts[si][res]++;
        if (r.modes)
            s_count_modes(&r, res);
        if (res == R_UNSUPPORTED && r.verbose)
            s_note_unsupported(&r, cases[i], why);
        if (r.json) {
            printf("{\"case\":");
            s_json_str(cases[i]);
            printf(",\"result\":\"%s\",\"reason\":", s_result_names[res]);
            s_json_str(why);
            if (r.modes) {
                printf(",\"modes\":{\"seq\":\"%s\"", s_result_names[r.seq_ran ? r.case_seq : res]);
                for (int k = 0; k < r.n_cmp; k++)
                    if (r.cmp[k] != GX_MODE_SEQ)
                        printf(",\"%s\":\"%s\"", gx_mode_name(r.cmp[k]),
                               s_result_names[r.case_modes[k]]);
                printf("}");
            }
            printf("}\n");
        } else if (res != R_PASS) {
            printf("%s %s: %s\n", s_result_names[res], cases[i], why);
        } else if (r.verbose) {
            printf("PASS %s\n", cases[i]);
        }
        fflush(stdout);
        if (r.d.bin && r.d.pid <= 0) {
            fprintf(stderr, "conformance: cannot restart gexecd; stopping\n");
            break;
        }
    }
    if (r.verbose && !r.json)
        s_print_summary(&r);
    int total = r.counts[R_PASS] + r.counts[R_FAIL] + r.counts[R_UNSUPPORTED];
    if (r.json) {
        printf("{\"passed\":%d,\"failed\":%d,\"unsupported\":%d,\"cases\":%d,\"daemon_restarts\":%d",
               r.counts[R_PASS], r.counts[R_FAIL], r.counts[R_UNSUPPORTED], total, r.d.restarts);
        if (r.modes) {
            printf(",\"by_mode\":{");
            for (int m = GX_MODE_AUTO, k = 0; m < GX_MODE_COUNT; m++) {
                const int *c = r.mode_counts[m];
                if (c[R_PASS] + c[R_FAIL] + c[R_UNSUPPORTED])
                    printf("%s\"%s\":{\"passed\":%d,\"failed\":%d,\"unsupported\":%d}",
                           k++ ? "," : "", gx_mode_name((gx_mode)m), c[R_PASS], c[R_FAIL],
                           c[R_UNSUPPORTED]);
            }
            printf("}");
        } else {
            printf(",\"mode\":\"%s\"", gx_mode_name(r.mode));
        }
        if (r.n_suites) {
            printf(",\"by_suite\":{");
            for (int k = 0; k < r.n_suites; k++) {
                const int *c = r.suite_counts[k];
                printf("%s\"%s\":{\"passed\":%d,\"failed\":%d,\"unsupported\":%d}",
                       k ? "," : "", r.suites[k], c[R_PASS], c[R_FAIL], c[R_UNSUPPORTED]);
            }
            printf("}");
        }
        printf("}\n");
    } else {
        /* the first four words are read by conformance.sh's callers */
        printf("conformance: %d passed, %d failed, %d unsupported (%d cases)", r.counts[R_PASS],
               r.counts[R_FAIL], r.counts[R_UNSUPPORTED], total);
        if (r.modes) {
            printf("; per mode (pass/fail/unsupported):");
            for (int m = GX_MODE_AUTO, k = 0; m < GX_MODE_COUNT; m++) {
                const int *c = r.mode_counts[m];
                if (c[R_PASS] + c[R_FAIL] + c[R_UNSUPPORTED])
                    printf("%s %s %d/%d/%d", k++ ? "," : "", gx_mode_name((gx_mode)m), c[R_PASS],
                           c[R_FAIL], c[R_UNSUPPORTED]);
            }
        } else if (have_m) {
            printf("; mode %s", gx_mode_name(r.mode));
        }
        if (r.n_suites) {
            printf("; per suite (pass/fail/unsupported):");
            for (int k = 0; k < r.n_suites; k++) {
                const int *c = r.suite_counts[k];
                printf("%s %s %d/%d/%d", k ? "," : "", r.suites[k], c[R_PASS], c[R_FAIL],
                       c[R_UNSUPPORTED]);
            }
        }
        printf("\n");
    }
    status = r.counts[R_FAIL] || (size_t)total < n_cases ? 1 : 0;
stop:
    gx_client_destroy(&r.client);
    s_daemon_stop(&r.d);
    if (r.d.bin && r.d.dir[0] && status != 2)
        nftw(r.d.dir, s_rm, 8, FTW_DEPTH | FTW_PHYS);
    else if (r.d.dir[0])
        fprintf(stderr, "conformance: gexecd's log is in %s\n", r.d.dir);
free_cases:
    for (size_t i = 0; i < n_cases; i++)
        free(cases[i]);
    free(cases);
    free(r.ops);
    return status;
}
