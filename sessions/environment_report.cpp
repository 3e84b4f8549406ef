#include "sessions/environment_report.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sessions/host_probe.hpp"

namespace shardscope::sessions {
namespace {

using nlohmann::json;

json optional_json(const std::optional<std::uint64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

json optional_json(const std::optional<std::string>& value) {
  return value ? json(*value) : json(nullptr);
}

const json& require(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key))
    throw std::invalid_argument(std::string("environment report: missing key '") + key + "'");
  return object.at(key);
}

template <typename T>
T get_as(const json& object, const char* key) {
  try {
    return require(object, key).get<T>();
  } catch (const json::exception& error) {
    throw std::invalid_argument(std::string("environment report: key '") + key +
                                "' has the wrong type: " + error.what());
  }
}

template <typename T>
std::optional<T> get_optional(const json& object, const char* key) {
  const json& value = require(object, key);
  if (value.is_null()) return std::nullopt;
  return get_as<T>(object, key);
}

CheckSeverity severity_from_name(const std::string& name) {
  if (name == "ok") return CheckSeverity::kOk;
  if (name == "info") return CheckSeverity::kInfo;
  if (name == "warning") return CheckSeverity::kWarning;
  throw std::invalid_argument("environment report: unknown check severity '" + name + "'");
}

// ds_report's layout: a name padded with dots to a fixed column, then the value.
void dotted(std::ostringstream& out, const std::string& name, const std::string& value,
            std::size_t width = 34) {
  std::string label = name + " ";
  if (label.size() < width) label.append(width - label.size(), '.');
  out << label << " " << (value.empty() ? "n/a" : value) << "\n";
}

const char* kRule = "--------------------------------------------------------------------------------\n";

void format_kernels(std::ostringstream& out, const std::vector<KernelStatus>& kernels) {
  out << kRule << "ShardScope kernel report\n" << kRule;
  char header[160];
  std::snprintf(header, sizeof header, "%-26s %-10s %-12s %-12s %s\n", "kernel", "family",
                "compiled in", "compatible", "detail / reason");
  out << header << kRule;
  for (const auto& k : kernels) {
    std::string note = k.detail;
    if (!k.reason.empty()) note += (note.empty() ? "" : "; ") + k.reason;
    char row[512];
    std::snprintf(row, sizeof row, "%-26s %-10s %-12s %-12s %s\n", k.name.c_str(), k.family.c_str(),
                  k.compiled_in ? "[YES]" : "[NO]", k.compatible ? "[OKAY]" : "[NO]", note.c_str());
    out << row;
  }
}

void format_accelerator(std::ostringstream& out, const AcceleratorInfo& accel) {
  out << kRule << "Accelerator\n" << kRule;
  dotted(out, "backend", accel.backend);
  dotted(out, "GPU count", std::to_string(accel.gpus.size()));
  if (accel.gpus.empty()) dotted(out, "note", accel.note);
  for (const auto& gpu : accel.gpus) {
    const std::string prefix = "GPU " + std::to_string(gpu.index);
    dotted(out, prefix + " name", gpu.name);
    dotted(out, prefix + " memory", format_bytes(gpu.memory_bytes));
    dotted(out, prefix + " compute capability",
           std::to_string(gpu.capability_major) + "." + std::to_string(gpu.capability_minor) + " (" +
               std::to_string(gpu.multiprocessors) + " SMs)");
    dotted(out, prefix + " fp16 / bf16", std::string(gpu.fp16_supported ? "yes" : "no") + " / " +
                                             (gpu.bf16_supported ? "yes" : "no"));
  }
}

}  // namespace

const char* severity_name(CheckSeverity severity) {
  switch (severity) {
    case CheckSeverity::kOk: return "ok";
    case CheckSeverity::kInfo: return "info";
    case CheckSeverity::kWarning: return "warning";
  }
  return "unknown";
}

