/*
 * gexecd: the gexec daemon. Reads the config (built-in defaults, then the
 * file, then flags), starts the workers and serves until SIGTERM.
 */
#include <config.h>

#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/ctx.h"
#include "daemon/server.h"
#include "daemon/topo.h"
#include "ops/cuda/cuda.h"
#include "ops/backend.h"

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: gexecd [options]\n"
            "  -c, --config FILE      YAML config (default: none, built-in defaults)\n"
            "  -s, --socket EP        main endpoint (default: $GEXEC_SOCKET, else\n"
            "                         ipc:///run/gexec/gexecd.sock as root, else under\n"
            "                         $XDG_RUNTIME_DIR or /tmp)\n"
            "      --tcp EP           extra tcp:// endpoint (repeatable)\n"
            "      --cpus LIST        CPUs to own: 'all' or a list like 0-3,6\n"
            "      --profile-dir DIR  where measured node times are kept ('' off)\n"
            "  -l, --log-level LEVEL  error, warn, info, debug\n"
            "  -f, --foreground       do not detach (systemd, tests)\n"
            "      --print-config     print the effective config as YAML and exit\n"
            "  -V, --version          print the version and exit\n"
            "  -h, --help             this text\n");
}

/*
 * OpenBLAS reads its settings when the library loads, before main:
 * - OPENBLAS_NUM_THREADS: gexecd's workers own the cores, so BLAS must not
 *   start a thread pool of its own (oversubscription);
 * - OPENBLAS_CORETYPE: Debian's OpenBLAS 0.3.21 may not recognise a recent
 *   CPU, and environments often pin an older core type (Haswell: AVX2, half
 *   the speed of the AVX-512 kernels). gexecd picks the kernels for the CPU
 *   it runs on: GEXEC_BLAS_CORETYPE if set, else SkylakeX on AVX-512 CPUs,
 *   else whatever the environment says.
 * So set them and re-execute once; the log says what was chosen. A core
 * type gexecd chose is checked on real products after the re-execution
 * (old OpenBLAS builds computed wrong results on some CPUs); if it fails,
 * gexecd re-executes once more with the environment's choice.
 */

/* cblas_sgemm as a gx_gemm_product_fn, for the CPU table's gemm_tune->verify. */
static void s_blas_product(void *ctx, int64_t rows, int64_t k, int64_t cols, const float *a,
                           const float *b, float *y)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)cols, (int)k, 1.0f, a,
                (int)k, b, (int)cols, 0.0f, y, (int)cols);
}

