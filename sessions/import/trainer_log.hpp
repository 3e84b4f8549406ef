#pragma once
// Hugging Face Trainer (and Accelerate) runs seen whole: what the Trainer itself writes at each
// logging step, read into the same per-step events as ShardScope's own runs.
// - Its console lines: ProgressCallback writes each log dict through tqdm ("{'loss': '2.31',
//   'grad_norm': '1.2', 'learning_rate': '5e-05', 'epoch': '0.1'}", floats at 4 significant digits
//   in transformers 5, plain floats before), then redraws the bar, whose "n/total" is the step the
//   dict was logged at; PrinterCallback (disable_tqdm) prints the dict alone.
// - trainer_state.json's log_history: every logged dict at full precision with its "step".
// - Its TensorBoard scalars ("train/loss", "eval/loss" at global_step) are read by
//   tensorboard_events.hpp and turned into events here.
// Under DeepSpeed the learning rate the Trainer logs is read after DeepSpeed's engine.step()
// stepped the scheduler: it is the next step's (docs/sessions.md, "Trainer runs").

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sessions/events.hpp"
#include "sessions/import/monitor_series.hpp"

namespace shardscope::sessions {

/// One dict the Trainer logged: its numeric entries and the global step it was logged at.
struct TrainerLogRecord {
  std::int64_t step = -1;                ///< -1 until known
  std::map<std::string, double> values;  ///< "loss", "grad_norm", "learning_rate", "eval_loss", ...
};

struct TrainerEventOptions {
  /// The logged learning rate belongs to the step after the one it was logged at (DeepSpeed steps
  /// its scheduler before the Trainer reads it).
  bool lr_is_next_steps = true;
};

/// The first Python dict literal in `text` ({'key': value, ...}, values quoted or bare; nested
/// values skipped), its numeric entries; nullopt when `text` holds no dict with a number.
std::optional<std::map<std::string, double>> parse_python_dict_numbers(std::string_view text);

/// True for a dict the Trainer logs: one with "loss", "eval_loss", "train_runtime",
/// "learning_rate" or "grad_norm" (other printed dicts, such as a script's own, are not).
bool is_trainer_log(const std::map<std::string, double>& values);

/// The log_history of a trainer_state.json text; throws ImportError naming `file` when it is not
/// one. Entries without a step are dropped.
std::vector<TrainerLogRecord> parse_trainer_state(std::string_view json_text, const std::string& file);
std::vector<TrainerLogRecord> read_trainer_state(const std::string& path);

/// The newest trainer_state.json under `folder` (itself, output_dir/, checkpoint-N/), by the
/// largest global_step, optionally only those written at or after `since` (Unix seconds); nullopt
/// when there is none.
std::optional<std::string> find_trainer_state(const std::string& folder, double since = 0);

/// True for a TensorBoard tag written at a step by the Trainer's TensorBoardCallback ("train/loss",
/// "eval/loss") or an Accelerate script's accelerator.log ("train_loss", "lr"); DeepSpeed's own
/// monitor tags are "Train/...", at a sample count.
bool is_trainer_tensorboard_series(const std::string& tag);

/// Those TensorBoard scalars (x = step) as log records: "train/loss" -> "loss", "eval/loss" ->
/// "eval_loss", a bare tag as it is, one record per step.
std::vector<TrainerLogRecord> trainer_records_from_tensorboard(const std::vector<MonitorSeries>& series);

/// Per-step events (rank 0: the Trainer logs on the world's process zero): loss (or an Accelerate
/// script's train_loss) and grad_norm in StepMetrics at the record's step, the learning rate
/// (learning_rate or lr) at the next step (see the options), the eval entries as SeriesPoints
/// "eval/<name>" ("eval_loss" -> "eval/loss"), epoch, the end-of-training summary and the rest as
/// "trainer/<name>". Ordered by step.
std::vector<Event> trainer_records_to_events(const std::vector<TrainerLogRecord>& records,
                                             const TrainerEventOptions& options = {});

/// Reads a run's console output line by line and completes each Trainer dict with its step: the
/// tqdm bar drawn right after it, else the step hint, else the last step plus the logging interval
/// seen so far.
class TrainerOutputReader {
 public:
  /// One output line (tqdm's "\r" redraws included).
  void feed_line(std::string_view line);
  /// The end of the output: a dict still waiting for its bar gets its step.
  void finish();
  /// The records completed since the last call, in order.
  std::vector<TrainerLogRecord> take_records();
  std::size_t records_seen() const { return seen_; }
  /// The latest step the run reported by other means (DeepSpeed's csv_monitor), for a dict that
  /// has no bar after it: the Trainer logs right after the step, so it is that dict's step.
  void set_step_hint(std::function<std::int64_t()> hint) { step_hint_ = std::move(hint); }

 private:
  void complete_pending(std::int64_t step);
  std::int64_t guessed_step(const TrainerLogRecord& record) const;

  std::function<std::int64_t()> step_hint_;
  std::optional<TrainerLogRecord> pending_;
  std::int64_t pending_hint_ = 0;  ///< the hint when the pending dict arrived
  bool bar_seen_ = false;
  std::vector<TrainerLogRecord> done_;
  std::int64_t last_step_ = 0;
  std::int64_t last_interval_ = 1;
  std::size_t seen_ = 0;
};

}  // namespace shardscope::sessions