json report_to_json(const EnvironmentReport& r) {
  json versions = {{"shardscope", r.versions.shardscope}, {"git_hash", r.versions.git_hash},
                   {"libtorch", r.versions.libtorch},     {"torch_cuda", r.versions.torch_cuda},
                   {"cuda_runtime", r.versions.cuda_runtime}, {"cuda_driver", r.versions.cuda_driver},
                   {"cudnn", r.versions.cudnn},           {"nccl", r.versions.nccl},
                   {"qt", r.versions.qt},                 {"compiler", r.versions.compiler}};
  if (!r.versions.deepspeed.empty()) versions["deepspeed"] = r.versions.deepspeed;
  if (!r.versions.transformers.empty()) versions["transformers"] = r.versions.transformers;
  if (!r.versions.accelerate.empty()) versions["accelerate"] = r.versions.accelerate;
  json gpus = json::array();
  for (const auto& g : r.accelerator.gpus)
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory_bytes", g.memory_bytes},
                    {"compute_capability", std::to_string(g.capability_major) + "." +
                                               std::to_string(g.capability_minor)},
                    {"capability_major", g.capability_major}, {"capability_minor", g.capability_minor},
                    {"multiprocessors", g.multiprocessors}, {"fp16_supported", g.fp16_supported},
                    {"bf16_supported", g.bf16_supported}});
  json kernels = json::array();
  for (const auto& k : r.kernels)
    kernels.push_back({{"name", k.name}, {"family", k.family}, {"compiled_in", k.compiled_in},
                       {"compatible", k.compatible}, {"detail", k.detail}, {"reason", k.reason}});
  json checks = json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"name", c.name}, {"severity", severity_name(c.severity)},
                      {"message", c.message}, {"hint", c.hint}});
  const auto& h = r.host;
  json host = {{"hostname", h.hostname},       {"os", h.os},
               {"cpu_model", h.cpu_model},     {"logical_cores", h.logical_cores},
               {"memory_bytes", h.memory_bytes}, {"shm_bytes", optional_json(h.shm_bytes)},
               {"memlock_soft_bytes", optional_json(h.memlock_soft_bytes)},
               {"nofile_soft", optional_json(h.nofile_soft)},
               {"cuda_visible_devices", optional_json(h.cuda_visible_devices)}};
  return {{"schema", "shardscope.report/1"},
          {"versions", versions},
          {"accelerator", {{"backend", r.accelerator.backend}, {"gpu_count", r.accelerator.gpus.size()},
                           {"gpus", gpus}, {"note", r.accelerator.note}}},
          {"kernels", kernels},
          {"host", host},
          {"checks", checks}};
}

EnvironmentReport report_from_json(const json& j) {
  if (get_as<std::string>(j, "schema") != "shardscope.report/1")
    throw std::invalid_argument("environment report: unsupported schema '" +
                                j.at("schema").get<std::string>() + "' (expected shardscope.report/1)");
  EnvironmentReport r;
  const json& v = require(j, "versions");
  r.versions.shardscope = get_as<std::string>(v, "shardscope");
  r.versions.git_hash = get_as<std::string>(v, "git_hash");
  r.versions.libtorch = get_as<std::string>(v, "libtorch");
  r.versions.torch_cuda = get_as<std::string>(v, "torch_cuda");
  r.versions.cuda_runtime = get_as<std::string>(v, "cuda_runtime");
  r.versions.cuda_driver = get_as<std::string>(v, "cuda_driver");
  r.versions.cudnn = get_as<std::string>(v, "cudnn");
  r.versions.nccl = get_as<std::string>(v, "nccl");
  r.versions.qt = get_as<std::string>(v, "qt");
  r.versions.compiler = get_as<std::string>(v, "compiler");
  if (v.contains("deepspeed")) r.versions.deepspeed = get_as<std::string>(v, "deepspeed");  // runs of DeepSpeed only
  if (v.contains("transformers")) r.versions.transformers = get_as<std::string>(v, "transformers");
  if (v.contains("accelerate")) r.versions.accelerate = get_as<std::string>(v, "accelerate");
  const json& a = require(j, "accelerator");
  r.accelerator.backend = get_as<std::string>(a, "backend");
  r.accelerator.note = get_as<std::string>(a, "note");
  for (const json& g : require(a, "gpus"))
    r.accelerator.gpus.push_back({get_as<int>(g, "index"), get_as<std::string>(g, "name"),
                                  get_as<std::uint64_t>(g, "memory_bytes"),
                                  get_as<int>(g, "capability_major"), get_as<int>(g, "capability_minor"),
                                  get_as<int>(g, "multiprocessors"), get_as<bool>(g, "fp16_supported"),
                                  get_as<bool>(g, "bf16_supported")});
  for (const json& k : require(j, "kernels"))
    r.kernels.push_back({get_as<std::string>(k, "name"), get_as<std::string>(k, "family"),
                         get_as<bool>(k, "compiled_in"), get_as<bool>(k, "compatible"),
                         get_as<std::string>(k, "detail"), get_as<std::string>(k, "reason")});
  const json& h = require(j, "host");
  r.host.hostname = get_as<std::string>(h, "hostname");
  r.host.os = get_as<std::string>(h, "os");
  r.host.cpu_model = get_as<std::string>(h, "cpu_model");
  r.host.logical_cores = get_as<int>(h, "logical_cores");
  r.host.memory_bytes = get_as<std::uint64_t>(h, "memory_bytes");
  r.host.shm_bytes = get_optional<std::uint64_t>(h, "shm_bytes");
  r.host.memlock_soft_bytes = get_optional<std::uint64_t>(h, "memlock_soft_bytes");
  r.host.nofile_soft = get_optional<std::uint64_t>(h, "nofile_soft");
  r.host.cuda_visible_devices = get_optional<std::string>(h, "cuda_visible_devices");
  for (const json& c : require(j, "checks"))
    r.checks.push_back({get_as<std::string>(c, "name"),
                        severity_from_name(get_as<std::string>(c, "severity")),
                        get_as<std::string>(c, "message"), get_as<std::string>(c, "hint")});
  return r;
}

