#include "sessions/session_summary.hpp"

#include <algorithm>
#include <cmath>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::sessions {
namespace {

std::optional<double> median_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  return percentile(std::move(values), 0.5);
}

// Per-step aggregates over ranks, built while the rows stream by in primary-key order.
struct StepAggregate {
  std::int64_t step = 0;
  std::optional<double> max_ms, samples, tokens, loss_sum;
  double tflops_sum = 0;
  int tflops_n = 0, loss_n = 0;
  bool skipped = false;
};

void add_to(std::optional<double>& sum, const std::optional<double>& v) {
  if (v) sum = sum.value_or(0) + *v;
}

void finish_step(const StepAggregate& a, std::int64_t first_timed, SessionSummary& s,
                 std::vector<double> (&series)[4]) {
  ++s.steps;
  if (a.skipped) ++s.skipped_steps;
  if (a.loss_n > 0) {
    const double loss = *a.loss_sum / a.loss_n;
    s.final_loss = loss;
    s.final_loss_step = a.step;
    if (std::isfinite(loss) && (!s.best_loss || loss < *s.best_loss)) {  // NaN/inf is never "best"
      s.best_loss = loss;
      s.best_loss_step = a.step;
    }
  }
  if (a.step < first_timed) return;
  if (a.max_ms) series[0].push_back(*a.max_ms);
  if (a.samples) series[1].push_back(*a.samples);
  if (a.tokens) series[2].push_back(*a.tokens);
  if (a.tflops_n > 0) series[3].push_back(a.tflops_sum / a.tflops_n);
}

void finish_series(SessionSummary& s, std::vector<double> (&series)[4]);

// One range scan of the session's rows (the (session_id, step, rank) key) yields every step and
// memory statistic; a query per statistic would read the 800k rows of a 100k x 8 run each time.
void summarize_steps(Store& store, std::int64_t id, const SummaryOptions& options, SessionSummary& s) {
  Statement rows(store.db(), "SELECT step, rank, step_time_ms, samples_per_s, tokens_per_s, tflops, loss, skipped, "
                             "coalesce(mem_peak, mem_allocated), mem_reserved FROM steps WHERE session_id = ? "
                             "ORDER BY step, rank");
  rows.bind(1, id);
  const std::int64_t first_timed = s.info.first_step.value_or(0) + options.warmup_steps;
  std::vector<double> series[4];  // step ms, samples/s, tokens/s, TFLOP/s
  std::vector<RankMemory> memory;
  std::optional<StepAggregate> current;
  while (rows.step()) {
    const std::int64_t step = rows.int64(0);
    if (!current || current->step != step) {
      if (current) finish_step(*current, first_timed, s, series);
      current = StepAggregate{};
      current->step = step;
    }
    if (auto ms = rows.optional_real(2)) current->max_ms = std::max(current->max_ms.value_or(*ms), *ms);
    add_to(current->samples, rows.optional_real(3));
    add_to(current->tokens, rows.optional_real(4));
    if (auto t = rows.optional_real(5)) current->tflops_sum += *t, ++current->tflops_n;
    if (auto l = rows.optional_real(6)) add_to(current->loss_sum, l), ++current->loss_n;
    current->skipped = current->skipped || rows.int64(7) != 0;
    const auto rank = static_cast<std::size_t>(std::max<std::int64_t>(0, rows.int64(1)));
    if (rank >= memory.size()) memory.resize(rank + 1);
    auto& m = memory[rank];
    m.rank = static_cast<int>(rank);
    if (auto peak = rows.optional_int64(8)) m.peak_bytes = std::max(m.peak_bytes.value_or(*peak), *peak);
    if (auto reserved = rows.optional_int64(9)) m.reserved_bytes = std::max(m.reserved_bytes.value_or(*reserved), *reserved);
  }
  if (current) finish_step(*current, first_timed, s, series);
  for (auto& m : memory)
    if (m.peak_bytes || m.reserved_bytes) s.memory.push_back(m);
  finish_series(s, series);
}

// The same from the pre-aggregates (schema 10): one row per step and one per rank.
void summarize_step_stats(Store& store, std::int64_t id, const SummaryOptions& options, SessionSummary& s) {
  Statement rows(store.db(), "SELECT step, skipped, step_time_ms_n, step_time_ms_max, samples_per_s_n, "
                             "samples_per_s_sum, tokens_per_s_n, tokens_per_s_sum, tflops_n, tflops_sum, loss_n, "
                             "loss_sum FROM step_stats WHERE session_id = ? ORDER BY step");
  rows.bind(1, id);
  const std::int64_t first_timed = s.info.first_step.value_or(0) + options.warmup_steps;
  std::vector<double> series[4];
  while (rows.step()) {
    StepAggregate a;
    a.step = rows.int64(0);
    a.skipped = rows.int64(1) > 0;
    if (rows.int64(2) > 0) a.max_ms = rows.real(3);
    if (rows.int64(4) > 0) a.samples = rows.real(5);
    if (rows.int64(6) > 0) a.tokens = rows.real(7);
    a.tflops_n = static_cast<int>(rows.int64(8));
    if (a.tflops_n > 0) a.tflops_sum = rows.real(9);
    a.loss_n = static_cast<int>(rows.int64(10));
    if (a.loss_n > 0) a.loss_sum = rows.real(11);
    finish_step(a, first_timed, s, series);
  }
  Statement ranks(store.db(), "SELECT rank, peak_bytes, reserved_bytes FROM rank_stats WHERE session_id = ? AND "
                              "(peak_bytes IS NOT NULL OR reserved_bytes IS NOT NULL) ORDER BY rank");
  ranks.bind(1, id);
  while (ranks.step())
    s.memory.push_back({static_cast<int>(ranks.int64(0)), ranks.optional_int64(1), ranks.optional_int64(2)});
  finish_series(s, series);
}

