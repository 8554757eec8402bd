#include "negotiator.h"

#include <algorithm>
#include <stdexcept>

#include "fusion.h"

namespace mpirep {
namespace {

constexpr int kCoordinator = 0;
constexpr uint64_t kHold = 1;  // in rank 0's word
// Rank 0 looks for stalls, and reports them, this often.
constexpr auto kStallCheckInterval = std::chrono::seconds(1);
// A cached tensor submitted on some ranks waits this long for the others before rank 0 demotes
// it to the full negotiation, which can name the missing ranks (shorter if a stall time is).
constexpr auto kDemoteAfter = std::chrono::seconds(1);

Coordinator::Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Coordinator::Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

Negotiator::Negotiator(int rank, int size, const Config& config)
    : rank_(rank),
      size_(size),
      config_(config),
      cache_(config.cache_capacity),
      base_(config.cache_capacity, size),
      round_(config.cache_capacity, size),
      hit_at_(config.cache_capacity, nullptr) {
  if (rank == kCoordinator) {
    partial_.assign(base_.position_words(), 0);
    partial_since_.resize(config.cache_capacity);
    coordinator_ = std::make_unique<Coordinator>(size);
    last_stall_check_ = Clock::now();
  }
}

void Negotiator::Submit(const Request& request) {
  if (request.collective == Collective::JOIN) join_pending_ = true;
  fresh_.push_back(&pending_.emplace(request.name, Pending{&request}).first->second);
}

void Negotiator::ShutDown(const std::string& reason) {
  if (shut_down_) return;
  shut_down_ = true;
  shutdown_reason_ = reason;
}

bool Negotiator::Busy() const {
  if (!pending_.empty() || (shut_down_ && !shutdown_announced_)) return true;
  return coordinator_ && (coordinator_->HasPending() || coordinator_->HasReady() || !demote_.empty() || proposed_ ||
                          (coordinator_->AllShutDown() && !stop_sent_));
}

void Negotiator::Place(Pending& pending) {
  const int64_t position = cache_.Find(pending.request->name);
  if (hits_allowed_ && position >= 0 && cache_.Repeats(position, *pending.request)) {
    pending.hit = position;
    hit_at_[position] = &pending;
    base_.SetReady(position);
    base_.SetSubmitted(position);
  } else {
    unsent_.push_back(pending.request->name);
  }
}

void Negotiator::Unhit(Pending& pending) {
  base_.ClearReady(pending.hit);
  base_.ClearSubmitted(pending.hit);
  hit_at_[pending.hit] = nullptr;
  pending.hit = -1;
  unsent_.push_back(pending.request->name);
}

void Negotiator::EvictEverywhere(int64_t position) {
  if (hit_at_[position]) {
    Unhit(*hit_at_[position]);
  } else if (!cache_.Member(position)) {
    base_.ClearReady(position);  // it stood for "not mine to wait for"
  }
  cache_.Evict(position);
  if (coordinator_) partial_[position / 64] &= ~(uint64_t{1} << (position % 64));
}

RoundWords& Negotiator::Contribute(Clock::time_point now) {
  if (coordinator_) CheckStalls(now);
  for (Pending* pending : fresh_) Place(*pending);
  fresh_.clear();
  round_ = base_;
  sending_.swap(unsent_);
  unsent_.clear();
  // A request for a cached name evicts it everywhere, so that no rank's hit on it waits for
  // this rank, whose request waits at rank 0. A request for a member of a group evicts the
  // group's other members too: if the ranks disagree about the group's size, rank 0 fails
  // every member at once, which it can only do for members it has requests for.
  for (const std::string& name : sending_) {
    const int64_t position = cache_.Find(name);
    if (position >= 0) round_.SetEvict(position);
    auto pending = pending_.find(name);
    if (pending == pending_.end() || pending->second.request->group.empty()) continue;
    for (int64_t member : cache_.PositionsOfGroup(pending->second.request->group)) round_.SetEvict(member);
  }
  counts_.requests_sent += static_cast<int64_t>(sending_.size());
  if (join_pending_) round_.SetFlag(kJoinPending);
  if (shut_down_) round_.SetFlag(kShutDown);
  bool sends = !sending_.empty() || (shut_down_ && !shutdown_announced_);
  if (coordinator_) {
    for (int64_t position : demote_) {
      if (!cache_.Occupied(position)) continue;
      round_.SetEvict(position);
      demoted_since_[cache_.response(position).names[0]] = partial_since_[position];
    }
    demote_.clear();
    // Hold ready tensors back, for fusion, while others are incomplete (cycle_time_ms).
    const bool incomplete = coordinator_->HasPending() ||
                            std::any_of(partial_.begin(), partial_.end(), [](uint64_t w) { return w != 0; });
    if (config_.cycle_time_ms <= 0 || !incomplete) {
      holding_since_.reset();
    } else if (!holding_since_) {
      holding_since_ = now;
    }
    hold_ = holding_since_ && now - *holding_since_ < Seconds(config_.cycle_time_ms / 1000);
    round_.SetRank0Word(hold_ ? kHold : 0);
    sends |= CoordinatorHasNews(now) || proposed_;
  }
  if (sends) round_.SetSendsRequests(rank_);
  round_.SetFingerprint(cache_.fingerprint());
  ++counts_.rounds;
  return round_;
}

std::vector<Response> Negotiator::Agree(const RoundWords& agreed, Clock::time_point now) {
  if (!agreed.FingerprintsAgree()) {
    throw std::runtime_error("the ranks' response caches differ (an internal error in mpirep)");
  }
  hold_ = (agreed.Rank0Word() & kHold) != 0;
  std::vector<const Response*> ready;
  ready.reserve(pending_.size());
  for (int64_t w = 0; !hold_ && w < agreed.position_words(); ++w) {
    ForEachBit(agreed.ReadyEverywhere(w), w, [&](int64_t position) {
      cache_.Touch(position);
      ready.push_back(&cache_.response(position));
      if (!cache_.Member(position)) return;
      if (coordinator_) coordinator_->CountCachedGroupMember(*cache_.own(position));
      Pending* hit = hit_at_[position];
      if (!hit) throw std::logic_error("mpirep: a cached tensor ran without this rank");
      base_.ClearReady(position);
      base_.ClearSubmitted(position);
      hit_at_[position] = nullptr;
      pending_.erase(hit->request->name);
      ++counts_.cached_tensors;
    });
  }
  // Every rank plans the same batches from the same list; each runs those of its sets. Planned
  // before the evictions below, which may free an entry that runs in this round.
  std::vector<Response> batches = PlanFusion(ready, config_.fusion_threshold, SoloBytes(), /*with_shapes=*/false);
  for (int64_t w = 0; w < agreed.position_words(); ++w) {
    ForEachBit(agreed.Evicted(w), w, [&](int64_t position) {
      if (cache_.Occupied(position)) EvictEverywhere(position);
    });
  }
  const bool hits_allowed = !agreed.Flag(kJoinPending) && !agreed.Flag(kShutDown);
  if (hits_allowed_ && !hits_allowed) {
    for (Pending* hit : hit_at_) {
      if (hit) Unhit(*hit);
    }
  }
  hits_allowed_ = hits_allowed;
  slow_phase_ = agreed.AnySendsRequests();
  sends_requests_ = agreed.SendsRequests(rank_);
  if (slow_phase_) ++counts_.slow_rounds;
  if (coordinator_) {
    senders_.clear();
    for (int r = 0; r < size_; ++r) {
      if (agreed.SendsRequests(r)) senders_.push_back(r);
    }
    TrackPartial(agreed, now);
    if (!batches.empty()) holding_since_.reset();
  }
  return batches;
}

RequestList Negotiator::TakeRequests() {
  RequestList list;
  for (const std::string& name : sending_) list.requests.push_back(*pending_.at(name).request);
  sending_.clear();
  if (shut_down_ && !shutdown_announced_) {
    list.shutdown = true;
    list.shutdown_reason = shutdown_reason_;
    shutdown_announced_ = true;
  }
  return list;
}

void Negotiator::Receive(int rank, const RequestList& list, Clock::time_point now) {
  for (const Request& request : list.requests) {
    auto demoted = demoted_since_.find(request.name);
    coordinator_->Submit(request, demoted == demoted_since_.end() ? now : std::min(now, demoted->second));
  }
  counts_.requests_received += static_cast<int64_t>(list.requests.size());
  if (list.shutdown) coordinator_->RankShutDown(rank, list.shutdown_reason);
}

ResponseList Negotiator::Decide(Clock::time_point) {
  demoted_since_.clear();
  ResponseList list;
  if (!hold_ || !coordinator_->HasPending()) {
    list.responses = PlanFusion(coordinator_->TakeReady(), config_.fusion_threshold, SoloBytes());
  }
  if (!list.responses.empty()) holding_since_.reset();
  list.retune.swap(proposed_);
  if (coordinator_->AllShutDown() && !coordinator_->HasPending() && !coordinator_->HasReady() && !stop_sent_) {
    Response stop;
    stop.kind = Response::Kind::STOP;
    list.responses.push_back(stop);
    stop_sent_ = true;
  }
  return list;
}

void Negotiator::Ran(const Response& response) {
  if (response.kind == Response::Kind::STOP) return;
  if (response.kind == Response::Kind::ERROR) {
    const auto& ranks = response.error_ranks;
    if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), rank_) == ranks.end()) return;
    for (const std::string& name : response.names) pending_.erase(name);
    return;
  }
  if (response.collective == Collective::JOIN) join_pending_ = false;
  if (response.collective == Collective::REMOVE_PROCESS_SET) {
    for (int64_t position : cache_.PositionsOf(response.removed_set)) EvictEverywhere(position);
  }
  for (size_t i = 0; i < response.names.size(); ++i) {
    const std::string& name = response.names[i];
    auto it = pending_.find(name);
    if (it != pending_.end() && it->second.request->process_set != response.process_set) it = pending_.end();
    if (it != pending_.end() && it->second.hit >= 0) {
      throw std::logic_error("mpirep: '" + name + "' ran through rank 0 while this rank had it from the cache");
    }
    if (response.cacheable && cache_.capacity() > 0) {
      const int64_t cached = cache_.Find(name);
      if (cached >= 0) EvictEverywhere(cached);
      if (cache_.Full()) EvictEverywhere(cache_.LeastRecentlyUsed());
      const bool member = it != pending_.end();
      const int64_t position = cache_.Insert(response, i, member ? it->second.request : nullptr);
      if (!member) base_.SetReady(position);  // not this rank's to wait for
    }
    if (it != pending_.end()) pending_.erase(it);
  }
}

