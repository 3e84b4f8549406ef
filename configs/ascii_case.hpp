#pragma once
// Case folding for the names DeepSpeed compares without case (optimizer and scheduler types,
// suggestions for misspelled keys). ASCII only, as Python's str.lower() is for these names.

#include <algorithm>
#include <cctype>
#include <string>

namespace shardscope::configs {

inline std::string ascii_lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace shardscope::configs
