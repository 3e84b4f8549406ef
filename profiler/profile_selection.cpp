#include "profiler/profile_selection.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "profiler/profiler_error.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::profiler {
namespace {

using sessions::ActivityRecord;

bool overlaps(std::int64_t a0, std::int64_t a1, const std::pair<std::int64_t, std::int64_t>& range) {
  return a0 < range.second && (a1 > range.first || (a1 == a0 && a0 >= range.first));
}

std::pair<std::int64_t, std::int64_t> step_span(const sessions::StepMetrics& m) {
  const auto end = static_cast<std::int64_t>(std::llround(m.wall_time * 1e9));
  return {step_start_ns(m), end};
}

/// Keeps an activity the selection covers, cut to its time range; false when it drops it.
bool keep_activity(ActivityRecord& a, const ProfileSelection& s) {
  if (s.step && a.step != *s.step) return false;
  if (!s.kernel.empty() && a.name != s.kernel) return false;
  if (!s.collective.empty() && collective_of_kernel(a.name) != s.collective) return false;
  if (s.time_range_ns) {
    if (!overlaps(a.start_ns, a.end_ns, *s.time_range_ns)) return false;
    a.start_ns = std::max(a.start_ns, s.time_range_ns->first);
    a.end_ns = std::min(a.end_ns, s.time_range_ns->second);
  }
  return true;
}

/// The steps a selection covers; nullopt = every step (nothing in the selection names steps).
std::optional<std::set<std::int64_t>> selected_steps(const ProfileRecords& in, const ProfileRecords& kept,
                                                     const ProfileSelection& s) {
  std::optional<std::set<std::int64_t>> steps;
  auto narrow = [&steps](const std::set<std::int64_t>& allowed) {
    if (!steps) {
      steps = allowed;
      return;
    }
    std::set<std::int64_t> both;
    for (auto step : *steps)
      if (allowed.count(step)) both.insert(step);
    steps = both;
  };
  if (s.step) narrow({*s.step});
  if (s.time_range_ns) {
    std::set<std::int64_t> inside;
    for (const auto& m : in.steps) {
      const auto [a, b] = step_span(m);
      if (overlaps(a, b, *s.time_range_ns)) inside.insert(m.step);
    }
    narrow(inside);
  }
  if (!s.kernel.empty() || !s.collective.empty()) {
    // The steps the kernel or collective ran in, when the records say (activities outside any
    // step, or no step labels at all, leave the steps alone).
    std::set<std::int64_t> ran;
    for (const auto& [rank, list] : kept.activities)
      for (const auto& a : list)
        if (a.step >= 0) ran.insert(a.step);
    if (!s.collective.empty())
      for (const auto& c : kept.comms) ran.insert(c.step);
    if (!ran.empty()) narrow(ran);
  }
  return steps;
}

// (f) and (g) for the ranks whose ranges hold CPU operators (an imported PyTorch profiler trace).
void add_operator_analyses(const ProfileRecords& r, const AnalysisOptions& options, ProfileAnalyses& out) {
  out.operator_order = options.operator_order;
  for (const auto& [rank, ranges] : r.nvtx) {
    if (std::none_of(ranges.begin(), ranges.end(), is_cpu_operator)) continue;
    out.has_cpu_operators = true;
    out.top_operators.push_back(compute_top_operators(rank, ranges, options.top_operators, options.operator_order));
    for (const auto& h : compute_host_idle(rank, ranges)) out.host_idle.push_back(h);
  }
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ms);
  return text;
}

}  // namespace

std::int64_t step_start_ns(const sessions::StepMetrics& m) {
  const double end_ns = m.wall_time * 1e9;
  return static_cast<std::int64_t>(std::llround(end_ns - m.step_time_ms.value_or(0) * 1e6));
}

namespace {

// Steps, timers and collectives of every rank, and the ranks: what both loaders read alike.
ProfileRecords load_run_rows(sessions::Store& store, std::int64_t session_id, std::set<int>& ranks) {
  ProfileRecords r;
  const auto detail = sessions::load_session(store, session_id);
  r.session_id = session_id;
  r.session_uid = detail.info.uid;
  r.steps = sessions::load_steps(store, session_id);
  r.timers = sessions::load_timer_breakdowns(store, session_id);
  r.comms = sessions::load_comm_records(store, session_id);
  for (const auto& k : detail.ranks) ranks.insert(k.info.rank);
  for (const auto& s : r.steps) ranks.insert(s.rank);
  for (const auto& t : r.timers) ranks.insert(t.rank);
  for (const auto& c : r.comms) ranks.insert(c.rank);
  return r;
}

}  // namespace

