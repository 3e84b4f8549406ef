// Key and type checks driven by the schema tables: unknown keys (an error where DeepSpeed's
// pydantic models forbid extras, a warning where get_scalar_param silently ignores them), both
// with "did you mean"; value types as DeepSpeed would read them; ranges and allowed strings.
#include <cmath>
#include <cstdlib>

#include "configs/config_schema.hpp"
#include "configs/did_you_mean.hpp"
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

/// Keys that look right but are not: stale spellings DeepSpeed's own text still shows.
struct Misnamed {
  const char* path;
  const char* right;
  const char* why;
};
const Misnamed kMisnamed[] = {
    {"bf16.check_overflow", "check_grad_overflow",
     "the stale BFLOAT16_FORMAT text in DeepSpeed's constants.py says \"check_overflow\"; the "
     "model's key is \"check_grad_overflow\""},
    {"activation_checkpointing.partitioned_activations", "partition_activations",
     "DeepSpeed's format string spells it \"partitioned_activations\", but the key it reads is "
     "\"partition_activations\""},
    {"aio.thread_count", "intra_op_parallelism",
     "\"thread_count\" was renamed \"intra_op_parallelism\"; 0.19.7 ignores the old name"},
};

std::optional<double> numeric_string(const ConfigNode& node) {
  if (!node.is_string() || node.string_value.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(node.string_value.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<nlohmann::json> coerce_bool(const ConfigNode& node, bool strict_block, bool* coerced) {
  if (node.kind == ConfigNode::Kind::kBool) return nlohmann::json(node.bool_value);
  // pydantic's lax mode takes 0/1 and "true"/"false"; Python's truthiness takes 0/1 as well.
  if (node.kind == ConfigNode::Kind::kInteger && (node.int_value == 0 || node.int_value == 1)) {
    if (coerced) *coerced = true;
    return nlohmann::json(node.int_value == 1);
  }
  if (strict_block && node.is_string() &&
      (node.string_value == "true" || node.string_value == "false")) {
    if (coerced) *coerced = true;
    return nlohmann::json(node.string_value == "true");
  }
  return std::nullopt;
}

std::optional<nlohmann::json> coerce_number(const FieldSpec& field, const ConfigNode& node,
                                            bool strict_block, bool* coerced) {
  std::optional<double> value;
  if (node.is_number()) value = node.number_value;
  else if (strict_block && (value = numeric_string(node)) && coerced) *coerced = true;
  if (!value) return std::nullopt;
  if (field.type == FieldType::kNumber)
    return node.kind == ConfigNode::Kind::kInteger ? nlohmann::json(node.int_value)
                                                   : nlohmann::json(*value);
  if (node.kind == ConfigNode::Kind::kInteger) return nlohmann::json(node.int_value);
  // pydantic int takes an integral float (5e8); a fraction is rejected.
  if (std::floor(*value) != *value || std::fabs(*value) > 9.2e18) return std::nullopt;
  return nlohmann::json(static_cast<std::int64_t>(*value));
}

const char* type_name(FieldType type) {
  switch (type) {
    case FieldType::kBool: return "true or false";
    case FieldType::kInt: return "an integer";
    case FieldType::kNumber: return "a number";
    case FieldType::kString: return "a string";
    case FieldType::kStringList: return "a list of strings";
    case FieldType::kObject: return "an object";
    case FieldType::kAny: break;
  }
  return "a value";
}

std::string choices_text(const std::vector<std::string>& choices) {
  std::string text = "[";
  for (std::size_t i = 0; i < choices.size(); ++i)
    text += (i ? ", '" : "'") + choices[i] + "'";
  return text + "]";
}

bool is_choice(const FieldSpec& field, const std::string& value, const std::string& path) {
  for (const auto& choice : field.choices) {
    if (choice == value) return true;
    // tag_validation is upper-cased by DeepSpeed before the comparison.
    if (path == "checkpoint.tag_validation" && choice.size() == value.size() &&
        std::equal(choice.begin(), choice.end(), value.begin(),
                   [](char a, char b) { return std::toupper(a) == std::toupper(b); }))
      return true;
  }
  return false;
}

/// DeepSpeed's own words for the string keys it checks itself.
std::string invalid_choice_message(const std::string& path, const FieldSpec& field,
                                   const std::string& value) {
  if (path == "gradient_allreduce_op")
    return "Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: '" + value + "'";
  if (path == "communication_data_type")
    return "Invalid communication_data_type. Supported data types: ['fp16', 'bf16', 'fp32']. Got: " + value;
  if (path == "checkpoint.tag_validation")
    return "Checkpoint config contains invalid tag_validation value of " + value +
           ", expecting one of ['WARN', 'IGNORE', 'FAIL']";
  return path + " is \"" + value + "\"; expected one of " + choices_text(field.choices);
}

/// pydantic's words for a bound ("Input should be greater than 0"), as DeepSpeed's ValidationError
/// prints them for the pydantic blocks.
std::string pydantic_bound_message(const FieldSpec& field, bool low) {
  const double limit = low ? *field.min : *field.max;
  // pydantic prints the bound as the field's type does: "0" for an int, "0.0" for a float.
  const std::string bound = field.type == FieldType::kInt ? std::to_string(static_cast<long long>(limit))
                                                          : nlohmann::json(limit).dump();
  if (!low) return "Input should be less than or equal to " + bound;
  return std::string("Input should be greater than ") + (field.min_exclusive ? "" : "or equal to ") + bound;
}

void check_range(ValidationContext& context, const FieldSpec& field, const std::string& path,
                 const nlohmann::json& value, bool strict_block) {
  if (!value.is_number()) return;
  const double number = value.get<double>();
  const bool low = field.min && (field.min_exclusive ? number <= *field.min : number < *field.min);
  const bool high = field.max && number > *field.max;
  if (!low && !high) return;
  if (path == "zero_optimization.stage" && high) {
    context.error("out-of-range", path, "DeepSpeedConfig: Maximum supported ZeRO stage is 3 (got " +
                  value.dump() + ")", "use 0, 1, 2 or 3");
    return;
  }
  if (strict_block) {
    context.error("out-of-range", path, path + " is " + value.dump() + ": " + pydantic_bound_message(field, low) +
                  " (DeepSpeed's pydantic model refuses it)", "the default is " + field.default_json);
    return;
  }
  std::string range;
  if (field.min && field.max) range = "between " + nlohmann::json(*field.min).dump() + " and " +
                                      nlohmann::json(*field.max).dump();
  else if (field.min) range = (field.min_exclusive ? "> " : ">= ") + nlohmann::json(*field.min).dump();
  else range = "<= " + nlohmann::json(*field.max).dump();
  context.error("out-of-range", path, path + " is " + value.dump() + "; it must be " + range,
                "the default is " + field.default_json);
}

void check_field(ValidationContext& context, const FieldSpec& field, const ConfigNode& node,
                 const std::string& path, bool strict_block) {
  if (node.is_auto()) return;  // reported by the policy rules as unfilled "auto"
  bool coerced = false;
  const auto value = coerce_value(field, node, strict_block, &coerced);
  if (!value) {
    context.error("wrong-type", path, path + " must be " + std::string(type_name(field.type)) +
                  (field.nullable ? " or null" : "") + ", got " + to_json_text(node),
                  "the default is " + field.default_json);
    return;
  }
  if (coerced)
    context.warning("type-coerced", path, path + " is " + to_json_text(node) + "; DeepSpeed converts "
                    "it to " + value->dump(), "write " + value->dump());
  if (value->is_string() && !field.choices.empty() && !is_choice(field, value->get<std::string>(), path)) {
    const auto guess = closest_match(value->get<std::string>(), field.choices);
    context.error("invalid-value", path, invalid_choice_message(path, field, value->get<std::string>()),
                  guess ? "did you mean \"" + *guess + "\"?" : "use one of " + choices_text(field.choices));
  }
  if (value->is_array() && !field.choices.empty())
    for (const auto& item : *value)
      if (!is_choice(field, item.get<std::string>(), path)) {
        const auto guess = closest_match(item.get<std::string>(), field.choices);
        context.error("invalid-value", path, invalid_choice_message(path, field, item.get<std::string>()),
                      guess ? "did you mean \"" + *guess + "\"?" : "use one of " + choices_text(field.choices));
      }
  check_range(context, field, path, *value, strict_block);
}

void report_unknown(ValidationContext& context, const BlockSpec& block, const ConfigMember& member) {
  const std::string path = join_path(block.path, member.key);
  for (const auto& misnamed : kMisnamed) {
    if (path != misnamed.path) continue;
    context.report(block.strict ? Severity::kError : Severity::kWarning, "unknown-key", path,
                   "unknown key \"" + member.key + "\" in " + block.path +
                       (block.strict ? " (Extra inputs are not permitted)" : "; DeepSpeed ignores it"),
                   std::string("did you mean \"") + misnamed.right + "\"? " + misnamed.why);
    return;
  }
  const auto guess = closest_match(member.key, known_keys(block));
  const std::string where = block.path.empty() ? "at the top level" : "in " + block.path;
  const std::string hint = guess ? "did you mean \"" + *guess + "\"?" : "remove it or check the spelling";
  if (block.strict)
    context.error("unknown-key", path, "unknown key \"" + member.key + "\" " + where +
                  ": DeepSpeed rejects it (pydantic: Extra inputs are not permitted)", hint);
  else
    context.warning("unknown-key", path, "unknown key \"" + member.key + "\" " + where +
                    ": DeepSpeed silently ignores it", hint);
}

void check_aliases(ValidationContext& context, const BlockSpec& block, const ConfigNode& node) {
  for (const auto& field : block.fields) {
    if (field.alias.empty() || !node.find(field.name) || !node.find(field.alias)) continue;
    context.warning("duplicate-alias", join_path(block.path, field.alias),
                    "\"" + field.name + "\" and \"" + field.alias + "\" name the same setting; "
                    "pydantic keeps only one of them",
                    "keep one (\"" + field.name + "\" is the documented name)");
  }
}

void check_block(ValidationContext& context, const BlockSpec& block, const ConfigNode& node) {
  if (!node.is_object()) {
    context.error("wrong-type", block.path, "\"" + block.path + "\" must be an object, got " +
                  to_json_text(node), "write \"" + block.path + "\": { ... }");
    return;
  }
  check_aliases(context, block, node);
  for (const auto& member : node.members) {
    const std::string path = join_path(block.path, member.key);
    if (const FieldSpec* field = find_field(block, member.key)) {
      // optimizer and scheduler params are checked against their type's table elsewhere.
      if (field->type == FieldType::kObject && !member.value.is_object() && !member.value.is_auto() &&
          member.value.kind != ConfigNode::Kind::kNull)
        context.error("wrong-type", path, path + " must be an object, got " + to_json_text(member.value));
      else if (field->type != FieldType::kObject)
        check_field(context, *field, member.value, path, block.strict);
    } else if (std::find(block.other_keys.begin(), block.other_keys.end(), member.key) ==
               block.other_keys.end()) {
      report_unknown(context, block, member);
    }
  }
}

}  // namespace

std::optional<nlohmann::json> coerce_value(const FieldSpec& field, const ConfigNode& node,
                                           bool strict_block, bool* coerced) {
  if (node.kind == ConfigNode::Kind::kNull)
    return field.nullable ? std::optional<nlohmann::json>(nullptr) : std::nullopt;
  switch (field.type) {
    case FieldType::kBool: return coerce_bool(node, strict_block, coerced);
    case FieldType::kInt:
    case FieldType::kNumber: return coerce_number(field, node, strict_block, coerced);
    case FieldType::kString:
      return node.is_string() ? std::optional<nlohmann::json>(node.string_value) : std::nullopt;
    case FieldType::kStringList:
      if (node.kind != ConfigNode::Kind::kArray) return std::nullopt;
      for (const auto& item : node.items)
        if (!item.is_string()) return std::nullopt;
      return node_to_json(node);
    case FieldType::kObject:
      return node.is_object() ? std::optional<nlohmann::json>(node_to_json(node)) : std::nullopt;
    case FieldType::kAny: break;
  }
  return node_to_json(node);
}

void check_keys_and_types(ValidationContext& context) {
  for (const auto& block : config_blocks(context.options().deepspeed_version)) {
    const ConfigNode* node = context.node_at(block.path);
    if (node) check_block(context, block, *node);
  }
}

}  // namespace shardscope::configs
