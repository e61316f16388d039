/* Op tests of the conv family (GX_OPS_CONV in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_conv_suite(void)
{
    Suite *s = suite_create("ops_conv");
    return s;
}
