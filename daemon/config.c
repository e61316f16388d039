/*
 * gexecd configuration (see config.h). The table s_keys is the single source
 * of truth: gxd_config_init applies its defaults, the YAML loader and
 * gxd_config_set look keys up in it and validate through it, and
 * gxd_config_dump walks it. Adding a key means a field in gxd_config, a row
 * here, and a documented line in conf/gexecd.yaml.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include <gexec/status.h>

#include "daemon/config.h"
#include "daemon/preload.h"
#include "daemon/topo.h"
#include "daemon/tune/tune.h"
#include "core/internal.h"
#include "core/wire.h"
#include "ops/backend.h"

/* ---- the table ---------------------------------------------------------- */

typedef enum s_type {
    S_STRING,   /* char *; check() validates */
    S_STRLIST,  /* char *[max] + int count; check() validates each entry */
    S_INT,      /* int64_t in [min, max] */
    S_SIZE,     /* int64_t bytes in [min, max]; accepts 64M, 1G (powers of 1024) */
    S_LOGLEVEL, /* gxd_log_level by name */
    S_BOOL,     /* bool: true or false */
} s_type;

/* S_STRING: "" and "default" store NULL (the built-in default applies). */
#define S_NULL_IS_DEFAULT 1u

/* Validates one string value; writes "'v' is not ..." to why on failure. */
typedef int (*s_check_fn)(const char *v, char *why, size_t whylen);
/* Validates a list as a whole (its entries passed check). */
typedef int (*s_check_list_fn)(const char *const *items, size_t n, char *why, size_t whylen);

typedef struct s_key {
    const char *name; /* dotted: "queue.max_jobs" */
    s_type type;
    size_t off;       /* the field in gxd_config */
    size_t count_off; /* S_STRLIST: the int entry count */
    int64_t min, max; /* S_INT, S_SIZE: inclusive range; S_STRLIST: max entries,
                       * at most GXD_MAX_ENDPOINTS (the arrays in this file) */
    s_check_fn check; /* S_STRING, S_STRLIST: may be NULL */
    s_check_list_fn check_list; /* S_STRLIST: the whole list; may be NULL */
    unsigned flags;
    const char *def;  /* default, parsed like any other value */
    const char *doc;  /* one line, printed by gxd_config_dump */
} s_key;

static int s_check_endpoint(const char *v, char *why, size_t whylen);
static int s_check_tcp(const char *v, char *why, size_t whylen);
static int s_check_cpus(const char *v, char *why, size_t whylen);
static int s_check_gpus(const char *v, char *why, size_t whylen);
static int s_check_gpu_list(const char *const *items, size_t n, char *why, size_t whylen);
static int s_check_dir(const char *v, char *why, size_t whylen);
static int s_check_backend(const char *v, char *why, size_t whylen);
static int s_check_tune_mode(const char *v, char *why, size_t whylen);
static int s_check_tune_upstream(const char *v, char *why, size_t whylen);
static int s_check_user(const char *v, char *why, size_t whylen);
static int s_check_socket_mode(const char *v, char *why, size_t whylen);
static int s_check_group(const char *v, char *why, size_t whylen);
static int s_check_listen(const char *v, char *why, size_t whylen);
static int s_check_preload(const char *v, char *why, size_t whylen);
static int s_check_log_file(const char *v, char *why, size_t whylen);

#define S_KIB INT64_C(1024)
#define S_MIB (S_KIB * 1024)
#define S_GIB (S_MIB * 1024)
#define S_PIB (S_GIB * 1024 * 1024)
#define S_OFF(field) offsetof(gxd_config, field)

_Static_assert(GX_WIRE_NESTING_DEFAULT == 16, "the default of limits.max_nesting below");

