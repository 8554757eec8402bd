// The core's runtime: the rounds loop of core/negotiator.h over MPI, run by one background thread
// per process, or by a caller that waits for its own operation (RunOnCaller); whichever thread
// runs the rounds is the only one calling MPI at that time. The thread model is written at the
// top of runtime.cc.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/and_allreduce.h"
#include "core/autotune_log.h"
#include "core/autotuner.h"
#include "core/backoff.h"
#include "core/executor.h"
#include "core/flight_recorder.h"
#include "core/liveness.h"
#include "core/negotiator.h"
#include "core/operation.h"
#include "core/process_sets.h"
#include "core/settings.h"
#include "core/timeline.h"
#include "process_set_comm.h"

namespace mpirep {

// What negotiation did on this rank since start: the Negotiator's counts, the control messages
// (the slow phase's request and response lists; the agreement itself is one MPI allreduce per
// round), and, while timing is on, the thread CPU time of negotiation work (not of waiting or
// of the collectives themselves).
struct NegotiationStats {
  NegotiationCounts counts;
  int64_t messages_sent = 0, messages_received = 0;
  int64_t bytes_sent = 0, bytes_received = 0;
  int64_t agreement_bytes = 0;  // this rank's contributions to the rounds
  int64_t work_ns = 0;
};

struct Topology {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // ranks on this host (MPI's shared-memory split)
  int cross_rank = 0, cross_size = 1;  // this rank among the ranks with its local_rank
};

class Runtime {
 public:
  // Collective over `comm`, which the runtime duplicates; `comm` itself is not kept.
  Runtime(MPI_Comm comm, const Config& config);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Topology& topology() const { return topology_; }

  // The ranks of a process set, in order, or empty if there is no such set. Thread-safe.
  std::vector<int> ProcessSetRanks(int32_t id);

  // Thread-safe. Checks what this rank alone can check and queues the operation; its `done`
  // runs later on the thread that runs the rounds. On an error `done` is never called.
  // `wake`: false when the caller is about to run the rounds itself (RunOnCaller).
  Status Enqueue(Operation op, bool wake = true);

  // Thread-safe. Enqueues `op` and returns its status if that fails; otherwise returns OK once
  // `finished()` is true, running the rounds on the calling thread while no other thread runs
  // them, and calling `pause()` (a short wait) while one does. Meanwhile `done` of this and
  // other operations may run on the calling thread.
  Status RunOnCaller(Operation op, const std::function<bool()>& finished, const std::function<void()>& pause);

  // Thread-safe, while collectives run. Rank 0 starts writing a timeline to `path` (closing the
  // one it was writing, if any) or stops; the other ranks do nothing.
  Status StartTimeline(const std::string& path, bool mark_cycles);
  void StopTimeline();

  // Collective: returns once every rank has called it. Operations still pending fail. A
  // non-empty `reason` says this rank is leaving because it failed; other ranks' errors
  // quote it, and if they have not all shut down a few seconds later, the job is aborted.
  void Shutdown(const std::string& reason = "");

  // What this rank's negotiation has done so far. Thread-safe.
  NegotiationStats Stats();
  // Whether to measure the CPU time of negotiation work. Thread-safe.
  void TimeNegotiation(bool on) { timing_ = on; }
  // The settings in force now, the same on every rank (autotuning changes some), and whether
  // autotuning has ended with its final choice. Thread-safe.
  Config Settings();
  bool AutotuneFinished();

  // Thread-safe. Writes this rank's flight record (core/flight_recorder.h) now, with `reason`;
  // returns the file's path, or an error that starts with "error: ". Waits for the rounds' pass
  // in progress to end.
  std::string DumpFlightRecord(const std::string& reason);
  // Thread-safe. With elastic_peer_loss set: once this rank knows of lost peers, their ranks,
  // as "1,3" ("" until then).
  std::string PeerLossReport();

 private:
  using Clock = std::chrono::steady_clock;

  void ThreadMain(MPI_Comm comm);
  // One pass of the rounds loop; returns when to look again (nullopt: at once).
  std::optional<Clock::time_point> LoopPass(Backoff& backoff);
  void StandAsideForCallers(Backoff* backoff);
  // Sleeps until `until`, or until an operation is queued or shutdown is asked for.
  void Sleep(Clock::time_point until);
  [[noreturn]] void Fatal(const std::exception& e);
  void Setup(MPI_Comm comm);
  void CheckSettingsAgree();
  void StartAutotuning();
  // Every rank, for a new set: its communicator, and the set's channel where this rank is in it.
  void AttachNewSet(const Response& response);

