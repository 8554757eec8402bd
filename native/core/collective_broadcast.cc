// Broadcast: every rank gets the root's tensor.
#include <algorithm>
#include <cstring>

#include "collectives.h"

namespace mpirep {

// A chain from the root around the ring, chunk by chunk: each rank forwards a chunk to the next
// as soon as it has it. Every link carries the buffer once, so a large buffer moves at link
// speed, and the last rank finishes n-2 chunks after the root's last send.
std::vector<Status> RunBroadcast(Executor& ex, const Response&,
                                 const std::vector<Operation*>& ops, OperationResult*) {
  const int rank = ex.rank(), size = ex.size();
  Operation& op = *ops[0];
  const int64_t chunk_bytes = ex.chunk_bytes();
  Status status;
  char* out = static_cast<char*>(ex.Output(op, op.request.shape, &status));
  const int64_t bytes = Bytes(op);
  const int root = op.request.root;
  const int position = (rank - root + size) % size;  // hops from the root
  const int next = (rank + 1) % size, previous = (rank - 1 + size) % size;
  const bool forwards = position < size - 1;
  ex.BeginPhase("CHAIN_BROADCAST");
  const char* source = position == 0 ? static_cast<const char*>(op.input) : out;
  std::vector<Transport::Handle> receives, sends;
  if (position > 0) {
    for (int64_t at = 0; at < bytes; at += chunk_bytes) {
      receives.push_back(ex.transport().Irecv(previous, out + at, std::min<int64_t>(chunk_bytes, bytes - at)));
    }
  }
  size_t chunk = 0;
  for (int64_t at = 0; at < bytes; at += chunk_bytes, ++chunk) {
    if (position > 0) ex.transport().Wait(receives[chunk]);
    if (forwards) sends.push_back(ex.transport().Isend(next, source + at, std::min<int64_t>(chunk_bytes, bytes - at)));
  }
  if (position == 0 && bytes > 0) std::memcpy(out, op.input, bytes);  // while the sends progress
  for (Transport::Handle h : sends) ex.transport().Wait(h);
  return {status};
}

}  // namespace mpirep
