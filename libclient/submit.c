/*
 * gexec-submit: the command line client.
 *
 *   gexec-submit [--socket EP] [--timeout MS] run GRAPH|--name NAME [-i NAME=FILE.npy]... [-o DIR]
 *                [--output NAME]... [--mode M] [--priority N] [--deadline-ms N]
 *                [--repeat N] [--json] [--explain-mode]
 *   gexec-submit [--socket EP] load GRAPH
 *   gexec-submit [--socket EP] explain GRAPH [-i NAME=FILE.npy]... [--json]
 *   gexec-submit explain --artifact FILE [--json]
 *   gexec-submit [--socket EP] compile GRAPH [-i NAME=FILE.npy]... [--shape NAME=DIMS]... -o FILE
 *
 * GRAPH is a YAML graph file (docs/graph-format.md) or, named *.onnx, an
 * ONNX model (docs/onnx.md).
 *   gexec-submit [--socket EP] ping
 *   gexec-submit [--socket EP] stats [--json | --prometheus]
 *   gexec-submit [--socket EP] perf GRAPH [-i NAME=FILE.npy]... [--concurrency N | --rate R]
 *                [--duration S] [--mode M] [--json]
 *   gexec-submit [--socket EP] load GRAPH [--name NAME]
 *   gexec-submit [--socket EP] list [--json]
 *   gexec-submit [--socket EP] unload ID|NAME
 *   gexec-submit --version
 *
 * Every failure ends with a one-line reason on stderr and a non-zero exit.
 */
#include <config.h>

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

#include "libclient/artifact_read.h"
#include "core/hist.h"
#include "core/json.h"
#include "libclient/perf.h"

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
    bool prometheus; /* stats --prometheus */
    long concurrency; /* perf: 0 = not given */
    double rate;      /* perf: requests/s; 0 = closed loop */
    double duration_s;
    const char *name; /* load --name */
    const char *artifact; /* explain --artifact */
    const char *shape_names[MAX_INPUTS]; /* --shape NAME=DIMS */
    int64_t shapes[MAX_INPUTS][GX_MAX_DIMS];
    int shape_ndim[MAX_INPUTS];
    int n_shapes;
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
            "  run GRAPH|--name NAME [-i NAME=FILE.npy]... [-o DIR] [--output NAME]...\n"
            "            [--mode M] [--priority N] [--deadline-ms N] [--repeat N] [--json]\n"
            "            [--explain-mode]\n"
            "      run GRAPH and write each output to DIR/NAME.npy; GRAPH is a gexec\n"
            "      YAML graph file or an ONNX model (*.onnx); --name runs the graph the\n"
            "      daemon has under NAME (load --name, graphs.preload); M is one of\n"
            "      %s\n"
            "      (default auto: the daemon chooses);\n"
            "      --explain-mode prints the mode used, its workers and replicas, why,\n"
            "      and the daemon's estimated time in each mode\n"
            "  load GRAPH [--name NAME]\n"
            "      send the graph and print its id; --name also loads it under NAME\n"
            "  list [--json]   the loaded graphs: id, name, inputs, outputs, ready, plans, memory, jobs\n"
            "  unload ID|NAME  drop a loaded graph (its running and queued jobs finish)\n"
            "  explain GRAPH [-i NAME=FILE.npy]... [--json]\n"
            "      print the plan the daemon compiles for GRAPH and these inputs (inputs\n"
            "      left out take their declared shapes): steps and kernels, buffers and\n"
            "      arena sizes, batch and out-of-order analysis; nothing runs.\n"
            "      --json prints the daemon's JSON (docs/protocol.md, EXPLAIN)\n"
            "  explain --artifact FILE [--json]\n"
            "      print a compiled plan's file (gexecd's artifacts.dir, or compile -o):\n"
            "      header and checksum, graph, devices, arena sizes, steps with their\n"
            "      kernels, values and the constants it holds; read here, no daemon\n"
            "  compile GRAPH [-i NAME=FILE.npy]... [--shape NAME=DIMS]... -o FILE\n"
            "      write the artifact of the plan the daemon compiles (or has) for GRAPH\n"
            "      and these inputs to FILE, without running it: the file gexecd keeps in\n"
            "      its artifacts.dir (the name it gives it is printed); --shape NAME=1x3x8x8\n"
            "      plans an input by its shape alone (explain, impls and tune take it\n"
            "      too); a keyed input needs its values (-i)\n"
            "  impls GRAPH [-i NAME=FILE.npy]... [--json]\n"
            "      the implementation each MatMul and Gemm of the plan runs, and why\n"
            "      (default, or the tune registry's record: docs/tune.md)\n"
            "  tune GRAPH [-i NAME=FILE.npy]... [--json]\n"
            "      explore the plan's MatMul and Gemm signatures now (on the daemon's idle\n"
            "      time), show the progress, then what the plan runs (--timeout bounds\n"
            "      the wait)\n",
            s_mode_list());
    fprintf(out,
            "  perf GRAPH [-i NAME=FILE.npy]... [--concurrency N | --rate R] [--duration S]\n"
            "            [--mode M] [--json]\n"
            "      load generator: N clients each sending the next request when the last\n"
            "      is answered (default 1), or R requests/s on a fixed schedule (by at\n"
            "      most --concurrency clients, default 16), for S seconds (default 5);\n"
            "      a progress line on stderr, then throughput, p50/p90/p99/p99.9 latency\n"
            "      and its split into client, queue, compile and compute time\n"
            "  ping            check that gexecd answers\n"
            "  stats [--json | --prometheus]\n"
            "      daemon statistics, with p50/p90/p99 of queue wait, compute and end to\n"
            "      end latency per mode and per graph; --prometheus prints the text\n"
            "      exposition metrics.listen serves (docs/metrics.md)\n"
            "  keygen [-o PREFIX]\n"
            "      write a new CURVE key pair for tcp endpoints (docs/security.md):\n"
            "      PREFIX.key, the secret (mode 0600), and PREFIX.pub (default PREFIX:\n"
            "      gexec-curve); existing files are not replaced\n"
            "  --version       print gexec-submit's and libgexec's version\n"
            "The endpoint defaults to $GEXEC_SOCKET or the daemon's default. A tcp://\n"
            "endpoint uses CURVE when $GEXEC_SERVER_KEY and $GEXEC_CLIENT_SECRET are\n"
            "set (a key or its file each).\n");
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
    } else if (gx_tensor_dtype(t) == GX_STRING) { /* quoted, bytes past ASCII escaped */
        int64_t n = gx_tensor_numel(t);
        printf(" =");
        for (int64_t i = 0; i < n && i < 8; i++) {
            size_t len;
            const unsigned char *p = (const unsigned char *)gx_tensor_string(t, i, &len);
            printf(" \"");
            for (size_t k = 0; k < len && k < 64; k++)
                printf(p[k] == '"' || p[k] == '\\' ? "\\%c" : p[k] >= 0x20 && p[k] < 0x7f ? "%c"
                                                                                   : "\\x%02x",
                       p[k]);
            printf(len > 64 ? "...\"" : "\"");
        }
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

    if (o->graph && s_load_graph(o->graph, &g))
        return 1;
    for (int i = 0; i < o->n_in; i++)
        if (gx_npy_load(o->in_files[i], &inputs[i], err, sizeof err) < 0) {
            s_die("input '%s': %s", o->in_names[i], err);
            goto out;
        }
    if (!(c = s_connect(o)) || !(rq = gx_request_new()))
        goto out;
    if (!o->graph) { /* run --name: the graph loaded under it (LOAD --name, graphs.preload) */
        snprintf(id.hex, sizeof id.hex, "%s", o->name);
        if (gx_request_set_graph_name(rq, o->name) < 0) {
            s_die("--name '%s': expected 1 to 63 letters, digits, '.', '_' and '-'", o->name);
            goto out;
        }
    } else if (gx_client_load(c, g, &id) < 0) {
        s_die("%s", gx_client_last_error(c));
        goto out;
    } else {
        gx_request_set_graph_id(rq, &id);
    }
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
               ",\"device_us\":%" PRId64 ",\"repeat\":%ld,\"latency_us\":{\"p50\":%" PRId64 ",\"p99\":%" PRId64
               ",\"min\":%" PRId64 ",\"max\":%" PRId64 "},\"outputs\":[",
               info->queue_us, info->compute_us, info->compile_us, info->device_us, n, p50, p99,
               lat[0], lat[n - 1]);
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
        printf("ran: mode=%s device=%s workers=%d replicas=%d batched=%d queue=%" PRId64
               "us compute=%" PRId64 "us compile=%" PRId64 "us",
               info->mode, info->device, info->workers, info->replicas, info->batched,
               info->queue_us, info->compute_us, info->compile_us);
        if (info->device_us > 0) /* measured on a GPU */
            printf(" (on the device %" PRId64 "us)", info->device_us);
        printf("\n");
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

