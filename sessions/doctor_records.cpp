#include "sessions/doctor_records.hpp"

#include <optional>

#include <nlohmann/json.hpp>

#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

// The JSON arrays of ints the writer stores; anything else (a hand-edited file) reads as none.
std::vector<int> ints_of(const std::string& text) {
  std::vector<int> values;
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_array()) return values;
  for (const auto& v : json)
    if (v.is_number_integer()) values.push_back(v.get<int>());
  return values;
}

constexpr const char* kMarkColumns = "SELECT rank, grp, sequence, op, bytes, dtype, group_ranks, step, phase, tag, "
                                     "entered_at, left_at FROM collectives";

CollectiveMark mark_of(const Statement& q) {
  CollectiveMark m;
  m.rank = static_cast<int>(q.int64(0));
  m.group = q.text(1);
  m.sequence = q.int64(2);
  m.op = q.text(3);
  m.bytes = q.optional_int64(4).value_or(0);
  m.dtype = q.text(5);
  if (!q.is_null(6)) m.group_ranks = ints_of(q.text(6));  // NULL: the writer's empty list
  m.step = q.optional_int64(7).value_or(0);
  m.phase = q.text(8);
  m.tag = q.text(9);
  m.entered_at = q.optional_real(10).value_or(0);
  m.left_at = q.optional_real(11);
  return m;
}

// The columns of a steps row the numerics doctor reads.
constexpr const char* kNumericsColumns = "SELECT step, rank, loss, loss_scale, skipped FROM steps";

StepMetrics numerics_of(const Statement& q) {
  StepMetrics m;
  m.step = q.int64(0);
  m.rank = static_cast<int>(q.int64(1));
  m.loss = q.optional_real(2);
  m.loss_scale = q.optional_real(3);
  m.skipped = q.int64(4) != 0;
  return m;
}

std::vector<std::int64_t> sequences_of(const std::string& list) {
  std::vector<std::int64_t> sequences;
  for (std::size_t at = 0; at < list.size();) {
    std::size_t used = 0;
    sequences.push_back(std::stoll(list.substr(at), &used));
    at += used + 1;  // past the comma
  }
  return sequences;
}

}  // namespace

std::vector<Finding> load_findings(Store& store, std::int64_t session_id) {
  Statement q(store.db(), "SELECT kind, severity, first_step, last_step, ranks, summary, evidence, suggested_fix, "
                          "found_at FROM findings WHERE session_id = ? ORDER BY id");
  q.bind(1, session_id);
  std::vector<Finding> findings;
  while (q.step()) {
    Finding f;
    f.kind = q.text(0);
    f.severity = q.text(1);
    f.first_step = q.optional_int64(2).value_or(-1);
    f.last_step = q.optional_int64(3).value_or(-1);
    f.ranks = ints_of(q.text(4));
    f.summary = q.text(5);
    f.evidence = q.text(6);
    f.suggested_fix = q.text(7);
    f.found_at = q.optional_real(8).value_or(0);
    findings.push_back(std::move(f));
  }
  return findings;
}

std::vector<CollectiveMark> load_collective_marks(Store& store, std::int64_t session_id) {
  Statement q(store.db(), (std::string(kMarkColumns) + " WHERE session_id = ? ORDER BY rank, grp, sequence").c_str());
  q.bind(1, session_id);
  std::vector<CollectiveMark> marks;
  while (q.step()) marks.push_back(mark_of(q));
  return marks;
}

std::vector<StepMetrics> load_step_numerics(Store& store, std::int64_t session_id) {
  // The primary key (session_id, step, rank) gives the order; five columns of sixteen.
  Statement q(store.db(), (std::string(kNumericsColumns) + " WHERE session_id = ? ORDER BY step, rank").c_str());
  q.bind(1, session_id);
  std::vector<StepMetrics> steps;
  while (q.step()) steps.push_back(numerics_of(q));
  return steps;
}

std::vector<TimerColumn> load_timer_columns(Store& store, std::int64_t session_id) {
  // The primary key (session_id, name_id, step, rank) is the order wanted: no join, no sort; the
  // handful of timer names is looked up once each.
  Statement q(store.db(), "SELECT name_id, step, rank, ms FROM timers WHERE session_id = ? "
                          "ORDER BY name_id, step, rank");
  Statement name(store.db(), "SELECT text FROM names WHERE id = ?");
  q.bind(1, session_id);
  std::vector<TimerColumn> columns;
  std::optional<std::int64_t> name_id;
  bool named = false;  // a time whose name is missing is dropped, as a join with names would
  while (q.step()) {
    if (q.int64(0) != name_id) {
      name_id = q.int64(0);
      name.reset();
      name.bind(1, *name_id);
      named = name.step();
      if (named) columns.push_back({name.text(0), {}});
    }
    if (named) columns.back().samples.push_back({q.int64(1), static_cast<int>(q.int64(2)), q.real(3)});
  }
  return columns;
}


