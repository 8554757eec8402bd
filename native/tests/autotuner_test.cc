// Autotuning: the coordinate search finds the optimum of synthetic throughput functions from
// good and bad starting points, warm-up samples and a stray slow step do not sway the scores,
// the trials are deterministic, the log has a row per trial; and a Retune proposed by rank 0
// reaches every rank of a simulated job in the same slow phase, after which they all fuse by
// the new threshold.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <unistd.h>
#include <sstream>
#include <string>
#include <vector>

#include "check.h"
#include "core/autotune_log.h"
#include "core/autotuner.h"
#include "simulated_job.h"

using namespace mpirep;
using mpirep_test::SimulatedJob;

namespace {

using Clock = Autotuner::Clock;
using Throughput = std::function<double(const Config&)>;  // bytes per second

constexpr int kTensors = 4;
constexpr int64_t kTensorBytes = 1 << 20;

double Peak(double x, double best) { return 1 / (1 + (x - best) * (x - best)); }

// Best at fusion 16 MiB, cycle 0.5 ms, chunk 256 KiB; separable, smooth in log2 of the sizes.
double Separable(const Config& c) {
  return 1e9 * Peak(std::log2(double(c.fusion_threshold)), 24) * Peak(c.cycle_time_ms, 0.5) *
         Peak(std::log2(double(c.chunk_bytes)), 18);
}

struct Run {
  std::vector<Trial> trials;
  Config final_point;
  int steps = 0;
};

// Training steps of kTensors tensors, each step taking its bytes over `throughput` of the
// settings in force; a change the tuner proposes is applied from the step after next plus
// `delay` (the runtime applies it a round later), and `slow_step` (if >= 0) takes ten times as
// long.
Run Simulate(Config start, const Throughput& throughput, int delay = 0, int slow_step = -1,
             int max_steps = 100000, bool hierarchical_is_a_choice = false) {
  Autotuner tuner(start, DefaultTunedParameters(hierarchical_is_a_choice));
  Run run;
  Config in_force = start;
  Clock::time_point now{};
  int apply_at = -1;
  for (; !tuner.finished() && run.steps < max_steps; ++run.steps) {
    if (run.steps == apply_at) in_force = tuner.point();
    double seconds = kTensors * kTensorBytes / throughput(in_force);
    if (run.steps == slow_step) seconds *= 10;
    for (int t = 0; t < kTensors; ++t) {
      const auto at = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds * t / kTensors));
      if (auto trial = tuner.Observe("grad" + std::to_string(t), kTensorBytes, at)) {
        run.trials.push_back(*trial);
        apply_at = run.steps + 1 + delay;
      }
    }
    now += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  run.final_point = tuner.point();
  return run;
}

std::string Value(const Trial& trial, const std::string& name) {
  for (const auto& [n, v] : trial.settings) {
    if (n == name) return v;
  }
  return "";
}

bool Near(double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); }

Config Start(int64_t fusion, double cycle, int64_t chunk) {
  Config config;
  config.fusion_threshold = fusion;
  config.cycle_time_ms = cycle;
  config.chunk_bytes = chunk;
  return config;
}

TEST(Autotuner, FindsTheOptimumFromTheDefaults) {
  const Config start;
  const Run run = Simulate(start, Separable);
  CHECK(run.final_point.fusion_threshold == 16 << 20 && run.final_point.cycle_time_ms == 0.5 &&
            run.final_point.chunk_bytes == 256 << 10,
        << run.final_point.fusion_threshold << " " << run.final_point.cycle_time_ms << " " << run.final_point.chunk_bytes);
  // Pass 1: the start, 4 thresholds (2 MiB is not a candidate), 3 other cycle times, 3 other
  // chunks. Pass 2, since pass 1 moved: 3 other thresholds and 3 other cycle times beside the
  // best chunk (the chunks beside the best of the others were all tried). Nothing better: done.
  CHECK(run.trials.size() == 17, << run.trials.size());
  CHECK(run.trials[11].settings == (std::vector<std::pair<std::string, std::string>>{
                                       {"fusion_threshold", "1048576"}, {"cycle_time_ms", "0.5"}, {"chunk_bytes", "262144"}}));
  CHECK(Value(run.trials[0], "fusion_threshold") == "2097152" && Value(run.trials[0], "cycle_time_ms") == "0" &&
        Value(run.trials[0], "chunk_bytes") == "1048576");
  // Each score is the throughput of its point, exactly, since every sample spans whole steps.
  for (const Trial& trial : run.trials) {
    Config point;
    for (const auto& [name, value] : trial.settings) SetSetting(&point, name, value);
    CHECK(Near(trial.score, Separable(point)), << trial.index << ": " << trial.score << " vs " << Separable(point));
  }
  // Trials take (warm-up + samples) x steps per sample steps each, a step more for the marker.
  const int per_trial = (start.autotune_warmup_samples + start.autotune_samples_per_trial) * start.autotune_steps_per_sample;
  CHECK(run.steps >= 17 * per_trial && run.steps <= 17 * (per_trial + 1), << run.steps);
}

