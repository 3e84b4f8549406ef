#pragma once
// A DeepSpeed run's RunStart and RunEnd from what its files say (the log's facts, the config),
// shared by the importer and the live watcher. Unknown stays empty: no version, host or time is
// made up.

#include <optional>
#include <string>
#include <vector>

#include "configs/deepspeed_version.hpp"
#include "sessions/events.hpp"
#include "sessions/import/deepspeed_log_parser.hpp"

namespace shardscope::sessions {

/// A DeepSpeed config as the session records it: the resolved config (configs' validator, as
/// DeepSpeed `version` reads the file) when it validates, else the file's own JSON. `notes` gets why.
/// Throws ImportError naming the file when it is not JSON at all.
struct RecordedConfig {
  std::string json;                             ///< "" when there is none
  std::optional<std::int64_t> train_batch_size; ///< written, or resolved for a known world size
  std::optional<int> world_size;                ///< implied by the batch keys, when they say
};
RecordedConfig record_deepspeed_config(const std::string& text, const std::string& file,
                                       std::optional<int> world_size, std::vector<std::string>& notes,
                                       configs::DeepSpeedVersion version = configs::DeepSpeedVersion::k0_19_7);

struct RunStartInputs {
  std::string name;
  std::vector<std::string> tags;
  std::vector<std::string> command_line;  ///< when known better than the log (the watched command)
  std::string config_json;
  std::optional<int> world_size;          ///< from the traces or the caller
  std::optional<double> started_at;       ///< when no log line is timestamped
  std::vector<std::string> hosts;         ///< e.g. from TensorBoard file names
  /// This machine's name when the run ran here (watch): DeepSpeed's launcher calls it "localhost"
  /// without a hostfile, so its ranks are put on this name, the one engine sessions carry.
  std::string local_host;
};

/// RunStart from the log's facts and the inputs; world size: the log, else the inputs, else the
/// ranks seen. Versions other than DeepSpeed's (named by the log) stay empty.
RunStart deepspeed_run_start(const DeepSpeedLogFacts& facts, const RunStartInputs& inputs);

/// RunEnd from the launcher's exit lines: "failed" when a rank exited non-zero, "completed" when
/// every rank exited 0, else `unknown_status` (the log does not say how the run ended).
RunEnd deepspeed_run_end(const DeepSpeedLogFacts& facts, const std::string& unknown_status);

}  // namespace shardscope::sessions
