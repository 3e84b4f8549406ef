#include "sessions/store.hpp"

#include <filesystem>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "sessions/errors.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store_schema.hpp"
#include "sessions/store_writer.hpp"
#include "tests/sessions/session_fixtures.hpp"

namespace shardscope::sessions {
namespace {

using testing::read_bytes;
using testing::remove_store;
using testing::temp_path;
using testing::write_bytes;

ErrorKind open_error(const std::string& path, StoreOpenOptions options = {}) {
  try {
    Store::open(path, options);
  } catch (const StoreError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "opening " << path << " did not fail";
  return ErrorKind::kInvalidArgument;
}

std::string open_message(const std::string& path) {
  try {
    Store::open(path);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

TEST(Store, CreatesAStampedWalStore) {
  const auto path = temp_path("create");
  {
    Store store = Store::open_or_create(path);
    EXPECT_EQ(store.schema_version(), kSchemaVersion);
    EXPECT_EQ(store.db().query_int("PRAGMA application_id"), kApplicationId);
    EXPECT_EQ(store.db().query_text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(store.db().query_text("SELECT value FROM meta WHERE key = 'application'"), kApplicationName);
    EXPECT_EQ(store.migrations_applied().size(), 12u);  // 0 -> 1 -> ... -> 12 on a fresh file
  }
  Store again = Store::open(path);
  EXPECT_TRUE(again.migrations_applied().empty());
}

// Whoever sends them, credential-looking variables are stored by name only.
TEST(Store, EnvironmentVariablesAreStoredWithCredentialsRedacted) {
  const auto path = temp_path("env");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    RunStart start = testing::sample_run_start("env-run", 1, "{}");
    start.environment_variables = {{"NCCL_DEBUG", "INFO"},
                                   {"WANDB_API_KEY", "wandb-secret-value"},
                                   {"DB_PASS", "db-pass-value"},
                                   {"DATABASE_URL", "postgres://me:url-pass-value@db/x"}};
    writer.write("uid", {start});
    const auto detail = load_session(store, find_session(store, "env-run"));
    const std::vector<std::pair<std::string, std::string>> expected = {{"DATABASE_URL", "<redacted>"},
                                                                         {"DB_PASS", "<redacted>"},
                                                                         {"NCCL_DEBUG", "INFO"},
                                                                         {"WANDB_API_KEY", "<redacted>"}};
    EXPECT_EQ(detail.environment_variables, expected);
    store.checkpoint();
  }
  for (const char* value : {"wandb-secret-value", "db-pass-value", "url-pass-value"})
    EXPECT_EQ(read_bytes(path).find(value), std::string::npos) << value;
  remove_store(path);
}

// Issue 22: a session file holds command lines, configs and logs; other users must not read it.
TEST(Store, ANewSessionFileAndItsWalArePrivateToItsOwner) {
  const auto path = temp_path("private");
  const mode_t old_umask = ::umask(022);  // the usual umask, which alone would give 0644
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("uid", {LogLine{0, 1, LogLevel::kInfo, "a line"}});
    for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
      struct stat st {};
      ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    }
  }
  ::umask(old_umask);
  remove_store(path);
}

TEST(Store, MissingFileIsNotFoundUnlessCreating) {
  EXPECT_EQ(open_error(temp_path("missing")), ErrorKind::kNotFound);
}

TEST(Store, NonSqliteFileIsRejectedUntouched) {
  const auto path = temp_path("text");
  write_bytes(path, "{\"train_batch_size\": 8}\n");
  EXPECT_EQ(open_error(path), ErrorKind::kNotSqlite);
  EXPECT_NE(open_message(path).find("is not an SQLite database"), std::string::npos);
  EXPECT_EQ(read_bytes(path), "{\"train_batch_size\": 8}\n");
  const auto empty = temp_path("empty");
  write_bytes(empty, "");
  EXPECT_EQ(open_error(empty), ErrorKind::kNotSqlite);
}

TEST(Store, ForeignSqliteFileIsRejectedUntouched) {
  const auto path = temp_path("foreign");
  {
    SqliteDb db(path, true, false);
    db.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, caption TEXT); INSERT INTO photos VALUES(1, 'cat')");
  }
  const auto before = read_bytes(path);
  StoreOpenOptions writable;
  writable.create_if_missing = true;  // even a writer must not adopt someone else's database
  EXPECT_EQ(open_error(path, writable), ErrorKind::kForeignDatabase);
  EXPECT_NE(open_message(path).find("photos"), std::string::npos);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(Store, NewerSchemaIsRejectedUntouched) {
  const auto path = temp_path("newer");
  { Store::open_or_create(path).checkpoint(); }
  {
    SqliteDb db(path, false, false);
    db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
    db.exec("PRAGMA journal_mode = DELETE");
  }
  const auto before = read_bytes(path);
  EXPECT_EQ(open_error(path), ErrorKind::kNewerSchema);
  EXPECT_NE(open_message(path).find("newer ShardScope"), std::string::npos);
  EXPECT_EQ(read_bytes(path), before);
}

TEST(Store, TruncatedFileIsCorrupt) {
  const auto path = temp_path("truncated");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("u", testing::sample_steps(2, 200));
    store.checkpoint();
  }
  const auto bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 8192u);
  write_bytes(path, bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(open_error(path), ErrorKind::kCorrupt);
  EXPECT_NE(open_message(path).find("truncated"), std::string::npos);
  write_bytes(path, bytes.substr(0, 50));  // shorter than the header itself
  EXPECT_EQ(open_error(path), ErrorKind::kCorrupt);
}

TEST(Store, CorruptedPagesAreReportedByVerification) {
  const auto path = temp_path("corrupted");
  {
    Store store = Store::open_or_create(path);
    StoreWriter writer(store);
    writer.write("u", testing::sample_steps(2, 300));
    store.checkpoint();
  }
  auto bytes = read_bytes(path);
  const std::size_t page = 4096;
  for (std::size_t i = 2 * page; i < bytes.size() - page; i += 3 * page)
    for (std::size_t j = 0; j < 512; ++j) bytes[i + j] = static_cast<char>(0xA5 ^ j);
  write_bytes(path, bytes);
  StoreOpenOptions verify;
  verify.integrity = IntegrityCheck::kRefuse;
  EXPECT_EQ(open_error(path, verify), ErrorKind::kCorrupt);
}

TEST(Store, OlderSchemaIsUpgradedKeepingItsData) {
  const auto path = temp_path("v1");
  {
    // A file exactly as a version-1 build wrote it: migrations up to 1 only.
    SqliteDb db(path, true, false);
    EXPECT_EQ(migrate_schema(db, 1).size(), 1u);
    db.exec("INSERT INTO sessions(uid, name, status) VALUES('old-uid', 'old run', 'completed')");
    db.exec("INSERT INTO steps(session_id, step, rank, loss) VALUES(1, 0, 0, 4.5)");
    db.exec("INSERT INTO names(id, text) VALUES(1, 'forward')");
    db.exec("INSERT INTO nvtx_ranges(session_id, rank, name_id, domain, start_ns, end_ns, device, stream, step) "
            "VALUES(1, 0, 1, 'shardscope', 10, 20, -1, 7, 0)");
    EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'session_tags'"), 0);
  }
  Store store = Store::open(path);
  ASSERT_EQ(store.migrations_applied().size(), 11u);
  EXPECT_EQ(store.migrations_applied()[0], "1 -> 2: add session tags");
  EXPECT_EQ(store.migrations_applied()[1], "2 -> 3: add kernel launch details and copy throughput to activities");
  EXPECT_EQ(store.migrations_applied()[2],
            "3 -> 4: add session origin, scalar series and comm summaries (imported and watched runs)");
  EXPECT_EQ(store.migrations_applied()[3], "4 -> 5: record the writer (host, pid, process start) of each session");
  EXPECT_EQ(store.migrations_applied()[4],
            "5 -> 6: add the hosts of a run with their clock offsets, and the ranks' environment variables");
  EXPECT_EQ(store.migrations_applied()[5], "6 -> 7: add the collective flight records and the run doctor's findings");
  EXPECT_EQ(store.migrations_applied()[6], "7 -> 8: add the tune runs and their trials (shardscope tune)");
  EXPECT_EQ(store.migrations_applied()[7], "8 -> 9: add the CPU operator details of profiler traces (shapes, ids, "
                                           "forward/backward links) to ranges");
  EXPECT_EQ(store.migrations_applied()[8], "9 -> 10: add per-step, per-rank, per-timer and per-collective "
                                           "aggregates (fast reads of large sessions)");
  EXPECT_EQ(store.migrations_applied()[9], "10 -> 11: add the profiled window's summaries per device, kernel name "
                                           "and step (fast profile reads)");
  EXPECT_EQ(store.migrations_applied()[10], "11 -> 12: add each step's band across ranks (min, median, max) of every "
                                            "steps column (fast band reads)");
  EXPECT_EQ(store.schema_version(), 12);
  const auto sessions = list_sessions(store);
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].name, "old run");
  EXPECT_EQ(sessions[0].origin, "");  // recorded before origins existed: ShardScope's own
  EXPECT_EQ(load_curve(store, sessions[0].id, Metric::kLoss).at(0).value, 4.5);
  StoreWriter writer(store);  // the new table works on the upgraded file
  RunStart start = testing::sample_run_start("old run", 1, "{}");
  writer.write("old-uid", {start});
  SessionFilter filter;
  filter.tag = "baseline";
  EXPECT_EQ(list_sessions(store, filter).size(), 1u);
  HostReport host;  // and the hosts table of version 6
  host.host = "node-b";
  host.node_rank = 1;
  host.clock_offset_s = 0.5;
  writer.write("old-uid", {host});
  const auto hosts = load_session_hosts(store, sessions[0].id);
  ASSERT_EQ(hosts.size(), 2u);  // node-a of the RunStart's ranks, node-b of the report
  EXPECT_EQ(hosts[0].host, "node-b");
  EXPECT_EQ(hosts[0].clock_offset_s, 0.5);
  const auto old_range = load_nvtx(store, sessions[0].id, 0);  // a version-1 range: no operator details
  ASSERT_EQ(old_range.size(), 1u);
  EXPECT_EQ(old_range[0].name, "forward");
  EXPECT_FALSE(old_range[0].has_op_details());
  NvtxRange op{"aten::mm", kCpuOpDomain, 30, 40, -1, 7, 0};  // and the columns of version 9
  op.shapes = "[[4,4],[4,4]]";
  op.forward_op_id = 3;
  writer.write("old-uid", {NvtxBatch{0, {op}}});
  const auto ranges = load_nvtx(store, sessions[0].id, 0);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1].shapes, "[[4,4],[4,4]]");
  EXPECT_EQ(ranges[1].forward_op_id, 3);
  EXPECT_EQ(ranges[1].external_id, std::nullopt);
}

