#pragma once
// Internal: what the validation passes share. The tree has already had the --set overrides and
// DeepSpeed's deprecated-key migrations applied; `effective` is the resolved config as JSON
// (every schema key, defaults filled in) once the resolver has run.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "configs/config_model.hpp"
#include "configs/config_node.hpp"
#include "configs/config_validator.hpp"
#include "configs/diagnostic.hpp"

namespace shardscope::configs {

class ValidationContext {
 public:
  ValidationContext(ConfigNode root, const ValidateOptions& options)
      : root_(std::move(root)), options_(options) {}

  const ConfigNode& root() const { return root_; }
  ConfigNode& mutable_root() { return root_; }
  const ValidateOptions& options() const { return options_; }

  /// The node at a dotted path ("zero_optimization.stage"), or nullptr.
  const ConfigNode* node_at(const std::string& path) const;
  /// Where to point for `path`: its key, else the nearest ancestor that exists, else 0:0.
  SourceLocation location_of(const std::string& path) const;
  /// True if the user (or a --set) wrote this key, "auto" included.
  bool written(const std::string& path) const { return node_at(path) != nullptr; }

  void report(Severity severity, const std::string& code, const std::string& path,
              const std::string& message, const std::string& hint = "");
  void error(const std::string& code, const std::string& path, const std::string& message,
             const std::string& hint = "") {
    report(Severity::kError, code, path, message, hint);
  }
  void warning(const std::string& code, const std::string& path, const std::string& message,
               const std::string& hint = "") {
    report(Severity::kWarning, code, path, message, hint);
  }

  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }
  std::map<std::string, ValueSource>& override_sources() { return override_sources_; }
  const std::map<std::string, ValueSource>& override_sources() const { return override_sources_; }

  nlohmann::json effective = nlohmann::json::object();  ///< resolved values, schema layout
  std::vector<ResolvedValue> resolved;                  ///< the resolved view
  ResolvedConfig config;                                ///< typed, filled from `effective`
  std::optional<HfTrainerReport> hf_trainer;            ///< set by apply_hf_trainer_fill

 private:
  ConfigNode root_;
  const ValidateOptions& options_;
  std::vector<Diagnostic> diagnostics_;
  std::map<std::string, ValueSource> override_sources_;
};

/// Joins a parent path and a key: ("", "fp16") -> "fp16", ("fp16", "enabled") -> "fp16.enabled".
std::string join_path(const std::string& parent, const std::string& key);

/// The node as nlohmann::json (numbers keep integer-ness).
nlohmann::json node_to_json(const ConfigNode& node);
/// A JSON value as a node located at `at` (used for --set values and migrations).
ConfigNode json_to_node(const nlohmann::json& value, SourceLocation at);

/// The field's value converted as DeepSpeed would read it, or nothing when DeepSpeed would reject
/// it (key_rules.cpp). `coerced` is set when a conversion happened (e.g. "3" -> 3 in pydantic).
struct FieldSpec;
std::optional<nlohmann::json> coerce_value(const FieldSpec& field, const ConfigNode& node,
                                           bool strict_block, bool* coerced = nullptr);

/// "a.b.c" as the JSON pointer "/a/b/c".
nlohmann::json::json_pointer pointer_of(const std::string& path);
/// Records a derived effective value (and its line in the resolved view).
void set_derived(ValidationContext& context, const std::string& path, const nlohmann::json& value,
                 const std::string& note);

// The passes, in the order validate() runs them (each in its own file).
void apply_overrides(ValidationContext& context);            // config_overrides.cpp
void apply_hf_trainer_fill(ValidationContext& context);      // hf_trainer_fill.cpp
void migrate_deprecated_keys(ValidationContext& context);    // config_migration.cpp
void check_removed_features(ValidationContext& context);     // config_migration.cpp
void check_keys_and_types(ValidationContext& context);       // key_rules.cpp
void resolve_config(ValidationContext& context);             // config_resolver.cpp
void solve_batch(ValidationContext& context);                // batch_rules.cpp
/// DeepSpeed's TypeError when a batch key is still "auto"; true when one is (batch_auto.cpp).
bool check_batch_auto(ValidationContext& context, int world);
void resolve_optimizer(ValidationContext& context);         // optimizer_rules.cpp
void resolve_scheduler(ValidationContext& context);         // scheduler_rules.cpp
void fill_typed_config(ValidationContext& context);         // typed_config_fill.cpp
void check_precision_rules(ValidationContext& context);      // precision_rules.cpp
void check_zero_rules(ValidationContext& context);           // zero_rules.cpp
void check_optimizer_rules(ValidationContext& context);      // optimizer_rules.cpp
void check_scheduler_rules(ValidationContext& context);      // scheduler_rules.cpp
void check_runtime_rules(ValidationContext& context);        // runtime_rules.cpp
void check_policy_rules(ValidationContext& context);         // policy_rules.cpp

}  // namespace shardscope::configs
