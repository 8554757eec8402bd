// Allreduce for ranks spread over several hosts with the same number of them on each, in three
// stages:
//   1. reduce-scatter inside the host: local rank j ends up with slice j of its host's sum
//      (through memory the host's ranks share, where they do: core/shm_collectives.h);
//   2. local rank j allreduces slice j with local rank j of every other host, on a ring across
//      hosts of its own, so every local rank uses the network at once;
//   3. allgather inside the host.
// Per host and direction the network then carries 2(h-1)/h of the buffer (h hosts), against
// 2(n-1)/n for a flat ring over all n ranks: 1x instead of 1.5x at 2 hosts x 2 ranks.
//
// A large buffer goes through the stages in blocks, pipelined: while block b crosses the
// network, the host reduces block b+1 and spreads block b-1, so that the stages inside the host
// hide behind the transfers across hosts instead of adding to them.
#pragma once

#include <deque>
#include <functional>

#include "ring.h"
#include "shm_collectives.h"
#include "transport.h"

namespace mpirep {

// This rank's two views of the ranks of a collective spread over hosts: `host` connects the
// ranks of its own host, `across` the ranks with its local index on every host, one per host.
// Every host must have as many ranks as the others, so that the slices of stage 1 line up.
// `host_memory`, where the ranks of the host share memory for it, runs stages 1 and 3 instead
// of `host`.
struct HostTransports {
  Transport* host;
  Transport* across;
  ShmCollectives* host_memory = nullptr;
};

class HierarchicalAllreduce {
 public:
  HierarchicalAllreduce(const HostTransports& transports, size_t chunk_bytes);

  int hosts() const { return hosts_; }
  int ranks_per_host() const { return ranks_per_host_; }
  // For the allreduces that follow.
  void SetChunkBytes(size_t chunk_bytes);

  // As Ring::Allreduce: out = reduction of every rank's `in`; `in` may equal `out`. The
  // epilogue runs once per element, on the rank of stage 2's ring that owns it, so every rank
  // gets the same bits.
  void Allreduce(const void* in, void* out, int64_t count, DataType dtype, ReduceOp op,
                 const Ring::Epilogue& epilogue);

 private:
  // The transport across hosts, running queued work inside the host, one item per Wait,
  // before it waits: the work runs while transfers across hosts are in flight. Every rank of
  // a host queues the same work in the same order, so their host transfers pair up.
  class WorkWhileWaiting : public Transport {
   public:
    explicit WorkWhileWaiting(Transport& across) : across_(across) {}
    int rank() const override { return across_.rank(); }
    int size() const override { return across_.size(); }
    Handle Isend(int peer, const void* data, size_t bytes) override {
      return across_.Isend(peer, data, bytes);
    }
    Handle Irecv(int peer, void* data, size_t bytes) override {
      return across_.Irecv(peer, data, bytes);
    }
    void Wait(Handle handle) override {
      RunNext();
      across_.Wait(handle);
    }
    bool Test(Handle handle) override { return across_.Test(handle); }
    void Abandon(Handle handle) override { across_.Abandon(handle); }
    void Queue(std::function<void()> work) { queue_.push_back(std::move(work)); }
    void RunAll() {
      while (!queue_.empty()) RunNext();
    }

   private:
    void RunNext();
    Transport& across_;
    std::deque<std::function<void()>> queue_;
  };

  // Blocks: at least a chunk per rank each, and at most this many.
  static constexpr int kMaxBlocks = 8;

  const int hosts_;
  const int ranks_per_host_;
  const int local_rank_;
  size_t chunk_bytes_;
  WorkWhileWaiting across_;
  Ring host_ring_;
  ShmCollectives* host_memory_;  // null: stages 1 and 3 on host_ring_
  Ring across_ring_;
};

}  // namespace mpirep
