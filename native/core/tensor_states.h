// The states a tensor passes through, from its submission to its end, and every transition
// between them: the one place that lists negotiation's rules. Each transition is an event, named
// after the rule that fires it, with the function that decides it. Code changes a tensor's state
// only through Advance(), which refuses a transition missing from the tables below, so a rule
// that is not written here cannot act.
//
// A tensor has a state on each rank that submitted it (TensorState: the Negotiator's while it is
// negotiated, then the runtime's while its collective runs) and, while it goes through the full
// negotiation, one at rank 0 (AgreementState: the Coordinator's). The steady state of training
// never involves rank 0: a cache hit runs when a round's bitwise AND says that every member of
// its process set has submitted it (agreement.h).
//
// On the rank that submitted it:
//
//                 kCachedRepeat                        kReadyEverywhere
//   kSubmitted ------------------> kHit ----------------------------------------+
//       |                           |  kEvicted, kHitsSuspended                 v
//       | kNeedsRankZero            v                      kDecidedToRun    kRunning --kCompleted--> kEnded
//       +--------------------> kQueued --kSentToRankZero--> kSent ----------^                         ^
//                                                             |  kRejected                            |
//                                                             +---------------------------------------+
//   kAborted: from any state but kEnded to kEnded, when the runtime stops (shutdown, a lost peer).
//
// At rank 0, per tensor name:
//
//   (arrival) --kFirstRequest--> kWaiting --kLastMemberArrived--> kDecided
//       |                           |------kMemberDeparted, kSetRemoved, kGroupFailed--> kFailed
//       |                           +------kStalled--> kCancelled (its late ranks still owe it)
//       +--kOwedRequest--> kFailed  (a late or orphaned request fails alone, at once)
#pragma once

#include <cstdint>

namespace mpirep {

enum class TensorState : uint8_t {
  kSubmitted,  // taken from the queue; the next contribution places it
  kHit,        // waits as a hit on the response cache: its bit says so in every round
  kQueued,     // waits to be sent to rank 0 in the next round that has a slow phase
  kSent,       // its request is at rank 0, which answers in a slow phase's response list
  kRunning,    // decided: its collective runs (the runtime holds it from here)
  kEnded,      // its result or error has been handed back
};

enum class TensorEvent : uint8_t {
  // Response cache (Negotiator::Place): the name is cached, this rank's request repeats the one
  // it made when the tensor was negotiated, and hits are allowed.
  kCachedRepeat,
  // Response cache (Negotiator::Place): a new name, a changed request, or hits are suspended.
  kNeedsRankZero,
  // Eviction (Negotiator::EvictEverywhere), at the same point on every rank: some rank sent a
  // request for the name (it changed there, or that rank had hits suspended); a member of its
  // group was requested (group sizes are checked on rank 0 only, with every member in hand);
  // rank 0 demoted it, having seen it submitted on some ranks but not all for a while, so that
  // the stall is reported naming the missing ranks (RoundLeader::Agreed); the cache was
  // full (least recently run first); or its process set was removed.
  kEvicted,
  // Join and shutdown (Negotiator::Agree): while some rank has a join pending or has shut down,
  // rank 0 must see every tensor (stand-ins, failures), so no rank makes hits.
  kHitsSuspended,
  kSentToRankZero,  // the slow phase (Negotiator::TakeRequests)
  kReadyEverywhere,  // fast path: the round's AND has its bit from every member (Negotiator::Agree)
  kDecidedToRun,     // rank 0's response list runs it (Negotiator::Accept)
  // Rank 0's response list fails it (Negotiator::Accept): a mismatch across ranks, a departed
  // member, a stall cancellation, a late request for a cancelled tensor, a removed process set,
  // group sizes that differ. What fails where is rank 0's AgreementState below.
  kRejected,
  kCompleted,  // the collective ran; its result was delivered (Runtime::Deliver)
  kAborted,    // the runtime stopped with it in flight: shutdown, a lost peer, a fatal error
};

enum class AgreementState : uint8_t {
  kNone,       // rank 0 holds no request of this name
  kWaiting,    // some members have submitted it
  kDecided,    // every member has (a joined member counts): its response is queued, run or error
  kFailed,     // it cannot run; the ranks that submitted it get the error
  kCancelled,  // waited past the stall shutdown time; its late members still owe their request
};

enum class AgreementEvent : uint8_t {
  kFirstRequest,  // Coordinator::Submit
  // Readiness (Coordinator::MarkReady): the last member's request arrived, or, under join, the
  // last member that had not joined brought it (Coordinator::Joined). Its requests are then
  // compared (compare_requests.h): a mismatch is still a decision, an error for every rank.
  kLastMemberArrived,
  kMemberDeparted,  // shutdown: a member shut down or failed before submitting it (Coordinator::RankShutDown)
  kSetRemoved,      // its process set was removed (Coordinator::DecideProcessSetChange)
  kGroupFailed,     // its group's members disagree about the group's size (Coordinator::FailGroup)
  kStalled,         // stall shutdown: it waited stall_shutdown_time_seconds (Coordinator::CancelStalled)
  // A request a rank owes for something already failed (owed_requests.h), or for a removed or
  // unknown process set, fails alone on arrival (Coordinator::Submit).
  kOwedRequest,
};

// The state `event` leads to from `from`; throws std::logic_error for a transition the tables do
// not have (an internal error: the rules and the code disagree).
TensorState Advance(TensorState from, TensorEvent event);
AgreementState Advance(AgreementState from, AgreementEvent event);

const char* StateName(TensorState state);
const char* StateName(AgreementState state);
const char* EventName(TensorEvent event);
const char* EventName(AgreementEvent event);

}  // namespace mpirep
