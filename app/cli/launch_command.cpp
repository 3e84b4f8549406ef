// shardscope launch: one `shardscope train` per GPU (or CPU rank) on this machine, with
// DeepSpeed's launcher habits (see engine/launcher/local_launcher.hpp and docs/launcher.md).
#include <unistd.h>

#include <climits>
#include <iostream>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "engine/launcher/launch_error.hpp"
#include "engine/launcher/local_launcher.hpp"

namespace shardscope::app {
namespace {

namespace launcher = engine::launcher;

ArgParser launch_parser() {
  ArgParser parser("launch",
                   "Starts one `shardscope train` rank per selected GPU (or --num_procs CPU ranks) on this\n"
                   "machine, as the DeepSpeed launcher does: it sets MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK,\n"
                   "WORLD_SIZE, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE and CUDA_VISIBLE_DEVICES for each rank, relays\n"
                   "their output (prefixed [rank R]), forwards Ctrl-C and SIGTERM to every rank, stops all ranks\n"
                   "when one fails and names the first one. Exit code: 0 when every rank succeeded; the first\n"
                   "failing rank's code (128+signal when it was killed); 130 after Ctrl-C; 2 when nothing could\n"
                   "start. See docs/launcher.md.");
  parser.option("num_gpus", "N", "use GPUs 0..N-1 (default: every visible GPU)")
      .option("num_procs", "N", "start N CPU ranks instead (Gloo); adds --device cpu unless given")
      .option("include", "NODE_SPEC", "GPUs to use, DeepSpeed syntax: localhost:0,2")
      .option("exclude", "NODE_SPEC", "GPUs to leave out, DeepSpeed syntax: localhost:1")
      .option("master_addr", "ADDR", "rendezvous address (default 127.0.0.1)")
      .option("master_port", "PORT", "rendezvous port (default 29500)")
      .option("enable_each_rank_log", "DIR", "also write each rank's output to DIR/<YYYYmmddHHMMSS>_rank<R>.log")
      .option("session", "FILE", "record the run in this session database (the launcher hosts the collector)")
      .option("name", "TEXT", "session name (default: the config file's name)")
      .allow_passthrough("the `shardscope train` arguments of every rank (--config, --model, --steps, ...)");
  return parser;
}

int integer_flag(const ParsedArgs& p, const std::string& name, int fallback) {
  const auto v = p.integer(name);
  if (!v) return fallback;
  if (*v <= 0 || *v > INT_MAX) throw UsageError("--" + name + " must be positive, got " + std::to_string(*v));
  return static_cast<int>(*v);
}

launcher::LaunchRequest make_request(const ParsedArgs& p, const CommandArgs& args) {
  launcher::LaunchRequest r;
  // The running executable itself, so every rank runs the very build that launched it.
  r.program = "/proc/self/exe";
  r.program_args = {"train"};
  r.train_args = p.passthrough;
  r.num_gpus = integer_flag(p, "num_gpus", -1);
  r.num_procs = integer_flag(p, "num_procs", 0);
  r.include = p.value("include").value_or("");
  r.exclude = p.value("exclude").value_or("");
  r.master_addr = p.value("master_addr").value_or("");
  r.master_port = integer_flag(p, "master_port", launcher::kDefaultMasterPort);
  r.each_rank_log_dir = p.value("enable_each_rank_log");
  r.session_db = p.value("session");
  r.name = p.value("name").value_or("");
  r.command_line = {"shardscope", "launch"};
  r.command_line.insert(r.command_line.end(), args.begin(), args.end());
  return r;
}

}  // namespace

int run_launch_command(const CommandArgs& args) {
  const ArgParser parser = launch_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  if (p.passthrough.empty())
    throw UsageError("launch needs the train arguments after `--`, e.g. shardscope launch --num_procs 2 -- "
                     "--config ds.json --steps 10");
  const launcher::LaunchRequest request = make_request(p, args);
  launcher::LaunchOutcome outcome;
  try {
    outcome = launcher::launch_local(request, std::cout, std::cerr);
  } catch (const launcher::LaunchError& e) {
    if (e.kind() == launcher::LaunchError::Kind::kConfig) {
      std::cerr << e.what();
      return kExitFindings;
    }
    std::cerr << "shardscope launch: error: " << e.what() << "\n";
    return kExitUsage;
  }
  // The same summary `shardscope train --session` and `shardscope sessions show` print.
  if (request.session_db && !outcome.session_uid.empty()) {
    std::cout.flush();
    run_sessions_command({"show", outcome.session_uid, "--db", *request.session_db});
  }
  return outcome.exit_code;
}

}  // namespace shardscope::app
