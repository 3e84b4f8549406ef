#pragma once
// Internal: optimizer and scheduler params are read by DeepSpeed as plain dicts passed to the
// optimizer or scheduler constructor, so unknown keys are ignored (a warning here) and "auto"
// stays a string. A ParamSpec table per type gives the constructor's defaults.

#include <string>
#include <vector>

#include "configs/validation_context.hpp"

namespace shardscope::configs {

enum class ParamType { kNumber, kInt, kBool, kString, kBetas, kAny };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kAny;
  std::string default_json;  ///< "null" = no default (None, or required when `required`)
  bool required = false;
};

/// Resolves `<block>.params` against `table`: type checks, unknown-key warnings (when
/// `check_unknown`), resolved-view lines, and the effective params object (returned).
nlohmann::json resolve_params(ValidationContext& context, const std::string& block,
                              const std::string& type_name, const std::vector<ParamSpec>& table,
                              bool check_unknown);

}  // namespace shardscope::configs