TEST(Autotuner, FindsTheOptimumFromABadStart) {
  const Run run = Simulate(Start(64 << 10, 20, 4 << 10), Separable);
  CHECK(run.final_point.fusion_threshold == 16 << 20 && run.final_point.cycle_time_ms == 0.5 &&
        run.final_point.chunk_bytes == 256 << 10);
  // Pass 1: the start and 4 candidates of each; pass 2: 3 other thresholds and cycle times
  // beside the good chunk size.
  CHECK(run.trials.size() == 19, << run.trials.size());
  CHECK(run.trials[0].score < run.trials.back().score);
}

TEST(Autotuner, OptimumOnTheGridEdgeAndTies) {
  // Throughput that only grows with the threshold and ignores the rest: the largest threshold,
  // and the first-tried values of the others, since equal scores never move the best point.
  const Run run = Simulate(Start(1 << 20, 0, 1 << 20), [](const Config& c) { return double(c.fusion_threshold); });
  CHECK(run.final_point.fusion_threshold == 64 << 20 && run.final_point.cycle_time_ms == 0 &&
        run.final_point.chunk_bytes == 1 << 20);
  // 1 MiB is the start and is not tried again: 1 + 3 + 3 + 3; pass 2 has nothing untried.
  CHECK(run.trials.size() == 10, << run.trials.size());
}

// Where hierarchical allreduce is a choice, it is tuned too: here the flat ring is faster than
// the auto default (which is hierarchical on such a layout), and the search ends on it.
TEST(Autotuner, TunesHierarchicalWhereItIsAChoice) {
  const Throughput flat_faster = [](const Config& c) {
    return Separable(c) * (c.hierarchical_allreduce == 0 ? 1.0 : 0.6);
  };
  const Run run = Simulate(Config(), flat_faster, 0, -1, 100000, /*hierarchical_is_a_choice=*/true);
  CHECK(run.final_point.hierarchical_allreduce == 0 && run.final_point.fusion_threshold == 16 << 20 &&
        run.final_point.cycle_time_ms == 0.5 && run.final_point.chunk_bytes == 256 << 10,
        << run.final_point.hierarchical_allreduce);
  CHECK(run.trials[0].settings.size() == 4 && Value(run.trials[0], "hierarchical_allreduce") == "-1");
  // Not a choice: never varied, so it stays as given.
  for (const Trial& trial : Simulate(Config(), flat_faster).trials) CHECK(Value(trial, "hierarchical_allreduce").empty());
}

TEST(Autotuner, WarmupAndStraySlowStepDoNotCount) {
  const Config start;
  const Run prompt = Simulate(start, Separable, /*delay=*/0);
  // The change lands two steps later: those run at the old settings, within the warm-up.
  const Run late = Simulate(start, Separable, /*delay=*/2);
  CHECK(late.trials.size() == prompt.trials.size());
  for (size_t i = 0; i < late.trials.size() && i < prompt.trials.size(); ++i) {
    CHECK(Near(late.trials[i].score, prompt.trials[i].score), << i);
  }
  // One step ten times slower, inside a counted sample of the first trial: the median ignores it.
  const int first_counted = start.autotune_warmup_samples * start.autotune_steps_per_sample + 1;
  const Run slow = Simulate(start, Separable, 0, first_counted);
  CHECK(Near(slow.trials[0].score, prompt.trials[0].score), << slow.trials[0].score);
  CHECK(slow.final_point.fusion_threshold == prompt.final_point.fusion_threshold);
}

