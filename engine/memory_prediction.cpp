// predict_memory: the run's model spec becomes the estimator's ModelDescription (the decoders'
// TransformerShape is the estimator's own, so parameter counts agree), the resolved config
// becomes EstimateOptions through config_adapter, and the requested plan's row of run_estimate
// is the prediction. Only the MLP, which has no transformer shape, has its activations counted
// here.
#include "engine/memory_prediction.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "engine/models/model_error.hpp"
#include "estimator/byte_units.hpp"
#include "estimator/config_adapter.hpp"
#include "estimator/estimate.hpp"
#include "sessions/session_reader.hpp"

namespace shardscope::engine {
namespace {

namespace est = estimator;
constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;

std::vector<std::int64_t> mlp_dims(const MlpOptions& o) {
  std::vector<std::int64_t> dims{o.input_dim};
  dims.insert(dims.end(), o.hidden_dims.begin(), o.hidden_dims.end());
  dims.push_back(o.output_dim);
  return dims;
}

est::ModelDescription describe_spec(const ModelSpec& spec) {
  if (spec.kind != ModelKind::kMlp)
    return est::describe_transformer(spec.transformer.shape, std::string("built-in ") + model_kind_name(spec.kind));
  // DeepSpeed's largest_layer_params: the largest nn.Linear (weight + bias).
  const auto dims = mlp_dims(spec.mlp);
  double total = 0, largest = 0;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
    const double layer = static_cast<double>(dims[i] * dims[i + 1] + dims[i + 1]);
    total += layer;
    largest = std::max(largest, layer);
  }
  est::ModelDescription model = est::describe_param_count(total, largest);
  model.name = "built-in mlp";
  return model;
}

// The MLP's saved tensors: each Linear keeps its input, each ReLU its output, plus the output
// the MSE loss reads, in the training precision.
double mlp_activation_bytes(const MlpOptions& o, std::int64_t micro_batch, est::Precision precision, std::string& formula) {
  const auto dims = mlp_dims(o);
  double elements = static_cast<double>(dims.front() + dims.back());
  for (std::size_t i = 1; i + 1 < dims.size(); ++i) elements += 2.0 * static_cast<double>(dims[i]);
  const double bytes_per = precision == est::Precision::kFp32 ? 4 : 2;
  formula = "b x (input + 2 x sum(hidden) + output) x " + std::to_string(static_cast<int>(bytes_per)) + " B = " +
            std::to_string(micro_batch) + " x " + est::format_count(elements) + " x " + std::to_string(static_cast<int>(bytes_per));
  return static_cast<double>(micro_batch) * elements * bytes_per;
}

est::EstimateOptions estimate_options(const configs::ResolvedConfig& config, const ModelSpec& spec, int world_size,
                                      bool checkpointing, std::vector<std::string>& notes) {
  est::EstimateOptions o;
  o.cluster.gpus_per_node = world_size;  // per-GPU numbers depend only on the total rank count
  o.cluster.nodes = 1;
  notes = est::apply_resolved_config(config, o);
  o.workload.seq_len = spec.kind == ModelKind::kMlp ? 0 : spec.transformer.shape.seq_len;
  o.workload.checkpointing = checkpointing ? est::ActivationCheckpointing::kFull : est::ActivationCheckpointing::kNone;
  // The built-in decoders call scaled_dot_product_attention (causal, no dropout): the estimator's
  // defaults (fused attention, no dropout masks) are theirs.
  o.workload.attention = est::AttentionKernel::kFused;
  o.workload.dropout = false;
  return o;
}

std::string gib_3_decimals(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GiB", bytes / kGiB);
  return text;
}

std::string explain(const est::Estimate& e, const est::PlanEstimate& p, const ModelSpec& spec,
                    const std::string& activation_formula, const std::vector<std::string>& notes) {
  const auto& o = e.options;
  std::string out = "estimator arithmetic (as `shardscope estimate`) for " + est::plan_name(p.plan) + ", " +
                    est::precision_name(o.precision.precision) + ", " + std::to_string(o.cluster.total_gpus()) +
                    " rank(s), micro-batch " + std::to_string(o.workload.micro_batch) +
                    (spec.kind == ModelKind::kMlp ? "" : " x " + std::to_string(o.workload.seq_len) + " tokens") +
                    ", " + est::format_count(e.model.total_params) + " parameters:\n";
  out += "  model states: " + gib_3_decimals(p.states.gpu.total()) + " (" + p.states.gpu_rule + ")\n";
  for (const auto* part : {&p.states.gpu.params, &p.states.gpu.gradients, &p.states.gpu.master_params, &p.states.gpu.optimizer_states})
    if (part->bytes > 0) out += "    " + part->formula + "\n";
  out += "  buffers: " + gib_3_decimals(p.peak.buffers_bytes) + "\n";
  for (const auto& b : p.buffers.items)
    if (b.on_gpu && b.counted) out += "    " + b.name + " (" + b.config_key + "): " + b.formula + "\n";
  out += "  activations (activation checkpointing: " + std::string(est::checkpointing_name(o.workload.checkpointing)) +
         "): " + gib_3_decimals(e.activations.available ? e.activations.total_bytes : 0) + ", " + activation_formula + "\n";
  for (const auto& formula : p.peak.formulas) out += "  peak: " + formula + "\n";
  if (spec.kind != ModelKind::kMlp) out += "  assumed: fused attention (scaled_dot_product_attention keeps no s x s scores), no dropout\n";
  if (!e.activations.attention_note.empty()) out += "  note: " + e.activations.attention_note + "\n";
  for (const auto& note : notes) out += "  note: " + note + "\n";
  return out;
}

const est::PlanEstimate& requested_row(const est::Estimate& e) {
  for (const auto& p : e.plans)
    if (e.options.requested_plan && p.plan == *e.options.requested_plan) return p;
  throw std::logic_error("memory prediction: the estimate has no row for the config's ZeRO plan");
}

}  // namespace

