#include "c_api.h"

#include <mpi.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "core/buffer_pool.h"
#include "core/settings.h"
#include "core/stream_copy.h"
#include "runtime/session.h"

namespace mpirep {
namespace {

// Output memory of every operation of every binding; 1 GiB of it may wait for reuse. Never
// destroyed: arrays and tensors may outlive static destructors.
BufferPool& OutputPool() {
  static BufferPool* pool = new BufferPool(size_t{1} << 30);
  return *pool;
}

int Report(StatusCode code, const std::string& message, char* out, size_t size) {
  if (out && size > 0) {
    const size_t n = std::min(message.size(), size - 1);
    std::memcpy(out, message.data(), n);
    out[n] = '\0';
  }
  return static_cast<int>(code);
}

int NotInitialized(char* error, size_t error_size) {
  return Report(StatusCode::NOT_INITIALIZED, "mpirep is not initialised: call init() first", error, error_size);
}

int Start(int fortran_comm, int nsettings, const char* const* names, const char* const* values, char* error,
          size_t error_size) {
  Config config;
  for (int i = 0; i < nsettings; ++i) {
    const std::string why = SetSetting(&config, names[i], values[i]);
    if (!why.empty()) return Report(StatusCode::INVALID_ARGUMENT, why, error, error_size);
  }
  try {
    StartSession(MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm)), config);
  } catch (const std::invalid_argument& e) {  // the ranks' settings disagree
    return Report(StatusCode::INVALID_ARGUMENT, e.what(), error, error_size);
  } catch (const std::exception& e) {
    return Report(StatusCode::INTERNAL, e.what(), error, error_size);
  }
  return static_cast<int>(StatusCode::OK);
}

void Shutdown(const char* reason) { EndSession(reason ? reason : ""); }

int IsInitialized() { return CurrentRuntime() != nullptr; }

int GetTopology(mpirep_topology* out) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return 0;
  const Topology& t = runtime->topology();
  *out = {t.rank, t.size, t.local_rank, t.local_size, t.cross_rank, t.cross_size};
  return 1;
}

int ProcessSetRanks(int id, int* out, int capacity) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return -1;
  const std::vector<int> ranks = runtime->ProcessSetRanks(id);
  if (ranks.empty()) return -1;
  for (int i = 0; i < capacity && i < static_cast<int>(ranks.size()); ++i) out[i] = ranks[i];
  return static_cast<int>(ranks.size());
}

Operation FromDesc(const mpirep_op_desc* desc, mpirep_allocate_fn allocate, mpirep_done_fn done, void* user) {
  Operation op;
  Request& r = op.request;
  r.collective = static_cast<Collective>(desc->collective);
  r.name = desc->name ? desc->name : "";
  r.dtype = static_cast<DataType>(desc->dtype);
  r.shape.assign(desc->shape, desc->shape + desc->ndim);
  r.op = static_cast<ReduceOp>(desc->reduce_op);
  r.root = desc->root_rank;
  r.prescale = desc->prescale;
  r.postscale = desc->postscale;
  if (desc->splits) r.splits.assign(desc->splits, desc->splits + desc->nsplits);
  r.process_set = desc->process_set;
  r.group_size = desc->group_size;
  r.group = desc->group ? desc->group : "";
  if (desc->new_set_ranks) r.new_set_ranks.assign(desc->new_set_ranks, desc->new_set_ranks + desc->n_new_set_ranks);
  r.removed_set = desc->removed_set;
  op.input = desc->input;
  op.allocate = [allocate, user](const Shape& shape) {
    return allocate(user, static_cast<int>(shape.size()), shape.data());
  };
  op.done = [done, user](const Status& status, const OperationResult& result) {
    const mpirep_result out{static_cast<int>(status.code), status.message.c_str(),
                            static_cast<int>(result.received_splits.size()), result.received_splits.data(),
                            result.last_joined_rank, result.new_process_set};
    done(user, &out);
  };
  return op;
}

