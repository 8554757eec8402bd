// Allreduce on 1..8 ranks (collective_allreduce.cc): fused batches and lone tensors of every
// dtype, op and scale factors, by the ring, recursive doubling and shared memory.
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"
#include "numeric_cases.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

// Several allreduces of each op, packed into one ring pass, plus one large enough to run alone;
// counts add up to uneven segments.
template <typename T>
void CheckFusedAllreduce(int n, DataType dtype, ReduceOp op, double pre, double post, int64_t small_allreduce_bytes,
                         bool shm) {
  const std::vector<int64_t> counts = {1, 5, 0, 13, 31, 600};  // 600 elements run alone
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (size_t t = 0; t < counts.size(); ++t) {
      Request request = Make(Collective::ALLREDUCE, "t" + std::to_string(t), dtype, {counts[t]});
      request.op = op;
      request.prescale = pre;
      request.postscale = post;
      work[r].Submit(request, ReductionInput<T>(op, r, n, counts[t], static_cast<int64_t>(t)));
    }
  }
  const std::vector<Response> plan = Negotiate(work, 1 << 20);
  CHECK(plan.size() == 2 && plan[0].names.size() == counts.size() - 1, << "expected one packed batch and one solo");
  const std::vector<Outcome> outcomes = Run(work, small_allreduce_bytes, 1 << 20, shm);
  const std::string what = std::string(ReduceOpName(op)) + " " + DataTypeName(dtype) +
                           " small_allreduce_bytes=" + std::to_string(small_allreduce_bytes) +
                           (shm ? " shm" : "");
  for (size_t t = 0; t < counts.size(); ++t) {
    const std::string name = "t" + std::to_string(t);
    for (int r = 0; r < n; ++r) {
      CHECK(outcomes[r].statuses.at(name).ok(), << outcomes[r].statuses.at(name).message);
      CHECK(outcomes[r].shapes.at(name) == Shape{counts[t]});
    }
    CheckReduced(outcomes[0].Values<T>(name), op, n, static_cast<int64_t>(t), pre, post, what + " " + name);
    CheckSameOnEveryRank(outcomes, name);
  }
  for (int r = 0; r < n; ++r) {  // inputs are only read
    for (size_t t = 0; t < counts.size(); ++t) {
      const std::vector<T> expected = ReductionInput<T>(op, r, n, counts[t], static_cast<int64_t>(t));
      CHECK(work[r].inputs[t].size() == expected.size() * sizeof(T) &&
            (expected.empty() || std::memcmp(work[r].inputs[t].data(), expected.data(), work[r].inputs[t].size()) == 0),
            << "input of t" << t << " on rank " << r << " was modified");
    }
  }
}

// By the ring, then with every buffer small enough for recursive doubling, then (up to 4 ranks,
// as many as a test host holds) through shared memory.
void CheckAllreduces(int n) {
  for (auto [small_allreduce_bytes, shm] : {std::pair{int64_t{0}, false}, std::pair{int64_t{1} << 20, false},
                                            std::pair{int64_t{0}, true}}) {
    if (shm && n > 4) continue;
    mpirep_test::ForEachNumericCase([&](auto element, DataType dtype, ReduceOp op, double pre, double post) {
      CheckFusedAllreduce<decltype(element)>(n, dtype, op, pre, post, small_allreduce_bytes, shm);
    });
  }
}

}  // namespace

TEST(Allreduce, Fused) {
  for (int n = 1; n <= 8; ++n) CheckAllreduces(n);
}
