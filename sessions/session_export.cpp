#include "sessions/session_export.hpp"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include <nlohmann/json.hpp>

#include "sessions/atomic_output.hpp"
#include "sessions/errors.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"

namespace shardscope::sessions {
namespace {

struct TableQuery {
  const char* name;
  const char* sql;  ///< "%IDS%" is replaced by the session id list
};

// Interned names are joined back and enums spelled out, so the exports need no lookup tables.
const TableQuery kTables[] = {
    {"sessions", "SELECT id AS session_id, uid, name, status, started_at, ended_at, wall_time_s, world_size, "
                 "config_hash, shardscope_version, git_hash, peak_tflops_per_gpu, command_line, config_json, "
                 "environment_json, origin, origin_json, environment_variables_json FROM sessions WHERE id IN (%IDS%) ORDER BY id"},
    {"hosts", "SELECT session_id, host, node_rank, clock_offset_s, clock_uncertainty_s, shardscope_version, git_hash "
              "FROM hosts WHERE session_id IN (%IDS%) ORDER BY session_id, node_rank, host"},
    {"ranks", "SELECT session_id, rank, local_rank, host, pid, device, exit_code FROM ranks "
              "WHERE session_id IN (%IDS%) ORDER BY session_id, rank"},
    {"tags", "SELECT session_id, tag FROM session_tags WHERE session_id IN (%IDS%) ORDER BY session_id, tag"},
    {"steps", "SELECT session_id, step, rank, wall_time, step_time_ms, loss, lr, loss_scale, grad_norm, skipped, "
              "samples_per_s, tokens_per_s, tflops, mem_allocated, mem_reserved, mem_peak FROM steps "
              "WHERE session_id IN (%IDS%) ORDER BY session_id, step, rank"},
    // Names outside, each a range of the timers key: rows stream in key order with no sort (a
    // 1,024-rank x 10,000-step session has 51 M of them; ordered by step first, SQLite sorted them all).
    {"timers", "SELECT t.session_id, t.step, t.rank, n.text AS name, t.ms FROM names n CROSS JOIN timers t "
               "WHERE t.session_id IN (%IDS%) AND t.name_id = n.id ORDER BY n.text, t.step, t.rank"},
    {"comms", "SELECT session_id, rank, step, op, bytes, latency_us, algbw_gbps, busbw_gbps, group_size FROM comms "
              "WHERE session_id IN (%IDS%) ORDER BY session_id, rank, step, id"},
    {"activities", "SELECT a.session_id, a.rank, CASE a.kind WHEN 0 THEN 'kernel' WHEN 1 THEN 'memcpy' ELSE "
                   "'memset' END AS kind, n.text AS name, a.start_ns, a.end_ns, a.device, a.stream, a.bytes, a.step, "
                   "a.grid_x, a.grid_y, a.grid_z, a.block_x, a.block_y, a.block_z, a.registers_per_thread, "
                   "a.correlation_id, a.throughput_gbps "
                   "FROM activities a JOIN names n ON n.id = a.name_id WHERE a.session_id IN (%IDS%) "
                   "ORDER BY a.session_id, a.rank, a.start_ns"},
    {"nvtx_ranges", "SELECT r.session_id, r.rank, n.text AS name, r.domain, r.start_ns, r.end_ns, r.device, "
                    "r.stream, r.step, sh.text AS shapes, r.external_id, r.sequence_number, r.forward_thread_id, "
                    "r.forward_op_id FROM nvtx_ranges r JOIN names n ON n.id = r.name_id "
                    "LEFT JOIN names sh ON sh.id = r.shapes_id "
                    "WHERE r.session_id IN (%IDS%) ORDER BY r.session_id, r.rank, r.start_ns"},
    {"logs", "SELECT session_id, rank, time, CASE level WHEN 0 THEN 'debug' WHEN 1 THEN 'info' WHEN 2 THEN "
             "'warning' ELSE 'error' END AS level, text FROM logs WHERE session_id IN (%IDS%) "
             "ORDER BY session_id, rank, id"},
    {"series", "SELECT x.session_id, x.step, x.rank, n.text AS name, x.value FROM series x JOIN names n ON "
               "n.id = x.name_id WHERE x.session_id IN (%IDS%) ORDER BY x.session_id, n.text, x.step, x.rank"},
    {"comm_summaries", "SELECT session_id, rank, op, message_bytes, count, total_latency_ms, avg_latency_ms, "
                       "algbw_gbps, busbw_gbps FROM comm_summaries WHERE session_id IN (%IDS%) "
                       "ORDER BY session_id, id"},
};

std::string sql_for(const TableQuery& table, const std::vector<std::int64_t>& ids) {
  std::string list;
  for (auto id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  std::string sql = table.sql;
  sql.replace(sql.find("%IDS%"), 5, list.empty() ? "NULL" : list);
  return sql;
}

// RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside.
void csv_field(std::ostream& out, const std::string& value) {
  if (value.find_first_of(",\"\r\n") == std::string::npos) {
    out << value;
    return;
  }
  out << '"';
  for (char c : value) out << (c == '"' ? "\"\"" : std::string(1, c));
  out << '"';
}

std::string real_text(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string cell_text(const Statement& s, int i) {
  switch (s.column_kind(i)) {
    case Statement::ColumnKind::kNull: return "";
    case Statement::ColumnKind::kInteger: return std::to_string(s.int64(i));
    case Statement::ColumnKind::kReal: return real_text(s.real(i));
    case Statement::ColumnKind::kText: return s.text(i);
  }
  return "";
}

nlohmann::json cell_json(const Statement& s, int i) {
  switch (s.column_kind(i)) {
    case Statement::ColumnKind::kNull: return nullptr;
    case Statement::ColumnKind::kInteger: return s.int64(i);
    case Statement::ColumnKind::kReal: return s.real(i);
    case Statement::ColumnKind::kText: return s.text(i);
  }
  return nullptr;
}

std::size_t write_csv_rows(Statement& s, std::ostream& out) {
  std::size_t rows = 0;
  for (; s.step(); ++rows) {
    for (int i = 0; i < s.column_count(); ++i) {
      if (i) out << ',';
      csv_field(out, cell_text(s, i));
    }
    out << '\n';
  }
  return rows;
}

void check_sessions_exist(Store& store, const std::vector<std::int64_t>& ids) {
  for (auto id : ids) {
    Statement s(store.db(), "SELECT 1 FROM sessions WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) throw StoreError(ErrorKind::kNotFound, "no session with id " + std::to_string(id) + " in " + store.path());
  }
}

}  // namespace

const std::vector<std::string>& export_table_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kTables) v.push_back(t.name);
    return v;
  }();
  return names;
}

ExportResult export_csv(Store& store, const std::vector<std::int64_t>& ids, const std::string& directory) {
  check_sessions_exist(store, ids);
  std::error_code error;
  // A path that exists and is no folder (a file, /dev/null) is the user's mistake, not a failed write.
  const auto status = std::filesystem::status(directory, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status))
    throw StoreError(ErrorKind::kInvalidArgument, "--csv " + directory +
                                                      " exists and is not a folder; give a folder to write the "
                                                      "tables into (it is created when missing)");
  std::filesystem::create_directories(directory, error);
  if (error) throw StoreError(ErrorKind::kStorage, "cannot create directory " + directory + ": " + error.message());
  ExportResult result;
  for (const auto& table : kTables) {
    const std::string path = (std::filesystem::path(directory) / (std::string(table.name) + ".csv")).string();
    AtomicOutput file(path);
    std::ostream& out = file.stream();
    // One session at a time: each table's query then streams its key's order without a sort.
    for (std::size_t k = 0; k < std::max<std::size_t>(ids.size(), 1); ++k) {
      Statement s(store.db(), sql_for(table, ids.empty() ? ids : std::vector<std::int64_t>{ids[k]}).c_str());
      if (k == 0)
        for (int i = 0; i < s.column_count(); ++i) out << (i ? "," : "") << s.column_name(i) << (i + 1 == s.column_count() ? "\n" : "");
      result.rows += write_csv_rows(s, out);
    }
    file.commit();
    result.files.push_back(path);
  }
  return result;
}

