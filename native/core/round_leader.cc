#include "round_leader.h"

#include <algorithm>

#include "fusion.h"

namespace mpirep {
namespace {

constexpr uint64_t kHold = 1;  // in rank 0's word
// Rank 0 looks for stalls, and reports them, this often.
constexpr auto kStallCheckInterval = std::chrono::seconds(1);
// A cached tensor submitted on some ranks waits this long for the others before rank 0 demotes
// it to the full negotiation, which can name the missing ranks (shorter if a stall time is).
constexpr auto kDemoteAfter = std::chrono::seconds(1);

RoundLeader::Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<RoundLeader::Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

bool HeldByRankZero(const RoundWords& agreed) { return (agreed.Rank0Word() & kHold) != 0; }

RoundLeader::RoundLeader(int size, const Config& config, ProcessSets& sets)
    : size_(size),
      config_(config),
      coordinator_(size, sets),
      partial_((config.cache_capacity + 63) / 64, 0),
      partial_since_(config.cache_capacity),
      last_stall_check_(Clock::now()) {}

void RoundLeader::Contribute(const ResponseCache& cache, Clock::time_point now, RoundWords* round, bool* sends) {
  CheckStalls(now);
  for (int64_t position : demote_) {
    if (!cache.Occupied(position)) continue;
    round->SetEvict(position);
    demoted_since_[cache.response(position).names[0]] = partial_since_[position];
  }
  demote_.clear();
  // Hold ready tensors back, for fusion, while others are incomplete (cycle_time_ms).
  const bool incomplete =
      coordinator_.HasPending() || std::any_of(partial_.begin(), partial_.end(), [](uint64_t w) { return w != 0; });
  if (config_.cycle_time_ms <= 0 || !incomplete) {
    holding_since_.reset();
  } else if (!holding_since_) {
    holding_since_ = now;
  }
  hold_ = holding_since_ && now - *holding_since_ < Seconds(config_.cycle_time_ms / 1000);
  round->SetRank0Word(hold_ ? kHold : 0);
  *sends |= HasNews(hold_) || proposed_;
}

// Notes since when each cached tensor has been submitted on some ranks but not all, and demotes
// those that waited too long.
void RoundLeader::Agreed(const RoundWords& agreed, const ResponseCache& cache, bool ran_cached, Clock::time_point now) {
  senders_.clear();
  for (int r = 0; r < size_; ++r) {
    if (agreed.SendsRequests(r)) senders_.push_back(r);
  }
  for (int64_t w = 0; w < agreed.position_words(); ++w) {
    // Ready everywhere is complete even while held: counting it as partial would keep rank 0
    // holding it until the cycle time ran out, or demote it after a second.
    uint64_t partial = agreed.SubmittedSomewhere(w) & ~agreed.ReadyEverywhere(w);
    ForEachBit(partial, w, [&](int64_t position) {
      if (!cache.Occupied(position)) {
        partial &= ~(uint64_t{1} << (position % 64));
      } else if (!(partial_[w] >> (position % 64) & 1)) {
        partial_since_[position] = now;
      } else if (now - partial_since_[position] >= DemoteAfter()) {
        demote_.push_back(position);  // evicted next round, which clears its bit
      }
    });
    partial_[w] = partial;
  }
  if (ran_cached) holding_since_.reset();
}

void RoundLeader::Forget(int64_t position) { partial_[position / 64] &= ~(uint64_t{1} << (position % 64)); }

void RoundLeader::Receive(int rank, const RequestList& list, Clock::time_point now) {
  for (const Request& request : list.requests) {
    auto demoted = demoted_since_.find(request.name);
    coordinator_.Submit(request, demoted == demoted_since_.end() ? now : std::min(now, demoted->second));
  }
  if (list.shutdown) coordinator_.RankShutDown(rank, list.shutdown_reason);
}

ResponseList RoundLeader::Decide() {
  demoted_since_.clear();
  ResponseList list;
  if (!hold_ || !coordinator_.HasPending()) {
    list.responses = PlanFusion(coordinator_.TakeReady(), config_.fusion_threshold, SoloBytes());
  }
  if (!list.responses.empty()) holding_since_.reset();
  list.retune.swap(proposed_);
  if (coordinator_.AllShutDown() && !coordinator_.HasPending() && !coordinator_.HasReady() && !stop_sent_) {
    Response stop;
    stop.kind = Response::Kind::STOP;
    list.responses.push_back(stop);
    stop_sent_ = true;
  }
  return list;
}

bool RoundLeader::Busy() const {
  return coordinator_.HasPending() || coordinator_.HasReady() || !demote_.empty() || proposed_ ||
         (coordinator_.AllShutDown() && !stop_sent_);
}

std::vector<std::string> RoundLeader::TakeReports() {
  std::vector<std::string> out;
  out.swap(reports_);
  return out;
}

RoundLeader::Clock::duration RoundLeader::DemoteAfter() const {
  Clock::duration after = kDemoteAfter;
  for (double s : {config_.stall_check_time_seconds, config_.stall_shutdown_time_seconds}) {
    if (s > 0) after = std::min(after, Seconds(s));
  }
  return after;
}

void RoundLeader::CheckStalls(Clock::time_point now) {
  if (config_.stall_check_time_seconds <= 0 || now - last_stall_check_ < kStallCheckInterval) return;
  last_stall_check_ = now;
  for (const std::string& line : coordinator_.StallWarnings(now, Seconds(config_.stall_check_time_seconds))) {
    reports_.push_back("WARNING: stalled collective: " + line);
  }
  if (config_.stall_shutdown_time_seconds <= 0) return;
  const std::string error = coordinator_.CancelStalled(now, Seconds(config_.stall_shutdown_time_seconds));
  if (!error.empty()) reports_.push_back("ERROR: " + error);
}

bool RoundLeader::HasNews(bool hold) const {
  return (coordinator_.HasReady() && (!hold || !coordinator_.HasPending())) ||
         (coordinator_.AllShutDown() && !coordinator_.HasPending() && !stop_sent_);
}

}  // namespace mpirep
