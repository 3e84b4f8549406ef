#pragma once
// The run doctor's out-of-memory finding, made by the rank that ran out (issue 28 item 4): the
// caching allocator's own numbers from its message, the estimator's bound for the run's config
// on a GPU of that capacity, and the smallest change that fits (estimator/fit_advice.hpp) as
// `shardscope train` flags the user can rerun with. LibTorch-free: the message is text.

#include <cstdint>
#include <optional>
#include <string>

#include "configs/config_model.hpp"
#include "engine/models/model_spec.hpp"
#include "sessions/events.hpp"

namespace shardscope::engine {

/// What a CUDA out-of-memory message says, in bytes (nullopt where it does not say).
struct AllocatorOomNumbers {
  std::optional<double> requested, capacity, free, allocated, reserved_unallocated;
};

/// Reads PyTorch's "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
/// 79.19 GiB of which 1.06 GiB is free. ... Of the allocated memory 75.50 GiB is allocated by
/// PyTorch, and 1.97 GiB is reserved by PyTorch but unallocated."
AllocatorOomNumbers parse_allocator_oom(const std::string& message);

/// The finding for rank `rank` at optimizer step `step` whose step failed with `message`.
sessions::Finding out_of_memory_finding(const std::string& message, const configs::ResolvedConfig& config,
                                        const ModelSpec& spec, int world_size, bool activation_checkpointing, int rank,
                                        std::int64_t step, double now);

}  // namespace shardscope::engine
