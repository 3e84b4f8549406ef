#include "sessions/store_schema.hpp"

#include "sessions/activity_stats.hpp"
#include "sessions/build_info.hpp"
#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store_bands.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::sessions {
namespace {

// Version 1, the original schema. Frozen: a change to the tables is a new migration below, never an
// edit here, because files written by older builds were created by exactly this text.
//
// Indexes: steps, timers and ranks are WITHOUT ROWID tables clustered on (session_id, ...), so a
// session's rows are contiguous and a curve is one range scan of the primary key. High-volume
// names (kernels, NVTX ranges, timers) are interned in `names` as Nsight Systems' StringIds are,
// which keeps a 100k-kernel window a few MB.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  uid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'running',
  started_at REAL,
  ended_at REAL,
  wall_time_s REAL,
  world_size INTEGER,
  command_line TEXT,
  config_json TEXT,
  config_hash TEXT,
  environment_json TEXT,
  shardscope_version TEXT,
  git_hash TEXT,
  peak_tflops_per_gpu REAL
);
CREATE INDEX sessions_by_started ON sessions(started_at);
CREATE INDEX sessions_by_config_hash ON sessions(config_hash);
CREATE INDEX sessions_by_name ON sessions(name);

CREATE TABLE ranks(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  local_rank INTEGER,
  host TEXT,
  pid INTEGER,
  device TEXT,
  exit_code INTEGER,
  PRIMARY KEY(session_id, rank)
) WITHOUT ROWID;
CREATE INDEX ranks_by_host ON ranks(host);

CREATE TABLE names(
  id INTEGER PRIMARY KEY,
  text TEXT NOT NULL UNIQUE
);

CREATE TABLE steps(
  session_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  wall_time REAL,
  step_time_ms REAL,
  loss REAL,
  lr REAL,
  loss_scale REAL,
  grad_norm REAL,
  skipped INTEGER NOT NULL DEFAULT 0,
  samples_per_s REAL,
  tokens_per_s REAL,
  tflops REAL,
  mem_allocated INTEGER,
  mem_reserved INTEGER,
  mem_peak INTEGER,
  PRIMARY KEY(session_id, step, rank)
) WITHOUT ROWID;
CREATE INDEX steps_by_rank ON steps(session_id, rank, step);

CREATE TABLE timers(
  session_id INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  ms REAL NOT NULL,
  PRIMARY KEY(session_id, name_id, step, rank)
) WITHOUT ROWID;

CREATE TABLE comms(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  op TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  latency_us REAL NOT NULL,
  algbw_gbps REAL,
  busbw_gbps REAL,
  group_size INTEGER
);
CREATE INDEX comms_by_session ON comms(session_id, rank, step);

CREATE TABLE activities(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  device INTEGER,
  stream INTEGER,
  bytes INTEGER,
  step INTEGER
);
CREATE INDEX activities_by_session ON activities(session_id, rank, start_ns);

CREATE TABLE nvtx_ranges(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  domain TEXT,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  device INTEGER,
  stream INTEGER,
  step INTEGER
);
CREATE INDEX nvtx_by_session ON nvtx_ranges(session_id, rank, start_ns);

CREATE TABLE logs(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  time REAL,
  level INTEGER NOT NULL,
  text TEXT NOT NULL
);
CREATE INDEX logs_by_session ON logs(session_id, rank, id);
)sql";

// Version 2 adds tags (W&B and MLflow users label runs and filter by label).
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE session_tags(
  session_id INTEGER NOT NULL,
  tag TEXT NOT NULL,
  PRIMARY KEY(session_id, tag)
) WITHOUT ROWID;
CREATE INDEX session_tags_by_tag ON session_tags(tag, session_id);
)sql";

// Version 3 adds the kernel launch details the CUPTI collector records (grid, block, registers,
// correlation id) and memcpy/memset throughput. Nullable: rows of older files have none.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE activities ADD COLUMN grid_x INTEGER;
ALTER TABLE activities ADD COLUMN grid_y INTEGER;
ALTER TABLE activities ADD COLUMN grid_z INTEGER;
ALTER TABLE activities ADD COLUMN block_x INTEGER;
ALTER TABLE activities ADD COLUMN block_y INTEGER;
ALTER TABLE activities ADD COLUMN block_z INTEGER;
ALTER TABLE activities ADD COLUMN registers_per_thread INTEGER;
ALTER TABLE activities ADD COLUMN correlation_id INTEGER;
ALTER TABLE activities ADD COLUMN throughput_gbps REAL;
)sql";

// Version 4 holds runs that ShardScope's engine did not record (DeepSpeed runs imported or
// watched, issue 20): where a session came from, the scalar series that have no StepMetrics
// column (eval loss, eigenvalues, flops-profiler figures), and DeepSpeed's aggregate comms table.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE sessions ADD COLUMN origin TEXT;
ALTER TABLE sessions ADD COLUMN origin_json TEXT;
CREATE INDEX sessions_by_origin ON sessions(origin);

