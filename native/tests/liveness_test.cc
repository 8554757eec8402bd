// Peer liveness (core/liveness.h) over in-process transports, with a simulated clock: ranks
// that keep checking never lose each other; a rank that stops (frozen) is found by its
// neighbours after the timeout and reported to the others; a cut between two groups of ranks
// (a transport that stops delivering) makes each side lose the other, and a rank that hears
// from nobody knows it is the one cut off; ranks that leave together leave no message in flight.
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <vector>

#include "check.h"
#include "core/liveness.h"
#include "inproc_transport.h"

using namespace mpirep;
using Clock = Liveness::Clock;
using std::chrono::milliseconds;

namespace {

// Delivers nothing between ranks on different sides of a cut once it is made: sends there
// vanish and receives from there never complete, as across a link that went down.
class CuttableTransport : public Transport {
 public:
  CuttableTransport(Transport& inner, const std::vector<int>& side, const bool& cut)
      : inner_(inner), side_(side), cut_(cut) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Handle Isend(int peer, const void* data, size_t bytes) override {
    if (Cut(peer)) return Forever(true);
    return Wrap(inner_.Isend(peer, data, bytes));
  }
  Handle Irecv(int peer, void* data, size_t bytes) override {
    if (Cut(peer)) return Forever(false);
    return Wrap(inner_.Irecv(peer, data, bytes));
  }
  void Wait(Handle) override {}
  bool Test(Handle handle) override {
    const Slot& s = slots_[handle];
    if (s.forever) return s.done;
    return inner_.Test(s.inner);
  }
  void Abandon(Handle handle) override {
    if (!slots_[handle].forever) inner_.Abandon(slots_[handle].inner);
  }

 private:
  struct Slot {
    bool forever;
    bool done;
    Handle inner;
  };
  bool Cut(int peer) const { return cut_ && side_[peer] != side_[rank()]; }
  Handle Forever(bool done) {
    slots_.push_back({true, done, 0});
    return slots_.size() - 1;
  }
  Handle Wrap(Handle inner) {
    slots_.push_back({false, false, inner});
    return slots_.size() - 1;
  }
  Transport& inner_;
  const std::vector<int>& side_;
  const bool& cut_;
  std::vector<Slot> slots_;
};

class Job {
 public:
  Job(int size, Clock::duration timeout, std::vector<int> side = {})
      : world_(size), side_(side.empty() ? std::vector<int>(size, 0) : std::move(side)), frozen_(size, false) {
    for (int r = 0; r < size; ++r) {
      inner_.push_back(std::make_unique<InProcessTransport>(world_, r));
      transports_.push_back(std::make_unique<CuttableTransport>(*inner_.back(), side_, cut_));
    }
    for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<Liveness>(*transports_[r], timeout, now));
  }
  // Advances the clock in steps of 20 ms for `span`, every rank that is not frozen checking at
  // each step.
  void Run(Clock::duration span) {
    for (const Clock::time_point end = now + span; now < end;) {
      now += milliseconds(20);
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (!frozen_[r]) ranks_[r]->Check(now);
      }
    }
  }
  const std::optional<PeerLoss>& loss(int r) { return ranks_[r]->Check(now); }
  void Freeze(int r) { frozen_[r] = true; }
  void Cut() { cut_ = true; }
  Liveness& rank(int r) { return *ranks_[r]; }
  size_t InFlight() { return world_.InFlight(); }

  Clock::time_point now = Clock::now();

 private:
  InProcessWorld world_;
  std::vector<int> side_;
  bool cut_ = false;
  std::vector<bool> frozen_;
  std::vector<std::unique_ptr<InProcessTransport>> inner_;
  std::vector<std::unique_ptr<CuttableTransport>> transports_;
  std::vector<std::unique_ptr<Liveness>> ranks_;
};

