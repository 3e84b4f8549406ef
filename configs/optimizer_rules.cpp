// The optimizer block as DeepSpeed's engine reads it (_configure_basic_optimizer and
// _configure_zero_optimizer): native names matched case-insensitively, other names only if
// torch.optim has them; constructor defaults; the errors the engine raises at start-up.
#include <algorithm>
#include <cctype>

#include "configs/ascii_case.hpp"
#include "configs/did_you_mean.hpp"
#include "configs/param_table.hpp"

namespace shardscope::configs {
namespace {

const std::vector<std::string> kTorchOptimizers = {
    "ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
    "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"};

struct NativeOptimizer {
  const char* lowered;
  OptimizerKind kind;
};
const NativeOptimizer kNative[] = {
    {"adam", OptimizerKind::kAdam},       {"adamw", OptimizerKind::kAdamW},
    {"lamb", OptimizerKind::kLamb},       {"lion", OptimizerKind::kLion},
    {"adagrad", OptimizerKind::kAdagrad}, {"muon", OptimizerKind::kMuon},
    {"muadam", OptimizerKind::kMuAdam},   {"muadamw", OptimizerKind::kMuAdamW},
    {"musgd", OptimizerKind::kMuSgd}};

std::optional<OptimizerKind> optimizer_kind(const std::string& name) {
  for (const auto& native : kNative)
    if (ascii_lowercase(name) == native.lowered) return native.kind;
  if (std::find(kTorchOptimizers.begin(), kTorchOptimizers.end(), name) != kTorchOptimizers.end())
    return OptimizerKind::kTorch;
  return std::nullopt;
}

/// FusedAdam / DeepSpeedCPUAdam (Adam, AdamW), FusedLamb, FusedLion, Adagrad, MuonWithAuxAdam.
std::vector<ParamSpec> param_table(OptimizerKind kind) {
  const ParamSpec lr{"lr", ParamType::kNumber, "0.001"};
  const ParamSpec betas{"betas", ParamType::kBetas, "[0.9, 0.999]"};
  const ParamSpec weight_decay{"weight_decay", ParamType::kNumber, "0.0"};
  switch (kind) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return {lr, betas, {"eps", ParamType::kNumber, "1e-08"}, weight_decay,
              {"bias_correction", ParamType::kBool, "true"}, {"adam_w_mode", ParamType::kBool, "true"},
              {"torch_adam", ParamType::kBool, "false"}, {"amsgrad", ParamType::kBool, "false"},
              {"fp32_optimizer_states", ParamType::kBool, "null"}};
    case OptimizerKind::kLamb:
      return {lr, {"bias_correction", ParamType::kBool, "true"}, betas,
              {"eps", ParamType::kNumber, "1e-08"}, {"eps_inside_sqrt", ParamType::kBool, "false"},
              weight_decay, {"max_coeff", ParamType::kNumber, "10.0"},
              {"min_coeff", ParamType::kNumber, "0.01"}, {"amsgrad", ParamType::kBool, "false"}};
    case OptimizerKind::kLion:
      return {lr, betas, weight_decay};
    case OptimizerKind::kAdagrad:
      return {{"lr", ParamType::kNumber, "0.01"}, {"eps", ParamType::kNumber, "1e-10"}, weight_decay,
              {"lr_decay", ParamType::kNumber, "0.0"},
              {"initial_accumulator_value", ParamType::kNumber, "0.0"}};
    case OptimizerKind::kMuon:
      // MuonWithAuxAdam: no defaults listed here; the constructor's apply.
      return {{"lr", ParamType::kNumber, "null"}, {"momentum", ParamType::kNumber, "null"},
              {"weight_decay", ParamType::kNumber, "null"}, {"muon_lr", ParamType::kNumber, "null"},
              {"ns_method", ParamType::kString, "null"}, {"betas", ParamType::kBetas, "null"},
              {"eps", ParamType::kNumber, "null"}, {"adam_lr", ParamType::kNumber, "null"}};
    default:
      return {};  // torch.optim and mup classes: whatever their constructors take
  }
}

bool zero_tested(OptimizerKind kind) {
  // ZERO_SUPPORTED_OPTIMIZERS (runtime/zero/utils.py): the Adam family, Adagrad, Lion, Muon.
  return kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW ||
         kind == OptimizerKind::kAdagrad || kind == OptimizerKind::kLion ||
         kind == OptimizerKind::kMuon;
}

std::vector<std::string> all_optimizer_names() {
  std::vector<std::string> names = {"Adam", "AdamW", "Lamb", "Lion", "Adagrad", "Muon", "MuAdam",
                                    "MuAdamW", "MuSGD"};
  names.insert(names.end(), kTorchOptimizers.begin(), kTorchOptimizers.end());
  return names;
}

}  // namespace

