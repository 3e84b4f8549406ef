// shardscope sessions list|show|compare|export|delete|rename|tag --db FILE (import, check and trend in their own files): the CLI twin of the GUI's
// Sessions page. Tables for people, --json for scripts; the work is in the sessions library.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/findings_output.hpp"
#include "app/cli/session_error_exit.hpp"
#include "configs/did_you_mean.hpp"
#include "diagnosis/findings_compare.hpp"
#include "diagnosis/stored_session.hpp"
#include "engine/memory_prediction.hpp"
#include "profiler/profile_analyses.hpp"
#include "profiler/profile_selection.hpp"
#include "profiler/profiler_error.hpp"
#include "sessions/display_text.hpp"
#include "sessions/errors.hpp"
#include "sessions/profile_reader.hpp"
#include "sessions/host_probe.hpp"
#include "sessions/session_compare.hpp"
#include "sessions/session_export.hpp"
#include "sessions/session_json.hpp"
#include "sessions/session_labels.hpp"
#include "sessions/store.hpp"

namespace shardscope::app {
namespace {

using namespace sessions;
using Table = std::vector<std::vector<std::string>>;

// Text from the session file, with control characters made visible (the file may be hostile).
std::string shown(const std::string& text) { return escape_control_characters(text); }

// JSON for scripts: ASCII only (so no C1 control or stray byte reaches a terminal), and a byte
// that is not UTF-8 becomes U+FFFD instead of an exception.
std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace);
}

// The characters a terminal shows for `text` (valid UTF-8, as shown() returns): its code points,
// so a "±" or a non-ASCII host name pads like one character, not two or three bytes.
std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

// Columns padded to their widest cell; the first row is the header, underlined. Every cell is
// shown escaped: names, hosts and timer names come from the session file.
void print_table(std::ostream& out, const Table& raw_rows) {
  if (raw_rows.empty()) return;
  Table rows = raw_rows;
  for (auto& row : rows)
    for (auto& cell : row) cell = shown(cell);
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < rows[r].size(); ++i)
      line += rows[r][i] + (i + 1 < rows[r].size() ? std::string(width[i] - display_width(rows[r][i]) + 2, ' ') : "");
    out << line << "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (auto w : width) total += w + 2;
      out << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
    }
  }
}

std::string number(std::optional<double> v, int precision = 4) {
  if (!v || !std::isfinite(*v)) return v ? (std::isnan(*v) ? "nan" : "inf") : "-";
  std::ostringstream out;
  out << std::setprecision(precision) << *v;
  return out.str();
}

std::string time_text(std::optional<double> unix_seconds) {
  if (!unix_seconds) return "-";
  const std::time_t t = static_cast<std::time_t>(*unix_seconds);
  std::tm local{};
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
  return text;
}

std::string join(const std::vector<std::string>& items, const char* separator = ",") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : separator) + s;
  return out.empty() ? "-" : out;
}

// "2026-11-29" or "2026-11-29T14:30[:00]", local time, as `date` would read it.
double parse_date(const std::string& flag, const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end) {
    tm = {};
    end = strptime(text.c_str(), "%Y-%m-%dT%H:%M", &tm);
  }
  if (!end || *end) {
    tm = {};
    end = strptime(text.c_str(), "%Y-%m-%d", &tm);
  }
  if (!end || *end) throw UsageError("--" + flag + " '" + text + "' is not a date (use 2026-11-29 or 2026-11-29T14:30)");
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm));
}

std::string require_db(const ParsedArgs& parsed, const std::string& action) {
  auto db = parsed.value("db");
  if (!db) throw UsageError("'sessions " + action + "' needs --db FILE (the session store a run wrote)");
  return *db;
}

