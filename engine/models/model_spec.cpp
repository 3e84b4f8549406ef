#include "engine/models/model_spec.hpp"

#include <nlohmann/json.hpp>

#include "configs/did_you_mean.hpp"
#include "configs/input_file.hpp"
#include "engine/models/model_error.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/hf_config.hpp"

namespace shardscope::engine {
namespace {

using estimator::TransformerLayout;
using nlohmann::json;

void require(bool ok, const std::string& message) {
  if (!ok) throw ModelError(message);
}

// The config's language-model object (multimodal configs nest it under text_config, as the
// estimator's reader does).
json read_config_json(const std::string& path) {
  const std::string text = configs::read_input_file(path, "Hugging Face config.json", configs::kMaxConfigFileBytes);
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) throw ModelError(path + ": not a JSON object (is this a config.json?)");
  if (!root.contains("num_hidden_layers") && root.contains("text_config") && root["text_config"].is_object())
    return root["text_config"];
  return root;
}

double number_or(const json& root, const char* key, double fallback, const std::string& path) {
  if (!root.contains(key) || root[key].is_null()) return fallback;
  if (!root[key].is_number()) throw ModelError(path + ": key '" + std::string(key) + "' must be a number, got " + root[key].dump());
  return root[key].get<double>();
}

std::string string_or(const json& root, const char* key, const std::string& fallback) {
  return root.contains(key) && root[key].is_string() ? root[key].get<std::string>() : fallback;
}

// Keys the built-in models do not implement; training still works, but the user should know.
void note_unhonoured_keys(const json& root, ModelSpec& spec, const std::string& path) {
  if (spec.kind == ModelKind::kGpt2) {
    const auto act = string_or(root, "activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
      spec.notes.push_back(path + ": activation_function '" + act + "' is read as gelu_new (tanh)");
    if (spec.transformer.shape.dropout)
      spec.notes.push_back(path + ": dropout probabilities are ignored (the built-in models have no dropout)");
  } else {
    const auto act = string_or(root, "hidden_act", "silu");
    if (act != "silu") spec.notes.push_back(path + ": hidden_act '" + act + "' is read as silu (SwiGLU)");
    if (root.contains("rope_scaling") && !root["rope_scaling"].is_null())
      spec.notes.push_back(path + ": rope_scaling " + root["rope_scaling"].dump() +
                           " is ignored; rotary angles use rope_theta alone");
    if (root.contains("sliding_window") && !root["sliding_window"].is_null() &&
        root.value("use_sliding_window", true))
      spec.notes.push_back(path + ": sliding_window is ignored; attention is fully causal");
  }
}

}  // namespace

const char* model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::kMlp: return "mlp";
    case ModelKind::kGpt2: return "gpt2";
    case ModelKind::kLlama: return "llama";
  }
  return "?";
}

ModelKind parse_model_kind(const std::string& text, const std::string& what) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kGpt2, ModelKind::kLlama})
    if (text == model_kind_name(kind)) return kind;
  std::string message = what + ": unknown model '" + text + "'; expected mlp, gpt2 or llama";
  if (auto guess = configs::closest_match(text, {"mlp", "gpt2", "llama"})) message += " (did you mean '" + *guess + "'?)";
  throw ModelError(message);
}

ModelSpec default_model_spec(ModelKind kind) {
  ModelSpec spec;
  spec.kind = kind;
  if (kind == ModelKind::kMlp) return spec;
  auto& s = spec.transformer.shape;
  s = estimator::default_shape(kind == ModelKind::kGpt2 ? TransformerLayout::kGpt2 : TransformerLayout::kLlama);
  s.layers = 4;
  s.hidden = 256;
  s.heads = 4;
  s.seq_len = 256;
  s.dropout = false;
  if (kind == ModelKind::kGpt2) {
    s.vocab = 50304;  // GPT-2's 50257 padded to a multiple of 64, as nanoGPT does
    s.max_positions = 1024;
  } else {
    s.vocab = 32000;
    s.kv_heads = 2;  // heads / 2 (train's --kv-heads default)
    s.ffn = 0;       // effective_ffn(): 2/3 x 4 x hidden rounded up to 256, as Llama sizes it (768 here)
    spec.transformer.norm_eps = 1e-6;
  }
  return spec;
}

