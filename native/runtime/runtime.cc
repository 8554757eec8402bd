// Thread model
// ------------
// Framework threads never block inside the core: Enqueue checks a request, puts it on queue_
// and wakes the background thread. That thread runs the rounds loop, and with it every MPI call
// of the core, except while a caller that waits for its own operation runs the loop instead
// (RunOnCaller); one thread at a time holds rounds_mutex_ and runs it. Rounds are taken by
// every rank in lock-step (core/negotiator.h):
//   1. take everything queued: remember it in submitted_, hand its request to the Negotiator;
//   2. contribute this rank's words to the round: the AND of every rank's few bits per
//      cached tensor on the control communicator, waited for politely;
//   3. run the cached tensors that every rank has submitted, fused: the steady state, in which
//      no message goes to rank 0;
//   4. only when some rank has requests (new or changed tensors, join, shutdown; rank 0 also
//      for stall cancellations), the slow phase: those ranks send their request lists to rank
//      0, which decides (core/round_leader.h), and rank 0 sends every rank the same response
//      list, which each accepts (Negotiator::Accept: whether it runs, fails or skips each
//      response) and carries out in list order: collectives through the set's Executor, then
//      each operation's `done`. With autotuning on, rank 0 also forces a slow phase when its
//      autotuner has chosen new settings; the list carries them and every rank switches before
//      running it.
// Each operation's state (core/tensor_states.h) moves from submitted to ended through the
// Negotiator while it is negotiated, and through Execute and Deliver here once it runs.
// A rank with operations pending starts the next round at once. An idle rank still takes part,
// since other ranks' tensors (of process sets it is not in), stall reports and shutdowns need
// every rank's round: after a short spin window it sleeps until an enqueue wakes it or the next
// idle round is due (kIdleRoundInterval). Waiting for other ranks can only be done by polling
// MPI, so every wait polls and yields for a short window and then sleeps in doubling intervals
// (Backoff), waking early when an operation is queued.
//
// Shutdown is negotiated too: a rank that shuts down says so in its request list and keeps
// taking part; rank 0 fails whatever can no longer complete, and when every rank has shut down
// it sends STOP, after which each thread frees its communicators and exits. A rank that shuts
// down because it failed aborts the job if STOP has not come kFailedRankGrace later.

#include "runtime.h"

#include <cmath>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "core/stand_in.h"
#include "core/validation.h"

namespace mpirep {
namespace {

constexpr int kRequestTag = 1;
constexpr int kResponseTag = 2;
constexpr int kCoordinator = 0;
// How often an idle rank takes part in a round, for the other ranks' sake.
constexpr auto kIdleRoundInterval = std::chrono::microseconds(1000);
// A rank that failed waits this long for the others to shut down too (each learns of the
// failure at its next collective). Past it, some rank is not calling mpirep at all (a long
// computation, a deadlock in user code), and the failed rank aborts the job, so that a failure
// always ends it. MPI_Finalize would otherwise wait for that rank forever.
constexpr auto kFailedRankGrace = std::chrono::seconds(5);
// After a rank learns of a lost peer it goes on waiting, passing the news on to its neighbours,
// before it ends the job: 2 s where the lost ranks are on its own host (frozen processes: the
// job can end through MPI_Abort). Where they are on other hosts, that host may be cut off, and
// then MPI_Abort and exits that make the launcher reach for it would hang the launcher: the
// rank waits for the launcher to notice the lost host and end the job (mpirep-run sets Open
// MPI's daemons to notice within peer_timeout_seconds + 5 s), or for the elastic driver to
// stop the generation, and only then ends itself.
constexpr auto kPeerLossGrace = std::chrono::seconds(2);
constexpr auto kLauncherGrace = std::chrono::seconds(20);
// How long the process may take to end on MPI_Abort before it ends itself.
constexpr auto kAbortGrace = std::chrono::seconds(10);
// How long a rank that shuts down waits for its liveness neighbours' goodbyes: they left the
// rounds loop in the same round, so they are moments away unless one died meanwhile.
constexpr auto kLeaveGrace = std::chrono::seconds(10);
// Flight records on stalls and mismatches: at most one a second, however many collectives fail.
constexpr auto kProblemDumpInterval = std::chrono::seconds(1);
// Horovod's value of the timeline setting that records nothing until start_timeline().
constexpr char kTimelineStartedLater[] = "DYNAMIC";
// Waiting for other ranks to submit can last as long as their compute does: spin-yield briefly
// for the common case of ranks in step, then sleep.
Backoff NegotiationBackoff() { return Backoff(/*spin_micros=*/100, /*max_sleep_micros=*/200); }
// An idle rank's round usually waits for other idle ranks, which come at their next idle round.
Backoff IdleBackoff() { return Backoff(/*spin_micros=*/0, /*max_sleep_micros=*/1000); }

// Whether a message with `tag` from `source` has arrived; `status` describes it.
bool MessageWaiting(MPI_Comm comm, int source, int tag, MPI_Status* status) {
  int flag = 0;
  MPI_Iprobe(source, tag, comm, &flag, status);
  return flag != 0;
}

int64_t ThreadCpuNanos() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// Adds the thread CPU time of its scope to `*total`, when `on`.
class WorkTimer {
 public:
  WorkTimer(bool on, int64_t* total) : total_(on ? total : nullptr), start_(on ? ThreadCpuNanos() : 0) {}
  ~WorkTimer() {
    if (total_) *total_ += ThreadCpuNanos() - start_;
  }

