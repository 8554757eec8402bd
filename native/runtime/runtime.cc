// Thread model
// ------------
// Framework threads never call MPI and never block inside the core: Enqueue checks a request,
// puts it on queue_ and wakes the background thread. That thread is the only caller of MPI. It
// loops:
//   1. take everything queued, remember it in submitted_ and tell the coordinator (rank 0) about
//      it in one request list (rank 0 tells its own Coordinator directly);
//   2. on rank 0: take in the other ranks' request lists; once tensors are ready on every
//      rank, plan their fusion and send the resulting response list to every rank;
//      on the others: take in response lists from rank 0;
//   3. carry out each response in list order (the same order on every rank): run the
//      collective through the Executor and fire each operation's `done`.
// When a pass finds nothing to do it first keeps polling for a short spin window (the next
// operation of a training step usually follows within microseconds, and waking a sleeping
// thread costs tens of them), then waits on wake_: without a deadline when nothing is
// outstanding, otherwise for a short, growing interval (Backoff), because messages from other
// ranks can only be polled for. No fixed cycle: an enqueue wakes the thread at once.
//
// Shutdown is negotiated too: a rank that shuts down says so in its request list and keeps
// serving responses; rank 0 fails whatever can no longer complete, and when every rank has
// shut down it sends STOP, after which each thread frees its communicators and exits. A rank
// that shuts down because it failed aborts the job if STOP has not come kFailedRankGrace
// later.

#include "runtime.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "core/backoff.h"
#include "core/fusion.h"
#include "core/stand_in.h"
#include "core/validation.h"

namespace mpirep {
namespace {

constexpr int kRequestTag = 1;
constexpr int kResponseTag = 2;
constexpr int kCoordinator = 0;
// How long rank 0 sleeps when idle before looking for other ranks' requests (stall reports,
// shutdowns): nothing can run before rank 0 submits too, which wakes it at once.
constexpr int64_t kCoordinatorIdleMicros = 2000;
// A rank that failed waits this long for the others to shut down too (each learns of the
// failure at its next collective). Past it, some rank is not calling mpirep at all (a long
// computation, a deadlock in user code), and the failed rank aborts the job, so that a failure
// always ends it. MPI_Finalize would otherwise wait for that rank forever.
constexpr auto kFailedRankGrace = std::chrono::seconds(5);
// Horovod's value of the timeline setting that records nothing until start_timeline().
constexpr char kTimelineStartedLater[] = "DYNAMIC";
// Waiting for other ranks to submit can last as long as their compute does: spin-yield briefly
// for the common case of ranks in step, then sleep.
Backoff NegotiationBackoff() { return Backoff(/*spin_micros=*/100, /*max_sleep_micros=*/200); }

// Whether a message with `tag` from `source` (or any) has arrived; `status` describes it.
bool MessageWaiting(MPI_Comm comm, int source, int tag, MPI_Status* status) {
  int flag = 0;
  MPI_Iprobe(source, tag, comm, &flag, status);
  return flag != 0;
}

// Receives the message MessageWaiting found: the first with its tag from its sender.
std::string ReceiveMessage(MPI_Comm comm, const MPI_Status& status, int tag) {
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  std::string message(static_cast<size_t>(bytes), '\0');
  MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
  return message;
}

// Rank 0's `text`, on every rank of `comm` (collective).
std::string BroadcastFromCoordinator(MPI_Comm comm, std::string text) {
  int bytes = static_cast<int>(text.size());
  MPI_Bcast(&bytes, 1, MPI_INT, kCoordinator, comm);
  text.resize(static_cast<size_t>(bytes));
  MPI_Bcast(text.data(), bytes, MPI_CHAR, kCoordinator, comm);
  return text;
}

}  // namespace

Runtime::Runtime(MPI_Comm comm, const Config& config) : config_(config) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error(
        "mpirep needs MPI initialised with MPI_THREAD_SERIALIZED or better (mpi4py asks for "
        "MPI_THREAD_MULTIPLE unless mpi4py.rc.thread_level says otherwise)");
  }
  thread_ = std::thread(&Runtime::ThreadMain, this, comm);
  std::unique_lock<std::mutex> lock(mutex_);
  started_.wait(lock, [this] { return running_; });
  if (!setup_error_.empty()) {
    lock.unlock();
    thread_.join();
    throw std::runtime_error(setup_error_);
  }
}

Runtime::~Runtime() { Shutdown(); }

