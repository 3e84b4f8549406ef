#include "sessions/import/deepspeed_import.hpp"

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "configs/display_text.hpp"
#include "sessions/event_sink.hpp"
#include "sessions/import/chrome_trace.hpp"
#include "sessions/import/deepspeed_run_facts.hpp"
#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/monitor_series.hpp"
#include "sessions/import/step_merger.hpp"
#include "sessions/import/tensorboard_events.hpp"
#include "sessions/import/trainer_log.hpp"
#include "sessions/session_reader.hpp"
#include "sessions/sqlite_db.hpp"
#include "sessions/store.hpp"
#include "sessions/store_writer.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

struct ImportRun {
  ImportRun(const DeepSpeedImportSources& s, const DeepSpeedImportOptions& o) : sources(s), options(o) {}
  const DeepSpeedImportSources& sources;
  const DeepSpeedImportOptions& options;
  DeepSpeedImportResult result;
  DeepSpeedLogFacts facts;
  StepMerger steps;
  std::vector<Event> other;               ///< series, comm tables, logs, profiled window
  std::vector<MonitorSeries> csv, tensorboard;
  std::vector<TrainerLogRecord> trainer;  ///< the Trainer's log dicts (from the logs, TensorBoard, trainer_state.json)
  bool trainer_exact = false;             ///< from TensorBoard or trainer_state.json, not rounded prints
  RecordedConfig config;
  std::string config_as_written;  ///< the config file's text, when one was given
  std::vector<std::string> hosts;
  std::optional<int> trace_world_size;
  std::optional<double> first_wall_time;
  std::size_t stage = 0, stages = 0;

  void progress(const char* name) {
    if (options.cancel && options.cancel->load()) throw ImportCancelled{};
    if (!options.progress) return void(++stage);
    ImportProgress p;
    p.stage = name;
    p.done = stage;
    p.total = stages;
    options.progress(p);
    ++stage;
  }
};

// A log is text: a NUL byte, or more than a tenth of the first 64 KiB outside UTF-8, is some other
// file given by mistake (random bytes made an empty session of garbage log lines). Colour escapes
// and carriage returns of progress bars are text.
void check_text_log(const std::string& path, std::string_view bytes) {
  const std::string_view head = bytes.substr(0, 64u << 10);
  const auto nul = head.find('\0');
  if (nul != std::string_view::npos)
    throw ImportError(path + ": not a text log (a NUL byte at offset " + std::to_string(nul) +
                      "); pass the log DeepSpeed's launcher or a rank printed");
  const std::size_t invalid = configs::invalid_utf8_bytes(head);
  if (invalid * 10 > head.size())
    throw ImportError(path + ": not a text log (" + std::to_string(invalid) + " of its first " +
                      std::to_string(head.size()) + " bytes are not UTF-8); pass the log DeepSpeed's launcher or a "
                      "rank printed");
}

// The Hugging Face Trainer's log dicts in a log (rank 0's output), each with its step.
void read_trainer_lines(ImportRun& run, std::string_view bytes) {
  if (run.trainer_exact) return;
  TrainerOutputReader reader;
  for (std::size_t at = 0; at < bytes.size();) {
    const auto end = std::min(bytes.find('\n', at), bytes.size());
    reader.feed_line(bytes.substr(at, end - at));
    at = end + 1;
  }
  reader.finish();
  auto records = reader.take_records();
  run.trainer.insert(run.trainer.end(), records.begin(), records.end());
}

void read_logs(ImportRun& run) {
  for (const auto& path : run.sources.log_files) {
    // A per-rank log of --enable_each_rank_log ("..._rank3.log") holds that rank's lines.
    const auto rank = rank_from_trace_file_name(path);
    DeepSpeedLogParser parser(path, rank.value_or(-1));
    const std::string bytes = read_file_bytes(path, kMaxTextFileBytes);
    check_text_log(path, bytes);
    parser.feed_text(bytes);
    parser.finish();
    read_trainer_lines(run, bytes);
    for (auto& e : parser.take_events()) {
      if (std::holds_alternative<StepMetrics>(e) || std::holds_alternative<TimerBreakdown>(e)) run.steps.add(e, false);
      else run.other.push_back(std::move(e));
    }
    const auto& f = parser.facts();
    if (run.facts.ranks.empty()) run.facts = f;  // the launcher's log names every rank
    else
      for (const auto& [r, code] : f.exit_codes) run.facts.exit_codes[r] = code;
  }
}