CREATE TABLE series(
  session_id INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY(session_id, name_id, step, rank)
) WITHOUT ROWID;

CREATE TABLE comm_summaries(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  op TEXT NOT NULL,
  message_bytes INTEGER NOT NULL,
  count INTEGER NOT NULL,
  total_latency_ms REAL NOT NULL,
  avg_latency_ms REAL,
  algbw_gbps REAL,
  busbw_gbps REAL
);
CREATE INDEX comm_summaries_by_session ON comm_summaries(session_id, rank);
)sql";

// Version 5 records who writes each session (host, pid, process start), so a session whose writer
// was killed can be told from one still running (session_liveness.hpp). NULL in older rows.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE sessions ADD COLUMN writer_host TEXT;
ALTER TABLE sessions ADD COLUMN writer_pid INTEGER;
ALTER TABLE sessions ADD COLUMN writer_start TEXT;
)sql";

void create_v1(SqliteDb& db) { db.exec(kSchemaV1); }
void add_foreign_runs_v4(SqliteDb& db) { db.exec(kSchemaV4); }

// Version 6 records the hosts of a run (multi-node launches): each host's node rank, its clock
// against the collector's host (so per-rank timelines of different hosts line up) and its build;
// and the environment variables the launcher gave every rank (credential-looking ones redacted).
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE hosts(
  session_id INTEGER NOT NULL,
  host TEXT NOT NULL,
  node_rank INTEGER,
  clock_offset_s REAL,
  clock_uncertainty_s REAL,
  shardscope_version TEXT,
  git_hash TEXT,
  PRIMARY KEY(session_id, host)
) WITHOUT ROWID;
ALTER TABLE sessions ADD COLUMN environment_variables_json TEXT;
)sql";

void add_hosts_v6(SqliteDb& db) { db.exec(kSchemaV6); }

// Version 7 holds the run doctor's material (issue 28): the ranks' collective flight records, the
// latest marks of each rank only (the writer keeps a bounded window, as the engine's ring does),
// and the findings the doctor made of them. `grp` because GROUP is an SQL keyword.
constexpr const char* kSchemaV7 = R"sql(
CREATE TABLE collectives(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  grp TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  op TEXT NOT NULL,
  bytes INTEGER,
  dtype TEXT,
  group_ranks TEXT,
  step INTEGER,
  phase TEXT,
  tag TEXT,
  entered_at REAL NOT NULL,
  left_at REAL,
  PRIMARY KEY(session_id, rank, grp, sequence)
) WITHOUT ROWID;

CREATE TABLE findings(
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  severity TEXT NOT NULL,
  first_step INTEGER,
  last_step INTEGER,
  ranks TEXT,
  summary TEXT NOT NULL,
  evidence TEXT,
  suggested_fix TEXT,
  found_at REAL
);
CREATE INDEX findings_by_session ON findings(session_id, id);
)sql";

void add_doctor_v7(SqliteDb& db) { db.exec(kSchemaV7); }

// Version 8 holds `shardscope tune` runs (issue 29): one row per tune run (what it searched and
// how), one per candidate it decided on (pruned by the estimator, or run as a trial whose session
// is named in session_uid). A trial row is written 'running' before its launch and updated when it
// ends, so a tuner killed mid-trial resumes by running exactly the unfinished rows again.
constexpr const char* kSchemaV8 = R"sql(
CREATE TABLE tune_runs(
  uid TEXT PRIMARY KEY,
  created_at REAL NOT NULL,
  fingerprint TEXT NOT NULL,
  request_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running',
  ended_at REAL
) WITHOUT ROWID;

CREATE TABLE tune_trials(
  run_uid TEXT NOT NULL,
  candidate_key TEXT NOT NULL,
  trial INTEGER NOT NULL,
  name TEXT NOT NULL,
  params_json TEXT NOT NULL,
  status TEXT NOT NULL,
  predicted_bytes REAL,
  measured_peak_bytes INTEGER,
  metric_value REAL,
  tokens_per_s REAL,
  samples_per_s REAL,
  step_time_ms REAL,
  session_uid TEXT,
  exit_code INTEGER,
  message TEXT,
  started_at REAL,
  ended_at REAL,
  PRIMARY KEY(run_uid, candidate_key)
) WITHOUT ROWID;
CREATE INDEX tune_trials_by_order ON tune_trials(run_uid, trial);
)sql";

void add_tune_v8(SqliteDb& db) { db.exec(kSchemaV8); }

