/* CPU kernels of the signal family (GX_OPS_SIGNAL in ops/op.h). */
#include "ops/cpu/cpu.h"
