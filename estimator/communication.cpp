#include "estimator/communication.hpp"

#include <cstdio>

#include "estimator/byte_units.hpp"
#include "estimator/model_states.hpp"

namespace shardscope::estimator {
namespace {

void add(CommunicationEstimate& e, const std::string& op, double calls, double buffer_bytes, double ring_factor,
         double n) {
  CollectiveVolume v;
  v.op = op;
  v.calls_per_step = calls;
  v.buffer_bytes = buffer_bytes;
  v.bytes_per_gpu = calls * ring_factor * (n - 1) / n * buffer_bytes;
  v.formula = formatted("%g call(s) x %g(n-1)/n x buffer", calls, ring_factor) + formatted(" = %g x %g x %.4g B", calls,
                                                                             ring_factor * (n - 1) / n, buffer_bytes);
  e.bytes_per_gpu += v.bytes_per_gpu;
  e.collectives.push_back(std::move(v));
}

}  // namespace

CommunicationEstimate estimate_communication(double total_params, const ZeroPlan& plan, const EstimateOptions& options,
                                             std::optional<double> bandwidth, const std::string& bandwidth_source) {
  CommunicationEstimate e;
  const StateBytesPerParam bpp = state_bytes_per_param(options.precision);
  const double n = options.cluster.total_gpus();
  const double k = static_cast<double>(options.workload.grad_accum);
  const double grads = total_params * bpp.gradients;
  const double params = total_params * bpp.params;
  e.parameter_bytes = params;
  if (n > 1) {
    switch (plan.stage) {
      case 0:
        add(e, "all-reduce (gradients, at the step)", 1, grads, 2, n);
        break;
      case 1:
        add(e, "reduce-scatter (gradients, at the step)", 1, grads, 1, n);
        add(e, "all-gather (updated parameters)", 1, params, 1, n);
        break;
      case 2:
        add(e, "reduce-scatter (gradients, every micro-step)", k, grads, 1, n);
        add(e, "all-gather (updated parameters)", 1, params, 1, n);
        break;
      default:
        add(e, "all-gather (parameters, forward)", k, params, 1, n);
        add(e, "all-gather (parameters, backward)", k, params, 1, n);
        add(e, "reduce-scatter (gradients)", k, grads, 1, n);
        break;
    }
  }
  e.bandwidth = bandwidth;
  e.bandwidth_source = bandwidth_source;
  if (bandwidth && *bandwidth > 0) e.seconds_per_step = e.bytes_per_gpu / *bandwidth;
  return e;
}

}  // namespace shardscope::estimator
