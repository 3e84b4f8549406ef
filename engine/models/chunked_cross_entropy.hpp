#pragma once
// The language models' loss: the mean cross-entropy of logits against target ids, as
// F.cross_entropy(logits.float(), targets, ignore_index) computes it, in fp32, but without the
// vocabulary-sized fp32 tensors. F.cross_entropy on 16-bit logits keeps an fp32 log-softmax for
// backward and builds two more fp32 tensors of that size in it (for GPT-2's 50k vocabulary at 4k
// tokens, 0.8 GB each, at the moment activations peak). Here the forward keeps the 16-bit logits
// and one fp32 log-sum-exp per row; the backward builds the gradient a block of rows at a time,
// straight in the logits' dtype.

#include <cstdint>

#include <torch/torch.h>

namespace shardscope::engine {

/// `logits` [N, V] (any floating dtype), `targets` [N] class ids; rows whose target is
/// `ignore_index` do not count. Returns the mean over the counted rows (NaN when none counts, as
/// PyTorch's mean reduction gives). A block of rows takes about `block_elements` fp32 elements of
/// temporary memory (default 128 MiB).
torch::Tensor chunked_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                                    std::int64_t ignore_index = -100, std::int64_t block_elements = 32 << 20);

}  // namespace shardscope::engine
