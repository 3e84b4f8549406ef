#include "launcher/node_job.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "launcher/device_selection.hpp"
#include "launcher/launch_error.hpp"
#include "launcher/launch_plan.hpp"
#include "launcher/launch_routing.hpp"
#include "launcher/port_check.hpp"
#include "sessions/build_info.hpp"
#include "sessions/run_secret.hpp"

namespace shardscope::launcher {
namespace {

using json = nlohmann::json;

template <typename T>
T field(const json& message, const char* name) {
  if (!message.contains(name)) throw std::invalid_argument(std::string("node job: missing field '") + name + "'");
  try {
    return message.at(name).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(std::string("node job: field '") + name + "' has the wrong type");
  }
}

std::optional<std::string> optional_text(const json& message, const char* name) {
  if (!message.contains(name) || message.at(name).is_null()) return std::nullopt;
  return field<std::string>(message, name);
}

// The "GPU n: NAME (UUID: ...)" lines of nvidia-smi -L; none without a driver.
std::vector<std::string> gpu_models() {
  std::vector<std::string> models;
  FILE* pipe = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!pipe) return models;
  std::string output;
  char buffer[512];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  if (::pclose(pipe) != 0) return {};
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("GPU ", 0) != 0) continue;
    const auto colon = line.find(": ");
    const auto uuid = line.find(" (UUID");
    if (colon != std::string::npos) models.push_back(line.substr(colon + 2, uuid == std::string::npos ? std::string::npos : uuid - colon - 2));
  }
  return models;
}

}  // namespace

json message_of(const char* type) { return json{{"type", type}}; }

LaunchRequest launch_request_for(const NodeJob& job, const std::string& program) {
  LaunchRequest r;
  r.program = program;
  r.program_args = {job.rank_command};
  r.train_args = job.rank_args;
  if (job.cpu) {
    r.num_procs = static_cast<int>(job.slots.size());
  } else {
    r.include = job.host + ":";
    for (std::size_t i = 0; i < job.slots.size(); ++i) r.include += (i ? "," : "") + std::to_string(job.slots[i]);
  }
  r.master_addr = job.master_addr;
  r.master_port = job.master_port;
  r.each_rank_log_dir = job.each_rank_log_dir;
  r.placement = NodePlacement{job.host, job.node_rank, job.node_count, job.first_rank, job.world_size};
  for (const auto& [key, value] : job.environment)
    if (key != sessions::kCollectorSecretVariable) r.extra_env.emplace_back(key, value);
  r.grace_seconds = job.grace_seconds;
  return r;
}

std::string job_secret(const NodeJob& job) {
  for (const auto& [key, value] : job.environment)
    if (key == sessions::kCollectorSecretVariable) return value;
  return "";
}

json job_to_json(const NodeJob& j) {
  json out = message_of("job");
  out.update({{"kind", j.kind},
              {"host", j.host},
              {"node_rank", j.node_rank},
              {"node_count", j.node_count},
              {"first_rank", j.first_rank},
              {"world_size", j.world_size},
              {"slots", j.slots},
              {"cpu", j.cpu},
              {"master_addr", j.master_addr},
              {"master_port", j.master_port},
              {"rank_command", j.rank_command},
              {"rank_args", j.rank_args},
              {"collector", j.collector ? json(*j.collector) : json(nullptr)},
              {"environment", j.environment},
              {"cwd", j.cwd},
              {"each_rank_log_dir", j.each_rank_log_dir ? json(*j.each_rank_log_dir) : json(nullptr)},
              {"grace_seconds", j.grace_seconds},
              {"launcher_timeout_s", j.launcher_timeout_s}});
  return out;
}

