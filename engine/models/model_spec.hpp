#pragma once
// What to build: the kind of built-in model and its sizes, from flags or from a Hugging Face
// config.json (read by the estimator's hf_config, plus the few numeric keys the estimator has
// no use for: rope_theta and the norm epsilon).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estimator/model_description.hpp"

namespace shardscope::engine {

class TrainableModel;

enum class ModelKind { kMlp, kGpt2, kLlama };

/// The regression MLP: input -> hidden... (ReLU between) -> output, trained with MSE.
struct MlpOptions {
  std::int64_t input_dim = 16;
  std::vector<std::int64_t> hidden_dims = {64, 64};
  std::int64_t output_dim = 1;
};

/// A decoder's shape (the estimator's TransformerShape, so parameter counts agree) and the
/// numbers Hugging Face keeps beside it.
struct TransformerOptions {
  estimator::TransformerShape shape;
  double norm_eps = 1e-5;            ///< layer_norm_epsilon (gpt2) or rms_norm_eps (llama)
  double rope_theta = 10000.0;       ///< llama only
  double initializer_range = 0.02;   ///< std of the normal initialisation, as HF's _init_weights
};

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  MlpOptions mlp;
  TransformerOptions transformer;
  bool activation_checkpointing = false;  ///< recompute each block in backward
  std::vector<std::string> notes;         ///< things read but not honoured, worth printing
};

/// "mlp", "gpt2" or "llama".
const char* model_kind_name(ModelKind kind);

/// Parses "mlp", "gpt2" or "llama"; throws ModelError naming `what` and the choices.
ModelKind parse_model_kind(const std::string& text, const std::string& what);

/// A small model of each kind for quick runs: a 16-64-64-1 MLP, or a 4-layer decoder of width
/// 256 with 4 heads (llama: 2 kv heads), vocabulary 50304 (gpt2) or 32000 (llama), 256 tokens.
ModelSpec default_model_spec(ModelKind kind);

/// Reads a config.json (gpt2 or a llama-family model_type); `seq_len` 0 keeps the config's
/// maximum. Throws ModelError (file and key named) for a layout the built-in models lack.
ModelSpec model_spec_from_hf_config(const std::string& path, std::int64_t seq_len);

/// Checks a decoder's shape and flags against what the gpt2 or llama model builds; throws
/// ModelError naming the field at fault.
void validate_transformer_options(ModelKind kind, const TransformerOptions& options);

/// Checks a spec against what its model supports; throws ModelError naming the field.
void validate_model_spec(const ModelSpec& spec);

/// Builds the model (fp32, freshly initialised from torch's default generator) on the CPU, or
/// with `init_on_cuda` the GPT-2's weights on CUDA device `cuda_index`, drawn by its generator
/// (seconds faster for a billion parameters; other models still start on the CPU).
std::shared_ptr<TrainableModel> build_model(const ModelSpec& spec, bool init_on_cuda = false, int cuda_index = 0);

}  // namespace shardscope::engine
