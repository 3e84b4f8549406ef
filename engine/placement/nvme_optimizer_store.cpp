// offload_optimizer "nvme": DeepSpeed's partitioned and pipelined optimizer swappers. Each
// sub-group's fp32 master and optimizer state are files; a step reads a sub-group into pinned
// buffers, steps it with the CPU kernels, and writes it back. With pipeline_read the next
// sub-group's read runs while the current one steps; with pipeline_write the finished one's write
// runs while the next one steps (DeepSpeed's PipelinedOptimizerSwapper); without them each
// sub-group is read, stepped and written in turn (PartitionedOptimizerSwapper).
#include <torch/torch.h>

#include <cstdio>
#include <optional>
#include <stdexcept>

#include "aio/swap_file.hpp"
#include "aio/swap_folder.hpp"
#include "engine/placement/host_buffers.hpp"
#include "engine/placement/optimizer_store.hpp"

namespace shardscope::engine {
namespace {

struct SwappedSubGroup {
  SubGroupSpec spec;
  bool swapped = false;
  std::vector<aio::SwapFile> files;             ///< swapped: the master, then each state, in layout order
  torch::Tensor master;                         ///< not swapped: in host memory
  std::map<std::string, torch::Tensor> state;   ///< not swapped
};

// The pinned buffers one swapped sub-group is in while it is read, stepped or written.
struct Resident {
  int sub_group = -1;
  std::vector<int> buffers;  ///< pool indices: the master, then each state
};

class NvmeOptimizerStore : public OptimizerStore {
 public:
  NvmeOptimizerStore(const OptimizerSettings& settings, ShardRange range, std::vector<SubGroupSpec> specs,
                     const NvmeOptimizerOptions& o, ParamShard& shard)
      : OptimizerStore(range), settings_(settings), options_(o), layout_(optimizer_state_layout(settings)),
        folder_(o.swap.nvme_path, aio::optimizer_swap_folder(o.swap.nvme_path, o.rank), o.aio.owner) {
    const std::int64_t threshold = min_swappable_bytes(o.aio);
    std::int64_t largest = 0;
    for (auto& spec : specs) {
      SwappedSubGroup sg;
      sg.swapped = spec.range.numel * 4 >= threshold;  // DeepSpeed's is_swappable_tensor
      sg.spec = std::move(spec);
      if (sg.swapped) largest = std::max(largest, sg.spec.range.numel);
      sub_groups_.push_back(std::move(sg));
    }
    if (largest > 0) {
      check_buffer_count();
      pool_ = HostBufferPool(o.swap.buffer_count, largest, torch::kFloat32, o.pinned);
      reads_ = std::make_unique<aio::AioHandle>(o.aio);
      writes_ = std::make_unique<aio::AioHandle>(o.aio);
    }
    std::int64_t widest = 0;
    for (const auto& sg : sub_groups_) widest = std::max(widest, sg.spec.range.numel);
    if (o.model_dtype != torch::kFloat32)  // the kernel's 16-bit copy, on its way to the shard
      staging_ = aligned_host_tensor(widest, o.model_dtype, o.pinned);
    initialize(shard);
  }

  ~NvmeOptimizerStore() override {
    try {
      if (reads_) reads_->wait();
      if (writes_) writes_->wait();
    } catch (const std::exception&) {
    }
  }

  Tier tier() const override { return Tier::kNvme; }

  void step(const GradientPieces& grads, const StepArgs& args, ParamShard& shard) override {
    const GradientPiece& host = host_gradients(grads);
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      SwappedSubGroup& sg = sub_groups_[i];
      const auto g = host.grads.narrow(0, sg.spec.range.offset - host.offset, sg.spec.range.numel);
      if (!sg.swapped) {
        OptimizerBuffers in_memory;
        in_memory.master = sg.master;
        in_memory.state = sg.state;
        step_buffers(sg, std::move(in_memory), g, args, shard);
        continue;
      }
      Resident current = swap_in(static_cast<int>(i));
      if (options_.swap.pipeline_read) prefetch_after(static_cast<int>(i));
      step_buffers(sg, views(current), g, args, shard);
      swap_out(std::move(current));
    }
    complete_write();
    shard.flush();
  }

