#pragma once
// Internal to the sessions library: the schema of the session store and its migrations.
// docs/sessions.md ("Store schema") documents the tables; this file is the source of truth.

#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::sessions {

class SqliteDb;

/// PRAGMA application_id of every session store: "SSDB". Foreign SQLite files carry another.
inline constexpr std::int32_t kApplicationId = 0x53534442;
/// meta.application of every session store (a second check for files with application_id unset).
inline constexpr const char* kApplicationName = "shardscope-sessions";
/// The schema version this build writes (PRAGMA user_version).
inline constexpr int kSchemaVersion = 12;

/// One step of the upgrade path; `apply` runs inside the migration's transaction.
struct Migration {
  int from_version;
  int to_version;
  const char* description;
  void (*apply)(SqliteDb& db);
};

/// Every migration, ordered; 0 -> 1 creates the original schema from an empty file.
const std::vector<Migration>& schema_migrations();

/// Upgrades `db` from its user_version to `target_version`, one transaction per step, so a crash
/// leaves the file at a consistent version. Stamps application_id and meta. Returns the steps run.
std::vector<std::string> migrate_schema(SqliteDb& db, int target_version = kSchemaVersion);

}  // namespace shardscope::sessions
