// What the core hands back for one operation submitted from Python: filled in by the callbacks
// that python_module.cc gives the core, read by the Handle that waits on it (handle_type.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "c_api.h"
#include "core/common.h"

namespace mpirep {

struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<bool> done{false};  // set last, after the fields below
  int status = 0;
  std::string message;
  std::vector<int64_t> received_splits;
  int last_joined_rank = -1;
  int new_process_set = 0;
  size_t element_size = 1;
  Shape shape;
  void* output = nullptr;  // from the core's output pool; an output array's memory, returned with it
  size_t capacity = 0;
  // The core's reference, from the enqueue until `done`, so that a Handle dropped early cannot
  // free what the core still writes to.
  std::shared_ptr<Completion> self;

  bool Finished() const { return done.load(std::memory_order_acquire); }
  ~Completion() { mpirep_get_api()->put_output_buffer(output, capacity); }
};

}  // namespace mpirep
