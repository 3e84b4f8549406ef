#include "tune/candidate_config.hpp"

#include <fstream>
#include <sstream>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "tune/tune_error.hpp"

namespace shardscope::tune {
namespace {

using nlohmann::json;

std::vector<std::string> split_dots(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream in(key);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

void erase_dotted(json& node, const std::vector<std::string>& parts, std::size_t at) {
  if (!node.is_object() || !node.contains(parts[at])) return;
  if (at + 1 == parts.size()) {
    node.erase(parts[at]);
    return;
  }
  erase_dotted(node[parts[at]], parts, at + 1);
  if (node[parts[at]].is_object() && node[parts[at]].empty()) node.erase(parts[at]);
}

std::string number_text(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<long long>(d))) return std::to_string(static_cast<long long>(d));
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string short_part(const std::string& key, const json& v) {
  if (key == "zero_optimization.stage") return "z" + number_text(v);
  if (key == kMicroBatchKey) return "mb" + number_text(v);
  if (key == kAccumulationKey) return "gas" + number_text(v);
  if (key == kCheckpointingKey) return v == true ? "ckpt" : "";
  if (key == "zero_optimization.offload_optimizer.device") return v.is_null() || v == "none" ? "" : "opt=" + number_text(v);
  if (key == "zero_optimization.offload_param.device") return v.is_null() || v == "none" ? "" : "param=" + number_text(v);
  const auto dot = key.rfind('.');
  return (dot == std::string::npos ? key : key.substr(dot + 1)) + "=" + (v.is_null() ? "default" : number_text(v));
}

}  // namespace

json read_user_config(const std::string& path) {
  const std::string text = configs::read_config_file_text(path);
  json parsed = json::parse(text, nullptr, false, /*ignore_comments=*/true);
  if (parsed.is_discarded() || !parsed.is_object())
    throw TuneError(path + ": not a JSON object; `shardscope tune` writes candidates as JSON, so it reads the file as "
                           "JSON (comments allowed, other hjson leniencies not): `shardscope validate " + path +
                    "` shows where it fails");
  return parsed;
}

void set_dotted(json& config, const std::string& key, const json& value) {
  if (key == kCheckpointingKey) {
    // The engine's built-in models recompute each block when the block names any key; DeepSpeed's
    // own default for partition_activations is false, so this block changes nothing else.
    if (value == true) {
      if (!config.contains(kCheckpointingKey) || !config[kCheckpointingKey].is_object() || config[kCheckpointingKey].empty())
        config[kCheckpointingKey] = {{"partition_activations", false}};
    } else {
      config.erase(kCheckpointingKey);
    }
    return;
  }
  const auto parts = split_dots(key);
  if (parts.empty()) throw TuneError("an empty --space key");
  if (value.is_null()) return erase_dotted(config, parts, 0);
  json* node = &config;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    json& next = (*node)[parts[i]];
    if (!next.is_object()) {
      if (!next.is_null()) throw TuneError("--space " + key + ": " + parts[i] + " is not an object in the config");
      next = json::object();
    }
    node = &next;
  }
  (*node)[parts.back()] = value;
}

json candidate_config(const json& user_config, const Assignment& assignment) {
  json config = user_config;
  for (const auto& [key, value] : assignment) set_dotted(config, key, value);
  return config;
}

std::string assignment_name(const Assignment& assignment) {
  std::string name;
  for (const auto& [key, value] : assignment) {
    const std::string part = short_part(key, value);
    if (part.empty()) continue;
    name += (name.empty() ? "" : " ") + part;
  }
  return name.empty() ? "baseline" : name;
}

json assignment_json(const Assignment& assignment) {
  json out = json::object();
  for (const auto& [key, value] : assignment) out[key] = value;
  return out;
}

std::string assignment_key(const Assignment& assignment) { return assignment_json(assignment).dump(); }

CandidateCheck check_candidate(const json& config, int world_size) {
  CandidateCheck check;
  const auto document = configs::parse_config_text(config.dump(2), "candidate");
  configs::ValidateOptions options;
  options.world_size = world_size;
  options.own_optimizer = true;  // trials run ShardScope's engine, which builds the default optimizer
  auto result = configs::validate(document, options);
  for (const auto& d : result.diagnostics)
    if (d.severity == configs::Severity::kError) {
      check.refusal = (d.path.empty() ? "" : d.path + ": ") + d.message;
      return check;
    }
  if (!result.config) {
    check.refusal = "the validator resolved no config";
    return check;
  }
  const auto& zero = result.config->zero;
  if (zero.stage == 0 && zero.offload_optimizer.device != configs::OffloadDevice::kNone) {
    check.refusal = "zero_optimization.offload_optimizer needs ZeRO stage 1 or higher";
    return check;
  }
  check.duplicate = zero.stage < 3 && zero.offload_param.device != configs::OffloadDevice::kNone;
  check.config = std::move(result.config);
  return check;
}

}  // namespace shardscope::tune
