#pragma once
// Reads the host's facts (limits, /dev/shm, memory, CPU) and turns them into report checks.
// The parsers are separate pure functions so tests can feed them text from other machines.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/environment_report.hpp"

namespace shardscope::sessions {

/// NCCL puts its intra-node buffers in /dev/shm; Docker's 64 MiB default makes it fail or hang.
inline constexpr std::uint64_t kMinShmBytes = 512ull << 20;
/// Pinned offload buffers and NCCL over InfiniBand register memory; below this they fail.
inline constexpr std::uint64_t kMinMemlockBytes = 1ull << 30;
/// One socket per rank at the collector, plus data files and NCCL's own descriptors.
inline constexpr std::uint64_t kMinOpenFiles = 4096;

/// Reads hostname, OS, CPU model, cores, memory, /dev/shm size, rlimits and CUDA_VISIBLE_DEVICES.
HostInfo probe_host();

/// Warnings for the limits above and a note on CUDA_VISIBLE_DEVICES.
std::vector<EnvironmentCheck> check_host(const HostInfo& host);

/// "MemTotal:  16318480 kB" in /proc/meminfo text -> bytes; nullopt if absent.
std::optional<std::uint64_t> parse_meminfo_total(const std::string& meminfo);
/// First "model name" in /proc/cpuinfo text; empty if absent.
std::string parse_cpuinfo_model(const std::string& cpuinfo);
/// Splits CUDA_VISIBLE_DEVICES the way the CUDA runtime reads it: entries up to the first invalid
/// one ("0,1,-1,2" -> {"0","1"}); accepts indices and GPU-/MIG- UUIDs.
std::vector<std::string> parse_cuda_visible_devices(const std::string& value);
/// Parses a limit as `ulimit` prints it: "unlimited" -> nullopt, "8192" -> 8192 (in `unit`s).
/// Throws std::invalid_argument for anything else.
std::optional<std::uint64_t> parse_limit(const std::string& text, std::uint64_t unit = 1);
/// 1536 -> "1.50 KiB"; binary units, two decimals, as memory is sized on GPUs.
std::string format_bytes(std::uint64_t bytes);

}  // namespace shardscope::sessions