int Enqueue(const mpirep_op_desc* desc, mpirep_allocate_fn allocate, mpirep_done_fn done, void* user, char* error,
            size_t error_size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return NotInitialized(error, error_size);
  const Status status = runtime->Enqueue(FromDesc(desc, allocate, done, user));
  return status.ok() ? static_cast<int>(StatusCode::OK) : Report(status.code, status.message, error, error_size);
}

int EnqueueAndWait(const mpirep_op_desc* desc, mpirep_allocate_fn allocate, mpirep_done_fn done, void* user,
                   mpirep_finished_fn finished, mpirep_pause_fn pause, void* wait_user, char* error,
                   size_t error_size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return NotInitialized(error, error_size);
  const Status status = runtime->RunOnCaller(
      FromDesc(desc, allocate, done, user), [=] { return finished(wait_user) != 0; }, [=] { pause(wait_user); });
  return status.ok() ? static_cast<int>(StatusCode::OK) : Report(status.code, status.message, error, error_size);
}

int GetNegotiationStats(mpirep_negotiation_stats* out) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return 0;
  const NegotiationStats s = runtime->Stats();
  *out = {s.counts.rounds,       s.counts.slow_rounds,    s.counts.cached_tensors, s.counts.requests_sent,
          s.counts.requests_received, s.messages_sent,    s.messages_received,     s.bytes_sent,
          s.bytes_received,      s.agreement_bytes,       s.work_ns};
  return 1;
}

void TimeNegotiation(int on) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (runtime) runtime->TimeNegotiation(on != 0);
}

int StartTimeline(const char* path, int mark_cycles, char* error, size_t error_size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return NotInitialized(error, error_size);
  const Status status = runtime->StartTimeline(path ? path : "", mark_cycles != 0);
  return status.ok() ? static_cast<int>(StatusCode::OK) : Report(status.code, status.message, error, error_size);
}

int StopTimeline(char* error, size_t error_size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return NotInitialized(error, error_size);
  runtime->StopTimeline();
  return static_cast<int>(StatusCode::OK);
}

int CurrentSetting(const char* name, char* value, size_t size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return 0;
  std::string text;
  try {
    text = GetSetting(runtime->Settings(), name);
  } catch (const std::invalid_argument&) {
    return -1;
  }
  if (text.size() >= size) return -2;
  std::memcpy(value, text.c_str(), text.size() + 1);
  return 1;
}

int AutotuneFinished() {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  return runtime && runtime->AutotuneFinished() ? 1 : 0;
}

int DumpFlightRecord(const char* reason, char* out, size_t size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return Report(StatusCode::NOT_INITIALIZED, "mpirep is not initialised", out, size);
  const std::string written = runtime->DumpFlightRecord(reason);
  if (written.rfind("error: ", 0) == 0) return Report(StatusCode::INTERNAL, written.substr(7), out, size);
  if (written.size() >= size) return Report(StatusCode::INTERNAL, "the path does not fit", out, size);
  std::memcpy(out, written.c_str(), written.size() + 1);
  return static_cast<int>(StatusCode::OK);
}

int PeerLossReport(char* out, size_t size) {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  if (!runtime) return 0;
  const std::string report = runtime->PeerLossReport();
  if (report.empty()) return 0;
  if (report.size() >= size) return -2;
  std::memcpy(out, report.c_str(), report.size() + 1);
  return 1;
}

void* GetOutputBuffer(size_t bytes, size_t* capacity) { return OutputPool().Get(bytes, capacity); }

void PutOutputBuffer(void* data, size_t capacity) { OutputPool().Put(data, capacity); }

const mpirep_api kApi = {MPIREP_API_VERSION, Start,           Shutdown,        IsInitialized,
                         GetTopology,        ProcessSetRanks, Enqueue,         GetOutputBuffer,
                         PutOutputBuffer,    GetNegotiationStats, TimeNegotiation, StartTimeline,
                         StopTimeline,       CurrentSetting,  AutotuneFinished, EnqueueAndWait,
                         DumpFlightRecord,   PeerLossReport,  StreamCopy};

}  // namespace
}  // namespace mpirep

extern "C" const mpirep_api* mpirep_get_api(void) { return &mpirep::kApi; }