// A Trainer's TensorBoard scalars ("train/loss", "eval/loss" at global_step) are its log dicts
// at full float32 precision: they replace the printed ones; DeepSpeed's own stay monitor series.
void take_trainer_tensorboard(ImportRun& run) {
  std::vector<MonitorSeries> deepspeed, trainer;
  for (auto& s : run.tensorboard) (is_trainer_tensorboard_series(s.name) ? trainer : deepspeed).push_back(std::move(s));
  run.tensorboard = std::move(deepspeed);
  if (trainer.empty() || run.trainer_exact) return;
  run.trainer = trainer_records_from_tensorboard(trainer);
  run.trainer_exact = true;
}

void read_trainer_state_source(ImportRun& run) {
  if (!run.sources.trainer_state) return;
  run.progress("trainer_state");
  run.trainer = read_trainer_state(*run.sources.trainer_state);
  run.trainer_exact = true;
}

// The Trainer's records as steps (its loss, grad norm, lr at the next step: DeepSpeed stepped the
// scheduler before the Trainer read it) and series; exact sources are authoritative.
void add_trainer_steps(ImportRun& run) {
  if (run.trainer.empty()) return;
  // Under DeepSpeed the Trainer reads the rate after engine.step() stepped the scheduler; under
  // plain PyTorch before its own scheduler.step(). Only DeepSpeed's own files tell which.
  TrainerEventOptions options;
  options.lr_is_next_steps = run.sources.config_file || run.sources.csv_monitor_dir || !run.tensorboard.empty() ||
                             !run.facts.user_config_json.empty() || !run.facts.deepspeed_version.empty() ||
                             !run.facts.ranks.empty();
  if (!options.lr_is_next_steps)
    run.result.notes.push_back("no DeepSpeed file was given beside the Trainer's records: its learning rate is taken "
                               "as read before the scheduler stepped (plain PyTorch); under DeepSpeed it is the next "
                               "step's: pass the run's --config to say so");
  for (auto& e : trainer_records_to_events(run.trainer, options)) {
    if (std::holds_alternative<StepMetrics>(e)) run.steps.add(e, run.trainer_exact);
    else run.other.push_back(std::move(e));
  }
}

void read_monitors(ImportRun& run) {
  if (run.sources.csv_monitor_dir) {
    run.progress("csv_monitor");
    run.csv = read_csv_monitor_folder(*run.sources.csv_monitor_dir);
  }
  if (run.sources.tensorboard_dir) {
    run.progress("tensorboard");
    run.tensorboard = read_tensorboard_folder(*run.sources.tensorboard_dir);
    take_trainer_tensorboard(run);
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(*run.sources.tensorboard_dir, error);
         it != fs::recursive_directory_iterator(); ++it)
      if (auto host = tensorboard_file_host(it->path().filename().string()); !host.empty()) run.hosts.push_back(host);
    for (const auto& s : run.tensorboard)
      for (const auto& p : s.points)
        if (p.wall_time > 0 && (!run.first_wall_time || p.wall_time < *run.first_wall_time))
          run.first_wall_time = p.wall_time;
  }
}

std::int64_t choose_samples_per_step(ImportRun& run) {
  if (run.options.samples_per_step) return *run.options.samples_per_step;
  if (run.config.train_batch_size) return *run.config.train_batch_size;
  if (run.facts.train_batch_size) return *run.facts.train_batch_size;
  std::vector<MonitorSeries> all = run.csv;
  all.insert(all.end(), run.tensorboard.begin(), run.tensorboard.end());
  const auto inferred = samples_per_step(all, {});
  if (inferred > 0)
    run.result.notes.push_back("train_batch_size is not in the files: steps = samples / " + std::to_string(inferred) +
                               " (the largest step that divides every sample count); pass --samples-per-step if wrong");
  return inferred;
}

void add_monitor_steps(ImportRun& run) {
  const MonitorStepping stepping{choose_samples_per_step(run)};
  run.result.samples_per_step = stepping.samples_per_step;
  // csv_monitor keeps Python's full float; TensorBoard's simple_value is a float32: csv wins.
  for (const auto* series : {&run.csv, &run.tensorboard}) {
    const bool authoritative = series == &run.csv || run.csv.empty();
    for (auto& e : monitor_series_to_events(*series, stepping)) {
      if (std::holds_alternative<SeriesPoint>(e)) {
        if (authoritative) run.other.push_back(std::move(e));
      } else {
        run.steps.add(e, authoritative);
      }
    }
  }
}

