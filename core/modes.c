/* Execution mode names (include/gexec/client.h), shared by the client
 * library and the daemon. */
#include <string.h>

#include "core/internal.h" /* before any gexec header: GX_EXPORT */

static const char *const s_mode_names[] = {
#define GX_MODE_NAME(e, name) name,
    GX_MODE_LIST(GX_MODE_NAME)
#undef GX_MODE_NAME
};
_Static_assert(sizeof s_mode_names / sizeof s_mode_names[0] == GX_MODE_COUNT, "modes");

GX_EXPORT const char *gx_mode_name(gx_mode m)
{
    return (unsigned)m < GX_MODE_COUNT ? s_mode_names[m] : "?";
}

GX_EXPORT int gx_mode_parse(const char *name, gx_mode *m)
{
    for (int i = 0; name && i < GX_MODE_COUNT; i++)
        if (strcmp(name, s_mode_names[i]) == 0) {
            *m = (gx_mode)i;
            return GX_OK;
        }
    return GX_EINVAL;
}
