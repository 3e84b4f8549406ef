#pragma once
// This rank's shard of the parameters as the runtime's gathers read it and the optimizer's update
// writes it: one tensor on the device or in (pinned) host memory, or, with offload_param
// "nvme", a swap file per group read back ahead of the group's gather. At stages 1-3 without
// offload the shard is the fp32 master itself and the gathers cast its chunks.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "aio/aio_handle.hpp"
#include "engine/placement/placement_plan.hpp"

namespace shardscope::engine {

class PartitionLayout;

/// Where group g's chunk lies in this rank's shard.
struct ShardRange {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
};

/// Every group's chunk range of `layout`'s shard, in group order.
std::vector<ShardRange> group_shard_ranges(const PartitionLayout& layout);

class ParamShard {
 public:
  explicit ParamShard(std::vector<ShardRange> groups) : groups_(std::move(groups)) {}
  virtual ~ParamShard() = default;
  virtual Tier tier() const = 0;
  /// The whole shard as one tensor when it lives in memory (device or host); undefined on NVMe.
  virtual const torch::Tensor& resident() const = 0;
  /// Group `g`'s chunk on `device` in `dtype`, ready to be gathered from: copied or cast as needed;
  /// on NVMe it waits for the chunk's read (started by prefetch() or now).
  virtual torch::Tensor gather_source(int g, const torch::Device& device, torch::Dtype dtype) = 0;
  /// Starts reading group `g` ahead of its gather. False when nothing more can be read ahead now
  /// (every spare buffer is in use); true when it is read ahead or needs no reading.
  virtual bool prefetch(int g) { return true; }
  /// Elements [offset, offset + numel) of the shard in its dtype, on the host or the device.
  virtual torch::Tensor read(std::int64_t offset, std::int64_t numel) = 0;
  /// A view of [offset, offset + numel) that the optimizer kernel running on `device` can write its
  /// update into directly; undefined when the shard is elsewhere (then write() it).
  virtual torch::Tensor writable_view(std::int64_t offset, std::int64_t numel, const torch::Device& device) = 0;
  /// Replaces [offset, offset + values.numel()) with `values` (any device and dtype; on NVMe whole groups).
  virtual void write(std::int64_t offset, const torch::Tensor& values, bool non_blocking) = 0;
  /// Waits for the writes in flight (NVMe): a read after flush() sees every write before it.
  virtual void flush() {}
  /// Adds the tensors the shard holds in device or host memory to `out`.
  virtual void collect_memory(std::vector<torch::Tensor>& out) const = 0;
  /// Bytes of those tensors, each storage once.
  std::int64_t memory_bytes() const;
  /// The start line of an offloaded shard: what is where.
  virtual std::string describe() const { return ""; }
  /// Whether `tensor` is this shard's own storage (the fp32 master adopted as the shard).
  bool aliases(const torch::Tensor& tensor) const {
    return resident().defined() && tensor.defined() && resident().data_ptr() == tensor.data_ptr();
  }
  const std::vector<ShardRange>& groups() const { return groups_; }

 protected:
  std::vector<ShardRange> groups_;
};

/// A shard held in `tensor` (device or host memory), laid out as `layout` says.
std::unique_ptr<ParamShard> make_resident_param_shard(torch::Tensor tensor, Tier tier, const PartitionLayout& layout);

/// What an NVMe shard needs beyond the layout.
struct NvmeParamShardOptions {
  ParamSwapPlan swap;
  aio::AioSettings aio;   ///< backend and owner ("rank R") filled in
  int rank = 0;
  int world_size = 1;
  torch::Dtype dtype = torch::kFloat32;
  bool pinned = false;    ///< page-locked buffers (a GPU with pin_memory)
};

/// offload_param "nvme": every group's chunk in a swap file under DeepSpeed's
/// <nvme_path>/zero_stage_3/<dtype>params/rank<R>, except the first max_in_cpu elements and the
/// chunks too small to swap (below max(1 MiB, aio.block_size), DeepSpeed's MIN_AIO_BYTES rule),
/// which stay in host memory. Throws IoError for an unusable path, std::invalid_argument naming
/// offload_param.buffer_size when a chunk does not fit a buffer.
std::unique_ptr<ParamShard> make_nvme_param_shard(const PartitionLayout& layout, const NvmeParamShardOptions& options);

/// DeepSpeed's threshold for swapping a tensor: max(1 MiB, aio.block_size) bytes (MIN_AIO_BYTES).
std::int64_t min_swappable_bytes(const aio::AioSettings& aio);
/// torch's dtype name as DeepSpeed's folder names use it: "float16", "bfloat16", "float32".
std::string torch_dtype_name(torch::Dtype dtype);
/// Bytes of the distinct storages behind `tensors` (views of one buffer count once).
std::int64_t unique_storage_bytes(const std::vector<torch::Tensor>& tensors);

}  // namespace shardscope::engine
