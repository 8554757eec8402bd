// Negotiation as rank 0 runs it for tensors that are not cache hits. Every rank sends rank 0 a
// Request for each such tensor; rank 0 alone decides when a tensor is ready, whether its requests
// agree, and in which order ready tensors run, and sends that decision to every rank, so that
// every rank runs the same collectives in the same order and a disagreement is the same error
// everywhere. Each tensor's AgreementState and the events that move it are tensor_states.h's;
// this class decides when each event happens. Pure bookkeeping: no MPI, no threads.
//
// A tensor of a process set waits only for the set's members (process_sets.h). A rank that
// calls join has run out of work: until every rank has joined it counts as having submitted
// every tensor, and takes part in each collective with zeros (stand_in.h). The members of a
// group (a grouped collective) are negotiated one by one, but if ranks disagree about the
// group's size every member fails on every rank that submits it, including the members only the
// ranks with the longer list submit, so that none waits forever.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "flight_recorder.h"
#include "message.h"
#include "owed_requests.h"
#include "process_sets.h"
#include "tensor_states.h"

namespace mpirep {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  // `sets`: this rank's registry, which the rounds change as they accept a set's creation or
  // removal; rank 0 gives new sets their ids.
  Coordinator(int size, ProcessSets& sets);

  void Submit(const Request& request, Clock::time_point now);
  // `rank` will submit nothing more: tensors still waiting for it fail, now and later, with
  // `reason` (what went wrong on that rank, if anything) in their error.
  void RankShutDown(int rank, const std::string& reason);
  bool AllShutDown() const;

  // Tensors that were decided or failed since the last call, in the order that happened.
  std::vector<Response> TakeReady();

  // Human-readable lines about tensors some ranks have waited on for `after` or longer, each
  // reported at most once per `after`.
  std::vector<std::string> StallWarnings(Clock::time_point now, Clock::duration after);
  // Fails, on every rank that submitted it, each tensor that has waited at least `after` for
  // some rank, and each tensor deadlocked with one of those (each waiting for the other's
  // ranks), all with one error that describes them all, and returns that error ("" when none
  // has waited so long). A rank that was late for one of them owes it (owed_requests.h).
  // A rank that was instead waiting for one of the tensor's submitters in another tensor (the
  // ranks had diverged, each waiting for the other) is not late: its next request of that name
  // is a new one and pairs normally, so that one divergence does not fail every later step.
  std::string CancelStalled(Clock::time_point now, Clock::duration after);
  // A member of a group ran from the response cache, every rank of its set having repeated
  // `own`, rank 0's request: counts it for each of them, as Submit does for a request.
  void CountCachedGroupMember(const Request& own);
  // The tensors some members have not submitted yet, for the flight record.
  std::vector<FlightDump::Waiting> Waiting() const;
  bool HasPending() const { return !pending_.empty(); }
  bool HasReady() const { return !ready_.empty(); }

 private:
  struct Pending {
    AgreementState state = AgreementState::kNone;
    std::vector<int> members;      // the ranks that must take part
    std::vector<Request> by_rank;  // slot r is meaningful where submitted[r]
    std::vector<bool> submitted;
    Clock::time_point first_seen;
    Clock::time_point last_warned;
  };

  // Whether every member has submitted the tensor, counting a joined member as having done so.
  bool AllSubmitted(const Pending& pending) const;
  // Decides the tensor `name`, which every member has submitted (`last` completing it), and
  // queues the decision.
  void MarkReady(const std::string& name, const Arrival& last);
  void Joined(int rank, Clock::time_point now);
  // `group_sizes_differ` is set when the requests disagree about their group's size.
  Response Decide(const std::string& name, const Pending& pending, bool* group_sizes_differ);
  void DecideProcessSetChange(const std::string& name, const Request& request, Response* response);
  // Counts a member of a group towards its rank's group size.
  void CountGroupMember(const Request& request);
  // Fails every member of `group`, pending or still to come, with `error` (see above).
  void FailGroup(const std::string& group, const Pending& decided, const std::string& error);
  // Ends the pending tensor `name` on `event`, failing it on the ranks that have submitted it.
  void Fail(const std::string& name, AgreementEvent event, StatusCode code, const std::string& why);
  // Fails `request` alone, on its rank, leaving any pending tensor of that name to the others.
  void RejectOnArrival(const Request& request, const Status& status);
  std::string MissingRanks(const Pending& pending) const;
  std::string Describe(const std::string& name, const Pending& pending, Clock::time_point now) const;
  // Whether `a` and `b` wait for each other: a rank that submitted `b` but not `a` is missing
  // from `a`, and a rank that submitted `a` but not `b` is missing from `b`.
  bool Deadlocked(const Pending& a, const Pending& b) const;
  // Whether `rank` waits in a pending tensor that a rank which submitted `stalled` has not
  // submitted: then each of the two waits for the other.
  bool WaitsOnSubmitterOf(int rank, const Pending& stalled) const;
  const Request& AnyRequest(const Pending& pending) const;

  const int size_;
  ProcessSets& sets_;  // read for membership; gives new sets their ids
  std::unordered_map<std::string, Pending> pending_;
  std::vector<Response> ready_;
  // Per rank: once it has shut down, how it left, for the errors of what waited for it.
  std::vector<std::optional<std::string>> departed_;
  std::vector<bool> joined_;  // since the last join completed
  int last_joined_ = -1;
  // Per group, the members each rank has submitted of its current instance of the group (0
  // again once it has submitted all of them).
  std::unordered_map<std::string, std::vector<int32_t>> group_members_seen_;
  OwedRequests owed_;
  // The ids of the sets whose removal rank 0 decided (the registry forgets a set only when the
  // rounds accept its removal; requests that come in between, and late ones, fail naming the
  // removal).
  std::set<int32_t> removed_sets_;
};

}  // namespace mpirep
