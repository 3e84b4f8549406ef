#pragma once
// The subcommands of `shardscope`. Each lives in <name>_command.cpp, parses its own flags with
// ArgParser, calls library functions, and returns an exit code (see arg_parser.hpp).

#include <string>
#include <vector>

namespace shardscope::app {

using CommandArgs = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const CommandArgs& args);
};

int run_report_command(const CommandArgs& args);
int run_estimate_command(const CommandArgs& args);
int run_validate_command(const CommandArgs& args);
int run_sessions_command(const CommandArgs& args);
int run_train_command(const CommandArgs& args);
int run_launch_command(const CommandArgs& args);
int run_ckpt_command(const CommandArgs& args);
int run_node_command(const CommandArgs& args);
int run_allreduce_command(const CommandArgs& args);
int run_watch_command(const CommandArgs& args);
/// `shardscope sessions import` (sessions_import_action.cpp).
int run_sessions_import(const CommandArgs& args);

/// Every subcommand, in the order `shardscope --help` lists them.
const std::vector<Command>& all_commands();

}  // namespace shardscope::app
