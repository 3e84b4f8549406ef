// shardscope ckpt info|consolidate: what a ZeRO checkpoint folder holds, and its shards merged into
// safetensors with Hugging Face names (the zero_to_fp32.py counterpart). Reading and reassembling
// the shards of any world size and stage is engine::CheckpointShards; this file is flags, output
// layout (one file, or HF's model-0000i-of-0000N shards and index) and printing.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "configs/did_you_mean.hpp"
#include "engine/checkpoint_files.hpp"
#include "engine/checkpoint_shards.hpp"
#include "engine/models/safetensors_file.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::app {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// 1234567 -> "1,234,567": sizes and counts people compare by eye.
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string human(std::int64_t bytes) { return sessions::format_bytes(static_cast<std::uint64_t>(bytes)); }

// The tags of DIR; a missing folder or one without any tag is bad input (exit 2), with the remedy.
std::vector<std::string> tags_of(const std::string& dir, std::string& latest) {
  if (!fs::exists(dir)) throw UsageError("checkpoint directory '" + dir + "' does not exist");
  if (!fs::is_directory(dir)) throw UsageError("'" + dir + "' is a file, not a checkpoint directory");
  auto tags = engine::checkpoint_tags(dir, &latest);
  if (!tags.empty()) return tags;
  const fs::path folder(dir);
  if (fs::exists(folder / engine::model_states_file_name(0, 0)) || fs::exists(folder / engine::model_states_file_name(3, 0))) {
    const fs::path parent = fs::absolute(folder).lexically_normal().parent_path();
    throw UsageError("'" + dir + "' is one tag's folder, not a checkpoint directory: give its parent '" +
                     parent.string() + "' (with --tag " + fs::absolute(folder).lexically_normal().filename().string() + ")");
  }
  throw UsageError("'" + dir + "' is not a checkpoint directory: no sub-folder holds " +
                   engine::model_states_file_name(0, 0) + " or " + engine::model_states_file_name(3, 0) +
                   " (the folder given to --save, or DeepSpeed's save_checkpoint(save_dir))");
}

// ---------------------------------------------------------------------------------------------
// ckpt info

Json tag_json(const std::string& dir, const std::string& tag, const std::string& latest) {
  Json t{{"tag", tag}, {"latest", tag == latest}};
  try {
    const engine::CheckpointShards shards(dir, tag);
    const auto& i = shards.info();
    t["zero_stage"] = i.zero_stage;
    t["world_size"] = i.world_size;
    t["precision"] = i.precision;
    t["optimizer"] = {{"type", i.optimizer_type}, {"step", i.optimizer_step}, {"states", i.state_names}};
    t["global_steps"] = i.global_steps;
    t["global_samples"] = i.global_samples;
    t["skipped_steps"] = i.skipped_steps;
    t["parameters"] = i.parameter_count();
    t["tensors"] = i.names.size();
    t["ds_version"] = i.ds_version;
  } catch (const std::exception& e) {  // a damaged tag is a finding; the other tags are still listed
    t["error"] = e.what();
  }
  Json files = Json::array();
  std::int64_t total = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / tag)) {
    if (!e.is_regular_file()) continue;
    const auto bytes = static_cast<std::int64_t>(e.file_size());
    files.push_back({{"name", e.path().filename().string()}, {"bytes", bytes}});
    total += bytes;
  }
  std::sort(files.begin(), files.end(), [](const Json& a, const Json& b) { return a["name"] < b["name"]; });
  t["files"] = files;
  t["total_bytes"] = total;
  return t;
}

void print_tag(const Json& t) {
  std::cout << "\n" << t["tag"].get<std::string>() << (t["latest"].get<bool>() ? "  (latest)" : "") << "\n";
  if (t.contains("error")) {
    std::cout << "  error: " << t["error"].get<std::string>() << "\n";
  } else {
    const auto& o = t["optimizer"];
    std::cout << "  ZeRO stage " << t["zero_stage"] << ", saved by " << t["world_size"] << " rank(s), "
              << t["precision"].get<std::string>() << " training, " << o["type"].get<std::string>() << " at step "
              << o["step"] << " (states: " << join(o["states"].get<std::vector<std::string>>()) << ")\n"
              << "  global steps " << t["global_steps"] << ", global samples " << t["global_samples"] << ", skipped "
              << t["skipped_steps"] << "\n"
              << "  " << grouped(t["parameters"].get<std::int64_t>()) << " parameters in " << t["tensors"]
              << " tensors, written by " << t["ds_version"].get<std::string>() << "\n";
  }
  std::size_t width = 5;
  for (const auto& f : t["files"]) width = std::max(width, f["name"].get<std::string>().size());
  const auto row = [&](const std::string& name, std::int64_t bytes) {
    const std::string exact = grouped(bytes);
    std::cout << "  " << name << std::string(width - name.size() + 2, ' ') << std::string(14 - std::min<std::size_t>(14, exact.size()), ' ')
              << exact << " B  " << human(bytes) << "\n";
  };
  for (const auto& f : t["files"]) row(f["name"].get<std::string>(), f["bytes"].get<std::int64_t>());
  row("total", t["total_bytes"].get<std::int64_t>());
}

