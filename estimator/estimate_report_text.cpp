// format_estimate_text: the human-readable half of estimate_report.hpp.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "estimator/estimate_report.hpp"

namespace shardscope::estimator {
namespace {

std::string plan_label(const ZeroPlan& p) {
  std::string label = "stage " + std::to_string(p.stage);
  if (p.offload_optimizer != OffloadDevice::kNone) label += " +opt:" + std::string(offload_name(p.offload_optimizer));
  if (p.offload_param != OffloadDevice::kNone) label += " +param:" + std::string(offload_name(p.offload_param));
  return label;
}

std::string num(double bytes, ByteUnit unit) {
  if (bytes == 0) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", bytes_in(bytes, unit));
  return buffer;
}

std::string cell(const std::string& text, int width, bool left = false) {
  if (static_cast<int>(text.size()) >= width) return text + " ";
  const std::string pad(static_cast<std::size_t>(width) - text.size(), ' ');
  return left ? text + pad : pad + text;
}

std::string fit_text(const PlanEstimate& p, const Estimate& e) {
  std::string text = plan_fit_text(p);
  if (e.verdict.recommended && *e.verdict.recommended == p.plan) text += " <- recommended";
  if (e.options.requested_plan && *e.options.requested_plan == p.plan) text += " (requested)";
  return text;
}

void write_header(std::ostringstream& out, const Estimate& e) {
  const ModelDescription& m = e.model;
  const EstimateOptions& o = e.options;
  char count[64];
  std::snprintf(count, sizeof count, "%.0f", m.total_params);
  out << "Model: " << m.name << ": " << format_count(m.total_params) << " parameters (" << count << ")";
  if (m.largest_layer_params > 0)
    out << ", largest layer " << format_count(m.largest_layer_params) << " (" << m.largest_layer_name << ")";
  out << "\n";
  for (const auto& [dtype, n] : m.params_by_dtype) out << "  " << dtype << ": " << format_count(n) << " parameters\n";
  for (const auto& note : m.notes) out << "  note: " << note << "\n";
  out << "Setup: " << o.cluster.nodes << " node(s) x " << o.cluster.gpus_per_node << " GPU(s)";
  if (!o.cluster.gpu_name.empty()) out << " " << o.cluster.gpu_name;
  if (o.cluster.gpu_memory_bytes) out << " (" << format_bytes(*o.cluster.gpu_memory_bytes, o.display_unit) << " each)";
  if (o.cluster.cpu_memory_bytes) out << ", " << format_bytes(*o.cluster.cpu_memory_bytes, o.display_unit) << " host memory per node";
  out << "\nTraining: " << precision_name(o.precision.precision)
      << (o.precision.precision == Precision::kFp32 ? "" : o.precision.low_precision_master ? " with 16-bit master weights" : " mixed precision with fp32 master weights")
      << (o.precision.low_precision_optimizer_states ? ", 16-bit optimizer states" : "") << ", " << o.precision.optimizer << " ("
      << o.precision.optimizer_states_per_param << " state(s)/param), micro-batch " << o.workload.micro_batch;
  if (e.activations.available) out << ", sequence " << e.activations.seq_len;
  out << ", gradient accumulation " << o.workload.grad_accum << ", activation checkpointing "
      << checkpointing_name(o.workload.checkpointing) << ", " << attention_name(o.workload.attention) << " attention"
      << (o.workload.dropout ? ", dropout masks counted" : "") << "\n";
  if (!e.activations.attention_note.empty()) out << "Note: " << e.activations.attention_note << "\n";
  out << "Sizes in " << unit_name(o.display_unit) << " (" << (o.display_unit == ByteUnit::kGB ? "1e9" : "2^30")
      << " bytes); per GPU unless marked per node.\n\n";
}

void write_table(std::ostringstream& out, const Estimate& e) {
  const ByteUnit u = e.options.display_unit;
  out << cell("plan", 30, true) << cell("GPU rule", 17, true) << cell("params", 8) << cell("grads", 8) << cell("master", 8)
      << cell("optim", 8) << cell("states", 8) << cell("buffers", 9) << cell("activ.", 8) << cell("GPU total", 11) << cell("device<=", 10) << cell("CPU/node", 10)
      << cell("NVMe/node", 11) << cell("comm/step", 11) << cell("comm time", 11) << "  fits\n";
  for (const auto& p : e.plans) {
    const ModelStateParts& g = p.states.gpu;
    out << cell(plan_label(p.plan), 30, true) << cell(p.states.gpu_rule, 17, true) << cell(num(g.params.bytes, u), 8)
        << cell(num(g.gradients.bytes, u), 8) << cell(num(g.master_params.bytes, u), 8)
        << cell(num(g.optimizer_states.bytes, u), 8) << cell(num(g.total(), u), 8) << cell(num(p.buffers.gpu_bytes, u), 9)
        << cell(e.activations.available ? num(e.activations.total_bytes, u) : "?", 8)
        << cell(num(p.gpu_total_bytes, u), 11) << cell(num(p.peak.device_upper_bytes, u), 10)
        << cell(num(p.cpu_total_bytes_per_node, u), 10)
        << cell(num(p.nvme_bytes_per_node, u), 11) << cell(num(p.communication.bytes_per_gpu, u), 11)
        << cell(format_seconds(p.communication.seconds_per_step), 11) << "  " << fit_text(p, e) << "\n";
  }
  if (!e.activations.available) out << "activ. ?: " << e.activations.unavailable_reason << "\n";
  out << "GPU rule: model states per GPU in bytes per parameter, N = " << e.options.cluster.total_gpus()
      << " GPUs (ZeRO paper arithmetic, no buffer factor). GPU total: the allocator's peak as the engine reaches it "
         "(+-" << static_cast<int>(std::lround(kSweepMeanAbsoluteError * 1000)) / 10.0 << " % on the held sweep); "
         "device<=: with the allocator's fragmentation and the CUDA context, the figure a plan's fit is judged on. "
         "comm: bytes sent per GPU per optimizer step; time at "
      << (e.plans.empty() ? std::string("?") : e.plans.front().communication.bandwidth_source) << ".\n\n";
}

void write_verdict(std::ostringstream& out, const Estimate& e) {
  out << "Verdict: " << e.verdict.summary << "\n";
  for (const auto& line : e.verdict.advice) out << "  - " << line << "\n";
  out << "\n";
}

void write_deepspeed(std::ostringstream& out, const Estimate& e) {
  const auto& c = e.options.cluster;
  out << "DeepSpeed's own estimators (model states only; host memory x additional_buffer_factor "
      << e.options.deepspeed_buffer_factor << "; their \"GB\" is 2^30 bytes, i.e. GiB):\n";
  out << "estimate_zero2_model_states_mem_needs_all_cold:\n"
      << format_deepspeed_table(e.deepspeed_zero2, e.model.total_params, std::nullopt, c.gpus_per_node, c.nodes);
  if (e.model.largest_layer_params > 0)
    out << "estimate_zero3_model_states_mem_needs_all_cold:\n"
        << format_deepspeed_table(e.deepspeed_zero3, e.model.total_params, e.model.largest_layer_params, c.gpus_per_node,
                                  c.nodes);
  else
    out << "(ZeRO-3 table needs the largest layer: give --largest-layer)\n";
}

void write_explain(std::ostringstream& out, const Estimate& e) {
  const ByteUnit u = e.options.display_unit;
  out << "\nHow each number is computed\n";
  out << "Activations: " << (e.activations.available ? e.activations.formula : e.activations.unavailable_reason) << "\n";
  for (const auto& p : e.plans) {
    out << "\n" << plan_name(p.plan) << ": GPU " << format_bytes(p.gpu_total_bytes, u) << " at the " << p.peak.phase
        << " phase; reserved " << format_bytes(p.peak.reserved_bytes, u) << ", device " << format_bytes(p.peak.device_bytes, u)
        << " (at most " << format_bytes(p.peak.device_upper_bytes, u) << ")\n";
    for (const auto& formula : p.peak.formulas) out << "  peak: " << formula << "\n";
    if (!p.peak.calibrated) out << "  caution: " << p.peak.calibration_note << "\n";
    const auto parts = [&](const char* where, const ModelStateParts& s) {
      for (const MemoryPart* part : {&s.params, &s.gradients, &s.master_params, &s.optimizer_states})
        if (part->bytes > 0) out << "  " << where << " " << format_bytes(part->bytes, u) << "  " << part->formula << "\n";
    };
    parts("GPU ", p.states.gpu);
    parts("CPU ", p.states.cpu_per_node);
    parts("NVMe", p.states.nvme_per_node);
    for (const auto& b : p.buffers.items)
      out << "  buf  " << format_bytes(b.bytes, u) << (b.counted ? "  " : "  (not added) ") << b.name << ": " << b.formula
          << "\n";
    for (const auto& formula : p.host.formulas) out << "  host " << formula << "\n";
    out << "  host peak per rank " << format_bytes(p.host.peak_bytes, u) << " (pinned " << format_bytes(p.host.pinned_bytes, u)
        << ", pageable " << format_bytes(p.host.pageable_bytes, u) << "); per node " << format_bytes(p.cpu_total_bytes_per_node, u)
        << "\n";
    for (const auto& c : p.communication.collectives)
      out << "  comm " << format_bytes(c.bytes_per_gpu, u) << "  " << c.op << ": " << c.formula << "\n";
  }
  out << "\nWhich arithmetic gives which number: the table uses the ZeRO paper's per-part arithmetic "
         "(2 + 2 + 4 + 8 = 16 B/param for mixed-precision Adam; stage 1: 4 + 12/N, stage 2: 2 + 14/N, stage 3: "
         "16/N), with no buffer factor. DeepSpeed's estimate_zero2 uses 2 + 18/N (it also counts a 4 B fp32 "
         "gradient partition) and multiplies host memory by the buffer factor; estimate_zero3 adds 4 x the "
         "largest layer. Figures quoted in guides (e.g. 63 GB and 31 GB for a 7B model at stages 1 and 2 on 8 "
         "GPUs) follow from neither: for 7B the formulas give 38.5 GB and 26.25 GB (GB = 1e9).\n";
}

}  // namespace

std::string format_seconds(const std::optional<double>& s) {
  if (!s) return "?";
  char buffer[32];
  if (*s < 1)
    std::snprintf(buffer, sizeof buffer, "%.1f ms", *s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.2f s", *s);
  return buffer;
}

std::string plan_fit_text(const PlanEstimate& p) {
  return !p.fits_gpu ? "-" : !*p.fits_gpu ? "no (GPU)" : (p.fits_cpu && !*p.fits_cpu) ? "no (CPU)" : "yes";
}

std::string format_estimate_text(const Estimate& e, bool explain) {
  std::ostringstream out;
  write_header(out, e);
  write_table(out, e);
  write_verdict(out, e);
  write_deepspeed(out, e);
  if (explain) write_explain(out, e);
  return out.str();
}

}  // namespace shardscope::estimator
