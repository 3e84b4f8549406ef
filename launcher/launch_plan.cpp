#include "launcher/launch_plan.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "launcher/device_selection.hpp"
#include "launcher/environment_exports.hpp"
#include "launcher/launch_error.hpp"
#include "sessions/run_secret.hpp"
#include "sessions/wall_clock.hpp"

namespace shardscope::launcher {
namespace {

bool has_key(const std::string& entry, const std::string& key) {
  return entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 && entry[key.size()] == '=';
}

std::optional<std::string> get_env(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& e : env)
    if (has_key(e, key)) return e.substr(key.size() + 1);
  return std::nullopt;
}

void unset_env(std::vector<std::string>& env, const std::string& key) {
  env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return has_key(e, key); }), env.end());
}

void set_env(std::vector<std::string>& env, const std::string& key, const std::string& value) {
  unset_env(env, key);
  env.push_back(key + "=" + value);
}

using sessions::host_name;

// Which devices the ranks use: GPU ids, or none for CPU ranks.
std::vector<int> select_devices(const LaunchRequest& r, const std::vector<std::string>& env, LaunchPlan& plan) {
  if (r.num_procs < 0) throw usage_error("--num_procs must be a positive number of CPU ranks");
  if (r.num_procs > 0) {
    if (r.num_gpus != -1 || !r.include.empty() || !r.exclude.empty())
      throw usage_error("--num_procs starts CPU ranks; it cannot be combined with --num_gpus, --include or --exclude");
    plan.cpu = true;
    return {};
  }
  DeviceSelectionOptions o;
  o.num_gpus = r.num_gpus;
  o.include = r.include;
  o.exclude = r.exclude;
  o.cuda_visible_devices = get_env(env, "CUDA_VISIBLE_DEVICES");
  o.gpu_count = r.gpu_count ? *r.gpu_count : count_local_gpus();
  const std::string host = host_name();
  if (!host.empty() && host != "localhost") o.local_names.push_back(host);
  if (r.placement && !r.placement->name.empty()) o.local_names.push_back(r.placement->name);
  auto selection = select_local_devices(o);
  plan.notes.insert(plan.notes.end(), selection.notes.begin(), selection.notes.end());
  return selection.device_ids;
}

std::string join_ids(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

// What every rank's environment shares: the rendezvous, the sizes, and the devices or threads.
std::vector<std::string> shared_rank_environment(std::vector<std::string> env, const LaunchRequest& r, int local,
                                                 LaunchPlan& plan) {
  // Only meaningful next to the --collector the launcher adds; never inherited from outside.
  unset_env(env, sessions::kCollectorSecretVariable);
  unset_env(env, sessions::kCollectorKeyFdVariable);
  for (const auto& [key, value] : r.extra_env) set_env(env, key, value);
  const NodePlacement node = r.placement ? *r.placement : NodePlacement{"", 0, 1, 0, local};
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"MASTER_ADDR", plan.master_addr},
                                                        {"MASTER_PORT", std::to_string(plan.master_port)},
                                                        {"WORLD_SIZE", std::to_string(node.world_size)},
                                                        {"LOCAL_SIZE", std::to_string(local)},
                                                        {"CROSS_RANK", std::to_string(node.node_rank)},
                                                        {"CROSS_SIZE", std::to_string(node.node_count)}})
    set_env(env, key, value);
  if (!plan.cpu) {
    // As launch.py: every rank sees the selected GPUs and uses cuda:LOCAL_RANK among them.
    set_env(env, "CUDA_VISIBLE_DEVICES", join_ids(plan.device_ids));
  } else if (!get_env(env, "OMP_NUM_THREADS")) {
    const int cpus = available_cpus(), threads = std::max(1, cpus / local);
    set_env(env, "OMP_NUM_THREADS", std::to_string(threads));
    plan.notes.push_back("setting OMP_NUM_THREADS=" + std::to_string(threads) + " for each of the " +
                         std::to_string(local) + " CPU rank(s) (" + std::to_string(cpus) + " cores / " +
                         std::to_string(local) + "); set OMP_NUM_THREADS to choose another value");
  }
  return env;
}

}  // namespace