int info_action(const CommandArgs& args) {
  ArgParser parser("ckpt info",
                   "Lists the tags of a checkpoint directory (the folder given to --save) and, for each, the\n"
                   "ZeRO stage and world size it was saved at, precision, optimizer step, parameters and files.\n"
                   "Exit code 0; 1 when a tag cannot be read or `latest` names a missing tag; 2 for bad input.");
  parser.positional("DIR", "checkpoint directory").flag("json", "print one JSON object");
  const ParsedArgs p = parser.parse(args);
  if (p.help) return std::cout << parser.help_text(), kExitOk;
  const std::string dir = p.positionals.at(0);
  std::string latest;
  const auto tags = tags_of(dir, latest);
  Json out{{"dir", dir}, {"latest", latest.empty() ? Json() : Json(latest)}, {"tags", Json::array()}};
  bool findings = false;
  for (const auto& tag : tags) {
    out["tags"].push_back(tag_json(dir, tag, latest));
    findings |= out["tags"].back().contains("error");
  }
  const bool latest_missing = !latest.empty() && std::find(tags.begin(), tags.end(), latest) == tags.end();
  if (p.has("json")) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "checkpoint " << dir << ": " << tags.size() << " tag" << (tags.size() == 1 ? "" : "s")
              << ", latest -> " << (latest.empty() ? "(no latest file)" : latest) << "\n";
    for (const auto& t : out["tags"]) print_tag(t);
  }
  if (latest_missing)
    std::cerr << "shardscope ckpt info: " << dir << "/latest names '" << latest
              << "', which is not a tag here: a load without a tag will fail\n";
  return findings || latest_missing ? kExitFindings : kExitOk;
}

// ---------------------------------------------------------------------------------------------
// ckpt consolidate

// "5GB" (10^9), "5GiB" (2^30), "500MB", "100KB", "1024" bytes, as Hugging Face's
// convert_file_size_to_int reads --max_shard_size.
std::int64_t parse_size(const std::string& text) {
  std::size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  static const std::vector<std::pair<std::string, double>> units = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  for (const auto& [name, scale] : units)
    if (end > 0 && unit == name && value > 0) return static_cast<std::int64_t>(value * scale);
  throw UsageError("--max-shard-size '" + text + "' is not a positive size such as 5GB, 500MB or 2GiB");
}

torch::ScalarType parse_dtype(const std::string& text) {
  if (text == "fp32") return torch::kFloat32;
  if (text == "bf16") return torch::kBFloat16;
  if (text == "fp16") return torch::kFloat16;
  std::string message = "--dtype '" + text + "' is not one of fp32, bf16, fp16";
  if (auto guess = configs::closest_match(text, {"fp32", "bf16", "fp16"})) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message);
}

std::string choose_tag(const ParsedArgs& p, const std::string& dir) {
  std::string latest;
  const auto tags = tags_of(dir, latest);
  if (!p.value("tag")) {
    if (latest.empty())
      throw UsageError("'" + dir + "' has no latest file: choose a tag with --tag (" + join(tags) + ")");
    if (std::find(tags.begin(), tags.end(), latest) == tags.end())
      throw UsageError(dir + "/latest names '" + latest + "', which is not a tag here: choose one with --tag (" +
                       join(tags) + ")");
    return latest;
  }
  const std::string tag = *p.value("tag");
  if (std::find(tags.begin(), tags.end(), tag) != tags.end()) return tag;
  std::string message = "tag '" + tag + "' is not in '" + dir + "'";
  if (auto guess = configs::closest_match(tag, tags)) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message + " (its tags: " + join(tags) + ")");
}