/* Keys of one section stay together: gxd_config_dump relies on it. */
static const s_key s_keys[] = {
    {.name = "socket", .type = S_STRING, .off = S_OFF(socket), .check = s_check_endpoint,
     .flags = S_NULL_IS_DEFAULT, .def = "default",
     .doc = "main endpoint (ipc:// or tcp://); default: $GEXEC_SOCKET, else "
            "ipc:///run/gexec/gexecd.sock as root, else under $XDG_RUNTIME_DIR"},
    {.name = "socket_mode", .type = S_STRING, .off = S_OFF(socket_mode),
     .check = s_check_socket_mode, .def = "0660",
     .doc = "mode of the ipc socket file, octal; who may connect (0666: every local user)"},
    {.name = "socket_group", .type = S_STRING, .off = S_OFF(socket_group), .check = s_check_group,
     .flags = S_NULL_IS_DEFAULT, .def = "default",
     .doc = "group of the ipc socket file (a name or a gid); default: the daemon's own group"},
    {.name = "tcp", .type = S_STRLIST, .off = S_OFF(tcp), .count_off = S_OFF(n_tcp),
     .max = GXD_MAX_ENDPOINTS, .check = s_check_tcp, .def = "",
     .doc = "extra tcp:// endpoints; one other machines can reach needs the security.* keys "
            "(CURVE, docs/security.md), else only loopback binds (tcp://127.0.0.1:5555)"},
    {.name = "cpus", .type = S_STRING, .off = S_OFF(cpus), .check = s_check_cpus, .def = "all",
     .doc = "CPUs to run workers on, one worker per core: \"all\" or OS numbers like \"0-3,6\""},
    {.name = "gpus", .type = S_STRLIST, .off = S_OFF(gpus), .count_off = S_OFF(n_gpus),
     .max = GXD_MAX_ENDPOINTS, .check = s_check_gpus, .check_list = s_check_gpu_list,
     .def = "all",
     .doc = "the GPUs gexecd owns: all (today the first CUDA device), none, or a list of CUDA "
            "device numbers like [1]; one GPU today (multi-GPU is not built)"},
    {.name = "gpu_memory_percent", .type = S_INT, .off = S_OFF(gpu_memory_percent), .min = 1,
     .max = 100, .def = "90",
     .doc = "share of the GPU's memory its arenas may take (percent); a plan that does not fit "
            "is refused"},
    {.name = "gpu_tf32", .type = S_BOOL, .off = S_OFF(gpu_tf32), .def = "false",
     .doc = "MatMul, Gemm and Conv on a GPU may use TF32 tensor cores (inputs rounded to 10 "
            "mantissa bits, float32 sums): several times faster on large products, results "
            "further from float32's (about 1e-2 relative on long products); false: float32 "
            "throughout"},
    {.name = "log_level", .type = S_LOGLEVEL, .off = S_OFF(log_level), .def = "info",
     .doc = "error, warn, info or debug"},
    {.name = "log_file", .type = S_STRING, .off = S_OFF(log_file), .check = s_check_log_file,
     .def = "",
     .doc = "where a detached gexecd (no --foreground) writes its log: an absolute path, "
            "appended (e.g. /var/lib/gexec/gexecd.log), opened again on SIGHUP (logrotate); "
            "\"\": syslog (facility daemon); in the foreground the log goes to stderr (the "
            "journal under systemd)"},
    {.name = "queue.max_jobs", .type = S_INT, .off = S_OFF(queue_max_jobs), .min = 1,
     .max = 1000000, .def = "1024",
     .doc = "jobs waiting to run; beyond it RUN is refused with GX_EQUEUEFULL"},
    {.name = "queue.max_bytes", .type = S_SIZE, .off = S_OFF(queue_max_bytes), .min = S_KIB,
     .max = S_PIB, .def = "1G",
     .doc = "input bytes held by waiting jobs; beyond it RUN is refused with GX_EQUEUEFULL"},
    {.name = "limits.max_message_bytes", .type = S_SIZE, .off = S_OFF(limits_max_message_bytes),
     .min = S_KIB, .max = S_PIB, .def = "1G", .doc = "largest message frame accepted"},
    {.name = "limits.max_tensor_bytes", .type = S_SIZE, .off = S_OFF(limits_max_tensor_bytes),
     .min = S_KIB, .max = S_PIB, .def = "1G",
     .doc = "largest tensor: input, constant or intermediate value"},
    {.name = "limits.max_nodes", .type = S_INT, .off = S_OFF(limits_max_nodes), .min = 1,
     .max = 100000000, .def = "100000", .doc = "nodes in one graph"},
    {.name = "limits.max_arena_bytes", .type = S_SIZE, .off = S_OFF(limits_max_arena_bytes),
     .min = S_KIB, .max = S_PIB, .def = "4G",
     .doc = "memory arena of one job (all its intermediate values)"},
    {.name = "limits.max_compile_ms", .type = S_INT, .off = S_OFF(limits_max_compile_ms),
     .min = 0, .max = 86400000, .def = "60000",
     .doc = "time one compile may take (a graph's plan for one input signature, a slice's "
            "or a subgraph's), checked after each compiler pass but the last; beyond it the "
            "LOAD or RUN fails with GX_ELIMIT naming this limit and the pass; 0: no bound"},
    {.name = "limits.max_nesting", .type = S_INT, .off = S_OFF(limits_max_nesting), .min = 1,
     .max = GX_WIRE_MAX_NESTING, .def = "16",
     .doc = "levels of subgraphs (If branches, Loop and Scan bodies in one another) in a graph; "
            "the message depth limit follows from it"},
    {.name = "limits.max_client_priority", .type = S_INT,
     .off = S_OFF(limits_max_client_priority), .min = -100, .max = 100, .def = "0",
     .doc = "highest RUN priority any client may ask for; above it only limits.priority_users "
            "(over ipc; tcp clients are not identified) and others get GX_EPERM"},
    {.name = "limits.priority_users", .type = S_STRLIST, .off = S_OFF(limits_priority_users),
     .count_off = S_OFF(n_limits_priority_users), .max = GXD_MAX_ENDPOINTS,
     .check = s_check_user, .def = "root, self",
     .doc = "users (names, uids, or self: the daemon's own) whose ipc clients may ask for "
            "priorities above limits.max_client_priority"},
    {.name = "limits.shm_regions_per_client", .type = S_INT,
     .off = S_OFF(limits_shm_regions_per_client), .min = 0, .max = 1024, .def = "64",
     .doc = "shared-memory regions one ipc client may register (SHM_REGISTER, docs/shm.md); "
            "0: none may"},
    {.name = "limits.shm_bytes", .type = S_SIZE, .off = S_OFF(limits_shm_bytes), .min = 0,
     .max = S_PIB, .def = "16G",
     .doc = "bytes of clients' shared-memory regions the daemon maps at once, every client's "
            "together (address space: the pages are the clients' files)"},
    {.name = "limits.shm_regions_per_uid", .type = S_INT,
     .off = S_OFF(limits_shm_regions_per_uid), .min = 0, .max = 1024, .def = "256",
     .doc = "shared-memory regions the ipc clients of one user (uid) may have registered, all "
            "their connections together, so more connections are no way around "
            "limits.shm_regions_per_client; 0: no bound per user"},
    {.name = "limits.shm_bytes_per_uid", .type = S_SIZE, .off = S_OFF(limits_shm_bytes_per_uid),
     .min = 0, .max = S_PIB, .def = "0",
     .doc = "bytes of shared-memory regions the ipc clients of one user (uid) may have "
            "registered, all their connections together; 0: no bound per user but "
            "limits.shm_bytes"},
    {.name = "limits.max_memory_bytes", .type = S_SIZE, .off = S_OFF(limits_max_memory_bytes),
     .min = 0, .max = S_PIB, .def = "0",
     .doc = "bytes held by loaded graphs and their plans: each graph (constants, attributes, "
            "nodes), each plan kept (tables, folded and prepared constants, one arena; those "
            "made at run time and replica slices included), the graph's shared prepared "
            "constants and the plans of its If/Loop/Scan bodies; beyond it idle graphs are "
            "dropped, least recently used first, and what still does not fit is refused with "
            "GX_ELIMIT; 0: 3/4 of physical memory"},
    {.name = "limits.client_graphs", .type = S_INT, .off = S_OFF(limits_client_graphs), .min = 0,
     .max = 1000000, .def = "128",
     .doc = "graphs one client (one connection) may hold loaded: LOADed or sent inline; "
            "beyond it its own idle graphs go, least recently used first, else a new graph "
            "is refused with GX_ELIMIT; 0: no bound but graphs.max"},
    {.name = "limits.client_memory_bytes", .type = S_SIZE, .off = S_OFF(limits_client_memory_bytes),
     .min = 0, .max = S_PIB, .def = "0",
     .doc = "bytes of graphs and plans one client (one connection) may hold, counted as "
            "limits.max_memory_bytes counts them; beyond it its own idle graphs go, least "
            "recently used first, else a new graph is refused with GX_ELIMIT; 0: half of "
            "limits.max_memory_bytes in effect"},
    {.name = "limits.client_jobs", .type = S_INT, .off = S_OFF(limits_client_jobs), .min = 0,
     .max = 1000000, .def = "512",
     .doc = "jobs one client (one connection) may have waiting in the queue; beyond it a "
            "request is refused with GX_ELIMIT (other clients' are still queued); 0: no "
            "bound but queue.max_jobs"},
    {.name = "limits.uid_jobs", .type = S_INT, .off = S_OFF(limits_uid_jobs), .min = 0,
     .max = 1000000, .def = "0",
     .doc = "jobs the ipc clients of one user (uid) may have waiting in the queue, all their "
            "connections (and rings) together, so more connections are no way around "
            "limits.client_jobs; beyond it a request is refused with GX_ELIMIT; tcp clients "
            "are not identified and only limits.client_jobs holds them; 0: no bound per user"},
    {.name = "graphs.max", .type = S_INT, .off = S_OFF(graphs_max), .min = 1, .max = 1000000,
     .def = "256", .doc = "compiled graphs kept; the least recently used beyond are dropped"},
    {.name = "graphs.preload", .type = S_STRLIST, .off = S_OFF(graphs_preload),
     .count_off = S_OFF(n_graphs_preload), .max = GXD_MAX_ENDPOINTS,
     .check = s_check_preload, .def = "",
     .doc = "graph files (YAML, or ONNX when the name ends in .onnx), each PATH or NAME=PATH, "
            "loaded, compiled and run once on zeros before gexecd reads its socket and reports "
            "ready; never evicted; one that fails stops the start (exit status 2)"},
    {.name = "shutdown_grace_ms", .type = S_INT, .off = S_OFF(shutdown_grace_ms), .min = 0,
     .max = 3600000, .def = "10000",
     .doc = "on SIGTERM, wait this long for running jobs (keep below systemd's TimeoutStopSec)"},
    {.name = "client_heartbeat_ms", .type = S_INT, .off = S_OFF(client_heartbeat_ms), .min = 0,
     .max = 3600000, .def = "10000",
     .doc = "ZeroMQ heartbeats to each client this often (ms); one that does not answer "
            "within 3 intervals is disconnected and its jobs dropped; 0: off"},
    {.name = "scheduler.split_min_ns", .type = S_INT, .off = S_OFF(sched_split_min_ns),
     .min = -1, .max = 1000000000, .def = "-1",
     .doc = "intra-op splits a step across workers from this time on one worker (ns); "
            "-1: 4 times the measured cost of synchronising the team"},
    {.name = "scheduler.spin_us", .type = S_INT, .off = S_OFF(sched_spin_us), .min = 0,
     .max = 100000, .def = "200",
     .doc = "an idle worker spins this long for the next job or team call before it sleeps "
            "(us); 0: it sleeps at once"},
    {.name = "scheduler.batch_max", .type = S_INT, .off = S_OFF(sched_batch_max), .min = 1,
     .max = 256, .def = "8",
     .doc = "dynamic batching: a worker merges up to this many queued jobs of one graph and "
            "input signature into one job along axis 0 when the policy estimates it faster; "
            "1: off"},
    {.name = "scheduler.batch_delay_us", .type = S_INT, .off = S_OFF(sched_batch_delay_us),
     .min = 0, .max = 1000000, .def = "0",
     .doc = "dynamic batching: a job with fewer than batch_max like it queued waits this long "
            "for more (us; never past a member's deadline, and not while a job of higher "
            "priority is queued); 0: merge only what is already queued"},
    {.name = "scheduler.device_time", .type = S_BOOL, .off = S_OFF(sched_device_time),
     .def = "true",
     .doc = "a job run in step order measures its kernels' time on a GPU with events around each "
            "stretch of them (the reply's device_us); false: no events, device_us 0"},
    {.name = "scheduler.device_graphs", .type = S_BOOL, .off = S_OFF(sched_device_graphs),
     .def = "true",
     .doc = "a job run in step order launches each run of consecutive kernel steps on a GPU as "
            "one recorded graph (CUDA Graphs), from a plan's third job on a worker's arena and "
            "stream; false: one launch per step"},
    {.name = "partition.prefer", .type = S_STRLIST, .off = S_OFF(partition_prefer),
     .count_off = S_OFF(n_partition_prefer), .max = 4, .check = s_check_backend,
     .def = "cuda, cpu",
     .doc = "devices in order of preference (cpu, cuda); those this build cannot run are "
            "skipped, the cpu takes the rest"},
    {.name = "partition.min_nodes", .type = S_INT, .off = S_OFF(partition_min_nodes), .min = 1,
     .max = 1000000, .def = "2",
     .doc = "smallest subgraph worth moving to another device than the cpu (nodes)"},
    {.name = "partition.cost_check", .type = S_BOOL, .off = S_OFF(partition_cost_check),
     .def = "true",
     .doc = "a subgraph moves to another device only when its estimated time there, with "
            "the copies in and out, is below its time on the cpu"},
    {.name = "compiler.rewrite", .type = S_BOOL, .off = S_OFF(compiler_rewrite), .def = "true",
     .doc = "rewrite the graph's steps algebraically (BatchNormalization folded into Conv, "
            "spelled-out LayerNormalization, Gelu, HardSwish as one op...; docs/rewrite.md)"},
    {.name = "compiler.fuse", .type = S_BOOL, .off = S_OFF(compiler_fuse), .def = "true",
     .doc = "fuse chains of elementwise ops into one step that runs them tile by tile"},
    {.name = "compiler.layout", .type = S_BOOL, .off = S_OFF(compiler_layout), .def = "true",
     .doc = "choose the memory layout of 4-D values (NCHW, NHWC, NCHW16c) by expected cost"},
    {.name = "compiler.layout_measured", .type = S_BOOL, .off = S_OFF(compiler_layout_measured),
     .def = "true",
     .doc = "the layout pass uses op times measured by earlier jobs (the profile's "
            "<node>@<layout> entries); false: estimates weighed by the counts alone, so plans do "
            "not depend on how fast the machine was"},
    {.name = "compiler.replan", .type = S_BOOL, .off = S_OFF(compiler_replan), .def = "true",
     .doc = "re-plan a graph in the background when its profile changes a layout decision "
            "(docs/profile.md); later jobs get the new plan"},
    {.name = "compiler.replan_ms", .type = S_INT, .off = S_OFF(compiler_replan_ms), .min = 10,
     .max = 86400000, .def = "1000",
     .doc = "how often graphs are checked for a re-plan (ms)"},
    {.name = "compiler.replan_min_jobs", .type = S_INT, .off = S_OFF(compiler_replan_min_jobs),
     .min = 1, .max = 1000000000, .def = "100",
     .doc = "jobs a graph runs between two checks for a re-plan"},
    {.name = "profile.dir", .type = S_STRING, .off = S_OFF(profile_dir), .check = s_check_dir,
     .def = "default",
     .doc = "where measured node runs and times are kept per graph (docs/profile.md); "
            "default: $STATE_DIRECTORY/profiles under systemd, /var/lib/gexec/profiles as root, else $XDG_STATE_HOME/gexec/profiles "
            "or ~/.local/state/gexec/profiles; \"\": off"},
    {.name = "profile.max_entries", .type = S_INT, .off = S_OFF(profile_max_entries), .min = 1,
     .max = 100000000, .def = "4096",
     .doc = "profile files kept; beyond it those of the least recently used graphs are removed"},
    {.name = "profile.max_bytes", .type = S_SIZE, .off = S_OFF(profile_max_bytes), .min = S_KIB,
     .max = S_PIB, .def = "1G",
     .doc = "bytes of the profile files kept; beyond it those of the least recently used "
            "graphs are removed"},
    {.name = "artifacts.dir", .type = S_STRING, .off = S_OFF(artifacts_dir),
     .check = s_check_dir, .def = "default",
     .doc = "where compiled plans are kept across restarts (docs/artifact.md); default: "
            "\"artifacts\" next to the profile store's directory (with profile.dir \"\": "
            "off); \"\": off"},
    {.name = "artifacts.max_files", .type = S_INT, .off = S_OFF(artifacts_max_files), .min = 1,
     .max = 100000000, .def = "1024",
     .doc = "artifact files kept; beyond it the least recently used are removed"},
    {.name = "artifacts.max_bytes", .type = S_SIZE, .off = S_OFF(artifacts_max_bytes),
     .min = S_KIB, .max = S_PIB, .def = "4G",
     .doc = "bytes of the artifact files kept; beyond it the least recently used are removed"},
    {.name = "tune.mode", .type = S_STRING, .off = S_OFF(tune_mode), .check = s_check_tune_mode,
     .def = "explore",
     .doc = "best-implementation registry (docs/tune.md): off (defaults only), cache (use "
            "records measured before), explore (also measure missing ones on idle time)"},
    {.name = "tune.dir", .type = S_STRING, .off = S_OFF(tune_dir), .check = s_check_dir,
     .def = "default",
     .doc = "where tune.db is kept; default: the state directory (the one holding "
            "profile.dir's default: $STATE_DIRECTORY, /var/lib/gexec as root, else "
            "$XDG_STATE_HOME/gexec or ~/.local/state/gexec; with profile.dir set, its parent); "
            "\"\": memory only"},
    {.name = "tune.budget_ms", .type = S_INT, .off = S_OFF(tune_budget_ms), .min = 1,
     .max = 3600000, .def = "100",
     .doc = "time spent measuring the candidates of one signature (ms, idle waits excluded)"},
    {.name = "tune.upstream", .type = S_STRING, .off = S_OFF(tune_upstream),
     .check = s_check_tune_upstream, .def = "",
     .doc = "the site's central registry, shared by its daemons: a PostgreSQL URL "
            "(postgresql://USER@HOST/DB, libpq's form); looked up after tune.db, winners "
            "written to it (the faster record kept); \"\": none"},
    {.name = "tune.max_records", .type = S_INT, .off = S_OFF(tune_max_records), .min = 1,
     .max = 100000000, .def = "100000",
     .doc = "records kept in tune.db; beyond it the oldest measurements are removed"},
    {.name = "tune.upstream_max_records", .type = S_INT, .off = S_OFF(tune_upstream_max_records),
     .min = 1, .max = 1000000000, .def = "1000000",
     .doc = "records kept in the central registry (tune.upstream); beyond it the least "
            "recently used (written or found by a lookup) are removed, checked every 64 "
            "writes of each daemon"},
    {.name = "metrics.listen", .type = S_STRING, .off = S_OFF(metrics_listen),
     .check = s_check_listen, .def = "",
     .doc = "serve the Prometheus text exposition at http://ADDRESS/metrics (docs/metrics.md): "
            "PORT (on 127.0.0.1), HOST:PORT or [V6]:PORT; \"\": off"},
    {.name = "security.server_secret_key", .type = S_STRING,
     .off = S_OFF(security_server_secret_key), .def = "",
     .doc = "file holding the daemon's CURVE secret key (gexec-submit keygen; mode 0600); with "
            "security.client_keys every tcp endpoint takes only listed clients "
            "(docs/security.md); \"\": tcp on loopback only"},
    {.name = "security.client_keys", .type = S_STRING, .off = S_OFF(security_client_keys),
     .def = "",
     .doc = "the CURVE public keys of the clients admitted over tcp: a file of keys, one per "
            "line, or a directory of .pub files; read again on SIGHUP"},
};
#define S_NKEYS (sizeof s_keys / sizeof s_keys[0])

