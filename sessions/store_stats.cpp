#include "sessions/store_stats.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_bands.hpp"
#include "sessions/store_schema.hpp"

namespace shardscope::sessions {
namespace {

// The steps columns with a value, in the steps table's order (step_stats has five columns each).
constexpr const char* kStepColumns[] = {"wall_time",     "step_time_ms", "loss",          "lr",
                                        "loss_scale",    "grad_norm",    "samples_per_s", "tokens_per_s",
                                        "tflops",        "mem_allocated", "mem_reserved", "mem_peak", nullptr};
constexpr int kStepColumnCount = 12;

// Frozen with schema 10: files of version 10 were created by exactly this text (plus step_stats,
// generated from kStepColumns below, which is frozen likewise).
constexpr const char* kFixedStatsSql = R"sql(
CREATE TABLE rank_stats(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  steps INTEGER NOT NULL DEFAULT 0,
  step_time_n INTEGER NOT NULL DEFAULT 0,
  step_time_ms REAL,
  peak_bytes INTEGER,
  reserved_bytes INTEGER,
  comm_records INTEGER NOT NULL DEFAULT 0,
  comm_latency_us REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(session_id, rank)
) WITHOUT ROWID;

CREATE TABLE timer_stats(
  session_id INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  n INTEGER NOT NULL,
  sum REAL NOT NULL,
  min REAL NOT NULL,
  max REAL NOT NULL,
  PRIMARY KEY(session_id, name_id, step)
) WITHOUT ROWID;

CREATE TABLE comm_stats(
  session_id INTEGER NOT NULL,
  op TEXT NOT NULL,
  step INTEGER NOT NULL,
  count INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  latency_us REAL NOT NULL,
  algbw_sum REAL NOT NULL,
  algbw_n INTEGER NOT NULL,
  busbw_sum REAL NOT NULL,
  busbw_n INTEGER NOT NULL,
  slowest_rank_us REAL NOT NULL,
  PRIMARY KEY(session_id, op, step)
) WITHOUT ROWID;
)sql";

std::string step_stats_ddl() {
  std::string sql = "CREATE TABLE step_stats(\n  session_id INTEGER NOT NULL,\n  step INTEGER NOT NULL,\n"
                    "  ranks INTEGER NOT NULL,\n  skipped INTEGER NOT NULL,\n";
  for (int i = 0; i < kStepColumnCount; ++i) {
    const std::string c = kStepColumns[i];
    sql += "  " + c + "_n INTEGER NOT NULL, " + c + "_sum REAL, " + c + "_min REAL, " + c + "_max REAL, " + c +
           "_wall REAL,\n";
  }
  return sql + "  PRIMARY KEY(session_id, step)\n) WITHOUT ROWID;\n";
}

// The per-step aggregate of the steps rows `where` selects: the same SELECT fills a new file's
// table, recomputes a re-sent step, and (without a table) is what the readers would compute.
std::string step_stats_select(const std::string& where) {
  std::string sql = "SELECT session_id, step, COUNT(*), SUM(skipped)";
  for (int i = 0; i < kStepColumnCount; ++i) {
    const std::string c = kStepColumns[i];
    sql += ", COUNT(" + c + "), SUM(" + c + "), MIN(" + c + "), MAX(" + c + "), MAX(CASE WHEN " + c +
           " IS NOT NULL THEN wall_time END)";
  }
  return sql + " FROM steps WHERE " + where + " GROUP BY session_id, step";
}

// Rank columns of the steps rows: count, step time, peak (mem_peak, else mem_allocated), reserved.
constexpr const char* kRankStepsColumns =
    "COUNT(*), COUNT(step_time_ms), SUM(step_time_ms), MAX(coalesce(mem_peak, mem_allocated)), MAX(mem_reserved)";

// `a` combined with `b` where either may be NULL (SQLite's two-argument max() is NULL if one is).
std::string both(const std::string& f, const std::string& a, const std::string& b) {
  return "CASE WHEN " + a + " IS NULL THEN " + b + " WHEN " + b + " IS NULL THEN " + a + " ELSE " + f + "(" + a +
         ", " + b + ") END";
}
std::string nullable_sum(const std::string& a, const std::string& b) {
  return "CASE WHEN " + a + " IS NULL THEN " + b + " WHEN " + b + " IS NULL THEN " + a + " ELSE " + a + " + " + b +
         " END";
}

std::string step_stats_upsert() {
  std::string columns = "session_id, step, ranks, skipped", values = "?, ?, ?, ?",
              update = "ranks = ranks + excluded.ranks, skipped = skipped + excluded.skipped";
  for (int i = 0; i < kStepColumnCount; ++i) {
    const std::string c = kStepColumns[i];
    columns += ", " + c + "_n, " + c + "_sum, " + c + "_min, " + c + "_max, " + c + "_wall";
    values += ", ?, ?, ?, ?, ?";
    update += ", " + c + "_n = " + c + "_n + excluded." + c + "_n";
    update += ", " + c + "_sum = " + nullable_sum(c + "_sum", "excluded." + c + "_sum");
    update += ", " + c + "_min = " + both("min", c + "_min", "excluded." + c + "_min");
    update += ", " + c + "_max = " + both("max", c + "_max", "excluded." + c + "_max");
    update += ", " + c + "_wall = " + both("max", c + "_wall", "excluded." + c + "_wall");
  }
  return "INSERT INTO step_stats(" + columns + ") VALUES(" + values + ") ON CONFLICT(session_id, step) DO UPDATE SET " +
         update;
}

std::string rank_stats_upsert() {
  return "INSERT INTO rank_stats(session_id, rank, steps, step_time_n, step_time_ms, peak_bytes, reserved_bytes, "
         "comm_records, comm_latency_us) VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, rank) DO UPDATE SET "
         "steps = steps + excluded.steps, step_time_n = step_time_n + excluded.step_time_n, step_time_ms = " +
         nullable_sum("step_time_ms", "excluded.step_time_ms") +
         ", peak_bytes = " + both("max", "peak_bytes", "excluded.peak_bytes") +
         ", reserved_bytes = " + both("max", "reserved_bytes", "excluded.reserved_bytes") +
         ", comm_records = comm_records + excluded.comm_records"
         ", comm_latency_us = comm_latency_us + excluded.comm_latency_us";
}

// A value's contribution: count, sum, min, max and (steps columns) the latest wall time with it.
struct ValueStats {
  std::int64_t n = 0;
  double sum = 0, min = 0, max = 0, wall = 0;
  void add(double v, double wall_time = 0) {
    if (std::isnan(v)) return;  // stored as NULL (Statement::bind), so not counted
    min = n ? std::min(min, v) : v;
    max = n ? std::max(max, v) : v;
    wall = n ? std::max(wall, wall_time) : wall_time;
    sum += v;
    ++n;
  }
};

struct StepDelta {
  std::int64_t ranks = 0, skipped = 0;
  ValueStats columns[kStepColumnCount];
};

struct RankDelta {
  std::int64_t steps = 0;
  ValueStats step_time;
  std::optional<std::int64_t> peak, reserved;
  std::int64_t comm_records = 0;
  double comm_latency_us = 0;
};

struct CommDelta {
  std::int64_t count = 0, bytes = 0;
  double latency_us = 0, slowest_rank_us = 0;
  ValueStats algbw, busbw;
};

// A rank's running sum of one op's latencies in its latest step: the step's slowest rank is the
// largest such sum, and a sum only grows, so the largest seen so far is the stat at every commit.
struct CommPartial {
  std::int64_t step = 0, latest_step = 0;
  double sum_us = 0;
};

void bind_values(Statement& s, int first, const ValueStats& v, bool with_wall) {
  s.bind(first, v.n);
  if (v.n == 0) {
    for (int i = 1; i <= (with_wall ? 4 : 3); ++i) s.bind_null(first + i);
    return;
  }
  s.bind(first + 1, v.sum).bind(first + 2, v.min).bind(first + 3, v.max);
  if (with_wall) s.bind(first + 4, v.wall);
}

std::optional<std::int64_t> larger(std::optional<std::int64_t> a, std::optional<std::int64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

}  // namespace

std::string stats_schema_sql() { return kFixedStatsSql + step_stats_ddl(); }

void fill_stats_from_rows(SqliteDb& db) {
  db.exec("INSERT INTO step_stats " + step_stats_select("1"));
  db.exec(std::string("INSERT INTO rank_stats(session_id, rank, steps, step_time_n, step_time_ms, peak_bytes, "
                      "reserved_bytes) SELECT session_id, rank, ") + kRankStepsColumns +
          " FROM steps INDEXED BY steps_by_rank GROUP BY session_id, rank");
  db.exec("INSERT INTO rank_stats(session_id, rank, comm_records, comm_latency_us) SELECT session_id, rank, "
          "COUNT(*), SUM(latency_us) FROM comms WHERE 1 GROUP BY session_id, rank ON CONFLICT(session_id, rank) "
          "DO UPDATE SET comm_records = excluded.comm_records, comm_latency_us = excluded.comm_latency_us");
  db.exec("INSERT INTO timer_stats SELECT session_id, name_id, step, COUNT(*), SUM(ms), MIN(ms), MAX(ms) FROM timers "
          "GROUP BY session_id, name_id, step");
  db.exec("INSERT INTO comm_stats SELECT session_id, op, step, SUM(n), SUM(b), SUM(l), SUM(a), SUM(an), SUM(w), "
          "SUM(wn), MAX(l) FROM (SELECT session_id, op, step, rank, COUNT(*) AS n, SUM(bytes) AS b, "
          "SUM(latency_us) AS l, coalesce(SUM(algbw_gbps), 0) AS a, COUNT(algbw_gbps) AS an, "
          "coalesce(SUM(busbw_gbps), 0) AS w, COUNT(busbw_gbps) AS wn FROM comms GROUP BY session_id, rank, step, op) "
          "GROUP BY session_id, op, step");
}

bool has_stats(Store& store) { return store.schema_version() >= 10; }

struct StatsAccumulator::Impl {
  explicit Impl(SqliteDb& d)
      : db(d),
        step_upsert(d, step_stats_upsert().c_str()),
        rank_upsert(d, rank_stats_upsert().c_str()),
        timer_upsert(d, "INSERT INTO timer_stats VALUES(?,?,?,?,?,?,?) ON CONFLICT(session_id, name_id, step) DO "
                        "UPDATE SET n = n + excluded.n, sum = sum + excluded.sum, min = min(min, excluded.min), "
                        "max = max(max, excluded.max)"),
        comm_upsert(d, "INSERT INTO comm_stats VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, op, step) DO "
                       "UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes, "
                       "latency_us = latency_us + excluded.latency_us, algbw_sum = algbw_sum + excluded.algbw_sum, "
                       "algbw_n = algbw_n + excluded.algbw_n, busbw_sum = busbw_sum + excluded.busbw_sum, "
                       "busbw_n = busbw_n + excluded.busbw_n, "
                       "slowest_rank_us = max(slowest_rank_us, excluded.slowest_rank_us)"),
        comm_sum(d, "SELECT coalesce(SUM(latency_us), 0) FROM comms WHERE session_id = ? AND rank = ? AND step = ? "
                    "AND op = ?"),
        step_delete(d, "DELETE FROM step_stats WHERE session_id = ? AND step = ?"),
        step_recompute(d, ("INSERT INTO step_stats " + step_stats_select("session_id = ?1 AND step = ?2")).c_str()),
        rank_recompute(d, (std::string("UPDATE rank_stats SET (steps, step_time_n, step_time_ms, peak_bytes, "
                                       "reserved_bytes) = (SELECT ") + kRankStepsColumns +
                           " FROM steps INDEXED BY steps_by_rank WHERE session_id = ?1 AND rank = ?2) WHERE session_id = ?1 "
                           "AND rank = ?2").c_str()),
        timer_recompute(d, "INSERT OR REPLACE INTO timer_stats SELECT session_id, name_id, step, COUNT(*), SUM(ms), "
                           "MIN(ms), MAX(ms) FROM timers WHERE session_id = ?1 AND name_id = ?2 AND step = ?3 "
                           "GROUP BY session_id, name_id, step"),
        bands(d) {}

