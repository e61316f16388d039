/* Control flow: If and Loop compiled and run through the executor. */
#include "tests/testutil.h"

Suite *control_suite(void)
{
    Suite *s = suite_create("control");
    return s;
}
