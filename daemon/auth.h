/*
 * CURVE on the daemon's tcp endpoints (docs/security.md). The daemon's
 * secret key and the client keys it admits come from the files that
 * security.server_secret_key and security.client_keys name; a ZAP handler
 * (libzmq's authentication protocol, ZeroMQ RFC 27) on its own thread
 * answers each new tcp connection on inproc://zeromq.zap.01 of the
 * daemon's ZeroMQ context: 200 for a listed key, 400 for any other, so an
 * unknown client never gets a message through and the others are served
 * as before. ipc endpoints stay as they are: the socket file's owner and
 * mode decide who connects.
 *
 *     gxd_auth *a = NULL;
 *     if (gxd_auth_new(zctx, &cfg, &log, &a, err, sizeof err) < 0) ...  // a NULL: no keys
 *     gxd_auth_prepare_bind(a, router, "tcp://0.0.0.0:5555", err, sizeof err);
 *     zmq_bind(router, "tcp://0.0.0.0:5555");
 *     ...
 *     gxd_auth_destroy(&a);   // before the context is terminated
 */
#ifndef GXD_AUTH_H
#define GXD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "daemon/log.h"

typedef struct gxd_auth gxd_auth;

/* With both security keys set: reads the key files, binds the ZAP socket in
 * zctx and starts its thread; *out is the caller's (gxd_auth_destroy).
 * With neither: GX_OK and *out = NULL (tcp only on loopback). One without
 * the other, an unreadable or malformed file, a secret key open to others
 * or a libzmq without CURVE: GX_ECONFIG (or GX_EIO, GX_EPERM) with err. */
int gxd_auth_new(void *zctx, const gxd_config *cfg, gxd_log *log, gxd_auth **out, char *err,
                 size_t errlen);

/* Set sock's security options for its next bind of ep: CURVE (server, with
 * the daemon's secret key) for tcp when a is not NULL, none otherwise.
 * Refuses (GX_ECONFIG with err) a tcp endpoint that other machines can
 * reach when a is NULL. Call from the thread that owns sock. */
int gxd_auth_prepare_bind(const gxd_auth *a, void *sock, const char *ep, char *err,
                          size_t errlen);

/* True for a tcp endpoint bound to a loopback address (127.x.y.z,
 * localhost, [::1]). */
bool gxd_auth_loopback(const char *ep);

/* Read the client keys again from path (SIGHUP): the new list applies to
 * connections made from now on. On error the old list stays and err says
 * why. */
int gxd_auth_reload(gxd_auth *a, const char *path, char *err, size_t errlen);

/* Client keys listed, connections admitted and refused so far (STATS). */
void gxd_auth_stats(const gxd_auth *a, size_t *keys, uint64_t *admitted, uint64_t *refused);

/* The daemon's public key (Z85, 40 characters); static in a. */
const char *gxd_auth_public_key(const gxd_auth *a);

/* Stops the thread and closes its socket; accepts NULL, sets *a = NULL. */
void gxd_auth_destroy(gxd_auth **a);

#endif
