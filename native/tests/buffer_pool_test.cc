// The output pool: what it hands back, what it keeps, and what it lets go.
#include <cstdint>

#include "check.h"
#include "core/buffer_pool.h"

using namespace mpirep;

TEST(BufferPool, BuffersComeBackMostRecentFirstAndNotTooLarge) {
  BufferPool pool(1 << 20);
  size_t a_capacity = 0, b_capacity = 0;
  void* a = pool.Get(4096, &a_capacity);
  void* b = pool.Get(4096, &b_capacity);
  CHECK(a && b && a != b);
  CHECK(a_capacity == 4096 && b_capacity == 4096);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  pool.Put(a, a_capacity);
  pool.Put(b, b_capacity);
  // Buffers of one size come back, most recently returned first, until none is left.
  size_t capacity = 0;
  CHECK(pool.Get(4000, &capacity) == b && capacity == 4096);
  CHECK(pool.Get(4096, &capacity) == a && capacity == 4096);
  void* fresh = pool.Get(4096, &capacity);
  CHECK(fresh != a && fresh != b && capacity == 4096);
  // A buffer more than twice the size asked for stays in the pool.
  pool.Put(a, 4096);
  void* small = pool.Get(100, &capacity);
  CHECK(small != a && capacity == 128);
  CHECK(pool.Get(2048, &capacity) == a && capacity == 4096);
  for (void* p : {a, b, fresh, small}) pool.Put(p, p == small ? 128 : 4096);
}

TEST(BufferPool, PastItsLimitTheLargestBuffersGoFirst) {
  // Past its limit the pool frees the largest buffers first; a buffer over the limit is not kept.
  BufferPool pool(3 * 4096);
  size_t capacity = 0;
  void* big = pool.Get(8192, &capacity);
  void* one = pool.Get(4096, &capacity);
  void* two = pool.Get(4096, &capacity);
  pool.Put(pool.Get(4 * 4096, &capacity), capacity);
  pool.Put(big, 8192);
  pool.Put(one, 4096);
  pool.Put(two, 4096);  // 16 KiB cached: the 8 KiB buffer goes
  void* fitted = pool.Get(5000, &capacity);
  CHECK(capacity == 5056, << "a kept 8 KiB buffer would have served: " << capacity);
  pool.Put(fitted, capacity);
  CHECK(pool.Get(4096, &capacity) == two);
  CHECK(pool.Get(4096, &capacity) == one);
  pool.Put(one, 4096);
  pool.Put(two, 4096);
}
