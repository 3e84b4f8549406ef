#include "engine/training_telemetry.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#ifdef SHARDSCOPE_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

#include "profiler/environment_probe.hpp"
#include "estimator/peak_flops.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/events.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::engine {
namespace {

using sessions::unix_now;

using sessions::host_name;

// DeepSpeed prints lists: lr=[0.001], mom=[(0.9, 0.999)].
std::string progress_line(int rank, const Engine& e, double loss) {
  const auto& s = e.optimizer().settings();
  std::ostringstream line;
  // DeepSpeed prints the optimizer's lr after the scheduler stepped: the next step's lr.
  line << "[Rank " << rank << "] step=" << e.global_steps() << ", skipped=" << e.skipped_steps()
       << ", lr=[" << e.current_lr() << "], mom=[(" << s.beta1 << ", " << s.beta2 << ")], loss=" << std::setprecision(6)
       << loss;
  return line.str();
}

std::string format_eta(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%02lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  return buffer;
}

}  // namespace

MemorySample sample_memory(const Engine& engine) {
  MemorySample m;
#ifdef SHARDSCOPE_TORCH_HAS_CUDA
  if (engine.options().device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(engine.options().device.index());
    const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    m.allocated = stats.allocated_bytes[all].current;
    m.reserved = stats.reserved_bytes[all].current;
    m.peak = stats.allocated_bytes[all].peak;
    m.reserved_peak = stats.reserved_bytes[all].peak;
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
      m.device_used = static_cast<std::int64_t>(total_bytes - free_bytes);
    return m;
  }
#endif
  // Tensor bytes this rank holds, each storage once: full weights and gradients (stages 0-2, 0-1),
  // the shard, the master, the optimizer state and buffers, the gradients of the shard.
  const auto& zero = engine.zero();
  // kernel_weight_copy(): stage 3 on one rank keeps persistent 16-bit weights beside the master.
  std::vector<torch::Tensor> held{zero.full_params(), zero.full_grads(), zero.kernel_weight_copy()};
  zero.shard().collect_memory(held);
  engine.optimizer().collect_memory(held);
  for (const auto& piece : zero.gradient_pieces()) held.push_back(piece.grads);
  m.allocated = unique_storage_bytes(held);
  m.reserved = m.allocated;
  m.peak = m.allocated;
  m.reserved_peak = m.allocated;
  return m;
}

namespace {

// VmHWM of /proc/self/status, in bytes; 0 where it cannot be read.
std::int64_t host_peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;  // "VmHWM:  123 kB"
  return 0;
}

}  // namespace

MeasuredPeaks measured_peaks(const Engine& engine) {
  const MemorySample m = sample_memory(engine);
  MeasuredPeaks p;
  p.allocated_peak = m.peak;
  p.reserved_peak = m.reserved_peak;
  // What lives outside the allocator (context, cuBLAS/cuDNN handles) is set up before the first
  // step and does not grow, so it adds to the reserved peak as it stands now.
  p.device_peak = m.device_used > 0 ? m.reserved_peak + std::max<std::int64_t>(0, m.device_used - m.reserved) : 0;
  p.host_peak_rss = host_peak_rss_bytes();
  return p;
}


TrainingTelemetry::TrainingTelemetry(const TrainRunOptions& options, const configs::ResolvedConfig& config,
                                     std::string config_json, int rank, std::ostream& out, std::ostream& err)
    : options_(options), config_(config), config_json_(std::move(config_json)), rank_(rank), out_(out), err_(err) {
  if (options_.session_db && options_.collector)
    throw std::invalid_argument("give --session or --collector, not both");
  if (options_.collector) {
    const auto [host, port] = sessions::parse_host_port(*options_.collector);
    // Taken out of the environment as it is read, so nothing this rank starts inherits it.
    const auto secret = sessions::take_secret_from_environment();
    if (!secret)
      throw std::invalid_argument(std::string("--collector needs the run's secret in ") +
                                  sessions::kCollectorSecretVariable + " (set by `shardscope launch`)");
    sessions::TcpSinkOptions tcp;
    tcp.host = host;
    tcp.port = port;
    tcp.secret = *secret;
    tcp.rank = rank_;
    auto sink = std::make_shared<sessions::TcpEventSink>(tcp);  // fails fast when nobody listens
    session_uid_ = sink->session_uid();
    sink_ = std::move(sink);
  } else if (options_.session_db) {
    session_uid_ = sessions::new_session_uid();
    sink_ = std::make_shared<sessions::FileEventSink>(sessions::FileSinkOptions{*options_.session_db, session_uid_});
    owns_run_ = true;
  }
}

