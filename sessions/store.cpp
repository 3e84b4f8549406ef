#include "sessions/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "configs/input_file.hpp"
#include "sessions/build_info.hpp"
#include "sessions/errors.hpp"
#include "sessions/session_liveness.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store_schema.hpp"

namespace shardscope::sessions {

// The oldest schema a read-only open reads without an upgrade (9: before the pre-aggregates).
constexpr int kOldestReadableSchema = 9;

struct Store::Impl {
  std::unique_ptr<SqliteDb> db;
  int schema_version = 0;
  std::vector<std::string> migrations_applied;
  std::string damage;
  bool read_only = false;
  int marked_interrupted = 0;
};

namespace {

std::uint32_t big_endian(const unsigned char* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

long long file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
}

std::string printable_prefix(const unsigned char* data, std::size_t size) {
  std::string out;
  for (std::size_t i = 0; i < size && i < 16; ++i) {
    const unsigned char c = data[i];
    if (c >= 32 && c < 127) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string table_list(SqliteDb& db) {
  Statement s(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 6");
  std::string out;
  for (int n = 0; s.step(); ++n) {
    if (n > 0) out += ", ";
    out += n < 5 ? s.text(0) : std::string("...");
  }
  return out.empty() ? "none" : out;
}

// Decides whether the open file is ours, new, foreign or too new. Reads only; writes nothing.
// Returns the file's schema version (0 for a brand-new empty database).
int validate_identity(SqliteDb& db, bool may_initialize) {
  const std::string& path = db.path();
  const auto app_id = static_cast<std::int32_t>(db.query_int("PRAGMA application_id"));
  const int version = static_cast<int>(db.query_int("PRAGMA user_version"));
  const auto tables = db.query_int("SELECT count(*) FROM sqlite_master");
  if (app_id == 0 && version == 0 && tables == 0) {
    if (may_initialize) return 0;
    throw StoreError(ErrorKind::kForeignDatabase,
                     path + " is an empty SQLite database, not a ShardScope session store yet; "
                            "a run (shardscope launch/train) creates the store");
  }
  if (app_id != kApplicationId) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08x", static_cast<unsigned>(app_id));
    throw StoreError(ErrorKind::kForeignDatabase,
                     path + " is an SQLite database but not a ShardScope session store (application_id " +
                         id + ", tables: " + table_list(db) + "); it was left untouched. Pass the "
                         "sessions file a run wrote (--db)");
  }
  if (version > kSchemaVersion)
    throw StoreError(ErrorKind::kNewerSchema,
                     path + " has session schema version " + std::to_string(version) + " but ShardScope " +
                         build_info().version + " reads versions up to " + std::to_string(kSchemaVersion) +
                         "; it was written by a newer ShardScope. Upgrade ShardScope to read it (the file "
                         "was not modified)");
  if (version >= 1 && db.query_text("SELECT value FROM meta WHERE key = 'application'") != kApplicationName)
    throw StoreError(ErrorKind::kForeignDatabase,
                     path + " carries ShardScope's application_id but its meta table does not name "
                            "it a session store; it was left untouched");
  return version;
}

void apply_connection_settings(SqliteDb& db, const StoreOpenOptions& options) {
  db.exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout_ms));
  if (options.read_only) return;
  // WAL: readers never block the collector and the collector never blocks them. NORMAL
  // synchronous is durable against process crashes (SIGKILL); only power loss can drop the last
  // commits, never corrupt the file.
  const std::string mode = db.query_text("PRAGMA journal_mode = WAL");
  if (mode != "wal")
    throw StoreError(ErrorKind::kStorage, "session store " + db.path() + ": cannot switch to WAL mode (got '" +
                                              mode + "'); is the file on a network file system?");
  db.exec("PRAGMA synchronous = NORMAL");
}

}  // namespace

bool check_sqlite_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw StoreError(ErrorKind::kNotFound, "cannot read session store " + path);
  unsigned char header[100] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got == 0) return false;
  static const char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  const std::size_t compare = got < 16 ? got : 16;
  if (std::memcmp(header, kMagic, compare) != 0)
    throw StoreError(ErrorKind::kNotSqlite, path + " is not an SQLite database (it starts with \"" +
                                                printable_prefix(header, got) +
                                                "\"); pass the sessions file a run wrote (--db)");
  if (got < 100)
    throw StoreError(ErrorKind::kCorrupt, path + " is truncated: " + std::to_string(got) +
                                              " bytes, shorter than SQLite's 100-byte header");
  std::uint32_t page_size = big_endian(header + 16, 2);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || (page_size & (page_size - 1)) != 0)
    throw StoreError(ErrorKind::kCorrupt, path + " is corrupted: invalid page size " + std::to_string(page_size));
  // The in-header page count is valid only when the two change counters agree (SQLite file format
  // section 1.3.7); with a non-empty WAL the main file may legitimately lag behind it.
  const bool count_valid = big_endian(header + 24, 4) == big_endian(header + 92, 4);
  const long long expected = static_cast<long long>(big_endian(header + 28, 4)) * page_size;
  const long long wal = file_size(path + "-wal");
  const long long actual = file_size(path);
  if (count_valid && wal <= 0 && actual < expected)
    throw StoreError(ErrorKind::kCorrupt, path + " is truncated: its header describes " + std::to_string(expected) +
                                              " bytes but the file has " + std::to_string(actual) +
                                              "; restore it from a copy");
  return true;
}