// The slowest rank's seconds in collectives, and their share of that rank's summed step time.
void set_slowest_comm_rank(SessionSummary& s, double comm_s, std::optional<double> step_ms) {
  s.comm_time_s = comm_s;
  if (step_ms && *step_ms > 0) s.comm_fraction = comm_s / (*step_ms / 1e3);
}

void summarize_comm_stats(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement per_rank(db, "SELECT rank, comm_latency_us, step_time_ms FROM rank_stats WHERE session_id = ? AND "
                         "comm_records > 0 ORDER BY comm_latency_us DESC, rank LIMIT 1");
  per_rank.bind(1, id);
  if (per_rank.step()) set_slowest_comm_rank(s, per_rank.real(1) / 1e6, per_rank.optional_real(2));
  Statement ops(db, "SELECT op, SUM(count), SUM(bytes), SUM(latency_us), SUM(algbw_sum) / SUM(algbw_n), "
                    "SUM(busbw_sum) / SUM(busbw_n) FROM comm_stats WHERE session_id = ? GROUP BY op "
                    "ORDER BY SUM(latency_us) DESC");
  ops.bind(1, id);
  while (ops.step())
    s.comm_ops.push_back({ops.text(0), ops.int64(1), ops.int64(2), ops.real(3) / 1e6, ops.real(4), ops.real(5)});
}

void finish_series(SessionSummary& s, std::vector<double> (&series)[4]) {
  s.timed_steps = static_cast<std::int64_t>(series[0].size());
  if (!series[0].empty()) {
    s.median_step_ms = percentile(series[0], 0.5);
    s.p90_step_ms = percentile(series[0], 0.9);
  }
  s.samples_per_s = median_of(std::move(series[1]));
  s.tokens_per_s = median_of(std::move(series[2]));
  s.tflops_per_gpu = median_of(std::move(series[3]));
}

void summarize_comms(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement per_rank(db, "SELECT c.rank, c.total_us, (SELECT SUM(step_time_ms) FROM steps t WHERE "
                         "t.session_id = ?1 AND t.rank = c.rank) FROM (SELECT rank, SUM(latency_us) AS total_us "
                         "FROM comms WHERE session_id = ?1 GROUP BY rank) c ORDER BY c.total_us DESC, c.rank LIMIT 1");
  per_rank.bind(1, id);
  if (per_rank.step()) set_slowest_comm_rank(s, per_rank.real(1) / 1e6, per_rank.optional_real(2));
  Statement ops(db, "SELECT op, COUNT(*), SUM(bytes), SUM(latency_us), AVG(algbw_gbps), AVG(busbw_gbps) "
                    "FROM comms WHERE session_id = ? GROUP BY op ORDER BY SUM(latency_us) DESC");
  ops.bind(1, id);
  while (ops.step())
    s.comm_ops.push_back({ops.text(0), ops.int64(1), ops.int64(2), ops.real(3) / 1e6, ops.real(4), ops.real(5)});
}

// A session with DeepSpeed's aggregate comms table instead of per-collective records: the same
// quantities from its rows (count-weighted means; DeepSpeed's bandwidths are Gbit/s, ours GB/s).
void summarize_comm_summaries(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement per_rank(db, "SELECT c.rank, c.total_ms, (SELECT SUM(step_time_ms) FROM steps t WHERE "
                         "t.session_id = ?1 AND t.rank = c.rank) FROM (SELECT rank, SUM(total_latency_ms) AS total_ms "
                         "FROM comm_summaries WHERE session_id = ?1 GROUP BY rank) c ORDER BY c.total_ms DESC, c.rank "
                         "LIMIT 1");
  per_rank.bind(1, id);
  if (!per_rank.step()) return;
  set_slowest_comm_rank(s, per_rank.real(1) / 1e3, per_rank.optional_real(2));
  Statement ops(db, "SELECT op, SUM(count), SUM(message_bytes * count), SUM(total_latency_ms), "
                    "SUM(algbw_gbps * count) / MAX(SUM(count), 1), SUM(busbw_gbps * count) / MAX(SUM(count), 1) "
                    "FROM comm_summaries WHERE session_id = ? GROUP BY op ORDER BY SUM(total_latency_ms) DESC");
  ops.bind(1, id);
  while (ops.step())
    s.comm_ops.push_back({ops.text(0), ops.int64(1), ops.int64(2), ops.real(3) / 1e3, ops.real(4) / 8, ops.real(5) / 8});
}

