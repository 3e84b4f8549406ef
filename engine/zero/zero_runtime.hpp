#pragma once
// ZeRO's data movement for one rank, on flat buffers laid out by PartitionLayout:
//  stage 0  full 16-bit weights and gradients; gradient buckets all-reduced as backward fills them;
//  stage 1  full gradients, reduce-scattered bucket by bucket at the accumulation boundary into this
//           rank's shard; fp32 master and optimizer state for the shard only; the updated 16-bit
//           shard all-gathered back into the full weights after the step;
//  stage 2  as stage 1, but gradients never exist whole: each parameter's gradient is copied into
//           its bucket as autograd produces it and the bucket is reduce-scattered into the shard
//           (every micro-step), then freed;
//  stage 3  as stage 2, and the weights exist whole only while a layer runs: gathered before its
//           forward (with prefetch), released after, gathered again before its backward.
// Collectives are issued in the same order on every rank: buckets launch in descending order even
// when autograd finishes them out of order.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/communicator.hpp"
#include "engine/flat_parameters.hpp"
#include "engine/models/trainable_model.hpp"
#include "engine/placement/param_shard.hpp"
#include "engine/zero/partition_layout.hpp"
#include "profiler/nvtx_ranges.hpp"

namespace shardscope::engine {

struct ZeroSettings {
  int stage = 0;
  std::int64_t reduce_bucket_size = 500'000'000;        ///< elements per gradient bucket (stages 0-2)
  bool overlap_comm = false;                            ///< reduce while backward runs (else after each bucket)
  bool contiguous_gradients = true;                     ///< copy gradients into the bucket as they arrive
  std::int64_t prefetch_bucket_size = 50'000'000;       ///< stage 3: elements gathered ahead
  std::int64_t param_persistence_threshold = 100'000;   ///< stage 3: layers this small stay gathered
  std::int64_t max_live_parameters = 1'000'000'000;     ///< stage 3: gathered elements at most
  std::int64_t max_reuse_distance = 1'000'000'000;      ///< stage 3: keep if reused within this many elements
  /// offload_optimizer (CPU or NVMe): the optimizer reads the gradients from host memory, so
  /// stage 1 keeps no fp32 copy of its reduced shard on the device.
  bool offload_optimizer = false;
  /// Where this rank's 16-bit shard lives (the placement plan's param_shard): on the device; in
  /// host memory with offload_param "cpu" (pinned with `pin_params` on a GPU), each gather copying
  /// its chunk to the device first; on NVMe with offload_param "nvme", each chunk read back ahead
  /// of its gather.
  Tier param_tier = Tier::kDevice;
  bool pin_params = true;
  std::optional<ParamSwapPlan> param_swap;  ///< param_tier kNvme
  aio::AioSettings aio;                     ///< param_tier kNvme: the aio block, backend and owner
};

/// What the stage-3 gatherer did, for tests and the profiler.
struct GatherStats {
  std::int64_t gathers = 0, prefetches = 0, releases = 0;
  std::int64_t live_numel = 0, peak_live_numel = 0;
};

class ZeroRuntime {
 public:
  /// Lays out `model`'s trainable parameters (moved to `device` and `dtype`) for `settings.stage`;
  /// `comm` may be null for one rank. At stage 3 the model's parameters are released at once.
  ZeroRuntime(TrainableModel& model, torch::Dtype dtype, torch::Device device, std::shared_ptr<Communicator> comm,
              const ZeroSettings& settings);
  ~ZeroRuntime();

  int stage() const { return settings_.stage; }
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int world_size() const { return comm_ ? comm_->world_size() : 1; }
  const PartitionLayout& layout() const { return *layout_; }
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  /// Elements of the model's parameters (without padding).
  std::int64_t parameter_count() const { return layout_->numel(); }
  /// Whether gradients, master and optimizer state cover only this rank's shard (stage >= 1).
  bool sharded() const { return settings_.stage >= 1; }

