#include "app/gui/session_import.hpp"

#include <filesystem>

#include "sessions/import/deepspeed_import.hpp"
#include "sessions/store.hpp"

namespace shardscope::gui {
namespace {

namespace fs = std::filesystem;
namespace ss = shardscope::sessions;

// A session file this import created and then wrote nothing into goes again, with SQLite's
// side files, so a failed import leaves the disk as it was.
void remove_created_store(const std::string& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ignored);
}

ImportOutcome import_into(const ImportRequest& request, const ss::DeepSpeedImportOptions& options) {
  ImportOutcome outcome;
  ss::StoreOpenOptions open;
  open.create_if_missing = true;
  ss::Store store = ss::Store::open(request.session_file, open);
  outcome.result = ss::import_deepspeed_run(store, request.sources, options);
  outcome.ok = true;
  return outcome;
}

}  // namespace

ImportOutcome run_import(const ImportRequest& request, const std::function<void(const ss::ImportProgress&)>& progress,
                         const std::atomic<bool>* cancel) {
  ss::DeepSpeedImportOptions options;
  options.name = request.name;
  options.tags = request.tags;
  options.samples_per_step = request.samples_per_step;
  options.progress = progress;
  options.cancel = cancel;
  std::error_code ignored;
  const bool existed = fs::exists(request.session_file, ignored);
  ImportOutcome failed;
  try {
    if (request.session_file.empty()) throw std::invalid_argument("choose the session file to import into");
    return import_into(request, options);
  } catch (const ss::ImportCancelled&) {
    failed.cancelled = true;
    failed.error = "cancelled: nothing was written";
  } catch (const std::exception& e) {
    failed.error = e.what();
  }
  if (!existed && !request.session_file.empty()) remove_created_store(request.session_file);
  return failed;
}

std::vector<std::string> import_arguments(const ImportRequest& request) {
  std::vector<std::string> args{"sessions", "import", "--db", request.session_file};
  const auto& s = request.sources;
  if (s.csv_monitor_dir) args.insert(args.end(), {"--csv", *s.csv_monitor_dir});
  if (s.tensorboard_dir) args.insert(args.end(), {"--tensorboard", *s.tensorboard_dir});
  for (const auto& log : s.log_files) args.insert(args.end(), {"--log", log});
  if (s.config_file) args.insert(args.end(), {"--config", *s.config_file});
  for (const auto& t : s.traces) args.insert(args.end(), {"--trace", (t.rank ? std::to_string(*t.rank) + "=" : "") + t.path});
  if (!request.name.empty()) args.insert(args.end(), {"--name", request.name});
  for (const auto& tag : request.tags) args.insert(args.end(), {"--tag", tag});
  if (request.samples_per_step) args.insert(args.end(), {"--samples-per-step", std::to_string(*request.samples_per_step)});
  return args;
}

}  // namespace shardscope::gui
