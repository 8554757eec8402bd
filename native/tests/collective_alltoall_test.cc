// Alltoall on 1..8 ranks (collective_alltoall.cc), with a split matrix.
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

// Rank s sends (s + 2d) % 3 rows of width 2 to rank d; row j of that block holds
// 10000 s + 100 d + j in both columns, negated in the second.
void CheckAlltoall(int n) {
  auto split = [](int s, int d) { return static_cast<int64_t>((s + 2 * d) % 3); };
  std::vector<RankWork> work(n);
  for (int s = 0; s < n; ++s) {
    std::vector<int64_t> mine;
    Request request = Make(Collective::ALLTOALL, "a", DataType::INT64, {0, 2});
    for (int d = 0; d < n; ++d) {
      request.splits.push_back(split(s, d));
      for (int64_t j = 0; j < split(s, d); ++j) {
        mine.push_back(10000 * s + 100 * d + j);
        mine.push_back(-(10000 * s + 100 * d + j));
      }
    }
    request.shape[0] = static_cast<int64_t>(mine.size() / 2);
    work[s].Submit(request, mine);
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int d = 0; d < n; ++d) {
    std::vector<int64_t> expected, received;
    for (int s = 0; s < n; ++s) {
      received.push_back(split(s, d));
      for (int64_t j = 0; j < split(s, d); ++j) {
        expected.push_back(10000 * s + 100 * d + j);
        expected.push_back(-(10000 * s + 100 * d + j));
      }
    }
    CHECK(outcomes[d].Values<int64_t>("a") == expected, << "alltoall n=" << n << " rank " << d);
    CHECK(outcomes[d].results.at("a").received_splits == received, << "received splits n=" << n << " rank " << d);
    CHECK(outcomes[d].shapes.at("a") == (Shape{static_cast<int64_t>(expected.size() / 2), 2}));
  }
}

}  // namespace

TEST(Alltoall, SplitMatrix) {
  for (int n = 1; n <= 8; ++n) CheckAlltoall(n);
}
