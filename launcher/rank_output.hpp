#pragma once
// Where a rank's output goes: the launcher's own stdout/stderr line by line (prefixed "[rank R] "
// when there is more than one rank), the rank's log file under --enable_each_rank_log, the last
// stderr lines kept for the failure report, and a callback that turns each line into a session
// LogLine (stdout info; stderr warning, or error when it reads like one).

#include <cstddef>
#include <cstdio>
#include <deque>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::launcher {

/// Splits a byte stream into lines at '\n' (a trailing '\r' dropped); a line longer than
/// max_line is cut there, so one rank printing without newlines cannot grow memory.
class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_line = 64u << 10) : max_line_(max_line) {}
  /// The lines that these bytes complete.
  std::vector<std::string> append(const char* data, std::size_t size);
  /// The unterminated rest at the end of the stream, if any.
  std::optional<std::string> finish();

 private:
  std::size_t max_line_;
  std::string pending_;
};

/// Error when the line reads like one (error, exception, traceback, fatal, terminate called...),
/// else warning: what a stderr line becomes in the session.
sessions::LogLevel classify_stderr_line(const std::string& line);

/// Creates `dir` (and its parents) for --enable_each_rank_log and returns the file-name prefix,
/// the local time as YYYYmmddHHMMSS (DeepSpeed's naming). Throws LaunchError(kEnvironment) when
/// `dir` is a file or cannot be created.
std::string prepare_rank_log_dir(const std::string& dir);
/// "<dir>/<prefix>_rank<R>.log".
std::string rank_log_path(const std::string& dir, const std::string& prefix, int rank);

struct RankOutputOptions {
  int world_size = 1;
  std::ostream* out = nullptr;               ///< the launcher's stdout
  std::ostream* err = nullptr;               ///< the launcher's stderr
  std::optional<std::string> log_path;       ///< this rank's log file, when each rank logs
  std::function<void(const sessions::LogLine&)> on_line;  ///< e.g. to the session
  std::size_t tail_lines = 20;               ///< stderr lines kept for the failure report
};

class RankOutput {
 public:
  /// Opens the log file (truncating it); throws LaunchError(kEnvironment) naming it on failure.
  RankOutput(int rank, RankOutputOptions options);
  ~RankOutput();
  RankOutput(RankOutput&& other) noexcept;
  RankOutput(const RankOutput&) = delete;
  RankOutput& operator=(const RankOutput&) = delete;
  RankOutput& operator=(RankOutput&&) = delete;

  /// Bytes read from the rank's stdout or stderr pipe.
  void write(bool from_stderr, const char* data, std::size_t size);
  /// The pipe reached end of file: the unterminated rest becomes a line.
  void finish(bool from_stderr);
  /// The last stderr lines, oldest first.
  const std::deque<std::string>& stderr_tail() const { return tail_; }

 private:
  void emit(bool from_stderr, const std::string& line);

  int rank_;
  RankOutputOptions options_;
  LineSplitter out_lines_, err_lines_;
  std::FILE* log_ = nullptr;
  std::deque<std::string> tail_;
};

}  // namespace shardscope::launcher