namespace {

// A new session file is private (0600): it holds command lines, configs and logs, and SQLite gives
// its -wal and -shm files the database file's mode. Losing a creation race to another writer is fine.
void create_private_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  if (errno != EEXIST)
    throw StoreError(ErrorKind::kStorage, "cannot create session store " + path + ": " + std::strerror(errno));
}

std::string link_target(const std::string& path) {
  char target[PATH_MAX] = {};
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string("?");
}

// A session file holds command lines, configs and logs. Written through a symbolic link it would
// land wherever the link points (a dangling one created the file at its target with mode 0644), so
// a writer refuses any link; a reader follows one that resolves, and is told plainly about one that
// loops or points nowhere instead of "no session store".
void refuse_links(const std::string& path, bool writable) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return;
  const std::string target = link_target(path);
  struct stat resolved {};
  const bool resolves = ::stat(path.c_str(), &resolved) == 0;
  const int error = errno;
  if (resolves && !writable) return;
  std::string what = "a symbolic link to " + target;
  std::string remedy = "pass the session file's own path";
  if (!resolves && error == ELOOP) what = "a symbolic link that loops (" + target + ")";
  else if (!resolves) what += ", which does not exist";
  if (resolves) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real) remedy += " (--db " + std::string(real) + ")";
    std::free(real);
  } else {
    remedy += ", or remove the link and give a new file name";
  }
  throw StoreError(ErrorKind::kInvalidArgument,
                   path + " is " + what + "; session files are " + (writable ? "written" : "read") +
                       " only at their own path, never through a link (it could put the file, with its command "
                       "lines and configs, somewhere else with another mode): " + remedy);
}

// A FIFO or a device would block or feed SQLite forever; a directory is not a file at all.
void check_file_type(const std::string& path) {
  const std::string kind = configs::non_regular_file_kind(path);
  if (!kind.empty())
    throw StoreError(ErrorKind::kNotSqlite, path + " is " + kind + ", not a session store file; pass the "
                                                "sessions file a run wrote (--db)");
}

// quick_check reads every page: 1.6 s for 100k steps x 8 ranks, a minute for 10,000 steps x 1,024
// ranks. Above this size an open checks every table but the bulk ones (their pages are still
// verified by SQLite as a reader reads them: a damaged page fails that read with kCorrupt).
constexpr long long kFullCheckBytes = 256ll << 20;
constexpr const char* kBulkTables =
    "'steps', 'timers', 'comms', 'activities', 'nvtx_ranges', 'logs', 'collectives', 'series'";

// The statements of the check: one over the whole file, or one per table outside the bulk ones.
std::vector<std::string> quick_check_statements(SqliteDb& db) {
  const long long wal = file_size(db.path() + "-wal");
  if (file_size(db.path()) + (wal > 0 ? wal : 0) <= kFullCheckBytes) return {"PRAGMA quick_check(1)"};
  std::vector<std::string> out;
  Statement tables(db, (std::string("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN (") +
                        kBulkTables + ") ORDER BY name").c_str());
  while (tables.step()) out.push_back("PRAGMA quick_check(\"" + tables.text(0) + "\")");
  return out;
}

// SQLite's first complaint about the file on one line, or "" when quick_check finds none.
std::string quick_check(SqliteDb& db) {
  std::string result = "ok";
  try {
    for (const auto& sql : quick_check_statements(db)) {
      Statement s(db, sql.c_str());
      result = s.step() ? s.text(0) : std::string("no answer");
      if (result != "ok") break;
    }
  } catch (const StoreError& e) {
    if (e.kind() != ErrorKind::kCorrupt && e.kind() != ErrorKind::kNotSqlite) throw;  // busy, I/O: not damage
    result = e.what();
  }
  if (result == "ok") return "";
  for (char& c : result)
    if (c == '\n' || c == '\r') c = ' ';
  return result.size() > 200 ? result.substr(0, 200) + "..." : result;
}

}  // namespace