std::vector<StepLossStats> load_step_loss_stats(Store& store, std::int64_t session_id) {
  Statement q(store.db(), "SELECT step, skipped, loss_n, loss_sum, loss_min, loss_max, loss_scale_min FROM step_stats "
                          "WHERE session_id = ? ORDER BY step");
  q.bind(1, session_id);
  std::vector<StepLossStats> steps;
  while (q.step())
    steps.push_back({q.int64(0), q.int64(1), q.int64(2), q.optional_real(3), q.optional_real(4), q.optional_real(5),
                     q.optional_real(6)});
  return steps;
}

std::vector<StepMetrics> load_step_numerics_at(Store& store, std::int64_t session_id, std::int64_t step) {
  Statement q(store.db(), (std::string(kNumericsColumns) + " WHERE session_id = ? AND step = ? ORDER BY rank").c_str());
  q.bind(1, session_id).bind(2, step);
  std::vector<StepMetrics> rows;
  while (q.step()) rows.push_back(numerics_of(q));
  return rows;
}

std::int64_t count_doctor_rows(Store& store, std::int64_t session_id) {
  Statement q(store.db(), "SELECT (SELECT coalesce(SUM(ranks), 0) FROM step_stats WHERE session_id = ?1) + "
                          "(SELECT coalesce(SUM(n), 0) FROM timer_stats WHERE session_id = ?1)");
  q.bind(1, session_id);
  return q.step() ? q.int64(0) : 0;
}

std::vector<TimerStepCounts> load_timer_step_counts(Store& store, std::int64_t session_id) {
  // A time whose name is missing is dropped, as load_timer_columns drops it.
  Statement q(store.db(), "SELECT t.name_id, n.text, t.step, t.n FROM timer_stats t JOIN names n ON n.id = t.name_id "
                          "WHERE t.session_id = ? ORDER BY t.name_id, t.step");
  q.bind(1, session_id);
  std::vector<TimerStepCounts> timers;
  while (q.step()) {
    if (timers.empty() || timers.back().name_id != q.int64(0)) timers.push_back({q.int64(0), q.text(1), {}});
    timers.back().steps.emplace_back(q.int64(2), q.int64(3));
  }
  return timers;
}

TimerColumn load_timer_column_at(Store& store, std::int64_t session_id, std::int64_t name_id, const std::string& name,
                                 const std::vector<std::int64_t>& steps) {
  Statement q(store.db(), "SELECT rank, ms FROM timers WHERE session_id = ? AND name_id = ? AND step = ? ORDER BY rank");
  TimerColumn column{name, {}};
  for (const auto step : steps) {
    q.reset();
    q.bind(1, session_id).bind(2, name_id).bind(3, step);
    while (q.step()) column.samples.push_back({step, static_cast<int>(q.int64(0)), q.real(1)});
  }
  return column;
}

std::map<int, std::int64_t> load_last_steps(Store& store, std::int64_t session_id) {
  Statement ranks(store.db(), "SELECT rank FROM rank_stats WHERE session_id = ? AND steps > 0 ORDER BY rank");
  Statement last(store.db(), "SELECT MAX(step) FROM steps INDEXED BY steps_by_rank WHERE session_id = ? AND rank = ?");
  ranks.bind(1, session_id);
  std::map<int, std::int64_t> last_steps;
  while (ranks.step()) {
    const auto rank = static_cast<int>(ranks.int64(0));
    last.reset();
    last.bind(1, session_id).bind(2, rank);
    if (last.step() && !last.is_null(0)) last_steps[rank] = last.int64(0);
  }
  return last_steps;
}


std::vector<MarkEnds> load_mark_ends(Store& store, std::int64_t session_id) {
  // GROUP BY in the primary key's order streams: one pass, one row per rank and group kept.
  Statement q(store.db(), "SELECT rank, grp, MAX(sequence), MAX(CASE WHEN left_at IS NOT NULL THEN sequence END), "
                          "group_concat(CASE WHEN left_at IS NULL THEN sequence END), "
                          "MIN(CASE WHEN group_ranks IS NOT NULL THEN sequence END) FROM collectives "
                          "WHERE session_id = ? GROUP BY rank, grp ORDER BY rank, grp");
  q.bind(1, session_id);
  std::vector<MarkEnds> ends;
  while (q.step())
    ends.push_back({static_cast<int>(q.int64(0)), q.text(1), q.int64(2), q.optional_int64(3),
                    q.is_null(4) ? std::vector<std::int64_t>{} : sequences_of(q.text(4)), q.optional_int64(5)});
  return ends;
}

std::vector<CollectiveMark> load_marks_at(Store& store, std::int64_t session_id, const std::vector<MarkKey>& keys) {
  Statement q(store.db(), (std::string(kMarkColumns) + " WHERE session_id = ? AND rank = ? AND grp = ? AND sequence = ?").c_str());
  std::vector<CollectiveMark> marks;
  for (const auto& key : keys) {
    q.reset();
    q.bind(1, session_id).bind(2, key.rank).bind(3, key.group).bind(4, key.sequence);
    if (q.step()) marks.push_back(mark_of(q));
  }
  return marks;
}

}  // namespace shardscope::sessions
