#pragma once
// DeepSpeed's monitor series (csv_monitor files, TensorBoard scalars): "Train/Samples/lr" and
// friends, each a list of (x, value) with x the global sample count DeepSpeed passes as the step.
// monitor_series_to_events turns them into a session's per-step events.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sessions/events.hpp"

namespace shardscope::sessions {

struct MonitorPoint {
  std::int64_t x = 0;     ///< DeepSpeed's global_samples when it wrote the value
  double value = 0;
  double wall_time = 0;   ///< Unix seconds (TensorBoard events carry it; csv_monitor does not: 0)
};

struct MonitorSeries {
  std::string name;                 ///< "Train/Samples/lr"
  std::vector<MonitorPoint> points; ///< in file order
};

/// One csv_monitor file's text: a "step,<header>" line, then "step,value" rows as Python's csv
/// module wrote them (CRLF or LF; a header repeated where another process appended). `name` is
/// the series the file holds. A last line without a newline is read only when `complete`
/// (a live file may be mid-write); `consumed` (when given) gets the bytes read.
/// Throws ImportError naming file:line for anything else.
MonitorSeries parse_csv_monitor_text(const std::string& text, const std::string& file, const std::string& name,
                                     bool complete = true, std::size_t* consumed = nullptr);

/// The series name of a csv_monitor file: its header (the last part of the log name) under the
/// file stem's prefix with '_' read as '/' ("Train_Samples_lr.csv" + "lr" -> "Train/Samples/lr").
std::string csv_monitor_series_name(const std::string& file_stem, const std::string& header);

/// The header of a csv_monitor text ("step,lr" -> "lr"); nullopt while the first line is incomplete.
std::optional<std::string> csv_monitor_header(const std::string& text, const std::string& file);

/// Every *.csv file of a csv_monitor folder (the job's folder, or its parent holding one job
/// folder), parsed. Throws ImportError for a missing folder, one with no csv files, or a bad file.
std::vector<MonitorSeries> read_csv_monitor_folder(const std::string& folder);

/// How monitor x values (samples) become steps: step = x / samples_per_step (DeepSpeed adds
/// train_batch_size per optimizer step); the engine's own numbering, 1-based.
struct MonitorStepping {
  std::int64_t samples_per_step = 0;  ///< 0: infer from the series (the gcd of the x values)
};

/// The per-step events of `series` (rank 0: DeepSpeed's monitors write on global rank 0 only):
/// lr, loss_scale and train_loss fill StepMetrics (lr and loss_scale at the step after the one
/// DeepSpeed wrote them at: it writes them after its scheduler and scaler stepped, so they are the
/// values the next step runs with); elapsed_time_ms_<timer> become timers named as
/// ShardScope's engine names them (forward, backward, backward_inner, backward_allreduce, step)
/// with step_time_ms = forward + backward + step; every other series becomes SeriesPoints under
/// its own name. Steps are ordered; a value written twice for a step keeps the last.
std::vector<Event> monitor_series_to_events(const std::vector<MonitorSeries>& series,
                                            const MonitorStepping& stepping);

/// The samples per step monitor_series_to_events uses: `stepping.samples_per_step`, else the
/// greatest common divisor of every x (0 when there is no point).
std::int64_t samples_per_step(const std::vector<MonitorSeries>& series, const MonitorStepping& stepping);

}  // namespace shardscope::sessions
