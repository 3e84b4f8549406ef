#pragma once
// The session store: one SQLite file holding many sessions (docs/sessions.md, "Store").
// Opening validates the file before anything is written: a non-SQLite, foreign, newer, truncated
// or corrupted file raises a StoreError of the matching kind and is left byte-for-byte untouched.
//
// Threading: a Store is one SQLite connection and belongs to one thread. The collector writes
// through its own Store; the GUI opens another on its reader thread. WAL mode lets readers run
// while the writer commits, and neither blocks the other.

#include <memory>
#include <string>
#include <vector>

namespace shardscope::sessions {

class SqliteDb;

/// What opening does with SQLite's PRAGMA quick_check, which reads every page of the file.
enum class IntegrityCheck {
  kRefuse,  ///< a damaged file is refused (StoreError kCorrupt): writers and the CLI
  kWarn,    ///< a damaged file is opened read-only and damage() names the damage: the GUI
  kSkip,    ///< no check (a live view re-reading a file it already checked)
};

struct StoreOpenOptions {
  bool create_if_missing = false;  ///< writers create (Store::open_or_create); readers do not
  bool read_only = false;          ///< never writes; schema 9 is read as it is, older is an error
  IntegrityCheck integrity = IntegrityCheck::kRefuse;  ///< runs before anything is written
  int busy_timeout_ms = 5000;      ///< how long to wait for another writer's lock
};

class Store {
 public:
  /// Opens, validates and (when older and writable) upgrades the store at `path`.
  static Store open(const std::string& path, const StoreOpenOptions& options = {});
  /// Opens the store at `path` for writing as open() does, creating it when it is missing: what
  /// writers do (the collector, a run's session file, an import).
  static Store open_or_create(const std::string& path);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  /// The file this store reads.
  const std::string& path() const;
  /// The schema version of the open file (always kSchemaVersion unless opened read-only).
  int schema_version() const;
  /// Migration steps applied when this store was opened ("1 -> 2: add session tags").
  const std::vector<std::string>& migrations_applied() const;
  /// Runs PRAGMA quick_check; throws StoreError(kCorrupt) with SQLite's first complaint.
  void check_integrity();
  /// SQLite's complaint when the file was opened damaged under IntegrityCheck::kWarn; "" otherwise.
  const std::string& damage() const;
  /// True when the store cannot be written (asked for, or a damaged file under kWarn).
  bool read_only() const;
  /// Running sessions marked "interrupted" at open because their writer is gone (writable opens).
  int sessions_marked_interrupted() const;
  /// Copies the WAL back into the main file (the collector calls this at shutdown).
  void checkpoint();

  /// The connection, for the library's own readers and writers (sqlite_db.hpp is internal).
  SqliteDb& db();

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  /// Identity, settings, migrations and the liveness sweep of an opened connection.
  static void open_validated(Impl& impl, const StoreOpenOptions& options, bool may_initialize);
  std::unique_ptr<Impl> impl_;
};

/// The one-line warning a front end prints for a store opened damaged (empty when it is not).
std::string damage_warning(const Store& store);

/// Checks the 100-byte SQLite header of `path` without opening it through SQLite: throws
/// StoreError(kNotSqlite) for another format and (kCorrupt) for a file shorter than its header says.
/// Returns false when the file is empty (a brand-new store), true otherwise.
bool check_sqlite_header(const std::string& path);

}  // namespace shardscope::sessions
