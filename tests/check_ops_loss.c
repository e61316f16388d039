/* Op tests of the loss family (GX_OPS_LOSS in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_loss_suite(void)
{
    Suite *s = suite_create("ops_loss");
    return s;
}
