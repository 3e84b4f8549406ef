#pragma once
// Typed errors of the sessions library. Front ends catch SessionsError at the edge; the kind says
// what went wrong so the CLI can map it to an exit code and the GUI to a dialog.

#include <stdexcept>
#include <string>

namespace shardscope::sessions {

enum class ErrorKind {
  kNotSqlite,         ///< the file is not an SQLite database at all
  kForeignDatabase,   ///< an SQLite database, but not a ShardScope session store
  kNewerSchema,       ///< written by a newer ShardScope; this one will not touch it
  kCorrupt,           ///< truncated or damaged; SQLite reported corruption
  kNotFound,          ///< the file, or the named session, does not exist
  kAmbiguous,         ///< a session name matched more than one session
  kStorage,           ///< any other SQLite or file-system failure (disk full, read-only, busy)
  kProtocol,          ///< a frame on the wire broke the event protocol
  kUnreachable,       ///< a rank could not reach the collector
  kInvalidArgument,   ///< a caller passed something the API cannot use
};

/// Short stable name of an error kind ("not_sqlite", "newer_schema", ...).
const char* error_kind_name(ErrorKind kind);

class SessionsError : public std::runtime_error {
 public:
  SessionsError(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  /// What kind of failure this is.
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

/// Raised when opening or reading a store fails (kinds kNotSqlite .. kStorage).
class StoreError : public SessionsError {
 public:
  using SessionsError::SessionsError;
};

/// Raised by the codec when bytes on the wire are not a valid frame.
class ProtocolError : public SessionsError {
 public:
  explicit ProtocolError(const std::string& message)
      : SessionsError(ErrorKind::kProtocol, message) {}
};

/// Raised by TcpEventSink when the collector cannot be reached or goes away.
class CollectorUnreachableError : public SessionsError {
 public:
  explicit CollectorUnreachableError(const std::string& message)
      : SessionsError(ErrorKind::kUnreachable, message) {}
};

/// Nobody accepted the TCP connection at all (the collector may not be listening yet).
class CollectorNotListeningError : public CollectorUnreachableError {
 public:
  using CollectorUnreachableError::CollectorUnreachableError;
};

}  // namespace shardscope::sessions
