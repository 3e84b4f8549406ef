// Text tables and JSON of the profile analyses (profile_analyses.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profiler/profile_analyses.hpp"

namespace shardscope::profiler {
namespace {

using nlohmann::json;
using Table = std::vector<std::vector<std::string>>;

// Columns padded to their widest cell; the first row is the header, underlined; numbers right-aligned.
std::string table_text(const Table& rows) {
  if (rows.empty()) return "";
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  auto numeric = [](const std::string& s) { return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-'); };
  std::ostringstream out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      const std::string& cell = rows[r][i];
      const std::string pad(width[i] - cell.size(), ' ');
      const bool right = r > 0 && numeric(cell) && i > 0;
      line += right ? pad + cell : cell + (i + 1 < rows[r].size() ? pad : "");
      if (i + 1 < rows[r].size()) line += "  ";
    }
    out << line << "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w + 2;
      out << std::string(total - 2, '-') << "\n";
    }
  }
  return out.str();
}

std::string fixed(double v, int decimals = 2) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : "inf";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

std::string fixed(const std::optional<double>& v, int decimals = 2) { return v ? fixed(*v, decimals) : "-"; }

std::string percent(const std::optional<double>& fraction) { return fraction ? fixed(*fraction * 100, 1) + " %" : "-"; }

std::string shortened(const std::string& name, std::size_t max = 80) {
  return name.size() <= max ? name : name.substr(0, max - 3) + "...";
}

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json optional_values(const std::vector<std::optional<double>>& values) {
  json out = json::array();
  for (const auto& v : values) out.push_back(opt(v));
  return out;
}

}  // namespace

std::string format_phase_breakdown(const PhaseBreakdown& p, const AnalysisOptions& options) {
  if (p.ranks.empty()) return "no step times or timers recorded\n";
  std::vector<std::string> header{"rank", "steps", "step time ms"};
  for (const auto& c : p.columns) header.push_back(c.name + (c.top_level ? "" : "*"));
  header.push_back("other ms");
  Table means{header};
  for (const auto& r : p.ranks) {
    std::vector<std::string> row{std::to_string(r.rank), std::to_string(r.counted_steps), fixed(r.mean_step_ms)};
    for (const auto& v : r.mean_ms) row.push_back(fixed(v));
    row.push_back(fixed(r.mean_other_ms));
    means.push_back(row);
  }
  std::string out = "mean ms per step (* = inside another phase, not summed; other = step time - (forward + backward + step))\n" +
                    table_text(means);
  // The last steps, every rank: a per-step view that stays short on a 10,000-step run.
  std::set<std::int64_t> all_steps;
  for (const auto& r : p.ranks)
    for (const auto& s : r.steps) all_steps.insert(s.step);
  if (options.text_step_rows == 0 || all_steps.empty()) return out;
  std::vector<std::int64_t> last(all_steps.begin(), all_steps.end());
  if (last.size() > options.text_step_rows) last.erase(last.begin(), last.end() - static_cast<long>(options.text_step_rows));
  header[1] = "step";
  Table per_step{header};
  for (const auto step : last)
    for (const auto& r : p.ranks)
      for (const auto& s : r.steps) {
        if (s.step != step) continue;
        std::vector<std::string> row{std::to_string(r.rank), std::to_string(s.step), fixed(s.step_time_ms)};
        for (const auto& v : s.ms) row.push_back(fixed(v));
        row.push_back(fixed(s.other_ms));
        per_step.push_back(row);
      }
  out += "\nlast " + std::to_string(last.size()) + " of " + std::to_string(all_steps.size()) +
         " steps (--json has every step)\n" + table_text(per_step);
  return out;
}

