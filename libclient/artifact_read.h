/*
 * gexec-submit's reader of compiled-plan artifacts (`explain --artifact`;
 * docs/artifact.md): the file's header and body as JSON text, for the
 * tables explain prints or as they are with --json. Part of gexec-submit;
 * links the public libgexec and msgpack-c only.
 *
 * Nothing in the file is trusted: the header is read with the checks of
 * core/artifact_fmt.h (the daemon's), the body decoded with
 * gx_mp_unpack (no allocation before the container counts are checked
 * against the bytes, depth bounded), and every value is only copied into
 * JSON, never used as an index or a size here.
 *
 *     char *json = NULL, err[512];
 *     bool intact;
 *     if (gxs_artifact_json("plan.gxa", &json, &intact, err, sizeof err) == GX_OK)
 *         ... gx_json_parse(json, ...) ...; free(json);
 */
#ifndef GXS_ARTIFACT_READ_H
#define GXS_ARTIFACT_READ_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The artifact at path as one JSON object (*json malloc'ed, the caller
 * frees):
 *
 *   {"file": path, "file_bytes": N, "version": V, "build": "...",
 *    "body_bytes": N, "checksum": "ok" | "mismatch",
 *    "body": {...} | null, "body_error": "..." (when body is null)}
 *
 * The body is the msgpack map as JSON, binaries replaced by {"bin": bytes}
 * and non-finite floats by null. *intact is true when the checksum matched
 * and the body decoded. GX_OK; GX_EIO (unreadable), GX_EFORMAT (not an
 * artifact: no magic, shorter than its header, another header size, or
 * body bytes that disagree with the file's size), GX_ENOMEM; err says why.
 */
int gxs_artifact_json(const char *path, char **json, bool *intact, char *err, size_t errlen);

#endif