// The config DeepSpeed printed it ran with (after a Trainer filled its "auto" values) is the
// session's; the file, when given too, is kept as written in the origin details.
void read_config(ImportRun& run) {
  std::string text, file;
  if (run.sources.config_file) {
    file = *run.sources.config_file;
    text = read_config_file_bytes(file);
    run.config_as_written = text;
  }
  if (!run.facts.user_config_json.empty()) {
    file = "the config printed in the log";
    text = run.facts.user_config_json;
  }
  if (text.empty()) return;
  run.config = record_deepspeed_config(text, file, run.facts.world_size ? run.facts.world_size : run.trace_world_size,
                                       run.result.notes, run.options.deepspeed_version);
}

// A CPU ProfilerStep#N window is the rank's wall time of that step (prof.step() to prof.step()): a
// step time where the log and the monitors gave none (DeepSpeed's own timers win).
void add_trace_step_times(ImportRun& run, int rank, const std::vector<ProfilerStepWindow>& windows) {
  for (const auto& w : windows) {
    StepMetrics m;
    m.rank = rank;
    m.step = w.step;
    m.wall_time = static_cast<double>(w.end_ns) / 1e9;
    m.step_time_ms = static_cast<double>(w.end_ns - w.start_ns) / 1e6;
    run.steps.add(m, false);
    ++run.result.trace_step_times;
  }
}

// Sets forward_op_id on the backward operators a trace's fwdbwd flows name, a batch of links at a
// time once the trace's ranges are in the store (they were streamed before the flows were known).
class BackwardOpLinker {
 public:
  explicit BackwardOpLinker(Store& store)
      : update_(store.db(), "UPDATE nvtx_ranges SET forward_op_id = ?1 WHERE session_id = ?2 AND rank = ?3 AND "
                            "start_ns = ?4 AND end_ns = ?5 AND stream = ?6 AND domain = 'cpu_op' AND "
                            "external_id IS ?7") {}
  void link(std::int64_t session, int rank, const std::vector<ForwardLink>& links) {
    for (const auto& l : links) {
      update_.bind(1, l.forward_op_id).bind(2, session).bind(3, rank).bind(4, l.start_ns).bind(5, l.end_ns)
          .bind(6, l.stream).bind(7, l.external_id).run();
    }
  }

 private:
  Statement update_;
};

// The traces' share of the import's progress: bytes read of all of them (each is read twice), at
// most every 100 ms, and a look at the cancel flag each time.
class TraceProgress {
 public:
  explicit TraceProgress(ImportRun& run) : run_(run) {
    std::error_code ignored;
    for (const auto& t : run.sources.traces) {
      const auto size = fs::file_size(t.path, ignored);
      total_ += ignored ? 0 : 2 * size;
    }
  }
  void read(std::size_t file, std::uint64_t bytes, std::uint64_t size, int pass) {
    const auto now = std::chrono::steady_clock::now();
    const std::uint64_t done = finished_ + (pass == 2 ? size : 0) + bytes;
    if (now - last_ < std::chrono::milliseconds(100) && done < finished_ + 2 * size) return;
    last_ = now;
    report(file, done, pass);
  }
  void file_done(std::size_t file, std::uint64_t size) {
    finished_ += 2 * size;
    report(file, finished_, 2);
  }

