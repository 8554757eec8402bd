#include "tensor_states.h"

#include <stdexcept>
#include <string>

namespace mpirep {
namespace {

template <typename State, typename Event>
struct Transition {
  State from;
  Event event;
  State to;
};

using T = TensorState;
using TE = TensorEvent;
constexpr Transition<T, TE> kTensorTransitions[] = {
    {T::kSubmitted, TE::kCachedRepeat, T::kHit},
    {T::kSubmitted, TE::kNeedsRankZero, T::kQueued},
    {T::kHit, TE::kEvicted, T::kQueued},
    {T::kHit, TE::kHitsSuspended, T::kQueued},
    {T::kHit, TE::kReadyEverywhere, T::kRunning},
    {T::kQueued, TE::kSentToRankZero, T::kSent},
    {T::kSent, TE::kDecidedToRun, T::kRunning},
    {T::kSent, TE::kRejected, T::kEnded},
    {T::kRunning, TE::kCompleted, T::kEnded},
    {T::kSubmitted, TE::kAborted, T::kEnded},
    {T::kHit, TE::kAborted, T::kEnded},
    {T::kQueued, TE::kAborted, T::kEnded},
    {T::kSent, TE::kAborted, T::kEnded},
    {T::kRunning, TE::kAborted, T::kEnded},
};

using A = AgreementState;
using AE = AgreementEvent;
constexpr Transition<A, AE> kAgreementTransitions[] = {
    {A::kNone, AE::kFirstRequest, A::kWaiting},
    {A::kNone, AE::kOwedRequest, A::kFailed},
    {A::kWaiting, AE::kLastMemberArrived, A::kDecided},
    {A::kWaiting, AE::kMemberDeparted, A::kFailed},
    {A::kWaiting, AE::kSetRemoved, A::kFailed},
    {A::kWaiting, AE::kGroupFailed, A::kFailed},
    {A::kWaiting, AE::kStalled, A::kCancelled},
};

template <typename State, typename Event, size_t N>
State Lookup(const Transition<State, Event> (&table)[N], State from, Event event) {
  for (const auto& t : table) {
    if (t.from == from && t.event == event) return t.to;
  }
  throw std::logic_error(std::string("mpirep: no transition from state ") + StateName(from) + " on " +
                         EventName(event) + " (an internal error in mpirep)");
}

}  // namespace

TensorState Advance(TensorState from, TensorEvent event) { return Lookup(kTensorTransitions, from, event); }
AgreementState Advance(AgreementState from, AgreementEvent event) {
  return Lookup(kAgreementTransitions, from, event);
}

const char* StateName(TensorState state) {
  switch (state) {
    case T::kSubmitted: return "submitted";
    case T::kHit: return "cache hit";
    case T::kQueued: return "queued for rank 0";
    case T::kSent: return "sent to rank 0";
    case T::kRunning: return "running";
    case T::kEnded: return "ended";
  }
  return "?";
}

const char* StateName(AgreementState state) {
  switch (state) {
    case A::kNone: return "none";
    case A::kWaiting: return "waiting";
    case A::kDecided: return "decided";
    case A::kFailed: return "failed";
    case A::kCancelled: return "cancelled";
  }
  return "?";
}

const char* EventName(TensorEvent event) {
  switch (event) {
    case TE::kCachedRepeat: return "cached repeat";
    case TE::kNeedsRankZero: return "needs rank 0";
    case TE::kEvicted: return "evicted";
    case TE::kHitsSuspended: return "hits suspended";
    case TE::kSentToRankZero: return "sent to rank 0";
    case TE::kReadyEverywhere: return "ready everywhere";
    case TE::kDecidedToRun: return "decided to run";
    case TE::kRejected: return "rejected";
    case TE::kCompleted: return "completed";
    case TE::kAborted: return "aborted";
  }
  return "?";
}

const char* EventName(AgreementEvent event) {
  switch (event) {
    case AE::kFirstRequest: return "first request";
    case AE::kLastMemberArrived: return "last member arrived";
    case AE::kMemberDeparted: return "member departed";
    case AE::kSetRemoved: return "set removed";
    case AE::kGroupFailed: return "group failed";
    case AE::kStalled: return "stalled";
    case AE::kOwedRequest: return "owed request";
  }
  return "?";
}

}  // namespace mpirep