/* ---- value checks and parsers ------------------------------------------- */

/* Values are quoted in messages, cut to a readable length. */
#define S_Q "'%.80s'"

static int s_why(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int s_why(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return GX_ECONFIG;
}

static bool s_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int s_check_endpoint(const char *v, char *why, size_t whylen)
{
    static const char *const transports[] = {"ipc://", "tcp://", "inproc://"};
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (s_has_prefix(v, transports[i]) && v[strlen(transports[i])] != '\0')
            return GX_OK;
    return s_why(why, whylen, S_Q " is not an endpoint (ipc:///path/to/sock or tcp://host:port)",
                 v);
}

static int s_check_tcp(const char *v, char *why, size_t whylen)
{
    if (s_has_prefix(v, "tcp://") && v[6] != '\0')
        return GX_OK;
    return s_why(why, whylen, S_Q " is not a tcp:// endpoint (tcp://127.0.0.1:5555)", v);
}

static int s_check_backend(const char *v, char *why, size_t whylen)
{
    if (gx_backend_find(v))
        return GX_OK;
    return s_why(why, whylen, S_Q " is not a backend (%s)", v, gx_backend_names());
}

int gxd_config_user_uid(const char *v, uid_t *uid, char *why, size_t whylen)
{
    if (strcmp(v, "self") == 0) {
        *uid = geteuid();
        return GX_OK;
    }
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (*v >= '0' && *v <= '9' && !*end && errno == 0 && n < (unsigned long)(uid_t)-1) {
        *uid = (uid_t)n;
        return GX_OK;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwnam_r(v, &pw, buf, sizeof buf, &res) == 0 && res) {
        *uid = res->pw_uid;
        return GX_OK;
    }
    s_why(why, whylen, S_Q " is not a user on this system (a name, a uid or self)", v);
    return GX_ECONFIG;
}

int64_t gxd_config_memory_budget(const gxd_config *c)
{
    if (c->limits_max_memory_bytes > 0)
        return c->limits_max_memory_bytes;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page / 4 * 3 : 0;
}

int64_t gxd_config_client_memory(const gxd_config *c)
{
    if (c->limits_client_memory_bytes > 0)
        return c->limits_client_memory_bytes;
    return gxd_config_memory_budget(c) / 2;
}

int gxd_config_socket_mode(const char *v, mode_t *mode, char *why, size_t whylen)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 8);
    if (*v >= '0' && *v <= '7' && !*end && errno == 0 && n <= 0777) {
        *mode = (mode_t)n;
        return GX_OK;
    }
    s_why(why, whylen, S_Q " is not a file mode (octal, 0 to 0777, such as 0660)", v);
    return GX_ECONFIG;
}

