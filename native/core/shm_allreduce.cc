#include "shm_allreduce.h"

#include <algorithm>
#include <cstring>

#include "backoff.h"
#include "reduce.h"
#include "stream_copy.h"

namespace mpirep {
namespace {

// Each flag on a cache line of its own: a rank's writes never invalidate a line another rank
// writes.
constexpr size_t kLine = 64;
constexpr size_t kFlagsPerRank = 2;

size_t RoundUp(size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }

// The peers are in this collective already, as in MpiTransport's data path: spin-yield for
// long, sleep little.
Backoff WaitBackoff() { return Backoff(/*spin_micros=*/2000, /*max_sleep_micros=*/50); }

}  // namespace

size_t ShmAllreduce::SegmentBytes(int ranks, size_t slot_bytes) {
  return static_cast<size_t>(ranks) * (kFlagsPerRank * kLine + 2 * RoundUp(slot_bytes));
}

ShmAllreduce::ShmAllreduce(void* segment, int rank, int size, size_t slot_bytes,
                           const std::function<void()>* while_waiting)
    : segment_(static_cast<char*>(segment)),
      rank_(rank),
      size_(size),
      slot_bytes_(RoundUp(std::max<size_t>(slot_bytes, kLine))),
      while_waiting_(while_waiting) {}

uint64_t* ShmAllreduce::FlagOf(int rank, Flag flag) const {
  return reinterpret_cast<uint64_t*>(segment_ + (static_cast<size_t>(rank) * kFlagsPerRank + flag) * kLine);
}

char* ShmAllreduce::Slot(int rank, uint64_t block) const {
  const size_t flags = static_cast<size_t>(size_) * kFlagsPerRank * kLine;
  return segment_ + flags + (static_cast<size_t>(rank) * 2 + block % 2) * slot_bytes_;
}

void ShmAllreduce::Raise(Flag flag, uint64_t block) { __atomic_store_n(FlagOf(rank_, flag), block, __ATOMIC_RELEASE); }

void ShmAllreduce::AwaitAll(Flag flag, uint64_t block) {
  Backoff backoff = WaitBackoff();
  for (int r = 0; r < size_; ++r) {
    while (__atomic_load_n(FlagOf(r, flag), __ATOMIC_ACQUIRE) < block) {
      if (while_waiting_) (*while_waiting_)();
      backoff.Pause();
    }
  }
}

ShmAllreduce::Shares ShmAllreduce::SharesOf(int64_t elements, size_t element_bytes) const {
  Shares shares{{0}};
  for (int64_t part : EvenSegments(elements, size_)) {
    shares.start.push_back(shares.start.back() + part * static_cast<int64_t>(element_bytes));
  }
  return shares;
}

void ShmAllreduce::Allreduce(const Pieces& in, const OutputPieces& out, int64_t count, DataType dtype,
                             ReduceOp op, const Ring::Epilogue& epilogue) {
  const size_t esize = ElementSize(dtype);
  const int64_t bytes = count * static_cast<int64_t>(esize);
  const auto copy_out = [&](int64_t at, const char* from, int64_t length) {
    out.ForEach(at, length, [&](char* part, int64_t done, int64_t part_bytes) {
      if (part == from + done) return;
      if (bytes >= kStreamOutputBytes) {
        StreamCopy(part, from + done, part_bytes);
      } else {
        std::memcpy(part, from + done, part_bytes);
      }
    });
  };
  if (size_ == 1) {
    // The input into the output, where it is not there already, and the epilogue there.
    in.ForEach(0, bytes, [&](const char* part, int64_t done, int64_t part_bytes) { copy_out(done, part, part_bytes); });
    out.ForEach(0, bytes, [&](char* part, int64_t, int64_t part_bytes) {
      epilogue(part, part_bytes / static_cast<int64_t>(esize));
    });
    return;
  }
  const int64_t per_block = std::max<int64_t>(1, static_cast<int64_t>(slot_bytes_ / esize));
  const int64_t block_bytes = per_block * static_cast<int64_t>(esize);
  const int64_t blocks = (count + per_block - 1) / per_block;
  const uint64_t first = block_ + 1;
  block_ += static_cast<uint64_t>(blocks);
  const auto shares_of = [&](int64_t b) { return SharesOf(std::min(per_block, count - b * per_block), esize); };
  // Step 1: the others' shares of block b, each at its place in this rank's slot.
  const auto copy_in = [&](int64_t b) {
    const Shares shares = shares_of(b);
    char* const slot = Slot(rank_, first + b);
    const int64_t at = b * block_bytes;
    in.CopyTo(slot, at, shares.start[rank_]);
    in.CopyTo(slot + shares.start[rank_ + 1], at + shares.start[rank_ + 1], shares.start[size_] - shares.start[rank_ + 1]);
    Raise(kArrived, first + b);
  };
  if (blocks > 0) copy_in(0);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t block = first + b;
    const Shares shares = shares_of(b);
    const int64_t mine = shares.start[rank_];
    char* const result = Slot(rank_, block) + mine;
    AwaitAll(kArrived, block);
    // Step 2, per part of this rank's input that its share spans.
    in.ForEach(b * block_bytes + mine, shares.bytes(rank_), [&](const char* own, int64_t done, int64_t part_bytes) {
      const int64_t elements = part_bytes / static_cast<int64_t>(esize);
      const auto operand = [&](int r) -> const char* { return r == rank_ ? own : Slot(r, block) + mine + done; };
      Reduce(result + done, operand(0), operand(1), elements, dtype, op);
      for (int r = 2; r < size_; ++r) Reduce(result + done, result + done, operand(r), elements, dtype, op);
    });
    if (shares.bytes(rank_) > 0) epilogue(result, shares.bytes(rank_) / static_cast<int64_t>(esize));
    Raise(kReduced, block);
    AwaitAll(kReduced, block);
    // The next block's copy in first, so that the others can start reducing it while this rank
    // copies this block out.
    if (b + 1 < blocks) copy_in(b + 1);
    for (int r = 0; r < size_; ++r) {
      copy_out(b * block_bytes + shares.start[r], Slot(r, block) + shares.start[r], shares.bytes(r));
    }
  }
}

}  // namespace mpirep
