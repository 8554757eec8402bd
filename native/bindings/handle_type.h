// mpirep._core.Handle, Python's handle of an operation in flight: it polls, waits with the GIL
// released, and hands over the output. A CPython type of its own rather than a pybind11 class,
// whose dispatch, instance registry and deallocation cost about a quarter of the Python
// thread's time for a small tensor.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "completion.h"

namespace mpirep {

// A new Handle of the operation named `name` (a str), which `completion` reports on: it keeps
// `input`, the array the core reads, alive until the operation ends, and gives the output as an
// array of `dtype`. Null with Python's error set when it cannot be made; `input` is kept alive
// all the same.
PyObject* NewHandle(pybind11::str name, std::shared_ptr<Completion> completion, pybind11::object input,
                    pybind11::dtype dtype);

// Readies the type and adds it to `module` as Handle; false with Python's error set.
bool AddHandleType(PyObject* module);

}  // namespace mpirep
