/* Schemas of the rnn family (GX_OPS_RNN in ops/op.h). */
#include "ops/schema.h"
