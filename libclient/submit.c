/*
 * gexec-submit: the command line client.
 *
 *   gexec-submit [--socket EP] [--timeout MS] run GRAPH [-i NAME=FILE.npy]... [-o DIR]
 *                [--output NAME]... [--mode M] [--priority N] [--deadline-ms N]
 *                [--repeat N] [--json] [--explain-mode]
 *   gexec-submit [--socket EP] load GRAPH
 *
 * GRAPH is a YAML graph file (docs/graph-format.md) or, named *.onnx, an
 * ONNX model (docs/onnx.md).
 *   gexec-submit [--socket EP] ping
 *   gexec-submit [--socket EP] stats [--json]
 *
 * Every failure ends with a one-line reason on stderr and a non-zero exit.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <gexec/gexec.h>

#define MAX_INPUTS 256

typedef struct opts {
    const char *socket;
    int timeout_ms;
    const char *graph;
    const char *in_names[MAX_INPUTS];
    const char *in_files[MAX_INPUTS];
    int n_in;
    const char *outputs[MAX_INPUTS];
    int n_outputs;
    const char *outdir;
    gx_mode mode;
    int priority;
    int64_t deadline_ms;
    long repeat;
    bool json;
    bool explain_mode;
} opts;

/* "auto, seq, ..., inter+replica": every mode of GX_MODE_LIST. */
static const char *s_mode_list(void)
{
    static char list[256];
    list[0] = '\0';
    for (int m = 0; m < GX_MODE_COUNT; m++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", m ? ", " : "",
                 gx_mode_name((gx_mode)m));
    return list;
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: gexec-submit [--socket EP] [--timeout MS] COMMAND [ARGS]\n"
            "commands:\n"
            "  run GRAPH [-i NAME=FILE.npy]... [-o DIR] [--output NAME]... [--mode M]\n"
            "            [--priority N] [--deadline-ms N] [--repeat N] [--json]\n"
            "            [--explain-mode]\n"
            "      run GRAPH and write each output to DIR/NAME.npy; GRAPH is a gexec\n"
            "      YAML graph file or an ONNX model (*.onnx); M is one of\n"
            "      %s\n"
            "      (default auto: the daemon chooses);\n"
            "      --explain-mode prints the mode used, its workers and replicas, why,\n"
            "      and the daemon's estimated time in each mode\n"
            "  load GRAPH      send the graph and print its id\n",
            s_mode_list());
    fprintf(out,
            "  ping            check that gexecd answers\n"
            "  stats [--json]  daemon statistics\n"
            "The endpoint defaults to $GEXEC_SOCKET or the daemon's default.\n");
}

static int s_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int s_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gexec-submit: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static bool s_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int s_load_graph(const char *path, gx_graph **g)
{
    char err[4096];
    size_t n = strlen(path);
    bool onnx = n > 5 && strcasecmp(path + n - 5, ".onnx") == 0;
    if ((onnx ? gx_graph_load_onnx(path, g, err, sizeof err)
              : gx_graph_load_yaml(path, g, err, sizeof err)) < 0)
        return s_die("%s", err);
    return 0;
}

static gx_client *s_connect(const opts *o)
{
    char err[512];
    gx_client *c = gx_client_new(o->socket, err, sizeof err);
    if (!c) {
        s_die("%s", err);
        return NULL;
    }
    gx_client_set_timeout(c, o->timeout_ms);
    return c;
}

static int s_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void s_print_tensor(const char *name, const gx_tensor *t)
{
    char shape[128] = "[";
    for (int i = 0; i < gx_tensor_ndim(t); i++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), i ? ",%" PRId64 : "%" PRId64,
                 gx_tensor_shape(t)[i]);
    strncat(shape, "]", sizeof shape - strlen(shape) - 1);
    printf("  %s: %s %s", name, gx_dtype_name(gx_tensor_dtype(t)), shape);
    if (gx_tensor_dtype(t) == GX_F32) {
        const float *p = gx_tensor_cdata(t);
        int64_t n = gx_tensor_numel(t);
        printf(" =");
        for (int64_t i = 0; i < n && i < 8; i++)
            printf(" %.6g", (double)p[i]);
        if (n > 8)
            printf(" ...");
    }
    printf("\n");
}

