// Vocabulary shared by every layer of the core: data types, reduction ops, collectives,
// status codes. Each list is an X-macro so that the Python binding exports the same names and
// numbers; nothing here is ever restated by hand on the Python side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpirep {

// X(ENUM, python_name, element_size)
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

// X(ENUM, python_name)
#define MPIREP_STATUS_CODES(X)                                                     \
  X(OK, ok)                                                                        \
  X(INVALID_ARGUMENT, invalid_argument)   /* bad input on this rank */             \
  X(MISMATCH, mismatch)                   /* ranks disagree about one tensor */    \
  X(SHUT_DOWN, shut_down)                 /* the runtime stopped before it ran */  \
  X(UNSUPPORTED, unsupported)             /* valid request the core cannot do */   \
  X(INTERNAL, internal)                                                            \
  X(STALLED, stalled)                     /* waited past the stall shutdown time */

#define MPIREP_ENUM_ENTRY(name, ...) name,
enum class DataType : uint8_t { MPIREP_DTYPES(MPIREP_ENUM_ENTRY) };
enum class ReduceOp : uint8_t { MPIREP_REDUCE_OPS(MPIREP_ENUM_ENTRY) };
enum class Collective : uint8_t { MPIREP_COLLECTIVES(MPIREP_ENUM_ENTRY) };
enum class StatusCode : uint8_t { MPIREP_STATUS_CODES(MPIREP_ENUM_ENTRY) };
#undef MPIREP_ENUM_ENTRY

size_t ElementSize(DataType dtype);
const char* DataTypeName(DataType dtype);
const char* ReduceOpName(ReduceOp op);
const char* CollectiveName(Collective collective);
bool IsFloating(DataType dtype);

using Shape = std::vector<int64_t>;
int64_t NumElements(const Shape& shape);
std::string ShapeString(const Shape& shape);

struct Status {
  StatusCode code = StatusCode::OK;
  std::string message;

  bool ok() const { return code == StatusCode::OK; }
  static Status Ok() { return {}; }
  static Status Error(StatusCode code, std::string message) { return {code, std::move(message)}; }
};

}  // namespace mpirep
