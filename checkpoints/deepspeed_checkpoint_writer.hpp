#pragma once
// Writing a rank's files of a checkpoint tag in DeepSpeed 0.19.7's layout, entry for entry, so
// that DeepSpeed's engine.load_checkpoint, zero_to_fp32.py and
// get_fp32_state_dict_from_zero_checkpoint read them as their own (docs/checkpoints.md lists the
// entries). What ShardScope needs beyond that goes into shardscope_* entries DeepSpeed returns as
// client state and otherwise ignores. No LibTorch: the engine hands raw buffers in.
//
// Every file opens with torch.load(weights_only=True). The one exception is opt-in: DeepSpeed's
// ZeRO-3 load reads optimizer_state_dict['loss_scaler'] unconditionally and calls methods of its
// own LossScaler class on it, which weights_only refuses; `deepspeed_loss_scaler` writes that
// object (docs/checkpoints.md, "The loss scaler").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoints/deepspeed_checkpoint.hpp"
#include "checkpoints/host_tensor.hpp"
#include "checkpoints/torch_file.hpp"
#include "configs/deepspeed_version.hpp"

namespace shardscope::checkpoints {


struct LossScalerSettings {
  std::int64_t scale_window = 1000;
  double min_scale = 1;
  std::int64_t delayed_shift = 2;
  bool consecutive_hysteresis = false;
};

/// One save, as every rank describes it (only `rank` differs between them).
struct SaveDescription {
  int zero_stage = 0;
  int world_size = 1;
  int rank = 0;
  DType model_dtype = DType::kFloat32;  ///< the module's weights
  std::vector<ParameterEntry> parameters;                   ///< name and shape, in the flat order
  std::vector<std::pair<std::string, std::string>> shared;  ///< tied: (alias, the parameter holding it)
  std::int64_t global_steps = 0, global_samples = 0, skipped_steps = 0;
  std::optional<std::int64_t> lr_last_batch_iteration;  ///< none without a scheduler
  std::string optimizer_type;                           ///< as the config names it
  /// torch's param_groups[0] without "params", as JSON (lists become tuples: "betas").
  std::string param_group_json = "{}";
  std::int64_t optimizer_step = 0;
  std::optional<LossScalerSnapshot> loss_scaler;  ///< fp16 only
  LossScalerSettings loss_scaler_settings;
  double clip_grad = 0;
  std::string ds_config_json;  ///< the config as given ("" writes None)
  std::string client_state_json = "{}";
  std::string save_id, shardscope_version;
  std::int64_t sub_group_size = 1'000'000'000;  ///< zero_optimization.sub_group_size (stage 3)
  bool deepspeed_loss_scaler = false;           ///< write DeepSpeed's LossScaler objects (see above)
  /// The DeepSpeed release whose layout the files follow (their ds_version): 0.19.8 no longer
  /// writes the model states' sparse_tensor_module_names (runtime/engine.py, docs/configs.md).
  configs::DeepSpeedVersion release = configs::DeepSpeedVersion::k0_19_7;
};

/// Elements of rank `d.rank`'s optimizer partition (with padding), and where they come from.
std::int64_t optimizer_part_numel(const SaveDescription& d);
std::vector<PartitionRun> optimizer_part_runs(const SaveDescription& d);

/// Stage 0's optimizer, whole: the fp32 master and every state, each over all parameters.
struct WholeOptimizer {
  const float* master = nullptr;
  std::vector<std::pair<std::string, const float*>> states;
};

/// Writes the model-states file of rank d.rank (rank 0 at stages 0-2, every rank at stage 3).
/// `weights` holds each parameter's bytes in d.model_dtype (ignored at stage 3); `optimizer` is
/// required at stage 0.
FileDigest write_model_states(const std::string& path, const SaveDescription& d, const std::vector<const void*>& weights,
                              const WholeOptimizer* optimizer);

/// Writes rank d.rank's optimizer file (stages 1-3): `master` and each of `states` hold
/// optimizer_part_numel(d) fp32 values laid out by optimizer_part_runs(d).
FileDigest write_optimizer_states(const std::string& path, const SaveDescription& d, const float* master,
                                  const std::vector<std::pair<std::string, const float*>>& states);

}  // namespace shardscope::checkpoints