TrainingTelemetry::~TrainingTelemetry() {
  if (!sink_ || finished_) return;
  // Unwinding from an error: say so in the session, so it does not look like a run still going.
  try {
    if (owns_run_) sink_->send(sessions::RunEnd{"failed", unix_now(), 0, {{rank_, 1}}});
    sink_->close();
  } catch (...) {
  }
}

void TrainingTelemetry::log_line(const std::string& line) {
  if (rank_ == 0) out_ << line << std::endl;
  // Under a launcher, rank 0's printed lines reach the session through the launcher, which
  // relays its output; the other ranks print nothing, so they send their lines themselves.
  if (!sink_ || (rank_ == 0 && !owns_run_)) return;
  const bool overflow = line.find("OVERFLOW!") != std::string::npos;
  sink_->send(sessions::LogLine{rank_, unix_now(), overflow ? sessions::LogLevel::kWarning : sessions::LogLevel::kInfo,
                                line});
}

void TrainingTelemetry::start(const Engine& engine, double flops_per_sample) {
  flops_per_sample_ = flops_per_sample;
  run_start_ = std::chrono::steady_clock::now();
  first_step_ = engine.global_steps();
  // The collective flight record's marks go live to the session (the doctor reads them there).
  if (auto* comm = engine.communicator(); comm && sink_) comm->set_mark_sink(sink_);
  if (!sink_ || !owns_run_) return;
  sessions::RunStart start;
  start.name = options_.session_name.empty() ? std::filesystem::path(options_.config_path).stem().string()
                                             : options_.session_name;
  start.started_at = unix_now();
  start.command_line = options_.command_line;
  start.config_json = config_json_;
  start.config_hash = sessions::compute_config_hash(config_json_);
  start.environment = profiler::collect_environment_report();
  start.world_size = 1;
  start.ranks.push_back({rank_, 0, host_name(), static_cast<std::int64_t>(::getpid()),
                         engine.options().device.str()});
  if (engine.options().device.is_cuda()) {
    if (const auto peak = estimator::datasheet_peak(sessions::first_gpu_name(start.environment), config_json_)) {
      start.peak_tflops_per_gpu = peak->tflops;
      start.tags.push_back("mfu peak " + peak->source);
    }
  }
  sink_->send(start);
}

void TrainingTelemetry::begin_step() { step_start_ = std::chrono::steady_clock::now(); }

void TrainingTelemetry::end_step(Engine& engine, const StepOutcome& outcome, double loss,
                                 std::int64_t tokens) {
  const double step_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start_).count();
  if (step_ms > 0) tokens_per_second_.push_back(static_cast<double>(tokens) / (step_ms / 1000.0));
  send_step(engine, outcome, loss, step_ms, tokens);
  print_progress(engine, outcome, loss, step_ms);
}

