#include "sessions/regression_samples.hpp"

#include <algorithm>
#include <cmath>

#include "sessions/errors.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::sessions {
namespace {

std::vector<CurvePoint> from_step(const std::vector<CurvePoint>& points, std::int64_t first_step) {
  std::vector<CurvePoint> out;
  for (const auto& p : points)
    if (p.step >= first_step && std::isfinite(p.value)) out.push_back(p);
  return out;
}

// The same from comm_stats (schema 10): the slowest rank's summed latency is kept per op and step.
std::map<std::string, std::vector<CurvePoint>> comm_stat_series(Store& store, std::int64_t id, std::int64_t first_step) {
  Statement s(store.db(), "SELECT op, step, slowest_rank_us FROM comm_stats WHERE session_id = ? AND step >= ? "
                          "ORDER BY op, step");
  s.bind(1, id).bind(2, first_step);
  std::map<std::string, std::vector<CurvePoint>> out;
  while (s.step()) out["comm:" + s.text(0)].push_back({s.int64(1), s.real(2) / 1000.0, 0});
  return out;
}

// Time in each collective per step: per rank the sum of its records' latencies, then the slowest
// rank (the step waits for it), in ms.
std::map<std::string, std::vector<CurvePoint>> comm_series(Store& store, std::int64_t id, std::int64_t first_step) {
  if (has_stats(store)) return comm_stat_series(store, id, first_step);
  std::map<std::string, std::map<std::int64_t, std::map<int, double>>> us;  // op -> step -> rank -> us
  for (const auto& r : load_comm_records(store, id))
    if (r.step >= first_step) us[r.op][r.step][r.rank] += r.latency_us;
  std::map<std::string, std::vector<CurvePoint>> out;
  for (const auto& [op, steps] : us)
    for (const auto& [step, ranks] : steps) {
      double slowest = 0;
      for (const auto& [rank, v] : ranks) slowest = std::max(slowest, v);
      out["comm:" + op].push_back({step, slowest / 1000.0, 0});
    }
  return out;
}

void add_throughput(Store& store, std::int64_t id, std::int64_t first_step, RunMetrics& out) {
  auto tokens = from_step(load_curve(store, id, Metric::kTokensPerS), first_step);
  if (!tokens.empty()) {
    out.throughput_unit = "tokens/s";
    out.series["throughput"] = std::move(tokens);
    return;
  }
  auto samples = from_step(load_curve(store, id, Metric::kSamplesPerS), first_step);
  if (samples.empty()) return;
  out.throughput_unit = "samples/s";
  out.series["throughput"] = std::move(samples);
}

// MFU per step: the ranks' mean achieved TFLOP/s over the device's dense peak.
void add_mfu(Store& store, std::int64_t id, std::int64_t first_step, RunMetrics& out) {
  const double peak = out.detail.peak_tflops_per_gpu.value_or(0);
  if (peak <= 0) return;
  auto tflops = from_step(load_curve(store, id, Metric::kTflops), first_step);
  for (auto& p : tflops) p.value /= peak;
  if (!tflops.empty()) out.series["mfu"] = std::move(tflops);
}

void add_memory(Store& store, std::int64_t id, RunMetrics& out) {
  auto peak = load_curve(store, id, Metric::kMemPeak);
  if (peak.empty()) peak = load_curve(store, id, Metric::kMemAllocated);  // as the summary does
  if (!peak.empty()) out.series["peak_memory"] = std::move(peak);
  auto reserved = load_curve(store, id, Metric::kMemReserved);
  if (!reserved.empty()) out.series["reserved_memory"] = std::move(reserved);
}

}  // namespace

std::int64_t default_warmup_steps(std::size_t steps) {
  return std::max<std::int64_t>(2, static_cast<std::int64_t>(std::ceil(0.1 * static_cast<double>(steps))));
}

RunMetrics load_run_metrics(Store& store, std::int64_t id, std::optional<std::int64_t> warmup_steps) {
  RunMetrics out;
  out.detail = load_session(store, id);
  const auto step_time = load_curve(store, id, Metric::kStepTime);
  out.warmup_steps = warmup_steps.value_or(default_warmup_steps(step_time.size()));
  if (out.warmup_steps < 0)
    throw SessionsError(ErrorKind::kInvalidArgument, "--warmup must be 0 or more, got " + std::to_string(out.warmup_steps));
  // Warm-up counts the run's own first steps, so a resumed run (first step 1000) is treated alike.
  const std::int64_t first_step =
      static_cast<std::size_t>(out.warmup_steps) < step_time.size()
          ? step_time[static_cast<std::size_t>(out.warmup_steps)].step
          : (step_time.empty() ? out.warmup_steps : step_time.back().step + 1);
  out.series["step_time"] = from_step(step_time, first_step);
  add_throughput(store, id, first_step, out);
  add_mfu(store, id, first_step, out);
  for (const auto& name : load_timer_names(store, id))
    out.series["phase:" + name] = from_step(load_timer_curve(store, id, name), first_step);
  for (auto& [name, points] : comm_series(store, id, first_step)) out.series[name] = std::move(points);
  add_memory(store, id, out);
  out.series["loss"] = from_step(load_curve(store, id, Metric::kLoss), first_step);
  for (auto it = out.series.begin(); it != out.series.end();) it = it->second.empty() ? out.series.erase(it) : ++it;
  return out;
}

MetricKind metric_kind(const std::string& m) {
  if (m == "step_time" || m.rfind("phase:", 0) == 0 || m.rfind("comm:", 0) == 0) return {"ms", RunStatistic::kMedian, true};
  if (m == "throughput") return {"tokens/s", RunStatistic::kMedian, false};
  if (m == "mfu") return {"fraction", RunStatistic::kMedian, false};
  if (m == "peak_memory" || m == "reserved_memory") return {"bytes", RunStatistic::kMax, true, "max over all steps"};
  if (m == "loss") return {"", RunStatistic::kMean, true, "mean over the shared steps after warm-up"};
  throw SessionsError(ErrorKind::kInvalidArgument,
                      "unknown metric '" + m + "': use step_time, throughput, mfu, peak_memory, reserved_memory, loss, "
                      "phase:NAME (a timer: phase:forward) or comm:OP (a collective: comm:all_reduce)");
}

RunSamples values_of(const std::vector<CurvePoint>& points) {
  RunSamples out;
  out.reserve(points.size());
  for (const auto& p : points) out.push_back(p.value);
  return out;
}

}  // namespace shardscope::sessions