ProfileRecords load_profile_records(sessions::Store& store, std::int64_t session_id) {
  std::set<int> ranks;
  ProfileRecords r = load_run_rows(store, session_id, ranks);
  for (const int rank : sessions::load_profiled_ranks(store, session_id)) {
    ranks.insert(rank);
    if (auto a = sessions::load_activities(store, session_id, rank); !a.empty()) r.activities[rank] = std::move(a);
    if (auto n = sessions::load_nvtx(store, session_id, rank); !n.empty()) r.nvtx[rank] = std::move(n);
  }
  r.ranks.assign(ranks.begin(), ranks.end());
  return r;
}

ProfileRecords load_profile_summary(sessions::Store& store, std::int64_t session_id) {
  std::set<int> ranks;
  ProfileRecords r = load_run_rows(store, session_id, ranks);
  for (const int rank : sessions::load_activity_ranks(store, session_id))
    r.activity_stats[rank] = sessions::load_activity_stats(store, session_id, rank);
  for (const int rank : sessions::load_profiled_ranks(store, session_id)) {
    ranks.insert(rank);
    // Only the ranges of an imported trace's ranks enter an analysis (the CPU operators).
    if (sessions::has_cpu_operator_ranges(store, session_id, rank)) r.nvtx[rank] = sessions::load_nvtx(store, session_id, rank);
  }
  r.ranks.assign(ranks.begin(), ranks.end());
  return r;
}

ProfileRecords select_records(const ProfileRecords& in, const ProfileSelection& s) {
  if (s.empty()) return in;
  ProfileRecords out;
  out.session_id = in.session_id;
  out.session_uid = in.session_uid;
  out.ranks = in.ranks;
  for (const auto& [rank, list] : in.activities)
    for (ActivityRecord a : list)
      if (keep_activity(a, s)) out.activities[rank].push_back(std::move(a));
  for (const auto& c : in.comms)
    if ((s.collective.empty() || c.op == s.collective) && (!s.step || c.step == *s.step)) out.comms.push_back(c);
  const auto steps = selected_steps(in, out, s);
  auto step_kept = [&steps](std::int64_t step) { return !steps || steps->count(step) > 0; };
  for (const auto& m : in.steps)
    if (step_kept(m.step)) out.steps.push_back(m);
  for (const auto& t : in.timers)
    if (step_kept(t.step)) out.timers.push_back(t);
  if (steps) out.comms.erase(std::remove_if(out.comms.begin(), out.comms.end(),
                                            [&](const sessions::CommRecord& c) { return !step_kept(c.step); }),
                             out.comms.end());
  for (const auto& [rank, list] : in.nvtx)
    for (const auto& n : list)
      if ((!s.step || n.step == *s.step) && (!s.time_range_ns || overlaps(n.start_ns, n.end_ns, *s.time_range_ns)))
        out.nvtx[rank].push_back(n);
  return out;
}

ProfileAnalyses analyze_records(const ProfileRecords& r, const AnalysisOptions& options) {
  ProfileAnalyses out;
  out.session_id = r.session_id;
  out.session_uid = r.session_uid;
  out.phases = compute_phase_breakdown(r.steps, r.timers, options);
  out.stragglers = compute_stragglers(r.steps, options);
  out.has_profiled_window = !r.activities.empty() || !r.activity_stats.empty();
  for (const int rank : r.ranks) {
    std::optional<sessions::RankActivityStats> summarized;
    const sessions::RankActivityStats* stats = nullptr;
    if (const auto it = r.activities.find(rank); it != r.activities.end() && !it->second.empty())
      stats = &summarized.emplace(sessions::summarize_activities(rank, it->second));
    else if (const auto at = r.activity_stats.find(rank); at != r.activity_stats.end())
      stats = &at->second;
    if (!stats) {
      out.comm_overlap.push_back(compute_comm_overlap_from_timers(rank, r.comms, r.timers));
      continue;
    }
    out.comm_overlap.push_back(compute_comm_overlap_from_stats(*stats));
    out.top_kernels.push_back(compute_top_kernels_from_stats(*stats, options.top_kernels));
    for (const auto& d : compute_gpu_idle_from_stats(*stats)) out.gpu_idle.push_back(d);
  }
  add_operator_analyses(r, options, out);
  return out;
}

