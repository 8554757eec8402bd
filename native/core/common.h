// Vocabulary shared by every layer of the core and by the bindings: data types, reduction ops,
// collectives, status codes. Each list is an X-macro from which the Python module exports the
// names and numbers (mpirep._core.DTYPES, ...) and the TensorFlow op library derives its dtype
// list and error codes, so that none of them is restated by hand elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpirep {

// X(ENUM, name, element_size); the name is numpy's, which TensorFlow accepts too
#define MPIREP_DTYPES(X)     \
  X(UINT8, uint8, 1)         \
  X(INT8, int8, 1)           \
  X(UINT16, uint16, 2)       \
  X(INT16, int16, 2)         \
  X(INT32, int32, 4)         \
  X(INT64, int64, 8)         \
  X(FLOAT16, float16, 2)     \
  X(BFLOAT16, bfloat16, 2)   \
  X(FLOAT32, float32, 4)     \
  X(FLOAT64, float64, 8)     \
  X(BOOL, bool, 1)

// X(ENUM, python_name)
#define MPIREP_REDUCE_OPS(X) \
  X(AVERAGE, Average)        \
  X(SUM, Sum)                \
  X(MIN, Min)                \
  X(MAX, Max)                \
  X(PRODUCT, Product)

#define MPIREP_COLLECTIVES(X) \
  X(ALLREDUCE, allreduce)     \
  X(ALLGATHER, allgather)     \
  X(BROADCAST, broadcast)     \
  X(REDUCESCATTER, reducescatter) \
  X(ALLTOALL, alltoall)       \
  X(BARRIER, barrier)         \
  X(JOIN, join)               \
  X(ADD_PROCESS_SET, add_process_set) \
  X(REMOVE_PROCESS_SET, remove_process_set)

// X(ENUM, python_name, canonical error code): the canonical code (absl::StatusCode, gRPC, and
// TensorFlow's tf.errors, as Horovod raises them) that a framework reports the status as.
#define MPIREP_STATUS_CODES(X)                                                                        \
  X(OK, ok, OK)                                                                                       \
  X(INVALID_ARGUMENT, invalid_argument, INVALID_ARGUMENT)   /* bad input on this rank */              \
  X(MISMATCH, mismatch, FAILED_PRECONDITION)                /* ranks disagree about one tensor */     \
  X(SHUT_DOWN, shut_down, ABORTED)                          /* stopped before it ran */               \
  X(UNSUPPORTED, unsupported, UNIMPLEMENTED)                /* a valid request the core cannot do */  \
  X(INTERNAL, internal, INTERNAL)                                                                     \
  X(STALLED, stalled, DEADLINE_EXCEEDED)                    /* waited past the stall shutdown time */ \
  X(NOT_INITIALIZED, not_initialized, FAILED_PRECONDITION)  /* used before init or after shutdown */

// The exit status of a rank that ends the job because a peer stopped answering.
constexpr int kPeerLostExitStatus = 76;

#define MPIREP_ENUM_ENTRY(name, ...) name,
enum class DataType : uint8_t { MPIREP_DTYPES(MPIREP_ENUM_ENTRY) };
enum class ReduceOp : uint8_t { MPIREP_REDUCE_OPS(MPIREP_ENUM_ENTRY) };
enum class Collective : uint8_t { MPIREP_COLLECTIVES(MPIREP_ENUM_ENTRY) };
enum class StatusCode : uint8_t { MPIREP_STATUS_CODES(MPIREP_ENUM_ENTRY) };
#undef MPIREP_ENUM_ENTRY

// Header-only, so that bindings can use it without linking the core.
inline size_t ElementSize(DataType dtype) {
  switch (dtype) {
#define MPIREP_SIZE_CASE(name, py, size) \
  case DataType::name:                   \
    return size;
    MPIREP_DTYPES(MPIREP_SIZE_CASE)
#undef MPIREP_SIZE_CASE
  }
  return 0;
}

const char* DataTypeName(DataType dtype);
const char* ReduceOpName(ReduceOp op);
const char* CollectiveName(Collective collective);
const char* StatusName(StatusCode code);
bool IsFloating(DataType dtype);

using Shape = std::vector<int64_t>;

inline int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The bytes of a tensor of `dtype` and `shape`.
inline int64_t TensorBytes(DataType dtype, const Shape& shape) {
  return NumElements(shape) * static_cast<int64_t>(ElementSize(dtype));
}

std::string ShapeString(const Shape& shape);

struct Status {
  StatusCode code = StatusCode::OK;
  std::string message;

  bool ok() const { return code == StatusCode::OK; }
  static Status Ok() { return {}; }
  static Status Error(StatusCode code, std::string message) { return {code, std::move(message)}; }
};

}  // namespace mpirep