std::string format_comm_overlap(const std::vector<CommOverlapRank>& ranks) {
  if (ranks.empty()) return "no ranks recorded\n";
  Table t{{"rank", "method", "comm ms", "hidden ms", "exposed ms", "hidden", "comm ops"}};
  std::vector<std::string> notes;
  for (const auto& r : ranks) {
    t.push_back({std::to_string(r.rank), overlap_method_name(r.method), fixed(r.comm_ms), fixed(r.hidden_ms),
                 fixed(r.exposed_ms), percent(r.hidden_fraction), std::to_string(r.comm_kernels)});
    if (std::find(notes.begin(), notes.end(), r.note) == notes.end()) notes.push_back(r.note);
  }
  std::string out = table_text(t);
  for (const auto& n : notes) out += "  " + n + "\n";
  return out;
}

std::string format_top_kernels(const std::vector<TopKernelsRank>& ranks) {
  if (ranks.empty()) return "no kernel records\n";
  std::string out;
  for (const auto& r : ranks) {
    out += (out.empty() ? "" : "\n") + std::string("rank ") + std::to_string(r.rank) + ": " + fixed(r.kernel_time_ms) +
           " ms in " + std::to_string(r.distinct_kernels) + " distinct kernels\n";
    Table t{{"kernel", "calls", "total ms", "mean us", "share", "comm"}};
    for (const auto& k : r.kernels)
      t.push_back({shortened(k.name), std::to_string(k.calls), fixed(k.total_ms, 3), fixed(k.mean_us, 1),
                   percent(k.share), k.is_communication ? "yes" : ""});
    out += table_text(t);
  }
  return out;
}

std::string format_gpu_idle(const std::vector<DeviceIdle>& devices) {
  if (devices.empty()) return "no activity records\n";
  Table t{{"rank", "device", "window ms", "busy ms", "idle ms", "idle", "activities"}};
  for (const auto& d : devices)
    t.push_back({std::to_string(d.rank), std::to_string(d.device), fixed(d.window_ms, 3), fixed(d.busy_ms, 3),
                 fixed(d.idle_ms, 3), percent(d.idle_fraction), std::to_string(d.activities)});
  return table_text(t);
}

std::string format_stragglers(const StragglerAnalysis& s, const AnalysisOptions& options) {
  if (s.steps.empty()) return "no step times recorded\n";
  Table ranks{{"rank", "steps", "slowest in", "mean step ms", "mean lag vs median ms"}};
  for (const auto& r : s.ranks)
    ranks.push_back({std::to_string(r.rank), std::to_string(r.steps), std::to_string(r.slowest_count),
                     fixed(r.mean_step_ms), fixed(r.mean_lag_ms, 3)});
  std::string out = table_text(ranks);
  const bool several = std::any_of(s.steps.begin(), s.steps.end(), [](const auto& x) { return x.ranks > 1; });
  if (!several) return out + "one rank per step: no straggler to find\n";
  if (options.text_step_rows == 0) return out;
  std::vector<StragglerStep> worst = s.steps;
  std::stable_sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return a.lag_ms > b.lag_ms; });
  if (worst.size() > options.text_step_rows) worst.resize(options.text_step_rows);
  Table steps{{"step", "ranks", "slowest rank", "slowest ms", "median ms", "lag ms", "fastest ms"}};
  for (const auto& x : worst)
    steps.push_back({std::to_string(x.step), std::to_string(x.ranks), std::to_string(x.slowest_rank),
                     fixed(x.slowest_ms), fixed(x.median_ms), fixed(x.lag_ms, 3), fixed(x.fastest_ms)});
  out += "\nlargest lags (" + std::to_string(worst.size()) + " of " + std::to_string(s.steps.size()) +
         " steps; --json has every step)\n" + table_text(steps);
  return out;
}