/* ---- explain: the daemon's JSON as tables ---- */

#define S_MAX_COLS 12

/* A table whose columns are as wide as their widest cell. */
typedef struct s_table {
    int ncols;
    const char *head[S_MAX_COLS];
    bool right[S_MAX_COLS]; /* right-aligned (numbers) */
    char **cells;           /* row-major, malloc'ed */
    size_t nrows, cap;
} s_table;

static void s_table_row(s_table *t, ...) __attribute__((sentinel));

/* Append one row: ncols strings (copied), then NULL. */
static void s_table_row(s_table *t, ...)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, cap * (size_t)t->ncols * sizeof *cells);
        if (!cells)
            return;
        t->cells = cells;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, t);
    for (int c = 0; c < t->ncols; c++) {
        const char *s = va_arg(ap, const char *);
        t->cells[t->nrows * (size_t)t->ncols + (size_t)c] = strdup(s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

static void s_table_print(s_table *t, const char *indent)
{
    int w[S_MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
            if (s && (int)strlen(s) > w[c])
                w[c] = (int)strlen(s);
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        fputs(indent, stdout);
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r ? t->cells[(r - 1) * (size_t)t->ncols + (size_t)c] : t->head[c];
            bool last = c + 1 == t->ncols;
            if (!s)
                s = "?";
            if (t->right[c])
                printf("%*s", w[c], s);
            else if (last)
                fputs(s, stdout); /* no trailing blanks */
            else
                printf("%-*s", w[c], s);
            if (!last)
                fputs("  ", stdout);
        }
        putchar('\n');
    }
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

/* Bytes for people: 512 B, 1.5 KiB, 3.0 MiB. */
static const char *s_bytes(double n, char *buf, size_t len)
{
    if (n < 1024)
        snprintf(buf, len, "%.0f B", n);
    else if (n < 1024.0 * 1024)
        snprintf(buf, len, "%.1f KiB", n / 1024);
    else if (n < 1024.0 * 1024 * 1024)
        snprintf(buf, len, "%.1f MiB", n / (1024.0 * 1024));
    else
        snprintf(buf, len, "%.1f GiB", n / (1024.0 * 1024 * 1024));
    return buf;
}

/* A JSON integer (or null: "-") as text. */
static const char *s_int(const gx_json *v, char *buf, size_t len)
{
    if (!v || v->type != GX_JSON_NUM)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.0f", v->num);
    return buf;
}

/* "[1,4]", or "dynamic" for a shape known at run time. */
static const char *s_shape_str(const gx_json *v, char *buf, size_t len)
{
    if (!v || v->type != GX_JSON_ARR) {
        snprintf(buf, len, "dynamic");
        return buf;
    }
    size_t at = (size_t)snprintf(buf, len, "[");
    for (size_t i = 0; i < v->n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%.0f", i ? "," : "",
                               gx_json_num(&v->items[i], -1));
    if (at < len)
        snprintf(buf + at, len - at, "]");
    return buf;
}

/* The strings of a JSON array joined with ", " ("-" for none, null as "(none)"). */
static const char *s_join(const gx_json *a, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < gx_json_len(a) && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                               gx_json_str(&a->items[i], "(none)"));
    if (!at)
        snprintf(buf, len, "-");
    return buf;
}

static void s_x_header(const gx_json *j)
{
    const gx_json *sm = gx_json_get(j, "summary");
    printf("plan of graph '%s': %.0f steps (%.0f folded, %.0f dynamic, %.0f control flow), "
           "%.4g flops, estimated %.4g us\n",
           gx_json_str(gx_json_get(j, "graph"), "?"), gx_json_num(gx_json_get(sm, "steps"), 0),
           gx_json_num(gx_json_get(sm, "folded"), 0), gx_json_num(gx_json_get(sm, "dynamic"), 0),
           gx_json_num(gx_json_get(sm, "control"), 0), gx_json_num(gx_json_get(sm, "flops"), 0),
           gx_json_num(gx_json_get(sm, "est_us"), 0));
}

static void s_x_io(const gx_json *j)
{
    static const char *const keys[] = {"inputs", "outputs"};
    for (int k = 0; k < 2; k++) {
        const gx_json *a = gx_json_get(j, keys[k]);
        s_table t = {.ncols = 4, .head = {"name", "dtype", "shape", "bytes"},
                     .right = {false, false, false, true}};
        for (size_t i = 0; i < gx_json_len(a); i++) {
            const gx_json *v = &a->items[i];
            char sh[256], nb[32];
            s_table_row(&t, gx_json_str(gx_json_get(v, "name"), "?"),
                        gx_json_str(gx_json_get(v, "dtype"), "-"),
                        s_shape_str(gx_json_get(v, "shape"), sh, sizeof sh),
                        s_int(gx_json_get(v, "bytes"), nb, sizeof nb), NULL);
        }
        printf("\n%s:\n", keys[k]);
        s_table_print(&t, "  ");
    }
}

static void s_x_steps(const gx_json *j)
{
    const gx_json *a = gx_json_get(j, "steps");
    s_table t = {.ncols = 10,
                 .head = {"#", "node", "op", "kernel", "inputs", "outputs", "est us", "flops",
                          "preds", "succ"},
                 .right = {true, false, false, false, false, false, true, true, true, false}};
    for (size_t i = 0; i < gx_json_len(a); i++) {
        const gx_json *s = &a->items[i];
        char idx[32], kern[96], in[512], out[512], est[32], fl[32], pr[32], succ[256];
        const char *run = gx_json_str(gx_json_get(s, "run"), "?");
        const char *k = gx_json_str(gx_json_get(s, "kernel"), NULL);
        if (!k)
            snprintf(kern, sizeof kern, "%s", run); /* folded, control flow */
        else if (strcmp(run, "static") != 0)
            snprintf(kern, sizeof kern, "%s (%s)", k, run);
        else
            snprintf(kern, sizeof kern, "%s", k);
        s_join(gx_json_get(s, "inputs"), in, sizeof in);
        if (gx_json_len(gx_json_get(s, "captured"))) {
            char cap[256];
            size_t at = strlen(in);
            snprintf(in + at, sizeof in - at, " (captures %s)",
                     s_join(gx_json_get(s, "captured"), cap, sizeof cap));
        }
        snprintf(est, sizeof est, "%.3g", gx_json_num(gx_json_get(s, "est_us"), 0));
        snprintf(fl, sizeof fl, "%.4g", gx_json_num(gx_json_get(s, "flops"), 0));
        const gx_json *sa = gx_json_get(s, "succ");
        size_t at = 0;
        succ[0] = '\0';
        for (size_t q = 0; q < gx_json_len(sa) && at < sizeof succ; q++)
            at += (size_t)snprintf(succ + at, sizeof succ - at, "%s%.0f", q ? "," : "",
                                   gx_json_num(&sa->items[q], -1));
        s_table_row(&t, s_int(gx_json_get(s, "index"), idx, sizeof idx),
                    gx_json_str(gx_json_get(s, "node"), "?"),
                    gx_json_str(gx_json_get(s, "op"), "?"),
                    kern, in, s_join(gx_json_get(s, "outputs"), out, sizeof out), est, fl,
                    s_int(gx_json_get(s, "preds"), pr, sizeof pr), at ? succ : "-", NULL);
    }
    printf("\nsteps (in run order; preds: steps that must finish first, succ: steps waiting):\n");
    s_table_print(&t, "  ");
}

static void s_x_buffers(const gx_json *j)
{
    const gx_json *a = gx_json_get(j, "buffers"), *m = gx_json_get(j, "memory");
    char b1[32], b2[32];
    printf("\nbuffers (offsets in the step-order arena, peak %s; no reuse would need %s):\n",
           s_bytes(gx_json_num(gx_json_get(m, "arena_bytes"), 0), b1, sizeof b1),
           s_bytes(gx_json_num(gx_json_get(m, "naive_bytes"), 0), b2, sizeof b2));
    s_table t = {.ncols = 9,
                 .head = {"value", "kind", "dtype", "shape", "buffer", "bytes", "offset",
                          "dag offset", "live (steps)"},
                 .right = {false, false, false, false, true, true, true, true, false}};
    for (size_t i = 0; i < gx_json_len(a); i++) {
        const gx_json *v = &a->items[i];
        char sh[256], buf[32], nb[32], off[32], doff[32], live[64];
        double def = gx_json_num(gx_json_get(v, "def"), -1),
               last = gx_json_num(gx_json_get(v, "last_use"), -1);
        bool out = gx_json_bool(gx_json_get(v, "graph_output"), false);
        if (def < 0 && out)
            snprintf(live, sizeof live, "start..end");
        else if (def < 0)
            snprintf(live, sizeof live, "start..%.0f", last);
        else
            snprintf(live, sizeof live, out ? "%.0f..end" : "%.0f..%.0f", def, last);
        s_table_row(&t, gx_json_str(gx_json_get(v, "value"), "?"),
                    gx_json_str(gx_json_get(v, "kind"), "?"),
                    gx_json_str(gx_json_get(v, "dtype"), "-"),
                    s_shape_str(gx_json_get(v, "shape"), sh, sizeof sh),
                    s_int(gx_json_get(v, "buffer"), buf, sizeof buf),
                    s_int(gx_json_get(v, "bytes"), nb, sizeof nb),
                    s_int(gx_json_get(v, "offset"), off, sizeof off),
                    s_int(gx_json_get(v, "dag_offset"), doff, sizeof doff), live, NULL);
    }
    s_table_print(&t, "  ");
}

static void s_x_memory(const gx_json *j)
{
    const gx_json *m = gx_json_get(j, "memory");
    char b1[32], b2[32], b3[32];
    printf("\nmemory: arena %s in step order (%.0f buffers; %s without reuse)\n",
           s_bytes(gx_json_num(gx_json_get(m, "arena_bytes"), 0), b1, sizeof b1),
           gx_json_num(gx_json_get(m, "buffers"), 0),
           s_bytes(gx_json_num(gx_json_get(m, "naive_bytes"), 0), b2, sizeof b2));
    if (gx_json_bool(gx_json_get(m, "dag_ok"), false))
        printf("  out of order (inter-op): arena %s, at most %.0f steps at one level\n",
               s_bytes(gx_json_num(gx_json_get(m, "dag_arena_bytes"), 0), b3, sizeof b3),
               gx_json_num(gx_json_get(m, "width"), 0));
    else
        printf("  out of order (inter-op): no, %s\n",
               gx_json_str(gx_json_get(m, "dag_why"), "(no reason given)"));
}

static void s_x_batch(const gx_json *j)
{
    const gx_json *b = gx_json_get(j, "batch");
    double batch = gx_json_num(gx_json_get(b, "batch"), 0);
    if (batch > 0)
        printf("\nbatch: can split into replicas along axis 0 (batch %.0f)\n", batch);
    else
        printf("\nbatch: no replica split: %s (%.0f steps mix samples)\n",
               gx_json_str(gx_json_get(b, "why"), "(no reason given)"),
               gx_json_num(gx_json_get(b, "sync_steps"), 0));
}

static void s_x_keyed(const gx_json *j)
{
    const gx_json *k = gx_json_get(j, "keyed"), *a = gx_json_get(k, "inputs");
    printf("\nkeyed inputs (values are part of the plan's signature):%s\n",
           gx_json_len(a) ? "" : " none");
    for (size_t i = 0; i < gx_json_len(a); i++) {
        const gx_json *v = gx_json_get(&a->items[i], "value");
        printf("  %s = [", gx_json_str(gx_json_get(&a->items[i], "name"), "?"));
        for (size_t q = 0; q < gx_json_len(v); q++)
            if (v->items[q].type == GX_JSON_NUM)
                printf("%s%.10g", q ? ", " : "", v->items[q].num);
            else
                printf("%s%s", q ? ", " : "", v->items[q].type == GX_JSON_BOOL
                                                  ? (v->items[q].b ? "true" : "false") : "?");
        printf("]\n");
    }
    if (gx_json_bool(gx_json_get(k, "values_missing"), false))
        printf("  values not given for inputs that shapes depend on: the steps reading them "
               "run dynamically\n");
}

static void s_x_folded(const gx_json *j)
{
    const gx_json *a = gx_json_get(j, "folded");
    printf("\nfolded at compile time (never run per job):%s\n", gx_json_len(a) ? "" : " none");
    for (size_t i = 0; i < gx_json_len(a); i++) {
        char out[512];
        printf("  step %.0f %s (%s) -> %s\n", gx_json_num(gx_json_get(&a->items[i], "index"), -1),
               gx_json_str(gx_json_get(&a->items[i], "node"), "?"),
               gx_json_str(gx_json_get(&a->items[i], "op"), "?"),
               s_join(gx_json_get(&a->items[i], "outputs"), out, sizeof out));
    }
}

/* The widen pass: float16/bfloat16 steps run on float32 kernels, and
 * those kept in half for a device. Printed only for a plan that has any. */
static void s_x_widen(const gx_json *j)
{
    const gx_json *w = gx_json_get(j, "widen"), *a = gx_json_get(w, "steps");
    const gx_json *dh = gx_json_get(w, "device_half");
    if (gx_json_len(dh))
        printf("\nkept in half precision for a device (no CPU kernel in that dtype):\n");
    for (size_t i = 0; i < gx_json_len(dh); i++)
        printf("  %s (%s), %s on %s\n", gx_json_str(gx_json_get(&dh->items[i], "node"), "?"),
               gx_json_str(gx_json_get(&dh->items[i], "op"), "?"),
               gx_json_str(gx_json_get(&dh->items[i], "dtype"), "?"),
               gx_json_str(gx_json_get(&dh->items[i], "device"), "?"));
    if (!gx_json_len(a))
        return;
    char cb[32];
    printf("\ncomputed in float32 (%.0f Cast steps, %.0f constants converted once, %s):\n",
           gx_json_num(gx_json_get(w, "casts"), 0), gx_json_num(gx_json_get(w, "constants"), 0),
           s_bytes(gx_json_num(gx_json_get(w, "constant_bytes"), 0), cb, sizeof cb));
    for (size_t i = 0; i < gx_json_len(a); i++)
        printf("  %s (%s), %s: %s\n", gx_json_str(gx_json_get(&a->items[i], "node"), "?"),
               gx_json_str(gx_json_get(&a->items[i], "op"), "?"),
               gx_json_str(gx_json_get(&a->items[i], "from"), "?"),
               gx_json_str(gx_json_get(&a->items[i], "why"), "?"));
}

static void s_x_partition(const gx_json *j)
{
    const gx_json *pt = gx_json_get(j, "partition"), *d = gx_json_get(pt, "devices");
    const gx_json *parts = gx_json_get(pt, "parts"), *fell = gx_json_get(pt, "fell");
    double copies = gx_json_num(gx_json_get(pt, "copies"), 0);
    char devs[256];
    printf("\ndevices offered: %s; %zu partition%s, %.0f cop%s between devices\n",
           s_join(d, devs, sizeof devs), gx_json_len(parts), gx_json_len(parts) == 1 ? "" : "s",
           copies, copies == 1 ? "y" : "ies");
    for (size_t i = 0; i < gx_json_len(parts); i++) {
        const gx_json *q = &parts->items[i];
        printf("  %s: %.0f nodes, entry step %.0f, exit step %.0f\n",
               gx_json_str(gx_json_get(q, "device"), "?"), gx_json_num(gx_json_get(q, "steps"), 0),
               gx_json_num(gx_json_get(q, "entry"), -1), gx_json_num(gx_json_get(q, "exit"), -1));
    }
    for (size_t i = 0; i < gx_json_len(fell); i++) {
        const gx_json *q = &fell->items[i];
        printf("  fell out of %s: %s: %s\n", gx_json_str(gx_json_get(q, "device"), "?"),
               gx_json_str(gx_json_get(q, "node"), "?"), gx_json_str(gx_json_get(q, "why"), "?"));
    }
}

static void s_x_fusion(const gx_json *j)
{
    const gx_json *f = gx_json_get(j, "fusion"), *g = gx_json_get(f, "groups");
    const char *off = gx_json_str(gx_json_get(f, "off"), NULL);
    double removed = gx_json_num(gx_json_get(f, "values_removed"), 0);
    if (off) {
        printf("\nfusion: %s\n", off);
        return;
    }
    printf("\nfusion: %.0f value%s left the arena\n", removed, removed == 1 ? "" : "s");
    for (size_t i = 0; i < gx_json_len(g); i++) {
        const gx_json *q = &g->items[i];
        char nodes[512], ops[512];
        const char *why = gx_json_str(gx_json_get(q, "why_not_more"), "");
        printf("  step %.0f: %s (%s)%s%s\n", gx_json_num(gx_json_get(q, "step"), -1),
               s_join(gx_json_get(q, "nodes"), nodes, sizeof nodes),
               s_join(gx_json_get(q, "ops"), ops, sizeof ops), why[0] ? "; not more: " : "", why);
    }
}

static void s_x_rewrite(const gx_json *j)
{
    const gx_json *r = gx_json_get(j, "rewrite"), *ap = gx_json_get(r, "applied");
    const gx_json *de = gx_json_get(r, "declined");
    const char *off = gx_json_str(gx_json_get(r, "off"), NULL);
    if (off) {
        printf("\nrewrite: %s\n", off);
        return;
    }
    printf("\nrewrite: %zu applied, %zu declined\n", gx_json_len(ap), gx_json_len(de));
    for (size_t i = 0; i < gx_json_len(ap); i++) {
        const gx_json *q = &ap->items[i];
        printf("  %s: %s\n", gx_json_str(gx_json_get(q, "rule"), "?"),
               gx_json_str(gx_json_get(q, "what"), "?"));
    }
    for (size_t i = 0; i < gx_json_len(de); i++) {
        const gx_json *q = &de->items[i];
        printf("  not %s at %s: %s\n", gx_json_str(gx_json_get(q, "rule"), "?"),
               gx_json_str(gx_json_get(q, "node"), "?"), gx_json_str(gx_json_get(q, "why"), "?"));
    }
}

static void s_x_prepared(const gx_json *j)
{
    const gx_json *p = gx_json_get(j, "prepared"), *c = gx_json_get(p, "constants");
    if (!gx_json_len(c))
        return;
    printf("\nprepared constants: %.0f bytes", gx_json_num(gx_json_get(p, "bytes"), 0));
    if (gx_json_num(gx_json_get(p, "freed"), 0) > 0) /* (no step reads them now) */
        printf("; %.0f constants freed after preparing (%.0f bytes)",
               gx_json_num(gx_json_get(p, "freed"), 0), gx_json_num(gx_json_get(p, "freed_bytes"), 0));
    printf("\n");
    for (size_t i = 0; i < gx_json_len(c); i++) {
        const gx_json *q = &c->items[i];
        printf("  %s: %s as %s, %.0f bytes: %s\n", gx_json_str(gx_json_get(q, "node"), "?"),
               gx_json_str(gx_json_get(q, "from"), "?"), gx_json_str(gx_json_get(q, "value"), "?"),
               gx_json_num(gx_json_get(q, "bytes"), 0), gx_json_str(gx_json_get(q, "what"), "?"));
    }
}

/* The implementation each MatMul and Gemm runs and where the choice came
 * from (docs/tune.md). */
static void s_x_impls(const gx_json *j)
{
    const gx_json *im = gx_json_get(j, "implementations");
    if (!gx_json_len(im))
        return;
    printf("\nimplementations (docs/tune.md):\n");
    s_table t = {.ncols = 6,
                 .head = {"node", "op", "impl", "source", "ns", "signature"},
                 .right = {false, false, false, false, true, false}};
    for (size_t i = 0; i < gx_json_len(im); i++) {
        const gx_json *q = &im->items[i], *ns = gx_json_get(q, "ns");
        char impl[64], n[32] = "-";
        snprintf(impl, sizeof impl, "%s@%.0f", gx_json_str(gx_json_get(q, "impl"), "?"),
                 gx_json_num(gx_json_get(q, "version"), 0));
        if (ns && ns->type == GX_JSON_NUM)
            snprintf(n, sizeof n, "%.0f", ns->num);
        s_table_row(&t, gx_json_str(gx_json_get(q, "node"), "?"),
                    gx_json_str(gx_json_get(q, "op"), "?"), impl,
                    gx_json_str(gx_json_get(q, "source"), "?"), n,
                    gx_json_str(gx_json_get(q, "signature"), "-"), NULL);
    }
    s_table_print(&t, "  ");
}

/* A cost in microseconds, or "-" where the layout has no kernel. */
static const char *s_us(const gx_json *v, char *buf, size_t len)
{
    if (!v || v->type != GX_JSON_NUM)
        return "-";
    snprintf(buf, len, "%.3g", v->num);
    return buf;
}

static void s_x_layout(const gx_json *j)
{
    const gx_json *l = gx_json_get(j, "layout"), *ops = gx_json_get(l, "ops");
    const gx_json *ro = gx_json_get(l, "reorders");
    const char *off = gx_json_str(gx_json_get(l, "off"), NULL);
    if (off) {
        printf("\nlayout: every value plain: %s\n", off);
        return;
    }
    printf("\nlayout: expected %.4g us per job (all plain: %.4g us), %s; %zu reorder%s, %.0f "
           "constant%s rewritten\n",
           gx_json_num(gx_json_get(l, "total_us"), 0), gx_json_num(gx_json_get(l, "plain_us"), 0),
           gx_json_bool(gx_json_get(l, "exact"), false) ? "optimal" : "by descent",
           gx_json_len(ro), gx_json_len(ro) == 1 ? "" : "s",
           gx_json_num(gx_json_get(l, "constants_rewritten"), 0),
           gx_json_num(gx_json_get(l, "constants_rewritten"), 0) == 1 ? "" : "s");
    s_table t = {.ncols = 7,
                 .head = {"node", "op", "runs/job", "nchw us", "nhwc us", "nchw16c us", "chosen"},
                 .right = {false, false, true, true, true, true, false}};
    for (size_t i = 0; i < gx_json_len(ops); i++) {
        const gx_json *q = &ops->items[i], *c = gx_json_get(q, "cost_us");
        char n[32], a[32], b[32], d[32];
        snprintf(n, sizeof n, "%.3g", gx_json_num(gx_json_get(q, "count"), 1));
        s_table_row(&t, gx_json_str(gx_json_get(q, "node"), "?"),
                    gx_json_str(gx_json_get(q, "op"), "?"), n,
                    s_us(gx_json_get(c, "nchw"), a, sizeof a),
                    s_us(gx_json_get(c, "nhwc"), b, sizeof b),
                    s_us(gx_json_get(c, "nchw16c"), d, sizeof d),
                    gx_json_str(gx_json_get(q, "chosen"), "?"), NULL);
    }
    s_table_print(&t, "  ");
    for (size_t i = 0; i < gx_json_len(ops); i++) {
        const char *why = gx_json_str(gx_json_get(&ops->items[i], "why_not"), "");
        if (why[0])
            printf("  %s: %s\n", gx_json_str(gx_json_get(&ops->items[i], "node"), "?"), why);
    }
    for (size_t i = 0; i < gx_json_len(ro); i++) {
        const gx_json *q = &ro->items[i];
        printf("  reorder at step %.0f: %s %s -> %s\n", gx_json_num(gx_json_get(q, "step"), -1),
               gx_json_str(gx_json_get(q, "value"), "?"), gx_json_str(gx_json_get(q, "from"), "?"),
               gx_json_str(gx_json_get(q, "to"), "?"));
    }
}

/* The explain sections, in print order; one per section of the JSON. */
static void (*const s_explain_sections[])(const gx_json *j) = {
    s_x_header, s_x_io,    s_x_steps,  s_x_buffers,   s_x_memory,
    s_x_batch,  s_x_keyed, s_x_folded, s_x_widen, s_x_rewrite,   s_x_partition, s_x_layout,
    s_x_prepared, s_x_impls, s_x_fusion,
};

/* impls --json: the plan's implementations as a JSON array. */
static void s_impls_json(const gx_json *j)
{
    const gx_json *im = gx_json_get(j, "implementations");
    static const char *const keys[] = {"node", "op", "impl", "source", "signature"};
    putchar('[');
    for (size_t i = 0; i < gx_json_len(im); i++) {
        const gx_json *q = &im->items[i], *ns = gx_json_get(q, "ns");
        printf("%s{", i ? "," : "");
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            printf("%s\"%s\":", k ? "," : "", keys[k]);
            const char *v = gx_json_str(gx_json_get(q, keys[k]), NULL);
            if (v)
                s_json_str(v);
            else
                fputs("null", stdout);
        }
        printf(",\"version\":%.0f", gx_json_num(gx_json_get(q, "version"), 0));
        if (ns && ns->type == GX_JSON_NUM)
            printf(",\"ns\":%.0f", ns->num);
        putchar('}');
    }
    puts("]");
}

