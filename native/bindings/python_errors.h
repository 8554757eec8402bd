// Python's error for a failure: the module's functions return null with it set, and never let a
// C++ exception reach Python.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <new>
#include <stdexcept>

namespace mpirep {

// The exception of mpirep.errors for `status`, a core status other than OK.
inline void SetStatusError(int status, const char* message) {
  PyObject* errors = PyImport_ImportModule("mpirep.errors");
  if (!errors) return;
  PyObject* returned = PyObject_CallMethod(errors, "raise_for_status", "is", status, message);
  Py_DECREF(errors);
  if (returned) {  // it always raises
    Py_DECREF(returned);
    PyErr_SetString(PyExc_SystemError, "mpirep.errors.raise_for_status returned");
  }
}

// body(), a function of the module that returns a new reference or null with the error set;
// a C++ exception it throws (an allocation that failed) becomes Python's error.
template <typename Body>
PyObject* CatchingExceptions(Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

}  // namespace mpirep
