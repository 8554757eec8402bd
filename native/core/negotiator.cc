#include "negotiator.h"

#include <algorithm>
#include <stdexcept>

#include "fusion.h"

namespace mpirep {
namespace {

constexpr int kCoordinator = 0;

}  // namespace

Negotiator::Negotiator(int rank, int size, const Config& config, ProcessSets& sets)
    : rank_(rank),
      size_(size),
      config_(config),
      sets_(sets),
      cache_(config.cache_capacity),
      base_(config.cache_capacity, size),
      round_(config.cache_capacity, size),
      hit_at_(config.cache_capacity, nullptr) {
  if (rank == kCoordinator) leader_ = std::make_unique<RoundLeader>(size, config, sets);
}

void Negotiator::Submit(Operation& op) {
  if (Traits(op.request.collective).joins()) join_pending_ = true;
  fresh_.push_back(&pending_.emplace(op.request.name, Pending{&op}).first->second);
}

void Negotiator::ShutDown(const std::string& reason) {
  if (departure_ != Departure::kStaying) return;
  departure_ = Departure::kLeaving;
  shutdown_reason_ = reason;
}

bool Negotiator::Busy() const {
  return !pending_.empty() || departure_ == Departure::kLeaving || (leader_ && leader_->Busy());
}

void Negotiator::Reconfigure(const Config& config) {
  config_ = config;
  if (leader_) leader_->Reconfigure(config);
}

void Negotiator::Place(Pending& pending) {
  Operation& op = *pending.op;
  const int64_t position = cache_.Find(op.request.name);
  if (hits_allowed_ && position >= 0 && cache_.Repeats(position, op.request)) {
    op.state = Advance(op.state, TensorEvent::kCachedRepeat);
    pending.hit = position;
    hit_at_[position] = &pending;
    base_.SetReady(position);
    base_.SetSubmitted(position);
  } else {
    op.state = Advance(op.state, TensorEvent::kNeedsRankZero);
    unsent_.push_back(op.request.name);
  }
}

void Negotiator::Unhit(Pending& pending, TensorEvent why) {
  pending.op->state = Advance(pending.op->state, why);
  base_.ClearReady(pending.hit);
  base_.ClearSubmitted(pending.hit);
  hit_at_[pending.hit] = nullptr;
  pending.hit = -1;
  unsent_.push_back(pending.op->request.name);
}

void Negotiator::EvictEverywhere(int64_t position) {
  if (hit_at_[position]) {
    Unhit(*hit_at_[position], TensorEvent::kEvicted);
  } else if (!cache_.Member(position)) {
    base_.ClearReady(position);  // it stood for "not mine to wait for"
  }
  cache_.Evict(position);
  if (leader_) leader_->Forget(position);
}

RoundWords& Negotiator::Contribute(Clock::time_point now) {
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
    Operation& op = *pending_.at(name).op;
    op.state = Advance(op.state, TensorEvent::kSentToRankZero);
    const int64_t position = cache_.Find(name);
    if (position >= 0) round_.SetEvict(position);
    if (op.request.group.empty()) continue;
    for (int64_t member : cache_.PositionsOfGroup(op.request.group)) round_.SetEvict(member);
  }
  counts_.requests_sent += static_cast<int64_t>(sending_.size());
  if (join_pending_) round_.SetFlag(kJoinPending);
  if (departure_ != Departure::kStaying) round_.SetFlag(kShutDown);
  bool sends = !sending_.empty() || departure_ == Departure::kLeaving;
  if (leader_) leader_->Contribute(cache_, now, &round_, &sends);
  if (sends) round_.SetSendsRequests(rank_);
  round_.SetFingerprint(cache_.fingerprint());
  ++counts_.rounds;
  return round_;
}

