#include "estimator/verdict.hpp"

#include <algorithm>
#include <cmath>

namespace shardscope::estimator {
namespace {

std::string plan_words(const ZeroPlan& p) {
  std::string words = "ZeRO stage " + std::to_string(p.stage);
  if (p.offload_optimizer == OffloadDevice::kNone && p.offload_param == OffloadDevice::kNone)
    return words + " without offload";
  words += " with offload_optimizer=" + std::string(offload_name(p.offload_optimizer));
  if (p.offload_param != OffloadDevice::kNone) words += " and offload_param=" + std::string(offload_name(p.offload_param));
  return words;
}

const PlanEstimate* find_plan(const std::vector<PlanEstimate>& plans, const ZeroPlan& plan) {
  for (const auto& p : plans)
    if (p.plan == plan) return &p;
  return nullptr;
}

const PlanEstimate* first_fitting(const std::vector<PlanEstimate>& plans) {
  for (const auto& p : plans)
    if (p.fits()) return &p;
  return nullptr;
}

void advise_offload(Verdict& v, const PlanEstimate& p, const EstimateOptions& o) {
  const ByteUnit u = o.display_unit;
  const bool offloads = p.plan.offload_optimizer != OffloadDevice::kNone || p.plan.offload_param != OffloadDevice::kNone;
  if (offloads && !o.cluster.cpu_memory_bytes)
    v.advice.push_back("It needs " + format_bytes(p.cpu_total_bytes_per_node, u) + " (±" +
                       format_bytes(p.cpu_total_bytes_per_node * p.host.expected_error, u) +
                       ") of host memory per node, " + format_bytes(p.host.pinned_bytes * o.cluster.gpus_per_node, u) +
                       " of it pinned; give --cpu-mem to check that it is there.");
  if (p.nvme_bytes_per_node > 0)
    v.advice.push_back("It needs " + format_bytes(p.nvme_bytes_per_node, u) +
                       " of NVMe per node at the offload nvme_path; expect steps several times slower than CPU offload.");
}

void advise_requested(Verdict& v, const std::vector<PlanEstimate>& plans, const EstimateOptions& o) {
  if (!o.requested_plan) return;
  const PlanEstimate* asked = find_plan(plans, *o.requested_plan);
  if (!asked) return;
  const ByteUnit u = o.display_unit;
  v.requested_fits = asked->fits();
  if (!asked->fits()) {
    std::string line = "The requested plan (" + plan_words(asked->plan) + ") needs " +
                       format_bytes(asked->gpu_total_bytes, u) + " per GPU, over the " +
                       format_bytes(v.usable_gpu_bytes, u) + " usable";
    if (asked->fits_cpu && !*asked->fits_cpu)
      line = "The requested plan (" + plan_words(asked->plan) + ") needs " +
             format_bytes(asked->cpu_total_bytes_per_node, u) + " of host memory per node, over the " +
             format_bytes(v.usable_cpu_bytes.value_or(0), u) + " usable";
    if (v.recommended)
      line += ": switch to " + plan_words(*v.recommended) + " (zero_optimization.stage = " +
              std::to_string(v.recommended->stage) + ").";
    v.advice.push_back(line + (v.recommended ? "" : "."));
  } else if (v.recommended && !(*v.recommended == asked->plan)) {
    v.advice.push_back("The requested plan fits; " + plan_words(*v.recommended) +
                       " fits too and is higher on the ladder (less communication or no offload traffic).");
  }
}

void advise_nothing_fits(Verdict& v, const std::vector<PlanEstimate>& plans, const std::vector<PlanEstimate>& relaxed,
                         const EstimateOptions& o, double total_params, const ActivationEstimate& activations) {
  const ByteUnit u = o.display_unit;
  const auto smallest = std::min_element(plans.begin(), plans.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
    return a.gpu_total_bytes < b.gpu_total_bytes;
  });
  v.summary = "Nothing fits on " + std::to_string(o.cluster.total_gpus()) + " GPU(s) of " +
              format_bytes(*o.cluster.gpu_memory_bytes, u) + ": the smallest footprint is " + plan_words(smallest->plan) +
              " at " + format_bytes(smallest->gpu_total_bytes, u) + " per GPU, over the " +
              format_bytes(v.usable_gpu_bytes, u) + " usable.";
  if (smallest->peak.phase == "initialisation")
    v.advice.push_back("Its peak is the start of the run: the engine builds the model whole in fp32 on each GPU "
                       "before it shards or offloads it (" + format_bytes(smallest->peak.init_phase_bytes, u) +
                       "); ZeRO stage 3 on several GPUs builds it partitioned instead.");
  if (activations.available)
    v.advice.push_back("Activations take " + format_bytes(activations.total_bytes, u) + " per GPU at micro-batch " +
                       std::to_string(activations.micro_batch) + " and sequence length " +
                       std::to_string(activations.seq_len) + "; ZeRO does not shard them.");
  if (const PlanEstimate* r = first_fitting(relaxed))
    v.advice.push_back("With full activation checkpointing (--checkpointing full; gradient_checkpointing in the "
                       "model code) " + plan_words(r->plan) + " fits at " + format_bytes(r->gpu_total_bytes, u) +
                       " per GPU.");
  // The first plan on the ladder where a smaller micro-batch fits.
  for (const auto& p : plans) {
    if (!p.max_micro_batch || *p.max_micro_batch <= 0 || !p.fits_cpu.value_or(true)) continue;
    v.advice.push_back("A micro-batch of " + std::to_string(*p.max_micro_batch) + " fits with " + plan_words(p.plan) +
                       " (train_micro_batch_size_per_gpu; raise gradient_accumulation_steps to keep the global batch).");
    break;
  }
  // Stage 3 without offload shards all model states: N >= states / (usable - what is not sharded).
  const PlanEstimate* stage3 = find_plan(plans, ZeroPlan{3, OffloadDevice::kNone, OffloadDevice::kNone});
  if (stage3) {
    const double fixed = stage3->buffers.gpu_bytes + (activations.available ? activations.total_bytes : 0);
    const double room = v.usable_gpu_bytes - fixed;
    if (room <= 0) {
      v.advice.push_back("Buffers and activations alone (" + format_bytes(fixed, u) +
                         ") exceed the usable GPU memory; more GPUs will not help without smaller activations.");
    } else {
      const double gpus = std::ceil(stage3->states.per_param.total() * total_params / room);
      const double nodes = std::ceil(gpus / o.cluster.gpus_per_node);
      v.advice.push_back("ZeRO stage 3 without offload needs at least " + whole_number(gpus) +
                         " GPUs of this size (" + whole_number(nodes) + " node(s) of " +
                         std::to_string(o.cluster.gpus_per_node) + ").");
    }
  }
}

void advise_missing_activations(Verdict& v, const ActivationEstimate& activations) {
  if (!activations.available)
    v.advice.push_back("Without a model shape activations are not counted, and they often dominate: give "
                       "--hf-config or --layers/--hidden/--heads/--vocab/--seq-len for a complete verdict.");
}

}  // namespace