int gxd_config_group_gid(const char *v, gid_t *gid, char *why, size_t whylen)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (*v >= '0' && *v <= '9' && !*end && errno == 0 && n < (unsigned long)(gid_t)-1) {
        *gid = (gid_t)n;
        return GX_OK;
    }
    struct group gr, *res = NULL;
    char buf[4096];
    if (getgrnam_r(v, &gr, buf, sizeof buf, &res) == 0 && res) {
        *gid = res->gr_gid;
        return GX_OK;
    }
    s_why(why, whylen, S_Q " is not a group on this system (a name or a gid)", v);
    return GX_ECONFIG;
}

static int s_check_socket_mode(const char *v, char *why, size_t whylen)
{
    mode_t m;
    return gxd_config_socket_mode(v, &m, why, whylen);
}

static int s_check_group(const char *v, char *why, size_t whylen)
{
    gid_t g;
    return gxd_config_group_gid(v, &g, why, whylen);
}

static int s_check_user(const char *v, char *why, size_t whylen)
{
    uid_t uid;
    return gxd_config_user_uid(v, &uid, why, whylen);
}

static int s_check_dir(const char *v, char *why, size_t whylen)
{
    if (!*v || strcmp(v, "default") == 0 || (v[0] == '/' && strlen(v) < 900))
        return GX_OK;
    return s_why(why, whylen, S_Q " is not an absolute path, \"default\" or \"\"", v);
}

