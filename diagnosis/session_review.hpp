#pragma once
// The doctor after the fact: what `sessions show` lists for a session. The findings stored while
// it ran (a hang the launcher diagnosed), then those its steps and timers show now (numerics,
// stragglers), and, for a session that never ended with collectives still open, the hang
// diagnosis of its last marks.

#include <string>
#include <vector>

#include "diagnosis/hang_diagnosis.hpp"
#include "diagnosis/numerics.hpp"
#include "diagnosis/stragglers.hpp"
#include "sessions/events.hpp"

namespace shardscope::diagnosis {

struct SessionMaterial {
  std::string status;  ///< the session's status ("running", "completed", "failed", ...)
  std::vector<sessions::Finding> stored;
  std::vector<sessions::StepMetrics> steps;
  /// The steps already folded (a stored session's pre-aggregates); a material fills this or `steps`.
  std::vector<StepNumerics> step_numerics;
  std::vector<sessions::TimerBreakdown> timers;
  /// The timers as a store reads them (sessions::load_timer_columns); a material fills this or `timers`.
  std::vector<sessions::TimerColumn> timer_columns;
  std::vector<sessions::CollectiveMark> marks;
  RunPicture run;
};

/// Stored findings first, then the computed ones; a computed hang only when none is stored and
/// the session did not complete while a collective is still open in its marks.
std::vector<sessions::Finding> review_session(const SessionMaterial& material);

}  // namespace shardscope::diagnosis
