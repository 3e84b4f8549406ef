#include "estimator/activations.hpp"

#include <cstdio>

namespace shardscope::estimator {
namespace {

struct LayerTerms {
  double linear = 0;     ///< bytes proportional to s*b (everything but the attention scores)
  double quadratic = 0;  ///< bytes proportional to s^2*b (attention scores, softmax, masks)
};

// The bookkeeping of Korthikanti et al. section 4.1, term by term, for one layer. `e` is bytes per
// activation element; dropout masks take 1 byte per element.
LayerTerms layer_terms(const TransformerShape& t, double s, double b, double e, bool flash) {
  const double h = static_cast<double>(t.hidden);
  const double a = static_cast<double>(t.heads);
  const double q = static_cast<double>(t.heads * t.effective_head_dim());
  const double kv = static_cast<double>(t.effective_kv_heads() * t.effective_head_dim());
  const double f = static_cast<double>(t.effective_ffn());
  const double sb = s * b;
  LayerTerms terms;
  // Attention: QKV input, Q and K for the scores, V, the output projection's input.
  terms.linear += e * sb * h + e * sb * q + e * sb * kv + e * sb * kv + e * sb * q;
  if (t.dropout) terms.linear += sb * h;  // output dropout mask
  if (flash) {
    terms.linear += 4 * sb * a;  // fused attention keeps only the fp32 log-sum-exp per row
  } else {
    terms.quadratic += e * a * s * s * b;  // softmax output
    if (t.dropout) terms.quadratic += a * s * s * b + e * a * s * s * b;  // its dropout mask and output
  }
  // MLP: first input; GELU input and second input, or for SwiGLU gate, up, SiLU(gate), product.
  terms.linear += e * sb * h + (t.gated_mlp ? 4 : 2) * e * sb * f;
  if (t.dropout) terms.linear += sb * h;
  // The two norms' inputs.
  terms.linear += 2 * e * sb * h;
  return terms;
}

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, a, b, c, d);
  return buffer;
}

}  // namespace

double korthikanti_layer_bytes(double s, double b, double h, double a) { return s * b * h * (34 + 5 * a * s / h); }

ActivationEstimate estimate_activations(const ModelDescription& model, const WorkloadSettings& workload,
                                        Precision precision, int gpus_per_node) {
  ActivationEstimate r;
  if (!model.shape) {
    r.unavailable_reason = "activations need a transformer shape (give --hf-config or --layers/--hidden/...); "
                           "a bare parameter count or safetensors header does not say it";
    return r;
  }
  const TransformerShape& t = *model.shape;
  r.available = true;
  r.micro_batch = workload.micro_batch;
  r.seq_len = workload.seq_len > 0 ? workload.seq_len : t.seq_len;
  const double s = static_cast<double>(r.seq_len);
  const double b = static_cast<double>(r.micro_batch);
  const double h = static_cast<double>(t.hidden);
  const double L = static_cast<double>(t.layers);
  const double e = precision == Precision::kFp32 ? 4 : 2;
  const LayerTerms terms = layer_terms(t, s, b, e, workload.flash_attention);
  r.per_layer_bytes = terms.linear + terms.quadratic;
  // Final norm input and LM-head input (4sbh with 16-bit), logits kept in fp32 for the loss (4sbV).
  r.outside_layers_bytes = 2 * e * s * b * h + 4 * s * b * static_cast<double>(t.vocab);
  switch (workload.checkpointing) {
    case ActivationCheckpointing::kNone:
      r.stored_per_layer_bytes = r.per_layer_bytes;
      r.formula = fmt("L x per-layer + outside = %g x %.4g B + %.4g B; per layer (Korthikanti et al. 2022) "
                      "sbh(34 + 5as/h) for GPT-style 16-bit, generalised here to the model's layout",
                      L, r.per_layer_bytes, r.outside_layers_bytes);
      break;
    case ActivationCheckpointing::kSelective:
      // Selective recomputation keeps everything but the attention-score terms (the paper's 34sbh).
      r.stored_per_layer_bytes = terms.linear;
      r.recompute_bytes = terms.quadratic;
      r.formula = fmt("L x (per-layer without s^2 terms) + one layer's scores + outside = %g x %.4g B + %.4g B + %.4g B "
                      "(selective recomputation, Korthikanti et al. 2022: 34sbh per layer)",
                      L, r.stored_per_layer_bytes, r.recompute_bytes, r.outside_layers_bytes);
      break;
    case ActivationCheckpointing::kFull:
      // Each layer keeps its input (e*sbh); backward rebuilds one layer at a time.
      r.stored_per_layer_bytes = e * s * b * h;
      r.recompute_bytes = r.per_layer_bytes;
      r.formula = fmt("L x %g*sbh (layer inputs) + one recomputed layer + outside = %g x %.4g B + %.4g B + %.4g B",
                      e, L, r.stored_per_layer_bytes, r.recompute_bytes) +
                  fmt(" + %.4g B", r.outside_layers_bytes);
      break;
  }
  double stored = L * r.stored_per_layer_bytes;
  if (workload.cpu_checkpointing && workload.checkpointing == ActivationCheckpointing::kFull) {
    r.cpu_bytes_per_node = stored * gpus_per_node;  // checkpoints live in host memory instead
    stored = 0;
    r.formula += "; checkpoints in host memory (cpu_checkpointing)";
  }
  r.total_bytes = stored + r.recompute_bytes + r.outside_layers_bytes;
  r.bytes_per_sample = b > 0 ? r.total_bytes / b : 0;
  return r;
}

}  // namespace shardscope::estimator