/* What explain, impls and tune print. */
typedef enum s_xwhat { S_X_EXPLAIN, S_X_IMPLS, S_X_TUNE } s_xwhat;

static int s_explain_cmd(const opts *o, s_xwhat what);

static int s_cmd_explain(const opts *o)
{
    return s_explain_cmd(o, S_X_EXPLAIN);
}

/* The "tune" map of the daemon's STATS: pending and explored, or false. */
static bool s_tune_progress(gx_client *c, double *pending, double *explored)
{
    char *json = NULL, err[256];
    if (gx_client_stats(c, &json) < 0)
        return false;
    gx_json *j = gx_json_parse(json, err, sizeof err);
    free(json);
    const gx_json *t = gx_json_get(j, "tune");
    bool ok = t && gx_json_get(t, "pending");
    if (ok) {
        *pending = gx_json_num(gx_json_get(t, "pending"), 0);
        *explored = gx_json_num(gx_json_get(t, "explored"), 0);
    }
    gx_json_destroy(&j);
    return ok;
}

/* Signatures of the plan's implementations still on the default. */
static size_t s_on_default(const gx_json *j, size_t *n_sigs)
{
    const gx_json *im = gx_json_get(j, "implementations");
    size_t n = 0;
    *n_sigs = 0;
    for (size_t i = 0; i < gx_json_len(im); i++) {
        const gx_json *q = &im->items[i];
        if (!gx_json_str(gx_json_get(q, "signature"), NULL))
            continue;
        ++*n_sigs;
        n += !strcmp(gx_json_str(gx_json_get(q, "source"), ""), "default");
    }
    return n;
}

