#pragma once
// Small fixtures for engine tests: configs from inline JSON, tiny models, deterministic batches.

#include <memory>
#include <string>

#include <torch/torch.h>

#include "configs/config_document.hpp"
#include "configs/config_validator.hpp"
#include "engine/models/model_spec.hpp"
#include "engine/models/trainable_model.hpp"

namespace shardscope::testing {

/// Validates `json` as a DeepSpeed config (world size 1) and returns the resolved config; fails
/// the test with the diagnostics if it has errors.
inline configs::ResolvedConfig resolved_config(const std::string& json) {
  const auto document = configs::parse_config_text(json, "inline.json");
  configs::ValidateOptions options;
  options.world_size = 1;
  const auto result = configs::validate(document, options);
  std::string errors;
  for (const auto& d : result.diagnostics)
    if (d.severity == configs::Severity::kError) errors += d.message + "\n";
  if (!errors.empty() || !result.config) throw std::runtime_error("config has errors:\n" + errors);
  return *result.config;
}

/// A tiny model of `kind` built from torch's generator seeded with `seed`.
inline std::shared_ptr<engine::TrainableModel> tiny_model(engine::ModelKind kind, std::uint64_t seed = 7) {
  torch::manual_seed(seed);
  engine::ModelSpec spec = engine::default_model_spec(kind);
  if (kind != engine::ModelKind::kMlp) {
    auto& s = spec.transformer.shape;
    s.layers = 2;
    s.hidden = 32;
    s.heads = 4;
    s.kv_heads = kind == engine::ModelKind::kLlama ? 2 : 0;
    s.ffn = kind == engine::ModelKind::kLlama ? 64 : 0;
    s.vocab = 64;
    s.seq_len = 16;
    s.max_positions = 16;
  }
  return engine::build_model(spec);
}

/// Batch `index` of a fixed synthetic stream: token ids for decoders, x/y for the MLP.
inline engine::Batch fixed_batch(engine::ModelKind kind, std::int64_t index, std::int64_t size) {
  torch::Generator gen = at::detail::createCPUGenerator(1000 + static_cast<std::uint64_t>(index));
  if (kind == engine::ModelKind::kMlp) {
    auto x = torch::randn({size, 16}, gen);
    auto y = x.sum(1, true) * 0.5 + 1.0;
    return {x, y};
  }
  auto tokens = torch::randint(0, 64, {size, 17}, gen, torch::kLong);
  return {tokens.narrow(1, 0, 16).contiguous(), tokens.narrow(1, 1, 16).contiguous()};
}

}  // namespace shardscope::testing
