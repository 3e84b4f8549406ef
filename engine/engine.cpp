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

#include "aio/backend_probe.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/cpu_features.hpp"
#include "profiler/comm_bandwidth.hpp"
#include "profiler/nvtx_ranges.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::engine {
namespace {

using Clock = std::chrono::steady_clock;

using sessions::ms_since;

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


std::unique_ptr<LossScaler> make_loss_scaler(const configs::Fp16Config& f) {
  return std::make_unique<LossScaler>(LossScalerOptions{f.loss_scale, f.initial_scale_power,
                                                        static_cast<int>(f.loss_scale_window), f.hysteresis,
                                                        f.consecutive_hysteresis, f.min_loss_scale});
}

}  // namespace

torch::Dtype model_dtype_for(configs::PrecisionMode mode) {
  switch (mode) {
    case configs::PrecisionMode::kFp16: return torch::kFloat16;
    case configs::PrecisionMode::kBf16: return torch::kBFloat16;
    case configs::PrecisionMode::kFp32: return torch::kFloat32;
  }
  return torch::kFloat32;
}

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

ZeroSettings zero_settings_from_config(const configs::ZeroConfig& z, const PlacementPlan& plan) {
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
  s.offload_optimizer = plan.offloads_optimizer();
  s.param_tier = plan.param_shard;
  s.pin_params = plan.pin_params;
  s.param_swap = plan.param_swap;
  s.aio = plan.aio;
  return s;
}

Engine::Engine(std::shared_ptr<TrainableModel> model, const configs::ResolvedConfig& config,
               EngineOptions options)
    : model_(std::move(model)), config_(config), options_(std::move(options)) {
  TORCH_CHECK(model_, "Engine needs a model");
  if (!config_.batch.resolved)
    throw std::invalid_argument("the config's batch keys are not resolved: give train_batch_size or "
                                "train_micro_batch_size_per_gpu (validate the config for details)");
  adopt_communicator();
  model_dtype_ = model_dtype_for(config_.precision());
  autocast_dtype_ = autocast_dtype_for(config_.torch_autocast, options_.device);
  const OptimizerSettings settings = optimizer_settings_from_config(config_.optimizer);
  refuse_what_the_engine_cannot_run(settings);
  // The one placement decision; the runtime and the shard optimizer build what it says.
  plan_ = plan_placement(config_, options_.device.is_cuda());
  choose_io_backend();
  runtime_ = std::make_unique<ZeroRuntime>(*model_, model_dtype_, options_.device, options_.communicator,
                                           zero_settings_from_config(config_.zero, plan_));
  optimizer_ = std::make_unique<ShardOptimizer>(plan_, settings, *runtime_, shard_optimizer_options());
  if (plan_.offloads_optimizer()) share_cores_for_the_cpu_step();
  log_placement(settings);
  scheduler_ = make_lr_schedule(config_.scheduler, settings.lr);
  if (config_.precision() == configs::PrecisionMode::kFp16) scaler_ = make_loss_scaler(config_.fp16);
  runtime_->set_gather_timer([this](const std::string&, double ms) { current_times_.gather_ms += ms; });
  if (config_.wall_clock_breakdown) timers_ = std::make_unique<profiler::StepTimers>();
  if (config_.comms_logger.effective_enabled && communicator()) install_comms_logger();
  if (auto* comm = communicator()) comm->report_progress(0);
}

void Engine::adopt_communicator() {
  if (const auto& comm = options_.communicator) {
    options_.rank = comm->rank();
    options_.world_size = comm->world_size();
    if (comm->device() != options_.device)
      throw std::invalid_argument("the communicator's device " + comm->device().str() + " is not the engine's " +
                                  options_.device.str());
  } else if (options_.world_size != 1) {
    throw std::invalid_argument("world_size " + std::to_string(options_.world_size) + " needs a communicator");
  }
}

void Engine::refuse_what_the_engine_cannot_run(const OptimizerSettings& settings) const {
  const int stage = config_.zero.stage;
  if (settings.algorithm == OptimizerAlgorithm::kLamb && stage >= 1 && options_.world_size > 1)
    throw std::invalid_argument("Lamb's trust ratio is computed per whole tensor, which ZeRO stage " +
                                std::to_string(stage) + " splits across ranks; use stage 0 with Lamb, or "
                                "Adam/AdamW/Lion/Adagrad/SGD with ZeRO");
}

