/*
 * Configuration: defaults, the shipped conf/gexecd.yaml, overrides from a
 * file and from flags, and the exact file:line:column of every error kind.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gexec/status.h>

#include "daemon/config.h"
#include "tests/testutil.h"

#define KIB INT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

/* Writes text to dir/name; returns the path (caller frees). */
static char *s_write(const char *dir, const char *name, const char *text)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    ck_assert_ptr_nonnull(path);
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return path;
}

static void s_assert_defaults(const gxd_config *c)
{
    ck_assert_ptr_null(c->socket);
    ck_assert_int_eq(c->n_tcp, 0);
    ck_assert_str_eq(c->cpus, "all");
    ck_assert_int_eq(c->log_level, GXD_LOG_INFO);
    ck_assert_int_eq(c->queue_max_jobs, 1024);
    ck_assert_int_eq(c->queue_max_bytes, GIB);
    ck_assert_int_eq(c->limits_max_message_bytes, GIB);
    ck_assert_int_eq(c->limits_max_tensor_bytes, GIB);
    ck_assert_int_eq(c->limits_max_nodes, 100000);
    ck_assert_int_eq(c->limits_max_arena_bytes, 4 * GIB);
    ck_assert_int_eq(c->graphs_max, 256);
    ck_assert_int_eq(c->shutdown_grace_ms, 10000);
    ck_assert(c->compiler_fuse);
    ck_assert(c->sched_device_graphs);
    ck_assert(c->compiler_replan);
    ck_assert_int_eq(c->compiler_replan_ms, 1000);
    ck_assert_int_eq(c->compiler_replan_min_jobs, 100);
    ck_assert_str_eq(c->profile_dir, "default");
}

/* The whole configuration as text (gxd_config_dump); caller frees. */
static char *s_dump(const gxd_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    gxd_config_dump(c, f);
    fclose(f);
    return buf;
}

/* Sets every key to a value other than its default. */
static void s_perturb(gxd_config *c)
{
    static const char *const kv[][2] = {
        {"socket", "ipc:///tmp/other.sock"},
        {"tcp", "tcp://127.0.0.1:5555"},
        {"cpus", "0"},
        {"log_level", "debug"},
        {"queue.max_jobs", "7"},
        {"queue.max_bytes", "7M"},
        {"limits.max_message_bytes", "7M"},
        {"limits.max_tensor_bytes", "7M"},
        {"limits.max_nodes", "7"},
        {"limits.max_arena_bytes", "7M"},
        {"graphs.max", "7"},
        {"shutdown_grace_ms", "7"},
        {"compiler.fuse", "false"},
        {"compiler.replan", "false"},
        {"compiler.replan_ms", "70"},
        {"compiler.replan_min_jobs", "7"},
        {"profile.dir", "/tmp/profiles"},
    };
    char err[256];
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        ck_assert_msg(gxd_config_set(c, kv[i][0], kv[i][1], err, sizeof err) == GX_OK, "%s: %s",
                      kv[i][0], err);
}

START_TEST(test_defaults)
{
    gxd_config c;
    gxd_config_init(&c);
    s_assert_defaults(&c);
    gxd_config_fini(&c);
    gxd_config_fini(&c); /* fini leaves an empty config that may be finished again */
}
END_TEST

/* The shipped file names every key (each perturbed value is overwritten) and
 * sets each to its default. */