ModelSpec model_spec_from_hf_config(const std::string& path, std::int64_t seq_len) {
  const json root = read_config_json(path);
  const std::string type = string_or(root, "model_type", "");
  ModelSpec spec;
  if (type == "gpt2") {
    spec.kind = ModelKind::kGpt2;
  } else if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3") {
    spec.kind = ModelKind::kLlama;
  } else {
    throw ModelError(path + ": model_type '" + type + "' has no built-in engine model; the engine trains "
                     "gpt2 and the llama family (llama, mistral, qwen2, qwen3)" +
                     (type == "gemma" || type == "gpt_neox" ? std::string(" (") + type + " differs in norms and MLP)" : ""));
  }
  estimator::HfConfigOptions options;
  options.seq_len = seq_len;
  try {
    spec.transformer.shape = *estimator::describe_hf_config_file(path, options).shape;
  } catch (const estimator::EstimatorError& e) {
    throw ModelError(e.what());
  }
  spec.transformer.norm_eps = spec.kind == ModelKind::kGpt2 ? number_or(root, "layer_norm_epsilon", 1e-5, path)
                                                            : number_or(root, "rms_norm_eps", 1e-6, path);
  spec.transformer.rope_theta = number_or(root, "rope_theta", 10000.0, path);
  spec.transformer.initializer_range = number_or(root, "initializer_range", 0.02, path);
  note_unhonoured_keys(root, spec, path);
  validate_model_spec(spec);
  return spec;
}

void validate_transformer_options(ModelKind kind, const TransformerOptions& o) {
  const auto& s = o.shape;
  const std::string who = std::string(model_kind_name(kind)) + " model: ";
  const bool gpt2 = kind == ModelKind::kGpt2;
  require(kind != ModelKind::kMlp, "an mlp has no transformer shape");
  require(s.layout == (gpt2 ? TransformerLayout::kGpt2 : TransformerLayout::kLlama),
          who + "the shape's layout is " + estimator::layout_name(s.layout) + ", expected " + model_kind_name(kind));
  require(s.norm_has_bias == gpt2, who + (gpt2 ? "needs LayerNorm with bias (norm_has_bias)" : "uses RMSNorm (norm_has_bias must be false)"));
  require(s.gated_mlp != gpt2, who + (gpt2 ? "has a GELU MLP (gated_mlp must be false)" : "has a SwiGLU MLP (gated_mlp must be true)"));
  require(s.learned_positions == gpt2, who + (gpt2 ? "has learned positions (learned_positions must be true)"
                                                    : "uses rotary positions (learned_positions must be false)"));
  require(!(gpt2 && s.qk_norm), who + "has no q/k norm (qk_norm must be false)");
  try {
    estimator::count_transformer_params(s);  // checks every dimension and their divisibility
  } catch (const estimator::EstimatorError& e) {
    throw ModelError(who + e.what());
  }
  require(gpt2 || s.effective_head_dim() % 2 == 0, who + "rotary embeddings need an even head_dim, got " +
                                                       std::to_string(s.effective_head_dim()));
  require(o.norm_eps > 0, who + "the norm epsilon must be positive");
  require(gpt2 || o.rope_theta > 0, who + "rope_theta must be positive");
  require(o.initializer_range >= 0, who + "initializer_range must not be negative");
}

void validate_model_spec(const ModelSpec& spec) {
  if (spec.kind != ModelKind::kMlp) validate_transformer_options(spec.kind, spec.transformer);
}

}  // namespace shardscope::engine
