#include "shm_allreduce.h"

#include <algorithm>
#include <cstring>

#include "backoff.h"
#include "reduce.h"

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

void ShmAllreduce::Allreduce(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                             const Ring::Epilogue& epilogue) {
  const int64_t esize = static_cast<int64_t>(ElementSize(dtype));
  char* const target = static_cast<char*>(out);
  if (size_ == 1) {
    if (count > 0 && in.Contiguous(0, count * esize) != target) in.CopyTo(target, 0, count * esize);
    if (count > 0) epilogue(target, count);
    return;
  }
  const int64_t per_block = std::max<int64_t>(1, static_cast<int64_t>(slot_bytes_) / esize);
  const int64_t blocks = (count + per_block - 1) / per_block;
  const uint64_t first = block_ + 1;
  block_ += static_cast<uint64_t>(blocks);
  auto elements = [&](int64_t b) { return std::min(per_block, count - b * per_block); };
  auto copy_in = [&](int64_t b) {
    in.CopyTo(Slot(rank_, first + b), b * per_block * esize, elements(b) * esize);
    Raise(kArrived, first + b);
  };
  if (blocks > 0) copy_in(0);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t block = first + b;
    char* const block_out = target + b * per_block * esize;
    const std::vector<int64_t> shares = EvenSegments(elements(b), size_);
    std::vector<int64_t> offsets(size_, 0);  // in bytes
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + shares[r - 1] * esize;
    AwaitAll(kArrived, block);
    if (shares[rank_] > 0) {
      // Into the output, not the own slot, which still holds this rank's operand.
      const int64_t mine = offsets[rank_];
      char* result = block_out + mine;
      Reduce(result, Slot(0, block) + mine, Slot(1, block) + mine, shares[rank_], dtype, op);
      for (int r = 2; r < size_; ++r) Reduce(result, result, Slot(r, block) + mine, shares[rank_], dtype, op);
      epilogue(result, shares[rank_]);
      std::memcpy(Slot(rank_, block) + mine, result, shares[rank_] * esize);
    }
    Raise(kReduced, block);
    AwaitAll(kReduced, block);
    // The next block's copy in first, so that the others can start reducing it while this rank
    // copies this block out.
    if (b + 1 < blocks) copy_in(b + 1);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && shares[r] > 0) std::memcpy(block_out + offsets[r], Slot(r, block) + offsets[r], shares[r] * esize);
    }
  }
}

}  // namespace mpirep