est::ModelDescription run_model_description(const ModelSpec& spec) { return describe_spec(spec); }

est::EstimateOptions run_estimate_options(const configs::ResolvedConfig& config, const ModelSpec& spec, int world_size,
                                          bool activation_checkpointing) {
  std::vector<std::string> notes;
  return estimate_options(config, spec, world_size, activation_checkpointing, notes);
}

MemoryPrediction predict_memory(const configs::ResolvedConfig& config, const ModelSpec& spec, int world_size,
                                bool activation_checkpointing) {
  if (world_size <= 0) throw std::invalid_argument("memory prediction: world size must be positive, got " + std::to_string(world_size));
  validate_model_spec(spec);
  std::vector<std::string> notes;
  const est::EstimateOptions options = estimate_options(config, spec, world_size, activation_checkpointing, notes);
  const est::Estimate e = est::run_estimate(describe_spec(spec), options);
  const est::PlanEstimate& plan = requested_row(e);
  MemoryPrediction m;
  m.model_states_bytes = plan.peak.resident_states_bytes;
  m.buffers_bytes = plan.peak.buffers_bytes;
  std::string activation_formula;
  if (e.activations.available) {
    m.activations_bytes = e.activations.total_bytes;
    activation_formula = e.activations.formula;
  } else {
    m.activations_bytes = mlp_activation_bytes(spec.mlp, options.workload.micro_batch, options.precision.precision, activation_formula);
  }
  // gpu_total_bytes already holds the activations when the estimator could count them.
  m.total_bytes = plan.gpu_total_bytes + (e.activations.available ? 0 : m.activations_bytes);
  const double grown = plan.gpu_total_bytes > 0 ? m.total_bytes / plan.gpu_total_bytes : 1;  // the MLP's activations
  m.reserved_bytes = plan.peak.reserved_bytes * grown;
  m.device_bytes = m.reserved_bytes + (plan.peak.device_bytes - plan.peak.reserved_bytes);
  m.expected_error = plan.peak.expected_error;
  m.host_peak_bytes = plan.host.peak_bytes;
  m.host_pinned_bytes = plan.host.pinned_bytes;
  m.nvme_bytes = plan.host.nvme_bytes;
  m.explanation = explain(e, plan, spec, activation_formula, notes);
  return m;
}

