// The phases one collective went through on this rank, as the executor ran it (packing, the
// transfer, unpacking), for the timeline. Each phase begins where the one before it ended.
#pragma once

#include <chrono>
#include <vector>

namespace mpirep {

class PhaseLog {
 public:
  using Clock = std::chrono::steady_clock;
  struct Phase {
    const char* name;  // a string literal
    Clock::time_point begin, end;
  };

  void Clear() { phases_.clear(); }
  // Ends the phase before it, if any.
  void Begin(const char* name) {
    const Clock::time_point now = Clock::now();
    if (!phases_.empty()) phases_.back().end = now;
    phases_.push_back({name, now, now});
  }
  // Ends the last phase.
  void End() {
    if (!phases_.empty()) phases_.back().end = Clock::now();
  }
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  std::vector<Phase> phases_;
};

}  // namespace mpirep
