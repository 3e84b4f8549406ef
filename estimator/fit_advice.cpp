#include "estimator/fit_advice.hpp"

#include "estimator/byte_units.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/plan_estimate.hpp"

namespace shardscope::estimator {
namespace {

// One change to try: how it alters the options, what it is called, its train flags.
struct Candidate {
  EstimateOptions options;
  std::string what;
  std::vector<std::string> flags;
};

double bound_of(const ModelDescription& model, const EstimateOptions& o) {
  const auto activations =
      estimate_activations(model, o.workload, o.precision.precision, o.cluster.gpus_per_node);
  return estimate_plan(model, *o.requested_plan, o, activations, std::nullopt, "").peak.device_upper_bytes;
}

void add_set(Candidate& c, const std::string& key, const std::string& value) {
  c.flags.insert(c.flags.end(), {"--set", key + "=" + value});
}

// The largest micro-batch below the current one that divides it, with the accumulation that keeps
// the global batch: halving first, since that is what a user tries.
std::vector<Candidate> smaller_micro_batches(const EstimateOptions& base) {
  std::vector<Candidate> out;
  const long long mb = base.workload.micro_batch, gas = base.workload.grad_accum;
  for (long long m = mb / 2; m >= 1; m /= 2) {
    if (mb % m != 0) continue;
    Candidate c{base, "", {}};
    c.options.workload.micro_batch = m;
    c.options.workload.grad_accum = gas * (mb / m);
    c.what = "micro-batch " + std::to_string(mb) + " -> " + std::to_string(m) + ", gradient accumulation " +
             std::to_string(gas) + " -> " + std::to_string(c.options.workload.grad_accum) + " (the same global batch)";
    add_set(c, "train_micro_batch_size_per_gpu", std::to_string(m));
    add_set(c, "gradient_accumulation_steps", std::to_string(c.options.workload.grad_accum));
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Candidate> with_checkpointing(const EstimateOptions& base) {
  if (base.workload.checkpointing == ActivationCheckpointing::kFull) return std::nullopt;
  Candidate c{base, "activation checkpointing on (each block's forward recomputed in backward)", {"--activation-checkpointing"}};
  c.options.workload.checkpointing = ActivationCheckpointing::kFull;
  return c;
}

std::vector<Candidate> higher_stages(const EstimateOptions& base) {
  std::vector<Candidate> out;
  for (int stage = base.requested_plan->stage + 1; stage <= 3; ++stage) {
    Candidate c{base, "ZeRO stage " + std::to_string(base.requested_plan->stage) + " -> " + std::to_string(stage), {}};
    c.options.requested_plan->stage = stage;
    add_set(c, "zero_optimization.stage", std::to_string(stage));
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Candidate> optimizer_offload(const EstimateOptions& base) {
  const ZeroPlan& p = *base.requested_plan;
  if (p.offload_optimizer != OffloadDevice::kNone) return std::nullopt;
  Candidate c{base, "optimizer states offloaded to the CPU", {}};
  if (p.stage == 0) {
    c.options.requested_plan->stage = 1;
    c.what = "ZeRO stage 0 -> 1 with the optimizer states offloaded to the CPU";
    add_set(c, "zero_optimization.stage", "1");
  }
  c.options.requested_plan->offload_optimizer = OffloadDevice::kCpu;
  add_set(c, "zero_optimization.offload_optimizer.device", "cpu");
  return c;
}

std::optional<Candidate> parameter_offload(const EstimateOptions& base) {
  const ZeroPlan& p = *base.requested_plan;
  if (p.offload_param != OffloadDevice::kNone) return std::nullopt;
  Candidate c{base, "ZeRO stage 3 with parameters and optimizer states offloaded to the CPU", {}};
  c.options.requested_plan->stage = 3;
  c.options.requested_plan->offload_param = OffloadDevice::kCpu;
  if (p.offload_optimizer == OffloadDevice::kNone) c.options.requested_plan->offload_optimizer = OffloadDevice::kCpu;
  add_set(c, "zero_optimization.stage", "3");
  add_set(c, "zero_optimization.offload_param.device", "cpu");
  if (p.offload_optimizer == OffloadDevice::kNone) add_set(c, "zero_optimization.offload_optimizer.device", "cpu");
  return c;
}

// The single changes, cheapest in throughput first.
std::vector<Candidate> single_changes(const EstimateOptions& base, bool has_activations) {
  std::vector<Candidate> out;
  if (has_activations) {
    for (auto& c : smaller_micro_batches(base)) out.push_back(std::move(c));
    if (auto c = with_checkpointing(base)) out.push_back(std::move(*c));
  }
  for (auto& c : higher_stages(base)) out.push_back(std::move(c));
  if (auto c = optimizer_offload(base)) out.push_back(std::move(*c));
  if (auto c = parameter_offload(base)) out.push_back(std::move(*c));
  return out;
}

// Changes stacked one on another (micro-batch 1, checkpointing, stage 3, offload), for a plan no
// single change rescues.
std::vector<Candidate> stacked_changes(const EstimateOptions& base, bool has_activations) {
  std::vector<Candidate> out;
  Candidate c{base, "", {}};
  auto stack = [&](const std::optional<Candidate>& next) {
    if (!next) return;
    c.options = next->options;
    c.what += (c.what.empty() ? "" : "; ") + next->what;
    c.flags.insert(c.flags.end(), next->flags.begin(), next->flags.end());
    out.push_back(c);
  };
  if (has_activations) {
    auto smaller = smaller_micro_batches(base);
    if (!smaller.empty()) stack(smaller.back());
    stack(with_checkpointing(c.options));
  }
  if (c.options.requested_plan->stage < 3) stack(higher_stages(c.options).back());
  stack(optimizer_offload(c.options));
  stack(parameter_offload(c.options));
  return out;
}

}  // namespace

FitAdvice advise_fit(const ModelDescription& model, const EstimateOptions& options, double capacity_bytes) {
  if (!options.requested_plan) throw EstimatorError("fit advice needs the plan that ran (a requested plan)");
  FitAdvice a;
  a.capacity_bytes = capacity_bytes;
  a.usable_bytes = capacity_bytes * (1.0 - options.cluster.margin);
  a.bound_bytes = bound_of(model, options);
  a.fits = a.bound_bytes <= a.usable_bytes;
  if (a.fits) return a;
  const bool has_activations = model.shape.has_value();
  for (const auto& list : {single_changes(options, has_activations), stacked_changes(options, has_activations)}) {
    for (const auto& c : list) {
      const double bound = bound_of(model, c.options);
      a.tried.push_back(c.what + ": " + format_bytes(bound, ByteUnit::kGiB));
      if (bound > a.usable_bytes) continue;
      a.change = FitChange{c.what, c.flags, bound};
      return a;
    }
  }
  return a;
}

}  // namespace shardscope::estimator