/* tune GRAPH: TUNE, then the daemon's progress until nothing is pending,
 * then the plan's implementations once it re-planned (or the timeout). */
static int s_tune_wait(const opts *o, gx_client *c, const gx_request *rq, gx_json **j)
{
    char err[512], *json = NULL;
    size_t n_sigs;
    s_on_default(*j, &n_sigs);
    fprintf(stderr, "tune: %zu signature%s queued for exploration\n", n_sigs,
            n_sigs == 1 ? "" : "s");
    const long limit_ms = o->timeout_ms > 0 ? o->timeout_ms : 600000;
    struct timespec tick = {0, 200 * 1000 * 1000};
    double pending = 0, explored = 0, explored0 = -1;
    long waited = 0;
    for (; waited < limit_ms; waited += 200) {
        if (!s_tune_progress(c, &pending, &explored))
            return s_die("STATS: %s", gx_client_last_error(c));
        if (explored0 < 0)
            explored0 = explored;
        fprintf(stderr, "\rtune: %.0f explored, %.0f pending   ", explored - explored0, pending);
        if (pending == 0)
            break;
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "\n");
    if (pending > 0)
        return s_die("tune: %.0f signatures still pending after %ld ms (the daemon measures "
                     "on idle time only)", pending, limit_ms);
    /* the winners reach the cached plan at the daemon's next re-plan check */
    for (; waited < limit_ms; waited += 200) {
        size_t n;
        if (s_on_default(*j, &n) == 0)
            break;
        nanosleep(&tick, NULL);
        if (gx_client_explain(c, rq, &json) < 0)
            return s_die("%s", gx_client_last_error(c));
        gx_json_destroy(j);
        *j = gx_json_parse(json, err, sizeof err);
        free(json);
        if (!*j)
            return s_die("the daemon's plan does not parse: %s", err);
    }
    return 0;
}

