#include "app/gui/estimator/estimator_model.hpp"

#include <algorithm>
#include <sstream>

#include "app/gui/common/cli_locator.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/estimate_report.hpp"

namespace shardscope::gui {
namespace {

namespace est = shardscope::estimator;

// "Z3 o:cpu p:nvme": stage, offload_optimizer (o), offload_param (p); short enough for a bar's label.
std::string short_label(const est::ZeroPlan& plan) {
  std::string label = "Z" + std::to_string(plan.stage);
  if (plan.offload_optimizer != est::OffloadDevice::kNone)
    label += std::string(" o:") + est::offload_name(plan.offload_optimizer);
  if (plan.offload_param != est::OffloadDevice::kNone)
    label += std::string(" p:") + est::offload_name(plan.offload_param);
  return label;
}

EstimatorRow make_row(const est::PlanEstimate& p, const est::Estimate& estimate) {
  EstimatorRow row;
  row.plan = est::plan_name(p.plan);
  row.short_label = short_label(p.plan);
  row.zero_plan = p.plan;
  row.gpu_params = p.states.gpu.params.bytes;
  row.gpu_gradients = p.states.gpu.gradients.bytes;
  row.gpu_optimizer = p.states.gpu.master_params.bytes + p.states.gpu.optimizer_states.bytes;
  row.gpu_activations = estimate.activations.available ? estimate.activations.total_bytes : 0;
  if (!estimate.activations.available) row.activations_unknown = estimate.activations.unavailable_reason;
  row.gpu_buffers = p.buffers.gpu_bytes;
  row.gpu_total = p.gpu_total_bytes;
  row.gpu_resident = p.peak.resident_states_bytes;
  row.gpu_workspace = p.peak.workspace_bytes;
  row.gpu_peak_activations = std::max(0.0, p.peak.allocated_bytes - p.peak.resident_states_bytes -
                                               p.peak.buffers_bytes - p.peak.workspace_bytes);
  row.gpu_error_band = p.peak.expected_error * p.peak.allocated_bytes;
  row.gpu_device_upper = p.peak.device_upper_bytes;
  row.calibrated = p.peak.calibrated;
  row.cpu_per_node = p.cpu_total_bytes_per_node;
  row.nvme_per_node = p.nvme_bytes_per_node;
  row.comm_bytes_per_gpu = p.communication.bytes_per_gpu;
  row.comm_seconds = p.communication.seconds_per_step;
  row.comm_time_text = est::format_seconds(p.communication.seconds_per_step);
  if (p.fits_gpu) row.fits = p.fits();
  row.fit_text = est::plan_fit_text(p);
  const est::Verdict& v = estimate.verdict;
  row.recommended = v.recommended && *v.recommended == p.plan;
  row.requested = estimate.options.requested_plan && *estimate.options.requested_plan == p.plan;
  return row;
}

std::string recommendation_text(const est::Estimate& estimate) {
  std::string text = estimate.verdict.summary;
  for (const auto& line : estimate.verdict.advice) text += "\n\u2022 " + line;
  return text;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

}  // namespace

EstimatorView compute_estimator_view(const est::EstimateRequest& request) {
  EstimatorView view;
  try {
    view.estimate = est::estimate_request(request);
  } catch (const std::exception& error) {
    view.error = error.what();
    return view;
  }
  const est::Estimate& e = *view.estimate;
  for (const auto& plan : e.plans) view.rows.push_back(make_row(plan, e));
  view.gpu_memory_bytes = e.options.cluster.gpu_memory_bytes;
  if (e.verdict.has_gpu_memory) view.usable_gpu_bytes = e.verdict.usable_gpu_bytes;
  view.recommendation = recommendation_text(e);
  view.notes = e.model.notes;
  if (!e.activations.available) view.notes.push_back("activations not counted: " + e.activations.unavailable_reason);
  view.model_summary = est::format_count(e.model.total_params) + " parameters (" + e.model.name + ")";
  view.failed = est::estimate_failed(e);
  return view;
}

std::string estimator_rows_csv(const EstimatorView& view) {
  std::string csv =
      "plan,gpu_params_bytes,gpu_gradients_bytes,gpu_optimizer_bytes,gpu_activations_bytes,gpu_buffers_bytes,"
      "gpu_total_bytes,cpu_per_node_bytes,nvme_per_node_bytes,comm_bytes_per_gpu_per_step,comm_seconds_per_step,"
      "fits,recommended\n";
  for (const auto& r : view.rows) {
    csv += csv_field(r.plan);
    for (double v : {r.gpu_params, r.gpu_gradients, r.gpu_optimizer, r.gpu_activations, r.gpu_buffers, r.gpu_total,
                     r.cpu_per_node, r.nvme_per_node, r.comm_bytes_per_gpu})
      csv += "," + number(v);
    csv += "," + (r.comm_seconds ? number(*r.comm_seconds) : std::string());
    csv += "," + csv_field(r.fit_text);
    csv += std::string(",") + (r.recommended ? "yes" : "no") + "\n";
  }
  return csv;
}

std::string estimator_cli_command(const est::EstimateRequest& request) {
  std::vector<std::string> args = {"estimate"};
  for (auto& a : est::estimate_request_arguments(request)) args.push_back(std::move(a));
  return shell_command("shardscope", args);
}

}  // namespace shardscope::gui
