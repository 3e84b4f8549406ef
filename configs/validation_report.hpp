#pragma once
// Rendering a ValidationResult for people (compiler-style text, the resolved view as a table) and
// for machines (JSON, schema "shardscope.validate/1"). Shared by `shardscope validate`, the GUI
// and session records.

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "configs/config_validator.hpp"

namespace shardscope::configs {

/// Every diagnostic as `file:line:col: severity: message [code]` plus its hint line.
std::string format_diagnostics_text(const std::string& file_name, const ValidationResult& result);

/// The resolved view as aligned text: `path = value   (source, line N; note)`.
std::string format_resolved_text(const ValidationResult& result);

/// One line: `file: OK`, or `file: 2 errors, 1 warning`.
std::string format_summary_line(const std::string& file_name, const ValidationResult& result);

/// One diagnostic as JSON: severity, code, path, line, column, message, hint.
nlohmann::json diagnostic_to_json(const Diagnostic& diagnostic);

/// The whole result: file, counts, diagnostics and (when `with_resolved`) the resolved view.
nlohmann::json validation_to_json(const std::string& file_name, const ValidationResult& result,
                                  bool with_resolved);

}  // namespace shardscope::configs
