// What rank 0 does in every round besides taking part as a rank (negotiator.h):
//   - the full negotiation of whatever the ranks send it (coordinator.h);
//   - demotion: a cached tensor that some ranks have submitted and others have not for a while
//     is evicted everywhere, so that it goes through the full negotiation, whose stall warning
//     and cancellation name the missing ranks (TensorEvent::kEvicted);
//   - holding ready tensors back for up to cycle_time_ms while others are incomplete, so that
//     they fuse into fewer passes;
//   - the stall checks, and STOP once every rank has shut down;
//   - carrying the autotuner's choice of settings to every rank.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agreement.h"
#include "coordinator.h"
#include "response_cache.h"
#include "settings.h"

namespace mpirep {

// Whether rank 0 holds the round's ready tensors back (its word of the agreed round).
bool HeldByRankZero(const RoundWords& agreed);

class RoundLeader {
 public:
  using Clock = std::chrono::steady_clock;

  RoundLeader(int size, const Config& config, ProcessSets& sets);

  // Before rank 0 contributes to a round: runs the stall checks, asks every rank to evict the
  // tensors it demotes, says whether ready tensors are held, and sets rank 0's request bit when
  // it has something to send in this round's slow phase.
  void Contribute(const ResponseCache& cache, Clock::time_point now, RoundWords* round, bool* sends);
  // After the round's AND: which ranks send requests, and which cached tensors wait for some rank.
  void Agreed(const RoundWords& agreed, const ResponseCache& cache, bool ran_cached, Clock::time_point now);
  // The cache position was evicted everywhere.
  void Forget(int64_t position);
  const std::vector<int>& Senders() const { return senders_; }
  void Receive(int rank, const RequestList& list, Clock::time_point now);
  // The round's response list, the same for every rank.
  ResponseList Decide();
  bool Busy() const;
  void CountCachedGroupMember(const Request& own) { coordinator_.CountCachedGroupMember(own); }
  std::vector<FlightDump::Waiting> Waiting() const { return coordinator_.Waiting(); }

  void Propose(Retune retune) { proposed_ = std::move(retune); }
  void Reconfigure(const Config& config) { config_ = config; }
  std::vector<std::string> TakeReports();

 private:
  void CheckStalls(Clock::time_point now);
  bool HasNews(bool hold) const;
  Clock::duration DemoteAfter() const;
  // The size from which an allreduce runs alone rather than fused with others (fusion.h).
  int64_t SoloBytes() const { return config_.small_allreduce_bytes * size_; }

  const int size_;
  Config config_;
  Coordinator coordinator_;
  std::vector<int> senders_;
  // Cached tensors submitted somewhere but not everywhere: their positions' bits, and since when
  std::vector<uint64_t> partial_;
  std::vector<Clock::time_point> partial_since_;
  std::vector<int64_t> demote_;  // positions every rank is asked to evict in the next round
  // A demoted tensor's stall clock starts when it was first submitted, not when rank 0 got its
  // requests: by name, until its requests have arrived.
  std::unordered_map<std::string, Clock::time_point> demoted_since_;
  std::optional<Clock::time_point> holding_since_;
  bool hold_ = false;  // what rank 0 contributed to this round
  bool stop_sent_ = false;
  Clock::time_point last_stall_check_;
  std::vector<std::string> reports_;
  std::optional<Retune> proposed_;
};

}  // namespace mpirep
