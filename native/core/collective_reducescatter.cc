// Reducescatter: each rank gets its block of rows of the reduction (EvenSegments).
#include <algorithm>
#include <cstring>

#include "collectives.h"
#include "reduce.h"

namespace mpirep {

std::vector<Status> RunReducescatter(Executor& ex, const Response&,
                                     const std::vector<Operation*>& ops, OperationResult*) {
  const int rank = ex.rank(), size = ex.size();
  Operation& op = *ops[0];
  const Request& req = op.request;
  const int64_t row = RowElements(req.shape);
  const size_t esize = ElementSize(req.dtype);
  std::vector<int64_t> rows = EvenSegments(req.shape[0], size);
  std::vector<int64_t> segments;
  int64_t before = 0;
  for (int r = 0; r < size; ++r) {
    segments.push_back(rows[r] * row);
    if (r < rank) before += rows[r];
  }
  char* work = ex.fusion_buffer().Reserve(static_cast<size_t>(Bytes(op)));
  const void* in = op.input;
  if (req.prescale != 1.0) {
    ex.BeginPhase("PACK");
    Scale(work, in, NumElements(req.shape), req.dtype, req.prescale);
    in = work;
  }
  ex.BeginPhase("RING_REDUCESCATTER");
  ex.ring().ReduceScatter(in, work, segments, req.dtype, req.op, ex.EpilogueFor(req.dtype, req.op, req.postscale));
  ex.BeginPhase("UNPACK");
  Status status;
  void* out = ex.Output(op, WithFirstDim(req.shape, rows[rank]), &status);
  std::memcpy(out, work + before * row * esize, rows[rank] * row * esize);
  return {status};
}

}  // namespace mpirep
