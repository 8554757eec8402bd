// Rank 0's negotiation (coordinator.h): readiness, order, mismatch messages, join, process sets,
// shutdown, stall reports and the stall shutdown's late ranks.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "check.h"
#include "core/coordinator.h"

using namespace mpirep;

namespace {

Request Make(int rank, const std::string& name, Shape shape, Collective c = Collective::ALLREDUCE) {
  Request r;
  r.rank = rank;
  r.name = name;
  r.shape = std::move(shape);
  r.collective = c;
  return r;
}

// After a cancellation: the next tensor of each name, submitted by all 3 ranks, runs normally.
void NextOfEachNamePairs(Coordinator& c, std::initializer_list<const char*> names, Coordinator::Clock::time_point t) {
  for (const char* name : names) {
    for (int rank = 0; rank < 3; ++rank) c.Submit(Make(rank, name, {1}), t);
    const std::vector<Response> ready = c.TakeReady();
    CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::EXECUTE && ready[0].names[0] == name);
  }
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Ready only when every rank submitted; in completion order, not submission order.
TEST(Coordinator, ReadyOnceEveryRankSubmittedInCompletionOrder) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "a", {2}), t0);
  c.Submit(Make(0, "b", {2}), t0);
  c.Submit(Make(1, "b", {2}), t0);
  c.Submit(Make(1, "a", {2}), t0);
  CHECK(c.TakeReady().empty());
  c.Submit(Make(2, "b", {2}), t0);
  c.Submit(Make(2, "a", {2}), t0);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 2);
  CHECK(ready[0].names[0] == "b" && ready[1].names[0] == "a");
  CHECK(ready[0].kind == Response::Kind::EXECUTE && ready[0].bytes == 8);
  CHECK(!c.HasPending());
}

// A shape mismatch names the tensor and every rank's value, grouped.
TEST(Coordinator, ShapeMismatchNamesEveryRanksValue) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "w", {2, 3}), t0);
  c.Submit(Make(1, "w", {3}), t0);
  c.Submit(Make(2, "w", {2, 3}), t0);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::ERROR);
  CHECK(ready[0].error_code == StatusCode::MISMATCH);
  CHECK(ready[0].error == "mismatched shapes for tensor 'w': [2, 3] on ranks 0, 2; [3] on rank 1",
        << ready[0].error);
}

// Ranks disagree about a group's size (2 members on rank 0, 3 on rank 1): every member fails
// on every rank that submits it, the one only rank 1 has included, in either arrival order,
// and the group's name is free again afterwards.
TEST(Coordinator, GroupSizesThatDifferFailEveryMember) {
  const auto t0 = Coordinator::Clock::now();
  auto member = [](int rank, int index, int size) {
    Request r = Make(rank, "g." + std::to_string(index), {2});
    r.group = "g.0";
    r.group_size = size;
    return r;
  };
  for (bool longer_first : {false, true}) {
    ProcessSets sets(2);
    Coordinator c(2, sets);
    std::vector<Request> arrivals;
    std::vector<Request> shorter = {member(0, 0, 2), member(0, 1, 2)};
    std::vector<Request> longer = {member(1, 0, 3), member(1, 1, 3), member(1, 2, 3)};
    for (const auto& list : longer_first ? std::vector{longer, shorter} : std::vector{shorter, longer}) {
      for (const Request& r : list) c.Submit(r, t0);
    }
    std::vector<Response> ready = c.TakeReady();
    std::vector<std::string> failed_on[2];
    for (const Response& r : ready) {
      CHECK(r.kind == Response::Kind::ERROR && r.error_code == StatusCode::MISMATCH);
      CHECK(r.error == "mismatched group sizes for tensor 'g.0': 2 on rank 0; 3 on rank 1", << r.error);
      for (int rank = 0; rank < 2; ++rank) {
        const bool concerns = r.error_ranks.empty() ||
                              std::find(r.error_ranks.begin(), r.error_ranks.end(), rank) != r.error_ranks.end();
        if (concerns) failed_on[rank].push_back(r.names[0]);
      }
    }
    std::sort(failed_on[0].begin(), failed_on[0].end());
    std::sort(failed_on[1].begin(), failed_on[1].end());
    CHECK(failed_on[0] == (std::vector<std::string>{"g.0", "g.1"}));
    CHECK(failed_on[1] == (std::vector<std::string>{"g.0", "g.1", "g.2"}));
    CHECK(!c.HasPending());
    for (int rank = 0; rank < 2; ++rank) c.Submit(member(rank, 0, 1), t0);
    ready = c.TakeReady();
    CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::EXECUTE);
  }
}

