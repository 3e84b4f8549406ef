#include "checkpoints/deepspeed_checkpoint.hpp"

#include <algorithm>
#include <filesystem>

#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/crc32.hpp"
#include "checkpoints/deepspeed_checkpoint_impl.hpp"
#include "checkpoints/regular_file.hpp"

namespace shardscope::checkpoints {
namespace fs = std::filesystem;

std::int64_t CheckpointSummary::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : parameters) n += p.numel;
  return n;
}

DeepSpeedCheckpoint::DeepSpeedCheckpoint(const std::string& folder, const OpenOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  summary_.folder = folder;
  summary_.tag = fs::path(folder).filename().string();
  impl_->scan(folder, summary_);
  impl_->open_model_states(summary_);
  impl_->open_optimizer(summary_);
  impl_->read_parameters(summary_);
  impl_->read_optimizer_summary(summary_);
  impl_->check_consistency(summary_);
}

DeepSpeedCheckpoint::~DeepSpeedCheckpoint() = default;

int DeepSpeedCheckpoint::part_count() const { return static_cast<int>(std::max<std::size_t>(1, impl_->optim_paths.size())); }

RankPart DeepSpeedCheckpoint::part(int rank, const std::string& buffer) const { return impl_->part(rank, buffer, summary_); }

std::vector<float> DeepSpeedCheckpoint::canonical(const std::string& buffer) const {
  const std::int64_t total = summary_.parameter_count();
  std::vector<float> out(static_cast<std::size_t>(total), 0.0f);
  for (int r = 0; r < part_count(); ++r) {
    const RankPart p = part(r, buffer);
    for (const auto& run : p.runs)
      std::copy_n(p.values.begin() + run.part, run.count, out.begin() + run.canonical);
  }
  return out;
}

std::optional<std::int64_t> DeepSpeedCheckpoint::lr_last_batch_iteration() const {
  const auto scheduler = impl_->states->root().get("lr_scheduler");
  if (!scheduler || scheduler->is_none()) return std::nullopt;
  const auto last = scheduler->get("last_batch_iteration");
  if (!last) return std::nullopt;
  return last->as_int();
}

std::optional<LossScalerSnapshot> DeepSpeedCheckpoint::loss_scaler() const { return impl_->loss_scaler(); }

std::string DeepSpeedCheckpoint::client_state() const {
  const auto state = impl_->states->root().get("shardscope_client_state");
  return state ? state->as_string() : "";
}

// ---------------------------------------------------------------------------------------------

void DeepSpeedCheckpoint::Impl::scan(const std::string& folder, CheckpointSummary& s) {
  this->folder = folder;
  if (!non_regular_kind(folder).empty() && non_regular_kind(folder) != "a directory")
    throw unreadable(folder, "is " + non_regular_kind(folder) + ", not a checkpoint tag folder");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw unreadable(folder, "is not a checkpoint tag folder (it does not exist)");
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code size_error;
    const auto status = fs::status(e.path(), size_error);
    if (!fs::is_regular_file(status)) continue;
    s.file_bytes[name] = static_cast<std::uint64_t>(fs::file_size(e.path(), size_error));
    if (is_temporary_name(name)) {
      leftovers.push_back(name);
      continue;
    }
    if (name == kManifestFileName) {
      has_manifest = true;
      continue;
    }
    const auto parsed = parse_checkpoint_file_name(name);
    if (!parsed) continue;
    if (parsed->kind == CheckpointFileName::Kind::kModelStates) model_file = name;
    if (parsed->kind == CheckpointFileName::Kind::kZeroModelStates) zero_model_files[parsed->dp_rank] = name;
    if (parsed->kind == CheckpointFileName::Kind::kOptimStates) optim_files[parsed->bf16][parsed->dp_rank] = name;
  }
  if (ec) throw unreadable(folder, "cannot be listed (" + ec.message() + ")");
  if (has_manifest) s.manifest = read_manifest((fs::path(folder) / kManifestFileName).string());
}

std::string DeepSpeedCheckpoint::Impl::path(const std::string& name) const { return (fs::path(folder) / name).string(); }

std::string DeepSpeedCheckpoint::Impl::interruption_note() const {
  std::string note;
  if (!leftovers.empty())
    note += "; it holds leftover temporary files of an interrupted write (" + comma_joined(leftovers) +
            "), which the next save into this folder removes";
  return note;
}

void DeepSpeedCheckpoint::Impl::open_model_states(CheckpointSummary& s) {
  std::string name = model_file;
  if (zero_model_files.count(0)) name = zero_model_files.at(0);
  if (name.empty()) {
    throw damaged(folder, "has neither " + model_states_file_name(0, 0) + " nor " + model_states_file_name(3, 0) +
                              ", so it is not a complete checkpoint tag" + interruption_note());
  }
  if (!model_file.empty() && !zero_model_files.empty())
    throw damaged(folder, "holds both " + model_file + " and per-rank model states (" + zero_model_files.begin()->second +
                              "): files of two saves at different ZeRO stages; remove the folder and save again");
  states = std::make_unique<TorchFile>(path(name));
  const PickleRef root = states->root();
  if (!root.is_dict()) root.fail("is a " + kind_name(root.tree(), root.id()) + ", not DeepSpeed's model-states dict");
  s.world_size = static_cast<int>(root["dp_world_size"].as_int());
  if (s.world_size < 1 || s.world_size > (1 << 20)) root["dp_world_size"].fail("is not a world size");
  s.global_steps = root["global_steps"].as_int();
  s.skipped_steps = root.has("skipped_steps") ? root["skipped_steps"].as_int() : 0;
  s.global_samples = root.has("global_samples") ? root["global_samples"].as_int() : 0;
  if (auto v = root.get("ds_version"); v && !v->is_none()) s.ds_version = v->as_string();
  if (auto v = root.get("shardscope_version")) s.written_by = "ShardScope " + v->as_string();
  else s.written_by = "DeepSpeed " + (s.ds_version.empty() ? std::string("(no ds_version)") : s.ds_version);
  if (auto v = root.get("buffer_names"); v && !v->is_none())
    for (const auto& b : v->items()) s.buffer_names.push_back(b.as_string());
  if (auto v = root.get("shared_params"); v && !v->is_none())
    for (const auto& [alias, target] : v->entries()) s.shared.emplace_back(alias.as_string(), target.as_string());
}

}  // namespace shardscope::checkpoints
