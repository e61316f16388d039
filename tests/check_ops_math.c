/* Op tests of the math family (GX_OPS_MATH in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_math_suite(void)
{
    Suite *s = suite_create("ops_math");
    return s;
}
