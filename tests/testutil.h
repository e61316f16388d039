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
Suite *wire_suite(void);
Suite *npy_suite(void);
Suite *yaml_suite(void);
Suite *onnx_suite(void);
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
Suite *ops_training_suite(void);
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
Suite *metrics_suite(void);
Suite *modelctl_suite(void);
Suite *artifact_suite(void);
Suite *shm_suite(void);
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
/* SIGTERM, wait for exit; returns the exit status (or -1 if killed). */
int gxt_daemon_stop(gxt_daemon *d);

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
