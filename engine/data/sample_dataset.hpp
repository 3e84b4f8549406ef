#pragma once
// The sources of samples the loader shards: seeded synthetic tokens, windows of a token file,
// and the MLP's seeded regression data. A sample is a pure function of its index, so any rank
// can build any sample, in any order, after any resume.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/token_file.hpp"
#include "engine/models/batch.hpp"

namespace shardscope::engine {

class SampleDataset {
 public:
  virtual ~SampleDataset() = default;
  /// Number of samples.
  virtual std::int64_t size() const = 0;
  /// The samples at `indices`, stacked into one batch (CPU).
  virtual Batch collate(const std::vector<std::int64_t>& indices) const = 0;
  /// One line for logs, e.g. "train.bin: 9,035,582 uint16 tokens, 35,295 windows of 257".
  virtual std::string describe() const = 0;
};

struct SyntheticTokenOptions {
  std::int64_t vocab = 50304;
  std::int64_t seq_len = 256;
  std::int64_t num_samples = 1 << 20;
  std::uint64_t seed = 1234;
  /// 0: independent uniform tokens (what DeepSpeed's benchmarks feed). p > 0: each next token is
  /// a fixed seeded successor of the previous one with probability p, so a model can learn.
  double successor_probability = 0.0;
};

/// Sample i: seq_len + 1 tokens drawn from (seed, i); inputs are the first seq_len, targets the last.
class SyntheticTokenDataset : public SampleDataset {
 public:
  /// Throws DataError for a non-positive size or a probability outside [0, 1].
  explicit SyntheticTokenDataset(const SyntheticTokenOptions& options);
  std::int64_t size() const override { return options_.num_samples; }
  Batch collate(const std::vector<std::int64_t>& indices) const override;
  std::string describe() const override;

 private:
  SyntheticTokenOptions options_;
  std::vector<std::int64_t> successor_;  ///< a seeded permutation of the vocabulary
};

struct TokenFileOptions {
  std::string path;
  TokenFormat format = TokenFormat::kAuto;
  std::int64_t vocab = 0;  ///< tokens must lie below it; 0 = unchecked
  std::int64_t seq_len = 256;
  std::int64_t stride = 0;  ///< tokens between window starts; 0 = seq_len (each token once)
};

/// Sample i: the window of seq_len + 1 tokens starting at i x stride. Shuffled by the sampler,
/// these are nanoGPT's random windows (stride 1: every offset) without replacement.
class TokenFileDataset : public SampleDataset {
 public:
  /// Opens the file; throws DataError if it holds fewer than seq_len + 1 tokens.
  explicit TokenFileDataset(const TokenFileOptions& options);
  std::int64_t size() const override { return windows_; }
  Batch collate(const std::vector<std::int64_t>& indices) const override;
  std::string describe() const override;
  const TokenFile& file() const { return *file_; }

 private:
  TokenFileOptions options_;
  std::unique_ptr<TokenFile> file_;
  std::int64_t windows_ = 0;
};

struct RegressionOptions {
  std::int64_t input_dim = 16;
  std::int64_t output_dim = 1;
  std::int64_t num_samples = 4096;
  std::uint64_t seed = 1234;
  double noise = 0.1;  ///< std of the Gaussian noise added to y
};

/// Sample i: x ~ N(0, I) from (seed, i); y = x W + b + noise, with W and b drawn from the seed.
class RegressionDataset : public SampleDataset {
 public:
  /// Throws DataError for a non-positive dimension or size, or negative noise.
  explicit RegressionDataset(const RegressionOptions& options);
  std::int64_t size() const override { return options_.num_samples; }
  Batch collate(const std::vector<std::int64_t>& indices) const override;
  std::string describe() const override;
  /// The true map: W [input_dim, output_dim] and b [output_dim], as float tensors.
  torch::Tensor weight() const;
  torch::Tensor bias() const;

 private:
  RegressionOptions options_;
  std::vector<float> weight_;  ///< row-major [input_dim, output_dim]
  std::vector<float> bias_;
};

}  // namespace shardscope::engine
