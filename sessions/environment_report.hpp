#pragma once
// The environment report: what `shardscope report` prints, what the GUI's Environment page shows,
// and what every session records at run start so two runs' environments can be diffed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardscope::sessions {

struct VersionsInfo {
  std::string shardscope;
  std::string git_hash;
  std::string libtorch;
  std::string torch_cuda;    ///< CUDA version LibTorch was built with, empty for a CPU build
  std::string cuda_runtime;  ///< empty when not compiled with CUDA
  std::string cuda_driver;   ///< empty when no driver is installed
  std::string cudnn;
  std::string nccl;
  std::string qt;            ///< filled in by the GUI only
  std::string compiler;
  std::string deepspeed;     ///< DeepSpeed's version, for runs of DeepSpeed itself (imported, watched)
  std::string transformers; ///< Hugging Face transformers' version, for watched Trainer runs
  std::string accelerate;   ///< Hugging Face Accelerate's version, likewise
};

struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int capability_major = 0;
  int capability_minor = 0;
  int multiprocessors = 0;
  bool fp16_supported = false;
  bool bf16_supported = false;
};

struct AcceleratorInfo {
  std::string backend;  ///< "cuda" or "cpu"
  std::vector<GpuInfo> gpus;
  std::string note;     ///< why there is no GPU, when there is none
};

struct KernelStatus {
  std::string name;     ///< e.g. "cpu_adam"
  std::string family;   ///< e.g. "optimizer"
  bool compiled_in = false;
  bool compatible = false;
  std::string detail;   ///< e.g. the SIMD level
  std::string reason;   ///< why not compiled in or not compatible
};

struct HostInfo {
  std::string hostname;
  std::string os;
  std::string cpu_model;
  int logical_cores = 0;
  std::uint64_t memory_bytes = 0;
  std::optional<std::uint64_t> shm_bytes;             ///< size of /dev/shm, if mounted
  std::optional<std::uint64_t> memlock_soft_bytes;    ///< nullopt = unlimited
  std::optional<std::uint64_t> nofile_soft;           ///< nullopt = unlimited
  std::optional<std::string> cuda_visible_devices;    ///< nullopt = unset
};

enum class CheckSeverity { kOk, kInfo, kWarning };

struct EnvironmentCheck {
  std::string name;  ///< stable id: "shm", "memlock", "nofile", "cuda_visible_devices"
  CheckSeverity severity = CheckSeverity::kOk;
  std::string message;
  std::string hint;
};

struct EnvironmentReport {
  VersionsInfo versions;
  AcceleratorInfo accelerator;
  std::vector<KernelStatus> kernels;
  HostInfo host;
  std::vector<EnvironmentCheck> checks;
};

/// The JSON form (`shardscope report --json`); key names are part of the stable interface.
nlohmann::json report_to_json(const EnvironmentReport& report);
/// Inverse of report_to_json; throws std::invalid_argument naming the missing or mistyped key.
EnvironmentReport report_from_json(const nlohmann::json& json);
/// The aligned text form, in ds_report's dotted style.
std::string format_report_text(const EnvironmentReport& report);
/// The name of the report's first GPU ("NVIDIA H200"), "" when it lists none (a CPU run).
std::string first_gpu_name(const EnvironmentReport& report);

const char* severity_name(CheckSeverity severity);

}  // namespace shardscope::sessions
