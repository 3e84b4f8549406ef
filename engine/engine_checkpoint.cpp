// Engine::save_checkpoint and Engine::load_checkpoint: DeepSpeed's layout (checkpoint_files.hpp)
// with the state a resumed run needs to continue exactly: weights, fp32 master, optimizer state
// and step, scheduler iteration, loss scaler, counters and the client state (data position).
#include <filesystem>

#include "engine/checkpoint_files.hpp"
#include "engine/engine.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::engine {
namespace {

using IDict = c10::impl::GenericDict;
using TensorDict = c10::Dict<std::string, torch::Tensor>;

// A str -> Any dict, which Python's torch.load reads back as a plain dict.
IDict new_dict() { return IDict(c10::StringType::get(), c10::AnyType::get()); }

const c10::IValue& entry(const c10::impl::GenericDict& dict, const std::string& key, const std::string& file) {
  auto it = dict.find(key);
  if (it == dict.end()) throw std::runtime_error("checkpoint file '" + file + "' has no '" + key + "' entry");
  return it->value();
}

c10::impl::GenericDict load_dict(const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error("checkpoint file '" + path + "' does not exist");
  c10::IValue value = torch::pickle_load(read_file(path));
  if (!value.isGenericDict()) throw std::runtime_error("checkpoint file '" + path + "' does not hold a dict");
  return value.toGenericDict();
}

IDict scaler_dict(const LossScalerState& s) {
  IDict d = new_dict();
  d.insert("cur_scale", s.cur_scale);
  d.insert("cur_iter", s.cur_iter);
  d.insert("last_overflow_iter", s.last_overflow_iter);
  d.insert("cur_hysteresis", c10::IValue(static_cast<std::int64_t>(s.cur_hysteresis)));
  return d;
}

LossScalerState scaler_state(const c10::impl::GenericDict& d, const std::string& file) {
  LossScalerState s;
  s.cur_scale = entry(d, "cur_scale", file).toDouble();
  s.cur_iter = entry(d, "cur_iter", file).toInt();
  s.last_overflow_iter = entry(d, "last_overflow_iter", file).toInt();
  s.cur_hysteresis = static_cast<int>(entry(d, "cur_hysteresis", file).toInt());
  return s;
}

}  // namespace

void Engine::save_checkpoint(const std::string& dir, std::optional<std::string> tag,
                             const std::string& client_state_json) {
  const std::string chosen = tag.value_or(default_checkpoint_tag(global_steps_));
  const std::filesystem::path folder = std::filesystem::path(dir) / chosen;
  const bool bf16 = config_.precision() == configs::PrecisionMode::kBf16;
  const bool separate_optimizer = bf16 || config_.zero.stage > 0;
  const std::string version = "shardscope " + sessions::build_info().version;

  TensorDict module;
  for (const auto& slot : flat_->slots()) module.insert(slot.name, slot.param.detach().to(torch::kCPU).clone());
  IDict optimizer = new_dict();
  TensorDict state;
  for (const auto& [name, buffer] : optimizer_->state()) state.insert(name, buffer.to(torch::kCPU).clone());
  optimizer.insert("optimizer_type", optimizer_->settings().type_name);
  optimizer.insert("step", optimizer_->step_count());
  optimizer.insert("state", state);
  if (model_dtype_ != torch::kFloat32) optimizer.insert("fp32_master", master_.to(torch::kCPU).clone());
  if (scaler_) optimizer.insert("loss_scaler", scaler_dict(scaler_->state()));

  IDict model_states = new_dict();
  model_states.insert("module", module);
  if (!separate_optimizer) model_states.insert("optimizer", optimizer);
  IDict scheduler = new_dict();
  scheduler.insert("last_batch_iteration", c10::IValue(static_cast<std::int64_t>(scheduler_->last_batch_iteration())));
  model_states.insert("lr_scheduler", scheduler);
  model_states.insert("global_steps", global_steps_);
  model_states.insert("global_samples", global_samples_);
  model_states.insert("skipped_steps", skipped_steps_);
  model_states.insert("dp_world_size", c10::IValue(static_cast<std::int64_t>(options_.world_size)));
  model_states.insert("mp_world_size", c10::IValue(static_cast<std::int64_t>(1)));
  model_states.insert("ds_version", version);
  model_states.insert("client_state", client_state_json);
  write_file_atomically((folder / model_states_file_name(config_.zero.stage, options_.rank)).string(),
                        torch::pickle_save(model_states));
  if (separate_optimizer) {
    IDict optim_file = new_dict();
    optim_file.insert("optimizer_state_dict", optimizer);
    optim_file.insert("ds_version", version);
    write_file_atomically((folder / optim_states_file_name(bf16, options_.rank)).string(),
                          torch::pickle_save(optim_file));
  }
  // `latest` moves only after every file of the tag is in place.
  if (options_.rank == 0) {
    const std::vector<char> text(chosen.begin(), chosen.end());
    write_file_atomically((std::filesystem::path(dir) / "latest").string(), text);
  }
  log("[Rank " + std::to_string(options_.rank) + "] Saved checkpoint " + folder.string());
}

