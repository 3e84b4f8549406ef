#pragma once
// What the estimator knows about a model: its parameter count, the largest layer (what ZeRO-3
// gathers at once), and, when known, its transformer shape (what activations depend on).
// Built from a parameter count, a shape, a Hugging Face config.json (hf_config.hpp) or a
// safetensors header (safetensors_header.hpp).

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::estimator {

/// Parameter layouts of decoder families; each is a preset of the flags in TransformerShape.
enum class TransformerLayout {
  kGpt2,     ///< LayerNorm with bias, fused qkv with bias, GELU MLP with bias, learned positions
  kLlama,    ///< RMSNorm, separate q/k/v/o without bias, SwiGLU MLP, rotary positions (no params)
  kGptNeox,  ///< LayerNorm with bias, fused qkv with bias, GELU MLP with bias, rotary positions
};

struct TransformerShape {
  TransformerLayout layout = TransformerLayout::kLlama;
  long long layers = 0;
  long long hidden = 0;
  long long heads = 0;
  long long kv_heads = 0;       ///< 0 = heads (multi-head attention)
  long long head_dim = 0;       ///< 0 = hidden / heads
  long long ffn = 0;            ///< 0 = 4 x hidden
  long long vocab = 0;
  long long seq_len = 0;        ///< the training sequence length activations are computed for
  long long max_positions = 0;  ///< rows of a learned position table (gpt2); 0 = seq_len
  bool tied_embeddings = false;
  // Layout flags (preset by default_shape, overridden by a config.json's keys).
  bool norm_has_bias = false;     ///< LayerNorm (weight + bias) rather than RMSNorm (weight)
  bool gated_mlp = true;          ///< SwiGLU: gate and up projections, then down
  bool qkv_bias = false;
  bool attn_out_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;           ///< per-head RMSNorm on q and k (qwen3)
  bool learned_positions = false;
  bool dropout = false;           ///< dropout in training (its masks are stored activations); the engine has none

  long long effective_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  long long effective_head_dim() const { return head_dim > 0 ? head_dim : hidden / heads; }
  /// ffn when given; else 4 x hidden for a GELU MLP, and for SwiGLU Llama's sizing: 2/3 x 4 x
  /// hidden rounded up to a multiple of 256 (the engine's default too).
  long long effective_ffn() const {
    if (ffn > 0) return ffn;
    return gated_mlp ? (8 * hidden / 3 + 255) / 256 * 256 : 4 * hidden;
  }
};

/// Parameter counts per part of a transformer; every number is an exact element count.
struct ParameterBreakdown {
  double token_embedding = 0;
  double position_embedding = 0;
  double per_layer = 0;
  double layers_total = 0;
  double final_norm = 0;
  double lm_head = 0;  ///< 0 when tied to the token embedding
  double total = 0;
  double largest_module = 0;  ///< the largest single module's own parameters (DeepSpeed's L)
  std::string largest_module_name;
};

enum class ModelSource { kParamCount, kShape, kHfConfig, kSafetensors };

struct ModelDescription {
  std::string name;  ///< where it came from, e.g. "config.json (llama)"
  ModelSource source = ModelSource::kParamCount;
  double total_params = 0;
  /// DeepSpeed's largest_layer_params: the largest module's parameters with recurse=False.
  /// 0 = unknown (a bare parameter count without --largest-layer).
  double largest_layer_params = 0;
  std::string largest_layer_name;
  std::optional<TransformerShape> shape;
  std::optional<ParameterBreakdown> breakdown;
  std::map<std::string, double> params_by_dtype;  ///< from a safetensors header: "BF16" -> count
  std::string largest_tensor_name;
  double largest_tensor_params = 0;
  std::vector<std::string> notes;  ///< caveats worth printing (e.g. index total_size mismatch)
};

/// Bounds on what the estimator accepts, far beyond any real model, so that no product of shape
/// values and no count overflows (docs/reliability.md, "Bounded readers").
inline constexpr long long kMaxShapeDimension = 2147483647;  ///< 2^31 - 1 per shape value
inline constexpr double kMaxModelParameters = 1e15;           ///< about 1000x today's largest models

/// The layout flags of a family: gpt2 has biases and learned positions, llama has none, etc.
TransformerShape default_shape(TransformerLayout layout);

/// "gpt2", "llama" or "gpt_neox".
const char* layout_name(TransformerLayout layout);

/// Parses "gpt2", "llama", "gpt_neox" (also "gpt-neox", "neox"); throws EstimatorError naming `what`.
TransformerLayout parse_layout(const std::string& text, const std::string& what);

/// Exact parameter counts of a shape; throws EstimatorError if a dimension is missing or
/// inconsistent (heads not dividing hidden, kv heads not dividing heads).
ParameterBreakdown count_transformer_params(const TransformerShape& shape);

/// A model known only by its parameter count (and, for stage 3, its largest layer).
ModelDescription describe_param_count(double total_params, double largest_layer_params);

/// Throws EstimatorError naming `source` and the `inputs` to check when `total_params` exceeds
/// kMaxModelParameters (or is not a number).
void require_plausible_total(double total_params, const std::string& source, const std::string& inputs);

/// A model from a transformer shape; counts parameters exactly for its layout.
ModelDescription describe_transformer(const TransformerShape& shape, const std::string& name);

/// A checkpoint's exact counts (safetensors) with the shape of a config.json for activations;
/// notes when the config's layout counts a different total.
ModelDescription with_shape_of(ModelDescription counted, const ModelDescription& shaped);

}  // namespace shardscope::estimator
