#include "checkpoints/deepspeed_checkpoint_writer.hpp"

#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace shardscope::checkpoints {
namespace {

using Json = nlohmann::json;
constexpr int kMaxJsonDepth = 64;
constexpr const char* kLossScaler = "deepspeed.runtime.fp16.loss_scaler.LossScaler";
constexpr const char* kDynamicLossScaler = "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler";

// JSON as pickle values: objects become dicts, arrays lists (or tuples, as torch's param_groups
// hold betas), numbers ints or floats.
NodeId from_json(PickleTree& t, const Json& j, bool arrays_as_tuples, int depth = 0) {
  if (depth > kMaxJsonDepth) throw std::invalid_argument("checkpoint writer: JSON nested deeper than 64 levels");
  switch (j.type()) {
    case Json::value_t::null: return t.none();
    case Json::value_t::boolean: return t.boolean(j.get<bool>());
    case Json::value_t::number_integer: return t.integer(j.get<std::int64_t>());
    case Json::value_t::number_unsigned: return t.integer(static_cast<std::int64_t>(j.get<std::uint64_t>()));
    case Json::value_t::number_float: return t.real(j.get<double>());
    case Json::value_t::string: return t.string(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<NodeId> items;
      for (const auto& v : j) items.push_back(from_json(t, v, arrays_as_tuples, depth + 1));
      return arrays_as_tuples ? t.tuple(std::move(items)) : t.list(std::move(items));
    }
    case Json::value_t::object: {
      const NodeId d = t.dict();
      for (const auto& [k, v] : j.items()) t.dict_set(d, k, from_json(t, v, arrays_as_tuples, depth + 1));
      return d;
    }
    default: return t.none();
  }
}

NodeId json_or_none(PickleTree& t, const std::string& text, bool arrays_as_tuples) {
  if (text.empty()) return t.none();
  return from_json(t, Json::parse(text), arrays_as_tuples);
}

NodeId step_tensor(PickleTree& t, std::vector<StorageBytes>& storages, const float* step) {
  return add_tensor(t, storages, DType::kFloat32, {}, step);
}

// torch's optimizer state_dict: {"state": {i: {step, <states>}}, "param_groups": [{..., params}]}.
struct TorchStateDict {
  NodeId dict;
  NodeId state;
};
TorchStateDict torch_state_dict(PickleTree& t, const SaveDescription& d, std::int64_t param_count) {
  const NodeId dict = t.dict(), state = t.dict();
  t.dict_set(dict, "state", state);
  const NodeId group = json_or_none(t, d.param_group_json, /*arrays_as_tuples=*/true);
  std::vector<NodeId> params;
  for (std::int64_t i = 0; i < param_count; ++i) params.push_back(t.integer(i));
  t.dict_set(group, "params", t.list(std::move(params)));
  t.dict_set(dict, "param_groups", t.list({group}));
  return {dict, state};
}

NodeId loss_scaler_dict(PickleTree& t, const LossScalerSnapshot& s) {
  const NodeId d = t.dict();
  t.dict_set(d, "cur_scale", t.real(s.cur_scale));
  t.dict_set(d, "dynamic", t.boolean(s.dynamic));
  t.dict_set(d, "cur_iter", t.integer(s.cur_iter));
  t.dict_set(d, "last_overflow_iter", t.integer(s.last_overflow_iter));
  t.dict_set(d, "cur_hysteresis", t.integer(s.cur_hysteresis));
  return d;
}

// DeepSpeed's own objects: LossScaler(scale) for fp32/bf16, DynamicLossScaler for dynamic fp16.
NodeId deepspeed_loss_scaler(PickleTree& t, const SaveDescription& d) {
  const NodeId state = t.dict();
  if (!d.loss_scaler || !d.loss_scaler->dynamic) {
    t.dict_set(state, "cur_scale", t.real(d.loss_scaler ? d.loss_scaler->cur_scale : 1.0));
    t.dict_set(state, "dynamic", t.boolean(false));
    return t.object(kLossScaler, state);
  }
  const LossScalerSnapshot& s = *d.loss_scaler;
  const LossScalerSettings& o = d.loss_scaler_settings;
  t.dict_set(state, "cur_scale", t.real(s.cur_scale));
  t.dict_set(state, "dynamic", t.boolean(true));
  t.dict_set(state, "cur_iter", t.integer(s.cur_iter));
  t.dict_set(state, "last_overflow_iter", t.integer(s.last_overflow_iter));
  t.dict_set(state, "scale_factor", t.real(2.0));
  t.dict_set(state, "scale_window", t.integer(o.scale_window));
  t.dict_set(state, "min_scale", t.real(o.min_scale));
  t.dict_set(state, "delayed_shift", t.integer(o.delayed_shift));
  t.dict_set(state, "cur_hysteresis", t.integer(s.cur_hysteresis));
  t.dict_set(state, "consecutive_hysteresis", t.boolean(o.consecutive_hysteresis));
  t.dict_set(state, "raise_error_at_min_scale", t.boolean(true));
  t.dict_set(state, "dtype", t.global("torch.float16"));
  return t.object(kDynamicLossScaler, state);
}

// The scaler entries every optimizer dict carries (stage_1_and_2.py / stage3.py state_dict()).
void scaler_entries(PickleTree& t, NodeId o, const SaveDescription& d) {
  if (d.deepspeed_loss_scaler) t.dict_set(o, "loss_scaler", deepspeed_loss_scaler(t, d));
  t.dict_set(o, "dynamic_loss_scale", t.boolean(d.loss_scaler && d.loss_scaler->dynamic));
  t.dict_set(o, "overflow", t.boolean(false));
  if (d.loss_scaler) t.dict_set(o, "shardscope_loss_scaler", loss_scaler_dict(t, *d.loss_scaler));
}

void shardscope_entries(PickleTree& t, NodeId root, const SaveDescription& d) {
  t.dict_set(root, "shardscope_version", t.string(d.shardscope_version));
  t.dict_set(root, "shardscope_save_id", t.string(d.save_id));
}

NodeId param_shapes(PickleTree& t, const SaveDescription& d) {
  const NodeId shapes = t.dict(/*ordered=*/true);
  for (const auto& p : d.parameters) t.dict_set(shapes, p.name, t.size_tuple(p.shape));
  return t.list({shapes});
}

// Stage 0: torch's state_dict per parameter (fp32), or FP16_Optimizer's flat group (16-bit).
NodeId stage0_optimizer(PickleTree& t, std::vector<StorageBytes>& storages, const SaveDescription& d,
                        const WholeOptimizer& w, const float* step) {
  std::int64_t total = 0;
  for (const auto& p : d.parameters) total += p.numel;
  if (d.model_dtype == DType::kFloat32) {
    const auto sd = torch_state_dict(t, d, static_cast<std::int64_t>(d.parameters.size()));
    for (std::size_t i = 0; i < d.parameters.size(); ++i) {
      const ParameterEntry& p = d.parameters[i];
      const NodeId s = t.dict();
      t.dict_set(s, "step", step_tensor(t, storages, step));
      for (const auto& [name, data] : w.states) t.dict_set(s, name, add_tensor(t, storages, DType::kFloat32, p.shape, data + p.offset));
      t.dict_set(sd.state, t.integer(static_cast<std::int64_t>(i)), s);
    }
    return sd.dict;
  }
  const NodeId o = t.dict();  // fused_optimizer.py FP16_Optimizer.state_dict()
  if (d.loss_scaler) {
    t.dict_set(o, "dynamic_loss_scale", t.boolean(d.loss_scaler->dynamic));
    t.dict_set(o, "cur_scale", t.real(d.loss_scaler->cur_scale));
    t.dict_set(o, "cur_iter", t.integer(d.loss_scaler->cur_iter));
    if (d.loss_scaler->dynamic) {
      t.dict_set(o, "last_overflow_iter", t.integer(d.loss_scaler->last_overflow_iter));
      t.dict_set(o, "scale_factor", t.real(2.0));
      t.dict_set(o, "scale_window", t.integer(d.loss_scaler_settings.scale_window));
    }
    t.dict_set(o, "shardscope_loss_scaler", loss_scaler_dict(t, *d.loss_scaler));
  }
  const auto sd = torch_state_dict(t, d, 1);
  const NodeId s = t.dict();
  t.dict_set(s, "step", step_tensor(t, storages, step));
  for (const auto& [name, data] : w.states) t.dict_set(s, name, add_tensor(t, storages, DType::kFloat32, {total}, data));
  t.dict_set(sd.state, t.integer(0), s);
  t.dict_set(o, "optimizer_state_dict", sd.dict);
  t.dict_set(o, "fp32_groups_flat", t.list({add_tensor(t, storages, DType::kFloat32, {total}, w.master)}));
  t.dict_set(o, "clip_grad", t.real(d.clip_grad));
  return o;
}

}  // namespace

