#include "tune/memory_pruning.hpp"

#include <cstdio>

#include "engine/memory_prediction.hpp"

namespace shardscope::tune {

std::string gib_text(double bytes) {
  char text[32];
  if (bytes < 1073741824.0) std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  else std::snprintf(text, sizeof text, "%.3f GiB", bytes / 1073741824.0);
  return text;
}

PruneDecision judge_memory(const configs::ResolvedConfig& config, const engine::ModelSpec& spec, int world_size,
                           const MemoryBudget& budget) {
  // The engine recomputes blocks when the config has an activation_checkpointing block or the
  // train arguments say --activation-checkpointing (training_run.cpp); the prediction follows it.
  const bool checkpointing = config.activation_checkpointing.requested || spec.activation_checkpointing;
  const engine::MemoryPrediction m = engine::predict_memory(config, spec, world_size, checkpointing);
  PruneDecision d;
  // On a GPU the device-level peak: the allocator's reserved peak plus what lives outside it (the
  // CUDA context), the figure that meets the GPU's capacity, as the estimator's own fit test uses.
  // CPU ranks have no CUDA context and no caching allocator: their peak is the allocator's.
  d.predicted_bytes = budget.device_level && m.device_bytes > 0 ? m.device_bytes : m.total_bytes;
  d.fits = d.predicted_bytes <= budget.usable_bytes();
  if (!d.fits)
    d.reason = "predicted " + gib_text(d.predicted_bytes) + " per rank (states " + gib_text(m.model_states_bytes) +
               ", activations " + gib_text(m.activations_bytes) + ", buffers " + gib_text(m.buffers_bytes) +
               ") > " + gib_text(budget.usable_bytes()) + " usable (" + gib_text(budget.bytes) + " " + budget.source +
               " less the " + std::to_string(static_cast<int>(budget.margin * 100 + 0.5)) + "% margin)";
  return d;
}

}  // namespace shardscope::tune
