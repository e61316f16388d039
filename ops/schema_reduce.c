/* Schemas of the reduce family (GX_OPS_REDUCE in ops/op.h). */
#include "ops/schema.h"
