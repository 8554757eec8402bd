// The copy that the core writes large outputs with (c_api.h's stream_copy), for the benchmarks:
// their bound on a collective inside a host is the faster of a plain copy and this one.
#include "c_api.h"
#include "module_functions.h"

namespace mpirep {
namespace {

// stream_copy(dst, src): src's bytes into dst, both C-contiguous and of one length.
PyObject* StreamCopyFunction(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "stream_copy(dst, src) takes exactly 2 arguments");
    return nullptr;
  }
  Py_buffer dst, src;
  if (PyObject_GetBuffer(args[0], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return nullptr;
  if (PyObject_GetBuffer(args[1], &src, PyBUF_C_CONTIGUOUS) < 0) {
    PyBuffer_Release(&dst);
    return nullptr;
  }
  const bool same_length = dst.len == src.len;
  if (same_length) {
    Py_BEGIN_ALLOW_THREADS
    mpirep_get_api()->stream_copy(dst.buf, src.buf, static_cast<size_t>(dst.len));
    Py_END_ALLOW_THREADS
  } else {
    PyErr_Format(PyExc_ValueError, "stream_copy: dst has %zd bytes and src %zd", dst.len, src.len);
  }
  PyBuffer_Release(&src);
  PyBuffer_Release(&dst);
  if (!same_length) return nullptr;
  Py_RETURN_NONE;
}

}  // namespace

PyMethodDef kMemoryFunctions[] = {
    {"stream_copy", AsMethod(StreamCopyFunction), METH_FASTCALL,
     "stream_copy($module, dst, src, /)\n--\n\n"
     "Copies src's bytes into dst (C-contiguous, as long) with stores that bypass the cache."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace mpirep
