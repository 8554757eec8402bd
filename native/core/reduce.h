// Element-wise kernels the collectives apply to raw buffers.
#pragma once

#include "common.h"

namespace mpirep {

// out[i] = a[i] (op) b[i]; out may alias a or b. AVERAGE reduces as SUM: the division by the
// number of ranks is a separate scaling step. Integer sums and products wrap around.
void Reduce(void* out, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op);

// out[i] = in[i] * factor; out may alias in. Integers are scaled in double and truncated.
void Scale(void* out, const void* in, int64_t count, DataType dtype, double factor);

// buf[i] = floor(buf[i] / divisor), the integer meaning of AVERAGE.
void FloorDivide(void* buf, int64_t count, DataType dtype, int64_t divisor);

// Whether `op` is defined for `dtype` (bool has no sum or average).
bool ReduceOpSupported(DataType dtype, ReduceOp op);

}  // namespace mpirep
