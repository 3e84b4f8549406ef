#include "sessions/session_reader.hpp"

#include <set>
#include <variant>

#include <nlohmann/json.hpp>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::sessions {
namespace {

struct MetricColumn {
  Metric metric;
  const char* name;
  const char* column;
  RankAggregate aggregate;
};

const MetricColumn kMetrics[] = {
    {Metric::kLoss, "loss", "loss", RankAggregate::kMean},
    {Metric::kLr, "lr", "lr", RankAggregate::kMean},
    {Metric::kLossScale, "loss_scale", "loss_scale", RankAggregate::kMean},
    {Metric::kGradNorm, "grad_norm", "grad_norm", RankAggregate::kMean},
    {Metric::kStepTime, "step_time_ms", "step_time_ms", RankAggregate::kMax},
    {Metric::kSamplesPerS, "samples_per_s", "samples_per_s", RankAggregate::kSum},
    {Metric::kTokensPerS, "tokens_per_s", "tokens_per_s", RankAggregate::kSum},
    {Metric::kTflops, "tflops", "tflops", RankAggregate::kMean},
    {Metric::kMemAllocated, "mem_allocated", "mem_allocated", RankAggregate::kMax},
    {Metric::kMemReserved, "mem_reserved", "mem_reserved", RankAggregate::kMax},
    {Metric::kMemPeak, "mem_peak", "mem_peak", RankAggregate::kMax},
};

const MetricColumn& column_of(Metric metric) {
  for (const auto& m : kMetrics)
    if (m.metric == metric) return m;
  return kMetrics[0];
}

const char* sql_aggregate(RankAggregate aggregate) {
  switch (aggregate) {
    case RankAggregate::kMean: return "AVG";
    case RankAggregate::kMax: return "MAX";
    case RankAggregate::kSum: return "SUM";
    case RankAggregate::kMin: return "MIN";
  }
  return "AVG";
}

using Param = std::variant<std::int64_t, double, std::string>;

void bind_all(Statement& s, const std::vector<Param>& params) {
  for (std::size_t i = 0; i < params.size(); ++i)
    std::visit([&](const auto& v) { s.bind(static_cast<int>(i + 1), v); }, params[i]);
}

std::vector<std::string> strings_of(SqliteDb& db, const char* sql, std::int64_t id) {
  Statement s(db, sql);
  s.bind(1, id);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

constexpr const char* kInfoColumns =
    "s.id, s.uid, s.name, s.status, s.started_at, s.ended_at, s.wall_time_s, s.world_size, s.config_hash, "
    "s.shardscope_version, s.git_hash, (SELECT MIN(step) FROM steps WHERE session_id = s.id), "
    "(SELECT MAX(step) FROM steps WHERE session_id = s.id), s.origin";

SessionInfo read_info(SqliteDb& db, Statement& s) {
  SessionInfo info;
  info.id = s.int64(0);
  info.uid = s.text(1);
  info.name = s.text(2);
  info.status = s.text(3);
  info.started_at = s.optional_real(4);
  info.ended_at = s.optional_real(5);
  info.wall_time_s = s.optional_real(6);
  info.world_size = static_cast<int>(s.int64(7));
  info.config_hash = s.text(8);
  info.shardscope_version = s.text(9);
  info.git_hash = s.text(10);
  info.first_step = s.optional_int64(11);
  info.last_step = s.optional_int64(12);
  info.origin = s.text(13);
  info.hosts = strings_of(db, "SELECT DISTINCT host FROM ranks WHERE session_id = ? AND host IS NOT NULL "
                              "AND host != '' ORDER BY host", info.id);
  info.tags = strings_of(db, "SELECT tag FROM session_tags WHERE session_id = ? ORDER BY tag", info.id);
  return info;
}

/// Reads `SELECT * FROM steps` rows (column order of the steps table).
std::vector<StepMetrics> read_step_rows(Statement& s) {
  std::vector<StepMetrics> out;
  while (s.step()) {
    StepMetrics m;
    m.step = s.int64(1);
    m.rank = static_cast<int>(s.int64(2));
    m.wall_time = s.optional_real(3).value_or(0);
    m.step_time_ms = s.optional_real(4);
    m.loss = s.optional_real(5);
    m.lr = s.optional_real(6);
    m.loss_scale = s.optional_real(7);
    m.grad_norm = s.optional_real(8);
    m.skipped = s.int64(9) != 0;
    m.samples_per_s = s.optional_real(10);
    m.tokens_per_s = s.optional_real(11);
    m.tflops = s.optional_real(12);
    m.mem_allocated_bytes = s.optional_int64(13);
    m.mem_reserved_bytes = s.optional_int64(14);
    m.mem_peak_bytes = s.optional_int64(15);
    out.push_back(m);
  }
  return out;
}


/// The distinct ranks of a session in `table`, by a skip-scan of its (session_id, rank, ...) index:
/// one probe per rank instead of a read of every row (a 100k-step, 8-rank session has 800k rows).
std::vector<int> distinct_ranks(SqliteDb& db, const std::string& table, const std::string& index,
                                std::int64_t session_id) {
  const std::string from = " FROM " + table + " INDEXED BY " + index + " WHERE session_id = ?1";
  Statement s(db, ("WITH RECURSIVE r(rank) AS (SELECT MIN(rank)" + from +
                   " UNION ALL SELECT (SELECT MIN(rank)" + from + " AND rank > r.rank) FROM r WHERE r.rank IS NOT NULL)"
                   " SELECT rank FROM r WHERE rank IS NOT NULL").c_str());
  s.bind(1, session_id);
  std::vector<int> out;
  while (s.step()) out.push_back(static_cast<int>(s.int64(0)));
  return out;
}

[[noreturn]] void not_found(Store& store, const std::string& what) {
  throw StoreError(ErrorKind::kNotFound, "no session " + what + " in " + store.path() +
                                             " (`shardscope sessions list --db " + store.path() + "` shows them)");
}

}  // namespace

const std::vector<Metric>& all_metrics() {
  static const std::vector<Metric> metrics = [] {
    std::vector<Metric> v;
    for (const auto& m : kMetrics) v.push_back(m.metric);
    return v;
  }();
  return metrics;
}

const char* metric_name(Metric metric) { return column_of(metric).name; }

Metric metric_from_name(const std::string& name) {
  std::string names;
  for (const auto& m : kMetrics) {
    if (name == m.name) return m.metric;
    names += (names.empty() ? "" : ", ") + std::string(m.name);
  }
  throw SessionsError(ErrorKind::kInvalidArgument, "unknown metric '" + name + "' (one of: " + names + ")");
}

RankAggregate default_aggregate(Metric metric) { return column_of(metric).aggregate; }

std::vector<SessionInfo> list_sessions(Store& store, const SessionFilter& f) {
  std::string sql = std::string("SELECT ") + kInfoColumns + " FROM sessions s WHERE 1";
  std::vector<Param> params;
  if (!f.name_contains.empty()) {
    sql += " AND instr(lower(s.name), lower(?)) > 0";
    params.emplace_back(f.name_contains);
  }
  if (f.started_after) {
    sql += " AND s.started_at >= ?";
    params.emplace_back(*f.started_after);
  }
  if (f.started_before) {
    sql += " AND s.started_at < ?";
    params.emplace_back(*f.started_before);
  }
  if (!f.config_hash_prefix.empty()) {
    const std::string n = "?" + std::to_string(params.size() + 1);
    sql += " AND substr(s.config_hash, 1, length(" + n + ")) = " + n;
    params.emplace_back(f.config_hash_prefix);
  }
  if (!f.version.empty()) {
    const std::string n = "?" + std::to_string(params.size() + 1);
    sql += " AND (s.shardscope_version = " + n + " OR substr(s.shardscope_version, 1, length(" + n + ") + 1) = " +
           n + " || '.')";
    params.emplace_back(f.version);
  }
  if (!f.host.empty()) {
    sql += " AND EXISTS(SELECT 1 FROM ranks r WHERE r.session_id = s.id AND r.host = ?)";
    params.emplace_back(f.host);
  }
  if (!f.tag.empty()) {
    sql += " AND EXISTS(SELECT 1 FROM session_tags t WHERE t.session_id = s.id AND t.tag = ?)";
    params.emplace_back(f.tag);
  }
  if (!f.status.empty()) {
    sql += " AND s.status = ?";
    params.emplace_back(f.status);
  }
  sql += " ORDER BY coalesce(s.started_at, 0) DESC, s.id DESC";
  if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
  Statement s(store.db(), sql.c_str());
  bind_all(s, params);
  std::vector<SessionInfo> out;
  while (s.step()) out.push_back(read_info(store.db(), s));
  return out;
}

std::int64_t find_session(Store& store, const std::string& selector) {
  SqliteDb& db = store.db();
  if (!selector.empty() && selector.find_first_not_of("0123456789") == std::string::npos && selector.size() < 12) {
    Statement s(db, "SELECT id FROM sessions WHERE id = ?");
    s.bind(1, static_cast<std::int64_t>(std::stoll(selector)));
    if (s.step()) return s.int64(0);
  }
  Statement by_uid(db, "SELECT id, uid FROM sessions WHERE uid = ?1 OR (length(?1) >= 6 AND "
                       "substr(uid, 1, length(?1)) = ?1) LIMIT 2");
  by_uid.bind(1, selector);
  std::vector<std::int64_t> ids;
  while (by_uid.step()) ids.push_back(by_uid.int64(0));
  if (ids.size() == 1) return ids[0];
  if (ids.size() > 1)
    throw StoreError(ErrorKind::kAmbiguous, "uid prefix '" + selector + "' matches several sessions; give more digits");
  Statement by_name(db, "SELECT id FROM sessions WHERE name = ? ORDER BY id");
  by_name.bind(1, selector);
  while (by_name.step()) ids.push_back(by_name.int64(0));
  if (ids.size() == 1) return ids[0];
  if (ids.empty()) not_found(store, "with id, uid or name '" + selector + "'");
  std::string list;
  for (auto id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  throw StoreError(ErrorKind::kAmbiguous, "several sessions are named '" + selector + "' (ids " + list +
                                              "); select one by id");
}

SessionDetail load_session(Store& store, std::int64_t session_id) {
  SqliteDb& db = store.db();
  Statement s(db, (std::string("SELECT ") + kInfoColumns +
                   ", s.command_line, s.config_json, s.environment_json, s.peak_tflops_per_gpu, s.origin_json, "
                   "s.environment_variables_json FROM sessions s WHERE s.id = ?").c_str());
  s.bind(1, session_id);
  if (!s.step()) not_found(store, "with id " + std::to_string(session_id));
  SessionDetail d;
  d.info = read_info(db, s);
  d.config_json = s.text(15);
  d.peak_tflops_per_gpu = s.optional_real(17);
  d.origin_json = s.text(18);
  try {
    if (!s.is_null(14)) d.command_line = nlohmann::json::parse(s.text(14)).get<std::vector<std::string>>();
    if (!s.is_null(16)) d.environment = report_from_json(nlohmann::json::parse(s.text(16)));
    if (!s.is_null(19)) {
      const auto variables = nlohmann::json::parse(s.text(19));
      for (const auto& item : variables.items())
        d.environment_variables.emplace_back(item.key(), item.value().get<std::string>());
    }
  } catch (const std::exception& e) {
    throw StoreError(ErrorKind::kCorrupt, store.path() + ": session " + std::to_string(session_id) +
                                              " has an unreadable command line or environment: " + e.what());
  }
  Statement r(db, "SELECT rank, local_rank, host, pid, device, exit_code FROM ranks WHERE session_id = ? ORDER BY rank");
  r.bind(1, session_id);
  while (r.step()) {
    RankDetail rank;
    rank.info = {static_cast<int>(r.int64(0)), static_cast<int>(r.int64(1)), r.text(2), r.int64(3), r.text(4)};
    if (auto code = r.optional_int64(5)) rank.exit_code = static_cast<int>(*code);
    d.ranks.push_back(rank);
  }
  d.hosts = load_session_hosts(store, session_id);
  return d;
}

namespace {

// The per-step aggregate over ranks of one steps column from step_stats (schema 10): one row a step.
std::string step_stats_curve_sql(const MetricColumn& m, RankAggregate aggregate) {
  const std::string c = m.column;
  const std::string value = aggregate == RankAggregate::kMean  ? c + "_sum / " + c + "_n"
                            : aggregate == RankAggregate::kSum ? c + "_sum"
                            : aggregate == RankAggregate::kMax ? c + "_max"
                                                               : c + "_min";
  return "SELECT step, " + value + ", " + c + "_wall FROM step_stats WHERE session_id = ?1 AND " + c +
         "_n > 0 ORDER BY step";
}

}  // namespace

std::vector<CurvePoint> load_curve(Store& store, std::int64_t session_id, Metric metric, std::optional<int> rank,
                                   std::optional<RankAggregate> aggregate) {
  const auto& m = column_of(metric);
  const std::string sql = !rank && has_stats(store) ? step_stats_curve_sql(m, aggregate.value_or(m.aggregate)) : std::string("SELECT step, ") + sql_aggregate(aggregate.value_or(m.aggregate)) + "(" +
                          m.column + "), MAX(wall_time) FROM steps" + (rank ? " INDEXED BY steps_by_rank" : "") +
                          " WHERE session_id = ?1 AND " + m.column +
                          " IS NOT NULL" + (rank ? " AND rank = ?2" : "") + " GROUP BY step ORDER BY step";
  Statement s(store.db(), sql.c_str());
  s.bind(1, session_id);
  if (rank) s.bind(2, *rank);
  std::vector<CurvePoint> out;
  while (s.step()) out.push_back({s.int64(0), s.real(1), s.real(2)});
  return out;
}

namespace {

// The timers and series tables share a shape: (session_id, name_id, step, rank) -> a value.
std::vector<std::string> names_in(Store& store, const std::string& table, std::int64_t session_id) {
  // Probe the table's key once per interned name: DISTINCT over the rows would read every row.
  return strings_of(store.db(), ("SELECT text FROM names n WHERE EXISTS(SELECT 1 FROM " + table +
                                 " t WHERE t.session_id = ?1 AND t.name_id = n.id) ORDER BY text").c_str(),
                    session_id);
}

std::vector<CurvePoint> named_curve(Store& store, const std::string& table, const std::string& aggregate,
                                    std::int64_t session_id, const std::string& name) {
  Statement s(store.db(), ("SELECT step, " + aggregate + " FROM " + table + " WHERE session_id = ? AND name_id = "
                           "(SELECT id FROM names WHERE text = ?) GROUP BY step ORDER BY step").c_str());
  s.bind(1, session_id).bind(2, name);
  std::vector<CurvePoint> out;
  while (s.step()) out.push_back({s.int64(0), s.real(1), 0});
  return out;
}

}  // namespace

std::vector<std::string> load_timer_names(Store& store, std::int64_t session_id) {
  return names_in(store, "timers", session_id);
}

std::vector<CurvePoint> load_timer_curve(Store& store, std::int64_t session_id, const std::string& timer) {
  if (has_stats(store)) return named_curve(store, "timer_stats", "max", session_id, timer);
  return named_curve(store, "timers", "MAX(ms)", session_id, timer);
}

std::vector<std::string> load_series_names(Store& store, std::int64_t session_id) {
  return names_in(store, "series", session_id);
}

std::vector<CurvePoint> load_series_curve(Store& store, std::int64_t session_id, const std::string& name) {
  return named_curve(store, "series", "AVG(value)", session_id, name);
}

std::vector<StepMetrics> load_steps(Store& store, std::int64_t session_id, std::optional<int> rank) {
  // One rank's rows: the (session_id, rank, step) index, whatever the planner guesses without stats.
  Statement s(store.db(), rank ? "SELECT * FROM steps INDEXED BY steps_by_rank WHERE session_id = ?1 AND rank = ?2 "
                                 "ORDER BY step"
                               : "SELECT * FROM steps WHERE session_id = ?1 ORDER BY step, rank");
  s.bind(1, session_id);
  if (rank) s.bind(2, *rank);
  return read_step_rows(s);
}


std::vector<ActivityRecord> load_activities(Store& store, std::int64_t session_id, int rank) {
  Statement s(store.db(), "SELECT a.kind, n.text, a.start_ns, a.end_ns, a.device, a.stream, a.bytes, a.step "
                          "FROM activities a JOIN names n ON n.id = a.name_id "
                          "WHERE a.session_id = ? AND a.rank = ? ORDER BY a.start_ns");
  s.bind(1, session_id).bind(2, rank);
  std::vector<ActivityRecord> out;
  while (s.step())
    out.push_back({static_cast<ActivityKind>(s.int64(0)), s.text(1), s.int64(2), s.int64(3),
                   static_cast<int>(s.int64(4)), s.int64(5), s.int64(6), s.int64(7)});
  return out;
}

std::vector<NvtxRange> load_nvtx(Store& store, std::int64_t session_id, int rank) {
  Statement s(store.db(), "SELECT n.text, r.domain, r.start_ns, r.end_ns, r.device, r.stream, r.step, sh.text, "
                          "r.external_id, r.sequence_number, r.forward_thread_id, r.forward_op_id "
                          "FROM nvtx_ranges r JOIN names n ON n.id = r.name_id LEFT JOIN names sh ON sh.id = r.shapes_id "
                          "WHERE r.session_id = ? AND r.rank = ? ORDER BY r.start_ns, r.end_ns DESC");
  s.bind(1, session_id).bind(2, rank);
  std::vector<NvtxRange> out;
  while (s.step()) {
    NvtxRange n{s.text(0), s.text(1), s.int64(2), s.int64(3), static_cast<int>(s.int64(4)), s.int64(5), s.int64(6)};
    if (!s.is_null(7)) n.shapes = s.text(7);
    n.external_id = s.optional_int64(8);
    n.sequence_number = s.optional_int64(9);
    n.forward_thread_id = s.optional_int64(10);
    n.forward_op_id = s.optional_int64(11);
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<LogLine> load_logs(Store& store, std::int64_t session_id, std::optional<int> rank, LogLevel min_level) {
  Statement s(store.db(), rank ? "SELECT rank, time, level, text FROM logs WHERE session_id = ?1 AND level >= ?2 "
                                 "AND rank = ?3 ORDER BY id"
                               : "SELECT rank, time, level, text FROM logs WHERE session_id = ?1 AND level >= ?2 "
                                 "ORDER BY id");
  s.bind(1, session_id).bind(2, static_cast<int>(min_level));
  if (rank) s.bind(3, *rank);
  std::vector<LogLine> out;
  while (s.step())
    out.push_back({static_cast<int>(s.int64(0)), s.real(1), static_cast<LogLevel>(s.int64(2)), s.text(3)});
  return out;
}

std::size_t delete_sessions(Store& store, const std::vector<std::int64_t>& session_ids) {
  static const char* kTables[] = {"steps", "timers",       "comms",  "activities",     "nvtx_ranges", "logs",
                                  "ranks", "session_tags", "series", "comm_summaries", "hosts"};
  static const char* kStatsTables[] = {"step_stats",          "rank_stats",          "timer_stats",        "comm_stats",
                                       "activity_device_stats", "activity_name_stats", "activity_step_stats",
                                       "step_bands"};
  SqliteDb& db = store.db();
  Transaction transaction(db);
  std::size_t deleted = 0;
  for (const auto id : session_ids) {
    for (const char* table : kStatsTables) {
      Statement s(db, (std::string("DELETE FROM ") + table + " WHERE session_id = ?").c_str());
      s.bind(1, id).run();
    }
    for (const char* table : kTables) {
      Statement s(db, (std::string("DELETE FROM ") + table + " WHERE session_id = ?").c_str());
      s.bind(1, id).run();
    }
    Statement s(db, "DELETE FROM sessions WHERE id = ?");
    s.bind(1, id).run();
    deleted += static_cast<std::size_t>(db.query_int("SELECT changes()"));
  }
  transaction.commit();
  return deleted;
}

std::vector<StepMetrics> load_steps_after(Store& store, std::int64_t session_id, int rank, std::int64_t after_step) {
  Statement s(store.db(), "SELECT * FROM steps INDEXED BY steps_by_rank WHERE session_id = ?1 AND rank = ?2 "
                          "AND step > ?3 ORDER BY step");
  s.bind(1, session_id).bind(2, rank).bind(3, after_step);
  return read_step_rows(s);
}

std::vector<int> load_step_ranks(Store& store, std::int64_t session_id) {
  return distinct_ranks(store.db(), "steps", "steps_by_rank", session_id);
}

std::vector<TimerBreakdown> load_timer_breakdowns_after(Store& store, std::int64_t session_id,
                                                        std::int64_t after_step) {
  Statement s(store.db(), "SELECT t.step, n.text, MAX(t.ms) FROM timers t JOIN names n ON n.id = t.name_id "
                          "WHERE t.session_id = ?1 AND t.step > ?2 GROUP BY t.step, t.name_id "
                          "ORDER BY t.step, n.text");
  s.bind(1, session_id).bind(2, after_step);
  std::vector<TimerBreakdown> out;
  while (s.step()) {
    const std::int64_t step = s.int64(0);
    if (out.empty() || out.back().step != step) out.push_back(TimerBreakdown{-1, step, {}});
    out.back().timers.push_back({s.text(1), s.real(2)});
  }
  return out;
}

std::vector<LogEntry> load_logs_after(Store& store, std::int64_t session_id, std::int64_t after_id,
                                      std::size_t limit) {
  std::string sql = "SELECT id, rank, time, level, text FROM logs WHERE session_id = ?1 AND id > ?2 ORDER BY id";
  if (limit > 0) sql += " LIMIT " + std::to_string(limit);
  Statement s(store.db(), sql.c_str());
  s.bind(1, session_id).bind(2, after_id);
  std::vector<LogEntry> out;
  while (s.step())
    out.push_back({s.int64(0), {static_cast<int>(s.int64(1)), s.optional_real(2).value_or(0),
                                static_cast<LogLevel>(s.int64(3)), s.text(4)}});
  return out;
}

std::vector<ActivityRecord> load_activities_window(Store& store, std::int64_t session_id, int rank,
                                                   std::int64_t start_ns, std::int64_t end_ns) {
  // The index orders by start; an activity that began before the window and ends inside it is
  // found because no activity of the window is longer than the longest one of the rank.
  Statement s(store.db(), "SELECT a.kind, n.text, a.start_ns, a.end_ns, a.device, a.stream, a.bytes, a.step "
                          "FROM activities a JOIN names n ON n.id = a.name_id "
                          "WHERE a.session_id = ?1 AND a.rank = ?2 AND a.start_ns < ?4 AND a.end_ns > ?3 "
                          "AND a.start_ns >= ?3 - (SELECT coalesce(MAX(end_ns - start_ns), 0) FROM activities "
                          "WHERE session_id = ?1 AND rank = ?2) ORDER BY a.start_ns");
  s.bind(1, session_id).bind(2, rank).bind(3, start_ns).bind(4, end_ns);
  std::vector<ActivityRecord> out;
  while (s.step())
    out.push_back({static_cast<ActivityKind>(s.int64(0)), s.text(1), s.int64(2), s.int64(3),
                   static_cast<int>(s.int64(4)), s.int64(5), s.int64(6), s.int64(7)});
  return out;
}

std::vector<int> load_profiled_ranks(Store& store, std::int64_t session_id) {
  std::set<int> ranks;
  for (int r : distinct_ranks(store.db(), "activities", "activities_by_session", session_id)) ranks.insert(r);
  for (int r : distinct_ranks(store.db(), "nvtx_ranges", "nvtx_by_session", session_id)) ranks.insert(r);
  return {ranks.begin(), ranks.end()};
}

}  // namespace shardscope::sessions
