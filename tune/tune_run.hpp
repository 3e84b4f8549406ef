#pragma once
// A whole tune run: the space, the estimator's pruning, the trials in the tuner's order until the
// budget, the trial cap or early stopping ends it, every decision recorded in the session store
// (sessions/tune_records.hpp), and the outputs (tune_report.hpp). `--resume` continues a killed
// run without repeating a finished trial. The CLI (`shardscope tune`) and the GUI call run_tune.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/models/model_spec.hpp"
#include "sessions/tune_records.hpp"
#include "tune/memory_pruning.hpp"
#include "tune/search_space.hpp"
#include "tune/tuners.hpp"

namespace shardscope::tune {

enum class TuneMetric { kTokensPerS, kSamplesPerS, kStepTime };

/// "tokens_per_s", "samples_per_s", "step_time"; throws TuneError naming `what`.
TuneMetric parse_tune_metric(const std::string& text, const std::string& what);
const char* tune_metric_name(TuneMetric metric);

struct TuneRequest {
  std::string config_path;
  nlohmann::json user_config;
  engine::ModelSpec model;              ///< from the train arguments, for the estimator
  int world_size = 1;
  std::vector<std::string> launch_flags;  ///< where: --num_procs N, --num_gpus N, --hostfile F, ...
  std::vector<std::string> train_args;    ///< the train arguments, without --config and --steps
  std::vector<Dimension> space_flags;     ///< --space
  DefaultSpaceOptions space_options;
  TuneMetric metric = TuneMetric::kTokensPerS;
  TunerType tuner = TunerType::kGridSearch;
  std::optional<double> budget_s;       ///< --budget: trial wall time in all
  std::int64_t max_trials = 50;         ///< --trials / tuner_num_trials: trials run (not pruned)
  int early_stopping = 5;               ///< tuner_early_stopping
  bool skip_dominated = true;           ///< leave out what is slower by construction (tune/dominance.hpp)
  double min_improvement = 0.0;         ///< a trial must beat the best by this fraction to count
  std::int64_t start_profile_step = 3;  ///< the first step measured
  std::int64_t end_profile_step = 12;   ///< the last step, and the steps each trial runs
  std::int64_t num_tuning_micro_batch_sizes = 3;
  bool micro_batch_from_default = true;  ///< the micro-batch dimension is the default one
  std::optional<std::int64_t> max_train_batch_size;
  std::int64_t min_train_batch_size = 1;
  std::map<std::string, std::string> arg_mappings;  ///< autotuning.arg_mappings
  MemoryBudget memory;
  std::string db;
  std::string out_dir;
  std::string exps_dir;
  bool resume = false;
  std::uint64_t seed = 42;
  double trial_timeout_s = 0;
  std::string shardscope;  ///< the executable trials run
};

/// One candidate with what is known of it.
struct TuneCandidate {
  Assignment assignment;
  nlohmann::json config;
  double predicted_bytes = 0;
  std::string prune_reason;  ///< empty: runnable
};

struct TuneOutcome {
  std::string run_uid;
  std::vector<sessions::TuneTrialRecord> trials;  ///< every row, trial order
  std::optional<std::size_t> best;                ///< index into trials
  std::optional<std::size_t> runner_up;
  std::string stop_reason;
  bool interrupted = false;  ///< SIGINT/SIGTERM stopped it (install_stop_handlers)
  std::vector<std::string> left_out;  ///< grid points DeepSpeed would refuse, with the count of each reason
  std::size_t grid_points = 0;
  std::string best_config_path, report_path;
};

/// The candidates of the request's space with the estimator's verdict on each (no trial runs).
std::vector<TuneCandidate> plan_candidates(const TuneRequest& request, std::vector<std::string>& left_out,
                                           std::size_t& grid_points);

/// Runs (or with request.resume continues) the tune run; progress lines go to `log`. Throws
/// TuneError for input it cannot use, before any trial starts.
TuneOutcome run_tune(const TuneRequest& request, std::ostream& log);

}  // namespace shardscope::tune
