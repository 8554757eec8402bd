// TensorFlow's dtypes as the core's: shared by the op library and the XLA kernels, which are
// two libraries built from one source file each.
#pragma once

#include "core/common.h"
#include "tensorflow/core/framework/types.h"

namespace mpirep_tf {

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