/* mkdir -p */
static int s_mkdirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int s_write_outputs(const opts *o, gx_result *r)
{
    if (!o->outdir)
        return 0;
    if (s_mkdirs(o->outdir) != 0)
        return s_die("cannot create %s: %s", o->outdir, strerror(errno));
    for (size_t i = 0; i < gx_result_output_count(r); i++) {
        char path[4096], err[512], name[256];
        snprintf(name, sizeof name, "%s", gx_result_output_name(r, i));
        for (char *p = name; *p; p++)
            if (*p == '/')
                *p = '_';
        snprintf(path, sizeof path, "%s/%s.npy", o->outdir, name);
        if (gx_npy_save(path, gx_result_output(r, i), err, sizeof err) < 0)
            return s_die("%s", err);
    }
    return 0;
}

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

/* --explain-mode: how the daemon chose the job's mode, from its reply. */
static void s_explain_mode(gx_mode requested, const gx_run_info *info)
{
    printf("mode: %s (requested %s), %d worker%s, %d replica%s\n  why: %s\n", info->mode,
           gx_mode_name(requested), info->workers, info->workers == 1 ? "" : "s",
           info->replicas, info->replicas == 1 ? "" : "s", info->reason);
    int known = 0;
    for (int m = GX_MODE_AUTO + 1; m < GX_MODE_COUNT; m++)
        known += info->est_us[m] >= 0;
    if (!known) {
        printf("  estimates: none reported by the daemon\n");
        return;
    }
    printf("  estimates (completion time of this job in each mode):\n"
           "    %-15s %14s\n", "mode", "est us");
    for (int m = GX_MODE_AUTO + 1; m < GX_MODE_COUNT; m++) {
        const char *name = gx_mode_name((gx_mode)m);
        bool chosen = strcmp(name, info->mode) == 0;
        if (info->est_us[m] >= 0)
            printf("    %-15s %14.1f%s\n", name, info->est_us[m], chosen ? "  <- chosen" : "");
        else
            printf("    %-15s %14s%s\n", name, "n/a", chosen ? "  <- chosen" : "");
    }
}

