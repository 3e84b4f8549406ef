#pragma once
// The training engine with DeepSpeed's contract: built from a model and a resolved config, then
// forward (loss), backward(loss), step() per micro-batch. step() acts only at the gradient
// accumulation boundary, where it unscales and checks for overflow, clips, runs the optimizer,
// steps the scheduler and zeroes the gradients; backward scales the loss by 1/accumulation steps
// (and by the fp16 loss scale) as DeepSpeed's engine does.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "configs/config_model.hpp"
#include "configs/deepspeed_version.hpp"
#include "engine/communicator.hpp"
#include "engine/data/data_loader.hpp"
#include "engine/flat_optimizer.hpp"
#include "engine/flat_parameters.hpp"
#include "engine/loss_scaler.hpp"
#include "engine/lr_schedules.hpp"
#include "engine/models/trainable_model.hpp"
#include "engine/placement/placement_plan.hpp"
#include "engine/placement/shard_optimizer.hpp"
#include "engine/zero/zero_runtime.hpp"
#include "profiler/comms_logger.hpp"
#include "profiler/step_timers.hpp"
#include "sessions/events.hpp"

namespace shardscope::checkpoints {
struct SaveDescription;
struct FileDigest;
class DeepSpeedCheckpoint;
}  // namespace shardscope::checkpoints

namespace shardscope::engine {

struct EngineOptions {
  torch::Device device = torch::kCPU;
  int rank = 0;
  int world_size = 1;  ///< data-parallel ranks; taken from the communicator when there is one
  /// The data-parallel group; null trains one rank.
  std::shared_ptr<Communicator> communicator;
  /// Where DeepSpeed-style log lines go (progress, overflow, timers); default: stdout on rank 0.
  std::function<void(const std::string&)> log;
  /// The config as the user wrote it (JSON text): checkpoints keep it as DeepSpeed's ds_config.
  std::string config_json;
  /// Checkpoints carry DeepSpeed's own LossScaler objects, which DeepSpeed's ZeRO-3 load needs
  /// and torch.load(weights_only=True) refuses (docs/checkpoints.md, "The loss scaler").
  bool checkpoint_loss_scaler_objects = false;
  /// The DeepSpeed release whose checkpoint layout saves follow (train's --deepspeed-version).
  configs::DeepSpeedVersion checkpoint_release = configs::DeepSpeedVersion::k0_19_7;
};

/// What one call of step() did.
struct StepOutcome {
  bool boundary = false;  ///< false: a micro-step inside an accumulation window, nothing ran
  bool skipped = false;   ///< overflow: the optimizer step was skipped
  double lr = 0;          ///< the learning rate the step used
  double loss_scale = 1;  ///< the scale in force during this step's backward
  std::optional<double> grad_norm;  ///< global L2 norm before clipping (unscaled)
  std::optional<std::string> overflow_message;
};

/// Wall-clock milliseconds of the phases of the last boundary (sums over its micro-steps),
/// DeepSpeed's wall_clock_breakdown timers; gather_ms is stage 3's wait for gathered weights.
struct PhaseTimes {
  double forward_ms = 0, backward_ms = 0, backward_inner_ms = 0, backward_allreduce_ms = 0, step_ms = 0;
  double gather_ms = 0;
};

/// The dtype of the model's parameters under a config's precision (fp16, bf16 or fp32).
torch::Dtype model_dtype_for(configs::PrecisionMode mode);

class Engine {
 public:
  Engine(std::shared_ptr<TrainableModel> model, const configs::ResolvedConfig& config,
         EngineOptions options = {});
  ~Engine();

  /// Forward pass and loss of one micro-batch (under torch_autocast when the config asks).
  torch::Tensor forward(const Batch& batch);
  /// Backward of `loss` scaled by 1/gradient_accumulation_steps and the fp16 loss scale.
  void backward(const torch::Tensor& loss);
  /// Ends a micro-step; at the accumulation boundary runs the optimizer step (see file comment).
  StepOutcome step();
  /// True when the next step() call ends an accumulation window.
  bool is_gradient_accumulation_boundary() const;