  void save_into(torch::Tensor& master, std::map<std::string, torch::Tensor>& state) override {
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      const auto& sg = sub_groups_[i];
      const auto at = sg.spec.range.offset, n = sg.spec.range.numel;
      if (!sg.swapped) {
        master.narrow(0, at, n).copy_(sg.master);
        for (const auto& [name, t] : sg.state) state.at(name).narrow(0, at, n).copy_(t);
        continue;
      }
      Resident r = swap_in(static_cast<int>(i));
      const auto v = views(r);
      master.narrow(0, at, n).copy_(v.master);
      for (const auto& [name, t] : v.state) state.at(name).narrow(0, at, n).copy_(t);
      release(r);
    }
  }

  void load_from(const torch::Tensor& master, const std::map<std::string, torch::Tensor>& state,
                 ParamShard& shard) override {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      auto& sg = sub_groups_[i];
      const auto at = sg.spec.range.offset, n = sg.spec.range.numel;
      if (!sg.swapped) {
        sg.master.copy_(master.narrow(0, at, n));
        for (auto& [name, t] : sg.state) t.copy_(state.at(name).narrow(0, at, n));
      } else {
        Resident r = acquire(static_cast<int>(i));
        auto v = views(r);
        v.master.copy_(master.narrow(0, at, n));
        for (auto& [name, t] : v.state) t.copy_(state.at(name).narrow(0, at, n));
        write_and_wait(r, r.buffers.size());
      }
      shard.write(at, master.narrow(0, at, n), /*non_blocking=*/false);
    }
    shard.flush();
  }

  void refresh_master(ParamShard& shard) override {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      auto& sg = sub_groups_[i];
      const auto values = shard.read(sg.spec.range.offset, sg.spec.range.numel);
      if (!sg.swapped) {
        sg.master.copy_(values);
        continue;
      }
      Resident r = acquire(static_cast<int>(i));
      pool_.buffer(r.buffers[0]).narrow(0, 0, sg.spec.range.numel).copy_(values);
      write_and_wait(r, 1);  // only the master changed
    }
  }

  void collect_memory(std::vector<torch::Tensor>& out) const override {
    pool_.collect(out);
    out.push_back(staging_);
    for (const auto& sg : sub_groups_) {
      out.push_back(sg.master);
      for (const auto& [name, t] : sg.state) out.push_back(t);
    }
  }

  std::int64_t state_bytes() const override {
    return range_.numel * 4 * static_cast<std::int64_t>(layout_.size());
  }

  std::string describe() const override {
    int swapped = 0;
    std::int64_t swapped_elements = 0;
    for (const auto& sg : sub_groups_)
      if (sg.swapped) {
        ++swapped;
        swapped_elements += sg.spec.range.numel;
      }
    char text[512];
    std::snprintf(text, sizeof text,
                  "the fp32 master and %s state of %d of %zu sub-group(s) (%.1f MiB) are swapped to %s (%s, %s, %s); "
                  "%d pinned buffer(s) of %.1f MiB, pipeline_read %s, pipeline_write %s; %.1f MiB in CPU memory",
                  settings_.type_name.c_str(), swapped, sub_groups_.size(),
                  static_cast<double>(swapped_elements) * 4.0 * static_cast<double>(1 + layout_.size()) / 1048576.0,
                  folder_.path().c_str(), folder_.filesystem().c_str(),
                  folder_.direct_io() ? "O_DIRECT" : "page cache: no O_DIRECT there",
                  aio::io_backend_name(options_.aio.backend), pool_.count(),
                  static_cast<double>(pool_.numel()) * 4.0 / 1048576.0, options_.swap.pipeline_read ? "on" : "off",
                  options_.swap.pipeline_write ? "on" : "off", static_cast<double>(memory_bytes()) / 1048576.0);
    return text;
  }

 private:
  // DeepSpeed asserts when its swapper runs out of buffers mid-step; the count it needs is known
  // up front: the master and each state of a sub-group, once more for a read ahead, once more for
  // a write behind.
  void check_buffer_count() const {
    const int per_sub_group = 1 + static_cast<int>(layout_.size());
    const int needed = per_sub_group * (1 + (options_.swap.pipeline_read ? 1 : 0) + (options_.swap.pipeline_write ? 1 : 0));
    if (options_.swap.buffer_count < needed)
      throw std::invalid_argument(
          "zero_optimization.offload_optimizer.buffer_count is " + std::to_string(options_.swap.buffer_count) +
          ", but swapping " + settings_.type_name + "'s state (the fp32 master and " + std::to_string(layout_.size()) +
          " state tensor(s) per sub-group" + (options_.swap.pipeline_read ? ", a read ahead" : "") +
          (options_.swap.pipeline_write ? ", a write behind" : "") + ") needs " + std::to_string(needed) +
          " buffers (DeepSpeed: ran out of swap buffers, try increasing 'buffer_count'); set buffer_count to " +
          std::to_string(needed));
  }

  // Every swapped sub-group's files, with the master from the shard's weights and each state at
  // its initial value; the small ones in (pinned) host memory.
  void initialize(ParamShard& shard) {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < sub_groups_.size(); ++i) {
      auto& sg = sub_groups_[i];
      const auto n = sg.spec.range.numel;
      const auto weights = shard.read(sg.spec.range.offset, n);
      if (!sg.swapped) {
        sg.master = aligned_host_tensor(n, torch::kFloat32, options_.pinned).narrow(0, 0, n);
        sg.master.copy_(weights);
        for (const auto& [name, initial] : layout_)
          sg.state[name] = aligned_host_tensor(n, torch::kFloat32, options_.pinned).narrow(0, 0, n).fill_(initial);
        continue;
      }
      create_files(sg);
      Resident r = acquire(static_cast<int>(i));
      pool_.buffer(r.buffers[0]).narrow(0, 0, n).copy_(weights);
      for (std::size_t s = 0; s < layout_.size(); ++s) pool_.buffer(r.buffers[s + 1]).fill_(layout_[s].second);
      write_and_wait(r, r.buffers.size());
    }
  }

  // DeepSpeed's names: "<first>_<last>.tensor.swp" for the fp32 partition of parameters first..last
  // and "<state>-<first>_<last>.tensor.swp" for each optimizer state.
  void create_files(SwappedSubGroup& sg) {
    const std::string id = std::to_string(sg.spec.first_slot) + "_" + std::to_string(sg.spec.last_slot);
    const std::int64_t bytes = sg.spec.range.numel * 4;
    sg.files.emplace_back(folder_.file(id + ".tensor.swp"), bytes, folder_.direct_io(), options_.aio.owner);
    for (const auto& [name, initial] : layout_)
      sg.files.emplace_back(folder_.file(name + "-" + id + ".tensor.swp"), bytes, folder_.direct_io(),
                            options_.aio.owner);
  }

  const GradientPiece& host_gradients(const GradientPieces& grads) const {
    for (const auto& piece : grads)
      if (piece.offset <= range_.offset && piece.offset + piece.grads.numel() >= range_.offset + range_.numel &&
          piece.grads.is_cpu())
        return piece;
    TORCH_CHECK(false, "NVMe optimizer: the gradients of [", range_.offset, ", ", range_.offset + range_.numel,
                ") are not in one host piece");
  }

  Resident acquire(int sub_group) {
    Resident r;
    r.sub_group = sub_group;
    for (std::size_t k = 0; k < 1 + layout_.size(); ++k) {
      auto b = pool_.acquire();
      if (!b) {  // the write behind still holds buffers: finish it first
        complete_write();
        b = pool_.acquire();
      }
      TORCH_CHECK(b, "NVMe optimizer: out of swap buffers (offload_optimizer.buffer_count)");
      r.buffers.push_back(*b);
    }
    return r;
  }

  void release(const Resident& r) {
    for (int b : r.buffers) pool_.release(b, torch::kCPU);
  }

  void start_read(const Resident& r) {
    const auto& sg = sub_groups_[static_cast<std::size_t>(r.sub_group)];
    for (std::size_t k = 0; k < r.buffers.size(); ++k)
      reads_->async_pread(sg.files[k].target(), pool_.buffer(r.buffers[k]).data_ptr(),
                          static_cast<std::size_t>(sg.files[k].size()), 0);
  }

  // The sub-group's state in pinned buffers: the read started ahead of time, or one now.
  Resident swap_in(int sub_group) {
    if (!prefetched_ || prefetched_->sub_group != sub_group) {
      Resident r = acquire(sub_group);
      start_read(r);
      reads_->wait();
      return r;
    }
    Resident r = std::move(*prefetched_);
    prefetched_.reset();
    reads_->wait();
    return r;
  }

  void prefetch_after(int sub_group) {
    for (std::size_t j = static_cast<std::size_t>(sub_group) + 1; j < sub_groups_.size(); ++j) {
      if (!sub_groups_[j].swapped) continue;
      prefetched_ = acquire(static_cast<int>(j));
      start_read(*prefetched_);
      return;
    }
  }

  void swap_out(Resident r) {
    complete_write();
    start_write(r, r.buffers.size());
    writing_ = std::move(r);
    if (!options_.swap.pipeline_write) complete_write();
  }

  void start_write(const Resident& r, std::size_t files) {
    const auto& sg = sub_groups_[static_cast<std::size_t>(r.sub_group)];
    for (std::size_t k = 0; k < files; ++k)
      writes_->async_pwrite(sg.files[k].target(), pool_.buffer(r.buffers[k]).data_ptr(),
                            static_cast<std::size_t>(sg.files[k].size()), 0);
  }

  void write_and_wait(const Resident& r, std::size_t files) {
    complete_write();
    start_write(r, files);
    writes_->wait();
    release(r);
  }

  void complete_write() {
    if (!writing_) return;
    Resident r = std::move(*writing_);
    writing_.reset();
    writes_->wait();  // throws the failed write's IoError; the buffers go back either way
    release(r);
  }

  OptimizerBuffers views(const Resident& r) {
    const auto n = sub_groups_[static_cast<std::size_t>(r.sub_group)].spec.range.numel;
    OptimizerBuffers b;
    b.master = pool_.buffer(r.buffers[0]).narrow(0, 0, n);
    for (std::size_t s = 0; s < layout_.size(); ++s)
      b.state[layout_[s].first] = pool_.buffer(r.buffers[s + 1]).narrow(0, 0, n);
    return b;
  }

  // The CPU kernels over one sub-group, then its 16-bit weights into the shard (in place when the
  // shard is in host memory; through the staging buffer otherwise).
  void step_buffers(const SwappedSubGroup& sg, OptimizerBuffers buffers, const torch::Tensor& grads,
                    const StepArgs& args, ParamShard& shard) {
    const auto at = sg.spec.range.offset, n = sg.spec.range.numel;
    torch::Tensor in_place;
    if (options_.model_dtype != torch::kFloat32) {
      in_place = shard.writable_view(at, n, torch::kCPU);
      buffers.model_copy = in_place.defined() ? in_place : staging_.narrow(0, 0, n);
    }
    buffers.segments = sg.spec.segments.empty() ? std::vector<TensorSegment>{{0, n}} : sg.spec.segments;
    apply_optimizer_step(settings_, buffers, {{0, grads}}, args, OptimizerBackend::kKernels, lamb_workspace_);
    if (in_place.defined()) return;
    // A blocking copy, as DeepSpeed's: the staging buffer is reused by the next sub-group.
    shard.write(at, buffers.model_copy.defined() ? buffers.model_copy : buffers.master, /*non_blocking=*/false);
  }

  OptimizerSettings settings_;
  NvmeOptimizerOptions options_;
  std::vector<std::pair<std::string, double>> layout_;
  aio::SwapFolder folder_;               ///< before the files: removed after them
  std::vector<SwappedSubGroup> sub_groups_;
  HostBufferPool pool_{0, 0, torch::kFloat32, false};
  torch::Tensor staging_;
  std::unique_ptr<aio::AioHandle> reads_, writes_;
  std::optional<Resident> prefetched_, writing_;
  torch::Tensor lamb_workspace_;
};

}  // namespace

std::unique_ptr<OptimizerStore> make_nvme_optimizer_store(const OptimizerSettings& settings, ShardRange range,
                                                          std::vector<SubGroupSpec> sub_groups,
                                                          const NvmeOptimizerOptions& options, ParamShard& shard) {
  return std::make_unique<NvmeOptimizerStore>(settings, range, std::move(sub_groups), options, shard);
}

}  // namespace shardscope::engine
