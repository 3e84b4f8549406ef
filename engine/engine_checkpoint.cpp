// Engine::save_checkpoint and Engine::load_checkpoint: DeepSpeed's layout (checkpoint_files.hpp).
// Saving is collective: every rank writes its own optimizer shard (and at stage 3 its own
// model-states file), rank 0 the shared model states, and `latest` moves only after a barrier
// says every rank's files are in place. Loading reassembles the shards of any world size and stage
// (checkpoint_shards.hpp) and cuts this rank's shard out of them.
#include <filesystem>

#include "engine/checkpoint_files.hpp"
#include "engine/checkpoint_shards.hpp"
#include "engine/engine.hpp"
#include "profiler/nvtx_ranges.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::engine {
namespace {

using IDict = c10::impl::GenericDict;
using TensorDict = c10::Dict<std::string, torch::Tensor>;

// A str -> Any dict, which Python's torch.load reads back as a plain dict.
IDict new_dict() { return IDict(c10::StringType::get(), c10::AnyType::get()); }

const c10::IValue& entry(const IDict& dict, const std::string& key, const std::string& file) {
  auto it = dict.find(key);
  if (it == dict.end()) throw std::runtime_error("checkpoint file '" + file + "' has no '" + key + "' entry");
  return it->value();
}

IDict scaler_dict(const LossScalerState& s) {
  IDict d = new_dict();
  d.insert("cur_scale", s.cur_scale);
  d.insert("cur_iter", s.cur_iter);
  d.insert("last_overflow_iter", s.last_overflow_iter);
  d.insert("cur_hysteresis", c10::IValue(static_cast<std::int64_t>(s.cur_hysteresis)));
  return d;
}

LossScalerState scaler_state(const IDict& d, const std::string& file) {
  LossScalerState s;
  s.cur_scale = entry(d, "cur_scale", file).toDouble();
  s.cur_iter = entry(d, "cur_iter", file).toInt();
  s.last_overflow_iter = entry(d, "last_overflow_iter", file).toInt();
  s.cur_hysteresis = static_cast<int>(entry(d, "cur_hysteresis", file).toInt());
  return s;
}

torch::Tensor cpu_copy(const torch::Tensor& t) { return t.detach().to(torch::kCPU).clone(); }

}  // namespace

void Engine::save_checkpoint(const std::string& dir, std::optional<std::string> tag,
                             const std::string& client_state_json) {
  const profiler::ScopedRange range(profiler::NvtxPhase::kCheckpointSave);
  const std::string chosen = tag.value_or(default_checkpoint_tag(global_steps_));
  const std::filesystem::path folder = std::filesystem::path(dir) / chosen;
  const int stage = config_.zero.stage, rank = options_.rank;
  const bool bf16 = config_.precision() == configs::PrecisionMode::kBf16;
  const bool separate_optimizer = bf16 || stage > 0;
  const std::string version = "shardscope " + sessions::build_info().version;
  const auto& zero = *runtime_;

  // This rank's optimizer shard (the whole optimizer at stage 0, where every rank holds the same),
  // in host memory wherever the placement keeps it (NVMe-swapped state is read back).
  const HostOptimizerState saved = optimizer_state();
  IDict optimizer = new_dict();
  TensorDict state;
  for (const auto& [name, buffer] : saved.state) state.insert(name, buffer);
  IDict base = new_dict();
  base.insert("optimizer_type", optimizer_->settings().type_name);
  base.insert("step", saved.step_count);
  base.insert("state", state);
  optimizer.insert("base_optimizer_state", base);
  optimizer.insert("zero_stage", c10::IValue(static_cast<std::int64_t>(stage)));
  optimizer.insert("partition_count", c10::IValue(static_cast<std::int64_t>(zero.sharded() ? options_.world_size : 1)));
  optimizer.insert("partition_rank", c10::IValue(static_cast<std::int64_t>(zero.sharded() ? rank : 0)));
  c10::List<torch::Tensor> fp32_groups;
  fp32_groups.push_back(saved.master);
  optimizer.insert(stage == 3 ? "fp32_flat_groups" : "single_partition_of_fp32_groups", fp32_groups);
  optimizer.insert("shardscope_layout", zero.layout().to_json());
  optimizer.insert("dynamic_loss_scale", scaler_ && scaler_->dynamic());
  optimizer.insert("overflow", false);
  optimizer.insert("clip_grad", config_.gradient_clipping);
  if (scaler_) optimizer.insert("loss_scaler", scaler_dict(scaler_->state()));
  optimizer.insert("ds_version", version);

  IDict module = new_dict();
  IDict shapes = new_dict();
  c10::List<std::string> names;
  for (const auto& slot : zero.slots()) {
    if (stage < 3) module.insert(slot.name, cpu_copy(slot.param));  // stage 3 keeps weights only in the shards
    shapes.insert(slot.name, c10::List<std::int64_t>(slot.shape));
    names.push_back(slot.name);
  }
  IDict states = new_dict();
  states.insert("module", module);
  states.insert("param_shapes", shapes);
  states.insert("param_names", names);
  if (!separate_optimizer) states.insert("optimizer", optimizer);
  IDict scheduler = new_dict();
  scheduler.insert("last_batch_iteration", c10::IValue(static_cast<std::int64_t>(scheduler_->last_batch_iteration())));
  states.insert("lr_scheduler", scheduler);
  states.insert("global_steps", global_steps_);
  states.insert("global_samples", global_samples_);
  states.insert("skipped_steps", skipped_steps_);
  states.insert("zero_stage", c10::IValue(static_cast<std::int64_t>(stage)));
  states.insert("dp_world_size", c10::IValue(static_cast<std::int64_t>(options_.world_size)));
  states.insert("mp_world_size", c10::IValue(static_cast<std::int64_t>(1)));
  states.insert("ds_version", version);
  states.insert("client_state", client_state_json);

  if (stage == 3 || rank == 0)
    write_file_atomically((folder / model_states_file_name(stage, rank)).string(), torch::pickle_save(states));
  if (separate_optimizer && (zero.sharded() || rank == 0)) {
    IDict optim_file = new_dict();
    optim_file.insert("optimizer_state_dict", optimizer);
    optim_file.insert("ds_version", version);
    write_file_atomically((folder / optim_states_file_name(bf16, zero.sharded() ? rank : 0)).string(),
                          torch::pickle_save(optim_file));
  }
  // `latest` moves only after every rank's files of the tag are in place.
  if (auto* comm = communicator()) comm->barrier();
  if (rank == 0) {
    const std::vector<char> text(chosen.begin(), chosen.end());
    write_file_atomically((std::filesystem::path(dir) / "latest").string(), text);
  }
  log("[Rank " + std::to_string(rank) + "] Saved checkpoint " + folder.string());
}

