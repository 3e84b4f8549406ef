#pragma once
// Preparing a user's own DeepSpeed command for `shardscope watch`: find its config argument the
// way DeepSpeed and the Hugging Face Trainer take it (--deepspeed FILE, --deepspeed_config FILE,
// their =FILE forms, else a .json argument that is a DeepSpeed config), write a copy with
// csv_monitor turned on into a folder of ShardScope's own (and log_level "info", unless the file
// sets one, so DeepSpeed prints the config it ran with), and point the command at the copy.
// The user's file is never written.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "configs/deepspeed_version.hpp"

namespace shardscope::sessions {

struct WatchPlan {
  std::vector<std::string> command;  ///< the user's command with the config argument replaced
  std::string config_path;           ///< the user's config
  std::size_t config_argument = 0;   ///< index in the command of the argument that names it
  std::string config_copy;           ///< <out_dir>/ds_config.json
  std::string csv_dir;               ///< <out_dir>/csv_monitor/<job_name>: where DeepSpeed writes the series
  std::string config_json;           ///< the copy's JSON text
  std::optional<std::int64_t> train_batch_size;  ///< when the config gives it as a number
  std::string user_config_json;      ///< the user's config as written (compact JSON)
  /// Keys the copy sets that the user's file does not, or sets otherwise: csv_monitor, and
  /// log_level "info" so DeepSpeed prints the config it ran with (after a Trainer's fill).
  std::vector<std::string> changed_keys;
};

/// The flags of DeepSpeed's launcher that `release` no longer has and `command` gives it (a
/// `deepspeed` command, before its script): 0.19.8 removed --elastic_training,
/// --min_elastic_nodes, --max_elastic_nodes (launcher/runner.py) and --enable_elastic_training
/// (launcher/launch.py), so its argparse exits with "unrecognized arguments". Empty otherwise.
std::vector<std::string> removed_launcher_flags(const std::vector<std::string>& command,
                                                configs::DeepSpeedVersion release);

/// The config DeepSpeed printed it ran with (`effective_json`) with the keys the watch copy changed
/// put back as the user wrote them: what the user's run used. `effective_json` when not an object.
std::string effective_user_config(const std::string& effective_json, const WatchPlan& plan);

/// Index and path of the config argument of `command`; nullopt when there is none.
std::optional<std::pair<std::size_t, std::string>> find_config_argument(const std::vector<std::string>& command);

/// Finds the config, writes the copy (atomically: a temporary name, then rename) and returns the
/// plan. Throws ImportError naming the argument or file when there is no config or it is not
/// a readable JSON object.
WatchPlan plan_watch(const std::vector<std::string>& command, const std::string& out_dir);

}  // namespace shardscope::sessions
