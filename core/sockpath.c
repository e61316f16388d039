/*
 * The default endpoint, and ownership checks of ipc:// sockets and their
 * directories (sockpath.h).
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h" /* before any gexec header: GX_EXPORT */
#include "core/sockpath.h"

/* Where a private directory is made without XDG_RUNTIME_DIR: $TMPDIR (an
 * absolute path), else /tmp. */
static const char *s_tmp_base(void)
{
    const char *t = getenv("TMPDIR");
    return t && t[0] == '/' ? t : "/tmp";
}

int gx_sock_private_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n = xdg && *xdg ? snprintf(buf, len, "%s", xdg)
                        : snprintf(buf, len, "%s/gexec-%u", s_tmp_base(), (unsigned)geteuid());
    return n < 0 || (size_t)n >= len ? GX_ELIMIT : GX_OK;
}

/* The service user's uid, or false when there is none on this machine. */
static bool s_service_uid(uid_t *uid)
{
    const char *name = getenv("GEXEC_SERVICE_USER");
    if (!name || !*name)
        name = GX_SERVICE_USER_DEFAULT;
    struct passwd pw, *res = NULL;
    char buf[2048];
    if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
        return false;
    *uid = res->pw_uid;
    return true;
}

bool gx_sock_owner_trusted(uid_t uid)
{
    uid_t svc;
    return uid == 0 || uid == geteuid() || (s_service_uid(&svc) && uid == svc);
}

/* "uid 1001 (mallory)" */
static const char *s_who(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char pwbuf[2048];
    if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
        snprintf(buf, len, "uid %u (%s)", (unsigned)uid, res->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
    return buf;
}

/* "root, gexec or you (uid 1000)" */
static const char *s_trusted_names(char *buf, size_t len)
{
    const char *svc = getenv("GEXEC_SERVICE_USER");
    snprintf(buf, len, "root, the service user %s or you (uid %u)",
             svc && *svc ? svc : GX_SERVICE_USER_DEFAULT, (unsigned)geteuid());
    return buf;
}

static void s_dirname(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
}

int gx_sock_check_connect(const char *path, char *why, size_t whylen)
{
    char dir[1024], who[128], trusted[160];
    struct stat ds, ss;
    s_dirname(path, dir, sizeof dir);
    if (lstat(dir, &ds) != 0) {
        if (errno == EACCES)
            return GX_OK;
        return gx_errf(why, whylen, GX_ECONNECT, "%s: %s; is gexecd running?", dir, strerror(errno));
    }
    if (S_ISLNK(ds.st_mode))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is a symbolic link; refusing to connect to a socket whose directory "
                       "someone else may have placed there (name the real directory)", dir);
    if (!S_ISDIR(ds.st_mode))
        return gx_errf(why, whylen, GX_ECONNECT, "%s is not a directory", dir);
    if (!gx_sock_owner_trusted(ds.st_uid))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is owned by %s, not %s: another user's daemon could be listening "
                       "there; refusing to connect",
                       dir, s_who(ds.st_uid, who, sizeof who), s_trusted_names(trusted, sizeof trusted));
    bool shared = (ds.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (shared && !(ds.st_mode & S_ISVTX))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is writable by other users (mode %04o): anyone could put a socket "
                       "there; refusing to connect", dir, (unsigned)(ds.st_mode & 07777));
    if (lstat(path, &ss) != 0) {
        if (errno == ENOENT && shared)
            return gx_errf(why, whylen, GX_ECONNECT,
                           "%s: %s; is gexecd running? (in the shared directory %s the client "
                           "connects only to a socket that is already there with a trusted owner)",
                           path, strerror(errno), dir);
        return GX_OK; /* a private directory: only a trusted user can create it */
    }
    if (!S_ISSOCK(ss.st_mode))
        return gx_errf(why, whylen, GX_EPERM, "%s is not a socket%s; refusing to connect", path,
                       S_ISLNK(ss.st_mode) ? " (a symbolic link)" : "");
    if (!gx_sock_owner_trusted(ss.st_uid))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is owned by %s, not %s: another user's daemon is listening there; "
                       "refusing to connect",
                       path, s_who(ss.st_uid, who, sizeof who), s_trusted_names(trusted, sizeof trusted));
    return GX_OK;
}

int gx_sock_check_dir(const char *dir, bool private_dir, char *why, size_t whylen)
{
    char who[128];
    struct stat ds;
    if (lstat(dir, &ds) != 0)
        return gx_errf(why, whylen, GX_EIO, "%s: %s", dir, strerror(errno));
    unsigned mode = (unsigned)(ds.st_mode & 07777);
    if (S_ISLNK(ds.st_mode))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is a symbolic link, not a directory of its own; remove it (or name "
                       "the real directory) so no one else decides where the socket goes", dir);
    if (!S_ISDIR(ds.st_mode))
        return gx_errf(why, whylen, GX_EPERM, "%s is not a directory", dir);
    if (private_dir) {
        if (ds.st_uid != geteuid() || (mode & 077) != 0)
            return gx_errf(why, whylen, GX_EPERM,
                           "%s must be owned by this user (uid %u) with mode 0700; it is owned "
                           "by %s with mode %04o: remove it, or set GEXEC_SOCKET or --socket",
                           dir, (unsigned)geteuid(), s_who(ds.st_uid, who, sizeof who), mode);
        return GX_OK;
    }
    if (ds.st_uid != geteuid() && ds.st_uid != 0)
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is owned by %s, not this user (uid %u) or root: its owner could "
                       "replace the socket", dir, s_who(ds.st_uid, who, sizeof who), (unsigned)geteuid());
    if ((mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX))
        return gx_errf(why, whylen, GX_EPERM,
                       "%s is writable by other users (mode %04o): they could replace the socket",
                       dir, mode);
    return GX_OK;
}

GX_EXPORT int gx_default_endpoint(char *buf, size_t len)
{
    const char *env = getenv("GEXEC_SOCKET");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(buf, len, "ipc:///run/gexec/gexecd.sock");
    else if (xdg && *xdg)
        n = snprintf(buf, len, "ipc://%s/gexecd.sock", xdg);
    else /* a private directory (0700, this user's): no one else can bind there first */
        n = snprintf(buf, len, "ipc://%s/gexec-%u/gexecd.sock", s_tmp_base(),
                     (unsigned)geteuid());
    return n < 0 || (size_t)n >= len ? GX_ELIMIT : GX_OK;
}
