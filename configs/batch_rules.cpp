// DeepSpeed's batch solver (_set_batch_related_parameters) and its assertions (_batch_assertion),
// with the same integer floor division, so a config that DeepSpeed would reject is rejected here
// with DeepSpeed's words and numbers.
#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

/// Python's // on integers: rounds toward negative infinity.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0) return 0;
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// a * b, saturated so absurd sizes (1e18) cannot overflow into a false identity.
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return out;
}

struct BatchKeys {
  std::optional<std::int64_t> tb, mb, gas;
  bool any_auto = false;
};

BatchKeys read_batch_keys(const nlohmann::json& effective) {
  BatchKeys keys;
  auto read = [&](const char* key, std::optional<std::int64_t>& out) {
    const auto& value = effective[key];
    if (value.is_number_integer()) out = value.get<std::int64_t>();
    else if (value == "auto") keys.any_auto = true;
  };
  read("train_batch_size", keys.tb);
  read("train_micro_batch_size_per_gpu", keys.mb);
  read("gradient_accumulation_steps", keys.gas);
  return keys;
}

/// The world size to solve with: --world-size, else the one the three keys imply, else 1.
int choose_world_size(ValidationContext& context, const BatchKeys& keys, bool& inferred) {
  inferred = false;
  if (context.options().world_size) return *context.options().world_size;
  if (keys.tb && keys.mb && keys.gas) {
    const std::int64_t per_rank = mul(*keys.mb, *keys.gas);
    if (per_rank > 0 && *keys.tb > 0 && *keys.tb % per_rank == 0 && *keys.tb / per_rank <= 1000000) {
      inferred = true;
      return static_cast<int>(*keys.tb / per_rank);
    }
    return 1;
  }
  context.report(Severity::kNote, "world-size-assumed", "",
                 "no --world-size given: the batch keys are solved for a data-parallel world size "
                 "of 1", "pass --world-size N (the data-parallel size) to solve for your cluster");
  return 1;
}

void solve(ValidationContext& context, BatchKeys& k, int world) {
  const auto note_world = " (world size " + std::to_string(world) + ")";
  if (k.tb && k.mb && k.gas) return;
  if (k.tb && k.mb) {
    k.gas = floor_div(floor_div(*k.tb, *k.mb), world);
    set_derived(context, "gradient_accumulation_steps", *k.gas,
                "train_batch_size // micro_batch // world_size" + note_world);
  } else if (k.tb && k.gas) {
    k.mb = floor_div(floor_div(*k.tb, world), *k.gas);
    set_derived(context, "train_micro_batch_size_per_gpu", *k.mb,
                "train_batch_size // world_size // gradient_accumulation_steps" + note_world);
  } else if (k.mb && k.gas) {
    k.tb = mul(mul(*k.mb, *k.gas), world);
    set_derived(context, "train_batch_size", *k.tb,
                "micro_batch * gradient_accumulation_steps * world_size" + note_world);
  } else if (k.tb) {
    k.gas = 1;
    k.mb = floor_div(*k.tb, world);
    set_derived(context, "gradient_accumulation_steps", 1, "only train_batch_size given");
    set_derived(context, "train_micro_batch_size_per_gpu", *k.mb,
                "train_batch_size // world_size" + note_world);
  } else if (k.mb) {
    k.tb = mul(*k.mb, world);
    k.gas = 1;
    set_derived(context, "train_batch_size", *k.tb, "micro_batch * world_size" + note_world);
    set_derived(context, "gradient_accumulation_steps", 1, "only the micro batch given");
  }
}

std::string identity_hint(const BatchKeys& k, int world, bool world_given) {
  const std::int64_t product = mul(mul(*k.mb, *k.gas), world);
  std::string hint = "with these values train_batch_size would be " + std::to_string(product);
  const std::int64_t per_step = mul(*k.mb, world);
  if (per_step > 0 && *k.tb % per_step == 0)
    hint += ", or keep " + std::to_string(*k.tb) + " with gradient_accumulation_steps " +
            std::to_string(*k.tb / per_step);
  hint += "; or give only two of the three keys and let DeepSpeed derive the third";
  if (!world_given) hint += " (pass --world-size to check against your real world size)";
  return hint;
}

