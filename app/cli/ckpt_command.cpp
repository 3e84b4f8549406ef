// shardscope ckpt info|consolidate: what a checkpoint folder holds and whether each tag is one
// consistent set, and (ckpt_consolidate.cpp) the shards merged into safetensors with Hugging Face
// names. Reading is checkpoints::DeepSpeedCheckpoint; this file is flags, output and exit codes.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/ckpt_command.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_error.hpp"
#include "checkpoints/checkpoint_folder.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/regular_file.hpp"
#include "configs/did_you_mean.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::app {
namespace ck = checkpoints;
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::vector<std::string> checkpoint_tags_of(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw UsageError("checkpoint directory '" + dir + "' does not exist");
  if (!fs::is_directory(dir, ec)) throw UsageError("'" + dir + "' is a file, not a checkpoint directory");
  auto tags = ck::checkpoint_tags(dir);
  if (!tags.empty()) return tags;
  const fs::path folder(dir);
  if (fs::exists(folder / ck::model_states_file_name(0, 0), ec) || fs::exists(folder / ck::model_states_file_name(3, 0), ec)) {
    const fs::path absolute = fs::absolute(folder).lexically_normal();
    throw UsageError("'" + dir + "' is one tag's folder, not a checkpoint directory: give its parent '" +
                     absolute.parent_path().string() + "' (with --tag " + absolute.filename().string() + ")");
  }
  throw UsageError("'" + dir + "' is not a checkpoint directory: no sub-folder holds " + ck::model_states_file_name(0, 0) +
                   " or " + ck::model_states_file_name(3, 0) +
                   " (the folder given to --save, or DeepSpeed's save_checkpoint(save_dir))");
}

namespace {

std::string human(std::uint64_t bytes) { return sessions::format_bytes(bytes); }

Json consistency_json(const ck::CheckpointSummary& s) {
  if (s.manifest)
    return {{"checked_against", "manifest"}, {"save_id", s.manifest->save_id}, {"files", s.manifest->files.size()}};
  return {{"checked_against", "rank 0's files"}, {"files", s.file_bytes.size()}};
}

Json tag_json(const std::string& dir, const std::string& tag, const std::optional<std::string>& latest) {
  Json t{{"tag", tag}, {"latest", latest && *latest == tag}};
  const fs::path folder = fs::path(dir) / tag;
  try {
    ck::OpenOptions options;
    options.verify_content = true;  // every byte of every rank's file
    const ck::DeepSpeedCheckpoint checkpoint(folder.string(), options);
    const auto& s = checkpoint.summary();
    t["zero_stage"] = s.zero_stage;
    t["world_size"] = s.world_size;
    t["precision"] = s.precision;
    t["optimizer"] = {{"type", s.optimizer_type}, {"step", s.optimizer_step}, {"states", s.state_names}};
    t["global_steps"] = s.global_steps;
    t["global_samples"] = s.global_samples;
    t["skipped_steps"] = s.skipped_steps;
    t["parameters"] = s.parameter_count();
    t["tensors"] = s.parameters.size();
    Json tied = Json::object();
    for (const auto& [alias, target] : s.shared) tied[alias] = target;
    t["tied"] = tied;
    t["ds_version"] = s.ds_version;
    t["written_by"] = s.written_by;
    t["consistency"] = consistency_json(s);
  } catch (const ck::CheckpointError& e) {  // a damaged tag is a finding; the other tags are still listed
    t["error"] = e.what();
  }
  Json files = Json::array(), leftovers = Json::array();
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    std::error_code type_error;
    if (!fs::is_regular_file(e.status(type_error))) continue;
    const auto bytes = static_cast<std::uint64_t>(fs::file_size(e.path(), type_error));
    const std::string name = e.path().filename().string();
    (ck::is_temporary_name(name) ? leftovers : files).push_back({{"name", ck::printable(name, 200)}, {"bytes", bytes}});
    total += bytes;
  }
  std::sort(files.begin(), files.end(), [](const Json& a, const Json& b) { return a["name"] < b["name"]; });
  t["files"] = files;
  t["leftover_temporaries"] = leftovers;
  t["total_bytes"] = total;
  return t;
}

void print_file_rows(const Json& t) {
  std::size_t width = 5;
  for (const auto& list : {t["files"], t["leftover_temporaries"]})
    for (const auto& f : list) width = std::max(width, f["name"].get<std::string>().size());
  const auto row = [&](const std::string& name, std::uint64_t bytes) {
    const std::string exact = grouped(static_cast<std::int64_t>(bytes));
    std::cout << "  " << name << std::string(width - name.size() + 2, ' ')
              << std::string(14 - std::min<std::size_t>(14, exact.size()), ' ') << exact << " B  " << human(bytes) << "\n";
  };
  for (const auto& f : t["files"]) row(f["name"].get<std::string>(), f["bytes"].get<std::uint64_t>());
  for (const auto& f : t["leftover_temporaries"]) row(f["name"].get<std::string>(), f["bytes"].get<std::uint64_t>());
  row("total", t["total_bytes"].get<std::uint64_t>());
}

