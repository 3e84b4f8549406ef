#pragma once
// Faults on purpose, for testing the run doctor (docs/doctor.md, "Faults for testing"):
// SHARDSCOPE_FAULT=RANK:STEP:KIND[:ARG] makes rank RANK misbehave from optimizer step STEP
// (1 = the first) on. Nothing happens unless the variable is set; a malformed value stops the
// rank at start-up with the form it expects.
//
//   hang-before-collective[:OP]   blocks forever before its first collective (OP: all_reduce,
//                                 reduce_scatter, all_gather, broadcast) at that step
//   skip-collective[:OP]          does not issue that collective (the others wait in it)
//   sleep-in-phase:PHASE:MS       sleeps MS ms at the start of PHASE (forward, backward,
//                                 optimizer) of every step from STEP on: a straggler
//   nan-loss                      the loss of that step is NaN
//   oom[:MIB]                     allocates MIB-sized blocks (256) on its device until the
//                                 allocator fails (on the CPU under an address-space limit of
//                                 1 GiB above what the process maps, so the host is safe)

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "engine/collective_flight_record.hpp"

namespace shardscope::engine {

class Communicator;

inline constexpr const char* kFaultVariable = "SHARDSCOPE_FAULT";

enum class FaultKind { kHangBeforeCollective, kSkipCollective, kSleepInPhase, kNanLoss, kOom };

struct FaultSpec {
  int rank = 0;
  std::int64_t step = 1;
  FaultKind kind = FaultKind::kNanLoss;
  std::string op;        ///< collective kinds: the op it waits for; "" = any
  std::string phase;     ///< sleep-in-phase
  double sleep_ms = 0;   ///< sleep-in-phase
  std::int64_t block_mib = 256;  ///< oom
};

/// Parses RANK:STEP:KIND[:ARG]; throws std::invalid_argument naming the variable, the bad part
/// and the accepted form.
FaultSpec parse_fault_spec(const std::string& text);
/// The fault SHARDSCOPE_FAULT names for `rank`; nullopt when unset or for another rank.
std::optional<FaultSpec> fault_for_rank(int rank);

/// Whether collective `op` of a rank at `step` meets a collective fault not yet fired.
bool collective_fault_applies(const FaultSpec& fault, const char* op, std::int64_t step);
/// Blocks the calling thread forever (the hang fault); says so on stderr first.
[[noreturn]] void hang_forever(const std::string& what);
/// Sleeps in `phase` when the fault is sleep-in-phase for it and `step` has come.
void sleep_if_faulted(const std::optional<FaultSpec>& fault, const char* phase, std::int64_t step);
/// Allocates on `device_is_cuda`'s device until the allocator fails; the allocator's exception
/// propagates (a real CUDA or host out-of-memory error).
void allocate_until_oom(const FaultSpec& fault, int cuda_device);

/// The engine entering `phase` of optimizer step `step` on `rank`: the communicator (when there
/// is one) records the phase with the collectives that follow, and a sleep-in-phase fault sleeps.
void enter_engine_phase(Communicator* comm, int rank, std::int64_t step, CollectivePhase phase);

/// The loss after SHARDSCOPE_FAULT's forward faults of `step`: NaN for nan-loss; oom allocates
/// until the allocator throws (on `cuda_device`, or the host when it is -1).
torch::Tensor apply_forward_faults(torch::Tensor loss, int rank, std::int64_t step, int cuda_device);

}  // namespace shardscope::engine
