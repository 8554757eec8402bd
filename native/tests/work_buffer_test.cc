// Transfer memory: its sizes and alignments, and a working buffer's growth.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "check.h"
#include "core/work_buffer.h"

using namespace mpirep;

namespace {

bool AlignedTo(const void* p, size_t alignment) { return reinterpret_cast<uintptr_t>(p) % alignment == 0; }

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

TEST(WorkBuffer, TransferMemorySizesAndAlignment) {
  size_t capacity = 0;
  void* small = AllocateTransferMemory(100, &capacity);
  CHECK(small && capacity == 128 && AlignedTo(small, 64));
  std::free(small);
  void* none = AllocateTransferMemory(0, &capacity);
  CHECK(none && capacity == 64);
  std::free(none);
  // From 2 MiB on: whole huge pages, on a huge page's boundary.
  void* large = AllocateTransferMemory(3 * kMiB, &capacity);
  CHECK(large && capacity == 4 * kMiB && AlignedTo(large, 2 * kMiB), << capacity);
  std::memset(large, 1, capacity);  // all of it is usable
  std::free(large);
  void* exact = AllocateTransferMemory(2 * kMiB, &capacity);
  CHECK(exact && capacity == 2 * kMiB && AlignedTo(exact, 2 * kMiB), << capacity);
  std::free(exact);
}

TEST(WorkBuffer, ReserveKeepsGrowsAlignedAndNeverShrinks) {
  WorkBuffer buffer;
  char* first = buffer.Reserve(1000);
  CHECK(first && AlignedTo(first, 64));
  first[999] = 7;
  CHECK(buffer.Reserve(1024) == first && first[999] == 7, << "a size within the capacity keeps the buffer");
  char* grown = buffer.Reserve(5 * kMiB);
  CHECK(grown && AlignedTo(grown, 2 * kMiB));
  grown[5 * kMiB + kMiB - 1] = 1;  // rounded up to 6 MiB
  CHECK(buffer.Reserve(100) == grown, << "it never shrinks");
}
