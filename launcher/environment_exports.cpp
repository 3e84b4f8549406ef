#include "launcher/environment_exports.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "launcher/launch_error.hpp"
#include "sessions/run_secret.hpp"

extern char** environ;

namespace shardscope::launcher {
namespace {

// runner.py's EXPORT_ENVS plus CUDA's export_envs() ("NCCL"); then ShardScope's own settings, which
// its ranks read (SHARDSCOPE_COMM_TIMEOUT, GLOO_SOCKET_IFNAME, DEEPSPEED_TIMEOUT).
const char* const kDeepSpeedPrefixes[] = {"NCCL", "PYTHON", "MV2", "UCX", "MLFLOW"};
const char* const kShardScopePrefixes[] = {"SHARDSCOPE_", "GLOO_", "DEEPSPEED_TIMEOUT"};
// runner.py's EXCLUDE_ENVS: on AISC every node sets these itself.
const char* const kAiscOwn[] = {"NCCL_IB_HCA", "UCX_NET_DEVICES"};

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::string strip(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

void put(EnvironmentPairs& pairs, const std::string& key, const std::string& value) {
  auto same = std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return p.first == key; });
  if (same != pairs.end()) same->second = value;
  else pairs.emplace_back(key, value);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;  // os.path.join keeps an absolute name
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

bool exported_by_prefix(const std::string& name) {
  if (name == sessions::kCollectorSecretVariable) return false;  // each run makes its own
  return std::any_of(std::begin(kDeepSpeedPrefixes), std::end(kDeepSpeedPrefixes),
                     [&](const char* p) { return starts_with(name, p); }) ||
         std::any_of(std::begin(kShardScopePrefixes), std::end(kShardScopePrefixes),
                     [&](const char* p) { return starts_with(name, p); });
}

EnvironmentPairs read_deepspeed_env_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LaunchError(LaunchError::Kind::kUsage, "cannot read " + path);
  EnvironmentPairs pairs;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string text = strip(line);
    if (text.empty() || text[0] == '#') continue;
    const auto eq = text.find('=');
    if (eq == std::string::npos || strip(text.substr(0, eq)).empty())
      throw LaunchError(LaunchError::Kind::kUsage, path + ":" + std::to_string(number) + ": '" + text +
                                                       "' is not KEY=VALUE; every line of a .deepspeed_env file "
                                                       "exports one variable to every rank, e.g. NCCL_DEBUG=INFO");
    put(pairs, strip(text.substr(0, eq)), strip(text.substr(eq + 1)));
  }
  return pairs;
}

Exports collect_exports(const ExportSources& sources) {
  Exports exports;
  bool aisc = false;
  std::string env_file_name = ".deepspeed_env";
  for (const auto& entry : sources.environment) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (name == "AISC_JOB_NAME") aisc = true;
    if (name == "DS_ENV_FILE" && eq + 1 < entry.size()) env_file_name = entry.substr(eq + 1);
  }
  for (const auto& entry : sources.environment) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (!exported_by_prefix(name)) continue;
    if (aisc && std::any_of(std::begin(kAiscOwn), std::end(kAiscOwn), [&](const char* own) { return name == own; }))
      continue;
    put(exports.variables, name, entry.substr(eq + 1));
  }
  std::vector<std::string> read;
  for (const auto& dir : {sources.home, sources.cwd}) {
    const std::string path = join_path(dir, env_file_name);
    if (dir.empty() || !is_file(path) || std::find(read.begin(), read.end(), path) != read.end()) continue;
    read.push_back(path);
    exports.notes.push_back("deepspeed_env file = " + path);
    for (const auto& [key, value] : read_deepspeed_env_file(path)) put(exports.variables, key, value);
  }
  return exports;
}

}  // namespace shardscope::launcher
