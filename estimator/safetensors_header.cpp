#include "estimator/safetensors_header.hpp"

#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

using nlohmann::json;

// The safetensors reference implementation refuses headers above 100 MB; a larger length means
// the file is not safetensors (or is corrupt), and reading it would allocate that much.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::uint64_t read_length_prefix(std::ifstream& in, const std::string& path, std::uint64_t file_bytes) {
  if (file_bytes < 8)
    throw EstimatorError(path + ": truncated safetensors file (" + std::to_string(file_bytes) +
                         " bytes); it must start with an 8-byte header length");
  unsigned char prefix[8];
  in.read(reinterpret_cast<char*>(prefix), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];  // little-endian
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
  const double expected = t.numel() * safetensors_dtype_bytes(t.dtype);
  if (t.end < t.begin || static_cast<double>(t.end - t.begin) != expected)
    throw EstimatorError(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                         "] do not hold " + std::to_string(static_cast<long long>(expected)) +
                         " bytes (shape x " + t.dtype + ")");
  if (t.end > data_bytes)
    throw EstimatorError(where + ": data ends at byte " + std::to_string(t.end) + " but the file holds only " +
                         std::to_string(data_bytes) + " bytes of data: the file is truncated (download it again)");
  return t;
}

json parse_header_json(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw EstimatorError(path + ": the safetensors header is not valid JSON (" + std::string(e.what()) + ")");
  }
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

SafetensorsHeader read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw EstimatorError(path + ": cannot open the safetensors file (check the path)");
  SafetensorsHeader header;
  header.path = path;
  header.file_bytes = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  header.header_bytes = read_length_prefix(in, path, header.file_bytes);
  std::string text(header.header_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) throw EstimatorError(path + ": could not read the " + std::to_string(header.header_bytes) + "-byte header");
  const json root = parse_header_json(text, path);
  if (!root.is_object()) throw EstimatorError(path + ": the safetensors header must be a JSON object");
  const std::uint64_t data_bytes = header.file_bytes - 8 - header.header_bytes;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;  // free-form strings (format, creator)
    header.tensors.push_back(read_tensor(name, entry, path, data_bytes));
  }
  return header;
}

ModelDescription describe_safetensors(const std::string& path) {
  ModelDescription d;
  d.name = path;
  d.source = ModelSource::kSafetensors;
  std::vector<SafetensorsHeader> headers;
  const bool is_index = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (is_index) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw EstimatorError(path + ": cannot open the safetensors index (check the path)");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json index = parse_header_json(text, path);
    headers = read_index_shards(path, index, d.notes);
    if (index.contains("metadata") && index["metadata"].is_object() &&
        index["metadata"].contains("total_size") && index["metadata"]["total_size"].is_number()) {
      const double declared = index["metadata"]["total_size"].get<double>();
      const double actual = tensor_bytes(headers);
      if (declared != actual)
        d.notes.push_back("index metadata.total_size is " + std::to_string(static_cast<long long>(declared)) +
                          " bytes but the shards' tensors hold " + std::to_string(static_cast<long long>(actual)));
    }
  } else {
    headers.push_back(read_safetensors_header(path));
  }
  summarize(d, headers);
  return d;
}

}  // namespace shardscope::estimator