void Runtime::Setup(MPI_Comm comm) {
  MPI_Comm_dup(comm, &control_);
  MPI_Comm_dup(comm, &data_);
  MPI_Comm_rank(data_, &topology_.rank);
  MPI_Comm_size(data_, &topology_.size);
  MPI_Comm local, cross;
  MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, topology_.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &topology_.local_rank);
  MPI_Comm_size(local, &topology_.local_size);
  MPI_Comm_split(data_, topology_.local_rank, topology_.rank, &cross);
  MPI_Comm_rank(cross, &topology_.cross_rank);
  MPI_Comm_size(cross, &topology_.cross_size);
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  executors_[0] = std::make_unique<ProcessSetComm>(data_, config_.chunk_bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int>& everyone = process_sets_[0];
    for (int r = 0; r < topology_.size; ++r) everyone.push_back(r);
  }
  std::string timeline_error;
  if (topology_.rank == kCoordinator) {
    coordinator_ = std::make_unique<Coordinator>(topology_.size);
    if (!config_.timeline.empty() && config_.timeline != kTimelineStartedLater) {
      timeline_error = timeline_.Start(config_.timeline, config_.timeline_mark_cycles);
    }
  }
  // A timeline rank 0 cannot write fails init on every rank, rather than on rank 0 alone.
  timeline_error = BroadcastFromCoordinator(control_, timeline_error);
  if (!timeline_error.empty()) setup_error_ = "rank 0: " + timeline_error;
  last_stall_check_ = Coordinator::Clock::now();
}

void Runtime::ThreadMain(MPI_Comm comm) {
  UseFineTimerSlack();
  Setup(comm);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
  }
  started_.notify_all();
  stopped_ = !setup_error_.empty();
  try {
    Backoff backoff = NegotiationBackoff();
    while (!stopped_) {
      timeline_.BeginRound();
      bool progressed = SubmitQueued();
      if (coordinator_) {
        progressed |= ReceiveRequests();
        progressed |= RespondIfReady();
        WarnAboutStalls();
      } else {
        progressed |= ReceiveResponses();
      }
      ReapSends(false);
      AbortIfFailedLongAgo();
      timeline_.EndRound(progressed);
      if (progressed) {
        backoff.Reset();
      } else {
        Idle(backoff.NextWaitMicros());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[mpirep] rank %d: fatal error in the background thread: %s\n",
                 topology_.rank, e.what());
    timeline_.Stop();
    MPI_Abort(data_, 1);
  }
  timeline_.Stop();
  for (auto& [name, op] : submitted_) {
    op.done(Status::Error(StatusCode::SHUT_DOWN, "mpirep was shut down before '" + name + "' ran"), {});
  }
  submitted_.clear();
  ReapSends(true);
  for (auto& [id, set] : executors_) {
    if (id != 0) MPI_Comm_free(&set->data);
  }
  executors_.clear();
  MPI_Comm_free(&control_);
  MPI_Comm_free(&data_);
}

Status Runtime::Enqueue(Operation op) {
  op.request.rank = topology_.rank;
  op.enqueued_at = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Status valid = ValidateRequest(op.request, topology_.rank, topology_.size, process_sets_);
    if (!valid.ok()) return valid;
    if (!accepting_) {
      return Status::Error(StatusCode::SHUT_DOWN, "mpirep has been shut down on rank " +
                                                      std::to_string(topology_.rank));
    }
    if (!in_flight_.insert(op.request.name).second) {
      return Status::Error(StatusCode::INVALID_ARGUMENT,
                           "rank " + std::to_string(topology_.rank) + ": a tensor named '" +
                               op.request.name + "' is already in flight; names must be unique "
                               "among pending operations");
    }
    queue_.push_back(std::move(op));
  }
  wake_.notify_one();
  return Status::Ok();
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) {
    return Status::Error(StatusCode::INVALID_ARGUMENT, "rank " + std::to_string(topology_.rank) +
                                                           ": start_timeline needs a file path");
  }
  if (topology_.rank != kCoordinator) return Status::Ok();
  const std::string error = timeline_.Start(path, mark_cycles);
  return error.empty() ? Status::Ok() : Status::Error(StatusCode::INVALID_ARGUMENT, "rank 0: " + error);
}

void Runtime::StopTimeline() { timeline_.Stop(); }

