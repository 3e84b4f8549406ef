#include "engine/checkpoint_shards.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <torch/serialize.h>

#include "engine/checkpoint_files.hpp"
#include "engine/zero/partition_layout.hpp"

namespace shardscope::engine {
namespace fs = std::filesystem;
namespace {

using GenericDict = c10::impl::GenericDict;

GenericDict load_dict(const fs::path& path) {
  if (!fs::exists(path)) throw std::runtime_error("checkpoint file '" + path.string() + "' does not exist");
  c10::IValue value;
  try {
    value = torch::pickle_load(read_file(path.string()));
  } catch (const c10::Error& e) {
    throw std::runtime_error("checkpoint file '" + path.string() + "' cannot be read as a torch.save pickle (" +
                             e.what_without_backtrace() + "); it may be truncated or damaged");
  }
  if (!value.isGenericDict()) throw std::runtime_error("checkpoint file '" + path.string() + "' does not hold a dict");
  return value.toGenericDict();
}

const c10::IValue& entry(const GenericDict& dict, const std::string& key, const std::string& where) {
  auto it = dict.find(key);
  if (it == dict.end())
    throw std::runtime_error("checkpoint file '" + where + "' has no '" + key +
                             "' entry (was it written by ShardScope or by DeepSpeed without ShardScope's layout?)");
  return it->value();
}

std::string dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::kBFloat16: return "bf16";
    case c10::kHalf: return "fp16";
    default: return "fp32";
  }
}

}  // namespace

std::int64_t CheckpointTagInfo::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& shape : shapes) {
    std::int64_t e = 1;
    for (auto d : shape) e *= d;
    n += e;
  }
  return n;
}

struct CheckpointShards::Impl {
  GenericDict states{c10::StringType::get(), c10::AnyType::get()};
  GenericDict optimizer{c10::StringType::get(), c10::AnyType::get()};  ///< rank 0's, kept
  std::vector<std::string> shard_paths;   ///< each saved rank's optimizer file (the model states at stage 0)
  std::unique_ptr<PartitionLayout> layout;

  /// The optimizer dict of saved rank `r`: rank 0's from memory, another's read from its file now.
  GenericDict shard(int r) const {
    if (r == 0) return optimizer;
    const std::string& path = shard_paths.at(static_cast<std::size_t>(r));
    return entry(load_dict(path), "optimizer_state_dict", path).toGenericDict();
  }
};

CheckpointShards::CheckpointShards(const std::string& dir, const std::string& tag) : impl_(std::make_unique<Impl>()) {
  info_.tag = tag.empty() ? read_latest_tag(dir) : tag;
  const fs::path folder = fs::path(dir) / info_.tag;
  info_.folder = folder.string();
  if (!fs::is_directory(folder))
    throw std::runtime_error("checkpoint tag folder '" + folder.string() + "' does not exist; `shardscope ckpt info " +
                             dir + "` lists the tags");
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file()) info_.file_bytes[e.path().filename().string()] = static_cast<std::int64_t>(e.file_size());
  fs::path states_path = folder / model_states_file_name(0, 0);
  if (!fs::exists(states_path)) states_path = folder / model_states_file_name(3, 0);
  if (!fs::exists(states_path))
    throw std::runtime_error("checkpoint folder '" + folder.string() + "' has neither " + model_states_file_name(0, 0) +
                             " nor " + model_states_file_name(3, 0));
  const std::string where = states_path.string();
  impl_->states = load_dict(states_path);
  const auto& s = impl_->states;
  info_.zero_stage = static_cast<int>(entry(s, "zero_stage", where).toInt());
  info_.world_size = static_cast<int>(entry(s, "dp_world_size", where).toInt());
  info_.global_steps = entry(s, "global_steps", where).toInt();
  info_.global_samples = entry(s, "global_samples", where).toInt();
  info_.skipped_steps = entry(s, "skipped_steps", where).toInt();
  info_.ds_version = entry(s, "ds_version", where).toStringRef();
  const auto names = entry(s, "param_names", where).toList();
  for (std::size_t i = 0; i < names.size(); ++i) info_.names.push_back(names.get(i).toStringRef());
  const auto shapes = entry(s, "param_shapes", where).toGenericDict();
  for (const auto& name : info_.names) {
    auto it = shapes.find(name);
    if (it == shapes.end()) throw std::runtime_error("checkpoint file '" + where + "' has no shape for '" + name + "'");
    info_.shapes.push_back(it->value().toIntVector());
  }
  // The optimizer: one shard per rank (ZeRO or bf16), or inside the model states (stage 0).
  for (bool bf16 : {true, false}) {
    if (!fs::exists(folder / optim_states_file_name(bf16, 0))) continue;
    info_.bf16 = bf16;
    for (int r = 0;; ++r) {
      const fs::path p = folder / optim_states_file_name(bf16, r);
      if (!fs::exists(p)) break;
      impl_->shard_paths.push_back(p.string());
    }
    break;
  }
  if (impl_->shard_paths.empty()) {
    impl_->optimizer = entry(s, "optimizer", where).toGenericDict();
    impl_->shard_paths.push_back(where);
  } else {
    const std::string& first = impl_->shard_paths.front();
    impl_->optimizer = entry(load_dict(first), "optimizer_state_dict", first).toGenericDict();
  }
  const auto& o = impl_->optimizer;
  const std::string& owhere = impl_->shard_paths.front();
  const int partitions = static_cast<int>(entry(o, "partition_count", owhere).toInt());
  if (partitions != static_cast<int>(impl_->shard_paths.size()))
    throw std::runtime_error("checkpoint folder '" + folder.string() + "' holds " +
                             std::to_string(impl_->shard_paths.size()) + " optimizer shard(s) but they were written by " +
                             std::to_string(partitions) + " rank(s): a rank's file is missing (was the save interrupted?)");
  impl_->layout = std::make_unique<PartitionLayout>(
      PartitionLayout::from_json(entry(o, "shardscope_layout", owhere).toStringRef()));
  if (impl_->layout->slot_count() != info_.names.size())
    throw std::runtime_error("checkpoint '" + owhere + "': its layout has " + std::to_string(impl_->layout->slot_count()) +
                             " parameters, its names list " + std::to_string(info_.names.size()));
  const auto base = entry(o, "base_optimizer_state", owhere).toGenericDict();
  info_.optimizer_type = entry(base, "optimizer_type", owhere).toStringRef();
  info_.optimizer_step = entry(base, "step", owhere).toInt();
  for (const auto& item : entry(base, "state", owhere).toGenericDict()) info_.state_names.push_back(item.key().toStringRef());
  info_.precision = "fp32";
  const auto module = entry(s, "module", where).toGenericDict();
  if (!module.empty()) info_.precision = dtype_name(module.begin()->value().toTensor().scalar_type());
  else if (info_.bf16) info_.precision = "bf16";
  else if (o.find("loss_scaler") != o.end()) info_.precision = "fp16";
}

