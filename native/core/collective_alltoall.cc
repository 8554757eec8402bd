// Alltoall: each rank sends a block of rows to every rank and gets one from every rank.
#include <algorithm>
#include <cstring>

#include "collectives.h"

namespace mpirep {

// Pairwise exchange: at step k every rank sends to rank+k and receives from rank-k, so each
// pair of ranks talks once and no rank waits on two peers at a time.
std::vector<Status> RunAlltoall(Executor& ex, const Response& response,
                                const std::vector<Operation*>& ops, OperationResult* result) {
  const int rank = ex.rank(), size = ex.size();
  Operation& op = *ops[0];
  std::vector<int64_t>* received_splits = &result->received_splits;
  const Request& req = op.request;
  const int64_t row_bytes = RowElements(req.shape) * static_cast<int64_t>(ElementSize(req.dtype));
  auto split = [&](int from, int to) { return response.split_matrix[from * size + to]; };
  std::vector<int64_t> send_offset(size + 1, 0), recv_offset(size + 1, 0);
  received_splits->assign(size, 0);
  for (int r = 0; r < size; ++r) {
    send_offset[r + 1] = send_offset[r] + split(rank, r) * row_bytes;
    (*received_splits)[r] = split(r, rank);
    recv_offset[r + 1] = recv_offset[r] + split(r, rank) * row_bytes;
  }
  Status status;
  int64_t total_rows = 0;
  for (int r = 0; r < size; ++r) total_rows += split(r, rank);
  const Shape out_shape = WithFirstDim(req.shape, total_rows);
  char* out = static_cast<char*>(ex.Output(op, out_shape, &status));
  const char* in = static_cast<const char*>(op.input);
  ex.BeginPhase("PACK");
  std::memcpy(out + recv_offset[rank], in + send_offset[rank], send_offset[rank + 1] - send_offset[rank]);
  ex.BeginPhase("PAIRWISE_ALLTOALL");
  std::vector<Transport::Handle> pending;
  for (int k = 1; k < size; ++k) {
    const int to = (rank + k) % size, from = (rank - k + size) % size;
    for (int64_t at = recv_offset[from]; at < recv_offset[from + 1]; at += kMaxMessageBytes) {
      pending.push_back(ex.transport().Irecv(from, out + at, std::min<int64_t>(kMaxMessageBytes, recv_offset[from + 1] - at)));
    }
    for (int64_t at = send_offset[to]; at < send_offset[to + 1]; at += kMaxMessageBytes) {
      pending.push_back(ex.transport().Isend(to, in + at, std::min<int64_t>(kMaxMessageBytes, send_offset[to + 1] - at)));
    }
  }
  for (Transport::Handle h : pending) ex.transport().Wait(h);
  return {status};
}

}  // namespace mpirep
