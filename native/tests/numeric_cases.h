// The allreduce cases that the executor and hierarchical tests both sweep: every reduction op,
// without and with scale factors, over the four numeric element types.
#pragma once

#include <cstdint>
#include <utility>

#include "core/common.h"

namespace mpirep_test {

// Calls check(T{}, dtype, op, prescale, postscale) per case; the first argument only carries
// the element type T.
template <typename Check>
void ForEachNumericCase(Check check) {
  using mpirep::DataType;
  using mpirep::ReduceOp;
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVERAGE, ReduceOp::MIN, ReduceOp::MAX, ReduceOp::PRODUCT}) {
    for (auto [pre, post] : {std::pair{1.0, 1.0}, std::pair{3.0, 0.5}}) {
      check(int32_t{}, DataType::INT32, op, pre, post);
      check(int64_t{}, DataType::INT64, op, pre, post);
      check(float{}, DataType::FLOAT32, op, pre, post);
      check(double{}, DataType::FLOAT64, op, pre, post);
    }
  }
}

}  // namespace mpirep_test
