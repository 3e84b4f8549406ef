#pragma once
// Following a DeepSpeed run while it runs (`shardscope watch`, the GUI's Launch & Watch of a user
// command): its output lines go through the log parser, its csv_monitor folder is re-read from
// where the last poll stopped, and every step row that changed is sent to the session's sink, so a
// live view sees steps as DeepSpeed writes them. Not thread-safe: one caller, or a mutex.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sessions/event_sink.hpp"
#include "sessions/import/deepspeed_log_parser.hpp"
#include "sessions/import/monitor_series.hpp"
#include "sessions/import/step_merger.hpp"

namespace shardscope::sessions {

struct RunFollowerOptions {
  std::string csv_dir;                           ///< the csv_monitor job folder DeepSpeed writes
  std::optional<std::int64_t> samples_per_step;  ///< train_batch_size, when the config gives it
};

class DeepSpeedRunFollower {
 public:
  /// Sends to `sink`, which must outlive the follower.
  DeepSpeedRunFollower(EventSink& sink, RunFollowerOptions options);

  /// One line of the command's output (stdout or stderr).
  void on_output_line(const std::string& line);
  /// Reads what the csv_monitor files gained since the last poll; returns the points read.
  std::size_t poll();
  /// The end: reads the files to their end (a last line without newline included), closes the
  /// parser's open step and sends what is left.
  void finish();
  const DeepSpeedLogFacts& facts() const { return log_.facts(); }
  std::size_t points_read() const { return points_read_; }

 private:
  struct CsvFile {
    std::uint64_t offset = 0;
    std::string header;  ///< known once the first line is complete
    std::string name;    ///< the series
    std::string pending; ///< bytes after the last complete line
    bool broken = false; ///< stopped parsing: reported once, then skipped
  };
  std::size_t read_file(const std::string& path, CsvFile& file, bool complete);
  std::size_t read_file_safely(const std::string& path, CsvFile& file, bool complete);
  std::int64_t known_samples_per_step() const;
  void flush_unsent();
  void send_changed();

  EventSink& sink_;
  RunFollowerOptions options_;
  DeepSpeedLogParser log_;
  StepMerger merger_;
  std::map<std::string, CsvFile> files_;
  std::vector<MonitorSeries> unsent_;  ///< csv points waiting for the samples-per-step
  std::size_t points_read_ = 0;
  std::int64_t sample_gcd_ = 0;
};

}  // namespace shardscope::sessions