static int s_check_tune_upstream(const char *v, char *why, size_t whylen)
{
    if (!*v)
        return GX_OK;
    return gxd_tune_upstream_check(v, why, whylen) == GX_OK ? GX_OK : GX_ECONFIG;
}

static int s_check_tune_mode(const char *v, char *why, size_t whylen)
{
    gxd_tune_mode m;
    if (gxd_tune_mode_parse(v, &m) == GX_OK)
        return GX_OK;
    return s_why(why, whylen, S_Q " is not off, cache or explore", v);
}

/* metrics.listen: "" (off), PORT, HOST:PORT or [V6]:PORT; the host is
 * resolved when the endpoint starts. */
static int s_check_listen(const char *v, char *why, size_t whylen)
{
    if (!*v)
        return GX_OK;
    const char *colon = strrchr(v, ':'), *port = colon ? colon + 1 : v;
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (!*port || *end || errno || p < 0 || p > 65535)
        return s_why(why, whylen, S_Q " is not PORT, HOST:PORT or [V6]:PORT (port 0 to 65535)", v);
    if (colon && (colon == v || (v[0] == '[' && colon[-1] != ']')))
        return s_why(why, whylen, S_Q " has no host before its port (write [V6]:PORT for IPv6)", v);
    return GX_OK;
}

static int s_check_cpus(const char *v, char *why, size_t whylen)
{
    return gxd_topo_cpus_check(v, why, whylen);
}

static int s_check_gpus(const char *v, char *why, size_t whylen)
{
    if (strcmp(v, "all") == 0 || strcmp(v, "none") == 0)
        return GX_OK;
    const char *p = v;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == v || *p || p - v > 4)
        return s_why(why, whylen, S_Q " is not all, none or a CUDA device number", v);
    return GX_OK;
}

/* all or none alone, or device numbers: one of them, as long as gexecd
 * drives one GPU (multi-GPU is not built). */
static int s_check_gpu_list(const char *const *items, size_t n, char *why, size_t whylen)
{
    if (!n)
        return s_why(why, whylen, "no GPU listed (say none for no GPU)");
    for (size_t i = 0; i < n && n > 1; i++)
        if (!strcmp(items[i], "all") || !strcmp(items[i], "none"))
            return s_why(why, whylen, "%s stands alone, not in a list", items[i]);
    if (n > 1)
        return s_why(why, whylen,
                     "%zu GPUs listed: gexecd drives one GPU (multi-GPU is not built yet); "
                     "list one",
                     n);
    return GX_OK;
}

/* Strict decimal integer: optional sign, digits, nothing else. */
static int s_parse_int(const char *v, int64_t *out, char *why, size_t whylen)
{
    if (!*v)
        return s_why(why, whylen, "no value given");
    const char *p = v + (*v == '-' || *v == '+');
    if (*p < '0' || *p > '9')
        return s_why(why, whylen, S_Q " is not an integer", v);
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end)
        return s_why(why, whylen, S_Q " is not an integer", v);
    if (errno == ERANGE)
        return s_why(why, whylen, S_Q " is too large", v);
    *out = x;
    return GX_OK;
}

/* Bytes: digits, then optionally K, M, G, T or P (either case, powers of
 * 1024) and an optional "B" or "iB": 512, 64M, 64MiB, 1g, 4GB. */
static int s_parse_size(const char *v, int64_t *out, char *why, size_t whylen)
{
    if (!*v)
        return s_why(why, whylen, "no value given");
    if (*v < '0' || *v > '9')
        return s_why(why, whylen, S_Q " is not a size (bytes, or with a suffix: 64M, 1G)", v);
    errno = 0;
    char *p;
    unsigned long long x = strtoull(v, &p, 10);
    if (errno == ERANGE || x > INT64_MAX)
        return s_why(why, whylen, S_Q " is too large", v);
    static const char units[] = "KMGTP";
    int64_t mult = 1;
    const char *u = *p ? strchr(units, *p >= 'a' ? *p - ('a' - 'A') : *p) : NULL;
    if (u) {
        for (const char *q = units; q <= u; q++)
            mult *= 1024;
        p++;
        if (p[0] == 'i' && p[1] == 'B')
            p += 2;
        else if (*p == 'B' || *p == 'b')
            p++;
    } else if (*p == 'B' || *p == 'b') {
        p++;
    }
    if (*p)
        return s_why(why, whylen, S_Q " is not a size (bytes, or with a suffix: 64M, 1G)", v);
    if (x > (unsigned long long)(INT64_MAX / mult))
        return s_why(why, whylen, S_Q " is too large", v);
    *out = (int64_t)x * mult;
    return GX_OK;
}

