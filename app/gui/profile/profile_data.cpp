#include "app/gui/profile/profile_data.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

struct NameTable {
  std::vector<std::string>& names;
  std::unordered_map<std::string, std::uint32_t> index;
  explicit NameTable(std::vector<std::string>& n) : names(n) {
    for (std::uint32_t i = 0; i < names.size(); ++i) index.emplace(names[i], i);
  }
  std::uint32_t id(const std::string& name) {
    auto [it, fresh] = index.emplace(name, static_cast<std::uint32_t>(names.size()));
    if (fresh) names.push_back(name);
    return it->second;
  }
};

TimelineKind kind_of(const ss::ActivityRecord& a) {
  switch (a.kind) {
    case ss::ActivityKind::kMemcpy: return TimelineKind::kMemcpy;
    case ss::ActivityKind::kMemset: return TimelineKind::kMemset;
    case ss::ActivityKind::kKernel: break;
  }
  return profiler::is_communication_kernel(a.name) ? TimelineKind::kCollective : TimelineKind::kKernel;
}

void finish_row(TimelineRow& row, ProfileData& out) {
  std::sort(row.items.begin(), row.items.end(),
            [](const TimelineItem& a, const TimelineItem& b) { return a.start_ns < b.start_ns; });
  for (const auto& item : row.items) row.longest_ns = std::max(row.longest_ns, item.end_ns - item.start_ns);
  std::int64_t first = row.items.empty() ? 0 : row.items.front().start_ns, last = 0;
  for (const auto& item : row.items) last = std::max(last, item.end_ns);
  if (!row.counter.empty()) {
    first = row.items.empty() ? row.counter.front().t_ns : std::min(first, row.counter.front().t_ns);
    last = std::max(last, row.counter.back().t_ns);
  }
  if (!row.items.empty() || !row.counter.empty()) {
    const bool fresh = out.start_ns == 0 && out.end_ns == 0;
    out.start_ns = fresh ? first : std::min(out.start_ns, first);
    out.end_ns = fresh ? last : std::max(out.end_ns, last);
  }
  out.items += row.items.size();
  out.rows.push_back(std::move(row));
}

std::string rank_label(int rank, const std::string& what) { return "rank " + std::to_string(rank) + " \u00b7 " + what; }

// The top-level phases DeepSpeed times one after another in a step (profile_analyses.hpp).
int phase_order(const std::string& name) {
  if (name == "forward" || name == "fwd") return 0;
  if (name == "backward" || name == "bwd") return 1;
  if (name == "step") return 2;
  return -1;
}

void add_step_rows(int rank, const profiler::ProfileRecords& r, NameTable& names, ProfileData& out) {
  TimelineRow steps{rank_label(rank, "steps"), rank, RowKind::kSteps, {}, 0, {}, 0};
  TimelineRow phases{rank_label(rank, "phases (timers)"), rank, RowKind::kPhases, {}, 0, {}, 0};
  TimelineRow memory{rank_label(rank, "memory allocated"), rank, RowKind::kMemory, {}, 0, {}, 0};
  std::map<std::int64_t, const ss::TimerBreakdown*> timers;
  for (const auto& t : r.timers)
    if (t.rank == rank) timers[t.step] = &t;
  for (const auto& m : r.steps) {
    if (m.rank != rank) continue;
    const std::int64_t start = profiler::step_start_ns(m), end = static_cast<std::int64_t>(m.wall_time * 1e9);
    if (m.step_time_ms) steps.items.push_back({start, end, 0, m.step, names.id("step " + std::to_string(m.step)), TimelineKind::kStep});
    if (m.mem_allocated_bytes) {
      memory.counter.push_back({end, static_cast<double>(*m.mem_allocated_bytes)});
      memory.counter_max = std::max(memory.counter_max, static_cast<double>(*m.mem_allocated_bytes));
    }
    // Forward, backward and step were timed one after the other from the step's start.
    auto it = timers.find(m.step);
    if (it == timers.end() || !m.step_time_ms) continue;
    std::vector<ss::TimerValue> ordered;
    for (const auto& v : it->second->timers)
      if (phase_order(v.name) >= 0) ordered.push_back(v);
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return phase_order(a.name) < phase_order(b.name); });
    std::int64_t t = start;
    for (const auto& v : ordered) {
      const auto length = static_cast<std::int64_t>(v.ms * 1e6);
      phases.items.push_back({t, t + length, 0, m.step, names.id(v.name), TimelineKind::kPhase});
      t += length;
    }
  }
  std::sort(memory.counter.begin(), memory.counter.end(), [](const auto& a, const auto& b) { return a.t_ns < b.t_ns; });
  for (TimelineRow* row : {&steps, &phases, &memory})
    if (!row->items.empty() || !row->counter.empty()) finish_row(*row, out);
}