  bool TakeQueued();
  // One round of negotiation with every rank (negotiator.h); true if anything ran.
  bool RunRound();
  bool SlowPhase();
  void AbortIfFailedLongAgo();
  void LeaveLiveness();
  // Called on every poll of every wait: heartbeats with the neighbours (core/liveness.h), and
  // what follows a lost peer: a report, the flight record, then the end of the job.
  void WatchPeers();
  void ReportPeerLoss(const PeerLoss& loss, Clock::time_point now);
  [[noreturn]] void EndForPeerLoss(const PeerLoss& loss);
  bool CutOff(const PeerLoss& loss) const;
  const std::vector<int>& Lost(const PeerLoss& loss) const;
  bool OnOtherHosts(const std::vector<int>& ranks) const;
  std::string DescribeRanks(const std::vector<int>& ranks) const;
  // The rounds' side of DumpFlightRecord; also on a lost peer, a stall, a mismatch or a failure.
  std::string WriteFlightRecord(const std::string& reason, const PeerLoss* loss);
  // Runs a collective this rank takes part in, and ends its operations.
  void Execute(const Response& response);
  // Ends the local operations among `names` (those this rank submitted; a joined rank's
  // stand-ins are not), `statuses[i]` being that of `names[i]`: records them (the flight
  // recorder) and calls their `done`. `started`: when their collective began (or when they
  // failed, if they never ran).
  void Deliver(const std::vector<std::string>& names, const std::vector<Status>& statuses,
               Clock::time_point started, const OperationResult& result = {});
  void SendControl(int to, int tag, std::string bytes);
  std::string AwaitControl(int from, int tag);
  // Polls `done` until it returns true.
  void Await(const std::function<bool()>& done, Backoff backoff);
  void ReapSends(bool block);
  void PublishStats();
  // Rank 0, autotuning: feeds the autotuner the allreduced tensors, proposes what it chooses.
  void Tune(const std::vector<Operation*>& ops, std::chrono::steady_clock::time_point start);
  // Every rank: switches to the settings of a slow phase's list before running its responses.
  void Apply(const Retune& retune);

  Config config_;  // changed by autotuning only, on every rank at the same point
  Topology topology_;
  std::thread thread_;
  std::string setup_error_;  // why Setup failed, for the constructor to throw

  // Shared with the framework threads, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable started_;
  bool running_ = false;
  std::vector<Operation> queue_;
  uint64_t wakeups_ = 0;  // counts the events that wake the background thread
  // Both tables of operations take their nodes from pools of their own, for hundreds of
  // operations per training step; this one's pool is used under mutex_ only.
  std::pmr::unsynchronized_pool_resource in_flight_nodes_;
  std::pmr::unordered_set<std::string> in_flight_{&in_flight_nodes_};
  bool accepting_ = true;
  std::string shutdown_reason_;
  int callers_waiting_ = 0;  // threads in RunOnCaller: the background thread stands aside
  std::condition_variable callers_left_;

  // Held by the thread that runs the rounds: the background thread, or a caller in RunOnCaller.
  // Guards what is marked "the rounds' own" below, and the use of MPI.
  std::mutex rounds_mutex_;

  // What the rounds publish for other threads, under published_mutex_: statistics, copied out
  // after every round, and the settings, after each change.
  std::mutex published_mutex_;
  NegotiationStats published_;
  Config published_config_;
  bool autotune_finished_ = false;
  std::string peer_loss_report_;
  std::atomic<bool> timing_{false};

  // The rounds' own.
  MPI_Comm control_ = MPI_COMM_NULL;  // negotiation messages
  MPI_Comm data_ = MPI_COMM_NULL;     // collective payloads
  MPI_Comm liveness_comm_ = MPI_COMM_NULL;  // heartbeats
  std::unique_ptr<MpiTransport> liveness_transport_;
  std::unique_ptr<Liveness> liveness_;  // none when peer_timeout_seconds is 0, or at 1 rank
  const std::function<void()> while_waiting_{[this] { WatchPeers(); }};
  bool peer_loss_reported_ = false;
  std::vector<std::string> hosts_;  // by rank: MPI's processor names
  std::string job_id_;              // rank 0's host, pid and start time: names this job's records
  FlightRecorder recorder_;
  Clock::time_point last_problem_dump_;  // dumps on stalls and mismatches, at most one a second
  // Membership is thread-safe; the channels are the rounds' own.
  std::unique_ptr<ProcessSets> sets_;
  std::unique_ptr<Negotiator> negotiator_;
  std::unique_ptr<MpiTransport> control_transport_;  // the agreement's messages, on control_
  std::unique_ptr<AndAllreduce> agreement_;
  Timeline timeline_;    // written on rank 0 only
  PhaseLog phase_log_;   // the executor's phases of the collective that ran last, for timeline_
  std::unique_ptr<Autotuner> autotuner_;      // rank 0 only, with autotune on
  std::unique_ptr<AutotuneLog> autotune_log_;  // rank 0 only, with autotune_log set
  std::pmr::unsynchronized_pool_resource submitted_nodes_;
  std::pmr::unordered_map<std::string, Operation> submitted_{&submitted_nodes_};
  std::vector<Operation> taken_;  // queue_'s operations, swapped out
  struct Outgoing {
    MPI_Request request;
    std::string bytes;
  };
  std::list<Outgoing> outgoing_;
  bool shutdown_taken_ = false;
  // Set when this rank has sent a shutdown with a reason (it failed).
  std::optional<std::chrono::steady_clock::time_point> abort_at_;
  bool stopped_ = false;  // rank 0 said STOP
  std::chrono::steady_clock::time_point last_round_;
  uint64_t woken_at_ = 0;  // wakeups_ when the thread last looked
  NegotiationStats stats_;
};

}  // namespace mpirep
