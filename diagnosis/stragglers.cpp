#include "diagnosis/stragglers.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "diagnosis/robust_stats.hpp"

namespace shardscope::diagnosis {
namespace {

using sessions::Finding;
using sessions::TimerColumn;
using sessions::TimerSample;

// One step of a phase that every rank reported: the times in rank order, and sorted.
struct WindowRow {
  std::vector<double> by_rank;
  std::vector<double> sorted;
};

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

// median() of `sorted` less one element equal to `value`: a rank's peers' median read off the
// sorted row, instead of a copy and a selection per rank (1,024 ranks made that quadratic).
double median_without(const std::vector<double>& sorted, double value) {
  const std::size_t n = sorted.size() - 1;
  if (n == 0) return 0;
  const auto gap = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), value) - sorted.begin());
  const auto at = [&](std::size_t k) { return sorted[k < gap ? k : k + 1]; };
  const std::size_t mid = n / 2;
  return n % 2 ? at(mid) : (at(mid - 1) + at(mid)) / 2;
}

// The latest `window` steps of `samples` at which all `ranks` reported, newest first.
std::vector<WindowRow> complete_steps(const std::vector<TimerSample>& samples, std::size_t ranks, int window,
                                      std::int64_t& first, std::int64_t& last) {
  std::vector<WindowRow> rows;
  for (auto end = samples.size(); end > 0 && static_cast<int>(rows.size()) < window;) {
    auto begin = end - 1;
    while (begin > 0 && samples[begin - 1].step == samples[end - 1].step) --begin;
    if (end - begin == ranks) {
      if (rows.empty()) last = samples[begin].step;
      first = samples[begin].step;
      WindowRow row;
      for (auto i = begin; i < end; ++i) row.by_rank.push_back(samples[i].ms);
      row.sorted = row.by_rank;
      std::sort(row.sorted.begin(), row.sorted.end());
      rows.push_back(std::move(row));
    }
    end = begin;
  }
  return rows;
}

StragglerFlag make_flag(const std::string& phase, int rank, double own, double theirs, int slower, std::size_t steps,
                        const RunPicture& run) {
  Finding f;
  f.kind = "straggler";
  f.severity = "warning";
  f.ranks = {rank};
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f %%", 100.0 * (own / theirs - 1));
  f.summary = host_rank(run, rank) + " is slow in " + phase + ": median " + ms_text(own) + " against its peers' " +
              ms_text(theirs) + " (+" + ms_text(own - theirs) + ", " + pct + ")";
  f.evidence = "slower than the peers' median in " + std::to_string(slower) + " of " + std::to_string(steps) +
               " steps\n";
  f.suggested_fix = "Every rank waits for " + host_rank(run, rank) + " at each collective. Check that host: GPU "
                    "clocks and temperature (nvidia-smi -q -d CLOCK,PERFORMANCE), other processes on its cores or GPU, "
                    "its data loader and disk (a slow " + phase + " phase).";
  return StragglerFlag{rank, phase, own, theirs, std::move(f)};
}

// Each rank's median over the window against the median of its peers' medians, and in how many
// of the window's steps it was slower than the median of its peers at that step.
void judge_phase(const std::string& phase, const std::vector<int>& ranks, const std::vector<WindowRow>& rows,
                 const RunPicture& run, const StragglerOptions& o, std::vector<StragglerFlag>& flags) {
  std::vector<double> own(ranks.size()), mine(rows.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    for (std::size_t j = 0; j < rows.size(); ++j) mine[j] = rows[j].by_rank[i];
    own[i] = median(mine);
  }
  std::vector<double> sorted_own = own;
  std::sort(sorted_own.begin(), sorted_own.end());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double theirs = median_without(sorted_own, own[i]);
    if (own[i] < theirs * o.min_ratio || own[i] - theirs < o.min_gap_ms) continue;
    int slower = 0;
    for (const auto& row : rows)
      if (row.by_rank[i] > median_without(row.sorted, row.by_rank[i]) * o.step_margin) ++slower;
    if (slower < o.persistence * static_cast<double>(rows.size())) continue;
    flags.push_back(make_flag(phase, ranks[i], own[i], theirs, slower, rows.size(), run));
  }
}

