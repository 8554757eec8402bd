// The core's vocabulary as Python dicts, made from the X-macro lists of core/common.h, so that
// Python never restates a code.
#include "c_api.h"
#include "core/common.h"
#include "module_functions.h"
#include "python_ref.h"

namespace mpirep {
namespace {

// Adds `dict` to `module` as `name`, taking it over; false with Python's error set.
bool AddDict(PyObject* module, const char* name, PyRef dict) {
  if (!dict || PyModule_AddObject(module, name, dict.get()) < 0) return false;
  dict.release();  // the module holds it now
  return true;
}

bool SetCode(PyObject* dict, const char* name, int code) {
  PyRef value = PyRef::Steal(PyLong_FromLong(code));
  return value && PyDict_SetItemString(dict, name, value.get()) == 0;
}

bool SetText(PyObject* dict, const char* name, const char* text) {
  PyRef value = PyRef::Steal(PyUnicode_FromString(text));
  return value && PyDict_SetItemString(dict, name, value.get()) == 0;
}

// name -> code, for one of the lists.
template <typename Enum>
PyRef CodeDict(std::initializer_list<std::pair<const char*, Enum>> entries) {
  PyRef dict = PyRef::Steal(PyDict_New());
  if (!dict) return dict;
  for (const auto& [name, value] : entries) {
    if (!SetCode(dict.get(), name, static_cast<int>(value))) return PyRef();
  }
  return dict;
}

// status name -> the canonical error code name frameworks report it as
PyRef CanonicalErrorCodes() {
  PyRef dict = PyRef::Steal(PyDict_New());
  if (!dict) return dict;
#define MPIREP_CANONICAL_ENTRY(name, py, code) \
  if (!SetText(dict.get(), #py, #code)) return PyRef();
  MPIREP_STATUS_CODES(MPIREP_CANONICAL_ENTRY)
#undef MPIREP_CANONICAL_ENTRY
  return dict;
}

bool SetFlag(PyObject* dict, const char* name, bool flag) {
  return PyDict_SetItemString(dict, name, flag ? Py_True : Py_False) == 0;
}

// One collective's row of the traits table, as {trait: value}.
PyRef TraitsDict(const CollectiveTraits& t) {
  PyRef dict = PyRef::Steal(PyDict_New());
  if (!dict) return dict;
  const bool ok =
      SetFlag(dict.get(), "reduces", t.reduces()) && SetFlag(dict.get(), "rooted", t.rooted()) &&
      SetFlag(dict.get(), "rows", t.rows()) && SetFlag(dict.get(), "ragged", t.ragged()) &&
      SetFlag(dict.get(), "splits", t.splits()) && SetFlag(dict.get(), "fuses", t.fuses()) &&
      SetFlag(dict.get(), "cached", t.cached()) && SetFlag(dict.get(), "forwards", t.forwards()) &&
      SetFlag(dict.get(), "joins", t.joins()) && SetFlag(dict.get(), "changes_sets", t.changes_sets()) &&
      SetFlag(dict.get(), "same_shape", t.same_shape()) && SetFlag(dict.get(), "compiles", t.compiles());
  if (!ok) return PyRef();
  return dict;
}

// collective name -> its traits (common.h, MPIREP_COLLECTIVES).
PyRef CollectiveTraitsDict() {
  PyRef dict = PyRef::Steal(PyDict_New());
  if (!dict) return dict;
#define MPIREP_TRAITS_ENTRY(name, py, ...)                                                \
  {                                                                                       \
    PyRef row = TraitsDict(Traits(Collective::name));                                     \
    if (!row || PyDict_SetItemString(dict.get(), #py, row.get()) != 0) return PyRef();    \
  }
  MPIREP_COLLECTIVES(MPIREP_TRAITS_ENTRY)
#undef MPIREP_TRAITS_ENTRY
  return dict;
}

}  // namespace

bool AddVocabulary(PyObject* module) {
#define MPIREP_PY_ENTRY(Type, name, py, ...) {#py, Type::name},
#define MPIREP_DTYPE_ENTRY(name, py, size) MPIREP_PY_ENTRY(DataType, name, py)
#define MPIREP_OP_ENTRY(name, py) MPIREP_PY_ENTRY(ReduceOp, name, py)
#define MPIREP_COLLECTIVE_ENTRY(name, py, ...) MPIREP_PY_ENTRY(Collective, name, py)
#define MPIREP_STATUS_ENTRY(name, py, canonical) MPIREP_PY_ENTRY(StatusCode, name, py)
  const bool added =
      AddDict(module, "DTYPES", CodeDict<DataType>({MPIREP_DTYPES(MPIREP_DTYPE_ENTRY)})) &&
      AddDict(module, "REDUCE_OPS", CodeDict<ReduceOp>({MPIREP_REDUCE_OPS(MPIREP_OP_ENTRY)})) &&
      AddDict(module, "COLLECTIVES", CodeDict<Collective>({MPIREP_COLLECTIVES(MPIREP_COLLECTIVE_ENTRY)})) &&
      AddDict(module, "COLLECTIVE_TRAITS", CollectiveTraitsDict()) &&
      AddDict(module, "STATUS", CodeDict<StatusCode>({MPIREP_STATUS_CODES(MPIREP_STATUS_ENTRY)})) &&
      AddDict(module, "CANONICAL_ERROR_CODES", CanonicalErrorCodes());
#undef MPIREP_PY_ENTRY
#undef MPIREP_DTYPE_ENTRY
#undef MPIREP_OP_ENTRY
#undef MPIREP_COLLECTIVE_ENTRY
#undef MPIREP_STATUS_ENTRY
  return added && PyModule_AddIntConstant(module, "API_VERSION", MPIREP_API_VERSION) == 0 &&
         PyModule_AddIntConstant(module, "PEER_LOST_EXIT_STATUS", kPeerLostExitStatus) == 0;
}

}  // namespace mpirep
