// The parts of mpirep._core, each from its own file, for the module table (python_module.cc).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace mpirep {

// Each a PyMethodDef list ending in an empty entry.
extern PyMethodDef kSessionFunctions[];     // init, shutdown, topology, ... (session_functions.cc)
extern PyMethodDef kSubmitFunctions[];      // submit, submit_allreduce (submit_functions.cc)
extern PyMethodDef kInspectionFunctions[];  // timeline, negotiation_stats, ... (inspection_functions.cc)
extern PyMethodDef kMemoryFunctions[];      // stream_copy (memory_functions.cc)

// The core's vocabulary as dicts, DTYPES, REDUCE_OPS, COLLECTIVES, STATUS and
// CANONICAL_ERROR_CODES, and API_VERSION (vocabulary.cc); false with Python's error set.
bool AddVocabulary(PyObject* module);

// A METH_FASTCALL function (with or without METH_KEYWORDS) as a method table takes it.
template <typename Function>
PyCFunction AsMethod(Function function) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

}  // namespace mpirep
