#pragma once
// Activation memory of a decoder transformer per GPU, after Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models" (arXiv:2205.05198), section 4.1: with
// 16-bit activations and no tensor parallelism one layer stores
//     s*b*h*(34 + 5*a*s/h) bytes
// = attention 11sbh + 5as^2b (QKV input, Q and K, softmax output and its dropout mask, dropout
//   output, V, projection input, output dropout mask) + MLP 19sbh + two LayerNorm inputs 4sbh.
// We generalise the same bookkeeping to ffn != 4h, SwiGLU, grouped KV heads, no dropout, fp32
// activations and fused (flash) attention; for GPT-2 with ffn = 4h it equals the formula above
// exactly. Beyond the layers: the final norm input and embedding output (4sbh) and the logits
// kept in fp32 for the loss (4sbV), as the paper counts them. ZeRO shards no activations: the
// number is the same at every stage. See docs/estimator.md for the derivation.

#include <string>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct ActivationEstimate {
  bool available = false;  ///< false when the model has no transformer shape
  std::string unavailable_reason;
  long long micro_batch = 0;
  long long seq_len = 0;
  double per_layer_bytes = 0;     ///< one layer, everything stored (no checkpointing)
  double stored_per_layer_bytes = 0;  ///< what each layer keeps until backward under the mode
  double recompute_bytes = 0;     ///< one layer's activations rebuilt during backward (checkpointing)
  double outside_layers_bytes = 0;  ///< embedding output, final norm, fp32 logits
  double total_bytes = 0;         ///< per GPU at the peak
  double cpu_bytes_per_node = 0;  ///< checkpoints moved to host memory (cpu_checkpointing)
  double bytes_per_sample = 0;    ///< total / micro_batch, for "largest micro-batch that fits"
  std::string formula;
};

/// The per-layer byte count of Korthikanti et al. eq. (1): s*b*h*(34 + 5*a*s/h).
double korthikanti_layer_bytes(double s, double b, double h, double a);

/// Activation memory for the model at the workload's micro-batch and sequence length.
ActivationEstimate estimate_activations(const ModelDescription& model, const WorkloadSettings& workload,
                                        Precision precision, int gpus_per_node);

}  // namespace shardscope::estimator
