#include "configs/validation_report.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "configs/display_text.hpp"

namespace shardscope::configs {

std::string format_diagnostics_text(const std::string& file_name, const ValidationResult& result) {
  std::string text;
  for (const auto& diagnostic : result.diagnostics) text += format_diagnostic_text(file_name, diagnostic);
  return text;
}

std::string format_resolved_text(const ValidationResult& result) {
  std::size_t width = 0;
  for (const auto& value : result.resolved)
    width = std::max(width, value.path.size() + value.value_json.size() + 3);
  width = std::min<std::size_t>(width, 72);
  std::string text;
  for (const auto& value : result.resolved) {
    std::string line = value.path + " = " + value.value_json;
    if (line.size() < width) line += std::string(width - line.size(), ' ');
    line += "  (" + std::string(to_string(value.source));
    if (value.location.line > 0) line += ", line " + std::to_string(value.location.line);
    if (!value.note.empty()) line += "; " + value.note;
    text += shown_text(line + ")", {.keep_newlines = false}) + "\n";  // keys and values come from the file
  }
  return text;
}

std::string format_summary_line(const std::string& file_name, const ValidationResult& result) {
  const auto errors = count_severity(result.diagnostics, Severity::kError);
  const auto warnings = count_severity(result.diagnostics, Severity::kWarning);
  if (errors == 0 && warnings == 0) return file_name + ": OK\n";
  auto plural = [](std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  std::string line = file_name + ": ";
  if (errors > 0) line += plural(errors, "error");
  if (errors > 0 && warnings > 0) line += ", ";
  if (warnings > 0) line += plural(warnings, "warning");
  return line + "\n";
}

nlohmann::json diagnostic_to_json(const Diagnostic& diagnostic) {
  return {{"severity", to_string(diagnostic.severity)},
          {"code", diagnostic.code},
          {"path", diagnostic.path},
          {"line", diagnostic.location.line},
          {"column", diagnostic.location.column},
          {"message", diagnostic.message},
          {"hint", diagnostic.hint}};
}

nlohmann::json validation_to_json(const std::string& file_name, const ValidationResult& result,
                                  bool with_resolved) {
  nlohmann::json out = {
      {"file", file_name},
      {"ok", !result.has_errors()},
      {"errors", count_severity(result.diagnostics, Severity::kError)},
      {"warnings", count_severity(result.diagnostics, Severity::kWarning)},
      {"notes", count_severity(result.diagnostics, Severity::kNote)},
      {"diagnostics", nlohmann::json::array()}};
  for (const auto& diagnostic : result.diagnostics) out["diagnostics"].push_back(diagnostic_to_json(diagnostic));
  if (with_resolved) {
    nlohmann::json resolved = nlohmann::json::array();
    for (const auto& value : result.resolved) {
      resolved.push_back({{"path", value.path},
                          {"value", nlohmann::json::parse(value.value_json, nullptr, false)},
                          {"source", to_string(value.source)},
                          {"line", value.location.line},
                          {"note", value.note}});
    }
    out["resolved"] = std::move(resolved);
  }
  if (result.hf_trainer) out["hf_trainer"] = hf_trainer_report_to_json(*result.hf_trainer);
  return out;
}

}  // namespace shardscope::configs
