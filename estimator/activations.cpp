#include "estimator/activations.hpp"

#include <algorithm>
#include <cstdio>

#include "estimator/byte_units.hpp"

namespace shardscope::estimator {
namespace {

struct LayerTerms {
  double linear = 0;     ///< bytes proportional to s*b (everything but the attention scores)
  double quadratic = 0;  ///< bytes proportional to s^2*b (attention scores, their dropout)
};

/// The dimensions of one layer, as doubles.
struct Dims {
  double h, a, q, kv, f, vocab;
};

Dims dims_of(const TransformerShape& t) {
  return {static_cast<double>(t.hidden), static_cast<double>(t.heads),
          static_cast<double>(t.heads * t.effective_head_dim()),
          static_cast<double>(t.effective_kv_heads() * t.effective_head_dim()),
          static_cast<double>(t.effective_ffn()), static_cast<double>(t.vocab)};
}

bool rms_norm(const TransformerShape& t) { return !t.norm_has_bias; }

// One norm over `width` features: a fused LayerNorm keeps its input, its output and two fp32
// statistics per row; Llama's RMSNorm (eager, as Hugging Face writes it) keeps the fp32 copy of its
// input, the normalised value cast back and the scaled output, and one fp32 statistic per row.
double norm_bytes(const TransformerShape& t, double sb, double width, double e) {
  if (rms_norm(t)) return 4 * sb * width + 2 * e * sb * width + 4 * sb;
  return 2 * e * sb * width + 8 * sb;
}

// The tensors one layer keeps for backward. `e` is bytes per activation element; dropout masks
// take one byte per element.
LayerTerms layer_terms(const TransformerShape& t, double s, double b, double e, bool materialized, bool dropout) {
  const Dims d = dims_of(t);
  const double sb = s * b;
  LayerTerms terms;
  terms.linear += 2 * norm_bytes(t, sb, d.h, e);
  // Qwen3's RMSNorm of q and k: the fp32 copy and the normalised value; its output feeds the
  // rotation, which keeps nothing of it.
  if (t.qk_norm) terms.linear += (4 + e) * sb * (d.q + d.kv) + 4 * sb;
  if (materialized) {
    // Eager attention (and SDPA's math fallback) repeats grouped K and V to every head before the
    // products, keeps the softmax output, and the projection reads a contiguous copy of the output.
    terms.linear += e * sb * (3 * d.q) + e * sb * d.q;
    terms.quadratic += e * d.a * s * s * b;
    if (dropout) terms.quadratic += d.a * s * s * b + e * d.a * s * s * b;  // the scores' dropout mask and output
  } else {
    // Fused kernels keep Q, K, V (after rotary), the output, which the projection reads in place,
    // and a fp32 log-sum-exp per row and head.
    terms.linear += e * sb * (d.q + 2 * d.kv) + e * sb * d.q + 4 * sb * d.a;
  }
  // MLP: GELU's input and output, or SwiGLU's gate, up, SiLU(gate) and product.
  terms.linear += (t.gated_mlp ? 4 : 2) * e * sb * d.f;
  if (dropout) terms.linear += 2 * sb * d.h;  // the attention and MLP output dropout masks
  return terms;
}

// Beyond the layers: the embedding's ids and the batch on the device (int64), the final norm, the
// logits in the training dtype (the loss turns them into their own gradient in place), and the
// loss's per-row target and log-sum-exp.
double outside_layers_bytes(const TransformerShape& t, double sb, double e) {
  const Dims d = dims_of(t);
  return norm_bytes(t, sb, d.h, e) + e * sb * d.vocab + (8 + 16 + 8 + 4) * sb;
}

// Fused attention asked for but not what runs: SDPA has no fused fp32 kernel for grouped K/V
// (flash needs 16-bit, memory-efficient no GQA), so it takes the math path, scores and all.
bool falls_back_to_math(const TransformerShape& t, Precision precision) {
  return precision == Precision::kFp32 && t.effective_kv_heads() < t.heads;
}

void fill_phases(ActivationEstimate& r, const LayerTerms& terms, const TransformerShape& t,
                 const WorkloadSettings& workload, double e, int gpus_per_node) {
  const Dims d = dims_of(t);
  const double s = static_cast<double>(r.seq_len), b = static_cast<double>(r.micro_batch), sb = s * b;
  const double L = static_cast<double>(t.layers);
  r.head_working_bytes = e * d.vocab * d.h + e * sb * d.h;
  r.layer_working_bytes = 2 * e * sb * d.f + 2 * e * sb * d.h + (r.scores_materialized ? 2 * e * d.a * s * s * b : 0);
  switch (workload.checkpointing) {
    case ActivationCheckpointing::kNone:
      r.stored_per_layer_bytes = r.per_layer_bytes;
      r.formula = formatted("L x per-layer + outside = %g x %.4g B + %.4g B", L, r.per_layer_bytes, r.outside_layers_bytes);
      break;
    case ActivationCheckpointing::kSelective:
      // Selective recomputation keeps everything but the attention-score terms (the paper's 34sbh).
      r.stored_per_layer_bytes = terms.linear;
      r.recompute_bytes = terms.quadratic;
      r.formula = formatted("L x (per-layer without s^2 terms) + outside = %g x %.4g B + %.4g B (selective recomputation, "
                      "Korthikanti et al. 2022)", L, r.stored_per_layer_bytes, r.outside_layers_bytes);
      break;
    case ActivationCheckpointing::kFull:
      // Each layer keeps its input; backward rebuilds one layer at a time.
      r.stored_per_layer_bytes = e * sb * d.h;
      r.recompute_bytes = r.per_layer_bytes;
      r.formula = formatted("L x %g*sbh (layer inputs) + outside = %g x %.4g B + %.4g B; backward rebuilds one layer", e, L,
                      r.stored_per_layer_bytes, r.outside_layers_bytes);
      break;
  }
  double kept = L * r.stored_per_layer_bytes;
  if (workload.cpu_checkpointing && workload.checkpointing == ActivationCheckpointing::kFull) {
    r.cpu_bytes_per_node = kept * gpus_per_node;  // checkpoints live in host memory instead
    kept = 0;
    r.formula += "; checkpoints in host memory (cpu_checkpointing)";
  }
  r.stored_bytes = kept + r.outside_layers_bytes;
  r.head_phase_bytes = r.stored_bytes + r.head_working_bytes;
  // By the last layer's backward the logits and the head's terms are gone.
  r.layer_phase_bytes = kept + r.recompute_bytes + r.layer_working_bytes;
  r.total_bytes = std::max(r.head_phase_bytes, r.layer_phase_bytes);
  r.formula += formatted("; peak = max(head phase %.4g B, last-layer phase %.4g B)", r.head_phase_bytes, r.layer_phase_bytes);
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
  const double s = static_cast<double>(r.seq_len), b = static_cast<double>(r.micro_batch);
  const double e = precision == Precision::kFp32 ? 4 : 2;
  r.scores_materialized = workload.attention == AttentionKernel::kMaterialized;
  if (!r.scores_materialized && falls_back_to_math(t, precision)) {
    r.scores_materialized = true;
    r.attention_note = "fp32 with grouped K/V heads: scaled_dot_product_attention has no fused kernel for it and keeps "
                       "the s x s scores (its math path)";
  }
  const LayerTerms terms = layer_terms(t, s, b, e, r.scores_materialized, workload.dropout);
  r.per_layer_bytes = terms.linear + terms.quadratic;
  r.outside_layers_bytes = outside_layers_bytes(t, s * b, e);
  fill_phases(r, terms, t, workload, e, gpus_per_node);
  r.bytes_per_sample = b > 0 ? r.total_bytes / b : 0;
  return r;
}

}  // namespace shardscope::estimator
