// A parameter shard that lives in one tensor, on the device or in host memory.
#include <torch/torch.h>

#include <algorithm>

#include "engine/placement/param_shard.hpp"
#include "engine/zero/partition_layout.hpp"

namespace shardscope::engine {
namespace {

class ResidentParamShard : public ParamShard {
 public:
  ResidentParamShard(torch::Tensor tensor, Tier tier, std::vector<ShardRange> groups)
      : ParamShard(std::move(groups)), tensor_(std::move(tensor)), tier_(tier) {}
  Tier tier() const override { return tier_; }
  const torch::Tensor& resident() const override { return tensor_; }

  torch::Tensor gather_source(int g, const torch::Device& device, torch::Dtype dtype) override {
    const ShardRange& range = groups_.at(static_cast<std::size_t>(g));
    auto chunk = tensor_.narrow(0, range.offset, range.numel);
    if (chunk.device() != device)  // host memory: to the device on the current stream, then gathered
      return chunk.to(device, dtype, /*non_blocking=*/true);
    return chunk.scalar_type() == dtype ? chunk : chunk.to(dtype);
  }
  torch::Tensor read(std::int64_t offset, std::int64_t numel) override { return tensor_.narrow(0, offset, numel); }
  torch::Tensor writable_view(std::int64_t offset, std::int64_t numel, const torch::Device& device) override {
    if (tensor_.device().type() != device.type()) return {};
    return tensor_.narrow(0, offset, numel);
  }
  void write(std::int64_t offset, const torch::Tensor& values, bool non_blocking) override {
    torch::NoGradGuard no_grad;
    tensor_.narrow(0, offset, values.numel()).copy_(values, non_blocking);
  }
  void collect_memory(std::vector<torch::Tensor>& out) const override { out.push_back(tensor_); }
 private:
  torch::Tensor tensor_;
  Tier tier_;
};

}  // namespace

std::int64_t unique_storage_bytes(const std::vector<torch::Tensor>& tensors) {
  std::vector<const void*> seen;
  std::int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const void* storage = t.storage().data();
    if (std::find(seen.begin(), seen.end(), storage) != seen.end()) continue;
    seen.push_back(storage);
    bytes += static_cast<std::int64_t>(t.storage().nbytes());
  }
  return bytes;
}

std::int64_t ParamShard::memory_bytes() const {
  std::vector<torch::Tensor> held;
  collect_memory(held);
  return unique_storage_bytes(held);
}

std::vector<ShardRange> group_shard_ranges(const PartitionLayout& layout) {
  std::vector<ShardRange> ranges;
  for (const auto& g : layout.groups()) ranges.push_back({g.shard_offset, g.chunk(layout.world_size())});
  return ranges;
}

std::unique_ptr<ParamShard> make_resident_param_shard(torch::Tensor tensor, Tier tier, const PartitionLayout& layout) {
  return std::make_unique<ResidentParamShard>(std::move(tensor), tier, group_shard_ranges(layout));
}

}  // namespace shardscope::engine
