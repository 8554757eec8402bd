#include "process_set_comm.h"

#include <cstdio>

namespace mpirep {
namespace {

int64_t RankZerosValue(MPI_Comm comm, int64_t value) {
  MPI_Bcast(&value, 1, MPI_INT64_T, 0, comm);
  return value;
}

}  // namespace

HostComms::HostComms(MPI_Comm comm, bool shared_memory, size_t slot_bytes,
                     const std::function<void()>* while_waiting) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host_);
  int local_rank = 0, local_size = 0;
  MPI_Comm_rank(host_, &local_rank);
  MPI_Comm_size(host_, &local_size);
  int sizes[2] = {local_size, -local_size};  // the largest and, negated, the smallest
  MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm);
  int size = 0;
  MPI_Comm_size(comm, &size);
  one_host_ = local_size == size;
  if (sizes[0] != -sizes[1]) {
    MPI_Comm_free(&host_);
    return;
  }
  MPI_Comm_split(comm, local_rank, rank, &across_);
  host_transport_ = std::make_unique<MpiTransport>(host_, while_waiting);
  across_transport_ = std::make_unique<MpiTransport>(across_, while_waiting);
  host_memory_ = std::make_unique<HostSharedMemory>(host_, shared_memory, slot_bytes, while_waiting);
}

HostComms::~HostComms() {
  host_memory_.reset();
  host_transport_.reset();
  across_transport_.reset();
  if (host_ != MPI_COMM_NULL) MPI_Comm_free(&host_);
  if (across_ != MPI_COMM_NULL) MPI_Comm_free(&across_);
}

ShmCollectives* HostComms::whole_set_memory() const {
  return one_host_ && host_memory_ ? host_memory_->collectives() : nullptr;
}

std::optional<HostTransports> HostComms::transports() const {
  if (!host_transport_) return std::nullopt;
  return HostTransports{host_transport_.get(), across_transport_.get(), host_memory_->collectives()};
}

ProcessSetComm::ProcessSetComm(MPI_Comm comm, const Config& config, const std::function<void()>* while_waiting)
    : comm_(comm),
      transport_(comm, while_waiting),
      hosts_(comm, config.shm_allreduce, static_cast<size_t>(config.shm_slot_bytes), while_waiting),
      executor_(transport_, config.chunk_bytes, config.small_allreduce_bytes, hosts_.transports(),
                RankZerosValue(comm, config.hierarchical_allreduce), hosts_.whole_set_memory()) {
  if (config.hierarchical_allreduce > 0 && !hosts_.transports() && transport_.rank() == 0) {
    std::fprintf(stderr,
                 "[mpirep] hierarchical_allreduce=1, but the hosts of a %d-rank set hold different "
                 "numbers of its ranks: its allreduces use the flat ring\n",
                 transport_.size());
  }
}

}  // namespace mpirep
