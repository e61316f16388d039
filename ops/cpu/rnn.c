/* CPU kernels of the rnn family (GX_OPS_RNN in ops/op.h). */
#include "ops/cpu/cpu.h"
