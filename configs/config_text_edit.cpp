#include "configs/config_text_edit.hpp"

#include <vector>

#include "configs/config_document.hpp"

namespace shardscope::configs {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(path.substr(start, dot - start));
  parts.push_back(path.substr(start));
  for (const auto& part : parts)
    if (part.empty()) throw ConfigEditError("'" + path + "' is not a key path (an empty key between dots)");
  return parts;
}

std::string quoted(const std::string& key) {
  std::string out = "\"";
  for (char c : key) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

bool is_blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

/// The first error the parser reports, as "line:col: message (hint)".
std::string first_error(const ConfigDocument& document) {
  for (const auto& d : document.parse_diagnostics)
    if (d.severity == Severity::kError)
      return std::to_string(d.location.line) + ":" + std::to_string(d.location.column) + ": " + d.message +
             (d.hint.empty() ? "" : " (" + d.hint + ")");
  return {};
}

ConfigNode parse_for_edit(const std::string& text) {
  const ConfigDocument document = parse_config_text(text, "config");
  if (const std::string error = first_error(document); !error.empty())
    throw ConfigEditError("the config does not parse, so it cannot be edited in place: " + error);
  if (!document.root->is_object()) throw ConfigEditError("the config must be a JSON object {...}");
  return *document.root;
}

void check_value(const std::string& path, const std::string& value_json) {
  // Strict JSON: hjson's leniencies (a quoteless `tru` is the string "tru") are notes, refused too.
  const ConfigDocument value = parse_config_text(value_json, "value");
  std::string error = first_error(value);
  if (error.empty() && !value.parse_diagnostics.empty()) error = value.parse_diagnostics.front().message;
  if (!error.empty()) throw ConfigEditError("the new value of " + path + " is not one JSON value: " + error);
}

std::size_t line_start(const std::string& text, std::size_t at) {
  const std::size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  return newline == std::string::npos ? 0 : newline + 1;
}

std::size_t skip_blanks(const std::string& text, std::size_t at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r')) ++at;
  return at;
}

/// The whitespace that starts the line holding `at`.
std::string indent_of_line(const std::string& text, std::size_t at) {
  const std::size_t start = line_start(text, at);
  return text.substr(start, skip_blanks(text, start) - start);
}

bool rest_of_line_is_empty_or_comment(const std::string& text, std::size_t at) {
  at = skip_blanks(text, at);
  return at >= text.size() || text[at] == '\n' || text[at] == '#' || text.compare(at, 2, "//") == 0;
}

/// `"a": {"b": value}` for the keys not yet in the document.
std::string nested_member(const std::vector<std::string>& keys, std::size_t from, const std::string& value) {
  std::string inner = value;
  for (std::size_t i = keys.size(); i-- > from + 1;) inner = "{" + quoted(keys[i]) + ": " + inner + "}";
  return quoted(keys[from]) + ": " + inner;
}

TextEdit insert_into_empty(const std::string& text, const ConfigNode& object, const std::string& member) {
  const std::size_t open = object.begin_offset, close = object.end_offset - 1;
  const std::string inside = text.substr(open + 1, close - open - 1);
  if (inside.find('\n') == std::string::npos && is_blank(inside)) return {open + 1, close, member};
  const std::string indent = indent_of_line(text, open);
  if (is_blank(inside)) return {open + 1, close, "\n" + indent + "  " + member + "\n" + indent};
  return {open + 1, open + 1, "\n" + indent + "  " + member};  // only comments inside: keep them after
}

TextEdit insert_member(const std::string& text, const ConfigNode& object, const std::string& member) {
  if (object.members.empty()) return insert_into_empty(text, object, member);
  const ConfigMember& first = object.members.front();
  const ConfigMember& last = object.members.back();
  const std::size_t value_end = last.value.end_offset;
  const bool one_per_line = text.substr(object.begin_offset, first.key_offset - object.begin_offset).find('\n') !=
                            std::string::npos;
  // hjson's quoteless string runs to the end of its line: a comma after it would join the string.
  const char opening = text[last.value.begin_offset];
  const bool quoteless = last.value.is_string() && opening != '"' && opening != '\'';
  if (!one_per_line && !quoteless) return {value_end, value_end, ", " + member};
  std::string indent = indent_of_line(text, last.key_offset);
  if (line_start(text, last.key_offset) + indent.size() != last.key_offset)  // not first on its line
    indent = indent_of_line(text, object.begin_offset) + "  ";
  const std::size_t after = skip_blanks(text, value_end);
  const bool has_comma = after < text.size() && text[after] == ',';
  const std::size_t past_comma = has_comma ? after + 1 : value_end;
  if (quoteless) return {value_end, value_end, "\n" + indent + member};
  if (!rest_of_line_is_empty_or_comment(text, past_comma)) return {value_end, value_end, ",\n" + indent + member};
  // A comment after the last value stays on its line: the new member goes on the next one.
  std::size_t line_end = text.find('\n', past_comma);
  if (line_end == std::string::npos) line_end = text.size();
  if (line_end > value_end && text[line_end - 1] == '\r') --line_end;
  const std::string kept = text.substr(value_end, line_end - value_end);
  return {value_end, line_end, (has_comma ? "" : ",") + kept + "\n" + indent + member};
}

TextEdit remove_member(const std::string& text, const ConfigNode& object, std::size_t index) {
  const ConfigMember& m = object.members[index];
  std::size_t begin = m.key_offset, end = m.value.end_offset;
  const std::size_t after = skip_blanks(text, end);
  if (after < text.size() && text[after] == ',') {
    end = skip_blanks(text, after + 1);  // `{"a": 1, "b": 2}` without a: `{"b": 2}`
  } else if (index > 0) {
    // The last member: take the comma that follows the previous value instead.
    const std::size_t previous_end = object.members[index - 1].value.end_offset;
    std::size_t comma = previous_end;
    while (comma < begin && (text[comma] == ' ' || text[comma] == '\t')) ++comma;
    if (comma < begin && text[comma] == ',') begin = comma;
  }
  const std::size_t start = line_start(text, begin);
  const std::size_t line_rest = skip_blanks(text, end);
  const bool alone = is_blank(text.substr(start, begin - start)) && (line_rest >= text.size() || text[line_rest] == '\n');
  if (alone) {  // the member had its own line: the line goes with it
    begin = start;
    end = line_rest < text.size() ? line_rest + 1 : line_rest;
  }
  return {begin, end, ""};
}

}  // namespace

