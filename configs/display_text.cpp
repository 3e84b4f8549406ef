#include "configs/display_text.hpp"

#include <cstdio>

namespace shardscope::configs {
namespace {

void append_escape(std::string& out, const char* format, unsigned value) {
  char escape[8];
  std::snprintf(escape, sizeof escape, format, value);
  out += escape;
}

// Length of the valid UTF-8 sequence starting at text[i] (1 to 4), or 0 when it is not one.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (length == 0 || i + length > text.size() || c == 0xC0 || c == 0xC1 || c > 0xF4) return 0;
  for (std::size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  return length;
}

// The largest cut point at or below `at` that does not split a UTF-8 sequence.
std::size_t character_boundary(std::string_view text, std::size_t at) {
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

std::string shown_line(std::string_view line, const ShownTextOptions& options) {
  const std::size_t max = options.max_line_bytes;
  if (max == 0 || line.size() <= max) return escape_control_characters(line, false);
  const std::size_t head = character_boundary(line, max * 2 / 3);
  const std::size_t tail = character_boundary(line, line.size() - max / 4);
  return escape_control_characters(line.substr(0, head), false) + " ... [" + std::to_string(tail - head) + " of " +
         std::to_string(line.size()) + " bytes of this line left out] ... " +
         escape_control_characters(line.substr(tail), false);
}

}  // namespace

std::string escape_control_characters(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length(text, i);
    if (length == 0) {
      append_escape(out, "\\x%02x", c);  // not UTF-8: a terminal would guess at it
      ++i;
    } else if (length == 1 && (c < 0x20 || c == 0x7F) && !(keep_newlines && c == '\n')) {
      append_escape(out, "\\x%02x", c);
      ++i;
    } else if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      append_escape(out, "\\u%04x", static_cast<unsigned char>(text[i + 1]));  // C1: U+0080..U+009F
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace shardscope::configs

namespace shardscope::configs {

std::size_t invalid_utf8_bytes(std::string_view text) {
  std::size_t invalid = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_length(text, i);
    invalid += length == 0;
    i += length == 0 ? 1 : length;
  }
  return invalid;
}

std::string shown_text(std::string_view text, ShownTextOptions options) {
  if (!options.keep_newlines) return shown_line(text, options);
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    out += shown_line(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start), options);
    if (end == std::string_view::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace shardscope::configs
