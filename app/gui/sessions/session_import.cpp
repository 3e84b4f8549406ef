#include "app/gui/sessions/session_import.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "sessions/import/deepspeed_import.hpp"

namespace shardscope::gui {
namespace {

namespace ss = shardscope::sessions;

ImportOutcome import_into(const ImportRequest& request, const ss::DeepSpeedImportOptions& options) {
  ImportOutcome outcome;
  outcome.result = ss::import_deepspeed_run_into(request.session_file, request.sources, options);  // a new file goes on failure
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

ImportProgressBar import_progress_bar(const ss::ImportProgress& p) {
  ImportProgressBar bar;
  if (p.stage != "traces" || p.files == 0 || p.bytes_total == 0) {
    bar.maximum = static_cast<int>(p.total);
    bar.value = static_cast<int>(p.done);
    bar.text = p.stage + " (" + std::to_string(p.done) + " of " + std::to_string(p.total) + ")";
    return bar;
  }
  constexpr int kScale = 1000;  // an int bar over bytes: a 64-rank set of 400 MB traces reads 51 GB
  const std::uint64_t done = std::min(p.bytes_done, p.bytes_total);
  bar.maximum = kScale;
  bar.value = static_cast<int>(done * kScale / p.bytes_total);
  char amounts[96];
  std::snprintf(amounts, sizeof amounts, "%.1f of %.1f MB read (%d %%)", static_cast<double>(done) / 1e6,
                static_cast<double>(p.bytes_total) / 1e6, static_cast<int>(done * 100 / p.bytes_total));
  bar.text = "traces: " + std::filesystem::path(p.file).filename().string() + " (" + std::to_string(p.file_index + 1) +
             " of " + std::to_string(p.files) + "), pass " + std::to_string(p.pass) + " of 2: " + amounts;
  return bar;
}

}  // namespace shardscope::gui
