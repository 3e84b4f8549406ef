#pragma once
// The run doctor's findings of 2 to 8 sessions side by side (`sessions compare`, the CLI twin of
// the Sessions page's Findings tab): which findings a later session shares with the baseline (the
// first, as everywhere in compare), which are new in it, which are gone.
//
// A finding is "the same" in two sessions when its kind and the ranks it names agree: two runs
// differ in their steps, times and sequence numbers, so those cannot identify it. The k-th finding
// of a kind and ranks in one session matches the k-th in another (three loss spikes against one:
// one kept, two gone).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::diagnosis {

/// What became of a finding in a session, against the baseline.
enum class FindingChange { kBaseline, kKept, kNew, kGone, kAbsent };

/// "baseline", "kept", "new", "gone", "" (absent from both).
const char* finding_change_name(FindingChange change);

/// One finding (kind, ranks, k-th of them) across the sessions.
struct FindingRow {
  std::string kind;
  std::vector<int> ranks;
  int ordinal = 0;                                     ///< k: the k-th finding of this kind and ranks
  std::vector<std::optional<sessions::Finding>> cells; ///< per session; nullopt where it has none
  std::vector<FindingChange> changes;                  ///< per session; the first is kBaseline or kAbsent
};

/// Rows in order of first appearance (baseline's findings first, in their order).
std::vector<FindingRow> compare_findings(const std::vector<std::vector<sessions::Finding>>& per_session);

/// Every finding of each session as `sessions show` lists it (review_stored_session), compared.
std::vector<FindingRow> compare_stored_findings(sessions::Store& store, const std::vector<std::int64_t>& session_ids);

}  // namespace shardscope::diagnosis
