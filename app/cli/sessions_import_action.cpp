// shardscope sessions import --db FILE ...: a finished DeepSpeed run (its csv_monitor or
// TensorBoard folder, logs, ds_config.json, PyTorch profiler traces) as a session, and PyTorch's
// flight recorder dumps diagnosed into it, a new session or a stored one. The work is
// sessions::import_deepspeed_run and diagnosis::import_flight_records; this file parses flags and
// prints what was read.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "app/cli/findings_output.hpp"
#include "diagnosis/flight_record_import.hpp"
#include "sessions/import/deepspeed_import.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::app {
namespace {

using namespace sessions;

TraceFile trace_argument(const std::string& text) {
  // "RANK=FILE" or "FILE"; a file name may hold '=' only after a non-number.
  const auto equals = text.find('=');
  if (equals != std::string::npos && equals > 0 && text.find_first_not_of("0123456789") == equals)
    return {std::stoi(text.substr(0, equals)), text.substr(equals + 1)};
  return {std::nullopt, text};
}

DeepSpeedImportSources sources_of(const ParsedArgs& parsed) {
  DeepSpeedImportSources s;
  s.csv_monitor_dir = parsed.value("csv");
  s.tensorboard_dir = parsed.value("tensorboard");
  s.log_files = parsed.values("log");
  s.config_file = parsed.value("config");
  s.trainer_state = parsed.value("trainer-state");
  for (const auto& t : parsed.values("trace")) s.traces.push_back(trace_argument(t));
  return s;
}

nlohmann::json result_to_json(const DeepSpeedImportResult& r, const configs::DeepSpeedRules& rules) {
  return {{"session_uid", r.session_uid},       {"session_id", r.session_id},
          {"deepspeed_version", configs::to_string(rules.version)}, {"deepspeed_rules", rules.describe()},
          {"steps", r.steps},                   {"series_points", r.series_points},
          {"comm_summaries", r.comm_summaries}, {"comm_records", r.comm_records},
          {"activities", r.activities},         {"ranges", r.ranges},
          {"log_lines", r.log_lines},           {"samples_per_step", r.samples_per_step},
          {"notes", r.notes}};
}

bool has_deepspeed_sources(const ParsedArgs& parsed) {
  for (const char* flag : {"csv", "tensorboard", "log", "config", "trainer-state", "trace"})
    if (parsed.has(flag)) return true;
  return false;
}

// The flight recorder's dumps, read (and refused when damaged) before anything is written.
struct FlightRecords {
  std::vector<diagnosis::FlightRecordDump> dumps;
  double written_at = 0;
};

FlightRecords read_flight_record_flags(const ParsedArgs& parsed) {
  std::vector<diagnosis::FlightRecordInput> inputs;
  for (const auto& text : parsed.values("flight-record")) {
    const TraceFile named = trace_argument(text);
    inputs.push_back({named.rank, named.path});
  }
  FlightRecords records;
  records.dumps = diagnosis::read_flight_records(inputs, records.written_at);
  return records;
}

nlohmann::json flight_record_json(const FlightRecords& records, const diagnosis::FlightRecordImportResult& r) {
  nlohmann::json dumps = nlohmann::json::array();
  for (const auto& d : records.dumps)
    dumps.push_back({{"rank", d.rank}, {"file", d.file}, {"format", d.format}, {"version", d.version},
                     {"collectives", d.collectives.size()}, {"point_to_point", d.point_to_point}});
  return {{"session_id", r.session_id}, {"session_uid", r.session_uid}, {"new_session", r.new_session},
          {"collectives", r.collectives}, {"dumps", dumps}, {"finding", finding_json(r.finding)}};
}

void print_flight_record(const FlightRecords& records, const diagnosis::FlightRecordImportResult& r) {
  std::cout << "flight records: " << records.dumps.size() << " dump(s) of rank(s)";
  for (const auto& d : records.dumps) std::cout << " " << d.rank;
  std::cout << " (" << records.dumps.front().format << ", format " << records.dumps.front().version << "), "
            << r.collectives << " collectives stored in " << (r.new_session ? "new " : "") << "session "
            << r.session_id << " (uid " << r.session_uid << ")\ndoctor:\n";
  print_finding(std::cout, r.finding, "  ");
}

// --flight-record: into --session, the DeepSpeed run just imported, or a new session.
int import_flight_records(const ParsedArgs& parsed, const FlightRecords& records, const std::string& db,
                          std::optional<std::int64_t> into, nlohmann::json json) {
  diagnosis::FlightRecordImportOptions options;
  options.name = parsed.value("name").value_or("");
  options.tags = parsed.values("tag");
  sessions::Store store = sessions::Store::open_or_create(db);
  options.session_id = into;
  if (const auto selector = parsed.value("session")) options.session_id = sessions::find_session(store, *selector);
  const auto result = diagnosis::import_flight_records(store, records.dumps, records.written_at, options);
  if (parsed.has("json")) {
    json["flight_record"] = flight_record_json(records, result);
    std::cout << json.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_flight_record(records, result);
  }
  return kExitOk;
}

std::string megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Progress on stderr, one line per report (the library reports traces at most every 100 ms; here
// at most two lines a second, and each file's end): what a script or the GUI's dialog can follow.
// sessions import: trace 3/64 rank2.json pass 2/2: 512.0 MB of 1600.0 MB read (32 %)
void print_progress(const ImportProgress& p) {
  static auto last = std::chrono::steady_clock::time_point{};
  static std::size_t last_file = SIZE_MAX;
  if (p.stage != "traces" || p.files == 0) {
    std::cerr << "sessions import: " << p.stage << " (" << p.done + 1 << " of " << p.total << ")\n";
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool file_end = p.file_index != last_file;
  if (!file_end && now - last < std::chrono::milliseconds(500)) return;
  last = now;
  last_file = p.file_index;
  const auto percent = p.bytes_total ? 100 * p.bytes_done / p.bytes_total : 100;
  std::cerr << "sessions import: trace " << p.file_index + 1 << "/" << p.files << " "
            << std::filesystem::path(p.file).filename().string() << " pass " << p.pass << "/2: "
            << megabytes(p.bytes_done) << " of " << megabytes(p.bytes_total) << " read (" << percent << " %)\n";
}

}  // namespace

int run_sessions_import(const CommandArgs& args) {
  ArgParser parser("sessions import",
                   "Imports a DeepSpeed run as a session, from any of its csv_monitor folder, TensorBoard folder,\n"
                   "log (the launcher's output or per-rank logs, a Hugging Face Trainer's log dicts included),\n"
                   "ds_config.json, a Trainer's trainer_state.json and PyTorch profiler traces (Chrome trace\n"
                   "JSON, one per rank). What the files do not say stays unknown. The session is\n"
                   "written in one transaction. See docs/sessions.md, \"Importing DeepSpeed runs\".\n"
                   "--flight-record reads PyTorch's flight recorder dumps (one per rank) and names the ranks\n"
                   "that wait in a collective and those that never entered it (docs/doctor.md).");
  parser.option("db", "FILE", "the session store (created if missing)")
      .option("csv", "DIR", "csv_monitor's output_path/job_name folder")
      .option("tensorboard", "DIR", "tensorboard's output_path/job_name folder (events.out.tfevents.*)")
      .option("log", "FILE", "DeepSpeed's console output (repeatable: per-rank logs *_rank<R>.log)", true)
      .option("config", "FILE", "the run's ds_config.json (the config DeepSpeed printed in the log, when there, "
                                "is recorded as the one it ran with; this file as written beside it)")
      .option("trainer-state", "FILE", "a Hugging Face Trainer's trainer_state.json (its log_history: loss, "
                                       "grad norm, learning rate, eval metrics at every logged step)")
      .option("trace", "[RANK=]FILE", "a PyTorch profiler trace; the rank from the trace or its name (repeatable)", true)
      .option("name", "TEXT", "session name (default: the monitor's job name or the config's name)")
      .option("tag", "TEXT", "a tag (repeatable)", true)
      .option("samples-per-step", "N", "the run's train_batch_size, when the files do not give it")
      .option("trace-step-offset", "N", "ProfilerStep#K is step K+N (default 1: PyTorch counts from 0)")
      .option("flight-record", "[RANK=]FILE|DIR",
              "PyTorch's flight recorder dump of a rank (TORCH_NCCL_TRACE_BUFFER_SIZE with "
              "TORCH_NCCL_DUMP_ON_TIMEOUT=1 writes /tmp/nccl_trace_rank_<rank>), or a folder of them; "
              "diagnosed as a hang (repeatable)", true)
      .option("session", "SESSION", "with --flight-record alone: add the dumps and their diagnosis to this "
                                    "stored session (id, uid or name) instead of a new one")
      .flag("json", "print the import's counts and notes as JSON")
      .flag("quiet", "no progress lines on stderr (by default: each stage, and for traces the bytes read, "
                     "at most two lines a second)");
  add_deepspeed_version_option(parser);
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  const auto db = parsed.value("db");
  if (!db) throw UsageError("'sessions import' needs --db FILE (the session store to add the run to)");
  const bool flight_record = parsed.has("flight-record");
  if (parsed.has("session") && (!flight_record || has_deepspeed_sources(parsed)))
    throw UsageError("--session adds flight recorder dumps to a stored session: give --flight-record and no "
                     "DeepSpeed files (those make a session of their own)");
  // The dumps are read first: a damaged one stops the import before anything is written.
  const FlightRecords records = flight_record ? read_flight_record_flags(parsed) : FlightRecords{};
  if (flight_record && !has_deepspeed_sources(parsed)) return import_flight_records(parsed, records, *db, std::nullopt, {});
  const configs::DeepSpeedRules rules = deepspeed_rules_from(parsed);
  DeepSpeedImportOptions options;
  options.deepspeed_version = rules.version;
  options.name = parsed.value("name").value_or("");
  options.tags = parsed.values("tag");
  if (auto n = parsed.integer("samples-per-step")) {
    if (*n < 1) throw UsageError("--samples-per-step must be at least 1, got " + std::to_string(*n));
    options.samples_per_step = *n;
  }
  options.trace_step_offset = parsed.integer("trace-step-offset").value_or(1);
  if (!parsed.has("quiet")) options.progress = print_progress;
  const DeepSpeedImportResult result = import_deepspeed_run_into(*db, sources_of(parsed), options);
  if (flight_record) {
    if (!parsed.has("json")) std::cout << "rules: " << rules.describe() << "\n" << import_result_text(result);
    return import_flight_records(parsed, records, *db, result.session_id, result_to_json(result, rules));
  }
  if (parsed.has("json")) {
    std::cout << result_to_json(result, rules).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "rules: " << rules.describe() << "\n" << import_result_text(result);
  return kExitOk;
}

}  // namespace shardscope::app
