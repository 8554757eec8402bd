// Reading the arguments of the module's functions, all of them METH_FASTCALL: each helper
// returns false with Python's error set (a TypeError, or an OverflowError for an int too large)
// when an argument is not what the function takes.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace mpirep {

// The arguments of a METH_FASTCALL | METH_KEYWORDS function `function` whose parameters are
// `names`, the first `required` of them without a default: each given by position or by name,
// borrowed into slots[i], in the order of `names`, and null where an optional one is omitted.
// `slots` has room for every name.
bool MatchArguments(const char* function, std::initializer_list<const char*> names, size_t required,
                    PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** slots);

bool ToInt(PyObject* value, int* out);
bool ToDouble(PyObject* value, double* out);
bool ToBool(PyObject* value, bool* out);  // any object, by its truth
// A str, as UTF-8 that lives as long as `value`.
bool ToUtf8(const char* function, const char* parameter, PyObject* value, const char** out);
// A sequence of integers, or None for none.
bool ToInt64s(const char* function, const char* parameter, PyObject* value, std::vector<int64_t>* out);
// A dict of str to str.
bool ToStringMap(const char* function, const char* parameter, PyObject* value,
                 std::map<std::string, std::string>* out);

}  // namespace mpirep