void add_nvtx_rows(int rank, const std::vector<ss::NvtxRange>& ranges, NameTable& names, ProfileData& out) {
  // NVTX ranges nest; each goes to the first level whose last range has ended (interval colouring).
  std::vector<ss::NvtxRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<TimelineRow> levels;
  std::vector<std::int64_t> level_end;
  for (const auto& range : sorted) {
    std::size_t level = 0;
    while (level < level_end.size() && level_end[level] > range.start_ns) ++level;
    if (level == levels.size()) {
      levels.push_back({rank_label(rank, "NVTX " + std::to_string(level)), rank, RowKind::kNvtx, {}, 0, {}, 0});
      level_end.push_back(0);
    }
    level_end[level] = range.end_ns;
    const std::string name = range.domain.empty() ? range.name : range.domain + ": " + range.name;
    levels[level].items.push_back({range.start_ns, range.end_ns, 0, range.step, names.id(name), TimelineKind::kNvtx});
  }
  for (auto& level : levels) finish_row(level, out);
}

void add_stream_rows(int rank, const std::vector<ss::ActivityRecord>& activities, NameTable& names, ProfileData& out) {
  std::map<std::pair<int, std::int64_t>, TimelineRow> streams;
  for (const auto& a : activities)
    streams[{a.device, a.stream}].items.push_back({a.start_ns, a.end_ns, a.bytes, a.step, names.id(a.name), kind_of(a)});
  for (auto& [key, row] : streams) {
    row.rank = rank;
    row.kind = RowKind::kStream;
    row.label = rank_label(rank, "GPU " + std::to_string(key.first) + " \u00b7 stream " + std::to_string(key.second));
    finish_row(row, out);
  }
}

RankBusy rank_busy(int rank, const std::vector<ss::ActivityRecord>& activities) {
  std::vector<std::pair<std::int64_t, std::int64_t>> kernels, collectives;
  for (const auto& a : activities)
    (kind_of(a) == TimelineKind::kCollective ? collectives : kernels).emplace_back(a.start_ns, a.end_ns);
  return {rank, BusyIntervals::merge(std::move(kernels)), BusyIntervals::merge(std::move(collectives))};
}

// The ranks the filter resolves against: the session's own (with hosts), else the records' ranks.
std::vector<ss::RankInfo> rank_infos(ss::Store& store, std::int64_t session_id, const std::vector<int>& ranks) {
  std::vector<ss::RankInfo> out;
  for (const auto& r : ss::load_session(store, session_id).ranks) out.push_back(r.info);
  for (const int rank : ranks)
    if (std::none_of(out.begin(), out.end(), [&](const ss::RankInfo& i) { return i.rank == rank; }))
      out.push_back({rank, 0, {}, 0, {}});
  return out;
}

}  // namespace

void build_timeline(const profiler::ProfileRecords& r, ProfileData& out) {
  NameTable names(out.names);
  out.origin_ns = profiler::profile_origin_ns(r);
  for (const int rank : r.ranks) {
    add_step_rows(rank, r, names, out);
    if (auto it = r.nvtx.find(rank); it != r.nvtx.end()) add_nvtx_rows(rank, it->second, names, out);
    if (auto it = r.activities.find(rank); it != r.activities.end()) {
      add_stream_rows(rank, it->second, names, out);
      out.busy.push_back(rank_busy(rank, it->second));
    }
  }
  // The first view is the profiled window (the GPU activity) when there is one, else everything.
  bool any = false;
  for (const auto& [rank, list] : r.activities)
    for (const auto& a : list) {
      out.window_start_ns = any ? std::min(out.window_start_ns, a.start_ns) : a.start_ns;
      out.window_end_ns = any ? std::max(out.window_end_ns, a.end_ns) : a.end_ns;
      any = true;
    }
  if (!any) out.window_start_ns = out.start_ns, out.window_end_ns = out.end_ns;
}

std::shared_ptr<const ProfileData> load_profile(const SessionRef& session) {
  auto out = std::make_shared<ProfileData>();
  out->session = session;
  try {
    ss::StoreOpenOptions options;
    options.read_only = true;
    ss::Store store = ss::Store::open(session.file, options);
    auto records = std::make_shared<profiler::ProfileRecords>(profiler::load_profile_records(store, session.id));
    build_timeline(*records, *out);
    out->rank_infos = rank_infos(store, session.id, records->ranks);
    out->analyses = profiler::analyze_records(*records);
    out->records = std::move(records);
  } catch (const std::exception& e) {
    out->error = e.what();
  }
  return out;
}

std::string short_kernel_name(const std::string& name) {
  std::string s = name.compare(0, 5, "void ") == 0 ? name.substr(5) : name;
  // Drop the parameter list, then template arguments (nested), then namespaces.
  int depth = 0;
  std::string plain;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (depth == 0) plain += c;
  }
  const auto colon = plain.rfind("::");
  if (colon != std::string::npos) plain = plain.substr(colon + 2);
  return plain.empty() ? name : plain;
}

std::string format_duration_ns(double ns) {
  char text[32];
  const double magnitude = ns < 0 ? -ns : ns;
  if (magnitude < 0.5) return "0 ns";  // never "-0 ns" (a ruler's first tick at -0.0)
  if (magnitude >= 1e9)
    std::snprintf(text, sizeof text, "%.3f s", ns / 1e9);
  else if (magnitude >= 1e6)
    std::snprintf(text, sizeof text, "%.3f ms", ns / 1e6);
  else if (magnitude >= 1e3)
    std::snprintf(text, sizeof text, "%.1f us", ns / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f ns", ns);
  return text;
}

}  // namespace shardscope::gui
