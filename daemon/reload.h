/*
 * SIGHUP: read the configuration again (the file, then the command line's
 * keys on top) and apply the keys that can change while gexecd serves;
 * a changed key that cannot is logged and keeps its value until a restart.
 * Tells systemd RELOADING=1, then READY=1 with a STATUS= line.
 */
#ifndef GXD_RELOAD_H
#define GXD_RELOAD_H

#include <stdbool.h>

#include "daemon/ctx.h"

/* On the I/O thread. A file that does not load (or a value refused) leaves
 * the running configuration as it was, logged with the file's line. */
void gxd_reload(gxd_ctx *ctx);
/* Whether key (dotted) is applied by a reload. */
bool gxd_reload_key_live(const char *key);

#endif
