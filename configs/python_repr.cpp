#include "configs/python_repr.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

// The shortest "%.Ne" text that reads back to `value`, split into its digits and exponent.
void shortest_digits(double value, std::string& digits, int& exponent) {
  char text[40];
  for (int precision = 0; precision < 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*e", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  const std::string s = text;
  const auto e = s.find('e');
  exponent = std::atoi(s.c_str() + e + 1);
  digits.clear();
  for (std::size_t i = 0; i < e; ++i)
    if (s[i] >= '0' && s[i] <= '9') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
}

std::string python_repr_string(const std::string& s) {
  // repr() picks single quotes unless the text holds one and no double quote.
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = use_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + quote;
}

std::string python_repr(const nlohmann::json& value);

std::string python_repr_items(const nlohmann::json& value) {
  std::string out;
  if (value.is_array()) {
    for (const auto& item : value) out += (out.empty() ? "" : ", ") + python_repr(item);
    return "[" + out + "]";
  }
  for (const auto& [key, item] : value.items())
    out += (out.empty() ? "" : ", ") + python_repr_string(key) + ": " + python_repr(item);
  return "{" + out + "}";
}

std::string python_repr(const nlohmann::json& value) {
  return value.is_string() ? python_repr_string(value.get<std::string>()) : python_str(value);
}

bool is_numeric(const nlohmann::json& v) { return v.is_number() || v.is_boolean(); }
double numeric(const nlohmann::json& v) { return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>(); }

bool python_equal_json(const nlohmann::json& a, const nlohmann::json& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.is_number_integer() && b.is_number_integer()) return a.get<std::int64_t>() == b.get<std::int64_t>();
    return numeric(a) == numeric(b);
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!python_equal_json(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, item] : a.items())
      if (!b.contains(key) || !python_equal_json(item, b[key])) return false;
    return true;
  }
  return a.type() == b.type() && a == b;
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  std::string digits;
  int exponent = 0;
  shortest_digits(std::fabs(value), digits, exponent);
  std::string out = value < 0 ? "-" : "";
  const int n = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char e[16];  // room for any int exponent, so GCC's range analysis sees no truncation
    std::snprintf(e, sizeof e, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + e;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  if (exponent >= n - 1) return out + digits + std::string(static_cast<std::size_t>(exponent - n + 1), '0') + ".0";
  return out + digits.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
         digits.substr(static_cast<std::size_t>(exponent + 1));
}

std::string python_str(const nlohmann::json& value) {
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number()) return python_float_repr(value.get<double>());
  if (value.is_string()) return value.get<std::string>();
  return python_repr_items(value);
}

std::string python_str(const ConfigNode& node) { return python_str(node_to_json(node)); }

bool python_equal(const ConfigNode& node, const nlohmann::json& value) {
  return python_equal_json(node_to_json(node), value);
}

}  // namespace shardscope::configs
