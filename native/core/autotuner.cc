#include "autotuner.h"

#include <algorithm>
#include <stdexcept>

namespace mpirep {
namespace {

// A pass varies each setting once; another follows while the last one found a better point.
constexpr int kMaxPasses = 3;

Config With(Config config, const std::string& name, const std::string& value) {
  const std::string error = SetSetting(&config, name, value);
  if (!error.empty()) throw std::invalid_argument("autotuning candidate: " + error);
  return config;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

std::vector<TunedParameter> DefaultTunedParameters(bool hierarchical_is_a_choice) {
  std::vector<TunedParameter> parameters = {
      {"fusion_threshold", {"1048576", "4194304", "16777216", "67108864"}},
      {"cycle_time_ms", {"0", "0.5", "2", "5"}},
      {"chunk_bytes", {"65536", "262144", "1048576", "4194304"}},
  };
  if (hierarchical_is_a_choice) parameters.push_back({"hierarchical_allreduce", {"0", "1"}});
  return parameters;
}

Autotuner::Autotuner(const Config& start, std::vector<TunedParameter> parameters)
    : parameters_(std::move(parameters)),
      warmup_samples_(start.autotune_warmup_samples),
      steps_per_sample_(start.autotune_steps_per_sample),
      samples_per_trial_(start.autotune_samples_per_trial),
      point_(start),
      best_point_(start) {
  for (const TunedParameter& parameter : parameters_) {
    for (const std::string& value : parameter.candidates) With(start, parameter.name, value);
  }
}

std::vector<std::pair<std::string, std::string>> Autotuner::Values(const Config& config) const {
  std::vector<std::pair<std::string, std::string>> values;
  for (const TunedParameter& parameter : parameters_) {
    values.emplace_back(parameter.name, GetSetting(config, parameter.name));
  }
  return values;
}

Retune Autotuner::Change() const { return Retune{Values(point_), finished_}; }

std::optional<Trial> Autotuner::Observe(const std::string& name, int64_t bytes, Clock::time_point at) {
  if (finished_) return std::nullopt;
  if (marker_.empty()) {
    marker_ = name;
    sample_start_ = at;
  }
  if (name == marker_ && marker_steps_++ == steps_per_sample_) CloseSample(at);
  sample_bytes_ += bytes;
  if (static_cast<int64_t>(samples_.size()) < warmup_samples_ + samples_per_trial_) return std::nullopt;

  tried_.push_back(Values(point_));
  Trial trial{static_cast<int64_t>(tried_.size()) - 1, tried_.back(),
              Median(std::vector<double>(samples_.begin() + warmup_samples_, samples_.end()))};
  if (trial.score > best_.score) {
    best_ = trial;
    best_point_ = point_;
  }
  Advance();
  samples_.clear();
  marker_.clear();
  marker_steps_ = 0;
  sample_bytes_ = 0;
  return trial;
}

void Autotuner::CloseSample(Clock::time_point at) {
  const double seconds = std::max(std::chrono::duration<double>(at - sample_start_).count(), 1e-9);
  samples_.push_back(static_cast<double>(sample_bytes_) / seconds);
  sample_start_ = at;
  sample_bytes_ = 0;
  marker_steps_ = 1;
}

void Autotuner::Advance() {
  while (true) {
    for (; parameter_ < parameters_.size(); ++parameter_, candidate_ = 0) {
      const TunedParameter& parameter = parameters_[parameter_];
      while (candidate_ < parameter.candidates.size()) {
        Config next = With(best_point_, parameter.name, parameter.candidates[candidate_++]);
        if (std::find(tried_.begin(), tried_.end(), Values(next)) == tried_.end()) {
          point_ = next;
          return;
        }
      }
    }
    if (best_.index == pass_start_best_ || ++passes_ == kMaxPasses) break;
    pass_start_best_ = best_.index;
    parameter_ = 0;
  }
  point_ = best_point_;
  finished_ = true;
}

}  // namespace mpirep
