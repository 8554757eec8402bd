// Carries out the collectives that negotiation decided, on this rank's buffers, over a
// Transport: MPI point-to-point in production, an in-process transport in the unit tests. Used
// by one thread at a time (the background thread, which alone owns the transport).
#pragma once

#include <vector>

#include "operation.h"
#include "ring.h"
#include "transport.h"

namespace mpirep {

class Executor {
 public:
  // `chunk_bytes`: the unit of pipelining of the ring and of broadcast.
  Executor(Transport& transport, int64_t chunk_bytes);

  // Runs `response` (kind EXECUTE) over `ops`, the local operations it names, in its order.
  // Returns one status per op, and fills `result` for alltoall and join.
  std::vector<Status> Run(const Response& response, const std::vector<Operation*>& ops,
                          OperationResult* result);
  // For the collectives that follow (autotuning changes it on every rank at the same point).
  void SetChunkBytes(int64_t chunk_bytes);

 private:
  std::vector<Status> Allreduce(const Response& response, const std::vector<Operation*>& ops);
  Status Allgather(const Response& response, Operation& op);
  Status Broadcast(Operation& op);
  Status Reducescatter(Operation& op);
  Status Alltoall(const Response& response, Operation& op, std::vector<int64_t>* received_splits);

  // The output buffer for `op`; where the adapter cannot provide one the collective still runs
  // (other ranks depend on it) into scratch memory, and the op fails afterwards.
  void* Output(Operation& op, const Shape& shape, Status* status);
  // Averaging and postscaling, applied once to each fully reduced chunk on its owner.
  Ring::Epilogue EpilogueFor(DataType dtype, ReduceOp op, double postscale) const;
  char* Scratch(std::vector<char>& buffer, size_t bytes);

  Transport& transport_;
  const int rank_;
  const int size_;
  size_t chunk_bytes_;
  Ring ring_;
  std::vector<char> fusion_buffer_;  // reused by every fused allreduce; grows, never shrinks
  std::vector<char> spare_;          // for outputs the adapter could not allocate
};

}  // namespace mpirep
