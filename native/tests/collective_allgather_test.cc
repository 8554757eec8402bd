// Allgather on 1..8 ranks (collective_allgather.cc), with uneven rows.
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

// Rank r contributes (5r + 1) % 4 rows (some none) of width 3.
void CheckUnevenAllgather(int n) {
  auto rows = [](int r) { return static_cast<int64_t>((5 * r + 1) % 4); };
  auto value = [](int r, int64_t j) { return static_cast<int32_t>(1000 * r + j); };
  std::vector<RankWork> work(n);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<int32_t> mine(rows(r) * 3);
    for (size_t j = 0; j < mine.size(); ++j) mine[j] = value(r, static_cast<int64_t>(j));
    work[r].Submit(Make(Collective::ALLGATHER, "g", DataType::INT32, {rows(r), 3}), mine);
    total += rows(r);
  }
  std::vector<int32_t> expected;
  for (int r = 0; r < n; ++r) {
    for (int64_t j = 0; j < rows(r) * 3; ++j) expected.push_back(value(r, j));
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int r = 0; r < n; ++r) {
    CHECK(outcomes[r].shapes.at("g") == (Shape{total, 3}), << "n=" << n << " rank " << r);
    CHECK(outcomes[r].Values<int32_t>("g") == expected, << "allgather n=" << n << " rank " << r);
  }
}

}  // namespace

TEST(Allgather, UnevenRows) {
  for (int n = 1; n <= 8; ++n) CheckUnevenAllgather(n);
}
