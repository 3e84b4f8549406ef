// shardscope tune: the fastest config that fits, from the estimator's pruning and short real
// trials (`shardscope launch` child processes); the library is tune/, docs/tune.md the guide.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "app/cli/arg_parser.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/train_args.hpp"
#include "configs/hostfile.hpp"
#include "configs/number_text.hpp"
#include "estimator/byte_units.hpp"
#include "tune/autotuning_block.hpp"
#include "tune/candidate_config.hpp"
#include "tune/trial_runner.hpp"
#include "tune/tune_error.hpp"
#include "tune/tune_report.hpp"
#include "tune/tune_run.hpp"

namespace shardscope::app {
namespace {

ArgParser tune_parser() {
  ArgParser parser(
      "tune",
      "Finds the fastest config that fits: every candidate of the space (ZeRO stage 0-3, micro-batch with\n"
      "gradient accumulation for a fixed train_batch_size, activation checkpointing, optimizer and parameter\n"
      "offload; bucket sizes with autotuning.fast false) gets the estimator's memory prediction, those over\n"
      "the budget less the margin are recorded as pruned and never run, and the rest run as short real trials\n"
      "(`shardscope launch` of this build, one session each, tagged tune:<run>) in the tuner's order until\n"
      "--trials, --budget or early stopping ends the search. Metric: whole-step throughput, median over the\n"
      "profiled steps after warm-up. Writes DIR/ds_config.json (the best; only tuned keys differ from --config)\n"
      "and DIR/tune_report.md. The config's DeepSpeed `autotuning` block is read with DeepSpeed 0.19.7's\n"
      "defaults; flags override it. Differences from DeepSpeed's autotuner: no --autotuning run step (trials\n"
      "are the runs), metric names map throughput->samples_per_s, latency->step_time, flops->tokens_per_s,\n"
      "the model_based tuner's surrogate is ridge regression (not XGBoost), tuner_early_stopping counts N\n"
      "whole trials after the best, num_tuning_micro_batch_sizes keeps the N largest micro-batches the\n"
      "estimator lets fit, and the default window is steps 3-12 (DeepSpeed: 3-5). Candidates slower by\n"
      "construction are skipped, not tried: activation checkpointing or offload on while the same config with\n"
      "it off fits and has not failed (recorded as skipped; --try-dominated tries them). See docs/tune.md.");
  parser.option("config", "FILE", "the DeepSpeed config to tune (ds_config.json)")
      .option("num_procs", "N", "trials run N CPU ranks (Gloo) per host, as launch --num_procs")
      .option("num_gpus", "N", "trials use GPUs 0..N-1 per host, as launch --num_gpus")
      .option("hostfile", "FILE", "trials run on the hosts of FILE, as launch --hostfile")
      .option("num_nodes", "N", "with --hostfile: the first N hosts")
      .option("master_port", "PORT", "rendezvous port of every trial (default: a free one per trial)")
      .option("launcher", "NAME", "with --hostfile: ssh (default), pdsh, openmpi or slurm, as launch --launcher")
      .option("launcher_args", "ARGS", "with --hostfile: extra arguments for ssh/pdsh/mpirun/srun, as launch --launcher_args")
      .option("ssh_port", "PORT", "with --hostfile: ssh port of the hosts, as launch --ssh_port")
      .option("space", "KEY=V1,V2", "a dotted ds_config key and the values to try (replaces its default); "
                                    "none/default = the key left out; activation_checkpointing=false,true", true)
      .option("metric", "NAME", "tokens_per_s (default), samples_per_s or step_time (lower wins)")
      .option("tuner", "TYPE", "gridsearch (default), random or model_based (autotuning.tuner_type)")
      .option("budget", "TIME", "stop starting trials once their wall time adds up to TIME (90s, 20m, 1h)")
      .option("trials", "N", "run at most N trials (autotuning.tuner_num_trials, default 50); pruned ones are free")
      .option("early-stopping", "N", "stop after N trials in a row that do not beat the best (default 5; 0 = never)")
      .option("min-improvement", "FRACTION", "a trial beats the best only by more than this fraction (0.02 or 2%; default 0)")
      .option("profile-steps", "START:END", "each trial runs END steps, measured from START (default 3:12)")
      .option("memory-budget", "BYTES", "per-rank memory to fit (default: GPU 0's memory; needed without a GPU)")
      .option("memory-margin", "FRACTION", "memory kept free, as estimate --margin (default 0.10)")
      .option("db", "FILE", "session database for the trials and the tune tables (default tune.db)")
      .option("out", "DIR", "where ds_config.json, tune_report.md and the trial configs go "
                            "(default: autotuning.results_dir, autotuning_results)")
      .option("trial-timeout", "SECONDS", "end a trial that runs longer (recorded failed; default: none)")
      .option("seed", "N", "seed of the random and model_based tuners (default 42)")
      .flag("try-dominated", "also try candidates slower by construction (checkpointing or offload on where the same "
                             "config without it fits); by default they are recorded as skipped")
      .flag("resume", "continue the tune run of --db with the same config, space and flags; no finished trial repeats")
      .allow_passthrough("the `shardscope train` arguments of every trial (model, shape, data), without --config/--steps");
  return parser;
}

long long positive_flag(const ParsedArgs& p, const std::string& name, long long fallback) {
  const auto v = p.integer(name);
  if (!v) return fallback;
  if (*v <= 0) throw UsageError("--" + name + " must be positive, got " + std::to_string(*v));
  return *v;
}

double parse_duration(const std::string& text) {
  const auto [value, used] = configs::leading_number(text);
  const std::string unit = text.substr(used);
  const double scale = unit == "" || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || value <= 0)
    throw UsageError("--budget '" + text + "' is not a time: give a number with s, m or h, e.g. --budget 20m");
  return value * scale;
}

// A fraction of the best's metric, 0 or more ("0.02", "2%"); above 1 is allowed (a 2x bar).
double parse_improvement(const std::string& text) {
  const auto [value, used] = configs::leading_number(text);
  const bool percent = used < text.size() && text.substr(used) == "%";
  if (used == 0 || (used != text.size() && !percent) || value < 0)
    throw UsageError("--min-improvement '" + text + "' is not a fraction of 0 or more, e.g. 0.02 or 2%");
  return percent ? value / 100 : value;
}

void refuse_owned_train_flags(const std::vector<std::string>& train_args) {
  for (const auto& a : train_args)
    for (const char* owned : {"--config", "--steps", "--session", "--collector", "--name", "--save", "--load"})
      if (a == owned || a.rfind(std::string(owned) + "=", 0) == 0)
        throw UsageError(std::string("the train arguments after `--` carry ") + owned +
                         ", which the tuner sets for every trial; give the config as tune --config and leave it out");
}

// What a GPU run must fit in: GPU 0's memory as nvidia-smi reports it.
std::optional<tune::MemoryBudget> gpu_memory_budget() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      ::popen("nvidia-smi --query-gpu=memory.total,name --format=csv,noheader,nounits 2>/dev/null", "r"), ::pclose);
  if (!pipe) return std::nullopt;
  char line[256] = {};
  if (!std::fgets(line, sizeof line, pipe.get())) return std::nullopt;
  const std::string text(line);
  const auto comma = text.find(',');
  if (comma == std::string::npos) return std::nullopt;
  tune::MemoryBudget b;
  b.bytes = std::stod(text.substr(0, comma)) * 1048576.0;  // MiB
  std::string name = text.substr(comma + 1);
  name.erase(0, name.find_first_not_of(' '));
  name.erase(name.find_last_not_of(" \n") + 1);
  b.source = name + " (GPU 0)";
  return b;
}

