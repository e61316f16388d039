/* Schemas of the quant family (GX_OPS_QUANT in ops/op.h). */
#include "ops/schema.h"
