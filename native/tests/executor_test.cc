// The Executor (executor.h) on 2..8 ranks as threads, across collectives: a joined rank's
// stand-ins, an output that cannot be allocated, and the phases each collective records. Each
// collective's own tests are in collective_<name>_test.cc (executor_harness.h runs them all).
#include <string>
#include <vector>

#include "check.h"
#include "executor_harness.h"

using namespace mpirep;
using namespace mpirep_test::executor_harness;

namespace {

// Ranks that joined take part with zeros (no rows for allgather) and discard the result;
// Average still divides by all n ranks.
void CheckJoinedRanksStandIn(int n, int64_t small_allreduce_bytes, bool shm = false) {
  std::set<int> joined = {1};
  if (n > 3) joined.insert(3);
  int64_t active_weight = 0;  // sum of r + 1 over the ranks that did not join
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    if (joined.count(r)) {
      work[r].joined = true;
      continue;
    }
    active_weight += r + 1;
    Request sum = Make(Collective::ALLREDUCE, "sum", DataType::INT64, {11});
    work[r].Submit(sum, ReductionInput<int64_t>(ReduceOp::SUM, r, n, 11, 0));
    Request average = Make(Collective::ALLREDUCE, "average", DataType::FLOAT64, {11});
    average.op = ReduceOp::AVERAGE;
    work[r].Submit(average, ReductionInput<double>(ReduceOp::SUM, r, n, 11, 0));
    work[r].Submit(Make(Collective::ALLGATHER, "gather", DataType::INT32, {r + 1, 2}),
                   std::vector<int32_t>(2 * (r + 1), r));
    Request bcast = Make(Collective::BROADCAST, "bcast", DataType::INT32, {9});
    work[r].Submit(bcast, Pattern<int32_t>(r, 9));
    Request scatter = Make(Collective::REDUCESCATTER, "scatter", DataType::INT64, {2 * n + 1});
    work[r].Submit(scatter, ReductionInput<int64_t>(ReduceOp::SUM, r, n, 2 * n + 1, 0));
  }
  const std::vector<Outcome> outcomes = Run(work, small_allreduce_bytes, 1 << 20, shm);
  std::vector<int32_t> gathered;
  for (int r = 0; r < n; ++r) {
    if (!joined.count(r)) gathered.insert(gathered.end(), 2 * (r + 1), r);
  }
  const std::vector<int64_t> blocks = EvenSegments(2 * n + 1, n);
  int64_t first = 0;
  for (int r = 0; r < n; ++r) {
    const Outcome& out = outcomes[r];
    if (joined.count(r)) {
      CHECK(out.outputs.empty(), << "a joined rank got results");
      first += blocks[r];
      continue;
    }
    const std::vector<int64_t> sums = out.Values<int64_t>("sum");
    const std::vector<double> averages = out.Values<double>("average");
    for (int64_t i = 0; i < 11; ++i) {
      CHECK(sums[i] == Sign(i) * K(i) * active_weight, << "join sum n=" << n << " i=" << i);
      CHECK(averages[i] == static_cast<double>(Sign(i) * K(i) * active_weight) * (1.0 / n),
            << "join average n=" << n << " i=" << i << " got " << averages[i]);
    }
    CHECK(out.Values<int32_t>("gather") == gathered, << "join allgather n=" << n);
    CHECK(out.Values<int32_t>("bcast") == Pattern<int32_t>(0, 9), << "join broadcast n=" << n);
    const std::vector<int64_t> block = out.Values<int64_t>("scatter");
    CHECK(static_cast<int64_t>(block.size()) == blocks[r]);
    for (size_t i = 0; i < block.size(); ++i) {
      const int64_t idx = first + static_cast<int64_t>(i);
      CHECK(block[i] == Sign(idx) * K(idx) * active_weight, << "join reducescatter n=" << n << " rank " << r);
    }
    first += blocks[r];
  }
}

// A rank whose output cannot be allocated still takes part (the others depend on it) and then
// fails that operation alone.
// A rank that cannot allocate one output of a fused batch still takes its part (the batch
// goes through the fusion buffer there), and every other output is right, over the ring and
// over shared memory alike.
void CheckFailedAllocation(bool shm) {
  const int n = 3;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"x", "y"}) {
      work[r].Submit(Make(Collective::ALLREDUCE, name, DataType::INT32, {40}),
                     ReductionInput<int32_t>(ReduceOp::SUM, r, n, 40, 0));
    }
  }
  work[1].cannot_allocate.insert("x");
  const std::vector<Outcome> outcomes = Run(work, 0, 1 << 20, shm);
  CHECK(outcomes[1].statuses.at("x").code == StatusCode::INTERNAL &&
            outcomes[1].statuses.at("x").message == "rank 1: could not allocate the output of 'x'",
        << outcomes[1].statuses.at("x").message);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"x", "y"}) {
      if (r == 1 && name[0] == 'x') continue;
      CHECK(outcomes[r].statuses.at(name).ok());
      CheckReduced(outcomes[r].Values<int32_t>(name), ReduceOp::SUM, n, 0, 1.0, 1.0,
                   std::string("after a failed allocation, ") + name + (shm ? " shm" : ""));
    }
  }
}

