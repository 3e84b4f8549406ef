#pragma once
// Errors of the DeepSpeed importers: the file (and line, or byte offset) that is wrong, what is
// wrong with it, and what to do. Front ends show the message; the CLI exits with code 2.

#include <string>

#include "sessions/errors.hpp"

namespace shardscope::sessions {

class ImportError : public SessionsError {
 public:
  explicit ImportError(const std::string& message) : SessionsError(ErrorKind::kInvalidArgument, message) {}
};

/// "file:line: what" (line 0: "file: what").
std::string import_location(const std::string& file, std::size_t line);

}  // namespace shardscope::sessions
