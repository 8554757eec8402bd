// The core's runtime: one background thread per process, the only caller of MPI.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/coordinator.h"
#include "core/executor.h"
#include "core/operation.h"
#include "core/settings.h"
#include "core/timeline.h"
#include "mpi_transport.h"

namespace mpirep {

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
  // runs later on the background thread. On an error `done` is never called.
  Status Enqueue(Operation op);

  // Thread-safe, while collectives run. Rank 0 starts writing a timeline to `path` (closing the
  // one it was writing, if any) or stops; the other ranks do nothing.
  Status StartTimeline(const std::string& path, bool mark_cycles);
  void StopTimeline();

  // Collective: returns once every rank has called it. Operations still pending fail. A
  // non-empty `reason` says this rank is leaving because it failed; other ranks' errors
  // quote it, and if they have not all shut down a few seconds later, the job is aborted.
  void Shutdown(const std::string& reason = "");

 private:
  void ThreadMain(MPI_Comm comm);
  void Setup(MPI_Comm comm);
  void ChangeProcessSets(const Response& response);

  bool SubmitQueued();
  bool ReceiveRequests();
  bool RespondIfReady();
  bool ReceiveResponses();
  void WarnAboutStalls();
  void AbortIfFailedLongAgo();
  void Execute(const Response& response);
  // Ends the local operation `name`, if this rank submitted it: calls its `done`.
  void Deliver(const std::string& name, const Status& status, const OperationResult& result = {});
  void SendControl(int to, int tag, std::string bytes);
  void ReapSends(bool block);
  bool WaitingOnPeers() const;
  void Idle(int64_t wait_micros);

  const Config config_;
  Topology topology_;
  std::thread thread_;

  // Shared with the framework threads, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable started_;
  bool running_ = false;
  std::vector<Operation> queue_;
  std::unordered_set<std::string> in_flight_;
  std::map<int32_t, std::vector<int>> process_sets_;  // id -> member ranks, 0 is every rank
  bool accepting_ = true;
  std::string shutdown_reason_;

  // The background thread's own.
  MPI_Comm control_ = MPI_COMM_NULL;  // negotiation messages
  MPI_Comm data_ = MPI_COMM_NULL;     // collective payloads
  struct ProcessSetComm {  // this rank's side of a process set it belongs to
    ProcessSetComm(MPI_Comm comm, int64_t chunk_bytes)
        : data(comm), transport(comm), executor(transport, chunk_bytes) {}
    MPI_Comm data;
    MpiTransport transport;
    Executor executor;
  };
  std::map<int32_t, std::unique_ptr<ProcessSetComm>> executors_;  // 0: every rank, on data_
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  Timeline timeline_;    // written on rank 0 only
  PhaseLog phase_log_;   // the executor's phases of the collective that ran last, for timeline_
  std::string setup_error_;  // why Setup failed, the same on every rank
  std::unordered_map<std::string, Operation> submitted_;
  struct Outgoing {
    MPI_Request request;
    std::string bytes;
  };
  std::list<Outgoing> outgoing_;
  bool joined_ = false;  // this rank's join is pending: it stands in for tensors it lacks
  bool shutdown_sent_ = false;
  // Set when this rank has sent a shutdown with a reason (it failed).
  std::optional<std::chrono::steady_clock::time_point> abort_at_;
  bool stopped_ = false;  // rank 0 said STOP
  std::optional<Coordinator::Clock::time_point> holding_since_;  // ready tensors held back
  Coordinator::Clock::time_point last_stall_check_;
};

}  // namespace mpirep
