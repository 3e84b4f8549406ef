#pragma once
// Tensors in host memory without LibTorch: a dtype, a shape and the little-endian bytes. The
// checkpoint readers hand these out, the writers take them, and the engine converts them to and
// from torch::Tensor at its edge.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::checkpoints {

enum class DType { kFloat64, kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool };

/// Bytes per element.
std::size_t element_size(DType dtype);
/// "fp32", "bf16", ... as ShardScope prints them.
const char* dtype_name(DType dtype);
/// torch's storage class name ("FloatStorage") and back.
const char* storage_class_name(DType dtype);
std::optional<DType> dtype_of_storage_class(const std::string& name);
/// safetensors' dtype name ("F32").
const char* safetensors_dtype_name(DType dtype);

/// Product of `shape`, or nullopt when it overflows int64 or a dimension is negative.
std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& shape);

struct HostTensor {
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::vector<char> bytes;  ///< numel() * element_size(dtype), contiguous

  HostTensor() = default;
  HostTensor(DType d, std::vector<std::int64_t> s);
  std::int64_t numel() const;
  /// The data as fp32 (fp32 copied, fp16 and bf16 widened exactly, others converted).
  std::vector<float> to_float32() const;
  /// A tensor of `dtype` from fp32 values, rounded to nearest even for fp16 and bf16.
  static HostTensor from_float32(const float* values, std::int64_t count, DType dtype,
                                 std::vector<std::int64_t> shape);
  float* float_data() { return reinterpret_cast<float*>(bytes.data()); }
  const float* float_data() const { return reinterpret_cast<const float*>(bytes.data()); }
};

/// fp32 <-> 16-bit conversions (round to nearest even; NaN stays NaN, overflow becomes inf).
std::uint16_t float_to_bf16(float value);
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16(float value);
float fp16_to_float(std::uint16_t bits);

}  // namespace shardscope::checkpoints
