// How the thread running the rounds waits for something it can only poll for (an MPI request, a
// message from another rank) without holding a core that the framework computes on: poll
// without yielding for a few microseconds, then poll and yield the CPU for a short window, then
// sleep for intervals that double up to a cap. A message between ranks in step arrives within
// the first few microseconds, and a yield is a system call that costs about one (more where it
// switches threads), so the first polls do not yield. Sleeping is coarse (on virtual machines a
// sleep of 1 us often lasts 50-100 us), so waits expected to end soon spin-yield, and only long
// waits sleep.
#pragma once

#include <chrono>
#include <cstdint>

namespace mpirep {

class Backoff {
 public:
  Backoff(int64_t spin_micros, int64_t max_sleep_micros)
      : spin_(spin_micros), max_sleep_us_(max_sleep_micros) {}

  // Call after each unsuccessful poll: yields or sleeps.
  void Pause();
  // For callers that wait on something else (a condition variable) instead of sleeping: how
  // long to wait after this unsuccessful poll, in microseconds; 0 (after yielding) while still
  // in the spin window.
  int64_t NextWaitMicros();
  // Call after progress: the next wait starts a new spin window.
  void Reset() { spinning_since_.reset(); sleep_us_ = kFirstSleepMicros; }
  // The next wait starts sleeping at once, as if the spin window had passed.
  void SkipSpin() {
    spinning_since_.set = true;
    spinning_since_.at = Clock::now() - spin_;
  }

 private:
  static constexpr int64_t kFirstSleepMicros = 20;
  static constexpr std::chrono::microseconds kBusyPoll{5};
  using Clock = std::chrono::steady_clock;
  struct Start {
    bool set = false;
    Clock::time_point at;
    void reset() { set = false; }
  };
  std::chrono::microseconds spin_;
  int64_t max_sleep_us_;
  Start spinning_since_;
  int64_t sleep_us_ = kFirstSleepMicros;
};

// Lets the calling thread sleep for less than the default 50 us timer slack that Linux adds
// to every sleep.
void UseFineTimerSlack();

}  // namespace mpirep
