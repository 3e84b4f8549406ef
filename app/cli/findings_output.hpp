#pragma once
// Printing the run doctor's findings for `sessions compare` (side by side, what is new and gone
// against the baseline) and `sessions import --flight-record` (the diagnosis of the dumps).
// Text from a session file or a dump is shown escaped: either may be hostile.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnosis/findings_compare.hpp"
#include "sessions/events.hpp"

namespace shardscope::app {

/// One session of a comparison as its column is headed: "#3 baseline-run".
struct FindingsColumn {
  std::int64_t id = 0;
  std::string name;
};

/// One finding as `sessions show --json` writes it.
nlohmann::json finding_json(const sessions::Finding& f);

/// "step 3", "steps 40-60", "" when unknown.
std::string finding_steps(const sessions::Finding& f);

/// "  [error] hang: SUMMARY", its evidence lines and "fix:" line, each line prefixed by `indent`.
void print_finding(std::ostream& out, const sessions::Finding& f, const std::string& indent);

/// The findings table of `sessions compare`: a row per finding (kind, ranks), a column per
/// session (severity and steps, or "(gone)"), then every session's findings with their summaries.
void print_findings_comparison(std::ostream& out, const std::vector<diagnosis::FindingRow>& rows,
                               const std::vector<FindingsColumn>& columns);

/// The same as JSON: {"baseline", "sessions": [{id, name, findings}], "rows": [{kind, ranks,
/// ordinal, cells: [{change, finding|null}]}]}.
nlohmann::json findings_comparison_json(const std::vector<diagnosis::FindingRow>& rows,
                                        const std::vector<FindingsColumn>& columns);

}  // namespace shardscope::app