static void s_configure_blas(char **argv)
{
    const char *configured = getenv("GEXECD_BLAS_CONFIGURED");
    if (configured) {
        const char *now = getenv("OPENBLAS_CORETYPE");
        if (getenv("GEXECD_BLAS_REJECTED") || !now || strcmp(now, configured) == 0)
            return; /* the environment's choice, or checked already */
        char why[256];
        const gx_backend_gemm_tune *gt = gx_backend_cpu()->gemm_tune;
        if (gt->verify("cblas_sgemm", s_blas_product, NULL, 37, 71, 53, why, sizeof why) &&
            gt->verify("cblas_sgemm", s_blas_product, NULL, 300, 280, 260, why, sizeof why))
            return;
        setenv("GEXECD_BLAS_REJECTED", now, 1);
        if (*configured)
            setenv("OPENBLAS_CORETYPE", configured, 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
        execv("/proc/self/exe", argv);
        return; /* could not re-execute: the log says the check failed */
    }
    const char *prev = getenv("OPENBLAS_CORETYPE");
    setenv("GEXECD_BLAS_CONFIGURED", prev ? prev : "", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    const char *want = getenv("GEXEC_BLAS_CORETYPE");
    __builtin_cpu_init();
    if (!want && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        want = "SkylakeX";
    if (want)
        setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
    /* could not re-execute: go on with the library's defaults */
}

static void s_log_blas(gxd_ctx *ctx)
{
    const char *prev = getenv("GEXECD_BLAS_CONFIGURED"), *now = getenv("OPENBLAS_CORETYPE");
    const char *rejected = getenv("GEXECD_BLAS_REJECTED");
    if (rejected)
        GXD_LOG(&ctx->log, GXD_LOG_WARN,
                "BLAS: OpenBLAS's %s kernels computed wrong products at start; using %s instead",
                rejected, now ? now : "its own choice");
    char note[160] = "";
    if (prev && *prev && now && strcmp(prev, now) != 0)
        snprintf(note, sizeof note,
                 " (checked on real products; the environment had %s; set GEXEC_BLAS_CORETYPE to "
                 "choose)",
                 prev);
    GXD_LOG(&ctx->log, GXD_LOG_INFO, "BLAS: OpenBLAS %s kernels, 1 thread per worker%s",
            now ? now : "auto-detected", note);
}

/* The CPU backend readied before any job runs (its MatMul kernels checked
 * on real products; a CPU on which the widest compute wrong gets the
 * baseline ones). */
static void s_open_cpu(gxd_ctx *ctx)
{
    const gx_backend *cpu = gx_backend_cpu();
    char note[400] = "";
    int rc = cpu->open(cpu, note, sizeof note);
    if (note[0])
        GXD_LOG(&ctx->log, rc < 0 ? GXD_LOG_ERROR : GXD_LOG_INFO, "cpu: %s", note);
}

/* The CUDA device index the config's gpus names ("all": the first). */
static int s_gpu_index(const gxd_ctx *ctx)
{
    const char *gpus = ctx->cfg.n_gpus ? ctx->cfg.gpus[0] : "all";
    return strcmp(gpus, "all") == 0 ? 0 : atoi(gpus);
}

/* The GPU the config names (gpus), opened before the server offers
 * backends to the compiler: one context for the process, its kernels
 * checked; without a GPU, a driver or a CUDA build, a line says why and
 * partition.prefer skips cuda (the CPU serves). */
static void s_open_cuda(gxd_ctx *ctx)
{
    const gx_backend *cuda = gx_backend_cuda();
    const char *gpus = ctx->cfg.n_gpus ? ctx->cfg.gpus[0] : "all";
    if (strcmp(gpus, "none") == 0) {
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "cuda: gpus is none; serving on CPU");
        return;
    }
    if (!cuda->open) {
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "cuda: built without CUDA; serving on CPU");
        return;
    }
    gx_cuda_configure(s_gpu_index(ctx), (double)ctx->cfg.gpu_memory_percent / 100.0,
                      ctx->cfg.gpu_tf32);
    char note[512] = "";
    int rc = cuda->open(cuda, note, sizeof note);
    GXD_LOG(&ctx->log, rc == GX_OK ? GXD_LOG_INFO : rc == GX_EUNSUPPORTED ? GXD_LOG_INFO
                                                                          : GXD_LOG_WARN,
            "cuda: %s", note);
}

/* Where the GPU sits (hwloc): the workers on cores near it. */
static void s_log_gpu_near(gxd_ctx *ctx)
{
    char why[160], near[128];
    if (!gx_backend_runnable(gx_backend_cuda(), why, sizeof why))
        return;
    int n = gxd_topo_gpu_near(ctx->topo, s_gpu_index(ctx), near, sizeof near);
    if (n < 0)
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "cuda: %s", near);
    else
        GXD_LOG(&ctx->log, GXD_LOG_INFO, "cuda: GPU %d is near %d of %d workers (%s)",
                s_gpu_index(ctx), n, gxd_topo_ncores(ctx->topo), n ? near : "none");
}

/* Fork; the parent waits until the child reports ready (exit 0) or an
 * error (exit 1, or 2 when the child exits with 2: a configuration error),
 * so `gexecd` returning means it is serving. Returns the
 * write end of the report pipe in the child. */
static int s_detach(void)
{
    int fds[2];
    if (pipe(fds) != 0) {
        fprintf(stderr, "gexecd: pipe: %s\n", strerror(errno));
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gexecd: fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid > 0) {
        close(fds[1]);
        char buf[1024];
        ssize_t n = read(fds[0], buf, sizeof buf - 1);
        if (n == 1 && buf[0] == '\0')
            exit(0);
        buf[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "gexecd: %s\n", n > 0 ? buf : "failed to start");
        /* the child's exit status: 2 for a configuration error */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        exit(WIFEXITED(st) && WEXITSTATUS(st) == 2 ? 2 : 1);
    }
    close(fds[0]);
    setsid();
    if (!freopen("/dev/null", "r", stdin))
        return fds[1];
    return fds[1];
}

static void s_report(int fd, const char *msg)
{
    if (fd < 0)
        return;
    ssize_t n = write(fd, msg, strlen(msg) + (msg[0] ? 0 : 1));
    (void)n;
    close(fd);
}

/* The detached child: its log goes to log_file or syslog, and stdout and
 * stderr to /dev/null (the terminal it came from may close). Exits with 2
 * (a configuration error, reported to the parent) when log_file cannot be
 * opened. */
