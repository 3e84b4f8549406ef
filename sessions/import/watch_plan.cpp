#include "sessions/import/watch_plan.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "configs/config_document.hpp"
#include "configs/input_file.hpp"
#include "sessions/atomic_output.hpp"
#include "sessions/errors.hpp"
#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

constexpr const char* kJobName = "shardscope";

bool is_file(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

bool ends_with_json(const std::string& s) { return s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0; }

// A .json file whose top-level keys include a DeepSpeed batch, ZeRO or precision key. One larger
// than a config may be (a data file the script takes) is not one.
bool looks_like_deepspeed_config(const std::string& path) {
  if (!ends_with_json(path) || !is_file(path)) return false;
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error || size > configs::kMaxConfigFileBytes) return false;
  const auto document = configs::parse_config_text(read_config_file_bytes(path), path);
  if (!document.root || !document.root->is_object()) return false;
  for (const char* key : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                          "zero_optimization", "fp16", "bf16", "optimizer"})
    if (document.root->find(key)) return true;
  return false;
}

// The copy is written whole or not at all (AtomicOutput), and a link or device at its path is
// refused rather than replaced; the store's error becomes watch's, naming the copy.
void write_config_copy(const std::string& path, const std::string& text) {
  try {
    AtomicOutput file(path);
    file.stream() << text;
    file.commit();
  } catch (const StoreError& error) {
    throw ImportError(std::string("the config copy: ") + error.what() + " (choose another --out DIR)");
  }
}

}  // namespace

std::optional<std::pair<std::size_t, std::string>> find_config_argument(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i) {
    const std::string& arg = command[i];
    for (const std::string flag : {"--deepspeed_config", "--deepspeed"}) {
      if (arg.rfind(flag + "=", 0) == 0) return std::make_pair(i, arg.substr(flag.size() + 1));
      // `--deepspeed` alone is also deepspeed.add_config_arguments' on/off flag: a path must follow.
      if (arg == flag && i + 1 < command.size() && command[i + 1].rfind("--", 0) != 0 &&
          (flag == "--deepspeed_config" || ends_with_json(command[i + 1]) || is_file(command[i + 1])))
        return std::make_pair(i + 1, command[i + 1]);
    }
  }
  for (std::size_t i = 0; i < command.size(); ++i)
    if (looks_like_deepspeed_config(command[i])) return std::make_pair(i, command[i]);
  return std::nullopt;
}

WatchPlan plan_watch(const std::vector<std::string>& command, const std::string& out_dir) {
  if (command.empty()) throw ImportError("watch needs the command to run after `--`, e.g. -- deepspeed train.py "
                                         "--deepspeed ds.json");
  const auto found = find_config_argument(command);
  if (!found)
    throw ImportError("no DeepSpeed config in the command: pass it as --deepspeed FILE or --deepspeed_config FILE "
                      "(or as a .json argument), so ShardScope can turn csv_monitor on in a copy");
  WatchPlan plan;
  plan.config_argument = found->first;
  plan.config_path = found->second;
  const auto document = configs::parse_config_text(read_config_file_bytes(plan.config_path), plan.config_path);
  if (!document.root || !document.root->is_object())
    throw ImportError(plan.config_path + ": not a DeepSpeed config (a JSON object); `shardscope validate " +
                      plan.config_path + "` shows why");
  // ordered_json: the copy keeps the user's key order, so it diffs cleanly against the original.
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(configs::to_json_text(*document.root));
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error) throw ImportError(out_dir + ": cannot create the watch folder: " + error.message());
  const std::string output_path = (fs::absolute(out_dir) / "csv_monitor").lexically_normal().string();
  plan.user_config_json = config.dump();
  config["csv_monitor"] = {{"enabled", true}, {"output_path", output_path}, {"job_name", kJobName}};
  plan.changed_keys.push_back("csv_monitor");
  if (!config.contains("log_level")) {
    config["log_level"] = "info";
    plan.changed_keys.push_back("log_level");
  }
  if (config.contains("train_batch_size") && config["train_batch_size"].is_number_integer())
    plan.train_batch_size = config["train_batch_size"].get<std::int64_t>();
  plan.config_json = config.dump(2);
  plan.config_copy = (fs::absolute(out_dir) / "ds_config.json").lexically_normal().string();
  plan.csv_dir = output_path + "/" + kJobName;
  write_config_copy(plan.config_copy, plan.config_json + "\n");
  plan.command = command;
  std::string& argument = plan.command[plan.config_argument];
  const auto equals = argument.find('=');
  argument = argument.rfind("--", 0) == 0 && equals != std::string::npos ? argument.substr(0, equals + 1) + plan.config_copy
                                                                          : plan.config_copy;
  return plan;
}

std::vector<std::string> removed_launcher_flags(const std::vector<std::string>& command,
                                                configs::DeepSpeedVersion release) {
  std::vector<std::string> found;
  if (command.empty() || release != configs::DeepSpeedVersion::k0_19_8 ||
      fs::path(command[0]).filename() != "deepspeed")
    return found;
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg.rfind("--", 0) != 0) break;  // the user's script: what follows is its own
    const std::string flag = arg.substr(0, arg.find('='));
    for (const char* removed : {"--elastic_training", "--min_elastic_nodes", "--max_elastic_nodes",
                                "--enable_elastic_training"})
      if (flag == removed) found.push_back(flag);
    // Every other launcher option takes a value (argparse's "--num_gpus 2"), except these.
    static const char* kSwitches[] = {"--no_ssh", "--no_ssh_check", "--no_python", "--no_local_rank",
                                      "--force_multi", "--save_pid", "--elastic_training", "--enable_elastic_training",
                                      "--bind_cores_to_rank", "--module", "-m", "-q", "--quiet"};
    bool takes_value = arg.find('=') == std::string::npos;
    for (const char* s : kSwitches) takes_value = takes_value && flag != s;
    if (takes_value) ++i;
  }
  return found;
}

std::string effective_user_config(const std::string& effective_json, const WatchPlan& plan) {
  auto effective = nlohmann::ordered_json::parse(effective_json, nullptr, false);
  const auto user = nlohmann::ordered_json::parse(plan.user_config_json, nullptr, false);
  if (!effective.is_object() || !user.is_object()) return effective_json;
  for (const auto& key : plan.changed_keys) {
    if (user.contains(key)) effective[key] = user[key];
    else effective.erase(key);
  }
  return effective.dump();
}

}  // namespace shardscope::sessions
