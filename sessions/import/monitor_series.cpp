#include "sessions/import/monitor_series.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

// The line ending at `end` (exclusive of '\n'), without a trailing '\r'.
std::string_view line_at(const std::string& text, std::size_t start, std::size_t end) {
  std::string_view line(text.data() + start, end - start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

void parse_row(std::string_view line, const std::string& file, std::size_t number, const std::string& header,
               MonitorSeries& out) {
  const auto comma = line.find(',');
  if (comma == std::string_view::npos)
    throw ImportError(import_location(file, number) + ": expected 'step,value' (two fields), found '" +
                      std::string(line.substr(0, 80)) + "'; is this a DeepSpeed csv_monitor file?");
  const auto x = parse_integer(line.substr(0, comma));
  const auto value = parse_real(line.substr(comma + 1));
  if (line.substr(0, comma) == "step" && line.substr(comma + 1) == header) return;  // another process appended
  if (!x || !value)
    throw ImportError(import_location(file, number) + ": expected a whole step and a number, found '" +
                      std::string(line.substr(0, 80)) + "'");
  out.points.push_back({*x, *value, 0});
}

}  // namespace

std::optional<std::string> csv_monitor_header(const std::string& text, const std::string& file) {
  const auto end = text.find('\n');
  if (end == std::string::npos) return std::nullopt;
  const auto line = line_at(text, 0, end);
  if (!starts_with(line, "step,") || line.size() == 5)
    throw ImportError(import_location(file, 1) + ": expected the header 'step,<name>', found '" +
                      std::string(line.substr(0, 80)) + "'; is this a DeepSpeed csv_monitor file?");
  return std::string(line.substr(5));
}

MonitorSeries parse_csv_monitor_text(const std::string& text, const std::string& file, const std::string& name,
                                     bool complete, std::size_t* consumed) {
  MonitorSeries out{name, {}};
  const auto first_end = text.find('\n');
  if (first_end == std::string::npos && !complete) {
    if (consumed) *consumed = 0;
    return out;
  }
  const auto header = csv_monitor_header(text.substr(0, first_end) + "\n", file);
  std::size_t start = first_end == std::string::npos ? text.size() : first_end + 1, number = 2;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) {
      if (!complete) break;
      end = text.size();
    }
    const auto line = line_at(text, start, end);
    if (!line.empty()) parse_row(line, file, number, *header, out);
    start = std::min(end + 1, text.size());
    ++number;
  }
  if (consumed) *consumed = start;
  return out;
}

std::string csv_monitor_series_name(const std::string& file_stem, const std::string& header) {
  if (file_stem.size() <= header.size() || file_stem.compare(file_stem.size() - header.size(), header.size(), header))
    return file_stem;
  std::string prefix = file_stem.substr(0, file_stem.size() - header.size());
  std::replace(prefix.begin(), prefix.end(), '_', '/');
  return prefix + header;
}

std::vector<MonitorSeries> read_csv_monitor_folder(const std::string& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw ImportError(folder + ": not a folder; pass the csv_monitor folder (output_path/job_name) of the run");
  std::vector<fs::path> files;
  auto collect = [&](const fs::path& dir) {
    for (const auto& entry : fs::directory_iterator(dir, error))
      if (entry.is_regular_file() && entry.path().extension() == ".csv") files.push_back(entry.path());
  };
  collect(folder);
  if (files.empty())  // the output_path itself: one job folder below it
    for (const auto& entry : fs::directory_iterator(folder, error))
      if (entry.is_directory()) collect(entry.path());
  if (files.empty())
    throw ImportError(folder + ": no .csv files here or in a job folder below; csv_monitor writes "
                      "<output_path>/<job_name>/Train_Samples_*.csv");
  std::sort(files.begin(), files.end());
  std::vector<MonitorSeries> out;
  for (const auto& path : files) {
    const std::string text = read_file_bytes(path.string(), kMaxTextFileBytes);
    const auto header = csv_monitor_header(text.substr(0, text.find('\n')) + "\n", path.string());
    out.push_back(parse_csv_monitor_text(text, path.string(), csv_monitor_series_name(path.stem().string(), *header)));
  }
  return out;
}

std::int64_t samples_per_step(const std::vector<MonitorSeries>& series, const MonitorStepping& stepping) {
  if (stepping.samples_per_step > 0) return stepping.samples_per_step;
  std::int64_t g = 0;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (p.x > 0) g = std::gcd(g, p.x);
  return g;
}

namespace {

struct StepRow {
  StepMetrics metrics;
  std::map<std::string, double> timers;
  bool has_metrics = false;
};

// ShardScope's engine names DeepSpeed's global timers after their monitor series.
std::optional<std::string> timer_of(const std::string& series) {
  static const std::string kPrefix = "Train/Samples/elapsed_time_ms_";
  if (!starts_with(series, kPrefix)) return std::nullopt;
  return series.substr(kPrefix.size());
}

void add_point(StepRow& row, const std::string& name, double value, std::vector<Event>& series_out, std::int64_t step) {
  if (name == "Train/Samples/lr") row.metrics.lr = value;
  else if (name == "Train/Samples/loss_scale") row.metrics.loss_scale = value;
  else if (name == "Train/Samples/train_loss") row.metrics.loss = value;
  else if (auto timer = timer_of(name)) return void(row.timers[*timer] = value);
  else return series_out.push_back(SeriesPoint{0, step, name, value});
  row.has_metrics = true;
}

}  // namespace

std::vector<Event> monitor_series_to_events(const std::vector<MonitorSeries>& series, const MonitorStepping& stepping) {
  const std::int64_t per_step = samples_per_step(series, stepping);
  std::map<std::int64_t, StepRow> rows;
  std::vector<Event> others;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      std::int64_t step = per_step > 0 ? p.x / per_step : p.x;
      // DeepSpeed writes lr and loss_scale after its scheduler and loss scaler stepped: the values
      // the next step runs with, which is where ShardScope's engine records them.
      if (s.name == "Train/Samples/lr" || s.name == "Train/Samples/loss_scale") ++step;
      auto& row = rows[step];
      row.metrics.step = step;
      row.metrics.wall_time = std::max(row.metrics.wall_time, p.wall_time);
      add_point(row, s.name, p.value, others, step);
    }
  std::vector<Event> out;
  for (auto& [step, row] : rows) {
    if (!row.timers.empty()) {
      TimerBreakdown t{0, step, {}};
      for (const auto& [name, ms] : row.timers) t.timers.push_back({name, ms});
      out.push_back(std::move(t));
      const auto f = row.timers.find("forward"), b = row.timers.find("backward"), st = row.timers.find("step");
      if (f != row.timers.end() && b != row.timers.end() && st != row.timers.end()) {
        row.metrics.step_time_ms = f->second + b->second + st->second;
        row.has_metrics = true;
      }
    }
    if (row.has_metrics) out.push_back(row.metrics);
  }
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

}  // namespace shardscope::sessions
