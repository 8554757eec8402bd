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

// Every collective's traits, one row each, read through Traits(collective) wherever the core,
// a binding or Python (mpirep._core.COLLECTIVE_TRAITS) treats collectives differently:
// X(ENUM, python_name, flags, output shape, part of a joined rank, function that runs it).
//   flags   kReduces  takes a reduction op and scale factors: checked for the dtype, agreed on
//           kRooted   has a root rank of its set: checked, agreed on; a root that joined fails it
//           kRows     works on rows (the first dimension): needs at least one dimension
//           kRagged   each rank's first dimension may differ; ranks agree on the others
//           kSplits   takes one split per rank and returns the splits it received
//           kFuses    ready ones of one set, dtype, op and scales share one pass (fusion.h)
//           kCached   kept in the response cache when it ran with every member submitting
//           kForwards its output may be its input's buffer (every element read before written)
//           kTuned    its timings feed the autotuner
//           kJoins    it is join: it needs every rank and ends their joined state
//           kAddsSet, kRemovesSet  it changes the process-set registry, on every rank
//           kCompiles XLA can compile it into a step (mpirep_tf_xla.cc): one call per group whose
//                     outputs are shaped like its inputs, so their shapes are known when compiling
//   output  kSameShape: the input's shape; kRowsDecided: that but for the first dimension,
//           which the other ranks decide
//   joined  what a rank that has joined does when the others run it: kZeros takes part with
//           zeros of the tensor's shape, kNoRows with zero rows, kRefuses makes it fail
//   run     the function of native/core/collective_<name>.cc that carries it out (executor.h)
#define MPIREP_COLLECTIVES(X)                                                                                 \
  X(ALLREDUCE, allreduce, kReduces | kFuses | kCached | kForwards | kTuned | kCompiles, kSameShape, kZeros,       \
    RunAllreduce)                                                                                               \
  X(ALLGATHER, allgather, kRows | kRagged | kCached, kRowsDecided, kNoRows, RunAllgather)                      \
  X(BROADCAST, broadcast, kRooted | kCached | kCompiles, kSameShape, kZeros, RunBroadcast)                    \
  X(REDUCESCATTER, reducescatter, kReduces | kRows | kCached, kRowsDecided, kZeros, RunReducescatter)         \
  X(ALLTOALL, alltoall, kRows | kRagged | kSplits | kCached, kRowsDecided, kRefuses, RunAlltoall)            \
  X(BARRIER, barrier, 0, kSameShape, kZeros, RunBarrier)                                                      \
  X(JOIN, join, kJoins, kSameShape, kZeros, RunJoin)                                                          \
  X(ADD_PROCESS_SET, add_process_set, kAddsSet, kSameShape, kZeros, RunSetChange)                             \
  X(REMOVE_PROCESS_SET, remove_process_set, kRemovesSet, kSameShape, kZeros, RunSetChange)                  \
  X(REDUCE, reduce, kReduces | kRooted | kCached | kCompiles, kSameShape, kZeros, RunReduce)

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

// The vocabulary of the collectives' rows (MPIREP_COLLECTIVES).
namespace collective_traits {
enum Flag : uint32_t {
  kReduces = 1u << 0,
  kRooted = 1u << 1,
  kRows = 1u << 2,
  kRagged = 1u << 3,
  kSplits = 1u << 4,
  kFuses = 1u << 5,
  kCached = 1u << 6,
  kForwards = 1u << 7,
  kTuned = 1u << 8,
  kJoins = 1u << 9,
  kAddsSet = 1u << 10,
  kRemovesSet = 1u << 11,
  kCompiles = 1u << 12,
};
enum class Output : uint8_t { kSameShape, kRowsDecided };
enum class Joined : uint8_t { kZeros, kNoRows, kRefuses };
constexpr Output kSameShape = Output::kSameShape, kRowsDecided = Output::kRowsDecided;
constexpr Joined kZeros = Joined::kZeros, kNoRows = Joined::kNoRows, kRefuses = Joined::kRefuses;
}  // namespace collective_traits

// One row of MPIREP_COLLECTIVES, whose comment says what each trait means.
struct CollectiveTraits {
  uint32_t flags;
  collective_traits::Output output;
  collective_traits::Joined joined;

  constexpr bool Has(collective_traits::Flag flag) const { return (flags & flag) != 0; }
  constexpr bool reduces() const { return Has(collective_traits::kReduces); }
  constexpr bool rooted() const { return Has(collective_traits::kRooted); }
  constexpr bool rows() const { return Has(collective_traits::kRows); }
  constexpr bool ragged() const { return Has(collective_traits::kRagged); }
  constexpr bool splits() const { return Has(collective_traits::kSplits); }
  constexpr bool fuses() const { return Has(collective_traits::kFuses); }
  constexpr bool cached() const { return Has(collective_traits::kCached); }
  constexpr bool forwards() const { return Has(collective_traits::kForwards); }
  constexpr bool tuned() const { return Has(collective_traits::kTuned); }
  constexpr bool joins() const { return Has(collective_traits::kJoins); }
  constexpr bool adds_set() const { return Has(collective_traits::kAddsSet); }
  constexpr bool removes_set() const { return Has(collective_traits::kRemovesSet); }
  constexpr bool changes_sets() const { return adds_set() || removes_set(); }
  constexpr bool compiles() const { return Has(collective_traits::kCompiles); }
  constexpr bool same_shape() const { return output == collective_traits::kSameShape; }
};

namespace collective_traits {
#define MPIREP_TRAITS_ENTRY(name, py, flags, output, joined, run) CollectiveTraits{flags, output, joined},
constexpr CollectiveTraits kTable[] = {MPIREP_COLLECTIVES(MPIREP_TRAITS_ENTRY)};
#undef MPIREP_TRAITS_ENTRY
}  // namespace collective_traits

// Whether `code` is a collective's code (a binding's input is checked before Traits reads it).
constexpr bool IsCollectiveCode(int code) {
  return code >= 0 && code < static_cast<int>(sizeof(collective_traits::kTable) / sizeof(CollectiveTraits));
}

// Header-only, like the table, so that bindings can use it without linking the core.
constexpr const CollectiveTraits& Traits(Collective collective) {
  return collective_traits::kTable[static_cast<size_t>(collective)];
}

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
