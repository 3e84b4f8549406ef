// shardscope sessions import --db FILE ...: a finished DeepSpeed run (its csv_monitor or
// TensorBoard folder, logs, ds_config.json, PyTorch profiler traces) as a session. The work is
// sessions::import_deepspeed_run; this file parses flags and prints what was read.
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "sessions/import/deepspeed_import.hpp"

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

}  // namespace

int run_sessions_import(const CommandArgs& args) {
  ArgParser parser("sessions import",
                   "Imports a DeepSpeed run as a session, from any of its csv_monitor folder, TensorBoard folder,\n"
                   "log (the launcher's output or per-rank logs, a Hugging Face Trainer's log dicts included),\n"
                   "ds_config.json, a Trainer's trainer_state.json and PyTorch profiler traces (Chrome trace\n"
                   "JSON, one per rank). What the files do not say stays unknown. The session is\n"
                   "written in one transaction. See docs/sessions.md, \"Importing DeepSpeed runs\".");
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
      .flag("json", "print the import's counts and notes as JSON");
  add_deepspeed_version_option(parser);
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) return std::cout << parser.help_text(), kExitOk;
  const auto db = parsed.value("db");
  if (!db) throw UsageError("'sessions import' needs --db FILE (the session store to add the run to)");
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
  const DeepSpeedImportResult result = import_deepspeed_run_into(*db, sources_of(parsed), options);
  if (parsed.has("json")) {
    std::cout << result_to_json(result, rules).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "rules: " << rules.describe() << "\n" << import_result_text(result);
  return kExitOk;
}

}  // namespace shardscope::app
