#include "checkpoints/host_tensor.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace shardscope::checkpoints {
namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  const char* name;
  const char* storage;
  const char* safetensors;
};

constexpr DTypeInfo kTable[] = {
    {DType::kFloat64, 8, "fp64", "DoubleStorage", "F64"}, {DType::kFloat32, 4, "fp32", "FloatStorage", "F32"},
    {DType::kFloat16, 2, "fp16", "HalfStorage", "F16"},   {DType::kBFloat16, 2, "bf16", "BFloat16Storage", "BF16"},
    {DType::kInt64, 8, "int64", "LongStorage", "I64"},    {DType::kInt32, 4, "int32", "IntStorage", "I32"},
    {DType::kInt16, 2, "int16", "ShortStorage", "I16"},   {DType::kInt8, 1, "int8", "CharStorage", "I8"},
    {DType::kUInt8, 1, "uint8", "ByteStorage", "U8"},     {DType::kBool, 1, "bool", "BoolStorage", "BOOL"}};

const DTypeInfo& info(DType d) {
  for (const auto& i : kTable)
    if (i.dtype == d) return i;
  throw std::logic_error("unknown DType");
}

template <typename T>
float load_as_float(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<float>(v);
}

}  // namespace

std::size_t element_size(DType dtype) { return info(dtype).size; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
const char* storage_class_name(DType dtype) { return info(dtype).storage; }
const char* safetensors_dtype_name(DType dtype) { return info(dtype).safetensors; }

std::optional<DType> dtype_of_storage_class(const std::string& name) {
  for (const auto& i : kTable)
    if (name == i.storage) return i.dtype;
  return std::nullopt;
}

std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

HostTensor::HostTensor(DType d, std::vector<std::int64_t> s) : dtype(d), shape(std::move(s)) {
  const auto n = checked_numel(shape);
  if (!n) throw std::invalid_argument("tensor shape overflows");
  bytes.resize(static_cast<std::size_t>(*n) * element_size(d));
}

std::int64_t HostTensor::numel() const { return checked_numel(shape).value_or(0); }

std::vector<float> HostTensor::to_float32() const {
  const std::size_t n = bytes.size() / element_size(dtype);
  std::vector<float> out(n);
  const char* p = bytes.data();
  for (std::size_t i = 0; i < n; ++i, p += element_size(dtype)) {
    switch (dtype) {
      case DType::kFloat32: std::memcpy(&out[i], p, 4); break;
      case DType::kFloat64: out[i] = load_as_float<double>(p); break;
      case DType::kFloat16: { std::uint16_t b; std::memcpy(&b, p, 2); out[i] = fp16_to_float(b); break; }
      case DType::kBFloat16: { std::uint16_t b; std::memcpy(&b, p, 2); out[i] = bf16_to_float(b); break; }
      case DType::kInt64: out[i] = load_as_float<std::int64_t>(p); break;
      case DType::kInt32: out[i] = load_as_float<std::int32_t>(p); break;
      case DType::kInt16: out[i] = load_as_float<std::int16_t>(p); break;
      case DType::kInt8: out[i] = load_as_float<std::int8_t>(p); break;
      case DType::kUInt8: out[i] = load_as_float<std::uint8_t>(p); break;
      case DType::kBool: out[i] = *p ? 1.0f : 0.0f; break;
    }
  }
  return out;
}

HostTensor HostTensor::from_float32(const float* values, std::int64_t count, DType dtype,
                                    std::vector<std::int64_t> shape) {
  HostTensor t(dtype, std::move(shape));
  if (t.numel() != count) throw std::invalid_argument("from_float32: shape does not hold the values");
  char* p = t.bytes.data();
  for (std::int64_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::kFloat32: std::memcpy(p + 4 * i, &values[i], 4); break;
      case DType::kBFloat16: { const auto b = float_to_bf16(values[i]); std::memcpy(p + 2 * i, &b, 2); break; }
      case DType::kFloat16: { const auto b = float_to_fp16(values[i]); std::memcpy(p + 2 * i, &b, 2); break; }
      default: throw std::invalid_argument("from_float32: only fp32, bf16 and fp16 outputs");
    }
  }
  return t;
}

std::uint16_t float_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_fp16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below fp16's smallest normal: subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // rounds to zero (< 2^-25)
    const std::uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    const std::uint32_t half_ulp = 1u << (shift - 1), rest = mantissa & ((1u << shift) - 1);
    std::uint32_t result = mantissa >> shift;
    if (rest > half_ulp || (rest == half_ulp && (result & 1))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  std::uint32_t result = ((abs >> 13) - (112u << 10));  // rebias exponent 127 -> 15
  const std::uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  std::uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace shardscope::checkpoints
