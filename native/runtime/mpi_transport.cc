#include "mpi_transport.h"

#include <stdexcept>

namespace mpirep {

void WaitPolitely(MPI_Request* request, Backoff backoff, const std::function<void()>* while_waiting) {
  int done = 0;
  while (true) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (while_waiting) (*while_waiting)();
    backoff.Pause();
  }
}

MpiTransport::MpiTransport(MPI_Comm comm, const std::function<void()>* while_waiting)
    : comm_(comm), while_waiting_(while_waiting) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Transport::Handle MpiTransport::Isend(int peer, const void* data, size_t bytes) {
  if (bytes > kMaxMessageBytes) throw std::logic_error("mpirep: message larger than a chunk");
  MPI_Request request;
  MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &request);
  pending_.emplace(next_handle_, Pending{request, false});
  return next_handle_++;
}

Transport::Handle MpiTransport::Irecv(int peer, void* data, size_t bytes) {
  if (bytes > kMaxMessageBytes) throw std::logic_error("mpirep: message larger than a chunk");
  MPI_Request request;
  MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &request);
  pending_.emplace(next_handle_, Pending{request, true});
  return next_handle_++;
}

void MpiTransport::Wait(Handle handle) {
  auto it = pending_.find(handle);
  WaitPolitely(&it->second.request, DataPathBackoff(), while_waiting_);
  pending_.erase(it);
}

bool MpiTransport::Test(Handle handle) {
  auto it = pending_.find(handle);
  int done = 0;
  MPI_Test(&it->second.request, &done, MPI_STATUS_IGNORE);
  if (done) pending_.erase(it);
  return done != 0;
}

void MpiTransport::Abandon(Handle handle) {
  auto it = pending_.find(handle);
  if (it->second.receive) {
    MPI_Cancel(&it->second.request);
    MPI_Wait(&it->second.request, MPI_STATUS_IGNORE);
  } else {
    MPI_Request_free(&it->second.request);
  }
  pending_.erase(it);
}

}  // namespace mpirep
