#include "coordinator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace mpirep {
namespace {

std::string FormatDouble(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// "[2, 3] on ranks 0, 2; [3] on rank 1": every distinct value with the ranks that gave it.
std::string ByRank(const std::vector<std::pair<int, std::string>>& values) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& [rank, value] : values) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
    if (it == groups.end()) {
      groups.push_back({value, {rank}});
    } else {
      it->second.push_back(rank);
    }
  }
  std::ostringstream out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out << (g ? "; " : "") << groups[g].first << " on rank" << (groups[g].second.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < groups[g].second.size(); ++i) out << (i ? ", " : "") << groups[g].second[i];
  }
  return out.str();
}

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

// The dimensions ranks must agree on: all of them, except the first for collectives whose
// first dimension may differ per rank.
std::string ComparableShape(const Request& r) {
  if (r.collective == Collective::ALLGATHER || r.collective == Collective::ALLTOALL) {
    Shape rest(r.shape.begin() + std::min<size_t>(1, r.shape.size()), r.shape.end());
    return "[*" + ShapeString(rest).substr(1) + " (rank " + std::to_string(r.shape.size()) + ")";
  }
  return ShapeString(r.shape);
}

}  // namespace

Coordinator::Coordinator(int size)
    : size_(size), shut_down_(size, false), joined_(size, false), departures_(size) {
  std::vector<int> everyone(size);
  for (int r = 0; r < size; ++r) everyone[r] = r;
  process_sets_[0] = everyone;
}

const Request& Coordinator::AnyRequest(const Pending& p) const {
  return p.by_rank[std::find(p.submitted.begin(), p.submitted.end(), true) - p.submitted.begin()];
}

void Coordinator::Submit(const Request& request, Clock::time_point now) {
  if (RejectLate(request)) return;
  CountGroupMember(request);
  if (RejectFailedGroupMember(request)) return;
  auto set = process_sets_.find(request.process_set);
  if (set == process_sets_.end()) {
    // A set removed after the request was made: a cached tensor's request, sent late
    const std::string id = std::to_string(request.process_set);
    const std::string why = removed_sets_.count(request.process_set) ? "its process set " + id + " was removed"
                                                                      : "unknown process set " + id;
    FailOn({request.rank}, request.name, StatusCode::INVALID_ARGUMENT, "tensor '" + request.name + "': " + why);
    return;
  }
  auto [it, inserted] = pending_.try_emplace(request.name);
  Pending& p = it->second;
  if (inserted) {
    p.members = set->second;
    p.by_rank.resize(size_);
    p.submitted.assign(size_, false);
    p.first_seen = now;
    p.last_warned = now;
  }
  p.by_rank[request.rank] = request;
  p.submitted[request.rank] = true;
  for (int r : p.members) {
    if (shut_down_[r] && !p.submitted[r]) {
      Fail(request.name, StatusCode::SHUT_DOWN, "tensor '" + request.name + "' cannot run: " + departures_[r]);
      return;
    }
  }
  if (request.collective == Collective::JOIN) {
    Joined(request.rank, now);
  } else if (AllSubmitted(p)) {
    MarkReady(request.name, {request.rank, now});
  }
}

bool Coordinator::AllSubmitted(const Pending& p) const {
  const bool is_join = AnyRequest(p).collective == Collective::JOIN;  // join needs every rank
  return std::all_of(p.members.begin(), p.members.end(),
                     [&](int r) { return p.submitted[r] || (joined_[r] && !is_join); });
}