tune::MemoryBudget memory_budget(const ParsedArgs& p) {
  tune::MemoryBudget b;
  if (const auto text = p.value("memory-budget")) {
    b.bytes = estimator::parse_byte_size(*text, "--memory-budget");
    b.source = "--memory-budget";
  } else if (const auto gpu = gpu_memory_budget()) {
    b = *gpu;
  } else {
    throw UsageError("tune needs the memory a rank may use: this machine shows no GPU (nvidia-smi), so give "
                     "--memory-budget, e.g. --memory-budget 8GiB");
  }
  b.device_level = !p.value("num_procs");
  if (const auto margin = p.value("memory-margin")) b.margin = estimator::parse_fraction(*margin, "--memory-margin");
  return b;
}

// The ranks of one trial, as launch would start them.
int world_size(const ParsedArgs& p) {
  const int per_host = static_cast<int>(p.value("num_procs") ? positive_flag(p, "num_procs", 1)
                                                             : positive_flag(p, "num_gpus", 0));
  if (!p.value("hostfile")) {
    if (per_host > 0) return per_host;
    throw UsageError("tune needs where trials run: --num_procs N (CPU ranks), --num_gpus N or --hostfile FILE");
  }
  const auto hostfile = configs::read_hostfile(*p.value("hostfile"));
  if (!hostfile || hostfile->hosts.empty()) throw UsageError("--hostfile " + *p.value("hostfile") + " lists no host");
  const std::size_t nodes = std::min<std::size_t>(hostfile->hosts.size(), positive_flag(p, "num_nodes", 1 << 20));
  int world = 0;
  for (std::size_t i = 0; i < nodes; ++i) world += per_host > 0 ? per_host : hostfile->hosts[i].slot_count;
  return world;
}

