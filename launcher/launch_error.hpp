#pragma once
// The one error type of the launcher: what was wrong before any rank started (a bad flag value, a
// host that is not this machine, no GPU, a busy port), with the remedy in the message.

#include <stdexcept>
#include <string>

namespace shardscope::launcher {

class LaunchError : public std::runtime_error {
 public:
  enum class Kind {
    kUsage,        ///< flags that contradict each other or do not parse
    kEnvironment,  ///< the machine cannot run what was asked (no GPU, busy port, unwritable folder)
    kConfig,       ///< the DeepSpeed config named in the train arguments has errors
  };
  LaunchError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

/// A LaunchError of kind kUsage (flags that contradict each other or do not parse).
inline LaunchError usage_error(const std::string& message) { return LaunchError(LaunchError::Kind::kUsage, message); }

}  // namespace shardscope::launcher
