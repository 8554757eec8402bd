// mpirep._core: the Python face of the core. It exports the core's vocabulary as dictionaries
// (so Python never restates a code), and reaches the core through the C API alone (c_api.h):
// it starts and ends the core, and submits numpy buffers, returning a Handle that Python waits
// on with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "c_api.h"
#include "core/common.h"

namespace py = pybind11;

namespace mpirep {
namespace {

const mpirep_api& Api() { return *mpirep_get_api(); }

[[noreturn]] void Raise(int status, const std::string& message) {
  py::module_::import("mpirep.errors").attr("raise_for_status")(status, message);
  throw std::logic_error("raise_for_status returned");
}

// What the background thread hands back for one operation.
struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<bool> done{false};  // set last, after the fields below
  int status = 0;
  std::string message;
  std::vector<int64_t> received_splits;
  int last_joined_rank = -1;
  int new_process_set = 0;
  size_t element_size = 1;
  Shape shape;
  void* output = nullptr;  // from the core's output pool; an output array's memory, returned with it
  size_t capacity = 0;
  // The core's reference, from the enqueue until `done`, so that a Handle dropped early cannot
  // free what the core still writes to.
  std::shared_ptr<Completion> self;
  ~Completion() { Api().put_output_buffer(output, capacity); }
};

void* AllocateOutput(void* user, int ndim, const int64_t* shape) {
  Completion* c = static_cast<Completion*>(user);
  c->shape.assign(shape, shape + ndim);
  c->output = Api().get_output_buffer(NumElements(c->shape) * c->element_size, &c->capacity);
  return c->output;
}

void Done(void* user, const mpirep_result* result) {
  std::shared_ptr<Completion> c = std::move(static_cast<Completion*>(user)->self);
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    c->status = result->status;
    c->message = result->message;
    c->received_splits.assign(result->received_splits, result->received_splits + result->nsplits);
    c->last_joined_rank = result->last_joined_rank;
    c->new_process_set = result->new_process_set;
    c->done.store(true, std::memory_order_release);
  }
  c->cv.notify_all();
}

// A waiter for an async operation polls this long (yielding the CPU between polls) before it
// blocks: a collective whose ranks are in step ends within it, and waking a blocked thread
// costs tens of microseconds.
constexpr auto kSpinBeforeBlocking = std::chrono::microseconds(50);

int Finished(void* user) { return static_cast<Completion*>(user)->done.load(std::memory_order_acquire); }

// While another thread runs the core's rounds, a blocking submitter waits this way; `done` ends
// the wait early.
void Pause(void* user) {
  Completion* c = static_cast<Completion*>(user);
  std::unique_lock<std::mutex> lock(c->mutex);
  c->cv.wait_for(lock, std::chrono::microseconds(50), [c] { return c->done.load(std::memory_order_acquire); });
}

// The inputs of operations whose Handle was dropped before they ended, kept alive until they
// end (the core reads them in place). Touched with the GIL held only; never destroyed, since
// it may outlive the interpreter.
std::vector<std::pair<std::shared_ptr<Completion>, py::object>>& Orphans() {
  static auto* orphans = new std::vector<std::pair<std::shared_ptr<Completion>, py::object>>();
  return *orphans;
}

void ReleaseFinishedOrphans() {
  auto& orphans = Orphans();
  orphans.erase(std::remove_if(orphans.begin(), orphans.end(),
                               [](const auto& o) { return o.first->done.load(std::memory_order_acquire); }),
                orphans.end());
}

// Python's handle of an operation in flight: it polls, waits, and hands over the output.
class Handle {
 public:
  Handle(std::string name, std::shared_ptr<Completion> completion, py::object input, py::dtype dtype)
      : name_(std::move(name)), completion_(std::move(completion)), input_(std::move(input)), dtype_(std::move(dtype)) {}
  Handle(Handle&&) = default;
  ~Handle() {
    if (completion_ && !Poll()) Orphans().emplace_back(completion_, std::move(input_));
  }

  bool Poll() const { return completion_->done.load(std::memory_order_acquire); }

