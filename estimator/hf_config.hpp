#pragma once
// Model descriptions from a Hugging Face config.json. `model_type` decides the parameter layout:
// llama, mistral, qwen2, qwen3 and gemma share the llama keys (hidden_size, intermediate_size,
// num_key_value_heads, ...); gpt2 has its own (n_embd, n_layer, n_head, n_inner, n_positions);
// gpt_neox (pythia) uses llama-like names for a gpt2-like layout.

#include <optional>
#include <string>
#include <vector>

#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct HfConfigOptions {
  /// Read an unlisted model_type with this layout's keys (the user vouches that they match).
  std::optional<TransformerLayout> layout_override;
  /// Sequence length for activations; 0 = the config's max_position_embeddings / n_positions.
  long long seq_len = 0;
};

/// The model_type values read without an override, in the order error messages list them.
const std::vector<std::string>& supported_hf_model_types();

/// Reads a config.json file; throws EstimatorError naming the file and the key at fault.
ModelDescription describe_hf_config_file(const std::string& path, const HfConfigOptions& options);

/// Same from the file's text; `source` names it in messages.
ModelDescription describe_hf_config_text(const std::string& text, const std::string& source,
                                         const HfConfigOptions& options);

}  // namespace shardscope::estimator
