#include "launcher/preflight.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "launcher/hosts_launcher.hpp"
#include "launcher/launch_error.hpp"
#include "sessions/build_info.hpp"
#include "sessions/host_probe.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

constexpr int kAllReduceIterations = 5;

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

void judge_gpus(const PreflightReport& report, const PlannedNode& node, PreflightHost& row) {
  if (report.cpu || !row.facts) return;
  const int needed = node.slots.empty() ? 0 : *std::max_element(node.slots.begin(), node.slots.end()) + 1;
  if (row.facts->gpu_count < needed)
    row.problems.push_back("has " + std::to_string(row.facts->gpu_count) + " GPU(s) but the run uses slot(s) up to " +
                           std::to_string(needed - 1) + ": fix its slots= in the hostfile (or --include/--num_gpus)");
}

// A host the agent never answered from: a shell's 127 (or "not found") means the host was reached
// but has no shardscope at the launcher's path, which wants a different fix than a dead link.
std::string unreachable_problem(const std::string& host, const std::string& problem) {
  const bool says_missing = problem.find("not found") != std::string::npos || problem.find("No such file") != std::string::npos;
  const bool no_program = problem.find("code 127") != std::string::npos ||
                          (says_missing && problem.find("shardscope") != std::string::npos);
  if (no_program)
    return "has no shardscope at the launcher's path (" + problem +
           "): install the same build there, at the same path: the package (scripts/install_on_hosts.sh HOSTFILE "
           "shardscope_VERSION_amd64.deb) or a copy (docs/build.md, \"Getting the build onto the hosts\")";
  if (problem.find("needs LibTorch") != std::string::npos)
    return "has shardscope but not the LibTorch it loads (" + problem + "): set SHARDSCOPE_LIBTORCH_DIR there";
  return "not reachable: " + problem + " (check `ssh " + host +
         " true` works without a password, the agent's path, and --ssh_port)";
}

void judge_host(PreflightReport& report, const PlannedNode& node, const HostsLauncher::Probe& probe, PreflightHost& row) {
  row.host = node.host;
  row.slots = static_cast<int>(node.slots.size());
  row.facts = probe.facts;
  if (!probe.facts) {
    row.problems.push_back(unreachable_problem(node.host, probe.problem));
    return;
  }
  const auto& mine = sessions::build_info();
  if (probe.facts->shardscope_version != mine.version || probe.facts->git_hash != mine.git_hash)
    row.warnings.push_back("version skew: shardscope " + probe.facts->shardscope_version + " (git " +
                           probe.facts->git_hash + ") here, " + mine.version + " (git " + mine.git_hash +
                           ") on the launcher");
  judge_gpus(report, node, row);
  if (!probe.facts->shm_bytes)
    row.warnings.push_back("/dev/shm is not mounted (NCCL needs it between local ranks)");
  else if (*probe.facts->shm_bytes < static_cast<double>(sessions::kMinShmBytes))
    row.warnings.push_back("/dev/shm is " + sessions::format_bytes(static_cast<std::uint64_t>(*probe.facts->shm_bytes)) +
                           ", under " + sessions::format_bytes(sessions::kMinShmBytes) + " (docker: --shm-size=8g)");
  if (node.node_rank == 0 && !probe.facts->master_port_free)
    row.problems.push_back("MASTER_PORT " + std::to_string(report.master_port) + " is in use on " +
                           (probe.facts->run_address.empty() ? node.host : probe.facts->run_address) +
                           ": pick another with --master_port" +
                           (probe.facts->free_port_near ? " (" + std::to_string(*probe.facts->free_port_near) + " is free)" : ""));
  row.ok = row.problems.empty();
}

// The all-reduce: one `shardscope allreduce` per rank of the run, through the same launcher.
void run_allreduce(const HostsRequest& request, std::int64_t bytes, PreflightReport& report, std::ostream& err) {
  HostsRequest r = request;
  r.launch.program_args = {"allreduce"};
  r.launch.train_args = {"--bytes", std::to_string(bytes), "--iters", std::to_string(kAllReduceIterations)};
  if (report.cpu) r.launch.train_args.insert(r.launch.train_args.end(), {"--device", "cpu"});
  r.launch.session_db.reset();
  std::ostringstream out;
  LaunchOutcome outcome;
  try {
    outcome = launch_on_hosts(r, out, err);
  } catch (const LaunchError& e) {
    report.allreduce_problem = e.what();
    return;
  }
  std::istringstream lines(out.str());
  std::string line;
  while (std::getline(lines, line))
    if (auto result = profiler::allreduce_from_line(line)) report.allreduce = result;
  if (outcome.exit_code != 0)
    report.allreduce_problem = outcome.result.first_failure.empty() ? "the all-reduce failed (exit code " +
                                                                          std::to_string(outcome.exit_code) + ")"
                                                                    : outcome.result.first_failure;
  else if (!report.allreduce)
    report.allreduce_problem = "rank 0 printed no result";
  else if (!report.allreduce->correct)
    report.allreduce_problem = "the all-reduce returned a wrong sum on some rank";
}

}  // namespace

