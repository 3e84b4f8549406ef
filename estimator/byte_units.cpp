#include "estimator/byte_units.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

struct NumberAndSuffix {
  double number = 0;
  std::string suffix;  // lower case, spaces removed
};

// Splits "80 GiB" into 80 and "gib"; commas inside the number ("1,000,000") are dropped.
NumberAndSuffix split_number(const std::string& text, const std::string& what,
                             const std::string& expected) {
  std::string compact;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != ',' && c != '_') compact += c;
  const char* begin = compact.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (compact.empty() || end == begin || !std::isfinite(number) || number < 0)
    throw EstimatorError(what + ": '" + text + "' is not " + expected);
  NumberAndSuffix result{number, std::string(end)};
  std::transform(result.suffix.begin(), result.suffix.end(), result.suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

double lookup_suffix(const std::map<std::string, double>& table, const NumberAndSuffix& parsed,
                     const std::string& text, const std::string& what, const std::string& expected) {
  auto it = table.find(parsed.suffix);
  if (it == table.end())
    throw EstimatorError(what + ": unknown unit in '" + text + "'; expected " + expected);
  return parsed.number * it->second;
}

}  // namespace

double parse_byte_size(const std::string& text, const std::string& what) {
  static const std::map<std::string, double> units = {
      {"", 1},         {"b", 1},          {"kb", 1e3},       {"mb", 1e6},        {"gb", 1e9},
      {"tb", 1e12},    {"kib", 1024.0},   {"mib", 1048576.0}, {"gib", kGiB},     {"tib", kGiB * 1024},
      {"k", 1e3},      {"m", 1e6},        {"g", 1e9},        {"t", 1e12}};
  const std::string expected = "a size such as 80GiB, 141GB or 512MiB (GB = 1e9 B, GiB = 2^30 B)";
  return lookup_suffix(units, split_number(text, what, expected), text, what, expected);
}

double parse_count(const std::string& text, const std::string& what) {
  static const std::map<std::string, double> units = {
      {"", 1}, {"k", 1e3}, {"m", 1e6}, {"b", 1e9}, {"g", 1e9}, {"t", 1e12}};
  const std::string expected = "a count such as 7e9, 7B, 6.7b, 125M or 500k";
  const double value = lookup_suffix(units, split_number(text, what, expected), text, what, expected);
  return std::round(value);
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  static const std::map<std::string, double> units = {
      {"gb/s", 1e9},        {"gib/s", kGiB},     {"mb/s", 1e6},  {"mib/s", 1048576.0},
      {"tb/s", 1e12},       {"gbit/s", 1e9 / 8}, {"gbps", 1e9 / 8},  {"b/s", 1}};
  const std::string expected = "a bandwidth such as 450GB/s, 25GiB/s or 200Gbit/s (200Gbps)";
  const double value = lookup_suffix(units, split_number(text, what, expected), text, what, expected);
  if (value <= 0) throw EstimatorError(what + ": bandwidth must be positive, got '" + text + "'");
  return value;
}

double parse_fraction(const std::string& text, const std::string& what) {
  const std::string expected = "a fraction such as 10% or 0.1";
  const NumberAndSuffix parsed = split_number(text, what, expected);
  double value = parsed.number;
  if (parsed.suffix == "%")
    value /= 100.0;
  else if (!parsed.suffix.empty())
    throw EstimatorError(what + ": '" + text + "' is not " + expected);
  if (value >= 1.0) throw EstimatorError(what + ": '" + text + "' must be below 100%");
  return value;
}

double bytes_in(double bytes, ByteUnit unit) { return bytes / (unit == ByteUnit::kGB ? kGB : kGiB); }

const char* unit_name(ByteUnit unit) { return unit == ByteUnit::kGB ? "GB" : "GiB"; }

std::string format_bytes(double bytes, ByteUnit unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f %s", bytes_in(bytes, unit), unit_name(unit));
  return buffer;
}

std::string format_count(double count) {
  char buffer[64];
  if (count >= 1e9)
    std::snprintf(buffer, sizeof buffer, "%.2fB", count / 1e9);
  else if (count >= 1e6)
    std::snprintf(buffer, sizeof buffer, "%.1fM", count / 1e6);
  else if (count >= 1e3)
    std::snprintf(buffer, sizeof buffer, "%.1fk", count / 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.0f", count);
  return buffer;
}

std::string whole_number(double value) {
  char buffer[64];
  if (std::isfinite(value) && std::fabs(value) < 9.2e18)
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
  else
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

std::string formatted(const char* format, double a, double b, double c, double d) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, a, b, c, d);
  return buffer;
}

}  // namespace shardscope::estimator