std::vector<std::string> Negotiator::TakeReports() {
  std::vector<std::string> out;
  out.swap(reports_);
  return out;
}

Negotiator::Clock::duration Negotiator::DemoteAfter() const {
  Clock::duration after = kDemoteAfter;
  for (double s : {config_.stall_check_time_seconds, config_.stall_shutdown_time_seconds}) {
    if (s > 0) after = std::min(after, Seconds(s));
  }
  return after;
}

void Negotiator::CheckStalls(Clock::time_point now) {
  if (config_.stall_check_time_seconds <= 0 || now - last_stall_check_ < kStallCheckInterval) return;
  last_stall_check_ = now;
  for (const std::string& line : coordinator_->StallWarnings(now, Seconds(config_.stall_check_time_seconds))) {
    reports_.push_back("WARNING: stalled collective: " + line);
  }
  if (config_.stall_shutdown_time_seconds <= 0) return;
  const std::string error = coordinator_->CancelStalled(now, Seconds(config_.stall_shutdown_time_seconds));
  if (!error.empty()) reports_.push_back("ERROR: " + error);
}

// Rank 0 notes since when each cached tensor has been submitted on some ranks but not all, and
// demotes those that waited too long.
void Negotiator::TrackPartial(const RoundWords& agreed, Clock::time_point now) {
  for (int64_t w = 0; w < agreed.position_words(); ++w) {
    // Ready everywhere is complete even while held: counting it as partial would keep rank 0
    // holding it until the cycle time ran out, or demote it after a second.
    uint64_t partial = agreed.SubmittedSomewhere(w) & ~agreed.ReadyEverywhere(w);
    ForEachBit(partial, w, [&](int64_t position) {
      if (!cache_.Occupied(position)) {
        partial &= ~(uint64_t{1} << (position % 64));
      } else if (!(partial_[w] >> (position % 64) & 1)) {
        partial_since_[position] = now;
      } else if (now - partial_since_[position] >= DemoteAfter()) {
        demote_.push_back(position);  // evicted next round, which clears its bit
      }
    });
    partial_[w] = partial;
  }
}

bool Negotiator::CoordinatorHasNews(Clock::time_point) {
  return (coordinator_->HasReady() && (!hold_ || !coordinator_->HasPending())) ||
         (coordinator_->AllShutDown() && !coordinator_->HasPending() && !stop_sent_);
}

}  // namespace mpirep