  /// While alive, gradients accumulate without cross-rank reduction (DeepSpeed's no_sync());
  /// stepping at a boundary inside it is an error, as in DeepSpeed.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(Engine& engine);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    Engine& engine_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  std::int64_t train_batch_size() const { return config_.batch.train_batch_size; }
  std::int64_t train_micro_batch_size_per_gpu() const { return config_.batch.train_micro_batch_size_per_gpu; }
  std::int64_t gradient_accumulation_steps() const { return config_.batch.gradient_accumulation_steps; }
  std::int64_t global_steps() const { return global_steps_; }
  std::int64_t global_samples() const { return global_samples_; }
  std::int64_t micro_steps() const { return micro_steps_; }
  std::int64_t skipped_steps() const { return skipped_steps_; }
  double current_lr() const { return scheduler_->current_lr(); }
  double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
  const PhaseTimes& last_phase_times() const { return last_times_; }

  TrainableModel& module() { return *model_; }
  /// The optimizer of this rank's shard, wherever its state lives (device, host memory, NVMe).
  ShardOptimizer& optimizer() { return *optimizer_; }
  const ShardOptimizer& optimizer() const { return *optimizer_; }
  /// Where each piece of this rank's model state lives: the one placement decision.
  const PlacementPlan& placement() const { return plan_; }
  LrSchedule& lr_scheduler() { return *scheduler_; }
  /// The ZeRO buffers and collectives of this rank (layout, shards, stage-3 gathering).
  const ZeroRuntime& zero() const { return *runtime_; }
  ZeroRuntime& zero() { return *runtime_; }
  /// Elements of the model's trainable parameters.
  std::int64_t parameter_count() const { return runtime_->parameter_count(); }
  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  Communicator* communicator() const { return options_.communicator.get(); }
  const configs::ResolvedConfig& config() const { return config_; }
  const EngineOptions& options() const { return options_; }
  /// fp32 master weights of this rank's shard (the model's own buffer in fp32 training at stage 0)
  /// where one tensor holds them; undefined with NVMe or partial offload (see optimizer_state()).
  torch::Tensor master_weights() const { return optimizer_->master(); }
  torch::Dtype model_dtype() const { return model_dtype_; }
  /// The loss scaler of fp16 training; null otherwise.
  LossScaler* loss_scaler() { return scaler_.get(); }

  /// Saves a checkpoint in DeepSpeed 0.19.7's layout under dir/tag (tag defaults to
  /// global_step<N>), then its manifest, then points dir/latest at it (collective);
  /// `client_state_json` comes back from load_checkpoint.
  void save_checkpoint(const std::string& dir, std::optional<std::string> tag = std::nullopt,
                       const std::string& client_state_json = "{}");
  /// Loads dir/tag (tag defaults to the content of dir/latest), written by ShardScope or by
  /// DeepSpeed at any world size and stage (collective); returns the client state ("" for a
  /// checkpoint DeepSpeed wrote). Throws checkpoints::CheckpointError naming the file or entry
  /// that cannot be used, std::runtime_error when the model does not match.
  std::string load_checkpoint(const std::string& dir, std::optional<std::string> tag = std::nullopt);

  /// Counters restored by load_checkpoint (also used by the checkpoint code).
  void restore_counters(std::int64_t global_steps, std::int64_t global_samples, std::int64_t skipped_steps);
  /// This rank's fp32 master and optimizer state in host memory, read back from NVMe where they
  /// are swapped: what a checkpoint saves.
  HostOptimizerState optimizer_state() const { return optimizer_->materialize(); }
  /// Puts loaded optimizer state back where the placement keeps it (device, host, NVMe) and the
  /// 16-bit weights from its master (DeepSpeed's load_from_fp32_weights).
  void place_optimizer_state(const HostOptimizerState& state);

  /// The comms logger of the config's comms_logger block (null without one or with one rank).
  const profiler::CommsLogger* comms_logger() const { return comms_logger_.get(); }
  /// The collectives recorded since the last call (comms_logger on), for the session.
  std::vector<sessions::CommRecord> take_comm_records();

  /// After the 16-bit weights changed outside the optimizer (GatheredParameters with a modifier
  /// rank, a checkpoint load): copies them into the fp32 master.
  void refresh_master_from_weights();

