#pragma once
// The parts of check_regression that live in their own files (regression_changes.cpp,
// regression_contributors.cpp); not part of the library's interface.

#include <cstdint>
#include <string>
#include <vector>

#include "sessions/regression_check.hpp"

namespace shardscope::sessions::detail {

/// What differs between the sessions (baseline ones first): versions, GPUs, hosts, kernels built
/// in, config values, DeepSpeed defaults that flipped between their releases, and run flags.
std::vector<ChangedValue> regression_changes(const std::vector<SessionDetail>& sessions);

/// Where the sessions ran under different DeepSpeed releases: that row ("versions.deepspeed"), then
/// what the releases imply for their effective configs (defaults that flipped, keys added); empty
/// when every session ran under one release. For `sessions compare`.
std::vector<ChangedValue> deepspeed_release_changes(const std::vector<SessionDetail>& sessions);

/// Throws SessionsError(kInvalidArgument) when a candidate trains another model than the baseline.
void require_same_model(const std::vector<SessionDetail>& baseline, const std::vector<SessionDetail>& candidate);

/// Kernel families (where every session has a profiled window), collectives and phases by how much
/// their time per step moved, at most `top` of each kind; sets `profiled`.
std::vector<Contributor> regression_contributors(Store& store, const std::vector<std::int64_t>& baseline,
                                                 const std::vector<std::int64_t>& candidate,
                                                 const std::vector<MetricVerdict>& metrics, std::size_t top,
                                                 bool& profiled, std::vector<std::string>& notes);

}  // namespace shardscope::sessions::detail
