#include "engine/fault_injection.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <torch/torch.h>

#include "engine/communicator.hpp"

namespace shardscope::engine {
namespace {

const char* kForm =
    "expected RANK:STEP:KIND[:ARG] with KIND hang-before-collective[:OP], skip-collective[:OP], "
    "sleep-in-phase:PHASE:MS, nan-loss or oom[:MIB] (docs/doctor.md)";

[[noreturn]] void bad(const std::string& text, const std::string& what) {
  throw std::invalid_argument(std::string(kFaultVariable) + "='" + text + "': " + what + "; " + kForm);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  return parts;
}

long long number(const std::string& text, const std::string& part, const char* name, long long least) {
  char* end = nullptr;
  const long long value = std::strtoll(part.c_str(), &end, 10);
  if (part.empty() || *end != '\0' || value < least) bad(text, std::string(name) + " '" + part + "' is not an integer >= " + std::to_string(least));
  return value;
}

void parse_op(const std::string& text, const std::vector<std::string>& parts, FaultSpec& f) {
  if (parts.size() > 4) bad(text, "too many parts");
  if (parts.size() < 4) return;
  f.op = parts[3];
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast"})
    if (f.op == op) return;
  bad(text, "collective '" + f.op + "' is not all_reduce, reduce_scatter, all_gather or broadcast");
}

// Bytes the process maps now (VmSize), so the OOM fault's limit sits just above it.
std::uint64_t mapped_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

}  // namespace

FaultSpec parse_fault_spec(const std::string& text) {
  const auto parts = split(text);
  if (parts.size() < 3) bad(text, "it has fewer than three parts");
  FaultSpec f;
  f.rank = static_cast<int>(number(text, parts[0], "RANK", 0));
  f.step = number(text, parts[1], "STEP", 1);
  const std::string& kind = parts[2];
  if (kind == "hang-before-collective" || kind == "skip-collective") {
    f.kind = kind == "skip-collective" ? FaultKind::kSkipCollective : FaultKind::kHangBeforeCollective;
    parse_op(text, parts, f);
  } else if (kind == "sleep-in-phase") {
    f.kind = FaultKind::kSleepInPhase;
    if (parts.size() != 5) bad(text, "sleep-in-phase needs PHASE:MS");
    f.phase = parts[3];
    if (f.phase != "forward" && f.phase != "backward" && f.phase != "optimizer")
      bad(text, "phase '" + f.phase + "' is not forward, backward or optimizer");
    f.sleep_ms = static_cast<double>(number(text, parts[4], "MS", 1));
  } else if (kind == "nan-loss") {
    f.kind = FaultKind::kNanLoss;
    if (parts.size() != 3) bad(text, "nan-loss takes no argument");
  } else if (kind == "oom") {
    f.kind = FaultKind::kOom;
    if (parts.size() > 4) bad(text, "too many parts");
    if (parts.size() == 4) f.block_mib = number(text, parts[3], "MIB", 1);
  } else {
    bad(text, "unknown fault '" + kind + "'");
  }
  return f;
}

std::optional<FaultSpec> fault_for_rank(int rank) {
  const char* text = std::getenv(kFaultVariable);
  if (!text || !*text) return std::nullopt;
  FaultSpec f = parse_fault_spec(text);
  if (f.rank != rank) return std::nullopt;
  return f;
}

bool collective_fault_applies(const FaultSpec& fault, const char* op, std::int64_t step) {
  if (fault.kind != FaultKind::kHangBeforeCollective && fault.kind != FaultKind::kSkipCollective) return false;
  return step >= fault.step && (fault.op.empty() || fault.op == op);
}

void hang_forever(const std::string& what) {
  std::cerr << "shardscope: " << kFaultVariable << ": " << what << "; hanging until killed" << std::endl;
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void sleep_if_faulted(const std::optional<FaultSpec>& fault, const char* phase, std::int64_t step) {
  if (!fault || fault->kind != FaultKind::kSleepInPhase || step < fault->step || fault->phase != phase) return;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(fault->sleep_ms));
}

void enter_engine_phase(Communicator* comm, int rank, std::int64_t step, CollectivePhase phase) {
  if (comm) comm->set_phase(phase);
  if (!std::getenv(kFaultVariable)) return;  // the common case costs one getenv
  const char* name = phase == CollectivePhase::kForward    ? "forward"
                     : phase == CollectivePhase::kBackward ? "backward"
                     : phase == CollectivePhase::kOptimizer ? "optimizer"
                                                            : "";
  sleep_if_faulted(fault_for_rank(rank), name, step);
}

torch::Tensor apply_forward_faults(torch::Tensor loss, int rank, std::int64_t step, int cuda_device) {
  if (!std::getenv(kFaultVariable)) return loss;
  const auto fault = fault_for_rank(rank);
  if (!fault || fault->step != step) return loss;
  if (fault->kind == FaultKind::kOom) allocate_until_oom(*fault, cuda_device);
  if (fault->kind != FaultKind::kNanLoss) return loss;
  std::cerr << "shardscope: " << kFaultVariable << ": rank " << rank << " makes the loss of step " << step << " NaN"
            << std::endl;
  return loss * std::numeric_limits<double>::quiet_NaN();
}

void allocate_until_oom(const FaultSpec& fault, int cuda_device) {
  std::cerr << "shardscope: " << kFaultVariable << ": rank " << fault.rank << " allocates " << fault.block_mib
            << " MiB blocks until out of memory" << std::endl;
  const auto options = cuda_device >= 0 ? torch::TensorOptions().device(torch::kCUDA, cuda_device)
                                        : torch::TensorOptions().device(torch::kCPU);
  if (cuda_device < 0) {
    const rlim_t limit = static_cast<rlim_t>(mapped_bytes() + (std::uint64_t{1} << 30));
    rlimit space{};
    ::getrlimit(RLIMIT_AS, &space);
    space.rlim_cur = limit;  // the soft limit only: the hard one stays, so it could be lifted again
    ::setrlimit(RLIMIT_AS, &space);
  }
  std::vector<torch::Tensor> blocks;
  const std::int64_t floats = fault.block_mib * (1 << 20) / 4;
  for (;;) blocks.push_back(torch::ones({floats}, options.dtype(torch::kFloat32)));
}

}  // namespace shardscope::engine
