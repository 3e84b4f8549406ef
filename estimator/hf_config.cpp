#include "estimator/hf_config.hpp"

#include <nlohmann/json.hpp>

#include "configs/did_you_mean.hpp"
#include "configs/input_file.hpp"
#include "estimator/estimator_error.hpp"
#include "estimator/json_document.hpp"

namespace shardscope::estimator {
namespace {

using nlohmann::json;

// Reads keys of one config.json with messages that name the file, the model_type and the key.
class ConfigReader {
 public:
  ConfigReader(const json& root, std::string source, std::string model_type)
      : root_(root), source_(std::move(source)), model_type_(std::move(model_type)) {}

  bool present(const char* key) const { return root_.contains(key) && !root_.at(key).is_null(); }

  long long required_int(const char* key) const {
    if (!present(key))
      throw EstimatorError(source_ + ": missing key '" + key + "', which model_type '" + model_type_ +
                           "' needs; add it to the config (see the model's published config.json)");
    return positive_int(key);
  }

  long long optional_int(const char* key, long long fallback) const {
    return present(key) ? positive_int(key) : fallback;
  }

  bool optional_bool(const char* key, bool fallback) const {
    if (!present(key)) return fallback;
    const json& v = root_.at(key);
    if (!v.is_boolean())
      throw EstimatorError(source_ + ": key '" + key + "' must be true or false, got " + v.dump());
    return v.get<bool>();
  }

  double optional_number(const char* key, double fallback) const {
    if (!present(key)) return fallback;
    const json& v = root_.at(key);
    if (!v.is_number())
      throw EstimatorError(source_ + ": key '" + key + "' must be a number, got " + v.dump());
    return v.get<double>();
  }

 private:
  long long positive_int(const char* key) const {
    const json& v = root_.at(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<std::uint64_t>() > kMaxShapeDimension
                                                           : v.get<long long>() <= 0))
      throw EstimatorError(source_ + ": key '" + key + "' must be a positive integer up to " +
                           std::to_string(kMaxShapeDimension) + ", got " + v.dump());
    return v.get<long long>();
  }

  const json& root_;
  std::string source_;
  std::string model_type_;
};

bool is_llama_family(const std::string& type) {
  for (const char* t : {"llama", "mistral", "qwen2", "qwen3", "gemma"})
    if (type == t) return true;
  return false;
}

TransformerShape read_llama_keys(const ConfigReader& r, const std::string& type) {
  TransformerShape s = default_shape(TransformerLayout::kLlama);
  s.hidden = r.required_int("hidden_size");
  s.layers = r.required_int("num_hidden_layers");
  s.heads = r.required_int("num_attention_heads");
  s.ffn = r.required_int("intermediate_size");
  s.vocab = r.required_int("vocab_size");
  s.kv_heads = r.optional_int("num_key_value_heads", s.heads);
  s.head_dim = r.optional_int("head_dim", 0);
  s.seq_len = r.optional_int("max_position_embeddings", 0);
  // Qwen2 always has q/k/v biases and no key for them; the others say so with attention_bias.
  s.qkv_bias = type == "qwen2" || r.optional_bool("attention_bias", false);
  s.attn_out_bias = type != "qwen2" && r.optional_bool("attention_bias", false);
  s.mlp_bias = r.optional_bool("mlp_bias", false);
  s.qk_norm = type == "qwen3";
  s.tied_embeddings = r.optional_bool("tie_word_embeddings", type == "gemma");
  s.dropout = r.optional_number("attention_dropout", 0.0) > 0;
  return s;
}

TransformerShape read_gpt2_keys(const ConfigReader& r) {
  TransformerShape s = default_shape(TransformerLayout::kGpt2);
  s.hidden = r.required_int("n_embd");
  s.layers = r.required_int("n_layer");
  s.heads = r.required_int("n_head");
  s.vocab = r.required_int("vocab_size");
  s.max_positions = r.present("n_positions") ? r.required_int("n_positions") : r.required_int("n_ctx");
  s.seq_len = s.max_positions;
  s.ffn = r.optional_int("n_inner", 4 * s.hidden);
  s.tied_embeddings = r.optional_bool("tie_word_embeddings", true);
  s.dropout = r.optional_number("resid_pdrop", 0.1) > 0 || r.optional_number("attn_pdrop", 0.1) > 0;
  return s;
}

TransformerShape read_neox_keys(const ConfigReader& r) {
  TransformerShape s = default_shape(TransformerLayout::kGptNeox);
  s.hidden = r.required_int("hidden_size");
  s.layers = r.required_int("num_hidden_layers");
  s.heads = r.required_int("num_attention_heads");
  s.ffn = r.required_int("intermediate_size");
  s.vocab = r.required_int("vocab_size");
  s.seq_len = r.optional_int("max_position_embeddings", 0);
  s.qkv_bias = s.attn_out_bias = r.optional_bool("attention_bias", true);
  s.tied_embeddings = r.optional_bool("tie_word_embeddings", false);
  s.dropout = r.optional_number("hidden_dropout", 0.0) > 0 || r.optional_number("attention_dropout", 0.0) > 0;
  return s;
}

std::string unsupported_type_message(const std::string& source, const std::string& type) {
  std::string message = source + ": model_type '" + type + "' is not one the estimator reads (";
  const auto& types = supported_hf_model_types();
  for (std::size_t i = 0; i < types.size(); ++i) message += (i ? ", " : "") + types[i];
  message += ")";
  if (auto guess = configs::closest_match(type, types)) message += "; did you mean '" + *guess + "'?";
  return message + ". If its keys match one of these families, pass --hf-layout llama|gpt2|gpt_neox";
}

}  // namespace

