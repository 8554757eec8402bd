// One rank's side of negotiation, in rounds that every rank takes in lock-step. The runtime
// (runtime/runtime.cc) moves the bytes with MPI; everything decided here is MPI-free, so that
// the unit tests can run whole jobs of negotiators in one process.
//
// A round:
//   1. Contribute: each rank says, in a few bits per cached tensor (agreement.h), which of the
//      response cache's tensors it has submitted, which cache entries every rank must evict,
//      and whether it has requests for rank 0.
//   2. Agree: the bitwise AND of every contribution tells every rank the same things. Cached
//      tensors submitted everywhere run at once, fused, in position order: no message goes to
//      rank 0 for them. This is the steady state of training, which repeats the same tensors.
//   3. Slow phase, only when some rank has requests: those ranks send them to rank 0, whose
//      Coordinator negotiates as before (readiness, mismatches, stalls, join, shutdown) and
//      sends the same response list to every rank. Each cacheable response is inserted into
//      the cache as it runs, in list order, so every rank's cache stays the same.
//
// A submission is a hit when its name is cached and this rank's request repeats the one it
// made when the tensor was negotiated; anything else goes to rank 0 as a request, and a request
// for a cached name evicts that entry on every rank (the keep bits), which turns the other
// ranks' hits on it into requests too. So a tensor runs either from the cache on every rank or
// through rank 0 on every rank, and rank 0 sees every rank's request whenever they disagree:
// mismatches, errors and stall reports are those of the full negotiation. Hits are not made
// while a rank has a join pending or after a rank has shut down (stand-ins and failures need
// rank 0), and rank 0 demotes (evicts) a cached tensor that has waited for some rank for a
// while, so that its stall is reported and cancelled by the Coordinator, naming the missing
// ranks.
#pragma once

#include <chrono>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agreement.h"
#include "coordinator.h"
#include "response_cache.h"
#include "settings.h"

namespace mpirep {

// What a rank's negotiation did, for benchmarks and tests.
struct NegotiationCounts {
  int64_t rounds = 0;
  int64_t slow_rounds = 0;          // rounds with a slow phase
  int64_t cached_tensors = 0;       // this rank's tensors that ran from the cache
  int64_t requests_sent = 0;        // this rank's requests to rank 0
  int64_t requests_received = 0;    // rank 0: requests its Coordinator took in, its own included
};

class Negotiator {
 public:
  using Clock = std::chrono::steady_clock;

  // `config`: the settings every rank agreed on.
  Negotiator(int rank, int size, const Config& config);

  // A new local operation; no other pending operation of this rank has its name. `request`
  // stays where it is until the operation has run or failed (the runtime keeps it in the
  // operation), so that a tensor, hundreds of them per training step, is not copied here.
  void Submit(const Request& request);
  // This rank will submit nothing more; `reason` says why, when it failed. Announced to rank 0
  // in the next slow phase.
  void ShutDown(const std::string& reason);
  // Whether this rank should take part in a round now (rather than after an idle wait): it has
  // operations pending or something to announce.
  bool Busy() const;

  // 1. This rank's contribution to the next round. Rank 0 first checks for stalls; see
  //    TakeReports.
  RoundWords& Contribute(Clock::time_point now);
  // 2. `agreed`: the AND of every rank's contribution (in place of this rank's, which it
  //    overwrites). Returns the cached tensors to run now, fused, in the order every rank runs
  //    them; only those this rank takes part in.
  std::vector<Response> Agree(const RoundWords& agreed, Clock::time_point now);

  // 3. The slow phase, when some rank sends requests in this round.
  bool SlowPhase() const { return slow_phase_; }
  bool SendsRequests() const { return sends_requests_; }
  // This rank's list for rank 0, when SendsRequests().
  RequestList TakeRequests();
  // Rank 0: the ranks whose lists it receives, its own included, in rank order.
  const std::vector<int>& Senders() const { return senders_; }
  void Receive(int rank, const RequestList& list, Clock::time_point now);
  // Rank 0, once it has every sender's list: the round's responses, the same for every rank.
  ResponseList Decide(Clock::time_point now);
  // Every rank, for each response of the slow phase, in list order, before it runs.
  void Ran(const Response& response);

