// Collectives among the ranks of one host through memory they all map (core/shm_segment.h):
// each rank reads the others' data where it lies instead of receiving it as messages. The
// allreduce of a process set on one host, and the stages inside each host of the hierarchical
// allreduce (core/hierarchical.h): a reduce-scatter and an allgather.
//
// The segment holds, per rank, two flags and two slots of `slot_bytes`. A collective goes in
// rounds; in each, every rank owns one share of the data. An allreduce's round is a block of
// one slot, cut into n shares; a reduce-scatter's or allgather's is the next piece of each
// rank's slice, the pieces side by side in the slot. In round k every rank
//   1. copies the shares it contributes into its slot k % 2, each at its place, and raises its
//      `arrived` flag to k: an allreduce's and a reduce-scatter's the shares the others own, an
//      allgather's its own;
//   2. once every rank has arrived, reduces its own share from every rank's operand, its own
//      first (read from its input where it lies), then the others' in rank order (from their
//      slots), and applies the epilogue (averaging, postscaling) to it: an allreduce's into its
//      own slot, a reduce-scatter's into its output; and raises its `reduced` flag to k. An
//      allreduce then copies that share into its output at once, while it is in this core's
//      cache and while the others may still be reducing;
//   3. once every rank has reduced, copies round k+1 in (step 1), so that the others can go on
//      with it, and then copies the others' shares out of their slots.
// An allgather has nothing to reduce: it raises `reduced` as soon as round k is in and waits on
// that flag alone, which then also says that the others' shares have arrived.
// Each element is thus reduced in one fixed order and scaled once, by its owner, and every
// rank copies the same bits: results are bit-identical on every rank. The input is read once
// and the output written once; the slots stay in the cache between the steps, so memory sees
// about the traffic of one copy of the buffer. Large allreduce outputs are written with stores
// that bypass the cache (core/stream_copy.h). With two slots per rank no third wait is needed:
// a rank writes slot k % 2 again only for round k+2, after every rank has raised `reduced` to
// k+1, which each does after copying round k out.
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

class ShmCollectives {
 public:
  // Allreduce outputs at least this large are written past the cache. A training step's
  // gradients are read only once the whole set is reduced, and a set worth fusing outgrows the
  // caches; a plain store would first fetch each output line from memory. From 1 MiB rather
  // than 8, the ResNet-50 round took 0.8x the time at 2 and 4 ranks (docs/core.md).
  static constexpr int64_t kStreamOutputBytes = int64_t{1} << 20;

  // The segment's size for `ranks` ranks with slots of `slot_bytes`.
  static size_t SegmentBytes(int ranks, size_t slot_bytes);

  // `segment`: SegmentBytes(size, slot_bytes) bytes, zero when the first rank starts, mapped
  // by all `size` ranks, each of which makes its own ShmCollectives over it with the same
  // `slot_bytes`. `while_waiting`, if given, must outlive this. Every rank must run the same
  // sequence of collectives (kinds, counts and dtypes).
  ShmCollectives(void* segment, int rank, int size, size_t slot_bytes,
                 const std::function<void()>* while_waiting = nullptr);

  // out = reduction of every rank's `in`, `count` elements of `dtype` laid end to end in
  // either; a piece of `in` may be the same memory as the piece of `out` at its offset.
  void Allreduce(const Pieces& in, const OutputPieces& out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue);
  void Allreduce(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue) {
    Allreduce(in, OutputPieces(out, count * static_cast<int64_t>(ElementSize(dtype))), count, dtype, op, epilogue);
  }
  // As Ring's: segment `rank` of `out` (segments in elements, laid end to end) receives the
  // reduction of that segment of every rank's `in`; the rest of `out` is left alone.
  void ReduceScatter(const void* in, void* out, const std::vector<int64_t>& segments, DataType dtype,
                     ReduceOp op, const Ring::Epilogue& epilogue);
  // As Ring's, in place: on entry segment `rank` of `buf` is this rank's; on return all are.
  void Allgather(void* buf, const std::vector<int64_t>& segments, size_t element_size);

 private:
  enum Flag { kArrived = 0, kReduced = 1 };
  // Where one rank's share of a round lies: bytes from the start of the buffer, and from the
  // start of its slot.
  struct Share {
    int64_t at = 0;
    int64_t bytes = 0;
    int64_t slot_at = 0;
  };
  using Round = std::vector<Share>;  // one share per rank
  Round BlockRound(int64_t block, int64_t count, size_t element_size) const;
  Round SliceRound(int64_t round, const std::vector<int64_t>& segments, size_t element_size) const;
  int64_t SliceRounds(const std::vector<int64_t>& segments, size_t element_size) const;
  // Numbers `rounds` rounds for the next collective, on every rank alike; returns the first.
  // The flags count rounds by these numbers.
  uint64_t Claim(int64_t rounds);

  // Step 1: copies the shares of round `number` from `in` into this rank's slot, the others' or
  // its own, and raises `arrived`.
  void CopyIn(const Pieces& in, const Round& round, uint64_t number, bool own_share);
  // Step 2: reduces this rank's share into `into`, applies the epilogue, and raises `reduced`.
  void ReduceOwnShare(const Pieces& in, const Round& round, uint64_t number, char* into, DataType dtype,
                      ReduceOp op, const Ring::Epilogue& epilogue);
  // Step 3's copy out of the owners' slots: this rank's share, or the others'.
  void CopyOut(const OutputPieces& out, const Round& round, uint64_t number, bool own_share, bool stream);

  uint64_t* FlagOf(int rank, Flag flag) const;
  char* Slot(int rank, uint64_t number) const;
  void Raise(Flag flag, uint64_t number);
  // Until every rank's `flag` has reached `number`.
  void AwaitAll(Flag flag, uint64_t number);

  char* const segment_;
  const int rank_;
  const int size_;
  const size_t slot_bytes_;
  const std::function<void()>* while_waiting_;
  uint64_t rounds_started_ = 0;  // on every rank the same
};

}  // namespace mpirep