std::string format_top_operators(const std::vector<TopOperatorsRank>& ranks, OperatorOrder order) {
  if (ranks.empty()) return "no CPU operator records\n";
  std::string out;
  for (const auto& r : ranks) {
    out += (out.empty() ? "" : "\n") + std::string("rank ") + std::to_string(r.rank) + ": " + fixed(r.self_time_ms, 3) +
           " ms inside " + std::to_string(r.operator_calls) + " operator calls, " + std::to_string(r.distinct) +
           " distinct (name, shapes); " + std::to_string(r.forward_backward_links) +
           " backward calls linked to their forward operator; by " + operator_order_name(order) + " time\n";
    Table t{{"operator", "input shapes", "calls", "self ms", "total ms", "mean us", "self", "forward op"}};
    for (const auto& o : r.operators)
      t.push_back({shortened(o.name, 60), shortened(o.shapes, 40), std::to_string(o.calls),
                   fixed(o.self_ms, 3), fixed(o.total_ms, 3), fixed(o.mean_us, 1), percent(o.self_share),
                   o.forward_op.empty() ? "" : shortened(o.forward_op, 40)});
    out += table_text(t);
  }
  return out;
}

std::string format_host_idle(const std::vector<HostIdle>& threads) {
  if (threads.empty()) return "no CPU operator records\n";
  Table t{{"rank", "thread", "window", "window ms", "in ops ms", "outside ms", "outside", "operators"}};
  for (const auto& h : threads)
    t.push_back({std::to_string(h.rank), std::to_string(h.thread), h.step_windows ? "steps" : "ops span",
                 fixed(h.window_ms, 3), fixed(h.busy_ms, 3), fixed(h.idle_ms, 3), percent(h.idle_fraction),
                 std::to_string(h.operators)});
  return table_text(t) + "  window: the thread's ProfilerStep#N ranges (steps), else its first to last operator\n";
}

std::string format_profile_analyses(const ProfileAnalyses& a, const AnalysisOptions& options) {
  std::string out = "== Time per phase ==\n" + format_phase_breakdown(a.phases, options);
  out += "\n== Communication: hidden behind compute vs exposed ==\n" + format_comm_overlap(a.comm_overlap);
  if (!a.has_profiled_window && a.has_cpu_operators) {
    out += "\n== Profiled window ==\nno GPU records in the profiled window (a CPU run, or a trace recorded without "
           "ProfilerActivity.CUDA): no top kernels and no GPU idle time; the CPU operators follow\n";
  } else if (!a.has_profiled_window) {
    out += "\n== Profiled window ==\nthis session has no profiled window (no kernel, memcpy or memset records), so "
           "there are no top kernels and no GPU idle time; record one with a `flops_profiler` block "
           "(profile_step) or the profiler's window options, on a CUDA build with CUPTI\n";
  } else {
    out += "\n== Top kernels by total time ==\n" + format_top_kernels(a.top_kernels);
    out += "\n== GPU idle time in the profiled window ==\n" + format_gpu_idle(a.gpu_idle);
  }
  if (a.has_cpu_operators) {
    out += std::string("\n== Top CPU operators by ") + operator_order_name(a.operator_order) + " time ==\n" +
           format_top_operators(a.top_operators, a.operator_order);
    out += "\n== Host time outside CPU operators ==\n" + format_host_idle(a.host_idle);
  }
  out += "\n== Slowest rank per step ==\n" + format_stragglers(a.stragglers, options);
  return out;
}

json to_json(const PhaseBreakdown& p) {
  json columns = json::array(), ranks = json::array();
  for (const auto& c : p.columns) columns.push_back({{"name", c.name}, {"top_level", c.top_level}});
  for (const auto& r : p.ranks) {
    json steps = json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"step", s.step}, {"step_time_ms", opt(s.step_time_ms)}, {"ms", optional_values(s.ms)},
                       {"other_ms", opt(s.other_ms)}});
    ranks.push_back({{"rank", r.rank}, {"counted_steps", r.counted_steps}, {"mean_step_ms", opt(r.mean_step_ms)},
                     {"mean_ms", optional_values(r.mean_ms)}, {"mean_other_ms", opt(r.mean_other_ms)},
                     {"steps", steps}});
  }
  return {{"columns", columns}, {"ranks", ranks}};
}

json to_json(const CommOverlapRank& r) {
  return {{"rank", r.rank},         {"method", overlap_method_name(r.method)},
          {"comm_ms", opt(r.comm_ms)}, {"hidden_ms", opt(r.hidden_ms)},
          {"exposed_ms", opt(r.exposed_ms)}, {"hidden_fraction", opt(r.hidden_fraction)},
          {"comm_kernels", r.comm_kernels}, {"note", r.note}};
}

