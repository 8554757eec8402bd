// What the op library and the XLA kernels (two libraries, built from one source file each) both
// need to hand tensors to the core: its function table, TensorFlow's dtypes as the core's, and
// an address for empty buffers.
#pragma once

#include <atomic>

#include "bindings/c_api.h"
#include "core/common.h"
#include "tensorflow/core/framework/types.h"

namespace mpirep_tf {

// The core's function table, handed to the library by Python once it has loaded it.
inline std::atomic<const mpirep_api*> g_core_api{nullptr};

// Takes the core's table; returns 0, or the core's API version when it is not the one this
// library was compiled against (mpirep_op_desc's layout depends on it).
inline int AdoptCoreApi(const void* table) {
  const auto* api = static_cast<const mpirep_api*>(table);
  if (api->version != MPIREP_API_VERSION) return api->version;
  g_core_api.store(api);
  return 0;
}

// The core insists on a real address even for an empty buffer.
inline char g_empty_buffer[1];

// The dtype names of common.h are numpy's, which TensorFlow's parser accepts too.
inline bool CoreDataType(tensorflow::DataType dtype, mpirep::DataType* out) {
  tensorflow::DataType named;
#define MPIREP_TF_DTYPE_CASE(name, py, size)                             \
  if (tensorflow::DataTypeFromString(#py, &named) && named == dtype) { \
    *out = mpirep::DataType::name;                                     \
    return true;                                                       \
  }
  MPIREP_DTYPES(MPIREP_TF_DTYPE_CASE)
#undef MPIREP_TF_DTYPE_CASE
  return false;
}

}  // namespace mpirep_tf
