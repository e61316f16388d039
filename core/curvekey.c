/*
 * CURVE key files (curvekey.h): the text format, the secret file's mode,
 * and lists of client keys in a file or a directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h" /* before any gexec header: GX_EXPORT */
#include "core/curvekey.h"

static const char s_z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            ".-:+=^!/*?&<>()[]{}@%$#";

/* The length of the first word of s (up to a blank or the end). */
static size_t s_word(const char *s)
{
    return strcspn(s, " \t\r\n");
}

static bool s_key_word(const char *s)
{
    size_t n = s_word(s);
    return n == GX_CURVE_KEY_LEN && strspn(s, s_z85) >= GX_CURVE_KEY_LEN;
}

bool gx_curve_key_text(const char *s)
{
    return s && strlen(s) == GX_CURVE_KEY_LEN && s_key_word(s);
}

/* Calls fn for each key line of the open file f (named path). A line whose
 * first word is a key is one (a key may start with '#', a Z85 character);
 * other lines must be blank or start with '#'. */
static int s_each_line(FILE *f, const char *path, gx_curve_key_fn fn, void *arg, char *why,
                       size_t whylen)
{
    char line[1024], where[1100];
    for (int no = 1; fgets(line, sizeof line, f); no++) {
        snprintf(where, sizeof where, "%s:%d", path, no);
        const char *p = line + strspn(line, " \t");
        if (s_key_word(p)) {
            char key[GX_CURVE_KEY_BUF];
            memcpy(key, p, GX_CURVE_KEY_LEN);
            key[GX_CURVE_KEY_LEN] = '\0';
            const char *name = p + GX_CURVE_KEY_LEN;
            name += strspn(name, " \t");
            char nm[256];
            snprintf(nm, sizeof nm, "%.*s", (int)strcspn(name, "\r\n"), name);
            int rc = fn(arg, key, nm, where);
            if (rc < 0)
                return rc;
            continue;
        }
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        return gx_errf(why, whylen, GX_EFORMAT,
                       "%s: not a CURVE key (40 Z85 characters, as gexec-submit keygen writes)",
                       where);
    }
    if (ferror(f))
        return gx_errf(why, whylen, GX_EIO, "%s: %s", path, strerror(errno));
    return GX_OK;
}

static FILE *s_open(const char *path, bool secret, int *rc, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    struct stat sb;
    if (!f) {
        *rc = gx_errf(why, whylen, GX_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        *rc = gx_errf(why, whylen, GX_EIO, "%s: not a regular file", path);
        fclose(f);
        return NULL;
    }
    if (secret && (sb.st_mode & 077)) {
        *rc = gx_errf(why, whylen, GX_EPERM,
                      "%s: a secret key open to others (mode %04o); chmod 600 it", path,
                      (unsigned)(sb.st_mode & 07777));
        fclose(f);
        return NULL;
    }
    *rc = GX_OK;
    return f;
}

/* s_each_line's callback that keeps the first key. */
static int s_first(void *arg, const char *key, const char *name, const char *where)
{
    (void)name;
    (void)where;
    if (!*(char *)arg)
        memcpy(arg, key, GX_CURVE_KEY_BUF);
    return GX_OK;
}

int gx_curve_key_read(const char *path, bool secret, char key[GX_CURVE_KEY_BUF], char *why,
                      size_t whylen)
{
    int rc;
    FILE *f = s_open(path, secret, &rc, why, whylen);
    if (!f)
        return rc;
    key[0] = '\0';
    rc = s_each_line(f, path, s_first, key, why, whylen);
    fclose(f);
    if (rc < 0)
        return rc;
    if (!key[0])
        return gx_errf(why, whylen, GX_EFORMAT, "%s: no CURVE key in the file", path);
    return GX_OK;
}

int gx_curve_key_get(const char *value, bool secret, char key[GX_CURVE_KEY_BUF], char *why,
                     size_t whylen)
{
    if (gx_curve_key_text(value)) {
        memcpy(key, value, GX_CURVE_KEY_BUF);
        return GX_OK;
    }
    return gx_curve_key_read(value, secret, key, why, whylen);
}

static int s_each_file(const char *path, gx_curve_key_fn fn, void *arg, char *why, size_t whylen)
{
    int rc;
    FILE *f = s_open(path, false, &rc, why, whylen);
    if (!f)
        return rc;
    rc = s_each_line(f, path, fn, arg, why, whylen);
    fclose(f);
    return rc;
}

static int s_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gx_curve_keys_each(const char *path, gx_curve_key_fn fn, void *arg, char *why, size_t whylen)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gx_errf(why, whylen, GX_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return s_each_file(path, fn, arg, why, whylen);
    DIR *d = opendir(path);
    if (!d)
        return gx_errf(why, whylen, GX_EIO, "%s: %s", path, strerror(errno));
    /* in name order, so the same directory always reads the same */
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = GX_OK;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 4, ".pub") != 0)
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!nn) {
                rc = gx_errf(why, whylen, GX_ENOMEM, "out of memory");
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = gx_errf(why, whylen, GX_ENOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == GX_OK)
        qsort(names, n, sizeof *names, s_cmp);
    for (size_t i = 0; i < n; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (rc == GX_OK)
            rc = s_each_file(file, fn, arg, why, whylen);
        free(names[i]);
    }
    free(names);
    return rc;
}