json to_json(const TopKernelsRank& r) {
  json kernels = json::array();
  for (const auto& k : r.kernels)
    kernels.push_back({{"name", k.name}, {"calls", k.calls}, {"total_ms", k.total_ms}, {"mean_us", k.mean_us},
                       {"share", k.share}, {"is_communication", k.is_communication}});
  return {{"rank", r.rank}, {"kernel_time_ms", r.kernel_time_ms}, {"distinct_kernels", r.distinct_kernels},
          {"kernels", kernels}};
}

json to_json(const DeviceIdle& d) {
  return {{"rank", d.rank},          {"device", d.device},   {"window_start_ns", d.window_start_ns},
          {"window_end_ns", d.window_end_ns}, {"window_ms", d.window_ms}, {"busy_ms", d.busy_ms},
          {"idle_ms", d.idle_ms},    {"idle_fraction", d.idle_fraction}, {"activities", d.activities}};
}

json to_json(const StragglerAnalysis& s) {
  json steps = json::array(), ranks = json::array();
  for (const auto& x : s.steps)
    steps.push_back({{"step", x.step}, {"ranks", x.ranks}, {"slowest_rank", x.slowest_rank},
                     {"slowest_ms", x.slowest_ms}, {"median_ms", x.median_ms}, {"fastest_ms", x.fastest_ms},
                     {"lag_ms", x.lag_ms}});
  for (const auto& r : s.ranks)
    ranks.push_back({{"rank", r.rank}, {"steps", r.steps}, {"slowest_count", r.slowest_count},
                     {"mean_step_ms", r.mean_step_ms}, {"mean_lag_ms", r.mean_lag_ms}});
  return {{"steps", steps}, {"ranks", ranks}};
}

json to_json(const TopOperatorsRank& r) {
  json operators = json::array();
  for (const auto& o : r.operators)
    operators.push_back({{"name", o.name}, {"shapes", o.shapes}, {"calls", o.calls}, {"self_ms", o.self_ms},
                         {"total_ms", o.total_ms}, {"mean_us", o.mean_us}, {"self_share", o.self_share},
                         {"forward_op", o.forward_op}});
  return {{"rank", r.rank}, {"operator_calls", r.operator_calls}, {"self_time_ms", r.self_time_ms},
          {"distinct", r.distinct}, {"forward_backward_links", r.forward_backward_links}, {"operators", operators}};
}

json to_json(const HostIdle& h) {
  return {{"rank", h.rank},           {"thread", h.thread},   {"step_windows", h.step_windows},
          {"window_ms", h.window_ms}, {"busy_ms", h.busy_ms}, {"idle_ms", h.idle_ms},
          {"idle_fraction", h.idle_fraction}, {"operators", h.operators}};
}

json to_json(const ProfileAnalyses& a) {
  json overlap = json::array(), kernels = json::array(), idle = json::array(), operators = json::array(),
       host = json::array();
  for (const auto& r : a.comm_overlap) overlap.push_back(to_json(r));
  for (const auto& r : a.top_kernels) kernels.push_back(to_json(r));
  for (const auto& d : a.gpu_idle) idle.push_back(to_json(d));
  for (const auto& r : a.top_operators) operators.push_back(to_json(r));
  for (const auto& h : a.host_idle) host.push_back(to_json(h));
  return {{"session_id", a.session_id},
          {"session_uid", a.session_uid},
          {"has_profiled_window", a.has_profiled_window},
          {"phases", to_json(a.phases)},
          {"comm_overlap", overlap},
          {"top_kernels", kernels},
          {"gpu_idle", idle},
          {"stragglers", to_json(a.stragglers)},
          {"has_cpu_operators", a.has_cpu_operators},
          {"operator_order", operator_order_name(a.operator_order)},
          {"top_operators", operators},
          {"host_idle", host}};
}

}  // namespace shardscope::profiler
