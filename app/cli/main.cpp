// shardscope: one CLI with subcommands; everything the GUI does can be done from here.
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/engine_module.hpp"
#include "configs/did_you_mean.hpp"
#include "sessions/build_info.hpp"

namespace shardscope::app {

const std::vector<Command>& all_commands() {
  static const std::vector<Command> commands = {
      {"report", "environment, versions, GPUs and kernels (the ds_report counterpart)", Needs::kNothing,
       run_report_command},
      {"estimate", "memory per GPU/CPU per ZeRO stage and offload, communication, the lowest stage that fits",
       Needs::kNothing, run_estimate_command},
      {"validate", "check DeepSpeed configs as DeepSpeed 0.19.7 reads them, with the effective values",
       Needs::kNothing, run_validate_command},
      {"sessions", "list, show, compare, export and delete recorded sessions, import DeepSpeed runs (--db FILE)",
       Needs::kNothing, run_sessions_command},
      {"train", "train the embedded engine on one rank with a DeepSpeed config, into a session", Needs::kEngine,
       nullptr},
      {"launch",
       "start train ranks on this machine or every host of a hostfile, DeepSpeed's launcher habits; --preflight "
       "checks the hosts",
       Needs::kNothing, run_launch_command},
      {"node", "the node agent a multi-host launch starts on every host (not run by hand)", Needs::kNothing,
       run_node_command},
      {"allreduce", "time an all-reduce across the ranks of a launch (the preflight's bandwidth check)",
       Needs::kEngine, nullptr},
      {"tune", "find the fastest config that fits: estimator-pruned candidates, short real trials, best ds_config.json",
       Needs::kNothing, run_tune_command},
      {"watch", "run your own DeepSpeed command (deepspeed, torchrun, ...) and follow it live into a session",
       Needs::kNothing, run_watch_command},
      {"ckpt", "inspect ZeRO checkpoints (info) and merge their shards into safetensors (consolidate)",
       Needs::kNothing, run_ckpt_command},
      {"bench", "benchmarks: io (O_DIRECT read/write GB/s over an aio sweep beside fio, the ds_io counterpart)",
       Needs::kNothing, run_bench_command},
  };
  return commands;
}

namespace {

void print_usage(std::ostream& out) {
  out << "usage: shardscope <command> [options]\n\n"
         "ShardScope: profiler and tuning workbench for sharded (ZeRO) training.\n\ncommands:\n";
  for (const auto& c : all_commands()) {
    std::string name = c.name;
    out << "  " << name << std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') << c.summary << "\n";
  }
  out << "\nRun 'shardscope <command> --help' for the options of one command.\n";
}

// `--version --json` is what a cluster check compares across hosts (docs/build.md): it needs no
// LibTorch, so it answers on a host where the engine could not even load.
int print_version(bool as_json) {
  const auto& b = sessions::build_info();
  if (as_json)
    std::cout << nlohmann::json{{"shardscope_version", b.version}, {"git_hash", b.git_hash},
                                {"build_type", b.build_type}, {"compiler", b.compiler},
                                {"libtorch_dir", libtorch_dir().dir}, {"libtorch_found", libtorch_present(libtorch_dir())}}
                     .dump()
              << "\n";
  else
    std::cout << "shardscope " << b.version << " (git " << b.git_hash << ")\n";
  return kExitOk;
}

int run_command(const Command& command, const CommandArgs& args) {
  if (command.needs == Needs::kEngine) return run_engine_command(command.name, args);
  return run_at_edge(command.run, args);
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    print_usage(std::cout);
    return kExitOk;
  }
  if (name == "--version") return print_version(argc > 2 && std::string(argv[2]) == "--json");
  std::vector<std::string> names;
  for (const auto& c : all_commands()) {
    names.push_back(c.name);
    if (name == c.name) return run_command(c, CommandArgs(argv + 2, argv + argc));
  }
  std::cerr << "shardscope: unknown command '" << name << "'";
  if (auto guess = configs::closest_match(name, names)) std::cerr << "; did you mean '" << *guess << "'?";
  std::cerr << "\nRun 'shardscope --help' for the list of commands.\n";
  return kExitUsage;
}

}  // namespace
}  // namespace shardscope::app

int main(int argc, char** argv) { return shardscope::app::dispatch(argc, argv); }
