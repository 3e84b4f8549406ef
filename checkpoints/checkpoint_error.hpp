#pragma once
// The typed errors of the checkpoints library. A CheckpointError names the file (or folder) and
// says what is wrong with it and what to do; `kind` tells a front end whether the input could not
// be read at all (a usage problem: exit code 2) or was read and found damaged or inconsistent
// (a finding: exit code 1).

#include <stdexcept>
#include <string>

namespace shardscope::checkpoints {

enum class CheckpointErrorKind {
  kUnreadable,  ///< missing, not a regular file, not a checkpoint at all, outside the folder
  kDamaged,     ///< read, but truncated, inconsistent, or not what the layout says
};

class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(CheckpointErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  CheckpointErrorKind kind() const { return kind_; }

 private:
  CheckpointErrorKind kind_;
};

/// A damaged-file error: "<file>: <what>".
inline CheckpointError damaged(const std::string& file, const std::string& what) {
  return CheckpointError(CheckpointErrorKind::kDamaged, file + ": " + what);
}

/// An unreadable-input error: "<file>: <what>".
inline CheckpointError unreadable(const std::string& file, const std::string& what) {
  return CheckpointError(CheckpointErrorKind::kUnreadable, file + ": " + what);
}

}  // namespace shardscope::checkpoints
