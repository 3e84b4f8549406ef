#pragma once
// The flops profiler for the built-in models: their whole module tree with Hugging Face names
// (GPT2LMHeadModel, LlamaForCausalLM, the regression MLP) and, per module, the parameters, MACs
// and FLOPs DeepSpeed's profiler counts for one forward of a micro-batch (profiler/
// flops_counter.hpp); and print_model_profile()'s text and JSON for a profiled step. Counts come
// from the spec, not from hooks on the live model, so this file needs no torch. ShardScope does
// not time each module: the top module carries the engine's forward timer, the rest show 0 s,
// and the text says so (docs/profiler.md, "FLOPs profile of the built-in models").

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "configs/config_model.hpp"
#include "engine/models/model_spec.hpp"
#include "profiler/flops_counter.hpp"

namespace shardscope::engine {

/// The module tree of the built-in model `spec` for one forward of `micro_batch` samples
/// (decoders: micro_batch x shape.seq_len tokens); throws ModelError for a bad spec or batch.
profiler::ModuleProfile model_module_profile(const ModelSpec& spec, std::int64_t micro_batch);

/// Forward FLOPs of one micro-batch as DeepSpeed counts them (the tree's total).
double model_forward_flops(const ModelSpec& spec, std::int64_t micro_batch);

/// print_model_profile()'s text for the profiled step: module_depth, top_modules, detailed and
/// recompute_fwd_factor from `config`; fwd_ms is the top module's latency and the fwd line;
/// bwd_ms and step_ms add the bwd/step/iter lines (pass negative values when not timed).
std::string model_flops_report(const ModelSpec& spec, std::int64_t micro_batch,
                               const configs::FlopsProfilerConfig& config, int world_size, double fwd_ms,
                               double bwd_ms, double step_ms);

/// The same profile as JSON (profiler::model_profile_to_json plus "model", "micro_batch",
/// "tokens_per_micro_batch", "per_module_latency_measured": false and "notes").
nlohmann::json model_flops_report_json(const ModelSpec& spec, std::int64_t micro_batch,
                                       const configs::FlopsProfilerConfig& config, int world_size, double fwd_ms,
                                       double bwd_ms, double step_ms);

}  // namespace shardscope::engine
