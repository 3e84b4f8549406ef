#pragma once
// The manifest ShardScope writes into a tag folder after every rank's files are in place and
// before `latest` moves: which files make up the save (name, rank, bytes, CRC-32), the step, the
// world size and a per-save id that every one of those files also carries (its
// shardscope_save_id entry). A file left from another save, copied in from another step,
// truncated or replaced then no longer matches, and the loader names it instead of mixing it in.
// DeepSpeed ignores the file (it reads only the *_states.pt names).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::checkpoints {

struct ManifestFile {
  std::string name;
  int rank = 0;
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

struct Manifest {
  std::string save_id;  ///< 32 hex digits, random per save
  std::string tag;
  std::int64_t global_steps = 0;
  int world_size = 1;
  int zero_stage = 0;
  std::string shardscope_version;
  std::vector<ManifestFile> files;
  /// The entry for `name`, or null.
  const ManifestFile* find(const std::string& name) const;
};

/// The manifest as JSON text.
std::string manifest_json(const Manifest& manifest);
/// Parses a manifest file (at most 64 MiB); throws CheckpointError naming the file and key.
Manifest read_manifest(const std::string& path);
/// Writes dir/tag/shardscope_manifest.json atomically.
void write_manifest(const std::string& folder, const Manifest& manifest);
/// A fresh per-save id: 32 hex digits from the system's random source.
std::string new_save_id();

}  // namespace shardscope::checkpoints
