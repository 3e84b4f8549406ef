#include "sessions/sqlite_db.hpp"

#include <cmath>

#include <sqlite3.h>

#include "sessions/errors.hpp"

namespace shardscope::sessions {

namespace {

ErrorKind kind_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT: return ErrorKind::kCorrupt;
    case SQLITE_NOTADB: return ErrorKind::kNotSqlite;
    case SQLITE_CANTOPEN: return ErrorKind::kNotFound;
    default: return ErrorKind::kStorage;
  }
}

std::string remedy(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kCorrupt:
      return "; the file is corrupted or truncated. ShardScope never repairs a store in place: restore "
             "it from a copy, or recover what is left with `sqlite3 FILE .recover`";
    case ErrorKind::kNotSqlite: return "; the file is not an SQLite database";
    default: return "";
  }
}

// The start of a statement on one line, for messages: a failing 400-character SELECT is noise.
std::string short_sql(const std::string& sql) {
  std::string out;
  for (char c : sql) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
    if (out.size() >= 60) return out + "...";
  }
  return out;
}

}  // namespace

Statement::Statement(SqliteDb& db, const char* sql) : db_(&db) {
  const int rc = sqlite3_prepare_v3(db.handle(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc == SQLITE_OK) return;
  const std::string detail = sqlite3_errmsg(db.handle());
  // Our own statements only fail to prepare when the file's tables are not the ones its schema
  // version promises: another tool altered or dropped them.
  if (detail.rfind("no such ", 0) == 0)
    throw StoreError(ErrorKind::kCorrupt, "session store " + db.path() + ": its tables are damaged (SQLite: " +
                                              detail + ", in `" + short_sql(sql) +
                                              "`); another tool changed the file. Restore it from a copy");
  db.fail(rc, "preparing `" + short_sql(sql) + "`");
}

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (std::isnan(value)) return bind_null(index);
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind(int index, const std::optional<double>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind(int index, const std::optional<std::int64_t>& value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
  sqlite3_reset(stmt_);
  db_->fail(rc, "running `" + short_sql(sql) + "`");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Statement::int64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::real(int column) const {
  return is_null(column) ? NAN : sqlite3_column_double(stmt_, column);
}

std::optional<double> Statement::optional_real(int column) const {
  if (is_null(column)) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return sqlite3_column_int64(stmt_, column);
}

std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }

std::string Statement::column_name(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name ? name : "";
}

Statement::ColumnKind Statement::column_kind(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER: return ColumnKind::kInteger;
    case SQLITE_FLOAT: return ColumnKind::kReal;
    case SQLITE_NULL: return ColumnKind::kNull;
    default: return ColumnKind::kText;
  }
}

SqliteDb::SqliteDb(const std::string& path, bool create, bool read_only) : path_(path) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  // NOMUTEX: a connection belongs to one thread (see the class comment), so skip SQLite's locks.
  flags |= SQLITE_OPEN_NOMUTEX;
  // Not SQLITE_OPEN_NOFOLLOW: it refuses a link in any component of the path (a home folder
  // reached through one), not only the file's own name, which Store::open checks.
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(kind_of(rc), "cannot open session store " + path + ": " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

void SqliteDb::exec(const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    fail(rc, "running `" + short_sql(sql) + "`: " + message);
  }
}

std::int64_t SqliteDb::query_int(const std::string& sql) {
  Statement s(*this, sql.c_str());
  return s.step() ? s.int64(0) : 0;
}

std::string SqliteDb::query_text(const std::string& sql) {
  Statement s(*this, sql.c_str());
  return s.step() ? s.text(0) : std::string();
}

std::int64_t SqliteDb::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

void SqliteDb::watch_wal() {
  // A WAL hook replaces the automatic checkpoint (sqlite3_wal_autocheckpoint is one such hook).
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int frames) {
        static_cast<SqliteDb*>(self)->wal_frames_ = frames;
        return SQLITE_OK;
      },
      this);
}

bool SqliteDb::checkpoint_passive() {
  // The PRAGMA rather than sqlite3_wal_checkpoint_v2: compiling it reads the schema, which opens
  // the WAL; on a connection that has read nothing yet, the C call finds no WAL and copies nothing
  // (it reports -1 frames).
  Statement s(*this, "PRAGMA wal_checkpoint(PASSIVE)");
  if (!s.step()) return false;
  const bool busy = s.int64(0) != 0;
  const std::int64_t frames = s.int64(1), copied = s.int64(2);
  return !busy && frames >= 0 && copied == frames;
}

void SqliteDb::fail(int rc, const std::string& context) const {
  const ErrorKind kind = kind_of(rc);
  std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw StoreError(kind, "session store " + path_ + ": " + context + " failed: " + detail + remedy(kind));
}

// Inside another transaction (an import writes its traces batch by batch in the one transaction
// of the whole import) a Transaction is a savepoint of it: its rollback undoes only its own rows.
Transaction::Transaction(SqliteDb& db) : db_(db), nested_(sqlite3_get_autocommit(db.handle()) == 0) {
  db_.exec(nested_ ? "SAVEPOINT shardscope_nested" : "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (done_) return;
  sqlite3_exec(db_.handle(), nested_ ? "ROLLBACK TO shardscope_nested; RELEASE shardscope_nested" : "ROLLBACK",
               nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec(nested_ ? "RELEASE shardscope_nested" : "COMMIT");
  done_ = true;
}

}  // namespace shardscope::sessions
