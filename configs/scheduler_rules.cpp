// The scheduler block (runtime/lr_schedules.py): DeepSpeed's five schedulers with their
// constructor defaults and required params; other names fall back to torch.optim.lr_scheduler.
#include <algorithm>

#include "configs/did_you_mean.hpp"
#include "configs/param_table.hpp"

namespace shardscope::configs {
namespace {

const std::vector<std::string> kTorchSchedulers = {
    "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
    "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau",
    "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"};

const std::vector<std::string> kDeepSpeedSchedulers = {"LRRangeTest", "OneCycle", "WarmupLR",
                                                       "WarmupDecayLR", "WarmupCosineLR"};

SchedulerKind scheduler_kind(const std::string& name) {
  if (name == "LRRangeTest") return SchedulerKind::kLRRangeTest;
  if (name == "OneCycle") return SchedulerKind::kOneCycle;
  if (name == "WarmupLR") return SchedulerKind::kWarmupLR;
  if (name == "WarmupDecayLR") return SchedulerKind::kWarmupDecayLR;
  if (name == "WarmupCosineLR") return SchedulerKind::kWarmupCosineLR;
  if (std::find(kTorchSchedulers.begin(), kTorchSchedulers.end(), name) != kTorchSchedulers.end())
    return SchedulerKind::kTorch;
  return SchedulerKind::kNone;
}

std::vector<ParamSpec> param_table(SchedulerKind kind) {
  const ParamSpec last{"last_batch_iteration", ParamType::kInt, "-1"};
  const ParamSpec warmup_steps{"warmup_num_steps", ParamType::kInt, "1000"};
  const ParamSpec warmup_type{"warmup_type", ParamType::kString, "\"log\""};
  switch (kind) {
    case SchedulerKind::kLRRangeTest:
      return {{"lr_range_test_min_lr", ParamType::kNumber, "0.001"},
              {"lr_range_test_step_size", ParamType::kInt, "2000"},
              {"lr_range_test_step_rate", ParamType::kNumber, "1.0"},
              {"lr_range_test_staircase", ParamType::kBool, "false"}, last};
    case SchedulerKind::kOneCycle:
      return {{"cycle_min_lr", ParamType::kNumber, "null", true},
              {"cycle_max_lr", ParamType::kNumber, "null", true},
              {"decay_lr_rate", ParamType::kNumber, "0.0"},
              {"cycle_first_step_size", ParamType::kInt, "2000"},
              {"cycle_second_step_size", ParamType::kInt, "null"},
              {"cycle_first_stair_count", ParamType::kInt, "0"},
              {"cycle_second_stair_count", ParamType::kInt, "null"},
              {"decay_step_size", ParamType::kInt, "0"},
              {"cycle_momentum", ParamType::kBool, "true"},
              {"cycle_min_mom", ParamType::kNumber, "0.8"},
              {"cycle_max_mom", ParamType::kNumber, "0.9"},
              {"decay_mom_rate", ParamType::kNumber, "0.0"}, last};
    case SchedulerKind::kWarmupLR:
      return {{"warmup_min_lr", ParamType::kNumber, "0.0"},
              {"warmup_max_lr", ParamType::kNumber, "null"}, warmup_steps, warmup_type, last};
    case SchedulerKind::kWarmupDecayLR:
      return {{"total_num_steps", ParamType::kInt, "null", true},
              {"warmup_min_lr", ParamType::kNumber, "0.0"},
              {"warmup_max_lr", ParamType::kNumber, "0.001"}, warmup_steps, warmup_type, last};
    case SchedulerKind::kWarmupCosineLR:
      return {{"total_num_steps", ParamType::kInt, "null", true},
              {"warmup_min_ratio", ParamType::kNumber, "0.0"}, warmup_steps,
              {"cos_min_ratio", ParamType::kNumber, "0.0001"}, warmup_type, last};
    default:
      return {};
  }
}

void check_warmup(ValidationContext& context, const nlohmann::json& params) {
  const auto& steps = params.value("warmup_num_steps", nlohmann::json());
  if (steps.is_number() && steps.get<double>() <= 0)
    context.error("out-of-range", "scheduler.params.warmup_num_steps",
                  "warmup_num_steps must be a positive integer, got " + steps.dump(),
                  "DeepSpeed uses max(2, warmup_num_steps); write at least 1");
  const auto& type = params.value("warmup_type", nlohmann::json());
  if (type.is_string() && type != "log" && type != "linear" && type != "auto")
    context.error("invalid-value", "scheduler.params.warmup_type",
                  "warmup_type is \"" + type.get<std::string>() + "\"; expected \"log\" or \"linear\"");
}

}  // namespace

void resolve_scheduler(ValidationContext& context) {
  if (!context.written("scheduler")) return;
  SchedulerConfig& scheduler = context.config.scheduler;
  scheduler.present = true;
  const ConfigNode* type = context.node_at("scheduler.type");
  if (!type || !type->is_string() || type->is_auto()) {
    if (!type) context.error("missing-param", "scheduler", "the scheduler block has no \"type\"",
                             "add e.g. \"type\": \"WarmupLR\"");
    resolve_params(context, "scheduler", "the scheduler", {}, false);
    return;
  }
  scheduler.type = type->string_value;
  scheduler.kind = scheduler_kind(type->string_value);
  if (scheduler.kind == SchedulerKind::kNone) {
    std::vector<std::string> names = kDeepSpeedSchedulers;
    names.insert(names.end(), kTorchSchedulers.begin(), kTorchSchedulers.end());
    const auto guess = closest_match(type->string_value, names);
    context.error("unknown-scheduler", "scheduler.type",
                  "DeepSpeed does not recognize LR scheduler " + type->string_value,
                  guess ? "did you mean \"" + *guess + "\"?"
                        : "use LRRangeTest, OneCycle, WarmupLR, WarmupDecayLR, WarmupCosineLR or a "
                          "torch.optim.lr_scheduler class name");
  }
  const auto table = param_table(scheduler.kind);
  resolve_params(context, "scheduler", type->string_value, table, !table.empty());
}

void check_scheduler_rules(ValidationContext& context) {
  const SchedulerConfig& scheduler = context.config.scheduler;
  if (!scheduler.present) return;
  const nlohmann::json& params = context.effective["scheduler"]["params"];
  const bool warmup = scheduler.kind == SchedulerKind::kWarmupLR ||
                      scheduler.kind == SchedulerKind::kWarmupDecayLR ||
                      scheduler.kind == SchedulerKind::kWarmupCosineLR;
  if (warmup) check_warmup(context, params);
  if (scheduler.kind == SchedulerKind::kWarmupCosineLR && scheduler.total_num_steps &&
      *scheduler.total_num_steps < scheduler.warmup_num_steps)
    context.warning("scheduler-total-below-warmup", "scheduler.params.total_num_steps",
                    "total_num_steps " + std::to_string(*scheduler.total_num_steps) +
                        " is below warmup_num_steps " + std::to_string(scheduler.warmup_num_steps) +
                        "; the cosine phase never starts",
                    "raise total_num_steps or lower warmup_num_steps");
  if (scheduler.kind == SchedulerKind::kWarmupDecayLR && scheduler.total_num_steps &&
      *scheduler.total_num_steps <= scheduler.warmup_num_steps)
    context.warning("scheduler-total-below-warmup", "scheduler.params.total_num_steps",
                    "total_num_steps " + std::to_string(*scheduler.total_num_steps) +
                        " is not above warmup_num_steps " + std::to_string(scheduler.warmup_num_steps) +
                        "; the decay phase never starts",
                    "raise total_num_steps or lower warmup_num_steps");
}

}  // namespace shardscope::configs
