#include "coordinator.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "compare_requests.h"

namespace mpirep {

Coordinator::Coordinator(int size, ProcessSets& sets)
    : size_(size), sets_(sets), departed_(size), joined_(size, false) {}

const Request& Coordinator::AnyRequest(const Pending& p) const {
  return p.by_rank[std::find(p.submitted.begin(), p.submitted.end(), true) - p.submitted.begin()];
}

void Coordinator::Submit(const Request& request, Clock::time_point now) {
  if (std::optional<Status> owed = owed_.CollectTensor(request)) return RejectOnArrival(request, *owed);
  CountGroupMember(request);
  if (std::optional<Status> owed = owed_.CollectGroupMember(request)) return RejectOnArrival(request, *owed);
  const std::vector<int>* members = removed_sets_.count(request.process_set) ? nullptr : sets_.Find(request.process_set);
  if (!members) {
    // A set removed after the request was made: a cached tensor's request, sent late
    const std::string id = std::to_string(request.process_set);
    const std::string why = removed_sets_.count(request.process_set) ? "its process set " + id + " was removed"
                                                                      : "unknown process set " + id;
    return RejectOnArrival(request, Status::Error(StatusCode::INVALID_ARGUMENT, "tensor '" + request.name + "': " + why));
  }
  auto [it, inserted] = pending_.try_emplace(request.name);
  Pending& p = it->second;
  if (inserted) {
    p.state = Advance(p.state, AgreementEvent::kFirstRequest);
    p.members = *members;
    p.by_rank.resize(size_);
    p.submitted.assign(size_, false);
    p.first_seen = now;
    p.last_warned = now;
  }
  p.by_rank[request.rank] = request;
  p.submitted[request.rank] = true;
  for (int r : p.members) {
    if (departed_[r] && !p.submitted[r]) {
      return Fail(request.name, AgreementEvent::kMemberDeparted, StatusCode::SHUT_DOWN,
                  "tensor '" + request.name + "' cannot run: " + *departed_[r]);
    }
  }
  if (Traits(request.collective).joins()) {
    Joined(request.rank, now);
  } else if (AllSubmitted(p)) {
    MarkReady(request.name, {request.rank, now});
  }
}

bool Coordinator::AllSubmitted(const Pending& p) const {
  const bool is_join = Traits(AnyRequest(p).collective).joins();  // join needs every rank
  return std::all_of(p.members.begin(), p.members.end(),
                     [&](int r) { return p.submitted[r] || (joined_[r] && !is_join); });
}

void Coordinator::MarkReady(const std::string& name, const Arrival& last) {
  auto it = pending_.find(name);
  it->second.state = Advance(it->second.state, AgreementEvent::kLastMemberArrived);
  bool group_sizes_differ = false;
  Response decided = Decide(name, it->second, &group_sizes_differ);
  const Request& any = AnyRequest(it->second);
  decided.bytes = TensorBytes(any.dtype, any.shape);
  decided.last_arrivals = {last};
  const Pending done = std::move(it->second);
  pending_.erase(it);
  ready_.push_back(std::move(decided));
  if (group_sizes_differ) FailGroup(AnyRequest(done).group, done, std::string(ready_.back().error));
}

void Coordinator::Joined(int rank, Clock::time_point now) {
  joined_[rank] = true;
  last_joined_ = rank;
  std::vector<std::string> now_complete;
  std::string join_name;  // set once every rank has joined
  for (const auto& [name, p] : pending_) {
    if (!AllSubmitted(p)) continue;
    if (p.submitted[rank] && Traits(p.by_rank[rank].collective).joins()) {
      join_name = name;
    } else {
      now_complete.push_back(name);
    }
  }
  std::sort(now_complete.begin(), now_complete.end());  // a deterministic order
  for (const std::string& name : now_complete) MarkReady(name, {rank, now});
  if (!join_name.empty()) {  // last, after everything the joined ranks still had in flight
    MarkReady(join_name, {rank, now});
    joined_.assign(size_, false);
  }
}

// The requests of the ranks that submitted `name` (ranks that joined did not) decide it.
Response Coordinator::Decide(const std::string& name, const Pending& p, bool* group_sizes_differ) {
  std::vector<const Request*> requests;
  for (int r : p.members) {
    if (p.submitted[r]) requests.push_back(&p.by_rank[r]);
  }
  Response response = CompareRequests(name, requests, group_sizes_differ);
  const Request& first = *requests[0];
  const CollectiveTraits& traits = Traits(first.collective);
  if (traits.changes_sets()) {
    if (response.kind == Response::Kind::EXECUTE) DecideProcessSetChange(name, first, &response);
    return response;
  }
  if (response.kind != Response::Kind::EXECUTE) return response;
  std::vector<int> joined;
  for (int r : p.members) {
    if (!p.submitted[r]) joined.push_back(r);
  }
  auto unsupported = [&](const std::string& why) {
    response.kind = Response::Kind::ERROR;
    response.error_code = StatusCode::UNSUPPORTED;
    response.error = "tensor '" + name + "': " + why;
  };
  const char* what = CollectiveName(first.collective);
  if (!joined.empty() && traits.joined == collective_traits::kRefuses) {
    unsupported(std::string(what) + " cannot run while rank" + std::string(joined.size() > 1 ? "s " : " ") + RankList(joined) +
                " have joined");
  } else if (traits.rooted() && !p.submitted[p.members[first.root]]) {
    unsupported(std::string(what) + " from root rank " + std::to_string(first.root) + ", which has joined");
  } else if (traits.ragged() && !traits.splits()) {  // each rank's rows, which every rank gathers
    for (int r : p.members) {
      response.first_dims.push_back(p.submitted[r] && !p.by_rank[r].shape.empty() ? p.by_rank[r].shape[0] : 0);
    }
  } else if (traits.splits()) {
    for (const Request* r : requests) {
      response.split_matrix.insert(response.split_matrix.end(), r->splits.begin(), r->splits.end());
    }
  } else if (traits.joins()) {
    response.last_joined_rank = last_joined_;
  }
  // The response cache's rule: a collective is cached when it ran with every member submitting
  // it (none stood in). A group's members are counted per rank (CountGroupMember); rank 0 counts
  // those that run from the cache itself, from its own requests, so only when it is in the
  // group's set.
  const bool countable = first.group.empty() || std::count(p.members.begin(), p.members.end(), 0) > 0;
  response.cacheable = response.kind == Response::Kind::EXECUTE && joined.empty() && traits.cached() && countable;
  return response;
}

// Creating a set takes the registry's next id; removing one fails what still waits in it. The
// registry's sets change when the rounds accept the response, on every rank at the same point.
void Coordinator::DecideProcessSetChange(const std::string& name, const Request& request, Response* response) {
  auto reject = [&](const std::string& why) {
    response->kind = Response::Kind::ERROR;
    response->error_code = StatusCode::INVALID_ARGUMENT;
    response->error = "'" + name + "': " + why;
  };
  if (Traits(request.collective).adds_set()) {
    response->new_set_id = sets_.NewId();
    response->new_set_ranks = request.new_set_ranks;
    return;
  }
  const int32_t id = request.removed_set;
  if (id == 0) return reject("the process set of all ranks cannot be removed");
  if (!sets_.Find(id) || removed_sets_.count(id)) return reject("unknown process set " + std::to_string(id));
  removed_sets_.insert(id);
  response->removed_set = id;
  std::vector<std::string> orphans;
  for (const auto& [other, p] : pending_) {
    if (AnyRequest(p).process_set == id) orphans.push_back(other);
  }
  std::sort(orphans.begin(), orphans.end());
  for (const std::string& orphan : orphans) {
    Fail(orphan, AgreementEvent::kSetRemoved, StatusCode::INVALID_ARGUMENT,
         "tensor '" + orphan + "': its process set " + std::to_string(id) + " was removed");
  }
}

void Coordinator::Fail(const std::string& name, AgreementEvent event, StatusCode code, const std::string& why) {
  auto it = pending_.find(name);
  Advance(it->second.state, event);
  Response response;
  response.kind = Response::Kind::ERROR;
  response.names = {name};
  response.error_code = code;
  response.error = why;
  for (int r = 0; r < size_; ++r) {
    if (it->second.submitted[r]) response.error_ranks.push_back(r);
  }
  pending_.erase(it);
  ready_.push_back(std::move(response));
}

void Coordinator::RejectOnArrival(const Request& request, const Status& status) {
  Advance(AgreementState::kNone, AgreementEvent::kOwedRequest);
  Response response;
  response.kind = Response::Kind::ERROR;
  response.names = {request.name};
  response.error_code = status.code;
  response.error = status.message;
  response.error_ranks = {request.rank};
  ready_.push_back(std::move(response));
}

void Coordinator::CountCachedGroupMember(const Request& own) {
  if (own.group.empty()) return;
  Request member = own;
  for (int r : *sets_.Find(own.process_set)) {
    member.rank = r;
    CountGroupMember(member);
  }
}

void Coordinator::CountGroupMember(const Request& request) {
  if (request.group.empty() || request.group_size <= 0) return;
  auto [it, inserted] = group_members_seen_.try_emplace(request.group, size_, 0);
  int32_t& seen = it->second[request.rank];
  if (++seen == request.group_size) seen = 0;
  if (std::all_of(it->second.begin(), it->second.end(), [](int32_t n) { return n == 0; })) {
    group_members_seen_.erase(it);
  }
}

void Coordinator::FailGroup(const std::string& group, const Pending& decided, const std::string& error) {
  OwedRequests::Debt debt{std::vector<int32_t>(size_, 0), StatusCode::MISMATCH, error};
  auto seen = group_members_seen_.find(group);
  for (int r = 0; r < size_; ++r) {
    const int32_t got = seen == group_members_seen_.end() ? 0 : seen->second[r];
    if (decided.submitted[r] && got > 0) debt.owed[r] = decided.by_rank[r].group_size - got;
  }
  std::vector<std::string> members;
  for (const auto& [name, p] : pending_) {
    if (AnyRequest(p).group == group) members.push_back(name);
  }
  std::sort(members.begin(), members.end());  // a deterministic order
  for (const std::string& name : members) Fail(name, AgreementEvent::kGroupFailed, StatusCode::MISMATCH, error);
  if (std::any_of(debt.owed.begin(), debt.owed.end(), [](int32_t n) { return n > 0; })) {
    owed_.OweGroupMembers(group, std::move(debt));
  }
}

void Coordinator::RankShutDown(int rank, const std::string& reason) {
  // Python passes no reason on an explicit shutdown() or at exit (sys.exit, end of script),
  // where the exit status is known only to the launcher.
  departed_[rank] = reason.empty() ? "rank " + std::to_string(rank) +
                                         " shut down (it called shutdown() or its process exited)"
                                   : "rank " + std::to_string(rank) + " failed: " + reason;
  std::vector<std::string> doomed;
  for (const auto& [name, p] : pending_) {
    if (!p.submitted[rank] && std::count(p.members.begin(), p.members.end(), rank)) doomed.push_back(name);
  }
  std::sort(doomed.begin(), doomed.end());  // a deterministic order, unlike the hash map's
  for (const std::string& name : doomed) {
    Fail(name, AgreementEvent::kMemberDeparted, StatusCode::SHUT_DOWN, "tensor '" + name + "' cannot run: " + *departed_[rank]);
  }
}

bool Coordinator::AllShutDown() const {
  return std::all_of(departed_.begin(), departed_.end(), [](const auto& d) { return d.has_value(); });
}

std::vector<Response> Coordinator::TakeReady() {
  std::vector<Response> out;
  out.swap(ready_);
  return out;
}

std::vector<FlightDump::Waiting> Coordinator::Waiting() const {
  std::vector<FlightDump::Waiting> out;
  for (const auto& [name, p] : pending_) {
    FlightDump::Waiting& w = out.emplace_back();
    w.name = name;
    w.collective = AnyRequest(p).collective;
    for (int r : p.members) (p.submitted[r] ? w.submitted_by : w.missing).push_back(r);
    w.since = p.first_seen;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::string Coordinator::MissingRanks(const Pending& p) const {
  std::vector<int> have, missing;
  for (int r : p.members) (p.submitted[r] ? have : missing).push_back(r);
  return "submitted by rank" + std::string(have.size() > 1 ? "s " : " ") + RankList(have) + "; missing rank" +
         (missing.size() > 1 ? "s " : " ") + RankList(missing);
}

std::vector<std::string> Coordinator::StallWarnings(Clock::time_point now, Clock::duration after) {
  std::map<std::string, std::string> lines;  // sorted by name for a stable report
  for (auto& [name, p] : pending_) {
    if (now - p.last_warned >= after) {  // last_warned starts at first_seen
      p.last_warned = now;
      lines[name] = Describe(name, p, now);
    }
  }
  std::vector<std::string> out;
  for (auto& [name, line] : lines) out.push_back(std::move(line));
  return out;
}

std::string Coordinator::CancelStalled(Clock::time_point now, Clock::duration after) {
  std::map<std::string, std::string> stalled;  // sorted by name: the same text on every rank
  for (const auto& [name, p] : pending_) {
    if (now - p.first_seen >= after) stalled[name] = Describe(name, p, now);
  }
  if (stalled.empty()) return "";
  // A deadlock is cancelled whole: a tensor waiting in a cycle with a stalled one (each side
  // waits for the other) goes with it, however long it has waited, so that both sides get the
  // same error at once and neither is left paired with the other's next step.
  size_t cancelled = 0;
  while (cancelled != stalled.size()) {
    cancelled = stalled.size();
    for (const auto& [name, p] : pending_) {
      if (stalled.count(name)) continue;
      for (const auto& [other, line] : stalled) {
        if (Deadlocked(p, pending_.at(other))) {
          stalled[name] = Describe(name, p, now);
          break;
        }
      }
    }
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(after).count());
  std::string error = std::string("collectives waited longer than the stall shutdown time (") + seconds +
                      " s) and were cancelled on every rank:";
  for (const auto& [name, line] : stalled) error += "\n  " + line;
  std::map<std::string, std::vector<int32_t>> late;  // decided before Fail forgets any of them
  for (const auto& [name, line] : stalled) {
    const Pending& p = pending_.at(name);
    std::vector<int32_t>& owed = late[name];
    owed.assign(size_, 0);
    for (int r : p.members) {
      owed[r] = !p.submitted[r] && !joined_[r] && !departed_[r] && !WaitsOnSubmitterOf(r, p);
    }
  }
  for (auto& [name, owed] : late) {
    if (std::any_of(owed.begin(), owed.end(), [](int32_t n) { return n > 0; })) {
      owed_.OweTensor(name, {std::move(owed), StatusCode::STALLED, error});
    }
    Fail(name, AgreementEvent::kStalled, StatusCode::STALLED, error);
  }
  return error;
}

bool Coordinator::Deadlocked(const Pending& a, const Pending& b) const {
  // whether `waiter` misses a rank that submitted `other`
  auto waits_for = [](const Pending& waiter, const Pending& other) {
    for (int r : waiter.members) {
      if (other.submitted[r] && !waiter.submitted[r]) return true;
    }
    return false;
  };
  return waits_for(a, b) && waits_for(b, a);
}

bool Coordinator::WaitsOnSubmitterOf(int rank, const Pending& stalled) const {
  for (const auto& [name, p] : pending_) {
    if (!p.submitted[rank]) continue;
    for (int r : p.members) {
      if (stalled.submitted[r] && !p.submitted[r]) return true;
    }
  }
  return false;
}

std::string Coordinator::Describe(const std::string& name, const Pending& p, Clock::time_point now) const {
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - p.first_seen).count();
  return "tensor '" + name + "' (" + CollectiveName(AnyRequest(p).collective) + ") waiting " + std::to_string(waited) +
         " s: " + MissingRanks(p);
}

}  // namespace mpirep