void print_tag(const Json& t) {
  std::cout << "\n" << t["tag"].get<std::string>() << (t["latest"].get<bool>() ? "  (latest)" : "") << "\n";
  if (t.contains("error")) {
    std::cout << "  error: " << t["error"].get<std::string>() << "\n";
  } else {
    const auto& o = t["optimizer"];
    const std::string type = o["type"].get<std::string>().empty() ? "the optimizer" : o["type"].get<std::string>();
    std::cout << "  ZeRO stage " << t["zero_stage"] << ", saved by " << t["world_size"] << " rank(s), "
              << t["precision"].get<std::string>() << " training, " << type << " at step " << o["step"]
              << " (states: " << join_list(o["states"].get<std::vector<std::string>>()) << ")\n"
              << "  global steps " << t["global_steps"] << ", global samples " << t["global_samples"] << ", skipped "
              << t["skipped_steps"] << "\n"
              << "  " << grouped(t["parameters"].get<std::int64_t>()) << " parameters in " << t["tensors"] << " tensors";
    for (const auto& [alias, target] : t["tied"].items()) std::cout << "; " << alias << " is tied to " << target.get<std::string>();
    const std::string writer = t["written_by"].get<std::string>();
    std::cout << "\n  written by " << writer
              << (writer.rfind("DeepSpeed", 0) == 0 ? "" : " in DeepSpeed " + t["ds_version"].get<std::string>() + "'s layout")
              << "\n";
    const auto& c = t["consistency"];
    if (c["checked_against"] == "manifest")
      std::cout << "  consistent: every rank's file matches the manifest of save " << c["save_id"].get<std::string>() << "\n";
    else
      std::cout << "  consistent: every rank's file agrees with rank 0's (DeepSpeed writes no manifest)\n";
  }
  if (!t["leftover_temporaries"].empty())
    std::cout << "  warning: leftover temporary files of an interrupted write (the next save into this tag removes them)\n";
  print_file_rows(t);
}

int info_action(const CommandArgs& args) {
  ArgParser parser("ckpt info",
                   "Lists the tags of a checkpoint directory (the folder given to --save, or DeepSpeed's\n"
                   "save_dir) and, for each, the ZeRO stage and world size it was saved at, precision,\n"
                   "optimizer step, parameters and files, after checking that every rank's file belongs to the\n"
                   "save. Exit code 0; 1 when a tag is damaged or inconsistent or `latest` is unusable; 2 for bad input.");
  parser.positional("DIR", "checkpoint directory").flag("json", "print one JSON object");
  add_deepspeed_version_option(parser);
  const ParsedArgs p = parser.parse(args);
  if (p.help) return std::cout << parser.help_text(), kExitOk;
  const configs::DeepSpeedRules rules = deepspeed_rules_from(p);
  const std::string dir = p.positionals.at(0);
  const auto tags = checkpoint_tags_of(dir);
  std::optional<std::string> latest;
  std::string latest_error;
  try {
    latest = ck::read_latest_tag(dir);
  } catch (const ck::CheckpointError& e) {
    latest_error = e.what();
  }
  Json out{{"dir", dir}, {"latest", latest ? Json(*latest) : Json()},
           {"deepspeed_version", configs::to_string(rules.version)}, {"deepspeed_rules", rules.describe()},
           {"tags", Json::array()}};
  bool findings = !latest_error.empty();
  for (const auto& tag : tags) {
    out["tags"].push_back(tag_json(dir, tag, latest));
    findings |= out["tags"].back().contains("error");
  }
  if (latest && std::find(tags.begin(), tags.end(), *latest) == tags.end()) {
    latest_error = dir + "/latest names '" + ck::printable(*latest) + "', which is not a tag here: a load without a tag will fail";
    findings = true;
  }
  if (!latest_error.empty()) out["latest_error"] = latest_error;
  if (p.has("json")) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "rules: " << rules.describe() << "\n";
    std::cout << "checkpoint " << dir << ": " << tags.size() << " tag" << (tags.size() == 1 ? "" : "s") << ", latest -> "
              << (latest ? ck::printable(*latest) : latest_error.empty() ? "(no latest file)" : "(unusable)") << "\n";
    for (const auto& t : out["tags"]) print_tag(t);
  }
  if (!latest_error.empty()) std::cerr << "shardscope ckpt info: " << latest_error << "\n";
  return findings ? kExitFindings : kExitOk;
}

}  // namespace

int run_ckpt_command(const CommandArgs& args) {
  static const std::vector<std::pair<std::string, int (*)(const CommandArgs&)>> actions = {
      {"info", info_action}, {"consolidate", ckpt_consolidate_action}};
  const std::string usage =
      "usage: shardscope ckpt info DIR [--json] [--deepspeed-version V]\n"
      "       shardscope ckpt consolidate DIR OUT [--tag T] [--dtype fp32|bf16|fp16] [--max-shard-size 5GB]\n"
      "                                       [--deepspeed-version V]\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << usage << "Run 'shardscope ckpt <action> --help' for its options.\n";
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::vector<std::string> names;
  for (const auto& [name, run] : actions) {
    names.push_back(name);
    if (args[0] != name) continue;
    try {
      return run(CommandArgs(args.begin() + 1, args.end()));
    } catch (const ck::CheckpointError& e) {  // an input that cannot be read at all is bad input (exit 2)
      if (e.kind() == ck::CheckpointErrorKind::kUnreadable) throw UsageError(e.what());
      throw;
    }
  }
  std::string message = "unknown ckpt action '" + args[0] + "'";
  if (auto guess = configs::closest_match(args[0], names)) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message + " (info, consolidate)");
}

}  // namespace shardscope::app