// One scan of the timers key (session_id, name_id, step, rank), or of timer_stats' (session_id,
// name_id, step): per name, per step the slowest rank.
void summarize_timers(SqliteDb& db, std::int64_t id, bool stats, SessionSummary& s) {
  Statement rows(db, stats ? "SELECT n.text, t.max FROM timer_stats t JOIN names n ON n.id = t.name_id "
                             "WHERE t.session_id = ? ORDER BY t.name_id, t.step"
                           : "SELECT n.text, t.step_max FROM (SELECT name_id, step, MAX(ms) AS step_max FROM timers "
                             "WHERE session_id = ? GROUP BY name_id, step) t JOIN names n ON n.id = t.name_id");
  rows.bind(1, id);
  std::string name;
  std::vector<double> ms;
  auto flush = [&] {
    if (ms.empty()) return;
    double total = 0;
    for (double v : ms) total += v;
    s.timers.push_back({name, percentile(ms, 0.5), percentile(ms, 0.9), total / 1e3});
    ms.clear();
  };
  while (rows.step()) {
    std::string current = rows.text(0);
    if (current != name) {
      flush();
      name = std::move(current);
    }
    ms.push_back(rows.real(1));
  }
  flush();
  std::sort(s.timers.begin(), s.timers.end(), [](const TimerStat& a, const TimerStat& b) { return a.name < b.name; });
}

// The session's warning and error lines in one pass. Logs are indexed by (session, rank, id), not
// by level: counting a level through that index fetched every line of the session out of the
// table's order, 0.5 s a level for a 1,024-rank run's 0.6 M lines; its ids' range read in the
// table's order (the index gives the range) takes a fifth of that.
void count_log_levels(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement range(db, "SELECT MIN(id), MAX(id) FROM logs WHERE session_id = ?");
  range.bind(1, id);
  if (!range.step() || range.is_null(0)) return;
  Statement levels(db, "SELECT COUNT(CASE WHEN level = 2 THEN 1 END), COUNT(CASE WHEN level = 3 THEN 1 END) "
                       "FROM logs WHERE id BETWEEN ?2 AND ?3 AND +session_id = ?1");  // +: not through the index
  levels.bind(1, id).bind(2, range.int64(0)).bind(3, range.int64(1));
  if (levels.step()) s.warning_logs = levels.int64(0), s.error_logs = levels.int64(1);
}

std::int64_t count_rows(SqliteDb& db, const char* sql, std::int64_t id) {
  Statement s(db, sql);
  s.bind(1, id);
  return s.step() ? s.int64(0) : 0;
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw SessionsError(ErrorKind::kInvalidArgument, "percentile of an empty set");
  if (!(q >= 0 && q <= 1))
    throw SessionsError(ErrorKind::kInvalidArgument, "percentile " + std::to_string(q) + " is outside [0, 1]");
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(rank));
  const std::size_t upper = std::min(lower + 1, values.size() - 1);
  const double fraction = rank - static_cast<double>(lower);
  return values[lower] + (values[upper] - values[lower]) * fraction;
}

SessionSummary summarize_session(Store& store, std::int64_t session_id, const SummaryOptions& options) {
  const SessionDetail detail = load_session(store, session_id);
  SessionSummary s;
  s.info = detail.info;
  const bool stats = has_stats(store);  // a read-only older file is summarized from its rows
  if (stats) summarize_step_stats(store, session_id, options, s);
  else summarize_steps(store, session_id, options, s);
  if (s.tflops_per_gpu && detail.peak_tflops_per_gpu && *detail.peak_tflops_per_gpu > 0)
    s.mfu = *s.tflops_per_gpu / *detail.peak_tflops_per_gpu;
  SqliteDb& db = store.db();
  if (stats) summarize_comm_stats(db, session_id, s);
  else summarize_comms(db, session_id, s);
  if (s.comm_ops.empty()) summarize_comm_summaries(db, session_id, s);
  summarize_timers(db, session_id, stats, s);
  // Schema 11's device summaries count every record (0.3-0.5 s saved on a 5 M-kernel window).
  s.activity_records = store.schema_version() >= 11
      ? count_rows(db, "SELECT coalesce(SUM(activities), 0) FROM activity_device_stats WHERE session_id = ?", session_id)
      : count_rows(db, "SELECT COUNT(*) FROM activities WHERE session_id = ?", session_id);
  s.nvtx_ranges = count_rows(db, "SELECT COUNT(*) FROM nvtx_ranges WHERE session_id = ?", session_id);
  count_log_levels(db, session_id, s);
  return s;
}

}  // namespace shardscope::sessions
