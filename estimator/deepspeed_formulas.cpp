#include "estimator/deepspeed_formulas.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "estimator/byte_units.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::estimator {
namespace {

// Python's int() of a float: truncation toward zero. The operations below keep Python's
// left-to-right evaluation order so the doubles round exactly as DeepSpeed's floats do.
double py_int(double value) { return std::trunc(value); }

void check_cluster(int gpus_per_node, int nodes) {
  if (gpus_per_node <= 0 || nodes <= 0)
    throw EstimatorError("GPUs per node and nodes must be positive, got " + std::to_string(gpus_per_node) + " x " +
                         std::to_string(nodes));
}

}  // namespace

std::string DeepSpeedEstimateRow::options_label() const {
  const char* optimizer = offload_optimizer ? "cpu " : "none";
  if (stage == 2) return std::string("offload_optimizer=") + optimizer;
  return std::string("offload_param=") + (offload_param ? "cpu " : "none") + ", offload_optimizer=" + optimizer +
         ", zero_init=" + (zero_init.value_or(false) ? "1" : "0");
}

DeepSpeedEstimateRow deepspeed_zero2_row(double P, int gpus_per_node, int nodes, bool cpu_offload, double f) {
  check_cluster(gpus_per_node, nodes);
  const double total_gpus = static_cast<double>(nodes) * gpus_per_node;
  DeepSpeedEstimateRow row;
  row.stage = 2;
  row.offload_optimizer = cpu_offload;
  if (cpu_offload) {
    row.gpu_bytes = py_int(2 * P);
    const double multiplier = std::max(4 * total_gpus, 16.0);
    row.cpu_bytes = py_int(P * multiplier * f);
    row.gpu_formula = "2*P (16-bit params)";
    row.cpu_formula = formatted("P * max(4*total_gpus, 16) * f = P * %g * %g", multiplier, f);
  } else {
    row.gpu_bytes = py_int(2 * P + py_int(18 * P / total_gpus));
    row.cpu_bytes = py_int(P * 4 * gpus_per_node * f);
    row.gpu_formula = formatted("2*P + int(18*P/total_gpus), total_gpus = %g (18 = 2 grad16 + 4 grad32 + 4 param32 + 8 Adam)",
                          total_gpus);
    row.cpu_formula = formatted("P * 4 * gpus_per_node * f = P * 4 * %g * %g (fp32 model built on CPU by each rank)",
                          gpus_per_node, f);
  }
  return row;
}

DeepSpeedEstimateRow deepspeed_zero3_row(double P, double L, int gpus_per_node, int nodes, bool cpu_offload,
                                         bool cpu_offload_params, bool zero_init, double f) {
  check_cluster(gpus_per_node, nodes);
  const double total_gpus = static_cast<double>(nodes) * gpus_per_node;
  const double gpus_factor = 1.0 / nodes;
  const double largest_layer_memory = 4 * L;  // 16-bit params gathered + 16-bit grads of one layer
  DeepSpeedEstimateRow row;
  row.stage = 3;
  row.offload_optimizer = cpu_offload;
  row.offload_param = cpu_offload && cpu_offload_params;
  row.zero_init = zero_init;
  const double G = gpus_per_node;
  if (cpu_offload && cpu_offload_params) {
    row.gpu_bytes = py_int(largest_layer_memory);
    row.gpu_formula = "4*L (largest layer: 16-bit params + grads)";
    row.cpu_bytes = py_int(zero_init ? P * 18 * gpus_factor * f : P * std::max(4 * G, 18 * gpus_factor) * f);
    row.cpu_formula = zero_init ? formatted("P * 18 / nodes * f (f = %g)", f)
                                : formatted("P * max(4*gpus_per_node, 18/nodes) * f = P * %g * %g", std::max(4 * G, 18 * gpus_factor), f);
  } else if (cpu_offload) {
    row.gpu_bytes = py_int(largest_layer_memory + py_int(2 * P / total_gpus));
    row.gpu_formula = formatted("4*L + int(2*P/total_gpus), total_gpus = %g", total_gpus);
    row.cpu_bytes = py_int(zero_init ? P * 16 * gpus_factor * f : P * std::max(4 * G, 16 * gpus_factor) * f);
    row.cpu_formula = zero_init ? formatted("P * 16 / nodes * f (f = %g)", f)
                                : formatted("P * max(4*gpus_per_node, 16/nodes) * f = P * %g * %g", std::max(4 * G, 16 * gpus_factor), f);
  } else {
    row.gpu_bytes = py_int(largest_layer_memory + py_int(18 * P / total_gpus));
    row.gpu_formula = formatted("4*L + int(18*P/total_gpus), total_gpus = %g", total_gpus);
    row.cpu_bytes = py_int(zero_init ? L * 4 * G * f : P * 4 * G * f);
    row.cpu_formula = zero_init ? formatted("L * 4 * gpus_per_node * f = L * 4 * %g * %g", G, f)
                                : formatted("P * 4 * gpus_per_node * f = P * 4 * %g * %g", G, f);
  }
  return row;
}

std::vector<DeepSpeedEstimateRow> deepspeed_zero2_table(double P, int gpus_per_node, int nodes, double f) {
  return {deepspeed_zero2_row(P, gpus_per_node, nodes, true, f), deepspeed_zero2_row(P, gpus_per_node, nodes, false, f)};
}

std::vector<DeepSpeedEstimateRow> deepspeed_zero3_table(double P, double L, int gpus_per_node, int nodes, double f) {
  std::vector<DeepSpeedEstimateRow> rows;
  for (bool cpu_offload : {true, false})
    for (bool cpu_offload_params : {true, false}) {
      if (!cpu_offload && cpu_offload_params) continue;
      for (bool zero_init : {true, false})
        rows.push_back(deepspeed_zero3_row(P, L, gpus_per_node, nodes, cpu_offload, cpu_offload_params, zero_init, f));
    }
  return rows;
}

std::string format_deepspeed_table(const std::vector<DeepSpeedEstimateRow>& rows, double total_params,
                                   std::optional<double> largest_layer_params, int gpus_per_node, int nodes) {
  std::string out = "Estimated memory needed for params, optim states and gradients for a:\n";
  out += "HW: Setup with " + std::to_string(nodes) + " node" + (nodes == 1 ? "" : "s") + ", " +
         std::to_string(gpus_per_node) + " GPU" + (gpus_per_node == 1 ? "" : "s") + " per node.\n";
  out += "SW: Model with " + whole_number(total_params / 1e6) + "M total params";
  if (largest_layer_params)
    out += ", " + whole_number(*largest_layer_params / 1e6) + "M largest layer params";
  out += ".\n  per CPU  |  per GPU |   Options\n";
  const double gib = 1073741824.0;
  for (const auto& row : rows)
    out += formatted(" %7.2fGB | %6.2fGB | ", row.cpu_bytes / gib, row.gpu_bytes / gib) + row.options_label() + "\n";
  return out;
}

}  // namespace shardscope::estimator
