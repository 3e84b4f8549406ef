#pragma once
// The run doctor's alarm on the Launch & Watch page (issue 28 item 2): the first error-severity
// finding the launcher stored for the run (a hang, a NaN loss, an OOM, ...), with its culprit as
// host:rank and, for a hang, the collective the waiting ranks are stuck in (op and sequence number,
// from the ranks' open flight-record marks), and the banner that names them with links to the
// culprit's log and to its curves at the step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {
class Store;
}

namespace shardscope::gui {

struct DoctorAlarm {
  sessions::Finding finding;
  std::vector<std::string> culprits;  ///< host:rank of each rank the finding names ("vm:2")
  int rank = -1;                      ///< the first culprit (-1: the finding names none)
  std::string op;                     ///< a hang's collective, "" when not known
  std::int64_t sequence = -1;
  std::int64_t step = -1;             ///< the step it happened at (-1: unknown)
};

/// The first error finding of `session_id` (a hang before others), or none. Throws StoreError.
std::optional<DoctorAlarm> read_doctor_alarm(sessions::Store& store, std::int64_t session_id);

/// Where a banner link goes: "shardscope-log:R" (rank R's lines in the log) and
/// "shardscope-curve:R@STEP" (rank R's curves around STEP).
std::string doctor_log_link(int rank);
std::string doctor_curve_link(int rank, std::int64_t step);
/// Reads a link back: the rank and, for a curve link, the step (-1 for a log link); false if not ours.
bool parse_doctor_link(const std::string& link, bool& is_log, int& rank, std::int64_t& step);

/// The banner's HTML: "The run doctor: hang: vm:2 never entered all_reduce #4 (step 3)", the
/// finding's summary and what to do, and the links.
std::string doctor_banner_html(const DoctorAlarm& alarm);

}  // namespace shardscope::gui