std::string measured_vs_predicted_text(const MemoryPrediction& p, std::int64_t measured_peak_bytes) {
  const double measured = static_cast<double>(measured_peak_bytes), diff = measured - p.total_bytes;
  auto row = [](const char* label, const std::string& value) {
    char text[128];
    std::snprintf(text, sizeof text, "  %-22s %s\n", label, value.c_str());
    return std::string(text);
  };
  // GiB for the comparison, MiB beside it so small (CPU, test-sized) runs still read.
  auto size = [](double bytes) {
    char text[64];
    std::snprintf(text, sizeof text, "%10.3f GiB  %12.1f MiB", bytes / kGiB, bytes / kMiB);
    return std::string(text);
  };
  std::string percent = "n/a (nothing predicted)";
  if (p.total_bytes > 0) {
    char text[48];
    std::snprintf(text, sizeof text, "%+.1f%% of predicted", 100.0 * diff / p.total_bytes);
    percent = text;
  }
  char signed_diff[64];
  std::snprintf(signed_diff, sizeof signed_diff, "%+10.3f GiB  %+12.1f MiB", diff / kGiB, diff / kMiB);
  return "Memory per GPU: estimator prediction vs measured peak\n" + row("model states", size(p.model_states_bytes)) +
         row("buffers", size(p.buffers_bytes)) + row("activations", size(p.activations_bytes)) +
         row("predicted total", size(p.total_bytes)) + row("measured peak", size(measured)) +
         row("difference", std::string(signed_diff) + "  (" + percent + ")");
}

namespace {

// "+1.2 %" of measured against predicted; "-" when either is missing.
std::string percent_of(double measured, double predicted) {
  if (predicted <= 0 || measured <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100.0 * (measured - predicted) / predicted);
  return text;
}

std::string peak_row(const char* label, double predicted, std::int64_t measured) {
  char text[160];
  std::snprintf(text, sizeof text, "  %-16s %10.3f GiB %10.3f GiB  %s\n", label, predicted / kGiB,
                static_cast<double>(measured) / kGiB, percent_of(static_cast<double>(measured), predicted).c_str());
  return text;
}

}  // namespace

std::string measured_vs_predicted_text(const MemoryPrediction& p, const MeasuredPeaks& peaks) {
  std::string out = measured_vs_predicted_text(p, peaks.allocated_peak);
  if (p.reserved_bytes <= 0 && p.device_bytes <= 0) return out;
  out += "\n  peak             predicted      measured  measured vs predicted\n";
  out += peak_row("allocated", p.total_bytes, peaks.allocated_peak);
  if (p.reserved_bytes > 0) out += peak_row("reserved", p.reserved_bytes, peaks.reserved_peak);
  if (p.device_bytes > 0 && peaks.device_peak > 0) out += peak_row("device", p.device_bytes, peaks.device_peak);
  if (p.host_peak_bytes > 0 && peaks.host_peak_rss > 0) out += peak_row("host (RSS)", p.host_peak_bytes, peaks.host_peak_rss);
  return out;
}

std::string model_states_vs_held_text(const MemoryPrediction& p, std::int64_t held_bytes) {
  char text[400];
  std::snprintf(text, sizeof text,
                "Memory of this rank: the estimator's model states vs the engine's tensors (a CPU run has no\n"
                "allocator peak to set beside the predicted GPU total, so activations and buffers are left out)\n"
                "  model states predicted %10.3f GiB  %12.1f MiB\n"
                "  tensors held           %10.3f GiB  %12.1f MiB  (%s)",
                p.model_states_bytes / kGiB, p.model_states_bytes / kMiB, static_cast<double>(held_bytes) / kGiB,
                static_cast<double>(held_bytes) / kMiB,
                (percent_of(static_cast<double>(held_bytes), p.model_states_bytes) + " of predicted").c_str());
  return text;
}

std::string measured_peaks_record(const MeasuredPeaks& p) {
  return "[memory measured] allocated_peak_bytes=" + std::to_string(p.allocated_peak) +
         " reserved_peak_bytes=" + std::to_string(p.reserved_peak) + " device_peak_bytes=" +
         std::to_string(p.device_peak) + " host_peak_rss_bytes=" + std::to_string(p.host_peak_rss);
}

namespace {

constexpr const char* kRecordTag = "[memory prediction]";

}  // namespace

