#include "buffer_pool.h"

#include <algorithm>
#include <cstdlib>

#include "work_buffer.h"

namespace mpirep {

BufferPool::~BufferPool() {
  for (auto& [capacity, buffers] : free_) {
    for (void* data : buffers) std::free(data);
  }
}

void* BufferPool::Get(size_t bytes, size_t* capacity) {
  bytes = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest cached buffer that fits without wasting more than half of it.
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      *capacity = it->first;
      void* data = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= it->first;
      if (it->second.empty()) free_.erase(it);
      return data;
    }
  }
  return AllocateTransferMemory(bytes, capacity);
}

void BufferPool::Put(void* data, size_t capacity) {
  if (!data) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity > max_cached_bytes_) {
    std::free(data);
    return;
  }
  free_[capacity].push_back(data);
  cached_bytes_ += capacity;
  while (cached_bytes_ > max_cached_bytes_) {  // drop the largest first: the rarest sizes
    auto largest = std::prev(free_.end());
    cached_bytes_ -= largest->first;
    std::free(largest->second.back());
    largest->second.pop_back();
    if (largest->second.empty()) free_.erase(largest);
  }
}

}  // namespace mpirep
