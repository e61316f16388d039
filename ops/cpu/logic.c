/* CPU kernels of the logic family (GX_OPS_LOGIC in ops/op.h). */
#include "ops/cpu/cpu.h"
