// One rank's side of negotiation, in rounds that every rank takes in lock-step. The runtime
// (runtime/runtime.cc) moves the bytes with MPI; everything decided here is MPI-free, so that
// the unit tests can run whole jobs of negotiators in one process (tests/simulated_job.h).
//
// A round:
//   1. Contribute: each rank says, in a few bits per cached tensor (agreement.h), which of the
//      response cache's tensors it has submitted, which cache entries every rank must evict,
//      and whether it has requests for rank 0.
//   2. Agree: the bitwise AND of every contribution tells every rank the same things. Cached
//      tensors submitted by every member run at once, fused, in position order: no message goes
//      to rank 0 for them. This is the steady state of training, which repeats the same tensors.
//   3. Slow phase, only when some rank has requests: those ranks send them to rank 0, whose
//      RoundLeader negotiates them (round_leader.h, coordinator.h) and sends the same response
//      list to every rank. Every rank accepts each response in list order before running it;
//      a cacheable one enters the cache then, so every rank's cache stays the same.
//
// Each of this rank's tensors is in one of the states of tensor_states.h, and moves only
// through Advance(); the functions named there decide when. A submission is a hit when its name
// is cached and this rank's request repeats the one it made when the tensor was negotiated;
// anything else is a request to rank 0. A request for a cached name evicts that entry on every
// rank, which turns the other ranks' hits on it into requests too, so a tensor runs either from
// the cache on every rank or through rank 0 on every rank, and rank 0 sees every rank's request
// whenever they disagree.
#pragma once

#include <chrono>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agreement.h"
#include "operation.h"
#include "process_sets.h"
#include "response_cache.h"
#include "round_leader.h"
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

// What this rank does with one response of a slow phase's list (Negotiator::Accept).
enum class LocalPart : uint8_t {
  kNone,  // nothing: a collective of a set it is not in, or an error that concerns other ranks
  kRun,   // run the collective: it is a member (standing in for what it never submitted, if joined)
  kFail,  // fail its tensors that the response names, with the response's error
  kStop,  // every rank has shut down: the rounds end
};

class Negotiator {
 public:
  using Clock = std::chrono::steady_clock;

  // `config`: the settings every rank agreed on. `sets`: this rank's process-set registry, which
  // Accept changes as sets are created and removed.
  Negotiator(int rank, int size, const Config& config, ProcessSets& sets);

  // A new local operation, in state kSubmitted; no other pending operation of this rank has its
  // name. It stays where it is until it has run or failed (the runtime keeps it), so that a
  // tensor, hundreds of them per training step, is not copied here.
  void Submit(Operation& op);
  // This rank will submit nothing more; `reason` says why, when it failed. Announced to rank 0
  // in the next slow phase.
  void ShutDown(const std::string& reason);
  // Whether this rank should take part in a round now (rather than after an idle wait): it has
  // operations pending or something to announce.
  bool Busy() const;

  // 1. This rank's contribution to the next round.
  RoundWords& Contribute(Clock::time_point now);
  // 2. `agreed`: the AND of every rank's contribution (in place of this rank's, which it
  //    overwrites). Returns the cached tensors to run now, fused, in the order every rank runs
  //    them: those of the sets this rank is in.
  std::vector<Response> Agree(const RoundWords& agreed, Clock::time_point now);

  // 3. The slow phase, when some rank sends requests in this round.
  bool SlowPhase() const { return slow_phase_; }
  bool SendsRequests() const { return sends_requests_; }
  // This rank's list for rank 0, when SendsRequests().
  RequestList TakeRequests();
  // Rank 0: the ranks whose lists it receives, its own included, in rank order.
  const std::vector<int>& Senders() const { return leader_->Senders(); }
  void Receive(int rank, const RequestList& list, Clock::time_point now);
  // Rank 0, once it has every sender's list: the round's responses, the same for every rank.
  ResponseList Decide();
  // Every rank, for each response of the slow phase's list, in list order, before running it.
  LocalPart Accept(const Response& response);
  // Whether this rank has a join pending: it stands in for tensors it never submitted.
  bool StandsIn() const { return join_pending_; }

  // Rank 0: settings chosen by the autotuner, sent to every rank in the next slow phase, which
  // this forces (Decide puts them in its list).
  void Propose(Retune retune) { leader_->Propose(std::move(retune)); }
  // Every rank, when a slow phase's list carries a Retune: the settings that every rank uses
  // from this point of the list on (the cache capacity stays as it is).
  void Reconfigure(const Config& config);

  // Rank 0: the tensors of the full negotiation that some members have not submitted yet (the
  // other ranks: none).
  std::vector<FlightDump::Waiting> Waiting() const {
    return leader_ ? leader_->Waiting() : std::vector<FlightDump::Waiting>{};
  }
  // Rank 0: stall warnings and cancellations to print, each a line with its severity.
  std::vector<std::string> TakeReports();
  const NegotiationCounts& counts() const { return counts_; }
  const ResponseCache& cache() const { return cache_; }

 private:
  struct Pending {
    Operation* op;
    int64_t hit = -1;  // in state kHit: the cache position it waits on
  };
  enum class Departure : uint8_t { kStaying, kLeaving, kAnnounced };

  // kSubmitted to kHit or kQueued.
  void Place(Pending& pending);
  // kHit to kQueued, for a request in a later round.
  void Unhit(Pending& pending, TensorEvent why);
  void EvictEverywhere(int64_t position);  // an eviction that every rank makes at this point
  LocalPart Reject(const Response& error);

  const int rank_, size_;
  Config config_;
  ProcessSets& sets_;
  ResponseCache cache_;
  RoundWords base_;  // this rank's standing contribution: hits and its non-member entries
  RoundWords round_;
  // Keyed by the request's own name: a tensor's name is neither copied nor, with nodes from a
  // pool of their own, allocated for, hundreds of times per training step.
  std::pmr::unsynchronized_pool_resource pending_nodes_;
  std::pmr::unordered_map<std::string_view, Pending> pending_{&pending_nodes_};
  std::vector<Pending*> fresh_;       // kSubmitted
  std::vector<std::string> unsent_;   // kQueued
  std::vector<std::string> sending_;  // kSent in this round, for TakeRequests
  std::vector<Pending*> hit_at_;      // by cache position: this rank's hit on it, or null
  bool hits_allowed_ = true;          // as the last round agreed: no join pending, nobody shut down
  bool join_pending_ = false;
  Departure departure_ = Departure::kStaying;
  std::string shutdown_reason_;
  // What the last round agreed.
  bool slow_phase_ = false;
  bool sends_requests_ = false;
  std::unique_ptr<RoundLeader> leader_;  // rank 0 only

  NegotiationCounts counts_;
};

}  // namespace mpirep
