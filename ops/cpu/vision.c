/* CPU kernels of the vision family (GX_OPS_VISION in ops/op.h). */
#include "ops/cpu/cpu.h"
