#include "sessions/host_probe.hpp"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace shardscope::sessions {
namespace {

std::string read_text_file(const char* path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string trim(const std::string& s) {
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

std::optional<std::uint64_t> soft_limit(int resource) {
  rlimit lim{};
  if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(lim.rlim_cur);
}

std::string os_name() {
  std::string pretty;
  std::istringstream release(read_text_file("/etc/os-release"));
  for (std::string line; std::getline(release, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      pretty = line.substr(12);
      if (pretty.size() >= 2 && pretty.front() == '"') pretty = pretty.substr(1, pretty.size() - 2);
    }
  }
  utsname uts{};
  std::string kernel = uname(&uts) == 0 ? std::string(uts.sysname) + " " + uts.release : "";
  if (pretty.empty()) return kernel;
  return kernel.empty() ? pretty : pretty + " (" + kernel + ")";
}

bool valid_device_entry(const std::string& entry) {
  if (entry.empty()) return false;
  if (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0) return entry.size() > 4;
  for (char c : entry)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_meminfo_total(const std::string& meminfo) {
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    std::uint64_t value = 0;
    std::string unit;
    if (!(fields >> value)) return std::nullopt;
    fields >> unit;
    return unit == "kB" ? value * 1024 : value;
  }
  return std::nullopt;
}

std::string parse_cpuinfo_model(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) return trim(line.substr(colon + 1));
  }
  return "";
}

std::vector<std::string> parse_cuda_visible_devices(const std::string& value) {
  std::vector<std::string> devices;
  std::istringstream in(value);
  for (std::string entry; std::getline(in, entry, ',');) {
    entry = trim(entry);
    if (!valid_device_entry(entry)) break;  // the CUDA runtime stops at the first invalid entry
    devices.push_back(entry);
  }
  return devices;
}

std::optional<std::uint64_t> parse_limit(const std::string& text, std::uint64_t unit) {
  const std::string value = trim(text);
  if (value == "unlimited" || value == "infinity") return std::nullopt;
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("not a limit: '" + text + "' (expected a number or 'unlimited')");
  return std::stoull(value) * unit;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  if (unit == 0)
    std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buffer, sizeof buffer, "%.2f %s", value, kUnits[unit]);
  return buffer;
}

HostInfo probe_host() {
  HostInfo host;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) host.hostname = name;
  host.os = os_name();
  host.cpu_model = parse_cpuinfo_model(read_text_file("/proc/cpuinfo"));
  host.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  host.memory_bytes = parse_meminfo_total(read_text_file("/proc/meminfo")).value_or(0);
  struct statvfs shm {};
  if (statvfs("/dev/shm", &shm) == 0)
    host.shm_bytes = static_cast<std::uint64_t>(shm.f_blocks) * shm.f_frsize;
  host.memlock_soft_bytes = soft_limit(RLIMIT_MEMLOCK);
  host.nofile_soft = soft_limit(RLIMIT_NOFILE);
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) host.cuda_visible_devices = cvd;
  return host;
}

std::vector<EnvironmentCheck> check_host(const HostInfo& host) {
  std::vector<EnvironmentCheck> checks;
  if (!host.shm_bytes) {
    checks.push_back({"shm", CheckSeverity::kWarning, "/dev/shm is not mounted",
                      "NCCL needs shared memory between local ranks; mount a tmpfs on /dev/shm"});
  } else if (*host.shm_bytes < kMinShmBytes) {
    checks.push_back({"shm", CheckSeverity::kWarning,
                      "/dev/shm is " + format_bytes(*host.shm_bytes) + ", under " +
                          format_bytes(kMinShmBytes) + ": NCCL between local ranks may fail or hang",
                      "in Docker run with --shm-size=8g (or --ipc=host); elsewhere remount /dev/shm larger"});
  } else {
    checks.push_back({"shm", CheckSeverity::kOk, "/dev/shm is " + format_bytes(*host.shm_bytes), ""});
  }
  if (host.memlock_soft_bytes && *host.memlock_soft_bytes < kMinMemlockBytes) {
    checks.push_back({"memlock", CheckSeverity::kWarning,
                      "locked-memory limit (ulimit -l) is " + format_bytes(*host.memlock_soft_bytes) +
                          ": pinned offload buffers (offload pin_memory is true by default since "
                          "DeepSpeed 0.19.5) and NCCL over InfiniBand may fail to register memory",
                      "raise it: `ulimit -l unlimited`, `* - memlock unlimited` in "
                      "/etc/security/limits.conf, or docker run --ulimit memlock=-1"});
  } else {
    checks.push_back({"memlock", CheckSeverity::kOk,
                      "locked-memory limit is " + (host.memlock_soft_bytes
                                                       ? format_bytes(*host.memlock_soft_bytes)
                                                       : std::string("unlimited")),
                      ""});
  }
  if (host.nofile_soft && *host.nofile_soft < kMinOpenFiles) {
    checks.push_back({"nofile", CheckSeverity::kWarning,
                      "open-files limit (ulimit -n) is " + std::to_string(*host.nofile_soft) +
                          ", under " + std::to_string(kMinOpenFiles) +
                          ": many ranks, data workers and NCCL sockets can run out",
                      "raise it: `ulimit -n 65536` or `nofile` in /etc/security/limits.conf"});
  } else {
    checks.push_back({"nofile", CheckSeverity::kOk,
                      "open-files limit is " + (host.nofile_soft ? std::to_string(*host.nofile_soft)
                                                                 : std::string("unlimited")),
                      ""});
  }
  if (host.cuda_visible_devices) {
    const auto devices = parse_cuda_visible_devices(*host.cuda_visible_devices);
    if (devices.empty()) {
      checks.push_back({"cuda_visible_devices", CheckSeverity::kWarning,
                        "CUDA_VISIBLE_DEVICES='" + *host.cuda_visible_devices + "' hides every GPU",
                        "unset it, or list device indices such as CUDA_VISIBLE_DEVICES=0,1"});
    } else {
      checks.push_back({"cuda_visible_devices", CheckSeverity::kInfo,
                        "CUDA_VISIBLE_DEVICES='" + *host.cuda_visible_devices + "' limits CUDA to " +
                            std::to_string(devices.size()) + " device(s)",
                        "shardscope launch turns it into --include localhost:<ids>, as deepspeed does"});
    }
  }
  return checks;
}

}  // namespace shardscope::sessions
