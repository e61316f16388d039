/*
 * graphs.preload: graph files (YAML or ONNX) gexecd loads, compiles and
 * warms with one run on zeros while it starts, before it reads its socket
 * and before it tells systemd READY=1 (or, detached, before the starting
 * command returns). A client's RUN naming one finds its plan compiled.
 *
 * Each entry is "PATH" or "NAME=PATH" (NAME: 1 to 63 of [A-Za-z0-9._-],
 * the name RUN and UNLOAD may use, as LOAD's "name"). A file ending in
 * .onnx is read as an ONNX model, any other as a YAML graph. Preloaded
 * graphs are pinned: graphs.max and limits.max_memory_bytes never evict
 * them, only UNLOAD does. LIST shows them with "preloaded": true.
 *
 * A preload that fails (the file, the graph, its compile or its warm-up
 * run) is a configuration error: gexecd logs which entry and why, and
 * does not start (exit status 2, RestartPreventExitStatus=2 in the unit).
 */
#ifndef GXD_PRELOAD_H
#define GXD_PRELOAD_H

#include <stddef.h>

#include "daemon/models.h"

struct gxd_ctx;

/* Split entry "NAME=PATH" or "PATH": *path points into entry, name gets
 * NAME or "". GX_OK, or GX_ECONFIG with why. Used by the config check. */
int gxd_preload_parse(const char *entry, char name[GXD_MAX_GRAPH_NAME], const char **path,
                      char *why, size_t whylen);

/* I/O thread, at the end of gxd_server_init (the pool started, the socket
 * not yet read): load, compile and warm every graphs.preload entry in
 * order, each run on the pool like a client's RUN. GX_OK, or GX_ECONFIG
 * with "graphs.preload[i] (path): why" in err. */
int gxd_preload_run(struct gxd_ctx *ctx, char *err, size_t errlen);

#endif
