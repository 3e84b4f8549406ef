#include "checkpoints/checkpoint_manifest.hpp"

#include <cstdio>
#include <filesystem>
#include <random>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_partitioning.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {
namespace {

using Json = nlohmann::json;
constexpr const char* kFormat = "shardscope-checkpoint-manifest";
constexpr std::uint64_t kMaxManifestBytes = 64ull << 20;

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", v);
  return text;
}

template <typename T>
T field(const Json& j, const char* key, const std::string& path) {
  if (!j.contains(key)) throw damaged(path, "has no '" + std::string(key) + "' entry; rewrite it by saving the tag again");
  const Json& v = j.at(key);
  if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer() || (std::is_unsigned_v<T> && !v.is_number_unsigned()))
      throw damaged(path, "'" + std::string(key) + "' is not a whole number of the right sign");
  }
  try {
    return v.get<T>();
  } catch (const Json::exception&) {
    throw damaged(path, "'" + std::string(key) + "' has the wrong type");
  }
}

}  // namespace

const ManifestFile* Manifest::find(const std::string& name) const {
  for (const auto& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

std::string manifest_json(const Manifest& m) {
  Json files = Json::array();
  for (const auto& f : m.files)
    files.push_back({{"name", f.name}, {"rank", f.rank}, {"bytes", f.bytes}, {"crc32", hex32(f.crc32)}});
  const Json j{{"format", kFormat},
               {"version", 1},
               {"save_id", m.save_id},
               {"tag", m.tag},
               {"global_steps", m.global_steps},
               {"world_size", m.world_size},
               {"zero_stage", m.zero_stage},
               {"shardscope_version", m.shardscope_version},
               {"files", files}};
  return j.dump(2) + "\n";
}

Manifest read_manifest(const std::string& path) {
  const auto bytes = RegularFile(path).read_all(kMaxManifestBytes);
  const Json j = Json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw damaged(path, "is not a JSON object (damaged manifest)");
  if (!j.contains("format") || j.at("format") != kFormat) throw damaged(path, "is not a ShardScope checkpoint manifest");
  Manifest m;
  m.save_id = field<std::string>(j, "save_id", path);
  m.tag = field<std::string>(j, "tag", path);
  m.global_steps = field<std::int64_t>(j, "global_steps", path);
  m.world_size = field<int>(j, "world_size", path);
  m.zero_stage = field<int>(j, "zero_stage", path);
  m.shardscope_version = field<std::string>(j, "shardscope_version", path);
  const Json files = field<Json>(j, "files", path);
  if (!files.is_array()) throw damaged(path, "'files' is not a list");
  for (const auto& f : files) {
    if (!f.is_object()) throw damaged(path, "an entry of 'files' is not an object");
    ManifestFile e;
    e.name = field<std::string>(f, "name", path);
    e.rank = field<int>(f, "rank", path);
    e.bytes = field<std::uint64_t>(f, "bytes", path);
    const std::string crc = field<std::string>(f, "crc32", path);
    try {
      std::size_t used = 0;
      e.crc32 = static_cast<std::uint32_t>(std::stoul(crc, &used, 16));
      if (used != crc.size() || crc.size() != 8) throw std::invalid_argument(crc);
    } catch (const std::exception&) {
      throw damaged(path, "'crc32' of '" + printable(e.name) + "' is not 8 hex digits");
    }
    if (e.name.find('/') != std::string::npos || !parse_checkpoint_file_name(e.name))
      throw damaged(path, "lists '" + printable(e.name) + "', which is not a checkpoint file name");
    m.files.push_back(std::move(e));
  }
  return m;
}

void write_manifest(const std::string& folder, const Manifest& manifest) {
  const std::string text = manifest_json(manifest);
  write_file_atomically((std::filesystem::path(folder) / kManifestFileName).string(),
                        std::vector<char>(text.begin(), text.end()));
}

std::string new_save_id() {
  std::random_device random;
  std::string id;
  while (id.size() < 32) id += hex32(random());
  return id.substr(0, 32);
}

}  // namespace shardscope::checkpoints