  // Rank 0: settings chosen by the autotuner, sent to every rank in the next slow phase, which
  // this forces (Decide puts them in its list).
  void Propose(Retune retune) { proposed_ = std::move(retune); }
  // Every rank, when a slow phase's list carries a Retune: the settings that every rank uses
  // from this point of the list on (the cache capacity stays as it is).
  void Reconfigure(const Config& config) { config_ = config; }

  // Rank 0: stall warnings and cancellations to print, each a line with its severity.
  std::vector<std::string> TakeReports();
  const NegotiationCounts& counts() const { return counts_; }
  const ResponseCache& cache() const { return cache_; }

 private:
  struct Pending {
    const Request* request;  // Submit's
    int64_t hit = -1;  // the cache position it is a hit on, or -1 (a request, sent or not)
  };

  // Decides a fresh submission: a hit, or a request for the next slow phase.
  void Place(Pending& pending);
  // Turns a hit into a request for a later round (its entry was evicted, or hits stopped).
  void Unhit(Pending& pending);
  void EvictEverywhere(int64_t position);  // an eviction that every rank makes at this point
  void CheckStalls(Clock::time_point now);  // rank 0
  void TrackPartial(const RoundWords& agreed, Clock::time_point now);  // rank 0
  bool CoordinatorHasNews(Clock::time_point now);  // rank 0
  Clock::duration DemoteAfter() const;
  // The size from which an allreduce runs alone rather than packed with others (fusion.h):
  // where each of its ring steps carries small_allreduce_bytes or more, past which a message is
  // no longer latency-bound and packing's two copies cost more than the pass they save.
  int64_t SoloBytes() const { return config_.small_allreduce_bytes * size_; }

  const int rank_, size_;
  Config config_;
  ResponseCache cache_;
  RoundWords base_;  // this rank's standing contribution: hits and its non-member entries
  RoundWords round_;
  // Keyed by the request's own name: a tensor's name is neither copied nor, with nodes from a
  // pool of their own, allocated for, hundreds of times per training step.
  std::pmr::unsynchronized_pool_resource pending_nodes_;
  std::pmr::unordered_map<std::string_view, Pending> pending_{&pending_nodes_};
  std::vector<Pending*> fresh_;         // submitted since the last contribution
  std::vector<std::string> unsent_;     // requests for the next round
  std::vector<std::string> sending_;    // requests for this round's slow phase
  std::vector<Pending*> hit_at_;        // by cache position: this rank's hit on it, or null
  bool hits_allowed_ = true;            // no join pending, nobody shut down (last round)
  bool join_pending_ = false;           // this rank has submitted join, not yet run
  bool shut_down_ = false;
  bool shutdown_announced_ = false;
  std::string shutdown_reason_;
  bool slow_phase_ = false;
  bool sends_requests_ = false;
  bool hold_ = false;  // this round's cached tensors wait (rank 0's word)

  // Rank 0 only.
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<int> senders_;
  // Cached tensors submitted somewhere but not everywhere: their positions' bits, and since when
  std::vector<uint64_t> partial_;
  std::vector<Clock::time_point> partial_since_;
  std::vector<int64_t> demote_;  // positions rank 0 asks every rank to evict next round
  std::unordered_map<std::string, Clock::time_point> demoted_since_;  // for the Coordinator's stall clock
  std::optional<Clock::time_point> holding_since_;
  bool stop_sent_ = false;
  Clock::time_point last_stall_check_;
  std::vector<std::string> reports_;
  std::optional<Retune> proposed_;

  NegotiationCounts counts_;
};

}  // namespace mpirep
