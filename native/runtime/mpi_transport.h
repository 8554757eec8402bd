// The Transport the ring runs on in production: nonblocking MPI point-to-point on the core's own
// duplicated communicator, waited for with Backoff so that a waiting rank does not spin a core.
#pragma once

#include <mpi.h>

#include <functional>
#include <unordered_map>

#include "core/backoff.h"
#include "core/transport.h"

namespace mpirep {

class MpiTransport : public Transport {
 public:
  // `while_waiting`, when given, is called on every poll of a wait (peer liveness): it must
  // outlive the transport.
  explicit MpiTransport(MPI_Comm comm, const std::function<void()>* while_waiting = nullptr);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle Isend(int peer, const void* data, size_t bytes) override;
  Handle Irecv(int peer, void* data, size_t bytes) override;
  void Wait(Handle handle) override;
  bool Test(Handle handle) override;
  void Abandon(Handle handle) override;

 private:
  struct Pending {
    MPI_Request request;
    bool receive;
  };
  MPI_Comm comm_;
  const std::function<void()>* while_waiting_;
  int rank_ = 0;
  int size_ = 1;
  Handle next_handle_ = 0;
  std::unordered_map<Handle, Pending> pending_;
};

// Waits for one MPI request, polling with `backoff` and calling `while_waiting` (if given) on
// every poll. Once negotiation has started a collective every rank is inside it, so its
// transfers end soon; they also progress only while MPI is polled. The data path therefore
// spin-yields for long and sleeps little.
void WaitPolitely(MPI_Request* request, Backoff backoff, const std::function<void()>* while_waiting = nullptr);
inline Backoff DataPathBackoff() { return Backoff(/*spin_micros=*/2000, /*max_sleep_micros=*/50); }

}  // namespace mpirep
