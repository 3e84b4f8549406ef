#pragma once
// Internal to the sessions library: a thin RAII layer over the SQLite C API. Public headers only
// forward-declare SqliteDb; nothing outside sessions/*.cpp includes this file (tests may).

#include <cstdint>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace shardscope::sessions {

class SqliteDb;

/// A prepared statement; reset and rebound for each use. Moves, never copies.
class Statement {
 public:
  Statement() = default;
  Statement(SqliteDb& db, const char* sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);  ///< NaN is stored as NULL
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, const std::optional<double>& value);
  Statement& bind(int index, const std::optional<std::int64_t>& value);
  Statement& bind_null(int index);

  /// Advances; true while a row is available, false when done. Throws StoreError on failure.
  bool step();
  /// Runs a statement that returns no rows, then resets it for reuse.
  void run();
  void reset();

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  double real(int column) const;
  std::optional<double> optional_real(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  std::string text(int column) const;
  /// Result shape, for generic exports.
  int column_count() const;
  std::string column_name(int column) const;
  enum class ColumnKind { kNull, kInteger, kReal, kText };
  ColumnKind column_kind(int column) const;

 private:
  SqliteDb* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

/// One connection. Not thread-safe: each thread opens its own (WAL lets them run concurrently).
class SqliteDb {
 public:
  /// Opens `path`; `create` adds SQLITE_OPEN_CREATE, `read_only` opens SQLITE_OPEN_READONLY.
  SqliteDb(const std::string& path, bool create, bool read_only);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  /// Runs one or more statements without results.
  void exec(const std::string& sql);
  /// The first column of the first row of `sql` as an integer (PRAGMAs, COUNTs).
  std::int64_t query_int(const std::string& sql);
  std::string query_text(const std::string& sql);
  std::int64_t last_insert_rowid() const;
  /// Turns SQLite's automatic checkpoint off and counts the WAL's frames after each commit
  /// (wal_frames()) instead: a writer that checkpoints on another connection (the collector).
  void watch_wal();
  /// Frames in the WAL after this connection's last commit (watch_wal() must have run).
  std::int64_t wal_frames() const { return wal_frames_; }
  /// One passive checkpoint (never waits for a lock): true when every frame of the WAL was copied.
  /// Throws StoreError when SQLite fails it.
  bool checkpoint_passive();
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  /// Throws the StoreError that SQLite's result code `rc` maps to, with `context` in the message.
  [[noreturn]] void fail(int rc, const std::string& context) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::int64_t wal_frames_ = 0;
};

/// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless commit() ran; inside an open
/// transaction, a savepoint of it (released by commit(), rolled back to otherwise).
class Transaction {
 public:
  explicit Transaction(SqliteDb& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  SqliteDb& db_;
  bool nested_ = false;
  bool done_ = false;
};

}  // namespace shardscope::sessions
