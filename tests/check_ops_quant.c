/* Op tests of the quant family (GX_OPS_QUANT in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_quant_suite(void)
{
    Suite *s = suite_create("ops_quant");
    return s;
}
