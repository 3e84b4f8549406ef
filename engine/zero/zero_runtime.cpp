// ZeroRuntime: layout, gradient reduction (all stages) and the optimizer-side all-gather.
// The stage-3 gather/release half lives in zero_gather.cpp.
#include "engine/zero/zero_runtime.hpp"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "engine/zero/partitioned_init.hpp"

namespace shardscope::engine {

// Autograd calls this after it accumulated a parameter's gradient (Python's
// register_post_accumulate_grad_hook); the runtime then counts the parameter's bucket down.
class ZeroRuntime::GradientHook : public torch::autograd::PostAccumulateGradHook {
 public:
  GradientHook(ZeroRuntime* runtime, int slot) : runtime_(runtime), slot_(slot) {}
  void operator()(const torch::autograd::Variable& /*param*/) override { runtime_->on_gradient_ready(slot_); }

 private:
  ZeroRuntime* runtime_;
  int slot_;
};

ZeroRuntime::ZeroRuntime(TrainableModel& model, torch::Dtype dtype, torch::Device device,
                         std::shared_ptr<Communicator> comm, const ZeroSettings& settings)
    : model_(model), dtype_(dtype), device_(device), comm_(std::move(comm)), settings_(settings) {
  TORCH_CHECK(settings_.stage >= 0 && settings_.stage <= 3, "ZeRO stage must be 0-3, got ", settings_.stage);
  model_.to(device_);
  slots_ = FlatParameters::collect_slots(model_);
  build_layout(model_);
  groups_.resize(layout_->groups().size());
  const auto options = torch::TensorOptions().dtype(dtype_).device(device_);
  const auto fp32 = options.dtype(torch::kFloat32);
  const int world = world_size(), me = rank();
  if (settings_.stage <= 2) {
    for (const auto& slot : slots_)
      TORCH_CHECK(!partitioned_shape(slot.param), "parameter '", slot.name,
                  "' was built under PartitionedInit, which only ZeRO stage 3 can train from");
    flat_ = std::make_unique<FlatParameters>(slots_, *layout_, dtype_, device_, settings_.stage <= 1);
    slots_ = flat_->slots();
  }
  torch::NoGradGuard no_grad;
  // Every rank starts from rank 0's weights, as DeepSpeed's engine broadcasts them at start.
  const bool broadcast = comm_ && world > 1;
  if (flat_ && broadcast) comm_->broadcast(flat_->params(), 0, "initial weights").wait();
  if (settings_.stage == 0) {
    shard_ = make_resident_param_shard(flat_->params(), Tier::kDevice, *layout_);
    // bf16 on a GPU: the optimizer reads the bf16 gradients directly (the CUDA kernels take any
    // gradient dtype), so no fp32 copy of the whole gradient exists. fp16 keeps the fp32 copy:
    // unscaling in fp16 would flush small gradients to zero.
    const bool direct = dtype_ == torch::kFloat32 || (dtype_ == torch::kBFloat16 && device_.is_cuda());
    fp32_grads_ = direct ? flat_->grads() : torch::zeros({layout_->padded_numel()}, fp32);
  } else {
    TORCH_CHECK(settings_.param_tier == Tier::kDevice || settings_.stage == 3, "offload_param needs ZeRO stage 3");
    shard_ = make_shard();
    for (const auto& g : layout_->groups()) {
      const auto chunk = g.chunk(world);
      torch::Tensor whole;
      if (!flat_) {  // built under PartitionedInit: the chunk exists already, the whole never did
        if (auto kept = take_partitioned_chunk(slots_[g.slots.front()].param, world)) {
          TORCH_CHECK(kept->numel() == chunk, "partitioned chunk of '", g.name, "' has ", kept->numel(),
                      " elements, the layout expects ", chunk);
          shard_->write(g.shard_offset, *kept, /*non_blocking=*/false);
          continue;
        }
      }
      if (flat_) {
        whole = flat_->params().narrow(0, g.flat_offset, g.padded_numel);
      } else {  // stage 3: assemble the group once to cut this rank's chunk out of it
        whole = torch::zeros({g.padded_numel}, options);
        for (int slot : g.slots)
          whole.narrow(0, layout_->slot_offset(slot) - g.flat_offset, slots_[slot].numel)
              .copy_(slots_[slot].param.detach().reshape({-1}));
        if (broadcast) comm_->broadcast(whole, 0, "initial " + g.name).wait();
      }
      shard_->write(g.shard_offset, whole.narrow(0, chunk * me, chunk), /*non_blocking=*/false);
    }
    shard_->flush();
    if (settings_.stage == 1) {
      // One rank: the reduced shard is the flat gradient buffer itself (a reduce-scatter over one
      // rank is the identity). The optimizer reads it as it is in fp32 training, with offload
      // (converted on the way to the host) and in bf16 on a GPU (the CUDA kernels read bf16; as at
      // stage 0). fp16 keeps an fp32 copy (see stage 0).
      reduced_shard_ = world == 1 ? flat_->grads() : torch::zeros({layout_->shard_numel()}, options);
      const bool direct = dtype_ == torch::kFloat32 || settings_.offload_optimizer ||
                          (dtype_ == torch::kBFloat16 && device_.is_cuda());
      fp32_grads_ = direct ? reduced_shard_ : torch::zeros({layout_->shard_numel()}, fp32);
    } else {
      grad_chunks_.resize(groups_.size());
    }
  }
  if (settings_.stage == 3) install_layer_hooks();
  got_grad_.assign(slots_.size(), 0);
  install_gradient_hooks();
}

ZeroRuntime::~ZeroRuntime() {
  model_.set_layer_hooks(nullptr);
  for (auto& slot : slots_) torch::autograd::impl::set_post_acc_grad_hooks(slot.param, nullptr);
}

std::unique_ptr<ParamShard> ZeroRuntime::make_shard() const {
  const auto numel = layout_->shard_numel();
  const auto options = torch::TensorOptions().dtype(dtype_).device(device_);
  switch (settings_.param_tier) {
    case Tier::kDevice: return make_resident_param_shard(torch::zeros({numel}, options), Tier::kDevice, *layout_);
    case Tier::kHost:
      return make_resident_param_shard(
          torch::zeros({numel}, options.device(torch::kCPU).pinned_memory(device_.is_cuda() && settings_.pin_params)),
          Tier::kHost, *layout_);
    case Tier::kNvme: {
      TORCH_CHECK(settings_.param_swap, "offload_param nvme needs its swap settings");
      NvmeParamShardOptions o;
      o.swap = *settings_.param_swap;
      o.aio = settings_.aio;
      o.rank = rank();
      o.world_size = world_size();
      o.dtype = dtype_;
      o.pinned = device_.is_cuda() && settings_.pin_params;
      return make_nvme_param_shard(*layout_, o);
    }
  }
  return nullptr;
}

void ZeroRuntime::adopt_master(torch::Tensor master) {
  TORCH_CHECK(settings_.stage >= 1 && master.numel() == layout_->shard_numel(),
              "adopt_master: needs stage >= 1 and a shard of ", layout_->shard_numel(), " elements");
  // Stage 3 on one rank: the 16-bit shard is the whole model. It stays, the optimizer kernel writes
  // it in the same pass as the master, and a gather binds views of it: no copy and no cast per
  // gather, as DeepSpeed's stage 3 keeps its 16-bit partition (ds_tensor) beside the fp32 master.
  const torch::Tensor& old = shard_->resident();
  if (settings_.stage == 3 && world_size() == 1 && settings_.param_tier == Tier::kDevice && old.defined() &&
      old.scalar_type() != torch::kFloat32 && master.scalar_type() == torch::kFloat32)
    weights16_ = old;
  shard_ = make_resident_param_shard(std::move(master), Tier::kDevice, *layout_);
}

torch::Tensor ZeroRuntime::kernel_weight_copy() const {
  if (dtype_ == torch::kFloat32 || settings_.offload_optimizer || settings_.param_tier != Tier::kDevice) return {};
  if (settings_.stage == 0) return flat_->params();
  if (world_size() > 1) return {};
  return settings_.stage == 3 ? weights16_ : flat_->params();
}

torch::Tensor ZeroRuntime::shard_chunk(int g) const { return shard_->gather_source(g, device_, dtype_); }

void ZeroRuntime::offload_gradients_to(torch::Tensor host, std::int64_t offset) {
  TORCH_CHECK(settings_.stage >= 1 && offset >= 0 && host.numel() == layout_->shard_numel() - offset &&
                  host.scalar_type() == torch::kFloat32 && host.is_cpu(),
              "offload_gradients_to: needs stage >= 1 and a host fp32 buffer of the shard's last ",
              layout_->shard_numel() - offset, " elements");
  TORCH_CHECK(settings_.stage >= 3 || offset == 0, "offload_gradients_to: partial offload is stage 3 only");
  host_grads_ = std::move(host);
  host_grads_offset_ = offset;
  host_chunk_written_.assign(layout_->groups().size(), 0);
  first_host_group_ = static_cast<int>(layout_->groups().size());
  for (std::size_t g = 0; g < layout_->groups().size(); ++g)
    if (layout_->groups()[g].shard_offset >= offset) {
      first_host_group_ = static_cast<int>(g);
      break;
    }
}

GradientPieces ZeroRuntime::gradient_pieces() const {
  if (settings_.stage <= 1) {
    if (grads_on_host_) return {{host_grads_offset_, host_grads_}};
    return {{0, fp32_grads_}};
  }
  GradientPieces pieces;
  const std::size_t device_groups = grads_on_host_ ? static_cast<std::size_t>(first_host_group_) : grad_chunks_.size();
  for (std::size_t g = 0; g < device_groups; ++g)
    if (grad_chunks_[g].defined()) pieces.push_back({layout_->groups()[g].shard_offset, grad_chunks_[g]});
  if (grads_on_host_) pieces.push_back({host_grads_offset_, host_grads_});
  return pieces;
}

torch::Tensor ZeroRuntime::full_grads() const { return flat_ ? flat_->grads() : torch::Tensor(); }
torch::Tensor ZeroRuntime::full_params() const { return flat_ ? flat_->params() : torch::Tensor(); }

void ZeroRuntime::build_layout(TrainableModel& model) {
  std::vector<std::int64_t> numels;
  for (const auto& slot : slots_) numels.push_back(slot.numel);
  const int padding_world = settings_.stage == 0 ? 1 : world_size();
  if (settings_.stage < 3) {
    layout_ = std::make_unique<PartitionLayout>(
        PartitionLayout::buckets(numels, std::max<std::int64_t>(1, settings_.reduce_bucket_size), padding_world));
    return;
  }
  // Stage 3: one group per layer (in forward order), so that a layer's gather is one collective.
  std::unordered_map<const void*, int> slot_of;
  for (std::size_t i = 0; i < slots_.size(); ++i) slot_of[slots_[i].param.unsafeGetTensorImpl()] = static_cast<int>(i);
  std::vector<LayoutGroup> groups;
  std::vector<int> group_of_slot(slots_.size(), -1);
  for (const auto& layer : model.layers()) {
    LayoutGroup group;
    group.name = layer.name;
    int existing = -1;
    for (const auto& p : layer.module->parameters(/*recurse=*/true)) {
      auto it = slot_of.find(p.unsafeGetTensorImpl());
      if (it == slot_of.end()) continue;
      if (group_of_slot[it->second] >= 0) {
        existing = group_of_slot[it->second];
        continue;
      }
      group_of_slot[it->second] = static_cast<int>(groups.size());
      group.slots.push_back(it->second);
    }
    if (!group.slots.empty()) {
      layer_groups_.push_back(static_cast<int>(groups.size()));
      groups.push_back(std::move(group));
    } else {
      layer_groups_.push_back(existing);  // a tied head reuses its embedding's group
    }
  }
  LayoutGroup rest;
  rest.name = "other parameters";
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (group_of_slot[i] < 0) rest.slots.push_back(static_cast<int>(i));
  if (!rest.slots.empty()) groups.push_back(std::move(rest));
  layout_ = std::make_unique<PartitionLayout>(numels, std::move(groups), world_size());
  for (auto& g : layout_->mutable_groups()) g.persistent = g.numel <= settings_.param_persistence_threshold;
  for (int g : layer_groups_) layer_numels_.push_back(g >= 0 ? layout_->groups()[g].padded_numel : 0);
}

void ZeroRuntime::install_gradient_hooks() {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    torch::autograd::impl::set_post_acc_grad_hooks(slots_[i].param,
                                                   std::make_unique<GradientHook>(this, static_cast<int>(i)));
}

void ZeroRuntime::begin_backward(bool reduce) {
  reducing_ = reduce || settings_.stage >= 2;
  boundary_ = reduce;
  if (settings_.stage >= 2) std::fill(got_grad_.begin(), got_grad_.end(), 0);  // staging is per backward
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].pending = static_cast<int>(layout_->groups()[g].slots.size());
    groups_[g].ready = false;
  }
  next_launch_ = static_cast<int>(groups_.size()) - 1;
}

