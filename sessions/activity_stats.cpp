#include "sessions/activity_stats.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "sessions/interval_set.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

// Frozen with schema 11: files of version 11 were created by exactly this text. A window with no
// record of positive length has no window (NULL start and end); longest_ns bounds the writer's
// search for the rows that overlap a new batch.
constexpr const char* kActivityStatsSql = R"sql(
CREATE TABLE activity_device_stats(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  device INTEGER NOT NULL,
  activities INTEGER NOT NULL,
  window_start_ns INTEGER,
  window_end_ns INTEGER,
  busy_ns INTEGER NOT NULL,
  comm_kernels INTEGER NOT NULL,
  comm_ns INTEGER NOT NULL,
  hidden_ns INTEGER NOT NULL,
  longest_ns INTEGER NOT NULL,
  PRIMARY KEY(session_id, rank, device)
) WITHOUT ROWID;

CREATE TABLE activity_name_stats(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  name_id INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  total_ns INTEGER NOT NULL,
  stepped_calls INTEGER NOT NULL,
  stepped_ns INTEGER NOT NULL,
  PRIMARY KEY(session_id, rank, kind, name_id)
) WITHOUT ROWID;

CREATE TABLE activity_step_stats(
  session_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  activities INTEGER NOT NULL,
  PRIMARY KEY(session_id, rank, step)
) WITHOUT ROWID;
)sql";

// A device's intervals: every record (busy), NCCL kernels (comm) and the other kernels (compute).
struct DeviceSpans {
  IntervalSet busy, comm, compute;
  std::int64_t activities = 0, comm_kernels = 0, longest = 0;

  void add(ActivityKind kind, bool nccl, std::int64_t start, std::int64_t end) {
    ++activities;
    busy.add(start, end);
    longest = std::max(longest, end - start);
    if (kind != ActivityKind::kKernel) return;
    (nccl ? comm : compute).add(start, end);
    comm_kernels += nccl ? 1 : 0;
  }
  DeviceActivityStats stats(int device) const {
    return {device,         activities,   busy.lowest(), busy.highest(), busy.measure(),
            comm_kernels,   comm.measure(), comm.intersection_measure(compute)};
  }
};

std::string either(const char* f, const std::string& a, const std::string& b) {
  return "CASE WHEN " + a + " IS NULL THEN " + b + " WHEN " + b + " IS NULL THEN " + a + " ELSE " + f + "(" + a +
         ", " + b + ") END";
}

// The device row's upsert: counts and lengths add up (a batch's lengths are what it added to the
// unions), the window widens.
std::string device_upsert_sql() {
  return "INSERT INTO activity_device_stats VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, rank, device) "
         "DO UPDATE SET activities = activities + excluded.activities, window_start_ns = " +
         either("min", "window_start_ns", "excluded.window_start_ns") +
         ", window_end_ns = " + either("max", "window_end_ns", "excluded.window_end_ns") +
         ", busy_ns = busy_ns + excluded.busy_ns, comm_kernels = comm_kernels + excluded.comm_kernels, "
         "comm_ns = comm_ns + excluded.comm_ns, hidden_ns = hidden_ns + excluded.hidden_ns, "
         "longest_ns = max(longest_ns, excluded.longest_ns)";
}

void write_device(Statement& upsert, std::int64_t session, int rank, const DeviceActivityStats& d,
                  bool has_window, std::int64_t longest) {
  upsert.bind(1, session).bind(2, rank).bind(3, d.device).bind(4, d.activities);
  if (has_window) upsert.bind(5, d.window_start_ns).bind(6, d.window_end_ns);
  upsert.bind(7, d.busy_ns).bind(8, d.comm_kernels).bind(9, d.comm_ns).bind(10, d.hidden_ns).bind(11, longest);
  upsert.run();
}

// One rank's name and step figures, as the writer keeps them for a batch.
struct NameDelta {
  std::int64_t calls = 0, total_ns = 0, stepped_calls = 0, stepped_ns = 0;
  void add(std::int64_t ns, std::int64_t step) {
    ++calls;
    total_ns += ns;
    if (step >= 0) ++stepped_calls, stepped_ns += ns;
  }
};

constexpr const char* kNameUpsert =
    "INSERT INTO activity_name_stats VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(session_id, rank, kind, name_id) DO UPDATE "
    "SET calls = calls + excluded.calls, total_ns = total_ns + excluded.total_ns, "
    "stepped_calls = stepped_calls + excluded.stepped_calls, stepped_ns = stepped_ns + excluded.stepped_ns";
