// The Transport the ring runs on in production: nonblocking MPI point-to-point on the core's own
// duplicated communicator, waited for with Backoff so that a waiting rank does not spin a core.
#pragma once

#include <mpi.h>

#include <unordered_map>

#include "core/backoff.h"
#include "core/transport.h"

namespace mpirep {

class MpiTransport : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle Isend(int peer, const void* data, size_t bytes) override;
  Handle Irecv(int peer, void* data, size_t bytes) override;
  void Wait(Handle handle) override;
  bool Test(Handle handle) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  Handle next_handle_ = 0;
  std::unordered_map<Handle, MPI_Request> pending_;
};

// Waits for one MPI request, polling with `backoff`. Once negotiation has started a collective
// every rank is inside it, so its transfers end soon; they also progress only while MPI is
// polled. The data path therefore spin-yields for long and sleeps little.
void WaitPolitely(MPI_Request* request, Backoff backoff);
inline Backoff DataPathBackoff() { return Backoff(/*spin_micros=*/2000, /*max_sleep_micros=*/50); }

}  // namespace mpirep