// Version 9 keeps what a PyTorch profiler trace records of each CPU operator (issue 34): the ranges
// of domain 'cpu_op' carry the input shapes (interned in `names`, as they repeat every step),
// Kineto's external id, autograd's sequence number and forward thread, and on a backward op the
// external id of its forward op (the trace's fwdbwd flow). Nullable: other ranges have none.
constexpr const char* kSchemaV9 = R"sql(
ALTER TABLE nvtx_ranges ADD COLUMN shapes_id INTEGER;
ALTER TABLE nvtx_ranges ADD COLUMN external_id INTEGER;
ALTER TABLE nvtx_ranges ADD COLUMN sequence_number INTEGER;
ALTER TABLE nvtx_ranges ADD COLUMN forward_thread_id INTEGER;
ALTER TABLE nvtx_ranges ADD COLUMN forward_op_id INTEGER;
)sql";

void add_cpu_op_details_v9(SqliteDb& db) { db.exec(kSchemaV9); }

// Version 10 adds the pre-aggregates the readers of a 1,024-rank x 10,000-step session need
// (issue 35; store_stats.hpp), filled here from the file's rows once, then by the writer.
void add_stats_v10(SqliteDb& db) {
  db.exec(stats_schema_sql());
  fill_stats_from_rows(db);
}
// Version 11 adds the profiled window's summaries (issue 35 item 3; activity_stats.hpp): per device
// the busy and communication time, per kernel name the calls and time, per step the records.
void add_activity_stats_v11(SqliteDb& db) {
  db.exec(activity_stats_schema_sql());
  fill_activity_stats_from_rows(db);
}
// Version 12 adds each step's band across ranks of every steps column (issue 35; store_bands.hpp),
// so the Sessions page reads a band a step instead of the rows of every step whose ranks differ.
void add_step_bands_v12(SqliteDb& db) {
  db.exec(step_bands_schema_sql());
  fill_step_bands_from_rows(db);
}
void add_activity_details_v3(SqliteDb& db) { db.exec(kSchemaV3); }
void add_tags_v2(SqliteDb& db) { db.exec(kSchemaV2); }
void add_session_writer_v5(SqliteDb& db) { db.exec(kSchemaV5); }

void stamp(SqliteDb& db, int version) {
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  db.exec("PRAGMA user_version = " + std::to_string(version));
  Statement put(db, "INSERT INTO meta(key, value) VALUES(?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  put.bind(1, std::string("application")).bind(2, std::string(kApplicationName)).run();
  put.bind(1, std::string("schema_version")).bind(2, std::to_string(version)).run();
  put.bind(1, std::string("last_written_by")).bind(2, build_info().version).run();
}

}  // namespace

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> migrations = {
      {0, 1, "create the session store (sessions, ranks, steps, timers, comms, activities, NVTX, logs)",
       create_v1},
      {1, 2, "add session tags", add_tags_v2},
      {2, 3, "add kernel launch details and copy throughput to activities", add_activity_details_v3},
      {3, 4, "add session origin, scalar series and comm summaries (imported and watched runs)",
       add_foreign_runs_v4},
      {4, 5, "record the writer (host, pid, process start) of each session", add_session_writer_v5},
      {5, 6, "add the hosts of a run with their clock offsets, and the ranks' environment variables", add_hosts_v6},
      {6, 7, "add the collective flight records and the run doctor's findings", add_doctor_v7},
      {7, 8, "add the tune runs and their trials (shardscope tune)", add_tune_v8},
      {8, 9, "add the CPU operator details of profiler traces (shapes, ids, forward/backward links) to ranges",
       add_cpu_op_details_v9},
      {9, 10, "add per-step, per-rank, per-timer and per-collective aggregates (fast reads of large sessions)",
       add_stats_v10},
      {10, 11, "add the profiled window's summaries per device, kernel name and step (fast profile reads)",
       add_activity_stats_v11},
      {11, 12, "add each step's band across ranks (min, median, max) of every steps column (fast band reads)",
       add_step_bands_v12},
  };
  return migrations;
}

std::vector<std::string> migrate_schema(SqliteDb& db, int target_version) {
  std::vector<std::string> applied;
  int version = static_cast<int>(db.query_int("PRAGMA user_version"));
  for (const auto& migration : schema_migrations()) {
    if (migration.from_version != version || migration.to_version > target_version) continue;
    Transaction transaction(db);
    // Re-read inside the write lock: another process may have upgraded the file meanwhile.
    if (db.query_int("PRAGMA user_version") != version) {
      version = static_cast<int>(db.query_int("PRAGMA user_version"));
      continue;
    }
    migration.apply(db);
    stamp(db, migration.to_version);
    transaction.commit();
    version = migration.to_version;
    applied.push_back(std::to_string(migration.from_version) + " -> " +
                      std::to_string(migration.to_version) + ": " + migration.description);
  }
  if (version != target_version)
    throw StoreError(ErrorKind::kStorage, "session store " + db.path() + ": no migration path from schema " +
                                              std::to_string(version) + " to " +
                                              std::to_string(target_version));
  return applied;
}

}  // namespace shardscope::sessions
