#pragma once
// File > Import's work, off the GUI thread: the sessions library's import_deepspeed_run (the code
// `shardscope sessions import` runs) into a session file, with progress and cancel. Plain structs
// in and out; never throws.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sessions/import/deepspeed_import.hpp"

namespace shardscope::gui {

struct ImportRequest {
  std::string session_file;  ///< created if missing, as `sessions import --db` does
  sessions::DeepSpeedImportSources sources;
  std::string name;
  std::vector<std::string> tags;
  std::optional<std::int64_t> samples_per_step;
};

struct ImportOutcome {
  bool ok = false;
  bool cancelled = false;
  std::string error;  ///< the library's text (it names the file and line), when not ok
  sessions::DeepSpeedImportResult result;
};

/// Imports the run. A failed or cancelled import writes nothing: the library writes one
/// transaction, and a session file this call created is removed again.
ImportOutcome run_import(const ImportRequest& request,
                         const std::function<void(const sessions::ImportProgress&)>& progress = {},
                         const std::atomic<bool>* cancel = nullptr);

/// What File > Import's progress bar shows for one report.
struct ImportProgressBar {
  int maximum = 0;
  int value = 0;
  std::string text;
};

/// The stages done of all; while traces are read, the bytes read of all of them (each is read
/// twice) in thousandths, with the file, its index and the pass: "traces: rank3.json (4 of 64),
/// pass 2 of 2: 812.4 of 1600.0 MB read (50 %)". The library reports at most every 100 ms.
ImportProgressBar import_progress_bar(const sessions::ImportProgress& progress);

/// The same import from a terminal: `shardscope sessions import --db FILE --log ... --trace R=FILE`.
std::vector<std::string> import_arguments(const ImportRequest& request);

}  // namespace shardscope::gui