PreflightReport run_preflight(const HostsRequest& request, std::int64_t allreduce_bytes, std::ostream& err) {
  PreflightReport report;
  report.master_port = request.launch.master_port;
  std::vector<HostsLauncher::Probe> probes;
  HostsPlan plan;
  {
    HostsLauncher launcher(request, err, err);
    probes = launcher.probe();
    plan = plan_hosts(request, {{}, "", ""});
  }
  report.cpu = plan.cpu;
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    PreflightHost row;
    judge_host(report, plan.nodes[i], probes[i], row);
    report.hosts.push_back(std::move(row));
  }
  const bool hosts_ok = std::all_of(report.hosts.begin(), report.hosts.end(), [](const PreflightHost& h) { return h.ok; });
  if (hosts_ok) run_allreduce(request, allreduce_bytes, report, err);
  else report.allreduce_problem = "not run: a host failed its checks";
  report.ok = hosts_ok && report.allreduce && report.allreduce_problem.empty();
  return report;
}

std::string format_preflight(const PreflightReport& report) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-9s %-24s %-22s %-10s %-14s %s\n", "host", "reachable", "shardscope",
                report.cpu ? "ranks" : "GPUs (slots used)", "/dev/shm", ("port " + std::to_string(report.master_port)).c_str(),
                "status");
  out << line;
  for (const auto& h : report.hosts) {
    const auto& f = h.facts;
    const std::string version = f ? f->shardscope_version + " (" + f->git_hash.substr(0, 10) + ")" : "-";
    std::string gpus = report.cpu ? std::to_string(h.slots) + " CPU" : "-";
    if (f && !report.cpu)
      gpus = std::to_string(f->gpu_count) + (f->gpu_models.empty() ? "" : " x " + f->gpu_models.front()) + " (" +
             std::to_string(h.slots) + ")";
    const std::string shm = f && f->shm_bytes ? sessions::format_bytes(static_cast<std::uint64_t>(*f->shm_bytes)) : "-";
    const std::string port = !f ? "-" : f->master_port_free ? "free" : "in use";
    std::snprintf(line, sizeof line, "%-24s %-9s %-24s %-22s %-10s %-14s %s\n", h.host.c_str(), f ? "yes" : "no",
                  version.c_str(), gpus.c_str(), shm.c_str(), port.c_str(), h.ok ? (h.warnings.empty() ? "ok" : "ok (warnings)") : "FAILED");
    out << line;
    for (const auto& p : h.problems) out << "  " << h.host << ": " << p << "\n";
    for (const auto& w : h.warnings) out << "  " << h.host << ": warning: " << w << "\n";
  }
  if (report.allreduce) {
    const auto& a = *report.allreduce;
    out << "all-reduce  " << sessions::format_bytes(static_cast<std::uint64_t>(a.bytes)) << " over " << a.backend
        << " across " << report.hosts.size() << " host(s), " << a.world_size << " rank(s): " << fixed(a.mean_ms, 3)
        << " ms  algbw " << fixed(a.algbw_gbps, 3) << " GB/s  busbw " << fixed(a.busbw_gbps, 3) << " GB/s"
        << (a.correct ? "" : "  WRONG SUM") << "\n";
  }
  if (!report.allreduce_problem.empty()) out << "all-reduce  " << report.allreduce_problem << "\n";
  std::string failing;
  for (const auto& h : report.hosts)
    if (!h.ok) failing += (failing.empty() ? "" : ", ") + h.host;
  out << (report.ok ? "preflight OK\n"
                    : "preflight FAILED" + (failing.empty() ? std::string(": the all-reduce") : ": " + failing) + "\n");
  return out.str();
}

json preflight_to_json(const PreflightReport& report) {
  json hosts = json::array();
  for (const auto& h : report.hosts)
    hosts.push_back({{"host", h.host}, {"slots", h.slots}, {"ok", h.ok}, {"reachable", h.facts.has_value()},
                     {"facts", h.facts ? facts_to_json(*h.facts) : json(nullptr)}, {"problems", h.problems},
                     {"warnings", h.warnings}});
  return {{"schema", "shardscope.preflight/1"},
          {"ok", report.ok},
          {"cpu", report.cpu},
          {"master_port", report.master_port},
          {"hosts", hosts},
          {"allreduce", report.allreduce ? profiler::allreduce_to_json(*report.allreduce) : json(nullptr)},
          {"allreduce_problem", report.allreduce_problem}};
}

}  // namespace shardscope::launcher