NodeJob job_from_json(const json& m) {
  NodeJob j;
  j.kind = field<std::string>(m, "kind");
  if (j.kind != "train" && j.kind != "probe") throw std::invalid_argument("node job: unknown kind '" + j.kind + "'");
  j.host = field<std::string>(m, "host");
  j.node_rank = field<int>(m, "node_rank");
  j.node_count = field<int>(m, "node_count");
  j.first_rank = field<int>(m, "first_rank");
  j.world_size = field<int>(m, "world_size");
  j.slots = field<std::vector<int>>(m, "slots");
  j.cpu = field<bool>(m, "cpu");
  j.master_addr = field<std::string>(m, "master_addr");
  j.master_port = field<int>(m, "master_port");
  j.rank_command = field<std::string>(m, "rank_command");
  j.rank_args = field<std::vector<std::string>>(m, "rank_args");
  j.collector = optional_text(m, "collector");
  j.environment = field<EnvironmentPairs>(m, "environment");
  j.cwd = field<std::string>(m, "cwd");
  j.each_rank_log_dir = optional_text(m, "each_rank_log_dir");
  j.grace_seconds = field<double>(m, "grace_seconds");
  j.launcher_timeout_s = field<double>(m, "launcher_timeout_s");
  if (j.node_rank < 0 || j.node_rank >= j.node_count || j.first_rank < 0 ||
      j.first_rank + static_cast<int>(j.slots.size()) > j.world_size)
    throw std::invalid_argument("node job: node " + std::to_string(j.node_rank) + " of " + std::to_string(j.node_count) +
                                " with ranks from " + std::to_string(j.first_rank) + " does not fit a world of " +
                                std::to_string(j.world_size));
  return j;
}

json facts_to_json(const HostFacts& f) {
  json out = message_of("facts");
  out.update({{"hostname", f.hostname},
              {"shardscope_version", f.shardscope_version},
              {"git_hash", f.git_hash},
              {"gpu_count", f.gpu_count},
              {"gpu_models", f.gpu_models},
              {"shm_bytes", f.shm_bytes ? json(*f.shm_bytes) : json(nullptr)},
              {"logical_cores", f.logical_cores},
              {"master_port_free", f.master_port_free},
              {"run_address", f.run_address},
              {"free_port_near", f.free_port_near ? json(*f.free_port_near) : json(nullptr)}});
  return out;
}

HostFacts facts_from_json(const json& m) {
  HostFacts f;
  f.hostname = field<std::string>(m, "hostname");
  f.shardscope_version = field<std::string>(m, "shardscope_version");
  f.git_hash = field<std::string>(m, "git_hash");
  f.gpu_count = field<int>(m, "gpu_count");
  f.gpu_models = field<std::vector<std::string>>(m, "gpu_models");
  if (!m.at("shm_bytes").is_null()) f.shm_bytes = field<double>(m, "shm_bytes");
  f.logical_cores = field<int>(m, "logical_cores");
  f.master_port_free = field<bool>(m, "master_port_free");
  f.run_address = field<std::string>(m, "run_address");
  if (!m.at("free_port_near").is_null()) f.free_port_near = field<int>(m, "free_port_near");
  return f;
}

HostFacts probe_host_facts(const NodeJob& job) {
  HostFacts f;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  f.hostname = name;
  f.shardscope_version = sessions::build_info().version;
  f.git_hash = sessions::build_info().git_hash;
  f.gpu_models = gpu_models();
  f.gpu_count = static_cast<int>(f.gpu_models.size());
  if (f.gpu_count == 0) f.gpu_count = count_local_gpus();
  struct statvfs shm {};
  if (::statvfs("/dev/shm", &shm) == 0) f.shm_bytes = static_cast<double>(shm.f_blocks) * shm.f_frsize;
  f.logical_cores = available_cpus();
  try {
    f.run_address = address_toward(job.master_addr);
    f.master_port_free = port_is_free(f.run_address, job.master_port);
    for (int port = job.master_port + 1; !f.master_port_free && !f.free_port_near && port <= 65535 &&
                                         port <= job.master_port + 100;
         ++port)
      if (port_is_free(f.run_address, port)) f.free_port_near = port;
  } catch (const LaunchError&) {
    f.master_port_free = false;  // no route to MASTER_ADDR: the rendezvous cannot work from here
  }
  return f;
}

}  // namespace shardscope::launcher