/* The request of explain, impls, tune and compile: GRAPH, its -i inputs
 * and --shape inputs (their dtypes as the graph declares them), on a new
 * client. */
typedef struct s_preq {
    gx_graph *g;
    gx_tensor *inputs[MAX_INPUTS];
    gx_client *c;
    gx_request *rq;
} s_preq;

/* Fills q (zeroed here). 0, or 1 after a one-line reason; s_preq_free it
 * either way. */
static int s_preq_init(const opts *o, s_preq *q)
{
    char err[512];
    memset(q, 0, sizeof *q);
    if (s_load_graph(o->graph, &q->g))
        return 1;
    for (int i = 0; i < o->n_in; i++)
        if (gx_npy_load(o->in_files[i], &q->inputs[i], err, sizeof err) < 0)
            return s_die("input '%s': %s", o->in_names[i], err);
    if (!(q->c = s_connect(o)) || !(q->rq = gx_request_new()))
        return 1;
    gx_request_set_graph(q->rq, q->g);
    for (int i = 0; i < o->n_in; i++)
        gx_request_add_input(q->rq, o->in_names[i], q->inputs[i]);
    for (int i = 0; i < o->n_shapes; i++) {
        size_t k = 0, n = gx_graph_input_count(q->g);
        while (k < n && strcmp(gx_graph_input_name(q->g, k), o->shape_names[i]))
            k++;
        if (k == n)
            return s_die("--shape %s: the graph has no input '%s'", o->shape_names[i],
                         o->shape_names[i]);
        if (gx_request_add_input_shape(q->rq, o->shape_names[i], gx_graph_input_dtype(q->g, k),
                                       o->shape_ndim[i], o->shapes[i]) < 0)
            return s_die("--shape %s: a shape of %s too large", o->shape_names[i],
                         gx_dtype_name(gx_graph_input_dtype(q->g, k)));
    }
    return 0;
}

static void s_preq_free(s_preq *q)
{
    gx_request_destroy(&q->rq);
    gx_client_destroy(&q->c);
    for (int i = 0; i < MAX_INPUTS; i++)
        gx_tensor_destroy(&q->inputs[i]);
    gx_graph_destroy(&q->g);
}

static int s_explain_cmd(const opts *o, s_xwhat what)
{
    s_preq q;
    char *json = NULL, err[512];
    gx_json *j = NULL;
    int ret = 1;
    if (s_preq_init(o, &q))
        goto out;
    if ((what == S_X_TUNE ? gx_client_tune(q.c, q.rq, &json)
                          : gx_client_explain(q.c, q.rq, &json)) < 0) {
        s_die("%s", gx_client_last_error(q.c));
        goto out;
    }
    if (what == S_X_EXPLAIN && o->json) {
        printf("%s\n", json);
        ret = 0;
        goto out;
    }
    if (!(j = gx_json_parse(json, err, sizeof err))) {
        s_die("the daemon's plan does not parse: %s", err);
        goto out;
    }
    if (what == S_X_TUNE && s_tune_wait(o, q.c, q.rq, &j) != 0)
        goto out;
    if (what == S_X_EXPLAIN) {
        for (size_t i = 0; i < sizeof s_explain_sections / sizeof s_explain_sections[0]; i++)
            s_explain_sections[i](j);
    } else if (o->json) {
        s_impls_json(j);
    } else {
        s_x_impls(j);
    }
    ret = 0;
out:
    gx_json_destroy(&j);
    free(json);
    s_preq_free(&q);
    return ret;
}

/* ---- explain --artifact: a compiled plan's file, read here ---- */

/* Value i's name in the body's values, or "?" (an index the file made up). */
static const char *s_a_value(const gx_json *values, const gx_json *idx)
{
    double i = gx_json_num(idx, -1);
    if (i < 0 || i >= (double)gx_json_len(values))
        return "?";
    return gx_json_str(gx_json_get(gx_json_at(values, (size_t)i), "name"), "?");
}

/* The names of the values an array of indices names, joined with ", ". */
static const char *s_a_values(const gx_json *values, const gx_json *a, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < gx_json_len(a) && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                               s_a_value(values, gx_json_at(a, i)));
    if (!at)
        snprintf(buf, len, "-");
    return buf;
}

static void s_a_header(const gx_json *j, const gx_json *b)
{
    const gx_json *p = gx_json_get(b, "plan"), *dev = gx_json_get(b, "devices");
    char b1[32], b2[32], b3[32], devs[256];
    printf("artifact %s: %s, format version %.0f, build %s, checksum %s\n",
           gx_json_str(gx_json_get(j, "file"), "?"),
           s_bytes(gx_json_num(gx_json_get(j, "file_bytes"), 0), b1, sizeof b1),
           gx_json_num(gx_json_get(j, "version"), 0), gx_json_str(gx_json_get(j, "build"), "?"),
           gx_json_str(gx_json_get(j, "checksum"), "?"));
    const char *cf = gx_json_str(gx_json_get(j, "consts"), "");
    if (*cf)
        printf("prepared constants in %.64s-%s.gxc (next to it)\n",
               gx_json_str(gx_json_get(b, "graph"), "?"), cf);
    if (!b)
        return;
    printf("graph %s on %s: %zu steps, %zu values, %.4g flops\n",
           gx_json_str(gx_json_get(b, "graph"), "?"), s_join(dev, devs, sizeof devs),
           gx_json_len(gx_json_get(b, "steps")), gx_json_len(gx_json_get(b, "values")),
           gx_json_num(gx_json_get(p, "flops"), 0));
    printf("arena %s (no reuse would need %s), %.0f buffers; out-of-order arena %s%s%s, "
           "width %.0f\n",
           s_bytes(gx_json_num(gx_json_get(p, "arena_bytes"), 0), b1, sizeof b1),
           s_bytes(gx_json_num(gx_json_get(p, "naive_bytes"), 0), b2, sizeof b2),
           gx_json_num(gx_json_get(p, "n_buffers"), 0),
           s_bytes(gx_json_num(gx_json_get(p, "dag_arena_bytes"), 0), b3, sizeof b3),
           gx_json_bool(gx_json_get(p, "dag_ok"), false) ? "" : ", not used: ",
           gx_json_bool(gx_json_get(p, "dag_ok"), false)
               ? ""
               : gx_json_str(gx_json_get(p, "dag_why"), "?"),
           gx_json_num(gx_json_get(p, "width"), 0));
    /* devices with memory of their own: their arenas, and the constants
     * the reader copies there from the host's (dev_consts) */
    const gx_json *da = gx_json_get(p, "dev_arena_bytes"), *dd = gx_json_get(p, "dev_dag_arena_bytes"),
                  *dc = gx_json_get(b, "dev_consts");
    for (size_t d = 1; d < gx_json_len(da) && d < gx_json_len(dev); d++) {
        size_t nc = 0;
        for (size_t i = 0; i < gx_json_len(dc); i++)
            nc += gx_json_num(gx_json_get(gx_json_at(dc, i), "device"), -1) == (double)d;
        if (gx_json_num(gx_json_at(da, d), 0) > 0 || nc)
            printf("%s: arena %s, out-of-order arena %s, %zu constants copied there at load\n",
                   gx_json_str(gx_json_at(dev, d), "?"),
                   s_bytes(gx_json_num(gx_json_at(da, d), 0), b1, sizeof b1),
                   s_bytes(gx_json_num(gx_json_at(dd, d), 0), b2, sizeof b2), nc);
    }
    double batch = gx_json_num(gx_json_get(p, "batch"), 0);
    if (batch > 0)
        printf("batch of %.0f, split across replicas; ", batch);
    else
        printf("batch: %s; ", gx_json_str(gx_json_get(p, "batch_why"), "not split"));
    printf("prepared constants %s\n",
           s_bytes(gx_json_num(gx_json_get(p, "prepared_bytes"), 0), b1, sizeof b1));
    char in[1024], out[1024];
    const gx_json *values = gx_json_get(b, "values");
    printf("inputs: %s\noutputs: %s\n", s_a_values(values, gx_json_get(b, "inputs"), in, sizeof in),
           s_a_values(values, gx_json_get(b, "outputs"), out, sizeof out));
}