void Runtime::Shutdown(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (accepting_) shutdown_reason_ = reason;
    accepting_ = false;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool Runtime::SubmitQueued() {
  RequestList list;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Operation& op : queue_) {
      list.requests.push_back(op.request);
      joined_ |= op.request.collective == Collective::JOIN;
      std::string name = op.request.name;
      submitted_.emplace(std::move(name), std::move(op));
    }
    queue_.clear();
    list.shutdown = !accepting_ && !shutdown_sent_;
    if (list.shutdown) list.shutdown_reason = shutdown_reason_;
  }
  if (list.requests.empty() && !list.shutdown) return false;
  shutdown_sent_ |= list.shutdown;
  if (list.shutdown && !list.shutdown_reason.empty()) {
    abort_at_ = std::chrono::steady_clock::now() + kFailedRankGrace;
  }
  if (coordinator_) {
    const auto now = Coordinator::Clock::now();
    for (const Request& r : list.requests) coordinator_->Submit(r, now);
    if (list.shutdown) coordinator_->RankShutDown(kCoordinator, list.shutdown_reason);
  } else {
    SendControl(kCoordinator, kRequestTag, Encode(list));
  }
  return true;
}

bool Runtime::ReceiveRequests() {
  bool any = false;
  MPI_Status status;
  while (MessageWaiting(control_, MPI_ANY_SOURCE, kRequestTag, &status)) {
    RequestList list = DecodeRequestList(ReceiveMessage(control_, status, kRequestTag));
    const auto now = Coordinator::Clock::now();
    for (const Request& r : list.requests) coordinator_->Submit(r, now);
    if (list.shutdown) coordinator_->RankShutDown(status.MPI_SOURCE, list.shutdown_reason);
    any = true;
  }
  return any;
}

// Ready tensors go out at once unless other tensors are still being negotiated: then they wait,
// for at most the cycle time, so that those can join them in fewer, fused ring passes.
bool Runtime::RespondIfReady() {
  const auto now = Coordinator::Clock::now();
  if (!coordinator_->HasReady()) {
    holding_since_.reset();
  } else if (coordinator_->HasPending()) {
    if (!holding_since_) holding_since_ = now;
    if (now - *holding_since_ < std::chrono::duration<double, std::milli>(config_.cycle_time_ms)) return false;
  }
  ResponseList list;
  // A tensor with at least a chunk per ring segment already pipelines fully on its own.
  list.responses = PlanFusion(coordinator_->TakeReady(), config_.fusion_threshold,
                              config_.chunk_bytes * topology_.size);
  if (coordinator_->AllShutDown() && !coordinator_->HasPending()) {
    Response stop;
    stop.kind = Response::Kind::STOP;
    list.responses.push_back(stop);
  }
  if (list.responses.empty()) return false;
  holding_since_.reset();
  const std::string bytes = Encode(list);
  for (int r = 0; r < topology_.size; ++r) {
    if (r != kCoordinator) SendControl(r, kResponseTag, bytes);
  }
  for (const Response& response : list.responses) Execute(response);
  return true;
}

bool Runtime::ReceiveResponses() {
  bool any = false;
  MPI_Status status;
  while (!stopped_ && MessageWaiting(control_, kCoordinator, kResponseTag, &status)) {
    ResponseList list = DecodeResponseList(ReceiveMessage(control_, status, kResponseTag));
    for (const Response& response : list.responses) Execute(response);
    any = true;
  }
  return any;
}

void Runtime::WarnAboutStalls() {
  if (config_.stall_check_time_seconds <= 0) return;
  const auto now = Coordinator::Clock::now();
  if (now - last_stall_check_ < std::chrono::seconds(1)) return;
  last_stall_check_ = now;
  const auto after = std::chrono::duration_cast<Coordinator::Clock::duration>(
      std::chrono::duration<double>(config_.stall_check_time_seconds));
  for (const std::string& line : coordinator_->StallWarnings(now, after)) {
    std::fprintf(stderr, "[mpirep] WARNING: stalled collective: %s\n", line.c_str());
  }
  if (config_.stall_shutdown_time_seconds <= 0) return;
  const std::string error = coordinator_->CancelStalled(
      now, std::chrono::duration_cast<Coordinator::Clock::duration>(
               std::chrono::duration<double>(config_.stall_shutdown_time_seconds)));
  if (!error.empty()) std::fprintf(stderr, "[mpirep] ERROR: %s\n", error.c_str());
}

void Runtime::AbortIfFailedLongAgo() {
  if (!abort_at_ || std::chrono::steady_clock::now() < *abort_at_) return;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reason = shutdown_reason_;
  }
  std::fprintf(stderr,
               "[mpirep] rank %d failed (%s), and %lld s later not every rank has shut down: some rank is "
               "not calling mpirep; aborting the job\n",
               topology_.rank, reason.c_str(), static_cast<long long>(kFailedRankGrace.count()));
  std::fflush(stderr);
  MPI_Abort(data_, 1);
}

