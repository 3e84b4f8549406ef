#include "sessions/import/text_fields.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "sessions/import/import_error.hpp"

namespace shardscope::sessions {

std::string import_location(const std::string& file, std::size_t line) {
  return line ? file + ":" + std::to_string(line) : file;
}

std::optional<double> parse_real(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  const std::string copy(text);
  if (copy == "nan" || copy == "NaN") return std::nan("");
  if (copy == "inf" || copy == "Infinity") return HUGE_VAL;
  if (copy == "-inf" || copy == "-Infinity") return -HUGE_VAL;
  for (char c : copy)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  const std::string copy(text);
  for (std::size_t i = 0; i < copy.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(copy[i])) && !(i == 0 && copy[i] == '-' && copy.size() > 1))
      return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(copy.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return value;
}

std::string_view trim(std::string_view text) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> field_after(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    const bool boundary = at == 0 || text[at - 1] == ' ' || text[at - 1] == ',' || text[at - 1] == '/';
    if (boundary && at + key.size() < text.size() && text[at + key.size()] == '=') {
      const auto start = at + key.size() + 1;
      const auto end = text.find(',', start);
      return trim(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    }
    at += key.size();
  }
  return std::nullopt;
}

namespace {

std::optional<double> decimal_prefix(char c) {
  switch (c) {
    case 'T': return 1e12;
    case 'G': case 'B': return 1e9;  // params_to_string prints billions as "B"
    case 'M': return 1e6;
    case 'K': return 1e3;
    case 'm': return 1e-3;
    case 'u': return 1e-6;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<double> parse_prefixed_number(std::string_view text, std::string_view unit) {
  text = trim(text);
  const auto space = text.find(' ');
  const auto number = parse_real(text.substr(0, space));
  if (!number) return std::nullopt;
  if (space == std::string_view::npos) return number;
  std::string_view rest = trim(text.substr(space + 1));
  if (rest.size() >= unit.size() && rest.substr(rest.size() - unit.size()) == unit)
    rest.remove_suffix(unit.size());
  if (rest.empty()) return number;
  if (rest.size() != 1) return std::nullopt;
  const auto scale = decimal_prefix(rest[0]);
  if (!scale) return std::nullopt;
  return *number * *scale;
}

std::optional<double> parse_binary_size(std::string_view text) {
  text = trim(text);
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  for (int i = 8; i >= 0; --i) {
    const std::string_view unit = kUnits[i];
    if (text.size() <= unit.size() || text.substr(text.size() - unit.size()) != unit) continue;
    const auto number = parse_real(trim(text.substr(0, text.size() - unit.size())));
    if (!number) return std::nullopt;
    return *number * std::pow(1024.0, i);
  }
  return std::nullopt;
}

std::optional<std::int64_t> whole_bytes(double bytes) {
  if (!(bytes >= 0 && bytes < 9.2e18)) return std::nullopt;
  return static_cast<std::int64_t>(bytes + 0.5);
}

}  // namespace shardscope::sessions
