// offload_param "nvme": DeepSpeed's AsyncPartitionedParameterSwapper for the layer-grouped shard.
// Each swapped group's chunk is one file; a pool of buffer_count buffers of buffer_size elements
// takes the reads (started ahead of the gather by prefetch()) and the writes of updated weights.
#include <torch/torch.h>

#include <cstdio>
#include <stdexcept>

#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"
#include "engine/placement/host_buffers.hpp"
#include "engine/placement/param_shard.hpp"
#include "engine/zero/partition_layout.hpp"

namespace shardscope::engine {
namespace {

enum class ChunkState { kOnDisk, kReading, kReady };

struct GroupSwap {
  bool swapped = false;
  aio::SwapFile file;          ///< swapped groups
  torch::Tensor resident;      ///< the others: the chunk in host memory
  ChunkState state = ChunkState::kOnDisk;
  int buffer = -1;             ///< the pool buffer holding a read
};

class NvmeParamShard : public ParamShard {
 public:
  NvmeParamShard(const PartitionLayout& layout, const NvmeParamShardOptions& o)
      : ParamShard(group_shard_ranges(layout)), options_(o),
        folder_(o.swap.nvme_path, aio::param_swap_folder(o.swap.nvme_path, torch_dtype_name(o.dtype), o.rank),
                o.aio.owner),
        element_(static_cast<std::int64_t>(c10::elementSize(o.dtype))) {
    place_groups(layout);
    if (swapped_count_ > 0) {
      pool_ = std::make_unique<HostBufferPool>(o.swap.buffer_count, o.swap.buffer_size, o.dtype, o.pinned);
      reads_ = std::make_unique<aio::AioHandle>(o.aio);
      writes_ = std::make_unique<aio::AioHandle>(o.aio);
    }
  }
  ~NvmeParamShard() override {
    // Nothing may still read or write a buffer or a file when they go.
    try {
      if (reads_) reads_->wait();
      if (writes_) writes_->wait();
    } catch (const std::exception&) {
    }
  }

  Tier tier() const override { return Tier::kNvme; }
  const torch::Tensor& resident() const override { return empty_; }

  torch::Tensor gather_source(int g, const torch::Device& device, torch::Dtype dtype) override {
    GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
    if (!s.swapped) return s.resident.to(device, dtype, /*non_blocking=*/true);
    if (s.state == ChunkState::kOnDisk) start_read(g, /*keep_spare=*/false);
    if (s.state == ChunkState::kReading) finish_reads();
    const auto chunk = pool_->buffer(s.buffer).narrow(0, 0, groups_[static_cast<std::size_t>(g)].numel);
    // The pool buffer goes back at once: a CPU gather gets a copy, a GPU copy is fenced.
    torch::Tensor source = device.is_cpu() ? chunk.to(dtype, /*non_blocking=*/false, /*copy=*/true)
                                           : chunk.to(device, dtype, /*non_blocking=*/true);
    pool_->release(s.buffer, device);
    s.buffer = -1;
    s.state = ChunkState::kOnDisk;
    return source;
  }

  bool prefetch(int g) override {
    GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
    if (!s.swapped || s.state != ChunkState::kOnDisk) return true;
    return start_read(g, /*keep_spare=*/true);
  }

  torch::Tensor read(std::int64_t offset, std::int64_t numel) override {
    auto out = torch::empty({numel}, torch::TensorOptions().dtype(options_.dtype));
    for_each_group_in(offset, numel, [&](int g, std::int64_t at) {
      GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
      const auto n = groups_[static_cast<std::size_t>(g)].numel;
      if (!s.swapped) {
        out.narrow(0, at, n).copy_(s.resident);
        return;
      }
      out.narrow(0, at, n).copy_(gather_source(g, torch::kCPU, options_.dtype));
    });
    return out;
  }

  torch::Tensor writable_view(std::int64_t, std::int64_t, const torch::Device&) override { return {}; }

  void write(std::int64_t offset, const torch::Tensor& values, bool /*non_blocking*/) override {
    torch::NoGradGuard no_grad;
    for_each_group_in(offset, values.numel(), [&](int g, std::int64_t at) {
      GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
      const auto n = groups_[static_cast<std::size_t>(g)].numel;
      if (!s.swapped) {
        s.resident.copy_(values.narrow(0, at, n));
        return;
      }
      drop_read(g);  // a chunk read before this write is stale
      auto buffer = writable_buffer();
      pool_->buffer(buffer).narrow(0, 0, n).copy_(values.narrow(0, at, n));
      writes_->async_pwrite(s.file.target(), pool_->buffer(buffer).data_ptr(), static_cast<std::size_t>(s.file.size()), 0);
      writing_.push_back(buffer);
    });
  }

  void flush() override {
    if (!writes_ || writing_.empty()) return;
    writes_->wait();
    for (int b : writing_) pool_->release(b, torch::kCPU);
    writing_.clear();
  }

  std::string describe() const override {
    std::int64_t swapped = 0;
    for (std::size_t g = 0; g < swaps_.size(); ++g)
      if (swaps_[g].swapped) swapped += groups_[g].numel * element_;
    char text[512];
    std::snprintf(text, sizeof text,
                  "%d of %zu layer chunk(s) of the %s parameters (%.1f MiB) are swapped to %s (%s, %s, %s); "
                  "%d buffer(s) of %lld elements; %.1f MiB in CPU memory",
                  swapped_count_, swaps_.size(), torch_dtype_name(options_.dtype).c_str(),
                  static_cast<double>(swapped) / 1048576.0, folder_.path().c_str(), folder_.filesystem().c_str(),
                  folder_.direct_io() ? "O_DIRECT" : "page cache: no O_DIRECT there",
                  aio::io_backend_name(options_.aio.backend), pool_ ? pool_->count() : 0,
                  static_cast<long long>(options_.swap.buffer_size), static_cast<double>(memory_bytes()) / 1048576.0);
    return text;
  }