void Runtime::Execute(const Response& response) {
  switch (response.kind) {
    case Response::Kind::STOP:
      stopped_ = true;
      return;
    case Response::Kind::ERROR:
      if (!response.error_ranks.empty() &&
          std::find(response.error_ranks.begin(), response.error_ranks.end(), topology_.rank) ==
              response.error_ranks.end()) {
        return;
      }
      for (const std::string& name : response.names) {
        Deliver(name, Status::Error(response.error_code, response.error));
      }
      return;
    case Response::Kind::EXECUTE:
      break;
  }
  if (response.collective == Collective::ADD_PROCESS_SET || response.collective == Collective::REMOVE_PROCESS_SET) {
    ChangeProcessSets(response);
    OperationResult result;
    result.new_process_set = response.new_set_id;
    Deliver(response.names[0], Status::Ok(), result);
    return;
  }
  auto executor = executors_.find(response.process_set);
  if (executor == executors_.end()) return;  // a process set this rank is not in
  std::vector<Operation*> ops;
  std::list<StandIn> stand_ins;
  for (size_t i = 0; i < response.names.size(); ++i) {
    auto it = submitted_.find(response.names[i]);
    if (it != submitted_.end()) {
      ops.push_back(&it->second);
    } else if (joined_) {
      ops.push_back(&stand_ins.emplace_back(response, i).op);
    } else {
      throw std::runtime_error("told to run '" + response.names[i] + "', which this rank never submitted");
    }
  }
  OperationResult result;
  const bool recording = timeline_.active();
  const std::vector<Status> statuses =
      executor->second->executor.Run(response, ops, &result, recording ? &phase_log_ : nullptr);
  if (recording) timeline_.Executed(response, ops, phase_log_);
  for (size_t i = 0; i < response.names.size(); ++i) {
    Deliver(response.names[i], statuses[i], result);
  }
}

// Every rank runs this in the same response order, so the splits below pair up.
void Runtime::ChangeProcessSets(const Response& response) {
  if (response.collective == Collective::ADD_PROCESS_SET) {
    const int32_t id = response.new_set_id;
    std::vector<int> members(response.new_set_ranks.begin(), response.new_set_ranks.end());
    const bool member = std::find(members.begin(), members.end(), topology_.rank) != members.end();
    MPI_Comm comm;
    MPI_Comm_split(data_, member ? 0 : MPI_UNDEFINED, topology_.rank, &comm);
    if (member) executors_[id] = std::make_unique<ProcessSetComm>(comm, config_.chunk_bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    process_sets_[id] = std::move(members);
    return;
  }
  const int32_t id = response.removed_set;
  auto it = executors_.find(id);
  if (it != executors_.end()) {
    MPI_Comm comm = it->second->data;
    executors_.erase(it);
    MPI_Comm_free(&comm);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  process_sets_.erase(id);
}

std::vector<int> Runtime::ProcessSetRanks(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = process_sets_.find(id);
  return it == process_sets_.end() ? std::vector<int>{} : it->second;
}

void Runtime::Deliver(const std::string& name, const Status& status, const OperationResult& result) {
  auto it = submitted_.find(name);
  if (it == submitted_.end()) return;  // a stand-in, or a failure announced to all ranks
  Operation op = std::move(it->second);
  if (op.request.collective == Collective::JOIN) joined_ = false;
  submitted_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.erase(name);
  }
  op.done(status, result);
}

void Runtime::SendControl(int to, int tag, std::string bytes) {
  outgoing_.push_back({MPI_REQUEST_NULL, std::move(bytes)});
  Outgoing& out = outgoing_.back();
  if (out.bytes.size() > kMaxMessageBytes) throw std::runtime_error("control message too large");
  MPI_Isend(out.bytes.data(), static_cast<int>(out.bytes.size()), MPI_BYTE, to, tag, control_,
            &out.request);
}

void Runtime::ReapSends(bool block) {
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    if (block) {
      WaitPolitely(&it->request, NegotiationBackoff());
      done = 1;
    } else {
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    }
    it = done ? outgoing_.erase(it) : std::next(it);
  }
}

bool Runtime::WaitingOnPeers() const {
  return !submitted_.empty() || shutdown_sent_ || !outgoing_.empty() ||
         (coordinator_ && coordinator_->HasPending());
}

void Runtime::Idle(int64_t wait_micros) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto has_work = [this] { return !queue_.empty() || (!accepting_ && !shutdown_sent_); };
  if (has_work() || wait_micros == 0) return;  // 0: still in the spin window after progress
  if (!WaitingOnPeers()) {
    if (coordinator_) {
      wake_.wait_for(lock, std::chrono::microseconds(kCoordinatorIdleMicros), has_work);
    } else {
      wake_.wait(lock, has_work);
    }
  } else {
    wake_.wait_for(lock, std::chrono::microseconds(wait_micros), has_work);
  }
}

}  // namespace mpirep
