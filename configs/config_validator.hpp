#pragma once
// validate(): the whole pipeline a front end calls. It applies `--set` overrides, checks every key
// against the schema of the chosen DeepSpeed release (0.19.7 or 0.19.8), resolves defaults, "auto"
// and the batch keys, runs the rules (DeepSpeed's own errors with its numbers, plus warnings for
// what DeepSpeed silently accepts),
// and returns the diagnostics with the typed ResolvedConfig and the resolved view.

#include <optional>
#include <string>
#include <vector>

#include "configs/config_document.hpp"
#include "configs/config_model.hpp"
#include "configs/deepspeed_version.hpp"
#include "configs/diagnostic.hpp"
#include "configs/hf_trainer_fill.hpp"

namespace shardscope::configs {

/// One `--set key.path=value`: the value is read as JSON when it parses, else as a string.
struct ConfigOverride {
  std::string path;   ///< dotted, e.g. "zero_optimization.stage"
  std::string value;  ///< e.g. "3", "true", "[0.9, 0.95]", "AdamW"
};

/// Parses "key.path=value"; throws std::invalid_argument naming the text if there is no '='.
ConfigOverride parse_override(const std::string& text);

struct ValidateOptions {
  /// Data-parallel world size for the batch solver; unset = inferred from the three batch keys
  /// when all are given, else 1 (with a note).
  std::optional<int> world_size;
  std::vector<ConfigOverride> overrides;
  /// Policy lints (explicit gradient_clipping, one precision mode) become errors, and hjson
  /// leniencies (comments, trailing commas) are reported as notes.
  bool strict = false;
  /// Fill "auto" as the Hugging Face Trainer does from these TrainingArguments (world size:
  /// `world_size`, else 1) and report its mismatches, before DeepSpeed's checks.
  std::optional<HfTrainerArguments> hf_trainer;
  /// Whose rules: the keys each release removed, its schema (fields added and dropped) and its
  /// engine-init verdicts (docs/configs.md lists the differences).
  DeepSpeedVersion deepspeed_version = DeepSpeedVersion::k0_19_7;
  /// The program brings its own optimizer when the config has none (ShardScope's engine builds one
  /// from the defaults; a DeepSpeed run that was imported had one): DeepSpeed's no-optimizer
  /// assertions (bf16 at stage 0, ZeRO 1/2) do not apply. `validate` leaves it off.
  bool own_optimizer = false;
};

/// Where an effective value came from.
enum class ValueSource {
  kUser,          ///< written in the file
  kDefault,       ///< DeepSpeed 0.19.7's code default
  kAutoDropped,   ///< "auto" in a pydantic block: DeepSpeed drops it, the default applies
  kAutoUnfilled,  ///< "auto" DeepSpeed keeps as a string (top level, lenient blocks)
  kAutoFilled,    ///< "auto" replaced by a --set override
  kOverride,      ///< a non-auto value replaced or added by a --set override
  kDerived,       ///< computed (batch solver, overlap_comm by stage, forced flags)
};

/// "user", "default", "default (auto dropped)", "auto (unfilled)", "auto-filled", "override",
/// "derived".
const char* to_string(ValueSource source);

/// One line of the resolved view: an effective value, where it came from and why.
struct ResolvedValue {
  std::string path;        ///< e.g. "zero_optimization.overlap_comm"
  std::string value_json;  ///< compact JSON text of the effective value
  ValueSource source = ValueSource::kDefault;
  SourceLocation location; ///< where the user wrote it (0:0 for defaults)
  std::string note;        ///< e.g. "stage == 3", "tb // mb // world"
};

struct ValidationResult {
  std::vector<Diagnostic> diagnostics;      ///< sorted by location
  std::optional<ResolvedConfig> config;     ///< absent when the file did not parse
  std::vector<ResolvedValue> resolved;      ///< every known key of every block, in schema order
  std::optional<HfTrainerReport> hf_trainer;  ///< what the Trainer's fill did (with --hf-trainer)
  bool has_errors() const;
};

/// Validates a parsed document as DeepSpeed 0.19.7 would read it.
ValidationResult validate(const ConfigDocument& document, const ValidateOptions& options);

}  // namespace shardscope::configs
