// Reducescatter on 1..8 ranks (collective_reducescatter.cc): uneven blocks, scaled once.
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

// 2n + 1 rows of width 3: rank r gets its block of EvenSegments, scaled once.
template <typename T>
void CheckReducescatter(int n, DataType dtype, ReduceOp op, double pre, double post) {
  const int64_t rows = 2 * n + 1;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    Request request = Make(Collective::REDUCESCATTER, "rs", dtype, {rows, 3});
    request.op = op;
    request.prescale = pre;
    request.postscale = post;
    work[r].Submit(request, ReductionInput<T>(op, r, n, rows * 3, 0));
  }
  const std::vector<Outcome> outcomes = Run(work);
  const std::vector<int64_t> blocks = EvenSegments(rows, n);
  int64_t first_row = 0;
  for (int r = 0; r < n; ++r) {
    CHECK(outcomes[r].shapes.at("rs") == (Shape{blocks[r], 3}));
    CheckReduced(outcomes[r].Values<T>("rs"), op, n, first_row * 3, pre, post,
                 std::string("reducescatter ") + DataTypeName(dtype) + " rank " + std::to_string(r));
    first_row += blocks[r];
  }
}

}  // namespace

TEST(Reducescatter, UnevenBlocks) {
  for (int n = 1; n <= 8; ++n) {
    CheckReducescatter<int32_t>(n, DataType::INT32, ReduceOp::SUM, 3.0, 0.5);
    CheckReducescatter<int64_t>(n, DataType::INT64, ReduceOp::AVERAGE, 3.0, 0.5);
    CheckReducescatter<double>(n, DataType::FLOAT64, ReduceOp::AVERAGE, 3.0, 0.5);
    CheckReducescatter<float>(n, DataType::FLOAT32, ReduceOp::MAX, 1.0, 1.0);
  }
}
