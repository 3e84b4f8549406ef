#include "engine/zero/partitioned_init.hpp"

#include <map>
#include <mutex>
#include <unordered_map>

namespace shardscope::engine {
namespace {

struct Chunk {
  torch::Tensor values;
  int world_size = 1;
  std::vector<const void*> members;  ///< the group's parameters, to forget them with the chunk
};

// Process-wide, because the model is built before the engine that consumes it (ranks that are
// threads of one test process share it; keys are parameter identities, so they never collide).
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::vector<std::int64_t>> shapes;
  std::unordered_map<const void*, Chunk> chunks;  ///< keyed by the group's first parameter
};

Registry& registry() {
  static Registry r;
  return r;
}

thread_local PartitionedInit* active = nullptr;

}  // namespace

PartitionedInit::PartitionedInit(int rank, int world_size, torch::Dtype dtype, torch::Device device)
    : rank_(rank), world_size_(world_size), dtype_(dtype), device_(device), previous_(active) {
  TORCH_CHECK(world_size_ >= 1 && rank_ >= 0 && rank_ < world_size_, "PartitionedInit: rank ", rank_,
              " is not in a world of ", world_size_);
  active = this;
}

PartitionedInit::~PartitionedInit() { active = previous_; }

PartitionedInit* PartitionedInit::current() { return active; }

void PartitionedInit::partition_layer(torch::nn::Module& layer) {
  std::vector<torch::Tensor> params;
  std::int64_t numel = 0;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    for (const auto& p : layer.parameters(/*recurse=*/true)) {
      if (!p.requires_grad() || registry().shapes.count(p.unsafeGetTensorImpl())) continue;
      params.push_back(p);
      numel += p.numel();
    }
  }
  if (params.empty()) return;
  peak_whole_numel_ = std::max(peak_whole_numel_, numel);
  // The same arithmetic as PartitionLayout: pad to a multiple of the world size, chunk r is ours.
  const std::int64_t padded = std::max<std::int64_t>(world_size_, (numel + world_size_ - 1) / world_size_ * world_size_);
  const std::int64_t chunk = padded / world_size_;
  torch::NoGradGuard no_grad;
  auto whole = torch::zeros({padded}, torch::TensorOptions().dtype(dtype_).device(device_));
  std::int64_t offset = 0;
  for (const auto& p : params) {
    whole.narrow(0, offset, p.numel()).copy_(p.detach().reshape({-1}));
    offset += p.numel();
  }
  Chunk kept{whole.narrow(0, chunk * rank_, chunk).clone(), world_size_, {}};
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (auto& p : params) {
    registry().shapes[p.unsafeGetTensorImpl()] = p.sizes().vec();
    kept.members.push_back(p.unsafeGetTensorImpl());
    p.set_data(torch::empty({0}, p.options()));  // the whole tensor is gone from here on
  }
  registry().chunks[params.front().unsafeGetTensorImpl()] = std::move(kept);
  partitioned_numel_ += numel;
}

std::optional<std::vector<std::int64_t>> partitioned_shape(const torch::Tensor& param) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().shapes.find(param.unsafeGetTensorImpl());
  if (it == registry().shapes.end()) return std::nullopt;
  return it->second;
}

std::optional<torch::Tensor> take_partitioned_chunk(const torch::Tensor& first_param, int world_size) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().chunks.find(first_param.unsafeGetTensorImpl());
  if (it == registry().chunks.end()) return std::nullopt;
  TORCH_CHECK(it->second.world_size == world_size, "the model was partitioned for ", it->second.world_size,
              " ranks but trains on ", world_size);
  Chunk chunk = std::move(it->second);
  registry().chunks.erase(it);
  for (const void* member : chunk.members) registry().shapes.erase(member);
  return chunk.values;
}

}  // namespace shardscope::engine
