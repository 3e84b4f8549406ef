// A recursive-descent parser for hjson-tolerant JSON that keeps the source location of every key
// and value. It accepts what DeepSpeed's hjson reader accepts in practice (comments, trailing
// commas, members separated by newlines, unquoted keys, single-quoted strings) and records each
// leniency as a note, because other JSON tools reject these files. Hjson's quoteless string values
// (`type: AdamW`) run to the end of the line, as hjson reads them.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "configs/config_document.hpp"

namespace shardscope::configs {
namespace {

constexpr int kMaxDepth = 256;  // far deeper than any config; stops stack exhaustion on junk

/// Internal: a syntax error unwinds the whole parse (one error per document, like a compiler's).
struct SyntaxError {
  SourceLocation location;
  std::string message;
  std::string hint;
};

class Parser {
 public:
  Parser(const std::string& text, std::vector<Diagnostic>& diagnostics)
      : text_(text), diagnostics_(diagnostics) {}

  ConfigNode parse_document() {
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // a UTF-8 byte order mark
    check_utf8();
    skip_space();
    if (at_end()) throw SyntaxError{here(), "the config is empty", "write a JSON object: {}"};
    ConfigNode root = parse_value(0);
    skip_space();
    if (!at_end())
      throw SyntaxError{here(), "unexpected " + describe_here() + " after the end of the config",
                        "a config is a single JSON object; remove the trailing text"};
    if (comment_count_ > 0) {
      note(first_comment_, "json-comment",
           std::to_string(comment_count_) + " comment(s): DeepSpeed's hjson reader accepts them, "
           "strict JSON tools (jq, json.load) do not",
           "remove the comments if other tools must read this file");
    }
    return root;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  SourceLocation here() const { return {line_, column_}; }

  void advance() {
    const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column_;  // columns count characters, not UTF-8 continuation bytes
    }
  }

  void note(SourceLocation at, const std::string& code, const std::string& message,
            const std::string& hint) {
    diagnostics_.push_back({Severity::kNote, code, "", at, message, hint});
  }

  std::string describe_here() const {
    if (at_end()) return "end of file";
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c < 0x20 || c >= 0x7F) {
      std::ostringstream out;
      out << "byte 0x" << std::hex << static_cast<int>(c);
      return out.str();
    }
    return std::string("'") + static_cast<char>(c) + "'";
  }

  /// DeepSpeed opens the file as UTF-8 text, so a bad byte anywhere fails before hjson runs.
  void check_utf8() {
    std::size_t i = pos_;
    while (i < text_.size()) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      const std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3
                                 : (c >> 3) == 0x1E ? 4 : 0;
      bool valid = length > 0 && i + length <= text_.size() && !(c == 0xC0 || c == 0xC1 || c > 0xF4);
      for (std::size_t k = 1; valid && k < length; ++k)
        valid = (static_cast<unsigned char>(text_[i + k]) & 0xC0) == 0x80;
      if (!valid) {
        while (pos_ < i) advance();
        std::ostringstream byte;
        byte << "0x" << std::hex << static_cast<int>(c);
        throw SyntaxError{here(), "the file is not valid UTF-8 (byte " + byte.str() + ")",
                          "save the file as UTF-8"};
      }
      i += length;
    }
  }

  /// Skips whitespace and comments; returns true if a newline was crossed.
  bool skip_space() {
    bool newline = false;
    while (!at_end()) {
      const char c = peek();
      if (c == '\n') newline = true;
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '#' || (c == '/' && peek(1) == '/')) {
        count_comment();
        while (!at_end() && peek() != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        count_comment();
        const SourceLocation start = here();
        advance();
        advance();
        while (!at_end() && !(peek() == '*' && peek(1) == '/')) {
          if (peek() == '\n') newline = true;
          advance();
        }
        if (at_end()) throw SyntaxError{start, "unterminated /* comment", "close it with */"};
        advance();
        advance();
      } else {
        break;
      }
    }
    return newline;
  }

  void count_comment() {
    if (comment_count_++ == 0) first_comment_ = here();
  }