void ZeroRuntime::on_gradient_ready(int slot) {
  got_grad_[static_cast<std::size_t>(slot)] = 1;
  if (settings_.stage <= 1 && fresh_grads_) adopt_fresh_gradient(slot);
  if (!reducing_) return;  // stages 0-1 inside an accumulation window: autograd accumulates in place
  const int g = layout_->group_of(slot);
  GroupState& st = groups_[g];
  if (settings_.stage >= 2) {
    torch::NoGradGuard no_grad;
    auto& param = slots_[slot].param;
    const auto& group = layout_->groups()[g];
    const torch::Tensor grad = param.grad().reshape({-1});
    if (settings_.contiguous_gradients) {
      if (!st.staging.defined())  // what no gradient writes is zeroed at launch (zero_unwritten_staging)
        st.staging = torch::empty({group.padded_numel}, torch::TensorOptions().dtype(dtype_).device(device_));
      st.staging.narrow(0, layout_->slot_offset(slot) - group.flat_offset, grad.numel()).copy_(grad);
    } else {
      st.pieces[slot] = grad;
    }
    param.mutable_grad().reset();  // the bucket holds it now; the full gradient never stays
  }
  if (--st.pending == 0) {
    st.ready = true;
    launch_ready_groups();
  }
}

void ZeroRuntime::adopt_fresh_gradient(int slot) {
  torch::Tensor& grad = slots_[static_cast<std::size_t>(slot)].param.mutable_grad();
  const torch::Tensor view = flat_->grad_view(static_cast<std::size_t>(slot));
  if (grad.defined() && grad.data_ptr() == view.data_ptr()) return;  // bound already: accumulated in place
  torch::NoGradGuard no_grad;
  if (grad.defined())
    view.copy_(grad);
  else
    view.zero_();
  grad = view;
}