void Coordinator::MarkReady(const std::string& name, const Arrival& last) {
  auto it = pending_.find(name);
  bool group_sizes_differ = false;
  Response decided = Decide(name, it->second, &group_sizes_differ);
  const Request& any = AnyRequest(it->second);
  decided.bytes = NumElements(any.shape) * static_cast<int64_t>(ElementSize(any.dtype));
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
    if (p.submitted[rank] && p.by_rank[rank].collective == Collective::JOIN) {
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

// Compares the requests of the ranks that submitted `name` (ranks that joined did not).
Response Coordinator::Decide(const std::string& name, const Pending& p, bool* group_sizes_differ) {
  std::vector<const Request*> requests;
  for (int r : p.members) {
    if (p.submitted[r]) requests.push_back(&p.by_rank[r]);
  }
  const Request& first = *requests[0];
  Response response;
  response.collective = first.collective;
  response.process_set = first.process_set;
  response.names = {name};
  response.dtype = first.dtype;
  response.op = first.op;
  response.root = first.root;
  response.prescale = first.prescale;
  response.postscale = first.postscale;
  response.shapes = {first.shape};

  auto check = [&](const char* what, auto describe) -> bool {
    std::vector<std::pair<int, std::string>> values;
    for (const Request* r : requests) values.emplace_back(r->rank, describe(*r));
    if (std::all_of(values.begin(), values.end(), [&](const auto& v) { return v.second == values[0].second; })) {
      return true;
    }
    response.kind = Response::Kind::ERROR;
    response.error_code = StatusCode::MISMATCH;
    response.error = std::string("mismatched ") + what + " for tensor '" + name + "': " + ByRank(values);
    return false;
  };
  const Collective c = first.collective;
  const bool reduces = c == Collective::ALLREDUCE || c == Collective::REDUCESCATTER;
  bool ok = check("collective operations", [](const Request& r) { return std::string(CollectiveName(r.collective)); }) &&
            check("data types", [](const Request& r) { return std::string(DataTypeName(r.dtype)); }) &&
            check("shapes", ComparableShape);
  if (ok && !check("group sizes", [](const Request& r) { return std::to_string(r.group_size); })) {
    ok = false;
    *group_sizes_differ = !first.group.empty();
  }
  if (ok && reduces) {
    ok = check("reduction ops", [](const Request& r) { return std::string(ReduceOpName(r.op)); }) &&
         check("prescale factors", [](const Request& r) { return FormatDouble(r.prescale); }) &&
         check("postscale factors", [](const Request& r) { return FormatDouble(r.postscale); });
  }
  if (ok && c == Collective::BROADCAST) {
    ok = check("root ranks", [](const Request& r) { return std::to_string(r.root); });
  }
  if (ok && (c == Collective::ADD_PROCESS_SET || c == Collective::REMOVE_PROCESS_SET)) {
    ok = check("process sets", [](const Request& r) {
      return r.collective == Collective::ADD_PROCESS_SET ? ShapeString(r.new_set_ranks) : std::to_string(r.removed_set);
    });
    if (ok) DecideProcessSetChange(name, first, &response);
    return response;
  }
  std::vector<int> joined;
  for (int r : p.members) {
    if (!p.submitted[r]) joined.push_back(r);
  }
  auto unsupported = [&](const std::string& why) {
    response.kind = Response::Kind::ERROR;
    response.error_code = StatusCode::UNSUPPORTED;
    response.error = "tensor '" + name + "': " + why;
  };
  if (ok && !joined.empty() && c == Collective::ALLTOALL) {
    unsupported("alltoall cannot run while rank" + std::string(joined.size() > 1 ? "s " : " ") +
                RankList(joined) + " have joined");
  } else if (ok && c == Collective::BROADCAST && !p.submitted[p.members[first.root]]) {
    unsupported("broadcast from root rank " + std::to_string(first.root) + ", which has joined");
  } else if (ok && c == Collective::ALLGATHER) {
    for (int r : p.members) {
      response.first_dims.push_back(p.submitted[r] && !p.by_rank[r].shape.empty() ? p.by_rank[r].shape[0] : 0);
    }
  } else if (ok && c == Collective::ALLTOALL) {
    for (const Request* r : requests) {
      response.split_matrix.insert(response.split_matrix.end(), r->splits.begin(), r->splits.end());
    }
  } else if (ok && c == Collective::JOIN) {
    response.last_joined_rank = last_joined_;
  }
  // A group's members are counted per rank (CountGroupMember); rank 0 counts those that run
  // from the cache itself, from its own requests, so only when it is in the group's set.
  const bool countable = first.group.empty() || std::count(p.members.begin(), p.members.end(), 0) > 0;
  response.cacheable = ok && joined.empty() && c != Collective::JOIN && c != Collective::BARRIER && countable;
  return response;
}

// Creating a set gives it the next id; removing one fails what still waits in it.
void Coordinator::DecideProcessSetChange(const std::string& name, const Request& request, Response* response) {
  auto reject = [&](const std::string& why) {
    response->kind = Response::Kind::ERROR;
    response->error_code = StatusCode::INVALID_ARGUMENT;
    response->error = "'" + name + "': " + why;
  };
  if (request.collective == Collective::ADD_PROCESS_SET) {
    const int32_t id = next_process_set_++;
    process_sets_[id].assign(request.new_set_ranks.begin(), request.new_set_ranks.end());
    response->new_set_id = id;
    response->new_set_ranks = request.new_set_ranks;
    return;
  }
  const int32_t id = request.removed_set;
  if (id == 0) return reject("the process set of all ranks cannot be removed");
  if (process_sets_.erase(id) == 0) return reject("unknown process set " + std::to_string(id));
  removed_sets_.insert(id);
  response->removed_set = id;
  std::vector<std::string> orphans;
  for (const auto& [other, p] : pending_) {
    if (AnyRequest(p).process_set == id) orphans.push_back(other);
  }
  std::sort(orphans.begin(), orphans.end());
  for (const std::string& orphan : orphans) {
    Fail(orphan, StatusCode::INVALID_ARGUMENT, "tensor '" + orphan + "': its process set " + std::to_string(id) + " was removed");
  }
}

void Coordinator::Fail(const std::string& name, StatusCode code, const std::string& why) {
  auto it = pending_.find(name);
  std::vector<int64_t> submitters;
  for (int r = 0; r < size_; ++r) {
    if (it->second.submitted[r]) submitters.push_back(r);
  }
  FailOn(std::move(submitters), name, code, why);
  pending_.erase(it);
}

void Coordinator::FailOn(std::vector<int64_t> ranks, const std::string& name, StatusCode code,
                         const std::string& why) {
  Response response;
  response.kind = Response::Kind::ERROR;
  response.names = {name};
  response.error_code = code;
  response.error = why;
  response.error_ranks = std::move(ranks);
  ready_.push_back(std::move(response));
}

void Coordinator::CountCachedGroupMember(const Request& own) {
  if (own.group.empty()) return;
  Request member = own;
  for (int r : process_sets_.at(own.process_set)) {
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
  FailedGroup failed{std::vector<int32_t>(size_, 0), error};
  auto seen = group_members_seen_.find(group);
  for (int r = 0; r < size_; ++r) {
    const int32_t got = seen == group_members_seen_.end() ? 0 : seen->second[r];
    if (decided.submitted[r] && got > 0) failed.owed[r] = decided.by_rank[r].group_size - got;
  }
  std::vector<std::string> members;
  for (const auto& [name, p] : pending_) {
    if (AnyRequest(p).group == group) members.push_back(name);
  }
  std::sort(members.begin(), members.end());  // a deterministic order
  for (const std::string& name : members) Fail(name, StatusCode::MISMATCH, error);
  if (std::any_of(failed.owed.begin(), failed.owed.end(), [](int32_t n) { return n > 0; })) {
    failed_groups_[group] = std::move(failed);
  }
}

bool Coordinator::RejectFailedGroupMember(const Request& request) {
  auto it = failed_groups_.find(request.group);
  if (request.group.empty() || it == failed_groups_.end() || it->second.owed[request.rank] == 0) return false;
  FailOn({request.rank}, request.name, StatusCode::MISMATCH, it->second.error);
  --it->second.owed[request.rank];
  if (std::all_of(it->second.owed.begin(), it->second.owed.end(), [](int32_t n) { return n == 0; })) {
    failed_groups_.erase(it);
  }
  return true;
}

bool Coordinator::RejectLate(const Request& request) {
  auto it = cancelled_.find(request.name);
  if (it == cancelled_.end() || !it->second.owed[request.rank]) return false;
  FailOn({request.rank}, request.name, StatusCode::STALLED, it->second.error);
  it->second.owed[request.rank] = false;
  if (std::none_of(it->second.owed.begin(), it->second.owed.end(), [](bool b) { return b; })) cancelled_.erase(it);
  return true;
}

void Coordinator::RankShutDown(int rank, const std::string& reason) {
  shut_down_[rank] = true;
  // Python passes no reason on an explicit shutdown() or at exit (sys.exit, end of script),
  // where the exit status is known only to the launcher.
  departures_[rank] = reason.empty() ? "rank " + std::to_string(rank) +
                                           " shut down (it called shutdown() or its process exited)"
                                     : "rank " + std::to_string(rank) + " failed: " + reason;
  std::vector<std::string> doomed;
  for (const auto& [name, p] : pending_) {
    if (!p.submitted[rank] && std::count(p.members.begin(), p.members.end(), rank)) doomed.push_back(name);
  }
  std::sort(doomed.begin(), doomed.end());  // a deterministic order, unlike the hash map's
  for (const std::string& name : doomed) {
    Fail(name, StatusCode::SHUT_DOWN, "tensor '" + name + "' cannot run: " + departures_[rank]);
  }
}

bool Coordinator::AllShutDown() const {
  return std::all_of(shut_down_.begin(), shut_down_.end(), [](bool b) { return b; });
}

std::vector<Response> Coordinator::TakeReady() {
  std::vector<Response> out;
  out.swap(ready_);
  return out;
}

std::string Coordinator::MissingRanks(const Pending& p) const {
  std::vector<int> have, missing;
  for (int r : p.members) (p.submitted[r] ? have : missing).push_back(r);
  return "submitted by rank" + std::string(have.size() > 1 ? "s " : " ") + RankList(have) +
         "; missing rank" + (missing.size() > 1 ? "s " : " ") + RankList(missing);
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
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(after).count());
  std::string error = std::string("collectives waited longer than the stall shutdown time (") + seconds +
                      " s) and were cancelled on every rank:";
  for (const auto& [name, line] : stalled) error += "\n  " + line;
  std::map<std::string, std::vector<bool>> owed;  // decided before Fail forgets any of them
  for (const auto& [name, line] : stalled) {
    const Pending& p = pending_.at(name);
    std::vector<bool>& late = owed[name];
    late.assign(size_, false);
    for (int r : p.members) {
      late[r] = !p.submitted[r] && !joined_[r] && !shut_down_[r] && !WaitsOnSubmitterOf(r, p);
    }
  }
  for (auto& [name, late] : owed) {
    if (std::any_of(late.begin(), late.end(), [](bool b) { return b; })) {
      cancelled_[name] = Cancelled{std::move(late), error};
    }
    Fail(name, StatusCode::STALLED, error);
  }
  return error;
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
  return "tensor '" + name + "' (" + CollectiveName(AnyRequest(p).collective) + ") waiting " +
         std::to_string(waited) + " s: " + MissingRanks(p);
}

}  // namespace mpirep
