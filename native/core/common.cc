#include "common.h"

#include <sstream>

namespace mpirep {

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
#define MPIREP_NAME_CASE(name, py, size) \
  case DataType::name:                   \
    return #py;
    MPIREP_DTYPES(MPIREP_NAME_CASE)
#undef MPIREP_NAME_CASE
  }
  return "unknown";
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
#define MPIREP_NAME_CASE(name, py) \
  case ReduceOp::name:             \
    return #py;
    MPIREP_REDUCE_OPS(MPIREP_NAME_CASE)
#undef MPIREP_NAME_CASE
  }
  return "unknown";
}

const char* CollectiveName(Collective collective) {
  switch (collective) {
#define MPIREP_NAME_CASE(name, py, ...) \
  case Collective::name:                \
    return #py;
    MPIREP_COLLECTIVES(MPIREP_NAME_CASE)
#undef MPIREP_NAME_CASE
  }
  return "unknown";
}

const char* StatusName(StatusCode code) {
  switch (code) {
#define MPIREP_NAME_CASE(name, py, canonical) \
  case StatusCode::name:                      \
    return #py;
    MPIREP_STATUS_CODES(MPIREP_NAME_CASE)
#undef MPIREP_NAME_CASE
  }
  return "unknown";
}

bool IsFloating(DataType dtype) {
  return dtype == DataType::FLOAT16 || dtype == DataType::BFLOAT16 ||
         dtype == DataType::FLOAT32 || dtype == DataType::FLOAT64;
}

std::string ShapeString(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace mpirep
