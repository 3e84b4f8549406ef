#pragma once
// NVTX ranges around the engine's phases, in a "ShardScope" domain, so a run opened in Nsight
// Systems (or recorded by our CUPTI collector) reads as forward / backward / gather layer.3 / ...
//
// Cost: names are NVTX registered strings, made once; a range is one push and one pop through
// NVTX's function table. With no tool attached NVTX points that table at no-ops after its first
// call (its own injection check), so a range costs two indirect calls. Without NVTX at build time
// (SHARDSCOPE_HAS_NVTX off) every type here is an empty no-op.
// NVTX headers stay in nvtx_ranges.cpp.

#include <cstdint>
#include <string>

namespace shardscope::profiler {

/// The NVTX domain of every ShardScope range.
inline constexpr const char* kNvtxDomain = "ShardScope";

/// The engine's phases; each has a fixed range name and colour.
enum class NvtxPhase {
  kStep,                 ///< "step" (one optimizer step: all micro-steps and the update)
  kForward,              ///< "forward"
  kBackward,             ///< "backward"
  kGather,               ///< "gather" (stage 3 parameter all-gather; per layer with nvtx_layer_name)
  kRelease,              ///< "release" (stage 3 partition release; per layer)
  kReduceScatterBucket,  ///< "reduce_scatter bucket"
  kAllReduceBucket,      ///< "all_reduce bucket"
  kOptimizerStep,        ///< "optimizer_step"
  kCheckpointSave,       ///< "checkpoint_save"
};

/// Whether this build records NVTX ranges; false when NVTX was not found at configure time.
bool nvtx_compiled_in();
/// The range name of a phase ("forward", "reduce_scatter bucket", ...).
const char* nvtx_phase_name(NvtxPhase phase);

/// A range name registered once with the ShardScope domain. Make per-layer names at setup, not
/// per step: opening a range with one passes a handle and copies no string.
class NvtxName {
 public:
  /// Registers `text` with the colour of `phase` (ARGB 0xAARRGGBB).
  NvtxName(std::string text, NvtxPhase phase);
  /// Registers `text` with a colour derived from the text.
  explicit NvtxName(std::string text);
  const std::string& text() const { return text_; }
  std::uint32_t color() const { return color_; }

 private:
  friend class ScopedRange;
  friend void nvtx_mark(const NvtxName& name);
  std::string text_;
  std::uint32_t color_ = 0;
  const void* handle_ = nullptr;  ///< nvtxStringHandle_t; null when no tool is attached
};

/// "gather layer.3", "release layer.3": a phase name followed by the layer's name.
NvtxName nvtx_layer_name(NvtxPhase phase, const std::string& layer);

/// Pushes a range on construction and pops it on destruction, on the calling thread.
class ScopedRange {
 public:
  explicit ScopedRange(NvtxPhase phase);
  explicit ScopedRange(const NvtxName& name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

/// An instant marker in the ShardScope domain (a step boundary, a skipped step).
void nvtx_mark(const NvtxName& name);

}  // namespace shardscope::profiler
