#pragma once
// Which GPUs of this machine a launch without a hostfile uses, by DeepSpeed's rules
// (deepspeed/launcher/runner.py): --include/--exclude NODE_SPEC filters (configs/node_selection.hpp
// parses them), --num_gpus N for ids [0, N), and CUDA_VISIBLE_DEVICES taken as the include list
// when no filter is given. Without a hostfile only this machine exists; another host name is
// refused with the remedy (list the hosts in --hostfile).

#include <optional>
#include <string>
#include <vector>

namespace shardscope::launcher {

struct DeviceSelectionOptions {
  int num_gpus = -1;                                ///< -1: not given
  std::string include;                              ///< "" or a NODE_SPEC list
  std::string exclude;                              ///< "" or a NODE_SPEC list
  std::optional<std::string> cuda_visible_devices;  ///< the launcher's own CUDA_VISIBLE_DEVICES
  int gpu_count = 0;                                ///< GPUs of this machine (count_local_gpus())
  std::vector<std::string> local_names = {"localhost"};  ///< names that mean this machine
};

struct DeviceSelection {
  std::vector<int> device_ids;     ///< one rank per id, in this order
  std::vector<std::string> notes;  ///< DeepSpeed's messages about CUDA_VISIBLE_DEVICES
};

/// Applies DeepSpeed's rules; throws LaunchError naming the flag and the remedy (kUsage for
/// contradicting flags and unknown hosts, kEnvironment when no GPU is visible).
DeviceSelection select_local_devices(const DeviceSelectionOptions& options);

/// GPUs of this machine without loading CUDA: `nvidia-smi -L`, else /proc/driver/nvidia/gpus.
/// Returns 0 when neither exists.
int count_local_gpus();

/// Counts the "GPU <n>:" lines of `nvidia-smi -L` output (MIG lines under a GPU do not count).
int count_nvidia_smi_gpus(const std::string& output);


}  // namespace shardscope::launcher
