#include "estimator/safetensors_header.hpp"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "estimator/byte_units.hpp"
#include "configs/input_file.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/json_document.hpp"

namespace shardscope::estimator {
namespace {

using nlohmann::json;

// The safetensors reference implementation refuses headers above 100 MB; a larger length means
// the file is not safetensors (or is corrupt), and reading it would allocate that much.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::uint64_t read_length_prefix(const configs::InputFile& in, const std::string& path, std::uint64_t file_bytes) {
  if (file_bytes < 8)
    throw EstimatorError(path + ": truncated safetensors file (" + std::to_string(file_bytes) +
                         " bytes); it must start with an 8-byte header length");
  const std::string prefix = in.read_at(0, 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);  // little-endian
  if (n == 0 || n > kMaxHeaderBytes)
    throw EstimatorError(path + ": header length " + std::to_string(n) +
                         " is not plausible (1 byte to 100 MB); is this a safetensors file?");
  if (8 + n > file_bytes)
    throw EstimatorError(path + ": truncated safetensors file: the header claims " + std::to_string(n) +
                         " bytes but only " + std::to_string(file_bytes - 8) + " follow the length");
  return n;
}

std::vector<std::int64_t> read_shape(const json& value, const std::string& where) {
  if (!value.is_array()) throw EstimatorError(where + ": 'shape' must be an array of integers");
  std::vector<std::int64_t> shape;
  for (const json& dim : value) {
    if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0)
      throw EstimatorError(where + ": 'shape' holds " + dim.dump() + ", expected non-negative integers");
    shape.push_back(dim.get<std::int64_t>());
  }
  return shape;
}

// Elements x bytes per element in exact 64-bit arithmetic; a product that overflows is a damaged
// header (no file holds 2^64 bytes), reported as such rather than wrapped or cast (UB).
std::uint64_t checked_tensor_bytes(const SafetensorsTensor& t, const std::string& where) {
  std::uint64_t bytes = static_cast<std::uint64_t>(safetensors_dtype_bytes(t.dtype));
  for (const auto dim : t.shape)
    if (dim == 0) return 0;
  for (const auto dim : t.shape)
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes))
      throw EstimatorError(where + ": 'shape' multiplies to more than 2^64 bytes of " + t.dtype +
                           ": the header is damaged or not a safetensors header");
  return bytes;
}

SafetensorsTensor read_tensor(const std::string& name, const json& entry, const std::string& path,
                              std::uint64_t data_bytes) {
  const std::string where = path + ": tensor '" + name + "'";
  if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
      !entry.contains("shape") || !entry.contains("data_offsets"))
    throw EstimatorError(where + ": expected an object with dtype, shape and data_offsets");
  SafetensorsTensor t;
  t.name = name;
  t.dtype = entry["dtype"].get<std::string>();
  t.shape = read_shape(entry["shape"], where);
  const json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    throw EstimatorError(where + ": 'data_offsets' must be [begin, end] with non-negative integers");
  t.begin = offsets[0].get<std::uint64_t>();
  t.end = offsets[1].get<std::uint64_t>();
  const std::uint64_t expected = checked_tensor_bytes(t, where);
  if (t.end < t.begin || t.end - t.begin != expected)
    throw EstimatorError(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                         "] do not hold " + std::to_string(expected) + " bytes (shape x " + t.dtype + ")");
  if (t.end > data_bytes)
    throw EstimatorError(where + ": data ends at byte " + std::to_string(t.end) + " but the file holds only " +
                         std::to_string(data_bytes) + " bytes of data: the file is truncated (download it again)");
  return t;
}

std::string module_of(const std::string& tensor_name) {
  const auto dot = tensor_name.rfind('.');
  return dot == std::string::npos ? tensor_name : tensor_name.substr(0, dot);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The shards named by an index, each read once; every tensor of the weight_map must be there.
std::vector<SafetensorsHeader> read_index_shards(const std::string& path, const json& index,
                                                 std::vector<std::string>& notes) {
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw EstimatorError(path + ": not a safetensors index: expected an object with a 'weight_map' object");
  std::map<std::string, std::set<std::string>> tensors_by_shard;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      throw EstimatorError(path + ": weight_map['" + tensor + "'] must be a shard file name");
    tensors_by_shard[shard.get<std::string>()].insert(tensor);
  }
  if (tensors_by_shard.empty()) throw EstimatorError(path + ": the weight_map is empty");
  std::vector<SafetensorsHeader> shards;
  for (const auto& [shard, expected] : tensors_by_shard) {
    SafetensorsHeader header = read_safetensors_header(directory_of(path) + shard);
    std::set<std::string> present;
    for (const auto& t : header.tensors) present.insert(t.name);
    for (const auto& name : expected)
      if (!present.count(name))
        throw EstimatorError(path + ": weight_map puts tensor '" + name + "' in " + shard +
                             ", whose header has no such tensor (mismatched download?)");
    if (present.size() != expected.size())
      notes.push_back(shard + " holds " + std::to_string(present.size() - expected.size()) +
                      " tensor(s) not listed in the index; they are counted");
    shards.push_back(std::move(header));
  }
  return shards;
}

