#pragma once
// JSON forms of regression checks and trends, as `sessions check --json` and `sessions trend
// --json` print them; key names are part of the stable interface (docs/sessions.md).

#include <nlohmann/json_fwd.hpp>

#include "sessions/regression_check.hpp"
#include "sessions/regression_trend.hpp"

namespace shardscope::sessions {

/// {"failed", "baseline", "candidate", "warmup_steps", "metrics", "contributors", "profiled", "changes", "notes"}.
nlohmann::json regression_report_to_json(const RegressionReport& report);
/// {"metric", "unit", "statistic", "grouping", "threshold", "groups", "notes"}.
nlohmann::json trend_report_to_json(const TrendReport& report);

}  // namespace shardscope::sessions