 private:
  int64_t* total_;
  int64_t start_;
};

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// Every rank's MPI processor name (its host), by rank (collective).
std::vector<std::string> GatherHostNames(MPI_Comm comm, int size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  return hosts;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
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

Runtime::Runtime(MPI_Comm comm, const Config& config)
    : config_(config), published_config_(config), recorder_(static_cast<size_t>(config.flight_recorder_entries)) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error(
        "mpirep needs MPI initialised with MPI_THREAD_SERIALIZED or better (mpi4py asks for "
        "MPI_THREAD_MULTIPLE unless mpi4py.rc.thread_level says otherwise)");
  }
  thread_ = std::thread(&Runtime::ThreadMain, this, comm);
  std::unique_lock<std::mutex> lock(mutex_);
  started_.wait(lock, [this] { return running_ || !setup_error_.empty(); });
  if (!setup_error_.empty()) {
    lock.unlock();
    thread_.join();
    throw std::invalid_argument(setup_error_);
  }
}

Runtime::~Runtime() { Shutdown(); }

void Runtime::Setup(MPI_Comm comm) {
  MPI_Comm_dup(comm, &control_);
  MPI_Comm_dup(comm, &data_);
  MPI_Comm_rank(data_, &topology_.rank);
  MPI_Comm_size(data_, &topology_.size);
  CheckSettingsAgree();
  MPI_Comm local, cross;
  MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, topology_.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &topology_.local_rank);
  MPI_Comm_size(local, &topology_.local_size);
  MPI_Comm_split(data_, topology_.local_rank, topology_.rank, &cross);
  MPI_Comm_rank(cross, &topology_.cross_rank);
  MPI_Comm_size(cross, &topology_.cross_size);
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  hosts_ = GatherHostNames(control_, topology_.size);
  job_id_ = BroadcastFromCoordinator(control_, hosts_[kCoordinator] + "-" + std::to_string(getpid()) + "-" +
                                                   std::to_string(static_cast<int64_t>(WallSeconds() * 1000)));
  sets_ = std::make_unique<ProcessSets>(topology_.size);
  MPI_Comm everyone;
  MPI_Comm_dup(data_, &everyone);
  sets_->Attach(0, std::make_unique<ProcessSetComm>(everyone, config_, &while_waiting_));
  negotiator_ = std::make_unique<Negotiator>(topology_.rank, topology_.size, config_, *sets_);
  control_transport_ = std::make_unique<MpiTransport>(control_);
  agreement_ = std::make_unique<AndAllreduce>(*control_transport_);
  if (config_.peer_timeout_seconds > 0 && topology_.size > 1) {
    MPI_Comm_dup(comm, &liveness_comm_);
    liveness_transport_ = std::make_unique<MpiTransport>(liveness_comm_);
    liveness_ = std::make_unique<Liveness>(*liveness_transport_, Seconds(config_.peer_timeout_seconds), Clock::now());
  }
  std::string timeline_error;
  if (topology_.rank == kCoordinator && !config_.timeline.empty() && config_.timeline != kTimelineStartedLater) {
    timeline_error = timeline_.Start(config_.timeline, config_.timeline_mark_cycles);
  }
  // A timeline rank 0 cannot write fails init on every rank, rather than on rank 0 alone.
  timeline_error = BroadcastFromCoordinator(control_, timeline_error);
  if (!timeline_error.empty()) throw std::runtime_error("rank 0: " + timeline_error);
  StartAutotuning();
  last_round_ = std::chrono::steady_clock::now();
}