void resolve_optimizer(ValidationContext& context) {
  const ConfigNode* type = context.node_at("optimizer.type");
  if (!context.written("optimizer")) return;
  OptimizerConfig& optimizer = context.config.optimizer;
  optimizer.present = true;
  if (!type || !type->is_string() || type->is_auto()) {
    if (!type) context.error("missing-param", "optimizer", "the optimizer block has no \"type\"",
                             "add e.g. \"type\": \"AdamW\"");
    resolve_params(context, "optimizer", "the optimizer", {}, false);
    return;
  }
  optimizer.type = type->string_value;
  const auto kind = optimizer_kind(type->string_value);
  if (!kind) {
    const std::string removed = ascii_lowercase(type->string_value);
    if (removed != "onebitadam" && removed != "zerooneadam" && removed != "onebitlamb") {
      const auto guess = closest_match(type->string_value, all_optimizer_names());
      context.error("unknown-optimizer", "optimizer.type",
                    type->string_value + " is not a supported DeepSpeed Optimizer",
                    guess ? "did you mean \"" + *guess + "\"? (DeepSpeed's own names match "
                            "case-insensitively, torch.optim names exactly)"
                          : "use Adam, AdamW, Lamb, Lion, Adagrad, Muon or a torch.optim class name");
    }
    resolve_params(context, "optimizer", type->string_value, {}, false);
    return;
  }
  optimizer.kind = *kind;
  const auto table = param_table(*kind);
  resolve_params(context, "optimizer", type->string_value, table, !table.empty());
}

void check_optimizer_rules(ValidationContext& context) {
  const OptimizerConfig& optimizer = context.config.optimizer;
  if (!optimizer.present || optimizer.kind == OptimizerKind::kNone) return;
  const nlohmann::json& params = context.effective["optimizer"]["params"];
  if (params.contains("max_grad_norm"))
    context.error("optimizer-max-grad-norm", "optimizer.params.max_grad_norm",
                  "'max_grad_norm' is not supported as an optimizer parameter, please switch to "
                  "using the deepspeed parameter 'gradient_clipping'",
                  "move the value to the top-level \"gradient_clipping\"");
  const bool adam_family = optimizer.kind == OptimizerKind::kAdam || optimizer.kind == OptimizerKind::kAdamW;
  if (adam_family && params.value("amsgrad", false) == true && !optimizer.torch_adam)
    context.error("invalid-value", "optimizer.params.amsgrad",
                  "FusedAdam does not support the AMSGrad variant (nor does DeepSpeedCPUAdam)",
                  "remove amsgrad, or set \"torch_adam\": true to use torch.optim.Adam");
  if (optimizer.kind == OptimizerKind::kAdam && optimizer.weight_decay > 0 &&
      !context.written("optimizer.params.adam_w_mode"))
    context.warning("adam-runs-adamw", "optimizer.type",
                    "\"Adam\" with weight_decay runs as AdamW (decoupled weight decay): DeepSpeed's "
                    "adam_w_mode defaults to true",
                    "write \"adam_w_mode\": false for L2-style Adam, or \"type\": \"AdamW\" to say so");
  if (optimizer.kind == OptimizerKind::kLamb && context.config.fp16.enabled &&
      context.config.fp16.loss_scale != 0)
    context.error("lamb-static-loss-scale", "fp16.loss_scale",
                  "DeepSpeed " + optimizer.type + " optimizer requires dynamic loss scaling",
                  "set fp16.loss_scale to 0 (dynamic)");
  if (context.config.zero.stage > 0 && !zero_tested(optimizer.kind)) {
    if (!context.config.zero_allow_untested_optimizer)
      context.error("untested-optimizer", "optimizer.type",
                    "You are using an untested ZeRO Optimizer (" + optimizer.type + " at stage " +
                        std::to_string(context.config.zero.stage) + "). Please add "
                        "<\"zero_allow_untested_optimizer\": true> in the configuration file to use it.",
                    "ZeRO is tested with Adam, AdamW, Adagrad, Lion and Muon");
    else
      context.warning("untested-optimizer", "optimizer.type",
                      "**** You are using ZeRO with an untested optimizer (" + optimizer.type +
                          "), proceed with caution *****");
  }
}

}  // namespace shardscope::configs