// dtype, op, root, scale factors, collective.
TEST(Coordinator, EveryFieldRanksAgreeOnIsCompared) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(2);
  Coordinator c(2, sets);
  Request a = Make(0, "d", {4}), b = Make(1, "d", {4});
  b.dtype = DataType::FLOAT64;
  c.Submit(a, t0);
  c.Submit(b, t0);
  CHECK(Contains(c.TakeReady()[0].error, "mismatched data types for tensor 'd': float32 on rank 0; float64 on rank 1"));
  a.name = b.name = "o";
  b.dtype = a.dtype;
  b.op = ReduceOp::MAX;
  c.Submit(a, t0);
  c.Submit(b, t0);
  CHECK(Contains(c.TakeReady()[0].error, "mismatched reduction ops"));
  a.name = b.name = "s";
  b.op = a.op;
  b.postscale = 0.5;
  c.Submit(a, t0);
  c.Submit(b, t0);
  CHECK(Contains(c.TakeReady()[0].error, "mismatched postscale factors for tensor 's': 1 on rank 0; 0.5 on rank 1"));
  Request r0 = Make(0, "r", {4}, Collective::BROADCAST), r1 = Make(1, "r", {4}, Collective::BROADCAST);
  r1.root = 1;
  c.Submit(r0, t0);
  c.Submit(r1, t0);
  CHECK(Contains(c.TakeReady()[0].error, "mismatched root ranks"));
  c.Submit(Make(0, "k", {4}, Collective::ALLREDUCE), t0);
  c.Submit(Make(1, "k", {4}, Collective::BROADCAST), t0);
  CHECK(Contains(c.TakeReady()[0].error, "mismatched collective operations for tensor 'k': allreduce on rank 0; broadcast on rank 1"));
}

// Allgather: first dimensions may differ and are reported per rank; the rest must match.
TEST(Coordinator, AllgatherFirstDimensionsMayDiffer) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(2);
  Coordinator c(2, sets);
  c.Submit(Make(0, "g", {2, 5}, Collective::ALLGATHER), t0);
  c.Submit(Make(1, "g", {7, 5}, Collective::ALLGATHER), t0);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready[0].kind == Response::Kind::EXECUTE && ready[0].first_dims == (std::vector<int64_t>{2, 7}));
  c.Submit(Make(0, "h", {2, 5}, Collective::ALLGATHER), t0);
  c.Submit(Make(1, "h", {2, 6}, Collective::ALLGATHER), t0);
  CHECK(c.TakeReady()[0].kind == Response::Kind::ERROR);
}

// A rank shutting down fails what still waits for it, now and later.
TEST(Coordinator, ShutdownFailsWhatWaitsForTheRank) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(2);
  Coordinator c(2, sets);
  c.Submit(Make(0, "p", {1}), t0);
  c.RankShutDown(1, "");
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].error_code == StatusCode::SHUT_DOWN);
  CHECK(ready[0].error == "tensor 'p' cannot run: rank 1 shut down (it called shutdown() or its process exited)", << ready[0].error);
  CHECK(ready[0].error_ranks == std::vector<int64_t>({0}));  // only the rank that submitted it
  c.Submit(Make(0, "q", {1}), t0);
  CHECK(c.TakeReady()[0].error_code == StatusCode::SHUT_DOWN);
  CHECK(!c.AllShutDown());
  c.RankShutDown(0, "ValueError: boom");
  CHECK(c.AllShutDown());
}

// A rank that failed is quoted in the errors of the ranks that waited for it.
TEST(Coordinator, AFailedRankIsQuotedInTheErrors) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "w", {1}), t0);
  c.Submit(Make(2, "w", {1}), t0);
  c.RankShutDown(1, "ValueError: boom");
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].error == "tensor 'w' cannot run: rank 1 failed: ValueError: boom",
        << (ready.empty() ? "" : ready[0].error));
  c.RankShutDown(0, "");
  c.RankShutDown(2, "");
  CHECK(c.AllShutDown());
}

// Each decision says which rank's submission completed the tensor, and when: the timeline's
// "last rank", whatever order the ranks came in; a join that completes a tensor counts.
TEST(Coordinator, DecisionsNameTheLastRankToArrive) {
  const auto t0 = Coordinator::Clock::now();
  const auto t1 = t0 + std::chrono::milliseconds(1), t2 = t0 + std::chrono::milliseconds(2);
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(2, "p", {1}), t0);
  c.Submit(Make(0, "p", {1}), t1);
  c.Submit(Make(1, "p", {1}), t2);
  c.Submit(Make(1, "q", {1}), t0);
  c.Submit(Make(0, "q", {1}), t0);
  c.Submit(Make(2, "join.0", {0}, Collective::JOIN), t1);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 2 && ready[0].last_arrivals.size() == 1 && ready[1].last_arrivals.size() == 1);
  CHECK(ready.size() == 2 && ready[0].last_arrivals[0].rank == 1 && ready[0].last_arrivals[0].at == t2);
  CHECK(ready.size() == 2 && ready[1].names[0] == "q" && ready[1].last_arrivals[0].rank == 2 &&
        ready[1].last_arrivals[0].at == t1);
}