static int s_cmd_run(const opts *o)
{
    gx_graph *g = NULL;
    gx_tensor *inputs[MAX_INPUTS] = {0};
    gx_client *c = NULL;
    gx_request *rq = NULL;
    gx_result *r = NULL;
    int64_t *lat = NULL;
    int ret = 1;
    char err[1024];
    gx_graph_id id;

    if (s_load_graph(o->graph, &g))
        return 1;
    for (int i = 0; i < o->n_in; i++)
        if (gx_npy_load(o->in_files[i], &inputs[i], err, sizeof err) < 0) {
            s_die("input '%s': %s", o->in_names[i], err);
            goto out;
        }
    if (!(c = s_connect(o)) || !(rq = gx_request_new()))
        goto out;
    if (gx_client_load(c, g, &id) < 0) {
        s_die("%s", gx_client_last_error(c));
        goto out;
    }
    gx_request_set_graph_id(rq, &id);
    for (int i = 0; i < o->n_in; i++)
        gx_request_add_input(rq, o->in_names[i], inputs[i]);
    for (int i = 0; i < o->n_outputs; i++)
        gx_request_add_output(rq, o->outputs[i]);
    gx_request_set_mode(rq, o->mode);
    gx_request_set_priority(rq, o->priority);
    gx_request_set_deadline_ms(rq, o->deadline_ms);

    long n = o->repeat;
    if (!(lat = calloc((size_t)n, sizeof *lat)))
        goto out;
    int64_t compute_sum = 0;
    for (long k = 0; k < n; k++) {
        gx_result_destroy(&r);
        int64_t t0 = s_now_us();
        int rc = gx_client_run(c, rq, &r);
        lat[k] = s_now_us() - t0;
        if (rc < 0) {
            if (r)
                s_die("%s: %s", gx_status_name(rc), gx_result_message(r));
            else
                s_die("%s", gx_client_last_error(c));
            goto out;
        }
        compute_sum += gx_result_info(r)->compute_us;
    }
    if (s_write_outputs(o, r))
        goto out;
    const gx_run_info *info = gx_result_info(r);
    qsort(lat, (size_t)n, sizeof *lat, s_cmp_i64);
    int64_t p50 = lat[(n - 1) / 2], p99 = lat[(size_t)((double)(n - 1) * 0.99)];
    if (o->json) {
        printf("{\"graph_id\":\"%s\",\"requested_mode\":\"%s\",\"mode\":", id.hex,
               gx_mode_name(o->mode));
        s_json_str(info->mode);
        printf(",\"device\":");
        s_json_str(info->device);
        printf(",\"workers\":%d,\"replicas\":%d,\"reason\":", info->workers, info->replicas);
        s_json_str(info->reason);
        printf(",\"estimates\":{");
        for (int m = GX_MODE_AUTO + 1, k = 0; m < GX_MODE_COUNT; m++)
            if (info->est_us[m] >= 0)
                printf("%s\"%s\":%.1f", k++ ? "," : "", gx_mode_name((gx_mode)m), info->est_us[m]);
        printf("},\"queue_us\":%" PRId64 ",\"compute_us\":%" PRId64 ",\"compile_us\":%" PRId64
               ",\"repeat\":%ld,\"latency_us\":{\"p50\":%" PRId64 ",\"p99\":%" PRId64
               ",\"min\":%" PRId64 ",\"max\":%" PRId64 "},\"outputs\":[",
               info->queue_us, info->compute_us, info->compile_us, n, p50, p99, lat[0], lat[n - 1]);
        for (size_t i = 0; i < gx_result_output_count(r); i++) {
            const gx_tensor *t = gx_result_output(r, i);
            printf("%s{\"name\":", i ? "," : "");
            s_json_str(gx_result_output_name(r, i));
            printf(",\"dtype\":\"%s\",\"shape\":[", gx_dtype_name(gx_tensor_dtype(t)));
            for (int d = 0; d < gx_tensor_ndim(t); d++)
                printf(d ? ",%" PRId64 : "%" PRId64, gx_tensor_shape(t)[d]);
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("graph %s: %zu output%s\n", id.hex, gx_result_output_count(r),
               gx_result_output_count(r) == 1 ? "" : "s");
        for (size_t i = 0; i < gx_result_output_count(r); i++)
            s_print_tensor(gx_result_output_name(r, i), gx_result_output(r, i));
        if (o->outdir) {
            size_t len = strlen(o->outdir);
            printf("outputs written to %s%s\n", o->outdir, len && o->outdir[len - 1] == '/' ? "" : "/");
        }
        printf("ran: mode=%s device=%s workers=%d replicas=%d queue=%" PRId64 "us compute=%" PRId64
               "us compile=%" PRId64 "us\n",
               info->mode, info->device, info->workers, info->replicas, info->queue_us,
               info->compute_us, info->compile_us);
        if (o->explain_mode)
            s_explain_mode(o->mode, info);
        else
            printf("  why: %s\n", info->reason);
        if (n > 1)
            printf("latency over %ld runs: p50=%" PRId64 "us p99=%" PRId64 "us min=%" PRId64
                   "us max=%" PRId64 "us (mean compute %" PRId64 "us)\n",
                   n, p50, p99, lat[0], lat[n - 1], compute_sum / n);
    }
    ret = 0;
out:
    free(lat);
    gx_result_destroy(&r);
    gx_request_destroy(&rq);
    gx_client_destroy(&c);
    for (int i = 0; i < o->n_in; i++)
        gx_tensor_destroy(&inputs[i]);
    gx_graph_destroy(&g);
    return ret;
}

static int s_cmd_load(const opts *o)
{
    gx_graph *g = NULL;
    gx_graph_id id;
    if (s_load_graph(o->graph, &g))
        return 1;
    gx_client *c = s_connect(o);
    int ret = 1;
    if (c && gx_client_load(c, g, &id) == GX_OK) {
        printf("%s\n", id.hex);
        ret = 0;
    } else if (c) {
        s_die("%s", gx_client_last_error(c));
    }
    gx_client_destroy(&c);
    gx_graph_destroy(&g);
    return ret;
}

static int s_cmd_ping(const opts *o)
{
    gx_client *c = s_connect(o);
    if (!c)
        return 1;
    int64_t t0 = s_now_us();
    int rc = gx_client_ping(c);
    int64_t dt = s_now_us() - t0;
    if (rc == GX_OK)
        printf("pong in %" PRId64 " us\n", dt);
    else
        s_die("%s", gx_client_last_error(c));
    gx_client_destroy(&c);
    return rc == GX_OK ? 0 : 1;
}

static int s_cmd_stats(const opts *o)
{
    gx_client *c = s_connect(o);
    char *json = NULL;
    if (!c)
        return 1;
    int rc = gx_client_stats(c, &json);
    if (rc < 0) {
        s_die("%s", gx_client_last_error(c));
    } else if (o->json) {
        printf("%s\n", json);
    } else {
        /* one "key: value" per line from the flat JSON object */
        bool in_str = false;
        for (const char *p = json + 1; *p && p[1]; p++) {
            if (*p == '"' && p[-1] != '\\') {
                in_str = !in_str;
                continue;
            }
            if (!in_str && *p == ',')
                putchar('\n');
            else if (!in_str && *p == ':')
                fputs(": ", stdout);
            else
                putchar(*p);
        }
        putchar('\n');
    }
    free(json);
    gx_client_destroy(&c);
    return rc == GX_OK ? 0 : 1;
}

/* Options may come before or after the command (getopt permutes argv). */
int main(int argc, char **argv)
{
    enum { OPT_MODE = 256, OPT_PRIO, OPT_DEADLINE, OPT_REPEAT, OPT_JSON, OPT_TIMEOUT, OPT_OUTPUT,
           OPT_EXPLAIN };
    static const struct option lopts[] = {
        {"socket", required_argument, NULL, 's'},   {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"input", required_argument, NULL, 'i'},    {"outdir", required_argument, NULL, 'o'},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"mode", required_argument, NULL, OPT_MODE}, {"priority", required_argument, NULL, OPT_PRIO},
        {"deadline-ms", required_argument, NULL, OPT_DEADLINE},
        {"repeat", required_argument, NULL, OPT_REPEAT}, {"json", no_argument, NULL, OPT_JSON},
        {"explain-mode", no_argument, NULL, OPT_EXPLAIN},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    opts o = {.timeout_ms = 60000, .mode = GX_MODE_AUTO, .repeat = 1};
    long v;
    int c;
    while ((c = getopt_long(argc, argv, "s:i:o:h", lopts, NULL)) != -1) {
        switch (c) {
        case 's': o.socket = optarg; break;
        case 'i': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1])
                return s_die("-i expects NAME=FILE.npy, got '%s'", optarg);
            if (o.n_in == MAX_INPUTS)
                return s_die("too many inputs (at most %d)", MAX_INPUTS);
            *eq = '\0';
            o.in_names[o.n_in] = optarg;
            o.in_files[o.n_in++] = eq + 1;
            break;
        }
        case 'o': o.outdir = optarg; break;
        case OPT_OUTPUT:
            if (o.n_outputs == MAX_INPUTS)
                return s_die("too many --output names");
            o.outputs[o.n_outputs++] = optarg;
            break;
        case OPT_MODE:
            if (gx_mode_parse(optarg, &o.mode) < 0)
                return s_die("unknown mode '%s' (one of: %s)", optarg, s_mode_list());
            break;
        case OPT_PRIO:
            if (!s_parse_long(optarg, -100, 100, &v))
                return s_die("--priority expects an integer in [-100, 100], got '%s'", optarg);
            o.priority = (int)v;
            break;
        case OPT_DEADLINE:
            if (!s_parse_long(optarg, 0, 86400000L * 365, &v))
                return s_die("--deadline-ms expects a non-negative integer, got '%s'", optarg);
            o.deadline_ms = v;
            break;
        case OPT_REPEAT:
            if (!s_parse_long(optarg, 1, 100000000L, &v))
                return s_die("--repeat expects a positive integer, got '%s'", optarg);
            o.repeat = v;
            break;
        case OPT_TIMEOUT:
            if (!s_parse_long(optarg, -1, 86400000L, &v))
                return s_die("--timeout expects milliseconds (-1: forever), got '%s'", optarg);
            o.timeout_ms = (int)v;
            break;
        case OPT_JSON: o.json = true; break;
        case OPT_EXPLAIN: o.explain_mode = true; break;
        case 'h': s_usage(stdout); return 0;
        default: s_usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        s_usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind++];
    int operands = argc - optind;
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "load") == 0) {
        if (operands != 1)
            return s_die("%s expects exactly one GRAPH file (got %d operands)", cmd, operands);
        o.graph = argv[optind];
        return strcmp(cmd, "run") == 0 ? s_cmd_run(&o) : s_cmd_load(&o);
    }
    if (operands != 0)
        return s_die("%s takes no operands ('%s' is unexpected)", cmd, argv[optind]);
    if (strcmp(cmd, "ping") == 0)
        return s_cmd_ping(&o);
    if (strcmp(cmd, "stats") == 0)
        return s_cmd_stats(&o);
    s_usage(stderr);
    return s_die("unknown command '%s'", cmd);
}
