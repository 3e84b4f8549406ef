#include "sessions/errors.hpp"

namespace shardscope::sessions {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotSqlite: return "not_sqlite";
    case ErrorKind::kForeignDatabase: return "foreign_database";
    case ErrorKind::kNewerSchema: return "newer_schema";
    case ErrorKind::kCorrupt: return "corrupt";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kAmbiguous: return "ambiguous";
    case ErrorKind::kStorage: return "storage";
    case ErrorKind::kProtocol: return "protocol";
    case ErrorKind::kUnreachable: return "unreachable";
    case ErrorKind::kInvalidArgument: return "invalid_argument";
  }
  return "unknown";
}

}  // namespace shardscope::sessions