static void s_detach_log(gxd_ctx *ctx, int report_fd)
{
    char why[1024];
    if (gxd_log_detach(&ctx->log, ctx->cfg.log_file, why, sizeof why) < 0) {
        s_report(report_fd, why);
        gxd_config_fini(&ctx->cfg);
        exit(2);
    }
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(null);
    }
}

int main(int argc, char **argv)
{
    enum { OPT_TCP = 256, OPT_CPUS, OPT_PRINT, OPT_PROFILE_DIR };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"socket", required_argument, NULL, 's'},
        {"tcp", required_argument, NULL, OPT_TCP},   {"cpus", required_argument, NULL, OPT_CPUS},
        {"profile-dir", required_argument, NULL, OPT_PROFILE_DIR},
        {"log-level", required_argument, NULL, 'l'}, {"foreground", no_argument, NULL, 'f'},
        {"print-config", no_argument, NULL, OPT_PRINT}, {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    s_configure_blas(argv);

    static gxd_ctx ctx; /* large; zeroed */
    const char *config_path = NULL;
    const char *flag_keys[64];
    const char *flag_vals[64];
    int n_flags = 0;
    char tcp_list[4096] = ""; /* repeated --tcp flags, joined for the "tcp" key */
    bool foreground = false, print = false;
    int c;
    while ((c = getopt_long(argc, argv, "c:s:l:fVh", opts, NULL)) != -1) {
        const char *key = NULL;
        switch (c) {
        case 'c': config_path = optarg; break;
        case 's': key = "socket"; break;
        case OPT_TCP:
            snprintf(tcp_list + strlen(tcp_list), sizeof tcp_list - strlen(tcp_list), "%s%s",
                     tcp_list[0] ? "," : "", optarg);
            break;
        case OPT_CPUS: key = "cpus"; break;
        case OPT_PROFILE_DIR: key = "profile.dir"; break;
        case 'l': key = "log_level"; break;
        case 'f': foreground = true; break;
        case OPT_PRINT: print = true; break;
        case 'V': printf("gexecd %s\n", PACKAGE_VERSION); return 0;
        case 'h': s_usage(stdout); return 0;
        default: s_usage(stderr); return 2;
        }
        if (key && n_flags < 64) {
            flag_keys[n_flags] = key;
            flag_vals[n_flags++] = optarg;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gexecd: unexpected argument '%s'\n", argv[optind]);
        s_usage(stderr);
        return 2;
    }

    char err[1024];
    gxd_config_init(&ctx.cfg);
    if (config_path && gxd_config_load(&ctx.cfg, config_path, err, sizeof err) < 0) {
        fprintf(stderr, "gexecd: %s\n", err);
        gxd_config_fini(&ctx.cfg);
        return 2;
    }
    if (tcp_list[0] && n_flags < 64) {
        flag_keys[n_flags] = "tcp";
        flag_vals[n_flags++] = tcp_list;
    }
    for (int i = 0; i < n_flags; i++)
        if (gxd_config_set(&ctx.cfg, flag_keys[i], flag_vals[i], err, sizeof err) < 0) {
            fprintf(stderr, "gexecd: --%s: %s\n", flag_keys[i], err);
            gxd_config_fini(&ctx.cfg);
            return 2;
        }
    if (print) {
        gxd_config_dump(&ctx.cfg, stdout);
        gxd_config_fini(&ctx.cfg);
        return 0;
    }
    gxd_log_init(&ctx.log, ctx.cfg.log_level);

    ctx.config_path = config_path;
    ctx.flag_keys = flag_keys;
    ctx.flag_vals = flag_vals;
    ctx.n_flags = n_flags;
    int report_fd = foreground ? -1 : s_detach();
    if (report_fd >= 0)
        s_detach_log(&ctx, report_fd);
    int status = 1;
    s_open_cuda(&ctx);
    int rc = gxd_server_init(&ctx, err, sizeof err);
    if (rc < 0) {
        GXD_LOG(&ctx.log, GXD_LOG_ERROR, "%s", err);
        s_report(report_fd, err);
        status = rc == GX_ECONFIG ? 2 : 1; /* 2: RestartPreventExitStatus= in the unit */
    } else {
        s_log_blas(&ctx);
        s_open_cpu(&ctx);
        s_log_gpu_near(&ctx);
        GXD_LOG(&ctx.log, GXD_LOG_INFO, "gexecd %s serving on %s (pid %d)", PACKAGE_VERSION,
                ctx.endpoint, (int)getpid());
        s_report(report_fd, "");
        status = gxd_server_run(&ctx);
    }
    gxd_server_fini(&ctx);
    gxd_config_fini(&ctx.cfg);
    return status;
}
