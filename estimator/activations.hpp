#pragma once
// Activation memory of a decoder transformer per GPU: the tensors autograd keeps for backward,
// counted as the engine's built-in models keep them (docs/estimator.md, "Activations"), which is
// also how current Hugging Face decoders keep them with scaled_dot_product_attention. With
// materialised attention scores and dropout, a GPT layer is Korthikanti et al. 2022 ("Reducing
// Activation Recomputation in Large Transformer Models", arXiv:2205.05198, section 4.1)
// s*b*h*(34 + 5*a*s/h) bytes, plus the norms' fp32 statistics the paper leaves out. Beyond the
// layers: the final norm, the logits in the training dtype and the loss's per-row terms. The
// backward adds two working sets, of which the larger sets the peak: at its start the LM head's
// weight and input gradients beside the logits; at the last layer that layer's gradient
// intermediates (and, with checkpointing, its recomputed activations). ZeRO shards no
// activations: the numbers are the same at every stage.

#include <string>

#include "estimator/estimate_options.hpp"
#include "estimator/model_description.hpp"

namespace shardscope::estimator {

struct ActivationEstimate {
  bool available = false;  ///< false when the model has no transformer shape
  std::string unavailable_reason;
  long long micro_batch = 0;
  long long seq_len = 0;
  bool scores_materialized = false;  ///< the s x s scores are kept (asked for, or the kernel falls back)
  std::string attention_note;        ///< why the scores are kept when fused attention was asked for
  double per_layer_bytes = 0;        ///< one layer, everything stored (no checkpointing)
  double stored_per_layer_bytes = 0; ///< what each layer keeps until backward under the mode
  double recompute_bytes = 0;        ///< one layer's activations rebuilt during backward (checkpointing)
  double outside_layers_bytes = 0;   ///< embedding ids, final norm, logits, the loss's row terms
  double head_working_bytes = 0;     ///< backward's start: the LM head's weight and input gradients
  double layer_working_bytes = 0;    ///< the last layer's backward: its gradient intermediates
  double stored_bytes = 0;           ///< everything kept on the GPU at the end of forward
  double head_phase_bytes = 0;       ///< stored + head working set
  double layer_phase_bytes = 0;      ///< what is kept at the last layer's backward + its working set
  double total_bytes = 0;            ///< per GPU at the peak: the larger phase
  double cpu_bytes_per_node = 0;     ///< checkpoints moved to host memory (cpu_checkpointing)
  double bytes_per_sample = 0;       ///< total / micro_batch, for "largest micro-batch that fits"
  std::string formula;
};

/// The per-layer byte count of Korthikanti et al. eq. (1): s*b*h*(34 + 5*a*s/h).
double korthikanti_layer_bytes(double s, double b, double h, double a);

/// Activation memory for the model at the workload's micro-batch and sequence length.
ActivationEstimate estimate_activations(const ModelDescription& model, const WorkloadSettings& workload,
                                        Precision precision, int gpus_per_node);

}  // namespace shardscope::estimator
