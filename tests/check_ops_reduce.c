/* Op tests of the reduce family (GX_OPS_REDUCE in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_reduce_suite(void)
{
    Suite *s = suite_create("ops_reduce");
    return s;
}
