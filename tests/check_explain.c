/* placeholder to build; replaced below */
#include "tests/testutil.h"
Suite *explain_suite(void) { return suite_create("explain"); }
