#pragma once
// JSON forms of reader results, as `shardscope sessions ... --json` prints them. Key names are
// part of the stable interface (docs/sessions.md, "CLI JSON").

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sessions/session_compare.hpp"

namespace shardscope::sessions {

/// Compact JSON text in which bytes that are not UTF-8 become U+FFFD instead of an exception:
/// names, hosts and command lines from a rank or a command line are never trusted to be UTF-8.
std::string lenient_json_text(const nlohmann::json& json);

/// {"id", "uid", "name", "status", "started_at", ..., "hosts", "tags"}; unknown values are null.
nlohmann::json session_info_to_json(const SessionInfo& info);
/// The info plus "command_line", "config" (parsed), "environment", "ranks", "peak_tflops_per_gpu".
nlohmann::json session_detail_to_json(const SessionDetail& detail);
/// Every SessionSummary field under its own name.
nlohmann::json session_summary_to_json(const SessionSummary& summary);
/// {"sessions": [...summaries], "summary": [...deltas], "config_diff", "environment_diff", "curves"}.
nlohmann::json comparison_to_json(const SessionComparison& comparison, bool include_curves);

}  // namespace shardscope::sessions
