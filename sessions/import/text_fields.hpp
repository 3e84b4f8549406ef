#pragma once
// Small exact parsers for the numbers DeepSpeed and Python print (no locale, no regex: a line of
// outside text is read in one pass, whatever its length).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope::sessions {

/// The whole text as a double (Python's float repr, "nan", "inf" too); nullopt otherwise.
std::optional<double> parse_real(std::string_view text);
/// The whole text as a base-10 integer; nullopt otherwise (or on overflow).
std::optional<std::int64_t> parse_integer(std::string_view text);
/// `text` without leading and trailing spaces, tabs and carriage returns.
std::string_view trim(std::string_view text);
/// True when `text` starts with `prefix`.
inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
/// The value after "key=" up to the next ',' or end ("step=12, skipped=0" -> "12" for "step").
std::optional<std::string_view> field_after(std::string_view text, std::string_view key);
/// A number with DeepSpeed's decimal prefix and a unit: "4.48 K", "9.22 MFLOPS", "485.9 us",
/// "2.18 KMACs", "1.2 B" (params: billions) -> the plain value. nullopt when it is not one.
std::optional<double> parse_prefixed_number(std::string_view text, std::string_view unit);
/// A size as comms_logger's convert_size prints it ("2.25 KB", "0B"; powers of 1024).
std::optional<double> parse_binary_size(std::string_view text);
/// A parsed size as whole bytes, rounded; nullopt when it is negative, NaN or beyond int64 (outside
/// text can print "4.0YB" or "1e45GB", and converting those is undefined behaviour).
std::optional<std::int64_t> whole_bytes(double bytes);

}  // namespace shardscope::sessions