// Every rank that reported a timer, ascending; a step's ranks are nearly always the last step's.
std::vector<int> ranks_of(const std::vector<TimerColumn>& columns) {
  std::vector<int> ranks, group, merged;
  for (const auto& column : columns)
    for (std::size_t begin = 0, end = 0; begin < column.samples.size(); begin = end) {
      group.clear();
      for (end = begin; end < column.samples.size() && column.samples[end].step == column.samples[begin].step; ++end)
        group.push_back(column.samples[end].rank);
      if (std::includes(ranks.begin(), ranks.end(), group.begin(), group.end())) continue;
      merged.clear();
      std::set_union(ranks.begin(), ranks.end(), group.begin(), group.end(), std::back_inserter(merged));
      ranks.swap(merged);
    }
  return ranks;
}

std::vector<StragglerFlag> flag_columns(const std::vector<TimerColumn>& columns, const std::vector<int>& ranks,
                                        const RunPicture& run, const StragglerOptions& options) {
  std::vector<StragglerFlag> flags;
  if (ranks.size() < 2) return flags;
  std::vector<const TimerColumn*> phases;
  for (const auto& c : columns) phases.push_back(&c);
  std::sort(phases.begin(), phases.end(), [](const TimerColumn* a, const TimerColumn* b) { return a->name < b->name; });
  // "backward" holds its all-reduce when backward_inner is reported apart: only the inner part is local.
  const bool split_backward =
      std::any_of(phases.begin(), phases.end(), [](const TimerColumn* c) { return c->name == "backward_inner"; });
  for (const auto* phase : phases) {
    if (is_collective_wait(phase->name) || (split_backward && phase->name == "backward")) continue;
    std::int64_t first = 0, last = 0;
    const auto rows = complete_steps(phase->samples, ranks.size(), options.window, first, last);
    if (static_cast<int>(rows.size()) < std::min(options.window, options.min_steps)) continue;
    const auto before = flags.size();
    judge_phase(phase->name, ranks, rows, run, options, flags);
    for (auto i = before; i < flags.size(); ++i) {
      flags[i].finding.first_step = first;
      flags[i].finding.last_step = last;
    }
  }
  return flags;
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
  std::map<std::string, std::vector<TimerSample>> by_name;
  for (const auto& t : timers) {
    ranks.insert(t.rank);
    for (const auto& v : t.timers) by_name[v.name].push_back({t.step, t.rank, v.ms});
  }
  std::vector<TimerColumn> columns;
  for (auto& [name, samples] : by_name) {
    // By step then rank; of a step and rank reported twice the later time counts.
    std::stable_sort(samples.begin(), samples.end(), [](const TimerSample& a, const TimerSample& b) {
      return a.step != b.step ? a.step < b.step : a.rank < b.rank;
    });
    TimerColumn column{name, {}};
    for (const auto& s : samples)
      if (!column.samples.empty() && column.samples.back().step == s.step && column.samples.back().rank == s.rank)
        column.samples.back() = s;
      else
        column.samples.push_back(s);
    columns.push_back(std::move(column));
  }
  return flag_columns(columns, {ranks.begin(), ranks.end()}, run, options);
}

std::vector<StragglerFlag> flag_stragglers(const std::vector<TimerColumn>& columns, const RunPicture& run,
                                           const StragglerOptions& options) {
  return flag_columns(columns, ranks_of(columns), run, options);
}

std::vector<Finding> find_stragglers(const std::vector<sessions::TimerBreakdown>& timers, const RunPicture& run,
                                     const StragglerOptions& options) {
  std::vector<Finding> findings;
  for (auto& flag : flag_stragglers(timers, run, options)) findings.push_back(std::move(flag.finding));
  return findings;
}

}  // namespace shardscope::diagnosis
