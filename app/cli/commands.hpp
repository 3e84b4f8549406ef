#pragma once
// The subcommands of `shardscope`. Each lives in <name>_command.cpp, parses its own flags with
// ArgParser, calls library functions, and returns an exit code (see arg_parser.hpp).
//
// The `shardscope` executable links only the LibTorch-free libraries, so validate, estimate,
// sessions, report and --help start in milliseconds. A command that needs the LibTorch engine
// lives in the engine module (shardscope-engine.so, beside the executable), which the executable
// loads only to run it (engine_module.hpp).
//
// Adding a command: write run_<name>_command in <name>_command.cpp, declare it below, and add one
// line to all_commands() in main.cpp. If it needs LibTorch, mark that line Needs::kEngine with a
// null run, add the source to the module's sources in app/cli/CMakeLists.txt, and add one line to
// engine_commands() in engine_module.cpp.

#include <string>
#include <vector>

namespace shardscope::app {

using CommandArgs = std::vector<std::string>;
using CommandRun = int (*)(const CommandArgs& args);

/// What a command needs loaded: nothing beyond the executable, or the LibTorch engine module.
enum class Needs { kNothing, kEngine };

struct Command {
  const char* name;
  const char* summary;
  Needs needs;
  CommandRun run;  ///< in the executable; nullptr for a command of the engine module
};

int run_report_command(const CommandArgs& args);
int run_estimate_command(const CommandArgs& args);
int run_validate_command(const CommandArgs& args);
int run_sessions_command(const CommandArgs& args);
/// After a run: "<who>: <what> ended with exit code N; the session it recorded:" and the session's
/// summary (`sessions show`) on stdout (closing_summary.cpp); returns what `sessions show` returns.
int print_closing_summary(const std::string& who, const std::string& what, int exit_code, const std::string& uid,
                          const std::string& db);
int run_watch_command(const CommandArgs& args);
int run_ckpt_command(const CommandArgs& args);
int run_bench_command(const CommandArgs& args);
/// `shardscope tune` (tune_command.cpp): trials are child `shardscope launch` processes.
int run_tune_command(const CommandArgs& args);
/// `shardscope launch` and the node agent: they start ranks (child `shardscope train` processes)
/// and never load the engine module themselves.
int run_launch_command(const CommandArgs& args);
int run_node_command(const CommandArgs& args);
// In the engine module (what ranks run):
int run_train_command(const CommandArgs& args);
int run_allreduce_command(const CommandArgs& args);
/// `shardscope sessions import` (sessions_import_action.cpp).
int run_sessions_import(const CommandArgs& args);
/// `shardscope sessions check` and `sessions trend` (sessions_check_action.cpp).
int run_sessions_check(const CommandArgs& args);
int run_sessions_trend(const CommandArgs& args);

/// Every subcommand, in the order `shardscope --help` lists them.
const std::vector<Command>& all_commands();

/// Runs `run` and turns what it throws into a message on stderr and an exit code: UsageError and
/// unreadable inputs (configs::InputFileError) exit 2, other errors 1. Both binaries use it, so no
/// exception ever crosses from the engine module into the executable.
int run_at_edge(CommandRun run, const CommandArgs& args);

}  // namespace shardscope::app