std::int64_t optimizer_part_numel(const SaveDescription& d) {
  std::int64_t total = 0;
  if (d.zero_stage == 3) {
    for (const auto& p : d.parameters) total += zero3_partition_numel(p.numel, d.world_size);
    return total;
  }
  for (const auto& p : d.parameters) total += p.numel;
  return zero12_partition_numel(total, d.world_size);
}

std::vector<PartitionRun> optimizer_part_runs(const SaveDescription& d) {
  if (d.zero_stage == 3) return zero3_runs(d.parameters, d.world_size, d.rank);
  Zero12Group all;
  for (std::size_t i = 0; i < d.parameters.size(); ++i) all.params.push_back(static_cast<int>(i));
  return zero12_runs(d.parameters, all, d.world_size, d.rank, 0, optimizer_part_numel(d));
}

FileDigest write_model_states(const std::string& path, const SaveDescription& d, const std::vector<const void*>& weights,
                              const WholeOptimizer* optimizer) {
  if (d.zero_stage < 3 && weights.size() != d.parameters.size())
    throw std::logic_error("write_model_states: weights of " + std::to_string(weights.size()) + " of " +
                           std::to_string(d.parameters.size()) + " parameters");
  if (d.zero_stage == 0 && !optimizer) throw std::logic_error("write_model_states: stage 0 needs the optimizer");
  PickleTree t;
  std::vector<StorageBytes> storages;
  const NodeId root = t.dict();
  t.set_root(root);
  const NodeId module = t.dict(/*ordered=*/true);
  std::map<std::string, NodeId> tensor_of;
  for (std::size_t i = 0; i < d.parameters.size(); ++i) {
    const ParameterEntry& p = d.parameters[i];
    // Stage 3 keeps no weights in the model states: every parameter is an empty tensor, as
    // DeepSpeed's partitioned module's state_dict() gives it.
    const NodeId tensor = d.zero_stage == 3 ? add_tensor(t, storages, d.model_dtype, {0}, nullptr)
                                            : add_tensor(t, storages, d.model_dtype, p.shape, weights[i]);
    tensor_of[p.name] = tensor;
    t.dict_set(module, p.name, tensor);
  }
  for (const auto& [alias, target] : d.shared) {  // a tied weight: the same storage under its other name
    auto it = tensor_of.find(target);
    if (it == tensor_of.end()) throw std::logic_error("write_model_states: tied '" + alias + "' names no parameter");
    t.dict_set(module, alias, t.tensor(t.tensors()[static_cast<std::size_t>(t.node(it->second).integer)]));
  }
  const bool zero = d.zero_stage > 0;
  const float step = static_cast<float>(d.optimizer_step);
  t.dict_set(root, "module", module);
  t.dict_set(root, "buffer_names", t.list());
  t.dict_set(root, "optimizer", zero ? t.none() : stage0_optimizer(t, storages, d, *optimizer, &step));
  t.dict_set(root, "param_shapes", zero ? param_shapes(t, d) : t.none());
  t.dict_set(root, "frozen_param_shapes", d.zero_stage >= 2 ? t.dict(true) : t.none());
  const NodeId shared = t.dict();
  if (d.rank == 0)
    for (const auto& [alias, target] : d.shared) t.dict_set(shared, alias, t.string(target));
  t.dict_set(root, "shared_params", zero ? shared : t.none());
  t.dict_set(root, "frozen_param_fragments", d.zero_stage >= 2 ? t.dict(true) : t.none());
  NodeId scheduler = t.none();
  if (d.lr_last_batch_iteration) {
    scheduler = t.dict();
    t.dict_set(scheduler, "last_batch_iteration", t.integer(*d.lr_last_batch_iteration));
  }
  t.dict_set(root, "lr_scheduler", scheduler);
  t.dict_set(root, "data_sampler", t.none());
  t.dict_set(root, "random_ltd", t.none());
  if (d.release == configs::DeepSpeedVersion::k0_19_7) t.dict_set(root, "sparse_tensor_module_names", t.set());
  t.dict_set(root, "skipped_steps", t.integer(d.skipped_steps));
  t.dict_set(root, "global_steps", t.integer(d.global_steps));
  t.dict_set(root, "global_samples", t.integer(d.global_samples));
  t.dict_set(root, "dp_world_size", t.integer(d.world_size));
  t.dict_set(root, "mp_world_size", t.integer(1));
  const NodeId dims = t.dict();
  t.dict_set(dims, "pp_degree", t.integer(1));
  t.dict_set(dims, "tp_degree", t.integer(1));
  t.dict_set(root, "checkpoint_parallel_dimensions", dims);
  t.dict_set(root, "ds_config", json_or_none(t, d.ds_config_json, false));
  t.dict_set(root, "ds_version", t.string(configs::to_string(d.release)));
  shardscope_entries(t, root, d);
  t.dict_set(root, "shardscope_optimizer", t.string(d.optimizer_type));
  t.dict_set(root, "shardscope_client_state", t.string(d.client_state_json));
  return write_torch_file(path, t, storages);
}

