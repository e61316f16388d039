/* Schemas of the loss family (GX_OPS_LOSS in ops/op.h). */
#include "ops/schema.h"
