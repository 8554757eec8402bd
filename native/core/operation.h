// One collective operation as the framework adapter submits it.
#pragma once

#include <chrono>
#include <functional>

#include "common.h"
#include "message.h"

namespace mpirep {

struct Operation {
  Request request;  // what all ranks must agree on; `rank` is filled in by the runtime
  const void* input = nullptr;
  std::chrono::steady_clock::time_point enqueued_at;  // set by the runtime
  // Called on the background thread once the output shape is known; returns memory for the
  // whole output, or nullptr if it cannot.
  std::function<void*(const Shape&)> allocate;
  // Called exactly once, on the background thread. `received_splits` is set for alltoall.
  std::function<void(const Status&, const std::vector<int64_t>& received_splits)> done;
};

}  // namespace mpirep
