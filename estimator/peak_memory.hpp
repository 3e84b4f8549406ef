#pragma once
// The GPU peak of one training step as ShardScope's engine reaches it (docs/estimator.md, "The
// peak"): the model states resident during the backward (stages 2-3 hold their gradients only
// from the backward to the step), the activations' phases, the ZeRO buffers of a multi-rank run
// and cuBLAS's workspaces, and then what the CUDA caching allocator reserves around that peak and
// what the device shows with the CUDA context. The constants that are measured rather than
// derived (the allocator's fragmentation, the context) come from the held sweep of
// docs/estimator.md and are pinned by tests/estimator/gpu_sweep_test.cpp.

#include <string>
#include <vector>

#include "estimator/activations.hpp"
#include "estimator/buffers.hpp"
#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

/// cuBLAS and cuBLASLt keep a 32 MiB workspace each per stream on Hopper (PyTorch's default),
/// taken from the caching allocator at the first product.
constexpr double kCublasWorkspaceBytes = 64.0 * 1048576.0;
/// The CUDA context, cuBLAS/cuDNN handles and module images outside the allocator: the device's
/// used bytes less the allocator's reserved bytes, measured at 766 MiB on an H200 (CUDA 13.0,
/// driver 580) for a 16-bit run, 750 MiB in fp32, up to 110 MiB more with an offload side stream
/// and its pinned staging.
constexpr double kCudaContextBytes = 766.0 * 1048576.0;
constexpr double kOffloadContextBytes = 110.0 * 1048576.0;
/// The sweep's mean absolute error of the allocated peak: the band printed beside each total.
constexpr double kSweepMeanAbsoluteError = 0.003;

/// Reserved / allocated of the caching allocator around the peak, by kind of run: the sweep's
/// median (expected) and largest (the bound "fits" is judged on, so the verdict is safe).
struct FragmentationFactors {
  double expected = 1;
  double upper = 1;
};
FragmentationFactors fragmentation_factors(bool checkpointing, bool offload);

struct PeakMemoryEstimate {
  double resident_states_bytes = 0;  ///< model states on the GPU during the backward
  double staging_bytes = 0;          ///< stage 2: the gradient bucket being filled at the last layers
  double end_of_backward_extra_bytes = 0;  ///< gradients complete at the end of the backward
  double buffers_bytes = 0;          ///< communication buckets (several ranks only)
  double workspace_bytes = 0;        ///< cuBLAS workspaces
  double head_phase_bytes = 0, layer_phase_bytes = 0, end_phase_bytes = 0;
  double init_phase_bytes = 0;      ///< before the first step: the fp32 model built whole and its copy
  std::string phase;                 ///< "head", "last layer", "end of backward" or "initialisation": where the peak is
  double allocated_bytes = 0;        ///< the allocator's peak
  double reserved_bytes = 0;         ///< what the allocator holds from the driver then (expected)
  double device_bytes = 0;           ///< the device-level peak: reserved + the CUDA context (expected)
  double device_upper_bytes = 0;     ///< the device-level bound the fit is judged on
  double context_bytes = 0;          ///< the CUDA context in both device figures
  double upper_fragmentation = 1;    ///< device_upper = allocated x this + context
  double expected_error = kSweepMeanAbsoluteError;  ///< of allocated_bytes, a fraction
  bool calibrated = true;            ///< false: the sweep measured this plan far from the arithmetic
  std::string calibration_note;      ///< why, and what to do instead
  std::vector<std::string> formulas;  ///< one line per term
};

/// The engine's peak for `plan` with `model` on the cluster of `options`.
PeakMemoryEstimate estimate_peak(const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& options,
                                 const ActivationEstimate& activations, const BufferEstimate& buffers);

}  // namespace shardscope::estimator