START_TEST(test_shipped_file)
{
    gxd_config c, d;
    char err[512];
    gxd_config_init(&c);
    gxd_config_init(&d);
    s_perturb(&c);
    int rc = gxd_config_load(&c, gxt_srcpath("conf/gexecd.yaml"), err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    s_assert_defaults(&c);
    char *a = s_dump(&c), *b = s_dump(&d);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    gxd_config_fini(&c);
    gxd_config_fini(&d);
}
END_TEST

START_TEST(test_file_overrides)
{
    char *dir = gxt_tmpdir();
    char *path = s_write(dir, "gexecd.yaml",
                         "# overrides\n"
                         "socket: ipc:///tmp/x.sock\n"
                         "tcp:\n"
                         "  - tcp://127.0.0.1:5555\n"
                         "  - \"tcp://[::1]:5556\"\n"
                         "cpus: \"0-1\"\n"
                         "log_level: warn\n"
                         "queue:\n"
                         "  max_jobs: 64\n"
                         "  max_bytes: 64M\n"
                         "limits: {max_tensor_bytes: 512MiB, max_nodes: 5000}\n"
                         "limits.max_arena_bytes: 2G\n"
                         "graphs:\n"
                         "  max: 16\n");
    gxd_config c;
    char err[512];
    gxd_config_init(&c);
    int rc = gxd_config_load(&c, path, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_str_eq(c.socket, "ipc:///tmp/x.sock");
    ck_assert_int_eq(c.n_tcp, 2);
    ck_assert_str_eq(c.tcp[0], "tcp://127.0.0.1:5555");
    ck_assert_str_eq(c.tcp[1], "tcp://[::1]:5556");
    ck_assert_str_eq(c.cpus, "0-1");
    ck_assert_int_eq(c.log_level, GXD_LOG_WARN);
    ck_assert_int_eq(c.queue_max_jobs, 64);
    ck_assert_int_eq(c.queue_max_bytes, 64 * MIB);
    ck_assert_int_eq(c.limits_max_tensor_bytes, 512 * MIB);
    ck_assert_int_eq(c.limits_max_nodes, 5000);
    ck_assert_int_eq(c.limits_max_arena_bytes, 2 * GIB);
    ck_assert_int_eq(c.graphs_max, 16);
    /* keys the file does not name keep their values */
    ck_assert_int_eq(c.limits_max_message_bytes, GIB);
    ck_assert_int_eq(c.shutdown_grace_ms, 10000);

    /* A second file applies on top; null values mean "default" / empty. */
    free(path);
    path = s_write(dir, "more.yaml", "socket: ~\ntcp:\nshutdown_grace_ms: 0\n");
    rc = gxd_config_load(&c, path, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_ptr_null(c.socket);
    ck_assert_int_eq(c.n_tcp, 0);
    ck_assert_int_eq(c.shutdown_grace_ms, 0);
    ck_assert_int_eq(c.graphs_max, 16);

    /* A list may also be given as one comma-separated string. */
    free(path);
    path = s_write(dir, "list.yaml", "tcp: tcp://127.0.0.1:1, tcp://127.0.0.1:2\n");
    rc = gxd_config_load(&c, path, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s", err);
    ck_assert_int_eq(c.n_tcp, 2);
    ck_assert_str_eq(c.tcp[1], "tcp://127.0.0.1:2");

    /* Empty and comment-only files set nothing. */
    free(path);
    path = s_write(dir, "empty.yaml", "# nothing here\n");
    ck_assert_int_eq(gxd_config_load(&c, path, err, sizeof err), GX_OK);
    ck_assert_int_eq(c.graphs_max, 16);
    free(path);
    path = s_write(dir, "empty2.yaml", "");
    ck_assert_int_eq(gxd_config_load(&c, path, err, sizeof err), GX_OK);

    gxd_config_fini(&c);
    free(path);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

/* Each bad file, and the message after "path:". */
static const struct {
    const char *text;
    const char *want;
} s_bad_files[] = {
    {"queue:\n  max_jobs: abc\n", "2:13: queue.max_jobs: 'abc' is not an integer"},
    {"queue:\n  max_job: 5\n",
     "2:3: unknown key 'queue.max_job' (did you mean 'queue.max_jobs'?)"},
    {"frobnicate: 1\n", "1:1: unknown key 'frobnicate'"},
    {"queue:\n  max_jobs: 0\n", "2:13: queue.max_jobs: value 0 out of range [1, 1000000]"},
    {"queue.max_jobs: 1000001\n",
     "1:17: queue.max_jobs: value 1000001 out of range [1, 1000000]"},
    {"queue:\n  max_jobs:\n", "2:12: queue.max_jobs: no value given"},
    {"limits:\n  max_tensor_bytes: 12Q\n",
     "2:21: limits.max_tensor_bytes: '12Q' is not a size (bytes, or with a suffix: 64M, 1G)"},
    {"limits:\n  max_arena_bytes: 512\n",
     "2:20: limits.max_arena_bytes: value 512 out of range [1K, 1P]"},
    {"log_level: loud\n", "1:12: log_level: 'loud' is not a log level (error, warn, info, debug)"},
    {"compiler:\n  fuse: yes\n", "2:9: compiler.fuse: 'yes' is not a boolean (true or false)"},
    {"compiler:\n  replan_ms: 5\n",
     "2:14: compiler.replan_ms: value 5 out of range [10, 86400000]"},
    {"socket: /run/x.sock\n",
     "1:9: socket: '/run/x.sock' is not an endpoint (ipc:///path/to/sock or tcp://host:port)"},
    {"socket_mode: 0999\n",
     "1:14: socket_mode: '0999' is not a file mode (octal, 0 to 0777, such as 0660)"},
    {"socket_group: no-such-group-gx\n",
     "1:15: socket_group: 'no-such-group-gx' is not a group on this system (a name or a gid)"},
    {"limits:\n  max_memory_bytes: -1\n",
     "2:21: limits.max_memory_bytes: '-1' is not a size (bytes, or with a suffix: 64M, 1G)"},
    {"tcp:\n  - tcp://127.0.0.1:1\n  - ipc:///x\n",
     "3:5: tcp: 'ipc:///x' is not a tcp:// endpoint (tcp://127.0.0.1:5555)"},
    {"tcp: [tcp://a:1, tcp://a:2, tcp://a:3, tcp://a:4, tcp://a:5, tcp://a:6, tcp://a:7, "
     "tcp://a:8, tcp://a:9]\n",
     "1:95: tcp: more than 8 entries given"},
    {"tcp: [[tcp://a:1]]\n", "1:7: tcp: entry 1 must be a non-empty string"},
    {"cpus: \"0-\"\n", "1:7: cpus: '0-' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                      "expected a CPU number after '-' at offset 2"},
    {"queue: 5\n", "1:8: queue: expected a mapping of queue.* keys"},
    {"queue:\n  max_jobs: [1]\n", "2:13: queue.max_jobs: expected a single value, not a list"},
    {"log_level: {a: b}\n", "1:12: log_level: expected a single value, not a mapping"},
    {"log_level: info\nlog_level: warn\n", "2:1: log_level: set twice (first on line 1)"},
    {"queue:\n  max_jobs: 5\nqueue.max_jobs: 6\n",
     "3:1: queue.max_jobs: set twice (first on line 2)"},
    {"- log_level\n", "1:1: expected a mapping of keys (key: value) at the top level"},
    {"log_level: info\n---\nlog_level: warn\n",
     "3:1: a second YAML document; the file must hold one"},
    {"queue:\n  max_jobs: 5\n bad: 1\n",
     "3:2: YAML syntax error: did not find expected key (while parsing a block mapping at line "
     "1, column 1)"},
    {"log_level: [info\n", "2:1: YAML syntax error: did not find expected ',' or ']' (while "
                           "parsing a flow sequence at line 1, column 12)"},
    {"log_level: \"info\x01\"\n", "1:17: YAML syntax error: control characters are not allowed"},
    {"log_level: info\ncpus: \xff\n", "2:7: YAML syntax error: invalid leading UTF-8 octet"},
};

START_TEST(test_file_errors)
{
    char *dir = gxt_tmpdir();
    char *path = s_write(dir, "gexecd.yaml", s_bad_files[_i].text);
    gxd_config c;
    char err[512], want[1024];
    gxd_config_init(&c);
    int rc = gxd_config_load(&c, path, err, sizeof err);
    ck_assert_int_eq(rc, GX_ECONFIG);
    snprintf(want, sizeof want, "%s:%s", path, s_bad_files[_i].want);
    ck_assert_str_eq(err, want);
    /* a failed load changes nothing */
    s_assert_defaults(&c);
    gxd_config_fini(&c);
    free(path);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_missing_file)
{
    gxd_config c;
    char err[512];
    gxd_config_init(&c);
    int rc = gxd_config_load(&c, "/nonexistent/gexecd.yaml", err, sizeof err);
    ck_assert_int_eq(rc, GX_EIO);
    ck_assert_str_eq(err, "/nonexistent/gexecd.yaml: cannot open: No such file or directory");
    s_assert_defaults(&c);
    gxd_config_fini(&c);
}
END_TEST

START_TEST(test_set)
{
    gxd_config c;
    char err[512];
    gxd_config_init(&c);
    static const struct {
        const char *v;
        int64_t want;
    } sizes[] = {
        {"1024", 1024},  {"4K", 4 * KIB},   {"64M", 64 * MIB},    {"64m", 64 * MIB},
        {"64MiB", 64 * MIB}, {"1G", GIB},   {"1gb", GIB},         {"2048B", 2048},
        {"3T", 3 * 1024 * GIB}, {"1P", 1024 * 1024 * GIB},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        ck_assert_msg(gxd_config_set(&c, "queue.max_bytes", sizes[i].v, err, sizeof err) == GX_OK,
                      "%s: %s", sizes[i].v, err);
        ck_assert_int_eq(c.queue_max_bytes, sizes[i].want);
    }
    ck_assert_int_eq(gxd_config_set(&c, "queue.max_jobs", "1000000", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.queue_max_jobs, 1000000);
    ck_assert_int_eq(gxd_config_set(&c, "queue.max_jobs", "1", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.queue_max_jobs, 1);
    ck_assert_int_eq(gxd_config_set(&c, "log_level", "DEBUG", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.log_level, GXD_LOG_DEBUG);
    ck_assert_int_eq(gxd_config_set(&c, "socket", "tcp://127.0.0.1:7", err, sizeof err), GX_OK);
    ck_assert_str_eq(c.socket, "tcp://127.0.0.1:7");
    ck_assert_int_eq(gxd_config_set(&c, "socket", "default", err, sizeof err), GX_OK);
    ck_assert_ptr_null(c.socket);
    ck_assert_int_eq(gxd_config_set(&c, "cpus", "0-3,6", err, sizeof err), GX_OK);
    ck_assert_str_eq(c.cpus, "0-3,6");
    ck_assert_int_eq(gxd_config_set(&c, "shutdown_grace_ms", "0", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.shutdown_grace_ms, 0);

    static const struct {
        const char *key, *v, *want;
    } bad[] = {
        {"queue.max_jobs", "abc", "queue.max_jobs: 'abc' is not an integer"},
        {"queue.max_jobs", "12abc", "queue.max_jobs: '12abc' is not an integer"},
        {"queue.max_jobs", " 5", "queue.max_jobs: ' 5' is not an integer"},
        {"queue.max_jobs", "", "queue.max_jobs: no value given"},
        {"queue.max_jobs", "0", "queue.max_jobs: value 0 out of range [1, 1000000]"},
        {"queue.max_jobs", "-5", "queue.max_jobs: value -5 out of range [1, 1000000]"},
        {"queue.max_jobs", "1000001", "queue.max_jobs: value 1000001 out of range [1, 1000000]"},
        {"queue.max_jobs", "99999999999999999999",
         "queue.max_jobs: '99999999999999999999' is too large"},
        {"shutdown_grace_ms", "3600001",
         "shutdown_grace_ms: value 3600001 out of range [0, 3600000]"},
        {"queue.max_bytes", "-1",
         "queue.max_bytes: '-1' is not a size (bytes, or with a suffix: 64M, 1G)"},
        {"queue.max_bytes", "1.5G",
         "queue.max_bytes: '1.5G' is not a size (bytes, or with a suffix: 64M, 1G)"},
        {"queue.max_bytes", "1GG",
         "queue.max_bytes: '1GG' is not a size (bytes, or with a suffix: 64M, 1G)"},
        {"queue.max_bytes", "G", "queue.max_bytes: 'G' is not a size (bytes, or with a suffix: "
                                 "64M, 1G)"},
        {"queue.max_bytes", "1023", "queue.max_bytes: value 1023 out of range [1K, 1P]"},
        {"queue.max_bytes", "2P", "queue.max_bytes: value 2P out of range [1K, 1P]"},
        {"queue.max_bytes", "9000000P", "queue.max_bytes: '9000000P' is too large"},
        {"log_level", "verbose",
         "log_level: 'verbose' is not a log level (error, warn, info, debug)"},
        {"socket", "gexecd.sock",
         "socket: 'gexecd.sock' is not an endpoint (ipc:///path/to/sock or tcp://host:port)"},
        {"socket", "ipc://",
         "socket: 'ipc://' is not an endpoint (ipc:///path/to/sock or tcp://host:port)"},
        {"cpus", "a", "cpus: 'a' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                      "expected a CPU number at offset 0"},
        {"cpus", "3-1", "cpus: '3-1' is not a CPU list (\"all\" or numbers like \"0-3,6\"): "
                        "range 3-1 runs backwards"},
        {"queue.max_job", "5", "unknown key 'queue.max_job' (did you mean 'queue.max_jobs'?)"},
        {"queue", "5", "unknown key 'queue'"},
        {"nonsense.key", "5", "unknown key 'nonsense.key'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = gxd_config_set(&c, bad[i].key, bad[i].v, err, sizeof err);
        ck_assert_msg(rc == GX_ECONFIG, "%s=%s: rc %d", bad[i].key, bad[i].v, rc);
        ck_assert_str_eq(err, bad[i].want);
    }
    /* the failures above left the last good values */
    ck_assert_int_eq(c.queue_max_jobs, 1);
    ck_assert_int_eq(c.queue_max_bytes, 1024 * 1024 * GIB);
    ck_assert_str_eq(c.cpus, "0-3,6");
    ck_assert_int_eq(c.log_level, GXD_LOG_DEBUG);
    gxd_config_fini(&c);
}
END_TEST

START_TEST(test_tcp_list)
{
    gxd_config c;
    char err[512];
    gxd_config_init(&c);
    ck_assert_int_eq(gxd_config_set(&c, "tcp", "tcp://127.0.0.1:1, tcp://[::1]:2", err,
                                    sizeof err),
                     GX_OK);
    ck_assert_int_eq(c.n_tcp, 2);
    ck_assert_str_eq(c.tcp[0], "tcp://127.0.0.1:1");
    ck_assert_str_eq(c.tcp[1], "tcp://[::1]:2");

    static const struct {
        const char *v, *want;
    } bad[] = {
        {"tcp://a:1,,tcp://b:2", "tcp: entry 2 is empty"},
        {"tcp://a:1,", "tcp: entry 2 is empty"},
        {"http://a:1", "tcp: 'http://a:1' is not a tcp:// endpoint (tcp://127.0.0.1:5555)"},
        {"tcp://", "tcp: 'tcp://' is not a tcp:// endpoint (tcp://127.0.0.1:5555)"},
        {"tcp://a:1,tcp://a:2,tcp://a:3,tcp://a:4,tcp://a:5,tcp://a:6,tcp://a:7,tcp://a:8,"
         "tcp://a:9",
         "tcp: more than 8 entries given"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(gxd_config_set(&c, "tcp", bad[i].v, err, sizeof err), GX_ECONFIG);
        ck_assert_str_eq(err, bad[i].want);
        ck_assert_int_eq(c.n_tcp, 2); /* unchanged */
    }
    ck_assert_int_eq(gxd_config_set(&c, "tcp",
                                    "tcp://a:1,tcp://a:2,tcp://a:3,tcp://a:4,tcp://a:5,"
                                    "tcp://a:6,tcp://a:7,tcp://a:8",
                                    err, sizeof err),
                     GX_OK);
    ck_assert_int_eq(c.n_tcp, GXD_MAX_ENDPOINTS);
    ck_assert_str_eq(c.tcp[7], "tcp://a:8");
    ck_assert_int_eq(gxd_config_set(&c, "tcp", "", err, sizeof err), GX_OK);
    ck_assert_int_eq(c.n_tcp, 0);
    gxd_config_fini(&c);
}
END_TEST

/* limits.priority_users: names, uids and self, checked when set. */
START_TEST(test_priority_users)
{
    gxd_config c;
    char err[512];
    gxd_config_init(&c);
    ck_assert_int_eq(c.limits_max_client_priority, 0);
    ck_assert_int_eq(c.n_limits_priority_users, 2);
    ck_assert_str_eq(c.limits_priority_users[0], "root");
    ck_assert_str_eq(c.limits_priority_users[1], "self");
    ck_assert_int_eq(gxd_config_set(&c, "limits.priority_users", "self, 0, 4242, root", err,
                                    sizeof err),
                     GX_OK);
    ck_assert_int_eq(c.n_limits_priority_users, 4);
    uid_t uid = 1;
    ck_assert_int_eq(gxd_config_user_uid("self", &uid, err, sizeof err), GX_OK);
    ck_assert_int_eq(uid, geteuid());
    ck_assert_int_eq(gxd_config_user_uid("root", &uid, err, sizeof err), GX_OK);
    ck_assert_int_eq(uid, 0);
    ck_assert_int_eq(gxd_config_user_uid("4242", &uid, err, sizeof err), GX_OK);
    ck_assert_int_eq(uid, 4242);
    ck_assert_int_eq(gxd_config_set(&c, "limits.priority_users", "root, no-such-user-here", err,
                                    sizeof err),
                     GX_ECONFIG);
    ck_assert_str_eq(err, "limits.priority_users: 'no-such-user-here' is not a user on this "
                          "system (a name, a uid or self)");
    ck_assert_int_eq(c.n_limits_priority_users, 4); /* unchanged */
    ck_assert_int_eq(gxd_config_set(&c, "limits.max_client_priority", "101", err, sizeof err),
                     GX_ECONFIG);
    gxd_config_fini(&c);
}
END_TEST

/* gxd_config_dump writes YAML that loads back to the same configuration. */
START_TEST(test_dump_roundtrip)
{
    gxd_config c, d;
    char err[512];
    gxd_config_init(&c);
    s_perturb(&c);
    ck_assert_int_eq(gxd_config_set(&c, "tcp", "tcp://127.0.0.1:1,tcp://[::1]:2", err,
                                    sizeof err),
                     GX_OK);
    ck_assert_int_eq(gxd_config_set(&c, "socket", "ipc:///tmp/we\"ird\\name", err, sizeof err),
                     GX_OK);
    ck_assert_int_eq(gxd_config_set(&c, "limits.max_arena_bytes", "1025", err, sizeof err),
                     GX_OK);
    char *text = s_dump(&c);
    ck_assert_ptr_nonnull(strstr(text, "queue:\n  # "));
    ck_assert_ptr_nonnull(strstr(text, "\n  max_jobs: 7\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  max_bytes: 7M\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n  max_arena_bytes: 1025\n"));

    char *dir = gxt_tmpdir();
    char *path = s_write(dir, "dump.yaml", text);
    gxd_config_init(&d);
    int rc = gxd_config_load(&d, path, err, sizeof err);
    ck_assert_msg(rc == GX_OK, "%s\n%s", err, text);
    ck_assert_str_eq(d.socket, "ipc:///tmp/we\"ird\\name");
    ck_assert_int_eq(d.n_tcp, 2);
    ck_assert_str_eq(d.tcp[1], "tcp://[::1]:2");
    char *again = s_dump(&d);
    ck_assert_str_eq(text, again);

    /* the dump of the defaults loads back to the defaults */
    gxd_config_fini(&d);
    gxd_config_init(&d);
    free(text);
    text = s_dump(&d);
    free(path);
    path = s_write(dir, "defaults.yaml", text);
    ck_assert_int_eq(gxd_config_load(&c, path, err, sizeof err), GX_OK);
    s_assert_defaults(&c);

    free(again);
    free(text);
    free(path);
    gxt_rmtree(dir);
    free(dir);
    gxd_config_fini(&c);
    gxd_config_fini(&d);
}
END_TEST

/* gpus: all, none, or a list of CUDA device numbers, in YAML or as one
 * string; one GPU only for now (multi-GPU is not built): a longer list,
 * or all/none inside a list, is refused with the reason. */
START_TEST(test_gpus_list)
{
    char *dir = gxt_tmpdir(), err[512];
    gxd_config c;
    gxd_config_init(&c);
    ck_assert_int_eq(c.n_gpus, 1);
    ck_assert_str_eq(c.gpus[0], "all");
    char *path = s_write(dir, "one.yaml", "gpus: [1]\n");
    ck_assert_msg(gxd_config_load(&c, path, err, sizeof err) == GX_OK, "%s", err);
    ck_assert_int_eq(c.n_gpus, 1);
    ck_assert_str_eq(c.gpus[0], "1");
    free(path);
    path = s_write(dir, "two.yaml", "gpus: [0, 2]\n");
    ck_assert_int_eq(gxd_config_load(&c, path, err, sizeof err), GX_ECONFIG);
    ck_assert_msg(strstr(err, "two.yaml:1:") && strstr(err, "2 GPUs listed") &&
                      strstr(err, "multi-GPU is not built"),
                  "%s", err);
    ck_assert_str_eq(c.gpus[0], "1"); /* unchanged */
    ck_assert_int_eq(gxd_config_set(&c, "gpus", "0, 2", err, sizeof err), GX_ECONFIG);
    ck_assert_int_eq(gxd_config_set(&c, "gpus", "all, 1", err, sizeof err), GX_ECONFIG);
    ck_assert_msg(strstr(err, "all stands alone"), "%s", err);
    ck_assert_int_eq(gxd_config_set(&c, "gpus", "[0]", err, sizeof err), GX_ECONFIG);
    ck_assert_msg(strstr(err, "is not all, none or a CUDA device number"), "%s", err);
    ck_assert_int_eq(gxd_config_set(&c, "gpus", "none", err, sizeof err), GX_OK);
    ck_assert_str_eq(c.gpus[0], "none");
    ck_assert_int_eq(gxd_config_set(&c, "gpus", "3", err, sizeof err), GX_OK);
    ck_assert_str_eq(c.gpus[0], "3");
    gxd_config_fini(&c);
    free(path);
    gxt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_gpus_list);
    tcase_add_test(tc, test_shipped_file);
    tcase_add_test(tc, test_file_overrides);
    tcase_add_loop_test(tc, test_file_errors, 0, (int)(sizeof s_bad_files / sizeof s_bad_files[0]));
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_tcp_list);
    tcase_add_test(tc, test_priority_users);
    tcase_add_test(tc, test_dump_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}
