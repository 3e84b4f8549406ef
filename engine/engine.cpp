#include "engine/engine.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <ATen/autocast_mode.h>

#ifdef SHARDSCOPE_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "kernels/cpu_features.hpp"
#include "kernels/cpu_norm.hpp"
#include "kernels/cpu_unscale.hpp"
#include "profiler/comm_bandwidth.hpp"
#include "profiler/nvtx_ranges.hpp"

namespace shardscope::engine {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

torch::Dtype dtype_for(configs::PrecisionMode mode) {
  switch (mode) {
    case configs::PrecisionMode::kFp16: return torch::kFloat16;
    case configs::PrecisionMode::kBf16: return torch::kBFloat16;
    case configs::PrecisionMode::kFp32: return torch::kFloat32;
  }
  return torch::kFloat32;
}

std::optional<torch::Dtype> autocast_dtype_for(const configs::TorchAutocastConfig& c, const torch::Device& d) {
  if (!c.enabled) return std::nullopt;
  if (!c.dtype) return d.is_cuda() ? torch::kFloat16 : torch::kBFloat16;  // torch.autocast's defaults
  const std::string& t = *c.dtype;
  if (t == "torch.bfloat16" || t == "bfloat16" || t == "bf16") return torch::kBFloat16;
  if (t == "torch.float16" || t == "float16" || t == "fp16" || t == "torch.half") return torch::kFloat16;
  throw std::invalid_argument("torch_autocast.dtype \"" + t + "\" is not torch.bfloat16 or torch.float16");
}

// RAII: autocast on for one forward, as `with torch.autocast(device_type, dtype)` does.
class AutocastScope {
 public:
  AutocastScope(const torch::Device& device, std::optional<torch::Dtype> dtype)
      : type_(device.type()), active_(dtype.has_value()) {
    if (!active_) return;
    previous_enabled_ = at::autocast::is_autocast_enabled(type_);
    previous_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, *dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!active_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, previous_enabled_);
    at::autocast::set_autocast_dtype(type_, previous_dtype_);
  }

 private:
  c10::DeviceType type_;
  bool active_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};


}  // namespace

std::unique_ptr<LrSchedule> make_lr_schedule(const configs::SchedulerConfig& c, double optimizer_lr) {
  using K = configs::SchedulerKind;
  const WarmupType warmup_type = c.warmup_type == "linear" ? WarmupType::kLinear : WarmupType::kLog;
  if (c.warmup_type != "linear" && c.warmup_type != "log")
    throw std::invalid_argument("scheduler.params.warmup_type must be \"log\" or \"linear\", got \"" +
                                c.warmup_type + "\"");
  const auto require_total = [&]() {
    if (!c.total_num_steps)
      throw std::invalid_argument(c.type + " needs scheduler.params.total_num_steps");
    return *c.total_num_steps;
  };
  switch (c.kind) {
    case K::kNone: return make_constant_lr(optimizer_lr);
    case K::kWarmupLR:
      return make_warmup_lr({c.warmup_min_lr, c.warmup_max_lr, c.warmup_num_steps, warmup_type}, optimizer_lr);
    case K::kWarmupDecayLR:
      return make_warmup_decay_lr(
          {{c.warmup_min_lr, c.warmup_max_lr, c.warmup_num_steps, warmup_type}, require_total()}, optimizer_lr);
    case K::kWarmupCosineLR:
      return make_warmup_cosine_lr({require_total(), c.warmup_min_ratio, c.warmup_num_steps, c.cos_min_ratio,
                                    warmup_type},
                                   optimizer_lr);
    case K::kOneCycle: {
      if (!c.cycle_min_lr || !c.cycle_max_lr)
        throw std::invalid_argument("OneCycle needs scheduler.params.cycle_min_lr and cycle_max_lr");
      OneCycleParams p;
      p.cycle_min_lr = *c.cycle_min_lr;
      p.cycle_max_lr = *c.cycle_max_lr;
      p.decay_lr_rate = c.decay_lr_rate;
      p.cycle_first_step_size = static_cast<double>(c.cycle_first_step_size);
      if (c.cycle_second_step_size) p.cycle_second_step_size = static_cast<double>(*c.cycle_second_step_size);
      p.decay_step_size = c.decay_step_size;
      p.cycle_momentum = c.cycle_momentum;
      p.cycle_min_mom = c.cycle_min_mom;
      p.cycle_max_mom = c.cycle_max_mom;
      p.decay_mom_rate = c.decay_mom_rate;
      return make_one_cycle(p);
    }
    case K::kLRRangeTest:
      return make_lr_range_test({c.lr_range_test_min_lr, static_cast<double>(c.lr_range_test_step_size),
                                 c.lr_range_test_step_rate, c.lr_range_test_staircase});
    case K::kTorch:
      break;
  }
  throw std::invalid_argument("scheduler \"" + c.type +
                              "\" is a torch scheduler the engine does not implement; use WarmupLR, "
                              "WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest");
}

