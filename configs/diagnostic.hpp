#pragma once
// Diagnostics: what a validator finding looks like to every front end (CLI text and JSON, the GUI
// editor's squiggles). Codes are stable identifiers that tests, docs and users can grep for.

#include <string>
#include <vector>

namespace shardscope::configs {

enum class Severity { kError, kWarning, kNote };

/// A place in the source text; line and column are 1-based, 0 = unknown (e.g. a missing key).
struct SourceLocation {
  int line = 0;
  int column = 0;
};

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;      ///< stable, e.g. "batch-identity", "unknown-key", "removed-feature"
  std::string path;      ///< JSON path, e.g. "zero_optimization.offload_param.device"; "" = root
  SourceLocation location;
  std::string message;
  std::string hint;      ///< how to fix it; may be empty
};

/// "error", "warning" or "note".
const char* to_string(Severity severity);

/// Number of diagnostics of the given severity.
std::size_t count_severity(const std::vector<Diagnostic>& diagnostics, Severity severity);

/// Sorts by line, then column, then severity (errors first), keeping the order of equal ones.
void sort_diagnostics(std::vector<Diagnostic>& diagnostics);

/// Compiler-style text: `file:line:col: error: message [code]` then an indented `hint:` line; a
/// message or hint longer than 600 characters keeps its first 300 and last 200.
std::string format_diagnostic_text(const std::string& file_name, const Diagnostic& diagnostic);

}  // namespace shardscope::configs
