// Allreduce among the ranks of one host through memory they all map (core/shm_segment.h): each
// rank reads the others' data where it lies instead of receiving it as messages.
//
// The segment holds, per rank, two flags and two slots of `slot_bytes`. A buffer goes through in
// blocks of one slot, each block cut into n shares, share j owned by rank j. For block k every
// rank
//   1. copies the shares of its input block that the others own into its slot k % 2, each at
//      its place in the block, and raises its `arrived` flag to k;
//   2. once every rank has arrived, reduces its own share from every rank's operand in rank
//      order 0, 1, ..., n-1 (its own operand read from its input where it lies, the others'
//      from their slots), into its own slot, applies the epilogue (averaging, postscaling) to
//      it, and raises its `reduced` flag to k;
//   3. once every rank has reduced, copies block k+1 in (step 1), so that the others can go on
//      with it, and then every share of block k from its owner's slot into its output.
// Each element is thus reduced in one fixed order and scaled once, by its owner, and every
// rank copies the same bits: results are bit-identical on every rank. The input is read once
// and the output written once; the slots stay in the cache between the steps, so memory sees
// about the traffic of one copy of the buffer. Large outputs are written with stores that
// bypass the cache (core/stream_copy.h). With two slots per rank no third wait is needed: a
// rank writes slot k % 2 again only for block k+2, after every rank has raised `reduced` to
// k+1, which each does after copying block k out.
//
// Every wait polls the peers' flags, yields the CPU (Backoff: ranks may outnumber cores), and
// calls `while_waiting` on every poll: in production the peer-liveness check, which ends the
// job when a peer is lost; whatever it throws ends the wait.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common.h"
#include "pieces.h"
#include "ring.h"

namespace mpirep {

class ShmAllreduce {
 public:
  // Outputs at least this large are written past the cache: they cannot stay in it anyway.
  static constexpr int64_t kStreamOutputBytes = int64_t{8} << 20;

  // The segment's size for `ranks` ranks with slots of `slot_bytes` (rounded up to 64).
  static size_t SegmentBytes(int ranks, size_t slot_bytes);

  // `segment`: SegmentBytes(size, slot_bytes) bytes, zero when the first rank starts, mapped
  // by all `size` ranks, each of which makes its own ShmAllreduce over it with the same
  // `slot_bytes`. `while_waiting`, if given, must outlive this.
  ShmAllreduce(void* segment, int rank, int size, size_t slot_bytes,
               const std::function<void()>* while_waiting = nullptr);

  // out = reduction of every rank's `in`, `count` elements of `dtype` laid end to end in
  // either; a piece of `in` may be the same memory as the piece of `out` at its offset. Every
  // rank must run the same sequence of allreduces (counts and dtypes).
  void Allreduce(const Pieces& in, const OutputPieces& out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue);
  void Allreduce(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue) {
    Allreduce(in, OutputPieces(out, count * static_cast<int64_t>(ElementSize(dtype))), count, dtype, op, epilogue);
  }

 private:
  enum Flag { kArrived = 0, kReduced = 1 };
  // Where each rank's share of a block of `elements` starts, in bytes, and its size; the
  // last entry is the block's end.
  struct Shares {
    std::vector<int64_t> start;
    int64_t bytes(int r) const { return start[r + 1] - start[r]; }
  };
  Shares SharesOf(int64_t elements, size_t element_bytes) const;
  uint64_t* FlagOf(int rank, Flag flag) const;
  char* Slot(int rank, uint64_t block) const;
  void Raise(Flag flag, uint64_t block);
  // Until every rank's `flag` has reached `block`.
  void AwaitAll(Flag flag, uint64_t block);

  char* const segment_;
  const int rank_;
  const int size_;
  const size_t slot_bytes_;
  const std::function<void()>* while_waiting_;
  uint64_t block_ = 0;  // blocks this rank has started, on every rank the same
};

}  // namespace mpirep
