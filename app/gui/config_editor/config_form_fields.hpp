#pragma once
// The Config Editor's form without widgets: which DeepSpeed keys it edits, how to read their
// values out of a config's text (read as DeepSpeed's hjson reader reads it), and how to write one
// value back by patching only that value's text (configs/config_text_edit.hpp), so formatting,
// number spelling and comments elsewhere survive. Values travel as compact JSON text ("3",
// "true", "\"cpu\""); an empty string means "key absent".

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::gui {

enum class FormFieldKind {
  kNumber,     ///< a JSON number or "auto"
  kTriBool,    ///< unset, true or false
  kChoice,     ///< a string from a list (editable: other strings allowed)
  kPrecision,  ///< virtual: fp32 / fp16 / bf16 across the fp16.enabled and bf16.enabled keys
};

struct FormField {
  std::string path;   ///< dotted DeepSpeed key, e.g. "zero_optimization.stage"; "precision" is virtual
  std::string label;
  std::string group;  ///< "Batch", "Precision", "ZeRO", "Optimizer", "Scheduler", "Monitoring"
  FormFieldKind kind = FormFieldKind::kNumber;
  std::vector<std::string> choices;  ///< kChoice
  std::string help;   ///< one sentence for the tooltip, after the key
};

/// The precision value when fp16.enabled and bf16.enabled are both true: DeepSpeed refuses it
/// ("bfloat16 and fp16 modes cannot be simultaneously enabled"), so the form shows the conflict.
inline constexpr const char* kPrecisionConflict = "fp16 + bf16";
/// What the precision box shows when fp16.enabled or bf16.enabled is "auto" (the HF Trainer's).
inline constexpr const char* kPrecisionAuto = "auto";

/// The form's fields in display order.
const std::vector<FormField>& config_form_fields();

/// Each field's current value (compact JSON as written, "" = absent) read from `text` (hjson as
/// DeepSpeed reads it); nullopt with `error` ("line L, column C: message (hint)") when it does not parse.
std::optional<std::map<std::string, std::string>> read_form_values(const std::string& text, std::string* error);

/// `text` with the field at `path` set to `value_json` ("" removes the key): only that value's span
/// changes. Throws std::invalid_argument when `text` or `value_json` does not parse.
std::string apply_form_value(const std::string& text, const std::string& path, const std::string& value_json);

/// The JSON a form field's text stands for: "" for empty, "auto" quoted, numbers as written;
/// nullopt when the text is neither (the field then shows an error and writes nothing).
std::optional<std::string> number_field_json(const std::string& text);

/// The JSON a choice stands for: "" for empty, numbers ("3") as numbers, anything else as a string.
std::string choice_field_json(const std::string& text);

/// True when two compact JSON texts mean the same value (numbers compared as numbers; "" = absent).
bool json_values_equal(const std::string& a, const std::string& b);

/// How a value is shown in a field: strings without quotes, numbers as written, the rest as JSON text.
std::string field_display_text(const std::string& value_json);

}  // namespace shardscope::gui
