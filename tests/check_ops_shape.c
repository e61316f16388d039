/* Op tests of the shape family (GX_OPS_SHAPE in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_shape_suite(void)
{
    Suite *s = suite_create("ops_shape");
    return s;
}
