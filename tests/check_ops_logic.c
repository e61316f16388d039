/* Op tests of the logic family (GX_OPS_LOGIC in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_logic_suite(void)
{
    Suite *s = suite_create("ops_logic");
    return s;
}
