/*
 * Who may own an ipc:// socket and the directory it lives in, checked by the
 * client before it connects and by gexecd before it binds (issue 18 item 2:
 * a socket no one else can impersonate).
 *
 * Trusted owners are root, the calling user and the service user gexecd runs
 * as under systemd ($GEXEC_SERVICE_USER, default "gexec", when that user
 * exists). A directory is safe when a trusted user owns it, it is not a
 * symlink, and no one else may write in it; a shared sticky directory such as
 * /tmp is accepted only for a socket already there with a trusted owner.
 *
 * Example (a client):
 *   char why[512];
 *   if (gx_sock_check_connect("/tmp/gexec-1000/gexecd.sock", why, sizeof why) < 0)
 *       fprintf(stderr, "%s\n", why);
 */
#ifndef GX_SOCKPATH_H
#define GX_SOCKPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GX_SERVICE_USER_DEFAULT "gexec"

/* The per-user private directory of the default socket for a non-root user:
 * $XDG_RUNTIME_DIR when set, else $TMPDIR/gexec-<uid> ($TMPDIR when it is
 * an absolute path, else /tmp). GX_OK or GX_ELIMIT. */
int gx_sock_private_dir(char *buf, size_t len);

/* True when uid is root, the effective user, or the service user. */
bool gx_sock_owner_trusted(uid_t uid);

/* The client's check of the socket at path (an ipc:// path, not abstract)
 * before connecting: GX_OK, or GX_EPERM / GX_ECONNECT with why saying what
 * is wrong and what to do. A path this user cannot look at (EACCES) passes:
 * the connection then fails and says so. */
int gx_sock_check_connect(const char *path, char *why, size_t whylen);

/* gexecd's check of the directory dir before it binds a socket in it:
 * private (the default per-user directory): owned by the effective user,
 * mode 0700 (no group or other bits), not a symlink; otherwise owned by the
 * effective user or root, not a symlink, and not writable by group or
 * others unless sticky. GX_OK or GX_EPERM / GX_EIO with why. */
int gx_sock_check_dir(const char *dir, bool private_dir, char *why, size_t whylen);

#endif