// Every rank plans the same fusion of cached tensors and the same ring chunks, and contributes
// words of the same length to a round, on its own settings: those must be equal everywhere, and
// so must the settings that decide whether a collective runs at all.
void Runtime::CheckSettingsAgree() {
  const std::pair<const char*, int64_t> settings[] = {{"cache_capacity", config_.cache_capacity},
                                                      {"fusion_threshold", config_.fusion_threshold},
                                                      {"small_allreduce_bytes", config_.small_allreduce_bytes},
                                                      {"chunk_bytes", config_.chunk_bytes},
                                                      // a rank in shared memory and one on the ring would wait for each other
                                                      {"shm_allreduce", config_.shm_allreduce},
                                                      // the ranks of a host map one segment, sized by it
                                                      {"shm_slot_bytes", config_.shm_slot_bytes},
                                                      // the heartbeats' communicator exists only where it is on
                                                      {"peer_timeout_seconds (in ms)", std::llround(config_.peer_timeout_seconds * 1000)},
                                                      // training that backs up agrees on a stop at each step only where it is set
                                                      {"preemption_signals (0: none)", !config_.preemption_signals.empty()}};
  constexpr int n = sizeof settings / sizeof settings[0];
  int64_t bounds[2 * n];  // each setting's maximum, then minus its minimum
  for (int i = 0; i < n; ++i) {
    bounds[i] = settings[i].second;
    bounds[n + i] = -settings[i].second;
  }
  MPI_Allreduce(MPI_IN_PLACE, bounds, 2 * n, MPI_INT64_T, MPI_MAX, control_);
  for (int i = 0; i < n; ++i) {
    if (bounds[i] != -bounds[n + i]) {
      throw std::invalid_argument(std::string("mpirep setting ") + settings[i].first +
                                  " differs between ranks (from " + std::to_string(-bounds[n + i]) +
                                  " to " + std::to_string(bounds[i]) + "); every rank must use the same value");
    }
  }
}

// Rank 0's autotuner and its log; when rank 0 cannot write the log, every rank's start fails.
// The hierarchical allreduce is tuned where the set of every rank can take either path.
void Runtime::StartAutotuning() {
  std::string error;
  if (topology_.rank == kCoordinator && config_.autotune) {
    try {
      autotuner_ = std::make_unique<Autotuner>(
          config_, DefaultTunedParameters(sets_->Channel(0)->executor().HierarchicalIsAChoice()));
      if (!config_.autotune_log.empty()) {
        autotune_log_ = std::make_unique<AutotuneLog>(config_.autotune_log, autotuner_->parameters());
      }
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
  }
  error = BroadcastFromCoordinator(control_, error);
  if (!error.empty()) throw std::invalid_argument("rank 0: " + error);
}

void Runtime::ThreadMain(MPI_Comm comm) {
  UseFineTimerSlack();
  pthread_setname_np(pthread_self(), "mpirep");  // as top, perf and gdb show it
  try {
    Setup(comm);
  } catch (const std::exception& e) {
    MPI_Comm_free(&control_);
    MPI_Comm_free(&data_);
    std::lock_guard<std::mutex> lock(mutex_);
    setup_error_ = e.what();
    started_.notify_all();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = true;
  }
  started_.notify_all();
  try {
    Backoff backoff = NegotiationBackoff();
    while (true) {
      StandAsideForCallers(&backoff);
      std::unique_lock<std::mutex> rounds(rounds_mutex_);
      if (stopped_) break;
      const std::optional<Clock::time_point> until = LoopPass(backoff);
      rounds.unlock();
      if (until) Sleep(*until);
    }
  } catch (const std::exception& e) {
    Fatal(e);
  }
  std::lock_guard<std::mutex> rounds(rounds_mutex_);  // callers may still look at stopped_
  LeaveLiveness();
  timeline_.Stop();
  for (auto& [name, op] : submitted_) {
    op.state = Advance(op.state, TensorEvent::kAborted);
    op.done(Status::Error(StatusCode::SHUT_DOWN, "mpirep was shut down before '" + name + "' ran"), {});
  }
  submitted_.clear();
  ReapSends(true);
  sets_->DropChannels();
  agreement_.reset();
  control_transport_.reset();
  if (liveness_comm_ != MPI_COMM_NULL) MPI_Comm_free(&liveness_comm_);
  MPI_Comm_free(&control_);
  MPI_Comm_free(&data_);
}

// One pass of the rounds loop, by whichever thread holds rounds_mutex_. Returns when to look
// again: at once (nullopt), after a nap (ranks waiting for a peer's tensor), or, when idle, once
// the next idle round is due; an enqueue cuts any wait short.
std::optional<Runtime::Clock::time_point> Runtime::LoopPass(Backoff& backoff) {
  timeline_.BeginRound();
  bool progressed = TakeQueued();
  const bool idle_round_due = topology_.size > 1 && Clock::now() - last_round_ >= kIdleRoundInterval;
  if (progressed || negotiator_->Busy() || idle_round_due) progressed |= RunRound();
  ReapSends(false);
  AbortIfFailedLongAgo();
  timeline_.EndRound(progressed);
  if (progressed) {
    backoff.Reset();
    return std::nullopt;
  }
  const int64_t micros = backoff.NextWaitMicros();  // yields while in its spin window
  if (micros == 0) return std::nullopt;
  if (negotiator_->Busy()) return Clock::now() + std::chrono::microseconds(micros);
  return topology_.size == 1 ? Clock::time_point::max() : last_round_ + kIdleRoundInterval;
}

void Runtime::Fatal(const std::exception& e) {
  std::fprintf(stderr, "[mpirep] rank %d: fatal error in the core's rounds: %s\n", topology_.rank,
               e.what());
  timeline_.Stop();
  MPI_Abort(data_, 1);
  std::abort();
}

// A thread that would otherwise sleep until its own operation ends runs the rounds itself, which
// spares it two hand-offs (to the background thread and back), each a wake-up that costs tens
// of microseconds on a busy host. The background thread stands aside meanwhile. Rounds are the
// same whoever runs them, and one thread at a time runs them (rounds_mutex_), so the core's
// state and MPI keep a single user at a time. A caller that finds the rounds busy on another
// thread pauses and tries again; it never blocks on rounds_mutex_, since that thread may be
// waiting for an operation that this caller's return would let its program submit.
Status Runtime::RunOnCaller(Operation op, const std::function<bool()>& finished,
                            const std::function<void()>& pause) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++callers_waiting_;
  }
  const Status enqueued = Enqueue(std::move(op), /*wake=*/false);
  Backoff backoff = NegotiationBackoff();
  while (enqueued.ok() && !finished()) {
    std::unique_lock<std::mutex> rounds(rounds_mutex_, std::try_to_lock);
    if (!rounds.owns_lock() || stopped_) {
      if (rounds.owns_lock()) rounds.unlock();
      pause();
      continue;
    }
    try {
      while (!stopped_ && !finished()) {
        const std::optional<Clock::time_point> until = LoopPass(backoff);
        if (until) Sleep(std::min(*until, Clock::now() + kIdleRoundInterval));
      }
    } catch (const std::exception& e) {
      Fatal(e);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --callers_waiting_;
  }
  callers_left_.notify_all();
  return enqueued;
}

