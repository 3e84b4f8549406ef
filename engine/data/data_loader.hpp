#pragma once
// The engine's data loader, as DeepSpeed's deepspeed_io builds one: a DistributedSampler-like
// split of a dataset by rank, micro-batches of a fixed size, epochs that follow each other
// without end, and a position (epoch, index) a checkpoint saves to resume exactly.

#include <cstdint>
#include <memory>

#include "engine/data/sample_dataset.hpp"
#include "engine/data/sharded_sampler.hpp"
#include "engine/models/batch.hpp"

namespace shardscope::engine {

struct DataLoaderOptions {
  std::int64_t micro_batch_size = 1;
  int rank = 0;
  int world_size = 1;
  bool shuffle = true;     ///< DistributedSampler's default
  std::uint64_t seed = 0;  ///< the shuffle's seed, the same on every rank
  /// Drop an epoch's last, incomplete micro-batch (DeepSpeed's dataloader_drop_last, default false).
  bool drop_last = false;
};

class ShardedDataLoader {
 public:
  /// Throws DataError for a micro-batch size below 1, a rank outside the world, or (with
  /// drop_last) a rank share smaller than one micro-batch.
  ShardedDataLoader(std::shared_ptr<const SampleDataset> dataset, const DataLoaderOptions& options);

  /// The next micro-batch (CPU); after an epoch's last one, the next epoch starts.
  Batch next();
  /// The dataset indices next() would return, without advancing (for tests and logs).
  std::vector<std::int64_t> peek_indices() const;
  /// Where the loader stands: saved in checkpoints.
  DataPosition position() const { return position_; }
  /// Resumes at a saved position; throws DataError if it lies outside an epoch of this loader.
  void set_position(const DataPosition& position);
  /// Micro-batches per epoch on this rank.
  std::int64_t batches_per_epoch() const;
  const SampleDataset& dataset() const { return *dataset_; }
  const ShardedSampler& sampler() const { return sampler_; }

 private:
  std::shared_ptr<const SampleDataset> dataset_;
  DataLoaderOptions options_;
  ShardedSampler sampler_;
  DataPosition position_;
};

}  // namespace shardscope::engine
