#pragma once
// Which rank hangs a run, from the ranks' collective flight records (CollectiveMark events).
//
// Every rank numbers its collectives per group, and all ranks issue the same ones in the same
// order, so after a hang the marks say: the oldest collective some rank still waits in (#T); the
// ranks waiting there; the ranks that never entered #T (behind: they are the culprits, the
// waiters are victims); or, when every rank entered #T, the ranks that entered it as another op
// or size (they disagree about which collective comes next). The watchdog of c10d names the
// rank whose wait timed out, which is usually a victim; this names the cause.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::diagnosis {

/// What the doctor knows besides the marks.
struct RunPicture {
  int world_size = 0;
  std::map<int, std::string> hosts;          ///< rank -> host; a rank not here reads as "?"
  std::map<int, std::int64_t> last_step;     ///< rank -> the last step it reported (StepMetrics)
  double now = 0;                            ///< Unix seconds, to say "waiting since 12.3 s"
};

/// "node-a:3", or "?:3" when the host is unknown.
std::string host_rank(const RunPicture& run, int rank);

/// The diagnosis of a run that stopped making progress, from every rank's marks (any order; the
/// latest mark of a collective wins). Always a finding: kind "hang", the culprit ranks in
/// `ranks`, one line of evidence per rank.
sessions::Finding diagnose_hang(const std::vector<sessions::CollectiveMark>& marks, const RunPicture& run);

/// Keeps the latest marks of each rank (a bounded window per rank and group), as the launcher
/// receives them live; what diagnose_hang reads.
class MarkBoard {
 public:
  explicit MarkBoard(std::size_t per_rank = 256) : per_rank_(per_rank) {}
  /// Records a mark (an enter, or the leave of a collective already entered).
  void add(const sessions::CollectiveMark& mark);
  /// Every mark kept, by rank, group and sequence.
  std::vector<sessions::CollectiveMark> marks() const;
  /// Unix seconds of the latest leave of any collective on any rank; 0 when none has completed.
  double last_completion() const { return last_completion_; }

 private:
  std::size_t per_rank_;
  std::map<std::pair<int, std::string>, std::map<std::int64_t, sessions::CollectiveMark>> by_rank_;
  double last_completion_ = 0;
};

}  // namespace shardscope::diagnosis
