#pragma once
// Following a DeepSpeed run while it runs (`shardscope watch`, the GUI's Launch & Watch of a user
// command): its output lines go through the log parser, its csv_monitor folder is re-read from
// where the last poll stopped, and every step row that changed is sent to the session's sink, so a
// live view sees steps as DeepSpeed writes them. A Hugging Face Trainer's log dicts in the same
// output give the loss, grad norm and eval metrics (trainer_log.hpp); its trainer_state.json, read
// at the end, replaces their printed 4-digit values with exact ones. Not thread-safe: one caller,
// or a mutex.

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
#include "sessions/import/trainer_log.hpp"

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
  /// The Trainer's trainer_state.json of the run: its log_history replaces the printed dicts'
  /// rounded values (call after finish()); returns the records read. Throws ImportError.
  std::size_t read_trainer_state_file(const std::string& path);
  std::size_t trainer_records() const { return trainer_.records_seen(); }
  /// Step rows sent so far: 0 means the run never reached its first step.
  std::size_t steps_sent() const { return steps_sent_; }
  /// The highest step sent so far (0 before the first).
  std::int64_t last_step() const { return last_step_; }
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
  void take_trainer_records();

  DeepSpeedLogParser log_;
  TrainerOutputReader trainer_;
  StepMerger merger_;
  std::map<std::string, CsvFile> files_;
  std::vector<MonitorSeries> unsent_;  ///< csv points waiting for the samples-per-step
  std::size_t points_read_ = 0;
  std::size_t steps_sent_ = 0;
  std::int64_t last_step_ = 0;
  std::int64_t latest_deepspeed_step_ = 0;  ///< the last step csv_monitor wrote a row for
  std::int64_t sample_gcd_ = 0;
};

}  // namespace shardscope::sessions