 private:
  void report(std::size_t file, std::uint64_t done, int pass) {
    if (run_.options.cancel && run_.options.cancel->load()) throw ImportCancelled{};
    if (!run_.options.progress) return;
    ImportProgress p;
    p.stage = "traces";
    p.done = run_.stage - 1;
    p.total = run_.stages;
    p.file = run_.sources.traces[file].path;
    p.file_index = file;
    p.files = run_.sources.traces.size();
    p.pass = pass;
    p.bytes_done = done;
    p.bytes_total = std::max(total_, done);
    run_.options.progress(p);
  }
  ImportRun& run_;
  std::uint64_t total_ = 0, finished_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

// The rank of a trace's records: given (RANK=FILE), else the trace's own, else its file name.
int trace_rank(const TraceFile& file, const ChromeTrace& header) {
  if (file.rank) return *file.rank;
  if (header.rank) return *header.rank;
  if (auto rank = rank_from_trace_file_name(file.path)) return *rank;
  throw ImportError(file.path + ": no rank in the trace (distributedInfo) nor in its name; pass it as --trace "
                    "RANK=" + file.path);
}

// One trace streamed into the store in batches (inside the import's one transaction), so what is
// held is one batch and the trace's step windows, whatever the file's size (its flow ends wait in
// a scratch file, chrome_trace_builder.cpp).
void read_trace(ImportRun& run, Store& store, StoreWriter& writer, std::size_t index, TraceProgress& progress) {
  const TraceFile& file = run.sources.traces[index];
  ChromeTraceOptions options;
  options.step_offset = run.options.trace_step_offset;
  int rank = -1;
  ChromeTraceSink sink;
  sink.indexed = [&](const ChromeTrace& header) { rank = trace_rank(file, header); };
  // Into a vector, not an initializer list: that would copy the batch (10,000 records) once more.
  std::vector<Event> batch(1);
  sink.activities = [&](std::vector<ActivityRecord>& r) {
    batch[0] = ActivityBatch{rank, std::move(r)};
    writer.write(run.result.session_uid, batch);
  };
  sink.ranges = [&](std::vector<NvtxRange>& r) {
    batch[0] = NvtxBatch{rank, std::move(r)};
    writer.write(run.result.session_uid, batch);
  };
  BackwardOpLinker linker(store);
  sink.links = [&](std::vector<ForwardLink>& links) {
    linker.link(writer.ensure_session(run.result.session_uid), rank, links);
  };
  std::uint64_t size = 0;
  sink.progress = [&](std::uint64_t bytes, std::uint64_t file_size, int pass) {
    size = file_size;
    progress.read(index, bytes, file_size, pass);
  };
  const StreamedChromeTrace streamed = stream_chrome_trace(file.path, sink, options);
  const ChromeTrace& trace = streamed.trace;
  if (trace.world_size) run.trace_world_size = trace.world_size;
  run.result.activities += streamed.activities;
  run.result.ranges += streamed.ranges;
  run.result.cpu_ops += trace.cpu_ops;
  run.result.forward_backward_links += trace.forward_backward_links;
  add_trace_step_times(run, rank, trace.step_windows);
  progress.file_done(index, size);
}

void read_traces(ImportRun& run, Store& store, StoreWriter& writer) {
  TraceProgress progress(run);
  for (std::size_t i = 0; i < run.sources.traces.size(); ++i) read_trace(run, store, writer, i, progress);
}

std::string default_name(const ImportRun& run) {
  if (!run.options.name.empty()) return run.options.name;
  for (const auto& dir : {run.sources.csv_monitor_dir, run.sources.tensorboard_dir})
    if (dir) return fs::path(*dir).lexically_normal().filename().string();
  if (run.sources.config_file) return fs::path(*run.sources.config_file).stem().string();
  if (run.sources.trainer_state) return fs::path(*run.sources.trainer_state).parent_path().filename().string();
  if (!run.sources.log_files.empty()) return fs::path(run.sources.log_files[0]).stem().string();
  return "deepspeed-import";
}

nlohmann::json origin_details(const ImportRun& run) {
  auto absolute = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
  nlohmann::json d = nlohmann::json::object();
  if (run.sources.csv_monitor_dir) d["csv_monitor"] = absolute(*run.sources.csv_monitor_dir);
  if (run.sources.tensorboard_dir) d["tensorboard"] = absolute(*run.sources.tensorboard_dir);
  if (run.sources.config_file) d["config"] = absolute(*run.sources.config_file);
  d["logs"] = nlohmann::json::array();
  for (const auto& l : run.sources.log_files) d["logs"].push_back(absolute(l));
  d["traces"] = nlohmann::json::array();
  for (const auto& t : run.sources.traces) d["traces"].push_back(absolute(t.path));
  d["samples_per_step"] = run.result.samples_per_step;
  d["deepspeed_version"] = configs::to_string(run.options.deepspeed_version);
  d["notes"] = run.result.notes;
  return d;
}

// What the run used beside what the file says: the file as written and whose config is recorded.
void add_config_details(const ImportRun& run, nlohmann::json& details) {
  if (!run.config_as_written.empty()) {
    const auto written = nlohmann::json::parse(run.config_as_written, nullptr, false);
    details["config_as_written"] = written.is_discarded() ? nlohmann::json(run.config_as_written) : written;
  }
  details["effective_config"] = !run.facts.user_config_json.empty() ? "as DeepSpeed printed it at engine start"
                                : run.sources.config_file           ? "as written (the log has no config dump)"
                                                                    : "none";
  if (run.sources.trainer_state) details["trainer_state"] = fs::absolute(*run.sources.trainer_state).lexically_normal().string();
  details["trainer_records"] = run.trainer.size();
}

void count_events(DeepSpeedImportResult& result, const std::vector<Event>& events) {
  for (const auto& e : events) {
    if (std::holds_alternative<SeriesPoint>(e)) ++result.series_points;
    else if (std::holds_alternative<CommSummary>(e)) ++result.comm_summaries;
    else if (std::holds_alternative<CommRecord>(e)) ++result.comm_records;
    else if (std::holds_alternative<LogLine>(e)) ++result.log_lines;
  }
}

// The session's events written in pieces: the start and origin, the merged step rows a batch at a
// time (a trace set's ProfilerStep windows make one per rank and step), the rest, the end.
void write_session_events(ImportRun& run, StoreWriter& writer) {
  RunStartInputs inputs;
  inputs.name = default_name(run);
  inputs.tags = run.options.tags;
  inputs.config_json = run.config.json;
  inputs.world_size = run.trace_world_size ? run.trace_world_size : run.config.world_size;
  inputs.started_at = run.first_wall_time;
  inputs.hosts = run.hosts;
  nlohmann::json details = origin_details(run);
  add_config_details(run, details);
  const std::string& uid = run.result.session_uid;
  writer.write(uid, {deepspeed_run_start(run.facts, inputs), SessionOrigin{"deepspeed-import", details.dump()}});
  run.result.steps = run.steps.size();
  run.steps.each_batch(1024, [&](std::vector<Event>& rows) { writer.write(uid, rows); });
  count_events(run.result, run.other);
  run.other.push_back(deepspeed_run_end(run.facts, "unknown"));
  writer.write(uid, run.other);
}

}  // namespace