Store Store::open(const std::string& path, const StoreOpenOptions& options) {
  refuse_links(path, !options.read_only);
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && options.create_if_missing && !options.read_only) {
    create_private_file(path);
    exists = ::stat(path.c_str(), &st) == 0;
  }
  if (exists) check_file_type(path);
  if (!exists && (!options.create_if_missing || options.read_only))
    throw StoreError(ErrorKind::kNotFound, "no session store at " + path +
                                               " (check --db; a run creates it on its first event)");
  const bool has_content = exists && check_sqlite_header(path);
  // Only writers adopt an empty file; a reader that did would race the writer creating it.
  const bool may_initialize = !options.read_only && options.create_if_missing;
  if (exists && !has_content && !may_initialize)
    throw StoreError(ErrorKind::kNotSqlite, path + " is an empty file, not a session store");

  auto impl = std::make_unique<Impl>();
  impl->read_only = options.read_only;
  impl->db = std::make_unique<SqliteDb>(path, options.create_if_missing, options.read_only);
  impl->db->exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout_ms));
  if (has_content && options.integrity != IntegrityCheck::kSkip) impl->damage = quick_check(*impl->db);
  if (!impl->damage.empty()) {
    if (options.integrity == IntegrityCheck::kRefuse)
      throw StoreError(ErrorKind::kCorrupt, path + " is corrupted (SQLite quick_check: " + impl->damage +
                                                "); nothing was written to it. Restore it from a copy, or "
                                                "recover what is left with `sqlite3 FILE .recover`");
    impl->read_only = true;  // never write into a damaged file
    impl->db = std::make_unique<SqliteDb>(path, false, true);
  }
  StoreOpenOptions effective = options;
  effective.read_only = impl->read_only;
  open_validated(*impl, effective, may_initialize && impl->damage.empty());
  return Store(std::move(impl));
}

Store Store::open_or_create(const std::string& path) {
  StoreOpenOptions options;
  options.create_if_missing = true;
  return open(path, options);
}

void Store::open_validated(Impl& impl, const StoreOpenOptions& options, bool may_initialize) {
  SqliteDb& db = *impl.db;
  const std::string& path = db.path();
  const int version = validate_identity(db, may_initialize);
  apply_connection_settings(db, options);
  // A read-only file one schema behind is read as it is: the readers compute from the rows what
  // the newer schema's pre-aggregates hold (store_stats.hpp), only slower.
  if (version < kSchemaVersion && !(options.read_only && version >= kOldestReadableSchema)) {
    if (options.read_only)
      throw StoreError(ErrorKind::kStorage, path + " has schema version " + std::to_string(version) +
                                                " and needs an upgrade to " + std::to_string(kSchemaVersion) +
                                                "; open it writable once (any `shardscope sessions` command does)");
    impl.migrations_applied = migrate_schema(db);
  }
  impl.schema_version = static_cast<int>(db.query_int("PRAGMA user_version"));
  if (!options.read_only) impl.marked_interrupted = mark_abandoned_sessions(db);
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const { return impl_->db->path(); }
int Store::schema_version() const { return impl_->schema_version; }
const std::vector<std::string>& Store::migrations_applied() const { return impl_->migrations_applied; }
SqliteDb& Store::db() { return *impl_->db; }

void Store::check_integrity() {
  const std::string result = quick_check(*impl_->db);
  if (!result.empty())
    throw StoreError(ErrorKind::kCorrupt, path() + " is corrupted (SQLite quick_check: " + result +
                                              "); restore it from a copy");
}

const std::string& Store::damage() const { return impl_->damage; }
bool Store::read_only() const { return impl_->read_only; }
int Store::sessions_marked_interrupted() const { return impl_->marked_interrupted; }

std::string damage_warning(const Store& store) {
  if (store.damage().empty()) return "";
  return store.path() + " is corrupted (SQLite quick_check: " + store.damage() +
         "); opened read-only, so what is shown may be incomplete. Restore it from a copy, or recover "
         "what is left with `sqlite3 FILE .recover`";
}

void Store::checkpoint() { impl_->db->exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

}  // namespace shardscope::sessions