// After callers have run the rounds, the operations that follow are theirs too, most likely:
// the background thread starts again without a spin window.
void Runtime::StandAsideForCallers(Backoff* backoff) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (callers_waiting_ == 0) return;
  callers_left_.wait_for(lock, kIdleRoundInterval, [this] { return callers_waiting_ == 0; });
  backoff->SkipSpin();
}

// An enqueue cuts the sleep short: a round in progress cannot take the operation, but testing
// it again at once lets the next round, which can, start as soon as possible.
void Runtime::Sleep(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_until(lock, until, [this] { return wakeups_ != woken_at_; });
  woken_at_ = wakeups_;
}

Status Runtime::Enqueue(Operation op, bool wake) {
  op.request.rank = topology_.rank;
  op.enqueued_at = std::chrono::steady_clock::now();
  Status valid = sets_->Validate(op.request, topology_.rank);
  if (!valid.ok()) return valid;
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
    ++wakeups_;
    // A caller about to run the rounds itself wakes no one, unless another caller may be running
    // them now, napping: then every sleeper, since the background thread may be one of them.
    if (!wake) {
      if (callers_waiting_ > 1) wake_.notify_all();
      return Status::Ok();
    }
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
    ++wakeups_;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

NegotiationStats Runtime::Stats() {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return published_;
}

void Runtime::PublishStats() {
  stats_.counts = negotiator_->counts();
  std::lock_guard<std::mutex> lock(published_mutex_);
  published_ = stats_;
}

bool Runtime::TakeQueued() {
  bool shut_down = false;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken_.swap(queue_);
    woken_at_ = wakeups_;
    shut_down = !accepting_ && !shutdown_taken_;
    reason = shutdown_reason_;
  }
  const bool any = !taken_.empty() || shut_down;
  for (Operation& op : taken_) {
    std::string name = op.request.name;
    negotiator_->Submit(submitted_.emplace(std::move(name), std::move(op)).first->second);
  }
  taken_.clear();
  if (shut_down) {
    shutdown_taken_ = true;
    negotiator_->ShutDown(reason);
    if (!reason.empty()) {
      abort_at_ = std::chrono::steady_clock::now() + kFailedRankGrace;
      WriteFlightRecord("this rank failed: " + reason, nullptr);
    }
  }
  return any;
}

