// The analyses themselves (docs/profiler.md, "Analyses"); text and JSON forms are in
// profile_analyses_format.cpp.
#include "profiler/profile_analyses.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "profiler/profile_selection.hpp"
#include "sessions/activity_stats.hpp"

namespace shardscope::profiler {
namespace {

using sessions::ActivityKind;
using sessions::ActivityRecord;

bool is_microstep(const std::string& name) {
  const std::string suffix = "_microstep";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// DeepSpeed's global timers and our engine's spelling of them. forward, backward and step are
// consecutive, disjoint parts of a step (engine.py times them one after another), so they add up.
bool is_top_level_phase(const std::string& name) {
  return name == "forward" || name == "fwd" || name == "backward" || name == "bwd" || name == "step";
}

// Timers of time spent waiting on collectives on the host: the gradient reduction after backward
// (bwd_allreduce, or reduce-scatter under ZeRO-2/3) and stage 3's parameter gathers.
bool is_comm_timer(const std::string& name) {
  if (is_microstep(name)) return false;
  for (const char* part : {"allreduce", "all_reduce", "reduce_scatter", "gather"})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

// Column order: forward, backward and its parts, gathers, step and its parts, then the rest by name.
std::pair<int, std::string> column_key(const std::string& name) {
  static const char* kOrder[] = {"forward", "fwd", "backward", "bwd", "backward_inner", "bwd_inner",
                                 "backward_allreduce", "bwd_allreduce", "backward_reduce_scatter",
                                 "reduce_scatter"};
  for (std::size_t i = 0; i < std::size(kOrder); ++i)
    if (name == kOrder[i]) return {static_cast<int>(i), ""};
  if (!is_microstep(name) && name.find("gather") != std::string::npos) return {20, name};
  if (name == "step") return {30, ""};
  if (name == "optimizer_step") return {31, ""};
  return {40 + (is_microstep(name) ? 1 : 0), name};
}

std::int64_t first_counted_step(const std::vector<sessions::StepMetrics>& steps,
                                const std::vector<sessions::TimerBreakdown>& timers, std::int64_t warmup) {
  std::optional<std::int64_t> first;
  for (const auto& s : steps) first = std::min(first.value_or(s.step), s.step);
  for (const auto& t : timers) first = std::min(first.value_or(t.step), t.step);
  return first.value_or(0) + std::max<std::int64_t>(warmup, 0);
}

struct MeanAccumulator {
  double sum = 0;
  std::int64_t n = 0;
  void add(const std::optional<double>& v) {
    if (v) sum += *v, ++n;
  }
  std::optional<double> mean() const { return n ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt; }
};

void fill_phase_means(PhaseRank& rank, std::size_t columns, std::int64_t first_counted) {
  std::vector<MeanAccumulator> per_column(columns);
  MeanAccumulator step_time, other;
  for (const auto& s : rank.steps) {
    if (s.step < first_counted) continue;
    ++rank.counted_steps;
    for (std::size_t c = 0; c < columns; ++c) per_column[c].add(s.ms[c]);
    step_time.add(s.step_time_ms);
    other.add(s.other_ms);
  }
  for (const auto& m : per_column) rank.mean_ms.push_back(m.mean());
  rank.mean_step_ms = step_time.mean();
  rank.mean_other_ms = other.mean();
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

bool is_communication_kernel(const std::string& name) { return sessions::is_nccl_kernel_name(name); }

const char* overlap_method_name(OverlapMethod method) {
  switch (method) {
    case OverlapMethod::kActivity: return "activity";
    case OverlapMethod::kTimers: return "timers";
    case OverlapMethod::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

PhaseBreakdown compute_phase_breakdown(const std::vector<sessions::StepMetrics>& steps,
                                       const std::vector<sessions::TimerBreakdown>& timers,
                                       const AnalysisOptions& options) {
  std::set<std::string> names;
  for (const auto& t : timers)
    for (const auto& v : t.timers) names.insert(v.name);
  std::vector<std::string> ordered(names.begin(), names.end());
  std::sort(ordered.begin(), ordered.end(),
            [](const std::string& a, const std::string& b) { return column_key(a) < column_key(b); });
  PhaseBreakdown out;
  std::map<std::string, std::size_t> index;
  for (const auto& name : ordered) {
    index[name] = out.columns.size();
    out.columns.push_back({name, is_top_level_phase(name)});
  }
  // (rank, step) -> row; the map keeps both in order.
  std::map<int, std::map<std::int64_t, PhaseStep>> rows;
  auto row = [&](int rank, std::int64_t step) -> PhaseStep& {
    PhaseStep& r = rows[rank][step];
    if (r.ms.empty()) r.step = step, r.ms.assign(out.columns.size(), std::nullopt);
    return r;
  };
  for (const auto& s : steps) row(s.rank, s.step).step_time_ms = s.step_time_ms;
  for (const auto& t : timers) {
    PhaseStep& r = row(t.rank, t.step);
    for (const auto& v : t.timers) r.ms[index[v.name]] = r.ms[index[v.name]].value_or(0) + v.ms;
  }
  const std::int64_t first_counted = first_counted_step(steps, timers, options.warmup_steps);
  for (auto& [rank, by_step] : rows) {
    PhaseRank pr;
    pr.rank = rank;
    for (auto& [step, r] : by_step) {
      std::optional<double> phase_sum;
      for (std::size_t c = 0; c < out.columns.size(); ++c)
        if (out.columns[c].top_level && r.ms[c]) phase_sum = phase_sum.value_or(0) + *r.ms[c];
      if (r.step_time_ms && phase_sum) r.other_ms = *r.step_time_ms - *phase_sum;
      pr.steps.push_back(std::move(r));
    }
    fill_phase_means(pr, out.columns.size(), first_counted);
    out.ranks.push_back(std::move(pr));
  }
  return out;
}

CommOverlapRank compute_comm_overlap_from_activities(int rank, const std::vector<ActivityRecord>& records) {
  return compute_comm_overlap_from_stats(sessions::summarize_activities(rank, records));
}

CommOverlapRank compute_comm_overlap_from_stats(const sessions::RankActivityStats& stats) {
  // Per device: |comm ∩ compute| over the unions of each (sessions::DeviceActivityStats). A kernel
  // on the comm kernel's own stream cannot run at the same time as it (a stream runs in order), so
  // intersecting with every compute kernel equals intersecting with those of other streams.
  CommOverlapRank out;
  out.rank = stats.rank;
  out.method = OverlapMethod::kActivity;
  double comm_ns = 0, hidden_ns = 0;
  for (const auto& d : stats.devices) {
    out.comm_kernels += d.comm_kernels;
    comm_ns += static_cast<double>(d.comm_ns);
    hidden_ns += static_cast<double>(d.hidden_ns);
  }
  out.comm_ms = comm_ns / kNsPerMs;
  out.hidden_ms = hidden_ns / kNsPerMs;
  out.exposed_ms = (comm_ns - hidden_ns) / kNsPerMs;
  if (comm_ns > 0) out.hidden_fraction = hidden_ns / comm_ns;
  out.note = out.comm_kernels
                 ? "profiled window: NCCL kernel time (union per device) overlapping other kernels is hidden, the rest exposed"
                 : "profiled window has no NCCL kernels (single rank, or collectives outside the window)";
  return out;
}

CommOverlapRank compute_comm_overlap_from_timers(int rank, const std::vector<sessions::CommRecord>& comms,
                                                 const std::vector<sessions::TimerBreakdown>& timers) {
  std::map<std::int64_t, double> comm_by_step, exposed_by_step;
  CommOverlapRank out;
  out.rank = rank;
  for (const auto& c : comms) {
    if (c.rank != rank) continue;
    comm_by_step[c.step] += c.latency_us / 1000.0;
    ++out.comm_kernels;
  }
  for (const auto& t : timers) {
    if (t.rank != rank) continue;
    for (const auto& v : t.timers)
      if (is_comm_timer(v.name)) exposed_by_step[t.step] += v.ms;
  }
  if (comm_by_step.empty() && exposed_by_step.empty()) {
    out.note = "no profiled window, no collective records and no communication timers";
    return out;
  }
  out.method = OverlapMethod::kTimers;
  if (comm_by_step.empty() || exposed_by_step.empty()) {
    const auto& only = comm_by_step.empty() ? exposed_by_step : comm_by_step;
    double total = 0;
    for (const auto& [step, ms] : only) total += ms;
    if (comm_by_step.empty()) {
      out.exposed_ms = total;
      out.note = "communication timers only (no collective records): exposed time; total and hidden unknown";
    } else {
      out.comm_ms = total;
      out.note = "collective records only (no communication timers): total time; hidden and exposed unknown";
    }
    return out;
  }
  // Both: compare over the steps that have both, so a step logged by only one source cannot skew it.
  double comm = 0, exposed = 0;
  for (const auto& [step, ms] : comm_by_step) {
    const auto it = exposed_by_step.find(step);
    if (it == exposed_by_step.end()) continue;
    comm += ms;
    exposed += it->second;
  }
  out.comm_ms = comm;
  out.exposed_ms = exposed;
  out.hidden_ms = std::max(0.0, comm - exposed);
  if (comm > 0) out.hidden_fraction = *out.hidden_ms / comm;
  out.note = "timers: total = summed collective latencies, exposed = communication timers (bwd_allreduce, "
             "reduce_scatter, gathers), hidden = total - exposed; steps with both only";
  return out;
}

TopKernelsRank compute_top_kernels(int rank, const std::vector<ActivityRecord>& records, std::size_t top_n) {
  return compute_top_kernels_from_stats(sessions::summarize_activities(rank, records), top_n);
}

TopKernelsRank compute_top_kernels_from_stats(const sessions::RankActivityStats& stats, std::size_t top_n) {
  std::int64_t total_ns = 0;
  for (const auto& n : stats.names)
    if (n.kind == ActivityKind::kKernel) total_ns += n.total_ns;
  TopKernelsRank out;
  out.rank = stats.rank;
  out.kernel_time_ms = static_cast<double>(total_ns) / kNsPerMs;
  for (const auto& n : stats.names) {  // by name: the stable sort below breaks ties by name
    if (n.kind != ActivityKind::kKernel) continue;
    KernelStat k;
    k.name = n.name;
    k.calls = n.calls;
    k.total_ms = static_cast<double>(n.total_ns) / kNsPerMs;
    k.mean_us = static_cast<double>(n.total_ns) / static_cast<double>(n.calls) / 1000.0;
    k.share = total_ns > 0 ? static_cast<double>(n.total_ns) / static_cast<double>(total_ns) : 0;
    k.is_communication = is_communication_kernel(n.name);
    out.kernels.push_back(std::move(k));
  }
  out.distinct_kernels = out.kernels.size();
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelStat& a, const KernelStat& b) { return a.total_ms > b.total_ms; });
  if (top_n > 0 && out.kernels.size() > top_n) out.kernels.resize(top_n);
  return out;
}

std::vector<DeviceIdle> compute_gpu_idle(int rank, const std::vector<ActivityRecord>& records) {
  return compute_gpu_idle_from_stats(sessions::summarize_activities(rank, records));
}

std::vector<DeviceIdle> compute_gpu_idle_from_stats(const sessions::RankActivityStats& stats) {
  std::vector<DeviceIdle> out;
  for (const auto& s : stats.devices) {
    DeviceIdle d;
    d.rank = stats.rank;
    d.device = s.device;
    d.window_start_ns = s.window_start_ns;
    d.window_end_ns = s.window_end_ns;
    d.window_ms = static_cast<double>(d.window_end_ns - d.window_start_ns) / kNsPerMs;
    d.busy_ms = static_cast<double>(s.busy_ns) / kNsPerMs;
    d.idle_ms = d.window_ms - d.busy_ms;
    d.idle_fraction = d.window_ms > 0 ? d.idle_ms / d.window_ms : 0;
    d.activities = s.activities;
    out.push_back(d);
  }
  return out;
}

StragglerAnalysis compute_stragglers(const std::vector<sessions::StepMetrics>& steps, const AnalysisOptions& options) {
  const std::int64_t first_counted = first_counted_step(steps, {}, options.warmup_steps);
  std::map<std::int64_t, std::map<int, double>> by_step;
  for (const auto& s : steps)
    if (s.step_time_ms && s.step >= first_counted) by_step[s.step][s.rank] = *s.step_time_ms;
  StragglerAnalysis out;
  std::map<int, StragglerRank> ranks;
  for (const auto& [step, times] : by_step) {
    StragglerStep row;
    row.step = step;
    row.ranks = static_cast<int>(times.size());
    std::vector<double> values;
    row.slowest_rank = times.begin()->first;
    row.slowest_ms = row.fastest_ms = times.begin()->second;
    for (const auto& [rank, ms] : times) {
      values.push_back(ms);
      if (ms > row.slowest_ms) row.slowest_ms = ms, row.slowest_rank = rank;
      row.fastest_ms = std::min(row.fastest_ms, ms);
    }
    row.median_ms = median_of(values);
    row.lag_ms = row.slowest_ms - row.median_ms;
    for (const auto& [rank, ms] : times) {
      StragglerRank& r = ranks[rank];
      r.rank = rank;
      ++r.steps;
      r.mean_step_ms += ms;
      r.mean_lag_ms += ms - row.median_ms;
    }
    ++ranks[row.slowest_rank].slowest_count;
    out.steps.push_back(row);
  }
  for (auto& [rank, r] : ranks) {
    r.mean_step_ms /= static_cast<double>(r.steps);
    r.mean_lag_ms /= static_cast<double>(r.steps);
    out.ranks.push_back(r);
  }
  return out;
}

ProfileAnalyses analyze_session(sessions::Store& store, std::int64_t session_id, const AnalysisOptions& options) {
  return analyze_records(load_profile_summary(store, session_id), options);
}

}  // namespace shardscope::profiler
