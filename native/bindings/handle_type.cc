#include "handle_type.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "numpy_api.h"
#include "python_errors.h"

namespace mpirep {
namespace {

// A waiter polls this long (yielding the CPU between polls) before it blocks: a collective
// whose ranks are in step ends within it, and waking a blocked thread costs tens of
// microseconds.
constexpr auto kSpinBeforeBlocking = std::chrono::microseconds(50);

// The inputs of operations whose Handle was dropped before they ended, kept alive until they
// end (the core reads them in place). Touched with the GIL held only; never destroyed, since
// it may outlive the interpreter.
std::vector<std::pair<std::shared_ptr<Completion>, PyRef>>& Orphans() {
  static auto* orphans = new std::vector<std::pair<std::shared_ptr<Completion>, PyRef>>();
  return *orphans;
}

void KeepUntilFinished(std::shared_ptr<Completion> completion, PyRef input) {
  if (!completion->Finished()) Orphans().emplace_back(std::move(completion), std::move(input));
}

void ReleaseFinishedOrphans() {
  auto& orphans = Orphans();
  orphans.erase(std::remove_if(orphans.begin(), orphans.end(), [](const auto& o) { return o.first->Finished(); }),
                orphans.end());
}

struct HandleState {
  PyRef name;  // a str
  std::shared_ptr<Completion> completion;
  PyRef input;  // the caller's array, kept alive while the core reads it
  PyRef dtype;  // the output's
  bool result_taken = false;
};

// The state lives in the object itself, constructed by NewHandle and destroyed by Dealloc.
struct HandleObject {
  PyObject_HEAD
  HandleState state;
};

PyTypeObject handle_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

HandleState& State(PyObject* self) { return reinterpret_cast<HandleObject*>(self)->state; }

void Dealloc(PyObject* self) {
  HandleState& handle = State(self);
  KeepUntilFinished(std::move(handle.completion), std::move(handle.input));
  handle.~HandleState();
  PyObject_Del(self);
}

// Blocks until the operation ends; false with Python's error set when it failed.
bool Wait(HandleState& handle) {
  Completion& c = *handle.completion;
  if (!c.Finished()) {
    Py_BEGIN_ALLOW_THREADS
    const auto until = std::chrono::steady_clock::now() + kSpinBeforeBlocking;
    while (!c.Finished() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    {  // unlocked before the GIL is taken back: the core's thread takes this lock to end it
      std::unique_lock<std::mutex> lock(c.mutex);
      c.cv.wait(lock, [&c] { return c.Finished(); });
    }
    Py_END_ALLOW_THREADS
  }
  handle.input = PyRef();
  if (c.status != static_cast<int>(StatusCode::OK)) {
    SetStatusError(c.status, c.message.c_str());
    return false;
  }
  return true;
}

PyObject* Poll(PyObject* self, PyObject*) { return PyBool_FromLong(State(self).completion->Finished()); }

PyObject* WaitMethod(PyObject* self, PyObject*) {
  if (!Wait(State(self))) return nullptr;
  Py_RETURN_NONE;
}

// Waits, then returns the output: an array of the input's dtype over the output memory, which
// this handle owns and which the array keeps alive as its base. Once: a second array would
// share the first one's memory.
PyObject* Result(PyObject* self, PyObject*) {
  HandleState& handle = State(self);
  if (!Wait(handle)) return nullptr;
  if (handle.result_taken) {
    PyRef message = PyRef::Steal(PyUnicode_FromFormat(
        "the result of '%U' was taken already: synchronize each handle once", handle.name.get()));
    if (message) SetStatusError(static_cast<int>(StatusCode::INVALID_ARGUMENT), PyUnicode_AsUTF8(message.get()));
    return nullptr;
  }
  const Completion& c = *handle.completion;
  PyObject* output = numpy::NewOver(handle.dtype.get(), static_cast<int>(c.shape.size()), c.shape.data(),
                                    c.output, self);
  if (output) handle.result_taken = true;
  return output;
}

PyObject* ReceivedSplits(PyObject* self, PyObject*) {
  const std::vector<int64_t>& splits = State(self).completion->received_splits;
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(splits.size()));
  if (!list) return nullptr;
  for (size_t i = 0; i < splits.size(); ++i) {
    PyObject* split = PyLong_FromLongLong(splits[i]);
    if (!split) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), split);
  }
  return list;
}

PyObject* LastJoinedRank(PyObject* self, PyObject*) { return PyLong_FromLong(State(self).completion->last_joined_rank); }

PyObject* NewProcessSet(PyObject* self, PyObject*) { return PyLong_FromLong(State(self).completion->new_process_set); }

PyObject* Name(PyObject* self, void*) { return PyRef::Borrow(State(self).name.get()).release(); }

PyMethodDef methods[] = {
    {"poll", Poll, METH_NOARGS, "Whether the operation has ended (successfully or not); never blocks."},
    {"wait", WaitMethod, METH_NOARGS, "Waits for the operation to end; raises its error."},
    {"result", Result, METH_NOARGS, "Waits, then returns the output array or raises the error; once."},
    {"synchronize", Result, METH_NOARGS, "result(): what mpirep.synchronize calls."},
    {"received_splits", ReceivedSplits, METH_NOARGS, "alltoall: the rows received from each rank."},
    {"last_joined_rank", LastJoinedRank, METH_NOARGS, "join: the rank that joined last."},
    {"new_process_set", NewProcessSet, METH_NOARGS, "add_process_set: the id of the new set."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef getset[] = {
    {"name", Name, nullptr, "The operation's name.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

PyObject* NewHandle(PyObject* name, std::shared_ptr<Completion> completion, PyRef input, PyObject* dtype) {
  ReleaseFinishedOrphans();
  auto* self = PyObject_New(HandleObject, &handle_type);
  if (!self) {
    KeepUntilFinished(std::move(completion), std::move(input));
    return nullptr;
  }
  new (&self->state)
      HandleState{PyRef::Borrow(name), std::move(completion), std::move(input), PyRef::Borrow(dtype)};
  return reinterpret_cast<PyObject*>(self);
}

bool AddHandleType(PyObject* module) {
  handle_type.tp_name = "mpirep._core.Handle";
  handle_type.tp_doc = "An operation in flight, from submit or submit_allreduce.";
  handle_type.tp_basicsize = sizeof(HandleObject);
  handle_type.tp_dealloc = Dealloc;
  // Final, without __dict__ and untracked by the garbage collector: what it refers to (an array,
  // a dtype, a str) cannot refer back to it, and a thousand handles in flight then add nothing
  // to the collector's work. Without tp_new, Python cannot make one.
  handle_type.tp_flags = Py_TPFLAGS_DEFAULT;
  handle_type.tp_methods = methods;
  handle_type.tp_getset = getset;
  if (PyType_Ready(&handle_type) < 0) return false;
  Py_INCREF(&handle_type);
  if (PyModule_AddObject(module, "Handle", reinterpret_cast<PyObject*>(&handle_type)) < 0) {
    Py_DECREF(&handle_type);
    return false;
  }
  return true;
}

}  // namespace mpirep