// Every open checks the file first (quick_check; above 256 MiB the bulk tables are verified as
// they are read) and refuses a damaged file (exit 2, the damage named), so nothing is shown from
// it and nothing written into it; `sqlite3 FILE .recover` is the remedy. A writable open also
// marks sessions whose writer died as interrupted and upgrades an older file once; a file this
// user cannot write is read as it is.
Store open_store(const std::string& path) {
  StoreOpenOptions options;
  options.integrity = IntegrityCheck::kRefuse;
  options.read_only = ::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0;
  Store store = Store::open(path, options);
  if (const int marked = store.sessions_marked_interrupted(); marked > 0)
    std::cerr << "shardscope sessions: note: " << marked << " session(s) recorded as running had lost their "
              << "writer (killed or crashed) and are now marked interrupted\n";
  return store;
}

std::vector<std::int64_t> resolve(Store& store, const std::vector<std::string>& selectors) {
  std::vector<std::int64_t> ids;
  for (const auto& s : selectors) ids.push_back(find_session(store, s));
  return ids;
}

ArgParser make_parser(const std::string& action, const std::string& summary) {
  ArgParser parser("sessions " + action, summary);
  parser.option("db", "FILE", "the session store (SQLite) a run wrote");
  return parser;
}

int list_action(const CommandArgs& args) {
  ArgParser parser = make_parser("list", "Lists sessions, newest first. Exit code 0; 2 for a bad flag or file.");
  parser.option("name", "TEXT", "name contains TEXT (case-insensitive)")
      .option("since", "DATE", "started at or after DATE (local time)")
      .option("until", "DATE", "started before DATE")
      .option("config-hash", "PREFIX", "resolved-config hash starts with PREFIX")
      .option("version", "V", "ShardScope version V (or V.*)")
      .option("host", "HOST", "a rank ran on HOST")
      .option("tag", "TAG", "tagged TAG")
      .option("status", "STATUS", "running, completed, failed, interrupted")
      .option("limit", "N", "at most N sessions")
      .flag("json", "print a JSON array");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  Store store = open_store(require_db(parsed, "list"));
  SessionFilter filter;
  filter.name_contains = parsed.value("name").value_or("");
  if (auto v = parsed.value("since")) filter.started_after = parse_date("since", *v);
  if (auto v = parsed.value("until")) filter.started_before = parse_date("until", *v);
  filter.config_hash_prefix = parsed.value("config-hash").value_or("");
  filter.version = parsed.value("version").value_or("");
  filter.host = parsed.value("host").value_or("");
  filter.tag = parsed.value("tag").value_or("");
  filter.status = parsed.value("status").value_or("");
  if (auto n = parsed.integer("limit")) {
    if (*n < 1) throw UsageError("--limit must be at least 1");
    filter.limit = static_cast<std::size_t>(*n);
  }
  const auto sessions = list_sessions(store, filter);
  if (parsed.has("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : sessions) out.push_back(session_info_to_json(s));
    std::cout << json_text(out) << "\n";
    return kExitOk;
  }
  Table table{{"id", "name", "status", "started", "steps", "ranks", "hosts", "version", "config", "uid"}};
  for (const auto& s : sessions)
    table.push_back({std::to_string(s.id), s.name.empty() ? "-" : s.name, s.status, time_text(s.started_at),
                     s.last_step ? std::to_string(*s.last_step) : "-", s.world_size ? std::to_string(s.world_size) : "-", join(s.hosts),
                     s.shardscope_version.empty() ? "-" : s.shardscope_version,
                     s.config_hash.empty() ? "-" : s.config_hash.substr(0, 8), s.uid.substr(0, 12)});
  print_table(std::cout, table);
  std::cout << sessions.size() << " session" << (sessions.size() == 1 ? "" : "s") << "\n";
  return kExitOk;
}

// Hosts with their ranks and clocks: the line-up of per-rank timelines across machines.
void print_hosts(const SessionDetail& d) {
  Table t{{"host", "node", "rank ids", "clock offset", "shardscope"}};
  for (const auto& h : d.hosts) {
    std::string ranks;
    for (int r : h.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    const std::string offset = h.clock_offset_s ? number(*h.clock_offset_s * 1000, 3) + " ms +- " +
                                                      number(h.clock_uncertainty_s.value_or(0) * 1000, 2) + " ms"
                                                : "-";
    t.push_back({h.host, h.node_rank ? std::to_string(*h.node_rank) : "-", ranks.empty() ? "-" : ranks, offset,
                 h.shardscope_version.empty() ? "-" : h.shardscope_version + " (" + h.git_hash + ")"});
  }
  if (t.size() > 1) std::cout << "\n", print_table(std::cout, t);
}

void print_summary(const SessionDetail& d, const SessionSummary& s) {
  std::cout << "session " << d.info.id << "  " << (d.info.name.empty() ? "(unnamed)" : shown(d.info.name)) << "  ["
            << shown(d.info.status) << "]\n"
            << "uid          " << shown(d.info.uid) << "\n"
            << "started      " << time_text(d.info.started_at) << "   wall time " << number(d.info.wall_time_s)
            << " s\n"
            << "world size   " << d.info.world_size << " rank" << (d.info.world_size == 1 ? "" : "s") << " on "
            << shown(join(d.info.hosts)) << "\n"
            << "version      " << (d.info.shardscope_version.empty() ? "-" : shown(d.info.shardscope_version)) << " ("
            << (d.info.git_hash.empty() ? "-" : shown(d.info.git_hash)) << ")   config "
            << (d.info.config_hash.empty() ? "-" : shown(d.info.config_hash)) << "\n"
            << "command      " << shown(join(d.command_line, " ")) << "\n"
            << (d.info.origin.empty() ? "" : "origin       " + shown(d.info.origin) +
                                                 (d.info.origin.rfind("deepspeed", 0) == 0 ? " (a run of DeepSpeed itself)\n"
                                                                                           : " (a run ShardScope did not record)\n"))
            << "\n";
  Table t{{"quantity", "value"}};
  t.push_back({"steps (timed)", std::to_string(s.steps) + " (" + std::to_string(s.timed_steps) + ")"});
  t.push_back({"step time median / p90 (ms)", number(s.median_step_ms) + " / " + number(s.p90_step_ms)});
  t.push_back({"samples/s, tokens/s", number(s.samples_per_s) + ", " + number(s.tokens_per_s)});
  t.push_back({"TFLOP/s per GPU, MFU", number(s.tflops_per_gpu) + ", " + (s.mfu ? number(*s.mfu * 100, 3) + " %" : "-")});
  t.push_back({"final loss (step)", number(s.final_loss) + " (" + (s.final_loss_step ? std::to_string(*s.final_loss_step) : "-") + ")"});
  t.push_back({"best loss (step)", number(s.best_loss) + " (" + (s.best_loss_step ? std::to_string(*s.best_loss_step) : "-") + ")"});
  t.push_back({"skipped steps", std::to_string(s.skipped_steps)});
  t.push_back({"time in collectives", number(s.comm_time_s) + " s" +
                                          (s.comm_fraction ? " (" + number(*s.comm_fraction * 100, 3) + " % of step time)" : "")});
  t.push_back({"profiled records", std::to_string(s.activity_records) + " activities, " + std::to_string(s.nvtx_ranges) + " NVTX"});
  t.push_back({"log warnings / errors", std::to_string(s.warning_logs) + " / " + std::to_string(s.error_logs)});
  print_table(std::cout, t);
  Table m{{"rank", "peak memory", "reserved", "exit"}};
  for (const auto& r : s.memory) {
    std::string exit = "-";
    for (const auto& k : d.ranks)
      if (k.info.rank == r.rank && k.exit_code) exit = std::to_string(*k.exit_code);
    m.push_back({std::to_string(r.rank), r.peak_bytes ? format_bytes(static_cast<std::uint64_t>(*r.peak_bytes)) : "-",
                 r.reserved_bytes ? format_bytes(static_cast<std::uint64_t>(*r.reserved_bytes)) : "-", exit});
  }
  if (m.size() > 1) std::cout << "\n", print_table(std::cout, m);
  print_hosts(d);
  Table timers{{"timer", "median ms", "p90 ms", "total s"}};
  for (const auto& x : s.timers) timers.push_back({x.name, number(x.median_ms), number(x.p90_ms), number(x.total_s)});
  if (timers.size() > 1) std::cout << "\n", print_table(std::cout, timers);
  Table comms{{"collective", "count", "bytes", "time s", "algbw GB/s", "busbw GB/s"}};
  for (const auto& c : s.comm_ops)
    comms.push_back({c.op, std::to_string(c.count), format_bytes(static_cast<std::uint64_t>(c.total_bytes)),
                     number(c.total_latency_s), number(c.mean_algbw_gbps), number(c.mean_busbw_gbps)});
  if (comms.size() > 1) std::cout << "\n", print_table(std::cout, comms);
}

void print_findings(const std::vector<sessions::Finding>& findings) {
  std::cout << "\nfindings: " << (findings.empty() ? "none" : std::to_string(findings.size())) << "\n";
  for (const auto& f : findings) print_finding(std::cout, f, "  ");
}

nlohmann::json findings_json(const std::vector<sessions::Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings) out.push_back(finding_json(f));
  return out;
}

profiler::ProfileSelection selection_from_flags(const ParsedArgs& parsed, std::int64_t origin_ns) {
  profiler::ProfileSelection selection;
  try {
    if (auto range = parsed.value("select-time")) selection.time_range_ns = profiler::parse_time_range_ms(*range, origin_ns);
  } catch (const profiler::ProfilerError& e) {
    throw UsageError(e.what());
  }
  selection.step = parsed.integer("select-step");
  selection.kernel = parsed.value("select-kernel").value_or("");
  selection.collective = parsed.value("select-collective").value_or("");
  return selection;
}

nlohmann::json memory_report_json(const engine::SessionMemoryReport& r) {
  const auto opt = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  const auto& p = r.prediction;
  return {{"predicted", {{"model_states_bytes", p.model_states_bytes}, {"buffers_bytes", p.buffers_bytes},
                         {"activations_bytes", p.activations_bytes}, {"total_bytes", p.total_bytes}}},
          {"measured_step_end_bytes", opt(r.measured_step_end_bytes)}, {"measured_peak_bytes", opt(r.measured_peak_bytes)}};
}

// `show --profile [--select-...]`: the analyses of the records the selection keeps.
struct ShownProfile {
  std::optional<profiler::ProfileAnalyses> analyses;
  std::string selected;                          ///< the selection in words; empty: everything
  std::vector<CommOpStat> selected_collectives;  ///< the collectives in the selection
};

bool has_selection_flags(const ParsedArgs& parsed) {
  return parsed.has("select-time") || parsed.has("select-step") || parsed.has("select-kernel") ||
         parsed.has("select-collective");
}

ShownProfile load_shown_profile(const ParsedArgs& parsed, Store& store, std::int64_t id,
                                const profiler::AnalysisOptions& options) {
  ShownProfile shown;
  if (!parsed.has("profile")) {
    if (has_selection_flags(parsed)) throw UsageError("the --select-* flags narrow the profile analyses: add --profile");
    return shown;
  }
  if (!has_selection_flags(parsed)) {
    // The whole window: its summaries (schema 11) give every analysis without the rows (5 M kernels).
    shown.analyses = profiler::analyze_records(profiler::load_profile_summary(store, id), options);
    return shown;
  }
  const auto records = profiler::load_profile_records(store, id);
  const profiler::ProfileSelection selection = selection_from_flags(parsed, profiler::profile_origin_ns(records));
  if (selection.empty()) {  // e.g. --select-kernel '': no copy, select_records would copy every record
    shown.analyses = profiler::analyze_records(records, options);
    return shown;
  }
  const auto kept = profiler::select_records(records, selection);
  shown.selected = profiler::describe_selection(selection, profiler::profile_origin_ns(records));
  shown.selected_collectives = profiler::summarize_collectives(kept.comms);
  shown.analyses = profiler::analyze_records(kept, options);
  return shown;
}

nlohmann::json shown_profile_json(const ShownProfile& shown) {
  nlohmann::json out = profiler::to_json(*shown.analyses);
  if (shown.selected.empty()) return out;
  out["selection"] = shown.selected;
  out["collectives"] = nlohmann::json::array();
  for (const auto& c : shown.selected_collectives)
    out["collectives"].push_back({{"op", c.op}, {"count", c.count}, {"total_bytes", c.total_bytes},
                                  {"total_latency_s", c.total_latency_s}});
  return out;
}

void print_shown_profile(const ShownProfile& shown, const profiler::AnalysisOptions& options) {
  // Kernel and range names come from the recorded file: control characters are shown escaped.
  if (!shown.selected.empty()) std::cout << "\nselection: " << escape_control_characters(shown.selected, true) << "\n";
  if (shown.analyses)
    std::cout << "\n" << escape_control_characters(profiler::format_profile_analyses(*shown.analyses, options), true);
  if (shown.selected.empty()) return;
  Table comms{{"collective in the selection", "count", "bytes", "time s"}};
  for (const auto& c : shown.selected_collectives)
    comms.push_back({c.op, std::to_string(c.count), format_bytes(static_cast<std::uint64_t>(c.total_bytes)),
                     number(c.total_latency_s)});
  std::cout << "\n";
  print_table(std::cout, comms);
}

int show_action(const CommandArgs& args) {
  ArgParser parser = make_parser("show", "Shows one session: run facts, summary, memory per rank (beside the\n"
                                         "estimator's prediction for the run), timers and collectives. SESSION is\n"
                                         "an id, a uid (prefix) or a unique name.");
  parser.positional("SESSION", "the session to show")
      .option("warmup", "N", "leave the first N steps out of timing and throughput")
      .flag("json", "print one JSON document {detail, summary}")
      .flag("profile", "add the profile analyses (phases, comm overlap, kernels, idle, CPU operators, stragglers)")
      .option("select-time", "A:B", "with --profile: only what overlaps A..B ms from the first record")
      .option("select-step", "N", "with --profile: only step N")
      .option("select-kernel", "NAME", "with --profile: only this kernel (and the steps it ran in)")
      .option("select-collective", "OP", "with --profile: only this collective (all_reduce, ...) and its steps")
      .option("operators-by", "self|total", "with --profile: rank a trace's CPU operators by self (default) or total time");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  const auto operators_by = parsed.value("operators-by").value_or("self");
  if (operators_by != "self" && operators_by != "total")
    throw UsageError("--operators-by '" + operators_by + "': expected self (time less the operators it called, "
                     "PyTorch's self CPU time) or total (inclusive)");
  Store store = open_store(require_db(parsed, "show"));
  const auto id = find_session(store, parsed.positionals[0]);
  SummaryOptions options;
  options.warmup_steps = parsed.integer("warmup").value_or(0);
  const auto detail = load_session(store, id);
  const auto summary = summarize_session(store, id, options);
  profiler::AnalysisOptions profile_options;
  profile_options.warmup_steps = options.warmup_steps;
  profile_options.operator_order = operators_by == "total" ? profiler::OperatorOrder::kTotal : profiler::OperatorOrder::kSelf;
  const ShownProfile profile = load_shown_profile(parsed, store, id, profile_options);
  const auto memory = engine::session_memory_report(store, id, options.warmup_steps);
  const auto findings = diagnosis::review_stored_session(store, id, detail);
  if (parsed.has("json")) {
    nlohmann::json out{{"detail", session_detail_to_json(detail)}, {"summary", session_summary_to_json(summary)},
                       {"findings", findings_json(findings)}};
    if (profile.analyses) out["profile"] = shown_profile_json(profile);
    if (memory) out["memory_prediction"] = memory_report_json(*memory);
    std::cout << json_text(out) << "\n";
  } else {
    print_summary(detail, summary);
    print_findings(findings);
    if (memory) std::cout << "\n" << escape_control_characters(engine::session_memory_report_text(*memory), true);
    print_shown_profile(profile, profile_options);
  }
  return kExitOk;
}

void print_diff(const char* title, const std::vector<DiffRow>& rows, const std::vector<std::string>& header) {
  std::cout << "\n" << title << (rows.empty() ? ": identical\n" : ":\n");
  if (rows.empty()) return;
  Table t{header};
  for (const auto& r : rows) {
    std::vector<std::string> line{r.path};
    for (const auto& v : r.values) line.push_back(v ? *v : "(absent)");
    t.push_back(line);
  }
  print_table(std::cout, t);
}

// Runs of different DeepSpeed releases: the releases, then what they imply for the configs.
void print_release_changes(const std::vector<sessions::ReleaseChange>& rows, std::vector<std::string> header) {
  if (rows.empty()) return;
  std::cout << "\nDeepSpeed releases differ; what that changes in the effective configs:\n";
  header.push_back("why");
  Table t{header};
  for (const auto& r : rows) {
    std::vector<std::string> line{r.path};
    for (const auto& v : r.values) line.push_back(v ? *v : "(unknown)");
    line.push_back(r.note);
    t.push_back(line);
  }
  print_table(std::cout, t);
}

void print_comparison(const SessionComparison& c, std::int64_t every, bool curves) {
  std::vector<std::string> header{"quantity"};
  for (const auto& s : c.sessions) header.push_back("#" + std::to_string(s.info.id) + " " + s.info.name);
  Table t{header};
  for (const auto& row : c.summary) {
    std::vector<std::string> line{row.field};
    for (std::size_t i = 0; i < row.values.size(); ++i)
      line.push_back(number(row.values[i]) + (i && row.delta_percent[i] ? " (" + std::string(*row.delta_percent[i] >= 0 ? "+" : "") +
                                                                             number(*row.delta_percent[i], 3) + "%)" : ""));
    t.push_back(line);
  }
  print_table(std::cout, t);
  header[0] = "path";
  print_diff("run diff", c.run_diff, header);
  print_diff("config diff", c.config_diff, header);
  print_diff("environment diff", c.environment_diff, header);
  print_release_changes(c.deepspeed_release, header);
  if (!curves) return;
  for (const auto& curve : c.curves) {
    header[0] = "step";
    Table ct{header};
    for (std::size_t k = 0; k < curve.steps.size(); ++k) {
      if (every > 1 && curve.steps[k] % every != 0 && k + 1 != curve.steps.size()) continue;
      std::vector<std::string> line{std::to_string(curve.steps[k])};
      for (const auto& series : curve.smoothed) line.push_back(number(series[k]));
      ct.push_back(line);
    }
    std::cout << "\n" << shown(curve.metric) << ":\n";
    print_table(std::cout, ct);
  }
}

int compare_action(const CommandArgs& args) {
  ArgParser parser = make_parser("compare", "Compares 2 to 8 sessions aligned by step: summary deltas against the\n"
                                            "first, run (command line and flags), resolved-config and environment\n"
                                            "diffs, the run doctor's findings side by side (new and gone against the\n"
                                            "first: the same kind naming the same ranks), and optionally curves.");
  parser.positional("SESSION", "sessions to compare (the first is the baseline)", 2, 8)
      .option("metric", "NAME", "curve to include (repeatable; default loss, lr, step time, ...)", true)
      .option("smoothing", "KIND", "none, ema, twema (W&B default), running")
      .option("weight", "W", "smoothing weight in [0, 1) (default 0.6)")
      .option("window", "N", "running-average window (default 10)")
      .option("warmup", "N", "leave the first N steps out of timing and throughput")
      .option("every", "N", "print every N-th step of the curves")
      .flag("curves", "print the aligned curves as tables")
      .flag("all", "show identical config and environment rows too")
      .flag("json", "print one JSON document");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  CompareOptions options;
  if (parsed.has("metric")) {
    options.metrics.clear();
    for (const auto& m : parsed.values("metric")) options.metrics.push_back(metric_from_name(m));
  }
  if (auto k = parsed.value("smoothing")) options.smoothing.kind = smoothing_kind_from_name(*k);
  if (auto w = parsed.value("weight")) {
    try {
      options.smoothing.weight = std::stod(*w);
    } catch (const std::exception&) {
      throw UsageError("--weight expects a number in [0, 1), got '" + *w + "'");
    }
  }
  options.smoothing.window = static_cast<int>(parsed.integer("window").value_or(10));
  options.summary.warmup_steps = parsed.integer("warmup").value_or(0);
  options.diff_only = !parsed.has("all");
  Store store = open_store(require_db(parsed, "compare"));
  const auto ids = resolve(store, parsed.positionals);
  const auto comparison = compare_sessions(store, ids, options);
  const auto findings = diagnosis::compare_stored_findings(store, ids);
  std::vector<FindingsColumn> columns;
  for (const auto& s : comparison.sessions) columns.push_back({s.info.id, s.info.name});
  if (parsed.has("json")) {
    auto out = comparison_to_json(comparison, parsed.has("curves"));
    out["findings"] = findings_comparison_json(findings, columns);
    std::cout << json_text(out) << "\n";
  } else {
    print_comparison(comparison, parsed.integer("every").value_or(1), parsed.has("curves"));
    print_findings_comparison(std::cout, findings, columns);
  }
  return kExitOk;
}

int export_action(const CommandArgs& args) {
  ArgParser parser = make_parser("export", "Exports sessions as one CSV file per table (--csv DIR) or one JSON\n"
                                           "document (--json FILE, '-' for stdout).");
  parser.positional("SESSION", "sessions to export (none with --all)", 0, -1)
      .option("csv", "DIR", "write <table>.csv files into DIR")
      .option("json", "FILE", "write one JSON document")
      .flag("all", "export every session");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  if (parsed.has("csv") == parsed.has("json")) throw UsageError("'sessions export' needs exactly one of --csv DIR or --json FILE");
  if (parsed.has("all") == !parsed.positionals.empty())
    throw UsageError("'sessions export' needs SESSION arguments or --all (not both)");
  Store store = open_store(require_db(parsed, "export"));
  std::vector<std::int64_t> ids;
  if (parsed.has("all"))
    for (const auto& s : list_sessions(store)) ids.insert(ids.begin(), s.id);
  else
    ids = resolve(store, parsed.positionals);
  if (auto path = parsed.value("json"); path && *path == "-") {
    export_json(store, ids, std::cout);
    return kExitOk;
  }
  const auto result = parsed.has("csv") ? export_csv(store, ids, *parsed.value("csv"))
                                        : export_json_file(store, ids, *parsed.value("json"));
  std::cerr << "exported " << ids.size() << " session(s), " << result.rows << " rows: " << join(result.files, ", ") << "\n";
  return kExitOk;
}

int delete_action(const CommandArgs& args) {
  ArgParser parser = make_parser("delete", "Deletes the named sessions and all their records, nothing else.\n"
                                           "Asks for confirmation on a terminal; scripts must pass --yes.");
  parser.positional("SESSION", "sessions to delete", 1, -1)
      .flag("yes", "do not ask")
      .flag("force", "also delete sessions that never recorded their end (a crashed run)");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  Store store = open_store(require_db(parsed, "delete"));
  const auto ids = resolve(store, parsed.positionals);
  if (!parsed.has("yes") && !::isatty(STDIN_FILENO))
    throw UsageError("'sessions delete' asks for confirmation and stdin is not a terminal; pass --yes in scripts");
  // A collector may still be writing a running session; deleting it would orphan its next rows.
  for (const auto id : ids) {
    const auto info = load_session(store, id).info;
    if (info.status == "running" && !parsed.has("force"))
      throw UsageError("session " + std::to_string(id) + " '" + shown(info.name) +
                       "' is still running (no run end recorded): stop the run first, or pass --force if it "
                       "crashed");
  }
  if (!parsed.has("yes")) {
    std::cout << "delete " << ids.size() << " session(s) from " << store.path() << "? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") return std::cout << "nothing deleted\n", kExitOk;
  }
  const auto deleted = delete_sessions(store, ids);
  std::cout << "deleted " << deleted << " session(s)\n";
  return kExitOk;
}

