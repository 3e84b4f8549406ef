#include "engine/data/sharded_sampler.hpp"

#include <string>

#include "engine/data/data_error.hpp"
#include "engine/data/sample_rng.hpp"

namespace shardscope::engine {
namespace {

constexpr int kFeistelRounds = 6;

// A balanced Feistel network over 2 * half_bits bits is a bijection for any round function;
// cycle-walking (applying it again until the value falls below n) restricts it to [0, n).
// The domain is under 4n, so fewer than 4 walks are expected.
std::uint64_t feistel(std::uint64_t value, int half_bits, std::uint64_t key) {
  const std::uint64_t mask = (std::uint64_t{1} << half_bits) - 1;
  std::uint64_t left = value >> half_bits, right = value & mask;
  for (int round = 0; round < kFeistelRounds; ++round) {
    const std::uint64_t f = mix64(right ^ mix64(key + static_cast<std::uint64_t>(round))) & mask;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits) | right;
}

}  // namespace

ShardedSampler::ShardedSampler(const SamplerOptions& options) : options_(options) {
  if (options_.num_samples <= 0)
    throw DataError("data loader: the dataset holds no samples (" + std::to_string(options_.num_samples) + ")");
  if (options_.world_size <= 0 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw DataError("data loader: rank " + std::to_string(options_.rank) + " is outside a world of " +
                    std::to_string(options_.world_size) + " (RANK must lie in [0, WORLD_SIZE))");
  per_rank_ = (options_.num_samples + options_.world_size - 1) / options_.world_size;
  while ((std::uint64_t{1} << (2 * half_bits_)) < static_cast<std::uint64_t>(options_.num_samples)) ++half_bits_;
}

std::int64_t ShardedSampler::epoch_order(std::int64_t epoch, std::int64_t global) const {
  if (!options_.shuffle) return global;
  const std::uint64_t key = mix64(options_.seed ^ mix64(static_cast<std::uint64_t>(epoch)));
  auto value = static_cast<std::uint64_t>(global);
  do {
    value = feistel(value, half_bits_, key);
  } while (value >= static_cast<std::uint64_t>(options_.num_samples));
  return static_cast<std::int64_t>(value);
}

std::int64_t ShardedSampler::sample(std::int64_t epoch, std::int64_t position) const {
  std::int64_t global = options_.rank + position * options_.world_size;
  // DistributedSampler pads the order with its own start to a multiple of the world size.
  global %= options_.num_samples;
  return epoch_order(epoch, global);
}

}  // namespace shardscope::engine
