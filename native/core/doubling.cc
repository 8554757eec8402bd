#include "doubling.h"

#include <cstring>

#include "reduce.h"

namespace mpirep {

void DoublingAllreduce::Exchange(int peer, const void* out, size_t bytes) {
  const Transport::Handle receive = transport_.Irecv(peer, received_.data(), bytes);
  const Transport::Handle send = transport_.Isend(peer, out, bytes);
  transport_.Wait(receive);
  transport_.Wait(send);
}

void DoublingAllreduce::Allreduce(const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                                  const Ring::Epilogue& epilogue) {
  const int n = transport_.size(), r = transport_.rank();
  const size_t bytes = static_cast<size_t>(count) * ElementSize(dtype);
  if (bytes == 0) return;
  int p = 1;
  while (2 * p <= n) p *= 2;
  if (r >= p) {  // folded into rank r - p: hand over the input, get the result back
    transport_.Wait(transport_.Isend(r - p, in, bytes));
    transport_.Wait(transport_.Irecv(r - p, out, bytes));
    return;
  }
  received_.resize(bytes);
  // This rank's partial result: its input until the first combination writes `out`, so the
  // input is never copied.
  const void* mine = in;
  if (r + p < n) {
    transport_.Wait(transport_.Irecv(r + p, received_.data(), bytes));
    Reduce(out, mine, received_.data(), count, dtype, op);
    mine = out;
  }
  for (int mask = 1; mask < p; mask *= 2) {
    const int peer = r ^ mask;
    Exchange(peer, mine, bytes);
    if (r < peer) {
      Reduce(out, mine, received_.data(), count, dtype, op);
    } else {
      Reduce(out, received_.data(), mine, count, dtype, op);
    }
    mine = out;
  }
  if (mine != out) std::memcpy(out, in, bytes);  // one rank: nothing to combine
  epilogue(out, count);
  if (r + p < n) transport_.Wait(transport_.Isend(r + p, out, bytes));
}

}  // namespace mpirep