ExportResult export_json(Store& store, const std::vector<std::int64_t>& ids, std::ostream& out) {
  check_sessions_exist(store, ids);
  ExportResult result;
  // Streamed row by row: a 100k-step x 8-rank session would not fit comfortably as one DOM.
  out << "{\"schema\": \"shardscope.sessions-export/1\", \"sessions\": [";
  for (std::size_t k = 0; k < ids.size(); ++k) {
    out << (k ? ",\n" : "\n") << "{";
    for (std::size_t t = 0; t < std::size(kTables); ++t) {
      const auto& table = kTables[t];
      Statement s(store.db(), sql_for(table, {ids[k]}).c_str());
      const bool single = t == 0;  // the session's own row is an object, the rest are arrays
      out << (t ? ",\n " : "") << '"' << (single ? "session" : table.name) << "\": " << (single ? "" : "[");
      for (std::size_t row = 0; s.step(); ++row) {
        nlohmann::json object = nlohmann::json::object();
        for (int i = 0; i < s.column_count(); ++i) object[s.column_name(i)] = cell_json(s, i);
        // ASCII with U+FFFD for bytes that are not UTF-8: a damaged or hostile file still exports.
        out << (row ? ",\n  " : "") << object.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
        ++result.rows;
      }
      out << (single ? "" : "]");
    }
    out << "}";
  }
  out << "\n]}\n";
  out.flush();
  return result;
}

ExportResult export_json_file(Store& store, const std::vector<std::int64_t>& ids, const std::string& path) {
  check_sessions_exist(store, ids);
  AtomicOutput file(path);
  ExportResult result = export_json(store, ids, file.stream());
  file.commit();
  result.files.push_back(path);
  return result;
}

}  // namespace shardscope::sessions
