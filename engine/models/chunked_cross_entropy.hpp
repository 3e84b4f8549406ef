#pragma once
// The language models' loss: the mean cross-entropy of logits against target ids, as
// F.cross_entropy(logits.float(), targets, ignore_index) computes it, in fp32, but without the
// vocabulary-sized fp32 tensors. F.cross_entropy on 16-bit logits keeps an fp32 log-softmax for
// backward and builds two more fp32 tensors of that size in it (for GPT-2's 50k vocabulary at 4k
// tokens, 0.8 GB each, at the moment activations peak). Here the forward keeps the 16-bit logits
// and one fp32 log-sum-exp per row; the backward builds the gradient a block of rows at a time,
// straight in the logits' dtype. On a GPU (a CUDA build) the loss is instead two fused kernel
// passes over the logits (kernels/cuda_cross_entropy.hpp): no fp32 temporary at all.

#include <cstdint>

#include <torch/torch.h>

namespace shardscope::engine {

/// `logits` [N, V] (any floating dtype), `targets` [N] class ids; rows whose target is
/// `ignore_index` do not count. Returns the mean over the counted rows (NaN when none counts, as
/// PyTorch's mean reduction gives). A block of rows takes about `block_elements` fp32 elements of
/// temporary memory (default 128 MiB).
torch::Tensor chunked_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                    std::int64_t ignore_index = -100, std::int64_t block_elements = 32 << 20);

struct CrossEntropyOptions {
  std::int64_t ignore_index = -100;
  std::int64_t block_elements = 32 << 20;  ///< the chunked (CPU) path's fp32 rows per block
  /// The backward writes the logits' gradient over the logits themselves (GPU path), which saves
  /// a logits-sized buffer at the start of backward, when activations peak. Only for a caller
  /// that owns the logits and never reads them after backward (the built-in models).
  bool gradient_over_logits = false;
  bool fused_on_gpu = true;  ///< false: the chunked path on a GPU too (the tests compare the two)
};

/// What the built-in models pass: they own their logits, so the gradient may overwrite them.
inline constexpr CrossEntropyOptions kOwnedLogits{-100, 32 << 20, /*gradient_over_logits=*/true, /*fused_on_gpu=*/true};

/// chunked_cross_entropy with options; on a GPU the fused kernels unless `fused_on_gpu` is false.
torch::Tensor cross_entropy_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                 const CrossEntropyOptions& options);

}  // namespace shardscope::engine