  // Blocks until the operation ends; raises its error.
  void Wait() {
    if (!Poll()) {
      py::gil_scoped_release release;
      const auto until = std::chrono::steady_clock::now() + kSpinBeforeBlocking;
      while (!Poll() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      std::unique_lock<std::mutex> lock(completion_->mutex);
      completion_->cv.wait(lock, [this] { return Poll(); });
    }
    input_ = py::none();
    if (completion_->status != static_cast<int>(StatusCode::OK)) Raise(completion_->status, completion_->message);
  }

  // Waits, then returns the output: an array of the input's dtype over the output memory,
  // which `self`, this handle, owns and which the array keeps alive as its base. Once: a second
  // array would share the first one's memory.
  static py::array Result(const py::object& self) {
    Handle& handle = self.cast<Handle&>();
    handle.Wait();
    if (handle.result_taken_) {
      Raise(static_cast<int>(StatusCode::INVALID_ARGUMENT),
            "the result of '" + handle.name_ + "' was taken already: synchronize each handle once");
    }
    handle.result_taken_ = true;
    const Completion& c = *handle.completion_;
    return py::array(handle.dtype_, std::vector<py::ssize_t>(c.shape.begin(), c.shape.end()), c.output, self);
  }

  std::vector<int64_t> ReceivedSplits() const { return completion_->received_splits; }
  int LastJoinedRank() const { return completion_->last_joined_rank; }
  int NewProcessSet() const { return completion_->new_process_set; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<Completion> completion_;
  py::object input_;  // keeps the caller's array alive while the core reads it
  py::dtype dtype_;   // the output's
  bool result_taken_ = false;
};

std::vector<int64_t> Int64s(const py::object& sequence) {
  return sequence.is_none() ? std::vector<int64_t>{} : sequence.cast<std::vector<int64_t>>();
}

// Enqueues `desc`, whose collective, name and arguments are filled in, for `input`: a
// C-contiguous array, whose dtype has the core's code `dtype`. `blocking`: the caller waits for
// the result at once, so this thread runs the core's rounds until the operation ends (c_api.h,
// enqueue_and_wait).
Handle Enqueue(mpirep_op_desc& desc, py::array input, int dtype, bool blocking) {
  ReleaseFinishedOrphans();
  auto completion = std::make_shared<Completion>();
  completion->element_size = ElementSize(static_cast<DataType>(dtype));
  // Every collective's output has its input's number of dimensions: sizing the shape here, on
  // this thread, spares AllocateOutput an allocation on the core's.
  completion->shape.assign(input.shape(), input.shape() + input.ndim());
  desc.dtype = dtype;
  desc.ndim = static_cast<int>(completion->shape.size());
  desc.shape = completion->shape.data();
  desc.input = input.data();
  completion->self = completion;
  char error[1024];
  int status;
  if (blocking) {
    py::gil_scoped_release release;
    status = Api().enqueue_and_wait(&desc, AllocateOutput, Done, completion.get(), Finished, Pause,
                                    completion.get(), error, sizeof error);
  } else {
    status = Api().enqueue(&desc, AllocateOutput, Done, completion.get(), error, sizeof error);
  }
  if (status != static_cast<int>(StatusCode::OK)) {
    completion->self.reset();
    Raise(status, error);
  }
  py::dtype output_dtype = input.dtype();
  return Handle(desc.name, completion, std::move(input), std::move(output_dtype));
}

// The core's code for a numpy dtype. Arrays share their dtype objects, so the ones seen before
// are found by identity; any other is resolved, or refused with the supported list, by
// mpirep.collectives._dtype_code. Never destroyed: it may outlive the interpreter.
int DtypeCode(const py::dtype& dtype) {
  static auto* seen = new std::vector<std::pair<py::object, int>>();
  for (const auto& [known, code] : *seen) {
    if (known.ptr() == dtype.ptr()) return code;
  }
  const int code = py::module_::import("mpirep.collectives").attr("_dtype_code")(dtype).cast<int>();
  constexpr size_t kMaxSeen = 64;  // dtype objects made on the fly (byte-swapped, unpickled) are not kept
  if (seen->size() < kMaxSeen) seen->emplace_back(dtype, code);
  return code;
}

// `x` as the core reads it: a C-contiguous array (anything numpy.asarray takes, copied only
// where it is not one already).
py::array AsInput(const py::object& x) {
  if (py::isinstance<py::array>(x) && (py::reinterpret_borrow<py::array>(x).flags() & py::array::c_style)) {
    return py::reinterpret_borrow<py::array>(x);  // as is: PyArray_FromAny costs a microsecond even here
  }
  py::array input = py::array::ensure(x, py::array::c_style);
  if (!input) input = py::module_::import("numpy").attr("ascontiguousarray")(x);  // raises numpy's error
  return input;
}

// Any collective, of `x` (AsInput). `splits` and `new_set_ranks`: sequences of integers, or
// None.
Handle Submit(int collective, const std::string& name, const py::object& x, int reduce_op,
              int root_rank, double prescale, double postscale, const py::object& splits_or_none,
              int process_set, int group_size, const py::object& new_set_ranks_or_none, int removed_set,
              const std::string& group, bool blocking) {
  const std::vector<int64_t> splits = Int64s(splits_or_none);
  const std::vector<int64_t> new_set_ranks = Int64s(new_set_ranks_or_none);
  mpirep_op_desc desc{};
  desc.collective = collective;
  desc.name = name.c_str();
  desc.reduce_op = reduce_op;
  desc.root_rank = root_rank;
  desc.prescale = prescale;
  desc.postscale = postscale;
  desc.nsplits = static_cast<int>(splits.size());
  desc.splits = splits.empty() ? nullptr : splits.data();
  desc.process_set = process_set;
  desc.group_size = group_size;
  desc.n_new_set_ranks = static_cast<int>(new_set_ranks.size());
  desc.new_set_ranks = new_set_ranks.empty() ? nullptr : new_set_ranks.data();
  desc.removed_set = removed_set;
  desc.group = group.c_str();
  py::array input = AsInput(x);
  const int dtype = DtypeCode(input.dtype());
  return Enqueue(desc, std::move(input), dtype, blocking);
}

// An allreduce, the collective that training submits most often, on the shortest path from
// Python: seven arguments rather than Submit's fifteen.
Handle SubmitAllreduce(const py::object& x, const std::string& name, int reduce_op, double prescale,
                       double postscale, int process_set, bool blocking) {
  py::array input = AsInput(x);
  const int dtype = DtypeCode(input.dtype());
  mpirep_op_desc desc{};
  desc.collective = static_cast<int>(Collective::ALLREDUCE);
  desc.name = name.c_str();
  desc.reduce_op = reduce_op;
  desc.prescale = prescale;
  desc.postscale = postscale;
  desc.process_set = process_set;
  desc.group = "";
  return Enqueue(desc, std::move(input), dtype, blocking);
}

// Collective. `settings`: name -> value as text, for the settings of core/settings.def.
void Start(int fortran_comm, const std::map<std::string, std::string>& settings) {
  std::vector<const char*> names, values;
  for (const auto& [name, value] : settings) {
    names.push_back(name.c_str());
    values.push_back(value.c_str());
  }
  char error[1024] = "";
  int status;
  {
    py::gil_scoped_release release;
    status = Api().start(fortran_comm, static_cast<int>(names.size()), names.data(), values.data(), error,
                         sizeof error);
  }
  if (status != static_cast<int>(StatusCode::OK)) Raise(status, error);
}

// Both wait for the background thread to finish recording what it is recording.
void StartTimeline(const std::string& path, bool mark_cycles) {
  char error[1024] = "";
  int status;
  {
    py::gil_scoped_release release;
    status = Api().start_timeline(path.c_str(), mark_cycles ? 1 : 0, error, sizeof error);
  }
  if (status != static_cast<int>(StatusCode::OK)) Raise(status, error);
}

void StopTimeline() {
  char error[1024] = "";
  int status;
  {
    py::gil_scoped_release release;
    status = Api().stop_timeline(error, sizeof error);
  }
  if (status != static_cast<int>(StatusCode::OK)) Raise(status, error);
}

py::object Topology() {
  mpirep_topology t;
  if (!Api().topology(&t)) return py::none();
  py::dict d;
  d["rank"] = t.rank;
  d["size"] = t.size;
  d["local_rank"] = t.local_rank;
  d["local_size"] = t.local_size;
  d["cross_rank"] = t.cross_rank;
  d["cross_size"] = t.cross_size;
  return d;
}

// Empty when there is no such set.
std::vector<int> ProcessSetRanks(int id) {
  std::vector<int> ranks(8);
  int count = Api().process_set_ranks(id, ranks.data(), static_cast<int>(ranks.size()));
  if (count > static_cast<int>(ranks.size())) {
    ranks.resize(count);
    count = Api().process_set_ranks(id, ranks.data(), count);
  }
  ranks.resize(std::max(count, 0));
  return ranks;
}

// What this rank's negotiation has done (c_api.h), by field name; None when not started.
py::object NegotiationStats() {
  mpirep_negotiation_stats s;
  if (!Api().negotiation_stats(&s)) return py::none();
  py::dict d;
  d["rounds"] = s.rounds;
  d["slow_rounds"] = s.slow_rounds;
  d["cached_tensors"] = s.cached_tensors;
  d["requests_sent"] = s.requests_sent;
  d["requests_received"] = s.requests_received;
  d["messages_sent"] = s.messages_sent;
  d["messages_received"] = s.messages_received;
  d["bytes_sent"] = s.bytes_sent;
  d["bytes_received"] = s.bytes_received;
  d["agreement_bytes"] = s.agreement_bytes;
  d["work_ns"] = s.work_ns;
  return d;
}

// The value in force of setting `name` (c_api.h), as text; None when not started.
py::object CurrentSetting(const std::string& name) {
  char value[1024];
  const int found = Api().current_setting(name.c_str(), value, sizeof value);
  if (found == -1) throw py::value_error("unknown mpirep setting '" + name + "'");
  if (found == -2) throw py::value_error("mpirep setting " + name + " is too long to read");
  if (found == 0) return py::none();
  return py::str(value);
}

template <typename Enum>
py::dict EnumDict(std::initializer_list<std::pair<const char*, Enum>> entries) {
  py::dict d;
  for (const auto& [name, value] : entries) d[name] = static_cast<int>(value);
  return d;
}

}  // namespace
}  // namespace mpirep

