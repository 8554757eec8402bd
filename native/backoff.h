// How the background thread waits for something it can only poll for (an MPI request, a
// message from another rank) without burning a core that the framework computes on: spin for a
// few microseconds, then sleep for intervals that double up to a cap.
#pragma once

#include <chrono>
#include <cstdint>

namespace mpirep {

class Backoff {
 public:
  explicit Backoff(int64_t max_sleep_us = 200) : max_sleep_us_(max_sleep_us) {}

  // Call after each unsuccessful poll: spins or sleeps.
  void Pause();
  // For callers that wait on something else (a condition variable) instead of sleeping: how
  // long to wait after this unsuccessful poll, in microseconds; 0 while still spinning.
  int64_t NextWaitMicros();
  void Reset() { polls_ = 0; sleep_us_ = 1; }

 private:
  static constexpr int kSpinPolls = 64;
  int64_t max_sleep_us_;
  int polls_ = 0;
  int64_t sleep_us_ = 1;
};

// Lets the calling thread sleep for as little as a microsecond: by default Linux rounds every
// sleep up by the 50 us timer slack, which would dominate the short waits above.
void UseFineTimerSlack();

}  // namespace mpirep
