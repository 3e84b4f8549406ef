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
  Statement q(store.db(), "SELECT rank, grp, sequence, op, bytes, dtype, group_ranks, step, phase, tag, entered_at, "
                          "left_at FROM collectives WHERE session_id = ? ORDER BY rank, grp, sequence");
  q.bind(1, session_id);
  std::vector<CollectiveMark> marks;
  while (q.step()) {
    CollectiveMark m;
    m.rank = static_cast<int>(q.int64(0));
    m.group = q.text(1);
    m.sequence = q.int64(2);
    m.op = q.text(3);
    m.bytes = q.optional_int64(4).value_or(0);
    m.dtype = q.text(5);
    m.group_ranks = ints_of(q.text(6));
    m.step = q.optional_int64(7).value_or(0);
    m.phase = q.text(8);
    m.tag = q.text(9);
    m.entered_at = q.optional_real(10).value_or(0);
    m.left_at = q.optional_real(11);
    marks.push_back(std::move(m));
  }
  return marks;
}

std::vector<StepMetrics> load_step_numerics(Store& store, std::int64_t session_id) {
  // The primary key (session_id, step, rank) gives the order; five columns of sixteen.
  Statement q(store.db(), "SELECT step, rank, loss, loss_scale, skipped FROM steps WHERE session_id = ? "
                          "ORDER BY step, rank");
  q.bind(1, session_id);
  std::vector<StepMetrics> steps;
  while (q.step()) {
    StepMetrics m;
    m.step = q.int64(0);
    m.rank = static_cast<int>(q.int64(1));
    m.loss = q.optional_real(2);
    m.loss_scale = q.optional_real(3);
    m.skipped = q.int64(4) != 0;
    steps.push_back(m);
  }
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

}  // namespace shardscope::sessions
