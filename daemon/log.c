/*
 * Daemon logging (see log.h). Every line is formatted into a local buffer and
 * handed to the kernel with one write(2), so lines from different threads
 * never interleave. Under systemd the line starts with the syslog priority
 * ("<6>listening on ..."), which journald strips and records; otherwise with a
 * UTC timestamp, the program name and pid, and the level.
 *
 * Syslog is spoken here rather than through syslog(3), whose socket is
 * always /dev/log: one datagram per line to the syslog socket (RFC 3164
 * framing, as glibc's: "<PRI>Mmm dd hh:mm:ss gexecd[pid]: ..."), so that a
 * test can point a detached daemon at a socket of its own
 * (GEXECD_SYSLOG_SOCKET) and read what it logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <paths.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <gexec/status.h>

#include "daemon/log.h"

/* Longest line written; longer messages are cut and end in "...". */
#define S_LINE_MAX 2048

static const char *const s_names[] = {
#define S_NAME(e, name, prio) [GXD_LOG_##e] = name,
    GXD_LOG_LEVEL_LIST(S_NAME)
#undef S_NAME
};
static const char *const s_tags[] = {
#define S_TAG(e, name, prio) [GXD_LOG_##e] = #e,
    GXD_LOG_LEVEL_LIST(S_TAG)
#undef S_TAG
};
static const int s_prios[] = {
#define S_PRIO(e, name, prio) [GXD_LOG_##e] = prio,
    GXD_LOG_LEVEL_LIST(S_PRIO)
#undef S_PRIO
};
_Static_assert(sizeof s_names / sizeof s_names[0] == GXD_LOG_LEVEL_COUNT, "level names");
_Static_assert(sizeof s_tags / sizeof s_tags[0] == GXD_LOG_LEVEL_COUNT, "level tags");
_Static_assert(sizeof s_prios / sizeof s_prios[0] == GXD_LOG_LEVEL_COUNT, "level priorities");

/* True when stderr is the journal stream systemd set up for us. JOURNAL_STREAM
 * is "device:inode" of that stream; it is inherited by children whose stderr
 * may point elsewhere, so it only counts when it matches fd 2 (the check
 * sd_journal_stream_fd's documentation recommends). */
static bool s_stderr_is_journal(void)
{
    const char *e = getenv("JOURNAL_STREAM");
    if (!e || !*e)
        return false;
    unsigned long long dev, ino;
    if (sscanf(e, "%llu:%llu", &dev, &ino) != 2)
        return false;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void gxd_log_init(gxd_log *lg, gxd_log_level level)
{
    lg->level = level;
    lg->journal = s_stderr_is_journal();
    lg->syslog = false;
    lg->fd = 0;
}

/* Connects fd (a socket) to the syslog socket, a datagram one or else a
 * stream one (*stream then); the same descriptor number takes the new
 * connection (dup3), so a line another thread sends meanwhile goes to the
 * old connection or the new. False when nobody listens there. */
static bool s_syslog_connect(const char *path, int fd, bool *stream)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    for (int k = 0; k < 2; k++) {
        int s = socket(AF_UNIX, (k ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
        if (s < 0)
            return false;
        if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
            bool ok = dup3(s, fd, O_CLOEXEC) >= 0;
            *stream = k == 1;
            close(s);
            return ok;
        }
        int e = errno;
        close(s);
        if (e != EPROTOTYPE) /* a stream socket refuses a datagram one so */
            return false;
    }
    return false;
}

/* Sends one line to syslog; reconnects once when the syslog daemon went
 * away (restarted) or was not there yet. A line nobody takes is lost, as
 * with syslog(3). */
static void s_syslog_send(gxd_log *lg, const char *line, size_t n)
{
    int flags = MSG_NOSIGNAL;
    if (send(lg->fd, line, n + lg->syslog_stream, flags) >= 0)
        return;
    pthread_mutex_lock(&lg->mu);
    if (s_syslog_connect(lg->syslog_path, lg->fd, &lg->syslog_stream))
        (void)!send(lg->fd, line, n + lg->syslog_stream, flags);
    pthread_mutex_unlock(&lg->mu);
}

int gxd_log_detach(gxd_log *lg, const char *path, char *why, size_t whylen)
{
    lg->journal = false;
    if (!path || !*path) {
        /* the syslog socket: /dev/log, or a test's (hidden: tests/detach.py) */
        const char *sock = getenv("GEXECD_SYSLOG_SOCKET");
        struct sockaddr_un a;
        snprintf(lg->syslog_path, sizeof lg->syslog_path, "%s",
                 sock && *sock && strlen(sock) < sizeof a.sun_path ? sock : _PATH_LOG);
        /* a socket now, connected when syslog listens (else at the first line) */
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(why, whylen, "syslog: cannot make a socket: %s", strerror(errno));
            return GX_EIO;
        }
        s_syslog_connect(lg->syslog_path, fd, &lg->syslog_stream);
        pthread_mutex_init(&lg->mu, NULL);
        lg->fd = fd;
        lg->syslog = true;
        return GX_OK;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(why, whylen, "log_file: cannot open %s: %s", path, strerror(errno));
        return GX_EIO;
    }
    lg->fd = fd;
    return GX_OK;
}