void summarize(ModelDescription& d, const std::vector<SafetensorsHeader>& headers) {
  std::map<std::string, double> per_module;
  for (const auto& header : headers) {
    for (const auto& t : header.tensors) {
      const double n = t.numel();
      d.total_params += n;
      d.params_by_dtype[t.dtype] += n;
      per_module[module_of(t.name)] += n;
      if (n > d.largest_tensor_params) {
        d.largest_tensor_params = n;
        d.largest_tensor_name = t.name;
      }
    }
  }
  for (const auto& [module, n] : per_module)
    if (n > d.largest_layer_params) {
      d.largest_layer_params = n;
      d.largest_layer_name = module;
    }
  if (d.total_params == 0) throw EstimatorError(d.name + ": the checkpoint holds no tensors");
  require_plausible_total(d.total_params, d.name, "the tensors' shapes in the header");
}

double tensor_bytes(const std::vector<SafetensorsHeader>& headers) {
  double bytes = 0;
  for (const auto& h : headers)
    for (const auto& t : h.tensors) bytes += static_cast<double>(t.end - t.begin);
  return bytes;
}

}  // namespace

double SafetensorsTensor::numel() const {
  double n = 1;
  for (auto dim : shape) n *= static_cast<double>(dim);
  return n;
}

int safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int> bytes = {
      {"F64", 8},  {"F32", 4},  {"F16", 2},  {"BF16", 2},  {"I64", 8},     {"I32", 4},
      {"I16", 2},  {"I8", 1},   {"U64", 8},  {"U32", 4},   {"U16", 2},     {"U8", 1},
      {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}};
  auto it = bytes.find(dtype);
  if (it == bytes.end())
    throw EstimatorError("unknown safetensors dtype '" + dtype + "' (expected F32, F16, BF16, F8_E4M3, I8, ...)");
  return it->second;
}

namespace {

SafetensorsHeader read_header_from(const configs::InputFile& in, const std::string& path) {
  SafetensorsHeader header;
  header.path = path;
  header.file_bytes = in.size();
  header.header_bytes = read_length_prefix(in, path, header.file_bytes);
  const std::string text = in.read_at(8, header.header_bytes);
  const json root = parse_json_document(text, path, "safetensors header");
  if (!root.is_object()) throw EstimatorError(path + ": the safetensors header must be a JSON object");
  const std::uint64_t data_bytes = header.file_bytes - 8 - header.header_bytes;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;  // free-form strings (format, creator)
    header.tensors.push_back(read_tensor(name, entry, path, data_bytes));
  }
  return header;
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
  try {
    return read_header_from(configs::InputFile(path, "safetensors file"), path);
  } catch (const configs::InputFileError& e) {  // the estimator's callers expect its own error type
    throw EstimatorError(e.what());
  }
}

ModelDescription describe_safetensors(const std::string& path) {
  ModelDescription d;
  d.name = path;
  d.source = ModelSource::kSafetensors;
  std::vector<SafetensorsHeader> headers;
  const bool is_index = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (is_index) {
    const std::string text = read_input_text(path, "safetensors index", configs::kMaxIndexFileBytes);
    const json index = parse_json_document(text, path, "safetensors index");
    headers = read_index_shards(path, index, d.notes);
    if (index.contains("metadata") && index["metadata"].is_object() &&
        index["metadata"].contains("total_size") && index["metadata"]["total_size"].is_number()) {
      const double declared = index["metadata"]["total_size"].get<double>();
      const double actual = tensor_bytes(headers);
      if (declared != actual)
        d.notes.push_back("index metadata.total_size is " + whole_number(declared) +
                          " bytes but the shards' tensors hold " + whole_number(actual));
    }
  } else {
    headers.push_back(read_safetensors_header(path));
  }
  summarize(d, headers);
  return d;
}

}  // namespace shardscope::estimator