CheckpointShards::~CheckpointShards() = default;

const c10::impl::GenericDict& CheckpointShards::model_states() const { return impl_->states; }
const c10::impl::GenericDict& CheckpointShards::optimizer_dict() const { return impl_->optimizer; }

const PartitionLayout& CheckpointShards::layout() const { return *impl_->layout; }
int CheckpointShards::partition_count() const { return static_cast<int>(impl_->shard_paths.size()); }

namespace {

// Buffer `name` of one rank's optimizer dict, flat fp32, checked against the layout's shard length.
torch::Tensor shard_buffer(const GenericDict& shard, const std::string& name, int zero_stage,
                           const PartitionLayout& layout, const std::string& where) {
  torch::Tensor t;
  if (name == "fp32") {
    const char* key = zero_stage == 3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups";
    t = entry(shard, key, where).toList().get(0).toTensor();
  } else {
    const auto state = entry(entry(shard, "base_optimizer_state", where).toGenericDict(), "state", where).toGenericDict();
    auto it = state.find(name);
    if (it == state.end()) throw std::runtime_error("checkpoint '" + where + "' has no optimizer state '" + name + "'");
    t = it->value().toTensor();
  }
  t = t.to(torch::kFloat32).contiguous().reshape({-1});
  if (t.numel() != layout.shard_numel())
    throw std::runtime_error("checkpoint '" + where + "': '" + name + "' has " + std::to_string(t.numel()) +
                             " elements, its layout says " + std::to_string(layout.shard_numel()));
  return t;
}

}  // namespace

torch::Tensor CheckpointShards::canonical(const std::string& name) const {
  const auto& layout = *impl_->layout;
  auto out = torch::zeros({layout.numel()}, torch::kFloat32);
  for (int r = 0; r < partition_count(); ++r) {
    const std::string& where = impl_->shard_paths[static_cast<std::size_t>(r)];
    const GenericDict shard = impl_->shard(r);  // read now, dropped after this rank's part is copied
    const torch::Tensor t = shard_buffer(shard, name, info_.zero_stage, layout, where);
    const int rank = static_cast<int>(entry(shard, "partition_rank", where).toInt());
    layout.canonical_from_shard(t.data_ptr<float>(), rank, out.data_ptr<float>());
  }
  return out;
}

std::map<std::string, torch::Tensor> CheckpointShards::rank_shard(int rank) const {
  if (rank < 0 || rank >= partition_count())
    throw std::runtime_error("checkpoint '" + info_.folder + "' has no optimizer shard of rank " + std::to_string(rank) +
                             " (it holds " + std::to_string(partition_count()) + ")");
  const std::string& where = impl_->shard_paths[static_cast<std::size_t>(rank)];
  const GenericDict shard = impl_->shard(rank);
  std::map<std::string, torch::Tensor> buffers;
  buffers["fp32"] = shard_buffer(shard, "fp32", info_.zero_stage, *impl_->layout, where);
  for (const auto& name : info_.state_names)
    buffers[name] = shard_buffer(shard, name, info_.zero_stage, *impl_->layout, where);
  return buffers;
}

std::vector<std::string> checkpoint_tags(const std::string& dir, std::string* latest) {
  if (!fs::is_directory(dir)) throw std::runtime_error("checkpoint directory '" + dir + "' does not exist");
  std::vector<std::string> tags;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    if (fs::exists(e.path() / model_states_file_name(0, 0)) || fs::exists(e.path() / model_states_file_name(3, 0)))
      tags.push_back(e.path().filename().string());
  }
  std::sort(tags.begin(), tags.end());
  if (latest) *latest = fs::exists(fs::path(dir) / "latest") ? read_latest_tag(dir) : "";
  return tags;
}

}  // namespace shardscope::engine