bool check_positive(ValidationContext& context, const BatchKeys& k) {
  bool ok = true;
  if (*k.tb <= 0) {
    context.error("batch-positive", "train_batch_size",
                  "Train batch size: " + std::to_string(*k.tb) + " has to be greater than 0");
    ok = false;
  }
  if (*k.mb <= 0) {
    context.error("batch-positive", "train_micro_batch_size_per_gpu",
                  "Micro batch size per gpu: " + std::to_string(*k.mb) + " has to be greater than 0",
                  "the micro batch is derived by floor division; raise train_batch_size or lower "
                  "the world size or gradient_accumulation_steps");
    ok = false;
  }
  if (*k.gas <= 0) {
    context.error("batch-positive", "gradient_accumulation_steps",
                  "Gradient accumulation steps: " + std::to_string(*k.gas) +
                      " has to be greater than 0",
                  "gradient_accumulation_steps is derived by floor division: train_batch_size must "
                  "be at least micro_batch * world_size");
    ok = false;
  }
  return ok;
}

// DeepSpeed multiplies Python integers, which never overflow; a product beyond int64 cannot equal
// any train_batch_size we can hold, so it is its own error (saturating it once let INT64_MAX pass).
bool check_no_overflow(ValidationContext& context, const BatchKeys& k, int world) {
  std::int64_t per_rank = 0, product = 0;
  if (!__builtin_mul_overflow(*k.mb, *k.gas, &per_rank) && !__builtin_mul_overflow(per_rank, world, &product))
    return true;
  context.error("batch-overflow", context.written("gradient_accumulation_steps") ? "gradient_accumulation_steps"
                                                                                 : "train_micro_batch_size_per_gpu",
                "micro_batch_per_gpu * gradient_acc_step * world_size = " + std::to_string(*k.mb) + " * " +
                    std::to_string(*k.gas) + " * " + std::to_string(world) +
                    " is beyond a 64-bit integer, so it cannot equal train_batch_size " + std::to_string(*k.tb),
                "these are sample counts: give values a run can reach (train_batch_size = micro batch x "
                "accumulation steps x world size)");
  return false;
}

}  // namespace

void solve_batch(ValidationContext& context) {
  BatchKeys keys = read_batch_keys(context.effective);
  BatchConfig& batch = context.config.batch;
  if (keys.any_auto) {
    check_batch_auto(context, context.options().world_size.value_or(1));
    return;
  }
  if (!keys.tb && !keys.mb) {
    context.error("batch-missing", keys.gas ? "gradient_accumulation_steps" : "",
                  "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
                  "add \"train_micro_batch_size_per_gpu\" (and optionally gradient_accumulation_steps)");
    return;
  }
  bool inferred = false;
  const int world = choose_world_size(context, keys, inferred);
  batch.world_size = world;
  batch.world_size_inferred = inferred;
  solve(context, keys, world);
  if (!check_positive(context, keys) || !check_no_overflow(context, keys, world)) return;
  if (*keys.tb != mul(mul(*keys.mb, *keys.gas), world)) {
    context.error("batch-identity", context.written("train_batch_size") ? "train_batch_size" : "",
                  "Check batch related parameters. train_batch_size is not equal to "
                  "micro_batch_per_gpu * gradient_acc_step * world_size " +
                      std::to_string(*keys.tb) + " != " + std::to_string(*keys.mb) + " * " +
                      std::to_string(*keys.gas) + " * " + std::to_string(world),
                  identity_hint(keys, world, context.options().world_size.has_value()));
    return;
  }
  if (inferred)
    context.report(Severity::kNote, "world-size-inferred", "train_batch_size",
                   "no --world-size given: the three batch keys imply a data-parallel world size of " +
                       std::to_string(world), "pass --world-size N to check them against yours");
  batch.train_batch_size = *keys.tb;
  batch.train_micro_batch_size_per_gpu = *keys.mb;
  batch.gradient_accumulation_steps = *keys.gas;
  batch.resolved = true;
}

}  // namespace shardscope::configs
