// shardscope ckpt consolidate: every rank's shard of a tag (DeepSpeed's or ShardScope's, any
// stage and world size) merged into safetensors with Hugging Face names, the zero_to_fp32.py
// counterpart: one file, or Hugging Face's model-0000i-of-0000N shards and index.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/ckpt_command.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "checkpoints/atomic_file.hpp"
#include "checkpoints/checkpoint_folder.hpp"
#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/regular_file.hpp"
#include "checkpoints/safetensors_writer.hpp"
#include "configs/did_you_mean.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::app {
namespace {

namespace ck = checkpoints;
namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

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
    if (end > 0 && unit == name && value > 0 && std::isfinite(value * scale) && value * scale < 9.2e18)
      return static_cast<std::int64_t>(value * scale);
  throw UsageError("--max-shard-size '" + text + "' is not a positive size such as 5GB, 500MB or 2GiB");
}

ck::DType parse_dtype(const std::string& text) {
  if (text == "fp32") return ck::DType::kFloat32;
  if (text == "bf16") return ck::DType::kBFloat16;
  if (text == "fp16") return ck::DType::kFloat16;
  std::string message = "--dtype '" + text + "' is not one of fp32, bf16, fp16";
  if (auto guess = configs::closest_match(text, {"fp32", "bf16", "fp16"})) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message);
}

std::string choose_tag(const ParsedArgs& p, const std::string& dir) {
  const auto tags = checkpoint_tags_of(dir);
  if (!p.value("tag")) {
    const auto latest = ck::read_latest_tag(dir);
    if (!latest) throw UsageError("'" + dir + "' has no latest file: choose a tag with --tag (" + join_list(tags) + ")");
    if (std::find(tags.begin(), tags.end(), *latest) == tags.end())
      throw UsageError(dir + "/latest names '" + ck::printable(*latest) + "', which is not a tag here: choose one with --tag (" +
                       join_list(tags) + ")");
    return *latest;
  }
  const std::string tag = *p.value("tag");
  if (std::find(tags.begin(), tags.end(), tag) != tags.end()) return tag;
  std::string message = "tag '" + ck::printable(tag) + "' is not in '" + dir + "'";
  if (auto guess = configs::closest_match(tag, tags)) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message + " (its tags: " + join_list(tags) + ")");
}

// Hugging Face's split (huggingface_hub split_torch_state_dict_into_shards): tensors in order,
// a new shard when the next one would tip the current over the limit, a larger tensor alone.
std::vector<std::vector<std::size_t>> plan_shards(const ck::NamedHostTensors& tensors, std::int64_t max_bytes) {
  std::vector<std::vector<std::size_t>> shards(1);
  std::int64_t current = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto bytes = static_cast<std::int64_t>(tensors[i].second.bytes.size());
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

// A previous export into the folder must not leave files a loader would pick over the new ones.
void remove_stale(const fs::path& folder, const std::set<std::string>& written) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || written.count(name)) continue;
    if (name == kSingleFile || name == kIndexFile || std::regex_match(name, shard)) fs::remove(e.path());
  }
}

// The consolidated weights in the checkpoint's order, cast to `dtype`; warns when fp16 cannot
// hold a value. Tied copies (shared_params) are left out, as save_pretrained leaves them out.
ck::NamedHostTensors consolidated(const ck::DeepSpeedCheckpoint& checkpoint, ck::DType dtype) {
  const auto& s = checkpoint.summary();
  const std::vector<float> fp32 = checkpoint.canonical("fp32");
  ck::NamedHostTensors tensors;
  for (const auto& p : s.parameters) {
    const float* values = fp32.data() + p.offset;
    auto t = ck::HostTensor::from_float32(values, p.numel, dtype, p.shape);
    if (dtype != ck::DType::kFloat32) {
      const auto back = t.to_float32();
      if (std::any_of(back.begin(), back.end(), [](float v) { return std::isinf(v); }) &&
          std::all_of(values, values + p.numel, [](float v) { return std::isfinite(v); }))
        std::cerr << "shardscope ckpt consolidate: warning: '" << p.name
                  << "' has values beyond the range of the chosen --dtype (written as inf)\n";
    }
    tensors.emplace_back(p.name, std::move(t));
  }
  return tensors;
}

// zero_to_fp32's dtype handling differs between the releases only for the module's buffers
// (docs/configs.md, "DeepSpeed versions"): 0.19.7 casts every buffer to float, 0.19.8 keeps the
// non-floating ones (integer indices, bool masks). This export writes the parameters, which are
// floating under both, so its files are the same under either release; the line says which
// release's semantics were asked for and why nothing changes.
std::string zero_to_fp32_semantics(const configs::DeepSpeedRules& rules, const ck::CheckpointSummary& info) {
  const std::string version = configs::to_string(rules.version);
  std::string text = "zero_to_fp32 semantics: DeepSpeed " + version + "'s (parameters from the fp32 master, cast to "
                     "--dtype; ";
  const auto buffers = info.buffer_names.size();
  if (buffers == 0) return text + "no module buffers in this checkpoint, so 0.19.7 and 0.19.8 write the same tensors)";
  return text + std::to_string(buffers) + " module buffer(s) not written: " +
         (rules.version == configs::DeepSpeedVersion::k0_19_8 ? "0.19.8 keeps non-floating buffers' dtype"
                                                              : "0.19.7 casts every buffer to float") +
         "; load them from the model's own code)";
}

struct Written {
  std::string file;
  std::size_t tensors = 0;
  std::int64_t data_bytes = 0;
};