TextEdit plan_value_edit(const std::string& text, const std::string& path, const std::optional<std::string>& value_json) {
  const std::vector<std::string> keys = split_path(path);
  if (value_json) check_value(path, *value_json);
  if (is_blank(text)) {
    if (!value_json) return {};
    return {0, text.size(), "{\n  " + nested_member(keys, 0, *value_json) + "\n}\n"};
  }
  const ConfigNode root = parse_for_edit(text);
  const ConfigNode* object = &root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::size_t index = 0;
    while (index < object->members.size() && object->members[index].key != keys[i]) ++index;
    if (index == object->members.size()) {
      if (!value_json) return {};  // nothing to remove
      return insert_member(text, *object, nested_member(keys, i, *value_json));
    }
    const ConfigMember& member = object->members[index];
    if (i + 1 == keys.size()) {
      if (!value_json) return remove_member(text, *object, index);
      return {member.value.begin_offset, member.value.end_offset, *value_json};
    }
    if (!member.value.is_object()) {
      if (!value_json) return {};
      throw ConfigEditError(member.key + " (line " + std::to_string(member.key_location.line) + ") holds " +
                            std::string(to_string(member.value.kind)) + " " + to_json_text(member.value) +
                            ", not an object, so " + path + " cannot be set; make it an object {...} first");
    }
    object = &member.value;
  }
  return {};
}

std::string apply_text_edit(const std::string& text, const TextEdit& edit) {
  if (edit.begin > edit.end || edit.end > text.size())
    throw ConfigEditError("internal: edit [" + std::to_string(edit.begin) + ", " + std::to_string(edit.end) +
                          ") lies outside a text of " + std::to_string(text.size()) + " bytes");
  return text.substr(0, edit.begin) + edit.text + text.substr(edit.end);
}

std::string set_config_value(const std::string& text, const std::string& path,
                             const std::optional<std::string>& value_json) {
  return apply_text_edit(text, plan_value_edit(text, path, value_json));
}

}  // namespace shardscope::configs
