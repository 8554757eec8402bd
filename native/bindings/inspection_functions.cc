// Watching the core at work: its timeline, its negotiation's counters, the settings in force,
// its flight record and the peers it lost.
#include <cstdlib>

#include "arguments.h"
#include "c_api.h"
#include "core/common.h"
#include "module_functions.h"
#include "python_errors.h"

namespace mpirep {
namespace {

const mpirep_api& Api() { return *mpirep_get_api(); }

// start_timeline(path, mark_cycles) and stop_timeline() wait for the background thread to
// finish recording what it is recording.
PyObject* StartTimeline(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[2];
  const char* path;
  bool mark_cycles;
  if (!MatchArguments("start_timeline", {"path", "mark_cycles"}, 2, args, nargs, kwnames, a) ||
      !ToUtf8("start_timeline", "path", a[0], &path) || !ToBool(a[1], &mark_cycles)) {
    return nullptr;
  }
  char error[1024] = "";
  int status;
  Py_BEGIN_ALLOW_THREADS
  status = Api().start_timeline(path, mark_cycles ? 1 : 0, error, sizeof error);
  Py_END_ALLOW_THREADS
  if (status != static_cast<int>(StatusCode::OK)) {
    SetStatusError(status, error);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* StopTimeline(PyObject*, PyObject*) {
  char error[1024] = "";
  int status;
  Py_BEGIN_ALLOW_THREADS
  status = Api().stop_timeline(error, sizeof error);
  Py_END_ALLOW_THREADS
  if (status != static_cast<int>(StatusCode::OK)) {
    SetStatusError(status, error);
    return nullptr;
  }
  Py_RETURN_NONE;
}

// What this rank's negotiation has done (c_api.h), by field name; None when not started.
PyObject* NegotiationStats(PyObject*, PyObject*) {
  mpirep_negotiation_stats s;
  if (!Api().negotiation_stats(&s)) Py_RETURN_NONE;
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "rounds", s.rounds, "slow_rounds",
                       s.slow_rounds, "cached_tensors", s.cached_tensors, "requests_sent", s.requests_sent,
                       "requests_received", s.requests_received, "messages_sent", s.messages_sent,
                       "messages_received", s.messages_received, "bytes_sent", s.bytes_sent, "bytes_received",
                       s.bytes_received, "agreement_bytes", s.agreement_bytes, "work_ns", s.work_ns);
}

PyObject* TimeNegotiation(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[1];
  bool on;
  if (!MatchArguments("time_negotiation", {"on"}, 1, args, nargs, kwnames, a) || !ToBool(a[0], &on)) return nullptr;
  Api().time_negotiation(on ? 1 : 0);
  Py_RETURN_NONE;
}

// The value in force of setting `name` (c_api.h), as text; None when not started.
PyObject* CurrentSetting(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[1];
  const char* name;
  if (!MatchArguments("current_setting", {"name"}, 1, args, nargs, kwnames, a) ||
      !ToUtf8("current_setting", "name", a[0], &name)) {
    return nullptr;
  }
  char value[1024];
  switch (Api().current_setting(name, value, sizeof value)) {
    case 1:
      return PyUnicode_FromString(value);
    case 0:
      Py_RETURN_NONE;
    case -2:
      return PyErr_Format(PyExc_ValueError, "mpirep setting %s is too long to read", name);
    default:
      return PyErr_Format(PyExc_ValueError, "unknown mpirep setting '%s'", name);
  }
}

PyObject* AutotuneFinished(PyObject*, PyObject*) { return PyBool_FromLong(Api().autotune_finished()); }

// dump_flight_record(reason): writes this rank's flight record; returns the file's path.
PyObject* DumpFlightRecord(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[1];
  const char* reason;
  if (!MatchArguments("dump_flight_record", {"reason"}, 1, args, nargs, kwnames, a) ||
      !ToUtf8("dump_flight_record", "reason", a[0], &reason)) {
    return nullptr;
  }
  char out[4096] = "";
  int status;
  Py_BEGIN_ALLOW_THREADS
  status = Api().dump_flight_record(reason, out, sizeof out);
  Py_END_ALLOW_THREADS
  if (status != static_cast<int>(StatusCode::OK)) {
    SetStatusError(status, out);
    return nullptr;
  }
  return PyUnicode_FromString(out);
}

// lost_peers(): under the elastic driver, the ranks this rank knows to be lost (empty until then).
PyObject* LostPeers(PyObject*, PyObject*) {
  char out[16 * 1024];
  PyObject* lost = PyList_New(0);
  if (!lost || Api().peer_loss_report(out, sizeof out) != 1) return lost;
  for (const char* p = out; *p;) {
    char* end = nullptr;
    PyObject* rank = PyLong_FromLong(std::strtol(p, &end, 10));
    if (!rank || PyList_Append(lost, rank) < 0) {
      Py_XDECREF(rank);
      Py_DECREF(lost);
      return nullptr;
    }
    Py_DECREF(rank);
    p = *end == ',' ? end + 1 : end;
  }
  return lost;
}

}  // namespace

PyMethodDef kInspectionFunctions[] = {
    {"start_timeline", AsMethod(StartTimeline),
     METH_FASTCALL | METH_KEYWORDS,
     "start_timeline($module, /, path, mark_cycles)\n--\n\n"
     "Rank 0 starts writing a timeline to path (mark_cycles: and each round of the core)."},
    {"stop_timeline", StopTimeline, METH_NOARGS,
     "stop_timeline($module, /)\n--\n\nRank 0 finishes and closes its timeline file."},
    {"negotiation_stats", NegotiationStats, METH_NOARGS,
     "negotiation_stats($module, /)\n--\n\nThis rank's negotiation counters, as a dict; None when not started."},
    {"time_negotiation", AsMethod(TimeNegotiation),
     METH_FASTCALL | METH_KEYWORDS,
     "time_negotiation($module, /, on)\n--\n\nTurns the timing of negotiation work (work_ns) on or off."},
    {"current_setting", AsMethod(CurrentSetting),
     METH_FASTCALL | METH_KEYWORDS,
     "current_setting($module, /, name)\n--\n\n"
     "The value in force of a setting, as text; None when not started."},
    {"autotune_finished", AutotuneFinished, METH_NOARGS,
     "autotune_finished($module, /)\n--\n\nWhether autotuning has ended on every rank."},
    {"dump_flight_record", AsMethod(DumpFlightRecord),
     METH_FASTCALL | METH_KEYWORDS,
     "dump_flight_record($module, /, reason)\n--\n\n"
     "Writes this rank's flight record now (docs/reliability.md); returns the file's path."},
    {"lost_peers", LostPeers, METH_NOARGS,
     "lost_peers($module, /)\n--\n\nUnder the elastic driver, the ranks this rank's core has lost."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace mpirep