std::vector<std::string> launch_flags(const ParsedArgs& p) {
  std::vector<std::string> flags;
  for (const char* name :
       {"num_procs", "num_gpus", "hostfile", "num_nodes", "master_port", "launcher", "launcher_args", "ssh_port"})
    if (const auto v = p.value(name)) flags.insert(flags.end(), {std::string("--") + name, *v});
  return flags;
}

void apply_profile_steps(const ParsedArgs& p, const tune::AutotuningBlock& block, tune::TuneRequest& r) {
  if (block.profile_steps_given) {
    r.start_profile_step = block.start_profile_step;
    r.end_profile_step = block.end_profile_step;
  }
  const auto text = p.value("profile-steps");
  if (!text) return;
  const auto colon = text->find(':');
  try {
    r.start_profile_step = std::stoll(text->substr(0, colon));
    r.end_profile_step = std::stoll(text->substr(colon + 1));
  } catch (const std::exception&) {
    throw UsageError("--profile-steps '" + *text + "' is not START:END, e.g. --profile-steps 3:12");
  }
  if (colon == std::string::npos || r.start_profile_step < 1 || r.end_profile_step < r.start_profile_step)
    throw UsageError("--profile-steps '" + *text + "': give START:END with 1 <= START <= END, e.g. 3:12");
}

void apply_autotuning(const ParsedArgs& p, const tune::AutotuningBlock& block, tune::TuneRequest& r) {
  r.space_options.fast = block.fast;
  r.space_options.min_micro_batch = block.min_train_micro_batch_size_per_gpu;
  r.space_options.max_micro_batch = block.max_train_micro_batch_size_per_gpu;
  r.num_tuning_micro_batch_sizes = block.num_tuning_micro_batch_sizes;
  r.max_train_batch_size = block.max_train_batch_size;
  r.min_train_batch_size = block.min_train_batch_size;
  r.arg_mappings = block.arg_mappings;
  r.metric = tune::parse_tune_metric(
      p.value("metric").value_or(block.present ? tune::metric_for_autotuning(block.metric) : "tokens_per_s"), "--metric");
  r.tuner = tune::parse_tuner_type(p.value("tuner").value_or(block.tuner_type), "--tuner");
  r.max_trials = positive_flag(p, "trials", block.tuner_num_trials);
  r.early_stopping = static_cast<int>(p.integer("early-stopping").value_or(block.tuner_early_stopping));
  if (r.early_stopping < 0) throw UsageError("--early-stopping must be 0 (never) or more");
  r.out_dir = p.value("out").value_or(block.results_dir);
  r.exps_dir = block.exps_dir_given ? block.exps_dir : r.out_dir + "/exps";
  apply_profile_steps(p, block, r);
}