std::vector<sessions::CommOpStat> summarize_collectives(const std::vector<sessions::CommRecord>& comms) {
  std::map<std::string, sessions::CommOpStat> by_op;
  std::map<std::string, std::pair<double, double>> bandwidth;  // op -> summed algbw, busbw
  for (const auto& c : comms) {
    auto& stat = by_op[c.op];
    stat.op = c.op;
    ++stat.count;
    stat.total_bytes += c.bytes;
    stat.total_latency_s += c.latency_us / 1e6;
    bandwidth[c.op].first += c.algbw_gbps;
    bandwidth[c.op].second += c.busbw_gbps;
  }
  std::vector<sessions::CommOpStat> out;
  for (auto& [op, stat] : by_op) {
    stat.mean_algbw_gbps = bandwidth[op].first / static_cast<double>(stat.count);
    stat.mean_busbw_gbps = bandwidth[op].second / static_cast<double>(stat.count);
    out.push_back(stat);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.total_latency_s > b.total_latency_s; });
  return out;
}

std::int64_t profile_origin_ns(const ProfileRecords& r) {
  std::optional<std::int64_t> origin;
  auto take = [&origin](std::int64_t t) { origin = std::min(origin.value_or(t), t); };
  for (const auto& [rank, list] : r.activities)
    if (!list.empty()) take(list.front().start_ns);
  for (const auto& [rank, list] : r.nvtx)
    for (const auto& n : list) take(n.start_ns);
  for (const auto& m : r.steps) take(step_start_ns(m));
  return origin.value_or(0);
}

std::string collective_of_kernel(const std::string& name) {
  if (!is_communication_kernel(name)) return {};
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // NCCL's kernel names carry the collective in CamelCase: ncclDevKernel_AllReduce_Sum_f32_RING_LL.
  static const std::pair<const char*, const char*> kOps[] = {
      {"reducescatter", "reduce_scatter"}, {"allreduce", "all_reduce"}, {"allgather", "all_gather"},
      {"broadcast", "broadcast"},          {"alltoall", "all_to_all"},  {"sendrecv", "send_recv"},
      {"reduce", "reduce"}};
  for (const auto& [needle, op] : kOps)
    if (lower.find(needle) != std::string::npos) return op;
  return {};
}

std::string describe_selection(const ProfileSelection& s, std::int64_t origin_ns) {
  std::vector<std::string> parts;
  if (s.time_range_ns)
    parts.push_back("time " + ms_text((s.time_range_ns->first - origin_ns) / 1e6) + "-" +
                    ms_text((s.time_range_ns->second - origin_ns) / 1e6) + " ms");
  if (s.step) parts.push_back("step " + std::to_string(*s.step));
  if (!s.kernel.empty()) parts.push_back("kernel " + s.kernel);
  if (!s.collective.empty()) parts.push_back("collective " + s.collective);
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text.empty() ? "everything" : text;
}

std::vector<std::string> selection_arguments(const ProfileSelection& s, std::int64_t origin_ns) {
  std::vector<std::string> a;
  if (s.time_range_ns)
    a.insert(a.end(), {"--select-time", ms_text((s.time_range_ns->first - origin_ns) / 1e6) + ":" +
                                            ms_text((s.time_range_ns->second - origin_ns) / 1e6)});
  if (s.step) a.insert(a.end(), {"--select-step", std::to_string(*s.step)});
  if (!s.kernel.empty()) a.insert(a.end(), {"--select-kernel", s.kernel});
  if (!s.collective.empty()) a.insert(a.end(), {"--select-collective", s.collective});
  return a;
}

std::pair<std::int64_t, std::int64_t> parse_time_range_ms(const std::string& text, std::int64_t origin_ns) {
  const auto colon = text.find(':');
  const std::string usage = "--select-time '" + text + "': expected START:END in ms from the profile's first "
                            "record, e.g. --select-time 1.5:3.25";
  if (colon == std::string::npos) throw ProfilerError(usage);
  double start = 0, end = 0;
  try {
    std::size_t used = 0;
    start = std::stod(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("trailing");
    end = std::stod(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw ProfilerError(usage);
  }
  if (!(end > start)) throw ProfilerError(usage + " (END must be after START)");
  return {origin_ns + static_cast<std::int64_t>(std::llround(start * 1e6)),
          origin_ns + static_cast<std::int64_t>(std::llround(end * 1e6))};
}

}  // namespace shardscope::profiler
