/*
 * Shared test helpers: the suite list, float comparison, and a real gexecd
 * started on a temporary socket for end-to-end tests.
 */
#ifndef GX_TESTUTIL_H
#define GX_TESTUTIL_H

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/team.h"

Suite *status_suite(void);
Suite *tune_suite(void);
Suite *tune_upstream_suite(void);
Suite *wire_suite(void);
Suite *npy_suite(void);
Suite *yaml_suite(void);
Suite *onnx_suite(void);
Suite *onnx_ms_suite(void);
Suite *f16_suite(void);
Suite *ops_suite(void);
Suite *ops_math_suite(void);
Suite *ops_logic_suite(void);
Suite *ops_reduce_suite(void);
Suite *ops_conv_suite(void);
Suite *ops_nn_suite(void);
Suite *ops_shape_suite(void);
Suite *ops_loss_suite(void);
Suite *ops_quant_suite(void);
Suite *ops_rnn_suite(void);
Suite *ops_signal_suite(void);
Suite *ops_vision_suite(void);
Suite *ops_text_suite(void);
Suite *ml_suite(void);
Suite *ops_training_suite(void);
Suite *ops_random_suite(void);
Suite *ops_new_suite(void);
Suite *control_suite(void);
Suite *sequence_suite(void);
Suite *strings_suite(void);
Suite *par_suite(void);
Suite *modes_suite(void);
Suite *batch_suite(void);
Suite *batching_suite(void);
Suite *fuse_suite(void);
Suite *rewrite_suite(void);
Suite *gemm_suite(void);
Suite *layout_suite(void);
Suite *layout_pass_suite(void);
Suite *layout_ops_suite(void);
Suite *layout_conv_suite(void);
Suite *memplan_suite(void);
Suite *partition_suite(void);
Suite *queue_suite(void);
Suite *policy_suite(void);
Suite *config_suite(void);
Suite *topo_suite(void);
Suite *e2e_suite(void);
Suite *explain_suite(void);
Suite *hostile_suite(void);
Suite *fuzz_suite(void);
Suite *profile_suite(void);
Suite *replan_suite(void);
Suite *budget_suite(void);
Suite *metrics_suite(void);
Suite *modelctl_suite(void);
Suite *artifact_suite(void);
Suite *shm_suite(void);
Suite *ring_suite(void);
Suite *curve_suite(void);
Suite *multi_suite(void);

/* True when |a[i]-b[i]| <= atol + rtol*|b[i]| for all i; prints the first
 * mismatch to stderr. */
bool gxt_allclose(const float *a, const float *b, size_t n, float rtol, float atol);

struct gx_graph;
/* Add constant `name` (dtype dt, shape, data copied) to g; fails the test
 * on error. dt is a gx_dtype. */
void gxt_const(struct gx_graph *g, const char *name, int dt, int ndim, const int64_t *shape,
               const void *data);

/* A graph whose subgraphs nest `levels` deep (docs/graph-format.md):
 * inputs x (float32 [2]) and c (bool scalar); node "if1" is If(c) whose
 * then_branch holds node "if2", and so on down to "if<levels>", whose
 * then_branch (level `levels`) is Add(x, Constant 1) with the constant a
 * tensor attribute, the deepest msgpack a graph at that level can need.
 * Every else_branch is Identity(x). Output y0: x + 1 when c, else x.
 * levels >= 1. */
struct gx_graph *gxt_nested_if(int levels);

/* Path of a file in the source tree (examples/..., tests/fuzz/...); static
 * buffer, valid until the next call (so copy it before calling again). */
const char *gxt_srcpath(const char *rel);
/* A fresh temporary directory (mkdtemp); caller removes it with gxt_rmtree. */
char *gxt_tmpdir(void);
void gxt_rmtree(const char *dir);

/* Run a printf-formatted command through the shell; returns its exit
 * status (-1 if it did not exit), its standard output in out (len bytes,
 * NUL-terminated). */
