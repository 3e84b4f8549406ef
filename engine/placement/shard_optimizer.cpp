#include "engine/placement/shard_optimizer.hpp"

#include <torch/torch.h>

#include "engine/placement/host_buffers.hpp"
#include "engine/zero/zero_runtime.hpp"

namespace shardscope::engine {
namespace {

// NVMe sub-groups: consecutive groups of the range, at most sub_group_size elements each (a
// larger group is a sub-group of its own), as DeepSpeed's _create_fp16_sub_groups.
std::vector<SubGroupSpec> sub_groups_of(const PartitionLayout& layout, int first_group, std::int64_t sub_group_size,
                                        const std::vector<TensorSegment>& segments) {
  std::vector<SubGroupSpec> out;
  const int world = layout.world_size();
  for (std::size_t g = static_cast<std::size_t>(first_group); g < layout.groups().size(); ++g) {
    const auto& group = layout.groups()[g];
    const std::int64_t chunk = group.chunk(world);
    if (chunk == 0) continue;
    if (out.empty() || out.back().range.numel + chunk > sub_group_size) {
      out.push_back({{group.shard_offset, 0}, group.slots.front(), group.slots.back(), {}});
    }
    out.back().range.numel += chunk;
    out.back().last_slot = group.slots.back();
  }
  for (auto& sg : out)
    for (const auto& seg : segments)
      if (seg.offset >= sg.range.offset && seg.offset + seg.numel <= sg.range.offset + sg.range.numel)
        sg.segments.push_back({seg.offset - sg.range.offset, seg.numel});
  return out;
}

}  // namespace

ShardOptimizer::ShardOptimizer(const PlacementPlan& plan, const OptimizerSettings& settings, ZeroRuntime& runtime,
                               const ShardOptimizerOptions& options)
    : settings_(settings), runtime_(runtime), options_(options) {
  torch::NoGradGuard no_grad;
  const auto& layout = runtime_.layout();
  const int groups = static_cast<int>(layout.groups().size());
  const int first = runtime_.stage() == 0 ? groups : plan.first_offloaded_group(groups);
  const std::int64_t total = layout.shard_numel();
  const std::int64_t split = first < groups ? layout.groups()[static_cast<std::size_t>(first)].shard_offset : total;
  if (split > 0 || !plan.offloads_optimizer()) add_device_store(plan, {0, plan.offloads_optimizer() ? split : total});
  if (plan.offloads_optimizer() && split < total) add_offload_store(plan, {split, total - split}, first);
}

ShardOptimizer::~ShardOptimizer() = default;

std::vector<TensorSegment> ShardOptimizer::segments_in(ShardRange range) const {
  std::vector<TensorSegment> out;
  for (const auto& seg : options_.segments)
    if (seg.offset >= range.offset && seg.offset + seg.numel <= range.offset + range.numel)
      out.push_back({seg.offset - range.offset, seg.numel});
  return out;
}

// The range stepped on the device. Without any offload at stages 1-3 its master becomes the
// shard the runtime gathers from (no 16-bit copy of the shard is kept); at stage 0 in fp32 the
// model's own buffer is the master.
void ShardOptimizer::add_device_store(const PlacementPlan& plan, ShardRange range) {
  ParamShard& shard = runtime_.shard();
  const bool fp32 = options_.model_dtype == torch::kFloat32;
  torch::Tensor master, model_copy;
  if (runtime_.stage() == 0) {
    master = fp32 ? shard.resident() : shard.resident().to(torch::kFloat32);
    if (!fp32) model_copy = shard.resident();  // the kernel writes the model's 16-bit weights in place
  } else {
    master = shard.read(range.offset, range.numel).to(options_.device, torch::kFloat32, false, /*copy=*/true);
    if (!plan.separate_shard()) {
      runtime_.adopt_master(master);
      // On one rank the kernel writes the 16-bit weights the model uses in the same pass
      // (ZeroRuntime::kernel_weight_copy); on several the gathers cast chunks of the master.
      if (!fp32) model_copy = runtime_.kernel_weight_copy();
    } else if (!fp32) {
      model_copy = shard.writable_view(range.offset, range.numel, options_.device);
    }
  }
  writes_model_weights_ = model_copy.defined() && (runtime_.stage() == 0 || !plan.separate_shard());
  stores_.push_back(make_resident_optimizer_store(settings_, range, Tier::kDevice, master, model_copy,
                                                  segments_in(range)));
}

// The range the CPU steps: its master and state in (pinned) host memory or swapped to NVMe, its
// gradients summed in a host buffer as each backward of the window reduces them (stage 1: copied
// there by the boundary backward).
void ShardOptimizer::add_offload_store(const PlacementPlan& plan, ShardRange range, int first_group) {
  ParamShard& shard = runtime_.shard();
  const bool pin = plan.cuda && plan.pin_optimizer;
  host_grads_ = torch::empty({range.numel}, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pin));
  runtime_.offload_gradients_to(host_grads_, range.offset);
  if (plan.optimizer == Tier::kHost) {
    const auto host = torch::TensorOptions().device(torch::kCPU).pinned_memory(pin);
    auto master = torch::empty({range.numel}, host.dtype(torch::kFloat32));
    master.copy_(shard.read(range.offset, range.numel));
    torch::Tensor model_copy;
    if (options_.model_dtype != torch::kFloat32) {
      // With offload_param "cpu" the shard is in host memory: the kernel writes the update into it.
      model_copy = shard.writable_view(range.offset, range.numel, torch::kCPU);
      if (!model_copy.defined()) model_copy = torch::empty({range.numel}, host.dtype(options_.model_dtype));
    }
    stores_.push_back(make_resident_optimizer_store(settings_, range, Tier::kHost, master, model_copy,
                                                    segments_in(range)));
    return;
  }
  NvmeOptimizerOptions o;
  o.swap = *plan.optimizer_swap;
  o.aio = options_.aio;
  o.rank = options_.rank;
  o.pinned = pin;
  o.model_dtype = options_.model_dtype;
  o.device = options_.device;
  stores_.push_back(make_nvme_optimizer_store(
      settings_, range, sub_groups_of(runtime_.layout(), first_group, o.swap.sub_group_size, options_.segments), o,
      shard));
}

