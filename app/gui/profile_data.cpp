#include "app/gui/profile_data.hpp"

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
  if (!row.items.empty()) {
    const bool first = out.items == 0;
    out.start_ns = first ? row.items.front().start_ns : std::min(out.start_ns, row.items.front().start_ns);
    for (const auto& item : row.items) out.end_ns = std::max(out.end_ns, item.end_ns);
    out.items += row.items.size();
  }
  out.rows.push_back(std::move(row));
}

}  // namespace

void add_rank_rows(int rank, const std::vector<ss::ActivityRecord>& activities,
                   const std::vector<ss::NvtxRange>& ranges, ProfileData& out) {
  NameTable names{out.names, {}};
  for (std::uint32_t i = 0; i < out.names.size(); ++i) names.index.emplace(out.names[i], i);
  std::map<std::pair<int, std::int64_t>, TimelineRow> streams;
  for (const auto& a : activities) {
    auto& row = streams[{a.device, a.stream}];
    row.items.push_back({a.start_ns, a.end_ns, a.bytes, a.step, names.id(a.name), kind_of(a)});
  }
  for (auto& [key, row] : streams) {
    row.rank = rank;
    row.label = "rank " + std::to_string(rank) + " \u00b7 GPU " + std::to_string(key.first) + " \u00b7 stream " +
                std::to_string(key.second);
    finish_row(row, out);
  }
  // NVTX ranges nest; each goes to the first level whose last range has ended (interval colouring).
  std::vector<ss::NvtxRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<TimelineRow> levels;
  std::vector<std::int64_t> level_end;
  for (const auto& r : sorted) {
    std::size_t level = 0;
    while (level < level_end.size() && level_end[level] > r.start_ns) ++level;
    if (level == levels.size()) {
      levels.emplace_back();
      level_end.push_back(0);
    }
    level_end[level] = r.end_ns;
    const std::string name = r.domain.empty() ? r.name : r.domain + ": " + r.name;
    levels[level].items.push_back({r.start_ns, r.end_ns, 0, r.step, names.id(name), TimelineKind::kNvtx});
  }
  for (std::size_t level = 0; level < levels.size(); ++level) {
    levels[level].rank = rank;
    levels[level].label = "rank " + std::to_string(rank) + " \u00b7 NVTX " + std::to_string(level);
    finish_row(levels[level], out);
  }
}

std::shared_ptr<const ProfileData> load_profile(const SessionRef& session) {
  auto out = std::make_shared<ProfileData>();
  out->session = session;
  try {
    ss::StoreOpenOptions options;
    options.read_only = true;
    ss::Store store = ss::Store::open(session.file, options);
    for (int rank : ss::load_profiled_ranks(store, session.id))
      add_rank_rows(rank, ss::load_activities(store, session.id, rank), ss::load_nvtx(store, session.id, rank), *out);
    out->collectives = ss::summarize_session(store, session.id).comm_ops;
    out->analyses = profiler::analyze_session(store, session.id);
    out->analyses_text = profiler::format_profile_analyses(out->analyses);
  } catch (const std::exception& e) {
    out->error = e.what();
  }
  return out;
}

std::string format_duration_ns(double ns) {
  char text[32];
  if (ns >= 1e9)
    std::snprintf(text, sizeof text, "%.3f s", ns / 1e9);
  else if (ns >= 1e6)
    std::snprintf(text, sizeof text, "%.3f ms", ns / 1e6);
  else if (ns >= 1e3)
    std::snprintf(text, sizeof text, "%.1f us", ns / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f ns", ns);
  return text;
}

}  // namespace shardscope::gui
