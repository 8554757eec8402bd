// Point-to-point messaging as the collectives see it. The MPI implementation is the real one
// (runtime/mpi_transport.h); tests run the same collectives over an in-process implementation
// with ranks as threads (tests/inproc_transport.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpirep {

// No message is larger than this: MPI counts are int, so the core cuts every buffer into
// pieces of at most 1 GiB.
constexpr size_t kMaxMessageBytes = size_t{1} << 30;

class Transport {
 public:
  using Handle = uint64_t;

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Messages between one pair of ranks match in the order they were posted, so the two sides
  // must post the same sequence of sizes. A zero-byte message is never posted, nor one larger
  // than kMaxMessageBytes.
  virtual Handle Isend(int peer, const void* data, size_t bytes) = 0;
  virtual Handle Irecv(int peer, void* data, size_t bytes) = 0;
  virtual void Wait(Handle handle) = 0;
  // Whether the operation has completed, without waiting; once it returns true the handle is
  // finished, as after Wait.
  virtual bool Test(Handle handle) = 0;
  // Gives up on an operation that has not completed, and finishes its handle: a receive is
  // cancelled; a send completes, or not, on its own (a peer that stopped may never take it).
  virtual void Abandon(Handle handle) = 0;
};

}  // namespace mpirep