/* "1G" when exact, else plain bytes. */
static char *s_fmt_size(int64_t v, char *buf, size_t len)
{
    static const char units[] = "KMGTP";
    int u = -1;
    while (v != 0 && u + 1 < (int)sizeof units - 1 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%" PRId64, v);
    else
        snprintf(buf, len, "%" PRId64 "%c", v, units[u]);
    return buf;
}

static int s_range(const s_key *k, int64_t x, char *why, size_t whylen)
{
    if (x >= k->min && x <= k->max)
        return GX_OK;
    if (k->type == S_SIZE) {
        char a[32], b[32], c[32];
        return s_why(why, whylen, "value %s out of range [%s, %s]", s_fmt_size(x, a, sizeof a),
                     s_fmt_size(k->min, b, sizeof b), s_fmt_size(k->max, c, sizeof c));
    }
    return s_why(why, whylen, "value %" PRId64 " out of range [%" PRId64 ", %" PRId64 "]", x,
                 k->min, k->max);
}

/* ---- setting one key ---------------------------------------------------- */

static void *s_field(gxd_config *c, const s_key *k)
{
    return (char *)c + k->off;
}

static const void *s_cfield(const gxd_config *c, const s_key *k)
{
    return (const char *)c + k->off;
}

static int *s_count(gxd_config *c, const s_key *k)
{
    return (int *)((char *)c + k->count_off);
}

/* Replace a string list with n entries, each checked. */
static int s_set_list(gxd_config *c, const s_key *k, const char *const *items, size_t n,
                      char *why, size_t whylen)
{
    if (n > (size_t)k->max)
        return s_why(why, whylen, "%zu entries given, at most %" PRId64 " allowed", n, k->max);
    for (size_t i = 0; i < n; i++) {
        if (!*items[i])
            return s_why(why, whylen, "entry %zu is empty", i + 1);
        int rc = k->check ? k->check(items[i], why, whylen) : GX_OK;
        if (rc < 0)
            return rc;
    }
    if (k->check_list) {
        int rc = k->check_list(items, n, why, whylen);
        if (rc < 0)
            return rc;
    }
    char *fresh[GXD_MAX_ENDPOINTS];
    for (size_t i = 0; i < n; i++) {
        fresh[i] = gx_strdup(items[i]);
        if (!fresh[i]) {
            while (i > 0)
                free(fresh[--i]);
            s_why(why, whylen, "out of memory");
            return GX_ENOMEM;
        }
    }
    char **arr = s_field(c, k);
    int *count = s_count(c, k);
    for (int i = 0; i < *count; i++) {
        free(arr[i]);
        arr[i] = NULL;
    }
    for (size_t i = 0; i < n; i++)
        arr[i] = fresh[i];
    *count = (int)n;
    return GX_OK;
}

/* A list given as one string: comma-separated, spaces around entries
 * ignored, "" is the empty list. */
static int s_set_list_string(gxd_config *c, const s_key *k, const char *v, char *why,
                             size_t whylen)
{
    char *copy = gx_strdup(v);
    if (!copy) {
        s_why(why, whylen, "out of memory");
        return GX_ENOMEM;
    }
    const char *items[GXD_MAX_ENDPOINTS];
    size_t n = 0;
    int rc = GX_OK;
    char *p = copy;
    while (*p == ' ')
        p++;
    if (*p) {
        for (char *tok = p;; n++) {
            char *comma = strchr(tok, ',');
            if (comma)
                *comma = '\0';
            while (*tok == ' ')
                tok++;
            for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';)
                *--e = '\0';
            if (n >= (size_t)k->max) {
                rc = s_why(why, whylen, "more than %" PRId64 " entries given", k->max);
                goto out;
            }
            items[n] = tok;
            if (!comma) {
                n++;
                break;
            }
            tok = comma + 1;
        }
    }
    rc = s_set_list(c, k, items, n, why, whylen);
out:
    free(copy);
    return rc;
}

/* Parse v for key k and store it in c. On failure c is unchanged and why
 * holds the reason ("'abc' is not an integer"). */
static int s_set_value(gxd_config *c, const s_key *k, const char *v, char *why, size_t whylen)
{
    int rc;
    switch (k->type) {
    case S_STRING: {
        char *fresh = NULL;
        if (!((k->flags & S_NULL_IS_DEFAULT) && (!*v || strcmp(v, "default") == 0))) {
            rc = k->check ? k->check(v, why, whylen) : GX_OK;
            if (rc < 0)
                return rc;
            fresh = gx_strdup(v);
            if (!fresh) {
                s_why(why, whylen, "out of memory");
                return GX_ENOMEM;
            }
        }
        char **dst = s_field(c, k);
        free(*dst);
        *dst = fresh;
        return GX_OK;
    }
    case S_STRLIST:
        return s_set_list_string(c, k, v, why, whylen);
    case S_INT:
    case S_SIZE: {
        int64_t x = 0;
        rc = k->type == S_INT ? s_parse_int(v, &x, why, whylen) : s_parse_size(v, &x, why, whylen);
        if (rc < 0)
            return rc;
        rc = s_range(k, x, why, whylen);
        if (rc < 0)
            return rc;
        *(int64_t *)s_field(c, k) = x;
        return GX_OK;
    }
    case S_LOGLEVEL: {
        gxd_log_level lvl;
        if (gxd_log_level_parse(v, &lvl) < 0) {
            char names[64] = "";
            for (int i = 0; i < GXD_LOG_LEVEL_COUNT; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         i ? ", " : "", gxd_log_level_name((gxd_log_level)i));
            return s_why(why, whylen, S_Q " is not a log level (%s)", v, names);
        }
        *(gxd_log_level *)s_field(c, k) = lvl;
        return GX_OK;
    }
    case S_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return s_why(why, whylen, S_Q " is not a boolean (true or false)", v);
        *(bool *)s_field(c, k) = strcmp(v, "true") == 0;
        return GX_OK;
    }
    abort(); /* not reached: every type is handled above */
}

static const s_key *s_find(const char *name)
{
    for (size_t i = 0; i < S_NKEYS; i++)
        if (strcmp(s_keys[i].name, name) == 0)
            return &s_keys[i];
    return NULL;
}

/* True when name is a section: some key starts with "name.". */
static bool s_is_section(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < S_NKEYS; i++)
        if (strncmp(s_keys[i].name, name, n) == 0 && s_keys[i].name[n] == '.')
            return true;
    return false;
}

/* Edit distance, for "did you mean". Names longer than 63 never match. */
static size_t s_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* "unknown key 'queue.max_job' (did you mean 'queue.max_jobs'?)" */
static void s_unknown(const char *name, char *why, size_t whylen)
{
    const char *best = NULL;
    size_t bestd = 3; /* suggest only close matches */
    for (size_t i = 0; i < S_NKEYS; i++) {
        size_t d = s_distance(name, s_keys[i].name);
        if (d < bestd) {
            bestd = d;
            best = s_keys[i].name;
        }
    }
    if (best)
        s_why(why, whylen, "unknown key " S_Q " (did you mean '%s'?)", name, best);
    else
        s_why(why, whylen, "unknown key " S_Q, name);
}

/* ---- init, fini, copy ---------------------------------------------------- */

void gxd_config_init(gxd_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < S_NKEYS; i++) {
        if (s_keys[i].type == S_STRLIST && s_keys[i].max > GXD_MAX_ENDPOINTS) {
            fprintf(stderr, "%s:%d: %s: list longer than GXD_MAX_ENDPOINTS\n", __FILE__,
                    __LINE__, s_keys[i].name);
            abort();
        }
        char why[256];
        int rc = s_set_value(c, &s_keys[i], s_keys[i].def, why, sizeof why);
        if (rc == GX_ECONFIG) { /* a bad row in the table: a bug, not a config error */
            fprintf(stderr, "%s:%d: default of %s: %s\n", __FILE__, __LINE__, s_keys[i].name,
                    why);
            abort();
        }
        /* GX_ENOMEM leaves the field NULL or empty: each has a safe meaning */
    }
}

void gxd_config_fini(gxd_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < S_NKEYS; i++) {
        const s_key *k = &s_keys[i];
        switch (k->type) {
        case S_STRING:
            free(*(char **)s_field(c, k));
            break;
        case S_STRLIST: {
            char **arr = s_field(c, k);
            for (int j = 0; j < *s_count(c, k); j++)
                free(arr[j]);
            break;
        }
        case S_INT:
        case S_SIZE:
        case S_LOGLEVEL:
        case S_BOOL:
            break;
        }
    }
    memset(c, 0, sizeof *c);
}

/* Deep copy of src into dst (uninitialised). GX_ENOMEM leaves dst empty. */
static int s_copy(gxd_config *dst, const gxd_config *src)
{
    *dst = *src;
    for (size_t i = 0; i < S_NKEYS; i++) { /* first drop borrowed pointers */
        const s_key *k = &s_keys[i];
        if (k->type == S_STRING)
            *(char **)s_field(dst, k) = NULL;
        else if (k->type == S_STRLIST)
            *s_count(dst, k) = 0;
    }
    for (size_t i = 0; i < S_NKEYS; i++) {
        const s_key *k = &s_keys[i];
        if (k->type == S_STRING) {
            const char *s = *(char *const *)s_cfield(src, k);
            if (s && !(*(char **)s_field(dst, k) = gx_strdup(s)))
                goto nomem;
        } else if (k->type == S_STRLIST) {
            char *const *from = s_cfield(src, k);
            char **to = s_field(dst, k);
            int n = *(const int *)((const char *)src + k->count_off);
            for (int j = 0; j < n; j++) {
                if (!(to[j] = gx_strdup(from[j])))
                    goto nomem;
                *s_count(dst, k) = j + 1;
            }
        }
    }
    return GX_OK;
nomem:
    gxd_config_fini(dst);
    return GX_ENOMEM;
}