std::string Engine::load_checkpoint(const std::string& dir, std::optional<std::string> tag) {
  const CheckpointShards shards(dir, tag.value_or(""));
  const auto& info = shards.info();
  const auto& zero = *runtime_;
  const std::string where = info.folder;
  // Parameters are matched by name, so a checkpoint of the same model loads at any stage and world size.
  if (info.names.size() != zero.slots().size())
    throw std::runtime_error("checkpoint '" + where + "' has " + std::to_string(info.names.size()) +
                             " parameters, the model " + std::to_string(zero.slots().size()));
  std::vector<std::int64_t> saved_offset(info.names.size());
  std::map<std::string, std::size_t> saved_index;
  std::int64_t running = 0;
  for (std::size_t i = 0; i < info.names.size(); ++i) {
    saved_index[info.names[i]] = i;
    saved_offset[i] = running;
    std::int64_t n = 1;
    for (auto d : info.shapes[i]) n *= d;
    running += n;
  }
  // Reorders a saved canonical buffer into this model's order and cuts this rank's shard out of it.
  const auto my_shard = [&](const torch::Tensor& saved) {
    auto ordered = torch::empty({zero.parameter_count()}, torch::kFloat32);
    std::int64_t offset = 0;
    for (const auto& slot : zero.slots()) {
      auto it = saved_index.find(slot.name);
      if (it == saved_index.end())
        throw std::runtime_error("checkpoint '" + where + "' has no parameter '" + slot.name + "'");
      if (info.shapes[it->second] != slot.shape)
        throw std::runtime_error("checkpoint parameter '" + slot.name + "' has shape " +
                                 c10::str(c10::IntArrayRef(info.shapes[it->second])) + ", the model expects " +
                                 c10::str(c10::IntArrayRef(slot.shape)));
      ordered.narrow(0, offset, slot.numel).copy_(saved.narrow(0, saved_offset[it->second], slot.numel));
      offset += slot.numel;
    }
    auto shard = torch::empty({zero.layout().shard_numel()}, torch::kFloat32);
    zero.layout().shard_from_canonical(ordered.data_ptr<float>(), zero.stage() == 0 ? 0 : options_.rank,
                                       shard.data_ptr<float>());
    return shard;
  };

  torch::NoGradGuard no_grad;
  // Saved with this run's partitioning (same parameters, groups and world size): this rank reads
  // its own file only, as DeepSpeed's ranks do. Otherwise every buffer is reassembled from all
  // the files and this rank's shard cut out of it, one buffer at a time.
  std::vector<std::string> names;
  for (const auto& slot : zero.slots()) names.push_back(slot.name);
  const int my_file = zero.sharded() ? options_.rank : 0;
  const bool same_partitioning = names == info.names && shards.layout().to_json() == zero.layout().to_json() &&
                                 shards.partition_count() == (zero.sharded() ? options_.world_size : 1);
  std::map<std::string, torch::Tensor> saved;
  if (same_partitioning) saved = shards.rank_shard(my_file);
  const auto buffer = [&](const std::string& name) {
    return same_partitioning ? saved.at(name) : my_shard(shards.canonical(name));
  };
  // fp32 master and state where the placement keeps them, then the 16-bit weights from the master
  // (DeepSpeed's load_from_fp32_weights).
  HostOptimizerState loaded;
  loaded.master = buffer("fp32");
  for (const auto& name : info.state_names) loaded.state[name] = buffer(name);
  loaded.step_count = info.optimizer_step;
  saved.clear();
  place_optimizer_state(loaded);
  runtime_->after_optimizer_step();  // stages 1-2: all-gather the weights; stage 3: re-gather on use

  const auto& optimizer = shards.optimizer_dict();
  if (scaler_) {
    auto it = optimizer.find("loss_scaler");
    if (it == optimizer.end())
      throw std::runtime_error("checkpoint '" + where + "' has no fp16 loss scaler state (it was saved in " +
                               info.precision + ")");
    scaler_->load_state(scaler_state(it->value().toGenericDict(), where));
  }
  const auto& states = shards.model_states();
  scheduler_->set_last_batch_iteration(
      entry(entry(states, "lr_scheduler", where).toGenericDict(), "last_batch_iteration", where).toInt());
  restore_counters(info.global_steps, info.global_samples, info.skipped_steps);
  zero_grad();
  log("[Rank " + std::to_string(options_.rank) + "] Loaded checkpoint " + where + " at step " +
      std::to_string(global_steps_) +
      (same_partitioning ? std::string()
                         : " (saved by " + std::to_string(info.world_size) + " rank(s) at ZeRO stage " +
                               std::to_string(info.zero_stage) + ", resharded)"));
  return entry(states, "client_state", where).toStringRef();
}

}  // namespace shardscope::engine