void ShardOptimizer::step(const GradientPieces& grads, double lr, std::optional<double> beta1,
                          std::optional<double> beta2, float device_grad_scale) {
  ++step_count_;
  StepArgs args{lr, beta1.value_or(settings_.beta1), beta2.value_or(settings_.beta2), step_count_, 1.0f};
  for (auto& store : stores_) {
    args.grad_scale = store->tier() == Tier::kDevice ? device_grad_scale : 1.0f;  // host pieces: scaled in place
    store->step(grads, args, runtime_.shard());
  }
}

std::int64_t ShardOptimizer::state_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& store : stores_) bytes += store->state_bytes();
  return bytes;
}

void ShardOptimizer::collect_memory(std::vector<torch::Tensor>& out) const {
  out.push_back(host_grads_);
  for (const auto& store : stores_) store->collect_memory(out);
}

std::int64_t ShardOptimizer::memory_bytes() const {
  std::vector<torch::Tensor> held;
  collect_memory(held);
  return unique_storage_bytes(held);
}

const FlatOptimizer* ShardOptimizer::resident() const {
  return stores_.size() == 1 ? stores_.front()->resident() : nullptr;
}

torch::Tensor ShardOptimizer::master() const {
  const FlatOptimizer* only = resident();
  return only ? only->master() : torch::Tensor();
}

HostOptimizerState ShardOptimizer::materialize() {
  torch::NoGradGuard no_grad;
  HostOptimizerState out;
  const auto numel = runtime_.layout().shard_numel();
  const auto host = torch::TensorOptions().dtype(torch::kFloat32);
  out.master = torch::zeros({numel}, host);
  for (const auto& [name, initial] : optimizer_state_layout(settings_)) out.state[name] = torch::zeros({numel}, host);
  for (const auto& store : stores_) store->save_into(out.master, out.state);
  out.step_count = step_count_;
  return out;
}

void ShardOptimizer::place(const HostOptimizerState& state) {
  for (auto& store : stores_) store->load_from(state.master, state.state, runtime_.shard());
  runtime_.shard().flush();
  step_count_ = state.step_count;
}

void ShardOptimizer::refresh_master_from_weights() {
  for (auto& store : stores_) store->refresh_master(runtime_.shard());
}

std::vector<std::string> ShardOptimizer::describe() const {
  std::vector<std::string> lines;
  for (const auto& store : stores_) lines.push_back(store->describe());
  return lines;
}

}  // namespace shardscope::engine
