/*
 * Helpers shared by the benchmarks: a clock and how to give up (all of
 * them), and for those that talk to gexecd (bench_latency, bench_modes) a
 * private gexecd started from the build tree and the daemon's STATS header
 * figures.
 *
 *     gxb_daemon d = {0};
 *     gxb_daemon_start(&d, "bench_x", NULL);   // dies with a message on failure
 *     gx_client *c = gx_client_new(d.endpoint, err, sizeof err);
 *     gxb_stats st;
 *     if (gxb_stats_read(c, &st) == GX_OK)
 *         printf("# gexecd %s, %s workers\n", st.version, st.workers);
 *     ...
 *     gx_client_destroy(&c);
 *     gxb_daemon_stop(&d);
 *
 * These are benchmark programs, not a library: a failure that leaves nothing
 * to measure prints "<prog>: ..." to stderr and exits 1.
 */
#ifndef GX_BENCHUTIL_H
#define GX_BENCHUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <gexec/gexec.h>

/* CLOCK_MONOTONIC in microseconds; gxb_now_s: in seconds. */
double gxb_now_us(void);
double gxb_now_s(void);
/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID): a
 * single-threaded kernel's time that other processes on a busy machine
 * do not inflate. */
double gxb_cpu_s(void);
/* nbytes zeroed, 64-byte aligned, with 64 bytes of slack after the end
 * (kernels may read whole vectors); the caller frees it (free). Out of
 * memory: "<prog>: out of memory" and exit 1. */
void *gxb_alloc(const char *prog, size_t nbytes);

/* The one copy of the benchmarks' order statistics. gxb_sort: v in
 * ascending order. gxb_median: sorts v, then its median (the mean of the
 * two middle values when n is even); NAN when n is 0. gxb_pct: the
 * nearest-rank percentile p (0..100] of n values sorted already; NAN when
 * n is 0. */
void gxb_sort(double *v, size_t n);
double gxb_median(double *v, size_t n);
double gxb_pct(const double *sorted, size_t n, double p);

/* Print "<prog>: <what>: <why>" to stderr and exit 1 (nothing left to
 * measure). */
void gxb_die(const char *prog, const char *what, const char *why) __attribute__((noreturn));

/* All len bytes to or from fd (a pipe between a benchmark and its client
 * processes), through EINTR; false when the other end is gone or failed. */
bool gxb_write_all(int fd, const void *buf, size_t len);
bool gxb_read_all(int fd, void *buf, size_t len);

/* A gexecd child process on ipc://<dir>/gexecd.sock, embedded by its caller. */
typedef struct gxb_daemon {
    pid_t pid;
    char dir[64];       /* the temporary folder holding the socket */
    char endpoint[128]; /* what clients connect to */
} gxb_daemon;

/* Start gexecd ($GEXECD, else ../daemon/gexecd next to this program's
 * folder, else ./daemon/gexecd) in the foreground on a fresh temporary ipc
 * socket with --log-level warn and then extra_args (NULL-terminated, may be
 * NULL), and wait until it answers PING. On any failure prints
 * "<prog>: ..." and exits 1. Stop it with gxb_daemon_stop. */
void gxb_daemon_start(gxb_daemon *d, const char *prog, const char *const *extra_args);

/* SIGTERM the daemon, wait up to 10 s (then SIGKILL), and remove its socket
 * and folder. */
void gxb_daemon_stop(gxb_daemon *d);
/* gxb_daemon_stop with SIGKILL: the daemon gets no chance to clean up (a
 * crash, as far as its files are concerned). */
void gxb_daemon_kill(gxb_daemon *d);

/* What a benchmark's header line shows of the daemon, as text ("?" where the
 * STATS reply lacks a key). */
typedef struct gxb_stats {
    char version[64];
    char workers[32];
    char topology[256];
} gxb_stats;

/* Ask c's daemon for STATS and fill *s; returns the gx status of the
 * request (GX_OK, or negative with gx_client_last_error(c) saying why). */
int gxb_stats_read(gx_client *c, gxb_stats *s);

#endif