PYBIND11_MODULE(_core, m) {
  using namespace mpirep;
  m.doc() = "mpirep's native core";

#define MPIREP_PY_ENTRY(Type, name, py, ...) {#py, Type::name},
#define MPIREP_DTYPE_ENTRY(name, py, size) MPIREP_PY_ENTRY(DataType, name, py)
#define MPIREP_OP_ENTRY(name, py) MPIREP_PY_ENTRY(ReduceOp, name, py)
#define MPIREP_COLLECTIVE_ENTRY(name, py) MPIREP_PY_ENTRY(Collective, name, py)
#define MPIREP_STATUS_ENTRY(name, py, canonical) MPIREP_PY_ENTRY(StatusCode, name, py)
  m.attr("DTYPES") = EnumDict<DataType>({MPIREP_DTYPES(MPIREP_DTYPE_ENTRY)});
  m.attr("REDUCE_OPS") = EnumDict<ReduceOp>({MPIREP_REDUCE_OPS(MPIREP_OP_ENTRY)});
  m.attr("COLLECTIVES") = EnumDict<Collective>({MPIREP_COLLECTIVES(MPIREP_COLLECTIVE_ENTRY)});
  m.attr("STATUS") = EnumDict<StatusCode>({MPIREP_STATUS_CODES(MPIREP_STATUS_ENTRY)});
#undef MPIREP_PY_ENTRY
#undef MPIREP_DTYPE_ENTRY
#undef MPIREP_OP_ENTRY
#undef MPIREP_COLLECTIVE_ENTRY
#undef MPIREP_STATUS_ENTRY
  py::dict canonical;  // status name -> the canonical error code name frameworks report it as
#define MPIREP_CANONICAL_ENTRY(name, py, code) canonical[#py] = #code;
  MPIREP_STATUS_CODES(MPIREP_CANONICAL_ENTRY)
#undef MPIREP_CANONICAL_ENTRY
  m.attr("CANONICAL_ERROR_CODES") = canonical;
  m.attr("API_VERSION") = MPIREP_API_VERSION;

  m.def("init", &Start, py::arg("fortran_comm"), py::arg("settings"));
  m.def(
      "shutdown",
      [](const std::string& reason) {
        py::gil_scoped_release release;
        Api().shutdown(reason.c_str());
      },
      py::arg("reason") = "");
  m.def("is_initialized", [] { return Api().is_initialized() != 0; });
  m.def("topology", &Topology);
  m.def("start_timeline", &StartTimeline, py::arg("path"), py::arg("mark_cycles"));
  m.def("stop_timeline", &StopTimeline);
  m.def("process_set_ranks", &ProcessSetRanks);
  m.def("negotiation_stats", &NegotiationStats);
  m.def("time_negotiation", [](bool on) { Api().time_negotiation(on ? 1 : 0); }, py::arg("on"));
  m.def("current_setting", &CurrentSetting, py::arg("name"));
  m.def("autotune_finished", [] { return Api().autotune_finished() != 0; });
  m.def("api_table_address", [] { return reinterpret_cast<uintptr_t>(&Api()); });

  py::class_<Handle>(m, "Handle")
      .def("poll", &Handle::Poll)
      .def("wait", &Handle::Wait)
      .def("result", &Handle::Result)
      .def("synchronize", &Handle::Result)  // what mpirep.synchronize calls: the output array
      .def_property_readonly("name", &Handle::name)
      .def("received_splits", &Handle::ReceivedSplits)
      .def("last_joined_rank", &Handle::LastJoinedRank)
      .def("new_process_set", &Handle::NewProcessSet);
  m.def("submit", &Submit, py::arg("collective"), py::arg("name"), py::arg("x"),
        py::arg("reduce_op"), py::arg("root_rank"), py::arg("prescale"),
        py::arg("postscale"), py::arg("splits"), py::arg("process_set"), py::arg("group_size"),
        py::arg("new_set_ranks"), py::arg("removed_set"), py::arg("group"), py::arg("blocking"));
  m.def("submit_allreduce", &SubmitAllreduce, py::arg("x"), py::arg("name"), py::arg("reduce_op"),
        py::arg("prescale"), py::arg("postscale"), py::arg("process_set"), py::arg("blocking"));
}
