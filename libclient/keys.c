/*
 * gx_curve_keygen (client.h): a CURVE key pair written as the key files
 * that gexecd and libgexec read (core/curvekey.h, docs/security.md).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "core/internal.h" /* before any gexec header: GX_EXPORT */
#include "core/curvekey.h"
#include <gexec/client.h>

/* Write text to a new file at path with mode; an existing file is not
 * replaced (a secret key that is lost cannot be made again). */
static int s_write_new(const char *path, mode_t mode, const char *text, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return gx_errf(err, errlen, GX_EIO, "%s: %s%s", path, strerror(errno),
                       errno == EEXIST ? " (not replaced: remove it first)" : "");
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int saved = errno;
    if (close(fd) != 0 && n == (ssize_t)len) {
        n = -1;
        saved = errno;
    }
    if (n != (ssize_t)len) {
        unlink(path);
        return gx_errf(err, errlen, GX_EIO, "%s: %s", path, strerror(n < 0 ? saved : EIO));
    }
    return GX_OK;
}

GX_EXPORT int gx_curve_keygen(const char *prefix, char public_key[41], char *err, size_t errlen)
{
    char pub[GX_CURVE_KEY_BUF], sec[GX_CURVE_KEY_BUF], path[4096], text[512];
    if (!prefix || !*prefix)
        return gx_errf(err, errlen, GX_EINVAL, "no file name prefix");
    if (!zmq_has("curve"))
        return gx_errf(err, errlen, GX_EUNSUPPORTED, "this libzmq was built without CURVE");
    if (zmq_curve_keypair(pub, sec) != 0)
        return gx_errf(err, errlen, GX_EINTERNAL, "zmq_curve_keypair: %s",
                       zmq_strerror(zmq_errno()));
    snprintf(path, sizeof path, "%s.key", prefix);
    snprintf(text, sizeof text,
             "# gexec CURVE secret key (Z85); keep it private (mode 0600)\n"
             "# its public key: %s\n%s\n",
             pub, sec);
    int rc = s_write_new(path, 0600, text, err, errlen);
    explicit_bzero(sec, sizeof sec);
    explicit_bzero(text, sizeof text);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof path, "%s.pub", prefix);
    snprintf(text, sizeof text, "# gexec CURVE public key (Z85)\n%s\n", pub);
    if ((rc = s_write_new(path, 0644, text, err, errlen)) < 0) {
        snprintf(path, sizeof path, "%s.key", prefix);
        unlink(path);
        return rc;
    }
    if (public_key)
        memcpy(public_key, pub, GX_CURVE_KEY_BUF);
    return GX_OK;
}
