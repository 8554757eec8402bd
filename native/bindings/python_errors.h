// Python's error for a failure, for the functions that CPython calls directly rather than through
// pybind11 (the Handle type, submit_allreduce): they return null with the error set.
#pragma once

#include <pybind11/pybind11.h>

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

// Inside a catch block: the error for the C++ exception being handled, thrown by pybind11 (a
// Python error, or a failed conversion) or by an allocation.
inline void SetErrorForCaughtException() {
  try {
    throw;
  } catch (pybind11::error_already_set& e) {
    e.restore();
  } catch (const pybind11::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace mpirep