void ZeroRuntime::settle_fresh_gradients() {
  if (!fresh_grads_) return;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!got_grad_[i]) adopt_fresh_gradient(static_cast<int>(i));  // unused this window: zero, as accumulated nothing
  fresh_grads_ = false;
}

void ZeroRuntime::zero_unwritten_staging(int g) {
  const LayoutGroup& group = layout_->groups()[g];
  GroupState& st = groups_[g];
  for (int slot : group.slots)
    if (!got_grad_[static_cast<std::size_t>(slot)])
      st.staging.narrow(0, layout_->slot_offset(slot) - group.flat_offset, slots_[slot].numel).zero_();
  if (group.padded_numel > group.numel) st.staging.narrow(0, group.numel, group.padded_numel - group.numel).zero_();
}

void ZeroRuntime::accumulate_chunk(int g, const torch::Tensor& reduced) {
  if (host_grads_.defined() && g >= first_host_group_) return accumulate_chunk_on_host(g, reduced);
  auto& grads = grad_chunks_[g];
  // bf16 on a GPU: the first reduction stays bf16, since the kernels read it as it is and widening
  // it would be exact; a later micro-step's reduction is added in fp32, as before.
  const bool keep16 = reduced.scalar_type() == torch::kBFloat16 && reduced.is_cuda();
  if (!grads.defined())
    grads = keep16 ? reduced : reduced.to(torch::kFloat32);  // fp32 training: the output itself, no copy
  else if (grads.scalar_type() != torch::kFloat32)
    grads = grads.to(torch::kFloat32).add_(reduced);
  else
    grads.add_(reduced);
}

