#include "backoff.h"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace mpirep {

int64_t Backoff::NextWaitMicros() {
  if (polls_ < kSpinPolls) {
    ++polls_;
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
