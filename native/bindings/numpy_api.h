// The few parts of numpy's C API that the module uses, taken at run time from the table that
// numpy publishes (the `_ARRAY_API` capsule), so that the build needs no numpy headers and one
// build serves numpy 1.x and 2.x alike: the slots used here and the leading fields of an array
// object are the same in both.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>

namespace mpirep::numpy {

// The leading fields of numpy's array object, PyArrayObject_fields.
struct ArrayFields {
  PyObject_HEAD
  char* data;
  int nd;
  Py_intptr_t* dimensions;
  Py_intptr_t* strides;
  PyObject* base;
  PyObject* descr;  // the array's dtype
  int flags;
};

inline ArrayFields* Fields(PyObject* array) { return reinterpret_cast<ArrayFields*>(array); }

// Flags of ArrayFields::flags and of FromAny's requirements (numpy's NPY_ARRAY_*).
constexpr int kCContiguous = 0x0001;
constexpr int kEnsureArray = 0x0040;
constexpr int kWriteable = 0x0400;

// Loads the table; false with Python's error set. Once, before anything below.
bool Load();

// Whether `object` is a numpy array (of a subclass too).
bool IsArray(PyObject* object);

// `object` as an array meeting `requirements` (flags above), copied only where needed: a new
// reference, or null with numpy's error set.
PyObject* FromAny(PyObject* object, int requirements);

// A new array of `dtype` and C order over `data`, which `base` keeps alive: the array holds a
// reference to `base`. Null with Python's error set.
PyObject* NewOver(PyObject* dtype, int ndim, const int64_t* shape, void* data, PyObject* base);

}  // namespace mpirep::numpy
