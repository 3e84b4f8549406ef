#pragma once
// Temporary buffers a ZeRO config implies beyond model states, from its element counts times the
// dtype's bytes: the gradient reduce bucket(s), the stage 1-2 all-gather bucket, stage 3's
// gathered-parameter working set (bounded by max_live_parameters, at least the largest layer)
// and its prefetch bucket, and the pinned host buffers of NVMe offload. These are why a higher
// stage can use more memory than a lower one on a small model (DeepSpeed issue #6936): with
// overlap_comm a 5e8-element bucket is allocated twice, 2 GB in 16-bit, whatever the model size.

#include <string>
#include <vector>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct BufferItem {
  std::string name;        ///< "reduce bucket", "stage 3 prefetch bucket", ...
  std::string config_key;  ///< the DeepSpeed key that sizes it
  double elements = 0;
  double bytes = 0;
  bool on_gpu = true;        ///< false: pinned host memory, per node
  bool counted = true;       ///< false: shown for reference, already inside another item
  std::string formula;
};

struct BufferEstimate {
  std::vector<BufferItem> items;
  double gpu_bytes = 0;           ///< sum of counted GPU items
  double cpu_bytes_per_node = 0;  ///< sum of counted host items, x GPUs per node
};

/// Buffers of one plan; `model` supplies P (bucket caps) and the largest layer.
BufferEstimate estimate_buffers(const ModelDescription& model, const ZeroPlan& plan,
                                const EstimateOptions& options);

}  // namespace shardscope::estimator
