/*
 * gexec status codes: one X-macro list gives the enum, the names
 * ("GX_EQUEUEFULL") and the messages. Zero is success, every error is
 * negative, so `if (rc < 0)` is the test everywhere.
 *
 *     int rc = gx_client_ping(c, 1000);
 *     if (rc < 0)
 *         fprintf(stderr, "%s: %s\n", gx_status_name(rc), gx_strerror(rc));
 *
 * The wire carries the name, never the number, so codes may be added freely.
 */
#ifndef GEXEC_STATUS_H
#define GEXEC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GX_BUILDING) && defined(__GNUC__)
#define GX_EXPORT __attribute__((visibility("default")))
#else
#define GX_EXPORT
#endif

#define GX_STATUS_LIST(X)                                                     \
    X(OK, 0, "success")                                                       \
    X(EINVAL, -1, "invalid argument")                                         \
    X(ENOMEM, -2, "out of memory")                                            \
    X(EPROTO, -3, "malformed message")                                        \
    X(EVERSION, -4, "unsupported protocol version")                           \
    X(EREQUEST, -5, "unknown request type")                                   \
    X(EGRAPH, -6, "invalid graph")                                            \
    X(EOP, -7, "unknown or unsupported op")                                   \
    X(EATTR, -8, "invalid attribute")                                         \
    X(ESHAPE, -9, "shape mismatch")                                           \
    X(EDTYPE, -10, "unsupported or mismatched dtype")                         \
    X(ELIMIT, -11, "size limit exceeded")                                     \
    X(ENOTFOUND, -12, "not found")                                            \
    X(EQUEUEFULL, -13, "job queue full")                                      \
    X(ETIMEDOUT, -14, "deadline expired")                                     \
    X(ECANCELLED, -15, "cancelled")                                           \
    X(ESHUTDOWN, -16, "daemon is shutting down")                              \
    X(EUNSUPPORTED, -17, "not supported")                                     \
    X(EIO, -18, "I/O error")                                                  \
    X(ECONNECT, -19, "cannot reach the daemon")                               \
    X(EFORMAT, -20, "malformed file")                                         \
    X(ECONFIG, -21, "invalid configuration")                                  \
    X(EBUSY, -22, "resource busy")                                            \
    X(EINTERNAL, -23, "internal error")                                       \
    X(EPERM, -24, "not permitted")

typedef enum gx_status {
#define GX_STATUS_ENUM(name, value, msg) GX_##name = value,
    GX_STATUS_LIST(GX_STATUS_ENUM)
#undef GX_STATUS_ENUM
} gx_status;

/* Human-readable message for a status; never NULL (static storage). */
GX_EXPORT const char *gx_strerror(int status);
/* "GX_EQUEUEFULL" for GX_EQUEUEFULL; "GX_EUNKNOWN" for an unknown value. */
GX_EXPORT const char *gx_status_name(int status);
/* Inverse of gx_status_name; GX_EINTERNAL for an unknown name. */
GX_EXPORT int gx_status_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
