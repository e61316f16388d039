/* Op tests of the nn family (GX_OPS_NN in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_nn_suite(void)
{
    Suite *s = suite_create("ops_nn");
    return s;
}
