#include "sessions/store_writer.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include <nlohmann/json.hpp>

#include "sessions/activity_stats.hpp"
#include "sessions/credentials.hpp"
#include "sessions/session_json.hpp"
#include "sessions/session_liveness.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_stats.hpp"

namespace shardscope::sessions {
namespace {

// A zero time in RunStart/RunEnd means "not given" (the struct default); store NULL, not 1970.
std::optional<double> known_time(double unix_seconds) {
  return unix_seconds > 0 ? std::optional<double>(unix_seconds) : std::nullopt;
}

// {"NAME": "value", ...}; whoever sent them, only the allow-list's variables keep their values
// (credentials.hpp): a launch exports whatever .deepspeed_env holds, passwords included.
std::string environment_variables_json(const std::vector<std::pair<std::string, std::string>>& vars) {
  if (vars.empty()) return "";
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, value] : recorded_environment(vars, EnvironmentAllowList::from_environment()))
    object[name] = value;
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

struct StoreWriter::Impl {
  explicit Impl(SqliteDb& d)
      : db(d),
        find_session(d, "SELECT id FROM sessions WHERE uid = ?"),
        insert_session(d, "INSERT INTO sessions(uid, writer_host, writer_pid, writer_start) VALUES(?,?,?,?)"),
        run_start(d, "UPDATE sessions SET name = ?2, started_at = ?3, command_line = ?4, config_json = ?5, "
                     "config_hash = ?6, environment_json = ?7, world_size = ?8, shardscope_version = ?9, "
                     "git_hash = ?10, peak_tflops_per_gpu = ?11, writer_host = ?12, writer_pid = ?13, "
                     "writer_start = ?14, environment_variables_json = ?15 WHERE id = ?1"),
        host(d, "INSERT INTO hosts(session_id, host, node_rank, clock_offset_s, clock_uncertainty_s, "
                "shardscope_version, git_hash) VALUES(?,?,?,?,?,?,?) ON CONFLICT(session_id, host) DO UPDATE SET "
                "node_rank = excluded.node_rank, "
                "clock_offset_s = coalesce(excluded.clock_offset_s, hosts.clock_offset_s), "
                "clock_uncertainty_s = coalesce(excluded.clock_uncertainty_s, hosts.clock_uncertainty_s), "
                "shardscope_version = excluded.shardscope_version, git_hash = excluded.git_hash"),
        rank(d, "INSERT INTO ranks(session_id, rank, local_rank, host, pid, device) VALUES(?,?,?,?,?,?) "
                "ON CONFLICT(session_id, rank) DO UPDATE SET local_rank = excluded.local_rank, "
                "host = excluded.host, pid = excluded.pid, device = excluded.device"),
        tag(d, "INSERT OR IGNORE INTO session_tags(session_id, tag) VALUES(?, ?)"),
        step(d, "INSERT OR IGNORE INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        step_again(d, "INSERT OR REPLACE INTO steps VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        timer(d, "INSERT OR IGNORE INTO timers(session_id, name_id, step, rank, ms) VALUES(?,?,?,?,?)"),
        timer_again(d, "INSERT OR REPLACE INTO timers(session_id, name_id, step, rank, ms) VALUES(?,?,?,?,?)"),
        comm(d, "INSERT INTO comms(session_id, rank, step, op, bytes, latency_us, algbw_gbps, busbw_gbps, "
                "group_size) VALUES(?,?,?,?,?,?,?,?,?)"),
        activity(d, "INSERT INTO activities(session_id, rank, kind, name_id, start_ns, end_ns, device, stream, "
                    "bytes, step, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
                    "correlation_id, throughput_gbps) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        nvtx(d, "INSERT INTO nvtx_ranges(session_id, rank, name_id, domain, start_ns, end_ns, device, stream, "
                "step, shapes_id, external_id, sequence_number, forward_thread_id, forward_op_id) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        log(d, "INSERT INTO logs(session_id, rank, time, level, text) VALUES(?,?,?,?,?)"),
        run_end(d, "UPDATE sessions SET status = ?2, ended_at = ?3, wall_time_s = ?4 WHERE id = ?1"),
        rank_exit(d, "INSERT INTO ranks(session_id, rank, exit_code) VALUES(?,?,?) "
                     "ON CONFLICT(session_id, rank) DO UPDATE SET exit_code = excluded.exit_code"),
        series(d, "INSERT OR REPLACE INTO series(session_id, name_id, step, rank, value) VALUES(?,?,?,?,?)"),
        comm_summary(d, "INSERT INTO comm_summaries(session_id, rank, op, message_bytes, count, total_latency_ms, "
                        "avg_latency_ms, algbw_gbps, busbw_gbps) VALUES(?,?,?,?,?,?,?,?,?)"),
        origin(d, "UPDATE sessions SET origin = ?2, origin_json = ?3 WHERE id = ?1"),
        mark(d, "INSERT INTO collectives(session_id, rank, grp, sequence, op, bytes, dtype, group_ranks, step, "
                "phase, tag, entered_at, left_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT(session_id, rank, grp, sequence) DO UPDATE SET left_at = excluded.left_at"),
        forget_mark(d, "DELETE FROM collectives WHERE session_id = ? AND rank = ? AND grp = ? AND sequence = ?"),
        finding(d, "INSERT INTO findings(session_id, kind, severity, first_step, last_step, ranks, summary, "
                   "evidence, suggested_fix, found_at) VALUES(?,?,?,?,?,?,?,?,?,?)"),
        find_name(d, "SELECT id FROM names WHERE text = ?"),
        insert_name(d, "INSERT INTO names(text) VALUES(?)"),
        stats(d),
        activity_stats(d) {}

  std::int64_t session_id(const std::string& uid);
  std::int64_t name_id(const std::string& text);
  void write_event(std::int64_t session, const Event& event);
  void write_queued(std::int64_t session, const QueuedEvent& event);
  // One overload per kind of event (write_event and write_queued dispatch to them).
  void write_kind(std::int64_t session, const RunStart& e) { write_run_start(session, e); }
  void write_kind(std::int64_t session, const StepMetrics& e) {
    held_steps.emplace_back(session, &e);  // written at the batch's end, in key order (write_held_rows)
  }
  void write_kind(std::int64_t session, const TimerBreakdown& e) { write_timers(session, e); }
  void write_kind(std::int64_t session, const CommRecord& e);
  void write_kind(std::int64_t session, const ActivityBatch& e);
  void write_kind(std::int64_t session, const NvtxBatch& e);
  void write_kind(std::int64_t session, const LogLine& e);
  void write_kind(std::int64_t session, const RunEnd& e);
  void write_kind(std::int64_t session, const HostReport& e) { write_host_report(session, e); }
  void write_kind(std::int64_t session, const CollectiveMark& e) { hold_mark(session, e, e.left_at); }
  void write_kind(std::int64_t session, const Finding& e);
  void write_kind(std::int64_t session, const SeriesPoint& e);
  void write_kind(std::int64_t session, const CommSummary& e);
  void write_kind(std::int64_t session, const SessionOrigin& e);
  /// Runs `write_events` (which writes one batch's events) in one transaction, with the held rows
  /// and the aggregates; on failure rolls back and forgets every cache the rows fed.
  template <class WriteEvents>
  void in_transaction(const WriteEvents& write_events);
  void write_run_start(std::int64_t session, const RunStart& e);
  void write_step(std::int64_t session, const StepMetrics& e);
  void write_timers(std::int64_t session, const TimerBreakdown& e);
  /// Runs `insert` (INSERT OR IGNORE); where the key was there, runs `again` (OR REPLACE) with the
  /// same values. True when the row replaced an earlier one.
  template <class BindRow>
  bool insert_or_replace(Statement& insert, Statement& again, const BindRow& bind_row);
  /// Writes the batch's step and timer rows, held back until now, in key order.
  void write_held_rows();
  void forget_held_rows();
  /// One flight-record row: `m` as entered, with `left_at` (its own, or its leave mark's); held
  /// until the batch's end with the older row it forgets (write_held_rows).
  void hold_mark(std::int64_t session, const CollectiveMark& m, const std::optional<double>& left_at);
  void write_mark(std::int64_t session, const CollectiveMark& m, const std::optional<double>& left_at);

  SqliteDb& db;
  void write_host_report(std::int64_t session, const HostReport& e);
  void write_ranks(std::int64_t session, const std::vector<RankInfo>& ranks);
  void write_exit_codes(std::int64_t session, const std::vector<RankExit>& exits);

  Statement find_session, insert_session, run_start, host, rank, tag, step, step_again, timer, timer_again, comm,
      activity, nvtx, log, run_end, rank_exit, series, comm_summary, origin, mark, forget_mark, finding, find_name,
      insert_name;
  // A batch's step and timer rows, written at its end in primary-key order (write_held_rows).
  struct TimerRow {
    std::int64_t session, name, step, rank;
    double ms;
  };
  // A mark's row (its upsert, or forgetting the row of sequence - kCollectivesKept), keyed by the
  // row it touches.
  struct MarkRow {
    std::int64_t session;
    const CollectiveMark* mark;
    std::int64_t sequence;  // the row's: the mark's own, or the one it forgets
    std::optional<double> left_at;
    bool forget;
  };
  std::vector<std::pair<std::int64_t, const StepMetrics*>> held_steps;
  std::vector<TimerRow> held_timers;
  std::vector<MarkRow> held_marks;
  StatsAccumulator stats;  // the pre-aggregates of what this batch writes (store_stats.hpp)
  ActivityStatsAccumulator activity_stats;  // the profiled window's summaries (activity_stats.hpp)
  // Caches of committed ids; cleared when a transaction rolls back, since its ids vanish with it.
  std::unordered_map<std::string, std::int64_t> sessions;
  std::unordered_map<std::string, std::int64_t> names;
};

std::int64_t StoreWriter::Impl::session_id(const std::string& uid) {
  if (auto it = sessions.find(uid); it != sessions.end()) return it->second;
  find_session.bind(1, uid);
  std::int64_t id;
  if (find_session.step()) {
    id = find_session.int64(0);
    find_session.reset();
  } else {
    find_session.reset();
    const ProcessIdentity writer = this_process_identity();
    insert_session.bind(1, uid).bind(2, writer.host).bind(3, writer.pid).bind(4, writer.start).run();
    id = db.last_insert_rowid();
  }
  sessions.emplace(uid, id);
  return id;
}

std::int64_t StoreWriter::Impl::name_id(const std::string& text) {
  if (auto it = names.find(text); it != names.end()) return it->second;
  find_name.bind(1, text);
  std::int64_t id;
  if (find_name.step()) {
    id = find_name.int64(0);
    find_name.reset();
  } else {
    find_name.reset();
    insert_name.bind(1, text).run();
    id = db.last_insert_rowid();
  }
  names.emplace(text, id);
  return id;
}

void StoreWriter::Impl::write_run_start(std::int64_t session, const RunStart& e) {
  const std::string hash =
      e.config_hash.empty() && !e.config_json.empty() ? compute_config_hash(e.config_json) : e.config_hash;
  run_start.bind(1, session).bind(2, e.name).bind(3, known_time(e.started_at))
      .bind(4, lenient_json_text(nlohmann::json(e.command_line))).bind(5, e.config_json).bind(6, hash)
      .bind(7, lenient_json_text(report_to_json(e.environment))).bind(8, e.world_size)
      .bind(9, e.environment.versions.shardscope).bind(10, e.environment.versions.git_hash)
      .bind(11, e.peak_tflops_per_gpu > 0 ? std::optional<double>(e.peak_tflops_per_gpu) : std::nullopt)
      .bind(15, environment_variables_json(e.environment_variables));
  if (e.environment_variables.empty()) run_start.bind_null(15);
  // The process writing RunStart owns the session from here on (it is the one whose death strands it).
  const ProcessIdentity writer = this_process_identity();
  run_start.bind(12, writer.host).bind(13, writer.pid).bind(14, writer.start).run();
  write_ranks(session, e.ranks);
  for (const auto& t : e.tags) tag.bind(1, session).bind(2, t).run();
}

void StoreWriter::Impl::write_ranks(std::int64_t session, const std::vector<RankInfo>& ranks) {
  for (const auto& r : ranks)
    rank.bind(1, session).bind(2, r.rank).bind(3, r.local_rank).bind(4, r.host).bind(5, r.pid)
        .bind(6, r.device).run();
}

void StoreWriter::Impl::write_exit_codes(std::int64_t session, const std::vector<RankExit>& exits) {
  for (const auto& x : exits) rank_exit.bind(1, session).bind(2, x.rank).bind(3, x.exit_code).run();
}

void StoreWriter::Impl::write_host_report(std::int64_t session, const HostReport& e) {
  host.bind(1, session).bind(2, e.host).bind(3, e.node_rank).bind(4, e.clock_offset_s)
      .bind(5, e.clock_uncertainty_s).bind(6, e.shardscope_version).bind(7, e.git_hash).run();
  write_ranks(session, e.ranks);
  write_exit_codes(session, e.exit_codes);
}

// A re-sent row (a resumed run reporting a step again) replaces the earlier one, as TensorBoard
// shows the latest value; the stats of its key are then recomputed instead of added to.
template <class BindRow>
bool StoreWriter::Impl::insert_or_replace(Statement& insert, Statement& again, const BindRow& bind_row) {
  bind_row(insert);
  insert.run();
  if (sqlite3_changes(db.handle()) > 0) return false;
  bind_row(again);
  again.run();
  return true;
}

void StoreWriter::Impl::write_step(std::int64_t session, const StepMetrics& e) {
  const bool replaced = insert_or_replace(step, step_again, [&](Statement& s) {
    s.bind(1, session).bind(2, e.step).bind(3, e.rank).bind(4, e.wall_time).bind(5, e.step_time_ms)
        .bind(6, e.loss).bind(7, e.lr).bind(8, e.loss_scale).bind(9, e.grad_norm).bind(10, e.skipped ? 1 : 0)
        .bind(11, e.samples_per_s).bind(12, e.tokens_per_s).bind(13, e.tflops).bind(14, e.mem_allocated_bytes)
        .bind(15, e.mem_reserved_bytes).bind(16, e.mem_peak_bytes);
  });
  stats.add_step(session, e, replaced);
}

void StoreWriter::Impl::write_timers(std::int64_t session, const TimerBreakdown& e) {
  for (const auto& t : e.timers) held_timers.push_back({session, name_id(t.name), e.step, e.rank, t.ms});
}

// Ranks send their steps one rank after another, so a batch's step and timer rows, written as they
// came, jump between a leaf of each timer name (and of steps) for every rank: at 1,024 ranks the
// B-tree seeks of those rows were a third of the writer's time (docs/benchmarks.md, issue 35).
// Sorted by primary key, each row's seek finds the pages of the one before it in the CPU's cache.
// The rows are the same; a key sent twice in one batch keeps its order (stable sort), so the
// later one still replaces the earlier. The marks' rows go the same way, each operation (upsert,
// or forgetting an old sequence) under the key of the row it touches: every row sees its own
// operations in the order they came, and operations on different rows do not interact.
void StoreWriter::Impl::write_held_rows() {
  std::stable_sort(held_marks.begin(), held_marks.end(), [](const MarkRow& a, const MarkRow& b) {
    return std::tie(a.session, a.mark->rank, a.mark->group, a.sequence) <
           std::tie(b.session, b.mark->rank, b.mark->group, b.sequence);
  });
  for (const MarkRow& m : held_marks) {
    if (!m.forget) write_mark(m.session, *m.mark, m.left_at);
    else forget_mark.bind(1, m.session).bind(2, m.mark->rank).bind(3, m.mark->group).bind(4, m.sequence).run();
  }
  std::stable_sort(held_steps.begin(), held_steps.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->step, a.second->rank) < std::tie(b.first, b.second->step, b.second->rank);
  });
  for (const auto& [session, m] : held_steps) write_step(session, *m);
  std::stable_sort(held_timers.begin(), held_timers.end(), [](const TimerRow& a, const TimerRow& b) {
    return std::tie(a.session, a.name, a.step, a.rank) < std::tie(b.session, b.name, b.step, b.rank);
  });
  for (const TimerRow& t : held_timers) {
    const bool replaced = insert_or_replace(timer, timer_again, [&](Statement& s) {
      s.bind(1, t.session).bind(2, t.name).bind(3, t.step).bind(4, t.rank).bind(5, t.ms);
    });
    stats.add_timer(t.session, t.name, t.step, t.ms, replaced);
  }
  forget_held_rows();
}

void StoreWriter::Impl::forget_held_rows() {
  held_marks.clear();
  held_steps.clear();
  held_timers.clear();
}

namespace {

std::optional<std::int64_t> dim_part(const std::optional<Dim3>& dim, int Dim3::*part) {
  return dim ? std::optional<std::int64_t>((*dim).*part) : std::nullopt;
}

// Columns 11-19 of the activity insert: the optional details (NULL when not recorded).
void bind_details(Statement& s, const ActivityRecord& a) {
  int column = 11;
  for (const auto* dim : {&a.grid, &a.block})
    for (const auto part : {&Dim3::x, &Dim3::y, &Dim3::z}) s.bind(column++, dim_part(*dim, part));
  s.bind(17, a.registers_per_thread ? std::optional<std::int64_t>(*a.registers_per_thread) : std::nullopt);
  s.bind(18, a.correlation_id);
  s.bind(19, a.throughput_gbps);
}

}  // namespace

// The events of schema 4 (runs ShardScope's engine did not record).
void StoreWriter::Impl::write_kind(std::int64_t session, const SeriesPoint& e) {
  series.bind(1, session).bind(2, name_id(e.name)).bind(3, e.step).bind(4, e.rank).bind(5, e.value).run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const CommSummary& e) {
  comm_summary.bind(1, session).bind(2, e.rank).bind(3, e.op).bind(4, e.message_bytes).bind(5, e.count)
      .bind(6, e.total_latency_ms).bind(7, e.avg_latency_ms).bind(8, e.algbw_gbps).bind(9, e.busbw_gbps).run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const SessionOrigin& e) {
  origin.bind(1, session).bind(2, e.kind).bind(3, e.details_json).run();
}

std::string ints_json(const std::vector<int>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

// A rank's marks are kept for its latest kCollectivesKept collectives per group: entering number s
// forgets number s - kCollectivesKept (one key lookup), so a long run's table stays small.
void StoreWriter::Impl::hold_mark(std::int64_t session, const CollectiveMark& m, const std::optional<double>& left_at) {
  held_marks.push_back({session, &m, m.sequence, left_at, false});
  if (!m.left_at && m.sequence > kCollectivesKept)
    held_marks.push_back({session, &m, m.sequence - kCollectivesKept, std::nullopt, true});
}

void StoreWriter::Impl::write_mark(std::int64_t session, const CollectiveMark& m, const std::optional<double>& left_at) {
  mark.bind(1, session).bind(2, m.rank).bind(3, m.group).bind(4, m.sequence).bind(5, m.op).bind(6, m.bytes)
      .bind(7, m.dtype).bind(9, m.step).bind(10, m.phase).bind(11, m.tag).bind(12, m.entered_at);
  if (!m.group_ranks.empty()) mark.bind(8, ints_json(m.group_ranks));
  if (left_at) mark.bind(13, *left_at);
  mark.run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const Finding& f) {
  finding.bind(1, session).bind(2, f.kind).bind(3, f.severity).bind(4, f.first_step).bind(5, f.last_step)
      .bind(6, ints_json(f.ranks)).bind(7, f.summary).bind(8, f.evidence).bind(9, f.suggested_fix)
      .bind(10, known_time(f.found_at)).run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const CommRecord& e) {
  stats.add_comm(session, e);  // before its row: the rank's earlier records of the step are asked for
  comm.bind(1, session).bind(2, e.rank).bind(3, e.step).bind(4, e.op).bind(5, e.bytes).bind(6, e.latency_us)
      .bind(7, e.algbw_gbps).bind(8, e.busbw_gbps).bind(9, e.group_size).run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const ActivityBatch& e) {
  std::vector<std::int64_t> name_ids;
  name_ids.reserve(e.records.size());
  for (const auto& a : e.records) name_ids.push_back(name_id(a.name));
  activity_stats.add_batch(session, e, name_ids);  // before its rows: it reads the rows already there
  for (std::size_t i = 0; i < e.records.size(); ++i) {
    const ActivityRecord& a = e.records[i];
    activity.bind(1, session).bind(2, e.rank).bind(3, static_cast<int>(a.kind)).bind(4, name_ids[i])
        .bind(5, a.start_ns).bind(6, a.end_ns).bind(7, a.device).bind(8, a.stream).bind(9, a.bytes)
        .bind(10, a.step);
    bind_details(activity, a);
    activity.run();
  }
}

void StoreWriter::Impl::write_kind(std::int64_t session, const NvtxBatch& e) {
  for (const auto& n : e.ranges) {
    nvtx.bind(1, session).bind(2, e.rank).bind(3, name_id(n.name)).bind(4, n.domain).bind(5, n.start_ns)
        .bind(6, n.end_ns).bind(7, n.device).bind(8, n.stream).bind(9, n.step);
    if (n.shapes.empty()) nvtx.bind_null(10);
    else nvtx.bind(10, name_id(n.shapes));
    nvtx.bind(11, n.external_id).bind(12, n.sequence_number).bind(13, n.forward_thread_id)
        .bind(14, n.forward_op_id).run();
  }
}

void StoreWriter::Impl::write_kind(std::int64_t session, const LogLine& e) {
  log.bind(1, session).bind(2, e.rank).bind(3, e.time).bind(4, static_cast<int>(e.level)).bind(5, e.text).run();
}

void StoreWriter::Impl::write_kind(std::int64_t session, const RunEnd& e) {
  run_end.bind(1, session).bind(2, e.status).bind(3, known_time(e.ended_at)).bind(4, e.wall_time_s).run();
  write_exit_codes(session, e.exit_codes);
}

void StoreWriter::Impl::write_event(std::int64_t session, const Event& event) {
  std::visit([&](const auto& e) { write_kind(session, e); }, event);
}

void StoreWriter::Impl::write_queued(std::int64_t session, const QueuedEvent& event) {
  std::visit(
      [&](const auto& e) {
        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, std::unique_ptr<const Event>>) write_event(session, *e);
        else write_kind(session, e);
      },
      event);
}

namespace {

// A rank sends a collective's enter mark and, when its wait returns, the leave mark: usually one
// right after the other in the same batch. Written as one row (the enter's, with the leave's
// time) they cost one upsert instead of an insert and an update of the same key: the marks were
// 6 of a step's 15 records and a third of the writer's time at 1,024 ranks (issue 35).
const CollectiveMark* leave_of(const CollectiveMark* in, const CollectiveMark* out) {
  if (!in || !out || in->left_at || !out->left_at) return nullptr;
  if (in->rank != out->rank || in->sequence != out->sequence || in->group != out->group) return nullptr;
  return out;
}

const CollectiveMark* leave_of(const SessionEvent& enter, const SessionEvent& next) {
  if (enter.session_uid != next.session_uid && *enter.session_uid != *next.session_uid) return nullptr;
  return leave_of(std::get_if<CollectiveMark>(&enter.event), std::get_if<CollectiveMark>(&next.event));
}

}  // namespace

QueuedEvent queued_event(Event&& event) {
  return std::visit(
      [&](auto&& e) -> QueuedEvent {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_constructible_v<QueuedEvent, std::in_place_type_t<T>, T&&>)
          return QueuedEvent(std::in_place_type<T>, std::move(e));
        else
          return std::make_unique<const Event>(std::move(event));
      },
      std::move(event));
}

template <class WriteEvents>
void StoreWriter::Impl::in_transaction(const WriteEvents& write_events) {
  try {
    Transaction transaction(db);
    write_events();
    write_held_rows();
    stats.flush();
    activity_stats.flush();
    transaction.commit();
  } catch (...) {
    forget_held_rows();
    sessions.clear();
    names.clear();
    stats.clear();
    activity_stats.clear();
    throw;
  }
}

StoreWriter::StoreWriter(Store& store) : impl_(std::make_unique<Impl>(store.db())) {}
StoreWriter::~StoreWriter() = default;

void StoreWriter::write(const std::vector<SessionEvent>& batch) {
  if (batch.empty()) return;
  impl_->in_transaction([&] {
    const std::string* last_uid = nullptr;
    std::int64_t session = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const SessionEvent& item = batch[i];
      if (!last_uid || *item.session_uid != *last_uid) {
        session = impl_->session_id(*item.session_uid);
        last_uid = item.session_uid.get();
      }
      if (const CollectiveMark* leave = i + 1 < batch.size() ? leave_of(item, batch[i + 1]) : nullptr) {
        impl_->hold_mark(session, std::get<CollectiveMark>(item.event), leave->left_at);
        ++i;  // the leave is written with its enter
        continue;
      }
      impl_->write_event(session, item.event);
    }
  });
}

void StoreWriter::write(const std::string& session_uid, const std::vector<const QueuedEvent*>& batch) {
  if (batch.empty()) return;
  impl_->in_transaction([&] {
    const std::int64_t session = impl_->session_id(session_uid);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto* enter = std::get_if<CollectiveMark>(batch[i]);
      if (const CollectiveMark* leave =
              enter && i + 1 < batch.size() ? leave_of(enter, std::get_if<CollectiveMark>(batch[i + 1])) : nullptr) {
        impl_->hold_mark(session, *enter, leave->left_at);
        ++i;  // the leave is written with its enter
        continue;
      }
      impl_->write_queued(session, *batch[i]);
    }
  });
}

void StoreWriter::write(const std::string& session_uid, const std::vector<Event>& events) {
  auto uid = std::make_shared<const std::string>(session_uid);
  std::vector<SessionEvent> batch;
  batch.reserve(events.size());
  for (const auto& e : events) batch.push_back({uid, e});
  write(batch);
}

std::int64_t StoreWriter::ensure_session(const std::string& uid) {
  try {
    return impl_->session_id(uid);
  } catch (...) {
    impl_->sessions.erase(uid);
    throw;
  }
}

}  // namespace shardscope::sessions