TEST(Autotuner, DeterministicAndFixedOnceFinished) {
  const Run a = Simulate(Config(), Separable);
  const Run b = Simulate(Config(), Separable);
  CHECK(a.trials.size() == b.trials.size());
  for (size_t i = 0; i < a.trials.size() && i < b.trials.size(); ++i) {
    CHECK(a.trials[i].settings == b.trials[i].settings && a.trials[i].score == b.trials[i].score);
  }
  Autotuner tuner(Config(), DefaultTunedParameters(false));
  Config point;
  Clock::time_point now{};
  while (!tuner.finished()) {
    now += std::chrono::milliseconds(1);
    tuner.Observe("only", 100, now);
  }
  point = tuner.point();
  const Retune change = tuner.Change();
  CHECK(change.final && change.settings.size() == 3 && change.settings[0].first == "fusion_threshold");
  for (int i = 0; i < 1000; ++i) CHECK(!tuner.Observe("only", 1 << 30, now + std::chrono::seconds(i)));
  CHECK(GetSetting(tuner.point(), "fusion_threshold") == GetSetting(point, "fusion_threshold") &&
        tuner.point().chunk_bytes == point.chunk_bytes);
}

TEST(Autotuner, BadCandidateIsRefused) {
  bool refused = false;
  try {
    Autotuner tuner(Config(), {{"chunk_bytes", {"65536", "8"}}});
  } catch (const std::invalid_argument& e) {
    refused = std::string(e.what()) == "autotuning candidate: mpirep setting chunk_bytes must be at least 64";
  }
  CHECK(refused);
}

TEST(Autotuner, LogHasARowPerTrial) {
  const std::string path = "/tmp/mpirep_autotune_test_" + std::to_string(::getpid()) + ".csv";
  const Run run = Simulate(Config(), Separable);
  {
    AutotuneLog log(path, DefaultTunedParameters(false));
    for (const Trial& trial : run.trials) log.Write(trial);
    log.WriteFinal(run.trials[5]);
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::remove(path.c_str());
  CHECK(lines.size() == run.trials.size() + 2, << lines.size());
  CHECK(lines[0] == "trial,fusion_threshold,cycle_time_ms,chunk_bytes,score_bytes_per_second");
  std::ostringstream first;
  first << "0,2097152,0,1048576," << static_cast<int64_t>(run.trials[0].score);
  CHECK(lines[1] == first.str(), << lines[1]);
  CHECK(lines.back().rfind("final," + Value(run.trials[5], "fusion_threshold") + ",", 0) == 0, << lines.back());

  bool refused = false;
  try {
    AutotuneLog log("/nonexistent-dir/log.csv", DefaultTunedParameters(false));
  } catch (const std::invalid_argument& e) {
    refused = std::string(e.what()) == "mpirep setting autotune_log: cannot write '/nonexistent-dir/log.csv'";
  }
  CHECK(refused);
}

// Cached steady state of three 64-byte tensors, fused in one batch; rank 0 proposes a 64-byte
// threshold: the next round is a slow phase on every rank that carries it, and from then on
// every rank runs the three tensors one by one.
TEST(Autotuner, RetuneReachesEveryRankInTheSameRound) {
  SimulatedJob job(3, Config());
  auto step = [&] {
    for (int r = 0; r < job.size(); ++r) {
      for (const char* name : {"a", "b", "c"}) job.Submit(r, SimulatedJob::Make(r, name, {16}));
    }
    job.Settle();
  };
  step();
  step();
  const auto batches_before = job.ran(0).size();
  step();
  CHECK(job.ran(0).size() == batches_before + 1 && job.ran(0).back().names.size() == 3 && job.ran(0).back().cached);

  Retune retune{{{"fusion_threshold", "64"}}, false};
  job.rank(0).Propose(retune);
  CHECK(job.rank(0).Busy());
  const int64_t slow = job.rank(0).counts().slow_rounds;
  CHECK(job.Round() && job.retunes() == 1, << "the proposal forces a slow phase");
  CHECK(job.rank(0).counts().slow_rounds == slow + 1 && job.rank(2).counts().slow_rounds == slow + 1);
  CHECK(job.config().fusion_threshold == 64);
  CHECK(!job.Round() && job.retunes() == 1, << "a proposal is sent once");

  std::vector<size_t> marks;
  for (int r = 0; r < job.size(); ++r) marks.push_back(job.ran(r).size());
  step();
  for (int r = 0; r < job.size(); ++r) {
    CHECK(job.ran(r).size() == marks[r] + 3, << "rank " << r);
    for (size_t i = marks[r]; i < job.ran(r).size(); ++i) {
      CHECK(job.ran(r)[i].names.size() == 1 && job.ran(r)[i].cached && job.ran(r)[i].names == job.ran(0)[marks[0] + i - marks[r]].names);
    }
  }
}

}  // namespace
