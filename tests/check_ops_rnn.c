/* Op tests of the rnn family (GX_OPS_RNN in ops/op.h). */
#include "tests/optest.h"
#include "tests/testutil.h"

Suite *ops_rnn_suite(void)
{
    Suite *s = suite_create("ops_rnn");
    return s;
}
