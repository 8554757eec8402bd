// Recursive doubling at 1 to 8 ranks (powers of two and the ranks folded in around them):
// closed-form results for every op, in place and not, at sizes from empty up; the epilogue once
// per element; and the same bits on every rank even where operand order matters (a NaN under
// min and max).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "check.h"
#include "core/doubling.h"
#include "on_ranks.h"
#include "rank_scaled.h"

using namespace mpirep;
using mpirep_test::Expected;
using mpirep_test::OnRanks;
using mpirep_test::RankScaledInput;

namespace {

void CheckClosedForm(int n, int64_t count, ReduceOp op, bool in_place) {
  std::vector<std::vector<int64_t>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<int64_t> in(count), out(count, -1);
    for (int64_t i = 0; i < count; ++i) in[i] = RankScaledInput(t.rank(), i);
    DoublingAllreduce doubling(t);
    int64_t* target = in_place ? in.data() : out.data();
    for (int repeat = 0; repeat < 2; ++repeat) {  // the object is reused from one call to the next
      if (repeat == 1 && in_place) {
        for (int64_t i = 0; i < count; ++i) in[i] = RankScaledInput(t.rank(), i);
      }
      doubling.Allreduce(in.data(), target, count, DataType::INT64, op, [](void*, int64_t) {});
    }
    results[t.rank()].assign(target, target + count);
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      CHECK(results[r][i] == Expected(op, n, i), << "n=" << n << " count=" << count << " op=" << ReduceOpName(op)
                                                 << " rank " << r << " i=" << i << " got " << results[r][i]);
    }
  }
}

void CheckEpilogueOnce(int n) {
  std::vector<std::vector<double>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<double> buf(37);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(RankScaledInput(t.rank(), i));
    DoublingAllreduce doubling(t);
    doubling.Allreduce(buf.data(), buf.data(), 37, DataType::FLOAT64, ReduceOp::SUM, [](void* data, int64_t c) {
      for (int64_t i = 0; i < c; ++i) static_cast<double*>(data)[i] *= 0.25;
    });
    results[t.rank()] = buf;
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < 37; ++i) {
      CHECK(results[r][i] == 0.25 * Expected(ReduceOp::SUM, n, i), << "n=" << n << " rank " << r << " i=" << i);
    }
  }
}

// Rank r puts a NaN at element r; min and max then depend on operand order, and fractions make
// sums depend on association: every rank must still hold rank 0's bits.
void CheckSameBitsEverywhere(int n, ReduceOp op) {
  const int64_t count = 64;
  std::vector<std::vector<float>> results(n);
  OnRanks(n, [&](Transport& t) {
    std::vector<float> buf(count);
    for (int64_t i = 0; i < count; ++i) buf[i] = 1.0f / static_cast<float>(3 + t.rank() + i);
    buf[t.rank()] = std::numeric_limits<float>::quiet_NaN();
    DoublingAllreduce doubling(t);
    doubling.Allreduce(buf.data(), buf.data(), count, DataType::FLOAT32, op, [](void*, int64_t) {});
    results[t.rank()] = buf;
  });
  for (int r = 1; r < n; ++r) {
    CHECK(std::memcmp(results[r].data(), results[0].data(), count * sizeof(float)) == 0,
          << "n=" << n << " op=" << ReduceOpName(op) << ": rank " << r << " differs from rank 0");
  }
}

}  // namespace

TEST(Doubling, ClosedFormForEveryOpSizeAndRankCount) {
  for (int n = 1; n <= 8; ++n) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MIN, ReduceOp::MAX, ReduceOp::PRODUCT}) {
        CheckClosedForm(n, count, op, false);
      }
      CheckClosedForm(n, count, ReduceOp::SUM, true);
    }
  }
}

TEST(Doubling, EpilogueRunsOnce) {
  for (int n = 1; n <= 8; ++n) CheckEpilogueOnce(n);
}

TEST(Doubling, SameBitsOnEveryRank) {
  for (int n = 1; n <= 8; ++n) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MIN, ReduceOp::MAX}) CheckSameBitsEverywhere(n, op);
  }
}
