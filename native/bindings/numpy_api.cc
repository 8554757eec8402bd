#include "numpy_api.h"

#include "python_ref.h"

namespace mpirep::numpy {
namespace {

// Slots of numpy's function table (numpy/__multiarray_api.h), unchanged since numpy 1.7.
constexpr int kArrayTypeSlot = 2;
constexpr int kFromAnySlot = 69;
constexpr int kNewFromDescrSlot = 94;
constexpr int kSetBaseObjectSlot = 282;

using FromAnyFn = PyObject* (*)(PyObject*, PyObject* dtype, int min_depth, int max_depth, int requirements,
                                PyObject* context);
using NewFromDescrFn = PyObject* (*)(PyTypeObject*, PyObject* dtype, int ndim, const Py_intptr_t* shape,
                                     const Py_intptr_t* strides, void* data, int flags, PyObject* init_from);
using SetBaseObjectFn = int (*)(PyObject* array, PyObject* base);

void** table = nullptr;

template <typename Fn>
Fn Slot(int index) {
  return reinterpret_cast<Fn>(table[index]);
}

PyTypeObject* ArrayType() { return static_cast<PyTypeObject*>(table[kArrayTypeSlot]); }

}  // namespace

bool Load() {
  // numpy 2 moved its core from numpy.core to numpy._core.
  PyRef module = PyRef::Steal(PyImport_ImportModule("numpy._core._multiarray_umath"));
  if (!module && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
    PyErr_Clear();
    module = PyRef::Steal(PyImport_ImportModule("numpy.core._multiarray_umath"));
  }
  if (!module) return false;
  PyRef capsule = PyRef::Steal(PyObject_GetAttrString(module.get(), "_ARRAY_API"));
  if (!capsule) return false;
  table = static_cast<void**>(PyCapsule_GetPointer(capsule.get(), nullptr));
  return table != nullptr;  // the capsule lives in numpy's module, which is never unloaded
}

bool IsArray(PyObject* object) { return PyObject_TypeCheck(object, ArrayType()); }

PyObject* FromAny(PyObject* object, int requirements) {
  return Slot<FromAnyFn>(kFromAnySlot)(object, nullptr, 0, 0, requirements, nullptr);
}

PyObject* NewOver(PyObject* dtype, int ndim, const int64_t* shape, void* data, PyObject* base) {
  static_assert(sizeof(Py_intptr_t) == sizeof(int64_t), "numpy's dimensions are 64-bit here");
  Py_INCREF(dtype);  // the next call takes it, even when it fails
  PyRef array = PyRef::Steal(Slot<NewFromDescrFn>(kNewFromDescrSlot)(
      ArrayType(), dtype, ndim, reinterpret_cast<const Py_intptr_t*>(shape), nullptr, data, kWriteable, nullptr));
  if (!array) return nullptr;
  Py_INCREF(base);  // likewise
  if (Slot<SetBaseObjectFn>(kSetBaseObjectSlot)(array.get(), base) < 0) return nullptr;
  return array.release();
}

}  // namespace mpirep::numpy