std::string Engine::load_checkpoint(const std::string& dir, std::optional<std::string> tag) {
  const std::string chosen = tag ? *tag : read_latest_tag(dir);
  const std::filesystem::path folder = std::filesystem::path(dir) / chosen;
  const bool bf16 = config_.precision() == configs::PrecisionMode::kBf16;
  const bool separate_optimizer = bf16 || config_.zero.stage > 0;
  const std::string states_path = (folder / model_states_file_name(config_.zero.stage, options_.rank)).string();
  const auto states = load_dict(states_path);

  const auto module = entry(states, "module", states_path).toGenericDict();
  torch::NoGradGuard no_grad;
  for (const auto& slot : flat_->slots()) {
    auto it = module.find(slot.name);
    TORCH_CHECK(it != module.end(), "checkpoint '", states_path, "' has no tensor '", slot.name, "'");
    const torch::Tensor saved = it->value().toTensor();
    TORCH_CHECK(saved.sizes().vec() == slot.shape, "checkpoint tensor '", slot.name, "' has shape ",
                saved.sizes(), ", the model expects ", c10::IntArrayRef(slot.shape));
    slot.param.copy_(saved);
  }
  std::string optim_path = states_path;
  c10::impl::GenericDict optimizer = states;
  if (separate_optimizer) {
    optim_path = (folder / optim_states_file_name(bf16, options_.rank)).string();
    optimizer = entry(load_dict(optim_path), "optimizer_state_dict", optim_path).toGenericDict();
  } else {
    optimizer = entry(states, "optimizer", states_path).toGenericDict();
  }
  std::map<std::string, torch::Tensor> state;
  for (const auto& item : entry(optimizer, "state", optim_path).toGenericDict())
    state[item.key().toStringRef()] = item.value().toTensor();
  optimizer_->load_state(state, entry(optimizer, "step", optim_path).toInt());
  if (model_dtype_ != torch::kFloat32) master_.copy_(entry(optimizer, "fp32_master", optim_path).toTensor());
  if (scaler_) scaler_->load_state(scaler_state(entry(optimizer, "loss_scaler", optim_path).toGenericDict(), optim_path));
  scheduler_->set_last_batch_iteration(
      entry(entry(states, "lr_scheduler", states_path).toGenericDict(), "last_batch_iteration", states_path).toInt());
  restore_counters(entry(states, "global_steps", states_path).toInt(),
                   entry(states, "global_samples", states_path).toInt(),
                   entry(states, "skipped_steps", states_path).toInt());
  zero_grad();
  log("[Rank " + std::to_string(options_.rank) + "] Loaded checkpoint " + folder.string() + " at step " +
      std::to_string(global_steps_));
  return entry(states, "client_state", states_path).toStringRef();
}

}  // namespace shardscope::engine
