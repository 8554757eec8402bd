// Allreduce by recursive doubling, for buffers small enough that a message costs its latency
// rather than its bytes: log2(n) exchanges of the whole buffer, where the ring takes 2(n-1)
// exchanges of a 1/n share.
//
// With p the largest power of two not above the rank count, rank p + i (if any) first hands its
// buffer to rank i; ranks 0..p-1 then exchange with rank ^ 1, rank ^ 2, ... and combine; and
// rank i hands the result back to rank p + i. Each combination puts the lower-numbered
// partner's partial result first, so both partners compute the same expression and every rank
// ends with the same bits, whatever the op does with operand order (a NaN under min or max).
#pragma once

#include <vector>

#include "ring.h"
#include "transport.h"

namespace mpirep {

class DoublingAllreduce {
 public:
  explicit DoublingAllreduce(Transport& transport) : transport_(transport) {}

  // As Ring::Allreduce: out = reduction of every rank's `in` (`in` may equal `out`), then
  // `epilogue` over the whole result.
  void Allreduce(const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue);

 private:
  // Sends `out` to `peer` and receives the peer's buffer into received_.
  void Exchange(int peer, const void* out, size_t bytes);

  Transport& transport_;
  std::vector<char> received_;
};

}  // namespace mpirep
