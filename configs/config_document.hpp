#pragma once
// Reading a DeepSpeed config file the way DeepSpeed 0.19.7 does: it parses with hjson, so
// comments (// # /* */), trailing commas and newline-separated members are accepted, and it
// rejects duplicate keys. Syntax errors come back as diagnostics, never as exceptions.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "configs/config_node.hpp"
#include "configs/diagnostic.hpp"
#include "configs/input_file.hpp"

namespace shardscope::configs {

/// A parsed config file: the tree (absent after a syntax error) and what the parser noticed.
struct ConfigDocument {
  std::string file_name;
  std::optional<ConfigNode> root;
  /// Syntax errors, duplicate keys (errors) and hjson leniencies (notes, shown under --strict).
  std::vector<Diagnostic> parse_diagnostics;
};

/// Parses `text` (named `file_name` in diagnostics). Never throws on bad input.
ConfigDocument parse_config_text(const std::string& text, const std::string& file_name);

/// Error reading a config file from disk (missing, unreadable, not a regular file, too large).
class ConfigFileError : public InputFileError {
 public:
  using InputFileError::InputFileError;
};

/// The text of a config file (at most kMaxConfigFileBytes); throws ConfigFileError naming the file
/// if it cannot be read. For readers that hand the text on (`sessions import --config`, `watch`).
std::string read_config_file_text(const std::string& path);

/// Reads (read_config_file_text) and parses a file; throws ConfigFileError naming the file if it
/// cannot be read.
ConfigDocument parse_config_file(const std::string& path);

}  // namespace shardscope::configs