  /// The weights the optimizer updates: the full 16-bit (or fp32) flat buffer at stage 0; at
  /// stages 1-3 this rank's shard, 16-bit until adopt_master() makes it the fp32 master (on the
  /// host with offload_param "cpu"; undefined with "nvme", where only shard() reaches it).
  const torch::Tensor& optimizer_params() const { return shard_->resident(); }
  /// The shard the gathers read and the optimizer's update goes to, wherever it lives.
  ParamShard& shard() { return *shard_; }
  const ParamShard& shard() const { return *shard_; }
  /// Stages 1-3: makes `master` (this rank's fp32 shard) the source of every gather, dropping the
  /// 16-bit shard; chunks are cast to the model dtype as they are gathered.
  void adopt_master(torch::Tensor master);
  /// The reduced gradients the optimizer reads, covering optimizer_params(); whole after
  /// end_backward() of a reducing micro-step. Not yet divided by the world size.
  ///  stage 0-1  one piece: fp32, except at stage 0 in bf16 on a GPU, where it is the model's bf16
  ///             gradient buffer itself, and at stage 1 with offload_optimizer, where it is the
  ///             16-bit reduced shard (converted as it is copied to the host);
  ///  stage 2-3  one fp32 piece per group, allocated when the group's first reduce-scatter lands
  ///             and freed by zero_grads(), so no gradient memory exists during the forward and
  ///             it grows during the backward as activations are freed (as FSDP2's sharded
  ///             gradients do). Pieces of groups not yet reduced are left out.
  GradientPieces gradient_pieces() const;
  /// offload_optimizer: the reduced gradients of shard elements [offset, shard end) go to `host`
  /// (fp32, pinned). At stages 2-3 `host` holds their running sum from the window's first
  /// micro-step on, as DeepSpeed's stage 3 does: each group's chunk goes there as soon as its
  /// reduce-scatter lands (a later micro-step adds to it on the device and sends the sum back),
  /// overlapping the rest of the backward, and no device chunk stays. Stage 1 copies its reduced
  /// shard when the boundary's backward ends. gradient_pieces() then ends with that host piece,
  /// valid once the device stream is synchronized.
  void offload_gradients_to(torch::Tensor host, std::int64_t offset);
  /// Stage 0-1: the full flat gradient buffer autograd accumulates into (undefined at 2-3).
  torch::Tensor full_grads() const;
  /// Stage 0-2: the full flat weights (undefined at stage 3).
  torch::Tensor full_params() const;

  /// Before backward: whether this micro-step's gradients are reduced across ranks.
  void begin_backward(bool reduce);
  /// After backward: issues what is left, waits for every reduction; gradient_pieces() is then whole.
  void end_backward();
  /// The 16-bit buffer the optimizer kernel may write its updated weights into, element for
  /// element with optimizer_params(), so that no gather or cast has to follow: the full weights at
  /// stage 0, and on one rank the full weights at stages 1-2 (they are the shard) and at stage 3
  /// the 16-bit copy its gathers bind to. Undefined for fp32 training, with offload, and at
  /// stages 1-3 on several ranks (those gather from the fp32 master, cast chunk by chunk).
  torch::Tensor kernel_weight_copy() const;
  /// After the optimizer updated optimizer_params(): makes the 16-bit weights follow it, unless
  /// `weights_written` (the kernel wrote them into kernel_weight_copy()): all-gather (stages 1-2),
  /// refresh the 16-bit copy (stage 3 on one rank); at stage 3 the gathered layers are released.
  void after_optimizer_step(bool weights_written = false);
  void zero_grads();

  /// Stage 3: makes every parameter whole (or releases them all again); GatheredParameters uses it.
  void gather_all();
  void release_all();
  /// Stage 3: writes the (possibly modified) whole weights of rank `source` back into every rank's shard.
  void scatter_from_gathered(int source_rank);
  const GatherStats& gather_stats() const { return gather_stats_; }
  /// Whether parameter `slot` holds its whole data right now (stage 3; always true otherwise).
  bool is_available(int slot) const;

  /// Called with the name and milliseconds of every stage-3 gather wait (the profiler's timers).
  void set_gather_timer(std::function<void(const std::string&, double)> timer) { gather_timer_ = std::move(timer); }

 private:
  class GradientHook;
  class LayerGatherHooks;
  enum class GatherStatus { kReleased, kInFlight, kAvailable };
  struct GroupState {
    int pending = 0;      ///< gradients of the group not yet produced in this backward
    bool ready = false;   ///< all produced (or backward ended): may be reduced
    torch::Tensor staging;                   ///< stages 2-3: the group's gradients, contiguous
    std::map<int, torch::Tensor> pieces;     ///< stages 2-3 without contiguous_gradients
    GatherStatus status = GatherStatus::kAvailable;  ///< stage 3
    torch::Tensor buffer;                    ///< stage 3: the gathered weights
    CommHandle gather;
  };
  struct InFlight {
    CommHandle handle;
    std::function<void()> finish;
    std::int64_t staged_numel = 0;
    int group = -1;
  };

