#pragma once
// What the tune library throws for input it cannot use: a --space flag, an autotuning block, a
// --resume that does not match. The message names the flag or key, the value and the remedy.

#include <stdexcept>
#include <string>

namespace shardscope::tune {

class TuneError : public std::runtime_error {
 public:
  explicit TuneError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace shardscope::tune
