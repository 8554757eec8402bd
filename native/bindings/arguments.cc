#include "arguments.h"

#include <climits>

#include "python_ref.h"

namespace mpirep {

bool MatchArguments(const char* function, std::initializer_list<const char*> names, size_t required,
                    PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** slots) {
  const size_t count = names.size();
  if (static_cast<size_t>(nargs) > count) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %zu arguments (%zd given)", function, count, nargs);
    return false;
  }
  for (size_t i = 0; i < count; ++i) slots[i] = i < static_cast<size_t>(nargs) ? args[i] : nullptr;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    size_t i = 0;
    for (const char* name : names) {
      if (PyUnicode_CompareWithASCIIString(keyword, name) == 0) break;
      ++i;
    }
    if (i == count) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", function, keyword);
      return false;
    }
    if (slots[i]) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", function, keyword);
      return false;
    }
    slots[i] = args[nargs + k];
  }
  size_t i = 0;
  for (const char* name : names) {
    if (i < required && !slots[i]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %zu)", function, name, i + 1);
      return false;
    }
    ++i;
  }
  return true;
}

bool ToInt(PyObject* value, int* out) {
  const long v = PyLong_AsLong(value);
  if (v == -1 && PyErr_Occurred()) return false;
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C int");
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

bool ToDouble(PyObject* value, double* out) {
  *out = PyFloat_AsDouble(value);
  return !(*out == -1.0 && PyErr_Occurred());
}

bool ToBool(PyObject* value, bool* out) {
  const int truth = PyObject_IsTrue(value);
  if (truth < 0) return false;
  *out = truth != 0;
  return true;
}

bool ToUtf8(const char* function, const char* parameter, PyObject* value, const char** out) {
  if (!PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be str, not %.100s", function, parameter, Py_TYPE(value)->tp_name);
    return false;
  }
  *out = PyUnicode_AsUTF8(value);
  return *out != nullptr;
}

bool ToInt64s(const char* function, const char* parameter, PyObject* value, std::vector<int64_t>* out) {
  out->clear();
  if (value == Py_None) return true;
  if (PyUnicode_Check(value) || PyBytes_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be a sequence of integers or None, not %.100s", function,
                 parameter, Py_TYPE(value)->tp_name);
    return false;
  }
  PyRef items = PyRef::Steal(PySequence_Fast(value, ""));
  if (!items) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be a sequence of integers or None, not %.100s", function,
                 parameter, Py_TYPE(value)->tp_name);
    return false;
  }
  const Py_ssize_t size = PySequence_Fast_GET_SIZE(items.get());
  out->reserve(static_cast<size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(items.get(), i));
    if (v == -1 && PyErr_Occurred()) return false;
    out->push_back(v);
  }
  return true;
}

bool ToStringMap(const char* function, const char* parameter, PyObject* value,
                 std::map<std::string, std::string>* out) {
  if (!PyDict_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s(): %s must be a dict of str to str, not %.100s", function, parameter,
                 Py_TYPE(value)->tp_name);
    return false;
  }
  Py_ssize_t position = 0;
  PyObject *key, *item;
  while (PyDict_Next(value, &position, &key, &item)) {
    const char *k, *v;
    if (!ToUtf8(function, "a settings key", key, &k) || !ToUtf8(function, "a settings value", item, &v)) {
      return false;
    }
    (*out)[k] = v;
  }
  return true;
}

}  // namespace mpirep
