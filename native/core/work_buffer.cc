#include "work_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace mpirep {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

WorkBuffer::~WorkBuffer() { std::free(data_); }

char* WorkBuffer::Reserve(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes <= capacity_) return data_;
  std::free(data_);
  const bool huge = bytes >= kHugePage;
  const size_t alignment = huge ? kHugePage : 64;
  const size_t capacity = (bytes + alignment - 1) / alignment * alignment;
  data_ = static_cast<char*>(std::aligned_alloc(alignment, capacity));
  if (!data_) {
    capacity_ = 0;
    throw std::bad_alloc();
  }
  capacity_ = capacity;
  if (huge) madvise(data_, capacity_, MADV_HUGEPAGE);  // a request: without huge pages, 4 KiB ones
  return data_;
}

}  // namespace mpirep