// Offload: the chunk's running sum lives in the host's fp32 buffer from the window's first
// micro-step on, as in DeepSpeed's grad_partitions_flat_buffer, so that no gradient memory stays
// on the device between micro-steps (the estimator counts none). A later micro-step adds on the
// device, bringing the host chunk over and sending the sum back: faster than adding on the CPU.
void ZeroRuntime::accumulate_chunk_on_host(int g, const torch::Tensor& reduced) {
  const auto& group = layout_->groups()[g];
  torch::Tensor host = host_grads_.narrow(0, group.shard_offset - host_grads_offset_, group.chunk(world_size()));
  char& written = host_chunk_written_[static_cast<std::size_t>(g)];
  if (reduced.is_cpu()) {
    written ? host.add_(reduced) : host.copy_(reduced);
  } else {
    accumulate_on_side_stream(host, reduced, written);
  }
  written = 1;
}

// The copies go on a stream of their own, so that they overlap the rest of the backward instead
// of queueing behind it (DeepSpeed runs its copies on its reduce stream). The step reads the host buffer
// after synchronizing the device, which waits for this stream too.
void ZeroRuntime::accumulate_on_side_stream(torch::Tensor& host, const torch::Tensor& reduced, bool add) {
  const auto index = reduced.device().index();
  if (!offload_stream_) offload_stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index).unwrap();
  const c10::cuda::CUDAStream side(c10::cuda::CUDAStream::UNCHECKED, *offload_stream_);
  at::cuda::CUDAEvent produced;
  produced.record(c10::cuda::getCurrentCUDAStream(index));
  produced.block(side);
  const c10::cuda::CUDAStreamGuard on_side(side);
  // Widened on the device: a copy that also converts would go through a pageable host temporary.
  const torch::Tensor sum = add ? host.to(reduced.device(), /*non_blocking=*/true).add_(reduced)
                                : reduced.to(torch::kFloat32);
  host.copy_(sum, /*non_blocking=*/true);
  // Made on the compute stream, read here: its memory must not be reused before this stream is done.
  reduced.record_stream(*offload_stream_);
}

