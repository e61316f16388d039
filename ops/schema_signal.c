/* Schemas of the signal family (GX_OPS_SIGNAL in ops/op.h). */
#include "ops/schema.h"
