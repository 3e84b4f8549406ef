#pragma once
// DeepSpeed's console output read line by line, as it is written: the launcher's startup lines
// (hosts, ranks, pids, the command), versions where DeepSpeed prints them, the config dump, the
// steps_per_print step lines, the throughput lines, wall_clock_breakdown's `time (ms)` lines, the
// flops profiler's summary, comms_logger's log_summary table and verbose per-op lines, and the
// exit lines. Used for imports (a whole file) and for watching a live run (lines as they come).
// docs/sessions.md ("Importing DeepSpeed runs") lists what each line becomes.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

/// What the log says about the run as a whole; empty where it says nothing.
struct DeepSpeedLogFacts {
  std::string deepspeed_version;
  std::string deepspeed_git_hash;
  std::string accelerator;              ///< "cpu", "cuda", ... (the accelerator DeepSpeed picked)
  std::string backend;                  ///< "gloo", "nccl", ...
  std::optional<int> world_size;
  std::vector<RankInfo> ranks;          ///< from the launcher's rank mapping and spawn lines
  std::map<int, int> exit_codes;        ///< rank -> exit code, from the launcher's exit lines
  std::vector<std::string> command;     ///< the launcher's command (runner.py's "cmd = ...")
  std::optional<double> first_time;     ///< Unix seconds of the first timestamped line
  std::optional<double> last_time;
  std::optional<std::int64_t> train_batch_size;  ///< from the config dump
  std::string user_config_json;         ///< the config DeepSpeed printed ("json = {...}")
};

class DeepSpeedLogParser {
 public:
  /// `file` names the source in error texts; `default_rank` is the rank of unprefixed lines
  /// (-1: the launcher's; a per-rank log file passes its rank).
  explicit DeepSpeedLogParser(std::string file = "log", int default_rank = -1);
  ~DeepSpeedLogParser();
  DeepSpeedLogParser(DeepSpeedLogParser&&) noexcept;
  DeepSpeedLogParser& operator=(DeepSpeedLogParser&&) noexcept;

  /// One line without its newline (a trailing '\r' is dropped). Lines longer than 64 KiB are cut.
  void feed_line(std::string_view line);
  /// Feeds every line of `text` (the last one even without a newline).
  void feed_text(std::string_view text);
  /// The end of the output: closes the open step and any table being read.
  void finish();
  /// Events completed since the last call, in order: LogLine for every line, TimerBreakdown,
  /// StepMetrics (one per rank and step, all fields the log gave), CommRecord, CommSummary,
  /// SeriesPoint (flops profiler figures).
  std::vector<Event> take_events();
  const DeepSpeedLogFacts& facts() const;
  std::size_t lines() const;

  struct State;  ///< internal (deepspeed_log_state.hpp), shared by the parser's source files

 private:
  std::unique_ptr<State> state_;
};

/// A "[YYYY-mm-dd HH:MM:SS,mmm]" timestamp (local time) as Unix seconds.
std::optional<double> parse_log_timestamp(std::string_view text);

}  // namespace shardscope::sessions
