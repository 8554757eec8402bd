// Starting and stopping the core, and where this process stands among the others.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "arguments.h"
#include "c_api.h"
#include "core/common.h"
#include "module_functions.h"
#include "python_errors.h"
#include "python_ref.h"

namespace mpirep {
namespace {

const mpirep_api& Api() { return *mpirep_get_api(); }

// init(fortran_comm, settings): collective. `settings`: name -> value as text, for the settings
// of core/settings.def.
PyObject* Init(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return CatchingExceptions([&]() -> PyObject* {
    PyObject* a[2];
    int fortran_comm;
    std::map<std::string, std::string> settings;
    if (!MatchArguments("init", {"fortran_comm", "settings"}, 2, args, nargs, kwnames, a) ||
        !ToInt(a[0], &fortran_comm) || !ToStringMap("init", "settings", a[1], &settings)) {
      return nullptr;
    }
    std::vector<const char*> names, values;
    for (const auto& [name, value] : settings) {
      names.push_back(name.c_str());
      values.push_back(value.c_str());
    }
    char error[1024] = "";
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = Api().start(fortran_comm, static_cast<int>(names.size()), names.data(), values.data(), error,
                         sizeof error);
    Py_END_ALLOW_THREADS
    if (status != static_cast<int>(StatusCode::OK)) {
      SetStatusError(status, error);
      return nullptr;
    }
    Py_RETURN_NONE;
  });
}

// shutdown(reason=""): collective.
PyObject* Shutdown(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[1];
  const char* reason = "";
  if (!MatchArguments("shutdown", {"reason"}, 0, args, nargs, kwnames, a) ||
      (a[0] && !ToUtf8("shutdown", "reason", a[0], &reason))) {
    return nullptr;
  }
  Py_BEGIN_ALLOW_THREADS
  Api().shutdown(reason);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

PyObject* IsInitialized(PyObject*, PyObject*) { return PyBool_FromLong(Api().is_initialized()); }

// {rank, size, local_rank, local_size, cross_rank, cross_size}; None when not started.
PyObject* Topology(PyObject*, PyObject*) {
  mpirep_topology t;
  if (!Api().topology(&t)) Py_RETURN_NONE;
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i}", "rank", t.rank, "size", t.size, "local_rank", t.local_rank,
                       "local_size", t.local_size, "cross_rank", t.cross_rank, "cross_size", t.cross_size);
}

// process_set_ranks(id): the set's ranks, in order; empty when there is no such set.
PyObject* ProcessSetRanks(PyObject*, PyObject* id_object) {
  return CatchingExceptions([&]() -> PyObject* {
    int id;
    if (!ToInt(id_object, &id)) return nullptr;
    std::vector<int> ranks(8);
    int count = Api().process_set_ranks(id, ranks.data(), static_cast<int>(ranks.size()));
    if (count > static_cast<int>(ranks.size())) {
      ranks.resize(count);
      count = Api().process_set_ranks(id, ranks.data(), count);
    }
    PyRef list = PyRef::Steal(PyList_New(std::max(count, 0)));
    if (!list) return nullptr;
    for (int i = 0; i < count; ++i) {
      PyObject* rank = PyLong_FromLong(ranks[i]);
      if (!rank) return nullptr;
      PyList_SET_ITEM(list.get(), i, rank);
    }
    return list.release();
  });
}

// The core's function table, for the TensorFlow op library (c_api.h), as an integer.
PyObject* ApiTableAddress(PyObject*, PyObject*) { return PyLong_FromVoidPtr(const_cast<mpirep_api*>(&Api())); }

}  // namespace

PyMethodDef kSessionFunctions[] = {
    {"init", AsMethod(Init), METH_FASTCALL | METH_KEYWORDS,
     "init($module, /, fortran_comm, settings)\n--\n\n"
     "Starts the core on the communicator with this Fortran handle; collective."},
    {"shutdown", AsMethod(Shutdown), METH_FASTCALL | METH_KEYWORDS,
     "shutdown($module, /, reason='')\n--\n\n"
     "Stops the core; collective. reason: why this rank is leaving, if it failed."},
    {"is_initialized", IsInitialized, METH_NOARGS, "is_initialized($module, /)\n--\n\nWhether the core runs."},
    {"topology", Topology, METH_NOARGS,
     "topology($module, /)\n--\n\nThis rank's place among the others, as a dict; None when not started."},
    {"process_set_ranks", ProcessSetRanks, METH_O,
     "process_set_ranks($module, id, /)\n--\n\nThe ranks of a process set; empty when there is none."},
    {"api_table_address", ApiTableAddress, METH_NOARGS,
     "api_table_address($module, /)\n--\n\nThe address of the core's C API table (c_api.h)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace mpirep
