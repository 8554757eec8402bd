// The state tables of tensor_states.h: every transition they list is taken, anything else is
// refused, and a tensor in a simulated job passes through the states the tables say, for each
// rule that moves it (cache hit, eviction by another rank's request, join, mismatch).
#include <stdexcept>
#include <string>

#include "check.h"
#include "simulated_job.h"

using namespace mpirep;
using mpirep_test::SimulatedJob;

namespace {

template <typename State, typename Event>
bool Refused(State from, Event event) {
  try {
    Advance(from, event);
  } catch (const std::logic_error& e) {
    return std::string(e.what()).find(StateName(from)) != std::string::npos;
  }
  return false;
}

TEST(TensorStates, TensorTransitionsFollowTheTable) {
  using S = TensorState;
  using E = TensorEvent;
  CHECK(Advance(S::kSubmitted, E::kCachedRepeat) == S::kHit);
  CHECK(Advance(S::kSubmitted, E::kNeedsRankZero) == S::kQueued);
  CHECK(Advance(S::kHit, E::kEvicted) == S::kQueued);
  CHECK(Advance(S::kHit, E::kHitsSuspended) == S::kQueued);
  CHECK(Advance(S::kHit, E::kReadyEverywhere) == S::kRunning);
  CHECK(Advance(S::kQueued, E::kSentToRankZero) == S::kSent);
  CHECK(Advance(S::kSent, E::kDecidedToRun) == S::kRunning);
  CHECK(Advance(S::kSent, E::kRejected) == S::kEnded);
  CHECK(Advance(S::kRunning, E::kCompleted) == S::kEnded);
  for (S from : {S::kSubmitted, S::kHit, S::kQueued, S::kSent, S::kRunning}) {
    CHECK(Advance(from, E::kAborted) == S::kEnded, << StateName(from));
  }
  // A hit never goes through rank 0, nor a request through the cache; nothing leaves kEnded.
  CHECK(Refused(S::kHit, E::kDecidedToRun));
  CHECK(Refused(S::kSent, E::kReadyEverywhere));
  CHECK(Refused(S::kQueued, E::kRejected));
  CHECK(Refused(S::kRunning, E::kRejected));
  CHECK(Refused(S::kEnded, E::kAborted));
  CHECK(Refused(S::kEnded, E::kCompleted));
}

TEST(TensorStates, AgreementTransitionsFollowTheTable) {
  using S = AgreementState;
  using E = AgreementEvent;
  CHECK(Advance(S::kNone, E::kFirstRequest) == S::kWaiting);
  CHECK(Advance(S::kNone, E::kOwedRequest) == S::kFailed);
  CHECK(Advance(S::kWaiting, E::kLastMemberArrived) == S::kDecided);
  for (E e : {E::kMemberDeparted, E::kSetRemoved, E::kGroupFailed}) CHECK(Advance(S::kWaiting, e) == S::kFailed);
  CHECK(Advance(S::kWaiting, E::kStalled) == S::kCancelled);
  CHECK(Refused(S::kNone, E::kLastMemberArrived));
  CHECK(Refused(S::kDecided, E::kStalled));
  CHECK(Refused(S::kCancelled, E::kLastMemberArrived));
}

// One tensor's states on each rank of a simulated job, rule by rule.
TEST(TensorStates, TensorsMoveThroughTheStatesTheRulesSay) {
  Config config;
  config.cache_capacity = 8;
  SimulatedJob job(3, config);
  using S = TensorState;
  for (int r = 0; r < 3; ++r) job.Submit(r, SimulatedJob::Make(r, "a"));
  CHECK(job.state(0, "a") == S::kSubmitted);
  job.Round();  // new: queued, sent and decided in one round
  for (int r = 0; r < 3; ++r) CHECK(job.state(r, "a") == S::kRunning, << StateName(job.state(r, "a")));

  // a repeat is a hit, which waits for the others' bits
  job.Submit(0, SimulatedJob::Make(0, "a"));
  job.Submit(1, SimulatedJob::Make(1, "a"));
  job.Round();
  CHECK(job.state(0, "a") == S::kHit && job.state(1, "a") == S::kHit);
  // rank 2 changes it: its request evicts the entry everywhere, the hits become requests
  job.Submit(2, SimulatedJob::Make(2, "a", {5}));
  job.Round();
  CHECK(job.state(2, "a") == S::kSent && job.state(0, "a") == S::kQueued && job.state(1, "a") == S::kQueued,
        << StateName(job.state(0, "a")));
  job.Settle();
  for (int r = 0; r < 3; ++r) CHECK(job.state(r, "a") == S::kEnded && job.ran(r).back().kind == Response::Kind::ERROR);

  // cached again, then a join on rank 2 suspends the other ranks' hits
  for (int step = 0; step < 2; ++step) {
    for (int r = 0; r < 3; ++r) job.Submit(r, SimulatedJob::Make(r, "b"));
    job.Settle();
  }
  job.Submit(0, SimulatedJob::Make(0, "b"));
  job.Submit(1, SimulatedJob::Make(1, "b"));
  job.Round();
  CHECK(job.state(0, "b") == S::kHit);
  Request join = SimulatedJob::Make(2, "join", {});
  join.collective = Collective::JOIN;
  job.Submit(2, join);
  job.Round();
  CHECK(job.state(0, "b") != S::kHit && job.state(1, "b") != S::kHit, << StateName(job.state(0, "b")));
  job.Settle();
  CHECK(job.state(0, "b") == S::kRunning && job.state(2, "join") == S::kSent);
}

}  // namespace
