#include "checkpoints/safetensors_writer.hpp"

#include <sys/stat.h>

#include <set>

#include <nlohmann/json.hpp>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/regular_file.hpp"
#include "configs/input_file.hpp"

namespace shardscope::checkpoints {

void refuse_non_regular_output(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // absent: fine
  if (S_ISREG(st.st_mode)) return;
  throw unreadable(path, "exists and is " + configs::file_type_name(st.st_mode) +
                             "; an export replaces only regular files: remove it or choose another path");
}

void write_safetensors(const std::string& path, const NamedHostTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  refuse_non_regular_output(path);
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__" || !seen.insert(name).second)
      throw unreadable(path, "tensor name '" + printable(name) + "' is empty, reserved or repeated; names must be unique");
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  AtomicFile file(path);
  file.write(length, 8);
  file.write(text.data(), text.size());
  for (const auto& [name, t] : tensors) file.write(t.bytes.data(), t.bytes.size());
  file.commit();
}

}  // namespace shardscope::checkpoints