  ConfigNode parse_value(int depth) {
    const std::size_t begin = pos_;
    ConfigNode node = parse_value_text(depth);
    node.begin_offset = begin;
    node.end_offset = pos_;
    return node;
  }

  ConfigNode parse_value_text(int depth) {
    if (depth > kMaxDepth)
      throw SyntaxError{here(), "nesting deeper than " + std::to_string(kMaxDepth) + " levels",
                        "a DeepSpeed config is a few levels deep; check for runaway brackets"};
    if (at_end()) throw SyntaxError{here(), "unexpected end of file, expected a value", ""};
    const char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"' || c == '\'') {
      ConfigNode node;
      node.location = here();
      node.kind = ConfigNode::Kind::kString;
      node.string_value = parse_string();
      return node;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    return parse_keyword();
  }

  ConfigNode parse_keyword() {
    ConfigNode node;
    node.location = here();
    const std::size_t start = pos_;
    std::string word;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_'))
      word += peek(), advance();
    if (word == "true" || word == "false") {
      node.kind = ConfigNode::Kind::kBool;
      node.bool_value = word == "true";
      return node;
    }
    if (word == "null") return node;
    if (word.empty() && (at_end() || std::string("{}[],:\n").find(peek()) != std::string::npos))
      throw SyntaxError{node.location, "expected a value, found " + describe_here(),
                        "a value is a string in double quotes, a number, true, false, null, an "
                        "object {...} or an array [...]"};
    return parse_quoteless_string(start, node);
  }

  // Hjson's quoteless string: the rest of the line, trailing blanks cut (commas and comments
  // included, as hjson reads them: `a: cpu, b: 1` is the string "cpu, b: 1").
  ConfigNode parse_quoteless_string(std::size_t start, ConfigNode node) {
    std::size_t end = text_.find('\n', start);
    if (end == std::string::npos) end = text_.size();
    while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\t' || text_[end - 1] == '\r')) --end;
    while (pos_ < end) advance();
    node.kind = ConfigNode::Kind::kString;
    node.string_value = text_.substr(start, end - start);
    note(node.location, "quoteless-string",
         "quoteless string '" + node.string_value + "': hjson reads the rest of the line as the string, "
         "JSON does not accept it",
         "write \"" + node.string_value + "\"");
    return node;
  }

  ConfigNode parse_number() {
    ConfigNode node;
    node.location = here();
    const std::size_t start = pos_;
    bool integral = true;
    if (peek() == '-') advance();
    if (peek() == '0') {
      advance();
      if (std::isdigit(static_cast<unsigned char>(peek())))
        throw SyntaxError{node.location, "number with a leading zero", "write it without the 0"};
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
    } else {
      throw SyntaxError{here(), "expected a digit after '-', found " + describe_here(), ""};
    }
    if (peek() == '.') {
      integral = false;
      advance();
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        throw SyntaxError{here(), "expected a digit after the decimal point, found " +
                                      describe_here(), "write e.g. 1.0, not 1."};
      while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        throw SyntaxError{here(), "expected a digit in the exponent, found " + describe_here(),
                          "write e.g. 5e8"};
      while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
    }
    node.string_value = text_.substr(start, pos_ - start);
    node.number_value = std::strtod(node.string_value.c_str(), nullptr);
    node.kind = ConfigNode::Kind::kNumber;
    if (!std::isfinite(node.number_value)) report_overflow(node);
    if (integral) {
      errno = 0;
      const long long value = std::strtoll(node.string_value.c_str(), nullptr, 10);
      if (errno == 0) {  // larger integers stay doubles, as Python's arbitrary ints would compare
        node.kind = ConfigNode::Kind::kInteger;
        node.int_value = value;
      }
    }
    return node;
  }

  // DeepSpeed's hjson reader fails on 1e999 with a bare OverflowError (it tries int(inf)), naming
  // neither the file nor the key: the same refusal here, at the number, naming the key.
  void report_overflow(const ConfigNode& node) {
    const std::string shown = node.string_value.size() > 40 ? node.string_value.substr(0, 40) + "..." : node.string_value;
    diagnostics_.push_back({Severity::kError, "number-overflow", key_path(), node.location,
                            "the number " + shown + (key_path().empty() ? "" : " of \"" + key_path() + "\"") +
                                " is beyond the range of a 64-bit float (about 1.8e308); DeepSpeed's hjson "
                                "reader fails on it too (OverflowError: cannot convert float infinity to integer)",
                            "write a finite value"});
  }