TEST(Liveness, NeighboursAreRingDistancesOneAndTwo) {
  for (int size : {2, 3, 5, 8}) {
    Job job(size, std::chrono::seconds(1));
    for (int r = 0; r < size; ++r) {
      std::set<int> expected;
      for (int d : {1, 2}) {
        for (int peer : {(r + d) % size, (r - d + size) % size}) {
          if (peer != r) expected.insert(peer);
        }
      }
      const auto& got = job.rank(r).neighbours();
      CHECK(std::set<int>(got.begin(), got.end()) == expected, << "size " << size << " rank " << r);
    }
  }
}

TEST(Liveness, RanksThatKeepCheckingNeverLoseEachOther) {
  Job job(5, std::chrono::seconds(1));
  job.Run(std::chrono::seconds(5));
  for (int r = 0; r < 5; ++r) CHECK(!job.loss(r), << "rank " << r);
}

TEST(Liveness, AFrozenRankIsFoundByItsNeighboursAndReportedToTheOthers) {
  Job job(8, std::chrono::seconds(1));
  job.Run(std::chrono::seconds(2));
  job.Freeze(0);
  job.Run(milliseconds(800));  // its last beat came at most a beat interval (125 ms) before
  for (int r = 1; r < 8; ++r) CHECK(!job.loss(r), << "rank " << r << " lost a peer before the timeout");
  job.Run(milliseconds(500));
  for (int r : {1, 2, 6, 7}) {
    const auto& loss = job.loss(r);
    CHECK(loss && loss->silent == std::vector<int>{0} && !loss->cut_off && loss->told_by < 0, << "rank " << r);
  }
  for (int r : {3, 4, 5}) {
    const auto& loss = job.loss(r);
    CHECK(loss && loss->silent.empty() && loss->told_by >= 0 && loss->reported == std::vector<int>{0},
          << "rank " << r);
  }
}

TEST(Liveness, ACutMakesEachSideLoseTheOther) {
  Job job(4, std::chrono::seconds(1), {0, 0, 1, 1});
  job.Run(std::chrono::seconds(1));
  job.Cut();
  job.Run(milliseconds(1300));
  for (int r = 0; r < 4; ++r) {
    const auto& loss = job.loss(r);
    const std::vector<int> other = r < 2 ? std::vector<int>{2, 3} : std::vector<int>{0, 1};
    CHECK(loss && loss->silent == other && !loss->cut_off, << "rank " << r);
  }
}

TEST(Liveness, ARankThatHearsNobodyIsCutOff) {
  Job job(3, std::chrono::seconds(1), {0, 0, 1});
  job.Run(std::chrono::seconds(1));
  job.Cut();
  job.Run(milliseconds(1300));
  const auto& alone = job.loss(2);
  CHECK(alone && alone->cut_off && alone->silent == (std::vector<int>{0, 1}));
  for (int r : {0, 1}) CHECK(job.loss(r) && !job.loss(r)->cut_off && job.loss(r)->silent == std::vector<int>{2});
}

TEST(Liveness, RanksThatLeaveTogetherLeaveNothingInFlight) {
  Job job(5, std::chrono::seconds(1));
  job.Run(milliseconds(700));
  // Ranks 0 and 1 start leaving while the others still check (and beat) for a while.
  std::vector<bool> left(5, false);
  for (int step = 0; step < 200 && std::count(left.begin(), left.end(), true) < 5; ++step) {
    job.now += milliseconds(20);
    for (int r = 0; r < 5; ++r) {
      if (r < 2 || step >= 10) {
        left[r] = job.rank(r).Leave();
      } else {
        job.rank(r).Check(job.now);
      }
    }
  }
  for (int r = 0; r < 5; ++r) CHECK(left[r], << "rank " << r << " never finished leaving");
  CHECK(job.InFlight() == 0, << job.InFlight() << " messages still in flight");
  job.now += std::chrono::seconds(2);  // past the timeout: a neighbour that left is not lost
  for (int r = 0; r < 5; ++r) CHECK(!job.rank(r).Check(job.now), << "rank " << r << " lost a peer that left");
  CHECK(job.InFlight() == 0, << "a rank that left sent again");
}

}  // namespace