  void build_layout(TrainableModel& model);
  void install_gradient_hooks();
  void on_gradient_ready(int slot);
  /// Stages 0-1, the first backward of a window: autograd's own gradient tensor is copied into the
  /// slot's view of the flat buffer, which becomes the .grad later micro-steps accumulate into.
  void adopt_fresh_gradient(int slot);
  /// Stages 0-1: zeroes (and binds) the flat gradients of slots the first backward gave none.
  void settle_fresh_gradients();
  /// Stages 2-3: zeroes what of group `g`'s staging no gradient wrote (unused slots, padding).
  void zero_unwritten_staging(int g);
  /// Stages 2-3: the group's reduced chunk joins this window's gradients (kept 16-bit when exact).
  void accumulate_chunk(int g, const torch::Tensor& reduced);
  void accumulate_chunk_on_host(int g, const torch::Tensor& reduced);
  void accumulate_on_side_stream(torch::Tensor& host, const torch::Tensor& reduced, bool add);
  void launch_ready_groups();
  void launch_group(int group);
  torch::Tensor flatten_pieces(int group);
  void wait_one();
  void wait_for_reductions(std::size_t keep_in_flight);
  /// This rank's chunk of group `g` in the model dtype on the device (cast from the fp32 master
  /// when adopted, copied from host memory, or read back from NVMe).
  torch::Tensor shard_chunk(int group) const;
  /// The 16-bit shard where settings_.param_tier puts it (stages 1-3).
  std::unique_ptr<ParamShard> make_shard() const;
  // stage 3 (zero_gather.cpp)
  void install_layer_hooks();
  void ensure_available(int group);
  void prefetch(std::size_t layer_index, bool backward);
  /// `private_copy`: a buffer of its own even where a view of weights16_ would do.
  void issue_gather(int group, bool prefetch, bool private_copy = false);
  void bind(int group);
  void release(int group, bool force);
  /// SHARDSCOPE_TRACE_ZERO_MEMORY=1: one line per gather, release and reduction with the
  /// allocator's bytes, to see where a stage-3 step's memory goes (docs/estimator.md).
  void trace_memory(const char* event, int group) const;
  /// offload_param "nvme": starts the reads of the groups after `layer_index` (before it in backward).
  void read_ahead(std::size_t layer_index, bool backward);
  void before_layer_forward(std::size_t layer_index);
  torch::Tensor after_layer_forward(std::size_t layer_index, torch::Tensor output);
  std::int64_t reuse_distance_after_forward(std::size_t layer_index) const;

  TrainableModel& model_;
  torch::Dtype dtype_;
  torch::Device device_;
  std::shared_ptr<Communicator> comm_;
  ZeroSettings settings_;
  std::vector<ParameterSlot> slots_;
  std::unique_ptr<PartitionLayout> layout_;
  std::unique_ptr<FlatParameters> flat_;  ///< stages 0-2
  std::unique_ptr<ParamShard> shard_;
  torch::Tensor fp32_grads_, reduced_shard_;  ///< stages 0-1
  std::vector<torch::Tensor> grad_chunks_;    ///< stages 2-3: per group, this rank's reduced chunk (fp32, or bf16 until a second micro-step adds to it)
  std::vector<char> got_grad_;                ///< per slot: a gradient arrived (in this window at 0-1, this backward at 2-3)
  bool fresh_grads_ = false;                  ///< stages 0-1: the .grads are released; the next backward writes fresh ones
  torch::Tensor weights16_;                   ///< stage 3 on one rank: the persistent 16-bit weights gathers bind to
  torch::Tensor host_grads_;                  ///< offload: where the boundary's gradients of the offloaded range go
  std::int64_t host_grads_offset_ = 0;        ///< the shard element host_grads_ starts at
  int first_host_group_ = 0;                  ///< the first group whose gradients go to host_grads_
  std::vector<char> host_chunk_written_;      ///< per group: host_grads_ holds this window's sum already
  std::optional<c10::Stream> offload_stream_;  ///< offload on a GPU: where the host sums' copies run
  bool boundary_ = false;                     ///< this backward ends an accumulation window
  bool grads_on_host_ = false;                ///< the offloaded range's gradients of this window are in host_grads_
  std::vector<GroupState> groups_;
  bool reducing_ = false;
  int next_launch_ = -1;  ///< groups launch in descending order; the next one allowed to go
  std::deque<InFlight> in_flight_;
  std::int64_t staged_numel_ = 0;

  // stage 3
  std::shared_ptr<LayerGatherHooks> layer_hooks_;
  std::vector<int> layer_groups_;          ///< layers() index -> group (-1: no parameters)
  std::vector<std::int64_t> layer_numels_;
  torch::Tensor empty_;                    ///< what a released parameter holds
  std::vector<profiler::NvtxName> nvtx_names_;  ///< per group: gather, release
  GatherStats gather_stats_;
  std::function<void(const std::string&, double)> gather_timer_;
};

}  // namespace shardscope::engine