void TrainingTelemetry::send_step(Engine& engine, const StepOutcome& outcome, double loss, double step_ms,
                                  std::int64_t tokens) {
  if (!sink_) return;
  const double seconds = step_ms / 1000.0;
  const double samples = static_cast<double>(engine.train_batch_size()) / engine.options().world_size;
  const MemorySample memory = sample_memory(engine);
  sessions::StepMetrics m;
  m.rank = rank_;
  m.step = engine.global_steps();
  m.wall_time = unix_now();
  m.step_time_ms = step_ms;
  m.loss = loss;
  m.lr = outcome.lr;
  if (engine.model_dtype() == torch::kFloat16) m.loss_scale = outcome.loss_scale;
  m.grad_norm = outcome.grad_norm;
  m.skipped = outcome.skipped;
  if (seconds > 0) {
    m.samples_per_s = samples / seconds;
    m.tokens_per_s = static_cast<double>(tokens) / seconds;
    m.tflops = flops_per_sample_ * samples / seconds / 1e12;
  }
  m.mem_allocated_bytes = memory.allocated;
  m.mem_reserved_bytes = memory.reserved;
  m.mem_peak_bytes = memory.peak;
  sink_->send(m);
  if (config_.wall_clock_breakdown) {
    const auto& t = engine.last_phase_times();
    sessions::TimerBreakdown timers{rank_, engine.global_steps(),
                                    {{"forward", t.forward_ms}, {"backward", t.backward_ms},
                                     {"backward_inner", t.backward_inner_ms},
                                     {"backward_allreduce", t.backward_allreduce_ms}, {"step", t.step_ms}}};
    if (engine.zero().stage() == 3) timers.timers.push_back({"stage3_gather_wait", t.gather_ms});
    sink_->send(std::move(timers));
  }
  for (auto& record : engine.take_comm_records()) sink_->send(std::move(record));
}

void TrainingTelemetry::print_progress(const Engine& engine, const StepOutcome& outcome, double loss,
                                       double step_ms) {
  const auto every = config_.steps_per_print;
  if (every && *every > 0 && engine.global_steps() % *every == 0) {
    if (options_.progress_bar) err_ << "\r\033[K";
    log_line(progress_line(rank_, engine, loss));
    if (config_.wall_clock_breakdown) {
      const auto& t = engine.last_phase_times();
      char line[256];
      std::snprintf(line, sizeof line,
                    "[Rank %d] time (ms) | fwd: %.2f | bwd: %.2f | bwd_inner: %.2f | bwd_allreduce: %.2f | step: %.2f",
                    rank_, t.forward_ms, t.backward_ms, t.backward_inner_ms, t.backward_allreduce_ms, t.step_ms);
      log_line(line);
    }
  }
  if (!options_.progress_bar || rank_ != 0) return;
  const double done = static_cast<double>(engine.global_steps());
  const double total = static_cast<double>(options_.steps);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  const double rate = (done - static_cast<double>(first_step_)) / std::max(elapsed, 1e-9);
  const int width = 30, filled = static_cast<int>(width * done / total);
  char line[256];
  std::snprintf(line, sizeof line, "\r\033[K[%s%s] %lld/%lld loss %.4f lr %.2e %.1f ms/step ETA %s",
                std::string(static_cast<std::size_t>(filled), '#').c_str(),
                std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                static_cast<long long>(done), static_cast<long long>(total), loss, outcome.lr, step_ms,
                format_eta((total - done) / std::max(rate, 1e-9)).c_str());
  err_ << line << std::flush;
}

double TrainingTelemetry::tokens_per_second() const {
  if (tokens_per_second_.empty()) return 0;
  std::vector<double> sorted = tokens_per_second_;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

void TrainingTelemetry::send(sessions::Event event) {
  if (sink_) sink_->send(std::move(event));
}

std::string TrainingTelemetry::finish(double wall_seconds, const Engine& engine) {
  if (options_.progress_bar && rank_ == 0) err_ << "\n";
  // deepspeed.comm.log_summary(): rank 0 prints the per-op, per-size table of this rank's records.
  if (const auto* logger = engine.comms_logger(); logger && logger->has_data() && rank_ == 0)
    log_line(logger->format_summary());
  finished_ = true;
  if (!sink_) return "";
  if (auto* comm = engine.communicator()) comm->set_mark_sink(nullptr);
  if (owns_run_) sink_->send(sessions::RunEnd{"completed", unix_now(), wall_seconds, {{rank_, 0}}});
  sink_->close();
  return session_uid_;
}

}  // namespace shardscope::engine
