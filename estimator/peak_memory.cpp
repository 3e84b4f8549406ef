#include "estimator/peak_memory.hpp"

#include <algorithm>
#include <cstdio>

#include "estimator/byte_units.hpp"
#include "estimator/stage3_residency.hpp"

namespace shardscope::estimator {
namespace {

std::string line(const char* format, double a, double b = 0, double c = 0) {
  char text[400];
  std::snprintf(text, sizeof text, format, a, b, c);
  return text;
}

/// What the engine holds at the peak, and what the end of the backward adds.
struct Residency {
  double states = 0;      ///< during the backward
  double staging = 0;     ///< stage 2: the bucket being filled (the last-layer phase)
  double end_extra = 0;   ///< the gradients once the backward is done
  std::string rule;
};

// The ZeRO stages as the engine runs them (engine/zero/zero_runtime.cpp): stages 0-1 keep a flat
// 16-bit gradient buffer for the whole step; stages 2-3 reduce each bucket as it fills and keep
// only the rank's partition, which grows to 2/N bytes a parameter by the backward's end; fp16 keeps
// an fp32 copy of the gradients it unscales (stages 0-1 from the start, 2-3 as partitions land).
Residency resident_without_offload(double P, const ZeroPlan& plan, const PrecisionSettings& p, double N,
                                   const ZeroBuckets& b) {
  Residency r;
  const bool fp32 = p.precision == Precision::kFp32;
  const double param = fp32 ? 4 : 2, grad = fp32 ? 4 : 2;
  const double master = fp32 ? 4 : (p.low_precision_master ? 2 : 4);
  const double optim = (p.low_precision_optimizer_states ? 2 : 4) * p.optimizer_states_per_param;
  const double bucket = std::min(b.reduce_bucket_size, P);
  const int s = plan.stage;
  if (s <= 1) {
    // fp32 at stages 0-1 updates the parameters themselves: no separate master.
    const double sharded = (fp32 ? 0 : master) + optim;
    const double shards = s == 0 ? 1 : N;
    r.states = param * P + grad * P + sharded * P / shards;
    // The fp32 gradients the step reads: fp16 always (it unscales them); at stage 1 on several
    // ranks also bf16, and fp32 beside its reduced copy (measured: tests/engine/zero_states_multirank_test).
    if (p.precision == Precision::kFp16) r.states += 4 * P / shards;
    else if (s == 1 && N > 1) r.states += (fp32 ? 8 : 4) * P / N;
    if (fp32 && !(s == 1 && N > 1)) r.end_extra = 8 * P / shards;  // the reduced copy and fp32 gradients, after the backward
    r.rule = s == 0 ? "params + flat gradients + master + optimizer states" : "params + flat gradients + (master + optimizer) / N";
  } else {
    // One rank keeps its full weights for the kernels beside the partition (stage 3 gathers by
    // views of that copy); several ranks hold the partition and gather layers into buffers.
    // Several ranks at stage 3 keep no 16-bit partition: a gather casts the fp32 master.
    const double weights = s == 2 || N == 1 ? param * P : 0;
    r.states = weights + (master + optim) * P / N;
    r.staging = s == 2 ? grad * bucket : 0;
    r.end_extra = p.precision == Precision::kBf16 ? 2 * P / N
                  : fp32                          ? 4 * P / N
                                                  : 4 * P / N + 2 * bucket;  // fp16: fp32 partition + the last 16-bit bucket
    r.rule = "params + (master + optimizer) / N, gradients only between backward and step";
  }
  return r;
}

// Offload keeps master and optimizer states on the host; what stays on the GPU (measured on the
// held sweep at one rank, docs/estimator.md): stage 1 the 16-bit weights, the flat 16-bit gradients
// and the reduced 16-bit shard; stage 2 the weights and flat 16-bit gradients; stage 3 the 16-bit
// shard and the layers still gathered when the backward starts (`kept`, replayed from the
// runtime's reuse rule when the model's layers are known), or, with parameter offload, only those
// layers.
Residency resident_with_offload(double P, const ZeroPlan& plan, double N, const ZeroBuckets& b,
                                std::optional<double> kept) {
  Residency r;
  if (plan.offload_param != OffloadDevice::kNone) {
    if (kept) {
      r.states = 2 * *kept;
      r.rule = "16-bit layers kept gathered when the backward starts (stage3_max_reuse_distance, stage3_max_live_parameters)";
    } else {
      r.states = 2 * std::min(P, b.max_live_parameters);
      r.rule = "16-bit layers gathered live: 2 B x min(P, stage3_max_live_parameters)";
    }
  } else if (plan.stage == 1) {
    r.states = 2 * P + 2 * P + 2 * P / N;
    r.rule = "16-bit params + flat gradients + reduced shard / N";
  } else if (plan.stage == 2) {
    r.states = 2 * P + 2 * P / N;
    r.rule = "16-bit params + gradients of the partition";
  } else if (N == 1 && kept) {
    // One rank: the 16-bit shard is the model, and each gather copies a layer out of it; the
    // layers kept after the forward are what the copies hold when the backward starts.
    r.states = 2 * P + 2 * std::min(P, *kept);
    r.rule = "16-bit shard + the layers kept gathered when the backward starts";
  } else {
    r.states = (N == 1 ? 2 * P : 2 * P / N) + 2 * P / N;
    r.rule = "16-bit weights + their partition, gradients on the host";
  }
  return r;
}

// Before the first step: unless stage 3 on several ranks builds it partitioned, the engine
// builds the whole model in fp32 on the GPU and copies it into what it trains from before it
// drops the model's own tensors: stages 0-2 flat buffers of the model dtype; stage 3 its shard
// (on the GPU unless the parameters are offloaded) and, one at a time, a layer's group assembled
// to cut the shard from (measured on the held sweep: GPT-2 1.3B with the optimizer offloaded
// peaks here, at 4 + 2 + 2 x largest layer / P bytes a parameter).
double initialisation_bytes(double P, const ZeroPlan& plan, const PrecisionSettings& p, double N,
                            std::optional<double> largest_group) {
  if (plan.stage == 3 && N > 1) return 0;
  const double param = p.precision == Precision::kFp32 ? 4 : 2;
  // FlatParameters allocates the flat weights (and at stages 0-1 the flat gradients) before it
  // moves the fp32 tensors into them one by one.
  if (plan.stage < 3) return 4 * P + param * P + (plan.stage <= 1 ? param * P : 0);
  const double shard = plan.offload_param == OffloadDevice::kNone ? param * P : 0;
  return 4 * P + shard + param * largest_group.value_or(0);
}

}  // namespace

FragmentationFactors fragmentation_factors(bool checkpointing, bool offload) {
  // Reserved / allocated at the peak on the held sweep, median and largest per kind of run: a
  // checkpointed backward frees and reallocates each recomputed layer in other sizes, and an
  // offload side stream keeps its blocks apart from the compute stream's.
  if (offload) return checkpointing ? FragmentationFactors{1.44, 1.80} : FragmentationFactors{1.13, 1.45};
  return checkpointing ? FragmentationFactors{1.19, 1.35} : FragmentationFactors{1.045, 1.09};
}

PeakMemoryEstimate estimate_peak(const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& options,
                                 const ActivationEstimate& activations, const BufferEstimate& buffers) {
  const double P = model.total_params;
  const double N = options.cluster.total_gpus();
  const bool offload = plan.offload_optimizer != OffloadDevice::kNone;
  const std::optional<double> kept = plan.stage == 3 ? stage3_kept_after_forward(model, options.buckets) : std::nullopt;
  const Residency r = offload ? resident_with_offload(P, plan, N, options.buckets, kept)
                              : resident_without_offload(P, plan, options.precision, N, options.buckets);
  PeakMemoryEstimate e;
  e.resident_states_bytes = r.states;
  e.staging_bytes = r.staging;
  e.end_of_backward_extra_bytes = r.end_extra;
  // One rank reduces nothing: the engine allocates no communication bucket then.
  e.buffers_bytes = N > 1 ? buffers.gpu_bytes : 0;
  e.workspace_bytes = kCublasWorkspaceBytes;
  const double fixed = e.resident_states_bytes + e.buffers_bytes + e.workspace_bytes;
  const double act_head = activations.available ? activations.head_phase_bytes : 0;
  const double act_layer = activations.available ? activations.layer_phase_bytes : 0;
  e.head_phase_bytes = fixed + act_head;
  e.layer_phase_bytes = fixed + e.staging_bytes + act_layer;
  e.end_phase_bytes = fixed + e.end_of_backward_extra_bytes;
  e.init_phase_bytes = initialisation_bytes(P, plan, options.precision, N, stage3_largest_group(model));
  e.allocated_bytes = std::max({e.head_phase_bytes, e.layer_phase_bytes, e.end_phase_bytes, e.init_phase_bytes});
  e.phase = e.allocated_bytes == e.head_phase_bytes    ? "head"
            : e.allocated_bytes == e.layer_phase_bytes ? "last layer"
            : e.allocated_bytes == e.end_phase_bytes   ? "end of backward"
                                                       : "initialisation";
  const FragmentationFactors f =
      fragmentation_factors(options.workload.checkpointing != ActivationCheckpointing::kNone, offload);
  const double context = kCudaContextBytes + (offload ? kOffloadContextBytes : 0);
  e.context_bytes = context;
  e.upper_fragmentation = f.upper;
  e.reserved_bytes = e.allocated_bytes * f.expected;
  e.device_bytes = e.reserved_bytes + context;
  e.device_upper_bytes = e.allocated_bytes * f.upper + context;
  e.formulas.push_back("resident states: " + r.rule + " = " + format_count(e.resident_states_bytes) + " B");
  if (e.staging_bytes > 0) e.formulas.push_back("gradient bucket being filled: " + format_count(e.staging_bytes) + " B");
  if (e.buffers_bytes > 0) e.formulas.push_back("communication buckets: " + format_count(e.buffers_bytes) + " B");
  e.formulas.push_back(line("peak phases: head %.4g B, last layer %.4g B, end of backward %.4g B", e.head_phase_bytes,
                            e.layer_phase_bytes, e.end_phase_bytes) + " (cuBLAS workspaces 64 MiB in each)");
  if (e.init_phase_bytes > 0)
    e.formulas.push_back(line("initialisation: the fp32 model built whole + its copy to train from = %.4g B",
                              e.init_phase_bytes));
  e.formulas.push_back(line("reserved = allocated x %.3g (the sweep's median for this kind of run); device = reserved + "
                            "%.0f MiB of CUDA context; the fit is judged on allocated x %.3g + context",
                            f.expected, context / 1048576.0, f.upper));
  return e;
}

}  // namespace shardscope::estimator
