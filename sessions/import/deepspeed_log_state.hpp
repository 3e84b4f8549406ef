#pragma once
// Internal to the log parser: its state, shared by deepspeed_log_parser.cpp (lines, steps),
// deepspeed_log_tables.cpp (multi-line blocks) and deepspeed_log_launcher.cpp (run facts).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/import/deepspeed_log_parser.hpp"

namespace shardscope::sessions {

/// The step of one rank being assembled from several lines.
struct OpenStep {
  StepMetrics metrics;
  std::map<std::string, double> timers;
  bool has_step = false;     ///< the step number is known
  bool anchored = false;     ///< ...from a line that names it (step=, global_step=, "at step")
  bool has_metrics = false;
};

enum class LogBlock { kNone, kFlopsSummary, kCommsTable, kStragglerTable, kUserConfig };

/// One line split into its parts: "[time] [LEVEL] [file:line:func] [Rank R] message".
struct LogLineParts {
  std::optional<double> time;
  LogLevel level = LogLevel::kInfo;
  std::optional<int> rank;
  std::string_view source;   ///< "launch.py:161:main"
  std::string_view message;
};

struct DeepSpeedLogParser::State {
  std::string file;
  int default_rank = -1;
  std::size_t line_number = 0;
  DeepSpeedLogFacts facts;
  std::vector<Event> out;
  std::map<int, OpenStep> open;              ///< by rank
  std::map<int, std::int64_t> next_step;     ///< by rank: the step a line without a number belongs to
  std::map<int, std::pair<std::int64_t, std::int64_t>> last_skipped;  ///< rank -> (step, skipped count)
  std::map<std::int64_t, int> pid_rank;      ///< launcher pid -> local rank on this node
  LogBlock block = LogBlock::kNone;
  std::int64_t flops_step = 0;
  int block_rank = 0;
  std::string comm_op;
  std::string config_text;
  std::size_t config_lines = 0;

  OpenStep& step_of(int rank);                             // the open step, numbered if it was not
  void anchor_step(int rank, std::int64_t step);           // a line names the step it belongs to
  void close_step(int rank);                               // emits it and moves to the next
  int rank_or_default(const LogLineParts& parts) const {
    return parts.rank.value_or(default_rank < 0 ? 0 : default_rank);
  }
};

// deepspeed_log_tables.cpp: true when the line belonged to a block (or opened one).
bool handle_block_line(DeepSpeedLogParser::State& state, const LogLineParts& parts, std::string_view raw);
void finish_block(DeepSpeedLogParser::State& state);
// deepspeed_log_launcher.cpp: true when the line was a launcher, version or config-dump line.
bool handle_run_fact_line(DeepSpeedLogParser::State& state, const LogLineParts& parts);

}  // namespace shardscope::sessions
