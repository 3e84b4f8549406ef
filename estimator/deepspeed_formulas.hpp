#pragma once
// DeepSpeed's own model-state estimators, reproduced to the byte so users can check our numbers
// against theirs: estimate_zero2_model_states_mem_needs and estimate_zero3_model_states_mem_needs
// (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py, 0.19.6 = 0.19.7). They assume Adam with
// 16-bit parameters, count model states only, and multiply host memory by
// additional_buffer_factor (1.5). DeepSpeed prints bytes / 2^30 labelled "GB"; we say GiB.
// The "all live" variants only measure P and L on a live module, then call the "all cold" ones;
// here P and L come from the ModelDescription.

#include <optional>
#include <string>
#include <vector>

namespace shardscope::estimator {

struct DeepSpeedEstimateRow {
  int stage = 2;  ///< 2 = estimate_zero2, 3 = estimate_zero3
  bool offload_optimizer = false;
  bool offload_param = false;      ///< stage 3 only
  std::optional<bool> zero_init;   ///< stage 3 only
  double cpu_bytes = 0;            ///< "per CPU": host memory per node
  double gpu_bytes = 0;
  std::string cpu_formula;
  std::string gpu_formula;
  std::string options_label() const;  ///< "offload_param=cpu , offload_optimizer=cpu , zero_init=1"
};

/// estimate_zero2_model_states_mem_needs: returns (cpu, gpu) bytes, truncated to integers as Python does.
DeepSpeedEstimateRow deepspeed_zero2_row(double total_params, int gpus_per_node, int nodes, bool cpu_offload,
                                         double buffer_factor);

/// estimate_zero3_model_states_mem_needs.
DeepSpeedEstimateRow deepspeed_zero3_row(double total_params, double largest_layer_params, int gpus_per_node,
                                         int nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                                         double buffer_factor);

/// The rows DeepSpeed prints: 2 for estimate_zero2_model_states_mem_needs_all_cold, in its order.
std::vector<DeepSpeedEstimateRow> deepspeed_zero2_table(double total_params, int gpus_per_node, int nodes,
                                                        double buffer_factor);

/// The 6 rows of estimate_zero3_model_states_mem_needs_all_cold, in its loop order.
std::vector<DeepSpeedEstimateRow> deepspeed_zero3_table(double total_params, double largest_layer_params,
                                                        int gpus_per_node, int nodes, double buffer_factor);

/// The table as DeepSpeed prints it (header lines and "{cpu:7.2f}GB | {gpu:6.2f}GB | options").
std::string format_deepspeed_table(const std::vector<DeepSpeedEstimateRow>& rows, double total_params,
                                   std::optional<double> largest_layer_params, int gpus_per_node, int nodes);

}  // namespace shardscope::estimator