  std::string key_path() const {
    std::string path;
    for (const auto& key : keys_) path += (path.empty() || (!key.empty() && key[0] == '[') ? "" : ".") + key;
    return path;
  }

  static void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  unsigned long parse_hex4() {
    unsigned long value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        throw SyntaxError{here(), "expected 4 hex digits after \\u, found " + describe_here(), ""};
      value = value * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(c))
                                                          ? c - '0'
                                                          : std::tolower(c) - 'a' + 10);
      advance();
    }
    return value;
  }

  void parse_escape(std::string& out) {
    const SourceLocation at = here();
    advance();  // the backslash
    if (at_end()) throw SyntaxError{at, "unterminated string", "close it with a quote"};
    const char c = peek();
    advance();
    switch (c) {
      case '"': case '\'': case '\\': case '/': out += c; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': {
        unsigned long cp = parse_hex4();
        if (cp >= 0xD800 && cp < 0xDC00 && peek() == '\\' && peek(1) == 'u') {
          advance();
          advance();
          const unsigned long low = parse_hex4();
          if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
        return;
      }
      default:
        throw SyntaxError{at, std::string("invalid escape '\\") + c + "' in a string",
                          "valid escapes: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"};
    }
  }

  std::string parse_string() {
    const SourceLocation start = here();
    const char quote = peek();
    if (quote == '\'')
      note(start, "single-quoted-string", "single-quoted string: hjson accepts it, JSON does not",
           "use double quotes");
    advance();
    std::string out;
    while (true) {
      if (at_end() || peek() == '\n')
        throw SyntaxError{start, "unterminated string", std::string("close it with ") + quote +
                                                            " on the same line"};
      const char c = peek();
      if (c == quote) break;
      if (c == '\\') {
        parse_escape(out);
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        throw SyntaxError{here(), "control character in a string", "escape it (\\t, \\n, ...)"};
      out += c;
      advance();
    }
    advance();
    return out;
  }

  std::string parse_key(SourceLocation& at) {
    at = here();
    if (peek() == '"' || peek() == '\'') return parse_string();
    std::string key;
    while (!at_end()) {
      const char c = peek();
      if (std::isspace(static_cast<unsigned char>(c)) || c == ':' || c == ',' || c == '{' ||
          c == '}' || c == '[' || c == ']' || c == '"' || c == '\'' || c == '#' || c == '/')
        break;
      key += c;
      advance();
    }
    if (key.empty())
      throw SyntaxError{at, "expected a key in double quotes, found " + describe_here(), ""};
    note(at, "unquoted-key", "unquoted key '" + key + "': hjson accepts it, JSON does not",
         "write \"" + key + "\"");
    return key;
  }

  ConfigNode parse_object(int depth);
  ConfigNode parse_array(int depth);
  void add_member(ConfigNode& object, ConfigMember member);

  const std::string& text_;
  std::vector<Diagnostic>& diagnostics_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  int comment_count_ = 0;
  SourceLocation first_comment_;
  std::vector<std::string> keys_;  ///< the keys (and [index]es) leading to the value being parsed
};

void Parser::add_member(ConfigNode& object, ConfigMember member) {
  for (auto& existing : object.members) {
    if (existing.key != member.key) continue;
    // DeepSpeed's object_pairs_hook raises: "Duplicate keys in DeepSpeed config: [...]".
    diagnostics_.push_back(
        {Severity::kError, "duplicate-key", "", member.key_location,
         "duplicate key \"" + member.key + "\" (first at line " +
             std::to_string(existing.key_location.line) + ", again at line " +
             std::to_string(member.key_location.line) +
             "); DeepSpeed rejects the file: Duplicate keys in DeepSpeed config: ['" + member.key +
             "']",
         "keep one of the two"});
    existing.value = std::move(member.value);  // a dict keeps the last one; checks go on with it
    return;
  }
  object.members.push_back(std::move(member));
}

