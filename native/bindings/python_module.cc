// mpirep._core: the Python face of the core, written on CPython's C API. It exports the core's
// vocabulary as dictionaries (so Python never restates a code), and reaches the core through
// the C API alone (c_api.h): it starts and ends the core, and submits numpy buffers, returning a
// Handle (handle_type.h) that Python waits on with the GIL released. This file is the module
// table; each group of functions lives in a file of its own (module_functions.h).
#include "handle_type.h"
#include "module_functions.h"
#include "numpy_api.h"
#include "python_ref.h"

namespace mpirep {
namespace {

PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "mpirep._core",
    "mpirep's native core",
    -1,  // one core per process: no state per interpreter
    nullptr,
};

PyObject* MakeModule() {
  PyRef module = PyRef::Steal(PyModule_Create(&core_module));
  if (!module || !numpy::Load() || !AddVocabulary(module.get()) || !AddHandleType(module.get())) return nullptr;
  for (PyMethodDef* functions : {kSessionFunctions, kSubmitFunctions, kInspectionFunctions, kMemoryFunctions}) {
    if (PyModule_AddFunctions(module.get(), functions) < 0) return nullptr;
  }
  return module.release();
}

}  // namespace
}  // namespace mpirep

PyMODINIT_FUNC PyInit__core() { return mpirep::MakeModule(); }
