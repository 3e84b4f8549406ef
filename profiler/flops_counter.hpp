#pragma once
// DeepSpeed's flops profiler (profiling/flops_profiler/profiler.py) without torch: the FLOPs and
// MACs DeepSpeed counts for each functional op, a module tree carrying them with parameters and
// measured latency, and print_model_profile()'s text (docs/profiler.md, "FLOPs"). The engine
// fills the tree from its models; gpt2_block_profile / llama_block_profile build the built-in
// decoder blocks.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardscope::profiler {

using Shape = std::vector<std::int64_t>;

struct OpCount {
  double flops = 0;
  double macs = 0;
};

/// F.linear: macs = numel(input) * out_features, flops = 2 macs (DeepSpeed leaves the bias out).
OpCount linear_op(const Shape& input, std::int64_t out_features);
/// torch.addmm(bias, mat1, mat2) (HF Conv1D): macs = numel(mat1) * mat2[-1], flops = 2 macs + numel(bias).
OpCount addmm_op(const Shape& bias, const Shape& mat1, const Shape& mat2);
/// matmul / mm / bmm: macs = numel(a) * b[-1], flops = 2 macs.
OpCount matmul_op(const Shape& a, const Shape& b);
/// F.layer_norm (also group/instance norm): flops = numel * (5 with weight, 4 without), no MACs.
OpCount layer_norm_op(const Shape& input, bool affine);
/// F.rms_norm, estimated as DeepSpeed estimates layer_norm (5 or 4 per element).
OpCount rms_norm_op(const Shape& input, bool affine);
/// relu, gelu, silu, elu, leaky_relu, softmax, pooling: flops = numel(input).
OpCount activation_op(const Shape& input);
/// torch.add / torch.mul: flops = numel of the broadcast shape. (The `+` and `*` operators are not
/// patched by DeepSpeed and count nothing.)
OpCount elementwise_op(const Shape& a, const Shape& b);
/// F.scaled_dot_product_attention: macs = numel(q) * k[-2] + numel(q[:-1]) * k[-2] * v[-1], flops = 2 macs.
OpCount attention_op(const Shape& q, const Shape& k, const Shape& v);
/// F.embedding and F.dropout count nothing.
OpCount embedding_op();
OpCount dropout_op();

/// One module of the profiled model. Counts are of the ops run directly in its forward; children
/// add their own (DeepSpeed's __flops__ and get_module_flops()).
struct ModuleProfile {
  std::string name;        ///< attribute name in the parent ("attn", "0"); "" for the root
  std::string type;        ///< class name ("GPT2Block", "Linear", "ModuleList")
  std::string extra_repr;  ///< the module's own repr detail ("in_features=768, out_features=2304")
  std::int64_t params = 0; ///< trainable parameters registered directly on this module
  double flops = 0;
  double macs = 0;
  double latency_ms = 0;   ///< measured forward time; 0 = none (a ModuleList: its children's sum)
  std::vector<ModuleProfile> children;

  /// Adds an op's counts to this module.
  ModuleProfile& add(const OpCount& op);
};

/// A module whose own forward runs `op`, as DeepSpeed's profile prints it (children added later).
ModuleProfile leaf_module(const std::string& name, const std::string& type, const std::string& extra_repr,
                          std::int64_t params, const OpCount& op = {});
/// nn.Linear(in, out) applied to `input` (last dimension = in): F.linear.
ModuleProfile linear_module(const std::string& name, const Shape& input, std::int64_t out, bool bias);
/// HF Conv1D(in, out) applied to `input` (last dimension = in): addmm(bias, x.view(-1, in), W), or
/// mm without a bias.
ModuleProfile conv1d_module(const std::string& name, const Shape& input, std::int64_t out, bool bias);

/// Recursive totals, as DeepSpeed's __params__, get_module_flops/macs/duration.
std::int64_t total_params(const ModuleProfile& module);
double total_flops(const ModuleProfile& module);
double total_macs(const ModuleProfile& module);
double total_latency_ms(const ModuleProfile& module);

/// The shape of one decoder block and its input.
struct DecoderBlockShape {
  std::int64_t batch = 1, seq = 1, hidden = 0, heads = 1, kv_heads = 1, ffn = 0;
  bool qkv_bias = true, attn_out_bias = true, mlp_bias = true;
};
/// HF GPT2Block: ln_1, attn (c_attn, c_proj: Conv1D = addmm), sdpa, ln_2, mlp (c_fc, gelu, c_proj).
ModuleProfile gpt2_block_profile(const DecoderBlockShape& shape);
/// HF LlamaDecoderLayer: input_layernorm, self_attn (q/k/v/o_proj), sdpa, post_attention_layernorm,
/// mlp (gate_proj, up_proj, silu, down_proj). Rotary and the SwiGLU product use `*`/`+`: uncounted.
ModuleProfile llama_block_profile(const DecoderBlockShape& shape);

/// print_model_profile()'s inputs besides the tree.
struct FlopsProfileOptions {
  std::int64_t profile_step = 1;
  int module_depth = -1;  ///< -1: every depth
  int top_modules = 1;
  bool detailed = true;
  double recompute_fwd_factor = 0;
  int world_size = 1, data_parallel_size = 1, model_parallel_size = 1;
  std::int64_t micro_batch_per_gpu = 1;
  /// From the fwd, bwd and step timers (wall_clock_breakdown); without them fwd latency is the
  /// root module's measured latency and the bwd/step/iter lines are left out, as DeepSpeed does.
  std::optional<double> fwd_latency_ms, bwd_latency_ms, step_latency_ms;
};

/// DeepSpeed's number_to_string: 1234567 -> "1.23 M" (round to 2 decimals, then %g).
std::string flops_number_to_string(double value);
/// print_model_profile()'s text, line for line.
std::string format_model_profile(const ModuleProfile& model, const FlopsProfileOptions& options);
/// {"params", "flops", "macs", "fwd_latency_ms", ..., "modules": tree with totals per module}.
nlohmann::json model_profile_to_json(const ModuleProfile& model, const FlopsProfileOptions& options);

}  // namespace shardscope::profiler
