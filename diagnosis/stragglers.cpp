#include "diagnosis/stragglers.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "diagnosis/robust_stats.hpp"

namespace shardscope::diagnosis {
namespace {

using sessions::Finding;
// phase -> step -> rank -> ms
using PhaseTable = std::map<std::string, std::map<std::int64_t, std::map<int, double>>>;

PhaseTable tabulate(const std::vector<sessions::TimerBreakdown>& timers) {
  PhaseTable table;
  std::set<std::string> names;
  for (const auto& t : timers)
    for (const auto& v : t.timers) names.insert(v.name);
  // "backward" holds its all-reduce when backward_inner is reported apart: only the inner part is local.
  const bool split_backward = names.count("backward_inner") > 0;
  for (const auto& t : timers)
    for (const auto& v : t.timers)
      if (!is_collective_wait(v.name) && !(split_backward && v.name == "backward")) table[v.name][t.step][t.rank] = v.ms;
  return table;
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

// The latest `window` steps at which all `ranks` reported the phase.
std::vector<const std::map<int, double>*> complete_steps(const std::map<std::int64_t, std::map<int, double>>& steps,
                                                         std::size_t ranks, int window, std::int64_t& first,
                                                         std::int64_t& last) {
  std::vector<const std::map<int, double>*> rows;
  for (auto it = steps.rbegin(); it != steps.rend() && static_cast<int>(rows.size()) < window; ++it) {
    if (it->second.size() != ranks) continue;
    if (rows.empty()) last = it->first;
    first = it->first;
    rows.push_back(&it->second);
  }
  return rows;
}

std::optional<StragglerFlag> judge(const std::string& phase, int rank,
                                   const std::vector<const std::map<int, double>*>& rows, const RunPicture& run,
                                   const StragglerOptions& o) {
  std::vector<double> mine;
  std::map<int, std::vector<double>> peers;
  int slower = 0;
  for (const auto* row : rows) {
    std::vector<double> others;
    for (const auto& [r, ms] : *row) {
      if (r == rank) mine.push_back(ms);
      else { peers[r].push_back(ms); others.push_back(ms); }
    }
    if (row->at(rank) > median(others) * o.step_margin) ++slower;
  }
  std::vector<double> peer_medians;
  for (const auto& [r, values] : peers) peer_medians.push_back(median(values));
  const double own = median(mine), theirs = median(peer_medians);
  if (own < theirs * o.min_ratio || own - theirs < o.min_gap_ms ||
      slower < o.persistence * static_cast<double>(rows.size()))
    return std::nullopt;
  Finding f;
  f.kind = "straggler";
  f.severity = "warning";
  f.ranks = {rank};
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f %%", 100.0 * (own / theirs - 1));
  f.summary = host_rank(run, rank) + " is slow in " + phase + ": median " + ms_text(own) + " against its peers' " +
              ms_text(theirs) + " (+" + ms_text(own - theirs) + ", " + pct + ")";
  f.evidence = "slower than the peers' median in " + std::to_string(slower) + " of " + std::to_string(rows.size()) +
               " steps\n";
  f.suggested_fix = "Every rank waits for " + host_rank(run, rank) + " at each collective. Check that host: GPU "
                    "clocks and temperature (nvidia-smi -q -d CLOCK,PERFORMANCE), other processes on its cores or GPU, "
                    "its data loader and disk (a slow " + phase + " phase).";
  return StragglerFlag{rank, phase, own, theirs, std::move(f)};
}

}  // namespace

bool is_collective_wait(const std::string& timer) {
  for (const char* word : {"allreduce", "all_reduce", "reduce_scatter", "gather", "comm", "wait"})
    if (timer.find(word) != std::string::npos) return true;
  return false;
}

std::vector<StragglerFlag> flag_stragglers(const std::vector<sessions::TimerBreakdown>& timers, const RunPicture& run,
                                           const StragglerOptions& options) {
  std::set<int> ranks;
  for (const auto& t : timers) ranks.insert(t.rank);
  std::vector<StragglerFlag> flags;
  if (ranks.size() < 2) return flags;
  for (const auto& [phase, steps] : tabulate(timers)) {
    std::int64_t first = 0, last = 0;
    const auto rows = complete_steps(steps, ranks.size(), options.window, first, last);
    if (static_cast<int>(rows.size()) < std::min(options.window, options.min_steps)) continue;
    for (int rank : ranks)
      if (auto flag = judge(phase, rank, rows, run, options)) {
        flag->finding.first_step = first;
        flag->finding.last_step = last;
        flags.push_back(std::move(*flag));
      }
  }
  return flags;
}

std::vector<Finding> find_stragglers(const std::vector<sessions::TimerBreakdown>& timers, const RunPicture& run,
                                     const StragglerOptions& options) {
  std::vector<Finding> findings;
  for (auto& flag : flag_stragglers(timers, run, options)) findings.push_back(std::move(flag.finding));
  return findings;
}

}  // namespace shardscope::diagnosis