bool Runtime::RunRound() {
  const bool busy = negotiator_->Busy();
  const bool timing = timing_;
  RoundWords* words;
  {
    WorkTimer work(timing, &stats_.work_ns);
    words = &negotiator_->Contribute(std::chrono::steady_clock::now());
    for (const std::string& line : negotiator_->TakeReports()) std::fprintf(stderr, "[mpirep] %s\n", line.c_str());
    agreement_->Start(words->data(), words->size());
  }
  stats_.agreement_bytes += words->size() * static_cast<int64_t>(sizeof(uint64_t));
  Await([this] { return agreement_->Test(); }, busy ? NegotiationBackoff() : IdleBackoff());
  last_round_ = std::chrono::steady_clock::now();
  std::vector<Response> cached;
  {
    WorkTimer work(timing, &stats_.work_ns);
    cached = negotiator_->Agree(*words, last_round_);
  }
  PublishStats();  // before the operations end, so that their callers see what ran them
  for (const Response& response : cached) Execute(response);
  const bool slow = negotiator_->SlowPhase() && SlowPhase();
  PublishStats();
  return !cached.empty() || slow;
}

// The round's request lists go to rank 0, its response list to every rank; returns whether any
// response ran.
bool Runtime::SlowPhase() {
  const bool timing = timing_;
  ResponseList list;
  if (topology_.rank != kCoordinator) {
    if (negotiator_->SendsRequests()) {
      WorkTimer work(timing, &stats_.work_ns);
      SendControl(kCoordinator, kRequestTag, Encode(negotiator_->TakeRequests()));
    }
    const std::string bytes = AwaitControl(kCoordinator, kResponseTag);
    WorkTimer work(timing, &stats_.work_ns);
    list = DecodeResponseList(bytes);
  } else {
    for (int sender : negotiator_->Senders()) {
      const std::string bytes = sender == kCoordinator ? std::string() : AwaitControl(sender, kRequestTag);
      WorkTimer work(timing, &stats_.work_ns);
      const auto now = std::chrono::steady_clock::now();
      negotiator_->Receive(sender, sender == kCoordinator ? negotiator_->TakeRequests() : DecodeRequestList(bytes), now);
    }
    WorkTimer work(timing, &stats_.work_ns);
    list = negotiator_->Decide();
    const std::string bytes = Encode(list);
    for (int r = 0; r < topology_.size; ++r) {
      if (r != kCoordinator) SendControl(r, kResponseTag, bytes);
    }
  }
  if (list.retune) Apply(*list.retune);
  for (const Response& response : list.responses) {
    switch (negotiator_->Accept(response)) {
      case LocalPart::kRun:
        Execute(response);
        break;
      case LocalPart::kFail:
        Deliver(response.names, std::vector<Status>(response.names.size(), Status::Error(response.error_code, response.error)),
                Clock::now());
        break;
      case LocalPart::kStop:
        stopped_ = true;
        break;
      case LocalPart::kNone:
        break;
    }
  }
  return !list.responses.empty();
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
  const CollectiveTraits& traits = Traits(response.collective);
  if (traits.changes_sets()) {
    if (traits.adds_set()) AttachNewSet(response);
    OperationResult result;
    result.new_process_set = response.new_set_id;
    Deliver(response.names, {Status::Ok()}, Clock::now(), result);
    return;
  }
  SetChannel* channel = sets_->Channel(response.process_set);
  if (!channel) throw std::logic_error("told to run a collective of process set " + std::to_string(response.process_set) + ", which this rank is not in");
  std::vector<Operation*> ops;
  std::list<StandIn> stand_ins;
  for (size_t i = 0; i < response.names.size(); ++i) {
    auto it = submitted_.find(response.names[i]);
    if (it != submitted_.end()) {
      ops.push_back(&it->second);
    } else if (negotiator_->StandsIn()) {
      ops.push_back(&stand_ins.emplace_back(response, i).op);
    } else {
      throw std::runtime_error("told to run '" + response.names[i] + "', which this rank never submitted");
    }
  }
  OperationResult result;
  const bool recording = timeline_.active();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Status> statuses =
      channel->executor().Run(response, ops, &result, recording ? &phase_log_ : nullptr);
  if (recording) timeline_.Executed(response, ops, phase_log_);
  if (autotuner_ && traits.tuned() && response.process_set == 0) Tune(ops, start);
  Deliver(response.names, statuses, start, result);
}

