#include "estimator/buffers.hpp"

#include <algorithm>
#include <cstdio>

#include "estimator/byte_units.hpp"
#include "estimator/host_memory.hpp"
#include "estimator/model_states.hpp"

namespace shardscope::estimator {
namespace {

// DeepSpeed's engine all-reduces stage 0 gradients in flattened buckets of this many elements
// (MEMORY_OPT_ALLREDUCE_SIZE in runtime/constants.py).
constexpr double kStage0AllreduceBucket = 5e8;

void add(BufferEstimate& e, BufferItem item) {
  if (item.counted) (item.on_gpu ? e.gpu_bytes : e.cpu_bytes_per_node) += item.bytes;
  e.items.push_back(std::move(item));
}

void add_reduce_buckets(BufferEstimate& e, const ZeroPlan& plan, const EstimateOptions& o, double P, double grad_bytes) {
  if (plan.stage == 0) {
    const double elements = std::min(kStage0AllreduceBucket, P);
    add(e, {"all-reduce bucket", "(engine constant MEMORY_OPT_ALLREDUCE_SIZE = 5e8)", elements,
            elements * grad_bytes, true, true,
            formatted("min(5e8, P) x %g B = %.4g elements x %g B", grad_bytes, elements, grad_bytes)});
    return;
  }
  const bool overlap = o.buckets.overlap_comm.value_or(plan.stage == 3);
  // Stages 1-2 allocate one contiguous bucket, and a second with overlap_comm so one reduces while
  // the other fills; stage 3 fills one flat bucket and reduces on a side stream.
  const double count = (plan.stage < 3 && overlap) ? 2 : 1;
  const double elements = o.buckets.reduce_bucket_size;
  add(e, {count == 2 ? "reduce buckets (2, overlap_comm)" : "reduce bucket", "zero_optimization.reduce_bucket_size",
          elements * count, elements * count * grad_bytes, true, true,
          formatted("%g x reduce_bucket_size (%.4g) x %g B (gradient dtype)", count, elements, grad_bytes)});
}

void add_stage3_items(BufferEstimate& e, const ModelDescription& model, const EstimateOptions& o, double P,
                      double param_bytes, double grad_bytes) {
  const double L = model.largest_layer_params;
  const double prefetch = o.buckets.prefetch_bucket_size;
  const double max_live = o.buckets.max_live_parameters;
  // Live gathered parameters: the module being run plus what is prefetched, capped by
  // max_live_parameters (but a module is always gathered whole), and never more than the model.
  const double working = std::min({P, L + prefetch, std::max(L, max_live)});
  add(e, {"stage 3 gathered parameters", "stage3_prefetch_bucket_size, stage3_max_live_parameters", working,
          working * param_bytes, true, true,
          formatted("min(P, L + prefetch_bucket_size, max(L, max_live_parameters)) x %g B = %.4g elements (L = %.4g)",
              param_bytes, working, L)});
  add(e, {"stage 3 prefetch bucket", "zero_optimization.stage3_prefetch_bucket_size", prefetch, prefetch * param_bytes,
          true, false, formatted("%.4g x %g B (inside the gathered parameters above)", prefetch, param_bytes)});
  add(e, {"stage 3 max live parameters (cap)", "zero_optimization.stage3_max_live_parameters", max_live,
          max_live * param_bytes, true, false,
          formatted("%.4g x %g B (upper bound on gathered parameters, not an allocation)", max_live, param_bytes)});
  add(e, {"largest layer's gradients", "(model)", L, L * grad_bytes, true, true,
          formatted("L x %g B = %.4g x %g B (before reduce-scatter; DeepSpeed's 4*L counts these and the params)",
              grad_bytes, L, grad_bytes)});
}

void add_nvme_items(BufferEstimate& e, const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& o,
                    double param_bytes) {
  const double G = o.cluster.gpus_per_node;
  if (plan.offload_param == OffloadDevice::kNvme) {
    const double elements = o.buckets.offload_param_buffer_count * o.buckets.offload_param_buffer_size;
    add(e, {"NVMe parameter swap buffers (pinned)", "offload_param.buffer_count, offload_param.buffer_size",
            elements * G, elements * param_bytes * G, false, true,
            formatted("buffer_count x buffer_size x %g B x %g GPUs/node = %.4g x %g", param_bytes, G,
                o.buckets.offload_param_buffer_count, o.buckets.offload_param_buffer_size)});
  }
  if (plan.offload_optimizer == OffloadDevice::kNvme) {
    const double sub_group = largest_nvme_sub_group(model, o.cluster.total_gpus(), o.buckets.sub_group_size);
    const double elements = o.buckets.offload_optimizer_buffer_count * sub_group;
    add(e, {"NVMe optimizer swap buffers (pinned)", "offload_optimizer.buffer_count, sub_group_size", elements * G,
            elements * 4 * G, false, true,
            formatted("buffer_count (%g) x the largest sub-group (%.4g: up to sub_group_size, or one layer's shard above it) x 4 B x %g GPUs/node",
                o.buckets.offload_optimizer_buffer_count, sub_group, G)});
  }
}

}  // namespace

BufferEstimate estimate_buffers(const ModelDescription& model, const ZeroPlan& plan, const EstimateOptions& options) {
  BufferEstimate e;
  const StateBytesPerParam bpp = state_bytes_per_param(options.precision);
  const double P = model.total_params;
  add_reduce_buckets(e, plan, options, P, bpp.gradients);
  if (plan.stage == 1 || plan.stage == 2) {
    const double elements = std::min(options.buckets.allgather_bucket_size, P);
    add(e, {"all-gather bucket", "zero_optimization.allgather_bucket_size", elements, elements * bpp.params, true,
            false,
            formatted("min(allgather_bucket_size, P) x %g B; chunks the gather into the existing 16-bit weights, "
                "so not counted",
                bpp.params)});
  }
  if (plan.stage == 3) add_stage3_items(e, model, options, P, bpp.params, bpp.gradients);
  add_nvme_items(e, model, plan, options, bpp.params);
  return e;
}

}  // namespace shardscope::estimator
