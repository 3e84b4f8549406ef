// `--set key.path=value`: fills Hugging Face "auto" placeholders (what the HF Trainer does from
// its TrainingArguments) or overrides any key. Applied to the tree before every check, so the
// overridden config is validated exactly like a file that said so.
#include <sstream>

#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  std::string part;
  while (std::getline(stream, part, '.')) parts.push_back(part);
  return parts;
}

/// The value text as JSON when it parses ("4", "true", "[0.9, 0.95]"), else as a plain string.
nlohmann::json override_value(const std::string& text) {
  const auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return parsed;
  // Not JSON: a plain string, with invalid UTF-8 replaced so it can be printed and dumped.
  return nlohmann::json::parse(nlohmann::json(text).dump(-1, ' ', false,
                                                         nlohmann::json::error_handler_t::replace));
}

void apply_one(ValidationContext& context, const ConfigOverride& override_) {
  const auto parts = split_path(override_.path);
  for (const auto& part : parts) {
    if (part.empty()) {
      context.error("bad-override", "", "--set " + override_.path + "=" + override_.value +
                    ": the key path has an empty part", "write e.g. zero_optimization.stage=3");
      return;
    }
  }
  ConfigNode* node = &context.mutable_root();
  std::string walked;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    ConfigNode* child = node->find(parts[i]);
    walked = join_path(walked, parts[i]);
    if (!child) {
      ConfigNode object;
      object.kind = ConfigNode::Kind::kObject;
      object.location = node->location;
      node->members.push_back({parts[i], node->location, std::move(object)});
      child = &node->members.back().value;
    } else if (!child->is_object()) {
      context.error("bad-override", walked, "--set " + override_.path + ": \"" + walked +
                    "\" is " + to_string(child->kind) + " in the config, not an object",
                    "set \"" + walked + "\" itself, or fix the config");
      return;
    }
    node = child;
  }
  const nlohmann::json value = override_value(override_.value);
  ConfigNode* target = node->find(parts.back());
  if (target) {
    const bool was_auto = target->is_auto();
    *target = json_to_node(value, target->location);
    context.override_sources()[override_.path] =
        was_auto ? ValueSource::kAutoFilled : ValueSource::kOverride;
  } else {
    node->members.push_back({parts.back(), node->location, json_to_node(value, node->location)});
    context.override_sources()[override_.path] = ValueSource::kOverride;
  }
}

}  // namespace

void apply_overrides(ValidationContext& context) {
  for (const auto& override_ : context.options().overrides) apply_one(context, override_);
}

}  // namespace shardscope::configs