void ZeroRuntime::launch_ready_groups() {
  while (next_launch_ >= 0 && groups_[next_launch_].ready) launch_group(next_launch_--);
}

void ZeroRuntime::launch_group(int g) {
  const profiler::ScopedRange range(settings_.stage == 0 ? profiler::NvtxPhase::kAllReduceBucket
                                                         : profiler::NvtxPhase::kReduceScatterBucket);
  const LayoutGroup& group = layout_->groups()[g];
  GroupState& st = groups_[g];
  const int world = world_size();
  const auto chunk = group.chunk(world);
  InFlight job;
  job.group = g;
  if (settings_.stage == 0) {
    if (!comm_ || world == 1) return;
    job.handle = comm_->all_reduce(flat_->grads().narrow(0, group.flat_offset, group.padded_numel), ReduceOp::kSum,
                                   group.name);
  } else if (settings_.stage == 1) {
    auto input = flat_->grads().narrow(0, group.flat_offset, group.padded_numel);
    auto output = reduced_shard_.narrow(0, group.shard_offset, chunk);
    if (comm_ && world > 1)
      job.handle = comm_->reduce_scatter(output, input, group.name);
    else if (output.data_ptr() != input.data_ptr())
      output.copy_(input);
  } else {
    torch::Tensor input = st.staging;
    if (!settings_.contiguous_gradients)
      input = flatten_pieces(g);
    else if (input.defined())
      zero_unwritten_staging(g);
    if (!input.defined())  // no parameter of the group got a gradient: reduce zeros, as every rank must
      input = torch::zeros({group.padded_numel}, torch::TensorOptions().dtype(dtype_).device(device_));
    st.staging = torch::Tensor();
    // One rank: the reduce-scatter is the identity, and the staged bucket is the reduced chunk.
    const bool alone = !comm_ || world == 1;
    auto output = alone ? input : torch::empty({chunk}, input.options());
    if (!alone) job.handle = comm_->reduce_scatter(output, input, group.name);
    // The chunk comes into being when the first reduction lands and accumulates later ones; the
    // lambda keeps the input alive until the collective is done with it.
    job.finish = [this, g, output, input]() { accumulate_chunk(g, output); };
    job.staged_numel = group.padded_numel;
    staged_numel_ += job.staged_numel;
    trace_memory("reduce", g);
    if (settings_.stage == 3) release(g, /*force=*/false);
  }
  in_flight_.push_back(std::move(job));
  if (!settings_.overlap_comm) {
    wait_for_reductions(0);
  } else {
    while (staged_numel_ > 2 * settings_.reduce_bucket_size && in_flight_.size() > 1) wait_one();
  }
}

