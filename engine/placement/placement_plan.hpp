#pragma once
// Where each piece of this rank's model state lives: the one decision the engine makes about
// placement (DESIGN.md), from the config's stage, offload blocks and aio block. The stages, the
// optimizer step and checkpoints ask the plan (and the stores built from it) instead of branching
// on offload settings; a new tier is a new store, not new branches. Torch-free, so the decision
// itself is cheap to test.
//
//   piece                      device                 host (pinned)             nvme
//   16-bit parameter shard     default                offload_param cpu (st 3)  offload_param nvme (st 3)
//   fp32 master + optimizer    default                offload_optimizer cpu     offload_optimizer nvme (st 3)
//   reduced gradients          with a device master   with a host or NVMe master (the CPU step reads them)
//
// offload_optimizer.ratio < 1 (stage 3) keeps the first (1 - ratio) of the groups' optimizer
// state on the device, as DeepSpeed's subgroup_to_device does with its sub-groups.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aio/aio_handle.hpp"
#include "configs/config_model.hpp"

namespace shardscope::engine {

enum class Tier { kDevice, kHost, kNvme };

/// "device", "host" or "nvme".
const char* tier_name(Tier tier);

/// offload_optimizer with "device": "nvme": DeepSpeed's optimizer swapper settings.
struct OptimizerSwapPlan {
  std::string nvme_path;
  int buffer_count = 4;             ///< pinned buffers of the largest sub-group (offload_optimizer.buffer_count)
  bool pipeline_read = false;       ///< read the next sub-group while the current one steps
  bool pipeline_write = false;      ///< write the finished sub-group while the next one steps
  std::int64_t sub_group_size = 1000000000;  ///< elements per sub-group (zero_optimization.sub_group_size)
};

/// offload_param with "device": "nvme": DeepSpeed's parameter swapper settings.
struct ParamSwapPlan {
  std::string nvme_path;
  int buffer_count = 5;             ///< pinned swap-in buffers (offload_param.buffer_count)
  std::int64_t buffer_size = 100000000;  ///< elements per buffer (offload_param.buffer_size)
  std::int64_t max_in_cpu = 1000000000;  ///< elements of the shard kept in host memory (offload_param.max_in_cpu)
};

struct PlacementPlan {
  int stage = 0;
  bool cuda = false;                    ///< the device is a GPU (pinning only matters there)
  Tier param_shard = Tier::kDevice;     ///< the 16-bit shard the gathers read (stage 3 may offload it)
  Tier optimizer = Tier::kDevice;       ///< fp32 master and optimizer state of the offloaded groups
  double offload_ratio = 1.0;           ///< share of the groups whose optimizer state is on `optimizer`
  bool pin_optimizer = true;            ///< pin host buffers of the optimizer tier (GPU only)
  bool pin_params = true;               ///< pin host buffers of the parameter tier (GPU only)
  std::optional<OptimizerSwapPlan> optimizer_swap;  ///< set when optimizer == kNvme
  std::optional<ParamSwapPlan> param_swap;          ///< set when param_shard == kNvme
  aio::AioSettings aio;                 ///< the aio block (backend and owner filled in by the engine)
  std::vector<std::string> notes;       ///< decisions the config's letter does not show (logged at start)

  /// Whether any optimizer state leaves the device.
  bool offloads_optimizer() const { return optimizer != Tier::kDevice; }
  /// Whether the runtime gathers from a 16-bit shard of its own rather than casting the fp32 master
  /// (stages 1-3 without any offload keep no 16-bit copy of the shard).
  bool separate_shard() const { return stage >= 1 && (offloads_optimizer() || param_shard != Tier::kDevice); }
  /// Of `groups` layout groups, the first whose optimizer state is on the offload tier (all of
  /// them when nothing is offloaded): DeepSpeed's `i >= int((1 - ratio) * groups)`.
  int first_offloaded_group(int groups) const;
};

/// The placement `config` asks for on a GPU (`cuda`) or the CPU. Throws std::invalid_argument
/// naming the key when the config asks for something no tier can hold (a ratio outside [0, 1],
/// NVMe without nvme_path: DeepSpeed's assertion text).
PlacementPlan plan_placement(const configs::ResolvedConfig& config, bool cuda);

/// The aio block of a config as AioSettings (backend and owner left at their defaults).
aio::AioSettings aio_settings_from_config(const configs::AioConfig& aio);

}  // namespace shardscope::engine