 private:
  friend class NoSyncGuard;
  // Construction, along its seams.
  /// Rank and world size from the communicator; throws when it disagrees with the options.
  void adopt_communicator();
  /// Throws std::invalid_argument naming the key of what the engine cannot run.
  void refuse_what_the_engine_cannot_run(const OptimizerSettings& settings) const;
  /// With an NVMe tier: the I/O backend that works here and this rank as the owner of the I/O.
  void choose_io_backend();
  /// What the shard optimizer needs besides the plan.
  ShardOptimizerOptions shard_optimizer_options() const;
  /// The tensors Lamb treats as whole (only possible at stage 0 or on one rank).
  std::vector<TensorSegment> optimizer_segments() const;
  /// offload_optimizer on a GPU: this rank's share of the host's cores for the CPU step.
  void share_cores_for_the_cpu_step() const;
  /// The start lines of offload: what is in host memory or on NVMe and how many threads step it.
  void log_placement(const OptimizerSettings& settings) const;
  void log(const std::string& line) const;
  void memory_report(const char* where) const;
  void timer_start(const char* name);
  void timer_stop(const char* name);
  void install_comms_logger();
  /// Unscales the gradients (loss scale and world size) and returns their global squared L2 norm,
  /// non-finite when any gradient is: host pieces are scaled in place, device ones at the clip.
  double unscaled_squared_norm(const GradientPieces& pieces);
  /// Clips to gradient_clipping by the norm of `squares`; returns the norm.
  double clip_gradients(const GradientPieces& pieces, double squares);
  // checkpoints (engine_checkpoint.cpp): one function per piece; `held` is this rank's optimizer
  // state in host memory, wherever the placement keeps it
  checkpoints::SaveDescription checkpoint_description(const std::string& client_state_json) const;
  checkpoints::FileDigest save_model_states(const std::string& folder, const checkpoints::SaveDescription& d,
                                            const HostOptimizerState& held);
  checkpoints::FileDigest save_optimizer_state(const std::string& folder, const checkpoints::SaveDescription& d,
                                               const HostOptimizerState& host_state);
  void load_optimizer_state(const checkpoints::DeepSpeedCheckpoint& checkpoint);
  void zero_grad();

  std::shared_ptr<TrainableModel> model_;
  configs::ResolvedConfig config_;
  EngineOptions options_;
  torch::Dtype model_dtype_ = torch::kFloat32;
  std::optional<torch::Dtype> autocast_dtype_;
  PlacementPlan plan_;
  std::unique_ptr<ZeroRuntime> runtime_;
  std::unique_ptr<ShardOptimizer> optimizer_;
  std::unique_ptr<LrSchedule> scheduler_;
  std::unique_ptr<LossScaler> scaler_;
  std::int64_t micro_steps_ = 0, global_steps_ = 0, global_samples_ = 0, skipped_steps_ = 0;
  int no_sync_depth_ = 0;
  std::unique_ptr<profiler::StepTimers> timers_;        ///< wall_clock_breakdown: CUDA events or host clock
  std::unique_ptr<profiler::CommsLogger> comms_logger_;  ///< the comms_logger block
  std::vector<sessions::CommRecord> comm_records_;       ///< collectives not yet sent to the session
  std::mutex comm_mutex_;
  double device_unscale_ = 1.0;    ///< the unscale factor of the device pieces, folded in by clip_gradients()
  float device_grad_scale_ = 1.0f;  ///< device pieces: unscale x clip coefficient, applied by the optimizer kernels
  PhaseTimes current_times_, last_times_;
};

/// deepspeed.initialize's counterpart: the engine, its optimizer, the data loader (when training
/// data is given: micro-batches of the config's size, this rank's share) and the scheduler.
struct InitializeResult {
  std::shared_ptr<Engine> engine;
  ShardOptimizer* optimizer = nullptr;
  std::shared_ptr<ShardedDataLoader> training_dataloader;
  LrSchedule* lr_scheduler = nullptr;
};
InitializeResult initialize(std::shared_ptr<TrainableModel> model, const configs::ResolvedConfig& config,
                            EngineOptions options = {},
                            std::shared_ptr<const SampleDataset> training_data = nullptr);

/// The schedule the config's scheduler block asks for (constant lr without one); throws
/// std::invalid_argument naming the scheduler type or parameter the engine cannot run.
std::unique_ptr<LrSchedule> make_lr_schedule(const configs::SchedulerConfig& config, double optimizer_lr);

}  // namespace shardscope::engine
