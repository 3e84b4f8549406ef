#pragma once
// Data-parallel communication volume per optimizer step per GPU, and its time at a link
// bandwidth. Ring collectives move (n-1)/n of the buffer through each GPU for a reduce-scatter or
// an all-gather, 2(n-1)/n for an all-reduce (Rajbhandari et al. 2020, section 7): stages 0-2 move
// about 2 x the parameter bytes per step, stage 3 about 3 x (all-gather in forward and again in
// backward, reduce-scatter of gradients). With gradient accumulation, stage 0-1 reduce once per
// step, stage 2 reduce-scatters every micro-step, and stage 3 gathers and reduces every micro-step.

#include <optional>
#include <string>
#include <vector>

#include "estimator/estimate_options.hpp"

namespace shardscope::estimator {

struct CollectiveVolume {
  std::string op;       ///< "all-reduce (gradients)", "all-gather (parameters, forward)", ...
  double calls_per_step = 1;
  double buffer_bytes = 0;  ///< the collective's full buffer
  double bytes_per_gpu = 0;  ///< sent (= received) by each GPU per step
  std::string formula;
};

struct CommunicationEstimate {
  std::vector<CollectiveVolume> collectives;
  double bytes_per_gpu = 0;              ///< total per step
  double parameter_bytes = 0;            ///< P x 16-bit (or fp32) bytes, the unit "2x"/"3x" refer to
  std::optional<double> bandwidth;       ///< bytes/s used for the time, per GPU
  std::string bandwidth_source;          ///< "--bandwidth", "catalog: H100-80GB NVLink", ...
  std::optional<double> seconds_per_step;
};

/// Volume for `plan` with `total_params` parameters; time when a bandwidth is known.
CommunicationEstimate estimate_communication(double total_params, const ZeroPlan& plan, const EstimateOptions& options,
                                             std::optional<double> bandwidth, const std::string& bandwidth_source);

}  // namespace shardscope::estimator