// Hugging Face's split (huggingface_hub split_torch_state_dict_into_shards): tensors in order,
// a new shard when the next one would tip the current over the limit, a larger tensor alone.
std::vector<std::vector<std::size_t>> plan_shards(const engine::NamedTensors& tensors, std::int64_t max_bytes) {
  std::vector<std::vector<std::size_t>> shards(1);
  std::int64_t current = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto bytes = static_cast<std::int64_t>(tensors[i].second.nbytes());
    if (bytes > max_bytes) {
      shards.insert(shards.end() - 1, std::vector<std::size_t>{i});
      continue;
    }
    if (current + bytes > max_bytes && !shards.back().empty()) shards.emplace_back(), current = 0;
    shards.back().push_back(i);
    current += bytes;
  }
  if (shards.back().empty()) shards.pop_back();
  return shards;
}

std::string shard_name(std::size_t i, std::size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return name;
}

// A previous save into the folder must not leave files a loader would pick over the new ones.
void remove_stale(const fs::path& folder, const std::set<std::string>& written) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || written.count(name)) continue;
    if (name == kSingleFile || name == kIndexFile || std::regex_match(name, shard)) fs::remove(e.path());
  }
}

// The consolidated weights in model order, cast to `dtype`; warns when fp16 cannot hold a value.
engine::NamedTensors consolidated(const engine::CheckpointShards& shards, torch::ScalarType dtype) {
  const auto& info = shards.info();
  const torch::Tensor fp32 = shards.canonical("fp32");
  engine::NamedTensors tensors;
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < info.names.size(); ++i) {
    std::int64_t n = 1;
    for (auto d : info.shapes[i]) n *= d;
    torch::Tensor t = fp32.narrow(0, offset, n).reshape(info.shapes[i]).to(dtype).contiguous();
    offset += n;
    if (dtype != torch::kFloat32 && !torch::isfinite(t).all().item<bool>())
      std::cerr << "shardscope ckpt consolidate: warning: '" << info.names[i]
                << "' has values beyond the range of the chosen --dtype (written as inf)\n";
    tensors.emplace_back(info.names[i], std::move(t));
  }
  return tensors;
}

struct Written {
  std::string file;
  std::size_t tensors = 0;
  std::int64_t data_bytes = 0;
};

// OUT ending in .safetensors is that file; anything else is a folder that gets model.safetensors,
// or model-0000i-of-0000N.safetensors and model.safetensors.index.json when the limit splits it.
std::vector<Written> write_output(const std::string& out, const engine::NamedTensors& tensors,
                                  std::optional<std::int64_t> max_bytes, std::int64_t parameters,
                                  const std::map<std::string, std::string>& metadata) {
  const auto plan = max_bytes ? plan_shards(tensors, *max_bytes) : std::vector<std::vector<std::size_t>>{{}};
  const bool file_mode = out.size() > 12 && out.compare(out.size() - 12, 12, ".safetensors") == 0 && !fs::is_directory(out);
  std::int64_t total = 0;
  for (const auto& [name, t] : tensors) total += static_cast<std::int64_t>(t.nbytes());
  if (plan.size() <= 1) {
    const fs::path path = file_mode ? fs::path(out) : fs::path(out) / kSingleFile;
    if (!path.parent_path().empty()) fs::create_directories(path.parent_path());
    engine::write_safetensors(path.string(), tensors, metadata);
    if (!file_mode) remove_stale(out, {kSingleFile});
    return {{path.string(), tensors.size(), total}};
  }
  if (file_mode || (fs::exists(out) && !fs::is_directory(out)))
    throw UsageError("--max-shard-size " + std::to_string(*max_bytes) + " splits the model (" + grouped(total) +
                     " bytes) into " + std::to_string(plan.size()) + " files, so OUT must be a folder, not '" + out + "'");
  fs::create_directories(out);
  std::vector<Written> written;
  Json weight_map = Json::object();
  std::set<std::string> names{kIndexFile};
  for (std::size_t s = 0; s < plan.size(); ++s) {
    Written w{(fs::path(out) / shard_name(s, plan.size())).string(), plan[s].size(), 0};
    engine::NamedTensors part;
    for (auto i : plan[s]) {
      part.push_back(tensors[i]);
      weight_map[tensors[i].first] = shard_name(s, plan.size());
      w.data_bytes += static_cast<std::int64_t>(tensors[i].second.nbytes());
    }
    engine::write_safetensors(w.file, part, metadata);
    names.insert(shard_name(s, plan.size()));
    written.push_back(w);
  }
  const Json index{{"metadata", {{"total_size", total}, {"total_parameters", parameters}}}, {"weight_map", weight_map}};
  const std::string text = index.dump(2) + "\n";
  engine::write_file_atomically((fs::path(out) / kIndexFile).string(), std::vector<char>(text.begin(), text.end()));
  remove_stale(out, names);
  written.push_back({(fs::path(out) / kIndexFile).string(), 0, 0});
  return written;
}

