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
  if (in != out && bytes > 0) std::memcpy(out, in, bytes);
  if (bytes == 0) return;
  int p = 1;
  while (2 * p <= n) p *= 2;
  if (r >= p) {  // folded into rank r - p: hand over the input, get the result back
    transport_.Wait(transport_.Isend(r - p, out, bytes));
    transport_.Wait(transport_.Irecv(r - p, out, bytes));
    return;
  }
  received_.resize(bytes);
  if (r + p < n) {
    transport_.Wait(transport_.Irecv(r + p, received_.data(), bytes));
    Reduce(out, out, received_.data(), count, dtype, op);
  }
  for (int mask = 1; mask < p; mask *= 2) {
    const int peer = r ^ mask;
    Exchange(peer, out, bytes);
    if (r < peer) {
      Reduce(out, out, received_.data(), count, dtype, op);
    } else {
      Reduce(out, received_.data(), out, count, dtype, op);
    }
  }
  epilogue(out, count);
  if (r + p < n) transport_.Wait(transport_.Isend(r + p, out, bytes));
}

}  // namespace mpirep
