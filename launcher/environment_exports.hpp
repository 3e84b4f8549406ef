#pragma once
// The environment a multi-node launch hands every rank on every host, as DeepSpeed's runner builds
// its exports (runner.py: EXPORT_ENVS, the accelerator's export_envs(), EXCLUDE_ENVS and the
// .deepspeed_env files): every variable whose name starts with NCCL, PYTHON, MV2, UCX or MLFLOW,
// plus ShardScope's own knobs (SHARDSCOPE_, GLOO_, DEEPSPEED_TIMEOUT), then the KEY=VALUE lines of
// `.deepspeed_env` in the home directory and in the current directory (DS_ENV_FILE renames the
// file). Unlike DeepSpeed, the values travel to each host on the node agent's private channel,
// never on a command line.

#include <string>
#include <utility>
#include <vector>

namespace shardscope::launcher {

using EnvironmentPairs = std::vector<std::pair<std::string, std::string>>;

struct ExportSources {
  std::vector<std::string> environment;  ///< the launcher's environment, "K=V" entries
  std::string home;                      ///< where the first .deepspeed_env is looked for ("~")
  std::string cwd;                       ///< where the second is ("."); later entries win
};

struct Exports {
  EnvironmentPairs variables;      ///< in the order they were found; a later value replaces an earlier one
  std::vector<std::string> notes;  ///< "deepspeed_env file = PATH", as DeepSpeed logs it
};

/// This process's environment as "K=V" entries (environ).
std::vector<std::string> process_environment();

/// Whether the launcher forwards `name` from its environment (DeepSpeed's prefixes and ours).
bool exported_by_prefix(const std::string& name);

/// Collects the exports. Throws LaunchError(kUsage) naming the file and line of a .deepspeed_env
/// line without '=' (DeepSpeed fails on it with a bare ValueError).
Exports collect_exports(const ExportSources& sources);

/// The KEY=VALUE lines of one .deepspeed_env file (blank lines and # comments skipped; key and value
/// stripped, as DeepSpeed's add_export does).
EnvironmentPairs read_deepspeed_env_file(const std::string& path);

}  // namespace shardscope::launcher
