// ZeroRuntime, stage 3: layer weights gathered just before the layer runs and released after.
// The model calls the LayerHooks around each layer; a hook on the layer's output gradient gathers
// the weights again just before its backward. Prefetch, persistence and the live/reuse budgets
// follow DeepSpeed's stage3_* settings. Decisions depend only on the call sequence, never on
// timing, so every rank issues the same gathers in the same order.
#include <chrono>

#include "engine/zero/zero_runtime.hpp"
#include "profiler/nvtx_ranges.hpp"

namespace shardscope::engine {

class ZeroRuntime::LayerGatherHooks : public LayerHooks {
 public:
  explicit LayerGatherHooks(ZeroRuntime* runtime) : runtime_(runtime) {}
  void before_forward(std::size_t index) override { runtime_->before_layer_forward(index); }
  torch::Tensor after_forward(std::size_t index, torch::Tensor output) override {
    return runtime_->after_layer_forward(index, std::move(output));
  }

 private:
  ZeroRuntime* runtime_;
};

void ZeroRuntime::install_layer_hooks() {
  empty_ = torch::empty({0}, torch::TensorOptions().dtype(dtype_).device(device_));
  // Registered once: "gather transformer.h.3" / "release transformer.h.3" ranges for Nsight.
  for (const auto& group : layout_->groups()) {
    nvtx_names_.push_back(profiler::nvtx_layer_name(profiler::NvtxPhase::kGather, group.name));
    nvtx_names_.push_back(profiler::nvtx_layer_name(profiler::NvtxPhase::kRelease, group.name));
  }
  torch::NoGradGuard no_grad;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].status = GatherStatus::kAvailable;  // the model's own tensors, released now
    release(static_cast<int>(g), /*force=*/true);
  }
  gather_stats_ = {};
  layer_hooks_ = std::make_shared<LayerGatherHooks>(this);
  model_.set_layer_hooks(layer_hooks_);
}

void ZeroRuntime::issue_gather(int g, bool is_prefetch, bool private_copy) {
  GroupState& st = groups_[g];
  const LayoutGroup& group = layout_->groups()[g];
  const int world = world_size();
  if (weights16_.defined() && !private_copy) {
    st.buffer = weights16_.narrow(0, group.shard_offset, group.padded_numel);  // one rank: a view, no copy
  } else {
    st.buffer = torch::empty({group.padded_numel}, torch::TensorOptions().dtype(dtype_).device(device_));
    auto mine = weights16_.defined() ? weights16_.narrow(0, group.shard_offset, group.padded_numel) : shard_chunk(g);
    if (comm_ && world > 1)
      st.gather = comm_->all_gather(st.buffer, mine, "gather " + group.name);
    else
      st.buffer.copy_(mine);
  }
  st.status = GatherStatus::kInFlight;
  gather_stats_.live_numel += group.padded_numel;
  gather_stats_.peak_live_numel = std::max(gather_stats_.peak_live_numel, gather_stats_.live_numel);
  ++(is_prefetch ? gather_stats_.prefetches : gather_stats_.gathers);
}

void ZeroRuntime::bind(int g) {
  GroupState& st = groups_[g];
  const LayoutGroup& group = layout_->groups()[g];
  torch::NoGradGuard no_grad;
  // set_data keeps each parameter's identity (autograd's saved references and the module's
  // registry see the new storage).
  for (int slot : group.slots)
    slots_[slot].param.set_data(
        st.buffer.narrow(0, layout_->slot_offset(slot) - group.flat_offset, slots_[slot].numel).view(slots_[slot].shape));
  st.status = GatherStatus::kAvailable;
}