static void s_a_steps(const gx_json *b)
{
    const gx_json *steps = gx_json_get(b, "steps"), *values = gx_json_get(b, "values"),
                  *dev = gx_json_get(b, "devices");
    s_table t = {.ncols = 7, .head = {"#", "op", "node", "device", "kernel", "inputs", "outputs"},
                 .right = {true}};
    for (size_t i = 0; i < gx_json_len(steps); i++) {
        const gx_json *s = gx_json_at(steps, i), *f = gx_json_get(s, "fused");
        char idx[32], kern[512], in[512], out[512];
        double d = gx_json_num(gx_json_get(s, "device"), -1);
        const char *dn = d >= 0 && d < (double)gx_json_len(dev)
                             ? gx_json_str(gx_json_at(dev, (size_t)d), "?") : "?";
        size_t at = (size_t)snprintf(kern, sizeof kern, "%s",
                                     gx_json_str(gx_json_get(s, "kernel"), "-"));
        const gx_json *ops = gx_json_get(f, "ops"), *head = gx_json_get(f, "head");
        if (f && f->type == GX_JSON_OBJ && at < sizeof kern)
            at += (size_t)snprintf(kern + at, sizeof kern - at, " [fused %s%s",
                                   gx_json_str(gx_json_get(head, "kernel"), ""),
                                   gx_json_get(head, "kernel") ? " + " : "");
        for (size_t k = 0; k < gx_json_len(ops) && at < sizeof kern; k++)
            at += (size_t)snprintf(kern + at, sizeof kern - at, "%s%s", k ? " + " : "",
                                   gx_json_str(gx_json_get(gx_json_at(ops, k), "kernel"), "?"));
        if (f && f->type == GX_JSON_OBJ && at < sizeof kern)
            snprintf(kern + at, sizeof kern - at, "]");
        snprintf(idx, sizeof idx, "%zu", i);
        s_table_row(&t, idx, gx_json_str(gx_json_get(s, "op"), "?"),
                    gx_json_str(gx_json_get(s, "node_name"), "?"), dn, kern,
                    s_a_values(values, gx_json_get(s, "in"), in, sizeof in),
                    s_a_values(values, gx_json_get(s, "out"), out, sizeof out), NULL);
    }
    printf("\nsteps (in run order):\n");
    s_table_print(&t, "  ");
}

/* Values by kind, then the constants (and keyed inputs' values) the file
 * holds or names. */
static void s_a_values_summary(const gx_json *b)
{
    static const char *const kinds[] = {"input", "const", "temp", "dynamic", "fused"};
    enum { NK = sizeof kinds / sizeof kinds[0] };
    const gx_json *values = gx_json_get(b, "values");
    double n[NK] = {0}, bytes[NK] = {0}, held = 0, named = 0, shared = 0;
    s_table t = {.ncols = 5, .head = {"value", "dtype", "shape", "bytes", "data"},
                 .right = {false, false, false, true, false}};
    for (size_t i = 0; i < gx_json_len(values); i++) {
        const gx_json *v = gx_json_at(values, i), *data = gx_json_get(v, "data");
        const char *kind = gx_json_str(gx_json_get(v, "kind"), "?");
        double nb = gx_json_num(gx_json_get(v, "nbytes"), 0);
        for (int k = 0; k < NK; k++)
            if (!strcmp(kind, kinds[k]))
                n[k]++, bytes[k] += nb;
        if (!data || data->type == GX_JSON_NULL)
            continue;
        char sh[256], nbs[32], what[320];
        const gx_json *cf = gx_json_get(data, "consts");
        if (data->type == GX_JSON_STR) {
            snprintf(what, sizeof what, "the graph's constant '%s'", data->str);
            named += nb;
        } else if (cf && cf->type == GX_JSON_STR) {
            snprintf(what, sizeof what, "in constants file %.32s at %.0f", cf->str,
                     gx_json_num(gx_json_get(data, "at"), 0));
            shared += nb;
        } else {
            char hb[32];
            snprintf(what, sizeof what, "in the file (%s%s)",
                     s_bytes(gx_json_num(gx_json_get(data, "bin"), 0), hb, sizeof hb),
                     gx_json_bool(gx_json_get(v, "keyed"), false) ? ", a keyed input's value" : "");
            held += gx_json_num(gx_json_get(data, "bin"), 0);
        }
        snprintf(nbs, sizeof nbs, "%.0f", nb);
        s_table_row(&t, gx_json_str(gx_json_get(v, "name"), "?"),
                    gx_json_str(gx_json_get(v, "view.dtype"), "?"),
                    s_shape_str(gx_json_get(v, "shape"), sh, sizeof sh), nbs, what, NULL);
    }
    printf("\nvalues:");
    for (int k = 0; k < NK; k++) {
        char bb[32];
        if (n[k] > 0)
            printf(" %.0f %s (%s)", n[k], kinds[k], s_bytes(bytes[k], bb, sizeof bb));
    }
    char b1[32], b2[32];
    char b3[32];
    printf("\nconstants: %s in the file, %s in its constants file, %s read from the graph's "
           "constants:\n",
           s_bytes(held, b1, sizeof b1), s_bytes(shared, b3, sizeof b3),
           s_bytes(named, b2, sizeof b2));
    s_table_print(&t, "  ");
}

/* explain --artifact FILE [--json]: the file's contents, read here (no
 * daemon). Exit status 1 when the file is not intact (its checksum or
 * its body). */
static int s_cmd_explain_artifact(const opts *o)
{
    char *text = NULL, err[512];
    bool intact = false;
    if (gxs_artifact_json(o->artifact, &text, &intact, err, sizeof err) < 0)
        return s_die("%s", err);
    gx_json *j = gx_json_parse(text, err, sizeof err);
    if (!j) {
        free(text);
        return s_die("%s: %s", o->artifact, err);
    }
    const gx_json *b = gx_json_get(j, "body");
    if (b && b->type != GX_JSON_OBJ)
        b = NULL;
    if (o->json) {
        printf("%s\n", text);
    } else {
        s_a_header(j, b);
        if (b) {
            s_a_steps(b);
            s_a_values_summary(b);
        }
    }
    int ret = 0;
    if (!intact)
        ret = s_die("%s is not intact: %s", o->artifact,
                    !b ? gx_json_str(gx_json_get(j, "body_error"), "?")
                       : "checksum mismatch (its contents are shown as they are)");
    gx_json_destroy(&j);
    free(text);
    return ret;
}

/* compile GRAPH [-i NAME=FILE.npy]... [--shape NAME=DIMS]... -o FILE: the
 * plan's artifact, as the daemon would keep it, into FILE; nothing runs. */
