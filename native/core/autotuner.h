// Autotuning: rank 0 tries settings during the first steps of training, scores each trial by
// the bytes allreduced per second, and ends at the best. MPI-free; the runtime feeds it every
// allreduced tensor and sends its choices to every rank (negotiator.h, Propose).
//
// The search is a coordinate search over a coarse grid: the starting point is tried first, then
// each tuned setting in turn takes each of its candidate values while the others stay at the
// best point so far (a pass); points already tried are not tried again. While a pass finds a
// better point, another pass follows (three at most), since a setting varied early was measured
// beside the others' starting values, which may have been bad enough to hide its effect. The
// best point of all trials is the final choice. Throughput is nearly separable in these
// settings (the threshold decides how many buffers a step has, the chunk how each one
// pipelines, the cycle time how long ready tensors wait), so a pass or two find what a full grid
// would, in the sum rather than the product of the candidate counts. Every trial is
// deterministic given the scores.
//
// A sample spans `autotune_steps_per_sample` training steps: a step is counted each time the
// first tensor seen after the sample started (its marker) is allreduced again. Its score is the
// bytes allreduced between the first and the last occurrence of the marker divided by the time
// between them. After each change of settings, `autotune_warmup_samples` samples are discarded
// (the change itself takes effect a round later); a trial's score is the median of the next
// `autotune_samples_per_trial`, which is robust to a stray slow step.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "message.h"
#include "settings.h"

namespace mpirep {

// A setting of settings.def that autotuning varies, and the values it tries, as text.
struct TunedParameter {
  std::string name;
  std::vector<std::string> candidates;
};

// What autotuning varies: fusion_threshold, cycle_time_ms, chunk_bytes and, where it decides
// anything (the ranks span several hosts with several on each), hierarchical_allreduce off or on.
std::vector<TunedParameter> DefaultTunedParameters(bool hierarchical_is_a_choice);

struct Trial {
  int64_t index = 0;
  std::vector<std::pair<std::string, std::string>> settings;  // the point tried
  double score = 0;  // bytes allreduced per second, the median over the trial's samples
};

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;

  // `start`: the settings in force now, the first point tried; its autotune_* settings say how
  // samples and trials are taken.
  Autotuner(const Config& start, std::vector<TunedParameter> parameters);

  // A tensor of `bytes` that started to be allreduced `at`. Returns the trial that this ends,
  // if any; Change() then holds the settings to apply next.
  std::optional<Trial> Observe(const std::string& name, int64_t bytes, Clock::time_point at);

  // The settings of the point being tried, or of the final choice once finished().
  const Config& point() const { return point_; }
  Retune Change() const;
  bool finished() const { return finished_; }
  // The best trial so far; once finished(), the final choice.
  const Trial& best() const { return best_; }
  const std::vector<TunedParameter>& parameters() const { return parameters_; }

 private:
  std::vector<std::pair<std::string, std::string>> Values(const Config& config) const;
  void CloseSample(Clock::time_point at);
  // Moves on to the next point of the search, or to the final choice.
  void Advance();

  const std::vector<TunedParameter> parameters_;
  const int64_t warmup_samples_, steps_per_sample_, samples_per_trial_;
  Config point_;
  Config best_point_;
  Trial best_{-1, {}, -1};
  size_t parameter_ = 0;  // the setting being varied, and the next candidate of it to try
  size_t candidate_ = 0;
  int passes_ = 0;               // passes completed
  int64_t pass_start_best_ = 0;  // the best trial when the pass began (the start, at first)
  std::vector<std::vector<std::pair<std::string, std::string>>> tried_;  // each trial's point, in order
  bool finished_ = false;

  // The sample being taken.
  std::string marker_;
  int64_t marker_steps_ = 0;
  int64_t sample_bytes_ = 0;
  Clock::time_point sample_start_;
  std::vector<double> samples_;  // this trial's, the warm-up ones included
};

}  // namespace mpirep