std::string memory_prediction_record(const MemoryPrediction& p) {
  std::ostringstream out;
  out << kRecordTag << " model_states_bytes=" << static_cast<std::int64_t>(p.model_states_bytes)
      << " buffers_bytes=" << static_cast<std::int64_t>(p.buffers_bytes)
      << " activations_bytes=" << static_cast<std::int64_t>(p.activations_bytes)
      << " total_bytes=" << static_cast<std::int64_t>(p.total_bytes)
      << " reserved_bytes=" << static_cast<std::int64_t>(p.reserved_bytes)
      << " device_bytes=" << static_cast<std::int64_t>(p.device_bytes);
  return out.str();
}

std::optional<MemoryPrediction> parse_memory_prediction_record(const std::string& line) {
  const auto at = line.find(kRecordTag);  // a launcher may prefix what it relays
  if (at == std::string::npos) return std::nullopt;
  std::istringstream in(line.substr(at + std::char_traits<char>::length(kRecordTag)));
  MemoryPrediction p;
  int found = 0;
  for (std::string token; in >> token;) {
    const auto eq = token.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = token.substr(0, eq);
    double* field = key == "model_states_bytes"  ? &p.model_states_bytes
                    : key == "buffers_bytes"     ? &p.buffers_bytes
                    : key == "activations_bytes" ? &p.activations_bytes
                    : key == "total_bytes"       ? &p.total_bytes
                    : key == "reserved_bytes"    ? &p.reserved_bytes
                    : key == "device_bytes"      ? &p.device_bytes
                                                 : nullptr;
    if (!field) continue;  // a later version's extra field
    try {
      *field = static_cast<double>(std::stoll(token.substr(eq + 1)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    ++found;
  }
  if (found < 4) return std::nullopt;
  return p;
}

std::optional<SessionMemoryReport> session_memory_report(sessions::Store& store, std::int64_t session_id,
                                                         std::int64_t warmup_steps) {
  std::optional<MemoryPrediction> prediction;
  for (const auto& log : sessions::load_logs(store, session_id, 0))
    if (auto p = parse_memory_prediction_record(log.text)) prediction = p;
  if (!prediction) return std::nullopt;
  SessionMemoryReport report{*prediction, std::nullopt, std::nullopt};
  std::vector<std::int64_t> step_end;
  for (const auto& step : sessions::load_steps(store, session_id, 0)) {
    if (step.mem_peak_bytes)
      report.measured_peak_bytes = std::max(report.measured_peak_bytes.value_or(0), *step.mem_peak_bytes);
    if (step.step > warmup_steps && step.mem_allocated_bytes) step_end.push_back(*step.mem_allocated_bytes);
  }
  if (!step_end.empty()) {
    std::nth_element(step_end.begin(), step_end.begin() + static_cast<std::ptrdiff_t>(step_end.size() / 2), step_end.end());
    report.measured_step_end_bytes = step_end[step_end.size() / 2];
  }
  return report;
}

std::string session_memory_report_text(const SessionMemoryReport& r) {
  const auto& p = r.prediction;
  char line[200];
  std::string out = "memory per GPU, rank 0: the estimator's prediction beside the measured\n";
  std::snprintf(line, sizeof line, "  %-14s %14s %14s %10s\n", "part", "predicted", "measured", "diff");
  out += line;
  const auto row = [&](const char* part, double predicted, std::optional<std::int64_t> measured) {
    std::snprintf(line, sizeof line, "  %-14s %14s %14s %10s\n", part, gib_3_decimals(predicted).c_str(),
                  measured ? gib_3_decimals(static_cast<double>(*measured)).c_str() : "",
                  measured ? percent_of(static_cast<double>(*measured), predicted).c_str() : "");
    out += line;
  };
  row("model states", p.model_states_bytes, r.measured_step_end_bytes);
  row("buffers", p.buffers_bytes, std::nullopt);
  row("activations", p.activations_bytes, std::nullopt);
  row("total", p.total_bytes, r.measured_peak_bytes);
  out += "  (measured model states: bytes allocated at the end of a step, median after the warm-up; measured total: "
         "the peak; docs/estimator.md explains the differences)\n";
  return out;
}

}  // namespace shardscope::engine