// OUT ending in .safetensors is that file; anything else is a folder that gets model.safetensors,
// or model-0000i-of-0000N.safetensors and model.safetensors.index.json when the limit splits it.
std::vector<Written> write_output(const std::string& out, const ck::NamedHostTensors& tensors,
                                  std::optional<std::int64_t> max_bytes, std::int64_t parameters,
                                  const std::map<std::string, std::string>& metadata) {
  const auto plan = max_bytes ? plan_shards(tensors, *max_bytes) : std::vector<std::vector<std::size_t>>{{}};
  const bool file_mode = out.size() > 12 && out.compare(out.size() - 12, 12, ".safetensors") == 0 && !fs::is_directory(out);
  std::int64_t total = 0;
  for (const auto& [name, t] : tensors) total += static_cast<std::int64_t>(t.bytes.size());
  if (plan.size() <= 1) {
    const fs::path path = file_mode ? fs::path(out) : fs::path(out) / kSingleFile;
    ck::write_safetensors(path.string(), tensors, metadata);
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
    ck::NamedHostTensors part;
    for (auto i : plan[s]) {
      part.push_back(tensors[i]);
      weight_map[tensors[i].first] = shard_name(s, plan.size());
      w.data_bytes += static_cast<std::int64_t>(tensors[i].second.bytes.size());
    }
    ck::write_safetensors(w.file, part, metadata);
    names.insert(shard_name(s, plan.size()));
    written.push_back(w);
  }
  const Json index{{"metadata", {{"total_size", total}, {"total_parameters", parameters}}}, {"weight_map", weight_map}};
  const std::string text = index.dump(2) + "\n";
  const std::string index_path = (fs::path(out) / kIndexFile).string();
  ck::refuse_non_regular_output(index_path);
  ck::write_file_atomically(index_path, std::vector<char>(text.begin(), text.end()));
  remove_stale(out, names);
  written.push_back({index_path, 0, 0});
  return written;
}

}  // namespace

int ckpt_consolidate_action(const CommandArgs& args) {
  ArgParser parser("ckpt consolidate",
                   "Merges every rank's shard of a ZeRO checkpoint (ShardScope's or DeepSpeed's, any stage and\n"
                   "world size) into safetensors with the model's parameter names, from the fp32 master\n"
                   "weights. OUT ending in .safetensors is the file; otherwise OUT is a folder that gets\n"
                   "model.safetensors, or HF-style shards and model.safetensors.index.json under\n"
                   "--max-shard-size. Needs no GPU. Exit code 0; 1 for a damaged checkpoint; 2 for bad input.");
  parser.positional("DIR", "checkpoint directory (the folder given to --save)")
      .positional("OUT", "output .safetensors file, or folder")
      .option("tag", "T", "checkpoint tag (default: the one DIR/latest names)")
      .option("dtype", "fp32|bf16|fp16", "weights' dtype (default fp32; 16-bit ones are cast from fp32)")
      .option("max-shard-size", "SIZE", "split into files of at most SIZE (5GB, 500MB, 2GiB) as HF does")
      .flag("record-source", "write the checkpoint's absolute path into the files' metadata");
  add_deepspeed_version_option(parser);
  const ParsedArgs p = parser.parse(args);
  if (p.help) return std::cout << parser.help_text(), kExitOk;
  const configs::DeepSpeedRules rules = deepspeed_rules_from(p);
  const std::string dir = p.positionals.at(0), out = p.positionals.at(1);
  const std::string dtype_text = p.value("dtype").value_or("fp32");
  const auto dtype = parse_dtype(dtype_text);
  std::optional<std::int64_t> max_bytes;
  if (auto size = p.value("max-shard-size")) max_bytes = parse_size(*size);
  const std::string tag = choose_tag(p, dir);

  ck::OpenOptions options;
  options.verify_content = true;
  const ck::DeepSpeedCheckpoint checkpoint((fs::path(dir) / tag).string(), options);
  const auto& info = checkpoint.summary();
  const auto tensors = consolidated(checkpoint, dtype);
  // The tag and step only: a shared export carries no path of this machine unless asked.
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"shardscope_tag", tag}, {"shardscope_global_steps", std::to_string(info.global_steps)}};
  if (p.has("record-source")) metadata["shardscope_source"] = fs::absolute(fs::path(dir) / tag).lexically_normal().string();
  const auto written = write_output(out, tensors, max_bytes, info.parameter_count(), metadata);
  std::int64_t data = 0, file_bytes = 0;
  for (const auto& w : written) {
    data += w.data_bytes;
    file_bytes += static_cast<std::int64_t>(fs::file_size(w.file));
  }
  std::cout << "rules: " << rules.describe() << "\n";
  std::cout << "consolidated " << tag << " of " << dir << " (ZeRO stage " << info.zero_stage << ", saved by "
            << info.world_size << " rank(s), global step " << info.global_steps << ", written by " << info.written_by
            << ") from the fp32 master into " << dtype_text << ":\n";
  for (const auto& w : written)
    std::cout << "  wrote " << w.file << "  "
              << (w.tensors ? std::to_string(w.tensors) + (w.tensors == 1 ? " tensor, " : " tensors, ") + grouped(w.data_bytes) + " bytes of data, "
                            : std::string())
              << sessions::format_bytes(static_cast<std::uint64_t>(fs::file_size(w.file))) << "\n";
  std::cout << tensors.size() << " tensors, " << grouped(info.parameter_count()) << " parameters, " << grouped(data)
            << " bytes of " << dtype_text << " data (" << grouped(file_bytes) << " bytes in " << written.size()
            << " file" << (written.size() == 1 ? "" : "s") << ")\n";
  std::cout << zero_to_fp32_semantics(rules, info) << "\n";
  return kExitOk;
}

}  // namespace shardscope::app
