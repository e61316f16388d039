/*
 * The protocol's tables (see proto.h), generated from its X-macro lists.
 */
#include <stdio.h>
#include <string.h>

#include "core/proto.h"
#include "core/wire.h"

static const char *const s_req_names[] = {
#define S_NAME(e, name, frames) [GX_REQ_##e] = name,
    GX_REQ_LIST(S_NAME)
#undef S_NAME
};
static const bool s_req_frames[] = {
#define S_FRAMES(e, name, frames) [GX_REQ_##e] = frames,
    GX_REQ_LIST(S_FRAMES)
#undef S_FRAMES
};
_Static_assert(sizeof s_req_names / sizeof s_req_names[0] == GX_REQ_COUNT, "request names");
_Static_assert(sizeof s_req_frames / sizeof s_req_frames[0] == GX_REQ_COUNT, "request frames");

const char *const gx_proto_fields[GX_FIELD_COUNT] = {
#define S_FIELD(e, name) [GX_FIELD_##e] = name,
    GX_FIELD_LIST(S_FIELD)
#undef S_FIELD
};

const char *gx_req_name(gx_req k)
{
    return (unsigned)k < GX_REQ_COUNT ? s_req_names[k] : GX_REQ_ERROR_NAME;
}

bool gx_req_takes_frames(gx_req k)
{
    return (unsigned)k < GX_REQ_COUNT && s_req_frames[k];
}

bool gx_req_parse(const msgpack_object *o, gx_req *k)
{
    for (int i = 0; i < GX_REQ_COUNT; i++)
        if (gx_mp_streq(o, s_req_names[i])) {
            *k = (gx_req)i;
            return true;
        }
    return false;
}

void gx_req_names_list(char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    for (int i = 0, at = 0; i < GX_REQ_COUNT && (size_t)at < len; i++) {
        int w = snprintf(buf + at, len - (size_t)at, "%s%s", i ? ", " : "", s_req_names[i]);
        if (w < 0)
            break;
        at += w;
    }
}
