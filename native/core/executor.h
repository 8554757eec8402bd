// Carries out the collectives that negotiation decided, on this rank's buffers, over a
// Transport: MPI point-to-point in production, an in-process transport in the unit tests. Run
// hands each response to its collective's function (collectives.h; one file each,
// collective_<name>.cc), which works with the executor's algorithms and buffers. Used by one
// thread at a time: the one running the rounds (the background thread, or a caller in
// Runtime::RunOnCaller), which owns the transport meanwhile.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "doubling.h"
#include "hierarchical.h"
#include "operation.h"
#include "phase_log.h"
#include "ring.h"
#include "shm_collectives.h"
#include "transport.h"

namespace mpirep {

class Executor {
 public:
  // `chunk_bytes`: the unit of pipelining of the ring and of broadcast. `small_allreduce_bytes`:
  // the largest allreduce reduced by recursive doubling rather than the flat ring, at three
  // ranks or more. `hosts`: the same ranks grouped by host, given only where every host has as
  // many of them as the others.
  // `hierarchical_allreduce`: the setting of that name (negative: auto, 0: off, positive: on).
  // `shm`: given where every rank of the transport is on this host and shared memory is on;
  // the flat allreduce then goes through it (it must outlive the executor).
  Executor(Transport& transport, int64_t chunk_bytes, int64_t small_allreduce_bytes,
           std::optional<HostTransports> hosts = std::nullopt, int64_t hierarchical_allreduce = -1,
           ShmCollectives* shm = nullptr);

  // Runs `response` (kind EXECUTE) over `ops`, the local operations it names, in its order.
  // Returns one status per op, and fills `result` for alltoall and join. With `phases`, records
  // there the phases it went through.
  std::vector<Status> Run(const Response& response, const std::vector<Operation*>& ops,
                          OperationResult* result, PhaseLog* phases = nullptr);
  // For the collectives that follow (autotuning changes them on every rank at the same point).
  void SetChunkBytes(int64_t chunk_bytes);
  void SetHierarchicalAllreduce(int64_t hierarchical_allreduce) {
    hierarchical_allreduce_ = hierarchical_allreduce;
  }
  // Whether hierarchical_allreduce decides anything here: the ranks span several hosts with
  // several ranks on each, as many on every host.
  bool HierarchicalIsAChoice() const;

  // The toolkit of the collectives' functions (collectives.h, one file each).
  Transport& transport() { return transport_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The unit of pipelining of the ring and of broadcast.
  int64_t chunk_bytes() const { return static_cast<int64_t>(chunk_bytes_); }
  Ring& ring() { return ring_; }
  ShmCollectives& shm() { return *shm_; }
  // Scratch memory for packing a collective's inputs, reused by every collective.
  WorkBuffer& fusion_buffer() { return fusion_buffer_; }
  void BeginPhase(const char* name) {
    if (phases_) phases_->Begin(name);
  }
  // The output buffer for `op`; where the adapter cannot provide one the collective still runs
  // (other ranks depend on it) into scratch memory, and the op fails afterwards.
  void* Output(Operation& op, const Shape& shape, Status* status);
  Status AllocationError(const Operation& op) const;
  // Whether this allreduce goes through the host's shared memory (ShmCollectives).
  bool SharedMemory() const;
  // Over the flat transport: shared memory where there is some, else the ring, or doubling for
  // small buffers at three ranks or more (at two the ring already sends each half once each
  // way; doubling would save one message's latency but reduce the whole buffer on both ranks,
  // and measured no faster). Shared memory and the ring read `in` where it lies; the others
  // take it packed into `out` first.
  void ReduceBuffer(const Pieces& in, void* out, int64_t count, DataType dtype, ReduceOp op,
                    const Ring::Epilogue& epilogue);
  // Averaging and postscaling, applied once to each fully reduced chunk on its owner.
  Ring::Epilogue EpilogueFor(DataType dtype, ReduceOp op, double postscale) const;

 private:
  // Whether this allreduce goes through the hosts (HierarchicalAllreduce) or over the flat
  // transport; decided per collective from the setting, the same way on every rank.
  bool Hierarchical() const;

  Transport& transport_;
  const int rank_;
  const int size_;
  size_t chunk_bytes_;
  Ring ring_;
  DoublingAllreduce doubling_;
  int64_t small_allreduce_bytes_;
  std::unique_ptr<HierarchicalAllreduce> hierarchical_;  // null: no host grouping
  int64_t hierarchical_allreduce_;
  ShmCollectives* shm_;  // null: not all on one host, or shared memory off
  WorkBuffer fusion_buffer_;  // reused by every fused allreduce
  WorkBuffer spare_;          // for outputs the adapter could not allocate
  PhaseLog* phases_ = nullptr;       // during Run, when its caller records phases
};

}  // namespace mpirep
