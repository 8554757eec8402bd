#include "reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "half.h"

namespace mpirep {
namespace {

// Integer arithmetic goes through the unsigned type so that overflow wraps instead of being UB.
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // Promote narrow types explicitly: uint16 * uint16 would otherwise multiply as signed int.
    using Wide = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(static_cast<Wide>(static_cast<U>(a)) * static_cast<Wide>(static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <typename T, typename F>
void Zip(T* out, const T* a, const T* b, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

template <typename T>
void ReduceNumeric(T* out, const T* a, const T* b, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::AVERAGE:
    case ReduceOp::SUM:
      Zip(out, a, b, n, [](T x, T y) { return WrapAdd(x, y); });
      break;
    case ReduceOp::MIN:
      Zip(out, a, b, n, [](T x, T y) { return y < x ? y : x; });
      break;
    case ReduceOp::MAX:
      Zip(out, a, b, n, [](T x, T y) { return x < y ? y : x; });
      break;
    case ReduceOp::PRODUCT:
      Zip(out, a, b, n, [](T x, T y) { return WrapMul(x, y); });
      break;
  }
}

// 16-bit floats: each element is widened to float, combined, and rounded back once.
template <typename H, float (*ToFloat)(H), H (*FromFloat)(float)>
void ReduceHalf(H* out, const H* a, const H* b, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::AVERAGE:
    case ReduceOp::SUM:
      Zip(out, a, b, n, [](H x, H y) { return FromFloat(ToFloat(x) + ToFloat(y)); });
      break;
    case ReduceOp::MIN:
      Zip(out, a, b, n, [](H x, H y) { return ToFloat(y) < ToFloat(x) ? y : x; });
      break;
    case ReduceOp::MAX:
      Zip(out, a, b, n, [](H x, H y) { return ToFloat(x) < ToFloat(y) ? y : x; });
      break;
    case ReduceOp::PRODUCT:
      Zip(out, a, b, n, [](H x, H y) { return FromFloat(ToFloat(x) * ToFloat(y)); });
      break;
  }
}

void ReduceBool(uint8_t* out, const uint8_t* a, const uint8_t* b, int64_t n, ReduceOp op) {
  if (op == ReduceOp::MAX) {
    Zip(out, a, b, n, [](uint8_t x, uint8_t y) -> uint8_t { return (x | y) != 0; });
  } else {  // MIN and PRODUCT are both logical and
    Zip(out, a, b, n, [](uint8_t x, uint8_t y) -> uint8_t { return (x & y) != 0; });
  }
}

template <typename T>
void ScaleNumeric(T* out, const T* in, int64_t n, double factor) {
  if constexpr (std::is_integral_v<T>) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<double>(in[i]) * factor);
  } else {
    const T f = static_cast<T>(factor);
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] * f;
  }
}

template <typename H, float (*ToFloat)(H), H (*FromFloat)(float)>
void ScaleHalf(H* out, const H* in, int64_t n, double factor) {
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < n; ++i) out[i] = FromFloat(ToFloat(in[i]) * f);
}

template <typename T>
void FloorDivideInt(T* buf, int64_t n, int64_t divisor) {
  const T d = static_cast<T>(divisor);
  for (int64_t i = 0; i < n; ++i) {
    T q = buf[i] / d;
    if constexpr (std::is_signed_v<T>) {
      if ((buf[i] % d != 0) && ((buf[i] < 0) != (d < 0))) --q;
    }
    buf[i] = q;
  }
}

}  // namespace

bool ReduceOpSupported(DataType dtype, ReduceOp op) {
  return dtype != DataType::BOOL || (op != ReduceOp::SUM && op != ReduceOp::AVERAGE);
}

#define MPIREP_NUMERIC_CASES(MACRO)          \
  MACRO(DataType::UINT8, uint8_t)            \
  MACRO(DataType::INT8, int8_t)              \
  MACRO(DataType::UINT16, uint16_t)          \
  MACRO(DataType::INT16, int16_t)            \
  MACRO(DataType::INT32, int32_t)            \
  MACRO(DataType::INT64, int64_t)            \
  MACRO(DataType::FLOAT32, float)            \
  MACRO(DataType::FLOAT64, double)

void Reduce(void* out, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
#define MPIREP_REDUCE_CASE(tag, T)                                                            \
  case tag:                                                                                   \
    ReduceNumeric(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b),  \
                  count, op);                                                                 \
    return;
    MPIREP_NUMERIC_CASES(MPIREP_REDUCE_CASE)
#undef MPIREP_REDUCE_CASE
    case DataType::FLOAT16:
      ReduceHalf<Float16, Float16ToFloat, FloatToFloat16>(
          static_cast<Float16*>(out), static_cast<const Float16*>(a),
          static_cast<const Float16*>(b), count, op);
      return;
    case DataType::BFLOAT16:
      ReduceHalf<BFloat16, BFloat16ToFloat, FloatToBFloat16>(
          static_cast<BFloat16*>(out), static_cast<const BFloat16*>(a),
          static_cast<const BFloat16*>(b), count, op);
      return;
    case DataType::BOOL:
      ReduceBool(static_cast<uint8_t*>(out), static_cast<const uint8_t*>(a),
                 static_cast<const uint8_t*>(b), count, op);
      return;
  }
}

void Scale(void* out, const void* in, int64_t count, DataType dtype, double factor) {
  switch (dtype) {
#define MPIREP_SCALE_CASE(tag, T)                                                       \
  case tag:                                                                             \
    ScaleNumeric(static_cast<T*>(out), static_cast<const T*>(in), count, factor);       \
    return;
    MPIREP_NUMERIC_CASES(MPIREP_SCALE_CASE)
#undef MPIREP_SCALE_CASE
    case DataType::FLOAT16:
      ScaleHalf<Float16, Float16ToFloat, FloatToFloat16>(
          static_cast<Float16*>(out), static_cast<const Float16*>(in), count, factor);
      return;
    case DataType::BFLOAT16:
      ScaleHalf<BFloat16, BFloat16ToFloat, FloatToBFloat16>(
          static_cast<BFloat16*>(out), static_cast<const BFloat16*>(in), count, factor);
      return;
    case DataType::BOOL:
      if (out != in) std::memcpy(out, in, static_cast<size_t>(count));
      return;
  }
}

void FloorDivide(void* buf, int64_t count, DataType dtype, int64_t divisor) {
  switch (dtype) {
    case DataType::UINT8: return FloorDivideInt(static_cast<uint8_t*>(buf), count, divisor);
    case DataType::INT8: return FloorDivideInt(static_cast<int8_t*>(buf), count, divisor);
    case DataType::UINT16: return FloorDivideInt(static_cast<uint16_t*>(buf), count, divisor);
    case DataType::INT16: return FloorDivideInt(static_cast<int16_t*>(buf), count, divisor);
    case DataType::INT32: return FloorDivideInt(static_cast<int32_t*>(buf), count, divisor);
    case DataType::INT64: return FloorDivideInt(static_cast<int64_t*>(buf), count, divisor);
    default: return;  // floating types divide by scaling; bool has no average
  }
}

}  // namespace mpirep
