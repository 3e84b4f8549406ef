// DeepSpeedCheckpoint: is the tag one consistent set? Every rank's file is checked against the
// manifest ShardScope wrote, or, for a tag DeepSpeed wrote, against rank 0's files.
#include <algorithm>
#include <filesystem>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/crc32.hpp"
#include "checkpoints/deepspeed_checkpoint_impl.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {

std::string comma_joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

namespace {

std::optional<std::int64_t> first_step(const TorchFile& file, const PickleRef& state) {
  if (state.length() == 0) return std::nullopt;
  const PickleRef first = state.is_dict() ? state.entries().front().second : state.at(0);
  const auto step = first.get("step");
  if (!step) return std::nullopt;
  if (step->kind() == PickleKind::kTensor) {
    const auto v = file.read_float32(step->as_tensor());
    return v.size() == 1 ? std::optional<std::int64_t>(static_cast<std::int64_t>(v[0])) : std::nullopt;
  }
  return static_cast<std::int64_t>(step->as_double());
}

}  // namespace

void DeepSpeedCheckpoint::Impl::check_consistency(const CheckpointSummary& s) const {
  if (s.manifest) check_manifest(s);
  else check_without_manifest(s);
  // Every open reads the model states (the step, the buffers, the module's shapes, a stage 0-2
  // load's weights), so their bytes must be the saved ones: ckpt info found a changed file that
  // train --load used. The optimizer files are checked as part() reads them.
  const std::string states_name = zero_model_files.count(0) ? zero_model_files.at(0) : model_file;
  if (s.manifest && !options.verify_content)
    if (const ManifestFile* f = s.manifest->find(states_name)) verify_crc(states_name, *f);
}

void DeepSpeedCheckpoint::Impl::verify_crc(const std::string& name, const ManifestFile& expected) const {
  const RegularFile file(path(name));
  std::vector<char> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), 8u << 20)));
  std::uint32_t crc = 0;
  for (std::uint64_t done = 0; done < file.size();) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), file.size() - done));
    file.read_at(done, n, buffer.data());
    crc = crc32_update(crc, buffer.data(), n);
    done += n;
  }
  if (crc != expected.crc32)
    throw damaged(file.path(), "does not match this save's manifest: its CRC-32 differs, so its content changed after "
                               "it was saved (damaged, or replaced by a file of the same size)");
}

void DeepSpeedCheckpoint::Impl::check_manifest(const CheckpointSummary& s) const {
  const Manifest& m = *s.manifest;
  const std::string manifest_path = path(kManifestFileName);
  if (m.world_size != s.world_size || m.zero_stage != s.zero_stage || m.global_steps != s.global_steps)
    throw damaged(manifest_path, "describes a save by " + std::to_string(m.world_size) + " ranks at ZeRO stage " +
                                     std::to_string(m.zero_stage) + ", step " + std::to_string(m.global_steps) +
                                     ", but the model states say " + std::to_string(s.world_size) + " ranks, stage " +
                                     std::to_string(s.zero_stage) + ", step " + std::to_string(s.global_steps) +
                                     ": the files are not the ones this manifest was written for");
  for (const auto& f : m.files) {
    auto it = s.file_bytes.find(f.name);
    if (it == s.file_bytes.end())
      throw damaged(path(f.name), "is missing: the manifest of this save lists it (rank " + std::to_string(f.rank) + ")");
    if (it->second != f.bytes)
      throw damaged(path(f.name), "does not belong to this save: it has " + std::to_string(it->second) +
                                      " bytes, the manifest says " + std::to_string(f.bytes) + " (truncated or replaced)" +
                                      link_note(path(f.name)));
    const TorchFile file(path(f.name));
    const auto id = file.root().get("shardscope_save_id");
    if (!id || id->kind() != PickleKind::kString || id->as_string() != m.save_id)
      throw damaged(file.path(), "does not belong to this save: its save id is " +
                                     (id && id->kind() == PickleKind::kString ? printable(id->as_string()) : std::string("missing")) +
                                     ", the manifest's is " + m.save_id + " (a file of another save copied in?)");
    if (options.verify_content) verify_crc(f.name, f);
  }
  std::vector<std::string> present;
  if (!model_file.empty()) present.push_back(model_file);
  for (const auto& [rank, name] : zero_model_files) present.push_back(name);
  for (const auto& [bf16, files] : optim_files)
    for (const auto& [rank, name] : files) present.push_back(name);
  for (const auto& name : present)
    if (!m.find(name))
      throw damaged(path(name), "does not belong to this save: the manifest of " + m.tag + " does not list it "
                                "(left from another save; remove it)");
}