const std::vector<std::string>& supported_hf_model_types() {
  static const std::vector<std::string> types = {"llama", "mistral", "qwen2", "qwen3",
                                                 "gemma", "gpt2",    "gpt_neox"};
  return types;
}

ModelDescription describe_hf_config_text(const std::string& text, const std::string& source,
                                         const HfConfigOptions& options) {
  json root = parse_json_document(text, source, "config.json");
  if (!root.is_object()) throw EstimatorError(source + ": expected a JSON object at the top level");
  // Multimodal configs keep the language model under text_config.
  if (!root.contains("num_hidden_layers") && root.contains("text_config") && root["text_config"].is_object())
    root = root["text_config"];
  if (!root.contains("model_type") || !root["model_type"].is_string())
    throw EstimatorError(source + ": missing string key 'model_type' (e.g. \"llama\"); "
                         "it decides the parameter layout. Pass --hf-layout to choose one");
  const std::string type = root["model_type"].get<std::string>();
  TransformerLayout layout;
  if (options.layout_override)
    layout = *options.layout_override;
  else if (is_llama_family(type))
    layout = TransformerLayout::kLlama;
  else if (type == "gpt2")
    layout = TransformerLayout::kGpt2;
  else if (type == "gpt_neox")
    layout = TransformerLayout::kGptNeox;
  else
    throw EstimatorError(unsupported_type_message(source, type));

  const ConfigReader reader(root, source, type);
  TransformerShape shape = layout == TransformerLayout::kGpt2      ? read_gpt2_keys(reader)
                           : layout == TransformerLayout::kGptNeox ? read_neox_keys(reader)
                                                                   : read_llama_keys(reader, type);
  if (options.seq_len > 0) shape.seq_len = options.seq_len;
  if (shape.seq_len == 0)
    throw EstimatorError(source + ": no max_position_embeddings; give the sequence length (--seq-len)");
  ModelDescription d = describe_transformer(shape, source + " (" + type + ")");
  d.source = ModelSource::kHfConfig;
  if (options.layout_override)
    d.notes.push_back("model_type '" + type + "' read with the " + layout_name(layout) + " layout (--hf-layout)");
  return d;
}

ModelDescription describe_hf_config_file(const std::string& path, const HfConfigOptions& options) {
  const std::string text = read_input_text(path, "Hugging Face config.json", configs::kMaxConfigFileBytes);
  return describe_hf_config_text(text, path, options);
}

}  // namespace shardscope::estimator