TEST(Store, OlderSchemaOpenedReadOnlyIsAnErrorNotAnUpgrade) {
  const auto path = temp_path("v1ro");
  {
    SqliteDb db(path, true, false);
    migrate_schema(db, 1);
  }
  StoreOpenOptions read_only;
  read_only.read_only = true;
  EXPECT_EQ(open_error(path, read_only), ErrorKind::kStorage);
}

std::string plan(SqliteDb& db, const std::string& sql) {
  Statement s(db, ("EXPLAIN QUERY PLAN " + sql).c_str());
  std::string out;
  while (s.step()) out += s.text(3) + "\n";
  return out;
}

// The queries of the reader must be index range scans, never full scans of the big tables.
TEST(Store, ReaderQueriesUseIndexes) {
  const auto path = temp_path("plans");
  Store store = Store::open_or_create(path);
  auto& db = store.db();
  const auto curve = plan(db, "SELECT step, AVG(loss) FROM steps WHERE session_id = 1 AND loss IS NOT NULL GROUP BY step");
  EXPECT_NE(curve.find("USING PRIMARY KEY (session_id=?)"), std::string::npos) << curve;
  const auto rank = plan(db, "SELECT * FROM steps INDEXED BY steps_by_rank WHERE session_id = 1 AND rank = 2 "
                            "ORDER BY step");
  EXPECT_NE(rank.find("steps_by_rank"), std::string::npos) << rank;
  const auto timer = plan(db, "SELECT step, MAX(ms) FROM timers WHERE session_id = 1 AND name_id = 3 GROUP BY step");
  EXPECT_NE(timer.find("PRIMARY KEY (session_id=? AND name_id=?)"), std::string::npos) << timer;
  const auto kernels = plan(db, "SELECT * FROM activities WHERE session_id = 1 AND rank = 0 ORDER BY start_ns");
  EXPECT_NE(kernels.find("activities_by_session"), std::string::npos) << kernels;
  const auto comms = plan(db, "SELECT rank, SUM(latency_us) FROM comms WHERE session_id = 1 GROUP BY rank");
  EXPECT_NE(comms.find("comms_by_session"), std::string::npos) << comms;
  const auto hosts = plan(db, "SELECT 1 FROM ranks WHERE session_id = 1 AND host = 'x'");
  EXPECT_EQ(hosts.find("SCAN ranks"), std::string::npos) << hosts;
  for (const auto* p : {&curve, &rank, &timer, &kernels, &comms})
    EXPECT_EQ(p->find("SCAN "), std::string::npos) << *p;
}