void Runtime::Tune(const std::vector<Operation*>& ops, std::chrono::steady_clock::time_point start) {
  for (const Operation* op : ops) {
    const std::optional<Trial> trial =
        autotuner_->Observe(op->request.name, TensorBytes(op->request.dtype, op->request.shape), start);
    if (!trial) continue;
    if (autotune_log_) {
      autotune_log_->Write(*trial);
      if (autotuner_->finished()) autotune_log_->WriteFinal(autotuner_->best());
    }
    negotiator_->Propose(autotuner_->Change());
  }
}

void Runtime::Apply(const Retune& retune) {
  bool hierarchical_tuned = false;
  for (const auto& [name, value] : retune.settings) {
    const std::string error = SetSetting(&config_, name, value);
    if (!error.empty()) throw std::runtime_error("autotuning chose a bad value: " + error);
    hierarchical_tuned |= name == "hierarchical_allreduce";
  }
  negotiator_->Reconfigure(config_);
  // Every process set's executor, as each set's own takes these settings when it is made. The
  // hierarchical setting only when tuned: until then each set uses rank 0's, not this rank's.
  sets_->ForEachChannel([&](SetChannel& set) {
    set.executor().SetChunkBytes(config_.chunk_bytes);
    if (hierarchical_tuned) set.executor().SetHierarchicalAllreduce(config_.hierarchical_allreduce);
  });
  std::lock_guard<std::mutex> lock(published_mutex_);
  published_config_ = config_;
  autotune_finished_ |= retune.final;
}

Config Runtime::Settings() {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return published_config_;
}

bool Runtime::AutotuneFinished() {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return autotune_finished_;
}

// Every rank runs this in the same response order, so the splits pair up. The negotiator has
// added the set's members to the registry on accepting the response.
void Runtime::AttachNewSet(const Response& response) {
  const int32_t id = response.new_set_id;
  const auto& ranks = response.new_set_ranks;
  const bool member = std::find(ranks.begin(), ranks.end(), topology_.rank) != ranks.end();
  MPI_Comm comm;
  MPI_Comm_split(data_, member ? 0 : MPI_UNDEFINED, topology_.rank, &comm);
  if (member) sets_->Attach(id, std::make_unique<ProcessSetComm>(comm, config_, &while_waiting_));
}

std::vector<int> Runtime::ProcessSetRanks(int32_t id) { return sets_->Ranks(id); }

void Runtime::Deliver(const std::vector<std::string>& names, const std::vector<Status>& statuses,
                      Clock::time_point started, const OperationResult& result) {
  const Clock::time_point ended = Clock::now();
  // Taken out of submitted_ as they are, rather than moved: an operation is a few hundred bytes.
  std::vector<std::pair<decltype(submitted_)::node_type, const Status*>> ending;
  ending.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = submitted_.find(names[i]);
    if (it == submitted_.end()) continue;  // a stand-in
    // What ran completes here; what negotiation rejected has ended already (Negotiator::Accept).
    TensorState& state = it->second.state;
    if (state == TensorState::kRunning) state = Advance(state, TensorEvent::kCompleted);
    recorder_.Record(it->second, started, ended, statuses[i].code, static_cast<int32_t>(names.size()));
    ending.emplace_back(submitted_.extract(it), &statuses[i]);
  }
  {
    // before `done`, which may submit the same name again
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [node, status] : ending) in_flight_.erase(node.key());
  }
  for (auto& [node, status] : ending) node.mapped().done(*status, result);
  const StatusCode code = statuses.empty() ? StatusCode::OK : statuses[0].code;
  if ((code == StatusCode::STALLED || code == StatusCode::MISMATCH) && ended - last_problem_dump_ >= kProblemDumpInterval) {
    last_problem_dump_ = ended;
    WriteFlightRecord(statuses[0].message, nullptr);
  }
}

void Runtime::SendControl(int to, int tag, std::string bytes) {
  outgoing_.push_back({MPI_REQUEST_NULL, std::move(bytes)});
  Outgoing& out = outgoing_.back();
  if (out.bytes.size() > kMaxMessageBytes) throw std::runtime_error("control message too large");
  MPI_Isend(out.bytes.data(), static_cast<int>(out.bytes.size()), MPI_BYTE, to, tag, control_,
            &out.request);
  ++stats_.messages_sent;
  stats_.bytes_sent += static_cast<int64_t>(out.bytes.size());
}