int rename_action(const CommandArgs& args) {
  ArgParser parser = make_parser("rename", "Renames one session (its records are untouched).");
  parser.positional("SESSION", "the session (id, uid prefix or name)").positional("NAME", "the new name");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  Store store = open_store(require_db(parsed, "rename"));
  const auto id = find_session(store, parsed.positionals[0]);
  rename_session(store, id, parsed.positionals[1]);
  std::cout << "session " << id << " is now '" << parsed.positionals[1] << "'\n";
  return kExitOk;
}

int tag_action(const CommandArgs& args) {
  ArgParser parser = make_parser("tag", "Adds and removes tags of one session; prints its tags afterwards.");
  parser.positional("SESSION", "the session (id, uid prefix or name)")
      .option("add", "TAG", "add TAG (repeatable)", true)
      .option("remove", "TAG", "remove TAG (repeatable)", true);
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  Store store = open_store(require_db(parsed, "tag"));
  const auto id = find_session(store, parsed.positionals[0]);
  const auto tags = edit_session_tags(store, id, parsed.values("add"), parsed.values("remove"));
  std::cout << "session " << id << " tags: " << join(tags, ", ") << "\n";
  return kExitOk;
}

}  // namespace

int run_sessions_command(const CommandArgs& args) {
  static const std::vector<std::pair<std::string, int (*)(const CommandArgs&)>> actions = {
      {"list", list_action}, {"show", show_action}, {"compare", compare_action},
      {"export", export_action}, {"delete", delete_action}, {"rename", rename_action}, {"tag", tag_action},
      {"import", run_sessions_import}, {"check", run_sessions_check}, {"trend", run_sessions_trend}};
  const std::string usage = "usage: shardscope sessions list|show|compare|export|delete|rename|tag|import|check|trend --db FILE [options]\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << usage << "Run 'shardscope sessions <action> --help' for its options.\n";
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::vector<std::string> names;
  for (const auto& [name, run] : actions) {
    names.push_back(name);
    if (args[0] != name) continue;
    try {
      return run(CommandArgs(args.begin() + 1, args.end()));
    } catch (const SessionsError& error) {
      // Unreadable, foreign, newer or damaged files and unknown sessions are bad inputs (exit 2);
      // a failure to write (disk full, permissions) is an error of the run itself (exit 1).
      std::cerr << "shardscope sessions " << name << ": error: " << escape_control_characters(error.what()) << "\n";
      return session_error_exit_code(error);
    }
  }
  std::string message = "unknown sessions action '" + args[0] + "'";
  if (auto guess = configs::closest_match(args[0], names)) message += "; did you mean '" + *guess + "'?";
  throw UsageError(message + " (list, show, compare, export, delete, rename, tag, import, check, trend)");
}

}  // namespace shardscope::app
