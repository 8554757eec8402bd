#include "shm_collectives.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backoff.h"
#include "reduce.h"
#include "stream_copy.h"

namespace mpirep {
namespace {

// Each flag on a cache line of its own: a rank's writes never invalidate a line another rank
// writes.
constexpr size_t kLine = 64;
constexpr size_t kFlagsPerRank = 2;
// The widest element: a slot holds at least one per rank, a round's least.
constexpr size_t kWidestElement = 8;

size_t RoundUp(size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }

size_t SlotBytes(int ranks, size_t slot_bytes) {
  return RoundUp(std::max(slot_bytes, static_cast<size_t>(ranks) * kWidestElement));
}

// The peers are in this collective already, as in MpiTransport's data path: spin-yield for
// long, sleep little.
Backoff WaitBackoff() { return Backoff(/*spin_micros=*/2000, /*max_sleep_micros=*/50); }

}  // namespace

size_t ShmCollectives::SegmentBytes(int ranks, size_t slot_bytes) {
  return static_cast<size_t>(ranks) * (kFlagsPerRank * kLine + 2 * SlotBytes(ranks, slot_bytes));
}

ShmCollectives::ShmCollectives(void* segment, int rank, int size, size_t slot_bytes,
                               const std::function<void()>* while_waiting)
    : segment_(static_cast<char*>(segment)),
      rank_(rank),
      size_(size),
      slot_bytes_(SlotBytes(size, slot_bytes)),
      while_waiting_(while_waiting) {}

uint64_t* ShmCollectives::FlagOf(int rank, Flag flag) const {
  return reinterpret_cast<uint64_t*>(segment_ + (static_cast<size_t>(rank) * kFlagsPerRank + flag) * kLine);
}

char* ShmCollectives::Slot(int rank, uint64_t number) const {
  const size_t flags = static_cast<size_t>(size_) * kFlagsPerRank * kLine;
  return segment_ + flags + (static_cast<size_t>(rank) * 2 + number % 2) * slot_bytes_;
}

void ShmCollectives::Raise(Flag flag, uint64_t number) { __atomic_store_n(FlagOf(rank_, flag), number, __ATOMIC_RELEASE); }

void ShmCollectives::AwaitAll(Flag flag, uint64_t number) {
  Backoff backoff = WaitBackoff();
  for (int r = 0; r < size_; ++r) {
    while (__atomic_load_n(FlagOf(r, flag), __ATOMIC_ACQUIRE) < number) {
      if (while_waiting_) (*while_waiting_)();
      backoff.Pause();
    }
  }
}

uint64_t ShmCollectives::Claim(int64_t rounds) {
  const uint64_t first = rounds_started_ + 1;
  rounds_started_ += static_cast<uint64_t>(rounds);
  return first;
}

ShmCollectives::Round ShmCollectives::BlockRound(int64_t block, int64_t count, size_t element_size) const {
  const int64_t esize = static_cast<int64_t>(element_size);
  const int64_t per_block = static_cast<int64_t>(slot_bytes_) / esize;
  const std::vector<int64_t> parts = EvenSegments(std::min(per_block, count - block * per_block), size_);
  Round round(size_);
  int64_t slot_at = 0;
  for (int r = 0; r < size_; ++r) {
    round[r] = {block * per_block * esize + slot_at, parts[r] * esize, slot_at};
    slot_at += parts[r] * esize;
  }
  return round;
}

// A piece of each segment per round: the slot holds one per rank.
int64_t ShmCollectives::SliceRounds(const std::vector<int64_t>& segments, size_t element_size) const {
  const int64_t piece = static_cast<int64_t>(slot_bytes_ / element_size) / size_;
  const int64_t longest = *std::max_element(segments.begin(), segments.end());
  return (longest + piece - 1) / piece;
}

ShmCollectives::Round ShmCollectives::SliceRound(int64_t index, const std::vector<int64_t>& segments,
                                                 size_t element_size) const {
  const int64_t esize = static_cast<int64_t>(element_size);
  const int64_t piece = static_cast<int64_t>(slot_bytes_ / element_size) / size_;
  Round round(size_);
  int64_t start = 0;  // of segment r, in elements
  for (int r = 0; r < size_; ++r) {
    const int64_t from = std::min(index * piece, segments[r]);
    const int64_t to = std::min(from + piece, segments[r]);
    round[r] = {(start + from) * esize, (to - from) * esize, r * piece * esize};
    start += segments[r];
  }
  return round;
}

void ShmCollectives::CopyIn(const Pieces& in, const Round& round, uint64_t number, bool own_share) {
  char* const slot = Slot(rank_, number);
  for (int r = 0; r < size_; ++r) {
    if ((r == rank_) == own_share) in.CopyTo(slot + round[r].slot_at, round[r].at, round[r].bytes);
  }
  Raise(kArrived, number);
}

void ShmCollectives::ReduceOwnShare(const Pieces& in, const Round& round, uint64_t number, char* into,
                                    DataType dtype, ReduceOp op, const Ring::Epilogue& epilogue) {
  const Share& mine = round[rank_];
  const int64_t esize = static_cast<int64_t>(ElementSize(dtype));
  // Part by part of this rank's input that the share spans. The own operand comes first: `into`
  // may be that input (an in-place reduce-scatter), which the first step then overwrites.
  in.ForEach(mine.at, mine.bytes, [&](const char* own, int64_t done, int64_t part_bytes) {
    const char* sum = own;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      Reduce(into + done, sum, Slot(r, number) + mine.slot_at + done, part_bytes / esize, dtype, op);
      sum = into + done;
    }
  });
  if (mine.bytes > 0) epilogue(into, mine.bytes / esize);
  Raise(kReduced, number);
}