std::vector<Response> Negotiator::Agree(const RoundWords& agreed, Clock::time_point now) {
  if (!agreed.FingerprintsAgree()) {
    throw std::runtime_error("the ranks' response caches differ (an internal error in mpirep)");
  }
  std::vector<const Response*> ready;
  ready.reserve(pending_.size());
  const bool held = HeldByRankZero(agreed);
  for (int64_t w = 0; !held && w < agreed.position_words(); ++w) {
    ForEachBit(agreed.ReadyEverywhere(w), w, [&](int64_t position) {
      cache_.Touch(position);
      if (!cache_.Member(position)) return;  // other ranks' set: its bit was "not mine to wait for"
      if (leader_) leader_->CountCachedGroupMember(*cache_.own(position));
      Pending* hit = hit_at_[position];
      if (!hit) throw std::logic_error("mpirep: a cached tensor ran without this rank");
      hit->op->state = Advance(hit->op->state, TensorEvent::kReadyEverywhere);
      ready.push_back(&cache_.response(position));
      base_.ClearReady(position);
      base_.ClearSubmitted(position);
      hit_at_[position] = nullptr;
      pending_.erase(hit->op->request.name);
      ++counts_.cached_tensors;
    });
  }
  // Every member of a set plans the same batches from the same list (fusion.h). Planned before
  // the evictions below, which may free an entry that runs in this round.
  std::vector<Response> batches = PlanFusion(ready, config_.fusion_threshold, config_.small_allreduce_bytes * size_,
                                             /*with_shapes=*/false);
  for (int64_t w = 0; w < agreed.position_words(); ++w) {
    ForEachBit(agreed.Evicted(w), w, [&](int64_t position) {
      if (cache_.Occupied(position)) EvictEverywhere(position);
    });
  }
  const bool hits_allowed = !agreed.Flag(kJoinPending) && !agreed.Flag(kShutDown);
  if (hits_allowed_ && !hits_allowed) {
    for (Pending* hit : hit_at_) {
      if (hit) Unhit(*hit, TensorEvent::kHitsSuspended);
    }
  }
  hits_allowed_ = hits_allowed;
  slow_phase_ = agreed.AnySendsRequests();
  sends_requests_ = agreed.SendsRequests(rank_);
  if (slow_phase_) ++counts_.slow_rounds;
  if (leader_) leader_->Agreed(agreed, cache_, !batches.empty(), now);
  return batches;
}

RequestList Negotiator::TakeRequests() {
  RequestList list;
  for (const std::string& name : sending_) list.requests.push_back(pending_.at(name).op->request);
  sending_.clear();
  if (departure_ == Departure::kLeaving) {
    list.shutdown = true;
    list.shutdown_reason = shutdown_reason_;
    departure_ = Departure::kAnnounced;
  }
  return list;
}

void Negotiator::Receive(int rank, const RequestList& list, Clock::time_point now) {
  leader_->Receive(rank, list, now);
  counts_.requests_received += static_cast<int64_t>(list.requests.size());
}

ResponseList Negotiator::Decide() { return leader_->Decide(); }

LocalPart Negotiator::Accept(const Response& response) {
  if (response.kind == Response::Kind::STOP) return LocalPart::kStop;
  if (response.kind == Response::Kind::ERROR) return Reject(response);
  const CollectiveTraits& traits = Traits(response.collective);
  if (traits.joins()) join_pending_ = false;
  if (traits.adds_set()) {
    sets_.Add(response.new_set_id, std::vector<int>(response.new_set_ranks.begin(), response.new_set_ranks.end()));
  } else if (traits.removes_set()) {
    for (int64_t position : cache_.PositionsOf(response.removed_set)) EvictEverywhere(position);
    sets_.Remove(response.removed_set);
  }
  for (size_t i = 0; i < response.names.size(); ++i) {
    const std::string& name = response.names[i];
    auto it = pending_.find(name);
    if (it != pending_.end() && it->second.op->request.process_set != response.process_set) it = pending_.end();
    const bool mine = it != pending_.end();
    if (mine) it->second.op->state = Advance(it->second.op->state, TensorEvent::kDecidedToRun);
    if (response.cacheable && cache_.capacity() > 0) {
      const int64_t cached = cache_.Find(name);
      if (cached >= 0) EvictEverywhere(cached);
      if (cache_.Full()) EvictEverywhere(cache_.LeastRecentlyUsed());
      const int64_t position = cache_.Insert(response, i, mine ? &it->second.op->request : nullptr);
      if (!mine) base_.SetReady(position);  // not this rank's to wait for
    }
    if (mine) pending_.erase(it);
  }
  // Every rank splits its communicators for a change of sets; otherwise the members run it.
  if (traits.changes_sets()) return LocalPart::kRun;
  const std::vector<int>* members = sets_.Find(response.process_set);
  const bool member = members && std::find(members->begin(), members->end(), rank_) != members->end();
  return member ? LocalPart::kRun : LocalPart::kNone;
}

LocalPart Negotiator::Reject(const Response& error) {
  const auto& ranks = error.error_ranks;
  if (!ranks.empty() && std::find(ranks.begin(), ranks.end(), rank_) == ranks.end()) return LocalPart::kNone;
  bool mine = false;
  for (const std::string& name : error.names) {
    auto it = pending_.find(name);
    if (it == pending_.end()) continue;  // a joined rank's, which never submitted it
    it->second.op->state = Advance(it->second.op->state, TensorEvent::kRejected);
    pending_.erase(it);
    mine = true;
  }
  return mine ? LocalPart::kFail : LocalPart::kNone;
}

std::vector<std::string> Negotiator::TakeReports() {
  return leader_ ? leader_->TakeReports() : std::vector<std::string>{};
}

}  // namespace mpirep