void ZeroRuntime::ensure_available(int g) {
  GroupState& st = groups_[g];
  if (st.status == GatherStatus::kAvailable) return;
  const profiler::ScopedRange range(nvtx_names_[static_cast<std::size_t>(2 * g)]);
  if (st.status == GatherStatus::kReleased) issue_gather(g, false);
  const auto start = std::chrono::steady_clock::now();
  st.gather.wait();
  st.gather = CommHandle();
  bind(g);
  trace_memory("gather", g);
  if (gather_timer_)
    gather_timer_(layout_->groups()[g].name,
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

void ZeroRuntime::release(int g, bool force) {
  GroupState& st = groups_[g];
  const LayoutGroup& group = layout_->groups()[g];
  if (st.status == GatherStatus::kReleased || (group.persistent && !force)) return;
  const profiler::ScopedRange range(nvtx_names_[static_cast<std::size_t>(2 * g + 1)]);
  if (st.status == GatherStatus::kInFlight) st.gather.wait();  // the buffer must outlive the collective
  st.gather = CommHandle();
  torch::NoGradGuard no_grad;
  for (int slot : group.slots) slots_[slot].param.set_data(empty_);
  if (st.buffer.defined()) gather_stats_.live_numel -= group.padded_numel;
  st.buffer = torch::Tensor();
  st.status = GatherStatus::kReleased;
  ++gather_stats_.releases;
  trace_memory("release", g);
}

// DeepSpeed's parameter coordinator swaps in the partitions of the layers it will fetch next,
// as many as the free swap buffers allow; the reads then run while this layer computes.
void ZeroRuntime::read_ahead(std::size_t layer_index, bool backward) {
  const auto n = static_cast<std::ptrdiff_t>(layer_groups_.size());
  for (std::ptrdiff_t j = static_cast<std::ptrdiff_t>(layer_index) + (backward ? -1 : 1); j >= 0 && j < n;
       j += backward ? -1 : 1) {
    const int g = layer_groups_[static_cast<std::size_t>(j)];
    if (g < 0 || groups_[g].status != GatherStatus::kReleased) continue;
    if (!shard_->prefetch(g)) break;
  }
}

void ZeroRuntime::prefetch(std::size_t layer_index, bool backward) {
  if (shard_->tier() == Tier::kNvme) read_ahead(layer_index, backward);
  std::int64_t budget = settings_.prefetch_bucket_size;
  const auto n = static_cast<std::ptrdiff_t>(layer_groups_.size());
  for (std::ptrdiff_t j = static_cast<std::ptrdiff_t>(layer_index) + (backward ? -1 : 1); j >= 0 && j < n;
       j += backward ? -1 : 1) {
    const int g = layer_groups_[static_cast<std::size_t>(j)];
    if (g < 0) continue;
    const auto numel = layout_->groups()[g].padded_numel;
    if (numel > budget || gather_stats_.live_numel + numel > settings_.max_live_parameters) break;
    budget -= numel;
    if (groups_[g].status == GatherStatus::kReleased) issue_gather(g, true);
  }
}

void ZeroRuntime::before_layer_forward(std::size_t index) {
  const int g = layer_groups_[index];
  if (g < 0) return;
  ensure_available(g);
  prefetch(index, /*backward=*/false);
}

std::int64_t ZeroRuntime::reuse_distance_after_forward(std::size_t index) const {
  const int g = layer_groups_[index];
  std::int64_t distance = 0;
  for (std::size_t j = index + 1; j < layer_groups_.size(); ++j) {
    if (layer_groups_[j] == g) return distance;  // used again later in this forward (a tied head)
    distance += layer_numels_[j];
  }
  return 2 * distance;  // the layers after it run forward, then backward, before it is used again
}

torch::Tensor ZeroRuntime::after_layer_forward(std::size_t index, torch::Tensor output) {
  const int g = layer_groups_[index];
  if (g < 0) return output;
  const bool training = torch::GradMode::is_enabled() && output.requires_grad();
  if (training) {
    output.register_hook([this, g, index](const torch::Tensor& grad) {
      ensure_available(g);
      prefetch(index, /*backward=*/true);
      return grad;
    });
  }
  const bool keep = training && reuse_distance_after_forward(index) <= settings_.max_reuse_distance &&
                    gather_stats_.live_numel <= settings_.max_live_parameters;
  if (!keep) release(g, /*force=*/false);
  return output;
}

void ZeroRuntime::gather_all() {
  if (settings_.stage < 3) return;
  // Copies, never views of the 16-bit weights: without a modifier rank, GatheredParameters drops
  // what the user changed (scatter_from_gathered writes it back when there is one).
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].status != GatherStatus::kReleased && weights16_.defined()) release(static_cast<int>(g), true);
    if (groups_[g].status == GatherStatus::kReleased) issue_gather(static_cast<int>(g), false, /*private_copy=*/true);
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) ensure_available(static_cast<int>(g));
}

void ZeroRuntime::release_all() {
  if (settings_.stage < 3) return;
  for (std::size_t g = 0; g < groups_.size(); ++g) release(static_cast<int>(g), /*force=*/true);
}

bool ZeroRuntime::is_available(int slot) const {
  if (settings_.stage < 3) return true;
  return groups_[layout_->group_of(slot)].status == GatherStatus::kAvailable;
}

}  // namespace shardscope::engine
