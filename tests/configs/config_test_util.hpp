#pragma once
// Helpers shared by the configs tests: validate inline text and look findings up by code.

#include <string>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"

namespace shardscope::configs::testing {

inline ValidationResult check(const std::string& text, ValidateOptions options = {}) {
  return validate(parse_config_text(text, "test.json"), options);
}

/// The first diagnostic with this code (and severity, unless any), or nullptr.
inline const Diagnostic* find_code(const ValidationResult& result, const std::string& code) {
  for (const auto& d : result.diagnostics)
    if (d.code == code) return &d;
  return nullptr;
}

inline const Diagnostic* find_code_at(const ValidationResult& result, const std::string& code,
                                      const std::string& path) {
  for (const auto& d : result.diagnostics)
    if (d.code == code && d.path == path) return &d;
  return nullptr;
}

inline bool has(const ValidationResult& result, const std::string& code, Severity severity) {
  for (const auto& d : result.diagnostics)
    if (d.code == code && d.severity == severity) return true;
  return false;
}

/// The resolved-view line for `path`, or nullptr.
inline const ResolvedValue* resolved_at(const ValidationResult& result, const std::string& path) {
  for (const auto& v : result.resolved)
    if (v.path == path) return &v;
  return nullptr;
}

/// All diagnostics as text, for failure messages.
inline std::string dump(const ValidationResult& result) {
  std::string text;
  for (const auto& d : result.diagnostics)
    text += std::to_string(d.location.line) + ":" + std::to_string(d.location.column) + " " +
            to_string(d.severity) + " [" + d.code + "] " + d.path + ": " + d.message + "\n";
  return text;
}

/// A minimal config that validates without warnings; `extra` is spliced in as more members.
inline std::string clean_config(const std::string& extra = "") {
  return "{\n  \"train_micro_batch_size_per_gpu\": 4,\n  \"gradient_accumulation_steps\": 1,\n"
         "  \"gradient_clipping\": 1.0" + (extra.empty() ? "" : ",\n  " + extra) + "\n}\n";
}

}  // namespace shardscope::configs::testing
