#pragma once
// The flags of `shardscope train` and the model they describe, shared by `train` (the engine
// module) and `tune` (the executable, which reads the model for the estimator before any trial).

#include <cstdint>
#include <string>

#include "app/cli/arg_parser.hpp"
#include "engine/models/model_spec.hpp"

namespace shardscope::app {

/// The parser of `shardscope train`'s flags.
ArgParser train_parser();
/// The integer flag `name`, which must be positive; `fallback` when absent. Throws UsageError.
std::int64_t positive_train_flag(const ParsedArgs& p, const std::string& name, std::int64_t fallback);
/// The built-in model the flags describe (--model, --model-config, sizes, --activation-checkpointing).
engine::ModelSpec train_model_spec(const ParsedArgs& p);

}  // namespace shardscope::app
