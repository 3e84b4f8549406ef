#pragma once
// The exit code of a sessions error, one rule for `shardscope sessions` and the CLI's edge (watch
// --db, train --session): a session file that is missing, foreign, newer, damaged or a link, an
// unknown session or an unusable argument is a bad input (the README's 2); a write that fails, a
// frame that breaks the protocol or a collector out of reach is a failure of the work (1).

#include "app/cli/arg_parser.hpp"
#include "sessions/errors.hpp"

namespace shardscope::app {

/// kExitUsage for a bad input, kExitFindings for a failure of the work itself.
inline int session_error_exit_code(const sessions::SessionsError& error) {
  using sessions::ErrorKind;
  const ErrorKind kind = error.kind();
  const bool work_failed = kind == ErrorKind::kStorage || kind == ErrorKind::kProtocol || kind == ErrorKind::kUnreachable;
  return work_failed ? kExitFindings : kExitUsage;
}

}  // namespace shardscope::app
