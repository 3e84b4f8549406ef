#include "engine/data/sample_dataset.hpp"

#include <utility>

#include "engine/data/data_error.hpp"
#include "engine/data/sample_rng.hpp"

namespace shardscope::engine {
namespace {

// Sample streams use their index; the dataset's own draws (successor table, true W and b) use a
// stream no index reaches.
constexpr std::uint64_t kDatasetStream = ~std::uint64_t{0};

void require_positive(std::int64_t value, const std::string& what) {
  if (value <= 0) throw DataError("data: " + what + " must be positive, got " + std::to_string(value));
}

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Splits windows of seq_len + 1 tokens [B, T+1] into inputs [B, T] and next-token targets.
Batch split_windows(const torch::Tensor& windows) {
  const auto t = windows.size(1) - 1;
  return {windows.narrow(1, 0, t).contiguous(), windows.narrow(1, 1, t).contiguous()};
}

}  // namespace

SyntheticTokenDataset::SyntheticTokenDataset(const SyntheticTokenOptions& options) : options_(options) {
  require_positive(options_.vocab, "synthetic vocab");
  require_positive(options_.seq_len, "synthetic seq_len");
  require_positive(options_.num_samples, "synthetic sample count");
  if (!(options_.successor_probability >= 0.0 && options_.successor_probability <= 1.0))
    throw DataError("data: synthetic successor probability must lie in [0, 1], got " +
                    std::to_string(options_.successor_probability));
  if (options_.successor_probability > 0) {
    successor_.resize(static_cast<std::size_t>(options_.vocab));
    for (std::int64_t i = 0; i < options_.vocab; ++i) successor_[static_cast<std::size_t>(i)] = i;
    SampleRng rng(options_.seed, kDatasetStream);
    for (std::int64_t i = options_.vocab - 1; i > 0; --i)  // Fisher-Yates
      std::swap(successor_[static_cast<std::size_t>(i)],
                successor_[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  }
}

Batch SyntheticTokenDataset::collate(const std::vector<std::int64_t>& indices) const {
  const auto n = static_cast<std::int64_t>(indices.size()), len = options_.seq_len + 1;
  auto windows = torch::empty({n, len}, torch::kLong);
  auto* out = windows.data_ptr<std::int64_t>();
  const auto vocab = static_cast<std::uint64_t>(options_.vocab);
  const double p = options_.successor_probability;
  for (std::int64_t row = 0; row < n; ++row) {
    SampleRng rng(options_.seed, static_cast<std::uint64_t>(indices[static_cast<std::size_t>(row)]));
    std::int64_t* tokens = out + row * len;
    tokens[0] = static_cast<std::int64_t>(rng.below(vocab));
    for (std::int64_t t = 1; t < len; ++t)
      tokens[t] = p > 0 && rng.uniform() < p ? successor_[static_cast<std::size_t>(tokens[t - 1])]
                                             : static_cast<std::int64_t>(rng.below(vocab));
  }
  return split_windows(windows);
}

std::string SyntheticTokenDataset::describe() const {
  return "synthetic tokens: " + with_commas(options_.num_samples) + " samples of " +
         std::to_string(options_.seq_len + 1) + " tokens, vocab " + std::to_string(options_.vocab) + ", seed " +
         std::to_string(options_.seed) +
         (options_.successor_probability > 0 ? ", successor p " + std::to_string(options_.successor_probability) : "");
}

TokenFileDataset::TokenFileDataset(const TokenFileOptions& options) : options_(options) {
  require_positive(options_.seq_len, "seq_len");
  if (options_.stride == 0) options_.stride = options_.seq_len;
  require_positive(options_.stride, "token window stride");
  file_ = std::make_unique<TokenFile>(options_.path, options_.format);
  const auto tokens = file_->num_tokens();
  if (tokens < options_.seq_len + 1)
    throw DataError(options_.path + ": holds " + std::to_string(tokens) + " tokens, fewer than one window of seq_len + 1 = " +
                    std::to_string(options_.seq_len + 1) + "; use a larger file or a shorter sequence");
  windows_ = (tokens - options_.seq_len - 1) / options_.stride + 1;
}

Batch TokenFileDataset::collate(const std::vector<std::int64_t>& indices) const {
  const auto n = static_cast<std::int64_t>(indices.size()), len = options_.seq_len + 1;
  auto windows = torch::empty({n, len}, torch::kLong);
  auto* out = windows.data_ptr<std::int64_t>();
  for (std::int64_t row = 0; row < n; ++row)
    file_->read(indices[static_cast<std::size_t>(row)] * options_.stride, len, options_.vocab, out + row * len);
  return split_windows(windows);
}

std::string TokenFileDataset::describe() const {
  return options_.path + ": " + with_commas(file_->num_tokens()) + (file_->bytes_per_token() == 2 ? " uint16" : " uint32") +
         " tokens" + (file_->has_llmc_header() ? " (llm.c header)" : "") + ", " + with_commas(windows_) +
         " windows of " + std::to_string(options_.seq_len + 1) + " (stride " + std::to_string(options_.stride) + ")";
}

RegressionDataset::RegressionDataset(const RegressionOptions& options) : options_(options) {
  require_positive(options_.input_dim, "regression input_dim");
  require_positive(options_.output_dim, "regression output_dim");
  require_positive(options_.num_samples, "regression sample count");
  if (!(options_.noise >= 0)) throw DataError("data: regression noise must not be negative");
  SampleRng rng(options_.seed, kDatasetStream);
  weight_.resize(static_cast<std::size_t>(options_.input_dim * options_.output_dim));
  for (auto& w : weight_) w = static_cast<float>(rng.normal());
  bias_.resize(static_cast<std::size_t>(options_.output_dim));
  for (auto& b : bias_) b = static_cast<float>(rng.normal());
}

Batch RegressionDataset::collate(const std::vector<std::int64_t>& indices) const {
  const auto n = static_cast<std::int64_t>(indices.size()), in = options_.input_dim, out = options_.output_dim;
  auto x = torch::empty({n, in}, torch::kFloat);
  auto y = torch::empty({n, out}, torch::kFloat);
  float* xs = x.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  for (std::int64_t row = 0; row < n; ++row) {
    SampleRng rng(options_.seed, static_cast<std::uint64_t>(indices[static_cast<std::size_t>(row)]));
    float* xr = xs + row * in;
    for (std::int64_t i = 0; i < in; ++i) xr[i] = static_cast<float>(rng.normal());
    for (std::int64_t o = 0; o < out; ++o) {
      double v = bias_[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i) v += static_cast<double>(xr[i]) * weight_[static_cast<std::size_t>(i * out + o)];
      ys[row * out + o] = static_cast<float>(v + options_.noise * rng.normal());
    }
  }
  return {x, y};
}

std::string RegressionDataset::describe() const {
  return "regression: " + with_commas(options_.num_samples) + " samples, y = x W + b + N(0, " +
         std::to_string(options_.noise) + "^2), x in R^" + std::to_string(options_.input_dim) + ", y in R^" +
         std::to_string(options_.output_dim) + ", seed " + std::to_string(options_.seed);
}

torch::Tensor RegressionDataset::weight() const {
  return torch::tensor(weight_).view({options_.input_dim, options_.output_dim});
}

torch::Tensor RegressionDataset::bias() const { return torch::tensor(bias_); }

}  // namespace shardscope::engine
