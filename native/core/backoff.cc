#include "backoff.h"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace mpirep {

int64_t Backoff::NextWaitMicros() {
  const Clock::time_point now = Clock::now();
  if (!spinning_since_.set) {
    spinning_since_.set = true;
    spinning_since_.at = now;
  }
  if (now - spinning_since_.at < spin_) {
    if (now - spinning_since_.at >= kBusyPoll) std::this_thread::yield();
    return 0;
  }
  const int64_t wait = sleep_us_;
  sleep_us_ = std::min(sleep_us_ * 2, max_sleep_us_);
  return wait;
}

void Backoff::Pause() {
  const int64_t wait = NextWaitMicros();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::microseconds(wait));
}

void UseFineTimerSlack() {
#if defined(__linux__)
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}

}  // namespace mpirep
