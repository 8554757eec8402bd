// Carries out the collectives that negotiation decided, on this rank's buffers. Runs on the
// background thread only, which is the only user of the data communicator.
#pragma once

#include <mpi.h>

#include <vector>

#include "core/config.h"
#include "mpi_transport.h"
#include "core/operation.h"
#include "core/ring.h"

namespace mpirep {

class Executor {
 public:
  Executor(MPI_Comm data_comm, const Config& config);

  // Runs `response` (kind EXECUTE) over `ops`, the local operations it names, in its order.
  // Returns one status per op, and fills `result` for alltoall and join.
  std::vector<Status> Run(const Response& response, const std::vector<Operation*>& ops,
                          OperationResult* result);

 private:
  std::vector<Status> Allreduce(const Response& response, const std::vector<Operation*>& ops);
  Status Allgather(const Response& response, Operation& op);
  Status Broadcast(Operation& op);
  Status Reducescatter(Operation& op);
  Status Alltoall(const Response& response, Operation& op, std::vector<int64_t>* received_splits);

  // The output buffer for `op`; where the adapter cannot provide one the collective still runs
  // (other ranks depend on it) into scratch memory, and the op fails afterwards.
  void* Output(Operation& op, const Shape& shape, Status* status);
  Ring::Epilogue Finisher(DataType dtype, ReduceOp op, double postscale) const;
  char* Scratch(std::vector<char>& buffer, size_t bytes);

  MPI_Comm comm_;
  int rank_;
  int size_;
  int64_t fusion_threshold_;
  MpiTransport transport_;
  Ring ring_;
  std::vector<char> fusion_buffer_;  // reused by every fused allreduce; grows, never shrinks
  std::vector<char> spare_;          // for outputs the adapter could not allocate
};

}  // namespace mpirep
