#pragma once
// What the Tune page's form says, as a plain struct, and the `shardscope tune` command line it
// makes (the page's CLI twin and the child process it starts); the space the tuner would search
// for it (the default space with the page's --space rows in place, read by the tune library); and
// where the tuner leaves its candidate configs. No widgets: tests reach all of it.

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::gui {

/// What each trial's ranks run on: CPU processes (Gloo, --num_procs) or GPUs (--num_gpus).
enum class TuneDevice { kCpuProcesses, kGpus };

struct TuneSpec {
  std::string config_path;
  std::vector<std::string> space;    ///< --space rows, KEY=V1,V2,... (empty: the default space)
  std::string metric;                ///< tokens_per_s | samples_per_s | step_time; empty: the config's or tokens_per_s
  std::string tuner;                 ///< gridsearch | random | model_based; empty: the config's or gridsearch
  std::string budget;                ///< --budget TIME (90s, 20m, 1h); empty: none
  int trials = 0;                    ///< --trials N; 0: the config's tuner_num_trials (50)
  int early_stopping = -1;           ///< --early-stopping N; -1: the config's (5)
  std::string memory_budget;         ///< --memory-budget BYTES; empty: GPU 0's memory
  double memory_margin = -1;         ///< --memory-margin; negative: 0.10
  std::string profile_steps;         ///< --profile-steps START:END; empty: 3:12 or the config's
  TuneDevice device = TuneDevice::kCpuProcesses;
  int processes = 2;                 ///< --num_procs or --num_gpus per host (0 with a hostfile: its slots)
  std::string hostfile;              ///< --hostfile; empty: this machine
  int num_nodes = 0;                 ///< --num_nodes; 0: every host
  std::string db;                    ///< --db
  std::string out_dir;               ///< --out
  bool resume = false;
  bool try_dominated = false;        ///< --try-dominated: also try what is slower by construction
  std::string train_args;            ///< after `--`, split as a shell would
};

/// The arguments of `shardscope tune` for `spec` (without the program); throws
/// std::invalid_argument naming the field for a missing config, database, train arguments or a
/// --space row without '=' (the tune library's own words).
std::vector<std::string> tune_arguments(const TuneSpec& spec);

/// The train arguments split as a shell would; throws std::invalid_argument for an open quote.
std::vector<std::string> split_train_args(const std::string& text);

/// The ranks of one trial as the form gives them (a hostfile's slots are counted from its file).
int tune_world_size(const TuneSpec& spec);

/// One dimension of the space the tuner would search.
struct SpaceRow {
  std::string key;
  std::string values;  ///< "0, 1, 2, 3", "default" for a key left out
  std::string origin;  ///< "default", "--space" or "autotuning"
};

struct SpacePreview {
  std::vector<SpaceRow> rows;
  std::size_t grid_points = 0;
  std::string note;   ///< "train_batch_size 8: gradient accumulation follows the micro-batch"
  std::string error;  ///< why there is no preview (no config yet, a bad --space row), or empty
};

/// The space `shardscope tune` would search for the spec: the default space of its config (the
/// autotuning block read as the CLI reads it) with the --space rows in place. Never throws.
SpacePreview preview_space(const TuneSpec& spec);
/// The default space's rows as --space lines (KEY=V1,V2), to start editing from.
std::vector<std::string> default_space_lines(const TuneSpec& spec);

/// Where the tuner writes the candidate config of trial `trial`: autotuning.exps_dir, else
/// <out>/exps, as `shardscope tune` decides it (trial_007.json).
std::string trial_config_path(const TuneSpec& spec, std::int64_t trial);

}  // namespace shardscope::gui
