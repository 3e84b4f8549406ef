// shardscope report: the ds_report counterpart.
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "profiler/environment_probe.hpp"

namespace shardscope::app {

int run_report_command(const CommandArgs& args) {
  ArgParser parser("report",
                   "Prints versions (ShardScope, LibTorch, CUDA, cuDNN, NCCL, compiler), the GPUs and\n"
                   "their fp16/bf16 support, the kernels table (compiled in / compatible here), and\n"
                   "environment checks (/dev/shm, ulimit -l, ulimit -n, CUDA_VISIBLE_DEVICES).\n"
                   "Exit code 0 even with warnings; 2 for a bad flag.");
  parser.flag("json", "print one JSON document (schema shardscope.report/1) instead of text");
  const ParsedArgs parsed = parser.parse(args);
  if (parsed.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  const auto report = profiler::collect_environment_report();
  if (parsed.has("json"))
    std::cout << sessions::report_to_json(report).dump(2) << "\n";
  else
    std::cout << sessions::format_report_text(report);
  return kExitOk;
}

}  // namespace shardscope::app
