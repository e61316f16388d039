/* Op tests of the signal family (GX_OPS_SIGNAL in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_signal_suite(void)
{
    Suite *s = suite_create("ops_signal");
    return s;
}