constexpr const char* kStepUpsert =
    "INSERT INTO activity_step_stats VALUES(?,?,?,?) ON CONFLICT(session_id, rank, step) DO UPDATE "
    "SET activities = activities + excluded.activities";

void write_name(Statement& upsert, std::int64_t session, int rank, int kind, std::int64_t name_id, const NameDelta& n) {
  upsert.bind(1, session).bind(2, rank).bind(3, kind).bind(4, name_id).bind(5, n.calls).bind(6, n.total_ns)
      .bind(7, n.stepped_calls).bind(8, n.stepped_ns).run();
}

// The migration's one pass over the rows, a (session, rank) at a time by start time (the index's
// order, so a rank's intervals arrive sorted). A row of NULL device or step reads as 0, as
// load_activities reads it.
void fill_from_rows(SqliteDb& db) {
  std::unordered_map<std::int64_t, bool> nccl;
  for (Statement names(db, "SELECT id, text FROM names"); names.step();) nccl[names.int64(0)] = is_nccl_kernel_name(names.text(1));
  Statement rows(db, "SELECT session_id, rank, kind, name_id, start_ns, end_ns, coalesce(device, 0), coalesce(step, 0) "
                     "FROM activities INDEXED BY activities_by_session ORDER BY session_id, rank, start_ns");
  Statement device_upsert(db, device_upsert_sql().c_str()), name_upsert(db, kNameUpsert), step_upsert(db, kStepUpsert);
  std::optional<std::pair<std::int64_t, int>> current;
  std::map<int, DeviceSpans> devices;
  std::map<std::pair<int, std::int64_t>, NameDelta> names;  // (kind, name_id)
  std::map<std::int64_t, std::int64_t> steps;
  auto write = [&] {
    const auto [session, rank] = *current;
    for (const auto& [device, spans] : devices)
      write_device(device_upsert, session, rank, spans.stats(device), !spans.busy.empty(), spans.longest);
    for (const auto& [key, n] : names) write_name(name_upsert, session, rank, key.first, key.second, n);
    for (const auto& [step, count] : steps) step_upsert.bind(1, session).bind(2, rank).bind(3, step).bind(4, count).run();
    devices.clear();
    names.clear();
    steps.clear();
  };
  while (rows.step()) {
    const std::pair<std::int64_t, int> key{rows.int64(0), static_cast<int>(rows.int64(1))};
    if (current && key != *current) write();
    current = key;
    const int kind = static_cast<int>(rows.int64(2));
    const std::int64_t name_id = rows.int64(3), start = rows.int64(4), end = rows.int64(5), step = rows.int64(7);
    devices[static_cast<int>(rows.int64(6))].add(static_cast<ActivityKind>(kind), nccl[name_id], start, end);
    names[{kind, name_id}].add(end - start, step);
    ++steps[step];
  }
  if (current) write();
}

}  // namespace

