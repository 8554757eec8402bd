// Closed forms that the ring and doubling tests share: rank r's input x_r[i] = (r + 1) * (i % 7 + 1),
// and its reduction over ranks 0..n-1.
#pragma once

#include <cstdint>

#include "core/common.h"

namespace mpirep_test {

inline int64_t Factor(int64_t i) { return i % 7 + 1; }

inline int64_t Factorial(int n) { return n <= 1 ? 1 : n * Factorial(n - 1); }

inline int64_t Power(int64_t b, int e) { return e == 0 ? 1 : b * Power(b, e - 1); }

inline int64_t RankScaledInput(int rank, int64_t i) { return (rank + 1) * Factor(i); }

inline int64_t Expected(mpirep::ReduceOp op, int n, int64_t i) {
  using mpirep::ReduceOp;
  const int64_t f = Factor(i);
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVERAGE:
      return f * n * (n + 1) / 2;
    case ReduceOp::MIN:
      return f;
    case ReduceOp::MAX:
      return f * n;
    case ReduceOp::PRODUCT:
      return Power(f, n) * Factorial(n);
  }
  return 0;
}

}  // namespace mpirep_test
