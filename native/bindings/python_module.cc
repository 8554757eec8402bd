// mpirep._core: the Python face of the core. It exports the core's vocabulary as dictionaries
// (so Python never restates a code), and reaches the core through the C API alone (c_api.h):
// it starts and ends the core, and submits numpy buffers, returning a Handle (handle_type.h)
// that Python waits on with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "c_api.h"
#include "completion.h"
#include "core/common.h"
#include "handle_type.h"
#include "python_errors.h"

namespace py = pybind11;

namespace mpirep {
namespace {

const mpirep_api& Api() { return *mpirep_get_api(); }

[[noreturn]] void Raise(int status, const std::string& message) {
  SetStatusError(status, message.c_str());
  throw py::error_already_set();
}

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

int Finished(void* user) { return static_cast<Completion*>(user)->Finished(); }

// While another thread runs the core's rounds, a blocking submitter waits this way; `done` ends
// the wait early.
void Pause(void* user) {
  Completion* c = static_cast<Completion*>(user);
  std::unique_lock<std::mutex> lock(c->mutex);
  c->cv.wait_for(lock, std::chrono::microseconds(50), [c] { return c->Finished(); });
}

std::vector<int64_t> Int64s(const py::object& sequence) {
  return sequence.is_none() ? std::vector<int64_t>{} : sequence.cast<std::vector<int64_t>>();
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
py::array AsInput(py::handle x) {
  if (py::isinstance<py::array>(x) && (py::reinterpret_borrow<py::array>(x).flags() & py::array::c_style)) {
    return py::reinterpret_borrow<py::array>(x);  // as is: PyArray_FromAny costs a microsecond even here
  }
  py::array input = py::array::ensure(x, py::array::c_style);
  if (!input) input = py::module_::import("numpy").attr("ascontiguousarray")(x);  // raises numpy's error
  return input;
}

// Enqueues `desc`, whose collective and arguments are filled in, as the operation `name` on `x`
// (AsInput), and returns its Handle. `blocking`: the caller waits for the result at once, so
// this thread runs the core's rounds until the operation ends (c_api.h, enqueue_and_wait).
py::object Enqueue(mpirep_op_desc& desc, const py::str& name, py::handle x, bool blocking) {
  py::array input = AsInput(x);
  py::dtype dtype = input.dtype();
  desc.dtype = DtypeCode(dtype);
  desc.name = PyUnicode_AsUTF8(name.ptr());
  if (!desc.name) throw py::error_already_set();
  auto completion = std::make_shared<Completion>();
  completion->element_size = ElementSize(static_cast<DataType>(desc.dtype));
  // Every collective's output has its input's number of dimensions: sizing the shape here, on
  // this thread, spares AllocateOutput an allocation on the core's.
  completion->shape.assign(input.shape(), input.shape() + input.ndim());
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
  PyObject* handle = NewHandle(name, std::move(completion), std::move(input), std::move(dtype));
  if (!handle) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(handle);
}

// Any collective. `splits` and `new_set_ranks`: sequences of integers, or None.
py::object Submit(int collective, const py::str& name, const py::object& x, int reduce_op, int root_rank,
                  double prescale, double postscale, const py::object& splits_or_none, int process_set,
                  int group_size, const py::object& new_set_ranks_or_none, int removed_set,
                  const std::string& group, bool blocking) {
  const std::vector<int64_t> splits = Int64s(splits_or_none);
  const std::vector<int64_t> new_set_ranks = Int64s(new_set_ranks_or_none);
  mpirep_op_desc desc{};
  desc.collective = collective;
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
  return Enqueue(desc, name, x, blocking);
}

// False with Python's error set unless `value` is an integer that fits an int.
bool ToInt(PyObject* value, int* out) {
  const long v = PyLong_AsLong(value);
  if (v == -1 && PyErr_Occurred()) return false;
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C int");
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// submit_allreduce(x, name, reduce_op, prescale, postscale, process_set, blocking): Submit for
// an allreduce, the collective that training submits most often (hundreds per step), with its
// arguments parsed here rather than by pybind11, whose dispatch costs more than the parsing.
PyObject* SubmitAllreduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 7) {
    PyErr_Format(PyExc_TypeError, "submit_allreduce() takes 7 positional arguments (%zd given)", nargs);
    return nullptr;
  }
  if (!PyUnicode_Check(args[1])) {
    PyErr_Format(PyExc_TypeError, "submit_allreduce(): name must be str, not %.100s", Py_TYPE(args[1])->tp_name);
    return nullptr;
  }
  mpirep_op_desc desc{};
  desc.collective = static_cast<int>(Collective::ALLREDUCE);
  desc.group = "";
  if (!ToInt(args[2], &desc.reduce_op)) return nullptr;
  desc.prescale = PyFloat_AsDouble(args[3]);
  if (desc.prescale == -1.0 && PyErr_Occurred()) return nullptr;
  desc.postscale = PyFloat_AsDouble(args[4]);
  if (desc.postscale == -1.0 && PyErr_Occurred()) return nullptr;
  if (!ToInt(args[5], &desc.process_set)) return nullptr;
  const int blocking = PyObject_IsTrue(args[6]);
  if (blocking < 0) return nullptr;
  try {
    return Enqueue(desc, py::reinterpret_borrow<py::str>(args[1]), args[0], blocking != 0).release().ptr();
  } catch (...) {
    SetErrorForCaughtException();
    return nullptr;
  }
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

std::string DumpFlightRecord(const std::string& reason) {
  char out[4096] = "";
  int status;
  {
    py::gil_scoped_release release;
    status = Api().dump_flight_record(reason.c_str(), out, sizeof out);
  }
  if (status != static_cast<int>(StatusCode::OK)) Raise(status, out);
  return out;
}

// The ranks this rank knows to be lost, under the elastic driver (a list; empty until then).
py::list LostPeers() {
  std::vector<char> out(16 * 1024);
  py::list lost;
  if (Api().peer_loss_report(out.data(), out.size()) != 1) return lost;
  for (const char* p = out.data(); *p;) {
    char* end = nullptr;
    lost.append(std::strtol(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
  }
  return lost;
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
  m.attr("PEER_LOST_EXIT_STATUS") = kPeerLostExitStatus;

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
  m.def("dump_flight_record", &DumpFlightRecord, py::arg("reason"));
  m.def("lost_peers", &LostPeers);
  m.def("process_set_ranks", &ProcessSetRanks);
  m.def("negotiation_stats", &NegotiationStats);
  m.def("time_negotiation", [](bool on) { Api().time_negotiation(on ? 1 : 0); }, py::arg("on"));
  m.def("current_setting", &CurrentSetting, py::arg("name"));
  m.def("autotune_finished", [] { return Api().autotune_finished() != 0; });
  m.def("api_table_address", [] { return reinterpret_cast<uintptr_t>(&Api()); });

  if (!AddHandleType(m.ptr())) throw py::error_already_set();
  m.def("submit", &Submit, py::arg("collective"), py::arg("name"), py::arg("x"),
        py::arg("reduce_op"), py::arg("root_rank"), py::arg("prescale"),
        py::arg("postscale"), py::arg("splits"), py::arg("process_set"), py::arg("group_size"),
        py::arg("new_set_ranks"), py::arg("removed_set"), py::arg("group"), py::arg("blocking"));
  static PyMethodDef functions[] = {
      {"submit_allreduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(SubmitAllreduce)),
       METH_FASTCALL,
       "submit_allreduce($module, x, name, reduce_op, prescale, postscale, process_set, blocking, /)\n--\n\n"
       "Submits an allreduce of x; returns its Handle."},
      {nullptr, nullptr, 0, nullptr},
  };
  if (PyModule_AddFunctions(m.ptr(), functions) < 0) throw py::error_already_set();
}