void Engine::choose_io_backend() {
  if (plan_.optimizer != Tier::kNvme && plan_.param_shard != Tier::kNvme) return;
  const char* requested = std::getenv("SHARDSCOPE_AIO_BACKEND");
  const char* tmp = std::getenv("TMPDIR");
  plan_.aio.backend = aio::choose_io_backend(requested ? requested : "", tmp && *tmp ? tmp : "/tmp");
  plan_.aio.owner = "rank " + std::to_string(options_.rank);
  aio::check_aio_settings(plan_.aio);
}

ShardOptimizerOptions Engine::shard_optimizer_options() const {
  ShardOptimizerOptions o;
  o.device = options_.device;
  o.model_dtype = model_dtype_;
  o.rank = options_.rank;
  o.segments = optimizer_segments();
  o.aio = plan_.aio;
  return o;
}

std::vector<TensorSegment> Engine::optimizer_segments() const {
  // Lamb's per-tensor trust ratio needs whole tensors in the buffer: true at stage 0 or one rank.
  const int stage = config_.zero.stage;
  std::vector<TensorSegment> segments;
  if (stage == 0 || options_.world_size == 1)
    for (const auto& slot : runtime_->slots()) segments.push_back({slot.offset, slot.numel});
  if (stage == 3 && options_.world_size == 1) {
    segments.clear();
    for (std::size_t i = 0; i < runtime_->slots().size(); ++i)
      segments.push_back({runtime_->layout().slot_offset(static_cast<int>(i)), runtime_->slots()[i].numel});
  }
  return segments;
}

void Engine::share_cores_for_the_cpu_step() const {
  // Ranks of one host share its cores for the CPU step: each takes cpuadam_cores_perc of its
  // share, unless OMP_NUM_THREADS chose already (every rank's OpenMP would take all cores).
  if (!options_.device.is_cuda() || std::getenv("OMP_NUM_THREADS")) return;
  long local = options_.world_size;
  for (const char* name : {"LOCAL_WORLD_SIZE", "LOCAL_SIZE"})
    if (const char* v = std::getenv(name); v && std::atol(v) > 0) {
      local = std::atol(v);
      break;
    }
  const auto cores = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  kernels::set_cpu_thread_count(static_cast<int>(cores * config_.zero.offload_optimizer.cpuadam_cores_perc /
                                                 static_cast<double>(std::max(1L, local))));
}

void Engine::log_placement(const OptimizerSettings& settings) const {
  const std::string rank = "[Rank " + std::to_string(options_.rank) + "] ";
  for (const auto& note : plan_.notes) log(rank + "note: " + note);
  const std::string threads =
      "; the optimizer steps on the CPU with " + std::to_string(kernels::cpu_thread_count()) + " thread(s)";
  if (plan_.optimizer == Tier::kHost && plan_.offload_ratio == 1.0) {
    char text[96];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(optimizer_->memory_bytes()) / (1024.0 * 1024.0));
    const bool pinned = optimizer_->master().defined() && optimizer_->master().is_pinned();
    log(rank + "ZeRO-Offload: the fp32 master, " + settings.type_name + " state and gradients of this rank's shard (" +
        text + ") are in " + (pinned ? "pinned " : "") + "CPU memory" + threads);
  } else if (plan_.offloads_optimizer()) {
    std::string stores;
    for (const auto& line : optimizer_->describe()) stores += (stores.empty() ? "" : "; ") + line;
    log(rank + (plan_.optimizer == Tier::kNvme ? "ZeRO-Infinity: " : "ZeRO-Offload: ") + stores + threads);
  }
  if (plan_.param_shard == Tier::kNvme) log(rank + "ZeRO-Infinity: " + runtime_->shard().describe());
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
  // Inside the forward's timer: a sleep-in-phase fault is a slow forward, as a straggler's is.
  enter_engine_phase(communicator(), options_.rank, global_steps_ + 1, CollectivePhase::kForward);
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
  loss = apply_forward_faults(loss, options_.rank, global_steps_ + 1,
                              options_.device.is_cuda() ? options_.device.index() : -1);
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
  enter_engine_phase(communicator(), options_.rank, global_steps_ + 1, CollectivePhase::kBackward);
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

void Engine::refresh_master_from_weights() { optimizer_->refresh_master_from_weights(); }

void Engine::place_optimizer_state(const HostOptimizerState& state) { optimizer_->place(state); }

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
