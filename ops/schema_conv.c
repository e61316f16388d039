/* Schemas of the conv family (GX_OPS_CONV in ops/op.h). */
#include "ops/schema.h"