int gxt_sh(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A gexecd child process on ipc://<tmpdir>/gexecd.sock. */
typedef struct gxt_daemon {
    pid_t pid;
    char *dir;
    char endpoint[512];
} gxt_daemon;

/* Start the built gexecd with extra arguments (NULL-terminated, may be NULL)
 * and wait until it answers PING. Fails the test on error. Its profile
 * store is <dir>/profiles unless extra_args hold -c or --profile-dir. */
void gxt_daemon_start(gxt_daemon *d, const char *const *extra_args);
/* The same with a configuration file holding yaml (NULL: none), written
 * into d->dir and passed with --config before extra_args. */
void gxt_daemon_start_yaml(gxt_daemon *d, const char *yaml, const char *const *extra_args);
/* SIGTERM, wait for exit; returns the exit status (or -1 if killed). */
int gxt_daemon_stop(gxt_daemon *d);

/* Threads of this process (/proc/self/task), or -1; while more than one,
 * read again (every millisecond, for 10 s at most) for threads already
 * joined that the kernel still lists. A test that forks a child which
 * goes on running code checks it is 1 first. */
int gxt_threads(void);
/* A client of d with a 60 s timeout. Fails the test on error; the caller
 * destroys it. */
struct gx_client *gxt_client(const gxt_daemon *d);
/* Poll STATS until its JSON holds want (e.g. "\"workers_busy\":1"). No
 * limit of its own: the test's Check timeout is the only one, so a busy
 * machine is only slower. */
void gxt_wait_stats(struct gx_client *c, const char *want);
/* The integer after "key": in STATS ("section.key": the first one after
 * "section":, as "shm.bytes"). Fails the test when there is none. */
long long gxt_stat(struct gx_client *c, const char *key);
/* A slow job: k chained MatMuls of an input x, float32 [GXT_SLOW_N,
 * GXT_SLOW_N], by the identity (output the last product). A step must end
 * well within a wait: ThreadSanitizer makes a 1024^3 product take minutes. */
#if defined(__SANITIZE_THREAD__)
#define GXT_SLOW_N 256
#else
#define GXT_SLOW_N 1024
#endif
struct gx_graph *gxt_slow_graph(int k);
/* A job that never ends by itself: Loop with no trip count whose body
 * passes its condition on. Inputs x (float32 [1]) and c (bool scalar,
 * true); output y. It runs until it is cancelled (or its deadline), so a
 * test knows it is still running whatever the machine's load. */
struct gx_graph *gxt_endless_graph(void);
/* A request for the endless graph: gxt_endless_init builds the graph, its
 * inputs (c true) and the request; gxt_endless_fini destroys them. */
typedef struct gxt_endless {
    struct gx_graph *g;
    struct gx_tensor *x, *c;
    struct gx_request *rq;
} gxt_endless;
void gxt_endless_init(gxt_endless *e);
void gxt_endless_fini(gxt_endless *e);
/* A job that holds one worker (of a one-worker daemon: --cpus 0) until
 * released: gxt_hold_start submits the endless request from c and waits
 * until watch's STATS say one worker is busy; gxt_hold_release cancels it,
 * waits for its GX_ECANCELLED and frees it all. */
typedef struct gxt_hold {
    gxt_endless e;
    struct gx_job *job;
} gxt_hold;
void gxt_hold_start(gxt_hold *h, struct gx_client *c, struct gx_client *watch);
void gxt_hold_release(gxt_hold *h);

/* A private team of workers for running executors in a test
 * (gxd_exec_par): a queue nobody pushes to, GXT_HELPERS helper threads
 * waiting on it. Fails the test on error. */
#define GXT_HELPERS 3
typedef struct gxt_team {
    gxd_queue q;
    gxd_team t;
    pthread_t th[GXT_HELPERS];
} gxt_team;
void gxt_team_start(gxt_team *e);
void gxt_team_stop(gxt_team *e);

#endif