DeepSpeedImportResult import_deepspeed_run(Store& store, const DeepSpeedImportSources& sources,
                                           const DeepSpeedImportOptions& options) {
  if (!sources.csv_monitor_dir && !sources.tensorboard_dir && sources.log_files.empty() && !sources.config_file &&
      sources.traces.empty() && !sources.trainer_state)
    throw ImportError("nothing to import: give a csv_monitor folder, a TensorBoard folder, a log, a ds_config.json, "
                      "a trainer_state.json or a trace");
  ImportRun run(sources, options);
  run.stages = (sources.csv_monitor_dir ? 1 : 0) + (sources.tensorboard_dir ? 1 : 0) + (sources.trainer_state ? 1 : 0) + 4;
  run.result.session_uid = new_session_uid();
  // One transaction for the whole import: a failed or cancelled one leaves the store as it was.
  // The traces are written into it as they are read, since they may not fit in memory.
  Transaction transaction(store.db());
  StoreWriter writer(store);
  run.progress("log");
  read_logs(run);
  run.progress("traces");
  read_traces(run, store, writer);  // before the config: a trace names the world size the batch keys need
  run.progress("config");
  read_config(run);
  read_trainer_state_source(run);
  read_monitors(run);
  add_monitor_steps(run);
  add_trainer_steps(run);
  run.progress("writing");
  write_session_events(run, writer);
  run.result.session_id = find_session(store, run.result.session_uid);
  transaction.commit();
  return run.result;
}

std::string import_result_text(const DeepSpeedImportResult& r) {
  std::string text = "imported session " + std::to_string(r.session_id) + " (uid " + r.session_uid + "): " +
                     std::to_string(r.steps) + " step rows, " + std::to_string(r.series_points) + " series points, " +
                     std::to_string(r.comm_summaries) + " comm summary rows, " + std::to_string(r.comm_records) +
                     " collectives, " + std::to_string(r.activities) + " GPU activities, " +
                     std::to_string(r.ranges) + " ranges (" + std::to_string(r.cpu_ops) + " CPU operators, " +
                     std::to_string(r.forward_backward_links) + " forward/backward links), " +
                     std::to_string(r.trace_step_times) + " step times from ProfilerStep windows, " +
                     std::to_string(r.log_lines) + " log lines\n";
  for (const auto& note : r.notes) text += "note: " + note + "\n";
  return text;
}

DeepSpeedImportResult import_deepspeed_run_into(const std::string& path, const DeepSpeedImportSources& sources,
                                                const DeepSpeedImportOptions& options) {
  std::error_code ignored;
  // Whatever the user gave (a file, a link, even a dangling one) is theirs: only a file this import
  // created is removed when it fails.
  const bool existed = std::filesystem::exists(std::filesystem::symlink_status(path, ignored));
  try {
    Store store = Store::open_or_create(path);
    return import_deepspeed_run(store, sources, options);
  } catch (...) {
    if (!existed)
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ignored);
    throw;
  }
}

}  // namespace shardscope::sessions
