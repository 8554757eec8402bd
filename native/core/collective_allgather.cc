// Allgather: every rank gets every rank's rows, concatenated in rank order.
#include <algorithm>
#include <cstring>

#include "collectives.h"

namespace mpirep {

std::vector<Status> RunAllgather(Executor& ex, const Response& response,
                                 const std::vector<Operation*>& ops, OperationResult*) {
  const int rank = ex.rank(), size = ex.size();
  Operation& op = *ops[0];
  const Shape& shape = op.request.shape;
  const int64_t row = RowElements(shape);
  std::vector<int64_t> segments;
  int64_t rows = 0, before = 0;
  for (int r = 0; r < size; ++r) {
    segments.push_back(response.first_dims[r] * row);
    if (r < rank) before += response.first_dims[r];
    rows += response.first_dims[r];
  }
  Status status;
  const size_t esize = ElementSize(op.request.dtype);
  char* out = static_cast<char*>(ex.Output(op, WithFirstDim(shape, rows), &status));
  ex.BeginPhase("PACK");
  std::memcpy(out + before * row * esize, op.input, Bytes(op));
  ex.BeginPhase("RING_ALLGATHER");
  ex.ring().Allgather(out, segments, esize);
  return {status};
}

}  // namespace mpirep
