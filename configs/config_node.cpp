#include "configs/config_node.hpp"

#include <cmath>
#include <sstream>

namespace shardscope::configs {

const ConfigNode* ConfigNode::find(const std::string& key) const {
  const ConfigMember* member = find_member(key);
  return member ? &member->value : nullptr;
}

ConfigNode* ConfigNode::find(const std::string& key) {
  for (auto& member : members)
    if (member.key == key) return &member.value;
  return nullptr;
}

const ConfigMember* ConfigNode::find_member(const std::string& key) const {
  for (const auto& member : members)
    if (member.key == key) return &member;
  return nullptr;
}

const char* to_string(ConfigNode::Kind kind) {
  switch (kind) {
    case ConfigNode::Kind::kBool: return "boolean";
    case ConfigNode::Kind::kInteger: return "integer";
    case ConfigNode::Kind::kNumber: return "number";
    case ConfigNode::Kind::kString: return "string";
    case ConfigNode::Kind::kArray: return "array";
    case ConfigNode::Kind::kObject: return "object";
    case ConfigNode::Kind::kNull: break;
  }
  return "null";
}

namespace {

void write_string(std::ostringstream& out, const std::string& text) {
  out << '"';
  for (const char c : text) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      case '\r': out << "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const char* digits = "0123456789abcdef";
          out << "\\u00" << digits[(c >> 4) & 0xF] << digits[c & 0xF];
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void write_node(std::ostringstream& out, const ConfigNode& node) {
  switch (node.kind) {
    case ConfigNode::Kind::kNull: out << "null"; return;
    case ConfigNode::Kind::kBool: out << (node.bool_value ? "true" : "false"); return;
    case ConfigNode::Kind::kInteger: out << node.int_value; return;
    case ConfigNode::Kind::kNumber:
      if (!node.string_value.empty()) out << node.string_value;  // as written: 5e8 stays 5e8
      else out << node.number_value;
      return;
    case ConfigNode::Kind::kString: write_string(out, node.string_value); return;
    case ConfigNode::Kind::kArray:
      out << '[';
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (i) out << ", ";
        write_node(out, node.items[i]);
      }
      out << ']';
      return;
    case ConfigNode::Kind::kObject:
      out << '{';
      for (std::size_t i = 0; i < node.members.size(); ++i) {
        if (i) out << ", ";
        write_string(out, node.members[i].key);
        out << ": ";
        write_node(out, node.members[i].value);
      }
      out << '}';
      return;
  }
}

}  // namespace

std::string to_json_text(const ConfigNode& node) {
  std::ostringstream out;
  out.precision(17);
  write_node(out, node);
  return out.str();
}

}  // namespace shardscope::configs