// The next message with `tag` from `from`, which is in this round and sends it soon.
std::string Runtime::AwaitControl(int from, int tag) {
  MPI_Status status;
  Backoff backoff = NegotiationBackoff();
  while (!MessageWaiting(control_, from, tag, &status)) {
    AbortIfFailedLongAgo();
    WatchPeers();
    const int64_t micros = backoff.NextWaitMicros();
    if (micros > 0) Sleep(Clock::now() + std::chrono::microseconds(micros));
  }
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  std::string message(static_cast<size_t>(bytes), '\0');
  MPI_Recv(message.data(), bytes, MPI_BYTE, from, tag, control_, MPI_STATUS_IGNORE);
  ++stats_.messages_received;
  stats_.bytes_received += bytes;
  return message;
}

void Runtime::Await(const std::function<bool()>& done, Backoff backoff) {
  while (!done()) {
    AbortIfFailedLongAgo();
    WatchPeers();
    const int64_t micros = backoff.NextWaitMicros();
    if (micros > 0) Sleep(Clock::now() + std::chrono::microseconds(micros));
  }
}

void Runtime::ReapSends(bool block) {
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    if (block) {
      WaitPolitely(&it->request, NegotiationBackoff(), &while_waiting_);
      done = 1;
    } else {
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    }
    it = done ? outgoing_.erase(it) : std::next(it);
  }
}

// After STOP nobody waits for anybody: stop watching, with nothing left in flight on the
// heartbeats' communicator when it is freed.
void Runtime::LeaveLiveness() {
  if (!liveness_) return;
  const Clock::time_point give_up_at = Clock::now() + kLeaveGrace;
  while (!liveness_->Leave() && Clock::now() < give_up_at) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  liveness_.reset();
  liveness_transport_.reset();
}

void Runtime::WatchPeers() {
  if (!liveness_) return;
  const Clock::time_point now = Clock::now();
  const std::optional<PeerLoss>& loss = liveness_->Check(now);
  if (!loss) return;
  if (!peer_loss_reported_) {
    peer_loss_reported_ = true;
    ReportPeerLoss(*loss, now);
  }
  const bool wait_for_launcher = config_.elastic_peer_loss || OnOtherHosts(Lost(*loss));
  if (now - loss->at >= (wait_for_launcher ? kLauncherGrace : kPeerLossGrace)) EndForPeerLoss(*loss);
}

// "rank 2 on h1", "ranks 2, 3 on h2", "ranks 1 on h1 and 3 on h2"
std::string Runtime::DescribeRanks(const std::vector<int>& ranks) const {
  std::vector<std::pair<std::string, std::vector<int>>> by_host;
  for (int r : ranks) {
    auto it = std::find_if(by_host.begin(), by_host.end(), [&](const auto& h) { return h.first == hosts_[r]; });
    if (it == by_host.end()) it = by_host.insert(by_host.end(), {hosts_[r], {}});
    it->second.push_back(r);
  }
  std::string out = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t h = 0; h < by_host.size(); ++h) {
    if (h) out += h + 1 == by_host.size() ? " and " : ", ";
    for (size_t i = 0; i < by_host[h].second.size(); ++i) out += (i ? ", " : "") + std::to_string(by_host[h].second[i]);
    out += " on " + by_host[h].first;
  }
  return out;
}

// The ranks lost: those this rank found silent, or was told of.
const std::vector<int>& Runtime::Lost(const PeerLoss& loss) const {
  return loss.told_by >= 0 ? loss.reported : loss.silent;
}

bool Runtime::OnOtherHosts(const std::vector<int>& ranks) const {
  return std::none_of(ranks.begin(), ranks.end(), [&](int r) { return hosts_[r] == hosts_[topology_.rank]; });
}

// Cut off: none of its neighbours answers, and none of them is on its own host, where a link
// cannot go down (there they are frozen, and the job can still be ended through MPI).
bool Runtime::CutOff(const PeerLoss& loss) const { return loss.cut_off && OnOtherHosts(loss.silent); }

