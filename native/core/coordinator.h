// Negotiation, as rank 0 runs it. Every rank sends rank 0 a Request for each tensor it submits;
// a tensor becomes ready when every rank has submitted it. Rank 0 alone decides the order in
// which ready tensors run and whether their requests agree, and sends that decision to all
// ranks, so every rank runs the same collectives in the same order and a disagreement becomes
// the same error everywhere. Pure bookkeeping: no MPI, no threads.
//
// A rank that calls join has run out of work: until every rank has joined, it counts as having
// submitted every tensor, and takes part in each collective with zeros (no rows for allgather).
//
// The members of a group (a grouped collective) are negotiated one by one, but if ranks
// disagree about the group's size every member fails on every rank that submits it, including
// the members that only the ranks with the longer list submit, so that none waits forever.
//
// A tensor of a process set waits only for the set's members. Rank 0 keeps the sets' member
// lists: it gives each new set its id when every rank agrees to create it.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "message.h"

namespace mpirep {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Coordinator(int size);

  void Submit(const Request& request, Clock::time_point now);
  // `rank` will submit nothing more: tensors still waiting for it fail, now and later, with
  // `reason` (what went wrong on that rank, if anything) in their error.
  void RankShutDown(int rank, const std::string& reason);
  bool AllShutDown() const;

  // Tensors that became ready or failed since the last call, in the order that happened.
  std::vector<Response> TakeReady();

  // Human-readable lines about tensors some ranks have waited on for `after` or longer, each
  // reported at most once per `after`.
  std::vector<std::string> StallWarnings(Clock::time_point now, Clock::duration after);
  // Fails, on every rank that submitted it, each tensor that has waited at least `after` for
  // some rank, all with one error that describes them all, and returns that error ("" when
  // none has waited so long). A rank that was late for one of them, and submits it later,
  // gets the same error at once, and only that rank: its late request must not pair with
  // the others' next tensor of the same name. A rank that was instead waiting for one of
  // the tensor's submitters in another tensor (the ranks had diverged, each waiting for the
  // other) is not late: its next request of that name is a new one and pairs normally, so
  // one divergence does not fail every later step.
  std::string CancelStalled(Clock::time_point now, Clock::duration after);
  // A member of a group ran from the response cache, every rank of its set having repeated
  // `own`, rank 0's request: counts it for each of them, as Submit does for a request.
  void CountCachedGroupMember(const Request& own);
  bool HasPending() const { return !pending_.empty(); }
  bool HasReady() const { return !ready_.empty(); }

 private:
  struct Pending {
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
  // Counts a member of a group towards its rank's group size.
  void CountGroupMember(const Request& request);
  // Fails every member of `group`, pending or still to come, with `error` (see above).
  void FailGroup(const std::string& group, const Pending& decided, const std::string& error);
  // A member of a group that failed, which its rank still owed: true if it was failed.
  bool RejectFailedGroupMember(const Request& request);
  std::string MissingRanks(const Pending& pending) const;
  std::string Describe(const std::string& name, const Pending& pending, Clock::time_point now) const;
  // Fails the pending tensor `name` on the ranks that have submitted it, and forgets it.
  void Fail(const std::string& name, StatusCode code, const std::string& why);
  // Fails `name` on `ranks` alone (all of which have submitted it), leaving any pending tensor
  // of that name to the others.
  void FailOn(std::vector<int64_t> ranks, const std::string& name, StatusCode code, const std::string& why);
  // A rank's late request for a tensor cancelled by CancelStalled: true if it was failed.
  bool RejectLate(const Request& request);
  // Whether `rank` waits in a pending tensor that a rank which submitted `stalled` has not
  // submitted: then each of the two waits for the other.
  bool WaitsOnSubmitterOf(int rank, const Pending& stalled) const;
  const Request& AnyRequest(const Pending& pending) const;
  void DecideProcessSetChange(const std::string& name, const Request& request, Response* response);

  int size_;
  std::unordered_map<std::string, Pending> pending_;
  std::vector<Response> ready_;
  std::vector<bool> shut_down_;
  std::vector<bool> joined_;
  int last_joined_ = -1;
  std::map<int32_t, std::vector<int>> process_sets_;  // id -> member ranks; 0 is every rank
  int32_t next_process_set_ = 1;
  std::set<int32_t> removed_sets_;
  std::vector<std::string> departures_;  // per rank: how it left, for error messages
  struct Cancelled {
    std::vector<bool> owed;  // the ranks that were late for it
    std::string error;
  };
  std::unordered_map<std::string, Cancelled> cancelled_;  // stalled tensors still owed by a rank
  // Per group, the members each rank has submitted of its current instance of the group (0
  // again once it has submitted all of them).
  std::unordered_map<std::string, std::vector<int32_t>> group_members_seen_;
  struct FailedGroup {
    std::vector<int32_t> owed;  // per rank, the members it has yet to submit
    std::string error;
  };
  std::unordered_map<std::string, FailedGroup> failed_groups_;
};

}  // namespace mpirep