void check_train_args(const TrainArgsView& train) {
  if (train.session)
    throw usage_error("--session " + *train.session + " is among the train arguments; put it before `--` "
                "(shardscope launch --session FILE -- ...): the launcher records the session for every rank");
  if (train.collector)
    throw usage_error("--collector is among the train arguments; the launcher hosts the collector and passes its "
                "address to every rank itself: remove it, and give --session FILE to the launcher");
}

TrainArgsView scan_train_args(const std::vector<std::string>& args) {
  TrainArgsView view;
  const std::pair<const char*, std::optional<std::string> TrainArgsView::*> kSingle[] = {
      {"--config", &TrainArgsView::config},   {"--device", &TrainArgsView::device},
      {"--name", &TrainArgsView::name},       {"--session", &TrainArgsView::session},
      {"--collector", &TrainArgsView::collector}, {"--deepspeed-version", &TrainArgsView::deepspeed_version}};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto eq = a.find('=');
    const std::string flag = a.substr(0, eq);
    const bool inline_value = eq != std::string::npos;
    const auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return a.substr(eq + 1);
      if (i + 1 < args.size()) return args[++i];
      return std::string();  // the train command reports the missing value
    };
    if (flag == "--set") {
      view.overrides.push_back(*value());
      continue;
    }
    for (const auto& [name, member] : kSingle)
      if (flag == name) {
        view.*member = value();
        break;
      }
  }
  return view;
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

LaunchPlan make_launch_plan(const LaunchRequest& r) {
  LaunchPlan plan;
  plan.train = scan_train_args(r.train_args);
  check_train_args(plan.train);
  if (r.master_port <= 0 || r.master_port > 65535)
    throw usage_error("--master_port " + std::to_string(r.master_port) + " is not a TCP port (1-65535)");
  const std::vector<std::string> base = r.base_env ? *r.base_env : process_environment();
  plan.device_ids = select_devices(r, base, plan);
  const int world = plan.cpu ? r.num_procs : static_cast<int>(plan.device_ids.size());
  plan.master_addr = r.master_addr.empty() ? "127.0.0.1" : r.master_addr;
  plan.master_port = r.master_port;
  std::vector<std::string> args{r.program};
  args.insert(args.end(), r.program_args.begin(), r.program_args.end());
  args.insert(args.end(), r.train_args.begin(), r.train_args.end());
  if (plan.cpu && !plan.train.device) args.insert(args.end(), {"--device", "cpu"});
  const std::vector<std::string> env = shared_rank_environment(base, r, world, plan);
  const int first_rank = r.placement ? r.placement->first_rank : 0;
  for (int local = 0; local < world; ++local) {
    RankSpec spec;
    spec.rank = first_rank + local;
    spec.local_rank = local;
    spec.device = plan.cpu ? "cpu" : "cuda:" + std::to_string(plan.device_ids[static_cast<std::size_t>(local)]);
    spec.command.program = r.program;
    spec.command.argv = args;
    spec.command.env = env;
    set_env(spec.command.env, "RANK", std::to_string(spec.rank));
    set_env(spec.command.env, "LOCAL_RANK", std::to_string(local));
    plan.ranks.push_back(std::move(spec));
  }
  return plan;
}

void attach_session(LaunchPlan& plan, const std::string& collector_address, const std::string& secret) {
  for (auto& spec : plan.ranks) {
    spec.command.argv.insert(spec.command.argv.end(), {"--collector", collector_address});
    // Its own key only, on a pipe: the environment of a process is readable by the same user for
    // its whole life (/proc/<pid>/environ), a pipe's bytes are gone once the rank reads them.
    spec.command.key_handover = sessions::rank_key(secret, spec.rank);
    set_env(spec.command.env, sessions::kCollectorKeyFdVariable, std::to_string(sessions::kCollectorKeyFd));
  }
}

}  // namespace shardscope::launcher