// A joined rank counts as having submitted everything until all ranks have joined; join
// completes last, naming the rank that joined last, and then the next epoch starts fresh.
TEST(Coordinator, JoinedRanksCountAsSubmitted) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(1, "join.0", {0}, Collective::JOIN), t0);
  c.Submit(Make(0, "x", {4}), t0);
  CHECK(c.TakeReady().empty());
  c.Submit(Make(2, "x", {4}), t0);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::EXECUTE && ready[0].names[0] == "x");
  CHECK(!ready.empty() && ready[0].shapes == (std::vector<Shape>{{4}}));
  c.Submit(Make(0, "g", {3, 2}, Collective::ALLGATHER), t0);
  c.Submit(Make(2, "join.0", {0}, Collective::JOIN), t0);  // completes g, rank 0 still working
  ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].first_dims == (std::vector<int64_t>{3, 0, 0}));
  c.Submit(Make(0, "a", {6}, Collective::ALLTOALL), t0);
  ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].error_code == StatusCode::UNSUPPORTED &&
        Contains(ready[0].error, "ranks 1, 2 have joined"), << (ready.empty() ? "" : ready[0].error));
  c.Submit(Make(0, "join.0", {0}, Collective::JOIN), t0);
  ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].collective == Collective::JOIN &&
        ready[0].last_joined_rank == 0);
  c.Submit(Make(0, "y", {1}), t0);
  CHECK(c.TakeReady().empty());  // nobody counts as joined any more
}

// Process sets: a tensor of a set waits only for its members; removing a set fails what
// still waits in it.
TEST(Coordinator, ProcessSetTensorsWaitForMembersOnly) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  for (int r = 0; r < 3; ++r) {
    Request add = Make(r, "add", {0}, Collective::ADD_PROCESS_SET);
    add.new_set_ranks = {0, 2};
    c.Submit(add, t0);
  }
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].new_set_id == 1 && ready[0].new_set_ranks == (std::vector<int64_t>{0, 2}));
  sets.Add(1, {0, 2});  // as every rank does on accepting the response
  Request a0 = Make(0, "s", {4}), a2 = Make(2, "s", {4});
  a0.process_set = a2.process_set = 1;
  c.Submit(a0, t0);
  c.Submit(a2, t0);
  ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::EXECUTE && ready[0].process_set == 1);
  Request waiting = Make(0, "w", {1});
  waiting.process_set = 1;
  c.Submit(waiting, t0);
  for (int r = 0; r < 3; ++r) {
    Request remove = Make(r, "remove", {0}, Collective::REMOVE_PROCESS_SET);
    remove.removed_set = 1;
    c.Submit(remove, t0);
  }
  ready = c.TakeReady();
  CHECK(ready.size() == 2 && ready[0].names[0] == "w" && ready[0].kind == Response::Kind::ERROR &&
        Contains(ready[0].error, "process set 1 was removed"));
  Request late = Make(1, "late", {1});
  late.process_set = 1;
  c.Submit(late, t0);
  CHECK(c.TakeReady()[0].error_code == StatusCode::INVALID_ARGUMENT);
}

// Stall reports name the waiting tensor and the missing ranks, once per period.
TEST(Coordinator, StallWarningsNameTheMissingRanksOncePerPeriod) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "slow", {1}), t0);
  c.Submit(Make(2, "slow", {1}), t0);
  const auto period = std::chrono::seconds(5);
  CHECK(c.StallWarnings(t0 + std::chrono::seconds(1), period).empty());
  std::vector<std::string> lines = c.StallWarnings(t0 + std::chrono::seconds(6), period);
  CHECK(lines.size() == 1);
  CHECK(!lines.empty() && Contains(lines[0], "'slow'") && Contains(lines[0], "submitted by ranks 0, 2; missing rank 1"),
        << (lines.empty() ? "" : lines[0]));
  CHECK(c.StallWarnings(t0 + std::chrono::seconds(7), period).empty());
  CHECK(c.StallWarnings(t0 + std::chrono::seconds(12), period).size() == 1);
}