// The collector checkpoints on a connection of its own (collector.cpp): with the WAL watched, a
// commit leaves its frames in the WAL (no automatic checkpoint on the writer's thread), another
// connection's passive checkpoint copies them all, and the next transaction starts the WAL over.
TEST(Store, AWatchedWalIsCopiedByAnotherConnectionAndThenStartsOver) {
  const auto path = temp_path("wal_watch");
  Store store = Store::open_or_create(path);
  SqliteDb& db = store.db();
  db.watch_wal();
  auto fill = [&](int from, int rows) {
    Transaction t(db);
    Statement insert(db, "INSERT INTO logs(session_id, rank, level, text) VALUES(1, 0, 0, ?)");
    for (int i = from; i < from + rows; ++i) insert.bind(1, std::to_string(i) + std::string(900, 'x')).run();
    t.commit();
  };
  fill(0, 6000);  // about 1,400 pages: past SQLite's automatic checkpoint (1,000 frames)
  const std::int64_t frames = db.wal_frames();
  EXPECT_GT(frames, 1000);
  fill(6000, 10);
  EXPECT_GT(db.wal_frames(), frames) << "the writer's commit checkpointed the WAL itself";
  SqliteDb checkpointer(path, false, false);
  EXPECT_TRUE(checkpointer.checkpoint_passive());
  fill(6010, 10);
  EXPECT_LT(db.wal_frames(), 100) << "the WAL did not start over after a complete checkpoint";
  EXPECT_EQ(db.query_int("SELECT COUNT(*) FROM logs"), 6020);
  remove_store(path);
}