// The phases each collective records for the timeline: packing only where it copies into a
// buffer of its own, the transfer named for its algorithm, unpacking where it copies out.
void CheckPhases(int n) {
  using Phases = std::vector<std::string>;
  std::vector<RankWork> work(n);
  for (int r = 0; r < n; ++r) {
    for (const char* name : {"fused.0", "fused.1"}) {
      work[r].Submit(Make(Collective::ALLREDUCE, name, DataType::INT32, {5}), ReductionInput<int32_t>(ReduceOp::SUM, r, n, 5, 0));
    }
    work[r].Submit(Make(Collective::ALLREDUCE, "solo", DataType::INT64, {kSoloBytes / 8}),
                   ReductionInput<int64_t>(ReduceOp::SUM, r, n, kSoloBytes / 8, 0));
    Request scaled = Make(Collective::ALLREDUCE, "scaled", DataType::FLOAT64, {3});
    scaled.prescale = 2.0;
    work[r].Submit(scaled, ReductionInput<double>(ReduceOp::SUM, r, n, 3, 0));
    work[r].Submit(Make(Collective::ALLGATHER, "gather", DataType::INT32, {1}), std::vector<int32_t>{r});
    work[r].Submit(Make(Collective::BROADCAST, "bcast", DataType::INT32, {2}), std::vector<int32_t>{r, r});
    work[r].Submit(Make(Collective::REDUCESCATTER, "scatter", DataType::INT32, {n}), std::vector<int32_t>(n, r));
    Request exchange = Make(Collective::ALLTOALL, "exchange", DataType::INT32, {n});
    exchange.splits.assign(n, 1);
    work[r].Submit(exchange, std::vector<int32_t>(n, r));
    work[r].Submit(Make(Collective::BARRIER, "barrier", DataType::UINT8, {0}), std::vector<uint8_t>{});
    work[r].Submit(Make(Collective::REDUCE, "reduce", DataType::INT32, {n}), std::vector<int32_t>(n, r));
  }
  const std::vector<Outcome> outcomes = Run(work);
  for (int r = 0; r < n; ++r) {
    const auto& phases = outcomes[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"RING_ALLREDUCE", "UNPACK"}) && phases.at("fused.1") == phases.at("fused.0"),
          << "the ring reads a fused allreduce's inputs in place: no packing beforehand");
    CHECK(phases.at("solo") == (Phases{"RING_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "RING_ALLREDUCE"}), << "a lone prescaled allreduce scales into its output");
    CHECK(phases.at("gather") == (Phases{"PACK", "RING_ALLGATHER"}));
    CHECK(phases.at("bcast") == (Phases{"CHAIN_BROADCAST"}));
    CHECK(phases.at("scatter") == (Phases{"RING_REDUCESCATTER", "UNPACK"}));
    CHECK(phases.at("exchange") == (Phases{"PACK", "PAIRWISE_ALLTOALL"}));
    CHECK(phases.at("barrier").empty());
    CHECK(phases.at("reduce") == (Phases{"RING_REDUCESCATTER", "GATHER_TO_ROOT"}), << "the root reduces into its output");
  }
  const std::vector<Outcome> shared = Run(work, 0, 1 << 20, /*shm=*/true);
  for (int r = 0; r < n; ++r) {
    const auto& phases = shared[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"SHM_ALLREDUCE"}),
          << "inputs are copied in where they lie and results straight into the outputs");
    CHECK(phases.at("solo") == (Phases{"SHM_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "SHM_ALLREDUCE"}));
    CHECK(phases.at("gather") == (Phases{"PACK", "RING_ALLGATHER"}), << "other collectives keep the transport");
  }
  if (n < 3) return;  // the ring at one or two ranks, whatever the size
  const std::vector<Outcome> doubled = Run(work, /*small_allreduce_bytes=*/64);  // not "solo"
  for (int r = 0; r < n; ++r) {
    const auto& phases = doubled[r].phases;
    CHECK(phases.at("fused.0") == (Phases{"PACK", "DOUBLING_ALLREDUCE", "UNPACK"}));
    CHECK(phases.at("solo") == (Phases{"RING_ALLREDUCE"}));
    CHECK(phases.at("scaled") == (Phases{"PACK", "DOUBLING_ALLREDUCE"}));
  }
}

}  // namespace

TEST(Executor, JoinedRanksStandIn) {
  for (int n = 2; n <= 8; ++n) {
    CheckJoinedRanksStandIn(n, 0);
    CheckJoinedRanksStandIn(n, 1 << 20);
    CheckJoinedRanksStandIn(n, 0, /*shm=*/true);
  }
}

TEST(Executor, Phases) {
  for (int n : {1, 2, 3}) CheckPhases(n);
}

TEST(Executor, FailedAllocation) {
  CheckFailedAllocation(/*shm=*/false);
  CheckFailedAllocation(/*shm=*/true);
}
