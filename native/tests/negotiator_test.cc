// Negotiation in rounds with the response cache, on simulated jobs (simulated_job.h): repeats
// run from the cache without rank 0, and everything the full negotiation guarantees still holds
// (one order, mismatch errors on every rank, stalls naming the missing ranks, process sets,
// join, shutdown, eviction).
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "simulated_job.h"

using namespace mpirep;
using mpirep_test::SimulatedJob;

namespace {

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The names each rank ran, flattened, with "!" before errors.
std::vector<std::string> Flat(const SimulatedJob& job, int r, size_t from = 0) {
  std::vector<std::string> out;
  const auto& ran = job.ran(r);
  for (size_t i = from; i < ran.size(); ++i) {
    for (const std::string& name : ran[i].names) {
      out.push_back((ran[i].kind == Response::Kind::ERROR ? "!" : "") + name);
    }
  }
  return out;
}

// How much each rank has run so far.
std::vector<size_t> Marks(const SimulatedJob& job) {
  std::vector<size_t> marks;
  for (int r = 0; r < job.size(); ++r) marks.push_back(job.ran(r).size());
  return marks;
}

// Whether every rank ran the same since `marks` (from the start without).
bool SameOnEveryRank(const SimulatedJob& job, const std::vector<size_t>& marks = {}) {
  for (int r = 1; r < job.size(); ++r) {
    if (Flat(job, r, marks.empty() ? 0 : marks[r]) != Flat(job, 0, marks.empty() ? 0 : marks[0])) return false;
  }
  return true;
}

bool NothingOutstanding(SimulatedJob& job) {
  for (int r = 0; r < job.size(); ++r) {
    if (!job.outstanding(r).empty()) return false;
  }
  return true;
}

// Every rank submits `names` (rotated by rank, so the orders differ) and the job settles.
void Step(SimulatedJob& job, const std::vector<std::string>& names) {
  for (int r = 0; r < job.size(); ++r) {
    for (size_t i = 0; i < names.size(); ++i) job.Submit(r, SimulatedJob::Make(r, names[(i + r) % names.size()]));
  }
  job.Settle();
}

Config WithCache(int64_t capacity) {
  Config config;
  config.cache_capacity = capacity;
  return config;
}

TEST(Negotiator, RepeatsRunFromTheCache) {
  SimulatedJob job(3, WithCache(16));
  Step(job, {"a", "b", "c"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  CHECK(job.rank(1).cache().size() == 3);
  const int64_t slow = job.rank(0).counts().slow_rounds;
  const size_t before = job.ran(0).size();
  Step(job, {"a", "b", "c"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  CHECK(job.rank(0).counts().slow_rounds == slow, << "a repeat went through rank 0");
  for (int r = 0; r < 3; ++r) {
    CHECK(job.rank(r).counts().cached_tensors == 3);
    // one fused batch, in cache position order
    CHECK(job.ran(r).size() == before + 1 && job.ran(r).back().cached);
    CHECK(job.ran(r).back().names.size() == 3);
  }
}

// With a long cycle time rank 0 holds cached tensors back while some rank has not submitted them
// all, and lets them run together, in one round, as soon as every rank has.
TEST(Negotiator, HeldHitsRunOnceEveryRankHasThem) {
  Config config = WithCache(16);
  config.cycle_time_ms = 60000;
  SimulatedJob job(3, config);
  Step(job, {"a", "b", "c"});
  Step(job, {"a", "b", "c"});
  const size_t before = job.ran(0).size();
  for (int r = 0; r < 2; ++r) {
    for (const char* name : {"a", "b", "c"}) job.Submit(r, SimulatedJob::Make(r, name));
  }
  job.Round();
  job.Submit(2, SimulatedJob::Make(2, "a"));
  for (int i = 0; i < 3; ++i) job.Round();
  CHECK(job.ran(0).size() == before, << "a hit ran while rank 2 had not submitted b and c");
  for (const char* name : {"b", "c"}) job.Submit(2, SimulatedJob::Make(2, name));
  for (int i = 0; i < 3; ++i) job.Round();  // the clock stands still: no cycle ends, no demotion
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  for (int r = 0; r < 3; ++r) {
    CHECK(job.ran(r).size() == before + 1 && job.ran(r).back().cached && job.ran(r).back().names.size() == 3);
  }
}

TEST(Negotiator, ChangedRequestIsAMismatchOnEveryRank) {
  SimulatedJob job(3, WithCache(16));
  Step(job, {"a", "b"});
  Step(job, {"a", "b"});
  const size_t before = job.ran(0).size();
  for (int r = 0; r < 3; ++r) job.Submit(r, SimulatedJob::Make(r, "a", r == 1 ? Shape{5} : Shape{4}));
  job.Settle();
  CHECK(NothingOutstanding(job));
  for (int r = 0; r < 3; ++r) {
    CHECK(job.ran(r).size() == before + 1 && job.ran(r).back().kind == Response::Kind::ERROR);
    CHECK(job.ran(r).back().error == "mismatched shapes for tensor 'a': [4] on ranks 0, 2; [5] on rank 1",
          << job.ran(r).back().error);
  }
  // the other ranks' hits on 'a' were turned into requests: nothing ran from the cache
  CHECK(job.rank(0).cache().Find("a") < 0);
  Step(job, {"a", "b"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  CHECK(job.ran(2).back().kind == Response::Kind::EXECUTE);

  // a different reduction op, and a different collective
  Step(job, {"a"});
  for (int r = 0; r < 3; ++r) {
    Request request = SimulatedJob::Make(r, "a");
    if (r == 2) request.op = ReduceOp::MAX;
    job.Submit(r, request);
  }
  job.Settle();
  CHECK(Contains(job.ran(0).back().error, "mismatched reduction ops for tensor 'a'"), << job.ran(0).back().error);
  CHECK(SameOnEveryRank(job));
  Step(job, {"a"});
  for (int r = 0; r < 3; ++r) {
    Request request = SimulatedJob::Make(r, "a");
    if (r == 0) request.collective = Collective::ALLGATHER;
    job.Submit(r, request);
  }
  job.Settle();
  CHECK(Contains(job.ran(1).back().error, "mismatched collective operations for tensor 'a': allgather on rank 0"),
        << job.ran(1).back().error);
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
}

TEST(Negotiator, StalledCachedTensorIsReportedAndCancelled) {
  Config config = WithCache(16);
  config.stall_check_time_seconds = 2;
  config.stall_shutdown_time_seconds = 4;
  SimulatedJob job(3, config);
  Step(job, {"a"});
  job.Submit(0, SimulatedJob::Make(0, "a"));
  job.Submit(2, SimulatedJob::Make(2, "a"));
  const auto start = job.now;
  for (int quarter = 0; quarter <= 20; ++quarter) {
    job.now = start + std::chrono::milliseconds(250 * quarter);
    job.Round();
  }
  // demoted after 1 s; warned at 2 s and cancelled at 4 s, counted from the first submission
  bool warned = false, cancelled = false;
  for (const std::string& line : job.reports()) {
    warned |= Contains(line, "WARNING: stalled collective: tensor 'a' (allreduce) waiting 2 s: submitted by ranks 0, 2; missing rank 1");
    cancelled |= Contains(line, "ERROR: collectives waited longer than the stall shutdown time (4 s)");
  }
  CHECK(warned && cancelled);
  CHECK(job.outstanding(0).empty() && job.outstanding(2).empty());
  CHECK(job.ran(0).back().kind == Response::Kind::ERROR);
  const std::string error = job.ran(0).back().error;
  CHECK(Contains(error, "tensor 'a' (allreduce) waiting 4 s: submitted by ranks 0, 2; missing rank 1"), << error);
  CHECK(job.ran(2).back().error == error);
  // rank 1 was late: its 'a' gets the same error at once, alone; the next 'a' pairs up again
  job.Submit(1, SimulatedJob::Make(1, "a"));
  job.Settle();
  CHECK(job.ran(1).back().error == error && job.outstanding(1).empty());
  const std::vector<size_t> marks = Marks(job);
  Step(job, {"a"});
  Step(job, {"a"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job, marks));
  CHECK(job.ran(1).back().cached && job.ran(0).back().cached);
}

TEST(Negotiator, ProcessSetsRunFromTheCacheWithoutOtherRanks) {
  SimulatedJob job(3, WithCache(16));
  for (int r = 0; r < 3; ++r) {
    Request add = SimulatedJob::Make(r, "add", {});
    add.collective = Collective::ADD_PROCESS_SET;
    add.new_set_ranks = {0, 2};
    job.Submit(r, add);
  }
  job.Settle();
  auto in_set = [](int r, const std::string& name) {
    Request request = SimulatedJob::Make(r, name);
    request.process_set = 1;
    return request;
  };
  for (int step = 0; step < 2; ++step) {
    job.Submit(0, in_set(0, "s"));
    job.Submit(2, in_set(2, "s"));
    job.Settle();
  }
  CHECK(NothingOutstanding(job));
  CHECK(job.ran(0).back().names[0] == "s" && job.ran(0).back().cached && job.ran(2).back().cached);
  CHECK(job.ran(1).back().names[0] == "add", << "rank 1 ran the set's tensor");
  // rank 1 is busy with a tensor of every rank meanwhile: both complete
  job.Submit(0, in_set(0, "s"));
  job.Submit(1, SimulatedJob::Make(1, "g"));
  job.Submit(2, in_set(2, "s"));
  job.Round();
  CHECK(job.outstanding(1).count("g") && job.outstanding(0).empty() && job.outstanding(2).empty());
  job.Submit(0, SimulatedJob::Make(0, "g"));
  job.Submit(2, SimulatedJob::Make(2, "g"));
  job.Settle();
  CHECK(NothingOutstanding(job));
  // removing the set fails a hit still waiting in it, with the full negotiation's message
  job.Submit(0, in_set(0, "s"));
  for (int r = 0; r < 3; ++r) {
    Request remove = SimulatedJob::Make(r, "remove", {});
    remove.collective = Collective::REMOVE_PROCESS_SET;
    remove.removed_set = 1;
    job.Submit(r, remove);
  }
  job.Settle();
  CHECK(NothingOutstanding(job));
  CHECK(job.ran(0).back().error == "tensor 's': its process set 1 was removed", << job.ran(0).back().error);
  CHECK(job.rank(2).cache().Find("s") < 0);
}

TEST(Negotiator, JoinDuringCachedSteadyState) {
  SimulatedJob job(3, WithCache(16));
  Step(job, {"a"});
  Step(job, {"a"});
  Request join = SimulatedJob::Make(2, "join", {});
  join.collective = Collective::JOIN;
  job.Submit(2, join);
  job.Submit(0, SimulatedJob::Make(0, "a"));
  job.Submit(1, SimulatedJob::Make(1, "a"));
  job.Settle();
  // 'a' ran through rank 0, rank 2 standing in
  for (int r = 0; r < 3; ++r) CHECK(job.ran(r).back().names[0] == "a" && !job.ran(r).back().cached);
  CHECK(job.outstanding(2).count("join"));
  for (int r = 0; r < 2; ++r) {
    join.rank = r;
    job.Submit(r, join);
  }
  job.Settle();
  CHECK(NothingOutstanding(job) && job.ran(1).back().names[0] == "join");
  Step(job, {"a"});  // not cached while rank 2 stood in: negotiated again
  Step(job, {"a"});
  for (int r = 0; r < 3; ++r) CHECK(job.ran(r).back().cached);
}

TEST(Negotiator, EvictionAtTinyCapacity) {
  SimulatedJob job(4, WithCache(2));
  for (int step = 0; step < 4; ++step) Step(job, {"a", "b", "c"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  CHECK(job.rank(3).cache().size() == 2);
  CHECK(job.rank(0).counts().cached_tensors > 0);
}

TEST(Negotiator, ShutdownWhileHitsWait) {
  SimulatedJob job(3, WithCache(16));
  Step(job, {"a"});
  job.Submit(0, SimulatedJob::Make(0, "a"));
  job.Submit(2, SimulatedJob::Make(2, "a"));
  job.rank(1).ShutDown("ValueError: bad batch");
  job.Settle();
  CHECK(NothingOutstanding(job));
  CHECK(job.ran(0).back().error == "tensor 'a' cannot run: rank 1 failed: ValueError: bad batch", << job.ran(0).back().error);
  CHECK(job.ran(2).back().error == job.ran(0).back().error);
  job.rank(0).ShutDown("");
  job.rank(2).ShutDown("");
  job.Settle();
  for (int r = 0; r < 3; ++r) CHECK(job.ran(r).back().kind == Response::Kind::STOP);
}

TEST(Negotiator, CacheOff) {
  SimulatedJob job(2, WithCache(0));
  for (int step = 0; step < 3; ++step) Step(job, {"a", "b"});
  CHECK(NothingOutstanding(job) && SameOnEveryRank(job));
  CHECK(job.rank(0).counts().cached_tensors == 0);
}

// Random submission orders and timing, changed requests now and then, small caches: every
// tensor runs or fails once per step, in one order everywhere.
TEST(Negotiator, Randomized) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937 random(seed);
    const int size = 1 + static_cast<int>(random() % 4);
    SimulatedJob job(size, WithCache(static_cast<int64_t>(random() % 6)));
    const int tensors = 1 + static_cast<int>(random() % 6);
    for (int step = 0; step < 12; ++step) {
      const std::vector<size_t> marks = Marks(job);
      std::vector<std::vector<Request>> queues(size);
      const int odd = static_cast<int>(random() % 8);  // this tensor differs on the last rank
      for (int r = 0; r < size; ++r) {
        for (int t = 0; t < tensors; ++t) {
          queues[r].push_back(SimulatedJob::Make(r, "t" + std::to_string(t), {t + 1 + (t == odd && r == size - 1)}));
        }
        std::shuffle(queues[r].begin(), queues[r].end(), random);
      }
      bool left = true;
      while (left) {
        left = false;
        for (int r = 0; r < size; ++r) {
          if (!queues[r].empty() && random() % 2) {
            job.Submit(r, queues[r].back());
            queues[r].pop_back();
          }
          left |= !queues[r].empty();
        }
        if (random() % 3 == 0) job.Round();
      }
      job.Settle(50);
      CHECK(NothingOutstanding(job), << "seed " << seed << " step " << step);
      CHECK(SameOnEveryRank(job, marks), << "seed " << seed << " step " << step);
      CHECK(static_cast<int>(Flat(job, 0, marks[0]).size()) == tensors, << "seed " << seed);
    }
  }
}

}  // namespace
