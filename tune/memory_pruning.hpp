#pragma once
// The estimator rules out what cannot fit before any trial runs: each candidate gets the same
// prediction `shardscope train` logs at its start (engine/memory_prediction.hpp, the estimator's
// arithmetic), compared with the memory budget less the margin. docs/tune.md, "Pruning".

#include <string>

#include "configs/config_model.hpp"
#include "engine/models/model_spec.hpp"

namespace shardscope::tune {

struct MemoryBudget {
  double bytes = 0;      ///< per rank: the GPU's memory, or --memory-budget
  double margin = 0.10;  ///< fraction kept free, as the estimator's --margin
  std::string source;    ///< "NVIDIA H200 (GPU 0)", "--memory-budget"
  /// GPU ranks meet the device-level peak (the CUDA context included); CPU ranks the allocator's.
  bool device_level = true;
  double usable_bytes() const { return bytes * (1.0 - margin); }
};

struct PruneDecision {
  double predicted_bytes = 0;  ///< the estimator's device-level peak per rank
  bool fits = false;
  std::string reason;          ///< for a pruned candidate: the numbers and what would make it fit
};

/// The prediction for `config` with `spec` on `world_size` ranks, and whether it fits `budget`.
/// Throws what predict_memory throws for a model or config the estimator rejects.
PruneDecision judge_memory(const configs::ResolvedConfig& config, const engine::ModelSpec& spec, int world_size,
                           const MemoryBudget& budget);

/// "12.345 GiB", or "12.3 MiB" below a GiB.
std::string gib_text(double bytes);

}  // namespace shardscope::tune
