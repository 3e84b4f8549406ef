#include "engine/models/safetensors_file.hpp"

#include <cstring>
#include <fstream>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/safetensors_writer.hpp"
#include "engine/models/model_error.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::engine {
namespace {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader copies bytes as they are"
#endif

const std::vector<std::pair<std::string, torch::ScalarType>>& dtype_table() {
  static const std::vector<std::pair<std::string, torch::ScalarType>> table = {
      {"F64", torch::kDouble}, {"F32", torch::kFloat},  {"F16", torch::kHalf}, {"BF16", torch::kBFloat16},
      {"I64", torch::kLong},   {"I32", torch::kInt},    {"I16", torch::kShort}, {"I8", torch::kChar},
      {"U8", torch::kByte},    {"BOOL", torch::kBool}};
  return table;
}

// The library's dtype of a torch dtype; throws ModelError for one safetensors has no name for.
checkpoints::DType host_dtype_of(torch::ScalarType dtype) {
  static const std::vector<std::pair<torch::ScalarType, checkpoints::DType>> table = {
      {torch::kDouble, checkpoints::DType::kFloat64}, {torch::kFloat, checkpoints::DType::kFloat32},
      {torch::kHalf, checkpoints::DType::kFloat16},   {torch::kBFloat16, checkpoints::DType::kBFloat16},
      {torch::kLong, checkpoints::DType::kInt64},     {torch::kInt, checkpoints::DType::kInt32},
      {torch::kShort, checkpoints::DType::kInt16},    {torch::kChar, checkpoints::DType::kInt8},
      {torch::kByte, checkpoints::DType::kUInt8},     {torch::kBool, checkpoints::DType::kBool}};
  for (const auto& [torch_dtype, host] : table)
    if (torch_dtype == dtype) return host;
  throw ModelError(std::string("dtype ") + c10::toString(dtype) + " has no safetensors name");
}

}  // namespace

std::optional<torch::ScalarType> torch_dtype_of(const std::string& safetensors_dtype) {
  for (const auto& [name, dtype] : dtype_table())
    if (name == safetensors_dtype) return dtype;
  return std::nullopt;
}

std::string safetensors_dtype_of(torch::ScalarType dtype) {
  for (const auto& [name, type] : dtype_table())
    if (type == dtype) return name;
  throw ModelError(std::string("dtype ") + c10::toString(dtype) + " has no safetensors name");
}

torch::Tensor read_safetensors_data(const estimator::SafetensorsHeader& header,
                                    const estimator::SafetensorsTensor& tensor) {
  const auto dtype = torch_dtype_of(tensor.dtype);
  if (!dtype)
    throw ModelError(header.path + ": tensor '" + tensor.name + "' has dtype " + tensor.dtype +
                     ", which torch cannot hold; convert the checkpoint to F32, F16 or BF16");
  auto out = torch::empty(tensor.shape, torch::TensorOptions().dtype(*dtype));
  std::ifstream in(header.path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(8 + header.header_bytes + tensor.begin));
  in.read(static_cast<char*>(out.data_ptr()), static_cast<std::streamsize>(tensor.end - tensor.begin));
  if (!in)
    throw ModelError(header.path + ": could not read the data of tensor '" + tensor.name + "' (bytes " +
                     std::to_string(tensor.begin) + " to " + std::to_string(tensor.end) + " after the header)");
  return out;
}

NamedTensors read_safetensors(const std::string& path) {
  estimator::SafetensorsHeader header;
  try {
    header = estimator::read_safetensors_header(path);
  } catch (const estimator::EstimatorError& e) {
    throw ModelError(e.what());
  }
  NamedTensors tensors;
  for (const auto& t : header.tensors) tensors.emplace_back(t.name, read_safetensors_data(header, t));
  return tensors;
}

// One writer for the whole project (checkpoints/safetensors_writer.hpp): the tensors are copied
// into the library's host tensors, which it writes atomically.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  checkpoints::NamedHostTensors host;
  host.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    const auto cpu = tensor.detach().to(torch::kCPU).contiguous();
    checkpoints::HostTensor t(host_dtype_of(cpu.scalar_type()), cpu.sizes().vec());
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), cpu.data_ptr(), t.bytes.size());
    host.emplace_back(name, std::move(t));
  }
  try {
    checkpoints::write_safetensors(path, host, metadata);
  } catch (const checkpoints::CheckpointError& e) {
    throw ModelError(e.what());
  }
}

}  // namespace shardscope::engine
