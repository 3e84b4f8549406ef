#include "diagnosis/failed_start.hpp"

#include <algorithm>
#include <ctime>

namespace shardscope::diagnosis {
namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// The last line that names an exception ("ModuleNotFoundError: ...", "RuntimeError: ..."), else
// the last line that is not empty.
std::string last_error_line(const std::vector<std::string>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto colon = it->find(": ");
    if (colon != std::string::npos && colon > 0 && it->find(' ') >= colon &&
        (contains(it->substr(0, colon), "Error") || contains(it->substr(0, colon), "Exception")))
      return *it;
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->find_first_not_of(" \t\r") != std::string::npos) return *it;
  return "";
}

// "No module named 'flash_attn'" -> "flash_attn".
std::string missing_module(const std::string& line) {
  const auto at = line.find("No module named '");
  if (at == std::string::npos) return "";
  const auto start = at + 17, end = line.find('\'', start);
  return end == std::string::npos ? "" : line.substr(start, end - start);
}

struct Cause {
  std::string summary, fix;
};

Cause cause_of(const std::vector<std::string>& lines, const std::string& error) {
  auto seen = [&](const char* part) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, part); });
  };
  const std::string module = missing_module(error);
  if (module == "mpi4py" || (seen("mpi_discovery") && !module.empty()))
    return {"DeepSpeed was started without a launcher: RANK, WORLD_SIZE and MASTER_ADDR were not set, so "
            "deepspeed.init_distributed fell back to MPI discovery, which needs mpi4py",
            "start it with a launcher: `deepspeed --num_gpus N train.py ...` or `torchrun --nproc_per_node N "
            "train.py ...` (under `shardscope watch -- ...` as well); for one process without a launcher set "
            "RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500"};
  if (!module.empty())
    return {"the Python that ran the command has no module '" + module + "'",
            "install it into that environment (pip install " + module +
                "), or activate the environment that has it before the command"};
  if (seen("EADDRINUSE") || seen("Address already in use"))
    return {"the rendezvous port is taken: another run (or a leftover process) listens on MASTER_PORT",
            "pass another port (deepspeed --master_port 29501, torchrun --master_port 29501) or end the "
            "process that holds it"};
  if (seen("DeepSpeedConfigError") || seen("pydantic_core._pydantic_core.ValidationError"))
    return {"DeepSpeed refused the config",
            "`shardscope validate ds_config.json` points at the key and line (add --hf-trainer for a config "
            "with \"auto\" values)"};
  if (seen("CUDA out of memory") || seen("OutOfMemoryError"))
    return {"the GPU ran out of memory before the first step (the model, optimizer states or buffers at start)",
            "`shardscope estimate --config ds_config.json --hf-config config.json` shows the lowest ZeRO "
            "stage or offload that fits"};
  return {"the command ended before its first step", "read the error above in the run's output"};
}

}  // namespace

std::optional<sessions::Finding> diagnose_failed_start(const std::vector<std::string>& output_tail, int exit_code) {
  if (exit_code == 0) return std::nullopt;
  const std::string error = last_error_line(output_tail);
  const Cause cause = cause_of(output_tail, error);
  sessions::Finding f;
  f.kind = "failed_start";
  f.severity = "error";
  f.summary = cause.summary + " (exit code " + std::to_string(exit_code) + ")";
  if (!error.empty()) f.evidence = error;
  f.suggested_fix = cause.fix;
  f.found_at = static_cast<double>(std::time(nullptr));
  return f;
}

}  // namespace shardscope::diagnosis
