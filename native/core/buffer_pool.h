// Recycles the memory of collective outputs handed to Python. A large fresh allocation costs a
// page fault per 4 KiB page plus zeroing, as much as moving the data over shared memory; with
// recycling, a training loop that reduces the same sizes every step gets warm pages back.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace mpirep {

class BufferPool {
 public:
  // At most `max_cached_bytes` are kept for reuse; the rest is freed at once.
  explicit BufferPool(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  ~BufferPool();

  // 64-byte aligned memory of at least `bytes` (and at least 1). Stores the capacity taken.
  void* Get(size_t bytes, size_t* capacity);
  void Put(void* data, size_t capacity);

 private:
  std::mutex mutex_;
  size_t max_cached_bytes_;
  size_t cached_bytes_ = 0;
  // Capacity -> buffers of it. A list per capacity rather than a node per buffer: a step's
  // hundreds of outputs of one size come and go without a heap allocation each.
  std::map<size_t, std::vector<void*>> free_;
};

}  // namespace mpirep
