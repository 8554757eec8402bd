// A record of when each tensor waited in negotiation and when its collective ran, written as
// Chrome trace events (open in chrome://tracing or https://ui.perfetto.dev): one row per tensor
// name. Written by the background thread only, on the rank that opened it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace mpirep {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // An empty path records nothing.
  explicit Timeline(const std::string& path);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  bool enabled() const { return file_ != nullptr; }
  // One finished phase of `tensor`'s life: "NEGOTIATE", or the collective's name.
  void Phase(const std::string& tensor, const char* phase, Clock::time_point begin,
             Clock::time_point end, const std::string& detail = "");

 private:
  int RowOf(const std::string& tensor);
  double Micros(Clock::time_point t) const;

  std::FILE* file_ = nullptr;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace mpirep
