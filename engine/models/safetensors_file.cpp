#include "engine/models/safetensors_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

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

std::string system_error(const std::string& what) { return what + " (" + std::strerror(errno) + ")"; }

// Closes the temporary file and removes it unless the write committed.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)), file_(std::fopen(path_.c_str(), "wb")) {}
  ~TempFile() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::FILE* get() const { return file_; }
  const std::string& path() const { return path_; }
  void write(const void* data, std::size_t bytes) {
    if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes) throw ModelError(system_error(path_ + ": write failed"));
  }
  // fsync before the rename, so a crash leaves the old file or the whole new one.
  void commit(const std::string& final_path) {
    if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) throw ModelError(system_error(path_ + ": flush failed"));
    const int closed = std::fclose(file_);
    file_ = nullptr;
    if (closed != 0) throw ModelError(system_error(path_ + ": close failed"));
    if (std::rename(path_.c_str(), final_path.c_str()) != 0)
      throw ModelError(system_error("cannot rename " + path_ + " to " + final_path));
    committed_ = true;
  }

 private:
  std::string path_;
  std::FILE* file_;
  bool committed_ = false;
};

std::string header_json(const NamedTensors& cpu, const std::map<std::string, std::string>& metadata,
                        const std::string& path) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) root["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : cpu) {
    if (name.empty() || name == "__metadata__" || !seen.insert(name).second)
      throw ModelError(path + ": tensor name '" + name + "' is empty, reserved or repeated; names must be unique");
    const std::uint64_t bytes = static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
    root[name] = {{"dtype", safetensors_dtype_of(tensor.scalar_type())},
                  {"shape", tensor.sizes().vec()},
                  {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = root.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  return text;
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

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  NamedTensors cpu;
  cpu.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) cpu.emplace_back(name, tensor.detach().to(torch::kCPU).contiguous());
  const std::string header = header_json(cpu, metadata, path);
  TempFile file(path + ".tmp." + std::to_string(::getpid()));
  if (!file.get()) throw ModelError(system_error("cannot create " + file.path()));
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
  file.write(length, 8);
  file.write(header.data(), header.size());
  for (const auto& [name, tensor] : cpu)
    file.write(tensor.data_ptr(), static_cast<std::size_t>(tensor.numel()) * tensor.element_size());
  file.commit(path);
}

}  // namespace shardscope::engine