void Runtime::ReportPeerLoss(const PeerLoss& loss, Clock::time_point now) {
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", config_.peer_timeout_seconds);
  const std::string me = "rank " + std::to_string(topology_.rank) + " on " + hosts_[topology_.rank];
  std::string what;
  if (loss.told_by >= 0) {
    what = DescribeRanks({loss.told_by}) + " reports that " + DescribeRanks(loss.reported) + " stopped answering";
  } else if (CutOff(loss)) {
    what = "none of its neighbours (" + DescribeRanks(loss.silent) + ") has answered for " + timeout +
           " s: this rank is cut off from them, or they all stopped";
  } else {
    what = DescribeRanks(loss.silent) + (loss.silent.size() > 1 ? " have" : " has") + " not answered for " +
           timeout + " s: frozen, or on a host that is down or cut off from this one";
  }
  std::vector<const Operation*> in_flight;
  for (const auto& [name, op] : submitted_) in_flight.push_back(&op);
  std::sort(in_flight.begin(), in_flight.end(),
            [](const Operation* a, const Operation* b) { return a->enqueued_at < b->enqueued_at; });
  std::string waiting;
  for (size_t i = 0; i < in_flight.size() && i < 3; ++i) {
    const Operation& op = *in_flight[i];
    char line[160];
    std::snprintf(line, sizeof line, "%s %s '%s' (%s, %lld bytes, %s) for %.1f s", i ? ";" : "",
                  CollectiveName(op.request.collective), op.request.name.c_str(), DataTypeName(op.request.dtype),
                  static_cast<long long>(TensorBytes(op.request.dtype, op.request.shape)), StateName(op.state),
                  std::chrono::duration<double>(now - op.enqueued_at).count());
    waiting += line;
  }
  if (in_flight.size() > 3) waiting += "; and " + std::to_string(in_flight.size() - 3) + " more";
  const std::string record = WriteFlightRecord("peer timeout: " + what, &loss);
  const char* next = config_.elastic_peer_loss    ? "Telling the elastic driver"
                     : CutOff(loss)               ? "Ending this rank"
                     : OnOtherHosts(Lost(loss)) ? "Ending the job (the launcher ends it once it finds the host lost)"
                                                  : "Ending the job";
  std::fprintf(stderr, "[mpirep] %s: %s (peer_timeout_seconds=%s). In flight here:%s. Flight record: %s. %s.\n",
               me.c_str(), what.c_str(), timeout, waiting.empty() ? " nothing" : waiting.c_str(), record.c_str(), next);
  std::fflush(stderr);
  if (config_.elastic_peer_loss) {
    std::string lost;
    for (int r : Lost(loss)) lost += (lost.empty() ? "" : ",") + std::to_string(r);
    std::lock_guard<std::mutex> lock(published_mutex_);
    peer_loss_report_ = std::move(lost);
  }
}

void Runtime::EndForPeerLoss(const PeerLoss& loss) {
  // Where lost ranks are on other hosts nothing has ended this rank in the grace (kLauncherGrace):
  // it ends itself.
  if (config_.elastic_peer_loss || OnOtherHosts(Lost(loss))) _exit(kPeerLostExitStatus);
  std::thread([] {
    std::this_thread::sleep_for(kAbortGrace);
    _exit(kPeerLostExitStatus);
  }).detach();
  MPI_Abort(control_, kPeerLostExitStatus);
  _exit(kPeerLostExitStatus);
}

std::string Runtime::WriteFlightRecord(const std::string& reason, const PeerLoss* loss) {
  const Clock::time_point now = Clock::now();
  FlightDump dump;
  dump.job = job_id_;
  dump.rank = topology_.rank;
  dump.size = topology_.size;
  dump.hosts = hosts_;
  dump.pid = getpid();
  dump.reason = reason;
  dump.peer_timeout_seconds = config_.peer_timeout_seconds;
  if (loss) {
    for (int peer : loss->silent) {
      dump.silent.push_back({peer, std::chrono::duration<double>(liveness_->Silence(peer, now)).count()});
    }
    dump.cut_off = CutOff(*loss);
    dump.told_by = loss->told_by;
    dump.reported = loss->reported;
  }
  for (const auto& [name, op] : submitted_) {
    dump.in_flight.push_back({name, op.request.collective, op.request.dtype, TensorBytes(op.request.dtype, op.request.shape),
                              op.request.process_set, op.state, op.enqueued_at});
  }
  dump.waiting = negotiator_->Waiting();
  dump.recent = recorder_.Entries();
  const std::string written = WriteFlightDump(config_.flight_recorder_dir, topology_.rank, FlightDumpJson(dump, now, WallSeconds()));
  if (written.rfind("error: ", 0) == 0) {
    std::fprintf(stderr, "[mpirep] rank %d: no flight record: %s\n", topology_.rank, written.c_str() + 7);
  }
  return written;
}

std::string Runtime::DumpFlightRecord(const std::string& reason) {
  std::lock_guard<std::mutex> rounds(rounds_mutex_);
  return WriteFlightRecord(reason, nullptr);
}

std::string Runtime::PeerLossReport() {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return peer_loss_report_;
}

}  // namespace mpirep
