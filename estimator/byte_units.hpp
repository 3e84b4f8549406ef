#pragma once
// Byte sizes, counts and bandwidths as users write them ("80GiB", "141GB", "7B", "5e8", "450GB/s")
// and as the estimator prints them. GB means 1e9 bytes and GiB 2^30 bytes, always: DeepSpeed's
// estimator prints 2^30 units labelled "GB", which is one source of the confusion we avoid.

#include <string>

namespace shardscope::estimator {

inline constexpr double kGB = 1e9;
inline constexpr double kGiB = 1073741824.0;  // 2^30

/// Units for printing memory sizes.
enum class ByteUnit { kGB, kGiB };

/// Parses a size in bytes: "80GiB", "80 GB", "512MiB", "1.5TB", "123456" (plain bytes); throws
/// EstimatorError naming `what` (e.g. "--gpu-mem") when the text is not a size.
double parse_byte_size(const std::string& text, const std::string& what);

/// Parses a count: "7e9", "7B", "6.7b", "125M", "500k", "1,000,000"; throws EstimatorError.
double parse_count(const std::string& text, const std::string& what);

/// Parses a bandwidth in bytes per second: "450GB/s", "25 GiB/s", "200Gbit/s", "400Gb/s".
double parse_bandwidth(const std::string& text, const std::string& what);

/// Parses a fraction: "10%", "0.1"; must lie in [0, 1).
double parse_fraction(const std::string& text, const std::string& what);

/// Bytes in the given unit, e.g. 26.25e9 -> 26.25 for kGB.
double bytes_in(double bytes, ByteUnit unit);

/// "GB" or "GiB".
const char* unit_name(ByteUnit unit);

/// "26.25 GB" with two decimals in the given unit.
std::string format_bytes(double bytes, ByteUnit unit);

/// A count in engineering form: 6738415616 -> "6.74B", 32000000 -> "32.0M".
std::string format_count(double count);

/// A whole number as decimal digits ("6738415616"), or in %.6g form when it lies beyond a 64-bit
/// integer or is not finite, so no caller ever casts an out-of-range double (undefined behaviour).
std::string whole_number(double value);

/// `format` (printf, up to four %-conversions of doubles) filled in: the estimate's explanations.
std::string formatted(const char* format, double a, double b = 0, double c = 0, double d = 0);

}  // namespace shardscope::estimator
