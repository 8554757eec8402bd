// The shared-memory collectives of the ranks of one host (a whole process set, or one host's
// share of a set that spans hosts): the segment they map together (core/shm_segment.h), set up
// through MPI, and the collectives over it (core/shm_collectives.h).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>

#include "core/shm_collectives.h"
#include "core/shm_segment.h"

namespace mpirep {

class HostSharedMemory {
 public:
  // Collective over `comm`, whose ranks are all on this host (an MPI_COMM_TYPE_SHARED split).
  // Sets up the segment when `wanted` (rank 0's value counts) and the communicator has several
  // ranks: rank 0 creates it and broadcasts its name, the others map it, and once every rank
  // has, all remove its name. Where any rank fails to, every rank goes without, and rank 0 says
  // why. `slot_bytes`: ShmCollectives'; every rank's must be the same. `while_waiting`: as
  // MpiTransport's.
  HostSharedMemory(MPI_Comm comm, bool wanted, size_t slot_bytes, const std::function<void()>* while_waiting);

  // Null where there is no segment.
  ShmCollectives* collectives() { return collectives_ ? &*collectives_ : nullptr; }

 private:
  std::unique_ptr<SharedSegment> segment_;
  std::optional<ShmCollectives> collectives_;
};

}  // namespace mpirep
