#include "host_shared_memory.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace mpirep {
namespace {

// Rank 0's text on every rank.
std::string FromRankZero(MPI_Comm comm, std::string text) {
  int bytes = static_cast<int>(text.size());
  MPI_Bcast(&bytes, 1, MPI_INT, 0, comm);
  text.resize(static_cast<size_t>(bytes));
  MPI_Bcast(text.data(), bytes, MPI_CHAR, 0, comm);
  return text;
}

}  // namespace

HostSharedMemory::HostSharedMemory(MPI_Comm comm, bool wanted, size_t slot_bytes,
                                   const std::function<void()>* while_waiting) {
  int rank = 0, size = 1, on = wanted;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Bcast(&on, 1, MPI_INT, 0, comm);
  if (!on || size == 1) return;
  const size_t bytes = ShmCollectives::SegmentBytes(size, slot_bytes);
  std::string name, error;
  if (rank == 0) {
    name = SharedSegment::UniqueName();
    try {
      segment_ = std::make_unique<SharedSegment>(SharedSegment::Create(name, bytes));
    } catch (const std::runtime_error& e) {
      error = e.what();
      name.clear();
    }
  }
  name = FromRankZero(comm, name);
  if (rank != 0 && !name.empty()) {
    try {
      segment_ = std::make_unique<SharedSegment>(SharedSegment::Open(name, bytes));
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  }
  int mapped = segment_ != nullptr;
  MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_LAND, comm);
  if (!name.empty()) SharedSegment::Unlink(name);  // every rank: whoever survives removes it
  if (!mapped) {
    segment_.reset();
    // Rank 0's reason, or the first other rank's that has one.
    int reporter = error.empty() ? size : rank;
    MPI_Allreduce(MPI_IN_PLACE, &reporter, 1, MPI_INT, MPI_MIN, comm);
    if (rank == reporter) {
      std::fprintf(stderr, "[mpirep] rank %d: no shared memory for %d ranks on one host (%s): they use the ring\n",
                   rank, size, error.c_str());
    }
    return;
  }
  collectives_.emplace(segment_->data(), rank, size, slot_bytes, while_waiting);
}

}  // namespace mpirep