FileDigest write_optimizer_states(const std::string& path, const SaveDescription& d, const float* master,
                                  const std::vector<std::pair<std::string, const float*>>& states) {
  if (d.zero_stage < 1) throw std::logic_error("write_optimizer_states: stage 0 keeps the optimizer in the model states");
  PickleTree t;
  std::vector<StorageBytes> storages;
  const NodeId root = t.dict();
  t.set_root(root);
  const NodeId o = t.dict();
  const float step = static_cast<float>(d.optimizer_step);
  const std::int64_t part = optimizer_part_numel(d);
  if (d.zero_stage == 3) {  // stage3.py _rigid_state_dict()
    t.dict_set(o, "zero_stage", t.integer(3));
    scaler_entries(t, o, d);
    t.dict_set(o, "partition_count", t.integer(d.world_size));
    const auto groups = zero3_sub_groups(d.parameters, d.world_size, d.sub_group_size);
    const auto sd = torch_state_dict(t, d, static_cast<std::int64_t>(groups.size()));
    std::vector<NodeId> flat;
    std::int64_t begin = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      std::int64_t n = 0;
      for (int p = groups[g].first; p < groups[g].second; ++p)
        n += zero3_partition_numel(d.parameters[static_cast<std::size_t>(p)].numel, d.world_size);
      const NodeId s = t.dict();
      t.dict_set(s, "step", step_tensor(t, storages, &step));
      for (const auto& [name, data] : states) t.dict_set(s, name, add_tensor(t, storages, DType::kFloat32, {n}, data + begin));
      t.dict_set(sd.state, t.integer(static_cast<std::int64_t>(g)), s);
      flat.push_back(add_tensor(t, storages, DType::kFloat32, {n}, master + begin));
      begin += n;
    }
    t.dict_set(o, "optimizer_state_dict", sd.dict);
    t.dict_set(o, "fp32_flat_groups", t.list(std::move(flat)));
  } else {  // stage_1_and_2.py state_dict(), one parameter group
    std::int64_t total = 0;
    for (const auto& p : d.parameters) total += p.numel;
    const std::int64_t padding = zero12_group_padding(total, d.world_size, d.rank);
    scaler_entries(t, o, d);
    t.dict_set(o, "clip_grad", t.real(d.clip_grad));
    const auto sd = torch_state_dict(t, d, 1);
    const NodeId s = t.dict();
    t.dict_set(s, "step", step_tensor(t, storages, &step));
    for (const auto& [name, data] : states) t.dict_set(s, name, add_tensor(t, storages, DType::kFloat32, {part}, data));
    t.dict_set(sd.state, t.integer(0), s);
    t.dict_set(o, "base_optimizer_state", sd.dict);
    const std::int64_t lean = std::max<std::int64_t>(0, part - padding);  // DeepSpeed saves the master without padding
    t.dict_set(o, "single_partition_of_fp32_groups", t.list({add_tensor(t, storages, DType::kFloat32, {lean}, master)}));
    t.dict_set(o, "zero_stage", t.integer(d.zero_stage));
    t.dict_set(o, "group_paddings", t.list({t.integer(padding)}));
    std::vector<NodeId> zeros;
    for (std::size_t i = 0; i < d.parameters.size(); ++i) zeros.push_back(t.integer(0));
    t.dict_set(o, "param_alignment_paddings", t.list({t.list(std::move(zeros))}));
    t.dict_set(o, "partition_count", t.list({t.integer(d.world_size)}));
  }
  t.dict_set(o, "ds_version", t.string(configs::to_string(d.release)));
  t.dict_set(root, "optimizer_state_dict", o);
  t.dict_set(root, "ds_config", json_or_none(t, d.ds_config_json, false));
  t.dict_set(root, "ds_version", t.string(configs::to_string(d.release)));
  shardscope_entries(t, root, d);
  return write_torch_file(path, t, storages);
}

}  // namespace shardscope::checkpoints