/* ---- gxd_config_set ------------------------------------------------------ */

int gxd_config_set(gxd_config *c, const char *key, const char *value, char *err,
                   size_t errlen)
{
    char why[384];
    const s_key *k = key ? s_find(key) : NULL;
    if (!k) {
        s_unknown(key ? key : "", why, sizeof why);
        return gx_errf(err, errlen, GX_ECONFIG, "%s", why);
    }
    int rc = s_set_value(c, k, value ? value : "", why, sizeof why);
    if (rc < 0)
        return gx_errf(err, errlen, rc, "%s: %s", k->name, why);
    return GX_OK;
}

/* ---- gxd_config_load ----------------------------------------------------- */

/* Config files are small; this bounds what a wrong path can make us read. */
#define S_FILE_MAX (1024 * 1024)

typedef struct s_loader {
    gxd_config *c;
    yaml_document_t *doc;
    const char *path;
    char *err;
    size_t errlen;
    size_t set_at[S_NKEYS]; /* line where each key was set (duplicates), 0 = not yet */
} s_loader;

static int s_errat(s_loader *L, yaml_mark_t m, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_errat(s_loader *L, yaml_mark_t m, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gx_errf(L->err, L->errlen, status, "%s:%zu:%zu: %s", L->path, m.line + 1,
                   m.column + 1, msg);
}

/* The text of a scalar node, or NULL if it holds a NUL byte. YAML's null
 * (empty, ~, null) reads as "": the key's "no value" (default endpoint,
 * empty list), or "no value given" for a number. */
static const char *s_scalar(yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    if (strlen(v) != n->data.scalar.length)
        return NULL;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return "";
    return v;
}

static int s_load_value(s_loader *L, const s_key *k, yaml_node_t *val)
{
    char why[384];
    int rc;
    if (val->type == YAML_SCALAR_NODE) {
        const char *v = s_scalar(val);
        if (!v)
            return s_errat(L, val->start_mark, GX_ECONFIG, "%s: value contains a NUL byte",
                           k->name);
        rc = s_set_value(L->c, k, v, why, sizeof why);
        if (rc < 0)
            return s_errat(L, val->start_mark, rc, "%s: %s", k->name, why);
        return GX_OK;
    }
    if (val->type != YAML_SEQUENCE_NODE || k->type != S_STRLIST)
        return s_errat(L, val->start_mark, GX_ECONFIG, "%s: expected a single value, not a %s",
                       k->name, val->type == YAML_SEQUENCE_NODE ? "list" : "mapping");

    const char *items[GXD_MAX_ENDPOINTS];
    size_t n = 0;
    for (yaml_node_item_t *it = val->data.sequence.items.start;
         it < val->data.sequence.items.top; it++, n++) {
        yaml_node_t *item = yaml_document_get_node(L->doc, *it);
        if (n >= (size_t)k->max)
            return s_errat(L, item->start_mark, GX_ECONFIG,
                           "%s: more than %" PRId64 " entries given", k->name, k->max);
        const char *v = item->type == YAML_SCALAR_NODE ? s_scalar(item) : NULL;
        if (!v || !*v)
            return s_errat(L, item->start_mark, GX_ECONFIG,
                           "%s: entry %zu must be a non-empty string", k->name, n + 1);
        rc = k->check ? k->check(v, why, sizeof why) : GX_OK;
        if (rc < 0)
            return s_errat(L, item->start_mark, rc, "%s: %s", k->name, why);
        items[n] = v;
    }
    rc = s_set_list(L->c, k, items, n, why, sizeof why);
    if (rc < 0)
        return s_errat(L, val->start_mark, rc, "%s: %s", k->name, why);
    return GX_OK;
}

/* Apply every key of a mapping; prefix is "" at the top, else "queue". */
static int s_load_map(s_loader *L, yaml_node_t *map, const char *prefix)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
         pr++) {
        yaml_node_t *key = yaml_document_get_node(L->doc, pr->key);
        yaml_node_t *val = yaml_document_get_node(L->doc, pr->value);
        const char *kn = key->type == YAML_SCALAR_NODE ? s_scalar(key) : NULL;
        if (!kn || !*kn)
            return s_errat(L, key->start_mark, GX_ECONFIG, "keys must be non-empty names");
        char name[128];
        int len = snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", kn);
        char why[384];
        const s_key *k = len < (int)sizeof name ? s_find(name) : NULL;
        bool section = len < (int)sizeof name && s_is_section(name);

        if (val->type == YAML_MAPPING_NODE && section) {
            int rc = s_load_map(L, val, name);
            if (rc < 0)
                return rc;
            continue;
        }
        if (!k && section)
            return s_errat(L, val->start_mark, GX_ECONFIG,
                           "%s: expected a mapping of %s.* keys", name, name);
        if (!k) {
            s_unknown(name, why, sizeof why);
            return s_errat(L, key->start_mark, GX_ECONFIG, "%s", why);
        }
        size_t idx = (size_t)(k - s_keys);
        if (L->set_at[idx])
            return s_errat(L, key->start_mark, GX_ECONFIG, "%s: set twice (first on line %zu)",
                           k->name, L->set_at[idx]);
        L->set_at[idx] = key->start_mark.line + 1;
        int rc = s_load_value(L, k, val);
        if (rc < 0)
            return rc;
    }
    return GX_OK;
}

/* Line and column of a byte offset (for libyaml reader errors, which carry
 * only the offset). */
static yaml_mark_t s_mark_at(const char *text, size_t len, size_t offset)
{
    yaml_mark_t m = {0};
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n') {
            m.line++;
            m.column = 0;
        } else {
            m.column++;
        }
    }
    return m;
}

static int s_yaml_error(s_loader *L, yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_MEMORY_ERROR)
        return gx_errf(L->err, L->errlen, GX_ENOMEM, "%s: out of memory", L->path);
    yaml_mark_t m = p->error == YAML_READER_ERROR ? s_mark_at(text, len, p->problem_offset)
                                                  : p->problem_mark;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->context)
        return s_errat(L, m, GX_ECONFIG, "YAML syntax error: %s (%s at line %zu, column %zu)",
                       problem, p->context, p->context_mark.line + 1,
                       p->context_mark.column + 1);
    return s_errat(L, m, GX_ECONFIG, "YAML syntax error: %s", problem);
}

