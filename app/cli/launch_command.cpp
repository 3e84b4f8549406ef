// shardscope launch: `shardscope train` ranks on this machine or on every host of a hostfile,
// with DeepSpeed's launcher habits (launcher/launch_routing.hpp, docs/launcher.md); with
// --preflight, the hosts' checks instead of a run (launcher/preflight.hpp).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <climits>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/deepspeed_version_flag.hpp"
#include "app/cli/engine_module.hpp"
#include "configs/display_text.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_routing.hpp"
#include "launcher/preflight.hpp"

namespace shardscope::app {
namespace {


ArgParser launch_parser() {
  ArgParser parser("launch",
                   "Starts one `shardscope train` rank per selected GPU (or --num_procs CPU ranks), as the DeepSpeed\n"
                   "launcher does: on this machine, or with --hostfile on every host it lists (a node agent per host\n"
                   "over ssh, pdsh, mpirun or srun; or --no_ssh --node_rank R on each node). It sets MASTER_ADDR,\n"
                   "MASTER_PORT, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE and\n"
                   "CUDA_VISIBLE_DEVICES for each rank, relays their output, forwards Ctrl-C and SIGTERM to every rank\n"
                   "on every host, stops all ranks when one fails and names the first one (host:rank). --preflight\n"
                   "checks the hosts instead. Exit code: 0 when every rank succeeded; the first failing rank's code\n"
                   "(128+signal when it was killed); 1 when a host became unreachable; 130 after Ctrl-C; 124 when\n"
                   "--on-hang stop ended a hung run; 2 when nothing could start. With --session the run doctor\n"
                   "watches the run and names a hang's culprit (host:rank, collective, step). See docs/launcher.md\n"
                   "and docs/doctor.md.");
  parser.option("hostfile", "FILE", "MPI-style hostfile, `HOST slots=N` lines (default /job/hostfile; missing: this machine)")
      .option("num_nodes", "N", "the first N hosts of the hostfile")
      .option("num_gpus", "N", "use GPUs 0..N-1 on every host (default: every visible GPU / every slot)")
      .option("num_procs", "N", "start N CPU ranks (Gloo) on every host instead; adds --device cpu unless given")
      .option("include", "NODE_SPEC", "hosts and GPUs to use, DeepSpeed syntax: worker-0@worker-1:0,2")
      .option("exclude", "NODE_SPEC", "hosts and GPUs to leave out, same syntax: worker-1:0")
      .option("master_addr", "ADDR", "rendezvous address (default: 127.0.0.1, or the first host's `hostname -I`)")
      .option("master_port", "PORT", "rendezvous port (default 29500)")
      .option("launcher", "ssh|pdsh|openmpi|slurm", "how node agents are started on the hosts (default ssh)")
      .option("launcher_args", "ARGS", "extra arguments for ssh/pdsh/mpirun/srun, one quoted string")
      .option("ssh_port", "PORT", "ssh port of the hosts")
      .flag("no_ssh", "start only this node's ranks (the same command runs on every node); needs --node_rank")
      .option("node_rank", "R", "with --no_ssh: this node's index in the hostfile's selection")
      .option("enable_each_rank_log", "DIR", "also write each rank's output to DIR/<YYYYmmddHHMMSS>_rank<R>.log")
      .option("session", "FILE", "record the run in this session database (the launcher hosts the collector)")
      .option("name", "TEXT", "session name (default: the config file's name)")
      .option("collector_addr", "ADDR", "the collector's address (default: loopback, or the one facing MASTER_ADDR)")
      .option("collector_port", "PORT", "the collector's port (default: a free one; --no_ssh: master_port + 1)")
      .option("collector_secret_file", "FILE", "a run secret shared by every --no_ssh node (mode 0600)")
      .option("hang-after", "SECONDS", "with --session: a run with no step and no collective completed for this long "
                                       "hangs (default: max(60, 20 x the median step time))")
      .option("on-hang", "report|stop", "with --session: on a hang, name the culprit and keep waiting (report, the "
                                        "default) or then stop every rank and exit 124 (stop)")
      .flag("preflight", "check every host of the hostfile (reachable, build, GPUs, /dev/shm, port, all-reduce)")
      .flag("json", "with --preflight: print the table as JSON")
      .alias("H", "hostfile")
      .alias("i", "include")
      .alias("e", "exclude")
      .alias("num_accelerators", "num_gpus")
      .alias("hang_after", "hang-after")
      .alias("on_hang", "on-hang")
      .allow_passthrough("the `shardscope train` arguments of every rank (--config, --model, --steps, ...)");
  add_deepspeed_version_option(parser);
  return parser;
}

int integer_flag(const ParsedArgs& p, const std::string& name, int fallback) {
  const auto v = p.integer(name);
  if (!v) return fallback;
  if (*v <= 0 || *v > INT_MAX) throw UsageError("--" + name + " must be positive, got " + std::to_string(*v));
  return static_cast<int>(*v);
}

// --hang-after and --on-hang: the run doctor reads the marks the ranks send to the session's collector.
launcher::DoctorOptions doctor_options(const ParsedArgs& p) {
  launcher::DoctorOptions o;
  if (const auto text = p.value("hang-after")) {
    std::size_t used = 0;
    double seconds = 0;
    try {
      seconds = std::stod(*text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text->size() || !(seconds > 0) || seconds > 1e7)
      throw UsageError("--hang-after must be a number of seconds above 0, got '" + *text + "'");
    o.hang_after_s = seconds;
  }
  if (const auto text = p.value("on-hang")) {
    try {
      o.on_hang = launcher::parse_on_hang(*text);
    } catch (const launcher::LaunchError& e) {
      throw UsageError(e.what());
    }
  }
  if ((p.value("hang-after") || p.value("on-hang")) && !p.value("session"))
    throw UsageError(std::string("--") + (p.value("hang-after") ? "hang-after" : "on-hang") +
                     " needs --session FILE: the run doctor watches the collective marks the ranks send to the "
                     "session's collector");
  return o;
}

// One choice of rules for the launcher's check of --config and every rank's: launch's flag, else
// one among the train arguments, else the installed DeepSpeed's; the ranks get it explicitly.
configs::DeepSpeedRules launch_rules(const ParsedArgs& p, std::vector<std::string>& train_args) {
  const auto in_train = launcher::scan_train_args(train_args).deepspeed_version;
  const auto given = p.value("deepspeed-version");
  if (given && in_train && *given != *in_train)
    throw UsageError("--deepspeed-version " + *given + " disagrees with --deepspeed-version " + *in_train +
                     " among the train arguments; give it once, before `--`");
  configs::DeepSpeedRules rules;
  try {
    rules = configs::choose_deepspeed_rules(given ? given : in_train);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  if (!in_train) train_args.insert(train_args.end(), {"--deepspeed-version", configs::to_string(rules.version)});
  return rules;
}

std::string own_executable() {
  char path[PATH_MAX] = {};
  return ::realpath("/proc/self/exe", path) ? path : "/proc/self/exe";
}

launcher::LaunchFlags make_flags(const ParsedArgs& p, const CommandArgs& args) {
  launcher::LaunchFlags f;
  launcher::LaunchRequest& r = f.launch;
  // The running executable itself, so every local rank runs the very build that launched it.
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
  r.doctor = doctor_options(p);
  r.command_line = {"shardscope", "launch"};
  r.command_line.insert(r.command_line.end(), args.begin(), args.end());
  f.hostfile_given = p.value("hostfile").has_value();
  f.hostfile = p.value("hostfile").value_or(configs::kDefaultHostfile);
  f.num_nodes = integer_flag(p, "num_nodes", -1);
  f.launcher = p.value("launcher").value_or("ssh");
  if (p.value("ssh_port")) f.ssh_port = integer_flag(p, "ssh_port", 22);
  f.launcher_args = p.value("launcher_args").value_or("");
  f.no_ssh = p.has("no_ssh");
  if (p.value("node_rank")) f.node_rank = static_cast<int>(*p.integer("node_rank"));
  f.collector_addr = p.value("collector_addr").value_or("");
  f.collector_port = integer_flag(p, "collector_port", 0);
  f.collector_secret_file = p.value("collector_secret_file");
  f.agent_program = own_executable();
  return f;
}

int run_preflight(const launcher::LaunchFlags& flags, bool json) {
  const launcher::RoutedLaunch routed = launcher::route_launch(flags);
  if (!routed.hosts && ::access(flags.hostfile.c_str(), F_OK) == 0)
    throw UsageError("--preflight checks other hosts, but " + flags.hostfile +
                     " selects only this machine, which a launch runs locally as DeepSpeed's runner does; "
                     "`shardscope report` checks this machine");
  if (!routed.hosts)
    throw UsageError("--preflight checks the hosts of a hostfile: give --hostfile FILE (" + flags.hostfile +
                     " does not exist)");
  constexpr std::int64_t kPreflightBytes = 16 << 20;
  const auto report = launcher::run_preflight(*routed.hosts, kPreflightBytes, std::cerr);
  if (json) std::cout << launcher::preflight_to_json(report).dump(2) << "\n";
  else std::cout << launcher::format_preflight(report);
  return report.ok ? kExitOk : kExitFindings;
}

}  // namespace

int run_launch_command(const CommandArgs& args) {
  const ArgParser parser = launch_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  const bool preflight = p.has("preflight");
  if (p.passthrough.empty() && !preflight)
    throw UsageError("launch needs the train arguments after `--`, e.g. shardscope launch --num_procs 2 -- "
                     "--config ds.json --steps 10");
  if (p.has("json") && !preflight) throw UsageError("--json goes with --preflight (the table as JSON)");
  launcher::LaunchFlags flags = make_flags(p, args);
  if (!preflight) {
    const configs::DeepSpeedRules rules = launch_rules(p, flags.launch.train_args);
    std::cerr << "shardscope launch: rules: " << rules.describe() << "\n";
  } else if (p.value("deepspeed-version")) {
    deepspeed_rules_from(p);  // refused when unsupported, though preflight validates no config
  }
  launcher::LaunchOutcome outcome;
  try {
    if (preflight) return run_preflight(flags, p.has("json"));
    const launcher::RoutedLaunch routed = launcher::route_launch(flags);
    // Ranks started here load the engine module; hosts' agents check their own (node_command.cpp).
    if (routed.route != launcher::LaunchRoute::kHosts && !engine_available("launch")) return kExitFindings;
    outcome = launcher::run_launch(routed, std::cout, std::cerr);
  } catch (const launcher::LaunchError& e) {
    if (e.kind() == launcher::LaunchError::Kind::kConfig) {
      std::cerr << configs::shown_text(e.what());
      return kExitFindings;
    }
    std::cerr << "shardscope launch: error: " << configs::shown_text(e.what()) << "\n";
    return kExitUsage;
  }
  // The same summary `shardscope train --session` and `shardscope sessions show` print.
  if (flags.launch.session_db && !outcome.session_uid.empty() && !flags.no_ssh)
    print_closing_summary("shardscope launch", "the run", outcome.exit_code, outcome.session_uid, *flags.launch.session_db);
  return outcome.exit_code;
}

}  // namespace shardscope::app
