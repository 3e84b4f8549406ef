#pragma once
// Candidates slower by construction. Activation checkpointing recomputes the forward, and offload
// moves the optimizer step (or the parameters) over PCIe or to disk; at the same stage, micro-batch
// and buckets, each only saves memory at the cost of time. So while the same config with one such
// feature relaxed (checkpointing off, offload "cpu" -> none, "nvme" -> "cpu" or none) fits and has
// not failed, the one with it on cannot be the fastest and is not worth a trial. It becomes worth
// one again when every such sibling went out of memory or failed. docs/tune.md, "Skipped".

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tune/search_space.hpp"

namespace shardscope::tune {

/// For each candidate, the candidates that dominate it (the same assignment with exactly one
/// memory-saving key relaxed by one step), as indices into `candidates`.
std::vector<std::vector<std::size_t>> dominating_siblings(const std::vector<Assignment>& candidates);

/// What the relaxed key of `sibling` against `candidate` turns off, for messages:
/// "activation checkpointing", "optimizer offload to cpu", ...; empty when they differ otherwise.
std::string relaxed_feature(const Assignment& candidate, const Assignment& sibling);

/// The first sibling that still blocks a candidate: one not known to have failed (`failed[i]`:
/// its trial went out of memory or failed). nullopt: the candidate is worth a trial.
std::optional<std::size_t> blocking_sibling(const std::vector<std::size_t>& siblings, const std::vector<bool>& failed);

}  // namespace shardscope::tune
