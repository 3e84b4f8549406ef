#include "sessions/session_summary.hpp"

#include <algorithm>
#include <cmath>

#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

std::vector<double> values_after(const std::vector<CurvePoint>& curve, std::int64_t first_step) {
  std::vector<double> out;
  out.reserve(curve.size());
  for (const auto& p : curve)
    if (p.step >= first_step && std::isfinite(p.value)) out.push_back(p.value);
  return out;
}

std::optional<double> median_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  return percentile(std::move(values), 0.5);
}

void summarize_steps(Store& store, std::int64_t id, const SummaryOptions& options, SessionSummary& s) {
  SqliteDb& db = store.db();
  Statement count(db, "SELECT COUNT(DISTINCT step), COUNT(DISTINCT CASE WHEN skipped != 0 THEN step END) "
                      "FROM steps WHERE session_id = ?");
  count.bind(1, id);
  if (count.step()) {
    s.steps = count.int64(0);
    s.skipped_steps = count.int64(1);
  }
  const std::int64_t first = s.info.first_step.value_or(0) + options.warmup_steps;
  const auto step_ms = values_after(load_curve(store, id, Metric::kStepTime), first);
  s.timed_steps = static_cast<std::int64_t>(step_ms.size());
  if (!step_ms.empty()) {
    s.median_step_ms = percentile(step_ms, 0.5);
    s.p90_step_ms = percentile(step_ms, 0.9);
  }
  s.samples_per_s = median_of(values_after(load_curve(store, id, Metric::kSamplesPerS), first));
  s.tokens_per_s = median_of(values_after(load_curve(store, id, Metric::kTokensPerS), first));
  s.tflops_per_gpu = median_of(values_after(load_curve(store, id, Metric::kTflops), first));

  const auto loss = load_curve(store, id, Metric::kLoss);
  for (const auto& p : loss) {
    if (!std::isfinite(p.value)) continue;  // a NaN or inf loss is never "best"
    if (!s.best_loss || p.value < *s.best_loss) {
      s.best_loss = p.value;
      s.best_loss_step = p.step;
    }
  }
  if (!loss.empty()) {
    s.final_loss = loss.back().value;
    s.final_loss_step = loss.back().step;
  }
}

void summarize_memory(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement m(db, "SELECT rank, MAX(coalesce(mem_peak, mem_allocated)), MAX(mem_reserved) FROM steps "
                  "WHERE session_id = ? GROUP BY rank ORDER BY rank");
  m.bind(1, id);
  while (m.step()) s.memory.push_back({static_cast<int>(m.int64(0)), m.optional_int64(1), m.optional_int64(2)});
}

void summarize_comms(SqliteDb& db, std::int64_t id, SessionSummary& s) {
  Statement per_rank(db, "SELECT c.rank, c.total_us, (SELECT SUM(step_time_ms) FROM steps t WHERE "
                         "t.session_id = ?1 AND t.rank = c.rank) FROM (SELECT rank, SUM(latency_us) AS total_us "
                         "FROM comms WHERE session_id = ?1 GROUP BY rank) c ORDER BY c.total_us DESC, c.rank LIMIT 1");
  per_rank.bind(1, id);
  if (per_rank.step()) {
    s.comm_time_s = per_rank.real(1) / 1e6;
    if (auto step_ms = per_rank.optional_real(2); step_ms && *step_ms > 0)
      s.comm_fraction = *s.comm_time_s / (*step_ms / 1e3);
  }
  Statement ops(db, "SELECT op, COUNT(*), SUM(bytes), SUM(latency_us), AVG(algbw_gbps), AVG(busbw_gbps) "
                    "FROM comms WHERE session_id = ? GROUP BY op ORDER BY SUM(latency_us) DESC");
  ops.bind(1, id);
  while (ops.step())
    s.comm_ops.push_back({ops.text(0), ops.int64(1), ops.int64(2), ops.real(3) / 1e6, ops.real(4), ops.real(5)});
}

void summarize_timers(Store& store, std::int64_t id, SessionSummary& s) {
  for (const auto& name : load_timer_names(store, id)) {
    std::vector<double> ms;
    double total = 0;
    for (const auto& p : load_timer_curve(store, id, name)) {
      ms.push_back(p.value);
      total += p.value;
    }
    if (ms.empty()) continue;
    s.timers.push_back({name, percentile(ms, 0.5), percentile(ms, 0.9), total / 1e3});
  }
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
  summarize_steps(store, session_id, options, s);
  if (s.tflops_per_gpu && detail.peak_tflops_per_gpu && *detail.peak_tflops_per_gpu > 0)
    s.mfu = *s.tflops_per_gpu / *detail.peak_tflops_per_gpu;
  SqliteDb& db = store.db();
  summarize_memory(db, session_id, s);
  summarize_comms(db, session_id, s);
  summarize_timers(store, session_id, s);
  s.activity_records = count_rows(db, "SELECT COUNT(*) FROM activities WHERE session_id = ?", session_id);
  s.nvtx_ranges = count_rows(db, "SELECT COUNT(*) FROM nvtx_ranges WHERE session_id = ?", session_id);
  s.warning_logs = count_rows(db, "SELECT COUNT(*) FROM logs WHERE session_id = ? AND level = 2", session_id);
  s.error_logs = count_rows(db, "SELECT COUNT(*) FROM logs WHERE session_id = ? AND level = 3", session_id);
  return s;
}

}  // namespace shardscope::sessions
