#include "sessions/import/run_follower.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kReadChunk = 4u << 20;

}  // namespace

DeepSpeedRunFollower::DeepSpeedRunFollower(EventSink& sink, RunFollowerOptions options)
    : sink_(sink), options_(std::move(options)), log_("output", -1) {
  // A Trainer dict without a tqdm bar after it (the bar goes to stderr, the dict to stdout) is at
  // the step DeepSpeed's csv_monitor last wrote: the Trainer logs right after engine.step().
  trainer_.set_step_hint([this] { return latest_deepspeed_step_; });
}

void DeepSpeedRunFollower::take_trainer_records() {
  for (auto& e : trainer_records_to_events(trainer_.take_records())) {
    if (std::holds_alternative<StepMetrics>(e)) merger_.add(e, false);  // csv_monitor's lr is exact, the print is not
    else sink_.send(e);
  }
}

void DeepSpeedRunFollower::on_output_line(const std::string& line) {
  if (line.find("{'") != std::string::npos) poll();  // the step DeepSpeed wrote before the Trainer printed
  trainer_.feed_line(line);
  take_trainer_records();
  log_.feed_line(line);
  for (auto& e : log_.take_events()) {
    if (std::holds_alternative<StepMetrics>(e) || std::holds_alternative<TimerBreakdown>(e)) merger_.add(e, false);
    else sink_.send(e);
  }
  send_changed();
}

std::size_t DeepSpeedRunFollower::read_file(const std::string& path, CsvFile& file, bool complete) {
  std::string chunk = read_file_from(path, file.offset, kReadChunk);
  file.offset += chunk.size();
  file.pending += chunk;
  if (file.header.empty()) {
    const auto end = file.pending.find('\n');
    if (end == std::string::npos && !complete) return 0;
    file.header = csv_monitor_header(file.pending.substr(0, end) + "\n", path).value_or("");
    file.name = csv_monitor_series_name(fs::path(path).stem().string(), file.header);
    file.pending.erase(0, end == std::string::npos ? file.pending.size() : end + 1);
  }
  // Reuse the whole-file parser on the new lines behind the file's own header.
  const std::string header_line = "step," + file.header + "\n";
  std::size_t consumed = 0;
  MonitorSeries series = parse_csv_monitor_text(header_line + file.pending, path, file.name, complete, &consumed);
  file.pending.erase(0, consumed > header_line.size() ? consumed - header_line.size() : 0);
  const std::size_t n = series.points.size();
  if (n) unsent_.push_back(std::move(series));
  return n;
}

// A file that stops parsing is reported once in the session's log and no longer read: the run
// goes on, and so does the watch.
std::size_t DeepSpeedRunFollower::read_file_safely(const std::string& path, CsvFile& file, bool complete) {
  if (file.broken) return 0;
  try {
    return read_file(path, file, complete);
  } catch (const ImportError& error) {
    file.broken = true;
    sink_.send(LogLine{-1, 0, LogLevel::kWarning, std::string("shardscope: stopped reading ") + error.what()});
    return 0;
  }
}

std::int64_t DeepSpeedRunFollower::known_samples_per_step() const {
  if (options_.samples_per_step) return *options_.samples_per_step;
  if (log_.facts().train_batch_size) return *log_.facts().train_batch_size;
  return 0;
}

void DeepSpeedRunFollower::flush_unsent() {
  // Without train_batch_size (an "auto" config) the samples per step are the gcd of every point so
  // far, which is exact once the first step is in (its x is one step's samples).
  sample_gcd_ = std::gcd(sample_gcd_, samples_per_step(unsent_, {}));
  const std::int64_t per_step = known_samples_per_step() > 0 ? known_samples_per_step() : sample_gcd_;
  if (!unsent_.empty() && per_step > 0) {
    for (const auto& series : unsent_)
      for (const auto& p : series.points) latest_deepspeed_step_ = std::max(latest_deepspeed_step_, p.x / per_step);
    for (auto& e : monitor_series_to_events(unsent_, {per_step})) {
      if (std::holds_alternative<SeriesPoint>(e)) sink_.send(e);
      else merger_.add(e, true);
    }
    unsent_.clear();
  }
  send_changed();
}

std::size_t DeepSpeedRunFollower::poll() {
  std::error_code error;
  std::size_t points = 0;
  if (fs::is_directory(options_.csv_dir, error)) {
    std::vector<std::string> paths;
    for (const auto& entry : fs::directory_iterator(options_.csv_dir, error))
      if (entry.is_regular_file() && entry.path().extension() == ".csv") paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    for (const auto& path : paths) points += read_file_safely(path, files_[path], false);
  }
  points_read_ += points;
  flush_unsent();
  return points;
}

void DeepSpeedRunFollower::finish() {
  poll();
  for (auto& [path, file] : files_) points_read_ += read_file_safely(path, file, true);
  flush_unsent();
  trainer_.finish();
  take_trainer_records();
  log_.finish();
  for (auto& e : log_.take_events()) {
    if (std::holds_alternative<StepMetrics>(e) || std::holds_alternative<TimerBreakdown>(e)) merger_.add(e, false);
    else sink_.send(e);
  }
  send_changed();
}

std::size_t DeepSpeedRunFollower::read_trainer_state_file(const std::string& path) {
  const auto records = read_trainer_state(path);
  for (auto& e : trainer_records_to_events(records)) {
    if (std::holds_alternative<StepMetrics>(e)) merger_.add(e, true);
    else sink_.send(e);  // a series point sent again replaces the printed one (same rank, step, name)
  }
  send_changed();
  return records.size();
}

void DeepSpeedRunFollower::send_changed() {
  for (auto& e : merger_.take_changed()) {
    if (const auto* step = std::get_if<StepMetrics>(&e)) {
      ++steps_sent_;
      last_step_ = std::max(last_step_, step->step);
    }
    sink_.send(e);
  }
}

}  // namespace shardscope::sessions
