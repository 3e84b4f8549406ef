#include "configs/diagnostic.hpp"

#include <algorithm>

#include "configs/display_text.hpp"

namespace shardscope::configs {

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
    case Severity::kError: break;
  }
  return "error";
}

std::size_t count_severity(const std::vector<Diagnostic>& diagnostics, Severity severity) {
  return static_cast<std::size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [severity](const Diagnostic& d) { return d.severity == severity; }));
}

void sort_diagnostics(std::vector<Diagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     if (a.location.line != b.location.line) return a.location.line < b.location.line;
                     if (a.location.column != b.location.column)
                       return a.location.column < b.location.column;
                     return static_cast<int>(a.severity) < static_cast<int>(b.severity);
                   });
}

namespace {

// A message quoting a 1 MB value (an unknown optimizer type, a key) keeps its start and end on
// the terminal, and a key holding an escape sequence cannot drive it; the JSON output keeps every
// character.
std::string shown(const std::string& text) { return shown_text(text, {.keep_newlines = false}); }

}  // namespace

std::string format_diagnostic_text(const std::string& file_name, const Diagnostic& diagnostic) {
  // file:line:col like gcc and clang, so editors and CI annotators can jump to the line; a
  // diagnostic about a key that is absent points at line 1 of the file.
  const int line = diagnostic.location.line > 0 ? diagnostic.location.line : 1;
  const int column = diagnostic.location.column > 0 ? diagnostic.location.column : 1;
  std::string text = file_name + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                     to_string(diagnostic.severity) + ": " + shown(diagnostic.message) + " [" +
                     diagnostic.code + "]\n";
  if (!diagnostic.hint.empty()) text += "    hint: " + shown(diagnostic.hint) + "\n";
  return text;
}

}  // namespace shardscope::configs