  double comm_rank_sum(std::int64_t session, const CommRecord& c);
  void flush_steps();
  void flush_ranks();
  void flush_timers_and_comms();
  void forget_batch();

  SqliteDb& db;
  Statement step_upsert, rank_upsert, timer_upsert, comm_upsert, comm_sum, step_delete, step_recompute,
      rank_recompute, timer_recompute;
  std::map<std::pair<std::int64_t, std::int64_t>, StepDelta> steps;  // (session, step)
  std::map<std::pair<std::int64_t, int>, RankDelta> ranks;           // (session, rank)
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, ValueStats> timers;  // (session, name, step)
  std::map<std::tuple<std::int64_t, std::string, std::int64_t>, CommDelta> comms;     // (session, op, step)
  std::set<std::pair<std::int64_t, std::int64_t>> replaced_steps;
  std::set<std::pair<std::int64_t, int>> replaced_ranks;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> replaced_timers;
  std::map<std::tuple<std::int64_t, int, std::string>, CommPartial> partials;  // (session, rank, op)
  StepBandsAccumulator bands;  // schema 12's step_bands (store_bands.hpp)
};

StatsAccumulator::StatsAccumulator(SqliteDb& db) : impl_(std::make_unique<Impl>(db)) {}
StatsAccumulator::~StatsAccumulator() = default;

void StatsAccumulator::add_step(std::int64_t session, const StepMetrics& m, bool replaced) {
  impl_->bands.add_step(session, m, replaced);
  StepDelta& s = impl_->steps[{session, m.step}];
  ++s.ranks;
  s.skipped += m.skipped ? 1 : 0;
  const std::optional<double> values[kStepColumnCount] = {
      m.wall_time, m.step_time_ms, m.loss, m.lr, m.loss_scale, m.grad_norm, m.samples_per_s, m.tokens_per_s,
      m.tflops, m.mem_allocated_bytes ? std::optional<double>(static_cast<double>(*m.mem_allocated_bytes)) : std::nullopt,
      m.mem_reserved_bytes ? std::optional<double>(static_cast<double>(*m.mem_reserved_bytes)) : std::nullopt,
      m.mem_peak_bytes ? std::optional<double>(static_cast<double>(*m.mem_peak_bytes)) : std::nullopt};
  for (int i = 0; i < kStepColumnCount; ++i)
    if (values[i]) s.columns[i].add(*values[i], m.wall_time);
  RankDelta& r = impl_->ranks[{session, m.rank}];
  ++r.steps;
  if (m.step_time_ms) r.step_time.add(*m.step_time_ms);
  r.peak = larger(r.peak, m.mem_peak_bytes ? m.mem_peak_bytes : m.mem_allocated_bytes);
  r.reserved = larger(r.reserved, m.mem_reserved_bytes);
  if (!replaced) return;
  impl_->replaced_steps.insert({session, m.step});
  impl_->replaced_ranks.insert({session, m.rank});
}

void StatsAccumulator::add_timer(std::int64_t session, std::int64_t name_id, std::int64_t step, double ms,
                                 bool replaced) {
  impl_->timers[{session, name_id, step}].add(ms);
  if (replaced) impl_->replaced_timers.insert({session, name_id, step});
}

// The rank's summed latency of this op in this step so far, this record included. The file is
// asked only when this writer has not seen the rank's op at this step or later (a new writer, or
// a rank re-sending older steps); otherwise the running sum is exact.
double StatsAccumulator::Impl::comm_rank_sum(std::int64_t session, const CommRecord& c) {
  const double latency = std::isnan(c.latency_us) ? 0 : c.latency_us;
  auto [it, fresh] = partials.try_emplace({session, c.rank, c.op});
  CommPartial& p = it->second;
  if (!fresh && c.step == p.step) return p.sum_us += latency;
  if (fresh || c.step <= p.latest_step) {
    comm_sum.bind(1, session).bind(2, c.rank).bind(3, c.step).bind(4, c.op);
    p.sum_us = comm_sum.step() ? comm_sum.real(0) : 0;
    comm_sum.reset();
  } else {
    p.sum_us = 0;
  }
  p.step = c.step;
  p.latest_step = std::max(p.latest_step, c.step);
  return p.sum_us += latency;
}

void StatsAccumulator::add_comm(std::int64_t session, const CommRecord& c) {
  const double rank_sum = impl_->comm_rank_sum(session, c);
  CommDelta& d = impl_->comms[{session, c.op, c.step}];
  ++d.count;
  d.bytes += c.bytes;
  if (!std::isnan(c.latency_us)) d.latency_us += c.latency_us;
  d.algbw.add(c.algbw_gbps);
  d.busbw.add(c.busbw_gbps);
  d.slowest_rank_us = std::max(d.slowest_rank_us, rank_sum);
  RankDelta& r = impl_->ranks[{session, c.rank}];
  ++r.comm_records;
  if (!std::isnan(c.latency_us)) r.comm_latency_us += c.latency_us;
}

void StatsAccumulator::Impl::flush_steps() {
  for (const auto& [key, s] : steps) {
    step_upsert.bind(1, key.first).bind(2, key.second).bind(3, s.ranks).bind(4, s.skipped);
    for (int i = 0; i < kStepColumnCount; ++i) bind_values(step_upsert, 5 + 5 * i, s.columns[i], true);
    step_upsert.run();
  }
  for (const auto& [session, step] : replaced_steps) {
    step_delete.bind(1, session).bind(2, step).run();
    step_recompute.bind(1, session).bind(2, step).run();
  }
}

void StatsAccumulator::Impl::flush_ranks() {
  for (const auto& [key, r] : ranks) {
    rank_upsert.bind(1, key.first).bind(2, key.second).bind(3, r.steps).bind(4, r.step_time.n);
    if (r.step_time.n) rank_upsert.bind(5, r.step_time.sum);
    else rank_upsert.bind_null(5);
    rank_upsert.bind(6, r.peak).bind(7, r.reserved).bind(8, r.comm_records).bind(9, r.comm_latency_us).run();
  }
  for (const auto& [session, rank] : replaced_ranks) rank_recompute.bind(1, session).bind(2, rank).run();
}

void StatsAccumulator::Impl::flush_timers_and_comms() {
  for (const auto& [key, t] : timers) {
    timer_upsert.bind(1, std::get<0>(key)).bind(2, std::get<1>(key)).bind(3, std::get<2>(key)).bind(4, t.n);
    timer_upsert.bind(5, t.sum).bind(6, t.min).bind(7, t.max).run();
  }
  for (const auto& [session, name, step] : replaced_timers)
    timer_recompute.bind(1, session).bind(2, name).bind(3, step).run();
  for (const auto& [key, c] : comms) {
    comm_upsert.bind(1, std::get<0>(key)).bind(2, std::get<1>(key)).bind(3, std::get<2>(key)).bind(4, c.count)
        .bind(5, c.bytes).bind(6, c.latency_us).bind(7, c.algbw.sum).bind(8, c.algbw.n).bind(9, c.busbw.sum)
        .bind(10, c.busbw.n).bind(11, c.slowest_rank_us).run();
  }
}

void StatsAccumulator::Impl::forget_batch() {
  steps.clear();
  ranks.clear();
  timers.clear();
  comms.clear();
  replaced_steps.clear();
  replaced_ranks.clear();
  replaced_timers.clear();
}

void StatsAccumulator::flush() {
  impl_->flush_steps();
  impl_->bands.flush();
  impl_->flush_ranks();
  impl_->flush_timers_and_comms();
  impl_->forget_batch();
}

void StatsAccumulator::clear() {
  impl_->forget_batch();
  impl_->partials.clear();  // the running sums counted rows that rolled back
  impl_->bands.clear();
}

}  // namespace shardscope::sessions