CollectiveMark mark(int rank, std::int64_t sequence, double entered_at, std::optional<double> left_at) {
  CollectiveMark m;
  m.rank = rank;
  m.sequence = sequence;
  m.op = "all_reduce";
  m.entered_at = entered_at;
  m.left_at = left_at;
  return m;
}

// StoreWriter writes an enter mark followed by its own leave as one row; anything else (another
// rank's or another collective's leave, a leave in a later batch) as before.
TEST(StoreWriter, AnEnterMarkAndItsLeaveMakeOneRowAndOthersKeepTheirOwn) {
  const auto path = temp_path("marks");
  Store store = Store::open_or_create(path);
  StoreWriter writer(store);
  writer.write("uid-marks", {mark(0, 1, 10.0, std::nullopt), mark(0, 1, 10.0, 10.5),   // merged
                             mark(0, 2, 11.0, std::nullopt), mark(1, 2, 11.1, 11.6),    // another rank's leave
                             mark(1, 3, 12.0, std::nullopt), mark(1, 4, 12.2, 12.7),    // another collective's
                             mark(0, 5, 13.0, std::nullopt)});
  writer.write("uid-marks", {mark(0, 5, 13.0, 13.5), mark(0, 2, 11.0, 11.4)});        // leaves that come later
  Statement rows(store.db(), "SELECT rank, sequence, entered_at, coalesce(left_at, -1) FROM collectives "
                             "ORDER BY rank, sequence");
  std::string got;
  while (rows.step())
    got += std::to_string(rows.int64(0)) + "/" + std::to_string(rows.int64(1)) + " " +
           std::to_string(rows.real(2)).substr(0, 4) + "-" + std::to_string(rows.real(3)).substr(0, 4) + "\n";
  EXPECT_EQ(got, "0/1 10.0-10.5\n0/2 11.0-11.4\n0/5 13.0-13.5\n1/2 11.1-11.6\n1/3 12.0--1.0\n1/4 12.2-12.7\n");
  remove_store(path);
}

}  // namespace
}  // namespace shardscope::sessions
