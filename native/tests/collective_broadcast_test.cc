// Broadcast on 1..8 ranks (collective_broadcast.cc), from every root.
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

template <typename T>
void CheckBroadcast(int n, DataType dtype) {
  const int64_t multi_chunk = 3 * kChunk / static_cast<int64_t>(sizeof(T)) + 5;
  const std::vector<int64_t> counts = {0, 1, 37, multi_chunk};
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (int root = 0; root < n; ++root) {
      for (int64_t count : counts) {
        Request request = Make(Collective::BROADCAST, "b" + std::to_string(root) + "." + std::to_string(count),
                               dtype, {count});
        request.root = root;
        work[r].Submit(request, Pattern<T>(r, count));
      }
    }
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int root = 0; root < n; ++root) {
    for (int64_t count : counts) {
      const std::string name = "b" + std::to_string(root) + "." + std::to_string(count);
      for (int r = 0; r < n; ++r) {
        CHECK(outcomes[r].statuses.at(name).ok());
        CHECK(outcomes[r].Values<T>(name) == Pattern<T>(root, count),
              << name << " on rank " << r << " of " << n << " (" << DataTypeName(dtype) << ")");
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    size_t i = 0;
    for (int root = 0; root < n; ++root) {
      for (int64_t count : counts) {
        std::vector<char> expected(count * sizeof(T));
        const std::vector<T> values = Pattern<T>(r, count);
        if (count) std::memcpy(expected.data(), values.data(), expected.size());
        CHECK(work[r].inputs[i++] == expected, << "broadcast input modified on rank " << r);
      }
    }
  }
}

}  // namespace

TEST(Broadcast, FromEveryRoot) {
  for (int n = 1; n <= 8; ++n) {
    CheckBroadcast<int8_t>(n, DataType::INT8);
    CheckBroadcast<int32_t>(n, DataType::INT32);
    CheckBroadcast<double>(n, DataType::FLOAT64);
  }
}
