#pragma once
// Host memory of one GPU rank as ShardScope's engine allocates it (docs/estimator.md, "Host
// memory"): the buffers an offload plan keeps in (pinned) host memory, the rank process itself,
// and the model built on the host before it moves to the GPU. Page-locked buffers come from CUDA's
// caching host allocator, which hands out power-of-two blocks: a 5.2 GB fp32 master takes 8 GiB.
// The constants that are measured rather than derived (the process's own resident size) come from
// the held sweep and are pinned by tests/estimator/gpu_sweep_test.cpp.

#include <string>
#include <vector>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

/// A CUDA rank's resident size with nothing offloaded: LibTorch's and CUDA's libraries, the CUDA
/// context's host side and the data loader; measured at 0.75-0.97 GiB on the H200 sweep (median
/// 870 MiB for 16-bit runs).
constexpr double kRankProcessHostBytes = 870.0 * 1048576.0;
/// The same process before CUDA starts, when a model built on the host is its largest allocation:
/// the sweep's Llama rows less their fp32 model (450 MiB).
constexpr double kEarlyProcessHostBytes = 450.0 * 1048576.0;
/// The sweep's mean absolute error of the host peak on plans that offload: the band printed
/// beside the host figure.
constexpr double kHostSweepMeanAbsoluteError = 0.01;

/// One host buffer of the plan.
struct HostBuffer {
  std::string name;    ///< e.g. "fp32 master (offload_optimizer)"
  double bytes = 0;    ///< what it holds
  double held = 0;     ///< what it takes: a pinned buffer's power-of-two block, else `bytes`
  bool pinned = false;
};

struct HostMemoryEstimate {
  std::vector<HostBuffer> buffers;  ///< per rank
  double pinned_bytes = 0;          ///< per rank, as held
  double pageable_bytes = 0;        ///< per rank
  double process_bytes = kRankProcessHostBytes;
  double build_bytes = 0;           ///< the model built on the host in fp32 before training (per rank)
  double steady_bytes = 0;          ///< process + pinned + pageable while training
  double peak_bytes = 0;            ///< the rank's peak resident size: max(steady, early process + build)
  double nvme_bytes = 0;            ///< the rank's swap files: optimizer sub-groups, parameters past max_in_cpu
  double expected_error = kHostSweepMeanAbsoluteError;
  std::vector<std::string> formulas;
};

/// Bytes CUDA's caching host allocator takes for a page-locked request of `bytes`: the next power
/// of two.
double pinned_block_bytes(double bytes);

/// Elements of the largest optimizer sub-group a rank swaps to NVMe, as the engine packs them
/// (shard_optimizer.cpp's sub_groups_of, DeepSpeed's _create_fp16_sub_groups): consecutive
/// stage-3 groups (layers) fill a sub-group up to sub_group_size, and one group's chunk larger than
/// that is a sub-group of its own, so a large token embedding sets the swap buffers' size. Without
/// the model's layers: min(sub_group_size, the rank's shard).
double largest_nvme_sub_group(const ModelDescription& model, int ranks, double sub_group_size);

/// One rank's host memory for `plan` with `model` on the cluster of `options` (per node: times
/// the ranks on a node).
HostMemoryEstimate estimate_host_memory(const ModelDescription& model, const ZeroPlan& plan,
                                        const EstimateOptions& options);

}  // namespace shardscope::estimator
