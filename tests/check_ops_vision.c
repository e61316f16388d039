/* Op tests of the vision family (GX_OPS_VISION in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_vision_suite(void)
{
    Suite *s = suite_create("ops_vision");
    return s;
}