torch::Tensor ZeroRuntime::flatten_pieces(int g) {
  // contiguous_gradients=false: the bucket is flattened when it is reduced, as DeepSpeed does.
  const LayoutGroup& group = layout_->groups()[g];
  GroupState& st = groups_[g];
  if (st.pieces.empty()) return {};
  std::vector<torch::Tensor> parts;
  for (int slot : group.slots) {
    auto it = st.pieces.find(slot);
    parts.push_back(it != st.pieces.end() ? it->second
                                          : torch::zeros({slots_[slot].numel},
                                                         torch::TensorOptions().dtype(dtype_).device(device_)));
  }
  if (group.padded_numel > group.numel)
    parts.push_back(torch::zeros({group.padded_numel - group.numel}, parts.front().options()));
  st.pieces.clear();
  return torch::cat(parts);
}

void ZeroRuntime::wait_one() {
  InFlight job = std::move(in_flight_.front());
  in_flight_.pop_front();
  job.handle.wait();
  if (job.finish) job.finish();
  staged_numel_ -= job.staged_numel;
  trace_memory("reduced", job.group);
}

void ZeroRuntime::wait_for_reductions(std::size_t keep_in_flight) {
  while (in_flight_.size() > keep_in_flight) wait_one();
}

void ZeroRuntime::end_backward() {
  if (settings_.stage <= 1) settle_fresh_gradients();  // before any bucket is reduced
  if (reducing_) {
    // Parameters that got no gradient (unused this step) still take part: every rank issues the
    // same collectives in the same order.
    for (int g = next_launch_; g >= 0; --g) groups_[g].ready = true;
    torch::NoGradGuard no_grad;
    launch_ready_groups();
    wait_for_reductions(0);
    // Stages 2-3 keep the offloaded range's running sum on the host at every micro-step.
    grads_on_host_ = host_grads_.defined() && (boundary_ || settings_.stage >= 2);
    if (grads_on_host_ && settings_.stage == 1)  // the reduced 16-bit shard, widened as it is copied
      host_grads_.copy_(reduced_shard_.narrow(0, host_grads_offset_, host_grads_.numel()), /*non_blocking=*/true);
    if (settings_.stage == 0 && fp32_grads_.data_ptr() != flat_->grads().data_ptr())
      fp32_grads_.copy_(flat_->grads());
    if (settings_.stage == 1 && fp32_grads_.data_ptr() != reduced_shard_.data_ptr()) fp32_grads_.copy_(reduced_shard_);
  }
  reducing_ = false;
}

