/*
 * Daemon logging. The level is checked before the arguments are evaluated.
 * Lines go to stderr; under systemd (JOURNAL_STREAM set) they carry the
 * "<N>" priority prefix the journal understands, otherwise a timestamp.
 * A daemon that detaches (no --foreground) has no terminal left: its lines
 * go to the file log_file names (appended, with timestamps), or without
 * one to syslog (facility daemon, ident gexecd: datagrams to /dev/log, or
 * to the socket $GEXECD_SYSLOG_SOCKET names, a hook for tests), never to
 * /dev/null;
 * SIGHUP opens log_file again (gxd_log_reopen, for logrotate).
 *
 *     GXD_LOG(&ctx->log, GXD_LOG_INFO, "listening on %s", ep);
 */
#ifndef GXD_LOG_H
#define GXD_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* X(enum suffix, config name, syslog priority) */
#define GXD_LOG_LEVEL_LIST(X)                                                 \
    X(ERROR, "error", 3)                                                      \
    X(WARN, "warn", 4)                                                        \
    X(INFO, "info", 6)                                                        \
    X(DEBUG, "debug", 7)

typedef enum gxd_log_level {
#define GXD_LOG_ENUM(e, name, prio) GXD_LOG_##e,
    GXD_LOG_LEVEL_LIST(GXD_LOG_ENUM)
#undef GXD_LOG_ENUM
    GXD_LOG_LEVEL_COUNT
} gxd_log_level;

typedef struct gxd_log {
    _Atomic gxd_log_level level; /* SIGHUP may change it while workers log */
    bool journal; /* stderr is connected to the journal */
    bool syslog;  /* lines go to syslog: fd is a socket to syslog_path */
    int fd;       /* log_file's descriptor or the syslog socket; 0 (a zeroed struct
                   * too): stderr */
    /* syslog: its socket (/dev/log), whether it is a stream one, and the
     * lock a reconnect takes */
    char syslog_path[108];
    bool syslog_stream;
    pthread_mutex_t mu;
} gxd_log;

void gxd_log_init(gxd_log *lg, gxd_log_level level);
/* The daemon detaches: lines go to path (appended; created 0640), or when
 * path is NULL or "" to syslog (connected now, or at the first line when
 * no syslog daemon listens yet). GX_OK, or GX_EIO with why (lines then still
 * go to stderr). Call before other threads log. */
int gxd_log_detach(gxd_log *lg, const char *path, char *why, size_t whylen);
/* SIGHUP (logrotate moved the file away): lines from now on go to path
 * opened anew (created 0640), the same descriptor number taking it at once
 * (dup3), so a line another thread writes meanwhile lands whole in the old
 * file or the new. No-op (GX_OK) unless lines go to a log_file. GX_OK, or
 * GX_EIO with why (lines then still go to the old file). */
int gxd_log_reopen(gxd_log *lg, const char *path, char *why, size_t whylen);
/* "error", "warn", "info", "debug"; GX_OK or GX_EINVAL. */
int gxd_log_level_parse(const char *name, gxd_log_level *out);
const char *gxd_log_level_name(gxd_log_level level);
void gxd_log_write(gxd_log *lg, gxd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define GXD_LOG(lg, lvl, ...)                                                 \
    do {                                                                      \
        if ((lvl) <= (lg)->level)                                             \
            gxd_log_write((lg), (lvl), __VA_ARGS__);                          \
    } while (0)

#endif