static int s_cmd_compile(const opts *o)
{
    s_preq q;
    void *buf = NULL;
    size_t len = 0;
    char key[128] = "", tmp[4200];
    int ret = 1;
    if (!o->outdir)
        return s_die("compile needs -o FILE, where the artifact goes");
    if (s_preq_init(o, &q))
        goto out;
    if (gx_client_compile(q.c, q.rq, &buf, &len, key, sizeof key) < 0) {
        s_die("%s", gx_client_last_error(q.c));
        goto out;
    }
    /* a whole file or none: written beside it, then renamed */
    snprintf(tmp, sizeof tmp, "%s.tmp", o->outdir);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, o->outdir) != 0) {
        s_die("%s: %s", o->outdir, strerror(errno));
        remove(tmp);
        goto out;
    }
    printf("%s: %zu bytes (gexecd's artifacts.dir name: %s.gxa)\n", o->outdir, len, key);
    ret = 0;
out:
    free(buf);
    s_preq_free(&q);
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
    if (c && (o->name ? gx_client_load_named(c, g, o->name, &id) : gx_client_load(c, g, &id)) == GX_OK) {
        printf("%s\n", id.hex);
        ret = 0;
    } else if (c) {
        s_die("%s", gx_client_last_error(c));
    }
    gx_client_destroy(&c);
    gx_graph_destroy(&g);
    return ret;
}

/* keygen: a key pair in PREFIX.key and PREFIX.pub; prints the public key. */
static int s_cmd_keygen(const opts *o)
{
    char pub[41], err[1024];
    const char *prefix = o->outdir ? o->outdir : "gexec-curve";
    if (gx_curve_keygen(prefix, pub, err, sizeof err) < 0)
        return s_die("keygen: %s", err);
    printf("secret key: %s.key\npublic key: %s.pub %s\n", prefix, prefix, pub);
    return 0;
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

/* "key: value" for each scalar member of o, nested objects as "a.b: v";
 * skip (may be NULL) is left out. */
static void s_print_flat(const gx_json *o, const char *prefix, const char *skip)
{
    for (size_t i = 0; i < o->n; i++) {
        const gx_json *v = &o->items[i];
        char key[256];
        snprintf(key, sizeof key, "%s%s", prefix, o->keys[i]);
        if (skip && strcmp(key, skip) == 0)
            continue;
        switch (v->type) {
        case GX_JSON_OBJ: {
            char sub[260];
            snprintf(sub, sizeof sub, "%s.", key);
            s_print_flat(v, sub, skip);
            break;
        }
        case GX_JSON_NUM: printf("%s: %.15g\n", key, v->num); break;
        case GX_JSON_STR: printf("%s: %s\n", key, v->str); break;
        case GX_JSON_BOOL: printf("%s: %s\n", key, v->b ? "true" : "false"); break;
        case GX_JSON_NULL: printf("%s: null\n", key); break;
        case GX_JSON_ARR: printf("%s: [%zu values]\n", key, v->n); break;
        }
    }
}

/* The q-quantile in us of STATS' histogram h ({"buckets": [...]}) over
 * bounds, as text ("-" without samples, ">N" in the overflow bucket). */
static const char *s_hist_q(const gx_json *bounds, const gx_json *h, double q, char *buf,
                            size_t len)
{
    int64_t b[GX_HIST_NBOUNDS * 4];
    uint64_t c[GX_HIST_NBOUNDS * 4 + 1];
    const gx_json *counts = gx_json_get(h, "buckets");
    size_t nb = gx_json_len(bounds);
    if (nb == 0 || nb >= sizeof b / sizeof b[0] || gx_json_len(counts) != nb + 1) {
        snprintf(buf, len, "?");
        return buf;
    }
    for (size_t i = 0; i <= nb; i++) {
        if (i < nb)
            b[i] = (int64_t)gx_json_num(gx_json_at(bounds, i), 0);
        c[i] = (uint64_t)gx_json_num(gx_json_at(counts, i), 0);
    }
    double v = gx_hist_quantile(b, nb, c, q);
    uint64_t below = 0, total = c[nb];
    for (size_t i = 0; i < nb; i++)
        below += c[i];
    total += below;
    if (v < 0)
        snprintf(buf, len, "-");
    else if ((double)below < q * (double)total)
        snprintf(buf, len, ">%.0f", v);
    else
        snprintf(buf, len, "%.0f", v);
    return buf;
}

/* One row of the latency table: jobs, then p50/p90/p99 of queue, compute
 * and e2e. */
static void s_latency_row(s_table *t, const char *name, const gx_json *bounds, const gx_json *l)
{
    char cells[10][32];
    snprintf(cells[0], sizeof cells[0], "%.0f", gx_json_num(gx_json_get(l, "jobs"), 0));
    static const char *const kinds[] = {"queue", "compute", "e2e"};
    static const double qs[] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 3; k++)
        for (int q = 0; q < 3; q++)
            s_hist_q(bounds, gx_json_get(l, kinds[k]), qs[q], cells[1 + k * 3 + q], sizeof cells[0]);
    s_table_row(t, name, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
                cells[7], cells[8], cells[9], NULL);
}

/* The latency table of STATS' "latency" (per mode, then per graph). */
static void s_print_latency(const gx_json *lat)
{
    const gx_json *bounds = gx_json_get(lat, "bounds_us"), *modes = gx_json_get(lat, "modes"),
                  *graphs = gx_json_get(lat, "graphs");
    if (!gx_json_len(bounds) || !modes || !graphs)
        return;
    if (!modes->n && !graphs->n) {
        printf("latency: no jobs yet\n");
        return;
    }
    printf("latency in us (estimated from histograms; queue: arrival to a worker, compute: "
           "the run, e2e: arrival to the result):\n");
    s_table t = {.ncols = 11,
                 .head = {"", "jobs", "queue p50", "p90", "p99", "compute p50", "p90", "p99",
                          "e2e p50", "p90", "p99"},
                 .right = {false, true, true, true, true, true, true, true, true, true, true}};
    char name[64];
    for (size_t i = 0; i < modes->n; i++) {
        snprintf(name, sizeof name, "mode %s", modes->keys[i]);
        s_latency_row(&t, name, bounds, &modes->items[i]);
    }
    for (size_t i = 0; i < graphs->n; i++) {
        snprintf(name, sizeof name, "graph %.12s", graphs->keys[i]);
        s_latency_row(&t, name, bounds, &graphs->items[i]);
    }
    s_table_print(&t, "  ");
}

static int s_cmd_stats(const opts *o)
{
    gx_client *c = s_connect(o);
    char *json = NULL, err[256];
    if (!c)
        return 1;
    int rc = o->prometheus ? gx_client_metrics(c, &json) : gx_client_stats(c, &json);
    if (rc < 0) {
        s_die("%s", gx_client_last_error(c));
    } else if (o->json || o->prometheus) {
        fputs(json, stdout);
        if (!o->prometheus)
            putchar('\n');
    } else {
        gx_json *j = gx_json_parse(json, err, sizeof err);
        if (!j || j->type != GX_JSON_OBJ) {
            rc = GX_EPROTO;
            s_die("STATS reply is not a JSON object: %s", j ? "wrong type" : err);
        } else {
            s_print_flat(j, "", "latency");
            s_print_latency(gx_json_get(j, "latency"));
        }
        gx_json_destroy(&j);
    }
    free(json);
    gx_client_destroy(&c);
    return rc == GX_OK ? 0 : 1;
}

static int s_cmd_list(const opts *o)
{
    gx_client *c = s_connect(o);
    char *json = NULL, err[256];
    if (!c)
        return 1;
    int rc = gx_client_list(c, &json);
    if (rc < 0) {
        s_die("%s", gx_client_last_error(c));
    } else if (o->json) {
        printf("%s\n", json);
    } else {
        gx_json *j = gx_json_parse(json, err, sizeof err);
        s_table t = {.ncols = 9,
                     .head = {"graph id", "name", "inputs", "outputs", "ready", "plans", "arena",
                              "jobs", "idle"},
                     .right = {false, false, false, false, false, true, true, true, true}};
        for (size_t i = 0; i < gx_json_len(j); i++) {
            const gx_json *g = gx_json_at(j, i);
            char id[16], ins[256] = "", outs[256] = "", plans[32], arena[32], jobs[32], idle[32];
            snprintf(id, sizeof id, "%.12s", gx_json_str(gx_json_get(g, "graph_id"), "?"));
            const char *keys[2] = {"inputs", "outputs"};
            char *dst[2] = {ins, outs};
            for (int k = 0; k < 2; k++) {
                const gx_json *a = gx_json_get(g, keys[k]);
                for (size_t n = 0; n < gx_json_len(a); n++)
                    snprintf(dst[k] + strlen(dst[k]), 256 - strlen(dst[k]), "%s%s", n ? "," : "",
                             gx_json_str(gx_json_at(a, n), "?"));
            }
            snprintf(plans, sizeof plans, "%.0f", gx_json_num(gx_json_get(g, "plans"), 0));
            s_bytes(gx_json_num(gx_json_get(g, "arena_bytes"), 0), arena, sizeof arena);
            snprintf(jobs, sizeof jobs, "%.0f", gx_json_num(gx_json_get(g, "jobs"), 0));
            snprintf(idle, sizeof idle, "%.1f s", gx_json_num(gx_json_get(g, "idle_ms"), 0) / 1000);
            /* ready: a plan is compiled; preloaded: graphs.preload warmed it at start */
            const char *ready = !gx_json_bool(gx_json_get(g, "ready"), false) ? "no"
                                : gx_json_bool(gx_json_get(g, "preloaded"), false) ? "preloaded"
                                                                                    : "yes";
            s_table_row(&t, id, gx_json_str(gx_json_get(g, "name"), ""), ins, outs, ready, plans,
                        arena, jobs, idle, NULL);
        }
        if (t.nrows)
            s_table_print(&t, "");
        else
            printf("no graphs loaded\n");
        gx_json_destroy(&j);
    }
    free(json);
    gx_client_destroy(&c);
    return rc == GX_OK ? 0 : 1;
}

