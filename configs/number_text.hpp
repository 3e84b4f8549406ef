#pragma once
// The number a flag's or key's text starts with, as std::stod reads it, without its exceptions:
// one reading for every parser of "20m", "2%", "3e-5" and plain numbers.

#include <cstddef>
#include <string>

namespace shardscope::configs {

struct LeadingNumber {
  double value = 0;
  std::size_t length = 0;  ///< characters of `text` the number took; 0 when it starts with none
  /// The whole text is the number.
  bool whole(const std::string& text) const { return length > 0 && length == text.size(); }
};

LeadingNumber leading_number(const std::string& text);

}  // namespace shardscope::configs
