// This rank's side of a process set it belongs to: the set's payload communicator, the
// transport and executor over it and, where the set's ranks sit on several hosts with as many
// on each, the communicators the executor's hierarchical allreduce runs on: this rank's host
// (MPI's shared-memory split) and its peers of the same local index on the other hosts.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>

#include "core/executor.h"
#include "core/process_sets.h"
#include "core/settings.h"
#include "host_shared_memory.h"
#include "mpi_transport.h"

namespace mpirep {

// The ranks of a communicator grouped by host. Collective over it.
class HostComms {
 public:
  // `shared_memory`: whether the ranks of a host reduce through memory they share
  // (shm_allreduce), in blocks of `slot_bytes` (shm_slot_bytes). `while_waiting`: as MpiTransport's.
  HostComms(MPI_Comm comm, bool shared_memory, size_t slot_bytes, const std::function<void()>* while_waiting);
  ~HostComms();
  HostComms(const HostComms&) = delete;
  HostComms& operator=(const HostComms&) = delete;

  // Empty where hosts hold different numbers of the ranks: their slices would not line up.
  std::optional<HostTransports> transports() const;
  // The host's shared memory where this host holds every rank of the communicator (in its
  // order), else null: then the flat allreduce runs on it too.
  ShmCollectives* whole_set_memory() const;

 private:
  MPI_Comm host_ = MPI_COMM_NULL;
  MPI_Comm across_ = MPI_COMM_NULL;
  std::unique_ptr<MpiTransport> host_transport_;
  std::unique_ptr<MpiTransport> across_transport_;
  std::unique_ptr<HostSharedMemory> host_memory_;
  bool one_host_ = false;
};

// A communicator this rank frees when it is done with it.
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm comm) : comm_(comm) {}
  ~OwnedComm() { MPI_Comm_free(&comm_); }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;

 private:
  MPI_Comm comm_;
};

// A set's channel (core/process_sets.h): the runtime attaches one for every set this rank is in.
class ProcessSetComm final : public SetChannel {
 public:
  // Collective over `comm`, the set's payload communicator, which it takes over: it is freed
  // with the channel, when the set is removed or the runtime ends. Every rank takes rank 0's
  // hierarchical_allreduce and shm_allreduce, so that all choose the same path. `while_waiting`: called on every
  // poll of the set's waits (peer liveness); it must outlive the channel.
  ProcessSetComm(MPI_Comm comm, const Config& config, const std::function<void()>* while_waiting);

  Executor& executor() override { return executor_; }

 private:
  OwnedComm comm_;  // first: freed after everything that runs on it
  MpiTransport transport_;
  HostComms hosts_;
  Executor executor_;
};

}  // namespace mpirep