/* Read the whole file into a NUL-terminated buffer (caller frees). */
static int s_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gx_errf(err, errlen, GX_EIO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = malloc(S_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, S_FILE_MAX + 1, f);
    int rc = GX_OK;
    if (ferror(f))
        rc = gx_errf(err, errlen, GX_EIO, "%s: cannot read: %s", path, strerror(errno));
    else if (n > S_FILE_MAX)
        rc = gx_errf(err, errlen, GX_ECONFIG, "%s: larger than %d bytes; not a config file?",
                     path, S_FILE_MAX);
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return GX_OK;
}

/* Loads into a copy of c and installs it only when the whole file is good,
 * so a failed load leaves c as it was. */
int gxd_config_load(gxd_config *c, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = s_read_file(path, &text, &len, err, errlen);
    if (rc < 0)
        return rc;

    gxd_config next;
    rc = s_copy(&next, c);
    if (rc < 0) {
        free(text);
        return gx_errf(err, errlen, rc, "%s: out of memory", path);
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    s_loader L = {.c = &next, .doc = &doc, .path = path, .err = err, .errlen = errlen};
    if (!yaml_parser_initialize(&parser)) {
        rc = gx_errf(err, errlen, GX_ENOMEM, "%s: out of memory", path);
        goto fini_next;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = s_yaml_error(&L, &parser, text, len);
        goto delete_parser;
    }
    /* An empty file, or one holding only comments or "~", sets nothing. */
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    const char *rv = root && root->type == YAML_SCALAR_NODE ? s_scalar(root) : NULL;
    if (root && root->type == YAML_MAPPING_NODE)
        rc = s_load_map(&L, root, "");
    else if (root && !(rv && !*rv))
        rc = s_errat(&L, root->start_mark, GX_ECONFIG,
                     "expected a mapping of keys (key: value) at the top level");
    yaml_document_delete(&doc);
    if (rc < 0)
        goto delete_parser;

    /* A second document ("---" followed by more keys) is a mistake. */
    if (!yaml_parser_load(&parser, &doc)) {
        rc = s_yaml_error(&L, &parser, text, len);
        goto delete_parser;
    }
    root = yaml_document_get_root_node(&doc);
    if (root)
        rc = s_errat(&L, root->start_mark, GX_ECONFIG,
                     "a second YAML document; the file must hold one");
    yaml_document_delete(&doc);

delete_parser:
    yaml_parser_delete(&parser);
fini_next:
    free(text);
    if (rc < 0) {
        gxd_config_fini(&next);
        return rc;
    }
    gxd_config_fini(c);
    *c = next;
    return GX_OK;
}

/* ---- gxd_config_dump ----------------------------------------------------- */

/* A YAML double-quoted string. */
static void s_dump_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void s_dump_value(FILE *out, const gxd_config *c, const s_key *k)
{
    const void *f = s_cfield(c, k);
    switch (k->type) {
    case S_STRING: {
        const char *s = *(char *const *)f;
        if (!s)
            fputs((k->flags & S_NULL_IS_DEFAULT) ? "default" : "\"\"", out);
        else
            s_dump_string(out, s);
        break;
    }
    case S_STRLIST: {
        char *const *arr = f;
        int n = *(const int *)((const char *)c + k->count_off);
        fputc('[', out);
        for (int i = 0; i < n; i++) {
            if (i)
                fputs(", ", out);
            s_dump_string(out, arr[i]);
        }
        fputc(']', out);
        break;
    }
    case S_INT:
        fprintf(out, "%" PRId64, *(const int64_t *)f);
        break;
    case S_SIZE: {
        char buf[32];
        fputs(s_fmt_size(*(const int64_t *)f, buf, sizeof buf), out);
        break;
    }
    case S_LOGLEVEL:
        fputs(gxd_log_level_name(*(const gxd_log_level *)f), out);
        break;
    case S_BOOL:
        fputs(*(const bool *)f ? "true" : "false", out);
        break;
    }
}

/* Length of the section part of a dotted name ("queue" in "queue.max_jobs"),
 * 0 for a top-level key. */
static size_t s_section_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

/* Length of the longest run of whole leading components that sections a and
 * b (of lengths na, nb) share: 5 for "queue" and "queue", 0 for "queue" and
 * "queues". */
static size_t s_common_sections(const char *a, size_t na, const char *b, size_t nb)
{
    size_t common = 0;
    for (size_t j = 0;; j++) {
        bool end_a = j == na || a[j] == '.', end_b = j == nb || b[j] == '.';
        if (j > 0 && end_a && end_b)
            common = j; /* a[0..j) == b[0..j), ending at a boundary in both */
        if (j == na || j == nb || a[j] != b[j])
            return common;
    }
}

void gxd_config_dump(const gxd_config *c, FILE *out)
{
    fputs("# gexecd configuration: every key with its current value\n", out);
    const char *prev = "";
    size_t prevsec = 0;
    for (size_t i = 0; i < S_NKEYS; i++) {
        const s_key *k = &s_keys[i];
        size_t sec = s_section_len(k->name);
        /* Open the sections this key is in that the previous key was not. */
        size_t common = s_common_sections(k->name, sec, prev, prevsec);
        int depth = 0;
        for (size_t j = 0; j < common; j++)
            depth += k->name[j] == '.';
        depth += common > 0;
        for (size_t start = common ? common + 1 : 0; start < sec;) {
            const char *dot = memchr(k->name + start, '.', sec - start);
            size_t end = dot ? (size_t)(dot - k->name) : sec;
            fprintf(out, "%*s%.*s:\n", 2 * depth, "", (int)(end - start), k->name + start);
            depth++;
            start = end + 1;
        }
        const char *leaf = k->name + (sec ? sec + 1 : 0);
        fprintf(out, "%*s# %s\n%*s%s: ", 2 * depth, "", k->doc, 2 * depth, "", leaf);
        s_dump_value(out, c, k);
        fputc('\n', out);
        prev = k->name;
        prevsec = sec;
    }
}

/* ---- keys one by one (SIGHUP compares the old and new values) ----------- */

size_t gxd_config_nkeys(void)
{
    return S_NKEYS;
}

const char *gxd_config_key_name(size_t i)
{
    return i < S_NKEYS ? s_keys[i].name : NULL;
}

int gxd_config_value_text(const gxd_config *c, size_t i, char *buf, size_t len)
{
    if (i >= S_NKEYS || !len)
        return GX_EINVAL;
    FILE *f = fmemopen(buf, len, "w");
    if (!f)
        return GX_ENOMEM;
    s_dump_value(f, c, &s_keys[i]);
    bool cut = ftell(f) >= (long)len - 1;
    fclose(f);
    return cut ? GX_ELIMIT : GX_OK;
}

/* graphs.preload: PATH or NAME=PATH; the file is read when gexecd starts. */
static int s_check_preload(const char *v, char *why, size_t whylen)
{
    char name[GXD_MAX_GRAPH_NAME];
    const char *path;
    return gxd_preload_parse(v, name, &path, why, whylen);
}

/* log_file: "" or an absolute path; it is opened when gexecd detaches. */
static int s_check_log_file(const char *v, char *why, size_t whylen)
{
    if (!*v || v[0] == '/')
        return GX_OK;
    return s_why(why, whylen, "'%s' is not an absolute path (or \"\" for syslog)", v);
}