static int s_cmd_unload(const opts *o, const char *graph)
{
    gx_client *c = s_connect(o);
    if (!c)
        return 1;
    int rc = gx_client_unload(c, graph);
    if (rc == GX_OK)
        printf("unloaded %s\n", graph);
    else
        s_die("%s", gx_client_last_error(c));
    gx_client_destroy(&c);
    return rc == GX_OK ? 0 : 1;
}

static int s_cmd_perf(const opts *o)
{
    gx_graph *g = NULL;
    gx_tensor *inputs[MAX_INPUTS] = {0};
    char err[1024];
    int ret = 1;
    if (s_load_graph(o->graph, &g))
        return 1;
    for (int i = 0; i < o->n_in; i++)
        if (gx_npy_load(o->in_files[i], &inputs[i], err, sizeof err) < 0) {
            s_die("input '%s': %s", o->in_names[i], err);
            goto out;
        }
    gxs_perf_opts p = {.endpoint = o->socket,
                       .timeout_ms = o->timeout_ms,
                       .graph_path = o->graph,
                       .graph = g,
                       .n_in = o->n_in,
                       .in_names = o->in_names,
                       .inputs = (const gx_tensor *const *)inputs,
                       .mode = o->mode,
                       .concurrency = (int)(o->concurrency ? o->concurrency : o->rate > 0 ? 16 : 1),
                       .rate = o->rate,
                       .duration_s = o->duration_s > 0 ? o->duration_s : 5,
                       .json = o->json};
    ret = gxs_perf_run(&p);
out:
    for (int i = 0; i < o->n_in; i++)
        gx_tensor_destroy(&inputs[i]);
    gx_graph_destroy(&g);
    return ret;
}

/* Options may come before or after the command (getopt permutes argv). */
int main(int argc, char **argv)
{
    enum { OPT_MODE = 256, OPT_PRIO, OPT_DEADLINE, OPT_REPEAT, OPT_JSON, OPT_TIMEOUT, OPT_OUTPUT,
           OPT_EXPLAIN, OPT_PROMETHEUS, OPT_VERSION, OPT_CONCURRENCY, OPT_RATE, OPT_DURATION,
           OPT_NAME, OPT_ARTIFACT, OPT_SHAPE };
    static const struct option lopts[] = {
        {"socket", required_argument, NULL, 's'},   {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"input", required_argument, NULL, 'i'},    {"outdir", required_argument, NULL, 'o'},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"mode", required_argument, NULL, OPT_MODE}, {"priority", required_argument, NULL, OPT_PRIO},
        {"deadline-ms", required_argument, NULL, OPT_DEADLINE},
        {"repeat", required_argument, NULL, OPT_REPEAT}, {"json", no_argument, NULL, OPT_JSON},
        {"explain-mode", no_argument, NULL, OPT_EXPLAIN},
        {"prometheus", no_argument, NULL, OPT_PROMETHEUS},
        {"version", no_argument, NULL, OPT_VERSION},
        {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
        {"rate", required_argument, NULL, OPT_RATE},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"name", required_argument, NULL, OPT_NAME},
        {"artifact", required_argument, NULL, OPT_ARTIFACT},
        {"shape", required_argument, NULL, OPT_SHAPE},
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
        case OPT_PROMETHEUS: o.prometheus = true; break;
        case OPT_NAME: o.name = optarg; break;
        case OPT_ARTIFACT: o.artifact = optarg; break;
        case OPT_SHAPE: {
            char *eq = strchr(optarg, '='), *p, *end;
            if (!eq || eq == optarg || !eq[1])
                return s_die("--shape expects NAME=DIMS (1x3x224x224), got '%s'", optarg);
            if (o.n_shapes == MAX_INPUTS)
                return s_die("too many --shape inputs (at most %d)", MAX_INPUTS);
            *eq = '\0';
            int n = 0;
            for (p = eq + 1; *p; p = *end ? end + 1 : end) {
                errno = 0;
                long long d = strtoll(p, &end, 10);
                if (errno || end == p || d < 0 || (*end && *end != 'x' && *end != ',') ||
                    n == GX_MAX_DIMS || (*end && !end[1]))
                    return s_die("--shape %s: '%s' is not dimensions such as 1x3x224x224 "
                                 "(at most %d)", optarg, eq + 1, GX_MAX_DIMS);
                o.shapes[o.n_shapes][n++] = d;
            }
            o.shape_names[o.n_shapes] = optarg;
            o.shape_ndim[o.n_shapes++] = n;
            break;
        }
        case OPT_CONCURRENCY:
            if (!s_parse_long(optarg, 1, 1024, &v))
                return s_die("--concurrency expects an integer in [1, 1024], got '%s'", optarg);
            o.concurrency = v;
            break;
        case OPT_RATE:
        case OPT_DURATION: {
            char *end;
            errno = 0;
            double d = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(d > 0) || d > 1e7)
                return s_die("--%s expects a positive number, got '%s'",
                             c == OPT_RATE ? "rate" : "duration", optarg);
            *(c == OPT_RATE ? &o.rate : &o.duration_s) = d;
            break;
        }
        case OPT_VERSION:
            printf("gexec-submit %s (libgexec %s)\n", PACKAGE_VERSION, gx_version());
            return 0;
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
    if (o.artifact && strcmp(cmd, "explain") != 0)
        return s_die("--artifact belongs to explain (explain --artifact FILE)");
    if (o.artifact) {
        if (operands != 0)
            return s_die("explain --artifact FILE takes no GRAPH (got %d operands)", operands);
        return s_cmd_explain_artifact(&o);
    }
    if (o.n_shapes && strcmp(cmd, "explain") && strcmp(cmd, "impls") && strcmp(cmd, "tune") &&
        strcmp(cmd, "compile"))
        return s_die("--shape is for explain, impls, tune and compile (%s needs values: -i)", cmd);
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "load") == 0 || strcmp(cmd, "explain") == 0 ||
        strcmp(cmd, "impls") == 0 || strcmp(cmd, "tune") == 0 || strcmp(cmd, "perf") == 0 ||
        strcmp(cmd, "compile") == 0) {
        if (strcmp(cmd, "run") == 0 && o.name && operands == 0)
            return s_cmd_run(&o); /* run --name NAME: a graph the daemon has */
        if (o.name && strcmp(cmd, "load") != 0)
            return s_die("--name is for load (load GRAPH --name NAME) and run (run --name NAME, "
                         "without GRAPH)");
        if (operands != 1)
            return s_die("%s expects exactly one GRAPH file (got %d operands)", cmd, operands);
        o.graph = argv[optind];
        return strcmp(cmd, "run") == 0       ? s_cmd_run(&o)
               : strcmp(cmd, "compile") == 0 ? s_cmd_compile(&o)
               : strcmp(cmd, "perf") == 0  ? s_cmd_perf(&o)
               : strcmp(cmd, "load") == 0  ? s_cmd_load(&o)
               : strcmp(cmd, "impls") == 0 ? s_explain_cmd(&o, S_X_IMPLS)
               : strcmp(cmd, "tune") == 0  ? s_explain_cmd(&o, S_X_TUNE)
                                           : s_cmd_explain(&o);
    }
    if (strcmp(cmd, "unload") == 0) {
        if (operands != 1)
            return s_die("unload expects one graph id or name (got %d operands)", operands);
        return s_cmd_unload(&o, argv[optind]);
    }
    if (operands != 0)
        return s_die("%s takes no operands ('%s' is unexpected)", cmd, argv[optind]);
    if (strcmp(cmd, "list") == 0)
        return s_cmd_list(&o);
    if (strcmp(cmd, "ping") == 0)
        return s_cmd_ping(&o);
    if (strcmp(cmd, "keygen") == 0)
        return s_cmd_keygen(&o);
    if (strcmp(cmd, "stats") == 0)
        return s_cmd_stats(&o);
    s_usage(stderr);
    return s_die("unknown command '%s'", cmd);
}
