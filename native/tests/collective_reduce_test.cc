// Reduce on 1..8 ranks (collective_reduce.cc): from every root, of every dtype and op with scale
// factors, over segments of every size (some empty); the root holds the closed-form reduction,
// every other rank zeros; a joined rank takes part with zeros; and the rules every rank checks
// (a root inside the set, the op defined for the dtype, ranks agreeing on root and op).
#include <string>
#include <vector>

#include "check.h"
#include "core/compare_requests.h"
#include "core/validation.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

Request MakeReduce(DataType dtype, Shape shape, int root, ReduceOp op, double pre = 1.0, double post = 1.0) {
  Request request = Make(Collective::REDUCE, "reduce", dtype, std::move(shape));
  request.root = root;
  request.op = op;
  request.prescale = pre;
  request.postscale = post;
  return request;
}

template <typename T>
void CheckReduce(int n, int root, int64_t count, DataType dtype, ReduceOp op, double pre, double post) {
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    work[r].Submit(MakeReduce(dtype, {count}, root, op, pre, post), ReductionInput<T>(op, r, n, count, 0));
  }
  const std::vector<Outcome> outcomes = Run(work);
  const std::string what = std::string("reduce ") + DataTypeName(dtype) + " " + ReduceOpName(op) + " root " +
                           std::to_string(root) + " count " + std::to_string(count);
  for (int r = 0; r < n; ++r) {
    CHECK(outcomes[r].statuses.at("reduce").ok(), << outcomes[r].statuses.at("reduce").message);
    CHECK(outcomes[r].shapes.at("reduce") == (Shape{count}), << what);
    if (r == root) {
      CheckReduced(outcomes[r].Values<T>("reduce"), op, n, 0, pre, post, what);
    } else {
      CHECK(outcomes[r].Values<T>("reduce") == std::vector<T>(count, T(0)), << what << ": rank " << r << " not zeros");
    }
  }
}

}  // namespace

TEST(Reduce, EveryRootDtypeAndOp) {
  for (int n = 1; n <= 8; ++n) {
    for (int root = 0; root < n; ++root) {
      for (int64_t count : {int64_t{0}, int64_t{n - 1}, int64_t{2 * n + 5}, int64_t{1000}}) {
        CheckReduce<int32_t>(n, root, count, DataType::INT32, ReduceOp::SUM, 3.0, 0.5);
        CheckReduce<int64_t>(n, root, count, DataType::INT64, ReduceOp::AVERAGE, 3.0, 0.5);
        CheckReduce<double>(n, root, count, DataType::FLOAT64, ReduceOp::AVERAGE, 3.0, 0.5);
        CheckReduce<float>(n, root, count, DataType::FLOAT32, ReduceOp::MAX, 1.0, 1.0);
        CheckReduce<int64_t>(n, root, count, DataType::INT64, ReduceOp::MIN, 1.0, 1.0);
        CheckReduce<double>(n, root, count, DataType::FLOAT64, ReduceOp::PRODUCT, 1.0, 1.0);
      }
    }
  }
}

// Rank n-1 joined: the root gets the sum over the others, sign * k * (n-1)n/2.
TEST(Reduce, JoinedRankTakesPartWithZeros) {
  for (int n = 2; n <= 5; ++n) {
    std::vector<RankWork> work(n);
    work[n - 1].joined = true;
    for (int r = 0; r < n - 1; ++r) {
      work[r].Submit(MakeReduce(DataType::INT64, {11}, 0, ReduceOp::SUM), ReductionInput<int64_t>(ReduceOp::SUM, r, n, 11, 0));
    }
    const std::vector<Outcome> outcomes = Run(work);
    const std::vector<int64_t> got = outcomes[0].Values<int64_t>("reduce");
    for (int64_t i = 0; i < 11; ++i) {
      CHECK(got[i] == Sign(i) * K(i) * (n - 1) * n / 2, << "n=" << n << " element " << i << ": " << got[i]);
    }
  }
}

TEST(Reduce, RootOutsideTheSetIsRefusedOnEveryRank) {
  const std::map<int32_t, std::vector<int>> sets = {{0, {0, 1, 2}}};
  for (int rank = 0; rank < 3; ++rank) {
    for (int root : {-1, 3}) {
      const Status status = ValidateRequest(MakeReduce(DataType::FLOAT32, {4}, root, ReduceOp::SUM), rank, 3, sets);
      CHECK(status.code == StatusCode::INVALID_ARGUMENT, << status.message);
      CHECK(status.message == "rank " + std::to_string(rank) + ": root rank " + std::to_string(root) +
                                  " is outside 0..2 (tensor 'reduce')",
            << status.message);
    }
  }
  const Status bool_sum = ValidateRequest(MakeReduce(DataType::BOOL, {4}, 0, ReduceOp::SUM), 1, 3, sets);
  CHECK(bool_sum.code == StatusCode::UNSUPPORTED, << bool_sum.message);
}

TEST(Reduce, RanksMustAgreeOnRootAndOp) {
  std::vector<Request> requests(3);
  for (int r = 0; r < 3; ++r) {
    requests[r] = MakeReduce(DataType::FLOAT32, {4}, r == 2 ? 1 : 0, ReduceOp::SUM);
    requests[r].rank = r;
  }
  bool group_sizes_differ = false;
  Response response = CompareRequests("reduce", {&requests[0], &requests[1], &requests[2]}, &group_sizes_differ);
  CHECK(response.kind == Response::Kind::ERROR && response.error_code == StatusCode::MISMATCH);
  CHECK(response.error == "mismatched root ranks for tensor 'reduce': 0 on ranks 0, 1; 1 on rank 2", << response.error);
  requests[2].root = 0;
  requests[2].op = ReduceOp::MAX;
  response = CompareRequests("reduce", {&requests[0], &requests[1], &requests[2]}, &group_sizes_differ);
  CHECK(response.error == "mismatched reduction ops for tensor 'reduce': Sum on ranks 0, 1; Max on rank 2",
        << response.error);
}
