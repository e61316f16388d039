/*
 * CURVE key files (docs/security.md), read by gexecd (its secret key, the
 * clients it admits) and by libgexec (the server's public key, the client's
 * key pair). A key is 40 characters of Z85 text (a 32-byte key). A key file
 * is text: blank lines and lines starting with '#' are skipped, every other
 * line holds one key as its first word, the rest of the line naming it
 * ("<key> alice@build1"). A file holding a secret key must not be open to
 * group or others (0600 or stricter).
 *
 *   char key[GX_CURVE_KEY_BUF], why[512];
 *   if (gx_curve_key_get("/etc/gexec/server.pub", false, key, why, sizeof why) < 0)
 *       fprintf(stderr, "%s\n", why);
 */
#ifndef GX_CURVEKEY_H
#define GX_CURVEKEY_H

#include <stdbool.h>
#include <stddef.h>

#define GX_CURVE_KEY_LEN 40                    /* Z85 characters */
#define GX_CURVE_KEY_BUF (GX_CURVE_KEY_LEN + 1) /* with the NUL */

/* True when s is exactly one key: 40 characters of the Z85 alphabet. */
bool gx_curve_key_text(const char *s);

/* The first key of the file at path into key. secret: the file must be a
 * regular file no one but its owner may read. GX_OK, or GX_EIO (cannot
 * read), GX_EPERM (a secret open to others) or GX_EFORMAT (no key, or a
 * line that is not one) with why naming the file and line. */
int gx_curve_key_read(const char *path, bool secret, char key[GX_CURVE_KEY_BUF], char *why,
                      size_t whylen);

/* A key given as itself (40 Z85 characters) or as the path of a key file
 * (an environment variable's value): as gx_curve_key_read otherwise. */
int gx_curve_key_get(const char *value, bool secret, char key[GX_CURVE_KEY_BUF], char *why,
                     size_t whylen);

/* Called once per key of a list; name is the rest of its line ("" when
 * none), where is "path:line". A negative return stops the walk and is
 * returned. */
typedef int (*gx_curve_key_fn)(void *arg, const char *key, const char *name, const char *where);

/* Every key of path: a key file, or a directory whose files ending in
 * ".pub" are key files (others are skipped, and so are names starting
 * with '.'). GX_OK, GX_EIO or GX_EFORMAT with why, or fn's status. */
int gx_curve_keys_each(const char *path, gx_curve_key_fn fn, void *arg, char *why, size_t whylen);

#endif
