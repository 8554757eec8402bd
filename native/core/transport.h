// Point-to-point messaging as the ring algorithms see it. The MPI implementation is the real one;
// tests run the same algorithms over an in-process implementation with ranks as threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpirep {

class Transport {
 public:
  using Handle = uint64_t;

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Messages between one pair of ranks match in the order they were posted, so the two sides
  // must post the same sequence of sizes. A zero-byte message is never posted.
  virtual Handle Isend(int peer, const void* data, size_t bytes) = 0;
  virtual Handle Irecv(int peer, void* data, size_t bytes) = 0;
  virtual void Wait(Handle handle) = 0;
};

}  // namespace mpirep
