#include "engine/data/data_loader.hpp"

#include <algorithm>
#include <string>

#include "engine/data/data_error.hpp"

namespace shardscope::engine {
namespace {

SamplerOptions sampler_options(const SampleDataset& dataset, const DataLoaderOptions& o) {
  SamplerOptions s;
  s.num_samples = dataset.size();
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.shuffle = o.shuffle;
  s.seed = o.seed;
  return s;
}

}  // namespace

ShardedDataLoader::ShardedDataLoader(std::shared_ptr<const SampleDataset> dataset, const DataLoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options), sampler_(sampler_options(*dataset_, options_)) {
  if (options_.micro_batch_size < 1)
    throw DataError("data loader: micro-batch size must be at least 1, got " + std::to_string(options_.micro_batch_size));
  if (batches_per_epoch() == 0)
    throw DataError("data loader: each rank gets " + std::to_string(sampler_.samples_per_rank()) +
                    " samples per epoch, fewer than one micro-batch of " + std::to_string(options_.micro_batch_size) +
                    " with drop_last; use more data or a smaller micro-batch");
}

std::int64_t ShardedDataLoader::batches_per_epoch() const {
  const auto per_rank = sampler_.samples_per_rank(), b = options_.micro_batch_size;
  return options_.drop_last ? per_rank / b : (per_rank + b - 1) / b;
}

std::vector<std::int64_t> ShardedDataLoader::peek_indices() const {
  DataPosition at = position_;
  const auto per_rank = sampler_.samples_per_rank();
  // A dropped or exhausted tail moves on to the next epoch.
  if (at.index >= per_rank || (options_.drop_last && at.index + options_.micro_batch_size > per_rank)) at = {at.epoch + 1, 0};
  const auto count = std::min(options_.micro_batch_size, per_rank - at.index);
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) indices[static_cast<std::size_t>(i)] = sampler_.sample(at.epoch, at.index + i);
  return indices;
}

Batch ShardedDataLoader::next() {
  const auto per_rank = sampler_.samples_per_rank();
  if (position_.index >= per_rank || (options_.drop_last && position_.index + options_.micro_batch_size > per_rank))
    position_ = {position_.epoch + 1, 0};
  const auto indices = peek_indices();
  position_.index += static_cast<std::int64_t>(indices.size());
  return dataset_->collate(indices);
}

void ShardedDataLoader::set_position(const DataPosition& position) {
  if (position.epoch < 0 || position.index < 0 || position.index > sampler_.samples_per_rank())
    throw DataError("data loader: saved position (epoch " + std::to_string(position.epoch) + ", index " +
                    std::to_string(position.index) + ") does not fit this loader's " +
                    std::to_string(sampler_.samples_per_rank()) +
                    " samples per rank; was the checkpoint made with other data or another world size?");
  position_ = position;
}

}  // namespace shardscope::engine