bool is_nccl_kernel_name(const std::string& name) {
  std::size_t at = 0;
  if (name.compare(0, 5, "void ") == 0) at = 5;
  if (name.size() < at + 4) return false;
  std::string prefix = name.substr(at, 4);
  for (auto& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return prefix == "nccl";
}

RankActivityStats summarize_activities(int rank, const std::vector<ActivityRecord>& records) {
  std::map<int, DeviceSpans> devices;
  std::map<std::pair<int, std::string>, NameActivityStats> names;
  std::set<std::int64_t> steps;
  for (const auto& r : records) {
    devices[r.device].add(r.kind, r.kind == ActivityKind::kKernel && is_nccl_kernel_name(r.name), r.start_ns, r.end_ns);
    NameActivityStats& n = names[{static_cast<int>(r.kind), r.name}];
    n.kind = r.kind;
    n.name = r.name;
    ++n.calls;
    n.total_ns += r.end_ns - r.start_ns;
    if (r.step < 0) continue;
    ++n.stepped_calls;
    n.stepped_ns += r.end_ns - r.start_ns;
    steps.insert(r.step);
  }
  RankActivityStats out;
  out.rank = rank;
  for (const auto& [device, spans] : devices) out.devices.push_back(spans.stats(device));
  for (auto& [key, n] : names) out.names.push_back(std::move(n));
  out.steps.assign(steps.begin(), steps.end());
  return out;
}

RankActivityStats load_activity_stats(Store& store, std::int64_t session_id, int rank) {
  if (store.schema_version() < 11) return summarize_activities(rank, load_activities(store, session_id, rank));
  RankActivityStats out;
  out.rank = rank;
  Statement d(store.db(), "SELECT device, activities, coalesce(window_start_ns, 0), coalesce(window_end_ns, 0), busy_ns, "
                          "comm_kernels, comm_ns, hidden_ns FROM activity_device_stats WHERE session_id = ? AND rank = ? "
                          "ORDER BY device");
  d.bind(1, session_id).bind(2, rank);
  while (d.step())
    out.devices.push_back({static_cast<int>(d.int64(0)), d.int64(1), d.int64(2), d.int64(3), d.int64(4), d.int64(5),
                           d.int64(6), d.int64(7)});
  Statement n(store.db(), "SELECT s.kind, n.text, s.calls, s.total_ns, s.stepped_calls, s.stepped_ns FROM activity_name_stats s "
                          "JOIN names n ON n.id = s.name_id WHERE s.session_id = ? AND s.rank = ?");
  n.bind(1, session_id).bind(2, rank);
  while (n.step())
    out.names.push_back({static_cast<ActivityKind>(n.int64(0)), n.text(1), n.int64(2), n.int64(3), n.int64(4), n.int64(5)});
  std::sort(out.names.begin(), out.names.end(), [](const NameActivityStats& a, const NameActivityStats& b) {
    const int ka = static_cast<int>(a.kind), kb = static_cast<int>(b.kind);
    return std::tie(ka, a.name) < std::tie(kb, b.name);
  });
  Statement s(store.db(), "SELECT step FROM activity_step_stats WHERE session_id = ? AND rank = ? AND step >= 0 "
                          "ORDER BY step");
  s.bind(1, session_id).bind(2, rank);
  while (s.step()) out.steps.push_back(s.int64(0));
  return out;
}

std::string activity_stats_schema_sql() { return kActivityStatsSql; }

void fill_activity_stats_from_rows(SqliteDb& db) { fill_from_rows(db); }

// ---- the writer's side ---------------------------------------------------------------------------

namespace {

using DeviceKey = std::tuple<std::int64_t, int, int>;  // (session, rank, device)

struct DeviceDelta {
  DeviceActivityStats stats;  // counts and the lengths this writer added
  bool has_window = false;
  std::int64_t longest = 0;
};

}  // namespace

struct ActivityStatsAccumulator::Impl {
  explicit Impl(SqliteDb& d)
      : db(d),
        device_upsert(d, device_upsert_sql().c_str()),
        name_upsert(d, kNameUpsert),
        step_upsert(d, kStepUpsert),
        longest_of(d, "SELECT longest_ns FROM activity_device_stats WHERE session_id = ? AND rank = ? AND device = ?"),
        // Every row of the device overlapping [?4, ?3): none starts before ?4 less the longest.
        overlapping(d, "SELECT a.kind, a.name_id, a.start_ns, a.end_ns FROM activities a WHERE a.session_id = ?1 "
                       "AND a.rank = ?2 AND a.start_ns >= ?4 - ?5 AND a.start_ns < ?3 AND a.end_ns > ?4 "
                       "AND coalesce(a.device, 0) = ?6"),
        name_text(d, "SELECT text FROM names WHERE id = ?") {}

  std::int64_t longest(const DeviceKey& key);
  bool nccl(std::int64_t name_id);
  void add_device(std::int64_t session, int rank, int device, const ActivityBatch& batch,
                  const std::vector<std::size_t>& records, const std::vector<std::int64_t>& name_ids);

  SqliteDb& db;
  Statement device_upsert, name_upsert, step_upsert, longest_of, overlapping, name_text;
  std::map<DeviceKey, DeviceDelta> devices;
  std::map<std::tuple<std::int64_t, int, int, std::int64_t>, NameDelta> names;  // (session, rank, kind, name_id)
  std::map<std::tuple<std::int64_t, int, std::int64_t>, std::int64_t> steps;    // (session, rank, step)
  std::map<DeviceKey, std::int64_t> longest_known;  // the table's longest_ns with this batch's rows
  std::unordered_map<std::int64_t, bool> nccl_names;
};

std::int64_t ActivityStatsAccumulator::Impl::longest(const DeviceKey& key) {
  if (auto it = longest_known.find(key); it != longest_known.end()) return it->second;
  longest_of.bind(1, std::get<0>(key)).bind(2, std::get<1>(key)).bind(3, std::get<2>(key));
  const std::int64_t value = longest_of.step() ? longest_of.int64(0) : 0;
  longest_of.reset();
  return longest_known[key] = value;
}

bool ActivityStatsAccumulator::Impl::nccl(std::int64_t name_id) {
  if (auto it = nccl_names.find(name_id); it != nccl_names.end()) return it->second;
  name_text.bind(1, name_id);
  const bool value = name_text.step() && is_nccl_kernel_name(name_text.text(0));
  name_text.reset();
  return nccl_names[name_id] = value;
}

// The unions change only inside the batch's span W = [first start, last end): what the batch adds
// to each is |(rows ∪ batch) ∩ W| - |rows ∩ W|, from the rows already there that overlap W.
void ActivityStatsAccumulator::Impl::add_device(std::int64_t session, int rank, int device, const ActivityBatch& batch,
                                                const std::vector<std::size_t>& records,
                                                const std::vector<std::int64_t>& name_ids) {
  const DeviceKey key{session, rank, device};
  DeviceDelta& delta = devices[key];
  delta.stats.device = device;
  DeviceSpans before, after;
  std::optional<std::pair<std::int64_t, std::int64_t>> span;
  std::int64_t batch_longest = 0;
  for (const std::size_t i : records) {
    const ActivityRecord& a = batch.records[i];
    ++delta.stats.activities;
    if (a.kind == ActivityKind::kKernel && nccl(name_ids[i])) ++delta.stats.comm_kernels;
    if (a.end_ns <= a.start_ns) continue;
    span = span ? std::make_pair(std::min(span->first, a.start_ns), std::max(span->second, a.end_ns))
                : std::make_pair(a.start_ns, a.end_ns);
    batch_longest = std::max(batch_longest, a.end_ns - a.start_ns);
  }
  if (!span) return;
  overlapping.bind(1, session).bind(2, rank).bind(3, span->second).bind(4, span->first).bind(5, longest(key))
      .bind(6, device);
  while (overlapping.step()) {
    const auto kind = static_cast<ActivityKind>(overlapping.int64(0));
    const bool is_nccl = kind == ActivityKind::kKernel && nccl(overlapping.int64(1));
    const std::int64_t start = std::max(overlapping.int64(2), span->first);
    const std::int64_t end = std::min(overlapping.int64(3), span->second);
    before.add(kind, is_nccl, start, end);
    after.add(kind, is_nccl, start, end);
  }
  overlapping.reset();
  for (const std::size_t i : records) {
    const ActivityRecord& a = batch.records[i];
    after.add(a.kind, a.kind == ActivityKind::kKernel && nccl(name_ids[i]), a.start_ns, a.end_ns);
  }
  DeviceActivityStats& s = delta.stats;
  s.busy_ns += after.busy.measure() - before.busy.measure();
  s.comm_ns += after.comm.measure() - before.comm.measure();
  s.hidden_ns += after.comm.intersection_measure(after.compute) - before.comm.intersection_measure(before.compute);
  s.window_start_ns = delta.has_window ? std::min(s.window_start_ns, span->first) : span->first;
  s.window_end_ns = delta.has_window ? std::max(s.window_end_ns, span->second) : span->second;
  delta.has_window = true;
  delta.longest = std::max(delta.longest, batch_longest);
  longest_known[key] = std::max(longest_known[key], batch_longest);
}

ActivityStatsAccumulator::ActivityStatsAccumulator(SqliteDb& db) : impl_(std::make_unique<Impl>(db)) {}
ActivityStatsAccumulator::~ActivityStatsAccumulator() = default;

void ActivityStatsAccumulator::add_batch(std::int64_t session, const ActivityBatch& batch,
                                         const std::vector<std::int64_t>& name_ids) {
  std::map<int, std::vector<std::size_t>> by_device;
  for (std::size_t i = 0; i < batch.records.size(); ++i) {
    const ActivityRecord& a = batch.records[i];
    by_device[a.device].push_back(i);
    impl_->names[{session, batch.rank, static_cast<int>(a.kind), name_ids[i]}].add(a.end_ns - a.start_ns, a.step);
    ++impl_->steps[{session, batch.rank, a.step}];
  }
  for (const auto& [device, records] : by_device) impl_->add_device(session, batch.rank, device, batch, records, name_ids);
}

void ActivityStatsAccumulator::flush() {
  for (const auto& [key, d] : impl_->devices)
    write_device(impl_->device_upsert, std::get<0>(key), std::get<1>(key), d.stats, d.has_window, d.longest);
  for (const auto& [key, n] : impl_->names)
    write_name(impl_->name_upsert, std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), n);
  for (const auto& [key, count] : impl_->steps)
    impl_->step_upsert.bind(1, std::get<0>(key)).bind(2, std::get<1>(key)).bind(3, std::get<2>(key)).bind(4, count).run();
  impl_->devices.clear();
  impl_->names.clear();
  impl_->steps.clear();
}

void ActivityStatsAccumulator::clear() {
  impl_->devices.clear();
  impl_->names.clear();
  impl_->steps.clear();
  impl_->longest_known.clear();  // it counted rows that rolled back
}

}  // namespace shardscope::sessions
