#pragma once
// Which samples each rank reads, as torch's DistributedSampler decides it (drop_last=False):
// the epoch's order (0..N-1, or a seeded shuffle identical on every rank) is padded by repeating
// its start up to a multiple of the world size, and rank r takes positions r, r+w, r+2w, ...
// The shuffle is a keyed Feistel permutation computed per index, so a billion-window token file
// needs no index array; it is not torch.randperm's order (same guarantees, different draw).

#include <cstdint>

namespace shardscope::engine {

/// Where a rank's loader stands: what a checkpoint saves to resume the data exactly.
struct DataPosition {
  std::int64_t epoch = 0;
  std::int64_t index = 0;  ///< samples this rank has consumed in the epoch
  bool operator==(const DataPosition& other) const { return epoch == other.epoch && index == other.index; }
};

struct SamplerOptions {
  std::int64_t num_samples = 0;
  int rank = 0;
  int world_size = 1;
  bool shuffle = true;
  std::uint64_t seed = 0;  ///< DistributedSampler's default; epoch e shuffles with (seed, e)
};

class ShardedSampler {
 public:
  /// Throws DataError for an empty dataset or a rank outside [0, world_size).
  explicit ShardedSampler(const SamplerOptions& options);

  /// Samples per rank per epoch: ceil(N / world_size).
  std::int64_t samples_per_rank() const { return per_rank_; }
  /// The dataset index of this rank's `position`-th sample in `epoch`.
  std::int64_t sample(std::int64_t epoch, std::int64_t position) const;
  /// Position `global` of the epoch's (shuffled or plain) order, before the split by rank.
  std::int64_t epoch_order(std::int64_t epoch, std::int64_t global) const;
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  std::int64_t per_rank_ = 0;
  int half_bits_ = 1;  ///< the Feistel network permutes 2 * half_bits_ bits
};

}  // namespace shardscope::engine