int gxd_log_reopen(gxd_log *lg, const char *path, char *why, size_t whylen)
{
    if (lg->fd <= 0 || lg->syslog || !path || !*path)
        return GX_OK;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(why, whylen, "log_file: cannot open %s again: %s", path, strerror(errno));
        return GX_EIO;
    }
    int rc = dup3(fd, lg->fd, O_CLOEXEC) < 0 ? GX_EIO : GX_OK;
    if (rc < 0)
        snprintf(why, whylen, "log_file: cannot reopen %s: %s", path, strerror(errno));
    close(fd);
    return rc;
}

int gxd_log_level_parse(const char *name, gxd_log_level *out)
{
    if (!name)
        return GX_EINVAL;
    for (int i = 0; i < GXD_LOG_LEVEL_COUNT; i++) {
        if (strcasecmp(name, s_names[i]) == 0) {
            *out = (gxd_log_level)i;
            return GX_OK;
        }
    }
    return GX_EINVAL;
}

const char *gxd_log_level_name(gxd_log_level level)
{
    if ((int)level < 0 || level >= GXD_LOG_LEVEL_COUNT)
        return "unknown";
    return s_names[level];
}

/* Write all of buf to stderr in one write(2) (retried only if interrupted or
 * cut short, which a pipe or terminal does not do for a line this size). */
static void s_write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report it */
        }
        buf += w;
        n -= (size_t)w;
    }
}

void gxd_log_write(gxd_log *lg, gxd_log_level level, const char *fmt, ...)
{
    int saved_errno = errno; /* callers may log between a failure and strerror(errno) */
    if ((int)level < 0 || level >= GXD_LOG_LEVEL_COUNT)
        level = GXD_LOG_ERROR;

    char line[S_LINE_MAX];
    size_t n;
    if (lg->syslog) { /* facility daemon; local time, as syslog(3) */
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        n = (size_t)snprintf(line, sizeof line, "<%d>", LOG_DAEMON | s_prios[level]);
        n += strftime(line + n, sizeof line - n, "%b %e %H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof line - n, " gexecd[%ld]: %s: ", (long)getpid(),
                              s_tags[level]);
    } else if (lg->journal) {
        n = (size_t)snprintf(line, sizeof line, "<%d>", s_prios[level]);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ gexecd[%ld] %s: ",
                              ts.tv_nsec / 1000000L, (long)getpid(), s_tags[level]);
    }
    size_t head = n;

    /* Room for the message, keeping one byte for '\n' (and one for the NUL
     * vsnprintf always writes). */
    va_list ap;
    va_start(ap, fmt);
    errno = saved_errno;
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    if ((size_t)m >= sizeof line - n - 1) {
        n = sizeof line - 2;
        memcpy(line + n - 3, "...", 3);
    } else {
        n += (size_t)m;
    }
    while (n > head && line[n - 1] == '\n')
        n--;
    /* One record per line: an embedded newline would start a journal entry
     * without priority (or a plain line without timestamp). */
    for (size_t i = head; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    if (lg->syslog) {
        line[n] = '\0'; /* a stream socket's record ends with it */
        s_syslog_send(lg, line, n);
    } else {
        line[n++] = '\n';
        s_write_all(lg->fd > 0 ? lg->fd : STDERR_FILENO, line, n);
    }
    errno = saved_errno;
}
