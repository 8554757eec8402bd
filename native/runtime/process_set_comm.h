// This rank's side of a process set it belongs to: the set's payload communicator, the
// transport and executor over it and, where the set's ranks sit on several hosts with as many
// on each, the communicators the executor's hierarchical allreduce runs on: this rank's host
// (MPI's shared-memory split) and its peers of the same local index on the other hosts.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>

#include "core/executor.h"
#include "core/settings.h"
#include "mpi_transport.h"

namespace mpirep {

// The ranks of a communicator grouped by host. Collective over it.
class HostComms {
 public:
  explicit HostComms(MPI_Comm comm);
  ~HostComms();
  HostComms(const HostComms&) = delete;
  HostComms& operator=(const HostComms&) = delete;

  // Empty where hosts hold different numbers of the ranks: their slices would not line up.
  std::optional<HostTransports> transports() const;

 private:
  MPI_Comm host_ = MPI_COMM_NULL;
  MPI_Comm across_ = MPI_COMM_NULL;
  std::unique_ptr<MpiTransport> host_transport_;
  std::unique_ptr<MpiTransport> across_transport_;
};

struct ProcessSetComm {
  // Collective over `comm`, the set's payload communicator, which stays the caller's to free.
  // Every rank takes rank 0's hierarchical_allreduce, so that all choose the same path.
  ProcessSetComm(MPI_Comm comm, const Config& config);

  MPI_Comm data;
  MpiTransport transport;
  HostComms hosts;
  Executor executor;  // last: it runs over the transports above
};

}  // namespace mpirep