void ShmCollectives::CopyOut(const OutputPieces& out, const Round& round, uint64_t number, bool own_share,
                             bool stream) {
  for (int r = 0; r < size_; ++r) {
    if ((r == rank_) != own_share) continue;
    const char* const from = Slot(r, number) + round[r].slot_at;
    out.ForEach(round[r].at, round[r].bytes, [&](char* part, int64_t done, int64_t part_bytes) {
      if (stream) {
        StreamCopy(part, from + done, part_bytes);
      } else {
        std::memcpy(part, from + done, part_bytes);
      }
    });
  }
}

void ShmCollectives::Allreduce(const Pieces& in, const OutputPieces& out, int64_t count, DataType dtype,
                               ReduceOp op, const Ring::Epilogue& epilogue) {
  const size_t esize = ElementSize(dtype);
  const int64_t bytes = count * static_cast<int64_t>(esize);
  const bool stream = bytes >= kStreamOutputBytes;
  if (size_ == 1) {  // the input into the output, where it is not there already, and the epilogue there
    in.ForEach(0, bytes, [&](const char* part, int64_t done, int64_t part_bytes) {
      out.ForEach(done, part_bytes, [&](char* to, int64_t within, int64_t to_bytes) {
        if (to != part + within) std::memcpy(to, part + within, to_bytes);
      });
    });
    out.ForEach(0, bytes, [&](char* part, int64_t, int64_t part_bytes) {
      epilogue(part, part_bytes / static_cast<int64_t>(esize));
    });
    return;
  }
  const int64_t per_block = static_cast<int64_t>(slot_bytes_ / esize);
  const int64_t blocks = (count + per_block - 1) / per_block;
  if (blocks == 0) return;
  const uint64_t first = Claim(blocks);
  Round round = BlockRound(0, count, esize);
  CopyIn(in, round, first, /*own_share=*/false);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t number = first + b;
    AwaitAll(kArrived, number);
    ReduceOwnShare(in, round, number, Slot(rank_, number) + round[rank_].slot_at, dtype, op, epilogue);
    // The own share out while it is still in this core's cache, and before waiting for the others.
    CopyOut(out, round, number, /*own_share=*/true, stream);
    AwaitAll(kReduced, number);
    Round next;
    if (b + 1 < blocks) {
      next = BlockRound(b + 1, count, esize);
      CopyIn(in, next, number + 1, /*own_share=*/false);
    }
    CopyOut(out, round, number, /*own_share=*/false, stream);
    round = std::move(next);
  }
}

void ShmCollectives::ReduceScatter(const void* in, void* out, const std::vector<int64_t>& segments,
                                   DataType dtype, ReduceOp op, const Ring::Epilogue& epilogue) {
  const size_t esize = ElementSize(dtype);
  int64_t total = 0;
  for (int64_t s : segments) total += s;
  const Pieces input(in, total * static_cast<int64_t>(esize));
  char* const output = static_cast<char*>(out);
  if (size_ == 1) {
    Allreduce(input, out, total, dtype, op, epilogue);
    return;
  }
  const int64_t rounds = SliceRounds(segments, esize);
  if (rounds == 0) return;
  const uint64_t first = Claim(rounds);
  Round round = SliceRound(0, segments, esize);
  CopyIn(input, round, first, /*own_share=*/false);
  for (int64_t k = 0; k < rounds; ++k) {
    const uint64_t number = first + k;
    AwaitAll(kArrived, number);
    ReduceOwnShare(input, round, number, output + round[rank_].at, dtype, op, epilogue);
    AwaitAll(kReduced, number);
    if (k + 1 < rounds) {
      round = SliceRound(k + 1, segments, esize);
      CopyIn(input, round, number + 1, /*own_share=*/false);
    }
  }
}

void ShmCollectives::Allgather(void* buf, const std::vector<int64_t>& segments, size_t element_size) {
  if (size_ == 1) return;
  int64_t total = 0;
  for (int64_t s : segments) total += s;
  const int64_t bytes = total * static_cast<int64_t>(element_size);
  const Pieces mine(buf, bytes);
  const OutputPieces all(buf, bytes);
  const int64_t rounds = SliceRounds(segments, element_size);
  if (rounds == 0) return;
  const uint64_t first = Claim(rounds);
  Round round = SliceRound(0, segments, element_size);
  CopyIn(mine, round, first, /*own_share=*/true);
  for (int64_t k = 0; k < rounds; ++k) {
    const uint64_t number = first + k;
    // Nothing to reduce, so one wait serves: `reduced` k, raised once round k is in and round
    // k-1 out, tells both that the others' shares can be read and that slot k+1 is free.
    Raise(kReduced, number);
    AwaitAll(kReduced, number);
    Round next;
    if (k + 1 < rounds) {
      next = SliceRound(k + 1, segments, element_size);
      CopyIn(mine, next, number + 1, /*own_share=*/true);
    }
    CopyOut(all, round, number, /*own_share=*/false, /*stream=*/false);
    round = std::move(next);
  }
}

}  // namespace mpirep
