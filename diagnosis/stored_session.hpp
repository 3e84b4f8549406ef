#pragma once
// The run doctor on a session in a store, after the fact (`sessions show`, the GUI's Findings
// tab): the findings the run stored, then what its steps, timers and collective marks show
// (session_review.hpp). The one part of the doctor that reads a store; the rest is pure.
//
// A small session is reviewed from every step and timer row. A large one (schema 10) from its
// pre-aggregates, filled at commit: the numerics from step_stats, plus the rows of the steps with
// a ±Inf loss; the stragglers from the rows of the window of steps they judge, found in
// timer_stats. That costs O(steps) + O(ranks x window) instead of O(ranks x steps), and finds the
// same things but for the cases docs/doctor.md ("Large sessions") names.

#include <cstdint>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/store.hpp"

namespace shardscope::diagnosis {

struct StoredReviewOptions {
  /// Sessions with more step and timer rows than this are reviewed from the pre-aggregates (at
  /// 1,024 ranks with 5 timers, about 160 steps); 0 reviews every schema-10 session that way.
  std::int64_t full_read_rows = 1'000'000;
};

/// Every finding of session `id` (whose detail is `detail`), stored ones first.
std::vector<sessions::Finding> review_stored_session(sessions::Store& store, std::int64_t id,
                                                     const sessions::SessionDetail& detail,
                                                     const StoredReviewOptions& options = {});

}  // namespace shardscope::diagnosis
