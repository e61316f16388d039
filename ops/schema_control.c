/* Schemas of the control-flow ops (GX_OPS_CONTROL in ops/op.h). */
#include "ops/schema.h"