ConfigNode Parser::parse_object(int depth) {
  ConfigNode node;
  node.kind = ConfigNode::Kind::kObject;
  node.location = here();
  advance();  // '{'
  skip_space();
  while (true) {
    if (at_end())
      throw SyntaxError{here(), "unexpected end of file, expected '}' to close the object opened at " +
                                    std::to_string(node.location.line) + ":" +
                                    std::to_string(node.location.column), ""};
    if (peek() == '}') break;
    ConfigMember member;
    member.key_offset = pos_;
    member.key = parse_key(member.key_location);
    skip_space();
    if (peek() != ':')
      throw SyntaxError{here(), "expected ':' after the key \"" + member.key + "\", found " +
                                    describe_here(), ""};
    advance();
    skip_space();
    keys_.push_back(member.key);
    member.value = parse_value(depth + 1);
    keys_.pop_back();
    add_member(node, std::move(member));
    const bool newline = skip_space();
    if (peek() == ',') {
      const SourceLocation comma = here();
      advance();
      skip_space();
      if (peek() == '}')
        note(comma, "trailing-comma", "trailing comma before '}': hjson accepts it, JSON does not",
             "remove the comma");
    } else if (peek() != '}') {
      if (at_end())
        throw SyntaxError{here(), "unexpected end of file, expected '}' to close the object opened at " +
                                      std::to_string(node.location.line) + ":" +
                                      std::to_string(node.location.column), ""};
      if (!newline)
        throw SyntaxError{here(), "expected ',' or '}' after the value of \"" +
                                      node.members.back().key + "\", found " + describe_here(),
                          "separate members with commas"};
      note(here(), "missing-comma", "member on a new line without a comma: hjson accepts it, "
           "JSON does not", "add a comma at the end of the previous line");
    }
  }
  advance();  // '}'
  return node;
}

ConfigNode Parser::parse_array(int depth) {
  ConfigNode node;
  node.kind = ConfigNode::Kind::kArray;
  node.location = here();
  advance();  // '['
  skip_space();
  while (true) {
    if (at_end())
      throw SyntaxError{here(), "unexpected end of file, expected ']' to close the array opened at " +
                                    std::to_string(node.location.line) + ":" +
                                    std::to_string(node.location.column), ""};
    if (peek() == ']') break;
    keys_.push_back("[" + std::to_string(node.items.size()) + "]");
    node.items.push_back(parse_value(depth + 1));
    keys_.pop_back();
    const bool newline = skip_space();
    if (peek() == ',') {
      const SourceLocation comma = here();
      advance();
      skip_space();
      if (peek() == ']')
        note(comma, "trailing-comma", "trailing comma before ']': hjson accepts it, JSON does not",
             "remove the comma");
    } else if (peek() != ']') {
      if (at_end())
        throw SyntaxError{here(), "unexpected end of file, expected ']' to close the array opened at " +
                                      std::to_string(node.location.line) + ":" +
                                      std::to_string(node.location.column), ""};
      if (!newline)
        throw SyntaxError{here(), "expected ',' or ']' in the array, found " + describe_here(),
                          "separate items with commas"};
      note(here(), "missing-comma", "array item on a new line without a comma: hjson accepts it, "
           "JSON does not", "add a comma at the end of the previous line");
    }
  }
  advance();  // ']'
  return node;
}

}  // namespace

ConfigDocument parse_config_text(const std::string& text, const std::string& file_name) {
  ConfigDocument document;
  document.file_name = file_name;
  Parser parser(text, document.parse_diagnostics);
  try {
    document.root = parser.parse_document();
  } catch (const SyntaxError& error) {
    document.root.reset();
    document.parse_diagnostics.push_back(
        {Severity::kError, "syntax-error", "", error.location, error.message, error.hint});
  }
  return document;
}

std::string read_config_file_text(const std::string& path) {
  try {
    return read_input_file(path, "JSON config file", kMaxConfigFileBytes);
  } catch (const InputFileError& error) {
    throw ConfigFileError(error.what());
  }
}

ConfigDocument parse_config_file(const std::string& path) { return parse_config_text(read_config_file_text(path), path); }

}  // namespace shardscope::configs
