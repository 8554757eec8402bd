// mpirep._core.Handle, Python's handle of an operation in flight: it polls, waits with the GIL
// released, and hands over the output. Final, without __dict__ and untracked by the garbage
// collector, so that a step's hundreds of handles cost Python as little as they can.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>

#include "completion.h"
#include "python_ref.h"

namespace mpirep {

// A new Handle of the operation named `name` (a str), which `completion` reports on: it keeps
// `input`, the array the core reads, alive until the operation ends, and gives the output as an
// array of `dtype`. Takes references of its own to `name` and `dtype`, and takes over `input`.
// Null with Python's error set when it cannot be made; `input` is kept alive all the same.
PyObject* NewHandle(PyObject* name, std::shared_ptr<Completion> completion, PyRef input, PyObject* dtype);

// Readies the type and adds it to `module` as Handle; false with Python's error set.
bool AddHandleType(PyObject* module);

}  // namespace mpirep