// The stall shutdown cancels what waited too long, for everyone, with one error. Here the
// ranks had diverged: ranks 0 and 2 waited in 'a' for rank 1, which waited in 'b' for them.
// Neither side is late for the other's tensor, so the next 'a' and 'b' pair normally.
TEST(Coordinator, StallShutdownOfDivergedRanks) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "a", {1}), t0);
  c.Submit(Make(2, "a", {1}), t0);
  c.Submit(Make(1, "b", {1}), t0 + std::chrono::seconds(2));
  CHECK(c.CancelStalled(t0 + std::chrono::seconds(9), std::chrono::seconds(10)).empty());
  const std::string error = c.CancelStalled(t0 + std::chrono::seconds(12), std::chrono::seconds(10));
  CHECK(error == "collectives waited longer than the stall shutdown time (10 s) and were cancelled on every rank:\n"
                 "  tensor 'a' (allreduce) waiting 12 s: submitted by ranks 0, 2; missing rank 1\n"
                 "  tensor 'b' (allreduce) waiting 10 s: submitted by rank 1; missing ranks 0, 2", << error);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 2 && !c.HasPending());
  CHECK(ready.size() == 2 && ready[0].names[0] == "a" && ready[0].error_ranks == std::vector<int64_t>({0, 2}) &&
        ready[1].names[0] == "b" && ready[1].error_ranks == std::vector<int64_t>({1}));
  for (const Response& r : ready) {
    CHECK(r.kind == Response::Kind::ERROR && r.error_code == StatusCode::STALLED && r.error == error);
  }
  NextOfEachNamePairs(c, {"a", "b"}, t0);
}

// A rank that waited in nothing was late: it gets the cancelled tensor's error when it
// brings that tensor, alone, and its next one completes the others' next one. A rank
// that waited in a tensor the submitters had submitted too (here rank 2, in 'd', which
// waits for rank 1 alone) was late as well.
// A deadlock is cancelled whole: 'b', which waits for ranks 0 and 2 while they wait in 'a' for
// rank 1, goes with 'a' although it has not waited the stall shutdown time itself. Neither side
// was late for the other's tensor, so the next of each name pairs normally.
TEST(Coordinator, DeadlockedTensorsAreCancelledTogether) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "a", {1}), t0);
  c.Submit(Make(2, "a", {1}), t0);
  c.Submit(Make(1, "b", {1}), t0 + std::chrono::seconds(9));
  CHECK(c.CancelStalled(t0 + std::chrono::seconds(9), std::chrono::seconds(10)).empty());
  const std::string error = c.CancelStalled(t0 + std::chrono::seconds(10), std::chrono::seconds(10));
  CHECK(error == "collectives waited longer than the stall shutdown time (10 s) and were cancelled on every rank:\n"
                 "  tensor 'a' (allreduce) waiting 10 s: submitted by ranks 0, 2; missing rank 1\n"
                 "  tensor 'b' (allreduce) waiting 1 s: submitted by rank 1; missing ranks 0, 2", << error);
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 2 && !c.HasPending());
  for (const Response& r : ready) CHECK(r.kind == Response::Kind::ERROR && r.error == error);
  NextOfEachNamePairs(c, {"a", "b"}, t0);
}

TEST(Coordinator, LateRankGetsTheCancelledTensorsErrorAlone) {
  const auto t0 = Coordinator::Clock::now();
  ProcessSets sets(3);
  Coordinator c(3, sets);
  c.Submit(Make(0, "c", {1}), t0);
  c.Submit(Make(2, "c", {1}), t0);
  c.Submit(Make(0, "a", {1}), t0);
  c.Submit(Make(1, "c", {1}), t0);
  CHECK(c.TakeReady().size() == 1);
  c.Submit(Make(0, "d", {1}), t0);
  c.Submit(Make(2, "d", {1}), t0);  // 'd' waits for rank 1 alone
  const std::string error = c.CancelStalled(t0 + std::chrono::seconds(12), std::chrono::seconds(10));
  CHECK(!error.empty());
  std::vector<Response> ready = c.TakeReady();
  CHECK(ready.size() == 2 && ready[0].names[0] == "a" && ready[0].error_ranks == std::vector<int64_t>({0}));
  c.Submit(Make(0, "a", {1}), t0);  // rank 0 goes on to its next 'a'
  c.Submit(Make(1, "a", {1}), t0);  // ranks 1 and 2 bring the cancelled one
  c.Submit(Make(2, "a", {1}), t0);
  ready = c.TakeReady();
  CHECK(ready.size() == 2 && ready[0].error_code == StatusCode::STALLED &&
        ready[0].error_ranks == std::vector<int64_t>({1}) && ready[0].error == error &&
        ready[1].error_ranks == std::vector<int64_t>({2}));
  c.Submit(Make(1, "a", {1}), t0);  // and then their next ones, which complete rank 0's
  c.Submit(Make(2, "a", {1}), t0);
  ready = c.TakeReady();
  CHECK(ready.size() == 1 && ready[0].kind == Response::Kind::EXECUTE && ready[0].names[0] == "a");
}

}  // namespace
