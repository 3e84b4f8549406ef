#include "engine/training_run.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoints/atomic_file.hpp"
#include "configs/config_document.hpp"
#include "configs/resolved_json.hpp"
#include "engine/data/data_loader.hpp"
#include "engine/data/sample_dataset.hpp"
#include "engine/engine.hpp"
#include "engine/loss_readback.hpp"
#include "engine/models/weight_loader.hpp"
#include "engine/memory_prediction.hpp"
#include "engine/oom_finding.hpp"
#include "engine/model_flops_profile.hpp"
#include "engine/training_telemetry.hpp"
#include "engine/zero/partitioned_init.hpp"
#include "profiler/cupti_activity.hpp"

namespace shardscope::engine {
namespace {

struct LoadedConfig {
  configs::ResolvedConfig config;
  std::string json;
  bool activation_checkpointing_block = false;  ///< the user wrote an activation_checkpointing block
};

LoadedConfig load_config(const TrainRunOptions& o, int world_size, std::ostream& err) {
  const auto document = configs::parse_config_file(o.config_path);
  configs::ValidateOptions validate;
  validate.own_optimizer = true;  // ShardScope builds the default optimizer when the config has none
  validate.world_size = world_size;
  validate.overrides = o.overrides;
  validate.deepspeed_version = o.deepspeed_version;
  const auto result = configs::validate(document, validate);
  std::string errors;
  for (const auto& d : result.diagnostics) {
    const std::string text = configs::format_diagnostic_text(o.config_path, d);
    if (d.severity == configs::Severity::kError)
      errors += text;
    else if (d.severity == configs::Severity::kWarning)
      err << text;
  }
  if (!errors.empty() || !result.config)
    throw TrainConfigError(std::string("the config has errors (DeepSpeed ") + configs::to_string(o.deepspeed_version) +
                           " would refuse it too):\n" + errors);
  return {*result.config, configs::resolved_config_json(result.resolved),
          result.config->activation_checkpointing.requested};
}

std::shared_ptr<const SampleDataset> make_dataset(const TrainRunOptions& o) {
  if (o.model.kind == ModelKind::kMlp) {
    RegressionOptions r;
    r.input_dim = o.model.mlp.input_dim;
    r.output_dim = o.model.mlp.output_dim;
    r.seed = o.seed;
    return std::make_shared<RegressionDataset>(r);
  }
  const auto& shape = o.model.transformer.shape;
  if (o.data == "synthetic") {
    SyntheticTokenOptions s;
    s.vocab = shape.vocab;
    s.seq_len = shape.seq_len;
    s.seed = o.seed;
    s.successor_probability = 0.9;  // learnable structure, so the loss curve means something
    return std::make_shared<SyntheticTokenDataset>(s);
  }
  TokenFileOptions t;
  t.path = o.data;
  t.vocab = shape.vocab;
  t.seq_len = shape.seq_len;
  return std::make_shared<TokenFileDataset>(t);
}

// The data loader's position, with the world size it was counted at: a run resumed at another
// world size continues the same global order (rank r takes positions r, r + w, ...).
std::string data_position_json(const DataPosition& p, int world_size) {
  return nlohmann::json{{"data_epoch", p.epoch}, {"data_index", p.index}, {"data_world_size", world_size}}.dump();
}

// Where this rank's loader resumes: the saved position (converted to this world size), or, for a
// checkpoint without one (DeepSpeed wrote it), the global samples the checkpoint counted.
DataPosition resume_position(const std::string& client_state, const Engine& engine, const ShardedDataLoader& loader,
                             const std::string& where, std::ostream& err) {
  const int world = engine.world_size();
  const auto j = nlohmann::json::parse(client_state, nullptr, false);
  const bool saved = !j.is_discarded() && j.is_object() && j.contains("data_epoch") && j.contains("data_index") &&
                     j["data_epoch"].is_number_integer() && j["data_index"].is_number_integer();
  std::int64_t epoch = 0, consumed = 0;  // consumed: samples of the epoch, over all ranks
  if (saved) {
    const std::int64_t saved_world = j.value("data_world_size", world);
    epoch = j["data_epoch"].get<std::int64_t>();
    consumed = j["data_index"].get<std::int64_t>() * saved_world;
  } else {
    const std::int64_t per_epoch = world * (loader.batches_per_epoch() * engine.train_micro_batch_size_per_gpu());
    epoch = engine.global_samples() / per_epoch;
    consumed = engine.global_samples() % per_epoch;
    if (engine.rank() == 0)
      err << "note: checkpoint " << where << " has no data position (DeepSpeed wrote it): the data resumes after "
          << engine.global_samples() << " samples of the global order\n";
  }
  if (consumed % world != 0)
    throw std::runtime_error("checkpoint " + where + " stopped after " + std::to_string(consumed) +
                             " samples of its epoch, which " + std::to_string(world) +
                             " ranks cannot split evenly; resume with a world size that divides it");
  return {epoch, consumed / world};
}

// The steps whose GPU activity goes to the session: --profile-steps, or the flops profiler's step.
std::optional<std::pair<std::int64_t, std::int64_t>> profile_window(const TrainRunOptions& o,
                                                                   const configs::ResolvedConfig& c) {
  if (o.profile_steps > 0) return std::make_pair(o.profile_start, o.profile_steps);
  if (c.flops_profiler.enabled) return std::make_pair(c.flops_profiler.profile_step, std::int64_t{1});
  return std::nullopt;
}

// CUPTI activity of the profiled window, streamed to the session; outside the window nothing is
// enabled, so it costs nothing there.
class ProfiledWindow {
 public:
  ProfiledWindow(std::pair<std::int64_t, std::int64_t> window, int rank, TrainingTelemetry& telemetry,
                 std::ostream& err)
      : first_(window.first), last_(window.first + window.second - 1), err_(err) {
    profiler::CuptiActivityOptions options;
    options.rank = rank;
    collector_ = std::make_unique<profiler::CuptiActivityCollector>(
        options, [&telemetry](sessions::ActivityBatch&& b) { telemetry.send(std::move(b)); },
        [&telemetry](sessions::NvtxBatch&& b) { telemetry.send(std::move(b)); });
  }
  void before_step(std::int64_t step) {
    if (!collector_) return;
    try {
      if (step == first_ && !collector_->running()) collector_->start();
      if (collector_->running()) collector_->begin_step(step);
    } catch (const std::exception& e) {
      err_ << "warning: no GPU activity recorded for the profiled window: " << e.what() << "\n";
      collector_.reset();
    }
  }
  void after_step(std::int64_t step) {
    if (collector_ && collector_->running() && step >= last_) {
      collector_->stop();
      const auto stats = collector_->stats();
      err_ << "profiled steps " << first_ << "-" << last_ << ": " << stats.kernels << " kernels, " << stats.memcpys
           << " copies, " << stats.memsets << " memsets, " << stats.nvtx_ranges << " NVTX ranges"
           << (stats.dropped ? ", " + std::to_string(stats.dropped) + " dropped" : std::string()) << "\n";
      collector_.reset();
    }
  }

