#pragma once
// The parsed config as a tree that remembers where every key and value came from, so diagnostics
// can point at the line. nlohmann::json cannot keep locations, hence this small tree;
// configs/config_json.hpp converts it to nlohmann::json where that is more convenient.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "configs/diagnostic.hpp"

namespace shardscope::configs {

struct ConfigMember;

/// One JSON value with its source location.
struct ConfigNode {
  enum class Kind { kNull, kBool, kInteger, kNumber, kString, kArray, kObject };

  Kind kind = Kind::kNull;
  SourceLocation location;
  /// Byte offsets of the value's text [begin_offset, end_offset) in the parsed text, so an edit can
  /// replace exactly this value and leave every other byte as written (configs/config_text_edit.hpp).
  std::size_t begin_offset = 0;
  std::size_t end_offset = 0;
  bool bool_value = false;
  std::int64_t int_value = 0;        ///< kInteger
  double number_value = 0.0;         ///< kInteger and kNumber (as a double)
  std::string string_value;          ///< kString; for numbers, the literal text as written
  std::vector<ConfigNode> items;     ///< kArray
  std::vector<ConfigMember> members; ///< kObject, in source order (duplicates already removed)

  bool is_object() const { return kind == Kind::kObject; }
  bool is_number() const { return kind == Kind::kInteger || kind == Kind::kNumber; }
  bool is_string() const { return kind == Kind::kString; }
  /// True for the string "auto" (Hugging Face's placeholder).
  bool is_auto() const { return kind == Kind::kString && string_value == "auto"; }
  /// The member's value, or nullptr; objects only.
  const ConfigNode* find(const std::string& key) const;
  ConfigNode* find(const std::string& key);
  /// The member (key and its location), or nullptr; objects only.
  const ConfigMember* find_member(const std::string& key) const;
};

struct ConfigMember {
  std::string key;
  SourceLocation key_location;
  ConfigNode value;
  std::size_t key_offset = 0;  ///< byte offset of the key's first character (its quote, if quoted)
};

/// "null", "boolean", "integer", "number", "string", "array" or "object".
const char* to_string(ConfigNode::Kind kind);

/// The value as compact JSON text (for messages and the resolved view).
std::string to_json_text(const ConfigNode& node);

}  // namespace shardscope::configs
