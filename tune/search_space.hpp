#pragma once
// The space `shardscope tune` searches: dimensions of dotted ds_config keys, each with the values
// to try, and the candidates (one value per dimension) they span. A candidate's config is the
// user's file with exactly the tuned keys changed (candidate_config.hpp). docs/tune.md, "Space".

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope::tune {

/// The pseudo-key of activation checkpointing: true writes an activation_checkpointing block (what
/// makes the engine's built-in models recompute each block), false leaves it out.
inline constexpr const char* kCheckpointingKey = "activation_checkpointing";
inline constexpr const char* kMicroBatchKey = "train_micro_batch_size_per_gpu";
inline constexpr const char* kAccumulationKey = "gradient_accumulation_steps";

/// One dotted key and the values to try; a null value means "the key left out" (DeepSpeed's default).
struct Dimension {
  std::string key;
  std::vector<nlohmann::json> values;
  std::string origin;  ///< "--space", "default" or "autotuning"
};

/// One value per dimension, in dimension order (plus gradient_accumulation_steps when derived).
using Assignment = std::vector<std::pair<std::string, nlohmann::json>>;

struct SearchSpace {
  std::vector<Dimension> dimensions;
  /// train_batch_size of the user's file: the micro-batch then fixes gradient accumulation.
  std::optional<std::int64_t> global_batch;
  int world_size = 1;
};

/// What the default space depends on besides the user's config.
struct DefaultSpaceOptions {
  std::int64_t min_micro_batch = 1;     ///< autotuning.min_train_micro_batch_size_per_gpu
  std::int64_t max_micro_batch = 64;    ///< autotuning.max_train_micro_batch_size_per_gpu (capped, see docs)
  bool fast = true;                     ///< autotuning.fast: false adds the bucket sizes
};

/// Parses one --space flag, KEY=V1,V2,...; each value is JSON when it parses (4, 5e8, true,
/// "cpu"), else a string; `none`/`null`/`default` mean the key left out. Throws TuneError naming
/// the flag for a missing '=', an empty key or no values.
Dimension parse_space_flag(const std::string& text);

/// ZeRO stage 0-3, micro-batch powers of two in [min, max], activation checkpointing, optimizer
/// and parameter offload (cpu; nvme where the block has an nvme_path), and with !fast the bucket
/// sizes; dimensions the user gave with --space replace the default of the same key.
SearchSpace default_search_space(const nlohmann::json& user_config, int world_size, const DefaultSpaceOptions& options,
                                 const std::vector<Dimension>& given);

/// Every assignment of the space in grid order (the last dimension varies fastest), gradient
/// accumulation derived for a fixed global batch; micro-batches that do not divide it are skipped.
std::vector<Assignment> enumerate_assignments(const SearchSpace& space);

/// The number of grid points before any filtering (product of the dimensions' sizes).
std::size_t grid_size(const SearchSpace& space);

}  // namespace shardscope::tune
