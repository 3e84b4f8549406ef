#include "diagnosis/findings_compare.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "diagnosis/stored_session.hpp"

namespace shardscope::diagnosis {
namespace {

using Key = std::tuple<std::string, std::vector<int>, int>;  // kind, sorted ranks, ordinal

std::vector<int> sorted(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

FindingChange change_of(bool in_baseline, bool here, bool is_baseline) {
  if (is_baseline) return in_baseline ? FindingChange::kBaseline : FindingChange::kAbsent;
  if (in_baseline) return here ? FindingChange::kKept : FindingChange::kGone;
  return here ? FindingChange::kNew : FindingChange::kAbsent;
}

}  // namespace

const char* finding_change_name(FindingChange change) {
  switch (change) {
    case FindingChange::kBaseline: return "baseline";
    case FindingChange::kKept: return "kept";
    case FindingChange::kNew: return "new";
    case FindingChange::kGone: return "gone";
    case FindingChange::kAbsent: return "";
  }
  return "";
}

std::vector<FindingRow> compare_findings(const std::vector<std::vector<sessions::Finding>>& per_session) {
  const std::size_t n = per_session.size();
  std::vector<FindingRow> rows;
  std::map<Key, std::size_t> row_of;
  for (std::size_t s = 0; s < n; ++s) {
    std::map<std::pair<std::string, std::vector<int>>, int> seen;  // ordinals within this session
    for (const auto& f : per_session[s]) {
      auto ranks = sorted(f.ranks);
      const int ordinal = seen[{f.kind, ranks}]++;
      auto [it, fresh] = row_of.try_emplace(Key{f.kind, ranks, ordinal}, rows.size());
      if (fresh) rows.push_back({f.kind, ranks, ordinal, std::vector<std::optional<sessions::Finding>>(n), {}});
      rows[it->second].cells[s] = f;
    }
  }
  for (auto& row : rows)
    for (std::size_t s = 0; s < n; ++s)
      row.changes.push_back(change_of(row.cells[0].has_value(), row.cells[s].has_value(), s == 0));
  return rows;
}

std::vector<FindingRow> compare_stored_findings(sessions::Store& store, const std::vector<std::int64_t>& session_ids) {
  std::vector<std::vector<sessions::Finding>> per_session;
  for (const auto id : session_ids)
    per_session.push_back(review_stored_session(store, id, sessions::load_session(store, id)));
  return compare_findings(per_session);
}

}  // namespace shardscope::diagnosis
