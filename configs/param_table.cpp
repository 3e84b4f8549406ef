#include "configs/param_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "configs/did_you_mean.hpp"

namespace shardscope::configs {
namespace {

/// An integral double inside int64's range: converting one outside it (1e999 parses as inf) is
/// undefined behaviour, so the range is checked before the cast.
bool is_integral_number(double value) {
  return std::isfinite(value) && std::fabs(value) < 9.2e18 &&
         value == static_cast<double>(static_cast<std::int64_t>(value));
}

bool type_matches(ParamType type, const ConfigNode& node) {
  switch (type) {
    case ParamType::kNumber: return node.is_number();
    case ParamType::kInt:
      return node.kind == ConfigNode::Kind::kInteger ||
             (node.is_number() && is_integral_number(node.number_value));
    case ParamType::kBool: return node.kind == ConfigNode::Kind::kBool;
    case ParamType::kString: return node.is_string();
    case ParamType::kBetas:
      return node.kind == ConfigNode::Kind::kArray && node.items.size() == 2 &&
             node.items[0].is_number() && node.items[1].is_number();
    case ParamType::kAny: break;
  }
  return true;
}

const char* type_words(ParamType type) {
  switch (type) {
    case ParamType::kNumber: return "a number";
    case ParamType::kInt: return "an integer";
    case ParamType::kBool: return "true or false";
    case ParamType::kString: return "a string";
    case ParamType::kBetas: return "a list of two numbers, e.g. [0.9, 0.999]";
    case ParamType::kAny: break;
  }
  return "a value";
}

ValueSource source_of(const ValidationContext& context, const std::string& path) {
  const auto& sources = context.override_sources();
  const auto it = sources.find(path);
  return it == sources.end() ? ValueSource::kUser : it->second;
}

}  // namespace

nlohmann::json resolve_params(ValidationContext& context, const std::string& block,
                              const std::string& type_name, const std::vector<ParamSpec>& table,
                              bool check_unknown) {
  const std::string params_path = block + ".params";
  const ConfigNode* params = context.node_at(params_path);
  if (params && !params->is_object()) params = nullptr;  // reported by the key checks
  nlohmann::json effective = params ? node_to_json(*params) : nlohmann::json::object();
  std::vector<std::string> names;
  std::vector<ResolvedValue> lines;  // spliced in after the block's own lines at the end
  for (const auto& spec : table) {
    names.push_back(spec.name);
    const std::string path = params_path + "." + spec.name;
    const ConfigMember* member = params ? params->find_member(spec.name) : nullptr;
    if (!member) {
      if (spec.required) {
        context.error("missing-param", params_path, type_name + " requires \"" + spec.name +
                      "\" in " + params_path, "add \"" + spec.name + "\" to " + params_path);
      } else if (spec.default_json != "null") {
        effective[spec.name] = nlohmann::json::parse(spec.default_json);
        lines.push_back({path, spec.default_json, ValueSource::kDefault, {}, ""});
      }
      continue;
    }
    const bool is_auto = member->value.is_auto();
    if (!is_auto && !type_matches(spec.type, member->value))
      context.error("wrong-type", path, path + " must be " + type_words(spec.type) + ", got " +
                    to_json_text(member->value), spec.default_json == "null" ? "" :
                    "the default is " + spec.default_json);
    lines.push_back({path, to_json_text(member->value),
                                is_auto ? ValueSource::kAutoUnfilled : source_of(context, path),
                                member->key_location, ""});
  }
  if (params && check_unknown) {
    for (const auto& member : params->members) {
      if (std::find(names.begin(), names.end(), member.key) != names.end()) continue;
      if (member.key == "max_grad_norm") continue;  // its own error in the optimizer rules
      const auto guess = closest_match(member.key, names);
      context.warning("unknown-key", params_path + "." + member.key,
                      "unknown parameter \"" + member.key + "\" for " + type_name +
                          ": DeepSpeed does not check " + params_path + " keys, so it is ignored "
                          "or fails in the constructor",
                      guess ? "did you mean \"" + *guess + "\"?" : "remove it or check the spelling");
    }
  }
  // Keep the resolved view grouped: params right after "<block>.type".
  auto position = context.resolved.end();
  for (auto it = context.resolved.begin(); it != context.resolved.end(); ++it)
    if (it->path.rfind(block + ".", 0) == 0) position = it + 1;
  context.resolved.insert(position, lines.begin(), lines.end());
  context.effective[nlohmann::json::json_pointer("/" + block + "/params")] = effective;
  return effective;
}

}  // namespace shardscope::configs