 private:
  std::int64_t first_, last_;
  std::ostream& err_;
  std::unique_ptr<profiler::CuptiActivityCollector> collector_;
};

// DeepSpeed's print_model_profile for the profiled step (rank 0), to flops_profiler.output_file
// when the config names one, else to the log.
void report_flops_profile(const TrainRunOptions& o, const configs::ResolvedConfig& config, const Engine& engine,
                          TrainingTelemetry& telemetry) {
  const auto& t = engine.last_phase_times();
  const double micro_steps = static_cast<double>(engine.gradient_accumulation_steps());
  const bool timed = config.wall_clock_breakdown;  // CUDA-event timers; otherwise only the host forward time
  const std::string report =
      model_flops_report(o.model, config.batch.train_micro_batch_size_per_gpu, config.flops_profiler,
                         engine.world_size(), t.forward_ms / micro_steps, timed ? t.backward_ms / micro_steps : -1.0,
                         timed ? t.step_ms : -1.0);
  if (const auto& file = config.flops_profiler.output_file) {
    checkpoints::write_file_atomically(*file, std::vector<char>(report.begin(), report.end()));
    telemetry.log_line("[Rank 0] flops profile of step " + std::to_string(engine.global_steps()) + " written to " + *file);
  } else {
    telemetry.log_line(report);
  }
}

// The estimator's prediction for this very run beside what it measured (rank 0, at the end).
void report_memory(const MemoryPrediction& prediction, const Engine& engine, TrainingTelemetry& telemetry) {
  const MeasuredPeaks peaks = measured_peaks(engine);
  if (engine.options().device.is_cuda()) {
    telemetry.log_line(measured_vs_predicted_text(prediction, peaks));
  } else {
    // The CPU has no allocator peak: the engine counts its own tensors, which are the model states.
    telemetry.log_line(model_states_vs_held_text(prediction, peaks.allocated_peak));
  }
  telemetry.log_line(measured_peaks_record(peaks));
}

// NVTX ranges reach CUPTI only through this variable, read at the process's first NVTX call.
void route_nvtx_to_cupti(bool profiled, const torch::Device& device) {
  if (!profiled || !device.is_cuda() || std::getenv("NVTX_INJECTION64_PATH")) return;
  const std::string cupti = profiler::cupti_library_path();
  if (!cupti.empty()) ::setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 0);
}

std::shared_ptr<Communicator> connect_ranks(CommunicatorOptions options, const torch::Device& device) {
  if (options.world_size <= 1) return nullptr;
  options.device = device;
  return Communicator::connect(options);
}

// The model as the config wants it: partitioned from the start, recomputing its blocks, with the
// weights of --weights.
std::shared_ptr<TrainableModel> build_run_model(const TrainRunOptions& o, const LoadedConfig& loaded, int rank,
                                                int world, const torch::Device& device, std::ostream& err) {
  std::shared_ptr<TrainableModel> model;
  {
    // ZeRO stage 3 on several ranks builds the model partitioned (zero.Init): never whole on a
    // rank. Weights loaded from a file need the whole tensors, so that path builds it whole.
    std::unique_ptr<PartitionedInit> partitioned;
    if (loaded.config.zero.stage == 3 && world > 1 && !o.weights_path)
      partitioned = std::make_unique<PartitionedInit>(rank, world, model_dtype_for(loaded.config.precision()), device);
    model = build_model(o.model, device.is_cuda(), device.is_cuda() ? device.index() : 0);
  }
  // Like a DeepSpeed model that wraps its blocks in deepspeed.checkpointing.checkpoint when the
  // config has an activation_checkpointing block, the built-in models recompute each block then.
  if (loaded.activation_checkpointing_block) model->set_activation_checkpointing(true);
  if (o.weights_path) {
    const auto report = load_safetensors_weights(*model, *o.weights_path);
    for (const auto& warning : report.warnings) err << "warning: " << warning << "\n";
  }
  return model;
}

DataLoaderOptions loader_options(const TrainRunOptions& o, const configs::ResolvedConfig& config, int rank, int world) {
  DataLoaderOptions options;
  options.micro_batch_size = config.batch.train_micro_batch_size_per_gpu;
  options.rank = rank;
  options.world_size = world;
  options.seed = o.seed;
  options.drop_last = config.dataloader_drop_last;
  return options;
}

EngineOptions engine_options(const TrainRunOptions& o, const LoadedConfig& loaded, const torch::Device& device,
                             const CommunicatorOptions& ranks, std::shared_ptr<Communicator> comm,
                             TrainingTelemetry& telemetry) {
  EngineOptions options;
  options.device = device;
  options.rank = ranks.rank;
  options.world_size = ranks.world_size;
  options.communicator = std::move(comm);
  options.config_json = loaded.json;
  options.checkpoint_loss_scaler_objects = o.save_format == "deepspeed";
  options.checkpoint_release = o.deepspeed_version;
  options.log = [&telemetry](const std::string& line) { telemetry.log_line(line); };
  return options;
}

struct OptimizerStep {
  StepOutcome outcome;
  double loss = 0;  ///< the mean over the accumulation window
  std::int64_t tokens = 0;
};

// One optimizer step: forward and backward of each micro-batch up to the accumulation boundary.
OptimizerStep run_optimizer_step(Engine& engine, ShardedDataLoader& loader, LossReadback& losses) {
  OptimizerStep step;
  do {
    const Batch batch = loader.next();
    step.tokens += batch.num_tokens();
    torch::Tensor loss = engine.forward(batch);
    losses.push(loss);  // read after the step is queued: no wait between forward and backward
    engine.backward(loss);
    step.outcome = engine.step();
  } while (!step.outcome.boundary);
  step.loss = losses.take_sum() / static_cast<double>(engine.gradient_accumulation_steps());
  return step;
}

bool checkpoint_due(const TrainRunOptions& o, std::int64_t global_step, bool last) {
  return o.save_dir && ((o.save_every > 0 && global_step % o.save_every == 0) || last);
}

// The run's parts that outlive one step, for the loop.
struct RunParts {
  const TrainRunOptions& options;
  const configs::ResolvedConfig& config;
  Engine& engine;
  ShardedDataLoader& loader;
  TrainingTelemetry& telemetry;
  ProfiledWindow* profiled;  ///< null outside a profiled CUDA run
};

// Optimizer steps up to --steps, each reported to the telemetry, profiled inside the window and
// checkpointed when due.
void train_steps(const RunParts& run, TrainRunResult& result) {
  const auto& o = run.options;
  auto& engine = run.engine;
  LossReadback losses;
  while (engine.global_steps() < o.steps) {
    if (run.profiled) run.profiled->before_step(engine.global_steps() + 1);
    run.telemetry.begin_step();
    const OptimizerStep step = run_optimizer_step(engine, run.loader, losses);
    run.telemetry.end_step(engine, step.outcome, step.loss, step.tokens);
    if (run.profiled) run.profiled->after_step(engine.global_steps());
    if (run.config.flops_profiler.enabled && engine.global_steps() == run.config.flops_profiler.profile_step &&
        engine.rank() == 0)
      report_flops_profile(o, run.config, engine, run.telemetry);
    result.final_loss = step.loss;
    ++result.steps_done;
    const bool last = engine.global_steps() >= o.steps;
    if (checkpoint_due(o, engine.global_steps(), last))
      engine.save_checkpoint(*o.save_dir, std::nullopt, data_position_json(run.loader.position(), engine.world_size()));
  }
}

// The steps, with a CUDA out-of-memory error turned into the doctor's finding (the allocator's
// numbers and the smallest change the estimator says fits) before it ends the rank.
void train_steps_or_report_oom(const RunParts& run, const ModelSpec& spec, bool checkpointing, TrainRunResult& result,
                               std::ostream& err) {
  try {
    train_steps(run, result);
  } catch (const c10::OutOfMemoryError& e) {
    const std::string message = e.what_without_backtrace();
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    sessions::Finding f = out_of_memory_finding(message, run.config, spec, run.engine.world_size(), checkpointing,
                                                run.engine.rank(), run.engine.global_steps() + 1, now);
    err << "shardscope: doctor: " << f.summary << "\n  what to do: " << f.suggested_fix << std::endl;
    run.telemetry.send(std::move(f));
    throw;
  }
}

// No rank leaves while another still talks to rank 0's store (NCCL's heartbeat polls it).
void leave_together(const std::shared_ptr<Communicator>& comm) {
  if (!comm) return;
  comm->barrier();
  comm->shutdown();
}

}  // namespace

