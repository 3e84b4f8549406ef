// The engine module's entry point: the commands that need LibTorch (engine_module.hpp).
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/engine_module.hpp"

namespace shardscope::app {
namespace {

/// The commands this module runs; each is listed, with Needs::kEngine, in main.cpp's table.
const std::vector<std::pair<const char*, CommandRun>>& engine_commands() {
  static const std::vector<std::pair<const char*, CommandRun>> commands = {
      {"train", run_train_command},
      {"allreduce", run_allreduce_command},
  };
  return commands;
}

}  // namespace
}  // namespace shardscope::app

extern "C" __attribute__((visibility("default"))) int shardscope_engine_run_command(const char* command, int argc,
                                                                                   const char* const* argv) {
  using namespace shardscope::app;
  for (const auto& [name, run] : engine_commands())
    if (std::strcmp(name, command) == 0) return run_at_edge(run, CommandArgs(argv, argv + argc));
  std::cerr << "shardscope: error: the engine module has no command '" << command
            << "': the executable and shardscope-engine.so come from different builds; rebuild both\n";
  return kExitFindings;
}
