#include "app/gui/estimator_model.hpp"

#include <sstream>

#include "estimator/byte_units.hpp"
#include "estimator/config_adapter.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/gpu_catalog.hpp"
#include "estimator/hf_config.hpp"
#include "estimator/safetensors_header.hpp"

namespace shardscope::gui {
namespace {

namespace est = shardscope::estimator;

std::string short_label(const est::ZeroPlan& plan) {
  std::string label = "Z" + std::to_string(plan.stage);
  if (plan.offload_optimizer != est::OffloadDevice::kNone)
    label += std::string(" opt:") + est::offload_name(plan.offload_optimizer);
  if (plan.offload_param != est::OffloadDevice::kNone)
    label += std::string(" par:") + est::offload_name(plan.offload_param);
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
  row.gpu_buffers = p.buffers.gpu_bytes;
  row.gpu_total = p.gpu_total_bytes;
  row.cpu_per_node = p.cpu_total_bytes_per_node;
  row.nvme_per_node = p.nvme_bytes_per_node;
  row.comm_bytes_per_gpu = p.communication.bytes_per_gpu;
  row.comm_seconds = p.communication.seconds_per_step;
  if (p.fits_gpu) row.fits = p.fits();
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

/// Sizes as the CLI reads them: "80GiB" when whole GiB, else plain bytes.
std::string size_flag(double bytes) {
  const double gib = bytes / est::kGiB;
  return gib == static_cast<double>(static_cast<long long>(gib)) ? std::to_string(static_cast<long long>(gib)) + "GiB"
                                                                 : number(bytes);
}

}  // namespace

est::ModelDescription describe_model(const EstimatorInputs& in) {
  switch (in.model_kind) {
    case ModelInputKind::kParamCount:
      if (in.params <= 0) throw est::EstimatorError("the parameter count must be positive");
      return est::describe_param_count(in.params, in.largest_layer);
    case ModelInputKind::kShape: {
      est::TransformerShape shape = in.shape;
      shape.seq_len = in.seq_len;
      if (shape.seq_len <= 0) throw est::EstimatorError("a transformer shape needs a sequence length");
      return est::describe_transformer(shape, "transformer shape");
    }
    case ModelInputKind::kHfConfig: {
      if (in.hf_config_path.empty()) throw est::EstimatorError("choose a Hugging Face config.json");
      est::HfConfigOptions options;
      options.seq_len = in.seq_len;
      return est::describe_hf_config_file(in.hf_config_path, options);
    }
    case ModelInputKind::kSafetensors: {
      if (in.safetensors_path.empty()) throw est::EstimatorError("choose a .safetensors file or its index.json");
      est::ModelDescription counted = est::describe_safetensors(in.safetensors_path);
      if (in.hf_config_path.empty()) return counted;
      est::HfConfigOptions options;
      options.seq_len = in.seq_len;
      return est::with_shape_of(counted, est::describe_hf_config_file(in.hf_config_path, options));
    }
  }
  throw est::EstimatorError("unknown model input");
}

est::EstimateOptions estimate_options(const EstimatorInputs& in, std::vector<std::string>& notes) {
  est::EstimateOptions o;
  if (in.gpus_per_node <= 0 || in.nodes <= 0) throw est::EstimatorError("GPUs per node and nodes must be positive");
  o.cluster.gpus_per_node = in.gpus_per_node;
  o.cluster.nodes = in.nodes;
  // Same order as the CLI: the config first, then the page's fields override it.
  if (!in.deepspeed_config_path.empty())
    for (const auto& note : est::apply_config_file(in.deepspeed_config_path, o)) notes.push_back("config: " + note);
  if (!in.gpu_name.empty()) {
    const est::GpuSpec gpu = est::require_gpu(in.gpu_name, "GPU");
    o.cluster.gpu_name = gpu.name;
    o.cluster.gpu_memory_bytes = gpu.memory_bytes;
  } else if (in.custom_gpu_memory_bytes > 0) {
    o.cluster.gpu_memory_bytes = in.custom_gpu_memory_bytes;
  }
  if (in.cpu_memory_bytes > 0) o.cluster.cpu_memory_bytes = in.cpu_memory_bytes;
  if (in.micro_batch <= 0) throw est::EstimatorError("the micro-batch must be positive");
  o.workload.micro_batch = in.micro_batch;
  if (in.seq_len > 0) o.workload.seq_len = in.seq_len;
  return o;
}

EstimatorView compute_estimator_view(const EstimatorInputs& inputs) {
  EstimatorView view;
  try {
    std::vector<std::string> notes;
    const est::EstimateOptions options = estimate_options(inputs, notes);
    est::ModelDescription model = describe_model(inputs);
    for (const auto& note : notes) model.notes.push_back(note);
    view.estimate = est::run_estimate(model, options);
  } catch (const std::exception& error) {
    view.error = error.what();
    return view;
  }
  const est::Estimate& e = *view.estimate;
  for (const auto& plan : e.plans) view.rows.push_back(make_row(plan, e));
  view.gpu_memory_bytes = e.options.cluster.gpu_memory_bytes;
  view.usable_gpu_bytes = e.verdict.usable_gpu_bytes;
  view.recommendation = recommendation_text(e);
  view.notes = e.model.notes;
  if (!e.activations.available) view.notes.push_back("activations not counted: " + e.activations.unavailable_reason);
  view.model_summary = est::format_count(e.model.total_params) + " parameters (" + e.model.name + ")";
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
    csv += "," + (r.fits ? std::string(*r.fits ? "yes" : "no") : std::string());
    csv += std::string(",") + (r.recommended ? "yes" : "no") + "\n";
  }
  return csv;
}

std::string estimator_cli_command(const EstimatorInputs& in) {
  std::string cmd = "shardscope estimate";
  auto add = [&cmd](const std::string& flag, const std::string& value) {
    const bool quote = value.find(' ') != std::string::npos;
    cmd += " --" + flag + " " + (quote ? "'" + value + "'" : value);
  };
  switch (in.model_kind) {
    case ModelInputKind::kParamCount:
      add("params", number(in.params));
      if (in.largest_layer > 0) add("largest-layer", number(in.largest_layer));
      break;
    case ModelInputKind::kShape: {
      const auto& s = in.shape;
      add("layout", est::layout_name(s.layout));
      add("layers", std::to_string(s.layers));
      add("hidden", std::to_string(s.hidden));
      add("heads", std::to_string(s.heads));
      if (s.kv_heads > 0) add("kv-heads", std::to_string(s.kv_heads));
      if (s.ffn > 0) add("ffn", std::to_string(s.ffn));
      add("vocab", std::to_string(s.vocab));
      break;
    }
    case ModelInputKind::kSafetensors:
      add("safetensors", in.safetensors_path);
      if (!in.hf_config_path.empty()) add("hf-config", in.hf_config_path);
      break;
    case ModelInputKind::kHfConfig:
      add("hf-config", in.hf_config_path);
      break;
  }
  if (!in.deepspeed_config_path.empty()) add("config", in.deepspeed_config_path);
  add("gpus-per-node", std::to_string(in.gpus_per_node));
  add("nodes", std::to_string(in.nodes));
  if (!in.gpu_name.empty()) add("gpu", in.gpu_name);
  else if (in.custom_gpu_memory_bytes > 0) add("gpu-mem", size_flag(in.custom_gpu_memory_bytes));
  if (in.cpu_memory_bytes > 0) add("cpu-mem", size_flag(in.cpu_memory_bytes));
  add("micro-batch", std::to_string(in.micro_batch));
  if (in.seq_len > 0) add("seq-len", std::to_string(in.seq_len));
  return cmd;
}

}  // namespace shardscope::gui
