// submit and submit_allreduce: a numpy array (or anything numpy.asarray takes) handed to the
// core as one operation, answered by a Handle (handle_type.h).
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "arguments.h"
#include "c_api.h"
#include "completion.h"
#include "core/common.h"
#include "handle_type.h"
#include "module_functions.h"
#include "numpy_api.h"
#include "python_errors.h"
#include "python_ref.h"

namespace mpirep {
namespace {

const mpirep_api& Api() { return *mpirep_get_api(); }

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

// The core's code for a numpy dtype, or -1 with Python's error set. Arrays share their dtype
// objects, so the ones seen before are found by identity; any other is resolved, or refused
// with the supported list, by mpirep.collectives._dtype_code. The ones kept are never released:
// the list may outlive the interpreter.
int DtypeCode(PyObject* dtype) {
  static auto* seen = new std::vector<std::pair<PyObject*, int>>();
  for (const auto& [known, code] : *seen) {
    if (known == dtype) return code;
  }
  PyRef collectives = PyRef::Steal(PyImport_ImportModule("mpirep.collectives"));
  if (!collectives) return -1;
  PyRef answer = PyRef::Steal(PyObject_CallMethod(collectives.get(), "_dtype_code", "O", dtype));
  if (!answer) return -1;
  int code;
  if (!ToInt(answer.get(), &code)) return -1;
  constexpr size_t kMaxSeen = 64;  // dtype objects made on the fly (byte-swapped, unpickled) are not kept
  if (seen->size() < kMaxSeen) seen->emplace_back(PyRef::Borrow(dtype).release(), code);
  return code;
}

// `x` as the core reads it: a C-contiguous array, copied only where it is not one already.
PyRef AsInput(PyObject* x) {
  if (numpy::IsArray(x) && (numpy::Fields(x)->flags & numpy::kCContiguous)) {
    return PyRef::Borrow(x);  // as is: FromAny costs a microsecond even here
  }
  return PyRef::Steal(numpy::FromAny(x, numpy::kCContiguous | numpy::kEnsureArray));
}

// Enqueues `desc`, whose collective and arguments are filled in, as the operation `name` (a
// str) on `x` (AsInput), and returns its Handle. `blocking`: the caller waits for the result at
// once, so this thread runs the core's rounds until the operation ends (c_api.h,
// enqueue_and_wait).
PyObject* Enqueue(mpirep_op_desc& desc, PyObject* name, PyObject* x, bool blocking) {
  PyRef input = AsInput(x);
  if (!input) return nullptr;
  const numpy::ArrayFields& array = *numpy::Fields(input.get());
  desc.dtype = DtypeCode(array.descr);
  if (desc.dtype < 0) return nullptr;
  desc.name = PyUnicode_AsUTF8(name);
  if (!desc.name) return nullptr;
  auto completion = std::make_shared<Completion>();
  completion->element_size = ElementSize(static_cast<DataType>(desc.dtype));
  // Every collective's output has its input's number of dimensions: sizing the shape here, on
  // this thread, spares AllocateOutput an allocation on the core's.
  completion->shape.assign(array.dimensions, array.dimensions + array.nd);
  desc.ndim = array.nd;
  desc.shape = completion->shape.data();
  desc.input = array.data;
  completion->self = completion;
  char error[1024];
  int status;
  if (blocking) {
    Py_BEGIN_ALLOW_THREADS
    status = Api().enqueue_and_wait(&desc, AllocateOutput, Done, completion.get(), Finished, Pause,
                                    completion.get(), error, sizeof error);
    Py_END_ALLOW_THREADS
  } else {
    status = Api().enqueue(&desc, AllocateOutput, Done, completion.get(), error, sizeof error);
  }
  if (status != static_cast<int>(StatusCode::OK)) {
    completion->self.reset();
    SetStatusError(status, error);
    return nullptr;
  }
  return NewHandle(name, std::move(completion), std::move(input), array.descr);
}

// submit(collective, name, x, reduce_op, root_rank, prescale, postscale, splits, process_set,
// group_size, new_set_ranks, removed_set, group, blocking): any collective. `splits` and
// `new_set_ranks`: sequences of integers, or None.
PyObject* Submit(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return CatchingExceptions([&]() -> PyObject* {
    PyObject* a[14];
    if (!MatchArguments("submit",
                        {"collective", "name", "x", "reduce_op", "root_rank", "prescale", "postscale", "splits",
                         "process_set", "group_size", "new_set_ranks", "removed_set", "group", "blocking"},
                        14, args, nargs, kwnames, a)) {
      return nullptr;
    }
    mpirep_op_desc desc{};
    std::vector<int64_t> splits, new_set_ranks;
    bool blocking;
    if (!ToInt(a[0], &desc.collective) || !ToInt(a[3], &desc.reduce_op) || !ToInt(a[4], &desc.root_rank) ||
        !ToDouble(a[5], &desc.prescale) || !ToDouble(a[6], &desc.postscale) ||
        !ToInt64s("submit", "splits", a[7], &splits) || !ToInt(a[8], &desc.process_set) ||
        !ToInt(a[9], &desc.group_size) || !ToInt64s("submit", "new_set_ranks", a[10], &new_set_ranks) ||
        !ToInt(a[11], &desc.removed_set) || !ToUtf8("submit", "group", a[12], &desc.group) ||
        !ToBool(a[13], &blocking)) {
      return nullptr;
    }
    if (!PyUnicode_Check(a[1])) {
      PyErr_Format(PyExc_TypeError, "submit(): name must be str, not %.100s", Py_TYPE(a[1])->tp_name);
      return nullptr;
    }
    desc.nsplits = static_cast<int>(splits.size());
    desc.splits = splits.empty() ? nullptr : splits.data();
    desc.n_new_set_ranks = static_cast<int>(new_set_ranks.size());
    desc.new_set_ranks = new_set_ranks.empty() ? nullptr : new_set_ranks.data();
    return Enqueue(desc, a[1], a[2], blocking);
  });
}

// submit_allreduce(x, name, reduce_op, prescale, postscale, process_set, blocking): submit for
// an allreduce, the collective that training submits most often (hundreds per step), by
// position only, which is quickest to read.
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
  bool blocking;
  if (!ToInt(args[2], &desc.reduce_op) || !ToDouble(args[3], &desc.prescale) || !ToDouble(args[4], &desc.postscale) ||
      !ToInt(args[5], &desc.process_set) || !ToBool(args[6], &blocking)) {
    return nullptr;
  }
  return CatchingExceptions([&] { return Enqueue(desc, args[1], args[0], blocking); });
}

}  // namespace

PyMethodDef kSubmitFunctions[] = {
    {"submit", AsMethod(Submit), METH_FASTCALL | METH_KEYWORDS,
     "submit($module, /, collective, name, x, reduce_op, root_rank, prescale, postscale, splits, "
     "process_set, group_size, new_set_ranks, removed_set, group, blocking)\n--\n\n"
     "Submits a collective on x, named name; returns its Handle."},
    {"submit_allreduce", AsMethod(SubmitAllreduce),
     METH_FASTCALL,
     "submit_allreduce($module, x, name, reduce_op, prescale, postscale, process_set, blocking, /)\n--\n\n"
     "Submits an allreduce of x; returns its Handle."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace mpirep
