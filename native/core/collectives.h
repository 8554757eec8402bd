// The functions that carry out each collective, one file each (collective_<name>.cc), named in
// its row of MPIREP_COLLECTIVES (common.h) and called by Executor::Run. Each gets the executor,
// whose algorithms and buffers it uses, the response, and this rank's operations in the
// response's order (a joined rank's stand-ins among them); it returns one status per operation
// and fills `result` where its collective returns more than an output (received splits, the
// last joined rank).
#pragma once

#include <vector>

#include "executor.h"

namespace mpirep {

using RunCollective = std::vector<Status> (*)(Executor& executor, const Response& response,
                                              const std::vector<Operation*>& ops, OperationResult* result);

#define MPIREP_DECLARE_RUN(name, py, flags, output, joined, run) \
  std::vector<Status> run(Executor& executor, const Response& response, const std::vector<Operation*>& ops, \
                          OperationResult* result);
MPIREP_COLLECTIVES(MPIREP_DECLARE_RUN)
#undef MPIREP_DECLARE_RUN

// Helpers of the collectives that work on rows (the first dimension).
inline int64_t Bytes(const Operation& op) { return TensorBytes(op.request.dtype, op.request.shape); }

inline int64_t RowElements(const Shape& shape) { return NumElements(Shape(shape.begin() + 1, shape.end())); }

inline Shape WithFirstDim(const Shape& shape, int64_t first) {
  Shape out = shape;
  out[0] = first;
  return out;
}

}  // namespace mpirep
