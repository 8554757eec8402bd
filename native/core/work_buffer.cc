#include "work_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace mpirep {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

void* AllocateTransferMemory(size_t bytes, size_t* capacity) {
  bytes = std::max<size_t>(bytes, 1);
  const bool huge = bytes >= kHugePage;
  const size_t alignment = huge ? kHugePage : 64;
  *capacity = (bytes + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, *capacity);
  if (data && huge) madvise(data, *capacity, MADV_HUGEPAGE);  // a request: without huge pages, 4 KiB ones
  return data;
}

WorkBuffer::~WorkBuffer() { std::free(data_); }

char* WorkBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_ && data_) return data_;
  std::free(data_);
  data_ = static_cast<char*>(AllocateTransferMemory(bytes, &capacity_));
  if (!data_) {
    capacity_ = 0;
    throw std::bad_alloc();
  }
  return data_;
}

}  // namespace mpirep
