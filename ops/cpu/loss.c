/* CPU kernels of the loss family (GX_OPS_LOSS in ops/op.h). */
#include "ops/cpu/cpu.h"