ZeroSettings zero_settings_from_config(const configs::ZeroConfig& z) {
  ZeroSettings s;
  s.stage = z.stage;
  s.reduce_bucket_size = z.reduce_bucket_size;
  s.overlap_comm = z.overlap_comm;
  s.contiguous_gradients = z.contiguous_gradients;
  // DeepSpeed sets the prefetch bucket to 1 element (no prefetch) with stage3_allgather_sequential.
  s.prefetch_bucket_size = z.allgather_sequential ? 1 : z.prefetch_bucket_size;
  s.param_persistence_threshold = z.param_persistence_threshold;
  s.max_live_parameters = z.max_live_parameters;
  s.max_reuse_distance = z.max_reuse_distance;
  s.offload_optimizer = z.stage >= 1 && z.offload_optimizer.device == configs::OffloadDevice::kCpu;
  s.offload_param = z.stage == 3 && z.offload_param.device == configs::OffloadDevice::kCpu;
  s.pin_memory = z.offload_param.pin_memory;
  return s;
}

Engine::Engine(std::shared_ptr<TrainableModel> model, const configs::ResolvedConfig& config,
               EngineOptions options)
    : model_(std::move(model)), config_(config), options_(std::move(options)) {
  TORCH_CHECK(model_, "Engine needs a model");
  if (!config_.batch.resolved)
    throw std::invalid_argument("the config's batch keys are not resolved: give train_batch_size or "
                                "train_micro_batch_size_per_gpu (validate the config for details)");
  if (const auto& comm = options_.communicator) {
    options_.rank = comm->rank();
    options_.world_size = comm->world_size();
    if (comm->device() != options_.device)
      throw std::invalid_argument("the communicator's device " + comm->device().str() + " is not the engine's " +
                                  options_.device.str());
  } else if (options_.world_size != 1) {
    throw std::invalid_argument("world_size " + std::to_string(options_.world_size) + " needs a communicator");
  }
  model_dtype_ = dtype_for(config_.precision());
  autocast_dtype_ = autocast_dtype_for(config_.torch_autocast, options_.device);
  const OptimizerSettings settings = optimizer_settings_from_config(config_.optimizer);
  const int stage = config_.zero.stage;
  if (settings.algorithm == OptimizerAlgorithm::kLamb && stage >= 1 && options_.world_size > 1)
    throw std::invalid_argument("Lamb's trust ratio is computed per whole tensor, which ZeRO stage " +
                                std::to_string(stage) + " splits across ranks; use stage 0 with Lamb, or "
                                "Adam/AdamW/Lion/Adagrad/SGD with ZeRO");
  const auto& offload = config_.zero.offload_optimizer;
  if (offload.device == configs::OffloadDevice::kNvme)
    throw std::invalid_argument("zero_optimization.offload_optimizer.device is \"nvme\": ShardScope's engine offloads "
                                "the optimizer to CPU memory only; use \"device\": \"cpu\"");
  if (offload.device == configs::OffloadDevice::kCpu && offload.ratio < 1.0)
    throw std::invalid_argument("zero_optimization.offload_optimizer.ratio " + std::to_string(offload.ratio) +
                                ": partial offload is not run by ShardScope's engine; remove \"ratio\" to offload "
                                "the whole optimizer");
  if (config_.zero.offload_param.device == configs::OffloadDevice::kNvme && stage == 3)
    throw std::invalid_argument("zero_optimization.offload_param.device is \"nvme\": ShardScope's engine offloads "
                                "parameters to CPU memory only; use \"device\": \"cpu\"");
  const ZeroSettings zero_settings = zero_settings_from_config(config_.zero);
  offload_ = zero_settings.offload_optimizer;
  separate_shard_ = offload_ || zero_settings.offload_param;
  runtime_ = std::make_unique<ZeroRuntime>(*model_, model_dtype_, options_.device, options_.communicator,
                                           zero_settings);
  const torch::Tensor weights = runtime_->optimizer_params();
  if (offload_) {
    // ZeRO-Offload: the fp32 master and the optimizer state live in (pinned) host memory and the
    // CPU kernels step them; the device keeps this rank's 16-bit shard, which the runtime gathers.
    const bool pin = options_.device.is_cuda() && config_.zero.offload_optimizer.pin_memory;
    const auto host = torch::TensorOptions().device(torch::kCPU).pinned_memory(pin);
    master_ = torch::empty({weights.numel()}, host.dtype(torch::kFloat32));
    master_.copy_(weights);
    host_grads_ = torch::empty({weights.numel()}, host.dtype(torch::kFloat32));
    if (stage >= 2) runtime_->offload_gradients_to(host_grads_);  // chunk by chunk during the backward
    // With offload_param the shard is a host buffer already: the kernel writes the update into it.
    if (model_dtype_ != torch::kFloat32)
      host_weights_ = weights.is_cpu() ? weights : torch::empty({weights.numel()}, host.dtype(model_dtype_));
  } else if (separate_shard_) {
    // offload_param alone: the fp32 master stays on the device; the host shard follows it after each step.
    master_ = weights.to(options_.device, torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
  } else {
    master_ = model_dtype_ == torch::kFloat32 ? weights : weights.to(torch::kFloat32);
    // Stages 1-3 keep no 16-bit copy of the shard: the runtime casts chunks of the fp32 master as it
    // gathers them (as FSDP2 casts its fp32 shards), which saves 2 bytes per parameter / world size.
    if (stage >= 1) runtime_->adopt_master(master_);
  }
  // Lamb's per-tensor trust ratio needs whole tensors in the buffer: true at stage 0 or one rank.
  std::vector<TensorSegment> segments;
  if (stage == 0 || options_.world_size == 1)
    for (const auto& slot : runtime_->slots()) segments.push_back({slot.offset, slot.numel});
  if (stage == 3 && options_.world_size == 1) {
    segments.clear();
    for (std::size_t i = 0; i < runtime_->slots().size(); ++i)
      segments.push_back({runtime_->layout().slot_offset(static_cast<int>(i)), runtime_->slots()[i].numel});
  }
  // The kernel writes the updated 16-bit weights in the same pass: into the model's buffer at stage
  // 0 (and on one rank at stages 1-3, ZeroRuntime::kernel_weight_copy), into the host copy that goes
  // back to the device with offload; stages 1-3 on several ranks gather from the master.
  torch::Tensor model_copy;
  if (offload_) model_copy = host_weights_;
  else if (model_dtype_ != torch::kFloat32) model_copy = runtime_->kernel_weight_copy();
  kernel_writes_weights_ = !offload_ && model_copy.defined();
  optimizer_ = std::make_unique<FlatOptimizer>(settings, master_, model_copy, std::move(segments));
  if (offload_) {
    // Ranks of one host share its cores for the CPU step: each takes cpuadam_cores_perc of its
    // share, unless OMP_NUM_THREADS chose already (every rank's OpenMP would take all cores).
    if (options_.device.is_cuda() && !std::getenv("OMP_NUM_THREADS")) {
      long local = options_.world_size;
      for (const char* name : {"LOCAL_WORLD_SIZE", "LOCAL_SIZE"})
        if (const char* v = std::getenv(name); v && std::atol(v) > 0) {
          local = std::atol(v);
          break;
        }
      const auto cores = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
      kernels::set_cpu_thread_count(
          static_cast<int>(cores * offload.cpuadam_cores_perc / static_cast<double>(std::max(1L, local))));
    }
    const double mib = static_cast<double>(master_.numel() * 4 + optimizer_->state_bytes() + host_grads_.numel() * 4 +
                                           (host_weights_.defined() ? host_weights_.numel() * host_weights_.element_size() : 0)) /
                       (1024.0 * 1024.0);
    char text[96];
    std::snprintf(text, sizeof text, "%.1f MiB", mib);
    log("[Rank " + std::to_string(options_.rank) + "] ZeRO-Offload: the fp32 master, " + settings.type_name +
        " state and gradients of this rank's shard (" + text + ") are in " +
        (master_.is_pinned() ? "pinned " : "") + "CPU memory; the optimizer steps on the CPU with " +
        std::to_string(kernels::cpu_thread_count()) + " thread(s)");
  }
  scheduler_ = make_lr_schedule(config_.scheduler, settings.lr);
  if (config_.precision() == configs::PrecisionMode::kFp16) {
    const auto& f = config_.fp16;
    scaler_ = std::make_unique<LossScaler>(
        LossScalerOptions{f.loss_scale, f.initial_scale_power, static_cast<int>(f.loss_scale_window),
                          f.hysteresis, f.consecutive_hysteresis, f.min_loss_scale});
  }
  runtime_->set_gather_timer([this](const std::string&, double ms) { current_times_.gather_ms += ms; });
  if (config_.wall_clock_breakdown) timers_ = std::make_unique<profiler::StepTimers>();
  if (config_.comms_logger.effective_enabled && communicator()) install_comms_logger();
  if (auto* comm = communicator()) comm->report_progress(0);
}

Engine::~Engine() = default;

void Engine::log(const std::string& line) const {
  if (options_.log)
    options_.log(line);
  else if (options_.rank == 0)
    std::cout << line << std::endl;
}

void Engine::timer_start(const char* name) {
  if (!timers_) return;
  auto& timer = (*timers_)(name);
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  if (options_.device.is_cuda() && profiler::cuda_timers_available()) {
    timer.start_on_stream(c10::cuda::getCurrentCUDAStream(options_.device.index()).stream());
    return;
  }
#endif
  timer.start();
}

void Engine::timer_stop(const char* name) {
  if (timers_) (*timers_)(name).stop();
}

// deepspeed.comm's logger: every collective the communicator finishes is recorded per op and
// size (log_summary at the end), printed when verbose, and kept as a CommRecord for the session.
void Engine::install_comms_logger() {
  const auto& c = config_.comms_logger;
  profiler::CommsLoggerOptions o;
  o.enabled = true;
  o.verbose = c.verbose;
  o.prof_all = c.prof_all;
  o.debug = c.debug;
  o.prof_ops = c.prof_ops;
  comms_logger_ = std::make_unique<profiler::CommsLogger>(o);
  communicator()->set_observer([this](const CollectiveRecord& r) {
    // DeepSpeed's names, and its message size: one rank's shard for all-gather and reduce-scatter.
    const bool sharded_op = r.op == "all_gather" || r.op == "reduce_scatter";
    const std::string name = r.op == "all_gather" ? "all_gather_into_tensor"
                             : r.op == "reduce_scatter" ? "reduce_scatter_tensor" : r.op;
    const auto message = static_cast<std::uint64_t>(sharded_op ? r.bytes / r.world_size : r.bytes);
    std::lock_guard<std::mutex> lock(comm_mutex_);
    if (!comms_logger_->should_record(name)) return;
    const std::string line = comms_logger_->record(name, message, r.world_size, r.latency_ms, r.tag);
    if (!line.empty()) log(line);
    const auto op = profiler::collective_from_name(name);
    const double seconds = r.latency_ms / 1000.0;
    const double algbw = seconds > 0 ? static_cast<double>(r.bytes) / seconds / 1e9 : 0.0;
    comm_records_.push_back({options_.rank, global_steps_ + 1, r.op, r.bytes, r.latency_ms * 1000.0, algbw,
                             op ? algbw * profiler::bus_bandwidth_factor(*op, r.world_size) : algbw, r.world_size});
  });
}

std::vector<sessions::CommRecord> Engine::take_comm_records() {
  std::lock_guard<std::mutex> lock(comm_mutex_);
  return std::exchange(comm_records_, {});
}

// DeepSpeed's see_memory_usage line (memory_breakdown: true), printed by rank 0. Unlike DeepSpeed
// it does not reset the peak counters, which the session's per-step peak memory relies on.
void Engine::memory_report(const char* where) const {
  if (!config_.memory_breakdown || !options_.device.is_cuda()) return;
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(options_.device.index());
  const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto gb = [](std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return std::string(text);
  };
  log(std::string(where) + "\nMA " + gb(stats.allocated_bytes[all].current) + " GB  Max_MA " +
      gb(stats.allocated_bytes[all].peak) + " GB  CA " + gb(stats.reserved_bytes[all].current) + " GB  Max_CA " +
      gb(stats.reserved_bytes[all].peak) + " GB");
#endif
}

torch::Tensor Engine::forward(const Batch& batch) {
  memory_report("Engine before forward");
  const profiler::ScopedRange range(profiler::NvtxPhase::kForward);
  timer_start(profiler::timer_names::kForward);
  const auto start = Clock::now();
  torch::Tensor loss;
  {
    AutocastScope autocast(options_.device, autocast_dtype_);
    Batch on_device = batch.to(options_.device);
    // Float inputs (the MLP's x) follow the weights' dtype, as DeepSpeed's fp16.auto_cast does;
    // token ids stay int64.
    if (on_device.inputs.is_floating_point() && !autocast_dtype_)
      on_device.inputs = on_device.inputs.to(model_dtype_);
    loss = model_->loss(on_device);
  }
  timer_stop(profiler::timer_names::kForward);
  current_times_.forward_ms += ms_since(start);
  memory_report("Engine after forward");
  return loss;
}

void Engine::backward(const torch::Tensor& loss) {
  TORCH_CHECK(loss.numel() == 1, "backward() needs a scalar loss, got shape ", loss.sizes());
  const auto start = Clock::now();
  torch::Tensor scaled = loss.to(torch::kFloat32);
  const auto gas = gradient_accumulation_steps();
  if (gas > 1) scaled = scaled / static_cast<double>(gas);  // DeepSpeed's scale_wrt_gas
  if (scaler_) scaled = scaled * scaler_->scale();
  // Stages 0-1 reduce only at the accumulation boundary (outside no_sync); 2-3 every micro-step.
  const profiler::ScopedRange range(profiler::NvtxPhase::kBackward);
  timer_start(profiler::timer_names::kBackward);
  timer_start(profiler::timer_names::kBackwardInner);
  runtime_->begin_backward(is_gradient_accumulation_boundary() && no_sync_depth_ == 0);
  scaled.backward();
  timer_stop(profiler::timer_names::kBackwardInner);
  const double inner = ms_since(start);
  timer_start(profiler::timer_names::kBackwardReduce);
  runtime_->end_backward();  // what is left of the reductions; with overlap_comm most ran inside
  timer_stop(profiler::timer_names::kBackwardReduce);
  timer_stop(profiler::timer_names::kBackward);
  const double total = ms_since(start);
  current_times_.backward_ms += total;
  current_times_.backward_inner_ms += inner;
  current_times_.backward_allreduce_ms += total - inner;
  memory_report("Engine after backward");
}

bool Engine::is_gradient_accumulation_boundary() const {
  return (micro_steps_ + 1) % gradient_accumulation_steps() == 0;
}

Engine::NoSyncGuard::NoSyncGuard(Engine& engine) : engine_(engine) {
  if (engine_.config_.zero.stage >= 2)
    throw std::logic_error("no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage " +
                           std::to_string(engine_.config_.zero.stage));
  ++engine_.no_sync_depth_;
}
Engine::NoSyncGuard::~NoSyncGuard() { --engine_.no_sync_depth_; }

void Engine::zero_grad() { runtime_->zero_grads(); }

void Engine::refresh_master_from_weights() {
  torch::NoGradGuard no_grad;
  if (master_.data_ptr() != runtime_->optimizer_params().data_ptr()) master_.copy_(runtime_->optimizer_params());
}

GradientPieces Engine::gradients_to_host() {
  torch::NoGradGuard no_grad;
  // Stages 2-3 copied each chunk during the backward; stage 1 copies its reduced shard now.
  for (const auto& piece : runtime_->gradient_pieces())
    if (piece.grads.data_ptr() != host_grads_.data_ptr())
      host_grads_.narrow(0, piece.offset, piece.grads.numel()).copy_(piece.grads, /*non_blocking=*/true);
  if (options_.device.is_cuda()) torch::cuda::synchronize(options_.device.index());  // the CPU reads them next
  return {{0, host_grads_}};
}

void Engine::update_shard_from_master() {
  torch::NoGradGuard no_grad;
  const torch::Tensor& source = host_weights_.defined() ? host_weights_ : master_;
  if (source.data_ptr() == runtime_->optimizer_params().data_ptr()) return;  // the kernel wrote it in place
  // Pinned memory, ordered on the stream before the gathers that read the shard; the host buffer
  // is next written after the next backward's gradients_to_host() synchronized.
  runtime_->optimizer_params().copy_(source, /*non_blocking=*/true);
}

bool Engine::gradients_overflowed(const GradientPieces& pieces) {
  const auto precision = config_.precision();
  const bool check = precision == configs::PrecisionMode::kFp16 ||
                     (precision == configs::PrecisionMode::kBf16 && config_.bf16.check_grad_overflow);
  // The reduced gradients are sums over ranks: dividing by the world size averages them, as
  // DeepSpeed's postscale_gradients does, in the same pass as the loss-scale division.
  const double inv_scale = 1.0 / ((scaler_ ? scaler_->scale() : 1.0) * options_.world_size);
  bool overflow = false;
  if (master_.is_cpu()) {
    for (const auto& piece : pieces) {
      float* g = piece.grads.data_ptr<float>();
      const auto n = static_cast<std::size_t>(piece.grads.numel());
      if (check)
        overflow = kernels::cpu_unscale_and_check(g, n, static_cast<float>(inv_scale)) || overflow;
      else if (inv_scale != 1.0)
        kernels::cpu_scale(g, n, static_cast<float>(inv_scale));
    }
    squared_norm_ = std::nullopt;
  } else {
    // One reduction serves both: a non-finite value anywhere makes the norm non-finite, and the
    // norm is what clipping needs. No temporary the size of the gradients; one wait on the GPU.
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> tensors;
    for (const auto& piece : pieces) tensors.push_back(piece.grads);
    const auto norms = at::_foreach_norm(tensors, 2, torch::kFloat32);
    const double norm = tensors.empty() ? 0.0 : torch::stack(norms).norm().item<double>();
    double squares = norm * norm;
    if (runtime_->sharded() && options_.world_size > 1)
      squares = communicator()->all_reduce_scalar(squares, ReduceOp::kSum);
    overflow = check && !std::isfinite(squares);
    squared_norm_ = squares * inv_scale * inv_scale;
    pending_scale_ = inv_scale;  // applied together with the clip coefficient
    return overflow;
  }
  // Each rank saw only its shard: the skip decision must be the same everywhere.
  if (check && runtime_->sharded() && options_.world_size > 1)
    overflow = communicator()->all_reduce_scalar(overflow ? 1.0 : 0.0, ReduceOp::kMax) > 0;
  return overflow;
}

double Engine::clip_gradients(const GradientPieces& pieces) {
  double squares = 0;
  if (squared_norm_) {
    squares = *squared_norm_;
  } else {
    for (const auto& piece : pieces)
      squares += kernels::cpu_squared_l2_norm(piece.grads.data_ptr<float>(), static_cast<std::size_t>(piece.grads.numel()));
    // The global norm: sum of the shards' squares (padding is zero), the same on every rank.
    if (runtime_->sharded() && options_.world_size > 1)
      squares = communicator()->all_reduce_scalar(squares, ReduceOp::kSum);
  }
  const double norm = std::sqrt(squares);
  const double clip = config_.gradient_clipping;
  const double coefficient = clip > 0 ? std::min(1.0, kernels::clip_coefficient(norm, clip)) : 1.0;
  if (master_.is_cpu()) {
    if (coefficient < 1.0)
      for (const auto& piece : pieces)
        kernels::cpu_scale(piece.grads.data_ptr<float>(), static_cast<std::size_t>(piece.grads.numel()),
                           static_cast<float>(coefficient));
  } else {
    // The fused kernels multiply each gradient by this factor as they read it (fp32), so the
    // unscale and the clip cost no pass over the gradients.
    grad_scale_ = static_cast<float>(pending_scale_ * coefficient);
  }
  return norm;
}

StepOutcome Engine::step() {
  StepOutcome outcome;
  outcome.loss_scale = loss_scale();
  outcome.lr = scheduler_->current_lr();
  const bool boundary = is_gradient_accumulation_boundary();
  ++micro_steps_;
  if (!boundary) return outcome;
  if (no_sync_depth_ > 0)
    throw std::logic_error("step() at a gradient accumulation boundary inside no_sync(): DeepSpeed "
                           "disallows it; leave the no_sync() scope before the boundary step");
  const profiler::ScopedRange range(profiler::NvtxPhase::kOptimizerStep);
  timer_start(profiler::timer_names::kStep);
  const auto start = Clock::now();
  outcome.boundary = true;
  const GradientPieces grads = offload_ ? gradients_to_host() : runtime_->gradient_pieces();
  const bool overflow = gradients_overflowed(grads);
  if (overflow) {
    outcome.skipped = true;
    ++skipped_steps_;
    outcome.overflow_message = scaler_ ? scaler_->update(true, options_.rank)
                                       : std::optional<std::string>("[deepspeed] OVERFLOW! Rank " +
                                                                    std::to_string(options_.rank) +
                                                                    " Skipping step.");
    if (outcome.overflow_message) log(*outcome.overflow_message);
  } else {
    grad_scale_ = 1.0f;
    outcome.grad_norm = clip_gradients(grads);
    optimizer_->step(grads, outcome.lr, scheduler_->current_momentum(), scheduler_->beta2(), grad_scale_);
    if (separate_shard_) update_shard_from_master();
    runtime_->after_optimizer_step(kernel_writes_weights_);
    scheduler_->step();
    if (scaler_) scaler_->update(false, options_.rank);
  }
  zero_grad();
  ++global_steps_;
  global_samples_ += train_batch_size();
  if (auto* comm = communicator()) comm->report_progress(global_steps_);
  timer_stop(profiler::timer_names::kStep);
  current_times_.step_ms += ms_since(start);
  last_times_ = current_times_;
  if (timers_) {
    // GPU time between CUDA events (read once per step: the only wait on the device).
    last_times_.forward_ms = timers_->operator()(profiler::timer_names::kForward).elapsed_ms(true);
    last_times_.backward_ms = timers_->operator()(profiler::timer_names::kBackward).elapsed_ms(true);
    last_times_.backward_inner_ms = timers_->operator()(profiler::timer_names::kBackwardInner).elapsed_ms(true);
    last_times_.backward_allreduce_ms = timers_->operator()(profiler::timer_names::kBackwardReduce).elapsed_ms(true);
    last_times_.step_ms = timers_->operator()(profiler::timer_names::kStep).elapsed_ms(true);
  }
  current_times_ = {};
  memory_report("Engine after step");
  return outcome;
}

void Engine::restore_counters(std::int64_t global_steps, std::int64_t global_samples, std::int64_t skipped_steps) {
  global_steps_ = global_steps;
  global_samples_ = global_samples;
  skipped_steps_ = skipped_steps;
  micro_steps_ = global_steps * gradient_accumulation_steps();
}

InitializeResult initialize(std::shared_ptr<TrainableModel> model, const configs::ResolvedConfig& config,
                            EngineOptions options, std::shared_ptr<const SampleDataset> training_data) {
  InitializeResult result;
  if (training_data) {
    DataLoaderOptions loader;
    loader.micro_batch_size = config.batch.train_micro_batch_size_per_gpu;
    loader.rank = options.communicator ? options.communicator->rank() : options.rank;
    loader.world_size = options.communicator ? options.communicator->world_size() : options.world_size;
    loader.drop_last = config.dataloader_drop_last;
    result.training_dataloader = std::make_shared<ShardedDataLoader>(std::move(training_data), loader);
  }
  result.engine = std::make_shared<Engine>(std::move(model), config, std::move(options));
  result.optimizer = &result.engine->optimizer();
  result.lr_scheduler = &result.engine->lr_scheduler();
  return result;
}

}  // namespace shardscope::engine