double training_flops_per_sample(const ModelSpec& spec, double parameters) {
  if (spec.kind == ModelKind::kMlp) return 6.0 * parameters;
  const auto& s = spec.transformer.shape;
  const double tokens = static_cast<double>(s.seq_len);
  const double attention = 12.0 * static_cast<double>(s.layers) * static_cast<double>(s.hidden) * tokens;
  return (6.0 * parameters + attention) * tokens;
}

TrainRunResult run_training(const TrainRunOptions& o, std::ostream& out, std::ostream& err) {
  if (o.steps <= 0) throw std::invalid_argument("--steps must be a positive number of optimizer steps");
  const CommunicatorOptions ranks = communicator_options_from_environment();
  const LoadedConfig loaded = load_config(o, ranks.world_size, err);
  const auto& config = loaded.config;
  const torch::Device device = resolve_rank_device(o.device, ranks.local_rank);
  const auto window = profile_window(o, config);
  route_nvtx_to_cupti(window.has_value(), device);
  const auto comm = connect_ranks(ranks, device);

  torch::manual_seed(o.seed);
  auto model = build_run_model(o, loaded, ranks.rank, ranks.world_size, device, err);
  ShardedDataLoader loader(make_dataset(o), loader_options(o, config, ranks.rank, ranks.world_size));
  TrainingTelemetry telemetry(o, config, loaded.json, ranks.rank, out, err);
  Engine engine(model, config, engine_options(o, loaded, device, ranks, comm, telemetry));
  if (o.load_dir) loader.set_position(resume_position(engine.load_checkpoint(*o.load_dir), engine, loader, *o.load_dir, err));
  telemetry.start(engine, training_flops_per_sample(o.model, static_cast<double>(engine.parameter_count())));
  // In the session from the start, for `sessions show` to set beside what the run measures.
  const auto prediction = predict_memory(config, o.model, engine.world_size(), model->activation_checkpointing());
  if (ranks.rank == 0) telemetry.log_line(memory_prediction_record(prediction));

  std::unique_ptr<ProfiledWindow> profiled;
  if (window && device.is_cuda()) profiled = std::make_unique<ProfiledWindow>(*window, ranks.rank, telemetry, err);
  else if (window) err << "note: the profiled window records GPU activity; this run is on the CPU\n";
  TrainRunResult result;
  const auto started = std::chrono::steady_clock::now();
  train_steps_or_report_oom({o, config, engine, loader, telemetry, profiled.get()}, o.model,
                            model->activation_checkpointing(), result, err);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.global_steps = engine.global_steps();
  result.skipped_steps = engine.skipped_steps();
  result.tokens_per_second = telemetry.tokens_per_second();
  profiled.reset();
  if (ranks.rank == 0) report_memory(prediction, engine, telemetry);
  result.session_uid = telemetry.finish(result.wall_seconds, engine);
  leave_together(comm);
  return result;
}

}  // namespace shardscope::engine