void ZeroRuntime::zero_grads() {
  torch::NoGradGuard no_grad;
  grads_on_host_ = false;
  if (flat_ && flat_->grads().defined()) {
    // Released rather than zeroed: the next backward's gradients are copied in as they arrive
    // (adopt_fresh_gradient), 4 bytes moved per element where zeroing and then accumulating into
    // the zeros moves 8; slots that get none are zeroed when that backward ends.
    for (auto& slot : slots_) slot.param.mutable_grad().reset();
    std::fill(got_grad_.begin(), got_grad_.end(), 0);
    fresh_grads_ = true;
  }
  if (settings_.stage >= 2) {
    for (auto& grads : grad_chunks_) grads = torch::Tensor();  // freed: no gradient memory until the next backward
    std::fill(host_chunk_written_.begin(), host_chunk_written_.end(), 0);  // the next window copies, not adds
    for (auto& slot : slots_) slot.param.mutable_grad().reset();
    return;
  }
  const bool aliased = flat_ && flat_->grads().defined() && fp32_grads_.data_ptr() == flat_->grads().data_ptr();
  const bool overwritten = reduced_shard_.defined() && fp32_grads_.data_ptr() == reduced_shard_.data_ptr();
  if (!aliased && !overwritten) fp32_grads_.zero_();  // the reduce-scatter rewrites the whole shard
}

void ZeroRuntime::after_optimizer_step(bool weights_written) {
  if (settings_.stage == 0) return;
  torch::NoGradGuard no_grad;
  shard_->flush();  // the gathers below and the next forward's read what the step wrote
  if (settings_.stage == 3) {
    for (std::size_t g = 0; g < groups_.size(); ++g) release(static_cast<int>(g), /*force=*/true);  // stale now
    if (weights16_.defined() && !weights_written) weights16_.copy_(shard_->resident());  // e.g. a loaded master
    return;
  }
  if (weights_written) return;  // stages 1-2 on one rank: the kernel wrote the full weights
  const int world = world_size(), me = rank();
  std::vector<CommHandle> handles;
  for (std::size_t gi = 0; gi < layout_->groups().size(); ++gi) {
    const auto& g = layout_->groups()[gi];
    const auto chunk = g.chunk(world);
    auto whole = flat_->params().narrow(0, g.flat_offset, g.padded_numel);
    auto mine = shard_chunk(static_cast<int>(gi));
    if (comm_ && world > 1) {
      // Two in flight: enough to keep the link busy, while the cast 16-bit chunks stay small.
      if (handles.size() >= 2) handles[handles.size() - 2].wait();
      handles.push_back(comm_->all_gather(whole, mine, "gather " + g.name));
    } else {
      whole.narrow(0, chunk * me, chunk).copy_(mine);
    }
  }
  for (auto& h : handles) h.wait();
}

void ZeroRuntime::scatter_from_gathered(int source_rank) {
  torch::NoGradGuard no_grad;
  const int world = world_size(), me = rank();
  for (std::size_t gi = 0; gi < layout_->groups().size(); ++gi) {
    const auto& g = layout_->groups()[gi];
    torch::Tensor whole = flat_ ? flat_->params().narrow(0, g.flat_offset, g.padded_numel) : groups_[gi].buffer;
    TORCH_CHECK(whole.defined(), "scatter_from_gathered: group '", g.name, "' is not gathered");
    if (comm_ && world > 1) comm_->broadcast(whole, source_rank, "modified " + g.name).wait();
    if (settings_.stage >= 1) {
      const auto chunk = g.chunk(world);
      shard_->write(g.shard_offset, whole.narrow(0, chunk * me, chunk), /*non_blocking=*/false);
      if (weights16_.defined()) weights16_.narrow(0, g.shard_offset, chunk).copy_(whole.narrow(0, chunk * me, chunk));
    }
  }
  shard_->flush();
}

void ZeroRuntime::trace_memory(const char* event, int g) const {
  static const bool enabled = [] {
    const char* v = std::getenv("SHARDSCOPE_TRACE_ZERO_MEMORY");
    return v && *v && std::string(v) != "0";
  }();
  if (!enabled || !device_.is_cuda()) return;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
  const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  std::fprintf(stderr, "[zero-memory] %s %s allocated=%lld peak=%lld live_numel=%lld staged_numel=%lld\n", event,
               g >= 0 ? layout_->groups()[static_cast<std::size_t>(g)].name.c_str() : "?",
               static_cast<long long>(stats.allocated_bytes[all].current),
               static_cast<long long>(stats.allocated_bytes[all].peak), static_cast<long long>(gather_stats_.live_numel),
               static_cast<long long>(staged_numel_));
}

}  // namespace shardscope::engine

