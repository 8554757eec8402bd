// Reduce: the root gets the reduction of every rank's tensor, and every other rank gets zeros
// of its shape (MPI leaves a non-root's result undefined; zeros are defined, and have no
// gradient). A ring reduce-scatter leaves each rank one finished segment, which it then sends
// to the root: the root receives what an allreduce would bring it, every other rank half.
#include <algorithm>
#include <cstring>

#include "collectives.h"
#include "reduce.h"

namespace mpirep {

std::vector<Status> RunReduce(Executor& ex, const Response& response, const std::vector<Operation*>& ops,
                              OperationResult*) {
  const int rank = ex.rank(), size = ex.size(), root = response.root;
  Operation& op = *ops[0];
  const Request& req = op.request;
  const int64_t count = NumElements(req.shape);
  const int64_t esize = static_cast<int64_t>(ElementSize(req.dtype));
  Status status;
  char* out = static_cast<char*>(ex.Output(op, req.shape, &status));
  // The root reduces straight into its output; the others into scratch memory.
  char* work = rank == root ? out : ex.fusion_buffer().Reserve(static_cast<size_t>(count * esize));
  const void* in = op.input;
  if (response.prescale != 1.0) {
    ex.BeginPhase("PACK");
    Scale(work, in, count, req.dtype, response.prescale);
    in = work;
  }
  const std::vector<int64_t> segments = EvenSegments(count, size);
  std::vector<int64_t> offset(size + 1, 0);  // bytes
  for (int r = 0; r < size; ++r) offset[r + 1] = offset[r] + segments[r] * esize;
  ex.BeginPhase("RING_REDUCESCATTER");
  ex.ring().ReduceScatter(in, work, segments, req.dtype, response.op,
                          ex.EpilogueFor(req.dtype, response.op, response.postscale));
  ex.BeginPhase("GATHER_TO_ROOT");
  std::vector<Transport::Handle> pending;
  // Posts `post` on each message-sized piece of rank r's segment of `work`.
  auto each_piece = [&](int r, auto post) {
    for (int64_t at = offset[r]; at < offset[r + 1]; at += kMaxMessageBytes) {
      pending.push_back(post(work + at, static_cast<size_t>(std::min<int64_t>(kMaxMessageBytes, offset[r + 1] - at))));
    }
  };
  if (rank == root) {
    for (int r = 0; r < size; ++r) {
      if (r != root) each_piece(r, [&](char* p, size_t n) { return ex.transport().Irecv(r, p, n); });
    }
  } else {
    each_piece(rank, [&](char* p, size_t n) { return ex.transport().Isend(root, p, n); });
  }
  for (Transport::Handle h : pending) ex.transport().Wait(h);
  if (rank != root && count > 0) std::memset(out, 0, static_cast<size_t>(count * esize));
  return {status};
}

}  // namespace mpirep