  void collect_memory(std::vector<torch::Tensor>& out) const override {
    if (pool_) pool_->collect(out);
    for (const auto& s : swaps_)
      if (!s.swapped) out.push_back(s.resident);
  }

 private:
  // DeepSpeed: the first max_in_cpu elements stay in host memory, and so does any chunk too small
  // to swap; the rest go to NVMe, each chunk in a buffer of buffer_size elements.
  void place_groups(const PartitionLayout& layout) {
    const std::int64_t threshold = min_swappable_bytes(options_.aio);
    std::int64_t in_cpu = 0;
    swaps_.resize(groups_.size());
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const auto n = groups_[g].numel;
      GroupSwap& s = swaps_[g];
      s.swapped = in_cpu + n > options_.swap.max_in_cpu && n * element_ >= threshold;
      if (!s.swapped) {
        in_cpu += n;
        s.resident = aligned_host_tensor(n, options_.dtype, options_.pinned).narrow(0, 0, n);
        continue;
      }
      if (n > options_.swap.buffer_size)
        throw std::invalid_argument("zero_optimization.offload_param.buffer_size is " +
                                    std::to_string(options_.swap.buffer_size) + " elements, but '" +
                                    layout.groups()[g].name + "' has " + std::to_string(n) +
                                    " elements on this rank (More elements than buffer size): raise buffer_size to "
                                    "at least " + std::to_string(n));
      const auto& slots = layout.groups()[g].slots;
      s.file = aio::SwapFile(folder_.file(std::to_string(slots.front()) + "_" + std::to_string(slots.back()) +
                                          "_param.tensor.swp"),
                             n * element_, folder_.direct_io(), options_.aio.owner);
      ++swapped_count_;
    }
  }

  template <typename Fn>
  void for_each_group_in(std::int64_t offset, std::int64_t numel, Fn&& fn) {
    std::int64_t covered = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const auto& r = groups_[g];
      if (r.offset + r.numel <= offset || r.offset >= offset + numel || r.numel == 0) continue;
      TORCH_CHECK(r.offset >= offset && r.offset + r.numel <= offset + numel,
                  "NVMe parameter shard: a range must cover whole groups (", offset, "+", numel, " cuts group ", g, ")");
      fn(static_cast<int>(g), r.offset - offset);
      covered += r.numel;
    }
    TORCH_CHECK(covered == numel || numel == 0 || covered > 0, "NVMe parameter shard: range outside the shard");
  }

  bool start_read(int g, bool keep_spare) {
    GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
    if (keep_spare && pool_->free_count() <= 1) return false;  // one buffer stays for a gather that must wait
    flush();  // a read must see the last write of its file
    auto buffer = pool_->acquire();
    if (!buffer) {
      TORCH_CHECK(!keep_spare, "NVMe parameter shard: no free buffer");
      throw std::invalid_argument("zero_optimization.offload_param.buffer_count " +
                                  std::to_string(options_.swap.buffer_count) +
                                  " leaves no buffer for a gather: raise buffer_count (Not enough swap in buffers)");
    }
    s.buffer = *buffer;
    reads_->async_pread(s.file.target(), pool_->buffer(s.buffer).data_ptr(), static_cast<std::size_t>(s.file.size()), 0);
    s.state = ChunkState::kReading;
    return true;
  }

  void finish_reads() {
    reads_->wait();
    for (auto& s : swaps_)
      if (s.state == ChunkState::kReading) s.state = ChunkState::kReady;
  }

  void drop_read(int g) {
    GroupSwap& s = swaps_[static_cast<std::size_t>(g)];
    if (s.state == ChunkState::kOnDisk) return;
    if (s.state == ChunkState::kReading) finish_reads();
    pool_->release(s.buffer, torch::kCPU);
    s.buffer = -1;
    s.state = ChunkState::kOnDisk;
  }

  int writable_buffer() {
    if (auto b = pool_->acquire()) return *b;
    flush();
    if (auto b = pool_->acquire()) return *b;
    // Every buffer holds a chunk read ahead that no gather took: drop them (read again on use).
    for (std::size_t g = 0; g < swaps_.size(); ++g) drop_read(static_cast<int>(g));
    auto b = pool_->acquire();
    TORCH_CHECK(b, "NVMe parameter shard: no buffer for a write (offload_param.buffer_count)");
    return *b;
  }

  NvmeParamShardOptions options_;
  aio::SwapFolder folder_;
  std::int64_t element_;
  std::vector<GroupSwap> swaps_;
  int swapped_count_ = 0;
  std::unique_ptr<HostBufferPool> pool_;
  std::unique_ptr<aio::AioHandle> reads_, writes_;
  std::vector<int> writing_;
  torch::Tensor empty_;
};

}  // namespace

std::int64_t min_swappable_bytes(const aio::AioSettings& aio) { return std::max<std::int64_t>(1 << 20, aio.block_size); }

std::string torch_dtype_name(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kFloat16: return "float16";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat32: return "float32";
    default: return std::string(c10::toString(dtype));
  }
}

std::unique_ptr<ParamShard> make_nvme_param_shard(const PartitionLayout& layout, const NvmeParamShardOptions& options) {
  return std::make_unique<NvmeParamShard>(layout, options);
}

}  // namespace shardscope::engine