int consolidate_action(const CommandArgs& args) {
  ArgParser parser("ckpt consolidate",
                   "Merges every rank's shard of a ZeRO checkpoint (any stage and world size) into safetensors\n"
                   "with the model's parameter names (Hugging Face's for gpt2 and llama), from the fp32 master\n"
                   "weights. OUT ending in .safetensors is the file; otherwise OUT is a folder that gets\n"
                   "model.safetensors, or HF-style shards and model.safetensors.index.json under\n"
                   "--max-shard-size. Needs no GPU. Exit code 0; 1 for a damaged checkpoint; 2 for bad input.");
  parser.positional("DIR", "checkpoint directory (the folder given to --save)")
      .positional("OUT", "output .safetensors file, or folder")
      .option("tag", "T", "checkpoint tag (default: the one DIR/latest names)")
      .option("dtype", "fp32|bf16|fp16", "weights' dtype (default fp32; 16-bit ones are cast from fp32)")
      .option("max-shard-size", "SIZE", "split into files of at most SIZE (5GB, 500MB, 2GiB) as HF does");
  const ParsedArgs p = parser.parse(args);
  if (p.help) return std::cout << parser.help_text(), kExitOk;
  const std::string dir = p.positionals.at(0), out = p.positionals.at(1);
  const std::string dtype_text = p.value("dtype").value_or("fp32");
  const auto dtype = parse_dtype(dtype_text);
  std::optional<std::int64_t> max_bytes;
  if (auto size = p.value("max-shard-size")) max_bytes = parse_size(*size);
  const std::string tag = choose_tag(p, dir);

  const engine::CheckpointShards shards(dir, tag);
  const auto& info = shards.info();
  const auto tensors = consolidated(shards, dtype);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"shardscope_source", (fs::path(dir) / tag).string()}};
  const auto written = write_output(out, tensors, max_bytes, info.parameter_count(), metadata);
  std::int64_t data = 0, file_bytes = 0;
  for (const auto& w : written) {
    data += w.data_bytes;
    file_bytes += static_cast<std::int64_t>(fs::file_size(w.file));
  }
  std::cout << "consolidated " << tag << " of " << dir << " (ZeRO stage " << info.zero_stage << ", saved by "
            << info.world_size << " rank(s), global step " << info.global_steps << ") from the fp32 master into "
            << dtype_text << ":\n";
  for (const auto& w : written)
    std::cout << "  wrote " << w.file << "  "
              << (w.tensors ? std::to_string(w.tensors) + (w.tensors == 1 ? " tensor, " : " tensors, ") + grouped(w.data_bytes) + " bytes of data, "
                            : std::string())
              << human(static_cast<std::int64_t>(fs::file_size(w.file))) << "\n";
  std::cout << tensors.size() << " tensors, " << grouped(info.parameter_count()) << " parameters, " << grouped(data)
            << " bytes of " << dtype_text << " data (" << grouped(file_bytes) << " bytes in " << written.size()
            << " file" << (written.size() == 1 ? "" : "s") << ")\n";
  return kExitOk;
}

}  // namespace

int run_ckpt_command(const CommandArgs& args) {
  static const std::vector<std::pair<std::string, int (*)(const CommandArgs&)>> actions = {
      {"info", info_action}, {"consolidate", consolidate_action}};
  const std::string usage =
      "usage: shardscope ckpt info DIR [--json]\n"
      "       shardscope ckpt consolidate DIR OUT [--tag T] [--dtype fp32|bf16|fp16] [--max-shard-size 5GB]\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << usage << "Run 'shardscope ckpt <action> --help' for its options.\n";
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::vector<std::string> names;
  for (const auto& [name, run] : actions) {
    names.push_back(name);
    if (args[0] == name) return run(CommandArgs(args.begin() + 1, args.end()));
  }
  std::string message = "unknown ckpt action '" + args[0] + "'";
  if (auto guess = configs::closest_match(args[0], names)) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message + " (info, consolidate)");
}

}  // namespace shardscope::app