void DeepSpeedCheckpoint::Impl::check_without_manifest(const CheckpointSummary& s) const {
  if (states->root().has("shardscope_save_id")) {
    std::vector<std::string> files;
    for (const auto& [name, bytes] : s.file_bytes) files.push_back(name);
    throw damaged(folder, "has no " + std::string(kManifestFileName) +
                              ", which ShardScope writes once every rank's files are in place: the save of this tag "
                              "did not finish (interrupted); it holds " + comma_joined(files) +
                              ". Resume from an earlier tag, or save again" + interruption_note());
  }
  // DeepSpeed wrote it: every rank's file must agree with rank 0's, and with verify_content
  // every record of every file must pass its CRC-32.
  if (options.verify_content) {
    std::vector<std::string> files{states->path()};
    for (const auto& [rank, name] : zero_model_files)
      if (rank != 0) files.push_back(path(name));
    files.insert(files.end(), optim_paths.begin(), optim_paths.end());
    for (const auto& f : files) {
      const ZipReader zip(f);
      for (const auto& e : zip.entries()) zip.verify(e);
    }
  }
  if (!optimizer0) return;
  const PickleRef o0 = optimizer_dict();
  const auto step0 = first_step(*optimizer0, state_of(o0, s));
  const std::string version0 = optimizer0->root().has("ds_version") ? optimizer0->root()["ds_version"].as_string() : "";
  for (std::size_t r = 1; r < optim_paths.size(); ++r) {
    const TorchFile file(optim_paths[r]);
    const PickleRef o = file.root()["optimizer_state_dict"];
    const std::string rank = " (rank " + std::to_string(r) + ")";
    const int stage = o.has("zero_stage") ? static_cast<int>(o["zero_stage"].as_int()) : 1;
    if (stage != s.zero_stage)
      throw damaged(file.path(), "does not belong to this tag" + rank + ": it was saved at ZeRO stage " +
                                     std::to_string(stage) + ", rank 0's at " + std::to_string(s.zero_stage));
    const auto step = first_step(file, state_of(o, s));
    if (step != step0)
      throw damaged(file.path(), "does not belong to this tag" + rank + ": its optimizer is at step " +
                                     (step ? std::to_string(*step) : std::string("none")) + ", rank 0's at " +
                                     (step0 ? std::to_string(*step0) : std::string("none")) +
                                     " (a file of another save copied in?)");
    const std::string version = file.root().has("ds_version") ? file.root()["ds_version"].as_string() : "";
    if (version != version0)
      throw damaged(file.path(), "does not belong to this tag" + rank + ": written by DeepSpeed " + printable(version) +
                                     ", rank 0's by " + printable(version0));
  }
  for (const auto& [rank, name] : zero_model_files) {
    if (rank == 0) continue;
    const TorchFile file(path(name));
    const PickleRef root = file.root();
    if (root["global_steps"].as_int() != s.global_steps || root["dp_world_size"].as_int() != s.world_size)
      throw damaged(file.path(), "does not belong to this tag (rank " + std::to_string(rank) + "): it was saved at step " +
                                     std::to_string(root["global_steps"].as_int()) + " by " +
                                     std::to_string(root["dp_world_size"].as_int()) + " ranks, rank 0's at step " +
                                     std::to_string(s.global_steps) + " by " + std::to_string(s.world_size));
  }
}

}  // namespace shardscope::checkpoints
