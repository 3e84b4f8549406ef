#pragma once
// Importing a finished DeepSpeed run as a session (`shardscope sessions import`, the GUI's
// File > Import): from any of its csv_monitor folder, TensorBoard folder (DeepSpeed's scalars, and
// a Hugging Face Trainer's), log files (with the Trainer's log dicts), ds_config.json, the Trainer's
// trainer_state.json and PyTorch profiler traces. Everything is written in one transaction (the
// traces streamed into it as they are read), so a failed or cancelled import leaves the store as it was. Plain structs in and
// out, a progress callback and a cancel flag, so the GUI can run it on a worker thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "configs/deepspeed_version.hpp"

namespace shardscope::sessions {

class Store;

struct TraceFile {
  std::optional<int> rank;  ///< unset: the trace's distributedInfo, else the file name ("rank3")
  std::string path;
};

struct DeepSpeedImportSources {
  std::optional<std::string> csv_monitor_dir;   ///< csv_monitor's output_path/job_name (or output_path)
  std::optional<std::string> tensorboard_dir;   ///< tensorboard's output_path/job_name (or output_path)
  std::vector<std::string> log_files;           ///< the launcher's output, or per-rank logs (*rank<R>*)
  std::optional<std::string> config_file;       ///< ds_config.json
  std::optional<std::string> trainer_state;     ///< a Hugging Face Trainer's trainer_state.json
  std::vector<TraceFile> traces;                ///< PyTorch profiler Chrome traces, one per rank
};

struct ImportProgress {
  std::string stage;       ///< "csv_monitor", "tensorboard", "log", "config", "traces", "writing"
  std::size_t done = 0;    ///< stages done
  std::size_t total = 0;   ///< stages in all
  // While the traces are read (stage "traces", at most every 100 ms and at the end of each file):
  std::string file;              ///< the trace being read
  std::size_t file_index = 0;    ///< its index in DeepSpeedImportSources::traces
  std::size_t files = 0;         ///< traces in all
  int pass = 0;                  ///< 1 (step windows and flows) or 2 (the records); each reads the whole file
  std::uint64_t bytes_done = 0;  ///< of all traces, both passes counted
  std::uint64_t bytes_total = 0; ///< twice the traces' summed size
};

struct DeepSpeedImportOptions {
  std::string name;                              ///< default: the monitor's job name, else the config's stem
  std::vector<std::string> tags;
  std::optional<std::int64_t> samples_per_step;  ///< override the train_batch_size the files give
  std::int64_t trace_step_offset = 1;            ///< ProfilerStep#N is step N + offset (see chrome_trace.hpp)
  /// Whose rules resolve the run's config; recorded in the session's origin details.
  configs::DeepSpeedVersion deepspeed_version = configs::DeepSpeedVersion::k0_19_7;
  std::function<void(const ImportProgress&)> progress;
  const std::atomic<bool>* cancel = nullptr;     ///< set from another thread to stop (nothing is kept)
};

struct DeepSpeedImportResult {
  std::string session_uid;
  std::int64_t session_id = 0;
  std::size_t steps = 0;           ///< (rank, step) rows
  std::size_t series_points = 0;
  std::size_t comm_summaries = 0;
  std::size_t comm_records = 0;
  std::size_t activities = 0;
  std::size_t ranges = 0;          ///< annotations and CPU operators
  std::size_t cpu_ops = 0;         ///< of which CPU operators (domain "cpu_op")
  std::size_t forward_backward_links = 0;  ///< backward operators linked to their forward one
  std::size_t trace_step_times = 0;  ///< ProfilerStep#N windows offered as step times (used where none was given)
  std::size_t log_lines = 0;
  std::int64_t samples_per_step = 0;
  std::vector<std::string> notes;  ///< what was inferred or left out, for the user
};

/// What was imported, as `sessions import` prints it and File > Import shows it: "imported session
/// 3 (uid ...): 6 step rows, ..." then one "note: ..." line per note.
std::string import_result_text(const DeepSpeedImportResult& result);

/// Thrown when DeepSpeedImportOptions::cancel was set; nothing was written.
struct ImportCancelled {};

/// Reads the sources and writes one session; throws ImportError (bad or missing input, with the
/// file and line), StoreError (the store), or ImportCancelled.
DeepSpeedImportResult import_deepspeed_run(Store& store, const DeepSpeedImportSources& sources,
                                           const DeepSpeedImportOptions& options = {});

/// The same into the session file `path`, created if missing; when the import fails a file it
/// created goes again (with SQLite's side files), so the disk is as it was. Throws as above.
DeepSpeedImportResult import_deepspeed_run_into(const std::string& path, const DeepSpeedImportSources& sources,
                                                const DeepSpeedImportOptions& options = {});

}  // namespace shardscope::sessions