std::string format_report_text(const EnvironmentReport& r) {
  std::ostringstream out;
  format_kernels(out, r.kernels);
  out << kRule << "ShardScope general environment info\n" << kRule;
  const auto& v = r.versions;
  dotted(out, "shardscope version", v.shardscope + " (git " + v.git_hash + ")");
  dotted(out, "libtorch version", v.libtorch);
  dotted(out, "libtorch cuda version", v.torch_cuda.empty() ? "None (CPU build)" : v.torch_cuda);
  dotted(out, "cuda runtime version", v.cuda_runtime.empty() ? "None (built without CUDA)" : v.cuda_runtime);
  dotted(out, "cuda driver version", v.cuda_driver.empty() ? "None (no NVIDIA driver)" : v.cuda_driver);
  dotted(out, "cudnn version", v.cudnn.empty() ? "None" : v.cudnn);
  dotted(out, "nccl version", v.nccl.empty() ? "None" : v.nccl);
  if (!v.qt.empty()) dotted(out, "qt version", v.qt);
  if (!v.deepspeed.empty()) dotted(out, "deepspeed version", v.deepspeed);
  if (!v.transformers.empty()) dotted(out, "transformers version", v.transformers);
  if (!v.accelerate.empty()) dotted(out, "accelerate version", v.accelerate);
  dotted(out, "compiler", v.compiler);
  const auto& h = r.host;
  dotted(out, "host", h.hostname);
  dotted(out, "os", h.os);
  dotted(out, "cpu", h.cpu_model + " (" + std::to_string(h.logical_cores) + " logical cores)");
  dotted(out, "memory", format_bytes(h.memory_bytes));
  dotted(out, "shared memory (/dev/shm) size", h.shm_bytes ? format_bytes(*h.shm_bytes) : "not mounted");
  format_accelerator(out, r.accelerator);
  out << kRule << "Environment checks\n" << kRule;
  for (const auto& c : r.checks) {
    const std::string tag = c.severity == CheckSeverity::kWarning ? "[WARNING]"
                            : c.severity == CheckSeverity::kInfo  ? "[INFO]"
                                                                  : "[OKAY]";
    out << tag << " " << c.message << "\n";
    if (!c.hint.empty() && c.severity != CheckSeverity::kOk) out << "          fix: " << c.hint << "\n";
  }
  return out.str();
}

std::string first_gpu_name(const EnvironmentReport& report) {
  return report.accelerator.gpus.empty() ? std::string() : report.accelerator.gpus.front().name;
}

}  // namespace shardscope::sessions