tune::TuneRequest make_request(const ParsedArgs& p) {
  tune::TuneRequest r;
  r.config_path = *p.value("config");
  r.user_config = tune::read_user_config(r.config_path);
  const auto block = tune::read_autotuning_block(r.user_config, r.config_path);
  for (const auto& note : block.notes) std::cerr << "shardscope tune: note: " << note << "\n";
  refuse_owned_train_flags(p.passthrough);
  r.train_args = p.passthrough;
  r.model = train_model_spec(train_parser().parse(p.passthrough));
  r.world_size = world_size(p);
  r.launch_flags = launch_flags(p);
  for (const auto& text : p.values("space")) r.space_flags.push_back(tune::parse_space_flag(text));
  for (const auto& d : r.space_flags) r.micro_batch_from_default &= d.key != tune::kMicroBatchKey;
  apply_autotuning(p, block, r);
  if (!block.overwrite && !p.has("resume") && std::ifstream(r.out_dir + "/ds_config.json"))
    throw UsageError(r.config_path + ": autotuning.overwrite is false and " + r.out_dir +
                     "/ds_config.json exists: give another --out, --resume the run, or set overwrite true");
  if (const auto b = p.value("budget")) r.budget_s = parse_duration(*b);
  if (const auto m = p.value("min-improvement")) r.min_improvement = parse_improvement(*m);
  r.trial_timeout_s = static_cast<double>(positive_flag(p, "trial-timeout", 0));
  r.seed = static_cast<std::uint64_t>(positive_flag(p, "seed", 42));
  r.memory = memory_budget(p);
  r.db = p.value("db").value_or("tune.db");
  r.resume = p.has("resume");
  r.skip_dominated = !p.has("try-dominated");
  r.shardscope = tune::own_shardscope_executable();
  return r;
}

}  // namespace

int run_tune_command(const CommandArgs& args) {
  const ArgParser parser = tune_parser();
  const ParsedArgs p = parser.parse(args);
  if (p.help) {
    std::cout << parser.help_text();
    return kExitOk;
  }
  if (!p.value("config")) throw UsageError("tune needs --config FILE (the DeepSpeed config to tune)");
  if (p.passthrough.empty())
    throw UsageError("tune needs the train arguments after `--`, e.g. shardscope tune --config ds.json --num_procs 2 "
                     "--memory-budget 4GiB -- --model gpt2 --layers 2 --hidden 64");
  try {
    const tune::TuneRequest request = make_request(p);
    tune::install_stop_handlers();
    const tune::TuneOutcome outcome = tune::run_tune(request, std::cerr);
    std::cout << tune::format_results_table(outcome.trials, tune::tune_metric_name(request.metric));
    std::cout << "stopped: " << outcome.stop_reason << "\n";
    constexpr int kExitInterrupted = 130;  // as launch after Ctrl-C
    if (outcome.best) {
      const auto& best = outcome.trials[*outcome.best];
      std::cout << "best: trial " << best.trial << " [" << best.name << "], session " << best.session_uid << "\n"
                << "wrote " << outcome.best_config_path << " and " << outcome.report_path << "\n";
      return outcome.interrupted ? kExitInterrupted : kExitOk;
    }
    std::cout << "no trial ran to the end; wrote " << outcome.report_path << "\n";
    return outcome.interrupted ? kExitInterrupted : kExitFindings;
  } catch (const tune::TuneError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace shardscope::app
