// validate(): runs the passes of validation_context.hpp in order and collects their findings.
#include "configs/config_validator.hpp"

#include <stdexcept>

#include "configs/validation_context.hpp"

namespace shardscope::configs {

const char* to_string(ValueSource source) {
  switch (source) {
    case ValueSource::kUser: return "user";
    case ValueSource::kAutoDropped: return "default (auto dropped)";
    case ValueSource::kAutoUnfilled: return "auto (unfilled)";
    case ValueSource::kAutoFilled: return "auto-filled";
    case ValueSource::kOverride: return "override";
    case ValueSource::kDerived: return "derived";
    case ValueSource::kDefault: break;
  }
  return "default";
}

bool ValidationResult::has_errors() const {
  return count_severity(diagnostics, Severity::kError) > 0;
}

ConfigOverride parse_override(const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw std::invalid_argument("--set '" + text + "': expected KEY.PATH=VALUE, e.g. "
                                "--set train_micro_batch_size_per_gpu=4");
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

const ConfigNode* ValidationContext::node_at(const std::string& path) const {
  const ConfigNode* node = &root_;
  std::size_t start = 0;
  while (start <= path.size() && node) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    node = node->find(key);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return path.empty() ? &root_ : node;
}

SourceLocation ValidationContext::location_of(const std::string& path) const {
  std::string current = path;
  while (!current.empty()) {
    const auto dot = current.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : current.substr(0, dot);
    const ConfigNode* parent_node = node_at(parent);
    if (parent_node && parent_node->is_object()) {
      if (const ConfigMember* member = parent_node->find_member(current.substr(dot + 1)))
        return member->key_location;
    }
    current = parent;
  }
  return {};
}

void ValidationContext::report(Severity severity, const std::string& code, const std::string& path,
                               const std::string& message, const std::string& hint) {
  diagnostics_.push_back({severity, code, path, location_of(path), message, hint});
}

nlohmann::json node_to_json(const ConfigNode& node) {
  switch (node.kind) {
    case ConfigNode::Kind::kNull: return nullptr;
    case ConfigNode::Kind::kBool: return node.bool_value;
    case ConfigNode::Kind::kInteger: return node.int_value;
    case ConfigNode::Kind::kNumber: return node.number_value;
    case ConfigNode::Kind::kString: return node.string_value;
    case ConfigNode::Kind::kArray: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node.items) array.push_back(node_to_json(item));
      return array;
    }
    case ConfigNode::Kind::kObject: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& member : node.members) object[member.key] = node_to_json(member.value);
      return object;
    }
  }
  return nullptr;
}

ConfigNode json_to_node(const nlohmann::json& value, SourceLocation at) {
  ConfigNode node;
  node.location = at;
  if (value.is_boolean()) {
    node.kind = ConfigNode::Kind::kBool;
    node.bool_value = value.get<bool>();
  } else if (value.is_number_integer()) {
    node.kind = ConfigNode::Kind::kInteger;
    node.int_value = value.get<std::int64_t>();
    node.number_value = static_cast<double>(node.int_value);
    node.string_value = value.dump();
  } else if (value.is_number()) {
    node.kind = ConfigNode::Kind::kNumber;
    node.number_value = value.get<double>();
    node.string_value = value.dump();
  } else if (value.is_string()) {
    node.kind = ConfigNode::Kind::kString;
    node.string_value = value.get<std::string>();
  } else if (value.is_array()) {
    node.kind = ConfigNode::Kind::kArray;
    for (const auto& item : value) node.items.push_back(json_to_node(item, at));
  } else if (value.is_object()) {
    node.kind = ConfigNode::Kind::kObject;
    for (const auto& [key, item] : value.items())
      node.members.push_back({key, at, json_to_node(item, at)});
  }
  return node;
}

namespace {

/// Hjson leniencies are notes that only --strict shows; everything else always shows.
void copy_parse_diagnostics(const ConfigDocument& document, const ValidateOptions& options,
                            std::vector<Diagnostic>& out) {
  for (const auto& diagnostic : document.parse_diagnostics)
    if (diagnostic.severity != Severity::kNote || options.strict) out.push_back(diagnostic);
}

void run_passes(ValidationContext& context) {
  apply_overrides(context);
  apply_hf_trainer_fill(context);
  migrate_deprecated_keys(context);
  check_removed_features(context);
  check_keys_and_types(context);
  resolve_config(context);
  solve_batch(context);
  resolve_optimizer(context);
  resolve_scheduler(context);
  fill_typed_config(context);
  check_precision_rules(context);
  check_zero_rules(context);
  check_optimizer_rules(context);
  check_scheduler_rules(context);
  check_runtime_rules(context);
  check_policy_rules(context);
}

}  // namespace

ValidationResult validate(const ConfigDocument& document, const ValidateOptions& options) {
  ValidationResult result;
  copy_parse_diagnostics(document, options, result.diagnostics);
  if (!document.root) return result;
  if (!document.root->is_object()) {
    result.diagnostics.push_back(
        {Severity::kError, "wrong-type", "", document.root->location,
         std::string("a DeepSpeed config must be a JSON object, this one is a ") +
             to_string(document.root->kind),
         "wrap the keys in { ... }"});
    return result;
  }
  ValidationContext context(*document.root, options);
  run_passes(context);
  for (auto& diagnostic : context.diagnostics()) result.diagnostics.push_back(std::move(diagnostic));
  sort_diagnostics(result.diagnostics);
  result.config = std::move(context.config);
  result.resolved = std::move(context.resolved);
  result.hf_trainer = std::move(context.hf_trainer);
  return result;
}

}  // namespace shardscope::configs
