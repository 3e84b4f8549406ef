// DeepSpeedCheckpoint: which optimizer layout a tag has, its parameters, step and state names.
#include <algorithm>

#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/deepspeed_checkpoint_impl.hpp"

namespace shardscope::checkpoints {
namespace {

std::int64_t step_of(const PickleRef& step, const TorchFile& file) {
  if (step.kind() == PickleKind::kTensor) {
    const auto v = file.read_float32(step.as_tensor());
    if (v.size() != 1) step.fail("is a tensor of " + std::to_string(v.size()) + " elements, not a step count");
    return static_cast<std::int64_t>(v[0]);
  }
  return static_cast<std::int64_t>(step.as_double());
}

// The world size a ZeRO optimizer dict was partitioned for: an int at stage 3, one per group at 1-2.
int partition_count_of(const PickleRef& optimizer) {
  const PickleRef count = optimizer["partition_count"];
  std::int64_t n = 0;
  if (count.kind() == PickleKind::kList || count.kind() == PickleKind::kTuple) {
    for (const auto& c : count.items()) n = std::max(n, c.as_int());
  } else {
    n = count.as_int();
  }
  if (n < 1 || n > (1 << 20)) count.fail("is not a world size");
  return static_cast<int>(n);
}

}  // namespace

PickleRef DeepSpeedCheckpoint::Impl::optimizer_dict() const {
  if (optimizer0) return optimizer0->root()["optimizer_state_dict"];
  return states->root()["optimizer"];
}

void DeepSpeedCheckpoint::Impl::open_optimizer(CheckpointSummary& s) {
  // DeepSpeed tries the bf16_ names in bf16 training and the plain ones otherwise; a folder
  // holding both has files of two saves unless the manifest says which ones belong.
  bool bf16 = optim_files[true].count(0) > 0;
  if (bf16 && optim_files[false].count(0)) {
    if (!s.manifest) throw damaged(folder, "holds both " + optim_files[true].at(0) + " and " + optim_files[false].at(0) +
                                               ": optimizer files of two saves (bf16 and not); remove the stale ones");
    bf16 = s.manifest->find(optim_files[true].at(0)) != nullptr;
  }
  const auto& files = optim_files[bf16];
  s.bf16_files = bf16 && !files.empty();
  if (files.empty() || !files.count(0)) {
    if (!files.empty())
      throw damaged(folder, "holds " + files.begin()->second + " but not rank 0's optimizer file " +
                                optim_states_file_name(bf16, 0) + interruption_note());
    const PickleRef root = states->root();
    const auto optimizer = root.get("optimizer");
    if (!optimizer || optimizer->is_none())
      throw damaged(states->path(), "holds no optimizer state and the folder has no *_optim_states.pt file: the "
                                    "optimizer files are missing" + (leftovers.empty() && !has_manifest && root.has("shardscope_save_id")
                                        ? std::string(" (the save did not finish)") : interruption_note()));
    s.layout = optimizer->has("fp32_groups_flat") ? OptimizerLayout::kFusedFlat : OptimizerLayout::kTorchPerParameter;
    s.zero_stage = 0;
    return;
  }
  optimizer0 = std::make_unique<TorchFile>(path(files.at(0)));
  const PickleRef root = optimizer0->root();
  if (!root.is_dict()) root.fail("is a " + kind_name(root.tree(), root.id()) + ", not DeepSpeed's optimizer-states dict");
  const PickleRef o = root["optimizer_state_dict"];
  if (o.has("fp32_flat_groups")) {
    s.layout = OptimizerLayout::kZero3;
  } else if (o.has("single_partition_of_fp32_groups")) {
    s.layout = OptimizerLayout::kZero12;
  } else {
    o.fail("has neither 'fp32_flat_groups' (ZeRO 3) nor 'single_partition_of_fp32_groups' (ZeRO 1-2)");
  }
  if (o.has("zero_stage")) {
    s.zero_stage = static_cast<int>(o["zero_stage"].as_int());
  } else {  // BF16_Optimizer (bf16 at ZeRO 1) writes no stage
    s.zero_stage = 1;
  }
  if (s.zero_stage < 1 || s.zero_stage > 3) o["zero_stage"].fail("is not a ZeRO stage (1, 2 or 3)");
  if ((s.zero_stage == 3) != (s.layout == OptimizerLayout::kZero3))
    o["zero_stage"].fail("says stage " + std::to_string(s.zero_stage) + " but the partitions are laid out for the other one");
  const int partitions = partition_count_of(o);
  for (int r = 0; r < partitions; ++r) {
    auto it = files.find(r);
    if (it == files.end())
      throw damaged(folder, "was saved by " + std::to_string(partitions) + " ranks but has no optimizer file of rank " +
                                std::to_string(r) + " (" + optim_states_file_name(bf16, r) + ")" + interruption_note());
    optim_paths.push_back(path(it->second));
  }
  for (const auto& [rank, name] : files)
    if (rank >= partitions)
      throw damaged(path(name), "does not belong to this tag: it was saved by " + std::to_string(partitions) +
                                    " ranks, and this is the file of rank " + std::to_string(rank) +
                                    " (left from another save? remove it)");
  if (s.zero_stage == 3) {
    for (int r = 0; r < partitions; ++r)
      if (!zero_model_files.count(r))
        throw damaged(folder, "has no model-states file of rank " + std::to_string(r) + " (" + model_states_file_name(3, r) +
                                  "), which ZeRO stage 3 writes on every rank" + interruption_note());
    for (const auto& [rank, name] : zero_model_files)
      if (rank >= partitions)
        throw damaged(path(name), "does not belong to this tag: it was saved by " + std::to_string(partitions) +
                                      " ranks, and this is the file of rank " + std::to_string(rank));
  }
}

void DeepSpeedCheckpoint::Impl::read_parameters(CheckpointSummary& s) {
  const PickleRef root = states->root();
  const auto shapes = root.get("param_shapes");
  if (shapes && !shapes->is_none()) {
    // ZeRO: one name -> torch.Size dict per parameter group, in the flat order.
    const PickleRef groups_list = *shapes;
    for (const auto& group : groups_list.items()) {
      Zero12Group g;
      for (const auto& [name, shape] : group.entries()) {
        g.params.push_back(static_cast<int>(s.parameters.size()));
        s.parameters.push_back({name.as_string(), shape.as_int_list(), 0, 0});
      }
      groups.push_back(std::move(g));
    }
  } else {
    // Stage 0: the module's weights in order, without buffers and tied copies (a tensor viewing
    // the same storage at the same place as an earlier one).
    std::set<std::string> buffers(s.buffer_names.begin(), s.buffer_names.end());
    std::vector<const TensorRef*> seen;
    for (const auto& [key, value] : root["module"].entries()) {
      if (value.kind() != PickleKind::kTensor || buffers.count(key.as_string())) continue;
      const TensorRef& t = value.as_tensor();
      const auto same = std::find_if(seen.begin(), seen.end(), [&](const TensorRef* o) {
        return o->storage == t.storage && o->offset == t.offset && o->shape == t.shape && o->strides == t.strides;
      });
      if (same != seen.end()) {
        const auto index = static_cast<std::size_t>(same - seen.begin());
        s.shared.emplace_back(key.as_string(), s.parameters[index].name);
        continue;
      }
      seen.push_back(&t);
      module_keys.push_back(key.as_string());
      s.parameters.push_back({key.as_string(), t.shape, 0, 0});
    }
  }
  if (s.parameters.empty()) root.fail("describes no parameters (empty param_shapes and module)");
  const std::int64_t total = assign_offsets(s.parameters, states->path());
  // Every parameter's fp32 master is stored somewhere in the tag (4 bytes an element), so the
  // shapes cannot claim more than the files hold: no reader allocates more than the input.
  std::uint64_t stored = 0;
  for (const auto& [name, bytes] : s.file_bytes) stored += bytes;
  if (static_cast<std::uint64_t>(total) > stored / 4)
    root.fail("describes " + std::to_string(total) + " parameter elements, more than the tag's " + std::to_string(stored) +
              " bytes of files can hold: the shapes or the files are wrong");
  if (s.layout == OptimizerLayout::kZero12) {
    const PickleRef o = optimizer_dict();
    if (const auto paddings = o.get("param_alignment_paddings"); paddings && !paddings->is_none()) {
      const auto lists = paddings->items();
      if (lists.size() != groups.size())
        paddings->fail("has " + std::to_string(lists.size()) + " groups, param_shapes " + std::to_string(groups.size()));
      for (std::size_t g = 0; g < groups.size(); ++g) {
        groups[g].alignment_paddings = lists[g].as_int_list();
        if (groups[g].alignment_paddings.size() != groups[g].params.size())
          lists[g].fail("has a padding for " + std::to_string(groups[g].alignment_paddings.size()) + " parameters, the group " +
                        std::to_string(groups[g].params.size()));
        for (auto pad : groups[g].alignment_paddings)
          if (pad < 0 || pad > (1 << 20)) lists[g].fail("holds a padding that is not one");
      }
    }
    const std::size_t saved_groups = o["single_partition_of_fp32_groups"].length();
    if (saved_groups != groups.size())
      o["single_partition_of_fp32_groups"].fail("has " + std::to_string(saved_groups) + " groups, param_shapes " +
                                                std::to_string(groups.size()));
  }
}

PickleRef DeepSpeedCheckpoint::Impl::state_of(const PickleRef& o, const CheckpointSummary& s) const {
  switch (s.layout) {
    case OptimizerLayout::kZero12: {
      const PickleRef base = o["base_optimizer_state"];
      return base.is_dict() ? base["state"] : base;  // elastic: a list of per-group dicts
    }
    case OptimizerLayout::kZero3: return o["optimizer_state_dict"]["state"];
    case OptimizerLayout::kTorchPerParameter: return o["state"];
    case OptimizerLayout::kFusedFlat: return o["optimizer_state_dict"]["state"];
  }
  return o;
}

void DeepSpeedCheckpoint::Impl::read_optimizer_summary(CheckpointSummary& s) {
  const PickleRef o = optimizer_dict();
  const PickleRef state = state_of(o, s);
  const TorchFile& file = optimizer0 ? *optimizer0 : *states;
  std::optional<PickleRef> first;
  if (state.is_dict() && state.length() > 0) first = state.entries().front().second;
  if (!state.is_dict() && state.length() > 0) first = state.at(0);
  if (first) {
    for (const auto& [key, value] : first->entries()) {
      if (key.as_string() == "step") s.optimizer_step = step_of(value, file);
      else if (value.kind() == PickleKind::kTensor) s.state_names.push_back(key.as_string());
    }
  }
  if (!state.is_dict() && o.has("base_optimizer_state_step")) s.optimizer_step = step_of(o["base_optimizer_state_step"], file);
  // The precision: the saved weights' dtype (typed even when empty at stage 3), the bf16_ files,
  // and a loss scaler that scales.
  s.precision = "fp32";
  for (const auto& [key, value] : states->root()["module"].entries()) {
    if (value.kind() != PickleKind::kTensor) continue;
    s.precision = dtype_name(states->tree().storages()[value.as_tensor().storage].dtype);
    break;
  }
  if (s.bf16_files) s.precision = "bf16";
  if (s.precision == "fp32" && loss_scaler()) s.precision = "fp16";
  // The optimizer's name: DeepSpeed's config says it; ShardScope also records it.
  const PickleRef root = states->root();
  if (auto config = root.get("ds_config"); config && config->is_dict())
    if (auto optimizer = config->get("optimizer"); optimizer && optimizer->is_dict())
      if (auto type = optimizer->get("type"); type && type->kind() == PickleKind::kString) s.optimizer_type = type->as_string();
  if (auto type = root.get("shardscope_optimizer")) s.optimizer_type = type->as_string();
}

std::optional<LossScalerSnapshot> DeepSpeedCheckpoint::Impl::loss_scaler() const {
  const PickleRef o = optimizer_dict();
  LossScalerSnapshot snapshot;
  std::optional<PickleRef> fields;
  if (auto ours = o.get("shardscope_loss_scaler")) {
    fields = *ours;
  } else if (auto scaler = o.get("loss_scaler"); scaler && scaler->kind() == PickleKind::kObject) {
    fields = PickleRef(scaler->tree(), scaler->node().state, scaler->file(), scaler->path());
    if (!fields->is_dict()) return std::nullopt;
  } else if (o.has("cur_scale")) {  // FP16_Optimizer at stage 0 keeps the fields in its own dict
    fields = o;
  } else {
    return std::nullopt;
  }
  snapshot.cur_scale = (*fields)["cur_scale"].as_double();
  snapshot.dynamic = fields->has("dynamic") ? (*fields)["dynamic"].as_bool()
                                            : (o.has("dynamic_loss_scale") && o["dynamic_loss_scale"].as_bool());
  if (auto v = fields->get("cur_iter")) snapshot.cur_iter = v->as_int();
  if (auto v = fields->get("last_overflow_iter"); v && !v->is_none()) snapshot.last_overflow_iter = v->as_int();
  if (auto v = fields->get("cur_hysteresis")) snapshot.cur_hysteresis = v->as_int();
  if (!snapshot.dynamic && snapshot.cur_scale == 1.0) return std::nullopt;  // fp32/bf16: a scaler that does not scale
  return snapshot;
}

}  // namespace shardscope::checkpoints
