/* Schemas of the logic family (GX_OPS_LOGIC in ops/op.h). */
#include "ops/schema.h"