const std::vector<ZeroPlan>& ladder_plans() {
  using D = OffloadDevice;
  static const std::vector<ZeroPlan> plans = {
      {0, D::kNone, D::kNone}, {1, D::kNone, D::kNone}, {2, D::kNone, D::kNone}, {3, D::kNone, D::kNone},
      {1, D::kCpu, D::kNone},  {2, D::kCpu, D::kNone},  {3, D::kCpu, D::kNone},  {3, D::kCpu, D::kCpu},
      {3, D::kNvme, D::kCpu},  {3, D::kNvme, D::kNvme},
  };
  return plans;
}

Verdict decide_verdict(const std::vector<PlanEstimate>& plans, const std::vector<PlanEstimate>& relaxed,
                       const EstimateOptions& options, double total_params, const ActivationEstimate& activations) {
  Verdict v;
  const ClusterSettings& c = options.cluster;
  const ByteUnit u = options.display_unit;
  if (!c.gpu_memory_bytes) {
    v.summary = "No GPU memory given: pass --gpu-mem 80GiB or --gpu H100-80GB to see which plans fit.";
    return v;
  }
  v.has_gpu_memory = true;
  v.usable_gpu_bytes = *c.gpu_memory_bytes * (1 - c.margin);
  if (c.cpu_memory_bytes) v.usable_cpu_bytes = *c.cpu_memory_bytes * (1 - c.margin);
  const PlanEstimate* best = first_fitting(plans);
  if (!best) {
    advise_nothing_fits(v, plans, relaxed, options, total_params, activations);
    advise_requested(v, plans, options);
    advise_missing_activations(v, activations);
    return v;
  }
  v.recommended = best->plan;
  const int margin_percent = static_cast<int>(std::lround(c.margin * 100));
  const PeakMemoryEstimate& peak = best->peak;
  v.summary = "Use " + plan_words(best->plan) + ": it fits with " +
              format_bytes(v.usable_gpu_bytes - peak.device_upper_bytes, u) + " headroom (+-" +
              format_bytes(peak.expected_error * peak.allocated_bytes, u) + "): " + format_bytes(best->gpu_total_bytes, u) +
              " allocated at the peak, " + format_bytes(peak.device_bytes, u) + " on the device (at most " +
              format_bytes(peak.device_upper_bytes, u) + "), of " + format_bytes(v.usable_gpu_bytes, u) + " usable (" +
              format_bytes(*c.gpu_memory_bytes, u) + " less a " + std::to_string(margin_percent) + "% margin).";
  if (!peak.calibrated) v.advice.push_back(peak.calibration_note + ".");
  for (const auto& p : plans) {
    if (&p == best) break;
    if (p.plan.offload_optimizer != OffloadDevice::kNone) continue;
    v.advice.push_back(plan_words(p.plan) + " would need " + format_bytes(p.gpu_total_bytes, u) + " per GPU.");
  }
  if (best->max_micro_batch)
    v.advice.push_back("Largest micro-batch that fits with this plan: " + std::to_string(*best->max_micro_batch) + ".");
  advise_offload(v, *best, options);
  advise_requested(v, plans, options);
  advise_missing_activations(v, activations);
  return v;
}

}  // namespace shardscope::estimator
