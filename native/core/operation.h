// One collective operation as the framework adapter submits it.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "common.h"
#include "message.h"
#include "tensor_states.h"

namespace mpirep {

// What an operation hands back besides its output.
struct OperationResult {
  std::vector<int64_t> received_splits;  // alltoall: the rows received from each rank
  int32_t last_joined_rank = -1;         // join: the rank that joined last
  int32_t new_process_set = 0;           // add_process_set: the id of the new set
};

struct Operation {
  Request request;  // what all ranks must agree on; `rank` is filled in by the runtime
  const void* input = nullptr;
  std::chrono::steady_clock::time_point enqueued_at;  // set by the runtime
  TensorState state = TensorState::kSubmitted;  // changed only through Advance (tensor_states.h)
  // Called on the thread running the rounds once the output shape is known; returns memory for the
  // whole output, or nullptr if it cannot.
  std::function<void*(const Shape&)> allocate;
  // Called exactly once, on the thread running the rounds.
  std::function<void(const Status&, const OperationResult&)> done;
};

}  // namespace mpirep
