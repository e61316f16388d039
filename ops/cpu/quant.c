/* CPU kernels of the quant family (GX_OPS_QUANT in ops/op.h). */
#include "ops/cpu/cpu.h"
